//! Parsing and printing parameter values the way Redis's config.c does:
//! yes/no, enums, numbers with memory units, percentages and octal, and the
//! special parameters (save, bind, client-output-buffer-limit...). Every
//! value is normalized to the text CONFIG GET prints.

use std::borrow::Cow;

use super::params::{Kind, Param, MEMORY, OCTAL, PERCENT};
use crate::util::num;

/// A failed parse: Redis's error text for it.
pub type ValueError = Cow<'static, str>;

/// C's `strtoll(s, &end, 10)` followed by `*end == '\0'`: leading spaces and
/// a sign are allowed, and an empty string parses as 0.
pub fn strtoll_full(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?;
    let trimmed = t.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if trimmed.is_empty() {
        // strtoll consumed nothing: end points at the start.
        return if t.is_empty() { Some(0) } else { None };
    }
    let digits = trimmed.trim_start_matches(['+', '-']);
    if digits.is_empty() || digits.len() + 1 < trimmed.len() {
        return None;
    }
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Out-of-range values saturate in C; close enough for config checks.
    Some(
        trimmed
            .parse::<i64>()
            .unwrap_or(if trimmed.starts_with('-') {
                i64::MIN
            } else {
                i64::MAX
            }),
    )
}

fn lossy(a: &[u8]) -> String {
    String::from_utf8_lossy(a).into_owned()
}

/// Normalizes the value of an ordinary (non-special) parameter.
pub fn normalize(p: &Param, arg: &[u8]) -> Result<String, ValueError> {
    match p.kind {
        Kind::Bool => {
            if arg.eq_ignore_ascii_case(b"yes") {
                if p.name == "activedefrag" {
                    // As a Redis built without its patched jemalloc.
                    return Err("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution".into());
                }
                Ok("yes".into())
            } else if arg.eq_ignore_ascii_case(b"no") {
                Ok("no".into())
            } else {
                Err("argument must be 'yes' or 'no'".into())
            }
        }
        Kind::Str => validate_string(p.name, arg).map(|()| lossy(arg)),
        Kind::Enum(values) => values
            .iter()
            .find(|v| v.as_bytes().eq_ignore_ascii_case(arg))
            .map(|v| v.to_string())
            .ok_or_else(|| {
                format!(
                    "argument(s) must be one of the following: {}",
                    values.join(", ")
                )
                .into()
            }),
        Kind::Num {
            min,
            max,
            flags,
            unsigned,
        } => {
            let v = parse_number(arg, flags)?;
            check_bounds(v, min, max, flags, unsigned)?;
            Ok(render_number(v, flags, unsigned))
        }
        Kind::Special => Err("internal: special parameter".into()),
    }
}

/// proc-title-template's check: known variables only, and something left
/// once expanded.
fn valid_title_template(t: &[u8]) -> bool {
    std::str::from_utf8(t)
        .ok()
        .and_then(|t| crate::util::proctitle::expand(t, |_| "x".into()))
        .is_some_and(|s| !s.is_empty())
}

fn validate_string(name: &str, arg: &[u8]) -> Result<(), ValueError> {
    let is_base = !arg.contains(&b'/');
    match name {
        "cluster-announce-hostname" if arg.len() >= 256 => {
            Err("Hostnames must be less than 256 characters".into())
        }
        "cluster-announce-hostname"
            if !arg
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.') =>
        {
            Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into())
        }
        "proc-title-template" if !valid_title_template(arg) => {
            Err("template format is invalid or contains unknown variables".into())
        }
        "dbfilename" if !is_base => Err("dbfilename can't be a path, just a filename".into()),
        "appendfilename" if arg.is_empty() => Err("appendfilename can't be empty".into()),
        "appendfilename" if !is_base => {
            Err("appendfilename can't be a path, just a filename".into())
        }
        "appenddirname" if arg.is_empty() => Err("appenddirname can't be empty".into()),
        "appenddirname" if !is_base => Err("appenddirname can't be a path, just a dirname".into()),
        _ => Ok(()),
    }
}

/// numericParseString: memory units, then percent, then octal, then a plain
/// integer when the parameter has no special flags.
fn parse_number(arg: &[u8], flags: u8) -> Result<i128, ValueError> {
    if flags & MEMORY != 0 {
        if let Some(v) = num::parse_memory(arg) {
            // memtoull results are unsigned long long, reinterpreted as long long.
            return Ok(i128::from(v as i64));
        }
    }
    if flags & PERCENT != 0 && arg.len() > 1 && arg.ends_with(b"%") {
        if let Some(v) = num::parse_i64(&arg[..arg.len() - 1]) {
            if v >= 0 {
                return Ok(-i128::from(v));
            }
        }
    }
    if flags & OCTAL != 0 {
        if let Some(v) = std::str::from_utf8(arg)
            .ok()
            .and_then(|s| i64::from_str_radix(s, 8).ok())
        {
            return Ok(i128::from(v));
        }
    }
    if flags == 0 {
        if let Some(v) = num::parse_i64(arg) {
            return Ok(i128::from(v));
        }
    }
    Err(if flags & MEMORY != 0 && flags & PERCENT != 0 {
        "argument must be a memory or percent value".into()
    } else if flags & MEMORY != 0 {
        "argument must be a memory value".into()
    } else if flags & OCTAL != 0 {
        "argument couldn't be parsed as an octal number".into()
    } else {
        "argument couldn't be parsed into an integer".into()
    })
}

fn check_bounds(
    v: i128,
    min: i128,
    max: i128,
    flags: u8,
    unsigned: bool,
) -> Result<(), ValueError> {
    if unsigned {
        // The long long is compared as unsigned long long.
        let uv = (v as i64) as u64 as i128;
        if uv > max || uv < min {
            return Err(if flags & OCTAL != 0 {
                format!("argument must be between {min:o} and {max:o} inclusive").into()
            } else {
                format!("argument must be between {min} and {max} inclusive").into()
            });
        }
    } else if flags & PERCENT != 0 && v < 0 {
        if v < min {
            return Err(format!("percentage argument must be less or equal to {}", -min).into());
        }
    } else if v > max || v < min {
        return Err(format!("argument must be between {min} and {max} inclusive").into());
    }
    Ok(())
}

fn render_number(v: i128, flags: u8, unsigned: bool) -> String {
    if flags & PERCENT != 0 && v < 0 {
        format!("{}%", -v)
    } else if flags & OCTAL != 0 {
        format!("{v:o}")
    } else if unsigned || flags & MEMORY != 0 {
        ((v as i64) as u64).to_string()
    } else {
        v.to_string()
    }
}

/// Parses `save` arguments into (seconds, changes) pairs.
pub fn parse_save(args: &[&[u8]]) -> Result<Vec<(u64, u64)>, ValueError> {
    let args: &[&[u8]] = if args.len() == 1 && args[0].is_empty() {
        &[]
    } else {
        args
    };
    if args.len() % 2 == 1 {
        return Err("Invalid save parameters".into());
    }
    let mut out = Vec::new();
    for pair in args.chunks(2) {
        let secs = strtoll_full(pair[0]).filter(|&v| v >= 1);
        let changes = strtoll_full(pair[1]).filter(|&v| v >= 0);
        match (secs, changes) {
            (Some(s), Some(c)) => out.push((s as u64, c as u64)),
            _ => return Err("Invalid save parameters".into()),
        }
    }
    Ok(out)
}

/// Renders save points as CONFIG GET prints them.
pub fn render_save(points: &[(u64, u64)]) -> String {
    let parts: Vec<String> = points.iter().map(|(s, c)| format!("{s} {c}")).collect();
    parts.join(" ")
}

const KEYSPACE_CLASSES: &[(u8, u32)] = &[
    (b'g', 1 << 2),
    (b'$', 1 << 3),
    (b'l', 1 << 4),
    (b's', 1 << 5),
    (b'h', 1 << 6),
    (b'z', 1 << 7),
    (b'x', 1 << 8),
    (b'e', 1 << 9),
    (b't', 1 << 10),
    (b'd', 1 << 13),
];
const NOTIFY_KEYSPACE: u32 = 1 << 0;
const NOTIFY_KEYEVENT: u32 = 1 << 1;
const NOTIFY_KEY_MISS: u32 = 1 << 11;
const NOTIFY_LOADED: u32 = 1 << 12;
const NOTIFY_NEW: u32 = 1 << 14;
const NOTIFY_ALL: u32 = (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 9)
    | (1 << 10)
    | (1 << 13);

/// keyspaceEventsStringToFlags then keyspaceEventsFlagsToString: the
/// normalized notify-keyspace-events value.
pub fn normalize_notify(arg: &[u8]) -> Result<String, ValueError> {
    let mut flags = 0u32;
    for &c in arg {
        flags |= match c {
            b'A' => NOTIFY_ALL,
            b'K' => NOTIFY_KEYSPACE,
            b'E' => NOTIFY_KEYEVENT,
            b'm' => NOTIFY_KEY_MISS,
            b'n' => NOTIFY_NEW,
            _ => match KEYSPACE_CLASSES.iter().find(|(ch, _)| *ch == c) {
                Some((_, f)) => *f,
                None => return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
            },
        };
    }
    let _ = NOTIFY_LOADED;
    let mut s = String::new();
    if flags & NOTIFY_ALL == NOTIFY_ALL {
        s.push('A');
    } else {
        for (ch, f) in KEYSPACE_CLASSES {
            if flags & f != 0 {
                s.push(*ch as char);
            }
        }
        if flags & NOTIFY_NEW != 0 {
            s.push('n');
        }
    }
    for (f, ch) in [
        (NOTIFY_KEYSPACE, 'K'),
        (NOTIFY_KEYEVENT, 'E'),
        (NOTIFY_KEY_MISS, 'm'),
    ] {
        if flags & f != 0 {
            s.push(ch);
        }
    }
    // Redis prints 'n' only without 'A' (keyspaceEventsFlagsToString) but
    // still fires `new` events: the flag is kept at the end, and CONFIG GET
    // leaves it out (see [`notify_for_display`]).
    if flags & NOTIFY_ALL == NOTIFY_ALL && flags & NOTIFY_NEW != 0 {
        s.push('n');
    }
    Ok(s)
}

/// The notify-keyspace-events value as CONFIG GET prints it: with `A`,
/// the `n` flag [`normalize_notify`] keeps at the end is not shown.
pub fn notify_for_display(v: &str) -> String {
    if v.starts_with('A') {
        v.trim_end_matches('n').to_string()
    } else {
        v.to_string()
    }
}

/// Applies client-output-buffer-limit arguments over the current value
/// (`normal H S T slave H S T pubsub H S T`).
pub fn normalize_obuf(current: &str, args: &[&[u8]]) -> Result<String, ValueError> {
    let mut classes: Vec<Vec<String>> = current
        .split(' ')
        .collect::<Vec<_>>()
        .chunks(4)
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    if !args.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut updates = Vec::new();
    for g in args.chunks(4) {
        let idx = match g[0].to_ascii_lowercase().as_slice() {
            b"normal" => 0,
            b"slave" | b"replica" => 1,
            b"pubsub" => 2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let hard = num::parse_memory(g[1]);
        let soft = num::parse_memory(g[2]);
        let secs = strtoll_full(g[3]).filter(|&v| v >= 0);
        match (hard, soft, secs) {
            (Some(h), Some(s), Some(t)) => updates.push((idx, h, s, t)),
            _ => {
                return Err(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                        .into(),
                )
            }
        }
    }
    for (idx, h, s, t) in updates {
        if let Some(c) = classes.get_mut(idx) {
            *c = vec![c[0].clone(), h.to_string(), s.to_string(), t.to_string()];
        }
    }
    Ok(classes
        .iter()
        .map(|c| c.join(" "))
        .collect::<Vec<_>>()
        .join(" "))
}

/// oom-score-adj-values: three integers in [-2000, 2000].
pub fn normalize_oom(args: &[&[u8]]) -> Result<String, ValueError> {
    if args.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let mut out = Vec::new();
    for a in args {
        match strtoll_full(a) {
            Some(v) if (-2000..=2000).contains(&v) => out.push(v.to_string()),
            _ => {
                return Err(
                    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into(),
                )
            }
        }
    }
    Ok(out.join(" "))
}

/// latency-tracking-info-percentiles: doubles in [0, 100], printed with %f
/// and trailing zeros trimmed.
pub fn normalize_percentiles(args: &[&[u8]]) -> Result<String, ValueError> {
    let args: &[&[u8]] = if args.len() == 1 && args[0].is_empty() {
        &[]
    } else {
        args
    };
    let mut out = Vec::new();
    for a in args {
        let v = num::parse_f64(a)
            .ok_or::<ValueError>("Invalid latency-tracking-info-percentiles parameters".into())?;
        if !(0.0..=100.0).contains(&v) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            );
        }
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.').to_string();
        out.push(s);
    }
    Ok(out.join(" "))
}

/// shutdown-on-sigint/sigterm: a set of flags (`default` is none).
pub fn normalize_shutdown_flags(args: &[&[u8]]) -> Result<String, ValueError> {
    const NAMES: [&str; 5] = ["default", "save", "nosave", "now", "force"];
    let mut bits = 0u8;
    for a in args {
        match NAMES
            .iter()
            .position(|n| n.as_bytes().eq_ignore_ascii_case(a))
        {
            Some(0) => {}
            Some(i) => bits |= 1 << (i - 1),
            None => {
                return Err(format!(
                    "argument(s) must be one of the following: {}",
                    NAMES.join(", ")
                )
                .into())
            }
        }
    }
    if args.is_empty() {
        return Err(format!(
            "argument(s) must be one of the following: {}",
            NAMES.join(", ")
        )
        .into());
    }
    if bits & 0b11 == 0b11 {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    if bits == 0 {
        return Ok("default".into());
    }
    let set: Vec<&str> = (1..5)
        .filter(|i| bits & (1 << (i - 1)) != 0)
        .map(|i| NAMES[i])
        .collect();
    Ok(set.join(" "))
}

/// replicaof: `no one` or `host port`.
pub fn normalize_replicaof(args: &[&[u8]]) -> Result<String, ValueError> {
    if args.len() != 2 {
        return Err("wrong number of arguments".into());
    }
    if args[0].eq_ignore_ascii_case(b"no") && args[1].eq_ignore_ascii_case(b"one") {
        return Ok(String::new());
    }
    match strtoll_full(args[1]) {
        Some(p) if (0..=65535).contains(&p) && !args[1].is_empty() => {
            Ok(format!("{} {p}", lossy(args[0])))
        }
        _ => Err("Invalid master port".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_flags_round_trip() {
        assert_eq!(normalize_notify(b"KEA").unwrap(), "AKE");
        assert_eq!(normalize_notify(b"Kgxe").unwrap(), "gxeK");
        assert!(normalize_notify(b"q").is_err());
    }

    #[test]
    fn save_points() {
        assert_eq!(parse_save(&[b"100", b"1"]).unwrap(), vec![(100, 1)]);
        assert!(parse_save(&[b"abc"]).is_err());
        assert!(parse_save(&[b"0", b"1"]).is_err());
        assert_eq!(parse_save(&[b""]).unwrap(), vec![]);
    }

    #[test]
    fn percentiles() {
        assert_eq!(
            normalize_percentiles(&[b"50", b"99", b"99.9"]).unwrap(),
            "50 99 99.9"
        );
    }
}
