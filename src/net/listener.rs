//! The accept loop: binds the configured addresses, enforces maxclients and
//! spawns a connection task per client.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket};

use crate::exec::{Request, Shared};

/// Binds every address; a leading `-` marks an optional address whose
/// failure is not fatal (Redis's `bind 127.0.0.1 -::1`).
pub async fn bind_all(addrs: &[String], port: u16) -> std::io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::new();
    let mut port = port;
    for a in addrs {
        let (optional, host) = match a.strip_prefix('-') {
            Some(h) => (true, h),
            None => (false, a.as_str()),
        };
        let host = if host == "*" { "0.0.0.0" } else { host };
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        match listen(&addr).await {
            Ok(l) => {
                // With port 0 every address shares the first one's port.
                if port == 0 {
                    port = l.local_addr()?.port();
                }
                listeners.push(l);
            }
            Err(e) if optional => tracing::debug!("optional bind {addr} failed: {e}"),
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("Could not create server TCP listening socket {addr}: {e}"),
                ))
            }
        }
    }
    if listeners.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "no address could be bound",
        ));
    }
    Ok(listeners)
}

/// Redis's default tcp-backlog. A short accept queue makes bursts of
/// connects stall for a SYN retransmit (one second).
const TCP_BACKLOG: u32 = 511;

/// Binds and listens on `addr` ("host:port") with Redis's backlog.
async fn listen(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let sock = if a.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        sock.set_reuseaddr(true)?;
        match sock.bind(a).and_then(|()| sock.listen(TCP_BACKLOG)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "no address to bind")
    }))
}

/// Protected mode refuses clients from outside the loopback interface while
/// the default user has no password (Redis's connIsLocal: 127.0.0.0/8 or
/// ::1).
pub fn protected_denies(shared: &Shared, peer: &SocketAddr) -> bool {
    shared.protected_mode.load(Ordering::Relaxed)
        && !shared.auth_required.load(Ordering::Relaxed)
        && !peer.ip().to_canonical().is_loopback()
}

/// The running accept loops, kept so CONFIG SET port/bind can replace the
/// listening sockets (Redis's changeListenPort/changeBindAddr).
pub struct Listeners {
    rt: tokio::runtime::Handle,
    exec: Sender<Request>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Listeners {
    /// Starts one accept loop per listener; call inside the runtime.
    pub fn start(listeners: Vec<TcpListener>, exec: Sender<Request>, shared: &Arc<Shared>) -> Self {
        let (stop, _) = tokio::sync::watch::channel(false);
        let mut l = Listeners {
            rt: tokio::runtime::Handle::current(),
            exec,
            stop,
            tasks: Vec::new(),
        };
        l.spawn(listeners, shared);
        l
    }

    fn spawn(&mut self, listeners: Vec<TcpListener>, shared: &Arc<Shared>) {
        let (stop, _) = tokio::sync::watch::channel(false);
        self.stop = stop;
        for listener in listeners {
            let task = accept_loop(
                listener,
                self.exec.clone(),
                shared.clone(),
                self.stop.subscribe(),
            );
            self.tasks.push(self.rt.spawn(task));
        }
    }

    /// Asks the executor to shut down (signals), as SHUTDOWN would.
    pub fn request_shutdown(&self) {
        let _ = self.exec.send(Request::Shutdown);
    }

    /// Closes the current sockets and listens on `bind`/`port` instead;
    /// when that fails, listens on `old` again and returns the error.
    /// Returns the port bound. Called from the executor thread, outside
    /// the runtime.
    pub fn rebind(
        &mut self,
        shared: &Arc<Shared>,
        bind: &[String],
        port: u16,
        old: (&[String], u16),
    ) -> std::io::Result<u16> {
        let _ = self.stop.send(true);
        let tasks = std::mem::take(&mut self.tasks);
        let rt = self.rt.clone();
        // The old loops own their sockets; wait until they are closed so
        // the same address can be bound again.
        rt.block_on(async {
            for t in tasks {
                let _ = t.await;
            }
        });
        match rt.block_on(bind_all(bind, port)) {
            Ok(listeners) => {
                let port = listeners
                    .first()
                    .and_then(local_addr)
                    .map_or(port, |a| a.port());
                self.spawn(listeners, shared);
                Ok(port)
            }
            Err(e) => {
                if let Ok(listeners) = rt.block_on(bind_all(old.0, old.1)) {
                    self.spawn(listeners, shared);
                }
                Err(e)
            }
        }
    }
}

/// Accepts connections on `listener` until shutdown or until `stop`
/// changes (the sockets are being replaced).
pub async fn accept_loop(
    listener: TcpListener,
    exec: Sender<Request>,
    shared: Arc<Shared>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shared.shutdown.notified() => return,
            _ = stop.changed() => return,
        };
        if shared.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        let (mut sock, addr) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                // Back off briefly (e.g. out of file descriptors).
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        shared.total_connections.fetch_add(1, Ordering::Relaxed);
        let n = shared.connected_clients.fetch_add(1, Ordering::Relaxed) + 1;
        if n > shared.maxclients.load(Ordering::Relaxed) {
            shared.connected_clients.fetch_sub(1, Ordering::Relaxed);
            shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let _ = sock
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        if protected_denies(&shared, &addr) {
            shared.connected_clients.fetch_sub(1, Ordering::Relaxed);
            shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let _ = sock.write_all(crate::error::DENIED_PROTECTED_MODE).await;
                let _ = sock.shutdown().await;
            });
            continue;
        }
        tokio::spawn(super::conn::serve(sock, addr, exec.clone(), shared.clone()));
    }
}

/// The address a listener is bound to.
pub fn local_addr(l: &TcpListener) -> Option<SocketAddr> {
    l.local_addr().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_mode_refuses_only_remote_clients_without_password() {
        let shared = Shared::default();
        let remote: SocketAddr = "192.0.2.7:5000".parse().expect("addr");
        let local: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        let local6: SocketAddr = "[::1]:5000".parse().expect("addr");
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:5000".parse().expect("addr");
        shared.protected_mode.store(true, Ordering::Relaxed);
        assert!(protected_denies(&shared, &remote));
        assert!(!protected_denies(&shared, &local));
        assert!(!protected_denies(&shared, &local6));
        assert!(!protected_denies(&shared, &mapped));
        shared.auth_required.store(true, Ordering::Relaxed);
        assert!(!protected_denies(&shared, &remote));
        shared.auth_required.store(false, Ordering::Relaxed);
        shared.protected_mode.store(false, Ordering::Relaxed);
        assert!(!protected_denies(&shared, &remote));
        assert!(crate::error::DENIED_PROTECTED_MODE
            .starts_with(b"-DENIED Redis is running in protected mode"));
        assert!(crate::error::DENIED_PROTECTED_MODE.ends_with(b"from the outside.\r\n"));
    }
}
