//! The software watchdog (Redis's `watchdog-period`, debug.c's
//! watchdogScheduleSignal/applyWatchdogPeriod): when the executor has not
//! reached its cron for the period, SIGALRM on the executor's thread logs
//! its stack ("--- WATCHDOG TIMER EXPIRED ---"), once per expiry. Redis
//! re-arms a one-shot ITIMER_REAL from serverCron; here the cron moves a
//! deadline and a small thread, started only when the watchdog is first
//! enabled, signals the executor's thread when the deadline passes (a
//! process timer's SIGALRM could land on any thread). Off (period 0), the
//! cron's cost is one atomic load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, OnceLock};
use std::time::Duration;

use super::clock;

/// The period in milliseconds (0: off).
static PERIOD_MS: AtomicU64 = AtomicU64::new(0);
/// When the timer fires, in real milliseconds (0: not armed).
static DEADLINE_MS: AtomicU64 = AtomicU64::new(0);
/// The executor's thread while its loop runs: signalled under the lock,
/// cleared under it as the loop ends, so no signal targets a thread gone.
static EXECUTOR_THREAD: Mutex<Option<libc::pthread_t>> = Mutex::new(None);
static THREAD: Once = Once::new();
/// What the signal handler runs: the engine's report writer.
static REPORT: OnceLock<fn()> = OnceLock::new();

/// Sets what an expiry runs on the executor's thread (once, by the
/// engine; the report needs the server's log settings).
pub fn set_report(report: fn()) {
    let _ = REPORT.set(report);
}

/// Puts `period_ms` into effect for an executor running `hz` times a
/// second; returns the period in effect, raised to two cron periods as
/// Redis raises it (CONFIG GET shows the raised value).
pub fn apply(period_ms: u64, hz: u32) -> u64 {
    let min = u64::from(1000 / hz.clamp(1, 500)) * 2;
    let period = if period_ms == 0 {
        0
    } else {
        period_ms.max(min)
    };
    PERIOD_MS.store(period, Ordering::Relaxed);
    if period == 0 {
        DEADLINE_MS.store(0, Ordering::Relaxed);
        return 0;
    }
    // SAFETY: a sigaction with a valid SA_SIGINFO handler for SIGALRM;
    // SA_RESTART so the executor's interrupted system calls go on.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_watchdog_signal as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGALRM, &act, std::ptr::null_mut());
    }
    arm();
    THREAD.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("ferrokv-watchdog".into())
            .spawn(watch);
        if let Err(e) = spawned {
            tracing::warn!("Can't start the watchdog thread: {e}");
        }
    });
    period
}

/// Notes the executor's thread (called on it, as its loop starts), or
/// (`running` false, as it ends) forgets it.
pub fn set_executor_thread(running: bool) {
    // SAFETY: pthread_self has no preconditions.
    let me = running.then(|| unsafe { libc::pthread_self() });
    *EXECUTOR_THREAD.lock().unwrap_or_else(|e| e.into_inner()) = me;
}

/// Re-arms the timer from the executor's cron.
#[inline]
pub fn arm() {
    let period = PERIOD_MS.load(Ordering::Relaxed);
    if period != 0 {
        DEADLINE_MS.store(clock::real_now_ms() + period, Ordering::Relaxed);
    }
}

/// The watchdog thread: waits for the deadline, then signals the executor
/// once (the timer is one-shot until the cron re-arms it).
fn watch() {
    loop {
        let deadline = DEADLINE_MS.load(Ordering::Relaxed);
        let now = clock::real_now_ms();
        if deadline == 0 || now < deadline {
            let wait = if deadline == 0 {
                100
            } else {
                (deadline - now).min(100)
            };
            std::thread::sleep(Duration::from_millis(wait.max(1)));
            continue;
        }
        if DEADLINE_MS
            .compare_exchange(deadline, 0, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        let thread = EXECUTOR_THREAD.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(t), true) = (*thread, PERIOD_MS.load(Ordering::Relaxed) != 0) {
            // SAFETY: the thread is running its loop: it clears the entry
            // under this lock before it ends. SIGALRM has the handler
            // installed by `apply`.
            unsafe { libc::pthread_kill(t, libc::SIGALRM) };
        }
    }
}

extern "C" fn on_watchdog_signal(
    _sig: libc::c_int,
    _info: *mut libc::siginfo_t,
    _uc: *mut libc::c_void,
) {
    if PERIOD_MS.load(Ordering::Relaxed) != 0 {
        if let Some(report) = REPORT.get() {
            report();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_periods_are_raised_to_two_cron_periods() {
        assert_eq!(apply(0, 10), 0);
        assert_eq!(apply(100, 10), 200);
        assert_eq!(apply(100, 100), 100);
        assert_eq!(apply(50, 100), 50);
        assert_eq!(apply(0, 10), 0);
    }
}
