#!/usr/bin/env python3
"""User-space instructions per request of two ferrokv builds, counted by
valgrind's callgrind: a measure of the work a change adds or removes that
machine noise does not move (timing-based runs on shared machines spread
by ±20%; these counts by about ±2%, the batches a read frames varying).

Each test of scripts/bench-vs-redis.py that redis-benchmark or loadgen
runs alone (no monitor, tracker or ACL user) runs against each build under
callgrind: the server starts, prepare() loads the test's data, the counters
are zeroed, the requests run, and the server's count at exit is divided by
the requests. System calls are not counted; the kernel's share of a
request is the same for both builds.

Usage: scripts/instr-vs-baseline.py --baseline PATH [--ferrokv PATH]
       [--tests SET,GET,...] [--pipelines 1,16] [--requests 50000]
"""
import argparse
import importlib.util
import math
import os
import signal
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("bench", os.path.join(HERE, "bench-vs-redis.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

# Tests that need a second client or a user set up around the benchmark.
SKIPPED = {"SET_MONITOR", "SET_TRACKING", "GET_TRACKING", "SET_GROW", "CL_THROTTLE"}


def count(binary, test, requests, pipeline, workdir):
    """Instructions the server at `binary` spends on `requests` of `test`."""
    out = os.path.join(workdir, "callgrind.out")
    if os.path.exists(out):
        os.unlink(out)
    port = bench.free_port()
    proc = subprocess.Popen(
        ["taskset", "-c", "0", "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
         binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not bench.wait_port(port, 120):
            raise RuntimeError(f"{binary} did not start under valgrind")
        bench.prepare(port, test, requests)
        subprocess.run(["callgrind_control", "--zero", str(proc.pid)], capture_output=True,
                       check=True)
        bench.run_bench(port, bench.test_args(test, "ferrokv"), requests, 50, pipeline)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    with open(out) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--ferrokv", default=os.path.join(HERE, "..", "target", "release", "ferrokv"))
    ap.add_argument("--tests", default=",".join(
        t for t in bench.TESTS if t not in SKIPPED and not t.endswith("_ACL")))
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--requests", type=int, default=50000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        for p in [int(x) for x in a.pipelines.split(",")]:
            ratios = []
            for t in a.tests.split(","):
                base = count(a.baseline, t, a.requests, p, workdir) / a.requests
                new = count(a.ferrokv, t, a.requests, p, workdir) / a.requests
                ratios.append(new / base)
                print(f"P{p:<3} {t:<15} baseline {base:9.0f}  ferrokv {new:9.0f} instructions/request"
                      f"  ratio {new / base:.3f}", flush=True)
            geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            print(f"P{p}: instructions per request, ferrokv/baseline geomean {geo:.3f}\n", flush=True)


if __name__ == "__main__":
    main()
