//! Log lines as redis-server writes them (Redis's `serverLogRaw`):
//! `<pid>:<role> <dd Mon yyyy HH:MM:SS.mmm> <level> <message>`, the role
//! `M` for a master, `S` for a replica, `C` for a forked child, the level
//! `.` debug, `-` verbose, `*` notice, `#` warning. Tools that wait for
//! `Ready to accept connections` or grep Redis's log read ferrokv's the
//! same way. `tracing` stays the mechanism: this is its line format, and
//! [`Syslog`] the layer that sends the same messages to syslog
//! (`syslog-enabled`, `syslog-ident`, `syslog-facility`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The role letter of the lines written from now on.
static ROLE: AtomicU8 = AtomicU8::new(b'M');

/// Sets the role letter: `M` master, `S` replica, `C` child.
pub fn set_role(role: u8) {
    ROLE.store(role, Ordering::Relaxed);
}

/// The line format.
pub struct RedisFormat;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A moment in local time, as a log line shows it.
struct Stamp {
    /// Day of the month, 1-31.
    day: i64,
    /// Month, 0-11.
    month: usize,
    year: i64,
    /// Seconds since local midnight.
    secs: i64,
    millis: u32,
}

impl Stamp {
    /// Now, from localtime_r.
    fn now() -> Stamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let secs = now.as_secs() as libc::time_t;
        // SAFETY: localtime_r fills the zeroed struct from a valid time_t.
        let tm = unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            libc::localtime_r(&secs, &mut tm);
            tm
        };
        Stamp {
            day: tm.tm_mday.into(),
            month: tm.tm_mon as usize,
            year: i64::from(tm.tm_year) + 1900,
            secs: i64::from(tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec),
            millis: now.subsec_millis(),
        }
    }

    /// Now, from the UTC offset read before the fork: no lock taken
    /// (Redis's nolocks_localtime).
    fn now_without_locks() -> Stamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let local = now.as_secs() as i64 + UTC_OFFSET.load(Ordering::Relaxed);
        let (days, secs) = (local.div_euclid(86_400), local.rem_euclid(86_400));
        // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        Stamp {
            day: doy - (153 * mp + 2) / 5 + 1,
            month: (month - 1) as usize,
            year: yoe + era * 400 + i64::from(month <= 2),
            secs,
            millis: now.subsec_millis(),
        }
    }

    /// `<pid>:<role> dd Mon yyyy HH:MM:SS.mmm`, the start of every line
    /// (Redis's strftime `%d %b %Y %H:%M:%S` plus milliseconds).
    fn write_head(&self, out: &mut String) {
        let month = MONTHS.get(self.month).copied().unwrap_or("Jan");
        let _ = write!(
            out,
            "{}:{} {:02} {month} {} {:02}:{:02}:{:02}.{:03}",
            std::process::id(),
            ROLE.load(Ordering::Relaxed) as char,
            self.day,
            self.year,
            self.secs / 3600,
            self.secs / 60 % 60,
            self.secs % 60,
            self.millis
        );
    }
}

/// One log line as the formatter writes it, for text written outside
/// `tracing` (the crash report).
pub fn line(level: char, msg: &str) -> String {
    line_at(&Stamp::now(), level, msg)
}

/// A whole line at `stamp`.
fn line_at(stamp: &Stamp, level: char, msg: &str) -> String {
    let mut out = String::with_capacity(40 + msg.len());
    stamp.write_head(&mut out);
    let _ = writeln!(out, " {level} {msg}");
    out
}

/// `<pid>:<role> <timestamp>`, the start of every line.
fn head(out: &mut String) {
    Stamp::now().write_head(out);
}

impl<S, N> FormatEvent<S, N> for RedisFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR | Level::WARN => '#',
            Level::INFO => '*',
            Level::DEBUG => '-',
            Level::TRACE => '.',
        };
        let mut start = String::with_capacity(40);
        head(&mut start);
        write!(writer, "{start} {level} ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Sends every message to syslog as Redis's serverLogRaw does: the bare
/// message, at LOG_DEBUG, LOG_INFO, LOG_NOTICE or LOG_WARNING.
pub struct Syslog;

impl Syslog {
    /// Opens the connection to syslog with `ident` and `facility` (`user`,
    /// `local0`..`local7`), as Redis's openlog: the pid in each message,
    /// connected at once.
    pub fn open(ident: &str, facility: &str) -> Syslog {
        let facility = match facility {
            "user" => libc::LOG_USER,
            "local1" => libc::LOG_LOCAL1,
            "local2" => libc::LOG_LOCAL2,
            "local3" => libc::LOG_LOCAL3,
            "local4" => libc::LOG_LOCAL4,
            "local5" => libc::LOG_LOCAL5,
            "local6" => libc::LOG_LOCAL6,
            "local7" => libc::LOG_LOCAL7,
            _ => libc::LOG_LOCAL0,
        };
        // openlog keeps the pointer: the ident lives as long as the process.
        let ident: &'static std::ffi::CStr = Box::leak(
            std::ffi::CString::new(ident.replace('\0', ""))
                .unwrap_or_default()
                .into_boxed_c_str(),
        );
        // SAFETY: a NUL-terminated ident that is never freed.
        unsafe {
            libc::openlog(
                ident.as_ptr(),
                libc::LOG_PID | libc::LOG_NDELAY | libc::LOG_NOWAIT,
                facility,
            )
        };
        Syslog
    }
}

/// Collects an event's message.
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }
}

impl<S: Subscriber> Layer<S> for Syslog {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let priority = match *event.metadata().level() {
            Level::ERROR | Level::WARN => libc::LOG_WARNING,
            Level::INFO => libc::LOG_NOTICE,
            Level::DEBUG => libc::LOG_INFO,
            Level::TRACE => libc::LOG_DEBUG,
        };
        let mut msg = Message(String::new());
        event.record(&mut msg);
        let Ok(text) = std::ffi::CString::new(msg.0.replace('\0', "")) else {
            return;
        };
        // SAFETY: a constant "%s" format with one NUL-terminated string.
        unsafe { libc::syslog(priority, c"%s".as_ptr(), text.as_ptr()) };
    }
}

/// Where a forked child writes its lines (set with the logger by
/// [`set_child_sink`]; an embedded server's children write none).
static CHILD_SINK: std::sync::OnceLock<ChildSink> = std::sync::OnceLock::new();

/// The lowest level written: 0 debug, 1 verbose, 2 notice, 3 warning,
/// 4 nothing (Redis's `verbosity`).
static VERBOSITY: AtomicU8 = AtomicU8::new(2);

struct ChildSink {
    /// The log file; None for standard output.
    file: Option<std::ffi::CString>,
    syslog: bool,
}

/// The local time's offset from UTC in seconds, read before any fork: a
/// child must not call localtime_r, whose time-zone lock another thread
/// of the parent may have held at the fork (Redis's nolocks_localtime).
static UTC_OFFSET: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Records where the server logs, for its forked children.
pub fn set_child_sink(logfile: &str, syslog: bool) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as libc::time_t;
    // SAFETY: localtime_r fills the zeroed struct from a valid time_t.
    let offset = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&secs, &mut tm);
        tm.tm_gmtoff
    };
    UTC_OFFSET.store(offset, Ordering::Relaxed);
    let file = (!logfile.is_empty())
        .then(|| std::ffi::CString::new(logfile.replace('\0', "")).unwrap_or_default());
    let _ = CHILD_SINK.set(ChildSink { file, syslog });
}

/// Records `loglevel` (at start and at CONFIG SET), for forked children.
pub fn set_verbosity(loglevel: &str) {
    let rank = match loglevel {
        "debug" => 0,
        "verbose" => 1,
        "warning" => 3,
        "nothing" => 4,
        _ => 2,
    };
    VERBOSITY.store(rank, Ordering::Relaxed);
}

/// A line from a forked child (saving, rewriting), at notice level, or at
/// warning level when `warning`: written with write(2) to a file opened
/// for the line, as Redis's serverLogRaw does, and not through `tracing`,
/// whose writer lock another thread of the parent may have held at the
/// fork (the child would wait on it for ever).
pub fn child_line(warning: bool, msg: &str) {
    let Some(sink) = CHILD_SINK.get() else {
        return;
    };
    if (if warning { 3 } else { 2 }) < VERBOSITY.load(Ordering::Relaxed) {
        return;
    }
    let text = child_text(if warning { '#' } else { '*' }, msg);
    // SAFETY: open(2), write(2) and close(2) on a descriptor this function
    // owns, with a NUL-terminated path and a buffer of `text.len()` bytes.
    unsafe {
        match &sink.file {
            None => {
                libc::write(libc::STDOUT_FILENO, text.as_ptr().cast(), text.len());
            }
            Some(path) => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
                    0o644,
                );
                if fd >= 0 {
                    libc::write(fd, text.as_ptr().cast(), text.len());
                    libc::close(fd);
                }
            }
        }
    }
    if sink.syslog {
        if let Ok(msg) = std::ffi::CString::new(msg.replace('\0', "")) {
            let priority = if warning {
                libc::LOG_WARNING
            } else {
                libc::LOG_NOTICE
            };
            // SAFETY: a constant "%s" format with one NUL-terminated string.
            unsafe { libc::syslog(priority, c"%s".as_ptr(), msg.as_ptr()) };
        }
    }
}

/// A child's line, as [`line`] writes it but with the time computed from
/// [`UTC_OFFSET`] (no lock taken).
fn child_text(level: char, msg: &str) -> String {
    line_at(&Stamp::now_without_locks(), level, msg)
}

#[cfg(test)]
mod child_time_tests {
    use super::*;

    /// A child's timestamp, computed without localtime_r, reads as the
    /// parent's lines do (to the second; retried across a second's edge).
    #[test]
    fn a_childs_line_has_the_parents_time() {
        set_child_sink("", false);
        let same = (0..3).any(|_| {
            let (a, b) = (child_text('*', "x"), line('*', "x"));
            // `pid:R dd Mon yyyy HH:MM:SS` without the milliseconds.
            let cut = |s: &str| s[..s.find('.').unwrap_or(s.len())].to_string();
            cut(&a) == cut(&b)
        });
        assert!(same, "{} / {}", child_text('*', "x"), line('*', "x"));
    }
}
