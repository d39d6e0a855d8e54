//! ferrokv inside a Rust program's tests: start it in-process on a free
//! port, point a Redis client at it, and move its clock instead of waiting
//! for TTLs and rate-limit windows.
//!
//! `cargo run --example embedded` runs it; `cargo test` runs it too, as a
//! test (it asserts what it shows).

use std::time::{Duration, Instant};

use ferrokv::util::clock::ManualClock;

fn main() {
    let started = Instant::now();
    // The clock stands still until the program moves it.
    let clock = ManualClock::new();
    let server = ferrokv::Server::builder()
        .clock(clock.clone())
        .start()
        .expect("ferrokv starts");
    let client = redis::Client::open(server.url()).expect("a valid URL");
    let mut con = client.get_connection().expect("connected");

    // A rate limit of 10 requests a minute with bursts of 5 more: one
    // token every 6 seconds, 6 at once.
    let mut throttle = || -> Vec<i64> {
        redis::cmd("CL.THROTTLE")
            .arg("api:alice")
            .arg(5)
            .arg(10)
            .arg(60)
            .query(&mut con)
            .expect("CL.THROTTLE")
    };
    for left in (0..6).rev() {
        // limited, limit, remaining, retry after, reset after
        assert_eq!(throttle()[..4], [0, 6, left, -1]);
    }
    let refused = throttle();
    assert_eq!(refused, [1, 6, 0, 6, 36]);
    println!("7th request refused: retry after {} s", refused[3]);

    // Six seconds later (no one waits), one token has come back.
    clock.advance(Duration::from_secs(6));
    assert_eq!(throttle()[..4], [0, 6, 0, -1]);
    println!("after advancing the clock 6 s: allowed again");

    // TTLs follow the same clock.
    let mut con = client.get_connection().expect("connected");
    let _: () = redis::cmd("SET")
        .arg("session")
        .arg("s3cr3t")
        .arg("EX")
        .arg(1800)
        .query(&mut con)
        .expect("SET");
    // A key lives through its TTL's last millisecond, as in Redis: step
    // just past it.
    clock.advance(Duration::from_secs(1800) + Duration::from_millis(1));
    let gone: Option<String> = redis::cmd("GET")
        .arg("session")
        .query(&mut con)
        .expect("GET");
    assert_eq!(gone, None);
    println!(
        "a 30-minute session expired after {:?} of real time",
        started.elapsed()
    );
    // Dropping the server stops it.
}
