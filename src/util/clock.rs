//! The server's time, in the units Redis uses. Every reading goes through
//! [`now_us`]: the system's wall clock, or a [`ManualClock`] installed on
//! the server's thread, which a test (or a program embedding ferrokv)
//! moves by hand, so TTLs, the expiry cycle and blocking timeouts follow
//! it without anyone waiting in real time.
//!
//! The system clock is read through `clock_gettime` directly: commands read
//! the clock at least once each, and this is about half the cost of
//! `SystemTime::now()` with its conversions.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

thread_local! {
    /// The manual clock installed on this thread: its time, read without
    /// touching the reference count (null: the system clock).
    static MANUAL_NOW: Cell<*const AtomicU64> = const { Cell::new(std::ptr::null()) };
    /// Keeps the installed clock alive while `MANUAL_NOW` points into it.
    static MANUAL: RefCell<Option<ManualClock>> = const { RefCell::new(None) };
}

/// Unix time in microseconds: the manual clock installed on this thread,
/// else the system's.
#[inline]
pub fn now_us() -> u64 {
    let manual = MANUAL_NOW.with(Cell::get);
    if !manual.is_null() {
        // SAFETY: the pointer is into the clock `MANUAL` keeps alive on
        // this same thread; `install` changes both together.
        return unsafe { &*manual }.load(Ordering::Relaxed);
    }
    system_now_us()
}

/// Unix time in milliseconds (see [`now_us`]).
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// Makes `clock` (None: the system clock) the time of the calling thread.
/// The server calls this on its own thread when it starts.
pub fn install(clock: Option<ManualClock>) {
    let ptr = clock
        .as_ref()
        .map_or(std::ptr::null(), |c| &c.inner.now_us as *const AtomicU64);
    MANUAL.with(|m| *m.borrow_mut() = clock);
    MANUAL_NOW.with(|p| p.set(ptr));
}

/// A clock that moves only when told to. Clones share one time; hand one
/// to [`crate::Server::start_with_clock`] and keep another to move it.
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<Manual>,
}

/// The shared state of a [`ManualClock`].
struct Manual {
    now_us: AtomicU64,
    /// Wakes the servers running on this clock after it moved, so their
    /// timers look at the new time at once.
    wakers: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl ManualClock {
    /// A clock standing at the system's time now.
    pub fn new() -> Self {
        Self::at_ms(system_now_us() / 1000)
    }

    /// A clock standing at `unix_ms`.
    pub fn at_ms(unix_ms: u64) -> Self {
        ManualClock {
            inner: Arc::new(Manual {
                now_us: AtomicU64::new(unix_ms.saturating_mul(1000)),
                wakers: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The clock's time in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.inner.now_us.load(Ordering::Relaxed) / 1000
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let us = u64::try_from(by.as_micros()).unwrap_or(u64::MAX);
        self.inner.now_us.fetch_add(us, Ordering::Relaxed);
        self.wake();
    }

    /// Sets the clock to `unix_ms` (backwards too).
    pub fn set_ms(&self, unix_ms: u64) {
        self.inner
            .now_us
            .store(unix_ms.saturating_mul(1000), Ordering::Relaxed);
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
