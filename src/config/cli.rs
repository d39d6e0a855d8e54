//! The command line, parsed like redis-server's:
//! `ferrokv [/path/to/redis.conf] [--directive value ...] [-]`.
//! `--name value` pairs become config-file text appended after the file, so
//! one parser (`file.rs`) handles both. Also the logger set-up honouring
//! `loglevel` and `logfile`.

use std::sync::OnceLock;

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;
use tracing_subscriber::reload;

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Print the version and exit 0.
    Version,
    /// Print the usage and exit 1.
    Help,
    /// Run the server.
    Run {
        /// Config file path.
        file: Option<String>,
        /// Read more config from standard input (`-`).
        from_stdin: bool,
        /// Directives from `--name value` arguments, one per line.
        options: String,
    },
}

/// The usage text (redis-server's, with the binary's name).
pub const USAGE: &str = "Usage: ./ferrokv [/path/to/redis.conf] [options] [-]
       ./ferrokv - (read config from stdin)
       ./ferrokv -v or --version
       ./ferrokv -h or --help

Examples:
       ./ferrokv (run the server with default conf)
       echo 'maxmemory 128mb' | ./ferrokv -
       ./ferrokv /etc/redis/6379.conf
       ./ferrokv --port 7777
       ./ferrokv --port 7777 --replicaof 127.0.0.1 8888
       ./ferrokv /etc/myredis.conf --loglevel verbose -
       ./ferrokv /etc/myredis.conf --loglevel verbose
";

/// The version line, shaped like redis-server's so tools reading `v=` see
/// the Redis version ferrokv speaks.
pub fn version_line() -> String {
    format!(
        "Redis server v={} sha=00000000:0 malloc=jemalloc-5.3.0 bits={} build=0 ferrokv={}",
        crate::REDIS_VERSION,
        usize::BITS,
        crate::VERSION
    )
}

/// Quotes an argument as sdscatrepr does, so the file parser reads it back
/// exactly (`--save ""` stays an empty argument).
fn repr(arg: &str, out: &mut String) {
    let mut quoted = Vec::new();
    crate::util::repr::repr(arg.as_bytes(), &mut quoted);
    // The quoted form is ASCII.
    out.push_str(&String::from_utf8_lossy(&quoted));
}

/// Parses the arguments (without the program name).
pub fn parse(args: Vec<String>) -> Action {
    let matches = clap::Command::new("ferrokv")
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(
            clap::Arg::new("args")
                .num_args(0..)
                .allow_hyphen_values(true)
                .trailing_var_arg(true),
        )
        .try_get_matches_from(std::iter::once("ferrokv".to_string()).chain(args.clone()));
    let args: Vec<String> = match matches {
        Ok(m) => m
            .get_many::<String>("args")
            .map(|v| v.cloned().collect())
            .unwrap_or_default(),
        Err(_) => args,
    };
    let Some(first) = args.first() else {
        return Action::Run {
            file: None,
            from_stdin: false,
            options: String::new(),
        };
    };
    match first.as_str() {
        "-v" | "--version" => return Action::Version,
        "-h" | "--help" => return Action::Help,
        _ => {}
    }
    let mut j = 0;
    let mut file = None;
    if !first.starts_with('-') {
        file = Some(first.clone());
        j = 1;
    }
    let mut options = String::new();
    let mut from_stdin = false;
    let mut handled_last = true;
    let n = args.len();
    while j < n {
        let a = &args[j];
        if a == "-" && (j == 0 || j == n - 1) {
            from_stdin = true;
        } else if handled_last && a.starts_with("--") {
            if !options.is_empty() {
                options.push('\n');
            }
            options.push_str(&a[2..]);
            options.push(' ');
            // "--port 6380" in one argument carries its value already.
            if a.split_whitespace().count() == 1 {
                handled_last = false;
                let next_is_opt = j + 1 < n && args[j + 1].starts_with("--");
                if a.eq_ignore_ascii_case("--save") && (next_is_opt || j == n - 1) {
                    // `--save` with no value means `save ""` (Redis 7.0.1+).
                    options.push_str("\"\"");
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            repr(a, &mut options);
            options.push(' ');
            handled_last = true;
        }
        j += 1;
    }
    Action::Run {
        file,
        from_stdin,
        options,
    }
}

/// The banner `always-show-logo yes` logs at start-up, with the PID and
/// port as Redis's has them.
pub fn logo(mode: &str, port: u16) -> String {
    format!(
        "\n\
         \x20   ___                _          \n\
         \x20  / _|___ _ _ _ _ ___| |____ __  ferrokv {} (Redis {} compatible) 64 bit\n\
         \x20 |  _/ -_) '_| '_/ _ \\ / /\\ V /  Running in {mode} mode\n\
         \x20 |_| \\___|_| |_| \\___/_\\_\\ \\_/   Port: {port}\n\
         \x20                                  PID: {}\n",
        crate::VERSION,
        crate::REDIS_VERSION,
        std::process::id()
    )
}

static LOG_LEVEL: OnceLock<reload::Handle<LevelFilter, tracing_subscriber::Registry>> =
    OnceLock::new();

fn level_filter(loglevel: &str) -> LevelFilter {
    match loglevel {
        "debug" => LevelFilter::TRACE,
        "verbose" => LevelFilter::DEBUG,
        "notice" => LevelFilter::INFO,
        "warning" => LevelFilter::WARN,
        "nothing" => LevelFilter::OFF,
        _ => LevelFilter::INFO,
    }
}

/// Installs the global logger, lines in redis-server's format
/// (`config/log.rs`): `loglevel` names map to tracing levels (debug →
/// trace, verbose → debug, notice → info, warning → warn); an empty
/// `logfile` logs to standard output, otherwise lines are appended to the
/// file; `syslog` (ident, facility) also sends each message to syslog.
pub fn init_logging(
    loglevel: &str,
    logfile: &str,
    syslog: Option<(&str, &str)>,
) -> std::io::Result<()> {
    let (filter, handle) = reload::Layer::new(level_filter(loglevel));
    let syslog_on = syslog.is_some();
    let syslog = syslog.map(|(ident, facility)| super::log::Syslog::open(ident, facility));
    let registry = tracing_subscriber::registry().with(filter).with(syslog);
    if logfile.is_empty() {
        let layer = tracing_subscriber::fmt::layer()
            .event_format(super::log::RedisFormat)
            .with_ansi(false)
            .with_writer(std::io::stdout);
        let _ = registry.with(layer).try_init();
    } else {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)?;
        let layer = tracing_subscriber::fmt::layer()
            .event_format(super::log::RedisFormat)
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(f));
        let _ = registry.with(layer).try_init();
    }
    let _ = LOG_LEVEL.set(handle);
    super::log::set_verbosity(loglevel);
    super::log::set_child_sink(logfile, syslog_on);
    Ok(())
}

/// Changes the log level at run time (CONFIG SET loglevel).
pub fn set_log_level(loglevel: &str) {
    super::log::set_verbosity(loglevel);
    if let Some(h) = LOG_LEVEL.get() {
        let _ = h.modify(|f| *f = level_filter(loglevel));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Action {
        parse(args.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn options_become_directives() {
        assert_eq!(
            run(&["--port", "7000", "--save", ""]),
            Action::Run {
                file: None,
                from_stdin: false,
                options: "port \"7000\" \nsave \"\" ".into()
            }
        );
        assert_eq!(
            run(&["a.conf", "--save", "--port", "1", "-"]),
            Action::Run {
                file: Some("a.conf".into()),
                from_stdin: true,
                options: "save \"\"\nport \"1\" ".into()
            }
        );
        assert_eq!(run(&["-v"]), Action::Version);
        assert_eq!(run(&["--help"]), Action::Help);
    }
}
