//! The cluster bus's sockets (the I/O half of Redis's clusterAcceptHandler,
//! clusterLinkConnectHandler, clusterReadHandler and clusterWriteHandler):
//! the listener on the bus port, the links accepted from other nodes and
//! those opened to them, each framed into whole messages (the "RCmb"
//! signature and a 32-bit big-endian total length). What the messages
//! mean is the cluster's business (`server/cluster`); this only moves
//! bytes, on the event loop's poll.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry, Token};

use super::conn::Stream;
use super::tls::{AuthClients, Contexts, TlsStream};

/// A bus message's first bytes.
pub const SIGNATURE: &[u8; 4] = b"RCmb";
/// The smallest valid message: the header without data
/// (CLUSTERMSG_MIN_LEN).
pub const MIN_LEN: usize = 2256;

/// What happened on the bus since the executor last looked.
#[derive(Debug)]
pub enum BusEvent {
    /// A node connected to the bus port.
    Accepted {
        /// The new link.
        link: u64,
    },
    /// An outgoing connection completed.
    Connected {
        /// The link.
        link: u64,
    },
    /// A whole message arrived.
    Message {
        /// The link it came on.
        link: u64,
        /// The message, header included.
        bytes: Vec<u8>,
    },
    /// The link failed or its peer closed it; it is gone.
    Closed {
        /// The link.
        link: u64,
    },
}

struct Link {
    /// TCP, or TLS in a TLS cluster (`tls-cluster yes`).
    sock: Stream,
    /// An outgoing connect not yet completed.
    connecting: bool,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
}

/// Tokens of bus listeners start here; link tokens follow them.
pub const TOKEN_BASE: usize = 1 << 62;
const MAX_LISTENERS: usize = 64;

/// The bus's listeners and links.
#[derive(Default)]
pub struct Bus {
    listeners: Vec<TcpListener>,
    links: HashMap<u64, Link>,
    next_id: u64,
    events: Vec<BusEvent>,
    /// The TLS contexts links are made with (`tls-cluster yes`).
    tls: Option<Contexts>,
}

impl Bus {
    /// Makes new links TLS ones with `ctx` (None: plain TCP).
    pub fn set_tls(&mut self, ctx: Option<Contexts>) {
        self.tls = ctx;
    }

    /// Whether `token` is one of the bus's.
    pub fn owns(token: Token) -> bool {
        token.0 >= TOKEN_BASE && token.0 < TOKEN_BASE + (1 << 60)
    }

    /// Listens on `addrs` (host strings, `-` marking optional ones) at
    /// `port`.
    pub fn listen(
        &mut self,
        registry: &Registry,
        addrs: &[String],
        port: u16,
        opts: super::listener::ListenOpts,
    ) -> std::io::Result<()> {
        for mut l in super::listener::bind_all(addrs, port, opts)?
            .into_iter()
            .take(MAX_LISTENERS)
        {
            let token = Token(TOKEN_BASE + self.listeners.len());
            registry.register(&mut l, token, Interest::READABLE)?;
            self.listeners.push(l);
        }
        Ok(())
    }

    fn token_of(id: u64) -> Token {
        Token(TOKEN_BASE + MAX_LISTENERS + id as usize)
    }

    /// Starts connecting to `addr`; the link's id. Completion (or failure)
    /// comes as an event.
    pub fn connect(&mut self, registry: &Registry, addr: SocketAddr) -> std::io::Result<u64> {
        let mut sock = Stream::Tcp(TcpStream::connect(addr)?);
        self.next_id += 1;
        let id = self.next_id;
        registry.register(
            &mut sock,
            Self::token_of(id),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        self.links.insert(
            id,
            Link {
                sock,
                connecting: true,
                rbuf: Vec::new(),
                wbuf: Vec::new(),
            },
        );
        Ok(id)
    }

    /// Queues `bytes` on link `id` and writes what the socket takes.
    pub fn send(&mut self, registry: &Registry, id: u64, bytes: &[u8]) {
        let Some(l) = self.links.get_mut(&id) else {
            return;
        };
        l.wbuf.extend_from_slice(bytes);
        if !l.connecting {
            self.write(registry, id);
        }
    }

    /// Closes link `id` (no event follows).
    pub fn close(&mut self, registry: &Registry, id: u64) {
        if let Some(mut l) = self.links.remove(&id) {
            let _ = registry.deregister(&mut l.sock);
        }
    }

    /// The local address of link `id` (how the peer sees this node).
    pub fn local_addr(&self, id: u64) -> Option<SocketAddr> {
        self.links
            .get(&id)
            .and_then(|l| l.sock.tcp()?.local_addr().ok())
    }

    /// The peer address of link `id`.
    pub fn peer_addr(&self, id: u64) -> Option<SocketAddr> {
        self.links
            .get(&id)
            .and_then(|l| l.sock.tcp()?.peer_addr().ok())
    }

    /// (allocated, used) bytes of link `id`'s send buffer.
    pub fn send_buffer(&self, id: u64) -> (usize, usize) {
        self.links
            .get(&id)
            .map_or((0, 0), |l| (l.wbuf.capacity(), l.wbuf.len()))
    }

    /// Gives back send-buffer space four times what is in use
    /// (resizeClusterLinkBuffer, from the cluster's cron).
    pub fn resize_send_buffers(&mut self) {
        for l in self.links.values_mut() {
            if (l.wbuf.capacity() - l.wbuf.len()) / 4 > l.wbuf.len() {
                l.wbuf.shrink_to_fit();
            }
        }
    }

    /// Number of links, both directions.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// Whether the bus port is open (cluster mode).
    pub fn is_listening(&self) -> bool {
        !self.listeners.is_empty()
    }

    /// The events gathered since the last call.
    pub fn take_events(&mut self) -> Vec<BusEvent> {
        std::mem::take(&mut self.events)
    }

    /// True when events wait.
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Handles readiness of a bus token.
    pub fn ready(&mut self, registry: &Registry, token: Token, readable: bool, writable: bool) {
        let i = token.0 - TOKEN_BASE;
        if i < MAX_LISTENERS {
            self.accept(registry, i);
            return;
        }
        let id = (i - MAX_LISTENERS) as u64;
        let Some(l) = self.links.get_mut(&id) else {
            return;
        };
        if l.connecting && (writable || readable) {
            let Stream::Tcp(tcp) = &l.sock else {
                return;
            };
            // A connect completed, or failed: the socket says which.
            match (tcp.take_error(), tcp.peer_addr()) {
                (Ok(None), Ok(_)) => {
                    l.connecting = false;
                    let _ = tcp.set_nodelay(true);
                    if self.tls.is_some() && !self.start_tls(id) {
                        return;
                    }
                    self.events.push(BusEvent::Connected { link: id });
                }
                // A wakeup before the connect finished.
                (Ok(None), Err(e)) if e.kind() == std::io::ErrorKind::NotConnected => return,
                _ => {
                    self.fail(registry, id);
                    return;
                }
            }
        }
        // A TLS link may wait on either direction for the other, so both
        // are tried on every event (each stops at WouldBlock).
        let tls = self.links.get(&id).is_some_and(|l| l.sock.is_tls());
        if writable || tls {
            self.write(registry, id);
        }
        if readable || tls {
            self.read(registry, id);
        }
    }

    /// Turns link `id`, just connected, into a TLS link; its handshake
    /// follows, driven by the first writes and reads (Redis's
    /// SSL_connect). False when it failed (the link is gone).
    fn start_tls(&mut self, id: u64) -> bool {
        let (Some(ctx), Some(link)) = (&self.tls, self.links.remove(&id)) else {
            return false;
        };
        let Link {
            sock,
            connecting,
            rbuf,
            wbuf,
        } = link;
        let sock = match sock {
            Stream::Tcp(tcp) => match TlsStream::connect(ctx, tcp) {
                Ok(tls) => Stream::Tls(Box::new(tls)),
                Err(e) => {
                    tracing::debug!("Cannot start TLS on a cluster link: {e}");
                    self.events.push(BusEvent::Closed { link: id });
                    return false;
                }
            },
            other => other,
        };
        self.links.insert(
            id,
            Link {
                sock,
                connecting,
                rbuf,
                wbuf,
            },
        );
        true
    }

    fn accept(&mut self, registry: &Registry, i: usize) {
        loop {
            let Some(l) = self.listeners.get(i) else {
                return;
            };
            match l.accept() {
                Ok((tcp, _)) => {
                    let _ = tcp.set_nodelay(true);
                    // Bus peers always show a certificate from the CA
                    // (Redis accepts them with TLS_CLIENT_AUTH_YES).
                    let mut sock = match &self.tls {
                        Some(ctx) => match TlsStream::accept(ctx, AuthClients::Yes, tcp) {
                            Ok(tls) => Stream::Tls(Box::new(tls)),
                            Err(e) => {
                                tracing::debug!("Error accepting cluster node: {e}");
                                continue;
                            }
                        },
                        None => Stream::Tcp(tcp),
                    };
                    self.next_id += 1;
                    let id = self.next_id;
                    if registry
                        .register(
                            &mut sock,
                            Self::token_of(id),
                            Interest::READABLE | Interest::WRITABLE,
                        )
                        .is_err()
                    {
                        continue;
                    }
                    self.links.insert(
                        id,
                        Link {
                            sock,
                            connecting: false,
                            rbuf: Vec::new(),
                            wbuf: Vec::new(),
                        },
                    );
                    self.events.push(BusEvent::Accepted { link: id });
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        tracing::debug!("Error accepting cluster node: {e}");
                    }
                    return;
                }
            }
        }
    }

    fn fail(&mut self, registry: &Registry, id: u64) {
        self.close(registry, id);
        self.events.push(BusEvent::Closed { link: id });
    }

    fn write(&mut self, registry: &Registry, id: u64) {
        let Some(l) = self.links.get_mut(&id) else {
            return;
        };
        while !l.wbuf.is_empty() {
            match l.sock.write(&l.wbuf) {
                Ok(0) => return self.fail(registry, id),
                Ok(n) => {
                    l.wbuf.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(registry, id),
            }
        }
    }

    /// Reads what the socket holds and frames whole messages. A bad
    /// signature or a length below the header's closes the link, as in
    /// Redis.
    fn read(&mut self, registry: &Registry, id: u64) {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let Some(l) = self.links.get_mut(&id) else {
                return;
            };
            match l.sock.read(&mut chunk) {
                Ok(0) => return self.fail(registry, id),
                Ok(n) => l.rbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return self.fail(registry, id),
            }
            loop {
                let Some(l) = self.links.get_mut(&id) else {
                    return;
                };
                if l.rbuf.len() < 8 {
                    break;
                }
                let total =
                    u32::from_be_bytes([l.rbuf[4], l.rbuf[5], l.rbuf[6], l.rbuf[7]]) as usize;
                if &l.rbuf[..4] != SIGNATURE || total < MIN_LEN {
                    tracing::warn!("Bad message length or signature received from Cluster bus.");
                    return self.fail(registry, id);
                }
                if l.rbuf.len() < total {
                    break;
                }
                let bytes: Vec<u8> = l.rbuf.drain(..total).collect();
                self.events.push(BusEvent::Message { link: id, bytes });
            }
        }
    }

    /// Closes every socket.
    pub fn close_all(&mut self, registry: &Registry) {
        for (_, mut l) in self.links.drain() {
            let _ = registry.deregister(&mut l.sock);
        }
        for mut l in self.listeners.drain(..) {
            let _ = registry.deregister(&mut l);
        }
    }
}
