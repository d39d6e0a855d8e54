//! Streams (Redis's `t_stream.c` data side): entries ordered by ID, kept in
//! a `BTreeMap`, plus a model of the radix-tree nodes Redis packs them into.
//!
//! Redis stores a stream as a radix tree of listpacks ("nodes"), each
//! holding up to `stream-node-max-entries` entries and about
//! `stream-node-max-bytes` bytes. The node layout is visible to clients:
//! `XADD/XTRIM ... MAXLEN ~ n` removes only whole nodes, and XDEL marks an
//! entry deleted inside its node instead of removing it. So each node is
//! modelled here (first ID, live and deleted counts, the listpack's size
//! computed with listpack encoding rules) while the entries themselves live
//! in one ordered map for range reads. Entries XDEL or an exact trim marked
//! deleted stay in their node (`tombstones`) until the node goes, so a
//! saved node holds the same bytes as Redis's.
//!
//! Consumer groups (`streamCG`) keep Redis's shape: a pending entries list
//! (PEL) per group of [`Nack`]s, each naming its consumer, and per consumer
//! the set of IDs it owns.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::listpack::{entry_size, int_entry_size};

/// A stream entry ID: milliseconds and sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl StreamId {
    /// The smallest ID, `0-0`.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// An ID from its parts.
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The next ID, None past the largest (streamIncrID).
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                return None;
            }
            return Some(StreamId::new(self.ms + 1, 0));
        }
        Some(StreamId::new(self.ms, self.seq + 1))
    }

    /// The previous ID, None before `0-0` (streamDecrID).
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                return None;
            }
            return Some(StreamId::new(self.ms - 1, u64::MAX));
        }
        Some(StreamId::new(self.ms, self.seq - 1))
    }

    /// Writes `ms-seq` into `buf` (at most 41 bytes) and returns it.
    pub fn fmt<'a>(&self, buf: &'a mut [u8; 41]) -> &'a [u8] {
        use std::io::Write;
        let mut cur = std::io::Cursor::new(&mut buf[..]);
        write!(cur, "{}-{}", self.ms, self.seq).expect("41 bytes hold an ID"); // invariant: two u64 and a dash fit
        let n = cur.position() as usize;
        &buf[..n]
    }

    /// `ms-seq` as an owned string.
    pub fn to_vec(&self) -> Vec<u8> {
        format!("{}-{}", self.ms, self.seq).into_bytes()
    }
}

/// Flag of an entry whose fields are the node's master fields.
const SAMEFIELDS: i64 = 2;

/// One radix-tree node (a listpack in Redis), keyed in [`Stream::nodes`] by
/// the ID of the first entry ever added to it (the master ID).
#[derive(Clone, Debug)]
pub struct Node {
    /// Field names of the master entry (those of the first entry added).
    pub master_fields: Vec<Vec<u8>>,
    /// Entries not deleted.
    pub live: u64,
    /// Entries marked deleted but still in the listpack.
    pub deleted: u64,
    /// ID of the last entry added (deleted or not).
    pub last: StreamId,
    /// Listpack bytes other than the header, the two counters and the end
    /// byte.
    body: usize,
}

impl Node {
    /// The listpack's total size (`lpBytes`): header, live and deleted
    /// counters, the rest, end byte.
    pub fn lp_bytes(&self) -> usize {
        6 + int_entry_size(self.live as i64) + int_entry_size(self.deleted as i64) + self.body + 1
    }
}

/// What bounds a trim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Remove entries with a smaller ID.
    MinId(StreamId),
}

/// Node limits from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct NodeLimits {
    /// `stream-node-max-bytes` (0 = no limit but listpack's own).
    pub max_bytes: u64,
    /// `stream-node-max-entries` (0 = no limit).
    pub max_entries: u64,
}

/// Largest listpack Redis builds (STREAM_LISTPACK_MAX_SIZE).
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// `entries_read` of a group whose read counter is unknown
/// (SCG_INVALID_ENTRIES_READ).
pub const INVALID_ENTRIES_READ: i64 = -1;

/// A delivered, not yet acknowledged entry (`streamNACK`).
#[derive(Clone, Debug)]
pub struct Nack {
    /// Unix ms of the last delivery.
    pub delivery_time: u64,
    /// Times delivered.
    pub delivery_count: u64,
    /// The consumer that owns it.
    pub consumer: Arc<[u8]>,
}

/// A consumer of a group (`streamConsumer`).
#[derive(Clone, Debug, Default)]
pub struct Consumer {
    /// Unix ms it was last seen (read or claimed).
    pub seen_time: u64,
    /// IDs pending for it; their [`Nack`]s are in the group's PEL.
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group (`streamCG`).
#[derive(Clone, Debug, Default)]
pub struct Group {
    /// Last ID delivered to the group.
    pub last_id: StreamId,
    /// Entries the group has read (its logical position), or
    /// [`INVALID_ENTRIES_READ`].
    pub entries_read: i64,
    /// Pending entries of every consumer.
    pub pel: BTreeMap<StreamId, Nack>,
    /// Consumers by name.
    pub consumers: BTreeMap<Arc<[u8]>, Consumer>,
}

impl Group {
    /// A group delivering after `last_id` (streamCreateCG).
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            ..Group::default()
        }
    }

    /// Creates consumer `name` seen at `now`; false when it exists
    /// (streamCreateConsumer).
    pub fn create_consumer(&mut self, name: &[u8], now: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        let consumer = Consumer {
            seen_time: now,
            pel: BTreeSet::new(),
        };
        self.consumers.insert(Arc::from(name), consumer);
        true
    }

    /// The consumer `name`, its seen time set to `now` when given
    /// (streamLookupConsumer).
    pub fn touch_consumer(&mut self, name: &[u8], now: Option<u64>) -> bool {
        match self.consumers.get_mut(name) {
            Some(c) => {
                if let Some(now) = now {
                    c.seen_time = now;
                }
                true
            }
            None => false,
        }
    }

    /// The shared name of consumer `name` (which must exist).
    fn consumer_name(&self, name: &[u8]) -> Option<Arc<[u8]>> {
        self.consumers.get_key_value(name).map(|(k, _)| k.clone())
    }

    /// Removes `id` from the PEL and its consumer's; false when it was
    /// not pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(nack) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&nack.consumer) {
            c.pel.remove(&id);
        }
        true
    }

    /// Records `id` delivered to consumer `name` at `now`: a new NACK, or
    /// one another consumer held moved to this one with its count reset
    /// (streamReplyWithRange's PEL step).
    pub fn deliver(&mut self, id: StreamId, name: &[u8], now: u64) {
        let Some(owner) = self.consumer_name(name) else {
            return;
        };
        if let Some(old) = self.pel.get(&id).map(|n| n.consumer.clone()) {
            if let Some(c) = self.consumers.get_mut(&old) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(name) {
            c.pel.insert(id);
        }
        self.pel.insert(
            id,
            Nack {
                delivery_time: now,
                delivery_count: 1,
                consumer: owner,
            },
        );
    }

    /// Gives the pending `id` to consumer `name` (which must exist),
    /// creating its NACK, delivered once, when missing (XCLAIM FORCE); the
    /// caller sets the time and count. Returns the NACK.
    pub fn claim(&mut self, id: StreamId, name: &[u8]) -> Option<&mut Nack> {
        let owner = self.consumer_name(name)?;
        let previous = self.pel.get(&id).map(|n| n.consumer.clone());
        if previous.as_deref() != Some(name) {
            if let Some(prev) = previous {
                if let Some(c) = self.consumers.get_mut(&prev) {
                    c.pel.remove(&id);
                }
            }
            if let Some(c) = self.consumers.get_mut(name) {
                c.pel.insert(id);
            }
        }
        let nack = self.pel.entry(id).or_insert_with(|| Nack {
            delivery_time: 0,
            delivery_count: 1,
            consumer: owner.clone(),
        });
        nack.consumer = owner;
        Some(nack)
    }

    /// Deletes consumer `name` and its pending entries; returns how many it
    /// had, None when there is no such consumer (streamDelConsumer).
    pub fn del_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }
}

/// A stream value.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// Nodes by master ID.
    pub nodes: BTreeMap<StreamId, Node>,
    /// Live entries: field, value, field, value...
    pub entries: BTreeMap<StreamId, Vec<Vec<u8>>>,
    /// Entries marked deleted inside a node that still exists.
    pub tombstones: BTreeMap<StreamId, Vec<Vec<u8>>>,
    /// Consumer groups by name.
    pub groups: BTreeMap<Vec<u8>, Group>,
    /// ID of the last entry ever added (or set by XSETID).
    pub last_id: StreamId,
    /// Largest ID deleted by XDEL (or set by XSETID).
    pub max_deleted_id: StreamId,
    /// Entries ever added (or set by XSETID).
    pub entries_added: u64,
}

impl Stream {
    /// Number of live entries (XLEN).
    pub fn len(&self) -> u64 {
        self.entries.len() as u64
    }

    /// True without live entries (a stream key may exist empty).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// ID of the first live entry, `0-0` when empty.
    pub fn first_id(&self) -> StreamId {
        self.entries.keys().next().copied().unwrap_or_default()
    }

    /// ID of the last live entry, `0-0` when empty (streamLastValidID).
    pub fn last_valid_id(&self) -> StreamId {
        self.entries.keys().next_back().copied().unwrap_or_default()
    }

    /// The ID an auto-generated XADD would use at `now_ms`
    /// (streamNextID); None when the stream has used the last ID.
    pub fn next_id(&self, now_ms: u64) -> Option<StreamId> {
        if now_ms > self.last_id.ms {
            Some(StreamId::new(now_ms, 0))
        } else {
            self.last_id.incr()
        }
    }

    /// Appends an entry with an ID the caller checked is greater than
    /// `last_id` (streamAppendItem): into the tail node when it has room,
    /// else into a new node.
    pub fn append(&mut self, id: StreamId, fields: Vec<Vec<u8>>, limits: NodeLimits) {
        let numfields = fields.len() / 2;
        let totelelen: usize = fields.iter().map(|f| f.len()).sum();
        let mut tail = self.nodes.iter_mut().next_back();
        if let Some((_, node)) = &tail {
            let max_bytes = match limits.max_bytes {
                0 => LISTPACK_MAX_SIZE,
                n => (n as usize).min(LISTPACK_MAX_SIZE),
            };
            if node.lp_bytes() + totelelen >= max_bytes
                || (limits.max_entries != 0 && node.live + node.deleted >= limits.max_entries)
            {
                tail = None;
            }
        }
        let (master, node, same) = match tail {
            Some((master, node)) => {
                let same = node.master_fields.len() == numfields
                    && node
                        .master_fields
                        .iter()
                        .zip(fields.iter().step_by(2))
                        .all(|(a, b)| a == b);
                node.live += 1;
                (*master, node, same)
            }
            None => {
                let master_fields: Vec<Vec<u8>> = fields.iter().step_by(2).cloned().collect();
                let body = int_entry_size(numfields as i64)
                    + master_fields.iter().map(|f| entry_size(f)).sum::<usize>()
                    + int_entry_size(0);
                let node = Node {
                    master_fields,
                    live: 1,
                    deleted: 0,
                    last: id,
                    body,
                };
                let node = self.nodes.entry(id).or_insert(node);
                (id, node, true)
            }
        };
        let flags = if same { SAMEFIELDS } else { 0 };
        let mut bytes = int_entry_size(flags)
            + int_entry_size(id.ms.wrapping_sub(master.ms) as i64)
            + int_entry_size(id.seq.wrapping_sub(master.seq) as i64);
        let mut lp_count = numfields + 3;
        if !same {
            bytes += int_entry_size(numfields as i64);
            lp_count += numfields + 1;
        }
        for (i, f) in fields.iter().enumerate() {
            if i % 2 == 1 || !same {
                bytes += entry_size(f);
            }
        }
        bytes += int_entry_size(lp_count as i64);
        node.body += bytes;
        node.last = id;
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
    }

    /// The node holding `id`, by master ID.
    fn node_of(&self, id: StreamId) -> Option<StreamId> {
        self.nodes.range(..=id).next_back().map(|(k, _)| *k)
    }

    /// Deletes the entry `id` (streamDeleteItem): marked deleted in its
    /// node, or the whole node dropped when it was the node's last live
    /// entry. Returns whether it existed.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some(fields) = self.entries.remove(&id) else {
            return false;
        };
        if let Some(master) = self.node_of(id) {
            if let Some(node) = self.nodes.get_mut(&master) {
                if node.live <= 1 {
                    let last = node.last;
                    self.nodes.remove(&master);
                    self.drop_tombstones(master, last);
                } else {
                    node.live -= 1;
                    node.deleted += 1;
                    self.tombstones.insert(id, fields);
                }
            }
        }
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        true
    }

    /// Trims from the head (streamTrim): whole nodes while they can go;
    /// then, unless `approx`, entries inside the first remaining node.
    /// `limit` (0 = none) caps the entries removed. Returns how many were.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some((&master, node)) = self.nodes.iter().next() {
            if let Trim::MaxLen(max) = how {
                if self.len() <= max {
                    break;
                }
            }
            let entries = node.live;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove_node = match how {
                Trim::MaxLen(max) => self.len().saturating_sub(entries) >= max,
                Trim::MinId(min) => node.last < min,
            };
            let last = node.last;
            if remove_node {
                self.nodes.remove(&master);
                let ids: Vec<StreamId> =
                    self.entries.range(master..=last).map(|(k, _)| *k).collect();
                for id in ids {
                    self.entries.remove(&id);
                }
                self.drop_tombstones(master, last);
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let mut from_node = 0u64;
            while let Some((&id, _)) = self.entries.range(master..=last).next() {
                let stop = match how {
                    Trim::MaxLen(max) => self.len() <= max,
                    Trim::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                if let Some(fields) = self.entries.remove(&id) {
                    self.tombstones.insert(id, fields);
                }
                from_node += 1;
            }
            if let Some(node) = self.nodes.get_mut(&master) {
                node.live = node.live.saturating_sub(from_node);
                node.deleted += from_node;
            }
            deleted += from_node;
            break;
        }
        deleted
    }

    /// Forgets the deleted entries of the node `master..=last`, gone.
    fn drop_tombstones(&mut self, master: StreamId, last: StreamId) {
        if self.tombstones.is_empty() {
            return;
        }
        let ids: Vec<StreamId> = self
            .tombstones
            .range(master..=last)
            .map(|(k, _)| *k)
            .collect();
        for id in ids {
            self.tombstones.remove(&id);
        }
    }

    /// True when `id` is a live entry (streamEntryExists).
    pub fn entry_exists(&self, id: StreamId) -> bool {
        self.entries.contains_key(&id)
    }

    /// The group named `name`.
    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    /// The group named `name`, for writing.
    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.get_mut(name)
    }

    /// True when a deleted entry may lie in `start..=end`
    /// (streamRangeHasTombstones: only the largest deleted ID is known).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.is_empty() || self.max_deleted_id == StreamId::MIN {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// The number of entries ever added up to and including `id`, when it
    /// can be known (streamEstimateDistanceFromFirstEverEntry); else
    /// [`INVALID_ENTRIES_READ`].
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return 0;
        }
        if self.is_empty() && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        }
        if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        let first = self.first_id();
        if self.max_deleted_id == StreamId::MIN || self.max_deleted_id < first {
            if id < first {
                return added - self.len() as i64;
            }
            if id == first {
                return added - self.len() as i64 + 1;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// Entries not yet delivered to `g`, None when that cannot be known
    /// (streamReplyWithCGLag).
    pub fn lag(&self, g: &Group) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ
            && !self.range_has_tombstones(g.last_id, StreamId::MAX)
        {
            return Some(added - g.entries_read);
        }
        match self.estimate_distance(g.last_id) {
            INVALID_ENTRIES_READ => None,
            read => Some(added - read),
        }
    }

    /// Moves `g`'s last delivered ID to `id`, keeping its read counter
    /// (streamReplyWithRange's first step for an ID past the group's).
    pub fn advance_group(&mut self, group: &[u8], id: StreamId) {
        let Some(read) = self.groups.get(group).map(|g| g.entries_read) else {
            return;
        };
        let read = if read != INVALID_ENTRIES_READ && !self.range_has_tombstones(id, StreamId::MAX)
        {
            read + 1
        } else if self.entries_added != 0 {
            self.estimate_distance(id)
        } else {
            read
        };
        if let Some(g) = self.groups.get_mut(group) {
            g.entries_read = read;
            g.last_id = id;
        }
    }

    /// Nodes of Redis's radix tree of stream nodes (`rax->numnodes`): the
    /// 128-bit master IDs as a compressed trie, one node per branching
    /// point, per run of single-child bytes and per key.
    pub fn rax_nodes(&self) -> u64 {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|id| id_bytes(*id)).collect();
        if keys.is_empty() {
            return 1;
        }
        rax_count(&keys, 0)
    }

    /// Live entries with IDs in `start..=end`, in order or reversed.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (&StreamId, &Vec<Vec<u8>>)> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let r = self.entries.range(start..=end);
        if rev {
            Box::new(r.rev())
        } else {
            Box::new(r)
        }
    }

    /// Approximate heap bytes (INFO, MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        let nodes: usize = self.nodes.values().map(|n| n.lp_bytes() + 64).sum();
        let entries: usize = self
            .entries
            .values()
            .chain(self.tombstones.values())
            .map(|f| 48 + f.iter().map(|x| x.capacity() + 24).sum::<usize>())
            .sum();
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| {
                let consumers: usize = g
                    .consumers
                    .iter()
                    .map(|(n, c)| 64 + n.len() + 40 * c.pel.len())
                    .sum();
                96 + name.len() + 64 * g.pel.len() + consumers
            })
            .sum();
        64 + nodes + entries + groups
    }

    /// Rebuilds a node read from an RDB listpack: its master fields,
    /// counters and entries, deleted ones kept as tombstones.
    pub fn load_node(
        &mut self,
        master: StreamId,
        master_fields: Vec<Vec<u8>>,
        lp_bytes: usize,
        entries: Vec<(StreamId, bool, Vec<Vec<u8>>)>,
    ) {
        let mut live = 0;
        let mut deleted = 0;
        let mut last = master;
        for (id, is_deleted, fields) in entries {
            last = id;
            if is_deleted {
                deleted += 1;
                self.tombstones.insert(id, fields);
            } else {
                live += 1;
                self.entries.insert(id, fields);
            }
        }
        let body = lp_bytes
            .saturating_sub(7 + int_entry_size(live as i64) + int_entry_size(deleted as i64));
        self.nodes.insert(
            master,
            Node {
                master_fields,
                live,
                deleted,
                last,
                body,
            },
        );
    }
}

/// An ID as the big-endian bytes Redis keys its trees with.
pub fn id_bytes(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

/// Nodes a rax holds for sorted, distinct, equal-length `keys` below a
/// node starting at byte `depth`: a compressed node for their common
/// bytes, then a branching node with a subtree per next byte, or the key
/// node at the end.
fn rax_count(keys: &[[u8; 16]], depth: usize) -> u64 {
    let first = &keys[0];
    let last = &keys[keys.len() - 1];
    // Sorted keys share what the first and last share.
    let mut common = depth;
    while common < 16 && first[common] == last[common] {
        common += 1;
    }
    let compressed = u64::from(common > depth);
    if common == 16 {
        return compressed + 1;
    }
    let mut n = compressed + 1;
    let mut start = 0;
    while start < keys.len() {
        let byte = keys[start][common];
        let end = start + keys[start..].partition_point(|k| k[common] == byte);
        n += rax_count(&keys[start..end], common + 1);
        start = end;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> NodeLimits {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }

    fn add(s: &mut Stream, ms: u64) {
        s.append(
            StreamId::new(ms, 0),
            vec![b"f".to_vec(), b"v".to_vec()],
            limits(),
        );
    }

    #[test]
    fn nodes_hold_at_most_max_entries() {
        let mut s = Stream::default();
        for ms in 1..=250 {
            add(&mut s, ms);
        }
        assert_eq!(s.nodes.len(), 3);
        assert_eq!(s.len(), 250);
        // Approximate trims drop whole nodes only.
        assert_eq!(s.trim(Trim::MaxLen(10), true, 10_000), 200);
        assert_eq!(s.len(), 50);
        assert_eq!(s.trim(Trim::MaxLen(10), false, 0), 40);
        assert_eq!(s.first_id(), StreamId::new(241, 0));
    }

    #[test]
    fn empty_listpack_size_matches_redis() {
        let mut s = Stream::default();
        add(&mut s, 1);
        // count, deleted, numfields, "f", 0, flags, ms, seq, "v", lp-count.
        let n = s.nodes.values().next().expect("one node");
        assert_eq!(n.lp_bytes(), 6 + 2 + 2 + 2 + 3 + 2 + 2 + 2 + 2 + 3 + 2 + 1);
    }

    #[test]
    fn ids_step() {
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::new(2, 0).decr(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.decr(), None);
    }
}
