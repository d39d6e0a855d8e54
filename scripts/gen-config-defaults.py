#!/usr/bin/env python3
"""Regenerate src/config/defaults.tsv from redis-server 7.0 started without a
config file.

ferrokv reports every Redis 7.0 parameter through CONFIG GET; this capture is
where each name (aliases included) and its default value come from. The
server is started in a scratch directory on a free port, so `port` and `dir`
are rewritten to their documented defaults (6379, and "." meaning the working
directory at start-up). Usage: scripts/gen-config-defaults.py
"""
import os
import sys
import socket
import subprocess
import tempfile
import time

out = os.path.join(os.path.dirname(__file__), "..", "src", "config", "defaults.tsv")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port  # noqa: E402


def read_reply(f):
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t == b"$":
        n = int(rest)
        data = f.read(n + 2)[:-2]
        return data.decode()
    if t in (b"*", b"%"):
        n = int(rest) * (2 if t == b"%" else 1)
        return [read_reply(f) for _ in range(n)]
    raise SystemExit("unexpected reply %r" % line)


port = free_port()
with tempfile.TemporaryDirectory() as d:
    proc = subprocess.Popen(["redis-server", "--port", str(port)], cwd=d,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        f = sock.makefile("rb")
        sock.sendall(b"*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$1\r\n*\r\n")
        flat = read_reply(f)
    finally:
        proc.kill()
        proc.wait()

pairs = dict(zip(flat[0::2], flat[1::2]))
pairs["port"] = "6379"
pairs["dir"] = "."
with open(out, "w") as o:
    o.write("# name\tdefault (CONFIG GET * of redis-server 7.0.15 without a config file)\n")
    for name in sorted(pairs):
        o.write("%s\t%s\n" % (name, pairs[name]))
