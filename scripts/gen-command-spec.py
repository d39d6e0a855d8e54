#!/usr/bin/env python3
"""Regenerate src/server/spec/{info,docs}.resp3 from a running redis-server 7.0.

ferrokv's command table takes every fact it reports (arity, flags, key specs,
ACL categories, docs) from these captures, so COMMAND answers byte for byte as
the reference does. Usage: scripts/gen-command-spec.py [port]
"""
import os
import socket
import sys

port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
out_dir = os.path.join(os.path.dirname(__file__), "..", "src", "cmd", "spec")


def read_reply(f):
    """Read one RESP3 reply from a file object and return its raw bytes."""
    line = f.readline()
    raw = line
    t, rest = line[:1], line[1:-2]
    if t in b"+-:,#_(":
        return raw
    if t in b"$=!":
        n = int(rest)
        if n >= 0:
            raw += f.read(n + 2)
        return raw
    if t in b"*~>%|":
        n = int(rest)
        if t in b"%|":
            n *= 2
        for _ in range(max(n, 0)):
            raw += read_reply(f)
        return raw
    raise SystemExit("unexpected reply type %r" % t)


def command(f, sock, *args):
    req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    sock.sendall(req)
    return read_reply(f)


sock = socket.create_connection(("127.0.0.1", port))
f = sock.makefile("rb")
command(f, sock, b"HELLO", b"3")
with open(os.path.join(out_dir, "info.resp3"), "wb") as o:
    o.write(command(f, sock, b"COMMAND"))
with open(os.path.join(out_dir, "docs.resp3"), "wb") as o:
    o.write(command(f, sock, b"COMMAND", b"DOCS"))
