#!/usr/bin/env python3
"""The directives issue's targets, ferrokv next to redis-server.

  lrange  list-compress-depth 1, one list of 1,000,000 compressible 128-byte
          elements: LRANGE of the head 100 (0 99) and the tail 100 (-100 -1)
          with redis-benchmark, 50 clients, pipeline 16.
  hash    hash-max-listpack-entries 1024, HASHES hashes (--hashes) of 500
          small fields: HGET and HSET of field 250 of a random hash,
          50 clients, pipeline 16.
  del     lazyfree-lazy-user-del yes, a set of 10,000,000 members: how long
          DEL takes to answer, and the latency other clients see meanwhile
          (a client sending PING back to back: its p99 and max over the
          DEL's second).

Throughput figures are medians of --rounds interleaved rounds (ferrokv,
then redis-server, each round on freshly loaded servers), with the range.

Usage: scripts/directive-targets.py [--ferrokv PATH] [--targets lrange,hash,del]
       [--rounds 3] [--requests 200000] [--hashes 100000]
"""
import argparse
import importlib.util
import os
import re
import socket
import statistics
import subprocess
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("mem", os.path.join(here, "mem-vs-redis.py"))
mem = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mem)


def start(kind, binary, extra):
    port = mem.free_port()
    exe = binary if kind == "ferrokv" else "redis-server"
    cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"] + extra
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mem.wait_port(port)
    return proc, port


def stop(proc):
    proc.terminate()
    proc.wait()


def bench(port, requests, command, rand=None):
    args = ["redis-benchmark", "-p", str(port), "-c", "50", "-P", "16", "-n", str(requests), "-q"]
    if rand:
        args += ["-r", str(rand)]
    out = subprocess.run(args + command, capture_output=True, text=True).stdout
    # "LRANGE biglist 0 99: 123456.79 requests per second, p50=..."
    found = re.findall(r"([\d.]+) requests per second", out)
    if not found:
        raise SystemExit(f"no figure from redis-benchmark: {out!r}")
    return float(found[-1])


def hash_dataset(hashes, port):
    """HASHES copies of one 500-field hash: the hash is written once with
    HSET, then DUMPed and RESTOREd under every other name (a listpack
    payload, so neither server pays HSET's per-field search 50M times)."""
    fields = b"".join(mem.enc(b"f:%012d" % j, b"v%d" % j)[4:] for j in range(500))
    # enc() of one pair starts "*2\r\n"; the pairs' bulk strings are reused.
    mem.pipeline(port, [b"*%d\r\n$4\r\nHSET\r\n$15\r\nph:000000000000\r\n" % (2 + 1000) + fields])
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(mem.enc("DUMP", "ph:000000000000"))
    f = s.makefile("rb")
    size = int(f.readline()[1:])
    payload = f.read(size + 2)[:-2]
    s.close()
    for i in range(1, hashes):
        yield mem.enc("RESTORE", b"ph:%012d" % i, "0", payload)


TESTS = {
    "lrange": (["--list-compress-depth", "1"],
               lambda a, port: mem.dataset("list-compressed")[1],
               [("LRANGE_HEAD_100", ["LRANGE", "biglist", "0", "99"], None),
                ("LRANGE_TAIL_100", ["LRANGE", "biglist", "-100", "-1"], None)]),
    "hash": (["--hash-max-listpack-entries", "1024"],
             lambda a, port: hash_dataset(a.hashes, port),
             [("HGET", ["HGET", "ph:__rand_int__", "f:000000000250"], "hashes"),
              ("HSET", ["HSET", "ph:__rand_int__", "f:000000000250", "w"], "hashes")]),
}


def throughput(args, name):
    extra, data, tests = TESTS[name]
    results = {(k, t[0]): [] for k in ("ferrokv", "redis") for t in tests}
    for _ in range(args.rounds):
        for kind in ("ferrokv", "redis"):
            proc, port = start(kind, args.ferrokv, extra)
            try:
                mem.pipeline(port, data(args, port), batch=100)
                for test, command, rand in tests:
                    r = args.hashes if rand == "hashes" else None
                    results[(kind, test)].append(bench(port, args.requests, command, r))
            finally:
                stop(proc)
    for test, _, _ in tests:
        f, r = results[("ferrokv", test)], results[("redis", test)]
        fm, rm = statistics.median(f), statistics.median(r)
        print(f"{test:16} P16  ferrokv {fm:>10.0f} rps [{min(f):.0f}-{max(f):.0f}]  "
              f"redis {rm:>10.0f} rps [{min(r):.0f}-{max(r):.0f}]  ratio {fm / rm:.2f}")


def del_latency(args):
    """One DEL per started server (a fresh 10,000,000-member set each
    time), `--rounds` times, servers interleaved; a line per DEL, then the
    medians."""
    answered = {"ferrokv": [], "redis": []}
    p99s = {"ferrokv": [], "redis": []}
    for _ in range(args.rounds):
        for kind in ("ferrokv", "redis"):
            del_ms, p99 = del_once(args, kind)
            answered[kind].append(del_ms)
            p99s[kind].append(p99)
    for kind in ("ferrokv", "redis"):
        a, p = answered[kind], p99s[kind]
        print(f"DEL median  {kind:8} answered in {statistics.median(a):.3f} ms "
              f"[{min(a):.3f}-{max(a):.3f}]; PING p99 meanwhile {statistics.median(p):.3f} ms "
              f"[{min(p):.3f}-{max(p):.3f}]")


def del_once(args, kind):
    """One DEL of a fresh 10,000,000-member set on a new `kind` server,
    with a client PINGing meanwhile: (answer ms, PING p99 ms)."""
    proc, port = start(kind, args.ferrokv, ["--lazyfree-lazy-user-del", "yes"])
    try:
        n = 10_000_000
        mem.pipeline(port, (mem.enc("SADD", "bigset", *[b"m%d" % (i * 1000 + j) for j in range(1000)])
                            for i in range(n // 1000)), batch=20)
        samples = []
        done = threading.Event()

        def probe():
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while not done.is_set():
                t = time.perf_counter()
                s.sendall(b"PING\r\n")
                s.recv(64)
                samples.append((time.perf_counter() - t) * 1000)
            s.close()

        th = threading.Thread(target=probe)
        th.start()
        time.sleep(0.5)
        before = len(samples)
        c = socket.create_connection(("127.0.0.1", port))
        t = time.perf_counter()
        c.sendall(mem.enc("DEL", "bigset"))
        reply = c.recv(64)
        del_ms = (time.perf_counter() - t) * 1000
        time.sleep(1.0)
        done.set()
        th.join()
        during = sorted(samples[before:])
        p99 = during[int(len(during) * 0.99)] if during else float("nan")
        print(f"DEL of a 10,000,000-member set  {kind:8} answered {reply.strip().decode()} in "
              f"{del_ms:.3f} ms; PING meanwhile: p99 {p99:.3f} ms, max {during[-1]:.3f} ms "
              f"({len(during)} pings)", flush=True)
        return del_ms, p99
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferrokv", default=os.path.join(here, "..", "target", "release", "ferrokv"))
    ap.add_argument("--targets", default="lrange,hash,del")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--hashes", type=int, default=100_000)
    args = ap.parse_args()
    for t in args.targets.split(","):
        if t == "del":
            del_latency(args)
        else:
            throughput(args, t)


if __name__ == "__main__":
    main()
