//! The node table as text: CLUSTER NODES's lines, which are also the
//! cluster configuration file (`nodes.conf`), written after every change
//! and read back at start (Redis's clusterGenNodesDescription,
//! clusterSaveConfig, clusterLoadConfig and clusterLockConfig).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use super::{node_flag as nf, ClusterState, Node, NodeKey, PORT_INCR, SLOTS};

impl ClusterState {
    /// One node's line, without the newline (clusterGenNodeDescription):
    /// id, address, flags, master, ping and pong times, epoch, link state,
    /// slots, and for this node the slots it migrates or imports.
    /// `use_pport` shows the plaintext port (a plain client of a TLS
    /// cluster); nodes.conf has the announced one.
    pub fn describe(&self, key: NodeKey, use_pport: bool) -> String {
        let n = self.node(key);
        let mut s = String::with_capacity(128);
        let port = if use_pport && n.pport != 0 {
            n.pport
        } else {
            n.port
        };
        let _ = write!(s, "{} {}:{}@{}", n.name, n.ip, port, n.cport);
        if !n.hostname.is_empty() {
            let _ = write!(s, ",{}", n.hostname);
        }
        let master = match n.master {
            Some(m) => self.node(m).name.as_str(),
            None => "-",
        };
        let epoch = match n.master {
            Some(m) if n.is_replica() => self.node(m).config_epoch,
            _ => n.config_epoch,
        };
        let connected = n.link.is_some() || n.flags & nf::MYSELF != 0;
        let _ = write!(
            s,
            " {} {} {} {} {} {}",
            n.flag_names(),
            master,
            n.ping_sent,
            n.pong_received,
            epoch,
            if connected {
                "connected"
            } else {
                "disconnected"
            }
        );
        push_ranges(&mut s, n);
        if n.flags & nf::MYSELF != 0 {
            for slot in 0..SLOTS as u16 {
                if let Some(to) = self.migrating_to.get(&slot) {
                    let _ = write!(s, " [{slot}->-{}]", self.node(*to).name);
                } else if let Some(from) = self.importing_from.get(&slot) {
                    let _ = write!(s, " [{slot}-<-{}]", self.node(*from).name);
                }
            }
        }
        s
    }

    /// Every node's line but those with a flag of `skip`, each ending
    /// with a newline (clusterGenNodesDescription).
    pub fn describe_all(&self, skip: u16, use_pport: bool) -> String {
        let mut out = String::new();
        for (k, n) in self.nodes() {
            if n.flags & skip != 0 {
                continue;
            }
            out.push_str(&self.describe(k, use_pport));
            out.push('\n');
        }
        out
    }

    /// Writes nodes.conf in place (clusterSaveConfig): the node lines but
    /// those in handshake, then the epochs. A longer old file is padded
    /// with newlines in the one write, then truncated, so a crash leaves
    /// the old file or the new one.
    pub fn save_config(&mut self, fsync: bool) -> std::io::Result<()> {
        self.todo &= !super::todo::SAVE_CONFIG;
        let mut text = self.describe_all(nf::HANDSHAKE, false);
        let _ = writeln!(
            text,
            "vars currentEpoch {} lastVoteEpoch {}",
            self.current_epoch, self.last_vote_epoch
        );
        let content = text.len();
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.config_file)?;
        let old = f.metadata()?.len() as usize;
        let mut bytes = text.into_bytes();
        if old > content {
            bytes.resize(old, b'\n');
        }
        f.write_all(&bytes)?;
        if fsync {
            self.todo &= !super::todo::FSYNC_CONFIG;
            f.sync_all()?;
        }
        if bytes.len() != content {
            // Not critical: the padding is blank lines.
            let _ = f.set_len(content as u64);
        }
        Ok(())
    }

    /// Locks nodes.conf for this process's life (clusterLockConfig), so two
    /// nodes cannot share one file.
    pub fn lock_config(&mut self) -> Result<(), String> {
        use std::os::unix::io::AsRawFd;
        let path = self.config_file.display().to_string();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.config_file)
            .map_err(|e| format!("Can't open {path} in order to acquire a lock: {e}"))?;
        // SAFETY: flock on a descriptor this File owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == -1 {
            let e = std::io::Error::last_os_error();
            return Err(if e.kind() == std::io::ErrorKind::WouldBlock {
                format!(
                    "Sorry, the cluster configuration file {path} is already used by a \
                     different Redis Cluster node. Please make sure that different nodes use \
                     different cluster configuration files."
                )
            } else {
                format!("Impossible to lock {path}: {e}")
            });
        }
        self.lock = Some(f);
        Ok(())
    }

    /// Reads nodes.conf (clusterLoadConfig): Ok(false) when it is missing
    /// or empty, Err on a malformed file.
    pub fn load_config(&mut self, path: &Path, now: u64) -> Result<bool, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => {
                return Err(format!(
                    "Loading the cluster node config from {}: {e}",
                    path.display()
                ))
            }
        };
        if text.is_empty() {
            return Ok(false);
        }
        let corrupt = || "Unrecoverable error: corrupted cluster config file.".to_string();
        // The table starts empty: the file names this node.
        self.nodes.clear();
        self.by_name.clear();
        let mut myself = None;
        for line in text.lines() {
            if line.is_empty() {
                continue;
            }
            let (mut bytes, mut lens) = (Vec::new(), Vec::new());
            crate::util::splitargs::split_args(line.as_bytes(), &mut bytes, &mut lens)
                .map_err(|_| corrupt())?;
            let mut at = 0;
            let argv: Vec<String> = lens
                .iter()
                .map(|&l| {
                    at += l;
                    String::from_utf8_lossy(&bytes[at - l..at]).into_owned()
                })
                .collect();
            if argv.is_empty() {
                continue;
            }
            if argv[0].eq_ignore_ascii_case("vars") {
                if argv.len() % 2 == 0 {
                    return Err(corrupt());
                }
                for pair in argv[1..].chunks(2) {
                    let v = pair[1].parse().unwrap_or(0);
                    if pair[0].eq_ignore_ascii_case("currentEpoch") {
                        self.current_epoch = v;
                    } else if pair[0].eq_ignore_ascii_case("lastVoteEpoch") {
                        self.last_vote_epoch = v;
                    } else {
                        tracing::warn!("Skipping unknown cluster config variable '{}'", pair[0]);
                    }
                }
                continue;
            }
            if argv.len() < 8 || !super::valid_name(argv[0].as_bytes()) {
                return Err(corrupt());
            }
            let key = self.find_or_add(&argv[0], now);
            let (addr, hostname) = match argv[1].split_once(',') {
                Some((a, h)) => (a, h.to_string()),
                None => (argv[1].as_str(), String::new()),
            };
            let (ip, ports) = addr.rsplit_once(':').ok_or_else(corrupt)?;
            let (port, cport) = match ports.split_once('@') {
                Some((p, c)) => (atoi(p), Some(atoi(c))),
                None => (atoi(ports), None),
            };
            {
                let n = self.node_mut(key);
                n.hostname = hostname;
                n.ip = ip.to_string();
                n.port = port as u16;
                n.cport = cport.unwrap_or(port + PORT_INCR as i64) as u16;
            }
            for flag in argv[2].split(',') {
                let bit = match flag.to_ascii_lowercase().as_str() {
                    "myself" => {
                        if myself.is_some() {
                            return Err(corrupt());
                        }
                        myself = Some(key);
                        nf::MYSELF
                    }
                    "master" => nf::MASTER,
                    "slave" => nf::SLAVE,
                    "fail?" => nf::PFAIL,
                    "fail" => {
                        self.node_mut(key).fail_time = now;
                        nf::FAIL
                    }
                    "handshake" => nf::HANDSHAKE,
                    "noaddr" => nf::NOADDR,
                    "nofailover" => nf::NOFAILOVER,
                    "noflags" => 0,
                    _ => return Err("Unknown flag in redis cluster config file".into()),
                };
                self.node_mut(key).flags |= bit;
            }
            if !argv[3].starts_with('-') {
                if !super::valid_name(argv[3].as_bytes()) {
                    return Err(corrupt());
                }
                let master = self.find_or_add(&argv[3], now);
                self.node_mut(key).master = Some(master);
                self.add_replica(master, key);
            }
            if atoi(&argv[4]) != 0 {
                self.node_mut(key).ping_sent = now;
            }
            if atoi(&argv[5]) != 0 {
                self.node_mut(key).pong_received = now;
            }
            let n = self.node(key);
            let epoch = if n.is_replica() && n.master.is_some() {
                0
            } else {
                argv[6].parse().unwrap_or(0)
            };
            self.node_mut(key).config_epoch = epoch;
            for arg in &argv[8..] {
                if let Some(rest) = arg.strip_prefix('[') {
                    // [slot->-node] or [slot-<-node]
                    let (slot, rest) = rest.split_once('-').ok_or_else(corrupt)?;
                    let slot = atoi(slot);
                    if !(0..SLOTS as i64).contains(&slot) || rest.len() < 2 {
                        return Err(corrupt());
                    }
                    let importing = rest.starts_with('<');
                    let name = rest[2..].strip_suffix(']').ok_or_else(corrupt)?;
                    if !super::valid_name(name.as_bytes()) {
                        return Err(corrupt());
                    }
                    let other = self.find_or_add(name, now);
                    if importing {
                        self.importing_from.insert(slot as u16, other);
                    } else {
                        self.migrating_to.insert(slot as u16, other);
                    }
                    continue;
                }
                let (start, stop) = match arg.split_once('-') {
                    Some((a, b)) => (atoi(a), atoi(b)),
                    None => (atoi(arg), atoi(arg)),
                };
                let range = 0..SLOTS as i64;
                if !range.contains(&start) || !range.contains(&stop) {
                    return Err(corrupt());
                }
                for slot in start..=stop {
                    self.add_slot(key, slot as usize);
                }
            }
        }
        let Some(me) = myself else {
            return Err(corrupt());
        };
        self.myself = me;
        tracing::info!("Node configuration loaded, I'm {}", self.me().name);
        let max = self.max_epoch();
        if max > self.current_epoch {
            self.current_epoch = max;
        }
        Ok(true)
    }

    fn find_or_add(&mut self, name: &str, now: u64) -> NodeKey {
        match self.lookup(name.as_bytes()) {
            Some(k) => k,
            None => self.add_node(Node::new(name.to_string(), 0, now)),
        }
    }
}

use crate::util::num::atoi;

/// Appends a node's slots as " a-b c" (representSlotInfo).
fn push_ranges(s: &mut String, n: &Node) {
    if n.numslots == 0 {
        return;
    }
    let mut slot = 0;
    while slot < SLOTS {
        if !n.has_slot(slot) {
            slot += 1;
            continue;
        }
        let start = slot;
        while slot + 1 < SLOTS && n.has_slot(slot + 1) {
            slot += 1;
        }
        if start == slot {
            let _ = write!(s, " {start}");
        } else {
            let _ = write!(s, " {start}-{slot}");
        }
        slot += 1;
    }
}
