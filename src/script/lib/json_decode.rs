//! The JSON decoder behind `cjson.decode`, reporting errors as lua-cjson
//! does: `Expected <what> but found <token> at character <n>`.

use mlua::{Lua, Value};

use super::cjson::null;
use super::lua_error;

/// Decodes `s` (already cut at its first NUL) into a Lua value.
pub fn decode(lua: &Lua, s: &[u8], max_depth: i64) -> mlua::Result<Value> {
    Decoder {
        lua,
        max_depth,
        s,
        pos: 0,
        depth: 0,
    }
    .decode()
}

#[derive(Debug)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(&self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str(_) => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(e) => e,
        }
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    max_depth: i64,
    s: &'a [u8],
    pos: usize,
    depth: i64,
}

impl Decoder<'_> {
    fn decode(&mut self) -> mlua::Result<Value> {
        let (tok, at) = self.next();
        let v = self.value(tok, at)?;
        let (tok, at) = self.next();
        if !matches!(tok, Tok::End) {
            return Err(self.parse_error("the end", &tok, at));
        }
        Ok(v)
    }

    fn parse_error(&self, expected: &str, tok: &Tok, at: usize) -> mlua::Error {
        lua_error(
            self.lua,
            format!(
                "Expected {expected} but found {} at character {}",
                tok.name(),
                at + 1
            ),
        )
    }

    fn descend(&mut self, at: usize) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(lua_error(
                self.lua,
                format!(
                    "Found too many nested data structures ({}) at character {}",
                    self.depth,
                    at + 1
                ),
            ));
        }
        Ok(())
    }

    fn value(&mut self, tok: Tok, at: usize) -> mlua::Result<Value> {
        match tok {
            Tok::Str(s) => Ok(Value::String(self.lua.create_string(s)?)),
            Tok::Num(n) => Ok(Value::Number(n)),
            Tok::Bool(b) => Ok(Value::Boolean(b)),
            Tok::Null => Ok(null()),
            Tok::ObjBegin => {
                self.descend(at)?;
                let t = self.lua.create_table()?;
                let (mut tok, mut at) = self.next();
                if matches!(tok, Tok::ObjEnd) {
                    self.depth -= 1;
                    return Ok(Value::Table(t));
                }
                loop {
                    let Tok::Str(key) = tok else {
                        return Err(self.parse_error("object key string", &tok, at));
                    };
                    let (colon, cat) = self.next();
                    if !matches!(colon, Tok::Colon) {
                        return Err(self.parse_error("colon", &colon, cat));
                    }
                    let (vt, vat) = self.next();
                    let v = self.value(vt, vat)?;
                    t.raw_set(self.lua.create_string(key)?, v)?;
                    let (sep, sat) = self.next();
                    match sep {
                        Tok::ObjEnd => break,
                        Tok::Comma => {}
                        other => return Err(self.parse_error("comma or object end", &other, sat)),
                    }
                    (tok, at) = self.next();
                }
                self.depth -= 1;
                Ok(Value::Table(t))
            }
            Tok::ArrBegin => {
                self.descend(at)?;
                let t = self.lua.create_table()?;
                let (mut tok, mut at) = self.next();
                if matches!(tok, Tok::ArrEnd) {
                    self.depth -= 1;
                    return Ok(Value::Table(t));
                }
                let mut i = 1;
                loop {
                    let v = self.value(tok, at)?;
                    t.raw_set(i, v)?;
                    i += 1;
                    let (sep, sat) = self.next();
                    match sep {
                        Tok::ArrEnd => break,
                        Tok::Comma => {}
                        other => return Err(self.parse_error("comma or array end", &other, sat)),
                    }
                    (tok, at) = self.next();
                }
                self.depth -= 1;
                Ok(Value::Table(t))
            }
            other => Err(self.parse_error("value", &other, at)),
        }
    }

    /// The next token and the index where it starts (or where its error
    /// was found).
    fn next(&mut self) -> (Tok, usize) {
        while let Some(&c) = self.s.get(self.pos) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
        let at = self.pos;
        let Some(&c) = self.s.get(self.pos) else {
            return (Tok::End, at);
        };
        let single = match c {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b':' => Some(Tok::Colon),
            b',' => Some(Tok::Comma),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, at);
        }
        if c == b'"' {
            return self.string(at);
        }
        if c == b'-' || c.is_ascii_digit() {
            return match strtod(&self.s[self.pos..]) {
                Some((n, used)) => {
                    self.pos += used;
                    (Tok::Num(n), at)
                }
                None => (Tok::Error("invalid number"), at),
            };
        }
        for (word, tok) in [
            (&b"true"[..], Tok::Bool(true)),
            (b"false", Tok::Bool(false)),
            (b"null", Tok::Null),
        ] {
            if self.s[self.pos..].starts_with(word) {
                self.pos += word.len();
                return (tok, at);
            }
        }
        (Tok::Error("invalid token"), at)
    }

    fn string(&mut self, at: usize) -> (Tok, usize) {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return (Tok::Error("unexpected end of string"), self.pos);
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return (Tok::Str(out), at);
                }
                b'\\' => {
                    let Some(&e) = self.s.get(self.pos + 1) else {
                        return (Tok::Error("unexpected end of string"), self.pos);
                    };
                    let simple = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(8),
                        b'f' => Some(12),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        _ => None,
                    };
                    if let Some(b) = simple {
                        out.push(b);
                        self.pos += 2;
                    } else if e == b'u' {
                        match self.unicode_escape(&mut out) {
                            Some(used) => self.pos += used,
                            None => return (Tok::Error("invalid unicode escape code"), self.pos),
                        }
                    } else {
                        return (Tok::Error("invalid escape code"), self.pos);
                    }
                }
                _ => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// Decodes `\uXXXX` (and a following low surrogate) at `pos` into UTF-8;
    /// returns the bytes consumed.
    fn unicode_escape(&self, out: &mut Vec<u8>) -> Option<usize> {
        let hex4 = |from: usize| -> Option<u32> {
            let h = self.s.get(from..from + 4)?;
            u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
        };
        let mut cp = hex4(self.pos + 2)?;
        let mut used = 6;
        if (0xdc00..=0xdfff).contains(&cp) {
            return None;
        }
        if (0xd800..=0xdbff).contains(&cp) {
            if self.s.get(self.pos + 6..self.pos + 8) != Some(b"\\u") {
                return None;
            }
            let low = hex4(self.pos + 8)?;
            if !(0xdc00..=0xdfff).contains(&low) {
                return None;
            }
            cp = (((cp & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            used = 12;
        }
        let ch = char::from_u32(cp)?;
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        Some(used)
    }
}

/// C strtod on a decimal number prefix: the value and bytes used.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    if matches!(s.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits_start = i;
    while s.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let mut mantissa = i - digits_start;
    if s.get(i) == Some(&b'.') {
        let frac_start = i + 1;
        let mut j = frac_start;
        while s.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        mantissa += j - frac_start;
        if mantissa > 0 {
            i = j;
        }
    }
    if mantissa == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let exp_start = j;
        while s.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    let text = std::str::from_utf8(&s[..i]).ok()?;
    text.parse::<f64>().ok().map(|n| (n, i))
}
