//! The reply writer: Redis's `addReply*` family for RESP2 and RESP3, writing
//! straight into a client's output buffer. Every reply byte ferrokv sends is
//! produced here, so protocol differences live in one place.

use crate::error::Error;
use crate::util::num;

/// Writes replies for one client into its output buffer.
pub struct ReplyBuf<'a> {
    out: &'a mut Vec<u8>,
    resp3: bool,
}

impl<'a> ReplyBuf<'a> {
    /// A writer appending to `out`, speaking RESP3 when `resp3` is set.
    pub fn new(out: &'a mut Vec<u8>, resp3: bool) -> Self {
        ReplyBuf { out, resp3 }
    }

    /// True when the client negotiated RESP3 with HELLO 3.
    pub fn is_resp3(&self) -> bool {
        self.resp3
    }

    /// Switches protocol (HELLO replies in the new protocol).
    pub fn set_resp3(&mut self, resp3: bool) {
        self.resp3 = resp3;
    }

    /// Bytes written so far (for deferred lengths and discarding).
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// True when nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Drops everything written after `mark` (CLIENT REPLY OFF/SKIP).
    pub fn truncate(&mut self, mark: usize) {
        self.out.truncate(mark);
    }

    /// The raw buffer, for callers that copy pre-encoded replies.
    pub fn raw(&mut self) -> &mut Vec<u8> {
        self.out
    }

    fn line(&mut self, prefix: u8, body: &[u8]) {
        self.out.push(prefix);
        self.out.extend_from_slice(body);
        self.out.extend_from_slice(b"\r\n");
    }

    fn header(&mut self, prefix: u8, n: i64) {
        let mut buf = num::itoa_buf();
        let digits = num::fmt_i64(n, &mut buf);
        self.out.push(prefix);
        self.out.extend_from_slice(digits);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `+OK`
    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    /// A status reply (`+text`).
    pub fn simple(&mut self, s: &str) {
        self.line(b'+', s.as_bytes());
    }

    /// A status reply from bytes (newlines must already be absent).
    pub fn simple_bytes(&mut self, s: &[u8]) {
        self.line(b'+', s);
    }

    /// An error reply (`-...`); newlines in the text become spaces, as
    /// Redis's addReplyErrorLength does.
    pub fn error(&mut self, e: &Error) {
        let msg = e.message();
        self.out.push(b'-');
        let start = self.out.len();
        self.out.extend_from_slice(msg.as_bytes());
        for b in &mut self.out[start..] {
            if *b == b'\r' || *b == b'\n' {
                *b = b' ';
            }
        }
        self.out.extend_from_slice(b"\r\n");
    }

    /// An integer reply.
    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    /// A bulk string.
    pub fn bulk(&mut self, s: &[u8]) {
        self.header(b'$', s.len() as i64);
        self.out.extend_from_slice(s);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal form of `n` (GET of an int value).
    pub fn bulk_i64(&mut self, n: i64) {
        let mut buf = num::itoa_buf();
        let digits = num::fmt_i64(n, &mut buf);
        self.header(b'$', digits.len() as i64);
        self.out.extend_from_slice(digits);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    pub fn null(&mut self) {
        if self.resp3 {
            self.out.extend_from_slice(b"_\r\n");
        } else {
            self.out.extend_from_slice(b"$-1\r\n");
        }
    }

    /// A missing aggregate: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.out.extend_from_slice(b"_\r\n");
        } else {
            self.out.extend_from_slice(b"*-1\r\n");
        }
    }

    /// An array header.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// A map header: `%n` in RESP3, a flat array of `2n` in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.header(b'%', n as i64);
        } else {
            self.header(b'*', 2 * n as i64);
        }
    }

    /// A set header: `~n` in RESP3, an array in RESP2.
    pub fn set(&mut self, n: usize) {
        if self.resp3 {
            self.header(b'~', n as i64);
        } else {
            self.header(b'*', n as i64);
        }
    }

    /// A push header (`>n`, RESP3 only; RESP2 uses arrays).
    pub fn push(&mut self, n: usize) {
        if self.resp3 {
            self.header(b'>', n as i64);
        } else {
            self.header(b'*', n as i64);
        }
    }

    /// A double: `,%.17g` in RESP3, a bulk string in RESP2.
    pub fn double(&mut self, d: f64) {
        let mut text = Vec::with_capacity(32);
        if d.is_infinite() {
            text.extend_from_slice(if d > 0.0 { b"inf" } else { b"-inf" });
        } else {
            num::write_g17(d, &mut text);
        }
        if self.resp3 {
            self.line(b',', &text);
        } else {
            self.bulk(&text);
        }
    }

    /// A double in Redis's human form (addReplyHumanLongDouble): a bulk
    /// string in RESP2, a `,` double in RESP3, both from `%.17f` with the
    /// trailing zeros cut.
    pub fn human_double(&mut self, d: f64) {
        let text = num::fmt_human(d);
        if self.resp3 {
            self.line(b',', text.as_bytes());
        } else {
            self.bulk(text.as_bytes());
        }
    }

    /// A boolean: `#t`/`#f` in RESP3, `:1`/`:0` in RESP2.
    pub fn boolean(&mut self, b: bool) {
        if self.resp3 {
            self.out
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(i64::from(b));
        }
    }

    /// Verbatim text (`=len\r\ntxt:...`) in RESP3, a bulk string in RESP2
    /// (INFO, CLIENT LIST and CLIENT INFO use it).
    pub fn verbatim(&mut self, text: &[u8]) {
        if self.resp3 {
            self.header(b'=', text.len() as i64 + 4);
            self.out.extend_from_slice(b"txt:");
            self.out.extend_from_slice(text);
            self.out.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// Starts an aggregate whose length is known only later; pair with
    /// [`ReplyBuf::finish_deferred`].
    pub fn defer(&mut self) -> usize {
        self.out.len()
    }

    /// Inserts the header of a deferred aggregate at `mark`.
    pub fn finish_deferred(&mut self, mark: usize, prefix: u8, n: usize) {
        let mut header = Vec::with_capacity(24);
        header.push(prefix);
        num::write_i64(n as i64, &mut header);
        header.extend_from_slice(b"\r\n");
        self.out.splice(mark..mark, header);
    }

    /// Finishes a deferred array.
    pub fn finish_deferred_array(&mut self, mark: usize, n: usize) {
        self.finish_deferred(mark, b'*', n);
    }

    /// Finishes a deferred map (flat array in RESP2).
    pub fn finish_deferred_map(&mut self, mark: usize, n: usize) {
        if self.resp3 {
            self.finish_deferred(mark, b'%', n);
        } else {
            self.finish_deferred(mark, b'*', 2 * n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp2_and_resp3_nulls() {
        let mut out = Vec::new();
        let mut r = ReplyBuf::new(&mut out, false);
        r.null();
        r.null_array();
        r.set_resp3(true);
        r.null();
        r.map(1);
        r.double(0.1);
        assert_eq!(out, b"$-1\r\n*-1\r\n_\r\n%1\r\n,0.10000000000000001\r\n");
    }

    #[test]
    fn deferred_and_error_sanitising() {
        let mut out = Vec::new();
        let mut r = ReplyBuf::new(&mut out, false);
        let m = r.defer();
        r.int(1);
        r.int(2);
        r.finish_deferred_array(m, 2);
        r.error(&Error::err_owned("a\r\nb".into()));
        assert_eq!(out, b"*2\r\n:1\r\n:2\r\n-ERR a  b\r\n");
    }
}

/// Drops from `out[mark..]` every reply but RESP3 push frames (`>`), which
/// a client gets even with CLIENT REPLY OFF or SKIP, as Redis delivers
/// pushes (subscribe confirmations, messages) whatever the reply mode.
pub fn retain_pushes(out: &mut Vec<u8>, mark: usize) {
    let mut kept = mark;
    let mut pos = mark;
    while pos < out.len() {
        let Some(len) = frame_len(&out[pos..]) else {
            break;
        };
        if out[pos] == b'>' {
            out.copy_within(pos..pos + len, kept);
            kept += len;
        }
        pos += len;
    }
    out.truncate(kept);
}

/// Length of the RESP2/RESP3 frame at the start of `buf`, as written here;
/// None when it is not complete.
fn frame_len(buf: &[u8]) -> Option<usize> {
    let nl = buf.iter().position(|&c| c == b'\n')?;
    let head = buf.get(1..nl.checked_sub(1)?)?;
    let after = nl + 1;
    let n = || crate::util::num::parse_i64(head);
    match buf.first()? {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after),
        b'$' | b'=' | b'!' => match n()? {
            n if n < 0 => Some(after),
            n => {
                let end = after + n as usize + 2;
                (buf.len() >= end).then_some(end)
            }
        },
        t @ (b'*' | b'~' | b'%' | b'>' | b'|') => {
            let n = n()?;
            if n < 0 {
                return Some(after);
            }
            let count = if matches!(t, b'%' | b'|') { 2 * n } else { n };
            let mut pos = after;
            for _ in 0..count {
                pos += frame_len(buf.get(pos..)?)?;
            }
            Some(pos)
        }
        _ => None,
    }
}
