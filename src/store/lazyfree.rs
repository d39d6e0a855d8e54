//! Freeing large values off the executor thread (Redis's lazyfree.c): a
//! deleted key whose value takes more than [`THRESHOLD`] allocations to
//! free goes to a background thread instead of being freed in place, when
//! the deletion asks for it — UNLINK always, DEL, expiry and eviction as
//! `lazyfree-lazy-user-del`, `-expire` and `-eviction` say, flushes with
//! ASYNC or `lazyfree-lazy-user-flush`.
//! The thread only drops what it is handed, which no one else can reach:
//! the keyspace never crosses threads.
//!
//! INFO's `lazyfree_pending_objects` and `lazyfreed_objects` count as
//! Redis's do: values (or, for a flush, keys) handed over and not yet
//! freed, and freed since the last CONFIG RESETSTAT.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

use super::dict::Dict;
use super::entry::{Entry, EntryBox};
use super::hash::Hash;
use super::set::Set;
use super::value::Value;
use super::zset::ZSet;

/// Values that take more allocations than this to free are freed in the
/// background (Redis's LAZYFREE_THRESHOLD).
pub const THRESHOLD: u64 = 64;

static PENDING: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

/// `lazyfree-lazy-expire`.
pub static LAZY_EXPIRE: AtomicBool = AtomicBool::new(false);
/// `lazyfree-lazy-user-del`.
pub static LAZY_USER_DEL: AtomicBool = AtomicBool::new(false);
/// `lazyfree-lazy-eviction`.
pub static LAZY_EVICTION: AtomicBool = AtomicBool::new(false);
/// `lazyfree-lazy-server-del`: keys a command deletes or overwrites
/// (RENAME's target, a STORE command's destination, SET over a value).
pub static LAZY_SERVER_DEL: AtomicBool = AtomicBool::new(false);

/// The command a deletion propagates as: UNLINK when the key was freed in
/// the background under a `lazyfree-lazy-*` directive, else DEL (Redis's
/// propagateDeletion, and GETDEL, GETEX and EXPIRE's rewrites).
pub fn deletion_verb(lazy: bool) -> &'static [u8] {
    if lazy {
        b"UNLINK"
    } else {
        b"DEL"
    }
}

/// What the background thread frees: (the object, how many it counts).
type Job = (Box<dyn Send>, u64);

static QUEUE: OnceLock<Mutex<Option<Sender<Job>>>> = OnceLock::new();

/// The allocations freeing `v` takes, as Redis's lazyfreeGetFreeEffort
/// estimates them: nodes of a list, elements of a table-encoded set, hash
/// or sorted set, radix-tree nodes plus groups and their pending entries
/// of a stream; 1 for everything kept in one allocation.
pub fn effort(v: &Value) -> u64 {
    match v {
        Value::List(l) => l.chunk_count() as u64,
        Value::Set(Set::Table(m)) => m.len() as u64,
        Value::Hash(Hash::Table(m)) => m.len() as u64,
        Value::ZSet(ZSet::Skiplist(t)) => t.len() as u64,
        Value::Stream(s) => {
            let groups = s.groups.len() as u64;
            let first_pel = s.groups.values().next().map_or(0, |g| g.pel.len() as u64);
            s.rax_nodes() + groups * (1 + first_pel)
        }
        _ => 1,
    }
}

/// [`effort`] of an entry's value.
pub fn entry_effort(e: &Entry) -> u64 {
    match (e.object(), e.set()) {
        (Some(v), _) => effort(v),
        (None, Some(Set::Table(m))) => m.len() as u64,
        _ => 1,
    }
}

/// Hands `job` to the background thread (started on first use); false
/// when no thread could be had, and the caller frees it in place.
fn send(job: Box<dyn Send>, count: u64) -> Result<(), Box<dyn Send>> {
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("ferrokv-lazyfree".into())
            .spawn(move || {
                for (job, count) in rx {
                    drop(job);
                    PENDING.fetch_sub(count, Ordering::Relaxed);
                    FREED.fetch_add(count, Ordering::Relaxed);
                }
            });
        Mutex::new(spawned.ok().map(|_| tx))
    });
    let guard = queue.lock().unwrap_or_else(|e| e.into_inner());
    let Some(tx) = guard.as_ref() else {
        return Err(job);
    };
    PENDING.fetch_add(count, Ordering::Relaxed);
    tx.send((job, count)).map_err(|e| {
        PENDING.fetch_sub(count, Ordering::Relaxed);
        e.0 .0
    })
}

/// Frees a deleted entry: in the background when `lazy` and its value is
/// worth it (Redis's dbAsyncDelete / freeObjAsync), else here.
pub fn free_entry(e: EntryBox, lazy: bool) {
    if lazy && entry_effort(&e) > THRESHOLD {
        drop(send(Box::new(e), 1));
    }
}

/// Frees flushed databases: in the background when `lazy` (counted as
/// their keys, as Redis's emptyDbAsync counts them), else here.
pub fn free_dicts(dicts: Vec<Dict>, lazy: bool) {
    let keys: u64 = dicts.iter().map(|d| d.len() as u64).sum();
    if lazy && keys > 0 {
        drop(send(Box::new(dicts), keys));
    }
}

/// Values handed to the background thread and not freed yet
/// (`lazyfree_pending_objects`).
pub fn pending() -> u64 {
    PENDING.load(Ordering::Relaxed)
}

/// Values the background thread freed (`lazyfreed_objects`).
pub fn freed() -> u64 {
    FREED.load(Ordering::Relaxed)
}

/// CONFIG RESETSTAT (lazyfreeResetStats).
pub fn reset_stats() {
    FREED.store(0, Ordering::Relaxed);
}

/// Installs `lazyfree-lazy-user-del`, `lazyfree-lazy-expire`,
/// `lazyfree-lazy-eviction` and `lazyfree-lazy-server-del`.
pub fn configure(user_del: bool, expire: bool, eviction: bool, server_del: bool) {
    LAZY_SERVER_DEL.store(server_del, Ordering::Relaxed);
    LAZY_USER_DEL.store(user_del, Ordering::Relaxed);
    LAZY_EXPIRE.store(expire, Ordering::Relaxed);
    LAZY_EVICTION.store(eviction, Ordering::Relaxed);
}
