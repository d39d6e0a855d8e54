//! Access control lists (Redis's acl.c): the users, the check every
//! command passes in [`crate::server::call`], authentication, the ACL log,
//! and users loaded from the config file or the ACL file.
//!
//! A client holds its user ([`UserRef`]); changing a user changes it in
//! place, so its clients see the new rules at their next command. A user
//! whose rules allow everything is flagged [`User::open`] and its commands
//! skip the check, so the default user costs one load per command.

pub mod file;
pub mod log;
pub mod universe;
pub mod user;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use self::log::{AclLog, Context, Reason};
use self::universe::Universe;
pub use self::user::{RuleError, Selector, User};
use super::keyspec::{self, Args, Finder, KeyRef};
use super::table::{flag, ChannelArgs, Command};
use crate::util::glob::glob_match;

/// A user as clients hold it.
pub type UserRef = Rc<RefCell<User>>;

/// Why a command was denied, with the argument that caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// The command or subcommand is not allowed.
    Command,
    /// The key at this argument is not allowed.
    Key(usize),
    /// The channel at this argument is not allowed.
    Channel(usize),
}

impl Denied {
    /// Redis's ACL_DENIED_* order, by which the most relevant denial among
    /// selectors is picked.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }

    /// The reason ACL LOG records.
    pub fn reason(self) -> Reason {
        match self {
            Denied::Command => Reason::Command,
            Denied::Key(_) => Reason::Key,
            Denied::Channel(_) => Reason::Channel,
        }
    }

    /// The argument ACL LOG records as the object, if not the command.
    pub fn arg(self) -> Option<usize> {
        match self {
            Denied::Command => None,
            Denied::Key(i) | Denied::Channel(i) => Some(i),
        }
    }

    /// The error a client's command gets (processCommand).
    pub fn error(self, cmd: &str) -> String {
        match self {
            Denied::Command => {
                format!("NOPERM this user has no permissions to run the '{cmd}' command")
            }
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used \
                               as arguments"
                .into(),
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the \
                                   channels used as arguments"
                .into(),
        }
    }

    /// The error a script's `redis.call` gets (getAclErrorMessage).
    pub fn script_error(self) -> &'static str {
        match self {
            Denied::Command => "The user executing the script can't run this command or subcommand",
            Denied::Key(_) => {
                "The user executing the script can't access at least one of the keys mentioned \
                 in the command arguments"
            }
            Denied::Channel(_) => {
                "The user executing the script can't publish to the channel mentioned in the \
                 command"
            }
        }
    }

    /// The error a queued command gets when EXEC finds it no longer
    /// allowed (execCommand).
    pub fn exec_error(self) -> String {
        let reason = match self {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and \
             the EXEC call. This command is no longer allowed for the following reason: {reason}"
        )
    }
}

/// The users, the log and the settings they depend on.
pub struct Acl {
    /// Users by name, in name order (ACL LIST, ACL USERS, ACL SAVE).
    pub users: BTreeMap<Vec<u8>, UserRef>,
    /// The default user, also in `users`: new connections start as it.
    pub default: UserRef,
    /// ACL LOG.
    pub log: AclLog,
    /// `acl-pubsub-default allchannels`.
    pub all_channels_default: bool,
    /// Keys found for the command being checked, kept for the next.
    scratch: Vec<KeyRef>,
}

impl Acl {
    /// Only the default user, with every permission and no password.
    pub fn new(u: &Universe) -> Acl {
        let default = Rc::new(RefCell::new(User::default_user(u)));
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), default.clone());
        Acl {
            users,
            default,
            log: AclLog::default(),
            all_channels_default: false,
            scratch: Vec::new(),
        }
    }

    /// The user named `name`.
    pub fn user(&self, name: &[u8]) -> Option<UserRef> {
        self.users.get(name).cloned()
    }

    /// True when new connections must authenticate: the default user has
    /// a password or is off (Redis's authRequired).
    pub fn auth_required(&self) -> bool {
        let d = self.default.borrow();
        !d.nopass || !d.enabled
    }

    /// True when the default user has `nopass` (protected mode applies).
    pub fn default_nopass(&self) -> bool {
        self.default.borrow().nopass
    }

    /// Redis's ACLCheckUserCredentials: the user when `pass` is right and
    /// the user is on.
    pub fn check_credentials(&self, name: &[u8], pass: &[u8]) -> Option<UserRef> {
        let user = self.users.get(name)?;
        user.borrow().check_password(pass).then(|| user.clone())
    }

    /// `requirepass`: the default user's only password, or `nopass`
    /// (ACLUpdateDefaultUserPassword).
    pub fn set_default_password(&mut self, u: &Universe, pass: Option<&[u8]>) {
        let mut d = self.default.borrow_mut();
        let all = self.all_channels_default;
        let _ = d.apply(u, b"resetpass", all);
        let _ = match pass {
            Some(p) => {
                let mut op = b">".to_vec();
                op.extend_from_slice(p);
                d.apply(u, &op, all)
            }
            None => d.apply(u, b"nopass", all),
        };
    }

    /// Applies ACL SETUSER's rules to a copy of the user (a new one when
    /// it does not exist) and installs it only when every rule is valid
    /// (ACLStringSetUser). Returns the error text Redis gives, and on
    /// success the user's previous state when it existed.
    pub fn set_user(
        &mut self,
        u: &Universe,
        name: &[u8],
        ops: &[&[u8]],
    ) -> Result<Option<User>, String> {
        let ops = user::merge_selector_args(ops).map_err(|at| {
            format!(
                "Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(&at)
            )
        })?;
        let existing = self.users.get(name).cloned();
        let mut temp = match &existing {
            Some(e) => e.borrow().clone(),
            None => User::new(name, self.all_channels_default),
        };
        for op in &ops {
            if let Err(e) = temp.apply(u, op, self.all_channels_default) {
                return Err(format!(
                    "Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.message()
                ));
            }
        }
        temp.settle();
        match existing {
            Some(e) => {
                let old = std::mem::replace(&mut *e.borrow_mut(), temp);
                Ok(Some(old))
            }
            None => {
                self.users
                    .insert(name.to_vec(), Rc::new(RefCell::new(temp)));
                Ok(None)
            }
        }
    }

    /// Checks a command against a user's selectors
    /// (ACLCheckAllUserCommandPerm): allowed when one selector allows it;
    /// otherwise the most relevant denial.
    pub fn check<A: Args + ?Sized>(
        &mut self,
        user: &User,
        cmd: &Command,
        argv: &A,
    ) -> Result<(), Denied> {
        let keys = &mut self.scratch;
        let mut keys_found = false;
        let mut worst: Option<Denied> = None;
        let mut result = Err(Denied::Command);
        for s in &user.selectors {
            match check_selector(s, cmd, argv, keys, &mut keys_found) {
                Ok(()) => {
                    result = Ok(());
                    break;
                }
                Err(d) => {
                    if worst.is_none_or(|w| d.rank() > w.rank()) {
                        worst = Some(d);
                    }
                }
            }
        }
        if result.is_err() {
            result = Err(worst.unwrap_or(Denied::Command));
        }
        result
    }
}

impl User {
    /// Recomputes what is derived from the rules; call after changing
    /// them.
    pub fn settle(&mut self) {
        self.open = self.unrestricted();
    }
}

impl Acl {
    /// True when one of `user`'s selectors allows the command and may read
    /// every key (Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess with
    /// CMD_KEY_ACCESS): SORT's BY and GET read keys no argument names.
    pub fn can_read_any_key<A: Args + ?Sized>(
        &mut self,
        user: &User,
        cmd: &Command,
        argv: &A,
    ) -> bool {
        if user.open {
            return true;
        }
        let keys = &mut self.scratch;
        let mut keys_found = false;
        user.selectors.iter().any(|s| {
            check_selector(s, cmd, argv, keys, &mut keys_found).is_ok()
                && (s.all_keys
                    || s.patterns
                        .iter()
                        .any(|p| p.flags & user::READ != 0 && p.pattern == b"*"))
        })
    }
}

/// Redis's ACLSelectorCheckCmd. `keys` caches the command's keys across
/// selectors.
fn check_selector<A: Args + ?Sized>(
    s: &Selector,
    cmd: &Command,
    argv: &A,
    keys: &mut Vec<KeyRef>,
    keys_found: &mut bool,
) -> Result<(), Denied> {
    if !s.all_commands && !cmd.has(flag::NO_AUTH) && !universe::has(&s.allowed, cmd.acl_id) {
        let argc = argv.count();
        let idx = if cmd.parent.is_some() { 2 } else { 1 };
        let allowed = argc >= 2
            && s.first_args.get(&cmd.acl_id).is_some_and(|args| {
                idx < argc && args.iter().any(|a| a.eq_ignore_ascii_case(argv.arg(idx)))
            });
        if !allowed {
            return Err(Denied::Command);
        }
    }
    if !s.all_keys && cmd.has_keys {
        let fixed = match cmd.key_finder {
            Finder::Set => Some((1, keyspec::set_flags(argv))),
            _ => cmd.single_key,
        };
        if let Some((pos, flags)) = fixed {
            // A key at a fixed position: no need to follow the specs.
            if pos < argv.count() && !key_allowed(s, argv.arg(pos), flags) {
                return Err(Denied::Key(pos));
            }
            return check_channels(s, cmd, argv);
        }
        if !*keys_found {
            keyspec::find_keys(cmd.key_finder, &cmd.key_specs, argv, keys);
            *keys_found = true;
        }
        for k in keys.iter() {
            if !key_allowed(s, argv.arg(k.pos), k.flags) {
                return Err(Denied::Key(k.pos));
            }
        }
    }
    check_channels(s, cmd, argv)
}

/// The channel part of Redis's ACLSelectorCheckCmd.
fn check_channels<A: Args + ?Sized>(s: &Selector, cmd: &Command, argv: &A) -> Result<(), Denied> {
    if !s.all_channels && cmd.channels != ChannelArgs::None {
        let (pattern, range) = match cmd.channels {
            ChannelArgs::Subscribe => (false, 1..argv.count()),
            ChannelArgs::PatternSubscribe => (true, 1..argv.count()),
            ChannelArgs::Publish => (false, 1..2.min(argv.count())),
            ChannelArgs::None => (false, 0..0),
        };
        for i in range {
            if !channel_allowed(&s.channels, argv.arg(i), pattern) {
                return Err(Denied::Channel(i));
            }
        }
    }
    Ok(())
}

/// Redis's ACLSelectorCheckKey: a pattern with the access the key's flags
/// need matches it.
fn key_allowed(s: &Selector, key: &[u8], flags: u16) -> bool {
    if s.all_keys {
        return true;
    }
    let mut need = 0;
    if flags & keyspec::key::ACCESS != 0 {
        need |= user::READ;
    }
    if flags & (keyspec::key::INSERT | keyspec::key::DELETE | keyspec::key::UPDATE) != 0 {
        need |= user::WRITE;
    }
    s.patterns
        .iter()
        .any(|p| p.flags & need == need && glob_match(&p.pattern, key, false))
}

/// Redis's ACLCheckChannelAgainstList: a channel matches the patterns; a
/// subscription pattern must equal one of them.
pub fn channel_allowed(list: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| {
        if is_pattern {
            p == channel
        } else {
            glob_match(p, channel, false)
        }
    })
}

/// Where a denial happened, for the log.
pub fn context_of(in_multi: bool) -> Context {
    if in_multi {
        Context::Multi
    } else {
        Context::Toplevel
    }
}
