//! The `ferrokv` binary: parse the command line like redis-server, load the
//! configuration, start the server, wait for SHUTDOWN or a signal.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use ferrokv::config::cli::{self, Action};
use ferrokv::config::{file, Config};
use ferrokv::Server;

fn main() {
    let (file_path, from_stdin, options) = match cli::parse(std::env::args().skip(1).collect()) {
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
    if let Err(e) = file::load(&mut config, file_path.as_deref(), from_stdin, &options) {
        eprintln!("{e}");
        std::process::exit(1);
    }
    if let Err(e) = cli::init_logging(&config.loglevel, &config.logfile) {
        eprintln!("Can't open the log file: {e}");
        std::process::exit(1);
    }
    if file_path.is_none() && !from_stdin {
        tracing::warn!(
            "Warning: no config file specified, using the default config. In order to specify a config file use ferrokv /path/to/redis.conf"
        );
    }
    let config_file = file_path.map(|p| {
        std::fs::canonicalize(&p)
            .map(|c| c.display().to_string())
            .unwrap_or(p)
    });
    // Like Redis, which chdir()s while reading `dir`: relative file names
    // (dbfilename, appenddirname) resolve inside it.
    if let Err(e) = std::env::set_current_dir(&config.dir) {
        tracing::warn!("Can't chdir to '{}': {e}", config.dir);
    }
    let pidfile = config.pidfile.clone();
    if !pidfile.is_empty() {
        if let Err(e) = std::fs::write(&pidfile, format!("{}\n", std::process::id())) {
            tracing::warn!("Failed to write PID file: {e}");
        }
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads.max(1))
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = rt.block_on(async move {
        // Handlers go in before the port opens, so a SIGTERM sent as soon
        // as clients can connect is already a graceful shutdown.
        let signals = Signals::install();
        let server = match Server::start_with_file(config, config_file).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("{e}");
                return 1;
            }
        };
        tracing::info!(
            "ferrokv {} (Redis {} compatible) started, port={} pid={}",
            ferrokv::VERSION,
            ferrokv::REDIS_VERSION,
            server.port(),
            std::process::id()
        );
        tracing::info!("Ready to accept connections");
        signals.wait(&server).await;
        tracing::info!("ferrokv is now ready to exit, bye bye...");
        0
    });
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    std::process::exit(code);
}

/// SIGTERM and SIGINT listeners.
struct Signals {
    #[cfg(unix)]
    unix: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn install() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let unix = match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(t), Ok(i)) => Some((t, i)),
                _ => None,
            };
            Signals { unix }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Returns on SHUTDOWN, SIGINT or SIGTERM.
    async fn wait(self, server: &Server) {
        #[cfg(unix)]
        if let Some((mut term, mut int)) = self.unix {
            tokio::select! {
                _ = server.wait() => return,
                _ = term.recv() => tracing::warn!("Received SIGTERM scheduling shutdown..."),
                _ = int.recv() => tracing::warn!("Received SIGINT scheduling shutdown..."),
            }
            server.shutdown().await;
            return;
        }
        tokio::select! {
            _ = server.wait() => return,
            _ = tokio::signal::ctrl_c() => tracing::warn!("Received SIGINT scheduling shutdown..."),
        }
        server.shutdown().await;
    }
}
