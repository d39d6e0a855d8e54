//! Pub/sub commands (Redis's `pubsub.c`): SUBSCRIBE and friends, PUBLISH,
//! SPUBLISH and PUBSUB. The registries and delivery live in
//! `exec/pubsub.rs`.

use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::pubsub::{self, Kind};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("subscribe", subscribe),
    ("psubscribe", psubscribe),
    ("ssubscribe", ssubscribe),
    ("unsubscribe", unsubscribe),
    ("punsubscribe", punsubscribe),
    ("sunsubscribe", sunsubscribe),
    ("publish", publish),
    ("spublish", spublish),
    ("pubsub|help", help),
    ("pubsub|channels", channels),
    ("pubsub|shardchannels", shardchannels),
    ("pubsub|numsub", numsub),
    ("pubsub|shardnumsub", shardnumsub),
    ("pubsub|numpat", numpat),
];

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

fn sub(ctx: &mut Ctx<'_>, argv: Argv<'_>, kind: Kind) -> CmdResult {
    for name in argv.iter_from(1) {
        ctx.server
            .pubsub
            .subscribe(ctx.client, &mut ctx.reply, kind, name);
    }
    Ok(())
}

fn unsub(ctx: &mut Ctx<'_>, argv: Argv<'_>, kind: Kind) -> CmdResult {
    let names: Vec<&[u8]> = argv.iter_from(1).collect();
    ctx.server
        .pubsub
        .unsubscribe(ctx.client, &mut ctx.reply, kind, &names);
    Ok(())
}

fn subscribe(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    sub(ctx, argv, Kind::Channel)
}

fn psubscribe(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    sub(ctx, argv, Kind::Pattern)
}

fn ssubscribe(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    sub(ctx, argv, Kind::Shard)
}

fn unsubscribe(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    unsub(ctx, argv, Kind::Channel)
}

fn punsubscribe(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    unsub(ctx, argv, Kind::Pattern)
}

fn sunsubscribe(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    unsub(ctx, argv, Kind::Shard)
}

fn do_publish(ctx: &mut Ctx<'_>, argv: Argv<'_>, shard: bool) -> CmdResult {
    let n = pubsub::publish(
        ctx.server,
        Some(ctx.client),
        ctx.reply.raw(),
        shard,
        argv.get(1),
        argv.get(2),
    );
    if ctx.server.cluster.is_some() {
        crate::server::cluster::bus::propagate_publish(ctx.server, argv.get(1), argv.get(2), shard);
    }
    ctx.reply.int(n as i64);
    Ok(())
}

fn publish(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    do_publish(ctx, argv, false)?;
    to_replicas_outside_cluster(ctx, argv);
    Ok(())
}

fn spublish(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    do_publish(ctx, argv, true)?;
    to_replicas_outside_cluster(ctx, argv);
    Ok(())
}

/// Outside a cluster (whose bus carries it) PUBLISH and SPUBLISH reach
/// replicas, so their subscribers get the message too; never the AOF
/// (Redis's forceCommandPropagation with PROPAGATE_REPL).
fn to_replicas_outside_cluster(ctx: &mut Ctx<'_>, argv: Argv<'_>) {
    if ctx.server.cluster.is_none() {
        let db = ctx.db();
        ctx.server
            .propagation
            .also_to_replicas(db, &[argv.get(0), argv.get(1), argv.get(2)]);
    }
}

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    super::client::write_help(ctx, HELP);
    Ok(())
}

/// PUBSUB CHANNELS|SHARDCHANNELS [pattern]: more arguments are refused
/// with the unknown-subcommand error, as in Redis.
fn list_channels(ctx: &mut Ctx<'_>, argv: Argv<'_>, kind: Kind) -> CmdResult {
    if argv.len() > 3 {
        return Err(Error::subcommand_arity(argv.get(1), "PUBSUB"));
    }
    let found = ctx.server.pubsub.active(kind, argv.try_get(2));
    ctx.reply.array(found.len());
    for c in found {
        ctx.reply.bulk(c);
    }
    Ok(())
}

fn channels(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    list_channels(ctx, argv, Kind::Channel)
}

fn shardchannels(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    list_channels(ctx, argv, Kind::Shard)
}

fn count_subs(ctx: &mut Ctx<'_>, argv: Argv<'_>, kind: Kind) -> CmdResult {
    // A flat array even in RESP3 (Redis 7.0).
    ctx.reply.array((argv.len() - 2) * 2);
    for ch in argv.iter_from(2) {
        let n = ctx.server.pubsub.num_sub(kind, ch);
        ctx.reply.bulk(ch);
        ctx.reply.int(n as i64);
    }
    Ok(())
}

fn numsub(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    count_subs(ctx, argv, Kind::Channel)
}

fn shardnumsub(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    count_subs(ctx, argv, Kind::Shard)
}

fn numpat(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.int(ctx.server.pubsub.num_patterns() as i64);
    Ok(())
}

/// Notifies `event` for elements removed from `key`, then `del` when that
/// emptied it (Redis's pattern for HDEL, SREM, ZREM...).
pub fn notify_removed(ctx: &mut Ctx<'_>, class: u8, event: &str, key: &[u8]) {
    if ctx.server.config.notify_keyspace_events.is_empty() {
        return;
    }
    notify(ctx, class, event, key);
    let db = ctx.client.db;
    if ctx.store.peek(db, key).is_none() {
        notify(ctx, b'g', "del", key);
    }
}

/// Publishes a keyspace notification for `key` in the caller's database
/// (no-op unless notify-keyspace-events enables `class`).
pub fn notify(ctx: &mut Ctx<'_>, class: u8, event: &str, key: &[u8]) {
    let db = ctx.client.db;
    notify_db(ctx, class, event, db, key);
}

/// As [`notify`] for a key in database `db` (COPY ... DB, MOVE).
pub fn notify_db(ctx: &mut Ctx<'_>, class: u8, event: &str, db: usize, key: &[u8]) {
    if ctx.server.config.notify_keyspace_events.is_empty() {
        return;
    }
    // Invalidations go first, as Redis's signalModifiedKey precedes the
    // event.
    if ctx
        .store
        .invalidated
        .as_ref()
        .is_some_and(|k| !k.is_empty())
    {
        crate::server::tracking::drain(ctx.server, ctx.store, ctx.client.id);
    }
    // What the store raised (a key read and missed, created, found
    // expired) comes first, as Redis fires those from lookupKey and dbAdd.
    if !ctx.store.key_events.is_empty() {
        pubsub::drain_key_events(ctx.server, ctx.store, Some(ctx.client), ctx.reply.raw());
    }
    pubsub::notify(
        ctx.server,
        Some(ctx.client),
        ctx.reply.raw(),
        class,
        event,
        db,
        key,
    );
}
