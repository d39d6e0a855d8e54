//! HyperLogLog values (Redis's `hyperloglog.c`), byte for byte: a string
//! starting with a 16-byte header (`HYLL`, the encoding, three zero bytes,
//! the cached cardinality as 8 little-endian bytes whose top bit marks it
//! stale) followed by 16,384 six-bit registers, either dense (12,288 bytes,
//! register `i` at bit `6i`, least significant bits first) or sparse (run
//! length opcodes: ZERO `00xxxxxx` for 1–64 empty registers, XZERO
//! `01xxxxxx yyyyyyyy` for up to 16,384, VAL `1vvvvvxx` for 1–4 registers of
//! value 1–32). Every operation here follows Redis's so the same PFADDs
//! leave the same bytes, and the estimate is Ertl's, as Redis 7.0 computes
//! it.

/// Header length.
pub const HDR: usize = 16;
/// Number of registers (2^14).
pub const REGISTERS: usize = 1 << P;
/// Size of a dense HLL, header included.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);

const P: u32 = 14;
const Q: u32 = 64 - P;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const XZERO_MAX_LEN: usize = 16384;
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// A sparse HLL whose opcodes do not cover exactly the 16,384 registers.
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt;

/// The encodings PFDEBUG ENCODING names.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Encoding {
    /// Six bits per register.
    Dense,
    /// Run-length opcodes.
    Sparse,
}

/// Redis's isHLLObjectOrReply test on a string's bytes: the magic, a known
/// encoding and, when dense, the exact length.
pub fn is_hll(s: &[u8]) -> bool {
    s.len() >= HDR
        && &s[..4] == b"HYLL"
        && s[4] <= SPARSE
        && (s[4] != DENSE || s.len() == DENSE_SIZE)
}

/// The encoding of a value that passed [`is_hll`].
pub fn encoding(s: &[u8]) -> Encoding {
    if s[4] == DENSE {
        Encoding::Dense
    } else {
        Encoding::Sparse
    }
}

/// Redis's createHLLObject: an empty sparse HLL (header, then one XZERO
/// covering every register), with a valid cached cardinality of 0.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR + 2);
    v.extend_from_slice(b"HYLL");
    v.extend_from_slice(&[SPARSE, 0, 0, 0]);
    v.extend_from_slice(&[0; 8]);
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(XZERO_MAX_LEN);
        v.extend_from_slice(&xzero_op(run));
        left -= run;
    }
    v
}

/// The cached cardinality, when valid.
pub fn cached_card(s: &[u8]) -> Option<u64> {
    let mut card = [0u8; 8];
    card.copy_from_slice(&s[8..16]);
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

/// Stores a freshly computed cardinality in the header.
pub fn set_cached_card(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Marks the cached cardinality stale.
pub fn invalidate_cache(v: &mut [u8]) {
    v[15] |= 0x80;
}

/// Redis's MurmurHash64A, read little-endian on every platform.
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let mut k = u64::from_le_bytes(w);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= u64::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Redis's hllPatLen: the register an element maps to and the length of
/// its `0...01` pattern (1 to Q+1).
fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Register `i` of dense registers (the bits past the end read as zero, as
/// the terminating NUL of Redis's sds does).
pub fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u16::from(REGISTER_MAX)) as u8
}

/// Sets register `i` of dense registers to `val`.
pub fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u16::from(val);
    let max = u16::from(REGISTER_MAX);
    regs[byte] = ((u16::from(regs[byte]) & !(max << fb)) | (v << fb)) as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        *next = ((u16::from(*next) & !(max >> (8 - fb))) | (v >> (8 - fb))) as u8;
    }
}

/// Redis's hllDenseSet: raises register `i` to `count`; true if it grew.
fn dense_raise(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// One sparse opcode: (registers covered, value, bytes used).
fn sparse_op(s: &[u8], p: usize) -> (usize, u8, usize) {
    let b = s[p];
    if b & 0xc0 == 0 {
        (usize::from(b & 0x3f) + 1, 0, 1)
    } else if b & 0xc0 == 0x40 {
        let lo = s.get(p + 1).copied().unwrap_or(0);
        ((usize::from(b & 0x3f) << 8 | usize::from(lo)) + 1, 0, 2)
    } else {
        (usize::from(b & 0x3) + 1, ((b >> 2) & 0x1f) + 1, 1)
    }
}

fn is_zero_op(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero_op(b: u8) -> bool {
    b & 0xc0 == 0x40
}

fn val_op(val: u8, len: usize) -> u8 {
    (val.wrapping_sub(1) << 2 | (len as u8).wrapping_sub(1)) | 0x80
}

fn xzero_op(len: usize) -> [u8; 2] {
    let l = len - 1;
    [(l >> 8) as u8 | 0x40, (l & 0xff) as u8]
}

/// A run of `len` empty registers as the shortest opcode.
fn push_zero_run(seq: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        seq.extend_from_slice(&xzero_op(len));
    } else {
        seq.push((len - 1) as u8);
    }
}

/// Visits the sparse opcodes of `s` as (first register, run length, value)
/// and returns the number of registers covered; stops early when a value
/// run would pass the last register, as Redis's readers do.
fn for_each_run(s: &[u8], mut f: impl FnMut(usize, usize, u8)) -> usize {
    let mut p = HDR;
    let mut idx = 0;
    while p < s.len() {
        let (run, val, len) = sparse_op(s, p);
        if val > 0 && run + idx > REGISTERS {
            break;
        }
        f(idx, run, val);
        idx += run;
        p += len;
    }
    idx
}

/// Redis's hllSparseToDense; Ok(false) when already dense.
pub fn to_dense(v: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if v[4] == DENSE {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    // The magic and the cached cardinality carry over.
    dense[..HDR].copy_from_slice(&v[..HDR]);
    dense[4] = DENSE;
    let covered = for_each_run(v, |first, run, val| {
        if val > 0 {
            for i in first..first + run {
                dense_put(&mut dense[HDR..], i, val);
            }
        }
    });
    if covered != REGISTERS {
        return Err(Corrupt);
    }
    *v = dense;
    Ok(true)
}

/// Redis's hllSparseSet: raises register `index` to `count` in a sparse
/// HLL, turning it dense when the value or the length no longer fits.
fn sparse_raise(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Find the opcode covering `index`.
    let (mut p, mut first, mut span, mut prev) = (HDR, 0, 0, None);
    let mut op = (0, 0, 1);
    while p < v.len() {
        op = sparse_op(v, p);
        span = op.0;
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += op.2;
        first += span;
    }
    let (runlen, cur, oldlen) = op;
    if span == 0 || p >= v.len() {
        return Err(Corrupt);
    }
    let is_val = cur > 0;
    if is_val && cur >= count {
        return Ok(false);
    }
    if runlen == 1 && (is_val || is_zero_op(v[p])) {
        v[p] = val_op(count, 1);
    } else {
        // Split the run into up to three opcodes around `index`.
        let last = first + span - 1;
        let mut seq = Vec::with_capacity(5);
        if is_val {
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        } else {
            if index != first {
                push_zero_run(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zero_run(&mut seq, last - index);
            }
        }
        if seq.len() > oldlen && v.len() + seq.len() - oldlen > max_bytes {
            return promote(v, index, count);
        }
        // An XZERO cut short by the end of the string reads its second
        // byte from Redis's terminating NUL, and the string grows by the
        // length difference only.
        let new_len = v.len() + seq.len() - oldlen;
        if v.len() < p + oldlen {
            v.resize(p + oldlen, 0);
        }
        v.splice(p..p + oldlen, seq);
        v.truncate(new_len);
    }
    merge_adjacent(v, prev.unwrap_or(HDR));
    invalidate_cache(v);
    Ok(true)
}

/// Step 4 of Redis's hllSparseSet: joins adjacent VAL opcodes of the same
/// value, scanning up to five opcodes from `p`.
fn merge_adjacent(v: &mut Vec<u8>, mut p: usize) {
    let mut scan = 5;
    while p < v.len() && scan > 0 {
        scan -= 1;
        if is_xzero_op(v[p]) {
            p += 2;
            continue;
        }
        if is_zero_op(v[p]) {
            p += 1;
            continue;
        }
        if p + 1 < v.len() && v[p + 1] & 0x80 != 0 {
            let (l1, v1, _) = sparse_op(v, p);
            let (l2, v2, _) = sparse_op(v, p + 1);
            if v1 == v2 && l1 + l2 <= VAL_MAX_LEN {
                v[p + 1] = val_op(v1, l1 + l2);
                v.remove(p);
                continue;
            }
        }
        p += 1;
    }
}

/// The promote path of hllSparseSet: dense, then the register raised.
fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(v)?;
    Ok(dense_raise(&mut v[HDR..], index, count))
}

/// Redis's hllAdd: true when a register grew (the estimate may change).
pub fn add(v: &mut Vec<u8>, ele: &[u8], max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, count) = pattern(ele);
    set_register(v, index, count, max_bytes)
}

/// Raises register `index` to `count` in either encoding.
pub fn set_register(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupt> {
    match v[4] {
        DENSE => Ok(dense_raise(&mut v[HDR..], index, count)),
        SPARSE => sparse_raise(v, index, count, max_bytes),
        _ => Err(Corrupt),
    }
}

/// Redis's hllMerge: `max[i] = max(max[i], register i)`.
pub fn merge_into(max: &mut [u8; REGISTERS], s: &[u8]) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(&s[HDR..], i));
        }
        return Ok(());
    }
    let covered = for_each_run(s, |first, run, val| {
        if val > 0 {
            for m in &mut max[first..first + run] {
                *m = (*m).max(val);
            }
        }
    });
    if covered == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Redis's hllCount for a stored HLL.
pub fn count(s: &[u8]) -> Result<u64, Corrupt> {
    let mut histo = [0u32; 64];
    if s[4] == DENSE {
        for i in 0..REGISTERS {
            histo[usize::from(dense_get(&s[HDR..], i))] += 1;
        }
    } else {
        let mut covered = 0;
        let mut p = HDR;
        while p < s.len() {
            let (run, val, len) = sparse_op(s, p);
            histo[usize::from(val)] += run as u32;
            covered += run;
            p += len;
        }
        if covered != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// hllCount over one byte per register (PFCOUNT of several keys).
pub fn count_registers(regs: &[u8; REGISTERS]) -> u64 {
    let mut histo = [0u32; 64];
    for r in regs {
        histo[usize::from(*r & 63)] += 1;
    }
    estimate(&histo)
}

/// Ertl's estimator from the register histogram, with Redis's rounding.
fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q as usize + 1])) / m);
    for j in (1..=Q as usize).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

/// PFDEBUG DECODE's text for a sparse HLL: `z:n`, `Z:n` and `v:val,len`.
pub fn decode(s: &[u8]) -> String {
    let mut out = Vec::new();
    let mut p = HDR;
    while p < s.len() {
        let (run, val, len) = sparse_op(s, p);
        out.push(if val > 0 {
            format!("v:{val},{run}")
        } else if len == 2 {
            format!("Z:{run}")
        } else {
            format!("z:{run}")
        });
        p += len;
    }
    out.join(" ")
}

/// PFSELFTEST: register access in the dense layout, then the estimate's
/// error and the dense/sparse agreement up to ten million elements, as
/// Redis's pfselftestCommand checks them; the error text on failure.
pub fn self_test(max_bytes: usize, seed: u64) -> Result<(), String> {
    let mut regs = vec![0u8; DENSE_SIZE - HDR];
    let mut bytes = vec![0u8; REGISTERS];
    let mut rng = seed | 1;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..1000 {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (next() & u64::from(REGISTER_MAX)) as u8;
            dense_put(&mut regs, i, *b);
        }
        for (i, b) in bytes.iter().enumerate() {
            let val = dense_get(&regs, i);
            if val != *b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {val}"
                ));
            }
        }
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..4].copy_from_slice(b"HYLL");
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed = next();
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_ne_bytes();
        let (index, run) = pattern(&ele);
        dense_raise(&mut dense[HDR..], index, run);
        set_register(&mut sparse, index, run, max_bytes)
            .map_err(|_| "TESTFAILED corrupted sparse HLL".to_string())?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < max_bytes / 2 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let card = count(&dense).unwrap_or(0);
        if count(&sparse) != Ok(card) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(card);
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_hll_is_redis_bytes() {
        let v = new_sparse();
        assert_eq!(v.len(), 18);
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert!(is_hll(&v));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(decode(&v), "Z:16384");
    }

    #[test]
    fn dense_registers_round_trip() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR];
        for i in 0..REGISTERS {
            dense_put(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        to_dense(&mut dense).ok();
        for i in 0..2000u32 {
            let e = i.to_string();
            add(&mut sparse, e.as_bytes(), 100_000).ok();
            add(&mut dense, e.as_bytes(), 100_000).ok();
        }
        assert_eq!(encoding(&sparse), Encoding::Sparse);
        assert_eq!(count(&sparse), count(&dense));
        let c = count(&dense).unwrap_or(0);
        assert!((1950..2050).contains(&c), "{c}");
        to_dense(&mut sparse).ok();
        assert_eq!(sparse[HDR..], dense[HDR..]);
    }

    #[test]
    fn corrupt_sparse_bodies_never_panic() {
        let mut x: u64 = 99;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..5000 {
            let mut v = new_sparse();
            v.truncate(HDR);
            for _ in 0..rnd() % 40 {
                v.push(rnd() as u8);
            }
            let mut max = [0u8; REGISTERS];
            let _ = merge_into(&mut max, &v);
            let _ = count(&v);
            let _ = decode(&v);
            let mut w = v.clone();
            let _ = to_dense(&mut w);
            for _ in 0..4 {
                let _ = set_register(
                    &mut v,
                    (rnd() % 16384) as usize,
                    1 + (rnd() % 40) as u8,
                    3000,
                );
            }
        }
    }

    #[test]
    fn self_test_passes() {
        assert_eq!(self_test(3000, 42), Ok(()));
    }
}
