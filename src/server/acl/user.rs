//! ACL users and selectors (Redis's acl.c `user`, `aclSelector`,
//! ACLSetUser, ACLSetSelector and ACLDescribeUser): the rules that build
//! them and the description that writes them back, in the exact words of
//! ACL LIST.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::universe::{self, Bits, Universe, CATEGORIES, FUTURE_BIT, WORDS};

/// A key pattern may be read.
pub const READ: u8 = 1;
/// A key pattern may be written.
pub const WRITE: u8 = 2;

/// Why a rule was refused (Redis's errno values in ACLSetUser).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// EINVAL.
    Syntax,
    /// ENOENT.
    UnknownCommand,
    /// EEXIST.
    KeyAfterAll,
    /// EISDIR.
    ChannelAfterAll,
    /// ENODEV.
    NoSuchPassword,
    /// EBADMSG.
    BadHash,
    /// ECHILD.
    FirstArgOfSubcommand,
    /// EALREADY (config files only).
    Duplicate,
}

impl RuleError {
    /// Redis's ACLSetUserStringError.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and \
                 does not have any effect. Try 'resetchannels' to start with an empty list of \
                 channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::Duplicate => {
                "Duplicate user found. A user can only be defined once in config files"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

/// A key pattern with the access it grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    /// [`READ`], [`WRITE`] or both.
    pub flags: u8,
    /// A glob pattern.
    pub pattern: Vec<u8>,
}

/// One set of permissions; a user may run a command when any of its
/// selectors allows it.
#[derive(Clone, Debug)]
pub struct Selector {
    /// The user's own permissions, outside parentheses.
    pub root: bool,
    /// `allkeys`.
    pub all_keys: bool,
    /// `allchannels`.
    pub all_channels: bool,
    /// `allcommands` (cleared by any `-` rule).
    pub all_commands: bool,
    /// Allowed command ids, and [`FUTURE_BIT`].
    pub allowed: Bits,
    /// First arguments allowed for commands otherwise denied
    /// (`+select|0`), by command id.
    pub first_args: HashMap<usize, Vec<Vec<u8>>>,
    /// Key patterns.
    pub patterns: Vec<KeyPattern>,
    /// Channel patterns.
    pub channels: Vec<Vec<u8>>,
}

impl Selector {
    /// An empty selector: nothing allowed (but channels, when
    /// `acl-pubsub-default` is `allchannels`).
    pub fn new(root: bool, all_channels: bool) -> Selector {
        Selector {
            root,
            all_keys: false,
            all_channels,
            all_commands: false,
            allowed: [0; WORDS],
            first_args: HashMap::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Allows or denies a command and its subcommands
    /// (ACLChangeSelectorPerm).
    fn change(&mut self, u: &Universe, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.first_args.remove(&id);
        for &sub in &u.commands[id].subs {
            self.set_bit(sub, allow);
        }
    }

    fn set_bit(&mut self, id: usize, allow: bool) {
        universe::set(&mut self.allowed, id, allow);
        if !allow {
            self.all_commands = false;
        }
    }

    /// Applies a category to every command in it, containers with their
    /// subcommands (ACLSetSelectorCommandBitsForCategory).
    fn change_category(&mut self, u: &Universe, cat: usize, allow: bool) {
        for id in u.walk() {
            if u.commands[id].categories & (1 << cat) != 0 {
                self.change(u, id, allow);
            }
        }
    }

    fn set_all(&mut self, allow: bool) {
        self.allowed = [if allow { u64::MAX } else { 0 }; WORDS];
        self.all_commands = allow;
        self.first_args.clear();
    }

    /// Applies one selector rule (ACLSetSelector).
    pub fn apply(&mut self, u: &Universe, op: &[u8]) -> Result<(), RuleError> {
        let word = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if word("allkeys") || word("~*") {
            self.all_keys = true;
            self.patterns.clear();
        } else if word("resetkeys") {
            self.all_keys = false;
            self.patterns.clear();
        } else if word("allchannels") || word("&*") {
            self.all_channels = true;
            self.channels.clear();
        } else if word("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if word("allcommands") || word("+@all") {
            self.set_all(true);
        } else if word("nocommands") || word("-@all") {
            self.set_all(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            self.add_key_pattern(op)?;
        } else if op[0] == b'&' {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAll);
            }
            let pat = &op[1..];
            if has_spaces(pat) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pat) {
                self.channels.push(pat.to_vec());
            }
            self.all_channels = false;
        } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
            self.allow_command(u, &op[1..])?;
        } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
            let id = u.lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
            self.change(u, id, false);
        } else if (op[0] == b'+' || op[0] == b'-') && op.get(1) == Some(&b'@') {
            let cat = Universe::category(&op[2..]).ok_or(RuleError::UnknownCommand)?;
            self.change_category(u, cat, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        let mut flags = 0;
        let mut offset = 1;
        if op[0] == b'%' {
            while offset < op.len() {
                let c = op[offset].to_ascii_uppercase();
                if c == b'R' && flags & READ == 0 {
                    flags |= READ;
                } else if c == b'W' && flags & WRITE == 0 {
                    flags |= WRITE;
                } else if op[offset] == b'~' {
                    offset += 1;
                    break;
                } else {
                    return Err(RuleError::Syntax);
                }
                offset += 1;
            }
        } else {
            flags = READ | WRITE;
        }
        let pat = &op[offset..];
        // Redis accepts `%` without a pattern or access and then cannot
        // describe the user; refusing it keeps ACL LIST working.
        if has_spaces(pat) || flags == 0 {
            return Err(RuleError::Syntax);
        }
        match self.patterns.iter_mut().find(|p| p.pattern == pat) {
            Some(p) => p.flags |= flags,
            None => self.patterns.push(KeyPattern {
                flags,
                pattern: pat.to_vec(),
            }),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `+command`, `+container|sub`, `+command|first-arg`.
    fn allow_command(&mut self, u: &Universe, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let id = u.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change(u, id, true);
            return Ok(());
        };
        let (base, sub) = (&name[..bar], &name[bar + 1..]);
        let id = u.lookup(base).ok_or(RuleError::UnknownCommand)?;
        if u.commands[id].parent.is_some() {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !u.commands[id].subs.is_empty() {
            let sub_id = u.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change(u, sub_id, true);
        } else {
            tracing::warn!(
                "Deprecation warning: Allowing a first arg of an otherwise blocked command is a \
                 misuse of ACL and may get disabled in the future (offender: +{})",
                String::from_utf8_lossy(name)
            );
            let list = self.first_args.entry(id).or_default();
            if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                list.push(sub.to_vec());
            }
        }
        Ok(())
    }

    /// The command rules that rebuild this selector's bitmap, starting
    /// from `+@all` or `-@all` and fitting categories before single
    /// commands (ACLDescribeSelectorCommandRules).
    pub fn describe_commands(&self, u: &Universe) -> String {
        let additive = !universe::has(&self.allowed, FUTURE_BIT);
        let mut rules = String::new();
        let mut fake = Selector::new(false, false);
        fake.set_all(!additive);
        rules.push_str(if additive { "-@all " } else { "+@all " });
        // Categories are fitted against what is left to explain.
        let mut temp = Selector::new(false, false);
        temp.allowed = self.allowed;
        let mut applied = [false; CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (u32::MAX, 0);
            for (j, cat_bits) in u.in_redis_category.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (mut on, mut off) = (0, 0);
                for w in 0..WORDS {
                    on += (temp.allowed[w] & cat_bits[w]).count_ones();
                    off += (!temp.allowed[w] & cat_bits[w]).count_ones();
                }
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(j);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(best) = best else { break };
            fake.change_category(u, best, additive);
            temp.change_category(u, best, !additive);
            rules.push(if additive { '+' } else { '-' });
            rules.push('@');
            rules.push_str(CATEGORIES[best]);
            rules.push(' ');
            applied[best] = true;
        }
        // Then the single commands that still differ.
        for &top in &u.top {
            for id in std::iter::once(top).chain(u.commands[top].subs.iter().copied()) {
                let mine = universe::has(&self.allowed, id);
                if mine != universe::has(&fake.allowed, id) {
                    rules.push(if mine { '+' } else { '-' });
                    rules.push_str(&u.commands[id].name);
                    rules.push(' ');
                    fake.change(u, id, mine);
                }
            }
            if !universe::has(&self.allowed, top) {
                for arg in self.first_args.get(&top).into_iter().flatten() {
                    rules.push('+');
                    rules.push_str(&u.commands[top].name);
                    rules.push('|');
                    rules.push_str(&String::from_utf8_lossy(arg));
                    rules.push(' ');
                }
            }
        }
        rules.pop();
        rules
    }

    /// Key patterns as ACL LIST and GETUSER write them.
    pub fn describe_keys(&self, sep: &str) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let parts: Vec<String> = self.patterns.iter().map(pattern_string).collect();
        parts.join(sep)
    }

    /// Channel patterns as GETUSER writes them.
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let parts: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        parts.join(" ")
    }

    /// The whole selector in rule form (ACLDescribeSelector).
    pub fn describe(&self, u: &Universe) -> String {
        let mut s = String::new();
        if self.all_keys {
            s.push_str("~* ");
        } else {
            for p in &self.patterns {
                s.push_str(&pattern_string(p));
                s.push(' ');
            }
        }
        if self.all_channels {
            s.push_str("&* ");
        } else {
            s.push_str("resetchannels ");
            for c in &self.channels {
                s.push('&');
                s.push_str(&String::from_utf8_lossy(c));
                s.push(' ');
            }
        }
        s.push_str(&self.describe_commands(u));
        s
    }
}

fn pattern_string(p: &KeyPattern) -> String {
    let prefix = match p.flags {
        READ => "%R~",
        WRITE => "%W~",
        _ => "~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
}

/// Redis's ACLStringHasSpaces: whitespace or NUL.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}

/// The SHA-256 of a password in lowercase hex (ACLHashPassword).
pub fn hash_password(pass: &[u8]) -> String {
    let digest = Sha256::digest(pass);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// The digest a password rule names: hashed from the cleartext after
/// `cleartext_sigil` (`>`, `<`), or given as a hash (`#`, `!`).
fn rule_hash(op: &[u8], cleartext_sigil: u8) -> Result<String, RuleError> {
    let rest = &op[1..];
    if op[0] == cleartext_sigil {
        Ok(hash_password(rest))
    } else if valid_hash(rest) {
        Ok(String::from_utf8_lossy(rest).into_owned())
    } else {
        Err(RuleError::BadHash)
    }
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Compares two hashes without an early exit (time_independent_strcmp).
fn same_hash(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// One ACL user.
#[derive(Clone, Debug)]
pub struct User {
    /// Its name.
    pub name: Vec<u8>,
    /// `on`; a user is created `off`.
    pub enabled: bool,
    /// `nopass`: any password authenticates.
    pub nopass: bool,
    /// `skip-sanitize-payload` (Some(true)) or `sanitize-payload`
    /// (Some(false)), when either was given.
    pub skip_sanitize: Option<bool>,
    /// SHA-256 hex digests of its passwords.
    pub passwords: Vec<String>,
    /// The root selector first, then the `(…)` selectors.
    pub selectors: Vec<Selector>,
    /// Some selector allows everything, so commands skip the check (kept
    /// by [`User::settle`]).
    pub open: bool,
}

impl User {
    /// A new user: off, no passwords, no permissions.
    pub fn new(name: &[u8], all_channels: bool) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            skip_sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true, all_channels)],
            open: false,
        }
    }

    /// Redis's default user: `on nopass ~* &* +@all`.
    pub fn default_user(u: &Universe) -> User {
        let mut user = User::new(b"default", false);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let applied = user.apply(u, op.as_bytes(), false);
            // invariant: these rules are valid.
            applied.expect("the default user's rules are valid");
        }
        user.settle();
        user
    }

    /// Applies one rule (ACLSetUser). `all_channels` is
    /// `acl-pubsub-default allchannels`, for new selectors and `reset`.
    pub fn apply(&mut self, u: &Universe, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
        let word = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if op.is_empty() {
            return Ok(());
        }
        if word("on") {
            self.enabled = true;
        } else if word("off") {
            self.enabled = false;
        } else if word("skip-sanitize-payload") {
            self.skip_sanitize = Some(true);
        } else if word("sanitize-payload") {
            self.skip_sanitize = Some(false);
        } else if word("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if word("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = rule_hash(op, b'>')?;
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = rule_hash(op, b'<')?;
            let at = self
                .passwords
                .iter()
                .position(|p| *p == hash)
                .ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(false, all_channels);
            let inner = &op[1..op.len() - 1];
            let (mut bytes, mut lens) = (Vec::new(), Vec::new());
            // Unbalanced quotes leave no rules, as sdssplitargs does.
            if crate::util::splitargs::split_args(inner, &mut bytes, &mut lens).is_ok() {
                let mut at = 0;
                for len in lens {
                    s.apply(u, &bytes[at..at + len])?;
                    at += len;
                }
            }
            self.selectors.push(s);
        } else if word("clearselectors") {
            self.selectors.truncate(1);
        } else if word("reset") {
            self.nopass = false;
            self.passwords.clear();
            let root = &mut self.selectors[0];
            root.all_keys = false;
            root.patterns.clear();
            root.all_channels = all_channels;
            root.channels.clear();
            self.enabled = false;
            self.skip_sanitize = Some(false);
            self.selectors.truncate(1);
            self.selectors[0].set_all(false);
        } else {
            self.selectors[0].apply(u, op)?;
        }
        Ok(())
    }

    /// True when `pass` authenticates this user (an enabled user, with
    /// `nopass` or a matching password).
    pub fn check_password(&self, pass: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hash = hash_password(pass);
        // Every password is compared, matching or not.
        self.passwords
            .iter()
            .fold(false, |ok, p| same_hash(p.as_bytes(), hash.as_bytes()) | ok)
    }

    /// True when some selector allows every command, key and channel: no
    /// check is needed for this user's commands.
    pub fn unrestricted(&self) -> bool {
        self.selectors
            .iter()
            .any(|s| s.all_commands && s.all_keys && s.all_channels)
    }

    /// The user in rule form, as ACL LIST and ACL SAVE write it
    /// (ACLDescribeUser).
    pub fn describe(&self, u: &Universe) -> String {
        let mut s = String::new();
        s.push_str(if self.enabled { "on " } else { "off " });
        if self.nopass {
            s.push_str("nopass ");
        }
        match self.skip_sanitize {
            Some(true) => s.push_str("skip-sanitize-payload "),
            Some(false) => s.push_str("sanitize-payload "),
            None => {}
        }
        for p in &self.passwords {
            s.push('#');
            s.push_str(p);
            s.push(' ');
        }
        for sel in &self.selectors {
            if sel.root {
                s.push_str(&sel.describe(u));
            } else {
                s.push_str(" (");
                s.push_str(&sel.describe(u));
                s.push(')');
            }
        }
        s
    }
}

/// Joins selector rules that ACL SETUSER or a config line split over
/// several arguments (ACLMergeSelectorArguments). On an unmatched `(` the
/// error names the argument it starts at.
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut out = Vec::with_capacity(args.len());
    let mut open: Option<(Vec<u8>, usize)> = None;
    for (j, &op) in args.iter().enumerate() {
        // A new `(` restarts the selector, even inside one, as in Redis.
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((op.to_vec(), j));
            continue;
        }
        if let Some((sel, _)) = &mut open {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                if let Some((sel, _)) = open.take() {
                    out.push(sel);
                }
            }
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((_, j)) => Err(args[j].to_vec()),
        None => Ok(out),
    }
}
