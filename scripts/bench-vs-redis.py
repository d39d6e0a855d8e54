#!/usr/bin/env python3
"""Side-by-side throughput of ferrokv and redis-server with redis-benchmark.

Both servers run on free loopback ports, each pinned to core 0 with taskset;
redis-benchmark runs on core 1. Rounds are interleaved (ferrokv, redis,
ferrokv, redis, ...) so machine noise hits both alike. For each test it prints
the median requests/s of each server, the median of the per-round ratios,
p99 latency, and server CPU time per request (user+system time of all its
threads from /proc/<pid>/task/*/schedstat before and after, in ns), then
geometric means per pipeline depth and the CPU ratio's over all tests.
CL_THROTTLE pits ferrokv's CL.THROTTLE against Redis running the INCR/EXPIRE
Lua limiter (EVAL_RATELIMIT) over the same keys; it stays out of the
geomeans, which compare the same commands.

Rows that need random numbers redis-benchmark cannot write (bit offsets,
coordinates: its __rand_int__ is zero-padded) run examples/loadgen.rs
instead, with the same clients, pipeline and request count; their p99 is
per pipelined batch. The data-type rows (SETBIT ... GEOSEARCH) and the
stream group rows (XREADGROUP_10, XACK) read data that prepare() loads
first. SET_GROW (only when named in --tests) runs 10,000,000 SETs of
random names into an emptied server, for the p99 of requests that meet the
keyspace's growth, and prints the per-round ratio of the p99s. SET_MONITOR
runs SET with a `redis-cli monitor` attached to the
server. SET_ACL and GET_ACL run as a user restricted to `~app:* +@read
+@write` and also print ferrokv's per-round rps ratio and its CPU time per
request against the same command run as the default user. SET_TRACKING
writes 100,000 keys while a RESP3 client with CLIENT TRACKING on (on the
benchmark's core) keeps 1,000 of them tracked, reading again each key the
server invalidates; GET_TRACKING reads 1,000 keys from connections that
all have CLIENT TRACKING on. Both also print each server's per-round ratio
against the same command with no tracking.

With --baseline PATH a second ferrokv build (say, the one before a change)
runs in the same interleaved rounds, and each test also prints the median
per-round rps ratio and the CPU-per-request ratio of ferrokv to it.

Usage: scripts/bench-vs-redis.py [--ferrokv PATH] [--baseline PATH] [--rounds 3]
       [--requests 100000] [--clients 50] [--pipelines 1,16] [--tests set,get,...]
"""
import argparse
import math
import os
import random
import select
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cpu_seconds, free_port, wait_port  # noqa: E402

RATE_LIMITER = ("local c = redis.call('incr', KEYS[1]) "
                "if c == 1 then redis.call('expire', KEYS[1], 60) end return c")

# redis-benchmark's login as the restricted user the *_ACL rows create.
ACL_LOGIN = ["--user", "app", "-a", "apppw"]

# name -> redis-benchmark arguments after the common ones
TESTS = {
    "SET": ["-t", "set"],
    "GET": ["-t", "get"],
    "INCR": ["-t", "incr"],
    "LPUSH": ["-t", "lpush"],
    "RPUSH": ["-t", "rpush"],
    "LPOP": ["-t", "lpop"],
    "RPOP": ["-t", "rpop"],
    # redis-benchmark's own LRANGE test first runs an LPUSH "prefill" of
    # -n requests and reports it too; the same command with our own prefill
    # (see prepare) measures LRANGE alone.
    "LRANGE_100": ["LRANGE", "mylist", "0", "99"],
    "MSET": ["-t", "mset"],
    "SET_EX": ["-r", "100000", "SET", "key:__rand_int__", "val", "EX", "100"],
    "EVAL_RATELIMIT": ["-r", "100000", "EVAL", RATE_LIMITER, "1", "rl:__rand_int__"],
    # Not the same command on both sides: ferrokv's native limiter against
    # Redis running the INCR/EXPIRE Lua limiter over the same keys (the
    # ratio compares two ways of rate-limiting; no geomean includes it).
    "CL_THROTTLE": {
        "ferrokv": ["-r", "100000", "CL.THROTTLE", "rl:__rand_int__", "100", "100", "60"],
        "redis": ["-r", "100000", "EVAL", RATE_LIMITER, "1", "rl:__rand_int__"],
    },
    # Bitmaps, HyperLogLog and geo.
    "SETBIT": {"loadgen": ["SETBIT", "bits", "{rand:8000000}", "1"]},
    "BITCOUNT_1MB": ["BITCOUNT", "bits1mb"],
    "PFADD_10": ["-r", "100000000", "PFADD", "hll"] + ["__rand_int__"] * 10,
    "PFCOUNT_3": ["PFCOUNT", "hll1", "hll2", "hll3"],
    "GEOADD": {"loadgen": ["GEOADD", "geo", "13.{rand:1000000}", "38.{rand:1000000}",
                           "m:{rand:100000000}"]},
    "GEOSEARCH": {"loadgen": ["GEOSEARCH", "points", "FROMLONLAT", "14.{rand:1000000}",
                              "37.{rand:1000000}", "BYRADIUS", "5", "km"]},
    # Streams: appends, group reads of 10 new entries, acknowledgements of
    # random pending entries (redis-benchmark's zero-padded __rand_int__
    # reads as the ID's milliseconds).
    "XADD": ["XADD", "xs", "*", "field", "value"],
    "XREADGROUP_10": ["XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "STREAMS", "xg", ">"],
    "XACK": ["-r", "1000000", "XACK", "xa", "g", "__rand_int__-1"],
    # ACL: SET/GET as a user restricted to `~app:* +@read +@write`. Each
    # round also runs the same command as the default user on the same
    # server, and the row prints the per-round ratio of the two.
    "SET_ACL": ACL_LOGIN + ["-r", "100000", "SET", "app:__rand_int__", "xxx"],
    "GET_ACL": ACL_LOGIN + ["-r", "100000", "GET", "app:__rand_int__"],
    # SET while a `redis-cli monitor` (on the benchmark's core) reads every
    # command the server runs.
    "SET_MONITOR": ["-t", "set"],
    # Client-side caching: SET over 100,000 keys, 1,000 of which a
    # tracking client holds (see Tracker); GET over 1,000 keys from
    # connections that all track what they read.
    "SET_TRACKING": ["-r", "100000", "SET", "key:__rand_int__", "xxx"],
    "GET_TRACKING": {"loadgen": ["GET", "key:{rand:1000}"], "setup": "CLIENT TRACKING on"},
    # SET into an emptied server until it holds about 10,000,000 keys
    # (GROW_REQUESTS draws from a billion names): its p99 shows what the
    # keyspace's growth costs the requests that meet it. Not in the
    # default set (a few minutes a round); run it with `--tests SET_GROW
    # --pipelines 1`.
    "SET_GROW": ["-r", "1000000000", "SET", "key:__rand_int__", "xxx"],
}

# SET_GROW's requests, whatever --requests says.
GROW_REQUESTS = 10_000_000


def requests_of(test, requests):
    return GROW_REQUESTS if test == "SET_GROW" else requests

# redis-benchmark's names for keys below 1,000 (`key:` and 12 digits).
TRACKED_KEYS = [f"key:{i:012d}" for i in range(1000)]


def read_frame(f):
    """One RESP3 value from file `f`: (is_push, value)."""
    line = f.readline()
    if not line:
        raise EOFError
    t, rest = line[:1], line[1:-2]
    if t == b"$":
        n = int(rest)
        return False, None if n < 0 else f.read(n + 2)[:-2]
    if t in b"*>~%":
        n = int(rest)
        items = [read_frame(f)[1] for _ in range(2 * n if t == b"%" else max(n, 0))]
        return t == b">", items
    return False, rest


def run_tracker(port):
    """The client of the *_TRACKING rows: RESP3, CLIENT TRACKING on, every
    key of TRACKED_KEYS read, and each key read again once invalidated,
    until killed."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(resp("HELLO", "3") + resp("CLIENT", "TRACKING", "on") +
              resp("MGET", *TRACKED_KEYS))
    f = s.makefile("rb")
    replies = 0
    while True:
        push, value = read_frame(f)
        if not push:
            replies += 1
            if replies == 3:
                # MGET answered: the server has remembered its keys.
                print("ready", flush=True)
        if push and value and value[0] == b"invalidate" and value[1]:
            s.sendall(b"".join(resp("GET", k) for k in value[1]))


class Tracker:
    """run_tracker in a process of its own on the benchmark's core, ready
    once the server answered its MGET (and so tracks all its keys)."""

    def __init__(self, port):
        self.proc = subprocess.Popen(
            ["taskset", "-c", "1", sys.executable, os.path.abspath(__file__), "--tracker",
             str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready = select.select([self.proc.stdout], [], [], 10)[0]
        if not ready or self.proc.stdout.readline() != b"ready\n":
            self.stop()
            raise RuntimeError("the tracking client did not track its keys")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def test_args(test, kind, plain=False):
    """The arguments of `test` for a server of `kind`: for redis-benchmark,
    or ("loadgen", arguments) for examples/loadgen.rs (without its setup
    command when `plain`)."""
    args = TESTS[test]
    if isinstance(args, dict) and "loadgen" in args:
        setup = [] if plain or "setup" not in args else ["--setup", args["setup"]]
        return ("loadgen", setup, args["loadgen"])
    if isinstance(args, dict):
        return args["redis" if kind == "redis" else "ferrokv"]
    return args


def same_command(test):
    return not isinstance(TESTS[test], dict) or "loadgen" in TESTS[test]


def start(kind, binary, extra=(), cpus="0"):
    port = free_port()
    if kind in ("ferrokv", "baseline"):
        cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no"]
    cmd += list(extra)
    proc = subprocess.Popen(["taskset", "-c", cpus] + cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    if not wait_port(port):
        proc.kill()
        sys.exit(f"{kind} did not start: {' '.join(cmd)}")
    return proc, port


LOADGEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release",
                       "examples", "loadgen")


def run_bench(port, test_args, requests, clients, pipeline):
    if isinstance(test_args, tuple):
        cmd = ["taskset", "-c", "1", LOADGEN] + test_args[1] + [
            str(port), str(clients), str(pipeline), str(requests)] + test_args[2]
    else:
        cmd = ["taskset", "-c", "1", "redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
               "-n", str(requests), "-c", str(clients), "-P", str(pipeline), "--csv",
               "-q"] + test_args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    result = None
    for line in out.splitlines():
        parts = [p.strip('"') for p in line.split('","')]
        if len(parts) >= 7 and parts[0] != "test":
            # test, rps, avg, min, p50, p95, p99, max; the last line is the
            # test itself (earlier ones would be preparation steps).
            result = float(parts[1]), float(parts[6])
    if result is None:
        raise RuntimeError(f"no result from redis-benchmark: {out!r}")
    return result


def send_all(port, payload, replies):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    f = s.makefile("rb")
    for _ in range(replies):
        f.readline()
    s.close()


def resp(*args):
    """One command in RESP."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def fill_stream(port, key, n):
    """`key` as a fresh stream of `n` entries with IDs 0-1 ... (n-1)-1 and
    a group `g` that has read none of them."""
    send_all(port, resp("DEL", key), 1)
    for start in range(0, n, 10000):
        cmds = b"".join(resp("XADD", key, f"{i}-1", "field", "value")
                        for i in range(start, min(n, start + 10000)))
        send_all(port, cmds, 2 * (min(n, start + 10000) - start))
    send_all(port, resp("XGROUP", "CREATE", key, "g", "0"), 1)


def prepare(port, test, requests):
    """Data a test reads: redis-benchmark's LRANGE tests read `mylist`,
    which only its LPUSH test would fill; the data-type rows read a 1 MB
    bitmap, three dense HLLs and 100,000 points (the same on both servers:
    the generator is seeded); XREADGROUP_10 reads a stream long enough for
    every request to find 10 new entries; XACK acknowledges entries of a
    group that has all 1,000,000 of its stream's pending."""
    if test.endswith("_ACL"):
        send_all(port, resp("ACL", "SETUSER", "app", "on", ">apppw", "~app:*", "+@read",
                            "+@write"), 1)
    elif test.startswith("LRANGE"):
        n = 600
        items = b"".join(b"$3\r\nxxx\r\n" for _ in range(n))
        send_all(port, b"*1\r\n$8\r\nFLUSHALL\r\n" +
                 b"*%d\r\n$5\r\nRPUSH\r\n$6\r\nmylist\r\n" % (n + 2) + items, 2)
    elif test == "BITCOUNT_1MB":
        send_all(port, resp("SET", "bits1mb", random.Random(1).randbytes(1 << 20)), 1)
    elif test == "PFCOUNT_3":
        cmds = [resp("PFADD", f"hll{k}", *(f"e{k}:{i}" for i in range(5000))) for k in (1, 2, 3)]
        send_all(port, b"".join(cmds), 3)
    elif test == "GEOSEARCH":
        rng = random.Random(2)
        cmds = []
        for _ in range(100):
            args = []
            for _ in range(1000):
                args += [f"{rng.uniform(13, 16):.6f}", f"{rng.uniform(36, 39):.6f}",
                         f"p{rng.getrandbits(40)}"]
            cmds.append(resp("GEOADD", "points", *args))
        send_all(port, b"".join(cmds), len(cmds))
    elif test == "SET_GROW":
        send_all(port, resp("FLUSHALL"), 1)
    elif test == "XREADGROUP_10":
        fill_stream(port, "xg", requests * 10 + 1000)
    elif test == "XACK":
        n = 1000000
        fill_stream(port, "xa", n)
        deliver = ("for i = 1, tonumber(ARGV[1]) do redis.call('XREADGROUP', 'GROUP', 'g', "
                   "'c', 'COUNT', 1000, 'STREAMS', KEYS[1], '>') end return 1")
        send_all(port, resp("EVAL", deliver, 1, "xa", n // 1000), 1)


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferrokv", default=os.path.join(here, "..", "target", "release", "ferrokv"))
    ap.add_argument("--baseline", default=None,
                    help="another ferrokv binary to compare against in the same rounds")
    ap.add_argument("--ferrokv-args", default="",
                    help="extra arguments for ferrokv (say '--io-threads 2')")
    ap.add_argument("--baseline-args", default="", help="extra arguments for the baseline")
    ap.add_argument("--server-cpus", default="0",
                    help="taskset CPU list every server runs on (default 0)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--tests", default=",".join(t for t in TESTS if t != "SET_GROW"))
    ap.add_argument("--tracker", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tracker:
        run_tracker(args.tracker)
        return
    tests = [t.strip().upper() for t in args.tests.split(",") if t.strip()]
    pipelines = [int(p) for p in args.pipelines.split(",")]

    kinds = ("ferrokv", "redis") + (("baseline",) if args.baseline else ())
    binaries = {"ferrokv": args.ferrokv, "redis": None, "baseline": args.baseline}
    extra = {"ferrokv": args.ferrokv_args.split(), "redis": [],
             "baseline": args.baseline_args.split()}
    servers = {k: start(k, binaries[k], extra[k], args.server_cpus) for k in kinds}
    results = []
    try:
        for pipeline in pipelines:
            for test in tests:
                rps = {k: [] for k in kinds}
                p99 = {k: [] for k in kinds}
                cpu = {k: 0.0 for k in kinds}
                ratios = []
                base_ratios = []
                # Per server: the row's command run plain (the ACL rows' as
                # the default user, the tracking rows' with no tracking).
                plain_ratios = {k: [] for k in kinds}
                plain_cpu = {k: 0.0 for k in kinds}
                plain_rps = {k: [] for k in kinds}

                def run_plain():
                    """The ACL row's command as the default user; the
                    tracking row's with no tracking client, on each server
                    (ferrokv only for the ACL rows)."""
                    for kind in ("ferrokv", "redis") if test.endswith("_TRACKING") else ("ferrokv",):
                        proc, port = servers[kind]
                        plain = test_args(test, kind, plain=True)
                        if test.endswith("_ACL"):
                            plain = plain[len(ACL_LOGIN):]
                        before = cpu_seconds(proc.pid)
                        r, _ = run_bench(port, plain, args.requests, args.clients, pipeline)
                        plain_cpu[kind] += cpu_seconds(proc.pid) - before
                        plain_rps[kind].append(r)

                for round_no in range(args.rounds):
                    # ACL rows run the default user's pass first in odd
                    # rounds and last in even ones, so drift hits both.
                    acl_row = test.endswith(("_ACL", "_TRACKING"))
                    if acl_row and round_no % 2:
                        run_plain()
                    for kind in kinds:
                        if kind == "baseline" and acl_row:
                            # The baseline may predate ACL users.
                            continue
                        proc, port = servers[kind]
                        prepare(port, test, args.requests)
                        monitor = None
                        if test.endswith("_MONITOR"):
                            monitor = subprocess.Popen(
                                ["taskset", "-c", "1", "redis-cli", "-p", str(port), "monitor"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                            end = time.time() + 5
                            while "flags=O" not in subprocess.run(
                                    ["redis-cli", "-p", str(port), "CLIENT", "LIST"],
                                    capture_output=True, text=True).stdout and time.time() < end:
                                time.sleep(0.02)
                        tracker = Tracker(port) if test == "SET_TRACKING" else None
                        before = cpu_seconds(proc.pid)
                        r, lat = run_bench(port, test_args(test, kind),
                                           requests_of(test, args.requests), args.clients,
                                           pipeline)
                        cpu[kind] += cpu_seconds(proc.pid) - before
                        if monitor:
                            monitor.kill()
                            monitor.wait()
                        if tracker:
                            tracker.stop()
                        rps[kind].append(r)
                        p99[kind].append(lat)
                    ratios.append(rps["ferrokv"][-1] / rps["redis"][-1])
                    if acl_row and not round_no % 2:
                        run_plain()
                    if acl_row:
                        for kind, measured in plain_rps.items():
                            if measured:
                                plain_ratios[kind].append(rps[kind][-1] / measured[-1])
                    if args.baseline and rps["baseline"]:
                        base_ratios.append(rps["ferrokv"][-1] / rps["baseline"][-1])
                total = requests_of(test, args.requests) * args.rounds
                row = {
                    "test": test, "pipeline": pipeline,
                    "ferrokv": statistics.median(rps["ferrokv"]),
                    "redis": statistics.median(rps["redis"]),
                    "ratio": statistics.median(ratios),
                    "p99_f": statistics.median(p99["ferrokv"]),
                    "p99_r": statistics.median(p99["redis"]),
                    "cpu_f": cpu["ferrokv"] / total * 1e6,
                    "cpu_r": cpu["redis"] / total * 1e6,
                }
                line = (f"P{pipeline:<3} {test:<15} ferrokv {row['ferrokv']:>10.0f} rps  redis {row['redis']:>10.0f} rps  "
                        f"ratio {row['ratio']:.2f} [{min(ratios):.2f}-{max(ratios):.2f}]  "
                        f"p99 {row['p99_f']:.3f}/{row['p99_r']:.3f} ms  "
                        f"cpu/req {row['cpu_f']:.2f}/{row['cpu_r']:.2f} us")
                if base_ratios:
                    row["base"] = statistics.median(base_ratios)
                    row["cpu_b"] = cpu["baseline"] / total * 1e6
                    line += (f"  vs baseline: rps {row['base']:.2f} [{min(base_ratios):.2f}-{max(base_ratios):.2f}]"
                             f" cpu/req {row['cpu_f']:.2f}/{row['cpu_b']:.2f} us")
                what = "tracking/none" if test.endswith("_TRACKING") else "restricted/default user"
                for kind, rs in plain_ratios.items():
                    if rs:
                        line += (f"  {kind} {what}: rps {statistics.median(rs):.2f} "
                                 f"[{min(rs):.2f}-{max(rs):.2f}], cpu/req "
                                 f"{cpu[kind] / total * 1e6:.2f}/{plain_cpu[kind] / total * 1e6:.2f} us")
                if test == "SET_GROW":
                    grow = [f / r for f, r in zip(p99["ferrokv"], p99["redis"]) if r > 0]
                    if grow:
                        line += (f"  p99 ferrokv/redis {statistics.median(grow):.2f} "
                                 f"[{min(grow):.2f}-{max(grow):.2f}]")
                results.append(row)
                print(line, flush=True)
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.wait()

    print()
    for pipeline in pipelines:
        rows = [r for r in results if r["pipeline"] == pipeline and same_command(r["test"])]
        if not rows:
            continue
        cpu_ratio = geomean([r["cpu_f"] / r["cpu_r"] for r in rows if r["cpu_r"] > 0])
        print(f"P{pipeline}: rps ratio geomean {geomean([r['ratio'] for r in rows]):.2f}, "
              f"min {min(r['ratio'] for r in rows):.2f} ({min(rows, key=lambda r: r['ratio'])['test']}), "
              f"cpu/req ratio geomean {cpu_ratio:.2f}")
        if args.baseline:
            rows = [r for r in rows if "base" in r]
            base_cpu = geomean([r["cpu_f"] / r["cpu_b"] for r in rows if r["cpu_b"] > 0])
            print(f"P{pipeline} vs baseline: rps ratio geomean {geomean([r['base'] for r in rows]):.2f}, "
                  f"cpu/req ratio geomean {base_cpu:.2f}")
    if len(pipelines) > 1:
        print(f"all: cpu/req ratio geomean "
              f"{geomean([r['cpu_f'] / r['cpu_r'] for r in results if r['cpu_r'] > 0 and same_command(r['test'])]):.2f}")


if __name__ == "__main__":
    main()
