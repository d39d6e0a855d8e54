//! I/O threads (`io-threads`, `io-threads-do-reads`): Redis's threaded
//! I/O (networking.c's handleClientsWithPendingReadsUsingThreads and
//! handleClientsWithPendingWritesUsingThreads), shaped for ferrokv.
//!
//! The executor's thread stays the only one that runs commands or touches
//! the keyspace. When a loop iteration has many connections to read (or to
//! write), it lends their [`ConnIo`] parts out as one job: the I/O threads
//! (and the executor's thread, for a read it needs and nobody took yet)
//! claim connections one at a time and read and frame (or write) them. A
//! read job's outcomes are acted on in the order a single-threaded pass
//! would have, so a command's effects and replies are exactly those without
//! threads. A write job runs on while the executor's thread polls, reads
//! and runs the next commands: a connection lent for writing is waited for
//! only when touched, and the outcomes are acted on before the next write
//! job (or before the loop sleeps). A read job and a write job can be open
//! together; the threads take reads first, which the executor waits on.
//!
//! Claiming is dynamic, not a fixed split as in Redis: a thread that is
//! asleep or descheduled is never waited for, the executor's thread simply
//! takes its share. Threads spin briefly for the next job, then sleep until
//! woken. With `io-threads 1` (the default) no thread exists and nothing
//! here runs.

use std::cell::UnsafeCell;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use super::conn::{ConnIo, ReadOutcome};
use super::event_loop::NetLimits;

/// Fewer connections than this many per thread are served on the
/// executor's thread alone (Redis's stopThreadedIOIfNeeded: twice the
/// thread count).
const MIN_PER_THREAD: usize = 2;

/// How long an idle I/O thread watches for the next job before it sleeps:
/// 50 µs, or `FERROKV_IO_SPIN_US` from the environment (for measuring).
/// At load a job follows within this; idle, a thread costs no CPU.
fn spin_time() -> Duration {
    static SPIN: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        Duration::from_micros(
            std::env::var("FERROKV_IO_SPIN_US")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(50),
        )
    })
}

/// The claim word's value between jobs: no job to claim from.
const CLOSED: u64 = u64::MAX;

// A connection's I/O part moves between threads: it must hold nothing
// shared with the executor (an `Rc`, a `Cell` the executor reads).
const _: fn() = || {
    fn send<T: Send>() {}
    send::<ConnIo>();
};

/// What a job does to each connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    /// Read once, then frame what is buffered unless `parse` is false.
    Read,
    /// Write the pending output.
    Write,
}

/// One connection lent out for a job, and what became of it.
pub struct Task {
    io: NonNull<ConnIo>,
    /// Frame after reading (the connection has no batch at the executor
    /// and is not closing).
    parse: bool,
    /// What the read or write found, once done.
    outcome: Outcome,
    /// Set (Release) by the thread that ran the task, once done.
    done: AtomicBool,
}

/// A task's result.
pub enum Outcome {
    /// Not done yet.
    Pending,
    /// The read's outcome.
    Read(ReadOutcome),
    /// The write's outcome (bytes written, or the connection is dead).
    Wrote(io::Result<usize>),
}

impl Task {
    /// Lends `io` out until the job that runs this task returns.
    pub fn new(io: &mut ConnIo, parse: bool) -> Task {
        Task {
            io: NonNull::from(io),
            parse,
            outcome: Outcome::Pending,
            done: AtomicBool::new(false),
        }
    }

    /// Runs the task at `task` and marks it done.
    ///
    /// # Safety
    /// The caller has claimed the task (see `Job`): no other thread runs
    /// it, and its connection is not touched elsewhere until it is done.
    /// Only raw places are used, so no reference covers the `done` flag
    /// the executor's thread may be reading meanwhile.
    unsafe fn run(task: *mut Task, op: Op, limits: &NetLimits) {
        // SAFETY: as the caller promises; the connection outlives the
        // task (the executor's thread settles a task before it removes
        // or touches the task's connection).
        let io = unsafe { &mut *(*task).io.as_ptr() };
        // SAFETY: a plain field read of a claimed task.
        let parse = unsafe { (*task).parse };
        let outcome = match op {
            Op::Read => {
                let r = io.read();
                if parse && matches!(r, ReadOutcome::Data { .. }) {
                    io.parse(limits);
                }
                Outcome::Read(r)
            }
            Op::Write => Outcome::Wrote(io.write_pending()),
        };
        // SAFETY: the claimed task's outcome is this thread's to write
        // until `done` is set.
        unsafe {
            std::ptr::addr_of_mut!((*task).outcome).write(outcome);
            (*task).done.store(true, Ordering::Release);
        }
    }
}

/// The job being served, shared by every thread.
///
/// `claim` holds the job's generation (high 32 bits) and the next task
/// index (low 32 bits), or [`CLOSED`] between jobs. A thread claims index
/// `i` by compare-and-swap from `(gen, i)` to `(gen, i + 1)`: it succeeds
/// only while that job is open and `i` is unclaimed, so each task runs
/// once, and only while its job's task list is alive.
struct Job {
    claim: AtomicU64,
    tasks: AtomicPtr<Task>,
    len: AtomicUsize,
    /// Whether the job reads or writes (fixed: one job of each kind).
    op: Op,
    /// The limits the framing applies, set before the job opens.
    limits: UnsafeCell<NetLimits>,
    /// Set when the threads are to exit.
    stop: AtomicBool,
}

// SAFETY: `limits` is written only by the executor's thread while the job
// is CLOSED (no thread reads it then: readers hold a claimed task, which
// needs an open job); every other field is atomic.
unsafe impl Sync for Job {}

/// One of the two jobs (reads, writes) as the executor's thread keeps it.
struct Slot {
    job: Arc<Job>,
    generation: u64,
    /// The open job's tasks.
    tasks: Vec<Task>,
    /// A job is open.
    open: bool,
}

impl Slot {
    fn new(op: Op) -> Slot {
        Slot {
            job: Arc::new(Job {
                claim: AtomicU64::new(CLOSED),
                tasks: AtomicPtr::new(std::ptr::null_mut()),
                len: AtomicUsize::new(0),
                op,
                limits: UnsafeCell::new(NetLimits::default()),
                stop: AtomicBool::new(false),
            }),
            generation: 0,
            tasks: Vec::new(),
            open: false,
        }
    }

    /// Waits until task `i` is done, claiming (and running on this thread)
    /// the unclaimed tasks up to it once the threads have had a moment.
    fn settle(&mut self, i: usize, threads_awake: bool) {
        if !self.open || i >= self.tasks.len() {
            return;
        }
        let job = &*self.job;
        let base = self.tasks.as_mut_ptr();
        // SAFETY: `i` is in bounds; `done` is atomic, read through a raw
        // pointer so no reference covers tasks other threads write.
        let done = unsafe { &(*base.add(i)).done };
        if done.load(Ordering::Acquire) {
            return;
        }
        // An awake thread takes a fresh task within a few hundred
        // nanoseconds: give it that before doing the I/O here.
        if threads_awake {
            for _ in 0..CLAIM_GRACE_SPINS {
                if (job.claim.load(Ordering::Acquire) & 0xffff_ffff) as usize > i {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        // Claim in order up to `i`: each claimed index is this thread's.
        while (job.claim.load(Ordering::Acquire) & 0xffff_ffff) as usize <= i && claim_one(job) {}
        let mut spins = 0u32;
        while !done.load(Ordering::Acquire) {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Settles every task and ends the open job.
    fn close(&mut self) {
        if !self.open {
            return;
        }
        for i in 0..self.tasks.len() {
            self.settle(i, false);
        }
        // Every index was claimed and is done: no thread can claim from
        // this job once it is closed, and the tasks may go.
        self.job.claim.store(CLOSED, Ordering::SeqCst);
        self.open = false;
        self.tasks.clear();
    }
}

/// How long the executor's thread leaves a task it waits for to the I/O
/// threads (spin-loop hints, about a microsecond) before claiming it.
const CLAIM_GRACE_SPINS: u32 = 256;

/// One I/O thread as the executor's thread sees it.
struct Worker {
    thread: Thread,
    /// The thread is asleep (or about to be) and must be woken for a job.
    sleeping: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// The I/O threads and their counters.
pub struct IoThreads {
    /// The read job and the write job.
    slots: [Slot; 2],
    workers: Vec<Worker>,
    /// `io-threads-do-reads`: reads are threaded too, not only writes.
    do_reads: bool,
    /// Whether the threads are used now, as found by trying.
    governor: Governor,
    /// The last write pass used the threads (INFO `io_threads_active`).
    active: bool,
    /// Connections read in threaded passes (INFO
    /// `io_threaded_reads_processed`).
    pub reads_processed: u64,
    /// Connections written in threaded passes.
    pub writes_processed: u64,
}

impl IoThreads {
    /// Starts `n - 1` I/O threads (the executor's thread is the n-th);
    /// none for `n <= 1`.
    pub fn start(n: usize, do_reads: bool) -> io::Result<IoThreads> {
        let slots = [Slot::new(Op::Read), Slot::new(Op::Write)];
        let mut workers = Vec::new();
        for i in 1..n.max(1) {
            let sleeping = Arc::new(AtomicBool::new(false));
            let jobs = [slots[0].job.clone(), slots[1].job.clone()];
            let s = sleeping.clone();
            let handle = std::thread::Builder::new()
                .name(format!("io_thd_{i}"))
                .spawn(move || serve(&jobs, &s))?;
            workers.push(Worker {
                thread: handle.thread().clone(),
                sleeping,
                handle: Some(handle),
            });
        }
        Ok(IoThreads {
            slots,
            workers,
            do_reads,
            governor: Governor::new(
                std::env::var_os("FERROKV_IO_THREADS_ALWAYS").is_some_and(|v| v == "1"),
            ),
            active: false,
            reads_processed: 0,
            writes_processed: 0,
        })
    }

    /// Whether the last write pass was threaded (INFO `io_threads_active`).
    pub fn active(&self) -> bool {
        self.active
    }

    /// Whether `n` connections to read are worth the threads: reads are
    /// threaded while writes are (Redis reads with threads only while
    /// they are active) and `io-threads-do-reads` is on.
    pub fn threads_reads(&mut self, n: usize) -> bool {
        self.governor.reads += n as u64;
        self.do_reads && self.active && self.worth(n)
    }

    /// Whether `n` connections to write are worth the threads; decides
    /// [`Self::active`] as Redis's stopThreadedIOIfNeeded does.
    pub fn threads_writes(&mut self, n: usize) -> bool {
        self.governor.tick(Instant::now());
        self.active = self.governor.use_threads && self.worth(n);
        self.active
    }

    fn worth(&self, n: usize) -> bool {
        !self.workers.is_empty() && n >= MIN_PER_THREAD * (self.workers.len() + 1)
    }

    /// Opens a job: `op` on every task, by the I/O threads, while this
    /// thread goes on. Each task's connection stays lent until the task
    /// is settled ([`Self::settle`]); the job ends with [`Self::close`].
    /// A job of the other kind may stay open meanwhile.
    pub fn open(&mut self, op: Op, tasks: Vec<Task>, limits: &NetLimits) {
        self.close(op);
        if tasks.is_empty() {
            return;
        }
        match op {
            Op::Read => self.reads_processed += tasks.len() as u64,
            Op::Write => self.writes_processed += tasks.len() as u64,
        }
        let slot = &mut self.slots[op as usize];
        slot.tasks = tasks;
        slot.open = true;
        // 1 ..= 0xffff_fffe: never the high half of CLOSED, nor 0.
        slot.generation = slot.generation % 0xffff_fffe + 1;
        let job = &*slot.job;
        // SAFETY: the job is CLOSED, so no other thread reads `limits`.
        unsafe { *job.limits.get() = *limits };
        job.tasks.store(slot.tasks.as_mut_ptr(), Ordering::Relaxed);
        job.len.store(slot.tasks.len(), Ordering::Relaxed);
        // Opens the job; SeqCst pairs with each thread's `sleeping` flag
        // (a thread going to sleep sees the job, or is seen asleep here).
        job.claim.store(slot.generation << 32, Ordering::SeqCst);
        for w in &self.workers {
            if w.sleeping.load(Ordering::SeqCst) {
                w.thread.unpark();
            }
        }
    }

    /// Number of tasks in the open job of kind `op` (0 when none is open).
    pub fn len(&self, op: Op) -> usize {
        let slot = &self.slots[op as usize];
        if slot.open {
            slot.tasks.len()
        } else {
            0
        }
    }

    /// Whether no job of kind `op` is open.
    pub fn is_empty(&self, op: Op) -> bool {
        self.len(op) == 0
    }

    /// Waits until task `i` of the open job of kind `op` is done, running
    /// it (and the unclaimed ones before it) on this thread when no I/O
    /// thread has taken it in time; its connection may then be touched
    /// here again.
    pub fn settle(&mut self, op: Op, i: usize) {
        let awake = self
            .workers
            .iter()
            .any(|w| !w.sleeping.load(Ordering::Relaxed));
        self.slots[op as usize].settle(i, awake);
    }

    /// Takes task `i`'s outcome once settled.
    pub fn outcome(&mut self, op: Op, i: usize) -> Outcome {
        self.settle(op, i);
        let slot = &mut self.slots[op as usize];
        if !slot.open || i >= slot.tasks.len() {
            return Outcome::Pending;
        }
        // SAFETY: task `i` is done: no other thread touches it any more
        // (others may still write other tasks, so only this one's field
        // is borrowed).
        let outcome =
            unsafe { &mut *std::ptr::addr_of_mut!((*slot.tasks.as_mut_ptr().add(i)).outcome) };
        std::mem::replace(outcome, Outcome::Pending)
    }

    /// Waits until every lent connection is back (each task done), the
    /// jobs staying open with their outcomes: connections may then move in
    /// memory.
    pub fn settle_all(&mut self) {
        for slot in &mut self.slots {
            for i in 0..slot.tasks.len() {
                slot.settle(i, false);
            }
        }
    }

    /// Settles every task of the job of kind `op` and ends it.
    pub fn close(&mut self, op: Op) {
        self.slots[op as usize].close();
    }
}

impl Drop for IoThreads {
    fn drop(&mut self) {
        for slot in &mut self.slots {
            slot.close();
            slot.job.stop.store(true, Ordering::SeqCst);
        }
        for w in &mut self.workers {
            w.thread.unpark();
            if let Some(h) = w.handle.take() {
                let _ = h.join();
            }
        }
    }
}

/// A window of the governor's trials.
const WINDOW: Duration = Duration::from_millis(50);

/// Windows with fewer connection reads than this are too light for the
/// threads to matter: they are served without threads, and not tried.
const LIGHT: u64 = 500;

/// Decides whether the threads are used, by trying: every so often four
/// windows run alternately with and without them (with, without, without,
/// with), and the mode that read more connections (the clients' request
/// rate, under the same load) is kept for the next second, three when one
/// mode led by a fifth. The threads win only where the machine has cores
/// to spare for them; where it has none (the clients share the server's
/// cores), their spinning and hand-offs only take CPU from the rest, and
/// they stay off.
///
/// A process allowed on one core only (`taskset`, a cpuset) has none to
/// spare whatever its load: it is not tried (checked again at each trial
/// due). Trials that keep finding the threads slower come further apart,
/// up to [`MAX_UNTIL_TRIAL`] windows, so a load the threads cannot help
/// pays for them less and less often.
///
/// `FERROKV_IO_THREADS_ALWAYS=1` in the environment skips the trials and
/// keeps the threads on (tests, so that their traffic goes through them).
struct Governor {
    /// Use the threads now.
    use_threads: bool,
    /// Never try: always use the threads.
    always: bool,
    window_start: Instant,
    /// Connections read in the current window.
    reads: u64,
    /// The trial window under way (1 to 4), or 0 outside trials.
    trial: u8,
    /// Reads in the trial windows with and without the threads.
    with: u64,
    without: u64,
    /// Windows left before the next trial.
    until_trial: u32,
    /// The last trial found the threads faster.
    verdict: bool,
    /// Trials in a row that found the threads slower.
    losses: u32,
    /// Reads the number of CPUs the process may run on.
    cpus: fn() -> usize,
}

/// Windows between trials that found the threads clearly better or
/// worse; an unclear result is tried again after [`UNCLEAR_UNTIL_TRIAL`].
const CLEAR_UNTIL_TRIAL: u32 = 60;
const UNCLEAR_UNTIL_TRIAL: u32 = 20;
/// The furthest apart trials come (10 s of windows).
const MAX_UNTIL_TRIAL: u32 = 200;

/// Number of CPUs this process may run on (its affinity mask); 0 when it
/// cannot be read.
fn allowed_cpus() -> usize {
    // SAFETY: `set` is a plain bit array, written by the kernel up to its
    // size, which is the size passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return 0;
        }
        libc::CPU_COUNT(&set) as usize
    }
}

impl Governor {
    fn new(always: bool) -> Governor {
        Governor {
            use_threads: always,
            always,
            window_start: Instant::now(),
            reads: 0,
            trial: 0,
            with: 0,
            without: 0,
            until_trial: 0,
            verdict: false,
            losses: 0,
            cpus: allowed_cpus,
        }
    }

    /// Ends the window when it is over and moves the trials on.
    fn tick(&mut self, now: Instant) {
        if self.always || now.duration_since(self.window_start) < WINDOW {
            return;
        }
        self.window_start = now;
        let reads = std::mem::take(&mut self.reads);
        if self.trial == 0 {
            if reads < LIGHT {
                // Light windows do not count towards the next trial: a load
                // that comes back (a benchmark's next run) gets the last
                // trial's verdict, not a trial at each start.
                self.use_threads = false;
                return;
            }
            if self.until_trial > 0 {
                self.until_trial -= 1;
                self.use_threads = self.verdict;
                return;
            }
            if (self.cpus)() == 1 {
                self.use_threads = false;
                self.until_trial = UNCLEAR_UNTIL_TRIAL;
                return;
            }
            // Trial window 1 (with the threads) starts now.
            self.trial = 1;
            self.with = 0;
            self.without = 0;
            self.use_threads = true;
            return;
        }
        if self.use_threads {
            self.with += reads;
        } else {
            self.without += reads;
        }
        self.trial += 1;
        if self.trial <= 4 {
            // with, without, without, with
            self.use_threads = self.trial == 4;
            return;
        }
        self.trial = 0;
        self.use_threads = self.with > self.without + self.without / 50;
        self.verdict = self.use_threads;
        let clear = self.with.max(self.without) > self.with.min(self.without) * 6 / 5;
        self.losses = if self.use_threads {
            0
        } else {
            self.losses.saturating_add(1)
        };
        self.until_trial = match (clear, self.use_threads) {
            (false, _) => UNCLEAR_UNTIL_TRIAL,
            (true, true) => CLEAR_UNTIL_TRIAL,
            // 60, 120, 200 windows after one, two, three losses in a row.
            (true, false) => (CLEAR_UNTIL_TRIAL << (self.losses - 1).min(8)).min(MAX_UNTIL_TRIAL),
        };
    }
}

/// Whether job `job` has a task left to claim.
fn has_work(job: &Job, order: Ordering) -> bool {
    let c = job.claim.load(order);
    c != CLOSED && ((c & 0xffff_ffff) as usize) < job.len.load(Ordering::Acquire)
}

/// Claims the next task of the open job and runs it; false when the job
/// has none left (or is not open).
fn claim_one(job: &Job) -> bool {
    loop {
        let c = job.claim.load(Ordering::Acquire);
        if c == CLOSED {
            return false;
        }
        // Read after the claim word showed the job open: if the job was
        // closed and another opened since, the compare-and-swap below
        // fails (the generation in the word differs), so values of a
        // newer job are never used with this one.
        let tasks = job.tasks.load(Ordering::Acquire);
        let len = job.len.load(Ordering::Acquire);
        let i = (c & 0xffff_ffff) as usize;
        if i >= len {
            return false;
        }
        if job
            .claim
            .compare_exchange_weak(c, c + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            continue;
        }
        // SAFETY: the job is open, and `limits` changes only while closed.
        let limits = unsafe { &*job.limits.get() };
        // SAFETY: the claim succeeded, so the job of that generation is
        // open with `len` tasks at `tasks` (the executor's thread keeps
        // them alive until each is done), and index `i` is this thread's
        // alone.
        unsafe { Task::run(tasks.add(i), job.op, limits) };
        return true;
    }
}

/// An I/O thread's life: claim and run tasks, reads before writes (the
/// executor waits on reads); when there are none, spin a little, then
/// sleep until woken; until told to stop.
fn serve(jobs: &[Arc<Job>; 2], sleeping: &AtomicBool) {
    let [reads, writes] = jobs;
    let mut started = Instant::now();
    let mut spins = 0u32;
    loop {
        if claim_one(reads) || claim_one(writes) {
            spins = 0;
            started = Instant::now();
            continue;
        }
        if reads.stop.load(Ordering::Relaxed) {
            return;
        }
        spins = spins.wrapping_add(1);
        // The clock is read now and then: it costs more than a spin.
        if !spins.is_multiple_of(1024) || started.elapsed() < spin_time() {
            std::hint::spin_loop();
            continue;
        }
        sleeping.store(true, Ordering::SeqCst);
        if !has_work(reads, Ordering::SeqCst)
            && !has_work(writes, Ordering::SeqCst)
            && !reads.stop.load(Ordering::SeqCst)
        {
            std::thread::park();
        }
        sleeping.store(false, Ordering::SeqCst);
        spins = 0;
        started = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A governor whose process may run on `cpus()` CPUs, its first window
    /// starting now.
    fn governor(cpus: fn() -> usize) -> (Instant, Governor) {
        let start = Instant::now();
        let mut g = Governor::new(false);
        g.window_start = start;
        g.cpus = cpus;
        (start, g)
    }

    /// Runs `windows` governor windows, each reading `with` connections
    /// when the threads are on and `without` when off; returns the windows
    /// that used the threads.
    fn run(g: &mut Governor, start: Instant, windows: u32, with: u64, without: u64) -> Vec<u32> {
        let mut used = Vec::new();
        for w in 0..windows {
            g.reads = if g.use_threads { with } else { without };
            if g.use_threads {
                used.push(w);
            }
            g.tick(start + WINDOW * (w + 1));
        }
        used
    }

    #[test]
    fn losing_trials_come_further_apart() {
        let (start, mut g) = governor(|| 2);
        let used = run(&mut g, start, 1000, 1000, 2000);
        // Each trial uses the threads in its windows 1 and 4.
        let trials: Vec<u32> = used.chunks(2).map(|c| c[0]).collect();
        let gaps: Vec<u32> = trials.windows(2).map(|t| t[1] - t[0]).collect();
        assert!(gaps.len() >= 4, "{trials:?}");
        assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "{gaps:?}");
        assert_eq!(*gaps.last().unwrap(), MAX_UNTIL_TRIAL + 5, "{gaps:?}");
    }

    #[test]
    fn winning_threads_stay_on_between_trials() {
        let (start, mut g) = governor(|| 4);
        let used = run(&mut g, start, 1000, 2000, 1000);
        assert!(used.len() > 900, "{}", used.len());
    }

    #[test]
    fn idle_windows_keep_the_verdict_and_the_schedule() {
        let (start, mut g) = governor(|| 2);
        // One trial (windows 1 to 4) finds the threads slower.
        assert_eq!(run(&mut g, start, 10, 1000, 2000), vec![1, 4]);
        // Idle, then the load comes back: no trial at once.
        run(&mut g, start + WINDOW * 10, 100, 0, 0);
        assert!(run(&mut g, start + WINDOW * 110, 40, 1000, 2000).is_empty());
    }

    #[test]
    fn one_allowed_cpu_never_tries_the_threads() {
        let (start, mut g) = governor(|| 1);
        assert!(run(&mut g, start, 1000, 2000, 1000).is_empty());
        assert!(allowed_cpus() >= 1);
    }
}
