//! The large sorted-set representation (Redis's `skiplist` encoding): a
//! member → score map for O(log n) score lookups and an order-statistic
//! treap ordered by (score, member) for O(log n) rank, select and range
//! operations. Nodes live in one arena vector, linked by index.

use std::cmp::Ordering;

use super::bytes::CompactBytes;
use super::hashed::HashedMap;
use super::zset::cmp_entry;

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    score: f64,
    member: CompactBytes,
    prio: u32,
    left: u32,
    right: u32,
    size: u32,
}

/// A large sorted set.
#[derive(Clone, Debug)]
pub struct Tree {
    scores: HashedMap<f64>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    seed: u32,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            scores: HashedMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            // A random start per set, so no insertion order can be crafted
            // against the priority sequence to unbalance the tree.
            seed: rand::random::<u32>() | 1,
        }
    }
}

impl Tree {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// True when empty (the key must then be deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    fn size(&self, t: u32) -> u32 {
        if t == NIL {
            0
        } else {
            self.nodes[t as usize].size
        }
    }

    fn update(&mut self, t: u32) {
        let n = &self.nodes[t as usize];
        let s = 1 + self.size(n.left) + self.size(n.right);
        self.nodes[t as usize].size = s;
    }

    fn rand(&mut self) -> u32 {
        // xorshift: priorities only need to be well spread.
        let mut x = self.seed;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.seed = x;
        x
    }

    /// Compares node `t` with (score, member).
    fn cmp_node(&self, t: u32, score: f64, member: &[u8]) -> Ordering {
        let n = &self.nodes[t as usize];
        cmp_entry(n.score, n.member.as_slice(), score, member)
    }

    /// Splits `t` into (< key, >= key).
    fn split(&mut self, t: u32, score: f64, member: &[u8]) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.cmp_node(t, score, member) == Ordering::Less {
            let r = self.nodes[t as usize].right;
            let (a, b) = self.split(r, score, member);
            self.nodes[t as usize].right = a;
            self.update(t);
            (t, b)
        } else {
            let l = self.nodes[t as usize].left;
            let (a, b) = self.split(l, score, member);
            self.nodes[t as usize].left = b;
            self.update(t);
            (a, t)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            self.update(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            self.update(b);
            b
        }
    }

    fn tree_insert(&mut self, score: f64, member: &[u8]) {
        let prio = self.rand();
        let node = Node {
            score,
            member: CompactBytes::new(member),
            prio,
            left: NIL,
            right: NIL,
            size: 1,
        };
        let id = crate::util::slab::insert(&mut self.nodes, &mut self.free, node);
        let (a, b) = self.split(self.root, score, member);
        let left = self.merge(a, id);
        self.root = self.merge(left, b);
    }

    fn tree_remove(&mut self, score: f64, member: &[u8]) {
        let (a, b) = self.split(self.root, score, member);
        // `b` starts with the node itself: detach its leftmost node.
        let (node, rest) = self.pop_leftmost(b);
        if node != NIL {
            self.nodes[node as usize].member = CompactBytes::new(b"");
            self.free.push(node);
        }
        self.root = self.merge(a, rest);
    }

    /// Detaches the leftmost node of `t`; returns (node, remaining tree).
    fn pop_leftmost(&mut self, t: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let l = self.nodes[t as usize].left;
        if l == NIL {
            let r = self.nodes[t as usize].right;
            return (t, r);
        }
        let (node, rest) = self.pop_leftmost(l);
        self.nodes[t as usize].left = rest;
        self.update(t);
        (node, t)
    }

    /// Sets `member`'s score; returns the previous score if it existed.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let old = self.scores.insert(member, score);
        if let Some(o) = old {
            if o == score {
                return old;
            }
            self.tree_remove(o, member);
        }
        self.tree_insert(score, member);
        old
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let old = self.scores.remove(member)?;
        self.tree_remove(old, member);
        if self.scores.is_empty() {
            self.nodes.clear();
            self.free.clear();
            self.root = NIL;
        }
        Some(old)
    }

    /// Number of entries ordered before (score, member) (its 0-based rank
    /// when present).
    pub fn count_below(&self, score: f64, member: &[u8]) -> usize {
        let mut t = self.root;
        let mut n = 0usize;
        while t != NIL {
            let node = &self.nodes[t as usize];
            if self.cmp_node(t, score, member) == Ordering::Less {
                n += self.size(node.left) as usize + 1;
                t = node.right;
            } else {
                t = node.left;
            }
        }
        n
    }

    /// Number of entries for which `below(score, member)` holds, where
    /// `below` is true for a prefix of the order.
    pub fn count_prefix(&self, below: impl Fn(f64, &[u8]) -> bool) -> usize {
        let mut t = self.root;
        let mut n = 0usize;
        while t != NIL {
            let node = &self.nodes[t as usize];
            if below(node.score, node.member.as_slice()) {
                n += self.size(node.left) as usize + 1;
                t = node.right;
            } else {
                t = node.left;
            }
        }
        n
    }

    /// The 0-based rank of `member`.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let s = self.score(member)?;
        Some(self.count_below(s, member))
    }

    /// Entries from rank `start` upwards, in order.
    pub fn iter_from(&self, start: usize) -> Iter<'_> {
        let mut it = Iter {
            z: self,
            stack: Vec::new(),
            rev: false,
        };
        // Descend to rank `start`, stacking the nodes still to visit.
        let mut t = self.root;
        let mut k = start;
        while t != NIL {
            let node = &self.nodes[t as usize];
            let ls = self.size(node.left) as usize;
            if k < ls {
                it.stack.push(t);
                t = node.left;
            } else if k == ls {
                it.stack.push(t);
                break;
            } else {
                k -= ls + 1;
                t = node.right;
            }
        }
        it
    }

    /// Entries from rank `start` downwards (towards rank 0).
    pub fn iter_rev_from(&self, start: usize) -> Iter<'_> {
        let mut it = Iter {
            z: self,
            stack: Vec::new(),
            rev: true,
        };
        if start >= self.len() {
            return it;
        }
        let mut t = self.root;
        let mut k = start;
        while t != NIL {
            let node = &self.nodes[t as usize];
            let ls = self.size(node.left) as usize;
            if k < ls {
                t = node.left;
            } else if k == ls {
                it.stack.push(t);
                break;
            } else {
                it.stack.push(t);
                k -= ls + 1;
                t = node.right;
            }
        }
        it
    }

    /// The member → score table (DEBUG HTSTATS-KEY).
    pub fn table(&self) -> &HashedMap<f64> {
        &self.scores
    }

    /// One step of the member table's incremental rehash.
    pub fn rehash_step(&mut self) {
        self.scores.rehash_step();
    }

    /// Members and scores from `cursor` until about `count` are found
    /// (see [`HashedMap::scan`]); returns the next cursor.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        self.scores.scan(cursor, count, |m, s| f(m, *s))
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.free.capacity() * 4
            + self.scores.heap_size(|_| 0)
            + self
                .nodes
                .iter()
                .map(|n| n.member.heap_size())
                .sum::<usize>()
    }
}

/// An in-order (or reverse-order) walk over a [`Tree`].
pub struct Iter<'a> {
    z: &'a Tree,
    stack: Vec<u32>,
    rev: bool,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.stack.pop()?;
        let nodes = &self.z.nodes;
        let node = &nodes[t as usize];
        // Stack the next subtree's leftmost (rightmost when reversed) path.
        let mut c = if self.rev { node.left } else { node.right };
        while c != NIL {
            self.stack.push(c);
            let n = &nodes[c as usize];
            c = if self.rev { n.right } else { n.left };
        }
        Some((node.member.as_slice(), node.score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn ranks_and_iteration() {
        let mut z = Tree::default();
        for i in 0..500 {
            z.insert(format!("m{i:03}").as_bytes(), f64::from(i % 50));
        }
        assert_eq!(z.len(), 500);
        let all: Vec<(Vec<u8>, f64)> = z.iter_from(0).map(|(m, s)| (m.to_vec(), s)).collect();
        assert_eq!(all.len(), 500);
        for w in all.windows(2) {
            assert_eq!(cmp_entry(w[0].1, &w[0].0, w[1].1, &w[1].0), Ordering::Less);
        }
        for (i, (m, _)) in all.iter().enumerate() {
            assert_eq!(z.rank(m), Some(i));
            assert_eq!(
                z.iter_from(i).next().map(|(m, _)| m.to_vec()),
                Some(m.clone())
            );
            assert_eq!(
                z.iter_rev_from(i).next().map(|(m, _)| m.to_vec()),
                Some(m.clone())
            );
        }
        let rev: Vec<Vec<u8>> = z.iter_rev_from(499).map(|(m, _)| m.to_vec()).collect();
        assert_eq!(rev.len(), 500);
        assert_eq!(rev[0], all[499].0);
        z.insert(b"m000", 100.0);
        assert_eq!(z.rank(b"m000"), Some(499));
        for i in 0..500 {
            assert!(z.remove(format!("m{i:03}").as_bytes()).is_some());
        }
        assert!(z.is_empty());
        assert_eq!(z.iter_from(0).count(), 0);
    }
}
