//! The list against a VecDeque model under random operations.
use std::collections::VecDeque;

use super::*;

fn model_check(l: &List, m: &VecDeque<Vec<u8>>) {
    assert_eq!(l.len(), m.len());
    let v: Vec<&[u8]> = l.iter().collect();
    let w: Vec<&[u8]> = m.iter().map(|x| x.as_slice()).collect();
    assert_eq!(v, w);
    let r: Vec<&[u8]> = if m.is_empty() {
        vec![]
    } else {
        l.iter_rev_from(m.len() - 1).collect()
    };
    let mut w2 = w.clone();
    w2.reverse();
    assert_eq!(r, w2);
    for c in &l.chunks {
        assert!(c.count > 0);
    }
    // The compression invariant: ends plain, the chunks between compressed
    // unless too small or incompressible.
    let (depth, n) = (l.depth as usize, l.chunks.len());
    for (i, c) in l.chunks.iter().enumerate() {
        if i < depth || i + depth >= n || depth == 0 {
            assert!(
                !c.is_compressed(),
                "chunk {i} of {n} compressed at depth {depth}"
            );
        }
    }
    if let Some(limit) = (l.fill >= 0).then_some(l.fill.max(1) as usize) {
        assert!(
            l.chunks.iter().all(|c| c.count <= limit),
            "a chunk over {limit} elements"
        );
    }
    assert_eq!(l.chunks.iter().map(|c| c.count).sum::<usize>(), l.len());
}

#[test]
fn random_ops_match_vecdeque() {
    random_ops(false);
}

/// With `list-compress-depth` and small nodes, interior chunks compress
/// and decompress under every change, and reads see through them.
#[test]
fn random_ops_on_compressed_lists_match_vecdeque() {
    for (fill, depth) in [(4, 1), (1, 2), (-1, 1), (7, 3)] {
        let mut l = List {
            fill,
            depth,
            ..List::default()
        };
        random_ops_on(&mut l, false);
        assert!(l.len() > 0);
    }
    // Compressible elements do compress.
    let mut l = List {
        fill: 16,
        depth: 1,
        ..List::default()
    };
    for i in 0..1000 {
        l.push_back(format!("element-{:08}-{}", i % 10, "x".repeat(100)).as_bytes());
    }
    assert!(l.compressed_chunks() > 50, "{}", l.compressed_chunks());
    assert_eq!(l.get(500).map(<[u8]>::len), Some(117));
}

/// Mostly same-size elements, so chunks store bare runs and meet the
/// occasional element of another size at either end and in the middle.
#[test]
fn random_ops_on_same_size_runs_match_vecdeque() {
    random_ops(true);
}

fn random_ops(same_size: bool) {
    let mut l = List::new();
    random_ops_on(&mut l, same_size);
}

fn random_ops_on(l: &mut List, same_size: bool) {
    let mut fixed_seen = 0;
    let mut m: VecDeque<Vec<u8>> = VecDeque::new();
    let mut seed = 12345u64;
    let mut rnd = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for step in 0..20000 {
        let size = match rnd(10) {
            _ if same_size && rnd(40) != 0 => 16,
            0 => rnd(300) as usize,
            1 => 20000,
            _ => rnd(20) as usize,
        };
        let val: Vec<u8> = (0..size).map(|i| (i as u8) ^ (step as u8)).collect();
        match rnd(10) {
            0 | 1 => {
                l.push_back(&val);
                m.push_back(val);
            }
            2 | 3 => {
                l.push_front(&val);
                m.push_front(val);
            }
            4 => assert_eq!(l.pop(End::Left), m.pop_front()),
            5 => assert_eq!(l.pop(End::Right), m.pop_back()),
            6 if !m.is_empty() => {
                let i = rnd(m.len() as u64) as usize;
                assert_eq!(l.get(i), Some(m[i].as_slice()));
                l.set(i, &val);
                m[i] = val;
            }
            7 => {
                let i = rnd(m.len() as u64 + 1) as usize;
                l.insert(i, &val);
                m.insert(i, val);
            }
            8 if !m.is_empty() && rnd(20) == 0 => {
                let target = m[rnd(m.len() as u64) as usize].clone();
                let n = l.remove_matching(&target, 0, false);
                let before = m.len();
                m.retain(|x| *x != target);
                assert_eq!(n, before - m.len());
            }
            9 if !m.is_empty() && rnd(50) == 0 => {
                let s = rnd(m.len() as u64) as usize;
                let e = s + rnd(m.len() as u64) as usize;
                l.retain_range(s, e);
                let e = e.min(m.len() - 1);
                let kept: VecDeque<Vec<u8>> = m.drain(..).skip(s).take(e + 1 - s).collect();
                m = kept;
            }
            _ => {}
        }
        if step % 97 == 0 {
            model_check(l, &m);
            fixed_seen += l.chunks.iter().filter(|c| c.is_fixed()).count();
        }
    }
    model_check(l, &m);
    if same_size {
        assert!(fixed_seen > 0, "no chunk held a same-size run");
    }
}
