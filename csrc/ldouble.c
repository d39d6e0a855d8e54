/* Long-double helpers for INCRBYFLOAT.
 *
 * Redis parses and prints INCRBYFLOAT values as C `long double` (80-bit x87 on
 * x86-64), so "10.5 + 0.1" prints "10.6" rather than the f64 artefact
 * "10.59999999999999964". Rust has no long double, so the arithmetic and the
 * formatting live here, with the same rules as Redis's string2ld/ld2string. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LONG_DOUBLE_CHARS (5 * 1024)

/* string2ld: 1 on success, 0 when the text is not a valid long double. */
static int parse_ld(const char *s, size_t len, long double *out) {
    char buf[MAX_LONG_DOUBLE_CHARS];
    char *eptr;
    long double value;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    value = strtold(buf, &eptr);
    /* eptr-buf != len refuses an embedded NUL ("1\0"), as Redis does. */
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' || (size_t)(eptr - buf) != len ||
        errno == EINVAL ||
        (errno == ERANGE && (value == HUGE_VAL || value == -HUGE_VAL || fpclassify(value) == FP_ZERO)) ||
        isnan(value))
        return 0;
    *out = value;
    return 1;
}

/* ld2string with LD_STR_HUMAN: %.17Lf with trailing zeros trimmed. */
static size_t format_ld_human(long double value, char *buf, size_t len) {
    int l;
    if (isinf(value)) {
        if (len < 5) return 0;
        if (value > 0) { memcpy(buf, "inf", 3); l = 3; }
        else { memcpy(buf, "-inf", 4); l = 4; }
        return (size_t)l;
    }
    l = snprintf(buf, len, "%.17Lf", value);
    if (l < 0 || (size_t)l + 1 > len) return 0;
    if (strchr(buf, '.') != NULL) {
        char *p = buf + l - 1;
        while (*p == '0') { p--; l--; }
        if (*p == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') { buf[0] = '0'; l = 1; }
    return (size_t)l;
}

/* Return codes: 0 ok (result in out/out_len), 1 current value is not a float,
 * 2 increment is not a float, 3 result would be NaN or infinite. */
int ferrokv_incrbyfloat(const char *cur, size_t cur_len, int has_cur,
                        const char *incr, size_t incr_len,
                        char *out, size_t out_cap, size_t *out_len) {
    long double a = 0, b, r;
    if (has_cur && !parse_ld(cur, cur_len, &a)) return 1;
    if (!parse_ld(incr, incr_len, &b)) return 2;
    r = a + b;
    if (isnan(r) || isinf(r)) return 3;
    *out_len = format_ld_human(r, out, out_cap);
    return 0;
}

/* Validate a long double the way string2ld does (used by HINCRBYFLOAT-style
 * checks); 1 when valid. */
int ferrokv_is_long_double(const char *s, size_t len) {
    long double v;
    return parse_ld(s, len, &v);
}

/* %.17g of a double, as Redis prints RESP3 doubles and scores. */
size_t ferrokv_fmt_g17(double d, char *out, size_t cap) {
    int l = snprintf(out, cap, "%.17g", d);
    return l < 0 ? 0 : (size_t)l;
}

/* %.*g for any precision (Lua prints numbers with %.14g). */
size_t ferrokv_fmt_g(double d, int prec, char *out, size_t cap) {
    int l = snprintf(out, cap, "%.*g", prec, d);
    return l < 0 ? 0 : (size_t)l;
}

/* strtod with Redis's rules for scores and float arguments (string2d):
 * 1 on success. */
int ferrokv_parse_double(const char *s, size_t len, double *out) {
    char buf[MAX_LONG_DOUBLE_CHARS];
    char *eptr;
    double v;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtod(buf, &eptr);
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' || (size_t)(eptr - buf) != len ||
        (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) ||
        isnan(v))
        return 0;
    *out = v;
    return 1;
}

/* The seconds path of Redis 7.0's getTimeoutFromObjectOrReply: 1 with the
 * timeout in milliseconds in *out when the text is a valid long double, 0
 * otherwise. 7.0.15 rounds up (`ceill`, so 0.0001 waits 1 ms rather than
 * forever); out-of-range values
 * give LLONG_MIN, as the x86-64 conversion does, so they read as negative. */
int ferrokv_timeout_ms(const char *s, size_t len, long long *out) {
    long double v;
    if (!parse_ld(s, len, &v)) return 0;
    v = ceill(v * 1000.0);
    if (!(v >= -9223372036854775808.0L && v < 9223372036854775808.0L))
        *out = LLONG_MIN;
    else
        *out = (long long)v;
    return 1;
}
