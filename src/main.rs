//! The `ferrokv` binary: parse the command line like redis-server, load the
//! configuration, start the server, wait for SHUTDOWN or a signal.

// Under a sanitizer the system allocator stays, so the sanitizer sees
// every allocation.
#[cfg(ferrokv_jemalloc)]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(ferrokv_sanitize)]
#[global_allocator]
static GLOBAL: ferrokv::util::counting_alloc::Counting = ferrokv::util::counting_alloc::Counting;

use ferrokv::config::cli::{self, Action};
use ferrokv::config::{file, Config};
use ferrokv::{Server, Started};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

fn main() {
    let argv0 = std::env::args().next().unwrap_or_else(|| "ferrokv".into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Redis's argc == 1: the warning below is for a bare start only.
    let bare = args.is_empty();
    // Before any thread starts: the title takes the arguments' memory.
    ferrokv::util::proctitle::init();
    let (file_path, from_stdin, options) = match cli::parse(args) {
        Action::Version => {
            println!("{}", cli::version_line());
            std::process::exit(0);
        }
        Action::Help => {
            eprint!("{}", cli::USAGE);
            std::process::exit(1);
        }
        Action::Run {
            file,
            from_stdin,
            options,
        } => (file, from_stdin, options),
    };
    let mut config = Config::default();
    if let Err(e) = file::load(&mut config, file_path.as_deref(), from_stdin, &options)
        .and_then(|()| ferrokv::exec::check_config(&config))
    {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let config_file = file_path.clone().map(|p| {
        std::fs::canonicalize(&p)
            .map(|c| c.display().to_string())
            .unwrap_or(p)
    });
    // Like Redis, which chdir()s as it reads `dir`: relative file names
    // given with it or after it (logfile, pidfile, unixsocket, aclfile,
    // dbfilename, appenddirname, cluster-config-file) resolve inside it.
    let chdir_failed = std::env::set_current_dir(&config.dir).err();
    let syslog_ident = config.get("syslog-ident");
    let syslog_facility = config.get("syslog-facility");
    let syslog = config
        .get_bool("syslog-enabled")
        .then_some((syslog_ident.as_str(), syslog_facility.as_str()));
    if let Err(e) = cli::init_logging(&config.loglevel, &config.logfile, syslog) {
        eprintln!("Can't open the log file: {e}");
        std::process::exit(1);
    }
    // Supervision, then daemonizing unless supervised (Redis's main).
    let supervisor = ferrokv::util::process::supervisor(&config.get("supervised"));
    if config.daemonize && supervisor.is_none() {
        #[cfg(unix)]
        ferrokv::util::process::daemonize();
        if config.pidfile.is_empty() {
            // Redis's CONFIG_DEFAULT_PID_FILE, written when daemonized.
            config.pidfile = "/var/run/redis.pid".into();
        }
    }
    // Redis's start-up lines, before the configuration takes effect.
    if let Some(e) = chdir_failed {
        tracing::warn!("Can't chdir to '{}': {e}", config.dir);
    }
    ferrokv::config::log::set_role(b'C');
    tracing::warn!("oO0OoO0OoO0Oo ferrokv is starting oO0OoO0OoO0Oo");
    tracing::warn!(
        "ferrokv version={}, redis_version={}, bits=64, pid={}, just started",
        ferrokv::VERSION,
        ferrokv::REDIS_VERSION,
        std::process::id()
    );
    if bare {
        tracing::warn!(
            "Warning: no config file specified, using the default config. In order to specify a config file use {argv0} /path/to/redis.conf"
        );
    } else {
        tracing::warn!("Configuration loaded");
    }
    ferrokv::config::log::set_role(if config.get("replicaof").is_empty() {
        b'M'
    } else {
        b'S'
    });
    let disable_thp = config.get_bool("disable-thp");
    let replica = !config.get("replicaof").is_empty();
    let pidfile = config.pidfile.clone();
    ferrokv::util::process::set_crash_handling(
        config.get_bool("crash-log-enabled"),
        config.get_bool("use-exit-on-panic"),
    );
    ferrokv::exec::crash::install();
    // Handlers go in before the port opens, so a SIGTERM sent as soon as
    // clients can connect is already a graceful shutdown.
    let signals = match Signals::new([SIGTERM, SIGINT]) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!("cannot install signal handlers: {e}");
            None
        }
    };
    // Forwards SIGTERM/SIGINT to the event loop, which logs them and shuts
    // down as SHUTDOWN does; from the moment the ports open, so a signal
    // stops a long load too.
    let forward_signals: ferrokv::OnBound = Box::new(move |handle| {
        if let Some(mut signals) = signals {
            let forward = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    for sig in signals.forever() {
                        handle.signal(sig);
                    }
                });
            if let Err(e) = forward {
                tracing::warn!("cannot watch signals: {e}");
            }
        }
    });
    let on_started = |started: &Started| {
        // Once the ports are bound, as Redis's createPidFile after
        // initServer: a server that could not start leaves no pid file.
        if !pidfile.is_empty() {
            if let Err(e) = std::fs::write(&pidfile, format!("{}\n", std::process::id())) {
                tracing::warn!("Failed to write PID file: {e}");
            }
        }
        if !started.stopped_loading {
            ferrokv::util::process::linux_memory_warnings(disable_thp);
            tracing::info!("Ready to accept connections");
            if let Some(s) = supervisor {
                ferrokv::util::process::supervisor_ready(s, replica);
            }
        }
    };
    // The event loop runs on the main thread, as Redis's: a signal sent
    // to the process (SIGSTOP above all) reaches the thread that serves.
    // On a thread of its own where the main stack cannot grow enough.
    let served = if ferrokv::util::process::main_stack_can_grow_to(ferrokv::EXEC_STACK) {
        Server::run_on_this_thread(config, config_file, Some(forward_signals), on_started)
    } else {
        Server::start_with_file(config, config_file, Some(forward_signals)).map(|server| {
            on_started(&Started {
                addrs: server.addrs.clone(),
                stopped_loading: server.stopped_loading(),
            });
            server.join();
        })
    };
    if let Err(e) = served {
        tracing::warn!("{e}");
        std::process::exit(1);
    }
    if supervisor == Some(ferrokv::util::process::Supervisor::Systemd) {
        ferrokv::util::process::notify_systemd("STOPPING=1\n");
    }
    tracing::warn!("ferrokv is now ready to exit, bye bye...");
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    std::process::exit(0);
}
