//! A pipelined load generator for the side-by-side benchmark, for commands
//! redis-benchmark cannot randomise: its `__rand_int__` is a 12-digit
//! zero-padded number, which Redis (and ferrokv) refuse as a bit offset.
//! Here `{rand:N}` anywhere in a template argument becomes a uniform
//! integer below N, without padding (`15.{rand:1000000}` spreads a
//! coordinate over a whole degree).
//!
//! `loadgen [--setup 'COMMAND ARGS'] PORT CLIENTS PIPELINE REQUESTS
//! TEMPLATE...`, e.g. `loadgen 6379 50 16 100000 SETBIT bits
//! '{rand:8000000}' 1`; each connection first runs the `--setup` command
//! (split on spaces), if any, such as `CLIENT TRACKING on`. Every
//! connection sends PIPELINE commands, then each reads its replies, in
//! lockstep; it prints one CSV line shaped as redis-benchmark's
//! (`"test","rps","avg","min","p50","p95","p99","max"`, latencies of whole
//! batches in ms).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// A piece of one template argument.
enum Part {
    Text(Vec<u8>),
    Rand(u64),
}

/// Each argument split into text and `{rand:N}` pieces.
fn parse_template(args: &[String]) -> Vec<Vec<Part>> {
    args.iter()
        .map(|a| {
            let mut parts = Vec::new();
            let mut rest = a.as_str();
            while let Some(at) = rest.find("{rand:") {
                let Some(end) = rest[at..].find('}') else {
                    break;
                };
                let Ok(n) = rest[at + 6..at + end].parse() else {
                    break;
                };
                parts.push(Part::Text(rest.as_bytes()[..at].to_vec()));
                parts.push(Part::Rand(n));
                rest = &rest[at + end + 1..];
            }
            parts.push(Part::Text(rest.as_bytes().to_vec()));
            parts
        })
        .collect()
}

/// xorshift64*: fast and good enough to spread offsets.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn encode(template: &[Vec<Part>], rng: &mut u64, out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", template.len()).as_bytes());
    let mut arg = Vec::new();
    for parts in template {
        arg.clear();
        for p in parts {
            match p {
                Part::Text(t) => arg.extend_from_slice(t),
                Part::Rand(n) => {
                    arg.extend_from_slice((next(rng) % (*n).max(1)).to_string().as_bytes())
                }
            }
        }
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(&arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The length of the complete RESP2 reply at the start of `buf`.
fn reply_len(buf: &[u8]) -> Option<usize> {
    let nl = buf.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&buf[1..nl]).ok()?;
    match buf.first()? {
        b'+' | b'-' | b':' => Some(nl + 2),
        b'$' => {
            let n: i64 = head.parse().ok()?;
            let total = nl + 2 + if n < 0 { 0 } else { n as usize + 2 };
            (buf.len() >= total).then_some(total)
        }
        b'*' => {
            let n: i64 = head.parse().ok()?;
            let mut pos = nl + 2;
            for _ in 0..n.max(0) {
                pos += reply_len(&buf[pos..])?;
            }
            Some(pos)
        }
        _ => None,
    }
}

struct Conn {
    sock: TcpStream,
    inbuf: Vec<u8>,
}

impl Conn {
    /// Reads until `n` replies arrived.
    fn read_replies(&mut self, mut n: usize) -> std::io::Result<()> {
        let mut chunk = [0u8; 64 * 1024];
        let mut pos = 0;
        while n > 0 {
            while n > 0 {
                match reply_len(&self.inbuf[pos..]) {
                    Some(len) => {
                        pos += len;
                        n -= 1;
                    }
                    None => break,
                }
            }
            if n == 0 {
                break;
            }
            let got = self.sock.read(&mut chunk)?;
            if got == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.inbuf.extend_from_slice(&chunk[..got]);
        }
        self.inbuf.drain(..pos);
        Ok(())
    }
}

fn main() -> std::io::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut setup = Vec::new();
    if args.first().map(String::as_str) == Some("--setup") && args.len() > 1 {
        let words: Vec<String> = args[1].split(' ').map(str::to_string).collect();
        encode(&parse_template(&words), &mut 1, &mut setup);
        args.drain(..2);
    }
    if args.len() < 5 {
        eprintln!("usage: loadgen [--setup COMMAND] PORT CLIENTS PIPELINE REQUESTS TEMPLATE...");
        std::process::exit(2);
    }
    let num = |i: usize| args[i].parse::<usize>().unwrap_or(1).max(1);
    let (port, clients, pipeline, requests) = (args[0].clone(), num(1), num(2), num(3));
    let template = parse_template(&args[4..]);
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        let sock = TcpStream::connect(format!("127.0.0.1:{port}"))?;
        sock.set_nodelay(true)?;
        let mut c = Conn {
            sock,
            inbuf: Vec::new(),
        };
        if !setup.is_empty() {
            c.sock.write_all(&setup)?;
            c.read_replies(1)?;
        }
        conns.push(c);
    }
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut batch = Vec::new();
    let mut latencies = Vec::new();
    let mut sent = 0;
    let started = Instant::now();
    while sent < requests {
        let mut sent_at = Vec::with_capacity(clients);
        let mut in_flight = Vec::with_capacity(clients);
        for c in conns.iter_mut() {
            let n = pipeline.min(requests - sent);
            if n == 0 {
                break;
            }
            batch.clear();
            for _ in 0..n {
                encode(&template, &mut rng, &mut batch);
            }
            c.sock.write_all(&batch)?;
            sent_at.push(Instant::now());
            in_flight.push(n);
            sent += n;
        }
        for (i, n) in in_flight.iter().enumerate() {
            conns[i].read_replies(*n)?;
            latencies.push(sent_at[i].elapsed().as_secs_f64() * 1e3);
        }
    }
    let secs = started.elapsed().as_secs_f64();
    latencies.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    let avg = latencies.iter().sum::<f64>() / latencies.len() as f64;
    println!(
        "\"{}\",\"{:.2}\",\"{avg:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"",
        args[4],
        requests as f64 / secs,
        at(0.0),
        at(0.5),
        at(0.95),
        at(0.99),
        at(1.0)
    );
    Ok(())
}
