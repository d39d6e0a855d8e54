//! One keyspace entry: the chain link, access stamp, TTL, value and key
//! in a single allocation, as Redis's dictEntry, robj and embedded string
//! would be if they were one (what Valkey 8.1 does with its embedded keys).
//!
//! Layout, 8-aligned, its size rounded up to 8 and then by jemalloc to a
//! size class:
//!
//! | bytes   | part |
//! |---------|------|
//! | 8       | link: the next entry of the chain; the address's three low bits are *this* entry's flags (value kind, has a TTL) |
//! | 4       | access stamp: LRU seconds, or LFU minutes and counter |
//! | 1       | key length up to 126 (127: an 8-byte length follows); the top bit marks an 8-byte expiry |
//! | k       | the key's bytes (first, so a lookup compares them without decoding the rest) |
//! | 6 or 8  | expiry in Unix milliseconds — only when the key has a TTL (8 bytes past the year 10889) |
//! | 1 + n   | a string of up to 44 bytes (Redis's embstr): its length, its bytes |
//! | or 8    | an int-encoded string |
//! | or 16   | an intset-encoded set, at the next multiple of 8 |
//! | or 32   | any other [`Value`], at the next multiple of 8 |
//!
//! So `key:0000001` (11 bytes) holding 16 bytes takes 13 + 11 + 17 = 41
//! bytes (jemalloc's 48 class), and 47 with a TTL (still 48); an integer
//! under it 32 (the 32 class); a small hash 13 + 11, rounded to 24, + 32
//! = 56 (64) plus its listpack; an intset 24 + 16 = 40 (48) plus its
//! integers.
//!
//! Strings are rewritten in place when the new one has the same layout;
//! otherwise the entry is rebuilt and relinked by [`EntryMut`], which knows
//! the link that points at it.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr;

use super::bytes::CompactBytes;
use super::set::Set;
use super::value::{StrRef, Value};

/// A keyspace entry, seen through a reference to its allocation.
#[repr(C)]
pub struct Entry {
    link: *mut u8,
    lru: u32,
    tail: [u8],
}

/// Where the tail starts: the key-length byte.
const HEAD: usize = 12;
const VALUE_SIZE: usize = std::mem::size_of::<Value>();
/// Longest string held in the entry itself (Redis's embstr limit).
const EMB_MAX: usize = super::value::EMBSTR_MAX;

const KIND: usize = 0b011;
const OBJ: usize = 0;
const INT: usize = 1;
const EMB: usize = 2;
const SET: usize = 3;
const SET_SIZE: usize = std::mem::size_of::<Set>();
const TTL: usize = 0b100;
/// Low bits of a link word that belong to the word's owner.
pub(super) const FLAGS: usize = 0b111;

/// The key-length byte's escape for keys of 127 bytes or more.
const LONG_KEY: u8 = 127;
/// The key-length byte's mark of an 8-byte expiry.
const WIDE_TTL: u8 = 0x80;
/// Expiry times below this take 6 bytes.
const NARROW_TTL_LIMIT: u64 = 1 << 48;

const _: () = assert!(VALUE_SIZE == 32 && std::mem::align_of::<Value>() <= 8);

/// A value on its way into an entry: owned, or the bytes of a string
/// short enough to be embedded, still where the request holds them (so
/// they are copied once, into the entry).
pub enum Incoming<'a> {
    Value(Value),
    /// Up to 44 bytes that are not an integer's text.
    Embedded(&'a [u8]),
}

impl<'a> Incoming<'a> {
    /// A string argument, encoded as [`Value::string`] would.
    #[inline]
    pub fn string(s: &'a [u8]) -> Incoming<'a> {
        match Value::int_encoding(s) {
            Some(n) => Incoming::Value(Value::Int(n)),
            None if s.len() <= EMB_MAX => Incoming::Embedded(s),
            None => Incoming::Value(Value::Str(CompactBytes::new(s))),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Incoming::Value(v) => v,
            Incoming::Embedded(s) => Value::Str(CompactBytes::new(s)),
        }
    }
}

impl From<Value> for Incoming<'_> {
    fn from(v: Value) -> Self {
        Incoming::Value(v)
    }
}

/// The kind a value is stored as.
fn kind_of(v: &Incoming<'_>) -> usize {
    match v {
        Incoming::Embedded(_) => EMB,
        Incoming::Value(Value::Int(_)) => INT,
        Incoming::Value(Value::Str(s)) if s.len() <= EMB_MAX => EMB,
        Incoming::Value(Value::Set(s)) if s.encoding() == "intset" => SET,
        _ => OBJ,
    }
}

/// Bytes of the value part for `kind`.
fn value_part(kind: usize, v: &Incoming<'_>) -> usize {
    match (kind, v) {
        (INT, _) => 8,
        (EMB, Incoming::Embedded(s)) => 1 + s.len(),
        (EMB, Incoming::Value(Value::Str(s))) => 1 + s.len(),
        (SET, _) => SET_SIZE,
        _ => VALUE_SIZE,
    }
}

/// Bytes of the expiry part for `expire_at` (0: none).
fn ttl_part(expire_at: u64) -> usize {
    match expire_at {
        0 => 0,
        at if at < NARROW_TTL_LIMIT => 6,
        _ => 8,
    }
}

/// Where the value part of `kind` starts when the key and expiry end at `at`.
#[inline(always)]
fn value_start(kind: usize, at: usize) -> usize {
    if kind == OBJ || kind == SET {
        at.next_multiple_of(8)
    } else {
        at
    }
}

/// Where the key starts and its length, in the entry at `p`.
///
/// # Safety
/// `p` is a live entry.
#[inline(always)]
unsafe fn key_span(p: *const u8) -> (usize, usize) {
    // SAFETY: the caller's entry has its header and key.
    unsafe {
        match *p.add(HEAD) & !WIDE_TTL {
            LONG_KEY => (
                HEAD + 9,
                p.add(HEAD + 1).cast::<u64>().read_unaligned() as usize,
            ),
            n => (HEAD + 1, usize::from(n)),
        }
    }
}

/// The expiry part's size in the entry at `p` (0, 6 or 8).
///
/// # Safety
/// `p` is a live entry.
#[inline(always)]
unsafe fn ttl_len(p: *const u8) -> usize {
    // SAFETY: the caller's entry has its header.
    unsafe {
        if (*p.cast::<*mut u8>()).addr() & TTL == 0 {
            0
        } else if *p.add(HEAD) & WIDE_TTL != 0 {
            8
        } else {
            6
        }
    }
}

/// Where the expiry part of the entry at `p` starts, its size (0, 6 or
/// 8), and the entry's size: one decoding of its header.
///
/// # Safety
/// `p` is a live entry.
#[inline(always)]
unsafe fn decode(p: *const u8) -> (usize, usize, usize) {
    // SAFETY: the caller's entry has all its parts.
    unsafe {
        let (key_at, klen) = key_span(p);
        let kind = (*p.cast::<*mut u8>()).addr() & KIND;
        let (ttl_at, ttl) = (key_at + klen, ttl_len(p));
        let at = value_start(kind, ttl_at + ttl);
        let end = at
            + match kind {
                OBJ => VALUE_SIZE,
                INT => 8,
                SET => SET_SIZE,
                _ => 1 + usize::from(*p.add(at)),
            };
        (ttl_at, ttl, end)
    }
}

/// Bytes from the entry at `p`'s start to its end.
///
/// # Safety
/// `p` is a live entry.
#[inline(always)]
unsafe fn end_of(p: *const u8) -> usize {
    // SAFETY: per the caller.
    unsafe { decode(p).2 }
}

/// The entry at `p` as [`entry_mut`] (a pointer), with where its expiry part starts
/// and its size.
///
/// # Safety
/// As [`entry_mut`].
#[inline(always)]
unsafe fn decoded(p: *mut u8) -> (*mut Entry, usize, usize) {
    // SAFETY: per the caller.
    let (ttl_at, ttl, end) = unsafe { decode(p) };
    // The fat pointer spans the entry's bytes.
    let e = ptr::slice_from_raw_parts_mut(p, end - HEAD) as *mut Entry;
    (e, ttl_at, ttl)
}

/// The allocation of an entry of `end` bytes.
fn layout(end: usize) -> Layout {
    // The entry's parts are already in memory, so its size is far below
    // isize::MAX. invariant: the layout is valid.
    Layout::from_size_align(end.next_multiple_of(8), 8).expect("entry size fits a layout")
}

/// An entry's address without the flag bits of the word it was read from.
#[inline(always)]
pub(super) fn untag(p: *mut u8) -> *mut u8 {
    p.map_addr(|a| a & !FLAGS)
}

/// The key of the entry at `p`, read without decoding the rest (chain
/// walks compare it first).
///
/// # Safety
/// `p` is a live entry not mutably borrowed for `'a`.
#[inline(always)]
pub(super) unsafe fn key_of<'a>(p: *const u8) -> &'a [u8] {
    // SAFETY: the key lies within the entry.
    unsafe {
        let (at, len) = key_span(p);
        &*ptr::slice_from_raw_parts(p.add(at), len)
    }
}

/// The next entry after the one at `p` (null at the chain's end).
///
/// # Safety
/// `p` is a live entry.
#[inline(always)]
pub(super) unsafe fn next_of(p: *const u8) -> *mut u8 {
    // SAFETY: the link word heads the entry.
    untag(unsafe { *p.cast::<*mut u8>() })
}

/// Checks the layout's invariants on the entry at `p` (debug builds:
/// tests, the fuzz targets, the AddressSanitizer build): the address
/// leaves the flag bits free, the key-length byte and its escape agree,
/// the expiry marks agree with the TTL flag, an embedded string fits, and
/// an object or set part is 8-aligned.
///
/// # Safety
/// `p` is a live entry.
#[cfg(debug_assertions)]
unsafe fn assert_layout(p: *const u8) {
    // SAFETY: the caller's entry has its header, key and value parts.
    unsafe {
        debug_assert_eq!(p.addr() & FLAGS, 0, "entry address is not 8-aligned");
        let word = (*p.cast::<*mut u8>()).addr();
        let kbyte = *p.add(HEAD);
        let (key_at, klen) = key_span(p);
        if kbyte & !WIDE_TTL == LONG_KEY {
            debug_assert!(
                klen >= usize::from(LONG_KEY),
                "long-key escape on a short key"
            );
        }
        debug_assert!(
            word & TTL != 0 || kbyte & WIDE_TTL == 0,
            "wide expiry mark without a TTL"
        );
        let kind = word & KIND;
        let at = value_start(kind, key_at + klen + ttl_len(p));
        match kind {
            EMB => debug_assert!(
                usize::from(*p.add(at)) <= EMB_MAX,
                "embedded string too long"
            ),
            OBJ | SET => debug_assert_eq!(at % 8, 0, "value part is not 8-aligned"),
            _ => {}
        }
    }
}

/// The entry at `p`.
///
/// # Safety
/// `p` is a live entry not mutably borrowed for `'a`.
#[inline(always)]
pub(super) unsafe fn entry_ref<'a>(p: *const u8) -> &'a Entry {
    #[cfg(debug_assertions)]
    // SAFETY: per the caller.
    unsafe {
        assert_layout(p)
    };
    // SAFETY: the fat pointer spans the entry's bytes, within its
    // allocation (rounded up to 8, as the reference's size is).
    unsafe { &*(ptr::slice_from_raw_parts(p, end_of(p) - HEAD) as *const Entry) }
}

/// The entry at `p`, mutably.
///
/// # Safety
/// `p` is a live entry not otherwise borrowed for `'a`.
#[inline(always)]
pub(super) unsafe fn entry_mut<'a>(p: *mut u8) -> &'a mut Entry {
    #[cfg(debug_assertions)]
    // SAFETY: per the caller.
    unsafe {
        assert_layout(p)
    };
    // SAFETY: as entry_ref.
    unsafe { &mut *(ptr::slice_from_raw_parts_mut(p, end_of(p) - HEAD) as *mut Entry) }
}

/// Allocates an entry linked to `next`.
pub(super) fn new_entry(
    key: &[u8],
    value: Incoming<'_>,
    expire_at: u64,
    lru: u32,
    next: *mut u8,
) -> *mut u8 {
    let kind = kind_of(&value);
    alloc_entry(key, value, kind, expire_at, lru, next)
}

/// [`new_entry`] holding the value as `kind`.
fn alloc_entry(
    key: &[u8],
    value: Incoming<'_>,
    kind: usize,
    expire_at: u64,
    lru: u32,
    next: *mut u8,
) -> *mut u8 {
    let ttl = ttl_part(expire_at);
    let long_key = key.len() >= usize::from(LONG_KEY);
    let key_at = HEAD + 1 + usize::from(long_key) * 8;
    let at = value_start(kind, key_at + key.len() + ttl);
    let part = value_part(kind, &value);
    let end = at + part;
    let layout = layout(end);
    // SAFETY: the layout is non-zero; every byte the header and parts
    // name is written below before the entry is used.
    unsafe {
        let p = alloc(layout);
        if p.is_null() {
            handle_alloc_error(layout);
        }
        let flags = kind | if ttl != 0 { TTL } else { 0 };
        p.cast::<*mut u8>().write(next.map_addr(|a| a | flags));
        p.add(8).cast::<u32>().write(lru);
        let kbyte = if long_key { LONG_KEY } else { key.len() as u8 };
        *p.add(HEAD) = kbyte | if ttl == 8 { WIDE_TTL } else { 0 };
        if long_key {
            p.add(HEAD + 1)
                .cast::<u64>()
                .write_unaligned(key.len() as u64);
        }
        ptr::copy_nonoverlapping(key.as_ptr(), p.add(key_at), key.len());
        let bytes = expire_at.to_le_bytes();
        let ttl_at = p.add(key_at + key.len());
        match ttl {
            0 => {}
            6 => ptr::copy_nonoverlapping(bytes.as_ptr(), ttl_at, 6),
            _ => ptr::copy_nonoverlapping(bytes.as_ptr(), ttl_at, 8),
        }
        let v = p.add(at);
        let embed = |b: &[u8]| {
            *v = b.len() as u8;
            ptr::copy_nonoverlapping(b.as_ptr(), v.add(1), b.len());
        };
        match value {
            Incoming::Embedded(b) if kind == EMB => embed(b),
            Incoming::Value(Value::Int(n)) if kind == INT => v.cast::<i64>().write_unaligned(n),
            Incoming::Value(Value::Set(s)) if kind == SET => v.cast::<Set>().write(s),
            Incoming::Value(Value::Str(s)) if kind == EMB => embed(s.as_slice()),
            other => v.cast::<Value>().write(other.into_value()),
        }
        #[cfg(debug_assertions)]
        {
            assert_layout(p);
            debug_assert_eq!(end_of(p), end, "the header decodes to another size");
        }
        p
    }
}

/// Frees the entry at `p`, dropping its value unless `value_moved`.
///
/// # Safety
/// `p` is a live entry nothing else refers to.
unsafe fn free_entry(p: *mut u8, value_moved: bool) {
    // SAFETY: per the caller; the layout is the one it was allocated with.
    unsafe {
        let e = entry_mut(p);
        if !value_moved {
            if let Some(v) = e.object_mut() {
                ptr::drop_in_place(v as *mut Value);
            } else if let Some(s) = e.set_part_mut() {
                ptr::drop_in_place(s as *mut Set);
            }
        }
        dealloc(p, layout(end_of(p)));
    }
}

/// Moves the value out of the entry at `p` (which must then be freed with
/// `value_moved`).
///
/// # Safety
/// `p` is a live entry nothing else refers to.
unsafe fn move_value(p: *mut u8) -> Value {
    // SAFETY: per the caller; an object is read out exactly once.
    unsafe {
        let e = entry_mut(p);
        if let Some(s) = e.set_part_mut() {
            return Value::Set(ptr::read(s as *const Set));
        }
        match e.object_mut() {
            Some(v) => ptr::read(v as *const Value),
            None => e.to_value(),
        }
    }
}

impl Entry {
    #[inline(always)]
    fn flags(&self) -> usize {
        self.link.addr() & FLAGS
    }

    #[inline(always)]
    fn base(&self) -> *const u8 {
        (self as *const Entry).cast::<u8>()
    }

    /// Where the expiry part starts and its size.
    #[inline(always)]
    fn ttl_span(&self) -> (usize, usize) {
        // SAFETY: `self` is a live entry.
        unsafe {
            let (key_at, klen) = key_span(self.base());
            (key_at + klen, ttl_len(self.base()))
        }
    }

    /// Where the value part starts.
    #[inline(always)]
    fn value_at(&self) -> usize {
        let (at, len) = self.ttl_span();
        value_start(self.flags() & KIND, at + len)
    }

    /// The bytes of the entry from offset `at` (its start counting).
    #[inline(always)]
    fn bytes(&self, at: usize, len: usize) -> &[u8] {
        &self.tail[at - HEAD..at - HEAD + len]
    }

    /// The next entry of the chain (null at its end).
    #[inline(always)]
    pub(super) fn next(&self) -> *mut u8 {
        untag(self.link)
    }

    /// Links this entry to `next`, keeping its flags.
    #[inline(always)]
    pub(super) fn set_next(&mut self, next: *mut u8) {
        let f = self.flags();
        self.link = next.map_addr(|a| a | f);
    }

    /// The word holding this entry's link (where the next entry hangs).
    #[inline(always)]
    pub(super) fn link_word(&mut self) -> *mut *mut u8 {
        &mut self.link
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        // SAFETY: `self` is a live entry.
        let (at, len) = unsafe { key_span(self.base()) };
        self.bytes(at, len)
    }

    /// The access stamp (LRU seconds or LFU minutes and counter).
    #[inline]
    pub fn lru(&self) -> u32 {
        self.lru
    }

    /// Sets the access stamp.
    #[inline]
    pub fn set_lru(&mut self, lru: u32) {
        self.lru = lru;
    }

    /// Absolute expiry in Unix milliseconds; 0 means none. Changed only
    /// through the store, which keeps the volatile-key count.
    #[inline]
    pub fn expire_at(&self) -> u64 {
        if self.flags() & TTL == 0 {
            return 0;
        }
        let (at, ttl) = self.ttl_span();
        self.read_ttl(at, ttl)
    }

    /// The expiry part of `ttl` bytes (0, 6 or 8) at `at`, read with
    /// fixed-size loads.
    #[inline(always)]
    fn read_ttl(&self, at: usize, ttl: usize) -> u64 {
        let mut b = [0u8; 8];
        match ttl {
            0 => return 0,
            6 => b[..6].copy_from_slice(self.bytes(at, 6)),
            _ => b.copy_from_slice(self.bytes(at, 8)),
        }
        u64::from_le_bytes(b)
    }

    /// Writes `expire_at` as the expiry part of `ttl` bytes at `at`.
    #[inline(always)]
    fn write_ttl(&mut self, at: usize, ttl: usize, expire_at: u64) {
        let b = expire_at.to_le_bytes();
        match ttl {
            0 => {}
            6 => self.bytes_mut(at, 6).copy_from_slice(&b[..6]),
            _ => self.bytes_mut(at, 8).copy_from_slice(&b),
        }
    }

    /// True when the entry has a TTL that has passed at `now_ms`: the
    /// clock is past it, as Redis's keyIsExpired has it (`now > when`), so
    /// a key lives through the millisecond its TTL names.
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        let at = self.expire_at();
        at != 0 && at < now_ms
    }

    /// The value part as a `T`, when the entry holds its value as `kind`.
    ///
    /// # Safety
    /// `T` is the type held for `kind`: [`Value`] for OBJ, [`Set`] for SET.
    #[inline(always)]
    unsafe fn part<T>(&self, kind: usize) -> Option<&T> {
        if self.flags() & KIND != kind {
            return None;
        }
        // Fixed-size parts end the entry.
        let at = self.tail.len() - std::mem::size_of::<T>();
        // SAFETY: an entry of this kind holds an initialised `T` here, at a
        // multiple of 8 from the 8-aligned start.
        Some(unsafe { &*self.tail.as_ptr().add(at).cast::<T>() })
    }

    /// [`Entry::part`], mutably.
    ///
    /// # Safety
    /// As [`Entry::part`].
    #[inline(always)]
    unsafe fn part_mut<T>(&mut self, kind: usize) -> Option<&mut T> {
        if self.flags() & KIND != kind {
            return None;
        }
        let at = self.tail.len() - std::mem::size_of::<T>();
        // SAFETY: as part().
        Some(unsafe { &mut *self.tail.as_mut_ptr().add(at).cast::<T>() })
    }

    /// The value when it is held as a [`Value`]: every type but strings
    /// of up to 44 bytes, int-encoded strings and intsets (None for those).
    #[inline]
    pub fn object(&self) -> Option<&Value> {
        // SAFETY: OBJ entries hold a Value.
        unsafe { self.part(OBJ) }
    }

    #[inline]
    fn object_mut(&mut self) -> Option<&mut Value> {
        // SAFETY: OBJ entries hold a Value.
        unsafe { self.part_mut(OBJ) }
    }

    /// An intset-encoded set held in place of a [`Value`].
    #[inline]
    fn set_part_mut(&mut self) -> Option<&mut Set> {
        // SAFETY: SET entries hold a Set.
        unsafe { self.part_mut(SET) }
    }

    /// The value when it is a set.
    #[inline]
    pub fn set(&self) -> Option<&Set> {
        // SAFETY: SET entries hold a Set.
        if let Some(s) = unsafe { self.part::<Set>(SET) } {
            return Some(s);
        }
        match self.object() {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        }
    }

    /// The string form, or None when the value is not a string.
    #[inline]
    pub fn as_str(&self) -> Option<StrRef<'_>> {
        match self.flags() & KIND {
            INT => {
                let mut b = [0u8; 8];
                // The int ends the entry.
                b.copy_from_slice(&self.tail[self.tail.len() - 8..]);
                Some(StrRef::Int(i64::from_ne_bytes(b)))
            }
            EMB => Some(StrRef::Bytes(&self.tail[self.value_at() + 1 - HEAD..])),
            _ => self.object()?.as_str(),
        }
    }

    /// The value, borrowed when held as a [`Value`], else rebuilt (a
    /// string's bytes copied, with no allocation up to 22 bytes; an
    /// intset cloned). Set commands use [`Entry::set`] instead.
    #[inline]
    pub fn value(&self) -> ValueRef<'_> {
        match self.object() {
            Some(v) => ValueRef::Borrowed(v),
            None => ValueRef::Owned(self.to_value()),
        }
    }

    /// An owned copy of the value.
    pub fn to_value(&self) -> Value {
        if self.flags() & KIND == SET {
            return Value::Set(self.set().cloned().unwrap_or_default());
        }
        match (self.object(), self.as_str()) {
            (Some(v), _) => v.clone(),
            (None, Some(StrRef::Int(n))) => Value::Int(n),
            (None, Some(StrRef::Bytes(b))) => Value::Str(CompactBytes::new(b)),
            // invariant: a non-object entry always holds a string.
            (None, None) => unreachable!("non-object entry holds a string"),
        }
    }

    /// True for any string encoding.
    #[inline]
    pub fn is_string(&self) -> bool {
        match self.flags() & KIND {
            INT | EMB => true,
            SET => false,
            _ => self.object().is_some_and(Value::is_string),
        }
    }

    /// The name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        if self.flags() & KIND == SET {
            return "set";
        }
        self.object().map_or("string", Value::type_name)
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self.flags() & KIND {
            INT => "int",
            EMB => "embstr",
            SET => "intset",
            _ => self.object().map_or("raw", Value::encoding),
        }
    }

    /// Bytes of the entry's own allocation.
    pub fn size(&self) -> usize {
        (HEAD + self.tail.len()).next_multiple_of(8)
    }

    /// Bytes the allocator gives the entry: its size rounded up to
    /// jemalloc's class (16-byte steps to 128, then four per doubling).
    pub fn footprint(&self) -> usize {
        let n = self.size();
        if n <= 8 {
            return 8;
        }
        if n <= 128 {
            return n.next_multiple_of(16);
        }
        let step = 1usize << ((usize::BITS - 1 - (n - 1).leading_zeros()) - 2);
        n.next_multiple_of(step)
    }

    /// Heap bytes the value owns beyond the entry (MEMORY USAGE, INFO).
    pub fn value_heap_size(&self) -> usize {
        if self.flags() & KIND == SET {
            return self.set().map_or(0, Set::heap_size);
        }
        self.object().map_or(0, Value::heap_size)
    }
}

/// An entry's value: borrowed, or rebuilt from an embedded string or intset.
pub enum ValueRef<'a> {
    /// Held as a [`Value`].
    Borrowed(&'a Value),
    /// Rebuilt from the entry's bytes.
    Owned(Value),
}

impl Deref for ValueRef<'_> {
    type Target = Value;
    #[inline]
    fn deref(&self) -> &Value {
        match self {
            ValueRef::Borrowed(v) => v,
            ValueRef::Owned(v) => v,
        }
    }
}

/// An entry taken out of the table; freed when dropped.
pub struct EntryBox(ptr::NonNull<u8>);

// SAFETY: an EntryBox owns its allocation and value outright, as a Box would.
unsafe impl Send for EntryBox {}

impl EntryBox {
    /// Takes ownership of the unlinked entry at `p`.
    ///
    /// # Safety
    /// `p` is a live entry no table links to any more.
    pub(super) unsafe fn from_raw(p: *mut u8) -> EntryBox {
        // invariant: entries come from a successful allocation.
        EntryBox(ptr::NonNull::new(p).expect("entry address is not null"))
    }

    /// The value, freeing the rest.
    pub fn into_value(self) -> Value {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        // SAFETY: this box owned the entry; the value is moved out once.
        unsafe {
            let v = move_value(p);
            free_entry(p, true);
            v
        }
    }
}

impl Deref for EntryBox {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        // SAFETY: owned and live.
        unsafe { entry_ref(self.0.as_ptr()) }
    }
}

impl Drop for EntryBox {
    fn drop(&mut self) {
        // SAFETY: owned and live; nothing else refers to it.
        unsafe { free_entry(self.0.as_ptr(), false) }
    }
}

/// Frees an entry still linked nowhere (a table being dropped).
///
/// # Safety
/// As [`EntryBox::from_raw`].
pub(super) unsafe fn drop_entry(p: *mut u8) {
    // SAFETY: per the caller.
    drop(unsafe { EntryBox::from_raw(p) });
}

/// A live entry borrowed for writing, with the link word that points at
/// it, so that a value that no longer fits can move the entry.
pub struct EntryMut<'a> {
    slot: *mut *mut u8,
    /// The entry the slot links to (decoded once).
    entry: *mut Entry,
    /// Where its expiry part starts and its size (decoded with it).
    ttl_at: usize,
    ttl: usize,
    _table: PhantomData<&'a mut Entry>,
}

impl<'a> EntryMut<'a> {
    /// The entry the word at `slot` links to.
    ///
    /// # Safety
    /// `slot` is a table's bucket or an entry's link word, pointing at a
    /// live entry, with the table mutably borrowed for `'a`.
    pub(super) unsafe fn new(slot: *mut *mut u8) -> EntryMut<'a> {
        // SAFETY: per the caller.
        let (entry, ttl_at, ttl) = unsafe { decoded(untag(*slot)) };
        EntryMut {
            slot,
            entry,
            ttl_at,
            ttl,
            _table: PhantomData,
        }
    }

    /// Absolute expiry in Unix milliseconds; 0 means none.
    #[inline]
    pub fn expire_at(&self) -> u64 {
        self.read_ttl(self.ttl_at, self.ttl)
    }

    #[inline(always)]
    fn ptr(&self) -> *mut u8 {
        // SAFETY: the slot is live for 'a.
        untag(unsafe { *self.slot })
    }

    /// Replaces the entry by one holding `value` (or its own value moved,
    /// when None) with expiry `expire_at`, relinked where it was; the
    /// value is held as a [`Value`] when `as_object`.
    fn rebuild(&mut self, value: Option<Incoming<'_>>, expire_at: u64, as_object: bool) {
        let old = self.ptr();
        // SAFETY: `old` is the live entry this borrow covers; the new one
        // is linked in its place before it is freed.
        unsafe {
            let moved = value.is_none();
            let value = match value {
                Some(v) => v,
                None => Incoming::Value(move_value(old)),
            };
            let e = entry_ref(old);
            let kind = if as_object { OBJ } else { kind_of(&value) };
            let new = alloc_entry(e.key(), value, kind, expire_at, e.lru, e.next());
            let owner_flags = (*self.slot).addr() & FLAGS;
            *self.slot = new.map_addr(|a| a | owner_flags);
            free_entry(old, moved);
            (self.entry, self.ttl_at, self.ttl) = decoded(new);
        }
    }

    /// The value, mutably; an embedded or int-encoded string is first
    /// turned into a [`Value`] held by the entry.
    pub fn value_mut(&mut self) -> &mut Value {
        if self.object().is_none() {
            let at = self.expire_at();
            self.rebuild(None, at, true);
        }
        // SAFETY: the slot links to the live entry for 'a.
        let e = unsafe { &mut *self.entry };
        // invariant: rebuilt as an object just above when it was not one.
        e.object_mut().expect("entry holds an object")
    }

    /// The set, mutably, for the whole borrow; None for other types.
    pub fn into_set_mut(self) -> Option<&'a mut Set> {
        // SAFETY: the slot links the live entry; the table stays borrowed for 'a.
        let e = unsafe { &mut *self.entry };
        if e.flags() & KIND == SET {
            return e.set_part_mut();
        }
        match e.object_mut() {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        }
    }

    /// The value held as an object, mutably, for the whole borrow; None
    /// for strings kept embedded and intsets kept in place.
    pub fn into_object_mut(self) -> Option<&'a mut Value> {
        // SAFETY: the slot links the live entry; the table stays borrowed for 'a.
        let e = unsafe { &mut *self.entry };
        e.object_mut()
    }

    /// Holds a set that is no longer intset-encoded as an ordinary value
    /// (after a write that converted it), so the entry's set part only
    /// ever holds intsets.
    pub fn settle_set(&mut self) {
        if self.flags() & KIND == SET && self.set().is_some_and(|s| s.encoding() != "intset") {
            self.value_mut();
        }
    }

    /// The entry, for the whole borrow.
    pub fn into_ref(self) -> &'a Entry {
        // SAFETY: the slot links the live entry; the table stays borrowed for 'a.
        unsafe { &*self.entry }
    }

    /// [`EntryMut::value_mut`] for the whole borrow.
    pub fn into_value_mut(mut self) -> &'a mut Value {
        self.value_mut();
        // SAFETY: as value_mut; the borrow of the table lasts 'a.
        let e = unsafe { &mut *self.entry };
        // invariant: value_mut made it an object.
        e.object_mut().expect("entry holds an object")
    }

    /// Stores `value` with expiry `expire_at` (0: none), in place when the
    /// layout allows.
    pub(super) fn store(&mut self, value: Incoming<'_>, expire_at: u64) {
        self.store_with(value, Some(expire_at));
    }

    /// Replaces the value, keeping the expiry (in place when the layout
    /// allows: an int stays an int, a string of the same length).
    pub fn set_value(&mut self, value: Value) {
        self.store_with(Incoming::Value(value), None);
    }

    /// Stores `value`, with expiry `expire_at` or (None) the one it has,
    /// decoding the entry's parts once.
    #[inline]
    fn store_with(&mut self, value: Incoming<'_>, expire_at: Option<u64>) {
        let kind = kind_of(&value);
        let part = value_part(kind, &value);
        let (ttl_at, ttl) = (self.ttl_at, self.ttl);
        let was = self.expire_at();
        let e = &mut **self;
        let at = value_start(kind, ttl_at + ttl);
        let same = e.flags() & KIND == kind
            && kind != SET
            && expire_at.is_none_or(|x| ttl == ttl_part(x))
            && HEAD + e.tail.len() == at + part;
        if !same {
            let expire_at = expire_at.unwrap_or(was);
            self.rebuild(Some(value), expire_at, false);
            return;
        }
        if let Some(x) = expire_at {
            e.write_ttl(ttl_at, ttl, x);
        }
        match value {
            Incoming::Embedded(b) => e.bytes_mut(at + 1, b.len()).copy_from_slice(b),
            Incoming::Value(Value::Int(n)) if kind == INT => {
                e.bytes_mut(at, 8).copy_from_slice(&n.to_ne_bytes())
            }
            Incoming::Value(Value::Str(b)) if kind == EMB => {
                e.bytes_mut(at + 1, b.len()).copy_from_slice(b.as_slice())
            }
            // invariant: same kind, so an object entry.
            other => *e.object_mut().expect("entry holds an object") = other.into_value(),
        }
    }

    /// Sets (or clears, with 0) the expiry.
    pub(super) fn set_expire(&mut self, at: u64) {
        let (ttl_at, ttl) = (self.ttl_at, self.ttl);
        if ttl == ttl_part(at) {
            self.write_ttl(ttl_at, ttl, at);
        } else {
            self.rebuild(None, at, false);
        }
    }
}

impl Entry {
    /// The bytes of the entry from offset `at`, mutably.
    #[inline(always)]
    fn bytes_mut(&mut self, at: usize, len: usize) -> &mut [u8] {
        &mut self.tail[at - HEAD..at - HEAD + len]
    }
}

impl Deref for EntryMut<'_> {
    type Target = Entry;
    #[inline]
    fn deref(&self) -> &Entry {
        // SAFETY: the slot links to the live entry, borrowed for 'a.
        unsafe { &*self.entry }
    }
}

impl DerefMut for EntryMut<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Entry {
        // SAFETY: as deref, exclusively.
        unsafe { &mut *self.entry }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(key: &[u8], v: Value, at: u64) -> EntryBox {
        // SAFETY: a fresh entry, linked nowhere.
        unsafe { EntryBox::from_raw(new_entry(key, v.into(), at, 7, ptr::null_mut())) }
    }

    #[test]
    fn sizes_of_small_strings() {
        let e = boxed(b"key:0000001", Value::string(b"abcdefghijklmnop"), 0);
        assert_eq!(e.size(), 48);
        assert_eq!(e.footprint(), 48);
        assert_eq!(e.key(), b"key:0000001");
        assert_eq!(e.encoding(), "embstr");
        assert_eq!(e.lru(), 7);
        assert!(e.next().is_null());
        let e = boxed(b"key:0000001", Value::string(b"abcdefghijklmnop"), 99);
        assert_eq!(e.size(), 48);
        assert_eq!(e.expire_at(), 99);
        let e = boxed(b"key:0000001", Value::string(b"abcdefghijklmnop"), u64::MAX);
        assert_eq!(e.expire_at(), u64::MAX);
        assert_eq!(e.key(), b"key:0000001");
        let long = vec![b'k'; 300];
        let e = boxed(&long, Value::string(b"v"), 1 << 47);
        assert_eq!(e.key(), &long[..]);
        assert_eq!(e.expire_at(), 1 << 47);
        let e = boxed(b"k", Value::string(b"-12"), 5);
        assert_eq!(e.size(), 13 + 6 + 8 + 1 + 4);
        assert_eq!(e.encoding(), "int");
        assert!(matches!(e.as_str(), Some(StrRef::Int(-12))));
        let e = boxed(b"h", Value::List(Box::default()), 0);
        assert_eq!(e.size(), 16 + 32);
        assert_eq!(e.type_name(), "list");
        assert!(!e.is_string());
        assert!(e.into_value().type_name() == "list");
    }

    #[test]
    fn intsets_in_place_of_a_value() {
        let mut set = Set::default();
        set.add(b"7");
        let mut slot = new_entry(
            b"iset:0000001",
            Value::Set(set).into(),
            0,
            1,
            ptr::null_mut(),
        );
        // SAFETY: `slot` is the only link to the entry.
        let mut m = unsafe { EntryMut::new(&mut slot) };
        assert_eq!(m.size(), 13 + 12 + 7 + 16);
        assert_eq!(
            (m.type_name(), m.encoding(), m.is_string()),
            ("set", "intset", false)
        );
        assert!(m.object().is_none() && m.as_str().is_none());
        assert_eq!(m.set().map(Set::len), Some(1));
        assert!(matches!(&*m.value(), Value::Set(s) if s.len() == 1));
        m.set_expire(99);
        assert_eq!((m.expire_at(), m.encoding()), (99, "intset"));
        // SAFETY: `slot` still links the entry, which the test owns.
        let s = unsafe { EntryMut::new(&mut slot) }
            .into_set_mut()
            .expect("a set");
        s.add(b"not a number");
        // SAFETY: as above.
        let mut m = unsafe { EntryMut::new(&mut slot) };
        m.settle_set();
        assert!(matches!(m.object(), Some(Value::Set(s)) if s.len() == 2));
        assert_eq!((m.encoding(), m.expire_at()), ("hashtable", 99));
        // SAFETY: the entry is linked nowhere else.
        let v = unsafe { EntryBox::from_raw(untag(slot)) }.into_value();
        assert!(matches!(v, Value::Set(s) if s.len() == 2));
    }

    #[test]
    fn rewrites_in_place_or_relinks() {
        let mut slot = new_entry(b"key", Incoming::string(b"aaaa"), 0, 1, ptr::null_mut());
        let first = slot;
        // SAFETY: `slot` is the only link to the entry.
        let mut m = unsafe { EntryMut::new(&mut slot) };
        m.store(Incoming::string(b"bbbb"), 0);
        assert_eq!(m.ptr(), first, "same layout: in place");
        m.store(Value::string(b"longer value").into(), 0);
        m.set_expire(123);
        assert_eq!(m.expire_at(), 123);
        m.set_expire(456);
        assert_eq!(m.expire_at(), 456);
        m.set_expire(u64::MAX / 2);
        assert_eq!(m.expire_at(), u64::MAX / 2);
        m.set_expire(456);
        assert_eq!(m.expire_at(), 456);
        assert_eq!(
            m.as_str().map(|s| s.to_vec()),
            Some(b"longer value".to_vec())
        );
        match m.value_mut() {
            Value::Str(s) => assert_eq!(s.as_slice(), b"longer value"),
            _ => panic!("not a string"),
        }
        *m.value_mut() = Value::Raw(Box::new(b"raw".to_vec()));
        assert_eq!(m.encoding(), "raw");
        assert_eq!(m.expire_at(), 456);
        m.set_expire(0);
        assert_eq!(m.expire_at(), 0);
        assert_eq!(m.key(), b"key");
        assert_eq!(m.lru(), 1);
        let v = m.to_value();
        assert!(matches!(v, Value::Raw(_)));
        // SAFETY: the entry is linked nowhere else.
        drop(unsafe { EntryBox::from_raw(untag(slot)) });
    }
}
