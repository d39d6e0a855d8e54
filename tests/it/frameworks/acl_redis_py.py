"""redis-py with ACL users: an admin creates users through redis-py's ACL
helpers, then clients connect with a username as applications do.

Usage: acl_redis_py.py PORT. Prints "ACL PY OK" and exits 0 on success.
"""

import sys

from redis import Redis
from redis.exceptions import AuthenticationError, NoPermissionError


def main():
    port = int(sys.argv[1])
    admin = Redis(host="127.0.0.1", port=port, decode_responses=True)
    admin.flushall()
    admin.acl_log_reset()
    assert admin.acl_whoami() == "default"
    assert admin.acl_setuser(
        "worker",
        enabled=True,
        passwords=["+s3cret"],
        keys=["queue:*"],
        channels=["jobs:*"],
        commands=["+@list", "+@connection", "+publish", "+acl|whoami"],
    )
    info = admin.acl_getuser("worker")
    assert "on" in info["flags"], info
    assert info["keys"] == ["~queue:*"], info
    assert info["channels"] == ["&jobs:*"], info
    assert len(info["passwords"]) == 1 and len(info["passwords"][0]) == 64, info
    assert "worker" in admin.acl_users()
    assert any(line.startswith("user worker on #") for line in admin.acl_list())
    assert admin.acl_dryrun("worker", "lpush", "queue:a", "x") == "OK"
    assert "no permissions" in admin.acl_dryrun("worker", "get", "queue:a")
    assert "read" in admin.acl_cat()

    worker = Redis(
        host="127.0.0.1", port=port, username="worker", password="s3cret", decode_responses=True
    )
    assert worker.acl_whoami() == "worker"
    assert worker.lpush("queue:emails", "job1") == 1
    assert worker.rpop("queue:emails") == "job1"
    assert worker.publish("jobs:done", "1") == 0
    for forbidden in (
        lambda: worker.lpush("other", "x"),
        lambda: worker.set("queue:x", "v"),
        lambda: worker.flushall(),
        lambda: worker.publish("news", "x"),
    ):
        try:
            forbidden()
        except NoPermissionError:
            pass
        else:
            raise AssertionError("a forbidden command ran")

    try:
        Redis(host="127.0.0.1", port=port, username="worker", password="wrong").ping()
    except AuthenticationError:
        pass
    else:
        raise AssertionError("a wrong password authenticated")

    log = admin.acl_log()
    reasons = {entry["reason"] for entry in log}
    assert {"command", "key", "channel", "auth"} <= reasons, log
    assert all(entry["username"] == "worker" for entry in log), log
    assert admin.acl_log_reset()
    assert admin.acl_log() == []
    assert admin.acl_deluser("worker") == 1
    print("ACL PY OK")


if __name__ == "__main__":
    main()
