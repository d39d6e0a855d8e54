//! One client connection as the event loop sees it: the socket, the query
//! buffer with its incremental parser, and the output not yet written.
//!
//! Each read is framed into one [`Batch`] that goes to the executor whole
//! (one hand-off per read); while it is away (running, or parked by a
//! blocking command or CLIENT PAUSE) the connection keeps reading, so a
//! client that disconnects is noticed, and parses again once the replies
//! are back.

use std::io::{ErrorKind, Read, Write};
use std::rc::Rc;

use bytes::BytesMut;
use mio::net::TcpStream;
#[cfg(unix)]
use mio::net::UnixStream;

use super::addr::PeerAddr;
use super::output::Output;

use super::event_loop::NetLimits;
use super::request::{take_big_start, Batch, Limits, ProtocolError, RequestParser, BIG_ARG};
use crate::net::link::ConnBuffers;

/// Redis closes a client whose query buffer passes client-query-buffer-limit
/// (this default applies until the config sets the shared value).
const QUERY_BUFFER_LIMIT: usize = 1024 * 1024 * 1024;

/// Bytes each read asks for at least (Redis's PROTO_IOBUF_LEN).
const READ_CHUNK: usize = 16 * 1024;

/// Buffers larger than this are not kept once empty.
const KEEP_BUFFER: usize = 1024 * 1024;

/// The reply buffer's largest size (Redis's PROTO_REPLY_CHUNK_BYTES): a
/// new connection's, and the most it grows to.
pub const REPLY_CHUNK: usize = 16 * 1024;

/// The reply buffer's smallest size (Redis's PROTO_REPLY_MIN_BYTES).
const REPLY_MIN: usize = 1024;

/// A query buffer larger than this shrinks to its recent peak (Redis's
/// PROTO_RESIZE_THRESHOLD).
const QUERY_RESIZE_THRESHOLD: usize = 32 * 1024;

/// How reply buffers are resized (DEBUG REPLYBUFFER).
#[derive(Clone, Copy, Debug)]
pub struct ReplyResize {
    /// RESIZING 1: buffers shrink and grow with their peak.
    pub resizing: bool,
    /// PEAK-RESET-TIME: milliseconds between peak resets (None: never).
    pub peak_reset_ms: Option<u64>,
}

impl Default for ReplyResize {
    fn default() -> Self {
        ReplyResize {
            resizing: true,
            peak_reset_ms: Some(5000),
        }
    }
}

/// What a reply buffer resize did (INFO reply_buffer_shrinks/expands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resized {
    /// Nothing.
    No,
    /// The buffer halved toward its peak.
    Shrunk,
    /// The buffer doubled: its peak filled it.
    Expanded,
}

/// The reply buffer's size as Redis's clientsCronResizeOutputBuffer keeps
/// it: what a batch's replies go into and the written-out buffer it swaps
/// with are allocated at `size`, which follows the largest reply part
/// (`peak`, at most `size`) seen since the last reset.
struct ReplyBuf {
    size: usize,
    peak: usize,
    peak_reset_ms: u64,
}

/// The client-query-buffer-limit in effect.
pub fn query_buffer_limit(limits: &NetLimits) -> usize {
    match limits.query_buffer_limit {
        0 => QUERY_BUFFER_LIMIT,
        n => n,
    }
}

/// What a read found.
pub enum ReadOutcome {
    /// Bytes arrived; `drained` when the socket had no more at that moment.
    Data {
        /// Bytes read.
        n: usize,
        /// The read was short, so the socket is empty until the next
        /// readiness event.
        drained: bool,
    },
    /// Nothing to read now.
    WouldBlock,
    /// The peer closed the connection or the socket failed.
    Closed,
}

/// A client's socket: TCP, TLS over TCP (`tls-port`), or the unix socket
/// (`unixsocket`).
pub enum Stream {
    /// A TCP connection.
    Tcp(TcpStream),
    /// A TLS connection (boxed: OpenSSL's state is behind a pointer
    /// anyway, and the TCP case stays small).
    Tls(Box<super::tls::TlsStream>),
    /// A unix socket connection.
    #[cfg(unix)]
    Unix(UnixStream),
}

impl Stream {
    /// Sets TCP_NODELAY (nothing for a unix socket).
    pub fn set_nodelay(&self, on: bool) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nodelay(on),
            Stream::Tls(s) => s.set_nodelay(on),
            #[cfg(unix)]
            Stream::Unix(_) => Ok(()),
        }
    }

    /// Shuts down one or both directions.
    pub fn shutdown(&self, how: std::net::Shutdown) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Tls(s) => s.shutdown(how),
            #[cfg(unix)]
            Stream::Unix(s) => s.shutdown(how),
        }
    }

    /// The TCP socket under it (none for the unix socket).
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Tcp(s) => Some(s),
            Stream::Tls(s) => Some(s.tcp()),
            #[cfg(unix)]
            Stream::Unix(_) => None,
        }
    }

    /// Whether it is a TLS connection.
    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// A TLS read that stopped because OpenSSL must write first.
    pub fn read_wants_write(&self) -> bool {
        matches!(self, Stream::Tls(s) if s.read_wants_write())
    }

    /// A TLS write that stopped because OpenSSL must read first.
    pub fn write_wants_read(&self) -> bool {
        matches!(self, Stream::Tls(s) if s.write_wants_read())
    }
}

impl Read for Stream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            #[cfg(unix)]
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
            #[cfg(unix)]
            Stream::Unix(s) => s.write(buf),
        }
    }

    /// One system call for several blocks of a backlog (TLS takes the
    /// first).
    #[inline]
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Tls(s) => s.write(bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b)),
            #[cfg(unix)]
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(unix)]
impl std::os::fd::AsRawFd for Stream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.tcp().as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl mio::event::Source for Stream {
    fn register(
        &mut self,
        registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(registry, token, interests),
            Stream::Tls(s) => s.tcp_mut().register(registry, token, interests),
            #[cfg(unix)]
            Stream::Unix(s) => s.register(registry, token, interests),
        }
    }

    fn reregister(
        &mut self,
        registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(registry, token, interests),
            Stream::Tls(s) => s.tcp_mut().reregister(registry, token, interests),
            #[cfg(unix)]
            Stream::Unix(s) => s.reregister(registry, token, interests),
        }
    }

    fn deregister(&mut self, registry: &mio::Registry) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Tls(s) => s.tcp_mut().deregister(registry),
            #[cfg(unix)]
            Stream::Unix(s) => s.deregister(registry),
        }
    }
}

/// What an I/O thread touches of a connection while the executor's
/// thread waits for it ([`super::io_threads`]): the socket, the query
/// buffer and its parser, and the output being written. Nothing in it is
/// shared with the executor, so it can be lent to another thread whole.
pub struct ConnIo {
    /// The socket.
    pub sock: Stream,
    /// Bytes read and not yet handed to the executor.
    pub inbuf: BytesMut,
    /// A large argument being read into a buffer of its own, allocated at
    /// the length the client announced ([`BIG_ARG`]).
    big: Option<Vec<u8>>,
    /// Progress through `inbuf`.
    pub parser: RequestParser,
    /// Commands parsed and not yet dispatched (its buffers are reused).
    pub batch: Batch,
    /// Output not yet written.
    pub output: Output,
    /// A protocol error to report once earlier commands are answered.
    pub error: Option<ProtocolError>,
    /// Reads grew the query buffer past [`QUERY_RESIZE_THRESHOLD`] (a
    /// command of many arguments, a deep pipeline): once empty it is given
    /// back. Redis's buffer stays small there, as it turns each argument
    /// into an object as it arrives; this one holds the whole command.
    inbuf_grew: bool,
    /// Bytes split off the front of `inbuf`'s allocation since it was
    /// made: the allocation is `capacity() + inbuf_split`.
    inbuf_split: usize,
    /// The most the query buffer was asked to hold since the last cron
    /// pass (Redis's querybuf_peak).
    query_peak: usize,
    /// The client has authenticated, as the executor said with its last
    /// replies (AUTH/HELLO/RESET); until then the parser applies Redis's
    /// limits for unauthenticated clients.
    pub authenticated: bool,
}

/// One client connection.
pub struct Conn {
    /// The socket and buffers an I/O thread may work on.
    pub io: ConnIo,
    /// Peer address.
    pub addr: PeerAddr,
    /// The reply buffer that goes with the next batch.
    pub out: Vec<u8>,
    /// A batch is at the executor.
    pub in_flight: bool,
    /// The peer closed its side (or the socket failed).
    pub eof: bool,
    /// Close once the output is written (QUIT, protocol error, CLIENT KILL of
    /// itself).
    pub closing: bool,
    /// The socket may hold unread bytes (the last read filled its buffer).
    pub readable: bool,
    /// The peer closed its side (an event said so): reads go on until
    /// they see the end, a short one included.
    pub peer_closed: bool,
    /// Registered for writability because a write could not finish.
    pub want_write: bool,
    /// Listed for the next flush.
    pub dirty: bool,
    /// `io` is lent to the I/O threads for reading: the task's index in
    /// their read job.
    pub lent: Option<u32>,
    /// `io` was lent to the I/O threads for writing and the outcome is not
    /// acted on yet: the task's index in their write job.
    pub writing: Option<u32>,
    /// Output accounting shared with the executor.
    pub bufs: Rc<ConnBuffers>,
    /// Capacity of the reply buffer the executor holds with a batch.
    out_lent: usize,
    /// The reply buffer's size and peak.
    reply: ReplyBuf,
}

impl Conn {
    /// A new connection.
    pub fn new(
        sock: Stream,
        addr: PeerAddr,
        authenticated: bool,
        clients_mem: Rc<std::cell::Cell<usize>>,
    ) -> Self {
        let c = Conn {
            io: ConnIo {
                sock,
                inbuf: BytesMut::with_capacity(READ_CHUNK),
                big: None,
                parser: RequestParser::default(),
                batch: Batch::default(),
                output: Output::new(REPLY_CHUNK),
                error: None,
                inbuf_grew: false,
                inbuf_split: 0,
                query_peak: 0,
                authenticated,
            },
            addr,
            out: Vec::with_capacity(REPLY_CHUNK),
            in_flight: false,
            eof: false,
            closing: false,
            readable: false,
            peer_closed: false,
            want_write: false,
            dirty: false,
            lent: None,
            writing: None,
            bufs: Rc::new(ConnBuffers::new(clients_mem)),
            out_lent: 0,
            // As Redis 7.0's createClient: the peak starts at the buffer's
            // size, and its first reset comes at the first cron visit
            // (Redis stamps it in seconds and compares milliseconds).
            reply: ReplyBuf {
                size: REPLY_CHUNK,
                peak: REPLY_CHUNK,
                peak_reset_ms: 0,
            },
        };
        c.account();
        c
    }

    /// Tells the executor what the buffers hold now (CLIENT LIST, client
    /// eviction): a few stores, after each read, batch and write.
    pub fn account(&self) {
        let b = &self.bufs;
        let io = &self.io;
        b.pending.set(io.pending());
        let big = io.big.as_ref().map_or(0, Vec::len);
        b.query.set(io.parser.unparsed(io.inbuf.len()) + big);
        b.query_alloc.set(
            io.query_block() + io.big.as_ref().map_or(0, Vec::capacity) + io.parser.held_big(),
        );
        b.output_alloc
            .set(self.out.capacity() + self.out_lent + io.output.alloc());
        b.reply_size.set(self.reply.size);
        b.reply_peak.set(self.reply.peak);
        b.recount();
    }

    /// Bytes buffered and not yet handed to the executor.
    pub fn qbuf_len(&self) -> usize {
        self.io.qbuf_len()
    }

    /// Bytes queued and not written.
    pub fn pending(&self) -> usize {
        self.io.pending()
    }

    /// Takes the parsed batch with its input bytes and the reply buffer,
    /// for the executor.
    pub fn take_batch(&mut self) -> (Batch, Vec<u8>) {
        let io = &mut self.io;
        let n = io.parser.consumed();
        io.batch.input = io.inbuf.split_to(n).freeze();
        io.inbuf_split += n;
        io.parser.rebase(n);
        self.in_flight = true;
        // Redis gives the query buffer room for another argument as large
        // as one just read (which becomes the value), and its cron shrinks
        // it back unless more come.
        if let Some(room) = io.batch.big.iter().map(|b| b.len() + 2).max() {
            if io.inbuf.capacity() < room && room <= KEEP_BUFFER {
                let mut inbuf = BytesMut::with_capacity(room);
                inbuf.extend_from_slice(&io.inbuf);
                io.set_inbuf(inbuf);
            }
        }
        let batch = std::mem::take(&mut io.batch);
        let out = std::mem::take(&mut self.out);
        self.out_lent = out.capacity();
        (batch, out)
    }

    /// Queues reply bytes, taking `out`'s buffer when nothing is pending
    /// (no copy); returns the spare buffer for the next batch.
    pub fn queue_output(&mut self, out: Vec<u8>) -> Vec<u8> {
        self.out_lent = 0;
        self.io.output.take(out)
    }

    /// Gives back buffers a large request or reply grew, once they are
    /// empty, as Redis shrinks idle query buffers: memory freed by UNLINK
    /// or FLUSHALL then shows in used_memory instead of staying with the
    /// connection that carried the data.
    /// `keep_output` leaves the output buffer as it is.
    pub fn release_idle_buffers(&mut self, keep_output: bool) {
        let io = &mut self.io;
        if io.inbuf.is_empty() && (io.inbuf_grew || io.inbuf.capacity() > KEEP_BUFFER) {
            io.set_inbuf(BytesMut::with_capacity(READ_CHUNK));
        }
        if !keep_output && self.out.is_empty() && self.out.capacity() > KEEP_BUFFER {
            self.out = Vec::with_capacity(self.reply.size);
        }
    }

    /// The reply buffer's peak takes in what is pending now, up to the
    /// buffer's size (Redis's buf_peak, raised as replies fill c->buf).
    #[inline]
    pub fn note_reply_peak(&mut self) {
        let held = self.io.pending().min(self.reply.size);
        if held > self.reply.peak {
            self.reply.peak = held;
        }
    }

    /// The connection's share of Redis's clientsCron, once a second or so:
    /// the query buffer is freed after `idle_s` > 2 seconds of idleness or
    /// shrunk to its recent peak (clientsCronResizeQueryBuffer), the reply
    /// buffer follows its peak (clientsCronResizeOutputBuffer), and an
    /// idle connection's written-out buffer is given back. Nothing happens
    /// while an I/O thread has the connection.
    pub fn cron(&mut self, idle_s: u64, now_ms: u64, rs: ReplyResize) -> Resized {
        if self.lent.is_some() || self.writing.is_some() {
            return Resized::No;
        }
        self.io.resize_query(idle_s);
        let resized = self.resize_reply(now_ms, rs);
        if idle_s > 2 {
            self.io.output.free_idle();
        }
        self.account();
        resized
    }

    /// clientsCronResizeOutputBuffer: halves the buffer toward its peak
    /// when the peak is under half of it, doubles it (up to
    /// [`REPLY_CHUNK`]) when the peak filled it, and resets the peak every
    /// `peak_reset_ms`. The buffers are reallocated only while empty.
    fn resize_reply(&mut self, now_ms: u64, rs: ReplyResize) -> Resized {
        if !rs.resizing {
            return Resized::No;
        }
        let r = &mut self.reply;
        let mut resized = Resized::No;
        if r.size / 2 >= REPLY_MIN && r.peak < r.size / 2 {
            r.size = REPLY_MIN.max(r.peak + 1);
            resized = Resized::Shrunk;
        } else if r.size * 2 < REPLY_CHUNK * 2 && r.peak == r.size {
            r.size = REPLY_CHUNK.min(r.size * 2);
            resized = Resized::Expanded;
        }
        if let Some(every) = rs.peak_reset_ms {
            if now_ms.saturating_sub(r.peak_reset_ms) >= every {
                r.peak = self.io.pending().min(r.size);
                r.peak_reset_ms = now_ms;
            }
        }
        let size = r.size;
        let fits = |cap: usize| cap >= size && cap <= size * 2;
        if !self.in_flight && self.out.is_empty() && !fits(self.out.capacity()) {
            self.out = Vec::with_capacity(size);
        }
        self.io.output.set_keep(size);
        resized
    }

    /// Writes what it can and accounts for it; Ok(n) is the number of
    /// bytes written, an error means the connection is dead.
    pub fn write_pending(&mut self) -> std::io::Result<usize> {
        let r = self.io.write_pending();
        self.io.output.reclaim();
        self.account();
        r
    }
}

impl ConnIo {
    /// Bytes allocated for the query buffer, what was split off for the
    /// executor included (it shares the allocation until freed).
    #[inline]
    fn query_block(&self) -> usize {
        self.inbuf.capacity() + self.inbuf_split
    }

    /// Puts a new allocation in place of the query buffer.
    fn set_inbuf(&mut self, inbuf: BytesMut) {
        self.inbuf = inbuf;
        self.inbuf_split = 0;
        self.inbuf_grew = false;
    }

    /// clientsCronResizeQueryBuffer: with more than 4 KB unused, an idle
    /// query buffer keeps only its bytes, and one over 32 KB at more than
    /// twice its recent peak shrinks to the peak (never below the large
    /// argument being read). The peak then starts again from what is
    /// buffered.
    fn resize_query(&mut self, idle_s: u64) {
        let len = self.inbuf.len();
        let bulk = self.parser.big_wanted().unwrap_or(0);
        let alloc = self.query_block();
        if alloc.saturating_sub(len) > 4096 {
            let to = if idle_s > 2 {
                Some(len)
            } else if alloc > QUERY_RESIZE_THRESHOLD && alloc / 2 > self.query_peak {
                Some(len.max(self.query_peak).max(bulk))
            } else {
                None
            };
            if let Some(to) = to {
                // The unparsed bytes move as they are: the parser counts
                // from the buffer's start.
                let mut inbuf = if to == 0 {
                    BytesMut::new()
                } else {
                    BytesMut::with_capacity(to)
                };
                inbuf.extend_from_slice(&self.inbuf);
                self.set_inbuf(inbuf);
            }
        }
        self.query_peak = len.max(bulk);
    }

    /// Bytes buffered and not yet handed to the executor (CLIENT LIST
    /// `qbuf`, client-query-buffer-limit).
    pub fn qbuf_len(&self) -> usize {
        self.inbuf.len() + self.big.as_ref().map_or(0, Vec::len)
    }

    /// Bytes queued and not written.
    pub fn pending(&self) -> usize {
        self.output.pending()
    }

    /// Queues output bytes after those pending.
    pub fn queue(&mut self, bytes: &[u8]) {
        self.output.queue(bytes);
    }

    /// One read into the query buffer, or into the large argument being
    /// read.
    pub fn read(&mut self) -> ReadOutcome {
        if let (Some(big), Some(want)) = (&mut self.big, self.parser.big_wanted()) {
            self.query_peak = self.query_peak.max(want);
            return read_into(&mut self.sock, big, want - big.len());
        }
        self.prepare_read();
        // Redis's peak counts the read's full length, asked for or not.
        self.query_peak = self.query_peak.max(self.inbuf.len() + READ_CHUNK);
        let room = self.inbuf.capacity() - self.inbuf.len();
        read_into(&mut self.sock, &mut self.inbuf, room)
    }

    /// Makes room in the query buffer for the next read. The executor's
    /// thread calls it before lending the connection to an I/O thread, so
    /// buffers are allocated and freed on one thread, as without threads:
    /// `used_memory` (jemalloc's count, which includes what a thread's
    /// cache holds) then does not drift with buffers cached elsewhere.
    pub fn prepare_read(&mut self) {
        if self.big.is_some() && self.parser.big_wanted().is_some() {
            return;
        }
        // Grow with the buffer, so a large argument arriving in many reads
        // costs few system calls.
        let want = READ_CHUNK.max(self.inbuf.len().min(1 << 20));
        if self.inbuf.capacity() - self.inbuf.len() < want / 2 {
            self.inbuf.reserve(want);
            // A new allocation, or the old one reclaimed whole.
            self.inbuf_split = 0;
            self.inbuf_grew |= self.inbuf.capacity() > QUERY_RESIZE_THRESHOLD;
        }
    }

    /// Frames what is buffered into `batch`; an error is kept for after
    /// the commands before it.
    pub fn parse(&mut self, net: &NetLimits) {
        if self.error.is_some() {
            return;
        }
        let limits = Limits {
            max_bulk: net.proto_max_bulk_len,
            // Redis's authRequired(): a password is configured and this
            // client has not authenticated yet.
            unauthenticated: net.auth_required && !self.authenticated,
            big_arg: BIG_ARG,
        };
        loop {
            if let (Some(big), Some(want)) = (&self.big, self.parser.big_wanted()) {
                if big.len() < want {
                    return;
                }
                let data = self.big.take().unwrap_or_default();
                self.parser.finish_big(data.into());
            }
            if let Err(e) = self.parser.parse(&self.inbuf, &mut self.batch, limits) {
                self.error = Some(e);
                return;
            }
            let Some(want) = self.parser.big_wanted() else {
                return;
            };
            let at = self.parser.cursor();
            self.big = Some(take_big_start(&mut self.inbuf, at, want));
        }
    }

    /// Writes what it can; Ok(n) is the number of bytes written, an error
    /// means the connection is dead. The caller accounts for it
    /// ([`Conn::account`]).
    pub fn write_pending(&mut self) -> std::io::Result<usize> {
        self.output.write_to(&mut self.sock)
    }
}

/// Reads once from `sock` into the spare capacity of `buf`, at most `room`
/// bytes (which the capacity must allow).
fn read_into<B: ReadBuf>(sock: &mut Stream, buf: &mut B, room: usize) -> ReadOutcome {
    if let Stream::Tls(tls) = sock {
        return read_tls(tls, buf, room);
    }
    let spare = buf.spare();
    let room = room.min(spare.len());
    // SAFETY: `read` only writes into the slice and reports how many bytes
    // it wrote; those bytes are then initialized, which is what `advance`
    // below relies on.
    let dst = unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast::<u8>(), room) };
    loop {
        return match sock.read(dst) {
            Ok(0) => ReadOutcome::Closed,
            Ok(n) => {
                // SAFETY: `n` bytes past the old length were just written.
                unsafe { buf.advance(n) };
                ReadOutcome::Data {
                    n,
                    drained: n < room,
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => ReadOutcome::WouldBlock,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => ReadOutcome::Closed,
        };
    }
}

/// [`read_into`] for TLS: OpenSSL hands over one record per call, and a
/// record may leave more bytes in the socket or in OpenSSL's own buffer,
/// so a short read says nothing; reads go on until the room is full or
/// nothing is left (the poll reports only new bytes).
fn read_tls<B: ReadBuf>(sock: &mut super::tls::TlsStream, buf: &mut B, room: usize) -> ReadOutcome {
    let room = room.min(buf.spare().len());
    let mut got = 0;
    while got < room {
        let spare = &mut buf.spare()[..room - got];
        // SAFETY: as in `read_into`: `read` only writes into the slice and
        // reports how much; `advance` then covers exactly those bytes.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast::<u8>(), spare.len()) };
        match sock.read(dst) {
            Ok(0) if got == 0 => return ReadOutcome::Closed,
            // Data first; the next read finds the end.
            Ok(0) => break,
            Ok(n) => {
                // SAFETY: `n` bytes past the old length were just written.
                unsafe { buf.advance(n) };
                got += n;
                // Nothing buffered in OpenSSL and the socket's last read
                // came up short: drained, without a read that fails.
                if !sock.more_buffered() && sock.socket_drained() {
                    return ReadOutcome::Data {
                        n: got,
                        drained: true,
                    };
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if got == 0 {
                    return ReadOutcome::WouldBlock;
                }
                return ReadOutcome::Data {
                    n: got,
                    drained: true,
                };
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) if got > 0 => break,
            Err(_) => return ReadOutcome::Closed,
        }
    }
    ReadOutcome::Data {
        n: got,
        drained: false,
    }
}

/// A byte buffer a socket reads into: the query buffer or a large
/// argument's own buffer.
trait ReadBuf {
    /// The uninitialized room past the bytes held.
    fn spare(&mut self) -> &mut [std::mem::MaybeUninit<u8>];
    /// Marks `n` more bytes as held.
    ///
    /// # Safety
    /// The first `n` bytes of [`Self::spare`] must have been written.
    unsafe fn advance(&mut self, n: usize);
}

impl ReadBuf for BytesMut {
    fn spare(&mut self) -> &mut [std::mem::MaybeUninit<u8>] {
        self.spare_capacity_mut()
    }
    unsafe fn advance(&mut self, n: usize) {
        // SAFETY: as the caller promises.
        unsafe { self.set_len(self.len() + n) }
    }
}

impl ReadBuf for Vec<u8> {
    fn spare(&mut self) -> &mut [std::mem::MaybeUninit<u8>] {
        self.spare_capacity_mut()
    }
    unsafe fn advance(&mut self, n: usize) {
        // SAFETY: as the caller promises.
        unsafe { self.set_len(self.len() + n) }
    }
}

/// A replica's socket to its master, blocking while the handshake runs
/// (on its thread), then adopted by the event loop: plain, or TLS
/// (`tls-replication`).
pub enum LinkSock {
    /// A plain TCP connection.
    Plain(std::net::TcpStream),
    /// A TLS connection, its handshake done.
    Tls(openssl::ssl::SslStream<super::tls::TlsSocket>),
}

impl std::io::Read for LinkSock {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            LinkSock::Plain(s) => s.read(buf),
            LinkSock::Tls(s) => s.read(buf),
        }
    }
}

impl std::io::Write for LinkSock {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            LinkSock::Plain(s) => s.write(buf),
            LinkSock::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
