//! List values. A placeholder representation until the list family lands.

use std::collections::VecDeque;

use super::bytes::CompactBytes;

/// A list of byte strings.
#[derive(Clone, Debug, Default)]
pub struct List {
    items: VecDeque<CompactBytes>,
}

impl List {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The elements from head to tail.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.items.iter().map(CompactBytes::as_slice)
    }

    /// Appends an element at the tail.
    pub fn push_back(&mut self, item: &[u8]) {
        self.items.push_back(CompactBytes::new(item));
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        self.items.iter().map(|i| 24 + i.heap_size()).sum()
    }
}
