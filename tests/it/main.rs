//! ferrokv's integration tests: one binary, modules named after the Redis
//! test units they mirror. Every test starts its own servers on free
//! loopback ports.

mod support;

/// In the AddressSanitizer build (scripts/asan.sh), servers started inside
/// this process count their bytes as the ferrokv binary does there, so
/// `used_memory` and `maxmemory` act on them.
#[cfg(ferrokv_sanitize)]
#[global_allocator]
static GLOBAL: ferrokv::util::counting_alloc::Counting = ferrokv::util::counting_alloc::Counting;

mod acl;
mod aof;
mod aof_layout;
mod aof_rewrite;
mod basics;
mod bitmap;
mod cli;
mod client_eviction;
mod clock;
mod cluster;
mod command;
mod config;
mod connection;
mod datatype_watch;
mod encodings;
mod expire;
mod frameworks;
mod functions;
mod geo;
mod hash;
mod hll;
mod incr;
mod io_threads;
mod keys;
mod layers;
mod ldb;
mod list;
mod list_blocking;
mod maxmemory;
mod multi;
mod multi_load;
mod notify;
mod observe;
mod obuf;
mod oracle;
mod persist;
mod process;
mod protocol;
mod pubsub;
mod replication;
mod scripting;
mod server;
mod set;
mod sort;
mod stream;
mod stream_group;
mod string;
mod string_random;
mod throttle;
mod tls;
mod tracking;
mod types_random;
mod unordered;
mod watch;
mod zset;
mod zset_blocking;
