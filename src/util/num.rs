//! Numbers exactly as Redis parses and prints them (`util.c`: string2ll,
//! string2ld, ld2string, `%.17g`).

use std::os::raw::{c_char, c_int};

extern "C" {
    fn ferrokv_incrbyfloat(
        cur: *const c_char,
        cur_len: usize,
        has_cur: c_int,
        incr: *const c_char,
        incr_len: usize,
        out: *mut c_char,
        out_cap: usize,
        out_len: *mut usize,
    ) -> c_int;
    fn ferrokv_fmt_g17(d: f64, out: *mut c_char, cap: usize) -> usize;
    fn ferrokv_fmt_g(d: f64, prec: c_int, out: *mut c_char, cap: usize) -> usize;
    fn ferrokv_parse_double(s: *const c_char, len: usize, out: *mut f64) -> c_int;
    fn ferrokv_timeout_ms(s: *const c_char, len: usize, out: *mut i64) -> c_int;
}

/// Parses a signed 64-bit integer with Redis's `string2ll` rules: no spaces,
/// no `+`, no leading zeros, no `-0`, and no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    match s {
        [] => None,
        [b'0'] => Some(0),
        [b'-', rest @ ..] => {
            let v = parse_digits(rest)?;
            if v <= i64::MAX as u64 + 1 {
                Some((v as i64).wrapping_neg())
            } else {
                None
            }
        }
        _ => {
            let v = parse_digits(s)?;
            i64::try_from(v).ok()
        }
    }
}

/// Parses an unsigned integer with the same rules as [`parse_i64`].
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s == b"0" {
        return Some(0);
    }
    parse_digits(s)
}

/// A non-empty run of digits with no leading zero, as a u64.
fn parse_digits(s: &[u8]) -> Option<u64> {
    let (&first, _) = s.split_first()?;
    if !(b'1'..=b'9').contains(&first) || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Parses a double with Redis's `string2d` rules (strtod, no leading space,
/// no trailing garbage, no NaN; "inf" accepted).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    let mut out = 0.0;
    // SAFETY: the pointer and length describe a live slice; the C side copies
    // at most `len` bytes into its own buffer.
    let ok = unsafe { ferrokv_parse_double(s.as_ptr().cast(), s.len(), &mut out) };
    (ok == 1).then_some(out)
}

/// C strtod over the text read as a C string (up to its first NUL byte),
/// when it consumes all of it: Redis's zslParseRange rule, looser than
/// [`parse_f64`] (an empty text reads 0; leading spaces and hex are
/// taken). NaN is returned as read, with whether strtod said the text
/// was out of range (ERANGE: overflow or underflow).
pub fn strtod_whole(s: &[u8]) -> Option<(f64, bool)> {
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    let text = std::ffi::CString::new(&s[..end]).ok()?;
    let mut rest: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: errno is this thread's; `text` is NUL-terminated and outlives
    // the call; strtod sets `rest` to a position within it.
    let (v, erange) = unsafe {
        *libc::__errno_location() = 0;
        let v = libc::strtod(text.as_ptr(), &mut rest);
        (v, *libc::__errno_location() == libc::ERANGE)
    };
    // SAFETY: `rest` points into `text`, at worst at its terminating NUL.
    (unsafe { *rest } == 0).then_some((v, erange))
}

/// A listpack score as Redis's `zzlStrtod` reads it: C strtod over the
/// text's first 127 bytes, taking the longest number it starts with and 0
/// when it starts with none.
pub fn zzl_strtod(s: &[u8]) -> f64 {
    let mut buf = [0u8; 128];
    let n = s.len().min(127);
    buf[..n].copy_from_slice(&s[..n]);
    // SAFETY: `buf` is NUL-terminated (its last byte is never written) and
    // outlives the call; a null end pointer is allowed.
    unsafe { libc::strtod(buf.as_ptr().cast(), std::ptr::null_mut()) }
}

/// A blocking command's timeout in seconds converted to milliseconds as
/// Redis 7.0.15 does (`long double` times 1000, rounded up); None when the text
/// is not a float.
pub fn timeout_ms(s: &[u8]) -> Option<i64> {
    let mut out = 0i64;
    // SAFETY: the pointer and length describe a live slice; the C side copies
    // at most `len` bytes into its own buffer.
    let ok = unsafe { ferrokv_timeout_ms(s.as_ptr().cast(), s.len(), &mut out) };
    (ok == 1).then_some(out)
}

/// Outcome of [`incr_by_float`] when the operation is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum FloatIncrError {
    /// The stored value is not a valid float.
    NotFloatValue,
    /// The increment is not a valid float.
    NotFloatIncrement,
    /// The sum is NaN or infinite.
    NanOrInfinity,
}

/// INCRBYFLOAT arithmetic in `long double`, formatted as Redis's
/// `ld2string(LD_STR_HUMAN)`.
pub fn incr_by_float(current: Option<&[u8]>, incr: &[u8]) -> Result<Vec<u8>, FloatIncrError> {
    let mut out = vec![0u8; 5 * 1024];
    let mut len = 0usize;
    let (ptr, clen) = current.map_or((std::ptr::null(), 0), |c| (c.as_ptr(), c.len()));
    // SAFETY: all pointers describe live buffers of the given lengths; the C
    // side writes at most `out.len()` bytes.
    let rc = unsafe {
        ferrokv_incrbyfloat(
            ptr.cast(),
            clen,
            c_int::from(current.is_some()),
            incr.as_ptr().cast(),
            incr.len(),
            out.as_mut_ptr().cast(),
            out.len(),
            &mut len,
        )
    };
    match rc {
        0 => {
            out.truncate(len);
            Ok(out)
        }
        1 => Err(FloatIncrError::NotFloatValue),
        2 => Err(FloatIncrError::NotFloatIncrement),
        _ => Err(FloatIncrError::NanOrInfinity),
    }
}

/// Appends `d` formatted as C's `%.17g` (RESP3 doubles).
pub fn write_g17(d: f64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is 64 bytes, enough for any %.17g output.
    let n = unsafe { ferrokv_fmt_g17(d, buf.as_mut_ptr().cast(), buf.len()) };
    out.extend_from_slice(&buf[..n.min(buf.len())]);
}

/// `d` formatted as C's `%.<prec>g` (Lua prints numbers with `%.14g`).
pub fn fmt_g(d: f64, prec: i32) -> String {
    let mut buf = [0u8; 512];
    // SAFETY: snprintf never writes more than `buf.len()` bytes.
    let n = unsafe { ferrokv_fmt_g(d, prec, buf.as_mut_ptr().cast(), buf.len()) };
    String::from_utf8_lossy(&buf[..n.min(buf.len())]).into_owned()
}

/// `d` as Redis's ld2string in LD_STR_HUMAN mode prints it: `%.17f` with
/// the trailing zeros (and a bare point) removed, `-0` as `0`.
pub fn fmt_human(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut s = format!("{d:.17}");
    if s.contains('.') {
        let kept = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(kept);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

/// `d` as Redis's fixedpoint_d2string: rounded to `digits` decimals (ties
/// to even, as llrint) and printed with exactly that many.
pub fn fmt_fixed(d: f64, digits: u32) -> String {
    let scale = 10f64.powi(digits as i32);
    let v = (d * scale).round_ties_even() as i64;
    let div = 10u64.pow(digits);
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    format!(
        "{sign}{}.{:0width$}",
        a / div,
        a % div,
        width = digits as usize
    )
}

/// Writes an i64 in decimal into `out` without allocating.
pub fn write_i64(v: i64, out: &mut Vec<u8>) {
    let mut buf = itoa_buf();
    out.extend_from_slice(fmt_i64(v, &mut buf));
}

/// A stack buffer big enough for any i64.
pub fn itoa_buf() -> [u8; 20] {
    [0u8; 20]
}

/// Formats `v` into `buf` and returns the digits.
pub fn fmt_i64(v: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// Parses a memory size with Redis's units (`memtoull`): 1k = 1000,
/// 1kb = 1024, up to gb; case-insensitive. Negative values are refused.
pub fn parse_memory(s: &[u8]) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let units: [(&[u8], u64); 7] = [
        (b"gb", 1024 * 1024 * 1024),
        (b"mb", 1024 * 1024),
        (b"kb", 1024),
        (b"g", 1000 * 1000 * 1000),
        (b"m", 1000 * 1000),
        (b"k", 1000),
        (b"b", 1),
    ];
    let (digits, mul) = units
        .iter()
        .find(|(u, _)| lower.ends_with(u))
        .map_or((&lower[..], 1), |(u, m)| {
            (&lower[..lower.len() - u.len()], *m)
        });
    let digits = std::str::from_utf8(digits).ok()?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zzl_strtod_reads_a_prefix_as_redis() {
        assert_eq!(zzl_strtod(b"1.5"), 1.5);
        assert_eq!(zzl_strtod(b"1.5abc"), 1.5);
        assert_eq!(zzl_strtod(b" -2e3x"), -2000.0);
        assert_eq!(zzl_strtod(b"in]"), 0.0);
        assert_eq!(zzl_strtod(b""), 0.0);
        assert_eq!(zzl_strtod(b"inf"), f64::INFINITY);
        assert!(zzl_strtod(b"nan").is_nan());
        assert_eq!(zzl_strtod(b"7\08"), 7.0);
        // Only the first 127 bytes are read.
        let mut long = vec![b'0'; 127];
        long.push(b'9');
        assert_eq!(zzl_strtod(&long), 0.0);
    }

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"9223372036854775808"[..],
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"",
            b"-",
            b"1a",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn long_double_formatting() {
        assert_eq!(incr_by_float(Some(b"10.5"), b"0.1").unwrap(), b"10.6");
        assert_eq!(incr_by_float(None, b"5.0e3").unwrap(), b"5000");
        assert_eq!(incr_by_float(Some(b"1"), b"-1").unwrap(), b"0");
        assert_eq!(
            incr_by_float(Some(b"x"), b"1"),
            Err(FloatIncrError::NotFloatValue)
        );
        assert_eq!(
            incr_by_float(None, b"nan"),
            Err(FloatIncrError::NotFloatIncrement)
        );
    }

    #[test]
    fn g17() {
        let mut v = Vec::new();
        write_g17(0.1, &mut v);
        assert_eq!(v, b"0.10000000000000001");
        assert_eq!(fmt_g(3.0, 14), "3");
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory(b"1gb"), Some(1 << 30));
        assert_eq!(parse_memory(b"512MB"), Some(512 << 20));
        assert_eq!(parse_memory(b"1k"), Some(1000));
        assert_eq!(parse_memory(b"-1"), None);
    }
}

/// C's atoi: the leading integer of `s` after spaces, 0 when none.
pub fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let end = t
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(t.len(), |(i, _)| i);
    t[..end].parse().unwrap_or(0)
}
