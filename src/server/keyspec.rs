//! Key specifications (Redis's `keySpec` and `getKeysFromCommandWithSpecs`
//! in db.c): where a command's keys are in its arguments and how it
//! touches them. The captured COMMAND INFO trees are compiled once, when
//! the table is built, so ACL checks find keys without walking trees;
//! COMMAND GETKEYS answers from the same code.

use super::spec::Node;
use crate::util::num::parse_i64;

/// Key flags, as COMMAND INFO names them.
pub mod key {
    /// Read-only access.
    pub const RO: u16 = 1 << 0;
    /// Read and write.
    pub const RW: u16 = 1 << 1;
    /// Overwrite.
    pub const OW: u16 = 1 << 2;
    /// Removal.
    pub const RM: u16 = 1 << 3;
    /// Returns, copies or uses the value.
    pub const ACCESS: u16 = 1 << 4;
    /// Updates the value.
    pub const UPDATE: u16 = 1 << 5;
    /// Adds data.
    pub const INSERT: u16 = 1 << 6;
    /// Deletes data.
    pub const DELETE: u16 = 1 << 7;
    /// Not a key (a channel, a shard hint).
    pub const NOT_KEY: u16 = 1 << 8;
    /// The spec may miss keys.
    pub const INCOMPLETE: u16 = 1 << 9;
    /// The flags depend on the arguments.
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    /// The names in Redis's order (addReplyFlagsForKeyArgs).
    pub const NAMES: [(u16, &str); 11] = [
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];

    /// The bit of a flag name (0 when unknown).
    pub fn from_name(name: &[u8]) -> u16 {
        NAMES
            .iter()
            .find(|(_, n)| n.as_bytes() == name)
            .map_or(0, |(b, _)| *b)
    }
}

/// Where the search for a spec's keys begins.
#[derive(Clone, Debug)]
enum Begin {
    /// At a fixed argument.
    Index(i64),
    /// After a keyword, searched from `start_from` (backwards when
    /// negative).
    Keyword { keyword: Vec<u8>, start_from: i64 },
    /// Only the command's own getkeys function knows.
    Unknown,
}

/// How many keys follow the beginning.
#[derive(Clone, Debug)]
enum Find {
    /// A range: the last key relative to the first (negative: from the
    /// end), a step, and a divisor of the remaining arguments.
    Range {
        last_key: i64,
        key_step: i64,
        limit: i64,
    },
    /// A count argument, then the keys.
    KeyNum {
        keynum_idx: i64,
        first_key: i64,
        key_step: i64,
    },
    /// Only the command's own getkeys function knows.
    Unknown,
}

/// One compiled key spec.
#[derive(Clone, Debug)]
pub struct KeySpec {
    /// Bits from [`key`].
    pub flags: u16,
    begin: Begin,
    find: Find,
}

/// One key found in an argument vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRef {
    /// Its position (argv[0] is the command name).
    pub pos: usize,
    /// Bits from [`key`].
    pub flags: u16,
}

/// Arguments as the key finder reads them.
pub trait Args {
    /// Number of arguments, the name included.
    fn count(&self) -> usize;
    /// Argument `i`.
    fn arg(&self, i: usize) -> &[u8];
}

impl Args for [&[u8]] {
    fn count(&self) -> usize {
        self.len()
    }
    fn arg(&self, i: usize) -> &[u8] {
        self[i]
    }
}

impl Args for crate::net::request::Argv<'_> {
    fn count(&self) -> usize {
        self.len()
    }
    fn arg(&self, i: usize) -> &[u8] {
        self.get(i)
    }
}

fn int_at(node: Option<&Node>, key: &[u8]) -> Option<i64> {
    node?.get(key)?.as_int()
}

/// Compiles COMMAND INFO's key specs (field 8).
pub fn compile(specs: &[Node]) -> Vec<KeySpec> {
    specs.iter().map(compile_one).collect()
}

fn compile_one(spec: &Node) -> KeySpec {
    let mut flags = 0;
    if let Some(Node::Set(fl) | Node::Array(fl)) = spec.get(b"flags") {
        for f in fl {
            flags |= key::from_name(f.as_bytes().unwrap_or_default());
        }
    }
    let bs = spec.get(b"begin_search");
    let bs_spec = bs.and_then(|b| b.get(b"spec"));
    let begin = match bs.and_then(|b| b.get(b"type")).and_then(Node::as_bytes) {
        Some(b"index") => Begin::Index(int_at(bs_spec, b"index").unwrap_or(0)),
        Some(b"keyword") => Begin::Keyword {
            keyword: bs_spec
                .and_then(|s| s.get(b"keyword"))
                .and_then(Node::as_bytes)
                .unwrap_or_default()
                .to_vec(),
            start_from: int_at(bs_spec, b"startfrom").unwrap_or(1),
        },
        _ => Begin::Unknown,
    };
    let fk = spec.get(b"find_keys");
    let fk_spec = fk.and_then(|f| f.get(b"spec"));
    let find = match fk.and_then(|f| f.get(b"type")).and_then(Node::as_bytes) {
        Some(b"range") => Find::Range {
            last_key: int_at(fk_spec, b"lastkey").unwrap_or(0),
            key_step: int_at(fk_spec, b"keystep").unwrap_or(1),
            limit: int_at(fk_spec, b"limit").unwrap_or(0),
        },
        Some(b"keynum") => Find::KeyNum {
            keynum_idx: int_at(fk_spec, b"keynumidx").unwrap_or(0),
            first_key: int_at(fk_spec, b"firstkey").unwrap_or(1),
            key_step: int_at(fk_spec, b"keystep").unwrap_or(1),
        },
        _ => Find::Unknown,
    };
    KeySpec { flags, begin, find }
}

/// How a command's keys are found: its specs, or for the commands whose
/// key flags depend on their arguments or whose specs cannot find every
/// key, their own getkeys function (Redis's setGetKeys, bitfieldGetKeys,
/// sortGetKeys, sortROGetKeys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finder {
    /// getKeysUsingKeySpecs.
    Specs,
    /// SET: a read too with GET.
    Set,
    /// BITFIELD: read-only without SET/INCRBY.
    Bitfield,
    /// SORT: the STORE target.
    Sort,
    /// SORT_RO.
    SortRo,
    /// MIGRATE: the key, or the keys after KEYS.
    Migrate,
    /// XREAD and XREADGROUP: the specs, except where Redis calls the
    /// command's own getkeys function (see [`find_keys_by_proc`]).
    Xread,
    /// A count of keys before them (SINTERCARD, ZUNION, EVAL, LMPOP...):
    /// the specs, except where Redis calls its genericGetKeys, which reads
    /// the count with atoi (see [`find_keys_by_proc`]). The positions of
    /// the destination (0: none), the count and the first key.
    NumKeys(u8, u8, u8),
}

impl Finder {
    /// The finder of a command by its full name.
    pub fn of(name: &str) -> Finder {
        match name {
            "set" => Finder::Set,
            "bitfield" => Finder::Bitfield,
            "sort" => Finder::Sort,
            "sort_ro" => Finder::SortRo,
            "migrate" => Finder::Migrate,
            "xread" | "xreadgroup" => Finder::Xread,
            "sintercard" | "zintercard" | "zunion" | "zinter" | "zdiff" | "lmpop" | "zmpop" => {
                Finder::NumKeys(0, 1, 2)
            }
            "zunionstore" | "zinterstore" | "zdiffstore" => Finder::NumKeys(1, 2, 3),
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop"
            | "bzmpop" => Finder::NumKeys(0, 2, 3),
            _ => Finder::Specs,
        }
    }
}

/// The one key of a command whose only key spec is a fixed position
/// (GET, INCR, HSET...), with its flags: found without following the
/// specs. None for every other command.
pub fn single_key(finder: Finder, specs: &[KeySpec]) -> Option<(usize, u16)> {
    let mut keys = specs.iter().filter(|s| s.flags & key::NOT_KEY == 0);
    let (spec, None) = (keys.next()?, keys.next()) else {
        return None;
    };
    match (finder, &spec.begin, &spec.find) {
        (Finder::Specs, Begin::Index(i), Find::Range { last_key: 0, .. })
            if *i > 0 && spec.flags & key::INCOMPLETE == 0 =>
        {
            Some((*i as usize, spec.flags))
        }
        _ => None,
    }
}

/// SET's key flags (setGetKeys): a read as well with GET.
pub fn set_flags<A: Args + ?Sized>(argv: &A) -> u16 {
    if (3..argv.count()).any(|i| argv.arg(i).eq_ignore_ascii_case(b"get")) {
        key::RW | key::ACCESS | key::UPDATE
    } else {
        key::OW | key::UPDATE
    }
}

/// True when some spec names real keys (Redis's doesCommandHaveKeys).
pub fn has_keys(specs: &[KeySpec]) -> bool {
    specs.iter().any(|s| s.flags & key::NOT_KEY == 0)
}

/// The keys of a command's arguments with their flags, appended to `out`
/// (cleared first): the command's getkeys function for the commands whose
/// flags depend on their arguments or whose specs cannot find every key
/// (SET, BITFIELD, SORT), else Redis's getKeysUsingKeySpecs. Arguments
/// that do not fit the specs give no keys, as in Redis, where the command
/// then fails on its syntax.
pub fn find_keys<A: Args + ?Sized>(
    finder: Finder,
    specs: &[KeySpec],
    argv: &A,
    out: &mut Vec<KeyRef>,
) {
    out.clear();
    let argc = argv.count();
    let is = |i: usize, word: &str| argv.arg(i).eq_ignore_ascii_case(word.as_bytes());
    match finder {
        Finder::Set => {
            out.push(KeyRef {
                pos: 1,
                flags: set_flags(argv),
            });
            return;
        }
        Finder::Bitfield => {
            let mut readonly = true;
            let mut i = 2;
            while i < argc {
                let rem = argc - i - 1;
                if is(i, "get") && rem >= 2 {
                    i += 3;
                } else if is(i, "overflow") && rem >= 1 {
                    i += 2;
                } else {
                    // SET/INCRBY, or a syntax error: assume a write.
                    readonly = false;
                    break;
                }
            }
            let flags = if readonly {
                key::RO | key::ACCESS
            } else {
                key::RW | key::ACCESS | key::UPDATE
            };
            out.push(KeyRef { pos: 1, flags });
            return;
        }
        // Redis's sortGetKeys: the key, then the last STORE's target,
        // skipping the arguments of LIMIT, GET and BY.
        Finder::Sort | Finder::SortRo => {
            out.push(KeyRef {
                pos: 1,
                flags: key::RO | key::ACCESS,
            });
            let mut store = None;
            let mut i = 2;
            while i < argc {
                if is(i, "limit") {
                    i += 2;
                } else if is(i, "get") || is(i, "by") {
                    i += 1;
                } else if finder == Finder::Sort && is(i, "store") && i + 1 < argc {
                    store = Some(i + 1);
                }
                i += 1;
            }
            if let Some(pos) = store {
                out.push(KeyRef {
                    pos,
                    flags: key::OW | key::UPDATE,
                });
            }
            return;
        }
        // The specs first; when the incomplete KEYS spec matched, Redis's
        // migrateGetKeys: the key argument, or every argument after KEYS
        // (skipping AUTH's and AUTH2's values) when the key argument is
        // empty.
        Finder::Migrate => {
            if from_specs(specs, argv, out) {
                return;
            }
            out.clear();
            let (mut first, mut num) = (3, 1);
            let mut i = 6;
            while argc > 6 && i < argc {
                if is(i, "keys") {
                    if argv.arg(3).is_empty() {
                        first = i + 1;
                        num = argc - first;
                    } else {
                        num = 0;
                    }
                    break;
                }
                i += if is(i, "auth") {
                    2
                } else if is(i, "auth2") {
                    3
                } else {
                    1
                };
            }
            out.extend((first..first + num).map(|pos| KeyRef {
                pos,
                flags: key::RW | key::ACCESS | key::DELETE,
            }));
            return;
        }
        Finder::Specs | Finder::Xread | Finder::NumKeys(..) => {}
    }
    if !from_specs(specs, argv, out) {
        out.clear();
    }
}

/// The keys as Redis's getKeysFromCommand finds them, for client tracking
/// and cluster routing: a command's own getkeys function where it has one.
/// COMMAND GETKEYS and ACL follow the specs instead ([`find_keys`]); the
/// two differ for XREAD and XREADGROUP, whose xreadGetKeys finds no key
/// when an option before STREAMS is unknown or the names and IDs after it
/// are an odd number.
pub fn find_keys_by_proc<A: Args + ?Sized>(
    finder: Finder,
    specs: &[KeySpec],
    argv: &A,
    out: &mut Vec<KeyRef>,
) {
    match finder {
        Finder::Xread => {
            find_keys(finder, specs, argv, out);
            if !xread_args_hold_keys(argv) {
                out.clear();
            }
        }
        Finder::NumKeys(store, count, first) => {
            out.clear();
            let (store, count, first) = (store as usize, count as usize, first as usize);
            let argc = argv.count();
            if count >= argc {
                return;
            }
            // Redis's genericGetKeys: no key unless the count is at least 1
            // and that many arguments follow.
            // C's atoi then the cast to int: a count past i64 reads 0 here,
            // -1 there, no key either way.
            let num = crate::util::num::atoi(&String::from_utf8_lossy(argv.arg(count))) as i32;
            if num < 1 || num as usize > argc.saturating_sub(first) {
                return;
            }
            let flags = key::RO | key::ACCESS;
            out.extend((first..first + num as usize).map(|pos| KeyRef { pos, flags }));
            if store > 0 {
                out.push(KeyRef {
                    pos: store,
                    flags: key::OW | key::UPDATE,
                });
            }
        }
        _ => find_keys(finder, specs, argv, out),
    }
}

/// Redis's xreadGetKeys check: STREAMS is reached past known options only
/// (BLOCK and COUNT with a value, GROUP with two, NOACK), and an even,
/// non-zero number of arguments follows it.
fn xread_args_hold_keys<A: Args + ?Sized>(argv: &A) -> bool {
    let argc = argv.count();
    let is = |i: usize, word: &str| argv.arg(i).eq_ignore_ascii_case(word.as_bytes());
    let mut i = 1;
    while i < argc {
        if is(i, "block") || is(i, "count") {
            i += 2;
        } else if is(i, "group") {
            i += 3;
        } else if is(i, "noack") {
            i += 1;
        } else if is(i, "streams") {
            let after = argc - i - 1;
            return after > 0 && after % 2 == 0;
        } else {
            return false;
        }
    }
    false
}

/// Redis's getKeysUsingKeySpecs; false when a spec cannot be followed.
fn from_specs<A: Args + ?Sized>(specs: &[KeySpec], argv: &A, out: &mut Vec<KeyRef>) -> bool {
    let argc = argv.count() as i64;
    for spec in specs {
        if spec.flags & key::NOT_KEY != 0 {
            continue;
        }
        let first = match &spec.begin {
            Begin::Index(i) => *i,
            Begin::Keyword {
                keyword,
                start_from,
            } => {
                let (start, end) = if *start_from > 0 {
                    (*start_from, argc - 1)
                } else {
                    (argc + start_from, 1)
                };
                // As Redis scans: from `start` towards `end`, exclusive.
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if argv.arg(i as usize).eq_ignore_ascii_case(keyword) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            Begin::Unknown => return false,
        };
        let (first, last, step) = match spec.find {
            Find::Range {
                last_key,
                key_step,
                limit,
            } => {
                let last = if last_key >= 0 {
                    first + last_key
                } else if limit == 0 {
                    argc + last_key
                } else {
                    first + ((argc - first) / limit + last_key)
                };
                (first, last, key_step)
            }
            Find::KeyNum {
                keynum_idx,
                first_key,
                key_step,
            } => {
                let idx = first + keynum_idx;
                if idx < 0 || idx >= argc {
                    return false;
                }
                let Some(numkeys) = parse_i64(argv.arg(idx as usize)).filter(|&n| n >= 0) else {
                    return false;
                };
                let first = first + first_key;
                (first, first.saturating_add(numkeys - 1), key_step)
            }
            Find::Unknown => return false,
        };
        if last >= argc || last < first || first >= argc {
            return false;
        }
        let mut i = first;
        while i <= last {
            out.push(KeyRef {
                pos: i as usize,
                flags: spec.flags,
            });
            i += step.max(1);
        }
        if spec.flags & key::INCOMPLETE != 0 {
            return false;
        }
    }
    true
}
