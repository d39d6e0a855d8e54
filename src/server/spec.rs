//! Command facts captured from redis-server 7.0.15 (`COMMAND` and
//! `COMMAND DOCS`, in RESP3) by `scripts/gen-command-spec.py`. The command
//! table reads arity, flags and key positions from here, and COMMAND replays
//! these trees, so what ferrokv reports matches the reference byte for byte.

use std::collections::HashMap;

use crate::net::reply::ReplyBuf;

static INFO: &[u8] = include_bytes!("spec/info.resp3");
static DOCS: &[u8] = include_bytes!("spec/docs.resp3");

/// A reply tree, rendered in either protocol.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Bulk string.
    Bulk(Vec<u8>),
    /// Status string.
    Simple(Vec<u8>),
    /// Integer.
    Int(i64),
    /// Array.
    Array(Vec<Node>),
    /// Set (array in RESP2).
    Set(Vec<Node>),
    /// Map (flat array in RESP2).
    Map(Vec<(Node, Node)>),
    /// Null.
    Null,
}

impl Node {
    /// Parses one RESP3 value from the start of `buf`, returning it and the
    /// rest. Only the types COMMAND replies use are understood. (The
    /// redis-protocol crate refuses sets of maps, which COMMAND DOCS holds.)
    fn parse(buf: &[u8]) -> Option<(Node, &[u8])> {
        let nl = buf.iter().position(|&c| c == b'\n')?;
        let (head, rest) = (&buf[1..nl.checked_sub(1)?], &buf[nl + 1..]);
        let num = || std::str::from_utf8(head).ok()?.parse::<i64>().ok();
        match buf.first()? {
            b'+' => Some((Node::Simple(head.to_vec()), rest)),
            b':' => Some((Node::Int(num()?), rest)),
            b'_' => Some((Node::Null, rest)),
            b'$' => {
                let n = usize::try_from(num()?).ok()?;
                Some((Node::Bulk(rest.get(..n)?.to_vec()), rest.get(n + 2..)?))
            }
            t @ (b'*' | b'~' | b'%') => {
                let n = usize::try_from(num()?).ok()?;
                let mut rest = rest;
                let mut items = Vec::with_capacity(n);
                for _ in 0..if *t == b'%' { 2 * n } else { n } {
                    let (item, r) = Node::parse(rest)?;
                    items.push(item);
                    rest = r;
                }
                let node = match t {
                    b'*' => Node::Array(items),
                    b'~' => Node::Set(items),
                    _ => {
                        let mut pairs = Vec::with_capacity(n);
                        let mut it = items.into_iter();
                        while let (Some(k), Some(v)) = (it.next(), it.next()) {
                            pairs.push((k, v));
                        }
                        Node::Map(pairs)
                    }
                };
                Some((node, rest))
            }
            _ => None,
        }
    }

    /// The bytes of a string node.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Node::Bulk(b) | Node::Simple(b) => Some(b),
            _ => None,
        }
    }

    /// The value of an integer node.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Node::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// Looks a key up in a map node.
    pub fn get(&self, key: &[u8]) -> Option<&Node> {
        match self {
            Node::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| k.as_bytes() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Writes the tree as a reply.
    pub fn write(&self, r: &mut ReplyBuf<'_>) {
        match self {
            Node::Bulk(b) => r.bulk(b),
            Node::Simple(s) => r.simple_bytes(s),
            Node::Int(n) => r.int(*n),
            Node::Array(items) => {
                r.array(items.len());
                items.iter().for_each(|i| i.write(r));
            }
            Node::Set(items) => {
                r.set(items.len());
                items.iter().for_each(|i| i.write(r));
            }
            Node::Map(pairs) => {
                r.map(pairs.len());
                for (k, v) in pairs {
                    k.write(r);
                    v.write(r);
                }
            }
            Node::Null => r.null(),
        }
    }
}

/// ferrokv's own commands, which Redis does not have.
pub const OWN_COMMANDS: [&str; 2] = ["cl.throttle", "clock"];

/// The captured facts, by lowercase command name (`client|list` for
/// subcommands).
pub struct Spec {
    /// COMMAND INFO entries (top-level commands and subcommands).
    pub info: HashMap<String, Node>,
    /// COMMAND DOCS entries for top-level commands.
    pub docs: HashMap<String, Node>,
}

impl Spec {
    /// Decodes the embedded captures.
    pub fn load() -> Spec {
        // The captures are generated files shipped in the crate and checked
        // by the unit test below.
        let (info, _) = Node::parse(INFO).expect("embedded COMMAND capture"); // invariant: shipped file
        let (docs, _) = Node::parse(DOCS).expect("embedded COMMAND DOCS capture"); // invariant: shipped file
        let mut spec = Spec {
            info: HashMap::new(),
            docs: HashMap::new(),
        };
        if let Node::Array(entries) = info {
            for e in entries {
                spec.add_info(e);
            }
        }
        if let Node::Map(pairs) = docs {
            for (k, v) in pairs {
                if let Some(name) = k.as_bytes() {
                    spec.docs
                        .insert(String::from_utf8_lossy(name).into_owned(), v);
                }
            }
        }
        spec.add_own();
        spec
    }

    /// ferrokv's own commands, which Redis does not have: their COMMAND
    /// INFO rows follow the Redis command they resemble (CL.THROTTLE a
    /// write of one key, as INCR; CLOCK a protected admin command, as
    /// DEBUG) and their COMMAND DOCS are written here.
    fn add_own(&mut self) {
        let bulk = |s: &str| Node::Bulk(s.as_bytes().to_vec());
        let arg = |name: &str, kind: &str, optional: bool| {
            let mut pairs = vec![(bulk("name"), bulk(name)), (bulk("type"), bulk(kind))];
            if kind == "key" {
                pairs.push((bulk("key_spec_index"), Node::Int(0)));
            }
            if optional {
                pairs.push((
                    bulk("flags"),
                    Node::Set(vec![Node::Simple(b"optional".to_vec())]),
                ));
            }
            Node::Map(pairs)
        };
        let docs = |summary: &str, group: &str, complexity: &str, args: Vec<Node>| {
            let mut pairs = vec![
                (bulk("summary"), bulk(summary)),
                (bulk("since"), bulk("0.1.0")),
                (bulk("group"), bulk(group)),
                (bulk("complexity"), bulk(complexity)),
            ];
            if !args.is_empty() {
                pairs.push((bulk("arguments"), Node::Array(args)));
            }
            Node::Map(pairs)
        };
        let own = [
            (
                "cl.throttle",
                "incr",
                -5,
                docs(
                    "Rate-limit an action with the generic cell rate algorithm (redis-cell's command)",
                    "string",
                    "O(1)",
                    vec![
                        arg("key", "key", false),
                        arg("max_burst", "integer", false),
                        arg("count_per_period", "integer", false),
                        arg("period", "integer", false),
                        arg("quantity", "integer", true),
                    ],
                ),
            ),
            (
                "clock",
                "debug",
                -2,
                docs(
                    "Read, freeze, resume, set or advance the server's logical time",
                    "server",
                    "O(1)",
                    Vec::new(),
                ),
            ),
        ];
        debug_assert!(own.iter().map(|o| o.0).eq(OWN_COMMANDS));
        for (name, like, arity, doc) in own {
            let Some(Node::Array(mut fields)) = self.info.get(like).cloned() else {
                continue;
            };
            fields[0] = bulk(name);
            fields[1] = Node::Int(arity);
            self.info.insert(name.to_string(), Node::Array(fields));
            self.docs.insert(name.to_string(), doc);
        }
    }

    fn add_info(&mut self, entry: Node) {
        let Node::Array(fields) = &entry else { return };
        let Some(name) = fields.first().and_then(Node::as_bytes) else {
            return;
        };
        let name = String::from_utf8_lossy(name).into_owned();
        if let Some(Node::Array(subs)) = fields.get(9) {
            for s in subs.clone() {
                self.add_info(s);
            }
        }
        self.info.insert(name, entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_decode() {
        let spec = Spec::load();
        let get = &spec.info["get"];
        let Node::Array(f) = get else {
            panic!("not an array")
        };
        assert_eq!(f[1].as_int(), Some(2));
        assert!(spec.info.contains_key("client|list"));
        assert!(spec.docs["get"].get(b"summary").is_some());
    }
}
