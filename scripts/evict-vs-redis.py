#!/usr/bin/env python3
"""maxmemory side by side: ferrokv against redis-server under the same limit.

Three measurements, each in interleaved rounds (ferrokv, redis, ferrokv, ...):

- memory per policy: `maxmemory 50mb`, then 150,000 SETs of 1 KB values
  (three times the limit; with a TTL for the volatile-* policies) through
  redis-cli --pipe; used_memory against the limit, RSS against Redis's;
- SET while evicting: after that fill under allkeys-lru, redis-benchmark
  SET at pipeline 16 with 1 KB values over 10,000,000 random keys, so every
  write evicts; the rps ratio per round;
- hit rate: a cache-aside workload under allkeys-lru (GET; on a miss, SET)
  over 200,000 keys drawn from a Zipf distribution (s = 1), 400,000
  operations, the same sequence for both; the hit rate over the second half.

Servers are pinned to core 0 and the load to core 1.

Usage: scripts/evict-vs-redis.py [--ferrokv PATH] [--rounds 3]
"""
import argparse
import bisect
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import sidebyside
from sidebyside import cli, spread, stop

POLICIES = ["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru",
            "volatile-lfu", "volatile-random", "volatile-ttl"]
LIMIT = 50 * 1024 * 1024






def start(binary, policy, workdir):
    return sidebyside.start(binary, 0, workdir,
                            ["--maxmemory", str(LIMIT), "--maxmemory-policy", policy])


def info(port, field):
    for line in cli(port, "INFO", "all").splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return ""






def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def fill(port, n, ttl):
    value = "v" * 1000
    parts = []
    for i in range(n):
        k = f"key:{i:07d}"
        if ttl:
            t = str(100000 + i)
            parts.append(f"*5\r\n$3\r\nSET\r\n${len(k)}\r\n{k}\r\n$1000\r\n{value}\r\n"
                         f"$2\r\nEX\r\n${len(t)}\r\n{t}\r\n")
        else:
            parts.append(f"*3\r\n$3\r\nSET\r\n${len(k)}\r\n{k}\r\n$1000\r\n{value}\r\n")
    subprocess.run(["taskset", "-c", "1", "redis-cli", "-p", str(port), "--pipe"],
                   input="".join(parts).encode(), stdout=subprocess.DEVNULL, check=False)


def set_rps(port):
    out = subprocess.run(["taskset", "-c", "1", "redis-benchmark", "-p", str(port), "-t", "set",
                          "-P", "16", "-c", "50", "-n", "300000", "-d", "1000",
                          "-r", "10000000", "-q"],
                         capture_output=True, text=True, check=True).stdout
    line = [l for l in out.replace("\r", "\n").split("\n") if l.startswith("SET:")][-1]
    return float(line.split()[1])


class Conn:
    """A pipelining RESP connection for the hit-rate workload."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(1 << 20)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        if line.startswith(b"$") and line != b"$-1":
            n = int(line[1:])
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 20)
            self.buf = self.buf[n + 2:]
            return True
        return line != b"$-1"

    def batch(self, cmds):
        self.sock.sendall(b"".join(cmds))
        return [self.reply() for _ in cmds]


def resp(*args):
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def zipf_keys(n_keys, n_ops, seed):
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(n_keys)]
    cdf, total = [], 0.0
    for w in weights:
        total += w
        cdf.append(total)
    # Ranks shuffled over key names, so popularity is not key order.
    names = list(range(n_keys))
    rng.shuffle(names)
    return [names[min(bisect.bisect_left(cdf, rng.random() * total), n_keys - 1)]
            for _ in range(n_ops)]


def hit_rate(port, keys):
    c = Conn(port)
    value = b"v" * 1000
    hits = counted = 0
    half = len(keys) // 2
    for start in range(0, len(keys), 100):
        chunk = keys[start:start + 100]
        found = c.batch([resp("GET", f"key:{k:07d}") for k in chunk])
        misses = [k for k, f in zip(chunk, found) if not f]
        if misses:
            c.batch([resp("SET", f"key:{k:07d}", value) for k in misses])
        if start >= half:
            hits += sum(found)
            counted += len(chunk)
    return hits / counted


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--ferrokv", default=os.path.join(here, "target/release/ferrokv"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    servers = {"ferrokv": args.ferrokv, "redis": "redis-server"}
    used = {(n, p): [] for n in servers for p in POLICIES}
    rsses = {(n, p): [] for n in servers for p in POLICIES}
    rps = {n: [] for n in servers}
    hits = {n: [] for n in servers}
    keys = zipf_keys(200_000, 400_000, 7)
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(args.rounds):
            for policy in POLICIES:
                for name, binary in servers.items():
                    proc, port = start(binary, policy, workdir)
                    try:
                        fill(port, 150_000, policy.startswith("volatile"))
                        used[(name, policy)].append(int(info(port, "used_memory")))
                        rsses[(name, policy)].append(rss(proc.pid))
                        if policy == "allkeys-lru":
                            rps[name].append(set_rps(port))
                    finally:
                        stop(proc)
            for name, binary in servers.items():
                proc, port = start(binary, "allkeys-lru", workdir)
                try:
                    hits[name].append(hit_rate(port, keys))
                finally:
                    stop(proc)
            print(f"round {r + 1}: SET P16 while evicting ferrokv {rps['ferrokv'][-1]:.0f} "
                  f"redis {rps['redis'][-1]:.0f}; hit rate ferrokv {hits['ferrokv'][-1]:.4f} "
                  f"redis {hits['redis'][-1]:.4f}", file=sys.stderr)
    mb = 1024 * 1024
    print(f"maxmemory 50mb, 150000 SETs of 1 KB, {args.rounds} interleaved rounds, medians")
    print(f"{'policy':16} {'used MB ferrokv':>16} {'redis':>8} {'RSS MB ferrokv':>15} {'redis':>8} "
          f"{'RSS ratio':>18}")
    for p in POLICIES:
        ratio = [f / r for f, r in zip(rsses[("ferrokv", p)], rsses[("redis", p)])]
        print(f"{p:16} {statistics.median(used[('ferrokv', p)]) / mb:16.2f} "
              f"{statistics.median(used[('redis', p)]) / mb:8.2f} "
              f"{statistics.median(rsses[('ferrokv', p)]) / mb:15.1f} "
              f"{statistics.median(rsses[('redis', p)]) / mb:8.1f} {spread(ratio):>18}")
    ratio = [f / r for f, r in zip(rps["ferrokv"], rps["redis"])]
    print(f"SET P16 while evicting (allkeys-lru): ferrokv {statistics.median(rps['ferrokv']):.0f} rps, "
          f"redis {statistics.median(rps['redis']):.0f} rps, ratio {spread(ratio)}")
    diff = [100 * (f - r) for f, r in zip(hits["ferrokv"], hits["redis"])]
    print(f"Zipf hit rate (allkeys-lru): ferrokv {100 * statistics.median(hits['ferrokv']):.2f}%, "
          f"redis {100 * statistics.median(hits['redis']):.2f}%, difference in points {spread(diff)}")


if __name__ == "__main__":
    main()
