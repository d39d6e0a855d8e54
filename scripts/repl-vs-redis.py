#!/usr/bin/env python3
"""Replication side by side: ferrokv master and replica against redis-server
master and replica on the same machine.

Two measurements, each in interleaved rounds (ferrokv, redis, ferrokv, ...)
with medians and the per-round ratios' median and spread:

- full sync: a master holding N keys (key:NNNNNNN, 16-byte values); the time
  from REPLICAOF on a fresh replica to its link being up with every key
  loaded (diskless transfer with no delay on both masters);
- SET at pipeline 16 (redis-benchmark, 50 clients) on a master with no
  replica, then with one replica attached, per server: the rps with a
  replica, its ratio to the same master without one, and its ratio to
  Redis's master with a replica.

Masters are pinned to core 0 and redis-benchmark to core 1; replicas share
core 1 with the benchmark (a 2-core machine has no third core), so where the
benchmark client is the bottleneck (ferrokv at pipeline 16) the replica's
CPU comes out of the client's. The script also reports each master's CPU
time per request (user + system, from /proc) alone and with the replica:
what the replica costs the master itself.

With --replica-nice 19 the replica of the SET phase only gets the CPU the
benchmark leaves on its core: a stand-in for a core of its own on a 2-core
machine (it may fall behind and catch up after the run).

Usage: scripts/repl-vs-redis.py [--ferrokv PATH] [--keys 1000000]
       [--rounds 3] [--requests 500000] [--replica-nice 19]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import sidebyside
from sidebyside import cli, spread, stop










def start(binary, core, extra, workdir, nice=0):
    return sidebyside.start(binary, core, workdir, ["--repl-diskless-sync", "yes",
                            "--repl-diskless-sync-delay", "0", *extra], nice)


def load_keys(port, n):
    """N SETs through redis-cli --pipe."""
    batch = []
    for i in range(n):
        k = f"key:{i:07d}"
        batch.append(f"*3\r\n$3\r\nSET\r\n${len(k)}\r\n{k}\r\n$16\r\n{'v' * 16}\r\n")
    data = "".join(batch).encode()
    subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=data,
                   stdout=subprocess.DEVNULL, check=True)
    assert int(cli(port, "DBSIZE")) == n


def link_up(port, keys):
    info = cli(port, "INFO", "replication")
    return "master_link_status:up" in info and cli(port, "DBSIZE") == str(keys)


def full_sync_seconds(binary, master_port, keys, workdir):
    replica, port = start(binary, 1, [], workdir)
    try:
        began = time.time()
        cli(port, "REPLICAOF", "127.0.0.1", str(master_port))
        while not link_up(port, keys):
            if time.time() - began > 300:
                sys.exit("the replica never caught up")
            time.sleep(0.01)
        return time.time() - began
    finally:
        stop(replica)


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def set_rps(port, requests, pid):
    """SET at pipeline 16: (rps, the server's CPU microseconds per request)."""
    before = cpu_seconds(pid)
    out = subprocess.run(["taskset", "-c", "1", "redis-benchmark", "-p", str(port), "-t", "set",
                          "-P", "16", "-c", "50", "-n", str(requests), "-r", "1000000", "-q"],
                         capture_output=True, text=True, check=True).stdout
    # "SET: 1234567.00 requests per second, p50=..."
    line = [l for l in out.replace("\r", "\n").split("\n") if l.startswith("SET:")][-1]
    return float(line.split()[1]), (cpu_seconds(pid) - before) * 1e6 / requests


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--ferrokv", default=os.path.join(here, "target/release/ferrokv"))
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=500_000)
    ap.add_argument("--replica-nice", type=int, default=0,
                    help="run the SET-phase replica at this nice level, so it takes only "
                         "the CPU the benchmark leaves (a stand-in for a core of its own)")
    args = ap.parse_args()
    servers = {"ferrokv": args.ferrokv, "redis": "redis-server"}
    sync = {name: [] for name in servers}
    alone = {name: [] for name in servers}
    with_replica = {name: [] for name in servers}
    cpu_alone = {name: [] for name in servers}
    cpu_with = {name: [] for name in servers}
    cpu_replica = {name: [] for name in servers}
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(args.rounds):
            for name, binary in servers.items():
                d = os.path.join(workdir, f"{name}-{r}")
                os.makedirs(d)
                master, mport = start(binary, 0, [], d)
                try:
                    load_keys(mport, args.keys)
                    sync[name].append(full_sync_seconds(binary, mport, args.keys, d))
                    # Warm up first: the pages the sync's fork shared take
                    # a fault on their first write after it.
                    set_rps(mport, args.requests // 4, master.pid)
                    rps, cpu = set_rps(mport, args.requests, master.pid)
                    alone[name].append(rps)
                    cpu_alone[name].append(cpu)
                    replica, rport = start(binary, 1, ["--replicaof", "127.0.0.1", str(mport)], d,
                                           args.replica_nice)
                    try:
                        deadline = time.time() + 300
                        while "master_link_status:up" not in cli(rport, "INFO", "replication"):
                            if time.time() > deadline:
                                sys.exit("the replica never caught up")
                            time.sleep(0.05)
                        before = cpu_seconds(replica.pid)
                        rps, cpu = set_rps(mport, args.requests, master.pid)
                        # Measured once the replica applied everything.
                        deadline = time.time() + 60
                        while (cli(rport, "INFO", "replication").split("slave_repl_offset:")[1].split()[0]
                               != cli(mport, "INFO", "replication").split("master_repl_offset:")[1].split()[0]
                               and time.time() < deadline):
                            time.sleep(0.01)
                        cpu_replica[name].append((cpu_seconds(replica.pid) - before) * 1e6 / args.requests)
                        with_replica[name].append(rps)
                        cpu_with[name].append(cpu)
                    finally:
                        stop(replica)
                finally:
                    stop(master)
                print(f"round {r + 1} {name}: sync {sync[name][-1]:.3f} s, SET P16 "
                      f"{alone[name][-1]:.0f} rps alone, {with_replica[name][-1]:.0f} with a replica, "
                      f"master cpu/req {cpu_alone[name][-1]:.2f}/{cpu_with[name][-1]:.2f} us, "
                      f"replica {cpu_replica[name][-1]:.2f} us",
                      file=sys.stderr)
    sync_ratio = [f / r for f, r in zip(sync["ferrokv"], sync["redis"])]
    print(f"{args.keys} keys, {args.rounds} interleaved rounds, medians [lowest-highest]")
    print(f"full sync s       ferrokv {statistics.median(sync['ferrokv']):.3f}  "
          f"redis {statistics.median(sync['redis']):.3f}  ratio {spread(sync_ratio)}")
    for name in servers:
        own = [w / a for w, a in zip(with_replica[name], alone[name])]
        print(f"SET P16 {name:8} alone {statistics.median(alone[name]):9.0f} rps  with a replica "
              f"{statistics.median(with_replica[name]):9.0f} rps  with/alone {spread(own)}")
    for name in servers:
        own = [w / a for w, a in zip(cpu_with[name], cpu_alone[name])]
        print(f"master cpu/req {name:8} alone {statistics.median(cpu_alone[name]):5.2f} us  with a replica "
              f"{statistics.median(cpu_with[name]):5.2f} us  with/alone {spread(own)}  "
              f"replica cpu/req {statistics.median(cpu_replica[name]):5.2f} us")
    vs = [f / r for f, r in zip(with_replica["ferrokv"], with_replica["redis"])]
    print(f"SET P16 with a replica, ferrokv/redis {spread(vs)}")


if __name__ == "__main__":
    main()
