//! The server's time, in the units Redis uses. There are two clocks:
//!
//! - the **logical** clock, [`now_us`]: what TTLs and expiry, TIME, stream
//!   IDs, blocking timeouts, LRU stamps and CL.THROTTLE read. It is the
//!   system's wall clock until a [`ManualClock`] is installed on the
//!   server's thread: by a test or a program embedding ferrokv
//!   ([`crate::ServerBuilder::clock`]), or by the first CLOCK command. A
//!   manual clock either runs (the system's time plus an offset) or stands
//!   still (frozen), and moves when told: set, advanced, frozen, resumed.
//! - the **real** clock, [`real_now_us`]: command durations, client idle
//!   times and persistence timers, which must not jump when the logical
//!   time is moved.
//!
//! Without a manual clock both are the same reading. The system clock is
//! read through `clock_gettime` directly: commands read the clock at least
//! once each, and this is about half the cost of `SystemTime::now()` with
//! its conversions.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

thread_local! {
    /// The manual clock installed on this thread, read without touching
    /// the reference count (null: the system clock).
    static MANUAL_NOW: Cell<*const Manual> = const { Cell::new(std::ptr::null()) };
    /// Keeps the installed clock alive while `MANUAL_NOW` points into it.
    static MANUAL: RefCell<Option<ManualClock>> = const { RefCell::new(None) };
}

/// Logical Unix time in microseconds: the manual clock installed on this
/// thread, else the system's.
#[inline]
pub fn now_us() -> u64 {
    let manual = MANUAL_NOW.with(Cell::get);
    if !manual.is_null() {
        // SAFETY: the pointer is into the clock `MANUAL` keeps alive on
        // this same thread; `install` changes both together.
        return unsafe { &*manual }.now_us();
    }
    system_now_us()
}

/// Logical Unix time in milliseconds (see [`now_us`]).
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// Real Unix time in microseconds, whatever the logical clock says.
#[inline]
pub fn real_now_us() -> u64 {
    system_now_us()
}

/// Real Unix time in milliseconds (see [`real_now_us`]).
pub fn real_now_ms() -> u64 {
    system_now_us() / 1000
}

/// The real time that goes with `logical_us`, a reading of [`now_us`] just
/// taken: the same number when no manual clock is installed (the common
/// case costs no second reading), else a reading of the system clock.
#[inline]
pub fn real_with(logical_us: u64) -> u64 {
    if MANUAL_NOW.with(Cell::get).is_null() {
        logical_us
    } else {
        system_now_us()
    }
}

/// Makes `clock` (None: the system clock) the time of the calling thread.
/// The server calls this on its own thread when it starts.
pub fn install(clock: Option<ManualClock>) {
    let ptr = clock
        .as_ref()
        .map_or(std::ptr::null(), |c| Arc::as_ptr(&c.inner));
    MANUAL.with(|m| *m.borrow_mut() = clock);
    MANUAL_NOW.with(|p| p.set(ptr));
}

/// The manual clock installed on this thread; when there is none, one that
/// runs with the system's time is installed first (what the CLOCK command
/// does the first time it is used).
pub fn installed() -> ManualClock {
    if let Some(c) = MANUAL.with(|m| m.borrow().clone()) {
        return c;
    }
    let clock = ManualClock::running();
    install(Some(clock.clone()));
    clock
}

/// A clock that moves only when told to, or runs at the system's pace from
/// where it was set. Clones share one time: hand one to the server
/// ([`crate::ServerBuilder::clock`]) and keep another to move it from a
/// test.
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<Manual>,
}

/// The shared state of a [`ManualClock`].
struct Manual {
    /// Frozen: the time is `frozen_us`. Running: the system's time plus
    /// `offset_us`.
    frozen: AtomicBool,
    frozen_us: AtomicU64,
    offset_us: AtomicI64,
    /// Serialises changes of state (reads take no lock).
    change: Mutex<()>,
    /// Wakes the servers running on this clock after it moved, so their
    /// timers look at the new time at once.
    wakers: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl Manual {
    #[inline]
    fn now_us(&self) -> u64 {
        if self.frozen.load(Ordering::Acquire) {
            self.frozen_us.load(Ordering::Acquire)
        } else {
            let off = self.offset_us.load(Ordering::Acquire);
            system_now_us().saturating_add_signed(off)
        }
    }
}

impl ManualClock {
    /// A frozen clock standing at the system's time now.
    pub fn new() -> Self {
        Self::at_ms(system_now_us() / 1000)
    }

    /// A frozen clock standing at `unix_ms`.
    pub fn at_ms(unix_ms: u64) -> Self {
        Self::with(true, unix_ms.saturating_mul(1000))
    }

    /// A running clock that reads the system's time until it is moved.
    pub fn running() -> Self {
        Self::with(false, 0)
    }

    fn with(frozen: bool, frozen_us: u64) -> Self {
        ManualClock {
            inner: Arc::new(Manual {
                frozen: AtomicBool::new(frozen),
                frozen_us: AtomicU64::new(frozen_us),
                offset_us: AtomicI64::new(0),
                change: Mutex::new(()),
                wakers: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The clock's time in Unix microseconds.
    pub fn now_us(&self) -> u64 {
        self.inner.now_us()
    }

    /// The clock's time in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    /// True while the clock stands still.
    pub fn is_frozen(&self) -> bool {
        self.inner.frozen.load(Ordering::Acquire)
    }

    /// Moves the clock forward by `by` (frozen or running).
    pub fn advance(&self, by: Duration) {
        let us = u64::try_from(by.as_micros()).unwrap_or(u64::MAX);
        self.set_us(self.now_us().saturating_add(us));
    }

    /// Sets the clock to `unix_ms` (backwards too); a running clock runs on
    /// from there.
    pub fn set_ms(&self, unix_ms: u64) {
        self.set_us(unix_ms.saturating_mul(1000));
    }

    /// Stops the clock where it stands.
    pub fn freeze(&self) {
        self.change(|m| {
            let now = m.now_us();
            m.frozen_us.store(now, Ordering::Release);
            m.frozen.store(true, Ordering::Release);
        });
    }

    /// Lets a frozen clock run again from where it stands.
    pub fn resume(&self) {
        self.change(|m| {
            if m.frozen.load(Ordering::Acquire) {
                let at = m.frozen_us.load(Ordering::Acquire);
                m.offset_us
                    .store(offset_to(at, system_now_us()), Ordering::Release);
                m.frozen.store(false, Ordering::Release);
            }
        });
    }

    fn set_us(&self, us: u64) {
        self.change(|m| {
            if m.frozen.load(Ordering::Acquire) {
                m.frozen_us.store(us, Ordering::Release);
            } else {
                m.offset_us
                    .store(offset_to(us, system_now_us()), Ordering::Release);
            }
        });
    }

    /// Applies one change of state under the change lock, then wakes the
    /// servers on this clock.
    fn change(&self, f: impl FnOnce(&Manual)) {
        {
            // A poisoned lock only means another thread panicked while
            // changing the clock; the atomics are still consistent.
            let _guard = self.inner.change.lock().unwrap_or_else(|p| p.into_inner());
            f(&self.inner);
        }
        self.wake();
    }

    /// Calls `wake` after every move of the clock.
    pub fn on_move(&self, wake: Box<dyn Fn() + Send + Sync>) {
        if let Ok(mut w) = self.inner.wakers.lock() {
            w.push(wake);
        }
    }

    fn wake(&self) {
        if let Ok(w) = self.inner.wakers.lock() {
            for wake in w.iter() {
                wake();
            }
        }
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

/// The offset that makes `system_us` read as `target_us`.
fn offset_to(target_us: u64, system_us: u64) -> i64 {
    let d = i128::from(target_us) - i128::from(system_us);
    d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Unix time in microseconds from the system's clock.
#[cfg(unix)]
fn system_now_us() -> u64 {
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

/// Unix time in microseconds from the system's clock.
#[cfg(not(unix))]
fn system_now_us() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
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

    #[test]
    fn a_manual_clock_moves_only_when_told_on_its_thread() {
        let clock = super::ManualClock::at_ms(1_000);
        std::thread::spawn({
            let clock = clock.clone();
            move || {
                super::install(Some(clock.clone()));
                assert_eq!(super::now_ms(), 1_000);
                clock.advance(std::time::Duration::from_millis(250));
                assert_eq!(super::now_us(), 1_250_000);
                super::install(None);
                assert!(super::now_ms() > 1_000_000);
            }
        })
        .join()
        .expect("thread");
        // Other threads keep the system clock.
        assert!(super::now_ms() > 1_000_000);
        assert_eq!(clock.now_ms(), 1_250);
    }
}

/// Sleeps `usec` microseconds (Redis's debugDelay, for the
/// `rdb-key-save-delay` and `key-load-delay` test hooks); a negative value
/// sleeps one microsecond once in `-usec` calls, on average.
pub fn debug_delay(usec: i64) {
    let usec = if usec < 0 {
        u64::from(rand::random::<u64>() % usec.unsigned_abs() == 0)
    } else {
        usec as u64
    };
    if usec > 0 {
        std::thread::sleep(std::time::Duration::from_micros(usec));
    }
}
