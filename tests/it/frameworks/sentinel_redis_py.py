"""redis-py with Sentinel discovery writing through a failover: the test
kills the master while this writes; the client must find the promoted
replica through Sentinel and go on writing.

Usage: sentinel_redis_py.py SENTINEL_PORT SECONDS. Prints a summary and
"SENTINEL PY OK", exit 0, when writes went on after the master changed.
"""

import sys
import time

from redis.exceptions import ConnectionError, ReadOnlyError, ResponseError, TimeoutError
from redis.sentinel import Sentinel


def main():
    port = int(sys.argv[1])
    seconds = float(sys.argv[2])
    sentinel = Sentinel([("127.0.0.1", port)], socket_timeout=0.5)
    first = sentinel.discover_master("mymaster")
    master = sentinel.master_for("mymaster", socket_timeout=0.5)
    n = errors = after = 0
    acked = []
    end = time.time() + seconds
    while time.time() < end:
        try:
            master.set(f"w:{n}", n)
            acked.append(n)
            if errors:
                after += 1
        except (ConnectionError, TimeoutError, ReadOnlyError, ResponseError):
            errors += 1
            time.sleep(0.05)
        n += 1
        time.sleep(0.005)
    now = sentinel.discover_master("mymaster")
    print(f"acked={len(acked)} errors={errors} after={after} first={first} now={now}")
    assert now != first, "the master did not change"
    assert after > 0, "no write succeeded after the failover"
    # Writes acknowledged by the new master are there.
    last = acked[-after:]
    values = master.mget([f"w:{i}" for i in last])
    assert values == [str(i).encode() for i in last], "writes after the failover are missing"
    print("SENTINEL PY OK")


if __name__ == "__main__":
    main()
