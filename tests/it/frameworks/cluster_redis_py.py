"""redis-py's RedisCluster against a cluster: discovery from one node,
writes and reads of keys across every slot through redirections, a
pipeline, hash-tagged multi-key commands, and sharded pub/sub.

Usage: cluster_redis_py.py PORT. Prints "CLUSTER PY OK" and exits 0 when
every value read back is the one written.
"""

import sys
import time

from redis.cluster import RedisCluster


def main():
    port = int(sys.argv[1])
    rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
    nodes = rc.get_nodes()
    assert len(nodes) >= 3, nodes
    for i in range(1000):
        rc.set(f"py:{i}", i)
    bad = [i for i in range(1000) if rc.get(f"py:{i}") != str(i)]
    assert not bad, bad[:10]
    pipe = rc.pipeline()
    for i in range(200):
        pipe.incr(f"ctr:{i % 50}")
    pipe.execute()
    assert sum(int(rc.get(f"ctr:{i}")) for i in range(50)) == 200
    rc.mset({"{user:1}:name": "a", "{user:1}:mail": "b"})
    assert rc.mget("{user:1}:name", "{user:1}:mail") == ["a", "b"]
    assert rc.keyslot("{user:1}:name") == rc.keyslot("user:1")
    # Sharded pub/sub: the subscriber is on the node of the channel's slot.
    ps = rc.pubsub()
    ps.ssubscribe("news")
    deadline = time.time() + 5
    msg = None
    while msg is None and time.time() < deadline:
        msg = ps.get_sharded_message(timeout=0.1)
    assert msg and msg["type"] == "ssubscribe", msg
    assert rc.spublish("news", "hello") == 1
    msg = None
    deadline = time.time() + 5
    while msg is None and time.time() < deadline:
        msg = ps.get_sharded_message(timeout=0.1)
    assert msg and msg["data"] == "hello", msg
    print("CLUSTER PY OK")


if __name__ == "__main__":
    main()
