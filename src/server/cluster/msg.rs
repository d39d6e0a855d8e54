//! The cluster bus's messages, byte for byte as Redis 7.0 lays out
//! `clusterMsg` (`cluster.h`): a 2,256-byte header in network byte order
//! (signature, length, version, ports, type, epochs, replication offset,
//! sender, slot bitmap, master, IP, flags, state) and a body by type:
//! gossip entries of 104 bytes plus extensions for PING/PONG/MEET, a node
//! name for FAIL, channel and message for PUBLISH, a slot configuration for
//! UPDATE, nothing for the failover messages.

use super::{NAME_LEN, SLOTS};

/// Message types (`CLUSTERMSG_TYPE_*`).
pub mod kind {
    /// PING.
    pub const PING: u16 = 0;
    /// PONG.
    pub const PONG: u16 = 1;
    /// MEET.
    pub const MEET: u16 = 2;
    /// FAIL.
    pub const FAIL: u16 = 3;
    /// PUBLISH.
    pub const PUBLISH: u16 = 4;
    /// FAILOVER_AUTH_REQUEST.
    pub const AUTH_REQUEST: u16 = 5;
    /// FAILOVER_AUTH_ACK.
    pub const AUTH_ACK: u16 = 6;
    /// UPDATE.
    pub const UPDATE: u16 = 7;
    /// MFSTART.
    pub const MFSTART: u16 = 8;
    /// MODULE.
    pub const MODULE: u16 = 9;
    /// PUBLISHSHARD.
    pub const PUBLISHSHARD: u16 = 10;
}

/// mflags[0] bits.
pub mod mflag {
    /// The master is paused for a manual failover.
    pub const PAUSED: u8 = 1;
    /// Vote even though the master is up (manual failover).
    pub const FORCEACK: u8 = 2;
    /// Extensions follow the gossip section.
    pub const EXT_DATA: u8 = 4;
}

/// Length of the header (CLUSTERMSG_MIN_LEN).
pub const HEADER_LEN: usize = 2256;
/// Length of one gossip entry.
pub const GOSSIP_LEN: usize = 104;
/// Length of an UPDATE's body.
const UPDATE_LEN: usize = 8 + NAME_LEN + SLOTS / 8;
/// Length of an IP address field (NET_IP_STR_LEN).
const IP_LEN: usize = 46;
/// The hostname extension's type.
const EXT_HOSTNAME: u16 = 0;

/// A message's header.
#[derive(Clone)]
pub struct Header {
    /// Message type ([`kind`]).
    pub kind: u16,
    /// The sender's client port.
    pub port: u16,
    /// The sender's current epoch.
    pub current_epoch: u64,
    /// The config epoch of the sender, or of its master.
    pub config_epoch: u64,
    /// The sender's replication offset.
    pub offset: u64,
    /// The sender's name.
    pub sender: [u8; NAME_LEN],
    /// The slots of the sender, or of its master.
    pub myslots: Box<[u8; SLOTS / 8]>,
    /// The sender's master; all zero for a master.
    pub slaveof: [u8; NAME_LEN],
    /// The IP the sender announces; empty for "use the socket's".
    pub myip: String,
    /// The sender's plaintext port when its port is TLS.
    pub pport: u16,
    /// The sender's bus port.
    pub cport: u16,
    /// The sender's flags.
    pub flags: u16,
    /// The cluster state from the sender's view (0 ok, 1 fail).
    pub state: u8,
    /// Message flags.
    pub mflags: [u8; 3],
}

/// One gossip entry: what the sender knows of another node.
#[derive(Clone, Debug)]
pub struct Gossip {
    /// The node's name.
    pub name: [u8; NAME_LEN],
    /// When the sender pinged it (seconds).
    pub ping_sent: u32,
    /// When the sender last had its pong (seconds).
    pub pong_received: u32,
    /// Its IP.
    pub ip: String,
    /// Its client port.
    pub port: u16,
    /// Its bus port.
    pub cport: u16,
    /// Its flags.
    pub flags: u16,
    /// Its plaintext port.
    pub pport: u16,
}

/// A message's body.
pub enum Body {
    /// PING, PONG, MEET.
    Ping {
        /// Gossip entries.
        gossip: Vec<Gossip>,
        /// The hostname extension.
        hostname: Option<String>,
    },
    /// FAIL about a node.
    Fail {
        /// The failing node.
        name: [u8; NAME_LEN],
    },
    /// PUBLISH or PUBLISHSHARD.
    Publish {
        /// The channel.
        channel: Vec<u8>,
        /// The message.
        message: Vec<u8>,
    },
    /// UPDATE: a node's slot configuration.
    Update {
        /// Its config epoch.
        config_epoch: u64,
        /// The node.
        name: [u8; NAME_LEN],
        /// Its slots.
        slots: Box<[u8; SLOTS / 8]>,
    },
    /// FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART, and types this
    /// node does not act on.
    Empty,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn name_at(b: &[u8], at: usize) -> [u8; NAME_LEN] {
    let mut n = [0u8; NAME_LEN];
    n.copy_from_slice(&b[at..at + NAME_LEN]);
    n
}

/// A NUL-terminated string in a fixed field.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Decodes a whole message (framed by the bus). None when Redis would
/// ignore it: too short, another protocol version, or a length that does
/// not match its type.
pub fn decode(b: &[u8]) -> Option<(Header, Body)> {
    let totlen = b.len();
    if totlen < HEADER_LEN || u32_at(b, 4) as usize != totlen || u16_at(b, 8) != 1 {
        return None;
    }
    let kind = u16_at(b, 12);
    let count = usize::from(u16_at(b, 14));
    let extensions = u16_at(b, 2214);
    let mut myslots = Box::new([0u8; SLOTS / 8]);
    myslots.copy_from_slice(&b[80..80 + SLOTS / 8]);
    let h = Header {
        kind,
        port: u16_at(b, 10),
        current_epoch: u64_at(b, 16),
        config_epoch: u64_at(b, 24),
        offset: u64_at(b, 32),
        sender: name_at(b, 40),
        myslots,
        slaveof: name_at(b, 2128),
        myip: cstr(&b[2168..2168 + IP_LEN]),
        pport: u16_at(b, 2246),
        cport: u16_at(b, 2248),
        flags: u16_at(b, 2250),
        state: b[2252],
        mflags: [b[2253], b[2254], b[2255]],
    };
    let body = match kind {
        kind::PING | kind::PONG | kind::MEET => {
            let mut at = HEADER_LEN + count * GOSSIP_LEN;
            if at > totlen {
                return None;
            }
            let mut hostname = None;
            if h.mflags[0] & mflag::EXT_DATA != 0 {
                for _ in 0..extensions {
                    if at + 8 > totlen {
                        return None;
                    }
                    let len = u32_at(b, at) as usize;
                    if len % 8 != 0 || len < 8 || totlen - at < len {
                        return None;
                    }
                    if u16_at(b, at + 4) == EXT_HOSTNAME {
                        hostname = Some(cstr(&b[at + 8..at + len]));
                    }
                    at += len;
                }
            }
            if at != totlen {
                return None;
            }
            let gossip = (0..count)
                .map(|i| {
                    let g = HEADER_LEN + i * GOSSIP_LEN;
                    Gossip {
                        name: name_at(b, g),
                        ping_sent: u32_at(b, g + 40),
                        pong_received: u32_at(b, g + 44),
                        ip: cstr(&b[g + 48..g + 48 + IP_LEN]),
                        port: u16_at(b, g + 94),
                        cport: u16_at(b, g + 96),
                        flags: u16_at(b, g + 98),
                        pport: u16_at(b, g + 100),
                    }
                })
                .collect();
            Body::Ping { gossip, hostname }
        }
        kind::FAIL => {
            if totlen != HEADER_LEN + NAME_LEN {
                return None;
            }
            Body::Fail {
                name: name_at(b, HEADER_LEN),
            }
        }
        kind::PUBLISH | kind::PUBLISHSHARD => {
            if totlen < HEADER_LEN + 8 {
                return None;
            }
            let clen = u32_at(b, HEADER_LEN) as usize;
            let mlen = u32_at(b, HEADER_LEN + 4) as usize;
            let data = HEADER_LEN + 8;
            if clen.checked_add(mlen).and_then(|n| n.checked_add(data)) != Some(totlen) {
                return None;
            }
            Body::Publish {
                channel: b[data..data + clen].to_vec(),
                message: b[data + clen..].to_vec(),
            }
        }
        kind::AUTH_REQUEST | kind::AUTH_ACK | kind::MFSTART => {
            if totlen != HEADER_LEN {
                return None;
            }
            Body::Empty
        }
        kind::UPDATE => {
            if totlen != HEADER_LEN + UPDATE_LEN {
                return None;
            }
            let mut slots = Box::new([0u8; SLOTS / 8]);
            slots.copy_from_slice(&b[HEADER_LEN + 48..HEADER_LEN + 48 + SLOTS / 8]);
            Body::Update {
                config_epoch: u64_at(b, HEADER_LEN),
                name: name_at(b, HEADER_LEN + 8),
                slots,
            }
        }
        kind::MODULE => {
            if totlen < HEADER_LEN + 13
                || totlen != HEADER_LEN + 13 + u32_at(b, HEADER_LEN + 8) as usize
            {
                return None;
            }
            Body::Empty
        }
        _ => Body::Empty,
    };
    Some((h, body))
}

/// Writes `s` into a fixed field, NUL-padded (truncated to leave a NUL).
fn put_str(out: &mut [u8], s: &str) {
    let n = s.len().min(out.len() - 1);
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Encodes a message.
pub fn encode(h: &Header, body: &Body) -> Vec<u8> {
    let mut b = vec![0u8; HEADER_LEN];
    b[..4].copy_from_slice(crate::net::bus::SIGNATURE);
    b[8..10].copy_from_slice(&1u16.to_be_bytes());
    b[10..12].copy_from_slice(&h.port.to_be_bytes());
    b[12..14].copy_from_slice(&h.kind.to_be_bytes());
    b[16..24].copy_from_slice(&h.current_epoch.to_be_bytes());
    b[24..32].copy_from_slice(&h.config_epoch.to_be_bytes());
    b[32..40].copy_from_slice(&h.offset.to_be_bytes());
    b[40..80].copy_from_slice(&h.sender);
    b[80..80 + SLOTS / 8].copy_from_slice(&h.myslots[..]);
    b[2128..2168].copy_from_slice(&h.slaveof);
    put_str(&mut b[2168..2168 + IP_LEN], &h.myip);
    b[2246..2248].copy_from_slice(&h.pport.to_be_bytes());
    b[2248..2250].copy_from_slice(&h.cport.to_be_bytes());
    b[2250..2252].copy_from_slice(&h.flags.to_be_bytes());
    b[2252] = h.state;
    b[2253..2256].copy_from_slice(&h.mflags);
    match body {
        Body::Ping { gossip, hostname } => {
            b[14..16].copy_from_slice(&(gossip.len() as u16).to_be_bytes());
            for g in gossip {
                let mut e = [0u8; GOSSIP_LEN];
                e[..40].copy_from_slice(&g.name);
                e[40..44].copy_from_slice(&g.ping_sent.to_be_bytes());
                e[44..48].copy_from_slice(&g.pong_received.to_be_bytes());
                put_str(&mut e[48..48 + IP_LEN], &g.ip);
                e[94..96].copy_from_slice(&g.port.to_be_bytes());
                e[96..98].copy_from_slice(&g.cport.to_be_bytes());
                e[98..100].copy_from_slice(&g.flags.to_be_bytes());
                e[100..102].copy_from_slice(&g.pport.to_be_bytes());
                b.extend_from_slice(&e);
            }
            if let Some(host) = hostname.as_deref().filter(|h| !h.is_empty()) {
                let padded = (host.len() + 1).div_ceil(8) * 8;
                let len = 8 + padded;
                b.extend_from_slice(&(len as u32).to_be_bytes());
                b.extend_from_slice(&EXT_HOSTNAME.to_be_bytes());
                b.extend_from_slice(&[0, 0]);
                b.extend_from_slice(host.as_bytes());
                b.resize(b.len() + padded - host.len(), 0);
                b[2253] |= mflag::EXT_DATA;
                b[2214..2216].copy_from_slice(&1u16.to_be_bytes());
            }
        }
        Body::Fail { name } => b.extend_from_slice(name),
        Body::Publish { channel, message } => {
            b.extend_from_slice(&(channel.len() as u32).to_be_bytes());
            b.extend_from_slice(&(message.len() as u32).to_be_bytes());
            b.extend_from_slice(channel);
            b.extend_from_slice(message);
        }
        Body::Update {
            config_epoch,
            name,
            slots,
        } => {
            b.extend_from_slice(&config_epoch.to_be_bytes());
            b.extend_from_slice(name);
            b.extend_from_slice(&slots[..]);
        }
        Body::Empty => {}
    }
    let len = b.len() as u32;
    b[4..8].copy_from_slice(&len.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u16) -> Header {
        Header {
            kind,
            port: 7000,
            current_epoch: 5,
            config_epoch: 3,
            offset: 1234,
            sender: [b'a'; NAME_LEN],
            myslots: Box::new([0x0f; SLOTS / 8]),
            slaveof: [0; NAME_LEN],
            myip: "127.0.0.1".into(),
            pport: 0,
            cport: 17000,
            flags: 1,
            state: 0,
            mflags: [0; 3],
        }
    }

    #[test]
    fn ping_round_trips_with_gossip_and_hostname() {
        let g = Gossip {
            name: [b'b'; NAME_LEN],
            ping_sent: 1,
            pong_received: 2,
            ip: "10.0.0.2".into(),
            port: 7001,
            cport: 17001,
            flags: 2,
            pport: 0,
        };
        let bytes = encode(
            &header(kind::PING),
            &Body::Ping {
                gossip: vec![g],
                hostname: Some("host-a".into()),
            },
        );
        assert_eq!(bytes.len(), HEADER_LEN + GOSSIP_LEN + 16);
        let (h, body) = decode(&bytes).expect("valid");
        assert_eq!(
            (h.port, h.cport, h.offset, h.myip.as_str()),
            (7000, 17000, 1234, "127.0.0.1")
        );
        let Body::Ping { gossip, hostname } = body else {
            panic!("a ping");
        };
        assert_eq!(hostname.as_deref(), Some("host-a"));
        assert_eq!((gossip[0].ip.as_str(), gossip[0].port), ("10.0.0.2", 7001));
    }

    #[test]
    fn lengths_that_do_not_match_the_type_are_ignored() {
        let mut bytes = encode(&header(kind::FAIL), &Body::Fail { name: [b'c'; 40] });
        assert!(decode(&bytes).is_some());
        bytes.push(0);
        let len = bytes.len() as u32;
        bytes[4..8].copy_from_slice(&len.to_be_bytes());
        assert!(decode(&bytes).is_none());
    }
}
