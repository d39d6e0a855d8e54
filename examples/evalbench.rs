//! Runs N EVAL (or EVALSHA) calls of a rate-limiter script in-process, for
//! instruction counting under callgrind: `evalbench [eval|evalsha|get] [N]`.

use std::net::SocketAddr;
use std::sync::Arc;

use ferrokv::config::Config;
use ferrokv::exec::Executor;
use ferrokv::net::link::Shared;
use ferrokv::net::request::OwnedArgv;
use ferrokv::server::client::Client;

const SCRIPT: &[u8] = b"local c = redis.call('incr', KEYS[1]) if c == 1 then redis.call('expire', KEYS[1], 60) end return c";

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "eval".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let mut exec = Executor::new(Config::default(), Arc::new(Shared::default()), 0);
    let tx = ferrokv::net::link::ConnTx::detached();
    let addr: SocketAddr = "127.0.0.1:1".parse().expect("literal address");
    let addr = ferrokv::net::addr::PeerAddr::Tcp(addr);
    let mut client = Client::new(1, addr.clone(), addr, tx, 0);
    client.authenticated = true;
    let mut out = Vec::with_capacity(1 << 16);
    let load = OwnedArgv::from_slices([&b"SCRIPT"[..], b"LOAD", SCRIPT]);
    exec.call(&mut client, load.argv(), &mut out);
    let sha = out[out.len() - 42..out.len() - 2].to_vec();
    let mut key = b"rl:00000000".to_vec();
    for i in 0..n {
        let k = i % 1000;
        key[3..].copy_from_slice(format!("{k:08}").as_bytes());
        let argv = match mode.as_str() {
            "evalsha" => OwnedArgv::from_slices([&b"EVALSHA"[..], &sha, b"1", &key]),
            "get" => OwnedArgv::from_slices([&b"GET"[..], &key]),
            _ => OwnedArgv::from_slices([&b"EVAL"[..], SCRIPT, b"1", &key]),
        };
        out.clear();
        exec.call(&mut client, argv.argv(), &mut out);
    }
    println!("{}", String::from_utf8_lossy(&out));
}
