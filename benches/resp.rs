//! Hot-path micro benchmarks: framing a pipelined batch (ferrokv's parser
//! next to the redis-protocol crate's decoder, which is why requests are
//! framed by hand) and writing replies.

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ferrokv::net::reply::ReplyBuf;
use ferrokv::net::request::{Batch, Limits, RequestParser};

fn pipelined_sets(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        let key = format!("key:{i:08}");
        v.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{}\r\n$16\r\nvvvvvvvvvvvvvvvv\r\n",
                key.len(),
                key
            )
            .as_bytes(),
        );
    }
    v
}

fn decode(c: &mut Criterion) {
    let input = pipelined_sets(16);
    let limits = Limits {
        max_bulk: 512 << 20,
        unauthenticated: false,
        big_arg: 0,
    };
    let mut g = c.benchmark_group("decode_16_sets");
    g.throughput(Throughput::Elements(16));
    let mut batch = Batch::default();
    g.bench_function("ferrokv_parser", |b| {
        b.iter(|| {
            let mut parser = RequestParser::default();
            batch.clear();
            parser
                .parse(&input, &mut batch, limits)
                .expect("valid input");
            assert_eq!(batch.len(), 16);
        })
    });
    g.bench_function("redis_protocol_decode_range", |b| {
        b.iter(|| {
            let mut pos = 0;
            let mut n = 0;
            while pos < input.len() {
                let (_frame, used) = redis_protocol::resp2::decode::decode_range(&input[pos..])
                    .expect("valid input")
                    .expect("complete frame");
                pos += used;
                n += 1;
            }
            assert_eq!(n, 16);
        })
    });
    g.bench_function("redis_protocol_decode_bytes_mut", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&input[..]);
            let mut n = 0;
            while let Some((_frame, _, _)) =
                redis_protocol::resp2::decode::decode_bytes_mut(&mut buf).expect("valid input")
            {
                n += 1;
            }
            assert_eq!(n, 16);
        })
    });
    g.finish();
}

fn encode(c: &mut Criterion) {
    let mut out = Vec::with_capacity(64 * 1024);
    c.bench_function("reply_100_bulks", |b| {
        b.iter(|| {
            out.clear();
            let mut r = ReplyBuf::new(&mut out, false);
            r.array(100);
            for i in 0..100 {
                r.bulk(b"vvvvvvvvvvvvvvvv");
                r.int(i);
            }
        })
    });
}

criterion_group!(benches, decode, encode);
criterion_main!(benches);
