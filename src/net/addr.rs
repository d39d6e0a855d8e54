//! A client's address: a TCP peer, or the unix socket it came through
//! (Redis's genClientAddrString shows `<unixsocket>:0` for those).

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Where a connection comes from (or, for `laddr`, arrived at).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A connection through the unix socket at this path.
    Unix(Arc<str>),
}

impl PeerAddr {
    /// The IP address (the unspecified one for a unix socket client, which
    /// has none).
    pub fn ip(&self) -> IpAddr {
        match self {
            PeerAddr::Tcp(a) => a.ip(),
            PeerAddr::Unix(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        }
    }

    /// A unix socket client.
    pub fn is_unix(&self) -> bool {
        matches!(self, PeerAddr::Unix(_))
    }

    /// A client on this machine, as Redis's islocalClient decides: a unix
    /// socket, or exactly 127.0.0.1 or ::1.
    pub fn is_local(&self) -> bool {
        match self {
            PeerAddr::Tcp(a) => crate::util::is_local_ip(a.ip()),
            PeerAddr::Unix(_) => true,
        }
    }
}

impl From<SocketAddr> for PeerAddr {
    fn from(a: SocketAddr) -> Self {
        PeerAddr::Tcp(a)
    }
}

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerAddr::Tcp(a) => write!(f, "{a}"),
            PeerAddr::Unix(path) => write!(f, "{path}:0"),
        }
    }
}
