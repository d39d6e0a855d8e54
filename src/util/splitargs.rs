//! Redis's `sdssplitargs`: a line split into arguments with its quoting
//! rules, for inline commands (`PING\r\n`, what telnet and `redis-cli` in
//! some modes send) and redis.conf lines.

/// Why a line could not be split.
#[derive(Debug, PartialEq, Eq)]
pub struct UnbalancedQuotes;

fn is_space(c: u8) -> bool {
    // C's isspace in the "C" locale.
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Splits `line` into arguments, appending each argument's bytes to `out`
/// and its length to `lens`. The end of the slice (or a NUL byte) ends the
/// line, as the C string does in Redis.
pub fn split_args(
    line: &[u8],
    out: &mut Vec<u8>,
    lens: &mut Vec<usize>,
) -> Result<(), UnbalancedQuotes> {
    // Reading past the end yields 0, like the C string terminator.
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut p = 0usize;
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Ok(());
        }
        let start = out.len();
        let (mut inq, mut insq, mut done) = (false, false, false);
        while !done {
            let c = at(p);
            if inq {
                if c == b'\\' && at(p + 1) == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(at(p + 2)), hex_val(at(p + 3))) {
                        out.push(h * 16 + l);
                        p += 3;
                    } else {
                        // "\x" not followed by two hex digits: the escape
                        // yields a plain 'x'.
                        p += 1;
                        out.push(b'x');
                    }
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    out.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or the end.
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(UnbalancedQuotes);
                    }
                    done = true;
                } else if c == 0 {
                    return Err(UnbalancedQuotes);
                } else {
                    out.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(UnbalancedQuotes);
                    }
                    done = true;
                } else if c == 0 {
                    return Err(UnbalancedQuotes);
                } else {
                    out.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    _ => out.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        lens.push(out.len() - start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &[u8]) -> Result<Vec<Vec<u8>>, UnbalancedQuotes> {
        let (mut out, mut lens) = (Vec::new(), Vec::new());
        split_args(s, &mut out, &mut lens)?;
        let mut pos = 0;
        Ok(lens
            .iter()
            .map(|&l| {
                pos += l;
                out[pos - l..pos].to_vec()
            })
            .collect())
    }

    #[test]
    fn sdssplitargs_rules() {
        assert_eq!(
            split(b"set a b").unwrap(),
            vec![b"set".to_vec(), b"a".to_vec(), b"b".to_vec()]
        );
        assert_eq!(
            split(b"echo \"\\x41\\n\"").unwrap(),
            vec![b"echo".to_vec(), b"A\n".to_vec()]
        );
        assert_eq!(
            split(b"a 'it\\'s'").unwrap(),
            vec![b"a".to_vec(), b"it's".to_vec()]
        );
        assert_eq!(split(b"a\"b c\"").unwrap(), vec![b"ab c".to_vec()]);
        assert_eq!(split(b"  ").unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(split(b"set \"a\"b c"), Err(UnbalancedQuotes));
        assert_eq!(split(b"set \"a"), Err(UnbalancedQuotes));
        assert_eq!(split(b"\"\"").unwrap(), vec![Vec::<u8>::new()]);
    }
}
