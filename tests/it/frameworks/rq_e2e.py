"""rq end to end: enqueue jobs, run a burst worker, check results.

Usage: rq_e2e.py PORT. Prints "RQ OK" and exits 0 on success.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from redis import Redis  # noqa: E402
from rq import Queue, Worker  # noqa: E402
from rq.job import JobStatus  # noqa: E402
from rq.registry import FailedJobRegistry, FinishedJobRegistry  # noqa: E402

import rq_jobs  # noqa: E402


def main():
    port = int(sys.argv[1])
    conn = Redis(host="127.0.0.1", port=port)
    conn.flushall()
    queue = Queue("e2e", connection=conn)
    ok = queue.enqueue(rq_jobs.add, 2, 3)
    bad = queue.enqueue(rq_jobs.fail, "boom")
    # Runs only once `ok` finished (a deferred job until then).
    after = queue.enqueue(rq_jobs.add, 10, 20, depends_on=ok, meta={"step": 2})
    assert queue.count == 2, queue.count
    assert after.get_status() == JobStatus.DEFERRED, after.get_status()
    assert ok.get_status() == JobStatus.QUEUED, ok.get_status()

    worker = Worker([queue], connection=conn, name="e2e-worker")
    worked = worker.work(burst=True)
    assert worked, "the burst worker did no work"

    ok.refresh()
    bad.refresh()
    assert ok.get_status() == JobStatus.FINISHED, ok.get_status()
    assert ok.return_value() == 5, ok.return_value()
    result = ok.latest_result()
    assert result is not None and result.return_value == 5, result
    assert ok.id in FinishedJobRegistry(queue=queue), "finished registry"

    assert bad.get_status() == JobStatus.FAILED, bad.get_status()
    assert bad.id in FailedJobRegistry(queue=queue), "failed registry"
    failure = bad.latest_result()
    assert failure is not None and "boom" in (failure.exc_string or ""), failure
    after.refresh()
    assert after.get_status() == JobStatus.FINISHED, after.get_status()
    assert after.return_value() == 30, after.return_value()
    assert after.meta == {"step": 2}, after.meta
    assert queue.fetch_job(after.id).id == after.id
    assert queue.count == 0, queue.count
    print("RQ OK")


if __name__ == "__main__":
    main()
