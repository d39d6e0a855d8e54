//! Comparing replies whose element order Redis leaves unspecified (SMEMBERS
//! of a hashtable set, HGETALL of a hashtable hash, SPOP...): parse the
//! RESP reply, sort the elements of its top-level aggregate (in groups, so
//! field/value pairs stay together), and re-encode it canonically.

use crate::support::*;

/// A parsed RESP2/RESP3 value, kept as raw frames for leaves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resp {
    /// Any non-aggregate frame, byte for byte.
    Leaf(Vec<u8>),
    /// An aggregate: its type byte and children (maps flattened).
    Agg(u8, Vec<Resp>),
}

impl Resp {
    /// Parses one complete frame.
    pub fn parse(buf: &[u8]) -> Resp {
        let (r, n) = parse_at(buf);
        assert_eq!(
            n,
            buf.len(),
            "trailing bytes in {:?}",
            String::from_utf8_lossy(buf)
        );
        r
    }

    /// Children of an aggregate (empty for a leaf).
    pub fn items(&self) -> &[Resp] {
        match self {
            Resp::Agg(_, v) => v,
            Resp::Leaf(_) => &[],
        }
    }

    /// The payload of a bulk string leaf (`$n\r\n...\r\n`).
    pub fn bulk(&self) -> Option<Vec<u8>> {
        match self {
            Resp::Leaf(f) if f.first() == Some(&b'$') && f.get(1) != Some(&b'-') => {
                let nl = f.iter().position(|&c| c == b'\n')?;
                Some(f[nl + 1..f.len() - 2].to_vec())
            }
            _ => None,
        }
    }

    /// The bulk payload as a lossy string (for readable assertions).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bulk().unwrap_or_default()).into_owned()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Resp::Leaf(f) => out.extend_from_slice(f),
            Resp::Agg(t, v) => {
                let n = if matches!(t, b'%' | b'|') {
                    v.len() / 2
                } else {
                    v.len()
                };
                out.push(*t);
                out.extend_from_slice(format!("{n}\r\n").as_bytes());
                for c in v {
                    c.encode(out);
                }
            }
        }
    }
}

fn parse_at(buf: &[u8]) -> (Resp, usize) {
    let n = frame_len(buf).expect("complete frame");
    let t = buf[0];
    if !matches!(t, b'*' | b'~' | b'%' | b'>' | b'|') {
        return (Resp::Leaf(buf[..n].to_vec()), n);
    }
    let nl = buf.iter().position(|&c| c == b'\n').expect("header");
    let count: i64 = std::str::from_utf8(&buf[1..nl - 1])
        .expect("utf8")
        .parse()
        .expect("len");
    if count < 0 {
        return (Resp::Leaf(buf[..n].to_vec()), n);
    }
    let count = if matches!(t, b'%' | b'|') {
        count * 2
    } else {
        count
    };
    let mut pos = nl + 1;
    let mut items = Vec::new();
    for _ in 0..count {
        let (c, used) = parse_at(&buf[pos..]);
        items.push(c);
        pos += used;
    }
    (Resp::Agg(t, items), pos)
}

/// `reply` with its top-level elements sorted in groups of `group`
/// (2 keeps flat field/value pairs together), re-encoded.
pub fn canonical(reply: &[u8], group: usize) -> String {
    let mut r = Resp::parse(reply);
    if let Resp::Agg(_, items) = &mut r {
        let mut chunks: Vec<Vec<Resp>> = items.chunks(group).map(<[Resp]>::to_vec).collect();
        chunks.sort();
        *items = chunks.into_iter().flatten().collect();
    }
    let mut out = Vec::new();
    r.encode(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends `args` to both servers and asserts the replies are equal up to
/// the order of their top-level elements (grouped by `group`).
pub fn same_unordered(p: &mut Pair, args: &[&str], group: usize) {
    let (ours, theirs) = p.both(args);
    assert_eq!(
        canonical(&ours, group),
        canonical(&theirs, group),
        "reply differs (order aside) for {args:?}"
    );
}

/// Switches both connections to RESP3 when ferrokv supports HELLO; false
/// (and nothing sent to redis-server) when it does not yet.
pub fn try_resp3(p: &mut Pair) -> bool {
    let ours = p.ours.cmd_str(&["HELLO", "3"]);
    if ours.starts_with(b"-") {
        eprintln!("HELLO not available in ferrokv yet: skipping the RESP3 part");
        return false;
    }
    let theirs = p.theirs.cmd_str(&["HELLO", "3"]);
    assert!(theirs.starts_with(b"%"), "redis-server HELLO 3");
    true
}

/// Every element of a full SSCAN/HSCAN/ZSCAN iteration on `conn`, as
/// groups of `group` payloads, sorted; also checks each cursor round trip.
pub fn full_scan(
    conn: &mut Raw,
    cmd: &str,
    key: &str,
    extra: &[&str],
    group: usize,
) -> Vec<Vec<Vec<u8>>> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec![cmd, key, cursor.as_str()];
        args.extend_from_slice(extra);
        let r = Resp::parse(&conn.cmd_str(&args));
        let items = r.items();
        assert_eq!(items.len(), 2, "scan reply shape");
        let next = items[0].text();
        let elems: Vec<Vec<u8>> = items[1]
            .items()
            .iter()
            .map(|e| e.bulk().expect("bulk"))
            .collect();
        assert_eq!(elems.len() % group, 0);
        out.extend(elems.chunks(group).map(<[Vec<u8>]>::to_vec));
        calls += 1;
        assert!(calls < 100_000, "scan does not terminate");
        if next == "0" {
            break;
        }
        cursor = next;
    }
    out.sort();
    out.dedup();
    out
}

/// Sends a one-call SCAN-style command to both servers and asserts the
/// cursor and the set of returned elements agree (their order aside).
pub fn same_scan_unordered(p: &mut Pair, args: &[&str]) {
    let (ours, theirs) = p.both(args);
    let norm = |b: &[u8]| {
        let r = Resp::parse(b);
        let items = r.items();
        assert_eq!(
            items.len(),
            2,
            "scan reply shape: {:?}",
            String::from_utf8_lossy(b)
        );
        let mut elems: Vec<Vec<u8>> = items[1]
            .items()
            .iter()
            .map(|e| e.bulk().expect("bulk"))
            .collect();
        elems.sort();
        (items[0].text(), elems)
    };
    assert_eq!(
        norm(&ours),
        norm(&theirs),
        "reply differs (order aside) for {args:?}"
    );
}
