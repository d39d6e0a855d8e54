//! THE command table: one entry per implemented command and subcommand, with
//! the facts Redis 7.0 reports for it (arity, flags, key positions) taken
//! from the captured spec. Dispatch, the arity check, the auth check and
//! every COMMAND subcommand read this one table.

use hashbrown::HashMap;

use super::acl::universe::Universe;
use super::keyspec::{self, Finder, KeySpec};

/// The arguments of a command that ACL rules check as channels (Redis's
/// commands_with_channels, without the unsubscribes, which are never
/// refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelArgs {
    /// None.
    None,
    /// Every argument, channels (SUBSCRIBE, SSUBSCRIBE).
    Subscribe,
    /// Every argument, patterns (PSUBSCRIBE).
    PatternSubscribe,
    /// The first argument (PUBLISH, SPUBLISH).
    Publish,
}
use super::spec::{Node, Spec};
use super::Handler;

/// Command flags, as named in COMMAND INFO.
pub mod flag {
    /// May modify the keyspace.
    pub const WRITE: u32 = 1 << 0;
    /// Only reads.
    pub const READONLY: u32 = 1 << 1;
    /// May use more memory.
    pub const DENYOOM: u32 = 1 << 2;
    /// Administrative.
    pub const ADMIN: u32 = 1 << 3;
    /// Pub/sub related.
    pub const PUBSUB: u32 = 1 << 4;
    /// Not allowed in scripts.
    pub const NOSCRIPT: u32 = 1 << 5;
    /// May block the client.
    pub const BLOCKING: u32 = 1 << 6;
    /// Allowed while loading.
    pub const LOADING: u32 = 1 << 7;
    /// Allowed on a stale replica.
    pub const STALE: u32 = 1 << 8;
    /// O(1) or O(log N).
    pub const FAST: u32 = 1 << 9;
    /// Allowed before authentication.
    pub const NO_AUTH: u32 = 1 << 10;
    /// Not allowed inside MULTI.
    pub const NO_MULTI: u32 = 1 << 11;
    /// Allowed while a script runs too long.
    pub const ALLOW_BUSY: u32 = 1 << 12;
    /// Key positions depend on arguments.
    pub const MOVABLEKEYS: u32 = 1 << 13;
    /// Not shown in MONITOR.
    pub const SKIP_MONITOR: u32 = 1 << 14;
    /// Not logged in SLOWLOG.
    pub const SKIP_SLOWLOG: u32 = 1 << 15;
    /// May replicate even when read-only.
    pub const MAY_REPLICATE: u32 = 1 << 16;
    /// Keys are optional.
    pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
    /// Not allowed during async loading.
    pub const NO_ASYNC_LOADING: u32 = 1 << 18;
    /// Refused unless its `enable-*-command` parameter allows the client
    /// (Redis's CMD_PROTECTED, which COMMAND INFO does not list).
    pub const PROTECTED: u32 = 1 << 19;

    /// Maps a COMMAND INFO flag name to its bit (0 when unused here).
    pub fn from_name(name: &[u8]) -> u32 {
        match name {
            b"write" => WRITE,
            b"readonly" => READONLY,
            b"denyoom" => DENYOOM,
            b"admin" => ADMIN,
            b"pubsub" => PUBSUB,
            b"noscript" => NOSCRIPT,
            b"blocking" => BLOCKING,
            b"loading" => LOADING,
            b"stale" => STALE,
            b"fast" => FAST,
            b"no_auth" => NO_AUTH,
            b"no_multi" => NO_MULTI,
            b"allow_busy" => ALLOW_BUSY,
            b"movablekeys" => MOVABLEKEYS,
            b"skip_monitor" => SKIP_MONITOR,
            b"skip_slowlog" => SKIP_SLOWLOG,
            b"may_replicate" => MAY_REPLICATE,
            b"no_mandatory_keys" => NO_MANDATORY_KEYS,
            b"no_async_loading" => NO_ASYNC_LOADING,
            _ => 0,
        }
    }
}

/// The parameter that allows a protected command (`no`, `yes` or `local`),
/// as `enable-debug-command` allows DEBUG in Redis.
pub fn protected_by(name: &str) -> Option<&'static str> {
    match name {
        "clock" => Some("enable-clock-command"),
        "debug" => Some("enable-debug-command"),
        "module|load" | "module|loadex" | "module|unload" => Some("enable-module-command"),
        _ => None,
    }
}

/// Index of a command in the table.
pub type CommandId = usize;

/// One implemented command or subcommand.
pub struct Command {
    /// Full lowercase name (`get`, `client|list`).
    pub name: String,
    /// Redis arity: exact count when positive, minimum when negative.
    pub arity: i32,
    /// Bits from [`flag`].
    pub flags: u32,
    /// First key argument (0: none).
    pub first_key: i32,
    /// Last key argument (-1: last argument).
    pub last_key: i32,
    /// Step between keys.
    pub key_step: i32,
    /// The implementation; None for containers such as `client`.
    pub handler: Option<Handler>,
    /// Subcommands by lowercase name.
    pub subcommands: HashMap<Vec<u8>, CommandId>,
    /// The container of a subcommand.
    pub parent: Option<CommandId>,
    /// Where its keys are (COMMAND INFO's key specs, compiled).
    pub key_specs: Vec<KeySpec>,
    /// How its keys are found.
    pub key_finder: Finder,
    /// Its only key's position and flags, when that is all its specs say
    /// ([`keyspec::single_key`]).
    pub single_key: Option<(usize, u16)>,
    /// It names keys (Redis's doesCommandHaveKeys).
    pub has_keys: bool,
    /// Which of its arguments are pub/sub channels, for ACL checks.
    pub channels: ChannelArgs,
    /// Its bit in ACL command bitmaps (its index in the ACL universe).
    pub acl_id: usize,
    /// Number of calls (INFO commandstats).
    pub calls: u64,
    /// Microseconds spent (INFO commandstats).
    pub usec: u64,
    /// Calls refused before running (INFO commandstats).
    pub rejected_calls: u64,
    /// Calls that replied with an error (INFO commandstats).
    pub failed_calls: u64,
    /// Its durations (`latency-tracking`), from its first call on.
    pub latency: Option<Box<super::latency::Histogram>>,
}

impl Command {
    /// True when the flag bit is set.
    #[inline]
    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// True when `argc` (name included) satisfies the arity.
    #[inline]
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let a = i64::from(self.arity);
        (a > 0 && argc == a) || (a < 0 && argc >= -a)
    }

    /// Positions of the keys in an argument vector of length `argc`, by the
    /// first/last/step rule.
    pub fn key_positions(&self, argc: usize) -> Vec<usize> {
        if self.first_key <= 0 {
            return Vec::new();
        }
        let last = if self.last_key < 0 {
            argc as i32 + self.last_key
        } else {
            self.last_key
        };
        let step = self.key_step.max(1);
        let mut v = Vec::new();
        let mut i = self.first_key;
        while i <= last && (i as usize) < argc {
            v.push(i as usize);
            i += step;
        }
        v
    }
}

/// All implemented commands.
pub struct CommandTable {
    /// Commands by id.
    pub commands: Vec<Command>,
    top: HashMap<Vec<u8>, CommandId>,
    /// Top-level commands `rename-command` removed (renamed to ""): no
    /// name reaches them, and COMMAND no longer lists them.
    removed: Vec<CommandId>,
    /// The captured Redis facts, for COMMAND INFO/DOCS.
    pub spec: Spec,
    /// Every command Redis 7.0 has (and ferrokv's own), which ACL rules
    /// name and count, implemented or not.
    pub universe: Universe,
}

impl CommandTable {
    /// Builds the table from the handlers every family exports
    /// (`cmd::FAMILIES`).
    pub fn build(families: &[&[(&str, Handler)]]) -> CommandTable {
        let spec = Spec::load();
        let universe = Universe::build(&spec);
        let mut t = CommandTable {
            commands: Vec::new(),
            top: HashMap::new(),
            removed: Vec::new(),
            spec,
            universe,
        };
        for family in families {
            for &(name, handler) in *family {
                t.add(name, handler);
            }
        }
        t
    }

    fn entry(&mut self, name: &str, handler: Option<Handler>) -> CommandId {
        let info = self.spec.info.get(name);
        let field = |i: usize| match info {
            Some(Node::Array(f)) => f.get(i).cloned(),
            _ => None,
        };
        let int = |i: usize| field(i).and_then(|n| n.as_int()).unwrap_or(0) as i32;
        let mut flags = 0;
        if let Some(Node::Set(fl)) = field(2) {
            for f in fl {
                flags |= flag::from_name(f.as_bytes().unwrap_or_default());
            }
        }
        // Redis 7.0 flags these may-replicate without listing the flag in
        // COMMAND INFO: read-only scripts may not call them, CLIENT PAUSE
        // WRITE holds them (found by trying each on redis-server).
        if matches!(
            name,
            "publish" | "spublish" | "pfcount" | "eval" | "evalsha" | "fcall"
        ) {
            flags |= flag::MAY_REPLICATE;
        }
        if protected_by(name).is_some() {
            flags |= flag::PROTECTED;
        }
        let key_specs = match field(8) {
            Some(Node::Set(specs) | Node::Array(specs)) => keyspec::compile(&specs),
            _ => Vec::new(),
        };
        let acl_id = self.universe.id(name);
        // invariant: the universe is built from the same spec rows.
        let acl_id = acl_id.expect("every spec row is in the ACL universe");
        let id = self.commands.len();
        self.commands.push(Command {
            name: name.to_string(),
            arity: int(1),
            flags,
            first_key: int(3),
            last_key: int(4),
            key_step: int(5),
            handler,
            subcommands: HashMap::new(),
            parent: None,
            has_keys: keyspec::has_keys(&key_specs),
            single_key: keyspec::single_key(Finder::of(name), &key_specs),
            key_specs,
            key_finder: Finder::of(name),
            channels: match name {
                "subscribe" | "ssubscribe" => ChannelArgs::Subscribe,
                "psubscribe" => ChannelArgs::PatternSubscribe,
                "publish" | "spublish" => ChannelArgs::Publish,
                _ => ChannelArgs::None,
            },
            acl_id,
            calls: 0,
            usec: 0,
            rejected_calls: 0,
            failed_calls: 0,
            latency: None,
        });
        id
    }

    fn add(&mut self, name: &str, handler: Handler) {
        assert!(
            self.spec.info.contains_key(name),
            "command {name} has no spec entry"
        );
        match name.split_once('|') {
            None => {
                let id = self.entry(name, Some(handler));
                self.top.insert(name.as_bytes().to_vec(), id);
            }
            Some((parent, sub)) => {
                let pid = match self.top.get(parent.as_bytes()) {
                    Some(&id) => id,
                    None => {
                        let id = self.entry(parent, None);
                        self.top.insert(parent.as_bytes().to_vec(), id);
                        id
                    }
                };
                let id = self.entry(name, Some(handler));
                self.commands[id].parent = Some(pid);
                self.commands[pid]
                    .subcommands
                    .insert(sub.as_bytes().to_vec(), id);
            }
        }
    }

    /// Applies `rename-command` lines in order, as Redis's config loader
    /// edits its command dictionary: the command answers to the new name
    /// only, or to none when the new name is empty. ACL rules, COMMAND
    /// INFO's names and propagation keep the original name, as in Redis.
    /// On failure, the index of the line that failed and Redis's reason.
    pub fn apply_renames(
        &mut self,
        renames: &[crate::config::RenameCommand],
    ) -> Result<(), (usize, &'static str)> {
        for (i, r) in renames.iter().enumerate() {
            let from = r.from.to_ascii_lowercase();
            let Some(id) = self.top.remove(&from) else {
                return Err((i, "No such command in rename-command"));
            };
            if r.to.is_empty() {
                self.removed.push(id);
                continue;
            }
            let to = r.to.to_ascii_lowercase();
            if self.top.contains_key(&to) {
                // Redis has already deleted the old name when it finds the
                // new one taken.
                self.removed.push(id);
                return Err((i, "Target command name already exists"));
            }
            self.top.insert(to, id);
        }
        Ok(())
    }

    /// Looks a top-level command up by name, case-insensitively.
    pub fn lookup(&self, name: &[u8]) -> Option<CommandId> {
        let mut buf = [0u8; 32];
        if name.len() > buf.len() {
            // Only a renamed command can have a name this long.
            return self.top.get(&name.to_ascii_lowercase()).copied();
        }
        let lower = &mut buf[..name.len()];
        lower.copy_from_slice(name);
        lower.make_ascii_lowercase();
        self.top.get(&lower[..]).copied()
    }

    /// Looks a subcommand of `parent` up by name, case-insensitively.
    pub fn lookup_sub(&self, parent: CommandId, name: &[u8]) -> Option<CommandId> {
        let lower = name.to_ascii_lowercase();
        self.commands[parent].subcommands.get(&lower).copied()
    }

    /// Resolves `argv[0]` (and `argv[1]` for containers) to a command id.
    pub fn resolve(&self, name: &[u8], sub: Option<&[u8]>) -> Option<CommandId> {
        let id = self.lookup(name)?;
        match sub {
            Some(s) if !self.commands[id].subcommands.is_empty() => self.lookup_sub(id, s),
            _ => Some(id),
        }
    }

    /// Ids of the top-level commands, in table order.
    pub fn top_level(&self) -> impl Iterator<Item = CommandId> + '_ {
        (0..self.commands.len())
            .filter(|&i| self.commands[i].parent.is_none() && !self.removed.contains(&i))
    }

    /// The COMMAND INFO entry of `id`, with only implemented subcommands.
    pub fn info_node(&self, id: CommandId) -> Node {
        let cmd = &self.commands[id];
        let mut node = self.spec.info.get(&cmd.name).cloned().unwrap_or(Node::Null);
        if let Node::Array(fields) = &mut node {
            if let Some(Node::Array(subs)) = fields.get_mut(9) {
                subs.retain(|s| match s {
                    Node::Array(f) => f
                        .first()
                        .and_then(Node::as_bytes)
                        .and_then(|n| std::str::from_utf8(n).ok())
                        .and_then(|n| n.split_once('|'))
                        .is_some_and(|(_, sub)| cmd.subcommands.contains_key(sub.as_bytes())),
                    _ => false,
                });
            }
        }
        node
    }

    /// The COMMAND DOCS entry of `id`, with only implemented subcommands.
    pub fn docs_node(&self, id: CommandId) -> Node {
        let cmd = &self.commands[id];
        let mut node = self
            .spec
            .docs
            .get(&cmd.name)
            .cloned()
            .unwrap_or(Node::Map(Vec::new()));
        if let Node::Map(pairs) = &mut node {
            for (k, v) in pairs.iter_mut() {
                if k.as_bytes() == Some(b"subcommands") {
                    if let Node::Map(subs) = v {
                        subs.retain(|(name, _)| {
                            name.as_bytes()
                                .and_then(|n| std::str::from_utf8(n).ok())
                                .and_then(|n| n.split_once('|'))
                                .is_some_and(|(_, sub)| {
                                    cmd.subcommands.contains_key(sub.as_bytes())
                                })
                        });
                    }
                }
            }
        }
        node
    }
}
