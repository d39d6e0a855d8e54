//! The executor's per-command path (lookup, arity, handler, reply) on the
//! commands that matter most, without the network.

use std::net::SocketAddr;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use ferrokv::config::Config;
use ferrokv::exec::Executor;
use ferrokv::net::link::Shared;
use ferrokv::net::request::OwnedArgv;
use ferrokv::server::client::Client;

fn dispatch(c: &mut Criterion) {
    let mut exec = Executor::new(Config::default(), Arc::new(Shared::default()), 0);
    let tx = ferrokv::net::link::ConnTx::detached();
    let addr: SocketAddr = "127.0.0.1:1".parse().expect("literal address");
    let addr = ferrokv::net::addr::PeerAddr::Tcp(addr);
    let mut client = Client::new(1, addr.clone(), addr, tx, 0);
    client.authenticated = true;
    let mut out = Vec::with_capacity(1 << 16);
    // The rate-limiter script: loaded once so EVALSHA finds it.
    const SCRIPT: &[u8] = b"local c = redis.call('incr', KEYS[1]) if c == 1 then redis.call('expire', KEYS[1], 60) end return c";
    let load = OwnedArgv::from_slices([&b"SCRIPT"[..], b"LOAD", SCRIPT]);
    exec.call(&mut client, load.argv(), &mut out);
    let sha = out[out.len() - 42..out.len() - 2].to_vec();
    let cases: &[(&str, &[&[u8]])] = &[
        ("SET", &[b"SET", b"key:00000001", b"vvvvvvvvvvvvvvvv"]),
        ("GET", &[b"GET", b"key:00000001"]),
        ("INCR", &[b"INCR", b"counter"]),
        ("EVAL_ratelimit", &[b"EVAL", SCRIPT, b"1", b"rl:1"]),
        ("EVALSHA_ratelimit", &[b"EVALSHA", &sha, b"1", b"rl:1"]),
    ];
    for (name, args) in cases {
        let argv = OwnedArgv::from_slices(args.iter().copied());
        c.bench_function(&format!("exec_{name}"), |b| {
            b.iter(|| {
                out.clear();
                exec.call(&mut client, argv.argv(), &mut out);
            })
        });
    }
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
