//! Commands: the table that describes them (`table.rs`, from the captured
//! spec in `spec.rs`), argument parsing helpers (`args.rs`) and one file per
//! command family, mirroring Redis's `t_string.c`, `db.c`, `expire.c`...
//!
//! A handler has the shape `fn(&mut Ctx, Argv) -> CmdResult`: it parses its
//! arguments, works on the store and writes its reply through `ctx.reply`.
//! Returning `Err` writes the error reply instead.

pub mod args;
pub mod client;
mod coll;
pub mod command;
pub mod config;
pub mod connection;
pub mod expire;
pub mod function;
pub mod hash;
pub mod info;
pub mod keys;
pub mod list;
pub mod list_blocking;
pub mod persist;
pub mod pubsub;
pub mod scan;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod spec;
pub mod stream;
pub mod stream_read;
pub mod string;
pub mod table;
pub mod tx;
pub mod zset;
pub mod zset_blocking;

use crate::error::CmdResult;
use crate::exec::client::Client;
use crate::exec::ServerState;
use crate::net::reply::ReplyBuf;
pub use crate::net::request::Argv;
use crate::store::Store;

/// Everything a handler may touch while it runs.
pub struct Ctx<'a> {
    /// The keyspace.
    pub store: &'a mut Store,
    /// The calling client's state.
    pub client: &'a mut Client,
    /// Where the reply goes.
    pub reply: ReplyBuf<'a>,
    /// Server-wide state: config, stats, other clients, the command table.
    pub server: &'a mut ServerState,
}

impl Ctx<'_> {
    /// The client's selected database.
    #[inline]
    pub fn db(&self) -> usize {
        self.client.db
    }
}

/// A command implementation.
pub type Handler = fn(&mut Ctx<'_>, Argv<'_>) -> CmdResult;

/// Every family's handlers, joined into the command table at startup.
pub const FAMILIES: &[&[(&str, Handler)]] = &[
    string::COMMANDS,
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
];
