//! The generic cell rate algorithm behind CL.THROTTLE, as redis-cell
//! (brandur/redis-cell, `cell/mod.rs`) runs it, on plain numbers: no store,
//! no protocol. The state of a limited key is one number, its theoretical
//! arrival time (TAT): when the next request would arrive if requests came
//! exactly at the sustained rate.
//!
//! For a limit of `count` per `period` seconds with `max_burst`:
//! - emission interval `T = period / count`: the spacing of the sustained
//!   rate (one token leaks back every `T`);
//! - delay variation tolerance `τ = T × (max_burst + 1)`: how far ahead of
//!   the schedule a client may be (the bucket's size).
//!
//! A request of `quantity` tokens moves the TAT to `max(TAT, now) + T ×
//! quantity`; it is allowed when that is at most `now + τ`. All arithmetic
//! is in nanoseconds on 128-bit integers, so no argument overflows it.

/// A limit, checked and converted to nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// `T`: nanoseconds between tokens of the sustained rate (≥ 1).
    pub emission_ns: i128,
    /// `τ`: `T × (max_burst + 1)`.
    pub tolerance_ns: i128,
    /// `max_burst + 1`, CL.THROTTLE's second reply.
    pub limit: i64,
}

/// Why a limit cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitError {
    /// `count` or `period` is zero, or the interval rounds to 0 ns.
    ZeroRate,
}

impl Limit {
    /// The limit of `count` tokens per `period` seconds with `max_burst`
    /// extra; the arguments are not negative.
    pub fn new(max_burst: i64, count: i64, period_s: i64) -> Result<Limit, LimitError> {
        let period_ns = i128::from(period_s) * 1_000_000_000;
        if count == 0 || period_ns == 0 {
            return Err(LimitError::ZeroRate);
        }
        let emission_ns = period_ns / i128::from(count);
        if emission_ns == 0 {
            return Err(LimitError::ZeroRate);
        }
        let limit = max_burst.saturating_add(1);
        Ok(Limit {
            emission_ns,
            tolerance_ns: emission_ns * i128::from(limit),
            limit,
        })
    }
}

/// What one request decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The request was refused.
    pub limited: bool,
    /// Tokens still available after it.
    pub remaining: i64,
    /// Nanoseconds until a refused request could succeed; None when it was
    /// allowed, or could never succeed (more tokens than the bucket holds).
    pub retry_after_ns: Option<i128>,
    /// Nanoseconds until the bucket is full again.
    pub reset_after_ns: i128,
    /// The key's new TAT, when the request consumed tokens and the state
    /// must be stored.
    pub new_tat_ns: Option<i128>,
}

/// Decides a request of `quantity` tokens at `now_ns`, for a key whose
/// stored TAT is `tat_ns` (None: no state, a full bucket).
pub fn decide(limit: &Limit, tat_ns: Option<i128>, now_ns: i128, quantity: i64) -> Decision {
    let increment = limit.emission_ns * i128::from(quantity);
    let tat = tat_ns.unwrap_or(now_ns);
    let new_tat = tat.max(now_ns) + increment;
    let allow_at = new_tat - limit.tolerance_ns;
    let diff = now_ns - allow_at;
    let (limited, ttl, retry_after_ns, new_tat_ns) = if diff < 0 {
        let retry = (increment <= limit.tolerance_ns).then_some(-diff);
        (true, tat - now_ns, retry, None)
    } else {
        (
            false,
            new_tat - now_ns,
            None,
            (quantity > 0).then_some(new_tat),
        )
    };
    let next = limit.tolerance_ns - ttl;
    let remaining = if next > -limit.emission_ns {
        i64::try_from(next / limit.emission_ns).unwrap_or(i64::MAX)
    } else {
        0
    };
    Decision {
        limited,
        remaining,
        retry_after_ns,
        reset_after_ns: ttl,
        new_tat_ns,
    }
}

/// A duration as CL.THROTTLE reports it: whole seconds, one more when at
/// least a millisecond is left over (so a fast client does not retry too
/// early), as redis-cell rounds.
pub fn reply_seconds(ns: i128) -> i64 {
    let secs = ns / 1_000_000_000;
    let extra = i128::from((ns % 1_000_000_000) / 1_000_000 > 0);
    i64::try_from(secs + extra).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    #[test]
    fn redis_cells_readme_example() {
        // CL.THROTTLE user123 15 30 60: 1 token every 2 s, 16 at once.
        let l = Limit::new(15, 30, 60).expect("limit");
        let d = decide(&l, None, 100 * S, 1);
        assert_eq!((d.limited, l.limit, d.remaining), (false, 16, 15));
        assert_eq!(d.retry_after_ns, None);
        assert_eq!(reply_seconds(d.reset_after_ns), 2);
        assert_eq!(d.new_tat_ns, Some(102 * S));
    }

    #[test]
    fn a_burst_is_allowed_then_refused_until_a_token_leaks_back() {
        let l = Limit::new(0, 1, 2).expect("limit");
        let now = 10 * S;
        let d = decide(&l, None, now, 1);
        assert!(!d.limited);
        let tat = d.new_tat_ns;
        let d = decide(&l, tat, now, 1);
        assert!(d.limited);
        assert_eq!(d.retry_after_ns.map(reply_seconds), Some(2));
        assert_eq!(reply_seconds(d.reset_after_ns), 2);
        assert!(!decide(&l, tat, now + 2 * S, 1).limited);
    }

    #[test]
    fn zero_rates_and_rounding() {
        assert_eq!(Limit::new(1, 0, 10), Err(LimitError::ZeroRate));
        assert_eq!(Limit::new(1, 10, 0), Err(LimitError::ZeroRate));
        assert_eq!(Limit::new(1, 2_000_000_000, 1), Err(LimitError::ZeroRate));
        assert_eq!(reply_seconds(1_999_999), 1);
        assert_eq!(reply_seconds(999_999), 0);
        assert_eq!(reply_seconds(2 * S), 2);
        assert_eq!(reply_seconds(0), 0);
    }

    #[test]
    fn a_quantity_larger_than_the_bucket_never_gets_a_retry_time() {
        let l = Limit::new(2, 1, 1).expect("limit");
        let d = decide(&l, None, S, 4);
        assert!(d.limited);
        assert_eq!(d.retry_after_ns, None);
        assert_eq!(d.remaining, 3);
    }
}
