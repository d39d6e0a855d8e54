//! Listening sockets: binds the configured addresses the way Redis does
//! (optional `-addr` entries, IPv6 sockets IPv6-only, Redis's backlog) and
//! decides which accepted clients are refused.

use std::net::{SocketAddr, ToSocketAddrs};

use mio::net::TcpListener;
use socket2::{Domain, Socket, Type};

use super::event_loop::NetLimits;

/// Binds every address; a leading `-` marks an optional address whose
/// failure is not fatal (Redis's `bind 127.0.0.1 -::1`).
/// How listening sockets are set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListenOpts {
    /// `tcp-backlog`: the accept queue's length.
    pub backlog: i32,
    /// `socket-mark-id`: SO_MARK on the socket (0: none).
    pub mark: u32,
}

impl Default for ListenOpts {
    fn default() -> Self {
        ListenOpts {
            backlog: TCP_BACKLOG,
            mark: 0,
        }
    }
}

impl ListenOpts {
    /// The options `config` gives.
    pub fn from_config(config: &crate::config::Config) -> ListenOpts {
        ListenOpts {
            backlog: config
                .get_i64("tcp-backlog")
                .map_or(TCP_BACKLOG, |b| i32::try_from(b).unwrap_or(i32::MAX)),
            mark: config
                .get_i64("socket-mark-id")
                .map_or(0, |m| u32::try_from(m).unwrap_or(0)),
        }
    }

    /// Applies the options to a bound socket and listens.
    pub(super) fn listen(&self, sock: &Socket) -> std::io::Result<()> {
        if self.mark > 0 {
            // As Redis's anetSetSockMarkId: best effort (it needs
            // CAP_NET_ADMIN).
            #[cfg(target_os = "linux")]
            let _ = sock.set_mark(self.mark);
        }
        sock.listen(self.backlog)
    }
}

/// No address (`bind ""`) listens on no TCP socket, as in Redis.
pub fn bind_all(
    addrs: &[String],
    port: u16,
    opts: ListenOpts,
) -> std::io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::new();
    if addrs.is_empty() {
        return Ok(listeners);
    }
    let mut port = port;
    for a in addrs {
        let (optional, host) = match a.strip_prefix('-') {
            Some(h) => (true, h),
            None => (false, a.as_str()),
        };
        let host = match host {
            "*" => "0.0.0.0",
            "::*" => "::",
            h => h,
        };
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        match listen(&addr, opts) {
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
pub const TCP_BACKLOG: i32 = 511;

/// Binds and listens on `addr` ("host:port"), non-blocking.
fn listen(addr: &str, opts: ListenOpts) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in addr.to_socket_addrs()? {
        match listen_one(a, opts) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "no address to bind")
    }))
}

fn listen_one(a: SocketAddr, opts: ListenOpts) -> std::io::Result<TcpListener> {
    let sock = Socket::new(Domain::for_address(a), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    if a.is_ipv6() {
        // As Redis: `::` does not also take the IPv4 port, so `bind * ::*`
        // binds both.
        sock.set_only_v6(true)?;
    }
    sock.bind(&a.into())?;
    opts.listen(&sock)?;
    sock.set_nonblocking(true)?;
    Ok(TcpListener::from_std(sock.into()))
}

/// Redis's checkTcpBacklogSettings: a backlog the kernel caps lower
/// (`net.core.somaxconn`) is warned about at start-up.
pub fn check_backlog(backlog: i32) {
    let Ok(text) = std::fs::read_to_string("/proc/sys/net/core/somaxconn") else {
        return;
    };
    if let Ok(somaxconn) = text.trim().parse::<i32>() {
        if somaxconn < backlog {
            tracing::warn!(
                "WARNING: The TCP backlog setting of {backlog} cannot be enforced because \
                 /proc/sys/net/core/somaxconn is set to the lower value of {somaxconn}."
            );
        }
    }
}

/// Protected mode refuses clients other than 127.0.0.1 and ::1 exactly
/// (Redis's islocalClient) while the default user has `nopass`.
pub fn protected_denies(limits: &NetLimits, peer: &super::addr::PeerAddr) -> bool {
    limits.protected_mode && limits.default_nopass && !peer.is_local()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_mode_refuses_only_remote_clients_without_password() {
        let mut shared = NetLimits::default();
        let remote: SocketAddr = "192.0.2.7:5000".parse().expect("addr");
        let local: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        let local6: SocketAddr = "[::1]:5000".parse().expect("addr");
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:5000".parse().expect("addr");
        let other_loopback: SocketAddr = "127.0.0.2:5000".parse().expect("addr");
        shared.protected_mode = true;
        shared.default_nopass = true;
        let (remote, local, local6, mapped, other_loopback) = (
            remote.into(),
            local.into(),
            local6.into(),
            mapped.into(),
            other_loopback.into(),
        );
        let unix = super::super::addr::PeerAddr::Unix("/tmp/s".into());
        assert!(protected_denies(&shared, &remote));
        assert!(!protected_denies(&shared, &local));
        assert!(!protected_denies(&shared, &local6));
        assert!(!protected_denies(&shared, &unix));
        // Redis compares the peer's text with "127.0.0.1" and "::1".
        assert!(protected_denies(&shared, &mapped));
        assert!(protected_denies(&shared, &other_loopback));
        shared.default_nopass = false;
        assert!(!protected_denies(&shared, &remote));
        shared.default_nopass = true;
        shared.protected_mode = false;
        assert!(!protected_denies(&shared, &remote));
        assert!(crate::error::DENIED_PROTECTED_MODE
            .starts_with(b"-DENIED Redis is running in protected mode"));
        assert!(crate::error::DENIED_PROTECTED_MODE.ends_with(b"from the outside.\r\n"));
    }

    #[test]
    fn binds_loopback_on_a_free_port_and_skips_optional_failures() {
        let ls = bind_all(
            &["127.0.0.1".into(), "-192.0.2.1".into()],
            0,
            ListenOpts::default(),
        )
        .expect("bind");
        assert_eq!(ls.len(), 1);
        assert_ne!(ls[0].local_addr().expect("addr").port(), 0);
        assert!(bind_all(&["192.0.2.1".into()], 0, ListenOpts::default()).is_err());
    }
}
