//! Commands: argument parsing helpers (`args.rs`) and one file per command
//! family, mirroring Redis's `t_string.c`, `db.c`, `expire.c`... The table
//! that describes them (`server/table.rs`, from the captured spec in
//! `server/spec.rs`) joins these handlers at startup.
//!
//! A handler has the shape `fn(&mut Ctx, Argv) -> CmdResult`: it parses its
//! arguments, works on the store and writes its reply through `ctx.reply`.
//! Returning `Err` writes the error reply instead.

pub mod acl;
pub mod args;
pub mod bitmap;
pub mod client;
pub mod clock;
pub mod cluster;
mod coll;
pub mod command;
pub mod config;
pub mod connection;
pub mod debug;
pub mod expire;
pub mod function;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod info;
pub mod keys;
pub mod latency;
mod ldb;
pub mod list;
pub mod list_blocking;
pub mod lolwut;
pub mod memory;
pub mod migrate;
pub mod module;
pub mod monitor;
pub mod persist;
pub mod pubsub;
pub mod repl;
pub mod scan;
pub mod scripting;
pub mod server;
pub mod set;
pub mod slowlog;
pub mod sort;
pub mod stream;
pub mod stream_group;
pub mod stream_info;
pub mod stream_read;
pub mod string;
pub mod throttle;
pub mod tracking;
pub mod tx;
pub mod zset;
pub mod zset_blocking;

pub use crate::net::request::Argv;
pub use crate::server::{Ctx, Handler};

/// Every family's handlers, joined into the command table at startup.
pub const FAMILIES: &[&[(&str, Handler)]] = &[
    string::COMMANDS,
    bitmap::COMMANDS,
    hll::COMMANDS,
    geo::COMMANDS,
    hash::COMMANDS,
    set::COMMANDS,
    zset::COMMANDS,
    zset_blocking::COMMANDS,
    sort::COMMANDS,
    keys::COMMANDS,
    scan::COMMANDS,
    expire::COMMANDS,
    connection::COMMANDS,
    pubsub::COMMANDS,
    client::COMMANDS,
    cluster::COMMANDS,
    server::COMMANDS,
    config::COMMANDS,
    scripting::COMMANDS,
    function::COMMANDS,
    command::COMMANDS,
    tx::COMMANDS,
    list::COMMANDS,
    list_blocking::COMMANDS,
    persist::COMMANDS,
    stream::COMMANDS,
    stream_read::COMMANDS,
    stream_group::COMMANDS,
    stream_info::COMMANDS,
    throttle::COMMANDS,
    repl::COMMANDS,
    clock::COMMANDS,
    acl::COMMANDS,
    debug::COMMANDS,
    latency::COMMANDS,
    memory::COMMANDS,
    module::COMMANDS,
    monitor::COMMANDS,
    slowlog::COMMANDS,
    tracking::COMMANDS,
    lolwut::COMMANDS,
];
