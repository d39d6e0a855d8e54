//! Wall-clock time in the units Redis uses. Read through `clock_gettime`
//! directly: commands read the clock twice each (their time and their
//! duration), and this is about half the cost of `SystemTime::now()` with
//! its conversions.

/// Unix time in microseconds.
#[cfg(unix)]
pub fn now_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always
    // exists, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000)
        .saturating_add(ts.tv_nsec as u64 / 1000)
}

/// Unix time in microseconds.
#[cfg(not(unix))]
pub fn now_us() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    now_us() / 1000
}

#[cfg(test)]
mod tests {
    #[test]
    fn agrees_with_system_time() {
        let ours = super::now_ms();
        let std = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        assert!(ours.abs_diff(std) < 1000, "{ours} vs {std}");
    }
}
