//! The commands ACL rules speak of (Redis's `server.orig_commands` with
//! the ids ACLGetCommandID gives them): every command and subcommand Redis
//! 7.0 has, plus ferrokv's own, with their ACL categories. Rules may name
//! commands ferrokv does not implement, and categories count them, so ACL
//! LIST describes a user exactly as Redis does.

use std::collections::HashMap;

use crate::server::spec::{Node, Spec, OWN_COMMANDS};

/// The categories in Redis's order (ACLCommandCategories): ACL CAT lists
/// them so, and the describer tries them so.
pub const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Words of a command bitmap: room for every command id and the reserved
/// last bit.
pub const WORDS: usize = 8;

/// A set of command ids.
pub type Bits = [u64; WORDS];

/// The reserved bit `+@all` sets and nothing else does: the user may run
/// commands added later (Redis's USER_COMMAND_BITS_COUNT-1).
pub const FUTURE_BIT: usize = WORDS * 64 - 1;

/// True when `id` is in `bits`.
#[inline]
pub fn has(bits: &Bits, id: usize) -> bool {
    bits[id / 64] & (1 << (id % 64)) != 0
}

/// Puts `id` in or out of `bits`.
#[inline]
pub fn set(bits: &mut Bits, id: usize, on: bool) {
    if on {
        bits[id / 64] |= 1 << (id % 64);
    } else {
        bits[id / 64] &= !(1 << (id % 64));
    }
}

/// One command as ACL rules see it.
pub struct AclCommand {
    /// Full lowercase name (`client|list`).
    pub name: String,
    /// Category bits (bit i: `CATEGORIES[i]`).
    pub categories: u32,
    /// Subcommand ids, for a container.
    pub subs: Vec<usize>,
    /// The container, for a subcommand.
    pub parent: Option<usize>,
}

/// Every command by id, in a fixed order: top-level commands by name, each
/// followed by its subcommands.
pub struct Universe {
    /// Commands by id.
    pub commands: Vec<AclCommand>,
    by_name: HashMap<String, usize>,
    /// Top-level ids in order.
    pub top: Vec<usize>,
    /// Per category, the commands in it.
    pub in_category: Vec<Bits>,
    /// Per category, the commands in it that Redis has too: ACL LIST fits
    /// categories by these counts, so ferrokv's own commands do not change
    /// how a user is described.
    pub in_redis_category: Vec<Bits>,
}

impl Universe {
    /// Collects the commands of the captured spec.
    pub fn build(spec: &Spec) -> Universe {
        let mut names: Vec<&String> = spec.info.keys().collect();
        names.sort();
        let mut u = Universe {
            commands: Vec::new(),
            by_name: HashMap::new(),
            top: Vec::new(),
            in_category: vec![[0; WORDS]; CATEGORIES.len()],
            in_redis_category: Vec::new(),
        };
        for top in names.iter().filter(|n| !n.contains('|')) {
            let id = u.add(top, &spec.info[*top], None);
            u.top.push(id);
            let prefix = format!("{top}|");
            for sub in names.iter().filter(|n| n.starts_with(&prefix)) {
                let sid = u.add(sub, &spec.info[*sub], Some(id));
                u.commands[id].subs.push(sid);
            }
        }
        assert!(u.commands.len() < FUTURE_BIT, "ACL bitmaps too small");
        u.in_redis_category = u.in_category.clone();
        for name in OWN_COMMANDS {
            if let Some(id) = u.id(name) {
                for bits in &mut u.in_redis_category {
                    set(bits, id, false);
                }
            }
        }
        u
    }

    fn add(&mut self, name: &str, info: &Node, parent: Option<usize>) -> usize {
        let mut categories = 0;
        if let Node::Array(f) = info {
            if let Some(Node::Set(cats) | Node::Array(cats)) = f.get(6) {
                for c in cats {
                    let c = c.as_bytes().unwrap_or_default();
                    let c = c.strip_prefix(b"@").unwrap_or(c);
                    if let Some(i) = CATEGORIES.iter().position(|k| k.as_bytes() == c) {
                        categories |= 1 << i;
                    }
                }
            }
        }
        let id = self.commands.len();
        for (i, bits) in self.in_category.iter_mut().enumerate() {
            if categories & (1 << i) != 0 {
                set(bits, id, true);
            }
        }
        self.commands.push(AclCommand {
            name: name.to_string(),
            categories,
            subs: Vec::new(),
            parent,
        });
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// The id of a full lowercase name.
    pub fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Redis's ACLLookupCommand: `name` or `container|sub`, any case.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
        let mut parts = lower.split('|');
        let base = self.id(parts.next()?)?;
        match (parts.next(), parts.next()) {
            (None, _) => Some(base),
            (Some(sub), None) => {
                if self.commands[base].subs.is_empty() {
                    return None;
                }
                self.id(&format!("{}|{sub}", self.commands[base].name))
            }
            _ => None,
        }
    }

    /// The index of a category name, any case.
    pub fn category(name: &[u8]) -> Option<usize> {
        CATEGORIES
            .iter()
            .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
    }

    /// Ids in the order Redis's recursive walks visit them: each command,
    /// then its subcommands.
    pub fn walk(&self) -> impl Iterator<Item = usize> + '_ {
        self.top
            .iter()
            .flat_map(|&t| std::iter::once(t).chain(self.commands[t].subs.iter().copied()))
    }
}
