//! Values stored under keys, and the facts TYPE, OBJECT ENCODING and
//! WRONGTYPE checks need about them.

use super::bytes::CompactBytes;

/// A stored value. Strings keep Redis's three encodings apart so OBJECT
/// ENCODING answers as Redis does.
#[derive(Clone, Debug)]
pub enum Value {
    /// A string that is a canonical 64-bit integer ("int").
    Int(i64),
    /// A string as SET wrote it ("embstr" up to 44 bytes, else "raw").
    Str(CompactBytes),
    /// A string modified in place by APPEND or SETRANGE ("raw"); keeps spare
    /// capacity so repeated appends stay amortised O(1).
    Raw(Box<Vec<u8>>),
    /// A string kept in the buffer its argument was read into: a large
    /// SET value is stored without a copy ("raw").
    Large(Box<bytes::Bytes>),
    /// A list.
    List(Box<super::list::List>),
    /// A hash.
    Hash(super::hash::Hash),
    /// A set, held inline: an intset then costs one allocation, as in Redis.
    Set(super::set::Set),
    /// A sorted set.
    ZSet(super::zset::ZSet),
    /// A stream.
    Stream(Box<super::stream::Stream>),
}

/// Redis stores strings of up to 44 bytes as embstr.
pub(crate) const EMBSTR_MAX: usize = 44;

impl Value {
    /// A string value encoded as Redis's `tryObjectEncoding` would: integers
    /// of up to 20 characters become "int", others stay as given.
    pub fn string(s: &[u8]) -> Value {
        match Value::int_encoding(s) {
            Some(n) => Value::Int(n),
            None => Value::Str(CompactBytes::new(s)),
        }
    }

    /// The integer a string is stored as, when `tryObjectEncoding` would
    /// int-encode it (up to 20 characters of a 64-bit integer's text).
    #[inline]
    pub fn int_encoding(s: &[u8]) -> Option<i64> {
        if s.len() <= 20 {
            crate::util::num::parse_i64(s)
        } else {
            None
        }
    }

    /// A string value that keeps its text form (INCRBYFLOAT results are
    /// never int-encoded in Redis).
    pub fn plain_string(s: Vec<u8>) -> Value {
        Value::Str(CompactBytes::from_vec(s))
    }

    /// The name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Large(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
        }
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Str(s) if s.len() <= EMBSTR_MAX => "embstr",
            Value::Str(_) | Value::Raw(_) | Value::Large(_) => "raw",
            Value::List(l) => l.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
            Value::Stream(_) => "stream",
        }
    }

    /// True for any string encoding.
    pub fn is_string(&self) -> bool {
        matches!(
            self,
            Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Large(_)
        )
    }

    /// Approximate heap bytes owned by the value (INFO, MEMORY USAGE).
    pub fn heap_size(&self) -> usize {
        match self {
            Value::Int(_) => 0,
            Value::Str(s) => s.heap_size(),
            Value::Raw(v) => v.capacity() + 24,
            Value::Large(b) => b.len() + 32,
            Value::List(l) => l.heap_size(),
            // Held inline: only what they point at counts.
            Value::Hash(h) => h.heap_size(),
            Value::Set(s) => s.heap_size(),
            Value::ZSet(z) => z.heap_size(),
            Value::Stream(s) => s.heap_size(),
        }
    }
}

/// A string value's bytes, borrowed or rendered from an integer without
/// allocating.
pub enum StrRef<'a> {
    /// Bytes stored as such.
    Bytes(&'a [u8]),
    /// An int-encoded string.
    Int(i64),
}

impl StrRef<'_> {
    /// Length of the string form.
    pub fn len(&self) -> usize {
        match self {
            StrRef::Bytes(b) => b.len(),
            StrRef::Int(n) => {
                let mut buf = crate::util::num::itoa_buf();
                crate::util::num::fmt_i64(*n, &mut buf).len()
            }
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the string form.
    pub fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            StrRef::Bytes(b) => f(b),
            StrRef::Int(n) => {
                let mut buf = crate::util::num::itoa_buf();
                f(crate::util::num::fmt_i64(*n, &mut buf))
            }
        }
    }

    /// An owned copy of the string form.
    pub fn to_vec(&self) -> Vec<u8> {
        self.with(|b| b.to_vec())
    }
}

impl Value {
    /// The string form, or None when the value is not a string.
    pub fn as_str(&self) -> Option<StrRef<'_>> {
        match self {
            Value::Int(n) => Some(StrRef::Int(*n)),
            Value::Str(s) => Some(StrRef::Bytes(s.as_slice())),
            Value::Raw(v) => Some(StrRef::Bytes(v)),
            Value::Large(b) => Some(StrRef::Bytes(b)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_is_compact() {
        assert!(
            std::mem::size_of::<Value>() <= 32,
            "{}",
            std::mem::size_of::<Value>()
        );
    }

    #[test]
    fn encodings() {
        assert_eq!(Value::string(b"123").encoding(), "int");
        assert_eq!(Value::string(b"0123").encoding(), "embstr");
        assert_eq!(Value::string(&[b'a'; 45]).encoding(), "raw");
    }
}
