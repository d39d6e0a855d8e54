//! LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR / HISTOGRAM / HELP
//! (Redis's `latencyCommand`); the samples and histograms are kept by
//! `server/latency.rs` from the command path and the timers.

use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::server::latency::Series;
use crate::util::clock;

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[
    ("latency|latest", latest),
    ("latency|history", history),
    ("latency|reset", reset),
    ("latency|graph", graph),
    ("latency|doctor", doctor),
    ("latency|histogram", histogram),
    ("latency|help", help),
];

const HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    super::client::write_help(ctx, HELP);
    Ok(())
}

/// LATEST: each event's last sample and worst ever.
fn latest(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let events = &ctx.server.latency.events;
    let r = &mut ctx.reply;
    r.array(events.len());
    for (name, ts) in events {
        let last = ts.last();
        r.array(4);
        r.bulk(name.as_bytes());
        r.int(last.time as i64);
        r.int(last.latency as i64);
        r.int(ts.max as i64);
    }
    Ok(())
}

/// HISTORY event: its samples, oldest first.
fn history(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let name = String::from_utf8_lossy(argv.get(2));
    let r = &mut ctx.reply;
    match ctx.server.latency.events.get(name.as_ref()) {
        None => r.array(0),
        Some(ts) => {
            let samples: Vec<_> = ts.in_order().collect();
            r.array(samples.len());
            for s in samples {
                r.array(2);
                r.int(s.time as i64);
                r.int(s.latency as i64);
            }
        }
    }
    Ok(())
}

/// RESET [event ...]: how many events were forgotten.
fn reset(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let m = &mut ctx.server.latency;
    let n = if argv.len() == 2 {
        m.reset(None)
    } else {
        argv.iter_from(2).map(|e| m.reset(Some(e))).sum()
    };
    ctx.reply.int(n as i64);
    Ok(())
}

/// GRAPH event: Redis's sparkline of the event's samples.
fn graph(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let name = String::from_utf8_lossy(argv.get(2)).into_owned();
    let Some(ts) = ctx.server.latency.events.get(name.as_str()) else {
        return Err(Error::err_owned(format!(
            "No samples available for event '{name}'"
        )));
    };
    let now = clock::real_now_ms() / 1000;
    let mut seq = crate::util::sparkline::Sequence::default();
    let (mut min, mut max) = (0, 0);
    for s in ts.in_order() {
        if seq.is_empty() {
            (min, max) = (s.latency, s.latency);
        } else {
            max = max.max(s.latency);
            min = min.min(s.latency);
        }
        let elapsed = now.saturating_sub(s.time);
        let label = match elapsed {
            e if e < 60 => format!("{e}s"),
            e if e < 3600 => format!("{}m", e / 60),
            e if e < 86400 => format!("{}h", e / 3600),
            e => format!("{}d", e / 86400),
        };
        seq.add(s.latency as f64, &label);
    }
    let mut out = format!(
        "{name} - high {max} ms, low {min} ms (all time high {} ms)\n{}\n",
        ts.max,
        "-".repeat(80)
    );
    seq.render(&mut out, 80, 4, true);
    ctx.reply.verbatim(out.as_bytes());
    Ok(())
}

/// HISTOGRAM [command ...]: per command, its calls and the cumulative
/// count of calls per power-of-two bucket of microseconds.
fn histogram(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let table = &ctx.server.table;
    let mut ids: Vec<usize> = Vec::new();
    if argv.len() == 2 {
        ids.extend((0..table.commands.len()).filter(|&i| table.commands[i].latency.is_some()));
        ids.sort_by(|&a, &b| table.commands[a].name.cmp(&table.commands[b].name));
    } else {
        for name in argv.iter_from(2) {
            // `container|sub` names a subcommand (lookupCommandBySds).
            let mut parts = name.splitn(2, |&b| b == b'|');
            let top = table.lookup(parts.next().unwrap_or_default());
            let found = match parts.next() {
                Some(sub) => top.and_then(|t| table.lookup_sub(t, sub)),
                None => top,
            };
            let Some(id) = found else {
                continue;
            };
            if table.commands[id].latency.is_some() {
                ids.push(id);
            }
            let mut subs: Vec<usize> = table.commands[id].subcommands.values().copied().collect();
            subs.sort_by(|&a, &b| table.commands[a].name.cmp(&table.commands[b].name));
            ids.extend(
                subs.into_iter()
                    .filter(|&s| table.commands[s].latency.is_some()),
            );
        }
    }
    let r = &mut ctx.reply;
    r.map(ids.len());
    for id in ids {
        let c = &table.commands[id];
        let Some(h) = c.latency.as_deref() else {
            continue;
        };
        r.bulk(c.name.as_bytes());
        r.map(2);
        r.bulk(b"calls");
        r.int(h.total as i64);
        r.bulk(b"histogram_usec");
        let buckets = h.cumulative();
        r.map(buckets.len());
        for (us, n) in buckets {
            r.int(us as i64);
            r.int(n as i64);
        }
    }
    Ok(())
}

/// The figures DOCTOR reports for an event (analyzeLatencyForEvent).
struct Stats {
    samples: u64,
    avg: u64,
    mad: u64,
    period: u64,
}

fn analyze(ts: &Series, now: u64) -> Stats {
    let samples: Vec<_> = ts.samples.iter().filter(|s| s.time != 0).collect();
    let n = samples.len() as u64;
    if n == 0 {
        return Stats {
            samples: 0,
            avg: 0,
            mad: 0,
            period: 0,
        };
    }
    let avg = samples.iter().map(|s| s.latency).sum::<u64>() / n;
    let oldest = samples.iter().map(|s| s.time).min().unwrap_or(now);
    let period = now.saturating_sub(oldest).max(1);
    let mad = samples
        .iter()
        .map(|s| (avg as i64 - s.latency as i64).unsigned_abs())
        .sum::<u64>()
        / n;
    Stats {
        samples: n,
        avg,
        mad,
        period,
    }
}

/// DOCTOR: Redis's report for the events ferrokv records.
fn doctor(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let s = &ctx.server;
    let threshold = s.config.latency_monitor_threshold;
    let mut report = String::new();
    if s.latency.events.is_empty() && threshold == 0 {
        report.push_str("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n");
        ctx.reply.verbatim(report.as_bytes());
        return Ok(());
    }
    let now = clock::real_now_ms() / 1000;
    let (mut slowlog_enabled, mut slowlog_tuning, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut hz, mut large_objects, mut mass_eviction) =
        (false, false, false, false);
    let mut advices = 0;
    for (n, (event, ts)) in s.latency.events.iter().enumerate() {
        if n == 0 {
            report.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        }
        let st = analyze(ts, now);
        report.push_str(&format!(
            "{}. {event}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            n + 1,
            st.samples,
            st.avg,
            st.mad,
            st.period as f64 / st.samples.max(1) as f64,
            ts.max
        ));
        match event.as_str() {
            "command" => {
                let slower = s.config.slowlog_log_slower_than;
                if slower < 0 {
                    slowlog_enabled = true;
                    advices += 1;
                } else if slower as u64 / 1000 > threshold {
                    slowlog_tuning = true;
                    advices += 1;
                }
                slowlog_inspect = true;
                large_objects = true;
                advices += 2;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            "expire-cycle" => {
                hz = true;
                large_objects = true;
                advices += 2;
            }
            "eviction-cycle" => {
                mass_eviction = true;
                advices += 1;
            }
            _ => {}
        }
        report.push('\n');
    }
    if s.latency.events.is_empty() {
        report.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
    } else if advices == 0 {
        report.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
    } else {
        report.push_str("\nI have a few advices for you:\n\n");
        if slowlog_enabled {
            report.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold * 1000));
        }
        if slowlog_tuning {
            report.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.\n", threshold * 1000));
        }
        if slowlog_inspect {
            report.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
        }
        if scheduler {
            report.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
        }
        if hz && s.config.hz < 100 {
            report.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
        }
        if large_objects {
            report.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
        }
        if mass_eviction {
            report.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n");
        }
    }
    ctx.reply.verbatim(report.as_bytes());
    Ok(())
}
