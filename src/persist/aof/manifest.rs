//! The multi-part AOF manifest (Redis 7.0's `aofManifest`): reading it with
//! `aofLoadManifestFromFile`'s rules and refusals, and writing it as
//! `getAofManifestAsString` does.
//!
//! One line per file, `file <name> seq <n> type <b|h|i>`: the base (at most
//! one), history files waiting for deletion, and the incremental files in
//! increasing sequence order. Names that need quoting are written as
//! `sdscatrepr` quotes them and read back with `sdssplitargs`.

use crate::util::repr::{needs_repr, repr};
use crate::util::splitargs::split_args;

/// A file named by the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AofFile {
    /// File name inside the AOF directory.
    pub name: String,
    /// Its sequence number.
    pub seq: u64,
}

/// The manifest: the base file, the incremental files in order, and
/// history files waiting for deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The base file, if any.
    pub base: Option<AofFile>,
    /// Incremental files, in order.
    pub incrs: Vec<AofFile>,
    /// Files replaced by a rewrite, not loaded.
    pub history: Vec<AofFile>,
    /// The base's sequence number (0 without one).
    pub base_seq: u64,
    /// The last incremental file's sequence number (0 without one).
    pub incr_seq: u64,
}

/// A manifest Redis refuses to start with: the reason as Redis words it,
/// and the number and text of the line being read, when there was one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    /// Redis's reason ("Invalid AOF manifest file format", …).
    pub reason: &'static str,
    /// The 1-based line number and the trimmed line.
    pub line: Option<(usize, String)>,
}

impl ManifestError {
    /// Logs the refusal as Redis does before exiting.
    pub fn log(&self) {
        tracing::warn!("\n*** FATAL AOF MANIFEST FILE ERROR ***\n");
        if let Some((n, text)) = &self.line {
            tracing::warn!("Reading the manifest file, at line {n}\n");
            tracing::warn!(">>> '{text}'\n");
        }
    }
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason)
    }
}

/// Redis's MANIFEST_MAX_LINE: longer lines are refused.
const MAX_LINE: usize = 1024;

impl Manifest {
    /// Every file named.
    pub fn files(&self) -> impl Iterator<Item = &AofFile> {
        self.base.iter().chain(&self.history).chain(&self.incrs)
    }

    /// The manifest text as Redis writes it: base, then history, then
    /// incremental files.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        let mut line = |f: &AofFile, t: char| {
            out.extend_from_slice(b"file ");
            // An empty name is quoted too, so that the line still splits
            // into six words.
            if f.name.is_empty() || needs_repr(f.name.as_bytes()) {
                repr(f.name.as_bytes(), &mut out);
            } else {
                out.extend_from_slice(f.name.as_bytes());
            }
            out.extend_from_slice(format!(" seq {} type {t}\n", f.seq).as_bytes());
        };
        if let Some(b) = &self.base {
            line(b, 'b');
        }
        for h in &self.history {
            line(h, 'h');
        }
        for i in &self.incrs {
            line(i, 'i');
        }
        // Names are UTF-8 and repr escapes every byte outside ASCII.
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Parses a manifest's bytes with Redis's rules: lines read as `fgets`
/// reads them into a 1024-byte buffer (a longer line, or a last line with
/// no newline, is refused), `#` comments skipped, a blank line refused,
/// at least the three pairs `file`/`seq`/`type` (keys in any case, unknown
/// keys ignored), a bare file name, one base, increasing incremental
/// sequence numbers. The fuzz target `aof_manifest` feeds it.
pub fn parse_manifest(data: &[u8]) -> Result<Manifest, ManifestError> {
    let mut m = Manifest::default();
    let mut pos = 0;
    let mut linenum = 0;
    let fail = |reason, line: Option<(usize, String)>| Err(ManifestError { reason, line });
    while pos < data.len() {
        let rest = &data[pos..];
        let take = match rest.iter().take(MAX_LINE).position(|&c| c == b'\n') {
            Some(i) => i + 1,
            None => rest.len().min(MAX_LINE),
        };
        let buf = &rest[..take];
        pos += take;
        linenum += 1;
        if buf[0] == b'#' {
            continue;
        }
        // C string functions see the buffer up to its first NUL.
        let text = &buf[..buf.iter().position(|&c| c == 0).unwrap_or(buf.len())];
        if !text.contains(&b'\n') {
            return fail("The AOF manifest file contains too long line", None);
        }
        let trimmed = trim(text);
        let shown = Some((linenum, String::from_utf8_lossy(trimmed).into_owned()));
        let invalid = "Invalid AOF manifest file format";
        if trimmed.is_empty() {
            return fail(invalid, shown);
        }
        let (mut bytes, mut lens) = (Vec::new(), Vec::new());
        if split_args(trimmed, &mut bytes, &mut lens).is_err()
            || lens.len() < 6
            || lens.len() % 2 != 0
        {
            return fail(invalid, shown);
        }
        let mut args = Vec::with_capacity(lens.len());
        let mut at = 0;
        for len in lens {
            args.push(&bytes[at..at + len]);
            at += len;
        }
        let (mut name, mut seq, mut kind) = (None, 0u64, 0u8);
        for pair in args.chunks_exact(2) {
            let (key, value) = (pair[0], pair[1]);
            if key.eq_ignore_ascii_case(b"file") {
                if value.contains(&b'/') || value.contains(&b'\\') {
                    return fail("File can't be a path, just a filename", shown);
                }
                name = Some(String::from_utf8_lossy(value).into_owned());
            } else if key.eq_ignore_ascii_case(b"seq") {
                seq = atoll(value);
            } else if key.eq_ignore_ascii_case(b"type") {
                kind = value.first().copied().unwrap_or(0);
            }
        }
        let Some(name) = name.filter(|_| seq != 0 && kind != 0) else {
            return fail(invalid, shown);
        };
        let file = AofFile { name, seq };
        match kind {
            b'b' => {
                if m.base.is_some() {
                    return fail("Found duplicate base file information", shown);
                }
                m.base_seq = seq;
                m.base = Some(file);
            }
            b'h' => m.history.push(file),
            b'i' => {
                if seq <= m.incr_seq {
                    return fail("Found a non-monotonic sequence number", shown);
                }
                m.incr_seq = seq;
                m.incrs.push(file);
            }
            _ => return fail("Unknown AOF file type", shown),
        }
    }
    if linenum == 0 {
        return fail("Found an empty AOF manifest", None);
    }
    Ok(m)
}

/// `sdstrim(line, " \t\r\n")`.
fn trim(mut s: &[u8]) -> &[u8] {
    let cut = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    while s.first().is_some_and(cut) {
        s = &s[1..];
    }
    while s.last().is_some_and(cut) {
        s = &s[..s.len() - 1];
    }
    s
}

/// C's `atoll` as Redis reads a sequence number: leading blanks, an
/// optional sign, digits up to the first other byte; 0 when none. A
/// negative number reads as 0 (never a valid sequence number).
fn atoll(s: &[u8]) -> u64 {
    let mut i = 0;
    while s.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let mut n: u64 = 0;
    while let Some(d) = s.get(i).filter(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(u64::from(d - b'0'));
        i += 1;
    }
    if negative {
        0
    } else {
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(text: &str) -> &'static str {
        parse_manifest(text.as_bytes()).expect_err("refused").reason
    }

    #[test]
    fn refusals_in_redis_words() {
        assert_eq!(reason(""), "Found an empty AOF manifest");
        assert_eq!(
            reason("file a seq 1 type i\n\nfile b seq 3 type i\n"),
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            reason("filx a seq 1 type b\n"),
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            reason("file a type i\n"),
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            reason("file a seq 1 type i x\n"),
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            reason("file a seq 0 type i\n"),
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            reason("file a seq 1 type i"),
            "The AOF manifest file contains too long line"
        );
        assert_eq!(
            reason(&format!("file a seq 1 type b {}\n", "x y ".repeat(300))),
            "The AOF manifest file contains too long line"
        );
        assert_eq!(reason("file a seq 1 type x\n"), "Unknown AOF file type");
        assert_eq!(
            reason("file d/a seq 1 type b\n"),
            "File can't be a path, just a filename"
        );
        assert_eq!(
            reason("file a seq 1 type b\nfile b seq 2 type b\n"),
            "Found duplicate base file information"
        );
        assert_eq!(
            reason("file a seq 2 type i\nfile b seq 1 type i\n"),
            "Found a non-monotonic sequence number"
        );
        let e = parse_manifest(b"file a seq 1 type b\n\n").expect_err("blank");
        assert_eq!(e.line, Some((2, String::new())));
    }

    #[test]
    fn reads_what_it_writes_with_odd_names() {
        let m = parse_manifest(
            b"# comment\nFILE \" file seq \\n\\n.aof .2.base.rdb\" SEQ 2 TYPE b extra 1\n\
              file a.1.incr.aof seq 1 type h\nfile a.3.incr.aof seq 3 type i\n",
        )
        .expect("parses");
        let base = m.base.clone().expect("base");
        assert_eq!(base.name, " file seq \n\n.aof .2.base.rdb");
        assert_eq!((m.base_seq, m.incr_seq), (2, 3));
        assert_eq!(
            m.text(),
            "file \" file seq \\n\\n.aof .2.base.rdb\" seq 2 type b\n\
             file a.1.incr.aof seq 1 type h\nfile a.3.incr.aof seq 3 type i\n"
        );
        assert_eq!(parse_manifest(m.text().as_bytes()), Ok(m));
    }
}
