"""Helpers the side-by-side scripts share (evict-vs-redis.py,
repl-vs-redis.py): free loopback ports, redis-cli calls, and starting and
stopping a server (ferrokv or redis-server) pinned to a core."""
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip()


def start(binary, core, workdir, extra, nice=0, port=None):
    """`binary` on `port` (a free one by default), pinned to `core`, with no
    persistence and `extra` directives; (process, port) once it answers
    PING."""
    port = port or free_port()
    cmd = ["nice", "-n", str(nice), "taskset", "-c", str(core), binary, "--port", str(port),
           "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir, *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        if cli(port, "PING") == "PONG":
            return proc, port
        time.sleep(0.05)
    proc.kill()
    sys.exit(f"{binary} did not start")


def stop(proc):
    proc.kill()
    proc.wait()


def spread(values):
    """Median and range of per-round figures: "1.23 [1.01-1.45]"."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"

