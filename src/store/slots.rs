//! The keys of each cluster hash slot (Redis's slotToKeys in `db.c` and
//! `cluster.c`), kept by database 0's dict in cluster mode so CLUSTER
//! COUNTKEYSINSLOT and GETKEYSINSLOT, which `redis-cli --cluster reshard`
//! calls slot after slot, do not scan the keyspace. As in Redis, each slot
//! is a list with its newest key first: the keys sit in one slab of nodes
//! linked per slot, found by a table of node numbers hashed by key, so
//! adding and removing are O(1). Each key is held a second time here; a
//! standalone server has no index and pays nothing.

use hashbrown::HashTable;

use crate::util::crc16::{key_hash_slot, SLOTS};
use crate::util::siphash::SipKey;

/// No node.
const NIL: u32 = u32::MAX;

struct Node {
    key: Box<[u8]>,
    prev: u32,
    next: u32,
}

/// Keys by hash slot.
pub struct SlotIndex {
    nodes: Vec<Node>,
    /// Unused nodes of `nodes`, for reuse.
    free: Vec<u32>,
    /// Node numbers, by their key's hash.
    table: HashTable<u32>,
    /// (first node, number of keys) per slot.
    heads: Vec<(u32, u32)>,
    hasher: SipKey,
}

impl Default for SlotIndex {
    fn default() -> Self {
        SlotIndex {
            nodes: Vec::new(),
            free: Vec::new(),
            table: HashTable::new(),
            heads: vec![(NIL, 0); SLOTS],
            hasher: SipKey::random(),
        }
    }
}

impl SlotIndex {
    /// Records a new key, first in its slot's list.
    pub fn add(&mut self, key: &[u8]) {
        let slot = usize::from(key_hash_slot(key));
        let head = self.heads[slot].0;
        let node = Node {
            key: key.into(),
            prev: NIL,
            next: head,
        };
        let i = crate::util::slab::insert(&mut self.nodes, &mut self.free, node);
        if head != NIL {
            self.nodes[head as usize].prev = i;
        }
        self.heads[slot] = (i, self.heads[slot].1 + 1);
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.table.insert_unique(hasher.hash(key), i, |&n| {
            hasher.hash(&nodes[n as usize].key)
        });
    }

    /// Forgets a removed key.
    pub fn remove(&mut self, key: &[u8]) {
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        let found = self
            .table
            .find_entry(hasher.hash(key), |&n| &*nodes[n as usize].key == key);
        let Ok(entry) = found else {
            return;
        };
        let (i, _) = entry.remove();
        let Node { prev, next, .. } = self.nodes[i as usize];
        let slot = usize::from(key_hash_slot(key));
        if prev == NIL {
            self.heads[slot].0 = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        self.heads[slot].1 -= 1;
        self.nodes[i as usize].key = Box::default();
        self.free.push(i);
        if self.table.is_empty() {
            // All gone: give the memory back.
            self.nodes = Vec::new();
            self.free = Vec::new();
            self.table = HashTable::new();
        }
    }

    /// Number of keys in `slot`.
    pub fn count(&self, slot: u16) -> usize {
        self.heads[usize::from(slot)].1 as usize
    }

    /// The keys of `slot`, newest first.
    pub fn keys(&self, slot: u16) -> impl Iterator<Item = &[u8]> {
        let mut at = self.heads[usize::from(slot)].0;
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let n = &self.nodes[at as usize];
            at = n.next;
            Some(&n.key[..])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keys_newest_first_and_forgets_removed_ones() {
        let mut ix = SlotIndex::default();
        for k in ["{a}1", "{a}2", "{a}3", "b"] {
            ix.add(k.as_bytes());
        }
        let slot = key_hash_slot(b"{a}");
        let keys = |ix: &SlotIndex| -> Vec<Vec<u8>> { ix.keys(slot).map(<[u8]>::to_vec).collect() };
        assert_eq!(
            keys(&ix),
            vec![b"{a}3".to_vec(), b"{a}2".to_vec(), b"{a}1".to_vec()]
        );
        ix.remove(b"{a}2");
        ix.remove(b"missing");
        assert_eq!(keys(&ix), vec![b"{a}3".to_vec(), b"{a}1".to_vec()]);
        assert_eq!(ix.count(slot), 2);
        ix.add(b"{a}4");
        assert_eq!(keys(&ix)[0], b"{a}4".to_vec());
        for k in ["{a}1", "{a}3", "{a}4", "b"] {
            ix.remove(k.as_bytes());
        }
        assert_eq!(ix.count(slot), 0);
        assert_eq!(ix.keys(slot).count(), 0);
    }
}
