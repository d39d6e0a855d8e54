#!/usr/bin/env python3
"""TLS side by side: ferrokv and redis-server 7.0 over TLS.

Both servers run with a plain port and a TLS port (certificates made here
with openssl, as Redis's utils/gen-test-certs.sh), each pinned to core 0;
the clients run on core 1. Rounds are interleaved (ferrokv, redis, ...).
Rows:
  SET/GET Pn   redis-benchmark --tls, 50 clients, pipeline n: requests/s
               and server CPU time per request
  HANDSHAKE    new TLS connections per second, each a full handshake, a
               PING and a close (redis-benchmark --tls -k 0, 50 clients)
  RESUMED      the same with session resumption (tls-session-caching on,
               the default): each connection offers the session of the
               one before it (Python's ssl, TLS 1.2 so that the session
               is known at once); the share of connections resumed is
               checked to be all of them
For each row: the median of each server, the median of the per-round
ratios, and server CPU per operation (user+system of all its threads).

Usage: scripts/bench-tls.py [--ferrokv PATH] [--rounds 3] [--requests 200000]
       [--connections 4000]
"""
import argparse
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import cpu_seconds, free_port, wait_port  # noqa: E402


def make_certs(d):
    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    run("genrsa", "-out", "ca.key", "2048")
    run("req", "-x509", "-new", "-nodes", "-sha256", "-key", "ca.key", "-days", "30",
        "-subj", "/O=bench/CN=ca", "-out", "ca.crt")
    for name in ("server", "client"):
        run("genrsa", "-out", f"{name}.key", "2048")
        run("req", "-new", "-sha256", "-subj", f"/O=bench/CN={name}", "-key", f"{name}.key",
            "-out", f"{name}.csr")
        run("x509", "-req", "-sha256", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "30", "-out", f"{name}.crt")


def start(binary, certs):
    port, tls_port = free_port(), free_port()
    cmd = [binary, "--port", str(port), "--tls-port", str(tls_port), "--bind", "127.0.0.1",
           "--save", "", "--appendonly", "no",
           "--tls-cert-file", f"{certs}/server.crt", "--tls-key-file", f"{certs}/server.key",
           "--tls-ca-cert-file", f"{certs}/ca.crt", "--tls-auth-clients", "no"]
    proc = subprocess.Popen(["taskset", "-c", "0"] + cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    if not wait_port(port) or not wait_port(tls_port):
        proc.kill()
        sys.exit(f"did not start: {' '.join(cmd)}")
    return proc, tls_port


def benchmark(port, certs, args):
    cmd = ["taskset", "-c", "1", "redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "--tls",
           "--cacert", f"{certs}/ca.crt", "--csv", "-q"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    for line in out.splitlines():
        parts = [p.strip('"') for p in line.split('","')]
        if len(parts) >= 2 and parts[0] != "test":
            return float(parts[1])
    raise RuntimeError(f"no result from redis-benchmark: {out!r}")


def resumed(port, certs, n):
    """Connections per second with session resumption; all must resume."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(f"{certs}/ca.crt")
    ctx.check_hostname = False
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    session, reused = None, 0
    t0 = time.perf_counter()
    for _ in range(n):
        raw = socket.create_connection(("127.0.0.1", port))
        # Without it the PING waits for a delayed ACK (40 ms a connection).
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s = ctx.wrap_socket(raw, server_hostname="localhost", session=session)
        s.sendall(b"PING\r\n")
        if s.recv(16) != b"+PONG\r\n":
            raise RuntimeError("no PONG")
        reused += s.session_reused
        session = s.session
        s.close()
    elapsed = time.perf_counter() - t0
    if reused < n - 1:
        raise RuntimeError(f"only {reused} of {n} connections resumed their session")
    return n / elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferrokv", default=os.path.join(HERE, "..", "target", "release", "ferrokv"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--connections", type=int, default=4000)
    a = ap.parse_args()
    certs = tempfile.mkdtemp(prefix="bench-tls-")
    make_certs(certs)
    rows = [
        ("SET P1", ["-t", "set", "-c", "50", "-P", "1", "-n", str(a.requests)], a.requests),
        ("GET P1", ["-t", "get", "-c", "50", "-P", "1", "-n", str(a.requests)], a.requests),
        ("SET P16", ["-t", "set", "-c", "50", "-P", "16", "-n", str(a.requests)], a.requests),
        ("GET P16", ["-t", "get", "-c", "50", "-P", "16", "-n", str(a.requests)], a.requests),
        ("HANDSHAKE", ["-t", "ping_inline", "-c", "50", "-k", "0", "-n", str(a.connections)],
         a.connections),
        ("RESUMED", None, a.connections),
    ]
    servers = {"ferrokv": a.ferrokv, "redis": "redis-server"}
    results = {name: {k: [] for k in servers} for name, _, _ in rows}
    cpu = {name: {k: [] for k in servers} for name, _, _ in rows}
    for r in range(a.rounds):
        for kind, binary in servers.items():
            proc, port = start(binary, certs)
            try:
                for name, args, ops in rows:
                    before = cpu_seconds(proc.pid)
                    if args is None:
                        rate = resumed(port, certs, ops)
                    else:
                        rate = benchmark(port, certs, args)
                    used = cpu_seconds(proc.pid) - before
                    results[name][kind].append(rate)
                    cpu[name][kind].append(used / ops * 1e6)
            finally:
                proc.kill()
                proc.wait()
        print(f"round {r + 1} done", file=sys.stderr)
    print(f"{'test':<10} {'ferrokv/s':>11} {'redis/s':>11} {'ratio':>7} {'spread':>13}"
          f" {'cpu us/op f':>12} {'cpu us/op r':>12}")
    for name, _, _ in rows:
        f, rd = results[name]["ferrokv"], results[name]["redis"]
        ratios = [x / y for x, y in zip(f, rd)]
        print(f"{name:<10} {statistics.median(f):>11.0f} {statistics.median(rd):>11.0f}"
              f" {statistics.median(ratios):>7.2f} {min(ratios):>6.2f}-{max(ratios):<6.2f}"
              f" {statistics.median(cpu[name]['ferrokv']):>12.2f}"
              f" {statistics.median(cpu[name]['redis']):>12.2f}")


if __name__ == "__main__":
    main()
