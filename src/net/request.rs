//! Request framing: turns the bytes a client sent into a [`Batch`] of
//! commands, the way Redis's `processMultibulkBuffer` and
//! `processInlineBuffer` do.
//!
//! Requests are RESP arrays of bulk strings (`*N` then `$len` items) or inline
//! lines. The parser keeps its progress between reads (like Redis's
//! `multibulklen`/`bulklen`), so a large frame arriving in many reads is
//! scanned once, and it never allocates the size a client claims up front:
//! the buffer grows only as bytes arrive. Arguments are recorded as spans into
//! the read buffer, so a batch costs no allocation per command once its
//! vectors have warmed up.

use std::borrow::Cow;

use bytes::Bytes;

use crate::util::num::parse_i64;
use crate::util::splitargs::split_args;

/// Longest inline line or header line Redis accepts (PROTO_INLINE_MAX_SIZE).
pub const INLINE_MAX: usize = 64 * 1024;

/// What Redis may read of an inline line past [`INLINE_MAX`] before its
/// check runs (one PROTO_IOBUF_LEN read).
const INLINE_READ_SLACK: usize = 16 * 1024;

/// Where an argument's bytes live.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    start: usize,
    len: usize,
}

/// Marks spans that point into [`Batch::extra`] (unescaped inline args).
const EXTRA_BIT: usize = 1 << (usize::BITS - 1);

/// Marks spans whose `start` is an index into [`Batch::big`].
const BIG_BIT: usize = 1 << (usize::BITS - 2);

/// Bulk arguments at least this long that have not fully arrived are read
/// into a buffer of their own, sized once from the length the client
/// announced (Redis's PROTO_MBULK_BIG_ARG): the bytes are not copied as the
/// query buffer grows, and SET keeps that buffer as the value.
pub const BIG_ARG: usize = 32 * 1024;

/// Moves the first bytes of a large bulk announced by
/// [`RequestParser::big_wanted`] (`want` bytes from `at`, the parser's
/// cursor) out of the query buffer into a buffer of its own, sized once;
/// what follows them (part of the CRLF at most) stays for the parser.
pub fn take_big_start(inbuf: &mut bytes::BytesMut, at: usize, want: usize) -> Vec<u8> {
    let have = (inbuf.len() - at).min(want);
    let mut big = Vec::with_capacity(want);
    big.extend_from_slice(&inbuf[at..at + have]);
    let rest = inbuf[at + have..].to_vec();
    inbuf.truncate(at);
    inbuf.extend_from_slice(&rest);
    big
}

/// Complete commands parsed from one read, handed to the executor at once.
#[derive(Default)]
pub struct Batch {
    /// The request bytes; multibulk argument spans point here.
    pub input: Bytes,
    /// Unescaped inline arguments.
    pub extra: Vec<u8>,
    /// Large arguments read into buffers of their own ([`BIG_ARG`]).
    pub big: Vec<Bytes>,
    /// Every argument of every command, in order.
    pub spans: Vec<Span>,
    /// Per command: index of its first span and its argument count.
    pub cmds: Vec<(u32, u32)>,
}

impl Batch {
    /// Number of commands.
    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    /// True when the batch holds no command.
    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// The arguments of command `i`.
    pub fn argv(&self, i: usize) -> Argv<'_> {
        let (first, n) = self.cmds[i];
        Argv {
            input: &self.input,
            extra: &self.extra,
            big: &self.big,
            spans: &self.spans[first as usize..(first + n) as usize],
        }
    }

    /// Empties the batch, keeping its allocations for the next read.
    pub fn clear(&mut self) {
        self.input = Bytes::new();
        self.extra.clear();
        self.big.clear();
        self.spans.clear();
        self.cmds.clear();
        // A burst (a 100,000-argument command, a huge pipeline) need not
        // keep its buffers: INFO's used_memory should come back after it.
        if self.spans.capacity() > 4096 {
            self.spans.shrink_to(1024);
        }
        if self.cmds.capacity() > 4096 {
            self.cmds.shrink_to(1024);
        }
        if self.extra.capacity() > 1 << 20 {
            self.extra.shrink_to(16 * 1024);
        }
    }
}

/// One command's arguments (`argv[0]` is the command name); borrowed from a
/// [`Batch`] or built by [`OwnedArgv`].
#[derive(Clone, Copy)]
pub struct Argv<'a> {
    input: &'a [u8],
    extra: &'a [u8],
    big: &'a [Bytes],
    spans: &'a [Span],
}

impl<'a> Argv<'a> {
    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there is no argument at all.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Argument `i`; panics when out of range, so handlers index only
    /// below an arity the dispatcher has checked.
    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        let s = self.spans[i];
        if s.start & (EXTRA_BIT | BIG_BIT) == 0 {
            &self.input[s.start..s.start + s.len]
        } else {
            self.get_tagged(s)
        }
    }

    /// An argument held apart from the request bytes.
    #[cold]
    fn get_tagged(&self, s: Span) -> &'a [u8] {
        if s.start & BIG_BIT != 0 {
            &self.big[s.start & !BIG_BIT]
        } else {
            let start = s.start & !EXTRA_BIT;
            &self.extra[start..start + s.len]
        }
    }

    /// Argument `i` as a shared buffer when it was read into one of its
    /// own ([`BIG_ARG`]): a value can keep it without copying.
    #[inline]
    pub fn shared(&self, i: usize) -> Option<Bytes> {
        let s = self.spans[i];
        (s.start & BIG_BIT != 0).then(|| self.big[s.start & !BIG_BIT].clone())
    }

    /// Argument `i` if present.
    pub fn try_get(&self, i: usize) -> Option<&'a [u8]> {
        (i < self.len()).then(|| self.get(i))
    }

    /// Iterates over the arguments from `from` on.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &'a [u8]> + '_ {
        (from..self.len()).map(move |i| self.get(i))
    }

    /// Copies the arguments into an owned form (MULTI queues, blocked clients).
    pub fn to_owned(&self) -> OwnedArgv {
        OwnedArgv::from_slices(self.iter_from(0))
    }
}

/// An owned argument vector with the same accessors as [`Argv`].
#[derive(Clone, Debug, Default)]
pub struct OwnedArgv {
    data: Vec<u8>,
    spans: Vec<Span>,
}

impl OwnedArgv {
    /// Builds an argv from byte slices.
    pub fn from_slices<'s>(args: impl IntoIterator<Item = &'s [u8]>) -> Self {
        let mut v = OwnedArgv::default();
        for a in args {
            v.spans.push(Span {
                start: v.data.len(),
                len: a.len(),
            });
            v.data.extend_from_slice(a);
        }
        v
    }

    /// Empties the argv, keeping its buffers (for reuse).
    pub fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    /// Appends one argument.
    pub fn push(&mut self, arg: &[u8]) {
        self.spans.push(Span {
            start: self.data.len(),
            len: arg.len(),
        });
        self.data.extend_from_slice(arg);
    }

    /// Bytes held, for memory accounting of queued commands.
    pub fn size(&self) -> usize {
        self.data.len() + self.spans.len() * std::mem::size_of::<Span>()
    }

    /// A borrowed view.
    pub fn argv(&self) -> Argv<'_> {
        Argv {
            input: &self.data,
            extra: &[],
            big: &[],
            spans: &self.spans,
        }
    }
}

/// A framing error: the reason goes after `Protocol error: `, and the
/// connection is closed once earlier replies are written. The byte quoted
/// in `expected '$', got 'c'` is held as the char U+00cc and written back as
/// that single raw byte, as Redis's `%c` does ([`ProtocolError::line`]).
#[derive(Debug, PartialEq, Eq)]
pub struct ProtocolError(pub Cow<'static, str>);

impl ProtocolError {
    /// The error line sent before closing: `-ERR Protocol error: ...`, with
    /// CR and LF turned into spaces like every Redis error reply.
    pub fn line(&self) -> Vec<u8> {
        let mut out = b"-ERR Protocol error: ".to_vec();
        for c in self.0.chars() {
            let b = u8::try_from(u32::from(c)).unwrap_or(b'?');
            out.push(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// Incremental request parser; one per connection.
#[derive(Default)]
pub struct RequestParser {
    /// Bytes at the front of the buffer holding complete parsed commands.
    consumed: usize,
    /// Scan position inside the current incomplete multibulk command.
    cursor: usize,
    /// Arguments still expected by the current multibulk command (0: none).
    remaining: usize,
    /// Length of the bulk whose header has been read, if any.
    bulk_len: Option<usize>,
    /// Spans of the current incomplete command's arguments.
    partial: Vec<Span>,
    /// Large arguments of the current command, read apart ([`BIG_ARG`]);
    /// their spans index this list until the command is complete.
    partial_big: Vec<Bytes>,
    /// The bulk whose header was read is large and incomplete: its bytes
    /// are to be read into a buffer of its own ([`Self::big_wanted`]).
    big_wanted: bool,
    /// The CRLF after a large argument read apart is still to be skipped.
    skip_crlf: bool,
    /// An incomplete line's search so far: where the line starts and where
    /// the next search resumes ([`Self::find_line_end`]).
    line_scan: Option<(usize, usize)>,
}

/// Limits taken from the configuration.
#[derive(Clone, Copy)]
pub struct Limits {
    /// proto-max-bulk-len
    pub max_bulk: usize,
    /// Whether the client still has to authenticate (smaller limits apply).
    pub unauthenticated: bool,
    /// Large incomplete bulks are left to the caller from this length on
    /// ([`RequestParser::big_wanted`]); 0: never.
    pub big_arg: usize,
}

impl RequestParser {
    /// Bytes at the front of the buffer that form complete commands.
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// True when a command has been started but not completed.
    pub fn in_progress(&self) -> bool {
        self.remaining > 0 || self.cursor > self.consumed
    }

    /// What of a query buffer `buf_len` long is not parsed yet, as Redis's
    /// querybuf holds it (CLIENT LIST `qbuf`): the bytes past the scan
    /// position, and a large argument read whole whose CRLF has not come.
    pub fn unparsed(&self, buf_len: usize) -> usize {
        let waiting_crlf = if self.skip_crlf {
            self.partial_big.last().map_or(0, Bytes::len)
        } else {
            0
        };
        buf_len.saturating_sub(self.cursor) + waiting_crlf
    }

    /// Bytes of the large arguments of the incomplete command.
    pub fn held_big(&self) -> usize {
        self.partial_big.iter().map(Bytes::len).sum()
    }

    /// Called after the caller split `n` consumed bytes off the buffer.
    pub fn rebase(&mut self, n: usize) {
        debug_assert!(n == self.consumed);
        self.consumed -= n;
        self.cursor -= n;
        self.line_scan = self
            .line_scan
            .and_then(|(start, to)| (start >= n).then(|| (start - n, to - n)));
        for s in &mut self.partial {
            if s.start & BIG_BIT == 0 {
                s.start -= n;
            }
        }
    }

    /// The length of a large bulk whose data the caller is to read into a
    /// buffer of its own, starting at the [`Self::cursor`] position of the
    /// query buffer (the bytes there are its first ones), then hand over
    /// with [`Self::finish_big`].
    pub fn big_wanted(&self) -> Option<usize> {
        if self.big_wanted {
            self.bulk_len
        } else {
            None
        }
    }

    /// Where the current bulk's data starts in the query buffer.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Takes the large bulk announced by [`Self::big_wanted`], read whole;
    /// its CRLF is expected at the cursor.
    pub fn finish_big(&mut self, data: Bytes) {
        self.partial.push(Span {
            start: self.partial_big.len() | BIG_BIT,
            len: data.len(),
        });
        self.partial_big.push(data);
        self.big_wanted = false;
        self.skip_crlf = true;
        self.bulk_len = None;
        self.remaining -= 1;
    }

    /// Parses every complete command in `buf` past what was parsed before,
    /// appending them to `batch`. Spans refer to positions in `buf`, which
    /// stay valid once the caller splits off `consumed()` bytes and freezes
    /// them as `batch.input`.
    pub fn parse(
        &mut self,
        buf: &[u8],
        batch: &mut Batch,
        limits: Limits,
    ) -> Result<(), ProtocolError> {
        loop {
            if self.remaining == 0 && !self.skip_crlf {
                let pos = self.consumed;
                if pos >= buf.len() {
                    return Ok(());
                }
                if buf[pos] == b'*' {
                    match self.multibulk_header(buf, pos, limits)? {
                        None => return Ok(()),
                        Some(0) => continue,
                        Some(_) => {}
                    }
                } else {
                    let before = batch.len();
                    if !self.inline(buf, pos, batch)? {
                        return Ok(());
                    }
                    if limits.unauthenticated && batch.len() > before {
                        return Ok(());
                    }
                    continue;
                }
            }
            if !self.bulks(buf, limits)? {
                return Ok(());
            }
            // The command is complete.
            if !self.partial_big.is_empty() {
                let base = batch.big.len();
                for s in &mut self.partial {
                    if s.start & BIG_BIT != 0 {
                        s.start += base;
                    }
                }
                batch.big.append(&mut self.partial_big);
            }
            let first = batch.spans.len() as u32;
            batch.spans.append(&mut self.partial);
            // A command of many arguments need not leave its span list's
            // capacity with the connection (Batch::clear shrinks its own).
            if self.partial.capacity() > 4096 {
                self.partial = Vec::new();
            }
            batch.cmds.push((first, batch.spans.len() as u32 - first));
            self.consumed = self.cursor;
            if limits.unauthenticated {
                // Redis runs each command before parsing the next, so an
                // AUTH lifts the limits for what follows it in the same
                // read: hand commands over one at a time until then.
                return Ok(());
            }
        }
    }

    /// Reads `*N\r\n`; returns the count, `None` when incomplete.
    fn multibulk_header(
        &mut self,
        buf: &[u8],
        pos: usize,
        limits: Limits,
    ) -> Result<Option<usize>, ProtocolError> {
        let Some(cr) = self.find_line_end(buf, pos, b'\r') else {
            if buf.len() - pos > INLINE_MAX {
                return Err(ProtocolError("too big mbulk count string".into()));
            }
            return Ok(None);
        };
        // Redis requires one more byte (the '\n') before going on.
        if pos + cr + 2 > buf.len() {
            return Ok(None);
        }
        let n = match parse_i64(&buf[pos + 1..pos + cr]) {
            Some(n) if n <= i64::from(i32::MAX) => n,
            _ => return Err(ProtocolError("invalid multibulk length".into())),
        };
        if n > 10 && limits.unauthenticated {
            return Err(ProtocolError("unauthenticated multibulk length".into()));
        }
        self.cursor = pos + cr + 2;
        if n <= 0 {
            // `*0` and `*-1` are skipped, as Redis does.
            self.consumed = self.cursor;
            return Ok(Some(0));
        }
        self.remaining = n as usize;
        self.bulk_len = None;
        self.partial.clear();
        self.partial_big.clear();
        Ok(Some(n as usize))
    }

    /// Reads bulk items of the current command; true once all have arrived.
    fn bulks(&mut self, buf: &[u8], limits: Limits) -> Result<bool, ProtocolError> {
        if self.big_wanted {
            return Ok(false);
        }
        if self.skip_crlf {
            if buf.len() - self.cursor < 2 {
                return Ok(false);
            }
            self.cursor += 2;
            self.skip_crlf = false;
        }
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let pos = self.cursor;
                    let Some(cr) = self.find_line_end(buf, pos, b'\r') else {
                        if buf.len() - pos > INLINE_MAX {
                            return Err(ProtocolError("too big bulk count string".into()));
                        }
                        return Ok(false);
                    };
                    if pos + cr + 2 > buf.len() {
                        return Ok(false);
                    }
                    if buf[pos] != b'$' {
                        return Err(ProtocolError(
                            format!("expected '$', got '{}'", char::from(buf[pos])).into(),
                        ));
                    }
                    let len = match parse_i64(&buf[pos + 1..pos + cr]) {
                        Some(n) if n >= 0 && (n as u64) <= limits.max_bulk as u64 => n as usize,
                        _ => return Err(ProtocolError("invalid bulk length".into())),
                    };
                    if len > 16384 && limits.unauthenticated {
                        return Err(ProtocolError("unauthenticated bulk length".into()));
                    }
                    self.cursor = pos + cr + 2;
                    self.bulk_len = Some(len);
                    len
                }
            };
            // Like Redis, the two bytes after the payload are skipped
            // without checking that they are CRLF.
            if buf.len() - self.cursor < len + 2 {
                if limits.big_arg != 0 && len >= limits.big_arg {
                    self.big_wanted = true;
                }
                return Ok(false);
            }
            self.partial.push(Span {
                start: self.cursor,
                len,
            });
            self.cursor += len + 2;
            self.bulk_len = None;
            self.remaining -= 1;
        }
        Ok(true)
    }

    /// Where the line starting at `pos` ends (its `needle`, as an offset
    /// from `pos`), or None while it has not arrived. Only the bytes read
    /// since the last search of the same line are searched, so a line that
    /// trickles in a byte per read costs linear time, not quadratic.
    #[inline]
    fn find_line_end(&mut self, buf: &[u8], pos: usize, needle: u8) -> Option<usize> {
        let from = if self.line_scan.is_some() {
            self.resume_from(pos)
        } else {
            pos
        };
        match find_stop(&buf[from..], needle) {
            Some(i) if buf[from + i] == needle => Some(from + i - pos),
            // A NUL: no line yet however much follows (see find_stop), and
            // later searches stop there again at once.
            stop => {
                self.line_scan = Some((pos, stop.map_or(buf.len(), |i| from + i)));
                None
            }
        }
    }

    /// Where the search of the line at `pos` resumes; the note of an
    /// earlier search is used up.
    #[cold]
    fn resume_from(&mut self, pos: usize) -> usize {
        match self.line_scan.take() {
            Some((start, to)) if start == pos => to,
            _ => pos,
        }
    }

    /// Reads one inline line; false when incomplete.
    fn inline(&mut self, buf: &[u8], pos: usize, batch: &mut Batch) -> Result<bool, ProtocolError> {
        let too_big = || ProtocolError("too big inline request".into());
        let Some(nl) = self.find_line_end(buf, pos, b'\n') else {
            if buf.len() - pos > INLINE_MAX {
                return Err(too_big());
            }
            return Ok(false);
        };
        // Redis reads 16 KB at a time and refuses a line once more than
        // INLINE_MAX of it is buffered with no newline, so a line whose
        // newline lies past one more read is refused however it arrives;
        // ferrokv reads more at once and applies that bound to the line.
        if nl >= INLINE_MAX + INLINE_READ_SLACK {
            return Err(too_big());
        }
        let mut line = &buf[pos..pos + nl];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        let mut lens = Vec::new();
        let base = batch.extra.len();
        if split_args(line, &mut batch.extra, &mut lens).is_err() {
            batch.extra.truncate(base);
            return Err(ProtocolError("unbalanced quotes in request".into()));
        }
        self.consumed = pos + nl + 1;
        self.cursor = self.consumed;
        if !lens.is_empty() {
            let first = batch.spans.len() as u32;
            let mut start = base;
            for len in lens {
                batch.spans.push(Span {
                    start: start | EXTRA_BIT,
                    len,
                });
                start += len;
            }
            batch.cmds.push((first, batch.spans.len() as u32 - first));
        }
        Ok(true)
    }
}

/// Redis looks for line ends with `strchr` on the query buffer, which
/// stops at a NUL byte: a NUL before the line end means "no line yet".
/// The first `needle` or NUL in `hay`.
fn find_stop(hay: &[u8], needle: u8) -> Option<usize> {
    hay.iter().position(|&c| c == needle || c == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_bulk: 512 * 1024 * 1024,
        unauthenticated: false,
        big_arg: 0,
    };

    /// A 100,000-argument command leaves no large span list behind with
    /// the parser or the batch (INFO's used_memory comes back after it).
    #[test]
    fn many_arguments_leave_no_large_buffers() {
        let n = 100_000;
        let mut req = format!("*{n}\r\n").into_bytes();
        for _ in 0..n {
            req.extend_from_slice(b"$1\r\nx\r\n");
        }
        let mut p = RequestParser::default();
        let mut batch = Batch::default();
        p.parse(&req, &mut batch, LIMITS).expect("parses");
        assert_eq!(batch.len(), 1);
        assert_eq!(batch.argv(0).len(), n);
        batch.clear();
        assert!(p.partial.capacity() <= 4096, "{}", p.partial.capacity());
        assert!(batch.spans.capacity() <= 4096, "{}", batch.spans.capacity());
    }

    fn parse_all(chunks: &[&[u8]]) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
        let mut p = RequestParser::default();
        let mut buf = bytes::BytesMut::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            let mut batch = Batch::default();
            let r = p.parse(&buf, &mut batch, LIMITS);
            let n = p.consumed();
            batch.input = buf.split_to(n).freeze();
            p.rebase(n);
            for i in 0..batch.len() {
                out.push(batch.argv(i).iter_from(0).map(|a| a.to_vec()).collect());
            }
            if let Err(e) = r {
                return (out, Some(e));
            }
        }
        (out, None)
    }

    /// A line arriving a byte per read resumes its search where the last
    /// read's ended: the same commands and errors as read whole, across
    /// the buffer being split after each batch, and a NUL still means "no
    /// line yet" however much follows it.
    #[test]
    fn lines_trickling_in_parse_as_when_read_whole() {
        let long_inline = [b"SET k ".as_slice(), &[b'v'; 20_000], b"\r\n"].concat();
        let inputs: Vec<Vec<u8>> = vec![
            b"PING\r\nECHO \"a b\"\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING\n".to_vec(),
            long_inline.clone(),
            [long_inline.as_slice(), b"*1\r\n$4\r\nPING\r\n"].concat(),
            b"*1\r\n$4\r\nPING\r\n*000000000000000000001\r\n$000004\r\nPING\r\n".to_vec(),
            b"PI\0NG\r\nPING\r\n".to_vec(),
            b"*1\0\r\n$4\r\nPING\r\n".to_vec(),
            b"*1\r\n$4\0\r\nPING\r\n".to_vec(),
            b"*x\r\n".to_vec(),
            vec![b'a'; INLINE_MAX + 2],
        ];
        for input in &inputs {
            let whole = parse_all(&[input]);
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            assert_eq!(
                parse_all(&bytes),
                whole,
                "{:?}",
                String::from_utf8_lossy(&input[..input.len().min(40)])
            );
            let sevens: Vec<&[u8]> = input.chunks(7).collect();
            assert_eq!(parse_all(&sevens), whole);
        }
    }

    #[test]
    fn pipelined_and_split_frames() {
        let (cmds, err) = parse_all(&[
            b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nE",
            b"CHO\r\n$2\r\nhi\r\n",
            b"PING\r\n",
        ]);
        assert!(err.is_none());
        assert_eq!(
            cmds,
            vec![
                vec![b"PING".to_vec()],
                vec![b"ECHO".to_vec(), b"hi".to_vec()],
                vec![b"PING".to_vec()]
            ]
        );
    }

    #[test]
    fn protocol_errors() {
        let (cmds, err) = parse_all(&[b"*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n*1\r\n+PING\r\n"]);
        assert_eq!(cmds.len(), 1);
        assert_eq!(err, Some(ProtocolError("expected '$', got '+'".into())));
        assert_eq!(
            parse_all(&[b"*a\r\n"]).1,
            Some(ProtocolError("invalid multibulk length".into()))
        );
        assert_eq!(
            parse_all(&[b"*1\r\n$-1\r\n"]).1,
            Some(ProtocolError("invalid bulk length".into()))
        );
        let long = vec![b'a'; INLINE_MAX + 1];
        assert_eq!(
            parse_all(&[&long]).1,
            Some(ProtocolError("too big inline request".into()))
        );
    }

    #[test]
    fn unauthenticated_limits_and_one_command_at_a_time() {
        let unauth = Limits {
            max_bulk: 512 * 1024 * 1024,
            unauthenticated: true,
            big_arg: 0,
        };
        let mut p = RequestParser::default();
        let mut batch = Batch::default();
        let buf = b"*1\r\n$4\r\nPING\r\nPING\r\n*11\r\n";
        assert_eq!(p.parse(buf, &mut batch, unauth), Ok(()));
        assert_eq!(batch.len(), 1);
        assert_eq!(p.parse(buf, &mut batch, unauth), Ok(()));
        assert_eq!(batch.len(), 2);
        assert_eq!(
            p.parse(buf, &mut batch, unauth),
            Err(ProtocolError("unauthenticated multibulk length".into()))
        );
        let mut p = RequestParser::default();
        assert_eq!(
            p.parse(b"*1\r\n$16385\r\n", &mut batch, unauth),
            Err(ProtocolError("unauthenticated bulk length".into()))
        );
        let mut p = RequestParser::default();
        assert_eq!(p.parse(b"*10\r\n$16384\r\n", &mut batch, unauth), Ok(()));
    }

    #[test]
    fn error_lines_carry_raw_bytes_and_nul_hides_line_ends() {
        let (_, err) = parse_all(&[b"*1\r\n\xff\r\n"]);
        assert_eq!(
            err.expect("error").line(),
            b"-ERR Protocol error: expected '$', got '\xff'\r\n"
        );
        let (_, err) = parse_all(&[b"*1\r\n\r\n"]);
        assert_eq!(
            err.expect("error").line(),
            b"-ERR Protocol error: expected '$', got ' '\r\n"
        );
        // strchr stops at NUL: the parser keeps waiting.
        assert_eq!(parse_all(&[b"*1\r\n\x00\r\n"]), (vec![], None));
        assert_eq!(parse_all(&[b"PI\x00NG\r\n"]), (vec![], None));
    }

    #[test]
    fn empty_multibulk_and_inline_lines_are_skipped() {
        let (cmds, err) = parse_all(&[b"*0\r\n*-1\r\n\r\n  \n", b"PING\n"]);
        assert!(err.is_none());
        assert_eq!(cmds, vec![vec![b"PING".to_vec()]]);
    }
}

/// Appends `args` as a RESP array: a command as a client sends it (the
/// AOF, the replication stream, a replica's requests to its master).
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    encode_parts(out, args.len(), args.iter().copied());
}

/// Appends `argv` as a RESP array.
pub fn encode_argv(out: &mut Vec<u8>, argv: Argv<'_>) {
    encode_parts(out, argv.len(), argv.iter_from(0));
}

fn encode_parts<'a>(out: &mut Vec<u8>, n: usize, args: impl Iterator<Item = &'a [u8]>) {
    let header = |out: &mut Vec<u8>, kind: u8, n: usize| {
        out.push(kind);
        out.extend_from_slice(n.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    header(out, b'*', n);
    for a in args {
        header(out, b'$', a.len());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}
