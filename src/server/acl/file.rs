//! Users from the configuration and the ACL file (Redis's
//! ACLLoadConfiguredUsers, ACLLoadFromFile, ACLSaveToFile): all-or-nothing
//! loading with Redis's error texts, and saving through a temporary file.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::universe::Universe;
use super::user::{has_spaces, merge_selector_args, RuleError, User};
use super::{Acl, UserRef};

impl Acl {
    /// Creates the users of `user` lines in the configuration (the default
    /// user's line replaces it). Errors are Redis's log lines.
    pub fn load_configured(&mut self, u: &Universe, lines: &[Vec<Vec<u8>>]) -> Result<(), String> {
        for line in lines {
            let name = &line[0];
            if has_spaces(name) {
                return Err("Spaces not allowed in ACL usernames".into());
            }
            let ops: Vec<&[u8]> = line[1..].iter().map(Vec::as_slice).collect();
            let ops = merge_selector_args(&ops).map_err(|at| {
                format!(
                    "Error in user declaration '{}': Unmatched parenthesis in acl selector",
                    String::from_utf8_lossy(&at)
                )
            })?;
            let user = match self.users.get(name.as_slice()) {
                Some(existing) => {
                    let mut e = existing.borrow_mut();
                    let _ = e.apply(u, b"reset", self.all_channels_default);
                    drop(e);
                    existing.clone()
                }
                None => {
                    let user = Rc::new(RefCell::new(User::new(name, self.all_channels_default)));
                    self.users.insert(name.clone(), user.clone());
                    user
                }
            };
            let mut user = user.borrow_mut();
            for op in &ops {
                user.apply(u, op, self.all_channels_default).map_err(|e| {
                    format!(
                        "Error loading ACL rule '{}' for the user named '{}': {}",
                        String::from_utf8_lossy(op),
                        String::from_utf8_lossy(name),
                        e.message()
                    )
                })?;
            }
            user.settle();
            if !user.enabled {
                tracing::info!(
                    "The user '{}' is disabled (there is no 'on' modifier in the user \
                     description). Make sure this is not a configuration error.",
                    String::from_utf8_lossy(name)
                );
            }
        }
        Ok(())
    }

    /// Reads the ACL file (ACL LOAD and start-up): every line a `user`
    /// line; on any error nothing changes and the error lists every
    /// problem. On success the users are replaced (the default user in
    /// place) and the users that went are returned, so their clients can
    /// be disconnected.
    pub fn load_file(&mut self, u: &Universe, path: &str) -> Result<Vec<UserRef>, String> {
        let text = std::fs::read(path).map_err(|e| {
            format!(
                "Error loading ACLs, opening file '{path}': {}",
                os_error(&e)
            )
        })?;
        let mut errors = String::new();
        let mut users: BTreeMap<Vec<u8>, User> = BTreeMap::new();
        for (i, line) in text.split(|&c| c == b'\n').enumerate() {
            let linenum = i + 1;
            let line = trim(line, b" \t\r\n");
            if line.is_empty() {
                continue;
            }
            let argv: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
            if argv[0] != b"user" || argv.len() < 2 {
                errors.push_str(&format!(
                    "{path}:{linenum} should start with user keyword followed by the username. "
                ));
                continue;
            }
            let name = argv[1];
            if has_spaces(name) {
                errors.push_str(&format!(
                    "'{path}:{linenum}: username '{}' contains invalid characters. ",
                    String::from_utf8_lossy(name)
                ));
                continue;
            }
            if users.contains_key(name) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{}' found on line {linenum}. ",
                    String::from_utf8_lossy(name)
                ));
                continue;
            }
            let mut user = User::new(name, self.all_channels_default);
            let ops = match merge_selector_args(&argv[2..]) {
                Ok(ops) => ops,
                Err(_) => {
                    errors.push_str(&format!(
                        "{path}:{linenum}: Unmatched parenthesis in selector definition."
                    ));
                    Vec::new()
                }
            };
            let mut syntax_error = false;
            for op in &ops {
                let op = trim(op, b"\t\r\n");
                match user.apply(u, op, self.all_channels_default) {
                    Ok(()) => {}
                    Err(RuleError::UnknownCommand) => errors.push_str(&format!(
                        "{path}:{linenum}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(op),
                        RuleError::UnknownCommand.message()
                    )),
                    Err(e) if !syntax_error => {
                        errors.push_str(&format!("{path}:{linenum}: {}. ", e.message()));
                        syntax_error = true;
                    }
                    Err(_) => {}
                }
            }
            user.settle();
            users.insert(name.to_vec(), user);
        }
        if !errors.is_empty() {
            errors.push_str(
                "WARNING: ACL errors detected, no change to the previously active ACL rules was \
                 performed",
            );
            return Err(errors);
        }
        let new_default = users
            .remove(&b"default"[..])
            .unwrap_or_else(|| User::default_user(u));
        *self.default.borrow_mut() = new_default;
        let mut next: BTreeMap<Vec<u8>, UserRef> = users
            .into_iter()
            .map(|(name, user)| (name, Rc::new(RefCell::new(user))))
            .collect();
        next.insert(b"default".to_vec(), self.default.clone());
        let old = std::mem::replace(&mut self.users, next);
        Ok(old
            .into_iter()
            .filter(|(name, _)| name != b"default")
            .map(|(_, user)| user)
            .collect())
    }

    /// The users in ACL file form, one `user` line each.
    pub fn file_text(&self, u: &Universe) -> String {
        let mut text = String::new();
        for (name, user) in &self.users {
            text.push_str("user ");
            text.push_str(&String::from_utf8_lossy(name));
            text.push(' ');
            text.push_str(&user.borrow().describe(u));
            text.push('\n');
        }
        text
    }

    /// ACL SAVE: writes a temporary file next to `path` and renames it.
    pub fn save_file(&self, u: &Universe, path: &str) -> std::io::Result<()> {
        let tmp = format!(
            "{path}.tmp-{}-{}",
            std::process::id(),
            crate::util::clock::real_now_ms()
        );
        let written =
            std::fs::write(&tmp, self.file_text(u)).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = &written {
            tracing::warn!("Writing ACL file for ACL SAVE: {e}");
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

fn trim<'a>(s: &'a [u8], chars: &[u8]) -> &'a [u8] {
    let start = s.iter().position(|c| !chars.contains(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !chars.contains(c))
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// The text of an OS error without Rust's " (os error N)" suffix, as
/// strerror gives it.
fn os_error(e: &std::io::Error) -> String {
    crate::util::process::strerror(e)
}
