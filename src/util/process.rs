//! Process-wide settings the kernel holds for the server, as Redis's
//! server.c sets them: the OOM killer's score (`setOOMScoreAdj`, from
//! `oom-score-adj` and `oom-score-adj-values`). Like Redis's statics they
//! belong to the process: forked children (background saves, AOF
//! rewrites) inherit them and switch to the child class.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

/// The process classes of `oom-score-adj-values`, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OomClass {
    /// A master (or a server replicating from no one).
    Master = 0,
    /// A replica.
    Replica = 1,
    /// A forked child: background save or AOF rewrite.
    BgChild = 2,
}

/// `oom-score-adj`: no, relative (also `yes`) or absolute.
static OOM_MODE: AtomicU8 = AtomicU8::new(0);
static OOM_VALUES: [AtomicI32; 3] = [AtomicI32::new(0), AtomicI32::new(200), AtomicI32::new(800)];
/// Whether the score was changed by the server, and what it was before.
static OOM_ADJUSTED: AtomicBool = AtomicBool::new(false);
static OOM_BASE: AtomicI32 = AtomicI32::new(0);
/// The class the parent process is in now.
static OOM_CLASS: AtomicU8 = AtomicU8::new(0);

const OOM_FILE: &str = "/proc/self/oom_score_adj";

/// Records `oom-score-adj` (`no`, `yes`, `relative`, `absolute`) and
/// `oom-score-adj-values`; [`apply_oom_score`] puts them into effect.
pub fn configure_oom(mode: &str, values: [i32; 3]) {
    let m = match mode {
        "yes" | "relative" => 1,
        "absolute" => 2,
        _ => 0,
    };
    OOM_MODE.store(m, Ordering::Relaxed);
    for (slot, v) in OOM_VALUES.iter().zip(values) {
        slot.store(v, Ordering::Relaxed);
    }
}

/// Writes the score for `class` (None: the class the process is in now)
/// to /proc, as Redis's setOOMScoreAdj: relative scores add to the score
/// the process had before the server first changed it, and turning the
/// feature off restores that score. An error says what failed.
pub fn apply_oom_score(class: Option<OomClass>) -> Result<(), String> {
    if let Some(c) = class {
        if c != OomClass::BgChild {
            OOM_CLASS.store(c as u8, Ordering::Relaxed);
        }
    }
    let class = class.map_or(OOM_CLASS.load(Ordering::Relaxed), |c| c as u8);
    let mode = OOM_MODE.load(Ordering::Relaxed);
    let val = if mode != 0 {
        if !OOM_ADJUSTED.swap(true, Ordering::Relaxed) {
            let base = std::fs::read_to_string(OOM_FILE)
                .map_err(|e| format!("Unable to read oom_score_adj: {}", strerror(&e)))
                .inspect_err(|_| OOM_ADJUSTED.store(false, Ordering::Relaxed))?;
            OOM_BASE.store(atoi(&base), Ordering::Relaxed);
        }
        let mut v = OOM_VALUES[usize::from(class)].load(Ordering::Relaxed);
        if mode == 1 {
            v += OOM_BASE.load(Ordering::Relaxed);
        }
        v.clamp(-1000, 1000)
    } else if OOM_ADJUSTED.swap(false, Ordering::Relaxed) {
        OOM_BASE.load(Ordering::Relaxed)
    } else {
        return Ok(());
    };
    std::fs::write(OOM_FILE, format!("{val}\n"))
        .map_err(|e| format!("Unable to write oom_score_adj: {}", strerror(&e)))
}

/// The leading integer of `s`, as C's atoi (0 when there is none).
fn atoi(s: &str) -> i32 {
    i32::try_from(super::num::atoi(s)).unwrap_or(0)
}

/// An I/O error as C's strerror prints it (no " (os error N)").
pub fn strerror(e: &std::io::Error) -> String {
    let msg = e.to_string();
    match msg.find(" (os error") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

/// Work a forked child does first, as Redis's redisFork: it takes the
/// child's OOM score.
pub fn after_fork_in_child() {
    if let Err(e) = apply_oom_score(Some(OomClass::BgChild)) {
        tracing::warn!("{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_reads_a_leading_integer() {
        assert_eq!(atoi("12\n"), 12);
        assert_eq!(atoi("-300\n"), -300);
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi(""), 0);
    }
}
