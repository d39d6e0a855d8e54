//! Redis's partial quicksort (`pqsort.c`, Bentley and McIlroy's qsort that
//! skips the partitions outside a range of positions). GEORADIUS and
//! GEOSEARCH with COUNT sort this way, so which of several equally distant
//! points make the cut, and their order, follow it here too.

use std::cmp::Ordering;

/// Sorts `v` enough that positions `lrange..=rrange` hold what a full sort
/// would put there; equal elements end up where Redis's pqsort leaves them.
pub fn pqsort<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering, lrange: usize, rrange: usize) {
    let n = v.len();
    sort_part(v, 0, n, &cmp, lrange, rrange);
}

/// True when the positions `l..=r` all lie before or all after `lo..lo+k`.
fn outside(lo: usize, k: usize, l: usize, r: usize) -> bool {
    (l < lo && r < lo) || (l >= lo + k && r >= lo + k)
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    let lt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let gt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if lt(a, b) {
        if lt(b, c) {
            b
        } else if lt(a, c) {
            c
        } else {
            a
        }
    } else if gt(b, c) {
        b
    } else if lt(a, c) {
        a
    } else {
        c
    }
}

fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

fn sort_part<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
    l: usize,
    r: usize,
) {
    loop {
        if n < 7 {
            for m in a + 1..a + n {
                let mut p = m;
                while p > a && cmp(&v[p - 1], &v[p]) == Ordering::Greater {
                    v.swap(p, p - 1);
                    p -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                match cmp(&v[pb], &v[a]) {
                    Ordering::Greater => break,
                    Ordering::Equal => {
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    Ordering::Less => {}
                }
                pb += 1;
            }
            while pb <= pc {
                match cmp(&v[pc], &v[a]) {
                    Ordering::Less => break,
                    Ordering::Equal => {
                        v.swap(pc, pd);
                        pd -= 1;
                    }
                    Ordering::Greater => {}
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let s = (pa - a).min(pb - pa);
        vecswap(v, a, pb - s, s);
        let s = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - s, s);
        let left = pb - pa;
        if left > 1 && !outside(a, left, l, r) {
            sort_part(v, a, left, cmp, l, r);
        }
        let right = pd - pc;
        if right <= 1 {
            return;
        }
        a = pn - right;
        n = right;
        if outside(a, n, l, r) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_is_sorted() {
        let mut x: u64 = 12345;
        let mut v: Vec<u32> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 500) as u32
            })
            .collect();
        let mut sorted = v.clone();
        sorted.sort();
        pqsort(&mut v, |a, b| a.cmp(b), 0, 99);
        assert_eq!(v[..100], sorted[..100]);
        let mut w = sorted.clone();
        w.reverse();
        let last = w.len() - 1;
        pqsort(&mut w, |a, b| a.cmp(b), 0, last);
        assert_eq!(w, sorted);
    }
}
