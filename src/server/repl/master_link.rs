//! A replica's side of the link to its master up to the stream (Redis's
//! `syncWithMaster` and `readSyncBulkPayload`): connect, PING, AUTH,
//! REPLCONF listening-port / ip-address / capa, PSYNC, and on
//! `+FULLRESYNC` the snapshot, as `$<length>` or as a diskless transfer
//! between `$EOF:<mark>` and the same mark.
//!
//! It runs on a thread of its own with blocking reads bounded by
//! `repl-timeout`, so the event loop never waits for the master; the
//! engine collects the outcome and adopts the socket as the master client.
//! With `repl-diskless-load`, the snapshot is loaded as it arrives, into a
//! keyspace of its own that the engine swaps in (Redis's diskless load).

pub use crate::net::conn::LinkSock;
use crate::persist::rdb::load::{load_rdb_streamed, Incoming, LoadOptions, LoadReport};
use crate::store::Store;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the replica tells its master and asks of it.
#[derive(Clone, Debug)]
pub struct HandshakeConf {
    /// The master's host.
    pub host: String,
    /// The master's port.
    pub port: u16,
    /// This server's port (`REPLCONF listening-port`).
    pub listening_port: u16,
    /// `replica-announce-ip`.
    pub announce_ip: Option<String>,
    /// `bind-source-addr`: the local address the link leaves from.
    pub source_addr: Option<String>,
    /// `masteruser` and `masterauth`.
    pub auth: Option<(Option<String>, String)>,
    /// The history this replica has: its replication ID and the offset of
    /// the next byte it needs (`PSYNC ? -1` when it has none).
    pub psync: Option<(String, u64)>,
    /// `repl-timeout`.
    pub timeout: Duration,
    /// Ask the master to become this server's replica (`PSYNC ...
    /// FAILOVER`: this server is the old master of a FAILOVER).
    pub failover: bool,
    /// `tls-replication`: the contexts to dial the master over TLS with.
    pub tls: Option<crate::net::tls::Contexts>,
    /// `repl-diskless-load` in force (swapdb, or on-empty-db with no
    /// keys): a snapshot is loaded as it arrives, into a keyspace of this
    /// many databases, with these options.
    pub diskless_load: Option<(usize, LoadOptions)>,
    /// The load replaces the data set in place (`on-empty-db`), not
    /// beside it (`swapdb`): Redis's readSyncBulkPayload drops the cached
    /// master and flushes the old data before loading, and logs so there.
    pub diskless_in_place: bool,
    /// `dir`: where a snapshot loaded from disk is written first, as
    /// `temp-<unixtime>.<pid>.rdb`.
    pub dir: PathBuf,
}

/// How far a handshake got ([`Handshake::stage`]).
pub mod stage {
    /// Connecting.
    pub const CONNECTING: u8 = 0;
    /// Connected, introducing itself (ROLE's `handshake`).
    pub const HANDSHAKE: u8 = 1;
    /// PSYNC sent: what fails from here on is the master's refusal.
    pub const PSYNC_SENT: u8 = 2;
    /// Receiving the snapshot of a full resynchronization.
    pub const TRANSFER: u8 = 3;
}

/// Redis's log line for a master silent past `repl-timeout` before the
/// snapshot (replicationCron's handshake timeout).
const CONNECT_TIMEOUT: &str = "Timeout connecting to the MASTER...";
/// The same while the snapshot arrives.
const TRANSFER_TIMEOUT: &str = "Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.";

/// True for the error a read or write past its timeout gives.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// How the master answered PSYNC.
pub enum Synced {
    /// A full resynchronization: the master's history and the snapshot.
    Full {
        /// The master's replication ID.
        replid: String,
        /// The offset the snapshot stands for.
        offset: u64,
        /// The snapshot.
        payload: Payload,
    },
    /// The master continues from the replica's offset; a new ID when it
    /// changed (the master was promoted meanwhile).
    Partial {
        /// `+CONTINUE <replid>`.
        replid: Option<String>,
    },
}

/// A full resynchronization's snapshot.
pub enum Payload {
    /// The RDB image, to load (`repl-diskless-load disabled`), and the
    /// temp file it was written to, for the engine to sync and rename over
    /// `dbfilename` before loading (Redis's readSyncBulkPayload).
    Rdb(Vec<u8>, ReceivedFile),
    /// Loaded as it arrived, into a keyspace of its own that takes the
    /// place of the old one (Redis's diskless load).
    Loaded(Box<Store>, LoadReport),
}

/// A link ready to carry the stream.
pub struct Linked {
    /// The socket, blocking, to be adopted by the event loop.
    pub sock: LinkSock,
    /// Stream bytes read past the snapshot.
    pub leftover: Vec<u8>,
    /// What PSYNC gave.
    pub synced: Synced,
}

/// A handshake running on its thread.
pub struct Handshake {
    done: Receiver<Result<Linked, String>>,
    /// How far it got (a [`stage`] constant).
    pub stage: Arc<AtomicU8>,
    /// The master's replication ID, once it answered `+FULLRESYNC`.
    pub full_replid: Arc<Mutex<Option<String>>>,
    sock: Arc<Mutex<Option<TcpStream>>>,
}

impl Drop for Handshake {
    fn drop(&mut self) {
        // Given up before it ended: its thread's reads fail at once.
        if let Some(s) = self.sock.lock().ok().and_then(|mut s| s.take()) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// What the link thread tells the executor as it goes.
#[derive(Clone, Default)]
struct Progress {
    stage: Arc<AtomicU8>,
    full_replid: Arc<Mutex<Option<String>>>,
    /// The socket while the handshake runs, so that a handshake given up
    /// closes it at once (Redis's cancelReplicationHandshake): the master
    /// then sees this replica go.
    sock: Arc<Mutex<Option<TcpStream>>>,
}

impl Progress {
    fn reach(&self, stage: u8) {
        self.stage.store(stage, Ordering::Relaxed);
    }
}

impl Handshake {
    /// Starts the handshake with `conf.host:conf.port`.
    pub fn start(conf: HandshakeConf) -> Result<Handshake, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let progress = Progress::default();
        let reached = progress.clone();
        std::thread::Builder::new()
            .name("ferrokv-master-link".into())
            .spawn(move || {
                // Given up meanwhile, the result is dropped, and with it
                // the snapshot's temp file.
                let _ = tx.send(run(&conf, &reached));
            })
            .map_err(|e| e.to_string())?;
        Ok(Handshake {
            done: rx,
            stage: progress.stage,
            full_replid: progress.full_replid,
            sock: progress.sock,
        })
    }

    /// How far it got (a [`stage`] constant).
    pub fn stage(&self) -> u8 {
        self.stage.load(Ordering::Relaxed)
    }

    /// The outcome, once the handshake ended.
    pub fn poll(&self) -> Option<Result<Linked, String>> {
        match self.done.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err("the link thread died".into())),
        }
    }
}

/// Most of a snapshot's announced length reserved before its bytes
/// arrive: a master's `$<length>` is not trusted with an allocation.
const PAYLOAD_RESERVE_MAX: usize = 64 * 1024 * 1024;

/// Reads lines and payloads off the socket through one buffer.
struct Reader<S> {
    sock: S,
    buf: Vec<u8>,
    pos: usize,
    /// Each read's landing place, zeroed once rather than per read.
    chunk: Box<[u8]>,
    /// What a read past the timeout reports.
    timeout_msg: &'static str,
}

/// Told the payload read so far, each time more of it arrives.
type Arrived<'a> = dyn FnMut(&[u8]) -> Result<(), String> + 'a;

impl<S> Reader<S> {
    fn new(sock: S) -> Self {
        Reader {
            sock,
            buf: Vec::new(),
            pos: 0,
            chunk: vec![0u8; 16 * 1024].into_boxed_slice(),
            timeout_msg: CONNECT_TIMEOUT,
        }
    }
}

impl<S: Read + Write> Reader<S> {
    fn fill(&mut self) -> Result<(), String> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        match self.sock.read(&mut self.chunk) {
            Ok(0) => Err("connection closed by the master".into()),
            Ok(n) => {
                self.buf.extend_from_slice(&self.chunk[..n]);
                Ok(())
            }
            Err(e) if timed_out(&e) => Err(self.timeout_msg.into()),
            Err(e) => Err(format!("reading from the master: {e}")),
        }
    }

    /// One line without its CRLF.
    fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = &self.buf[self.pos..self.pos + i];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let s = String::from_utf8_lossy(line).into_owned();
                self.pos += i + 1;
                return Ok(s);
            }
            if self.buf.len() - self.pos > 64 * 1024 {
                return Err("the master sent an overlong line".into());
            }
            self.fill()?;
        }
    }

    /// Exactly `n` bytes.
    fn exact(&mut self, n: usize) -> Result<Vec<u8>, String> {
        self.exact_with(n, &mut |_| Ok(()))
    }

    /// Exactly `n` bytes, shown to `arrived` as they arrive.
    fn exact_with(&mut self, n: usize, arrived: &mut Arrived) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(n.min(PAYLOAD_RESERVE_MAX));
        loop {
            let take = (self.buf.len() - self.pos).min(n - out.len());
            out.extend_from_slice(&self.buf[self.pos..self.pos + take]);
            self.pos += take;
            arrived(&out)?;
            if out.len() == n {
                return Ok(out);
            }
            self.fill()?;
        }
    }

    /// Everything up to `mark`, which ends the diskless payload; what
    /// surely precedes the mark is shown to `arrived` as it arrives.
    fn until_mark(&mut self, mark: &[u8], arrived: &mut Arrived) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            out.extend_from_slice(&self.buf[self.pos..]);
            self.pos = self.buf.len();
            if out.ends_with(mark) {
                out.truncate(out.len() - mark.len());
                arrived(&out)?;
                return Ok(out);
            }
            arrived(&out[..out.len().saturating_sub(mark.len())])?;
            self.fill()?;
        }
    }

    fn send(&mut self, args: &[&[u8]]) -> Result<(), String> {
        let mut buf = Vec::new();
        crate::net::request::encode(&mut buf, args);
        self.sock.write_all(&buf).map_err(|e| {
            if timed_out(&e) {
                self.timeout_msg.to_string()
            } else {
                format!("writing to the master: {e}")
            }
        })
    }

    /// Sends a command and reads its one-line reply.
    fn ask(&mut self, args: &[&[u8]]) -> Result<String, String> {
        self.send(args)?;
        self.line()
    }
}

/// Connects to `addr`, from `source` when given (Redis's connConnect with
/// `bind-source-addr`).
fn connect(
    addr: std::net::SocketAddr,
    source: Option<&str>,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    let Some(source) = source else {
        return TcpStream::connect_timeout(&addr, timeout);
    };
    let ip: std::net::IpAddr = source.parse().map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "bad bind-source-addr")
    })?;
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    sock.bind(&std::net::SocketAddr::new(ip, 0).into())?;
    sock.connect_timeout(&addr.into(), timeout)?;
    Ok(sock.into())
}

fn run(conf: &HandshakeConf, reached: &Progress) -> Result<Linked, String> {
    let addr = (conf.host.as_str(), conf.port)
        .to_socket_addrs()
        .map_err(|e| {
            // Redis's: getaddrinfo's own message (gai_strerror).
            let e = e.to_string();
            let gai = e.strip_prefix("failed to lookup address information: ");
            format!("Unable to connect to MASTER: {}", gai.unwrap_or(&e))
        })?
        .next()
        .ok_or_else(|| "Unable to connect to MASTER: Name or service not known".to_string())?;
    // Redis's connectWithMaster logs it as the connect starts (for an
    // address, the executor already did); the event line once it completes.
    if !super::is_address(&conf.host) {
        tracing::info!("MASTER <-> REPLICA sync started");
    }
    let sock = connect(addr, conf.source_addr.as_deref(), conf.timeout).map_err(|e| {
        if timed_out(&e) {
            CONNECT_TIMEOUT.to_string()
        } else {
            format!(
                "Error condition on socket for SYNC: {}",
                crate::util::process::strerror(&e)
            )
        }
    })?;
    if let Ok(mut slot) = reached.sock.lock() {
        *slot = sock.try_clone().ok();
    }
    reached.reach(stage::HANDSHAKE);
    tracing::info!("Non blocking connect for SYNC fired the event.");
    sock.set_read_timeout(Some(conf.timeout))
        .map_err(|e| e.to_string())?;
    sock.set_write_timeout(Some(conf.timeout))
        .map_err(|e| e.to_string())?;
    let _ = sock.set_nodelay(true);
    let sock = match &conf.tls {
        Some(ctx) => LinkSock::Tls(
            crate::net::tls::connect_blocking(ctx, sock)
                .map_err(|e| format!("Error condition on socket for SYNC: {e}"))?,
        ),
        None => LinkSock::Plain(sock),
    };
    let mut r = Reader::new(sock);
    let synced = converse(&mut r, conf, reached)?;
    // The executor adopts the socket: it is no longer the handshake's.
    if let Ok(mut slot) = reached.sock.lock() {
        slot.take();
    }
    let leftover = r.buf[r.pos..].to_vec();
    let sock = r.sock;
    let raw = match &sock {
        LinkSock::Plain(s) => socket2::SockRef::from(s),
        LinkSock::Tls(s) => socket2::SockRef::from(s.get_ref().tcp()),
    };
    raw.set_read_timeout(None).map_err(|e| e.to_string())?;
    raw.set_write_timeout(None).map_err(|e| e.to_string())?;
    Ok(Linked {
        sock,
        leftover,
        synced,
    })
}

/// Runs the handshake over any byte stream, as [`Handshake`] does over its
/// socket: returns what PSYNC gave and the stream bytes read past it. The
/// fuzz target `repl_handshake` plays the master through this.
pub fn handshake_over<S: Read + Write>(
    sock: S,
    conf: &HandshakeConf,
) -> Result<(Synced, Vec<u8>), String> {
    let mut r = Reader::new(sock);
    let synced = converse(&mut r, conf, &Progress::default())?;
    Ok((synced, r.buf[r.pos..].to_vec()))
}

/// The conversation with the master, from PING to the end of the snapshot.
fn converse<S: Read + Write>(
    r: &mut Reader<S>,
    conf: &HandshakeConf,
    reached: &Progress,
) -> Result<Synced, String> {
    // A master that wants a password answers PING with -NOAUTH; that is
    // still a live master (Redis accepts -NOPERM and this -ERR too).
    let pong = r.ask(&[b"PING"])?;
    let ok = pong.starts_with('+')
        || pong.starts_with("-NOAUTH")
        || pong.starts_with("-NOPERM")
        || pong.starts_with("-ERR operation not permitted");
    if !ok {
        return Err(format!("Error reply to PING from master: '{pong}'"));
    }
    tracing::info!("Master replied to PING, replication can continue...");
    if let Some((user, pass)) = &conf.auth {
        let reply = match user {
            Some(u) => r.ask(&[b"AUTH", u.as_bytes(), pass.as_bytes()])?,
            None => r.ask(&[b"AUTH", pass.as_bytes()])?,
        };
        if reply.starts_with('-') {
            return Err(format!("Unable to AUTH to MASTER: {reply}"));
        }
    }
    let port = conf.listening_port.to_string();
    let reply = r.ask(&[b"REPLCONF", b"listening-port", port.as_bytes()])?;
    if reply.starts_with('-') {
        tracing::info!(
            "(Non critical) Master does not understand REPLCONF listening-port: {reply}"
        );
    }
    if let Some(ip) = &conf.announce_ip {
        let reply = r.ask(&[b"REPLCONF", b"ip-address", ip.as_bytes()])?;
        if reply.starts_with('-') {
            tracing::info!(
                "(Non critical) Master does not understand REPLCONF ip-address: {reply}"
            );
        }
    }
    let reply = r.ask(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])?;
    if reply.starts_with('-') {
        tracing::info!("(Non critical) Master does not understand REPLCONF capa: {reply}");
    }
    let (replid, offset) = match &conf.psync {
        Some((id, next)) => {
            tracing::info!("Trying a partial resynchronization (request {id}:{next}).");
            (id.clone(), next.to_string())
        }
        None => {
            tracing::info!("Partial resynchronization not possible (no cached master)");
            ("?".to_string(), "-1".to_string())
        }
    };
    reached.reach(stage::PSYNC_SENT);
    if conf.failover {
        r.send(&[b"PSYNC", replid.as_bytes(), offset.as_bytes(), b"FAILOVER"])?;
    } else {
        r.send(&[b"PSYNC", replid.as_bytes(), offset.as_bytes()])?;
    }
    // The master sends newlines to keep the link alive until it answers.
    let reply = loop {
        let line = r.line()?;
        if !line.is_empty() {
            break line;
        }
    };
    let synced = if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
        let mut parts = rest.split(' ');
        let id = parts.next().unwrap_or_default().to_string();
        let offset = parts
            .next()
            .and_then(|o| o.parse::<u64>().ok())
            .ok_or_else(|| format!("bad FULLRESYNC reply: '{reply}'"))?;
        tracing::info!("Full resync from master: {id}:{offset}");
        if let Ok(mut slot) = reached.full_replid.lock() {
            *slot = Some(id.clone());
        }
        r.timeout_msg = TRANSFER_TIMEOUT;
        let payload = read_payload(r, conf, reached)?;
        Synced::Full {
            replid: id,
            offset,
            payload,
        }
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let id = rest.trim();
        tracing::info!("Successful partial resynchronization with master.");
        Synced::Partial {
            replid: (!id.is_empty()).then(|| id.to_string()),
        }
    } else {
        return Err(format!("Unexpected reply to PSYNC from master: {reply}"));
    };
    Ok(synced)
}

/// The snapshot after `+FULLRESYNC`: newlines the master sends while it
/// prepares, then `$<length>` and the bytes, or `$EOF:<40-byte mark>`, the
/// bytes and the mark. Read whole, or loaded as it arrives.
fn read_payload<S: Read + Write>(
    r: &mut Reader<S>,
    conf: &HandshakeConf,
    reached: &Progress,
) -> Result<Payload, String> {
    let mut sync_file = match conf.diskless_load {
        None => Some(SyncFile::create(&conf.dir)?),
        Some(_) => None,
    };
    let header = loop {
        let line = r.line()?;
        if !line.is_empty() {
            break line;
        }
    };
    if header.starts_with('-') {
        return Err(format!(
            "MASTER aborted replication with an error: {header}"
        ));
    }
    let Some(spec) = header.strip_prefix('$') else {
        return Err(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{header}'), are you sure the host and port are right?"
        ));
    };
    reached.reach(stage::TRANSFER);
    let to = if conf.diskless_load.is_some() {
        "to parser"
    } else {
        "to disk"
    };
    let (mark, len) = match spec.strip_prefix("EOF:") {
        Some(mark) => {
            if mark.len() != 40 {
                return Err("bad EOF mark from MASTER".into());
            }
            tracing::info!(
                "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {to}"
            );
            (Some(mark.as_bytes().to_vec()), None)
        }
        None => {
            let len: usize = spec
                .parse()
                .map_err(|_| format!("bad payload length from MASTER: '{header}'"))?;
            tracing::info!("MASTER <-> REPLICA sync: receiving {len} bytes from master {to}");
            (None, Some(len))
        }
    };
    let Some((databases, opts)) = conf.diskless_load else {
        let Some(mut file) = sync_file.take() else {
            return Err("no temp file for the snapshot".into());
        };
        // Written as it arrives, as Redis's readSyncBulkPayload does.
        let mut arrived = |so_far: &[u8]| file.catch_up(so_far);
        let rdb = match (mark, len) {
            (Some(mark), _) => r.until_mark(&mark, &mut arrived)?,
            (None, Some(len)) => r.exact_with(len, &mut arrived)?,
            (None, None) => return Err("no payload length".into()),
        };
        return Ok(Payload::Rdb(rdb, file.received()));
    };
    if conf.diskless_in_place {
        // The engine drops the cached master (offered above as `psync`)
        // and adopts the loaded set once it is whole; the log reads as
        // Redis's, which does both here.
        if conf.psync.is_some() {
            tracing::info!("Discarding previously cached master state.");
        }
        tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
    }
    tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
    let mut store = Box::new(Store::new(databases));
    store.set_now(opts.now_ms);
    let mut incoming = Arriving {
        r,
        left: len,
        read: 0,
    };
    let report = load_rdb_streamed(&mut incoming, &mut store, opts).map_err(|e| {
        // Redis's rdbReportError line (a short read included), which the
        // master's tests wait for, then its readSyncBulkPayload line.
        tracing::warn!(
            "Internal error in RDB reading offset {}: {e}",
            incoming.read
        );
        "Failed trying to load the MASTER synchronization DB from socket, check server logs."
            .to_string()
    })?;
    match (mark, len) {
        (Some(mark), _) => {
            let end = r.exact(mark.len())?;
            if end != mark {
                return Err("Replication stream EOF marker is broken".into());
            }
        }
        (None, Some(_)) if incoming.left != Some(0) => {
            return Err("the master's snapshot holds bytes past the RDB's end".into());
        }
        _ => {}
    }
    store.stats.dirty = 0;
    Ok(Payload::Loaded(store, report))
}

/// Bytes written to the temp file between syncs, as Redis's
/// REPL_MAX_WRITTEN_BEFORE_FSYNC: a long transfer does not leave the final
/// fsync, which blocks the engine, all of the file to write.
const WRITTEN_BEFORE_SYNC: usize = 8 * 1024 * 1024;

/// The temp file a snapshot loaded from disk is written to as it arrives
/// (Redis's `repl_transfer_tmpfile`); removed unless the whole snapshot
/// reaches the engine.
struct SyncFile {
    file: std::fs::File,
    path: PathBuf,
    /// Payload bytes written so far, and synced so far.
    written: usize,
    synced: usize,
    /// Renamed over `dbfilename`: no longer the temp file to remove.
    placed: bool,
}

impl SyncFile {
    /// Opens `temp-<unixtime>.<pid>.rdb` in `dir`, a new file; while a
    /// handshake given up in the same second still holds that name, the
    /// next free `temp-<unixtime>.<pid>.<n>.rdb`.
    fn create(dir: &Path) -> Result<SyncFile, String> {
        let now = crate::util::clock::real_now_ms() / 1000;
        let pid = std::process::id();
        let mut n = 0;
        loop {
            let path = match n {
                0 => dir.join(format!("temp-{now}.{pid}.rdb")),
                n => dir.join(format!("temp-{now}.{pid}.{n}.rdb")),
            };
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(SyncFile {
                        file,
                        path,
                        written: 0,
                        synced: 0,
                        placed: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => {
                    return Err(format!(
                        "Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}"
                    ))
                }
            }
        }
    }

    /// Writes what of `payload` (the payload read so far) is not yet in
    /// the file, syncing every [`WRITTEN_BEFORE_SYNC`] bytes.
    fn catch_up(&mut self, payload: &[u8]) -> Result<(), String> {
        let Some(new) = payload.get(self.written..).filter(|b| !b.is_empty()) else {
            return Ok(());
        };
        self.file.write_all(new).map_err(|e| {
            format!("Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization: {e}")
        })?;
        self.written = payload.len();
        if self.written - self.synced >= WRITTEN_BEFORE_SYNC {
            // A failed sync here is found again by the final one.
            let _ = self.file.sync_data();
            self.synced = self.written;
        }
        Ok(())
    }

    /// The file, written whole, handed to the engine.
    fn received(self) -> ReceivedFile {
        ReceivedFile(self)
    }
}

impl Drop for SyncFile {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A full resynchronization's snapshot, written whole to its temp file but
/// not yet synced; removed unless placed.
pub struct ReceivedFile(SyncFile);

impl ReceivedFile {
    /// Syncs the file, renames it over `dest` (named `dbfilename` in the
    /// messages) and syncs the directory, as Redis's readSyncBulkPayload
    /// does before loading it, with its messages.
    pub fn place(mut self, dest: &Path, dbfilename: &str) -> Result<(), String> {
        let f = &mut self.0;
        f.file.sync_all().map_err(|e| {
            format!("Failed trying to sync the temp DB to disk in MASTER <-> REPLICA synchronization: {e}")
        })?;
        std::fs::rename(&f.path, dest).map_err(|e| {
            format!(
                "Failed trying to rename the temp DB into {dbfilename} in MASTER <-> REPLICA \
                 synchronization: {e}"
            )
        })?;
        f.placed = true;
        let dir = dest.parent().filter(|d| !d.as_os_str().is_empty());
        let synced = std::fs::File::open(dir.unwrap_or(Path::new("."))).and_then(|d| d.sync_all());
        synced.map_err(|e| {
            format!(
                "Failed trying to sync DB directory {} in MASTER <-> REPLICA synchronization: {e}",
                dest.display()
            )
        })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.0.path
    }
}

/// The snapshot's bytes as they arrive, for a load that reads them as it
/// goes; `left` bounds a `$<length>` payload.
struct Arriving<'r, S> {
    r: &'r mut Reader<S>,
    left: Option<usize>,
    /// Bytes loaded so far.
    read: usize,
}

impl<S: Read + Write> Incoming for Arriving<'_, S> {
    fn buffered(&self) -> &[u8] {
        let b = &self.r.buf[self.r.pos..];
        match self.left {
            Some(n) => &b[..n.min(b.len())],
            None => b,
        }
    }

    fn consume(&mut self, n: usize) {
        self.r.pos += n;
        self.read += n;
        if let Some(left) = &mut self.left {
            *left -= n;
        }
    }

    fn more(&mut self) -> Result<(), String> {
        if self
            .left
            .is_some_and(|n| n <= self.r.buf.len() - self.r.pos)
        {
            return Err("the master's snapshot ended inside the RDB".into());
        }
        // What was loaded is let go before reading on.
        self.r.buf.drain(..self.r.pos);
        self.r.pos = 0;
        self.r.fill()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A master that answers from a script, a few bytes per read.
    struct Scripted {
        bytes: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len() - self.at);
            buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn conf(dir: &Path) -> HandshakeConf {
        HandshakeConf {
            host: "127.0.0.1".into(),
            port: 6379,
            listening_port: 6380,
            announce_ip: None,
            source_addr: None,
            auth: None,
            psync: None,
            timeout: std::time::Duration::from_secs(1),
            failover: false,
            tls: None,
            diskless_load: None,
            diskless_in_place: false,
            dir: dir.to_path_buf(),
        }
    }

    fn temp_files(dir: &Path) -> Vec<String> {
        let names = std::fs::read_dir(dir).into_iter().flatten().flatten();
        let mut names: Vec<String> = names
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("temp-"))
            .collect();
        names.sort();
        names
    }

    /// Redis's readSyncBulkPayload writes the snapshot to its temp file as
    /// it arrives and leaves the sync, rename and directory sync to the
    /// engine: the file holds the payload without the EOF mark, is removed
    /// when dropped, and once placed is `dbfilename`.
    #[test]
    fn a_disk_loaded_snapshot_is_written_as_it_arrives_and_placed_by_the_engine() {
        let dir = std::env::temp_dir().join(format!("ferrokv-sync-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mark = "a".repeat(40);
        for (step, eof) in [
            (1, true),
            (7, true),
            (4096, true),
            (3, false),
            (65536, false),
        ] {
            let mut script = b"+PONG\r\n+OK\r\n+OK\r\n\n+FULLRESYNC 8de1787ba490483314a4d30f1c628bc5025eb761 0\r\n\n".to_vec();
            if eof {
                script.extend_from_slice(format!("$EOF:{mark}\r\n").as_bytes());
                script.extend_from_slice(&payload);
                script.extend_from_slice(mark.as_bytes());
            } else {
                script.extend_from_slice(format!("${}\r\n", payload.len()).as_bytes());
                script.extend_from_slice(&payload);
                // The stream may follow a snapshot of known length at once;
                // after an EOF mark the master waits for REPLCONF ACK.
                script.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
            }
            let master = Scripted {
                bytes: script,
                at: 0,
                step: if step > 100 { step } else { step * 97 },
            };
            let (synced, leftover) = handshake_over(master, &conf(&dir)).unwrap();
            let Synced::Full {
                payload: Payload::Rdb(rdb, received),
                ..
            } = synced
            else {
                panic!("not a full resync read to disk");
            };
            assert_eq!(rdb, payload);
            assert!(b"*1\r\n$4\r\nPING\r\n".starts_with(&leftover));
            assert_eq!(
                std::fs::read(received.path()).unwrap(),
                payload,
                "step {step}"
            );
            assert_eq!(temp_files(&dir).len(), 1);
            if eof {
                drop(received);
                assert!(temp_files(&dir).is_empty(), "a dropped file is removed");
            } else {
                let dest = dir.join("dump.rdb");
                received.place(&dest, "dump.rdb").unwrap();
                assert!(temp_files(&dir).is_empty(), "the placed file is renamed");
                assert_eq!(std::fs::read(&dest).unwrap(), payload);
            }
        }
        // A master that gives up mid-transfer leaves no temp file.
        let mut script = format!(
            "+PONG\r\n+OK\r\n+OK\r\n+FULLRESYNC {} 0\r\n$EOF:{mark}\r\n",
            "b".repeat(40)
        )
        .into_bytes();
        script.extend_from_slice(&payload);
        let master = Scripted {
            bytes: script,
            at: 0,
            step: 999,
        };
        assert!(handshake_over(master, &conf(&dir)).is_err());
        assert!(temp_files(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
