#!/usr/bin/env python3
"""Memory per item of ferrokv next to redis-server.

Each dataset is loaded into a freshly started server; the figure is the RSS
growth (VmRSS from /proc) divided by the item count. Datasets:
  strings  1,000,000 x SET key:NNNNNNN <16-byte value>
  list     one list of 1,000,000 16-byte elements
  ttl      200,000 x SET key:NNNNNNN <16-byte value> EX 10000
  hash     100,000 hashes of 10 fields (f0..f9 -> 16-byte values): per field
  set      100,000 sets of 10 16-byte members: per member
  intset   100,000 sets of 10 integers: per member
  zset     100,000 sorted sets of 10 16-byte members with scores: per member
  list-compressed  one list of 1,000,000 compressible 128-byte elements,
           both servers with list-compress-depth 1
  hash-packed  HASHES hashes (--hashes, default 100,000) of 500 small fields,
           both servers with hash-max-listpack-entries 1024: per field

Usage: scripts/mem-vs-redis.py [--ferrokv PATH] [--datasets strings,list,ttl,hash,set,intset,zset]
"""
import argparse
import os
import socket
import subprocess
import sys
import time

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port):
    end = time.time() + 10
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"server on {port} did not start")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def pipeline(port, commands, batch=1000):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    pending = 0
    buf = []
    for c in commands:
        buf.append(c)
        if len(buf) == batch:
            s.sendall(b"".join(buf))
            pending += len(buf)
            buf = []
            while pending > 0:
                f.readline()
                pending -= 1
    if buf:
        s.sendall(b"".join(buf))
        for _ in buf:
            f.readline()
    s.close()


VALUE = b"v" * 16


# Extra directives both servers get for a dataset.
SERVER_ARGS = {
    "list-compressed": ["--list-compress-depth", "1"],
    "hash-packed": ["--hash-max-listpack-entries", "1024"],
}
HASHES = 100_000


def dataset(name):
    if name == "list-compressed":
        per = 100
        return 1_000_000, (enc("RPUSH", "biglist", *[(b"item:%010d:" % (i * per + j)).ljust(128, b"a")
                                                    for j in range(per)])
                           for i in range(1_000_000 // per))
    if name == "hash-packed":
        return HASHES * 500, (enc("HSET", b"ph:%07d" % i, *[x for j in range(500)
                                                          for x in (b"f%d" % j, b"v%d" % (i + j))])
                              for i in range(HASHES))
    if name == "strings":
        return 1_000_000, (enc("SET", b"key:%07d" % i, VALUE) for i in range(1_000_000))
    if name == "list":
        per = 100
        return 1_000_000, (enc("RPUSH", "biglist", *[b"%016d" % (i * per + j) for j in range(per)])
                           for i in range(1_000_000 // per))
    if name == "ttl":
        return 200_000, (enc("SET", b"key:%07d" % i, VALUE, "EX", "10000") for i in range(200_000))
    small = 100_000  # collections of 10 elements each
    if name == "hash":
        return small * 10, (enc("HSET", b"hash:%07d" % i, *[x for j in range(10)
                                                        for x in (b"f%d" % j, b"%016d" % (i * 10 + j))])
                            for i in range(small))
    if name == "set":
        return small * 10, (enc("SADD", b"set:%07d" % i, *[b"m%015d" % (i * 10 + j) for j in range(10)])
                            for i in range(small))
    if name == "intset":
        return small * 10, (enc("SADD", b"iset:%07d" % i, *[i * 10 + j for j in range(10)])
                            for i in range(small))
    if name == "zset":
        return small * 10, (enc("ZADD", b"zset:%07d" % i, *[x for j in range(10)
                                                        for x in (j, b"m%015d" % (i * 10 + j))])
                            for i in range(small))
    raise SystemExit(f"unknown dataset {name}")


def measure(kind, binary, name):
    port = free_port()
    if kind == "ferrokv":
        cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    cmd += SERVER_ARGS.get(name, [])
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        time.sleep(0.2)
        before = rss_kib(proc.pid)
        count, cmds = dataset(name)
        pipeline(port, cmds, batch=100)
        # Let freed request buffers go back to the OS before reading RSS.
        time.sleep(2.0)
        after = rss_kib(proc.pid)
        return (after - before) * 1024 / count
    finally:
        proc.kill()
        proc.wait()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferrokv", default=os.path.join(here, "..", "target", "release", "ferrokv"))
    ap.add_argument("--datasets", default="strings,list,ttl,hash,set,intset,zset")
    ap.add_argument("--hashes", type=int, default=HASHES)
    args = ap.parse_args()
    globals()["HASHES"] = args.hashes
    print(f"{'dataset':<10} {'ferrokv B/item':>15} {'redis B/item':>13} {'ratio':>6}")
    for name in args.datasets.split(","):
        ours = measure("ferrokv", args.ferrokv, name)
        theirs = measure("redis", args.ferrokv, name)
        print(f"{name:<10} {ours:>15.1f} {theirs:>13.1f} {ours / theirs:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
