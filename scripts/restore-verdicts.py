#!/usr/bin/env python3
"""RESTOREs every payload of the given folders (the fuzz target restore's
seeds, regressions or corpus) on ferrokv and on redis-server 7.0, both with
`sanitize-dump-payload yes`, and compares the verdicts: accepted, or
refused (with which error). Each payload gets a valid footer first (RDB
version 10 and its CRC64), as a client crafting one would give it, so the
check reaches the decoders.

    scripts/restore-verdicts.py target/release/ferrokv fuzz/seeds/restore fuzz/corpus/restore

Prints the counts and each disagreement; exits 1 when any.
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

seeds = import_module("fuzz-seeds")

# CRC-64/Jones, reflected, as Redis's crc64.c.
POLY = 0x95AC9329AC4BC9B5
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TABLE.append(c)


def crc64(data):
    c = 0
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c


def with_footer(p):
    """The payload's body with a version-10 footer and its checksum."""
    body = p[:-10] if len(p) >= 10 else p
    out = body + (10).to_bytes(2, "little")
    return out + crc64(out).to_bytes(8, "little")


def start(cmd, port, d):
    proc = subprocess.Popen(cmd + ["--port", str(port), "--dir", d, "--save", "",
                                   "--sanitize-dump-payload", "yes"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while True:
        try:
            c = seeds.Conn(port)
            c("PING")
            return proc, c
        except (OSError, EOFError, RuntimeError):
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def verdict(c, port, payload):
    try:
        c("RESTORE", "k", "0", payload, "REPLACE")
        return "ok", c
    except RuntimeError as e:
        return str(e), c
    except (OSError, EOFError):
        return "connection lost", seeds.Conn(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ferrokv")
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--show", type=int, default=20, help="disagreements to print")
    args = ap.parse_args()
    files = []
    for d in args.folders:
        if os.path.isdir(d):
            files += [os.path.join(d, f) for f in sorted(os.listdir(d))]
    dirs = [tempfile.mkdtemp(prefix="verdicts-") for _ in range(2)]
    ports = [seeds.free_port(), seeds.free_port()]
    fp, fc = start([args.ferrokv], ports[0], dirs[0])
    rp, rc = start(["redis-server"], ports[1], dirs[1])
    same = differ = 0
    accepted = 0
    # Disagreements by the payload's RDB type byte: (ferrokv only, redis only).
    by_type = {}
    shown = 0
    try:
        for f in files:
            try:
                with open(f, "rb") as fh:
                    p = with_footer(fh.read())
            except FileNotFoundError:
                # A fuzzer running on the folder dropped it meanwhile.
                continue
            fv, fc = verdict(fc, ports[0], p)
            rv, rc = verdict(rc, ports[1], p)
            if rp.poll() is not None:
                # redis-server crashed on it (sanitize-dump-payload yes
                # misses some corruptions): restart, count as refused.
                rp, rc = start(["redis-server"], ports[1], dirs[1])
                rv = "redis-server crashed"
            if fp.poll() is not None:
                print("ferrokv died on", f)
                return 1
            if (fv == "ok") == (rv == "ok"):
                same += 1
                accepted += fv == "ok"
            else:
                differ += 1
                k = by_type.setdefault(p[0], [0, 0])
                k[0 if fv == "ok" else 1] += 1
                if shown < args.show:
                    shown += 1
                    print("%s\n  ferrokv: %s\n  redis:   %s" % (f, fv[:120], rv[:120]))
    finally:
        fp.terminate()
        rp.terminate()
        fp.wait()
        rp.wait()
    for t, (fo, ro) in sorted(by_type.items()):
        print("  type %3d: accepted by ferrokv only %d, by redis-server only %d" % (t, fo, ro))
    print("payloads: %d, same verdict: %d (%d accepted by both), different: %d"
          % (len(files), same, accepted, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
