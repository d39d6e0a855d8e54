//! The `ferrokv` binary: parse the command line like redis-server, start the
//! server, wait for SHUTDOWN or a signal.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use ferrokv::config::Config;
use ferrokv::Server;

fn main() {
    let mut config = Config::default();
    // Until the command line is parsed: lets tests and benchmarks pick the
    // port of the real binary.
    if let Some(port) = std::env::var("FERROKV_TEST_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        config.port = port;
    }
    tracing_subscriber::fmt().with_target(false).init();
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
        let server = match Server::start(config).await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("{e}");
                return 1;
            }
        };
        tracing::info!(
            version = ferrokv::VERSION,
            port = server.port(),
            pid = std::process::id(),
            "ferrokv ready to accept connections"
        );
        tokio::select! {
            _ = server.wait() => {}
            _ = tokio::signal::ctrl_c() => tracing::info!("received SIGINT, shutting down"),
        }
        0
    });
    std::process::exit(code);
}
