#!/usr/bin/env python3
"""SAVE time, BGSAVE time and load-on-start time of ferrokv and redis-server.

Each server runs in its own temp directory with `--save ""` on a free
loopback port and is filled with N keys `key:NNNNNNN` holding 16-byte
values (pipelined). Then, per round (servers interleaved so machine noise
hits both alike):
  - SAVE: the round trip of one SAVE command;
  - BGSAVE: from the BGSAVE reply until INFO shows rdb_bgsave_in_progress:0;
  - load: the server is stopped and started again on its dump file; the time
    from spawning the process until PING answers +PONG (Redis answers
    -LOADING meanwhile) and DBSIZE shows every key.
Medians are printed with the file sizes.

Usage: scripts/persist-vs-redis.py [--ferrokv PATH] [--keys 1000000] [--rounds 3]
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port  # noqa: E402


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        """One reply: simple/error/int lines as bytes, bulks as their body."""
        line = self.line()
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            body, self.buf = self.buf[:n], self.buf[n + 2:]
            return body
        return line

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()

    def close(self):
        self.s.close()


class Server:
    def __init__(self, name, argv, dirpath):
        self.name, self.argv, self.dir = name, argv, dirpath
        self.proc = None
        self.port = None

    def start(self):
        self.port = free_port()
        args = self.argv + ["--port", str(self.port), "--bind", "127.0.0.1",
                            "--dir", self.dir, "--save", "", "--appendonly", "no"]
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(args, cwd=self.dir, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        while True:
            try:
                c = Conn(self.port)
                break
            except OSError:
                if self.proc.poll() is not None:
                    sys.exit(f"{self.name} exited")
                time.sleep(0.002)
        while c.cmd("PING") != b"+PONG":
            time.sleep(0.002)
        ready = time.perf_counter() - t0
        self.conn = c
        return ready

    def stop(self):
        try:
            self.conn.cmd("SHUTDOWN", "NOSAVE")
        except (OSError, ConnectionError):
            pass
        self.proc.wait(timeout=60)


def fill(conn, n):
    batch = 10000
    for start in range(0, n, batch):
        out = bytearray()
        for i in range(start, min(n, start + batch)):
            k = b"key:%07d" % i
            v = b"v%015d" % i
            out += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$16\r\n%s\r\n" % (len(k), k, v)
        conn.s.sendall(out)
        for _ in range(start, min(n, start + batch)):
            r = conn.reply()
            assert r == b"+OK", r


def bgsave_time(conn):
    t0 = time.perf_counter()
    r = conn.cmd("BGSAVE")
    assert r.startswith(b"+Background saving"), r
    while True:
        info = conn.cmd("INFO", "persistence")
        if b"rdb_bgsave_in_progress:0" in info:
            return time.perf_counter() - t0
        time.sleep(0.005)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferrokv", default=os.path.join(here, "..", "target", "release", "ferrokv"))
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not os.path.exists(a.ferrokv):
        sys.exit(f"{a.ferrokv} not found: cargo build --release first")
    tmp = tempfile.mkdtemp(prefix="persist-vs-redis-")
    servers = []
    for name, argv in (("ferrokv", [a.ferrokv]), ("redis", ["redis-server"])):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        servers.append(Server(name, argv, d))
    res = {s.name: {"save": [], "bgsave": [], "load": []} for s in servers}
    try:
        for s in servers:
            s.start()
            t0 = time.perf_counter()
            fill(s.conn, a.keys)
            print(f"{s.name}: {a.keys} keys written in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr)
        for rnd in range(a.rounds):
            for s in servers:
                t0 = time.perf_counter()
                assert s.conn.cmd("SAVE") == b"+OK"
                res[s.name]["save"].append(time.perf_counter() - t0)
                res[s.name]["bgsave"].append(bgsave_time(s.conn))
                s.stop()
                ready = s.start()
                while int(s.conn.cmd("DBSIZE")[1:]) != a.keys:
                    time.sleep(0.002)
                res[s.name]["load"].append(ready)
            print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr)
        size = {s.name: os.path.getsize(os.path.join(s.dir, "dump.rdb")) for s in servers}
    finally:
        for s in servers:
            if s.proc and s.proc.poll() is None:
                s.proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{a.keys} keys (key:NNNNNNN, 16-byte values), median of {a.rounds} rounds")
    print(f"{'':10}{'ferrokv':>12}{'redis':>12}{'ratio':>8}")
    for what, label in (("save", "SAVE s"), ("bgsave", "BGSAVE s"), ("load", "load s")):
        f = statistics.median(res["ferrokv"][what])
        r = statistics.median(res["redis"][what])
        print(f"{label:10}{f:12.3f}{r:12.3f}{f / r:8.2f}")
    f, r = size["ferrokv"], size["redis"]
    print(f"{'file MB':10}{f / 1e6:12.1f}{r / 1e6:12.1f}{f / r:8.2f}")


if __name__ == "__main__":
    main()
