//! The process title (Redis's setproctitle.c, used by redisSetProcTitle):
//! what `ps` and /proc/<pid>/cmdline show. Linux reads the command line
//! from the memory the kernel laid the arguments and then the environment
//! in; [`init`] moves the environment elsewhere so the whole span can hold
//! a title, and [`set`] writes one there. When the title ends before the
//! original arguments did, the arguments' last NUL becomes '.' so the
//! kernel reads up to the title's NUL instead of the old length, as
//! Redis's setproctitle does.

use std::sync::{Mutex, OnceLock};

/// The writable span: (start, length, offset of the arguments' last NUL).
static AREA: Mutex<Option<(usize, usize, usize)>> = Mutex::new(None);
/// The first argument as given (the template's default `{title}`).
static ARGV0: OnceLock<String> = OnceLock::new();
/// What titles are made of, while `set-proc-title` is on.
static VARS: Mutex<Option<TitleVars>> = Mutex::new(None);

/// proc-title-template and the values of its variables but `{title}`.
#[derive(Clone, Debug, Default)]
pub struct TitleVars {
    /// The template.
    pub template: String,
    /// `{listen-addr}`.
    pub listen_addr: String,
    /// `{server-mode}`.
    pub server_mode: String,
    /// `{port}`.
    pub port: String,
    /// `{tls-port}`.
    pub tls_port: String,
    /// `{unixsocket}`.
    pub unixsocket: String,
    /// `{config-file}`.
    pub config_file: String,
}

/// The variables proc-title-template may name.
const NAMES: &[&str] = &[
    "title",
    "listen-addr",
    "server-mode",
    "port",
    "tls-port",
    "unixsocket",
    "config-file",
];

/// Expands a proc-title-template as Redis's sdstemplate does (`{var}` by
/// `var`'s value, `{{` as a brace), trimmed of spaces; None when it names
/// an unknown variable or leaves a brace open.
pub fn expand(t: &str, value: impl Fn(&str) -> String) -> Option<String> {
    let mut out = String::new();
    let mut rest = t;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("{{") {
            out.push('{');
            rest = r;
        } else if let Some(r) = rest.strip_prefix('{') {
            let end = r.find('}')?;
            let var = &r[..end];
            if !NAMES.contains(&var) {
                return None;
            }
            out.push_str(&value(var));
            rest = &r[end + 1..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    Some(out.trim_matches(' ').to_string())
}

/// Installs the server's title parts and shows its title (Redis's
/// redisSetProcTitle(NULL)); None turns titles off.
pub fn configure(vars: Option<TitleVars>) {
    let mut slot = VARS.lock().unwrap_or_else(|e| e.into_inner());
    *slot = vars;
    if let Some(v) = slot.as_ref() {
        show(v, ARGV0.get().map_or("", String::as_str));
    }
}

/// Shows the title made with `{title}` = `title` (a forked child's
/// "redis-rdb-bgsave"), when titles are on.
pub fn set_titled(title: &str) {
    // try_lock: a child forked while another thread held the lock must
    // not wait for it.
    if let Ok(slot) = VARS.try_lock() {
        if let Some(v) = slot.as_ref() {
            show(v, title);
        }
    }
}

fn show(v: &TitleVars, title: &str) {
    let text = expand(&v.template, |name| match name {
        "title" => title.to_string(),
        "listen-addr" => v.listen_addr.clone(),
        "server-mode" => v.server_mode.clone(),
        "port" => v.port.clone(),
        "tls-port" => v.tls_port.clone(),
        "unixsocket" => v.unixsocket.clone(),
        _ => v.config_file.clone(),
    });
    if let Some(text) = text {
        set(&text);
    }
}

/// Finds the argument and environment memory and moves the environment
/// out of it. Call first thing in `main`, while the process has one
/// thread, after reading the arguments (std's view of them points into the
/// span).
pub fn init() {
    let _ = ARGV0.set(std::env::args().next().unwrap_or_default());
    #[cfg(target_os = "linux")]
    {
        let Some((arg_start, arg_end, env_start, env_end)) = spans() else {
            return;
        };
        // The environment must follow the arguments directly.
        let end = if env_start == arg_end && env_end > env_start {
            env_end
        } else {
            arg_end
        };
        if arg_end <= arg_start || end <= arg_start {
            return;
        }
        if end > arg_end {
            // Copies of the variables, made by setenv, replace the ones in
            // the span.
            let vars: Vec<(std::ffi::CString, std::ffi::CString)> = std::env::vars_os()
                .filter_map(|(k, v)| {
                    use std::os::unix::ffi::OsStrExt;
                    Some((
                        std::ffi::CString::new(k.as_bytes()).ok()?,
                        std::ffi::CString::new(v.as_bytes()).ok()?,
                    ))
                })
                .collect();
            // SAFETY: the process has one thread (see above), so nothing
            // reads the environment while it is rebuilt; the strings are
            // NUL-terminated CStrings that setenv copies.
            unsafe {
                libc::clearenv();
                for (k, v) in &vars {
                    libc::setenv(k.as_ptr(), v.as_ptr(), 1);
                }
            }
        }
        let mut area = AREA.lock().unwrap_or_else(|e| e.into_inner());
        *area = Some((arg_start, end - arg_start, arg_end - 1 - arg_start));
    }
}

/// (arg_start, arg_end, env_start, env_end) from /proc/self/stat.
#[cfg(target_os = "linux")]
fn spans() -> Option<(usize, usize, usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name's closing parenthesis start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<usize>().ok();
    Some((field(48)?, field(49)?, field(50)?, field(51)?))
}

/// Shows `title` as the process's command line (cut to the span); false
/// when [`init`] found no span.
fn set(title: &str) -> bool {
    let area = AREA.lock().unwrap_or_else(|e| e.into_inner());
    let Some((start, len, old_nul)) = *area else {
        return false;
    };
    let bytes = title.as_bytes();
    let n = bytes.len().min(len - 1);
    // SAFETY: [start, start + len) is this process's argument and
    // environment memory, writable and no longer read by anyone: `init`
    // moved the environment out, and std's copy of the arguments was read
    // before. The lock keeps writers apart.
    unsafe {
        let span = std::slice::from_raw_parts_mut(start as *mut u8, len);
        span.fill(0);
        span[..n].copy_from_slice(&bytes[..n]);
        if n < old_nul {
            span[old_nul] = b'.';
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_as_sdstemplate() {
        let v = |name: &str| format!("<{name}>");
        assert_eq!(
            expand("{title} {port}", v).as_deref(),
            Some("<title> <port>")
        );
        assert_eq!(expand("  a {{b} c}} ", v).as_deref(), Some("a {b} c}}"));
        assert_eq!(expand("{nope}", v), None);
        assert_eq!(expand("{title", v), None);
        assert_eq!(expand("x {", v), None);
    }
}
