//! ferrokv's integration tests: one binary, modules named after the Redis
//! test units they mirror. Every test starts its own servers on free
//! loopback ports.

mod support;

mod basics;
mod expire;
mod incr;
mod keys;
mod persist;
mod string;
