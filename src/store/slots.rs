//! The keys of each cluster hash slot (Redis's slotToKeys in `db.c` and
//! `cluster.c`), kept by database 0's dict in cluster mode so CLUSTER
//! COUNTKEYSINSLOT and GETKEYSINSLOT, which `redis-cli --cluster reshard`
//! calls slot after slot, do not scan the keyspace. Each key is held a
//! second time here; a standalone server has no index and pays nothing.

use hashbrown::HashSet;

use crate::util::crc16::{key_hash_slot, SLOTS};

/// Keys by hash slot.
pub struct SlotIndex {
    slots: Vec<HashSet<Box<[u8]>>>,
}

impl Default for SlotIndex {
    fn default() -> Self {
        SlotIndex {
            slots: (0..SLOTS).map(|_| HashSet::new()).collect(),
        }
    }
}

impl SlotIndex {
    /// Records a new key.
    pub fn add(&mut self, key: &[u8]) {
        self.slots[usize::from(key_hash_slot(key))].insert(key.into());
    }

    /// Forgets a removed key.
    pub fn remove(&mut self, key: &[u8]) {
        let set = &mut self.slots[usize::from(key_hash_slot(key))];
        set.remove(key);
        if set.is_empty() && set.capacity() > 0 {
            // An emptied slot (moved away) gives its table back.
            *set = HashSet::new();
        }
    }

    /// Number of keys in `slot`.
    pub fn count(&self, slot: u16) -> usize {
        self.slots[usize::from(slot)].len()
    }

    /// The keys of `slot`, in no particular order.
    pub fn keys(&self, slot: u16) -> impl Iterator<Item = &[u8]> {
        self.slots[usize::from(slot)].iter().map(|k| &k[..])
    }
}
