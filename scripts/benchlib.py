"""Helpers the side-by-side benchmark scripts share: free loopback ports,
waiting for a server's port, a process's CPU time."""
import os
import socket
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, deadline=10.0):
    end = time.time() + deadline
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def cpu_seconds(pid):
    """CPU time (user + system) of every thread of `pid`, from
    /proc/<pid>/task/*/schedstat: nanoseconds, where utime+stime in
    /proc/<pid>/stat count 10 ms ticks, too coarse for a 100 ms run."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total / 1e9
