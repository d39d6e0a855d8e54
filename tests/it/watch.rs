//! WATCH (Redis's `tests/unit/multi.tcl`): every way a watched key is
//! touched and ways it is not, expiry rules, flush/swap/move/rename,
//! compared byte for byte with redis-server in RESP2 and RESP3.

use crate::multi::{let_time_pass, Tx};

/// Every way a watched key is touched, and ways it is not.
fn watch_cases(t: &mut Tx) {
    t.run(&[
        // Another client writes the key.
        "A SET k 1",
        "A WATCH k",
        "B SET k 2",
        "A MULTI",
        "A GET k",
        "A EXEC",
        // The same client writes it outside the transaction.
        "A WATCH k",
        "A SET k 3",
        "A MULTI",
        "A GET k",
        "A EXEC",
        // Written while the transaction is being queued.
        "A WATCH k",
        "A MULTI",
        "A INCR k",
        "B INCR k",
        "A INCR k",
        "A EXEC",
        "A GET k",
        // Same value still counts.
        "A WATCH k",
        "B SET k 4",
        "B SET k 4",
        "A MULTI",
        "A EXEC",
        // Reads do not touch.
        "A WATCH k",
        "B GET k",
        "B EXISTS k",
        "A MULTI",
        "A INCR k",
        "A EXEC",
        // A missing key, created by another client.
        "A WATCH nokey",
        "B SET nokey 1",
        "A MULTI",
        "A PING",
        "A EXEC",
        // DEL of the key touches it; DEL of a missing key does not.
        "A WATCH nokey",
        "B DEL nokey",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH nokey",
        "B DEL nokey",
        "A MULTI",
        "A PING",
        "A EXEC",
        // INCR creating the key; SETNX failing and succeeding.
        "A WATCH ctr",
        "B INCR ctr",
        "A MULTI",
        "A EXEC",
        "A WATCH ctr",
        "B SETNX ctr 5",
        "A MULTI",
        "A EXEC",
        "A WATCH fresh",
        "B SETNX fresh 5",
        "A MULTI",
        "A EXEC",
        // The same key name in another database is another key.
        "A WATCH k",
        "B SELECT 1",
        "B SET k other",
        "B SELECT 0",
        "A MULTI",
        "A GET k",
        "A EXEC",
        // The watch keeps the database of the WATCH call.
        "A WATCH k",
        "A SELECT 1",
        "B SET k 9",
        "A MULTI",
        "A GET k",
        "A EXEC",
        "A SELECT 0",
        // UNWATCH forgets; so do EXEC and DISCARD.
        "A WATCH k",
        "A UNWATCH",
        "B SET k 10",
        "A MULTI",
        "A GET k",
        "A EXEC",
        "A WATCH k",
        "A MULTI",
        "A PING",
        "A EXEC",
        "B SET k 11",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH k",
        "A MULTI",
        "A DISCARD",
        "B SET k 12",
        "A MULTI",
        "A PING",
        "A EXEC",
        // A dirty watch stays dirty through more WATCH calls.
        "A WATCH k",
        "B SET k 13",
        "A WATCH other",
        "A WATCH k",
        "A MULTI",
        "A EXEC",
        // The transaction's own writes do not abort it, nor the next one.
        "A WATCH k",
        "A MULTI",
        "A SET k 14",
        "A EXEC",
        "A MULTI",
        "A GET k",
        "A EXEC",
        // Both watchers of one key fail; several keys, one touched.
        "A WATCH k x y",
        "B WATCH k",
        "A SET k 15",
        "B MULTI",
        "B EXEC",
        "A MULTI",
        "A EXEC",
        "A WATCH x y k k",
        "B SET y 1",
        "A MULTI",
        "A EXEC",
        // FLUSHALL touches watched keys that exist, not missing ones.
        "A SET k 16",
        "A WATCH k",
        "B FLUSHALL",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH k",
        "B FLUSHALL",
        "A MULTI",
        "A PING",
        "A EXEC",
        "B SELECT 1",
        "B SET k indb1",
        "B SELECT 0",
        "A WATCH k",
        "B FLUSHALL",
        "A MULTI",
        "A PING",
        "A EXEC",
        // An empty transaction after WATCH.
        "A WATCH k",
        "A MULTI",
        "A EXEC",
    ]);
}

#[test]
fn watch_touch_cases_resp2() {
    watch_cases(&mut Tx::new());
}

#[test]
fn watch_touch_cases_resp3() {
    watch_cases(&mut Tx::resp3());
}

#[test]
fn errors_resp3() {
    let mut t = Tx::resp3();
    t.run(&[
        "A EXEC",
        "A DISCARD",
        "A EXEC x",
        "A MULTI",
        "A MULTI",
        "A SET k v",
        "A GET",
        "A EXEC",
        "A MULTI",
        "A SET k v",
        "A INCR k",
        "A EXEC",
    ]);
}

/// A key that expires after WATCH fails EXEC whether or not anything
/// deleted it; a key already expired at WATCH time is as good as missing,
/// so its deletion by expiry (lazy, active or a flush) changes nothing but
/// a write to it does.
#[test]
fn watch_and_expiry() {
    let mut t = Tx::new();
    // Expires after WATCH, nobody looks at it.
    t.run(&["A SET k v PX 60", "A WATCH k"]);
    let_time_pass(150);
    t.run(&["A MULTI", "A PING", "A EXEC"]);
    // Expires after WATCH, another client's read deletes it.
    t.run(&["A SET k v PX 60", "A WATCH k"]);
    let_time_pass(150);
    t.run(&["B GET k", "A MULTI", "A PING", "A EXEC"]);
    // Already expired when watched.
    t.run(&["A SET k v PX 20"]);
    let_time_pass(100);
    t.run(&["A WATCH k", "A MULTI", "A PING", "A EXEC"]);
    // Already expired when watched, then deleted by a read.
    t.run(&["A SET k v PX 20"]);
    let_time_pass(100);
    t.run(&["A WATCH k", "B GET k", "A MULTI", "A PING", "A EXEC"]);
    // Already expired when watched, then flushed.
    t.run(&["A SET k v PX 20"]);
    let_time_pass(100);
    t.run(&["A WATCH k", "B FLUSHALL", "A MULTI", "A PING", "A EXEC"]);
    // Already expired when watched, then written.
    t.run(&["A SET k v PX 20"]);
    let_time_pass(100);
    t.run(&["A WATCH k", "B SET k w", "A MULTI", "A PING", "A EXEC"]);
    // Already expired, deleted, then written: the write counts.
    t.run(&["A SET k v PX 20"]);
    let_time_pass(100);
    t.run(&[
        "A WATCH k",
        "B GET k",
        "B SET k w",
        "A MULTI",
        "A PING",
        "A EXEC",
    ]);
}

#[test]
fn watch_expire_commands() {
    let mut t = Tx::new();
    t.run(&[
        "A SET k v",
        "A WATCH k",
        "B EXPIRE k 100",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH k",
        "B PERSIST k",
        "A MULTI",
        "A PING",
        "A EXEC",
        // EXPIRE of a missing key changes nothing.
        "A WATCH nokey",
        "B EXPIRE nokey 100",
        "A MULTI",
        "A PING",
        "A EXEC",
    ]);
}

#[test]
fn watch_rename() {
    let mut t = Tx::new();
    t.run(&[
        "A SET src v",
        "A WATCH src",
        "B RENAME src dst",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH src",
        "B RENAME dst src",
        "A MULTI",
        "A PING",
        "A EXEC",
    ]);
}

#[test]
fn watch_flushdb() {
    let mut t = Tx::new();
    t.run(&[
        "A SET k v",
        "A WATCH k",
        "B SELECT 1",
        "B FLUSHDB",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH k",
        "B SELECT 0",
        "B FLUSHDB",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH k",
        "B FLUSHDB",
        "A MULTI",
        "A PING",
        "A EXEC",
    ]);
}

#[test]
fn watch_swapdb() {
    let mut t = Tx::new();
    t.run(&[
        // The key exists in the watched db.
        "A SET k v",
        "A WATCH k",
        "B SWAPDB 0 1",
        "A MULTI",
        "A PING",
        "A EXEC",
        // It exists only in the other db: it appears.
        "A WATCH k",
        "B SWAPDB 0 1",
        "A MULTI",
        "A PING",
        "A EXEC",
        // In neither db.
        "A WATCH absent",
        "B SWAPDB 0 1",
        "A MULTI",
        "A PING",
        "A EXEC",
        // Swapping other databases.
        "A WATCH k",
        "B SWAPDB 2 3",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A WATCH k",
        "B SWAPDB 0 0",
        "A MULTI",
        "A PING",
        "A EXEC",
        "B FLUSHALL",
    ]);
    // A missing key replaced by an expired one: no change.
    t.run(&["B SELECT 1", "B SET e v PX 20", "B SELECT 0"]);
    let_time_pass(100);
    t.run(&["A WATCH e", "B SWAPDB 0 1", "A MULTI", "A PING", "A EXEC"]);
    // An expired key replaced by nothing, then by an expired one: no change.
    t.run(&["A WATCH e", "B SWAPDB 0 1", "A MULTI", "A PING", "A EXEC"]);
    t.run(&[
        "B FLUSHALL",
        "B SET e v PX 20",
        "B SELECT 1",
        "B SET e v PX 20",
    ]);
    t.run(&["B SELECT 0"]);
    let_time_pass(100);
    t.run(&["A WATCH e", "B SWAPDB 0 1", "A MULTI", "A PING", "A EXEC"]);
    // An expired key replaced by a live one.
    t.run(&[
        "B FLUSHALL",
        "B SET e v PX 20",
        "B SELECT 1",
        "B SET e live",
    ]);
    t.run(&["B SELECT 0"]);
    let_time_pass(100);
    t.run(&["A WATCH e", "B SWAPDB 0 1", "A MULTI", "A PING", "A EXEC"]);
}

#[test]
fn watch_move() {
    let mut t = Tx::new();
    t.run(&[
        "A SET k v",
        "A WATCH k",
        "B MOVE k 1",
        "A MULTI",
        "A PING",
        "A EXEC",
        "A SELECT 1",
        "A WATCH k",
        "B MOVE k 1",
        "B SELECT 1",
        "B MOVE k 0",
        "A MULTI",
        "A PING",
        "A EXEC",
    ]);
}
