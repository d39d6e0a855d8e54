"""redis-py's client-side cache (RESP3 with cache_config): reads are served
from the local cache until the server's invalidation drops them, as
applications use it to save round trips.

redis-py enables its cache only for servers announcing 7.4 or later (it
refuses Redis 7.0 alike, though 7.0 has everything the cache uses: HELLO 3,
CLIENT TRACKING and invalidation pushes); the script lowers that bar to
the 7.0 that ferrokv announces.

Usage: tracking_redis_py.py PORT. Prints "TRACKING PY OK" and exits 0.
"""

import sys
import time

from redis import Redis
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection

CacheProxyConnection.MIN_ALLOWED_VERSION = "7.0.0"


def get_calls(admin):
    stats = admin.info("commandstats")
    return stats.get("cmdstat_get", {}).get("calls", 0)


def wait_for(cond, what, deadline=10.0):
    end = time.monotonic() + deadline
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


def main():
    port = int(sys.argv[1])
    admin = Redis(host="127.0.0.1", port=port, decode_responses=True)
    admin.flushall()
    cached = Redis(
        host="127.0.0.1",
        port=port,
        protocol=3,
        cache_config=CacheConfig(),
        decode_responses=True,
    )
    admin.set("user:1", "ada")
    assert cached.get("user:1") == "ada"
    calls = get_calls(admin)
    # Served from the cache: the server sees no GET.
    for _ in range(5):
        assert cached.get("user:1") == "ada"
    assert get_calls(admin) == calls, (get_calls(admin), calls)
    clients = admin.info("clients")
    assert clients["tracking_clients"] == 1, clients
    assert admin.info("stats")["tracking_total_keys"] >= 1

    # Another client changes the key: the invalidation drops the cached
    # value, and the next read sees the new one.
    admin.set("user:1", "grace")
    wait_for(lambda: cached.get("user:1") == "grace", "the invalidation")

    # Writes through the caching client itself invalidate as well.
    assert cached.get("user:2") is None
    cached.set("user:2", "linus")
    wait_for(lambda: cached.get("user:2") == "linus", "its own write")

    # A flush empties the whole cache.
    assert cached.get("user:1") == "grace"
    admin.flushall()
    wait_for(lambda: cached.get("user:1") is None, "the flush")

    # Expiry and deletion reach the cache too.
    admin.set("session", "s1", px=50)
    assert cached.get("session") == "s1"
    wait_for(lambda: cached.get("session") is None, "the expiry")
    admin.set("gone", "x")
    assert cached.get("gone") == "x"
    admin.delete("gone")
    wait_for(lambda: cached.get("gone") is None, "the deletion")
    print("TRACKING PY OK")


if __name__ == "__main__":
    main()
