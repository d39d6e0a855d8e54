//! What a saving child tells its parent as it goes (Redis's child info
//! pipe, `childinfo.c`): the keys written so far and the memory the child
//! has copied on write (its private dirty pages), measured about once a
//! second. Here a page shared by the two processes carries them; the
//! parent reads it for INFO (`current_cow_size`, `current_fork_perc`,
//! `current_save_keys_processed`, `rdb_last_cow_size`).

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// The shared figures.
#[repr(C)]
struct Figures {
    keys: AtomicU64,
    cow: AtomicU64,
    cow_peak: AtomicU64,
    /// Unix ms of the last measure (0: none yet).
    cow_at_ms: AtomicU64,
    /// The sum and number of the measures, for the average.
    cow_sum: AtomicU64,
    cow_measures: AtomicU64,
}

/// The figures of one child, mapped in this process.
pub struct ChildInfo {
    figures: *mut Figures,
}

/// In a saving child: where it reports (null elsewhere).
static REPORT_TO: AtomicPtr<Figures> = AtomicPtr::new(std::ptr::null_mut());

impl ChildInfo {
    /// A zeroed shared page, mapped before the fork so that parent and
    /// child see the same one; None when it cannot be mapped.
    pub fn new() -> Option<ChildInfo> {
        // SAFETY: an anonymous shared mapping of one page, checked below;
        // zero-filled by the kernel, which is a valid `Figures`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<Figures>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then(|| ChildInfo {
            figures: p.cast::<Figures>(),
        })
    }

    fn figures(&self) -> &Figures {
        // SAFETY: mapped in `new` and unmapped only on drop.
        unsafe { &*self.figures }
    }

    /// Called in the child: the save loop reports here from now on.
    pub fn report_here(&self) {
        REPORT_TO.store(self.figures, Ordering::Relaxed);
    }

    /// Keys written so far.
    pub fn keys(&self) -> u64 {
        self.figures().keys.load(Ordering::Relaxed)
    }

    /// (bytes copied on write, the largest seen, Unix ms of the measure).
    pub fn cow(&self) -> (u64, u64, u64) {
        let f = self.figures();
        (
            f.cow.load(Ordering::Relaxed),
            f.cow_peak.load(Ordering::Relaxed),
            f.cow_at_ms.load(Ordering::Relaxed),
        )
    }
}

impl Drop for ChildInfo {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer referenced.
        unsafe { libc::munmap(self.figures.cast(), std::mem::size_of::<Figures>()) };
    }
}

/// Work a forked child does first (Redis's redisFork in the child): its
/// title, its OOM score, and its log lines' role `C`.
pub fn child_started(title: &str) {
    crate::config::log::set_role(b'C');
    if let Err(e) = crate::util::process::after_fork_in_child(title) {
        crate::config::log::child_line(true, &e);
    }
}

/// The save loop wrote a key (rdbSaveRio's report every 1024 keys, at
/// most once a second). Nothing outside a saving child.
#[inline]
pub fn key_saved() {
    let p = REPORT_TO.load(Ordering::Relaxed);
    if p.is_null() {
        return;
    }
    // SAFETY: set by `report_here` in this child, whose mapping lives
    // until the child exits.
    let f = unsafe { &*p };
    let keys = f.keys.fetch_add(1, Ordering::Relaxed) + 1;
    if keys % 1024 == 1 {
        let now = crate::util::clock::real_now_ms();
        if now.saturating_sub(f.cow_at_ms.load(Ordering::Relaxed)) >= 1000 {
            measure(f, now);
        }
    }
}

/// The child's work (`what`: "RDB", "AOF rewrite") ended well: a last
/// measure, and its log line (Redis's sendChildCowInfo with
/// CHILD_INFO_TYPE_RDB_COW_SIZE or CHILD_INFO_TYPE_AOF_COW_SIZE).
pub fn save_ended(what: &str) {
    let p = REPORT_TO.load(Ordering::Relaxed);
    if p.is_null() {
        return;
    }
    // SAFETY: as in `key_saved`.
    let f = unsafe { &*p };
    measure(f, crate::util::clock::real_now_ms());
    let measures = f.cow_measures.load(Ordering::Relaxed).max(1);
    crate::config::log::child_line(
        false,
        &format!(
            "Fork CoW for {what}: current {} MB, peak {} MB, average {} MB",
            f.cow.load(Ordering::Relaxed) >> 20,
            f.cow_peak.load(Ordering::Relaxed) >> 20,
            (f.cow_sum.load(Ordering::Relaxed) / measures) >> 20
        ),
    );
}

fn measure(f: &Figures, now: u64) {
    let cow = private_dirty();
    f.cow.store(cow, Ordering::Relaxed);
    f.cow_peak.fetch_max(cow, Ordering::Relaxed);
    f.cow_sum.fetch_add(cow, Ordering::Relaxed);
    f.cow_measures.fetch_add(1, Ordering::Relaxed);
    f.cow_at_ms.store(now.max(1), Ordering::Relaxed);
}

/// This process's private dirty memory, in bytes (Redis's
/// zmalloc_get_private_dirty: what a fork child has copied).
fn private_dirty() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/smaps_rollup") else {
        return 0;
    };
    text.lines()
        .filter_map(|l| l.strip_prefix("Private_Dirty:"))
        .filter_map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}
