//! Index-addressed node pools: a `Vec` of nodes with a free list of
//! released indexes, as used by the sorted-set tree and the per-slot key
//! lists (no Redis counterpart; Redis links heap nodes by pointer).

/// Stores `node` in a released slot of `nodes` if `free` has one, else at
/// the end; returns its index.
pub fn insert<T>(nodes: &mut Vec<T>, free: &mut Vec<u32>, node: T) -> u32 {
    match free.pop() {
        Some(i) => {
            nodes[i as usize] = node;
            i
        }
        None => {
            nodes.push(node);
            (nodes.len() - 1) as u32
        }
    }
}
