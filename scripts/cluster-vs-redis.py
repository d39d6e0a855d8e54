#!/usr/bin/env python3
"""Redis Cluster side by side: a 3-master ferrokv cluster against a
3-master redis-server cluster on the same machine.

Two measurements, in interleaved rounds (ferrokv, redis, ferrokv, ...),
with medians and the per-round ratios' median and spread:

- aggregate SET throughput at pipeline 16: `redis-benchmark --cluster`
  (50 clients, random keys over every slot) against the three masters;
- failover time: a cluster of three masters and three replicas built by
  `redis-cli --cluster create`; one master is killed (SIGKILL) and the
  time until another node's CLUSTER NODES shows a replica serving its
  slots is measured, against 3 x cluster-node-timeout;
- slot move time: slot 0 filled with --move-keys keys (hash tag {3560})
  and moved to another master by `redis-cli --cluster reshard`
  (GETKEYSINSLOT and MIGRATE, 10 keys a call, as redis-cli does).

All nodes are pinned to core 0 and redis-benchmark to core 1 (a 2-core
machine cannot give each node a core of its own).

Usage: scripts/cluster-vs-redis.py [--ferrokv PATH] [--rounds 3]
       [--requests 1000000] [--node-timeout 2000] [--move-keys 50000]
"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import sidebyside
from sidebyside import cli, spread


def cluster_port():
    """A port whose bus port (10000 above) is free too."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p > 55535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p + 10000))
            except OSError:
                continue
        return p


def start_node(binary, workdir, node_timeout):
    port = cluster_port()
    d = os.path.join(workdir, str(port))
    os.makedirs(d)
    return sidebyside.start(binary, 0, d, ["--cluster-enabled", "yes",
                            "--cluster-node-timeout", str(node_timeout),
                            "--repl-diskless-sync-delay", "0"], port=port)


def create(binary, workdir, n, replicas, node_timeout):
    nodes = [start_node(binary, workdir, node_timeout) for _ in range(n)]
    addrs = [f"127.0.0.1:{p}" for _, p in nodes]
    subprocess.run(["redis-cli", "--cluster", "create", *addrs, "--cluster-replicas",
                    str(replicas), "--cluster-yes"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    deadline = time.time() + 60
    while not all("cluster_state:ok" in cli(p, "CLUSTER", "INFO") for _, p in nodes):
        if time.time() > deadline:
            sys.exit("the cluster never became ok")
        time.sleep(0.1)
    return nodes


def stop(nodes):
    for proc, _ in nodes:
        proc.kill()
        proc.wait()


def set_rps(port, requests):
    out = subprocess.run(["taskset", "-c", "1", "redis-benchmark", "--cluster", "-p", str(port),
                          "-t", "set", "-P", "16", "-c", "50", "-n", str(requests),
                          "-r", "1000000", "-q"],
                         capture_output=True, text=True, check=True).stdout
    line = [l for l in out.replace("\r", "\n").split("\n") if l.startswith("SET:")][-1]
    return float(line.split()[1])


def owner(port, slot):
    """The port of the master serving `slot` in `port`'s CLUSTER NODES."""
    for line in cli(port, "CLUSTER", "NODES").splitlines():
        f = line.split()
        if len(f) < 9 or "master" not in f[2] or "fail" in f[2]:
            continue
        for r in f[8:]:
            a, _, b = r.partition("-")
            if a.isdigit() and a <= (b or a) and int(a) <= slot <= int(b or a):
                return int(f[1].split("@")[0].rsplit(":", 1)[1])
    return None


def move_seconds(nodes, keys):
    """Fills slot 0 with `keys` keys and times moving it to another master."""
    for _, p in nodes:
        cli(p, "FLUSHALL")  # redis-benchmark --cluster's keys share a tag per node
    src = owner(nodes[0][1], 0)
    dst = next(p for _, p in nodes if p != src)
    cmds = "".join(f"*3\r\n$3\r\nSET\r\n${len(k)}\r\n{k}\r\n$1\r\nv\r\n"
                   for k in (f"{{3560}}:{i}" for i in range(keys)))
    subprocess.run(["redis-cli", "-p", str(src), "--pipe"], input=cmds.encode(),
                   stdout=subprocess.DEVNULL, check=True)
    ids = [cli(p, "CLUSTER", "MYID").strip() for p in (src, dst)]
    began = time.time()
    subprocess.run(["redis-cli", "--cluster", "reshard", f"127.0.0.1:{src}", "--cluster-from",
                    ids[0], "--cluster-to", ids[1], "--cluster-slots", "1", "--cluster-yes"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    took = time.time() - began
    moved = cli(dst, "CLUSTER", "COUNTKEYSINSLOT", "0").strip()
    if moved != str(keys):
        sys.exit(f"slot 0 has {moved} keys on its new master, not {keys}")
    return took


def failover_seconds(binary, workdir, node_timeout):
    nodes = create(binary, workdir, 6, 1, node_timeout)
    try:
        time.sleep(2)  # replicas synced and known everywhere
        victim = owner(nodes[0][1], 0)
        observer = next(p for _, p in nodes if p != victim)
        proc = next(pr for pr, p in nodes if p == victim)
        began = time.time()
        proc.send_signal(signal.SIGKILL)
        while True:
            o = owner(observer, 0)
            if o is not None and o != victim:
                return time.time() - began
            if time.time() - began > 60:
                sys.exit("no failover")
            time.sleep(0.02)
    finally:
        stop(nodes)


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--ferrokv", default=os.path.join(here, "target/release/ferrokv"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--node-timeout", type=int, default=2000)
    ap.add_argument("--move-keys", type=int, default=50_000)
    args = ap.parse_args()
    servers = {"ferrokv": args.ferrokv, "redis": "redis-server"}
    rps = {n: [] for n in servers}
    fo = {n: [] for n in servers}
    mv = {n: [] for n in servers}
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(args.rounds):
            for name, binary in servers.items():
                d = os.path.join(workdir, f"{name}-{r}")
                os.makedirs(d)
                nodes = create(binary, d, 3, 0, args.node_timeout)
                try:
                    set_rps(nodes[0][1], args.requests // 4)
                    rps[name].append(set_rps(nodes[0][1], args.requests))
                    mv[name].append(move_seconds(nodes, args.move_keys))
                finally:
                    stop(nodes)
                d2 = os.path.join(workdir, f"{name}-{r}-fo")
                os.makedirs(d2)
                fo[name].append(failover_seconds(binary, d2, args.node_timeout))
                print(f"round {r + 1} {name}: SET P16 {rps[name][-1]:.0f} rps, "
                      f"failover {fo[name][-1]:.2f} s, slot move {mv[name][-1]:.2f} s",
                      file=sys.stderr)
    ratio = [f / r for f, r in zip(rps["ferrokv"], rps["redis"])]
    limit = 3 * args.node_timeout / 1000
    print(f"3 masters, {args.rounds} interleaved rounds, medians [lowest-highest]")
    print(f"SET P16 aggregate  ferrokv {statistics.median(rps['ferrokv']):.0f} rps  "
          f"redis {statistics.median(rps['redis']):.0f} rps  ratio {spread(ratio)}")
    print(f"failover s (node timeout {args.node_timeout} ms, limit {limit:.1f} s)  "
          f"ferrokv {spread(fo['ferrokv'])}  redis {spread(fo['redis'])}")
    print(f"slot move s ({args.move_keys} keys)  ferrokv {spread(mv['ferrokv'])}  "
          f"redis {spread(mv['redis'])}")


if __name__ == "__main__":
    main()
