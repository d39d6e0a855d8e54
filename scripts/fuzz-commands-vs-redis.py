#!/usr/bin/env python3
"""Random commands for every command redis-server documents, sent to
ferrokv and to redis-server side by side, replies compared.

The commands come from redis-server's COMMAND DOCS: each argument is
filled in by its type (keys from a small keyspace holding every type,
integers, doubles, patterns, tokens, blocks and choices), optional ones
left out at random, repeated ones repeated, and now and then an argument
dropped or added. Replies of commands tipped `nondeterministic_output_order`
are compared sorted; commands that block, kill connections, change the
server's role, depend on the clock, on random choice or on hash table
layout (SCAN cursors) are left out.

A difference prints the command, both replies and the commands before it
since the keyspace was last reset (every 60 commands and after each
difference). TTLs are long or already past, so no key expires between
the two servers' copies of a command; re-run a difference before chasing
it all the same.

usage: fuzz-commands-vs-redis.py [--ferrokv BIN] [--seed N] [--count N]
                                 [--resp3] [--script] [--effects [--notify FLAGS] [--track]]
                                 [--only cmd,...] [--config NAME VALUE]...
  --script   wraps each command in EVAL "return redis.call/pcall(...)" 0,
             half the time after redis.setresp(3)
  --config   a directive both servers start with (repeatable)
  --effects  also compares each command's side effects: the keyspace
             notifications a PSUBSCRIBE __key*__:* client receives
             (notify-keyspace-events FLAGS, KEA by default), in order with
             the invalidations of CLIENT TRACKING ON BCAST, the
             commands a replica receives on its replication stream, and
             how much INFO's rdb_changes_since_last_save, keyspace_hits
             and keyspace_misses grew
  --track    with --effects, the fuzzed client also tracks the keys it
             reads (CLIENT TRACKING ON REDIRECT), and the invalidations
             redirected for it are compared too
  --expired  active expiry off on both servers (DEBUG SET-ACTIVE-EXPIRE 0),
             and at each keyspace reset some keys are left expired but not
             yet reclaimed, so commands meet them: with --effects, what
             their lazy expiry propagates and notifies is compared
"""
import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sidebyside import start, stop  # noqa: E402

import socket  # noqa: E402

# Left out: blocking, connection-killing, role-changing, clock- or
# random-dependent, or replying with server-specific figures.
SKIP = set("""shutdown debug monitor subscribe psubscribe ssubscribe unsubscribe punsubscribe
sunsubscribe sync psync replicaof slaveof failover cluster migrate wait quit save bgsave
bgrewriteaof lastsave time info memory slowlog latency command spop randomkey srandmember
hrandfield zrandmember pfselftest reset hello auth client|pause client|kill client|list
client|info client|reply client|unpause client|no-evict client|tracking client|caching
client|getredir client|trackinginfo client|setname xinfo xpending acl|log acl|setuser
acl|deluser acl|genpass acl|load acl|save config|rewrite config|set object|idletime
object|freq readonly readwrite function|dump script|kill function|kill
function|stats function|restore module lolwut asking function|list blpop brpop blmove
brpoplpush bzpopmin bzpopmax blmpop bzmpop scan sscan hscan zscan""".split())

KEYS = ["s", "l", "h", "S", "z", "x", "n", "b"]
INTS = ["0", "1", "2", "-1", "3", "5", "10", "100", "-100", "abc", "9223372036854775807",
        "-9223372036854775808", "1.5", "18446744073709551616", "007"]
DOUBLES = ["0", "1.5", "-1", "inf", "-inf", "+inf", "nan", "abc", "1e10", "2", "-0",
           "3.0000000000000001", ".5"]
STRINGS = ["a", "b", "hello", "1", "", "x", "-", "+", "0-1", "1-0", "$", ">", "10", "-1", "g",
           "c", "foo"]
PATTERNS = ["*", "s*", "?", "[a-z]", "h", "x*"]
SETUP = [["flushall"], ["set", "s", "10"], ["rpush", "l", "a", "b", "1"],
         ["hset", "h", "a", "1", "b", "x"], ["sadd", "S", "3", "1", "2"],
         ["zadd", "z", "1", "a", "2", "b"], ["xadd", "x", "1-1", "a", "1"], ["xgroup", "create", "x", "g", "0"],
         ["setbit", "b", "3", "1"]]


def encode(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    """A connection reading whole RESP2/RESP3 replies as nested tuples."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(10)
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bytes(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read(self):
        line = self._line()
        kind = line[:1]
        if kind in b"$=!":
            n = int(line[1:])
            return line if n < 0 else kind + self._bytes(n + 2)[:-2]
        if kind in b"*~>%|":
            n = int(line[1:])
            if n < 0:
                return line
            per = 2 if kind in b"%|" else 1
            return (kind, [self.read() for _ in range(n * per)])
        return line

    def call(self, args):
        try:
            self.sock.sendall(encode(args))
            return self.read()
        except (EOFError, OSError):
            return "EOF"


class Effects:
    """A server's side effects: a subscriber to every keyspace notification
    that also tracks every key, and a raw replica's replication stream. After each command the fuzzer
    PUBLISHes a marker on `fuzz-sync`; both channels are read up to it
    (PUBLISH is propagated to replicas too), so each command's effects
    are compared on their own."""

    def __init__(self, port, track=False):
        # RESP3, so the same connection also tracks every key (BCAST): its
        # invalidations come in order with the notifications.
        self.sub = Conn(port)
        # With `track`, the fuzzed client tracks the keys it reads (default
        # mode) and its invalidations are redirected here (RESP2).
        self.redirect = None
        if track:
            self.redirect = Conn(port)
            self.redirect_id = self.redirect.call(["client", "id"]).decode()[1:].strip()
            self.redirect.call(["subscribe", "__redis__:invalidate"])
            self.redirect.call(["subscribe", "fuzz-sync"])
        self.sub.call(["hello", "3"])
        self.sub.call(["client", "tracking", "on", "bcast"])
        self.sub.call(["psubscribe", "__key*__:*"])
        self.sub.call(["subscribe", "fuzz-sync"])
        self.repl = Conn(port)
        self.repl.sock.settimeout(30)
        self.repl.call(["replconf", "listening-port", "1"])
        self.repl.call(["replconf", "capa", "psync2"])
        self.repl.sock.sendall(encode(["psync", "?", "-1"]))
        self.repl.read()  # +FULLRESYNC <replid> <offset>
        line = self.repl._line()
        while not line.startswith(b"$"):  # newlines keep the link alive while the RDB is made
            line = self.repl._line()
        self.repl._bytes(int(line[1:]))  # the RDB, with no trailing CRLF

    def upto(self, marker):
        """(notifications, propagated commands) up to the marker."""
        notes, cmds = [], []
        while True:
            msg = plain(self.sub.read())
            if msg[0] == "message" and msg[1] == "fuzz-sync":
                if msg[2] == marker:
                    break
                continue
            notes.append(" ".join(map(str, msg[2:] if msg[0] == "pmessage" else msg)))
        while self.redirect:
            msg = plain(self.redirect.read())
            if msg[1] == "fuzz-sync":
                if msg[2] == marker:
                    break
                continue
            notes.append(f"redirected {msg[2]}")
        while True:
            cmd = [x.lower() if i == 0 else x for i, x in enumerate(plain(self.repl.read()))]
            if cmd == ["publish", "fuzz-sync", marker]:
                break
            if cmd[0] != "ping" and cmd[:2] != ["publish", "fuzz-sync"]:
                cmds.append(" ".join(cmd))
        self.repl.sock.sendall(encode(["replconf", "ack", "0"]))
        return notes, cmds


COUNTERS = ("rdb_changes_since_last_save", "keyspace_hits", "keyspace_misses")


def counters(conn):
    """The changes counted towards the next save (Redis's server.dirty)
    and the keyspace hits and misses."""
    info = conn.call(["info", "persistence", "stats"])
    text = info.decode(errors="replace") if isinstance(info, bytes) else ""
    fields = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    return tuple(int(fields.get(name, -1)) for name in COUNTERS)


def same_effects(a, b):
    """Effects equal but for absolute times (PEXPIREAT, SET PXAT), which
    each server takes from its own clock: those may differ by a second."""
    if a == b:
        return True
    if a is None or b is None or a[0] != b[0] or a[2:] != b[2:] or len(a[1]) != len(b[1]):
        return False
    for x, y in zip(a[1], b[1]):
        xs, ys = x.split(" "), y.split(" ")
        if len(xs) != len(ys):
            return False
        for u, v in zip(xs, ys):
            if u != v and not (len(u) >= 12 and u.isdigit() and v.isdigit()
                               and abs(int(u) - int(v)) <= 1000):
                return False
    return True


def as_map(flat):
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def plain(v):
    """A COMMAND DOCS reply as Python lists, dicts and strings."""
    if isinstance(v, tuple):
        return [plain(x) for x in v[1]]
    if isinstance(v, bytes):
        return v[1:].decode() if v[:1] in (b"+", b"$") else v.decode()
    return v


def command_table(conn):
    """Every command and subcommand with its documented arguments."""
    table = {}
    for name, doc in as_map(plain(conn.call(["command", "docs"]))).items():
        doc = as_map(doc)
        if name in SKIP:
            continue
        subs = doc.get("subcommands")
        if subs:
            for sub, sdoc in as_map(subs).items():
                if sub not in SKIP and not sub.endswith("|help"):
                    table[sub] = as_map(sdoc)
        else:
            table[name] = doc
    return table


def fill(rnd, arg, out):
    arg = as_map(arg)
    flags = arg.get("flags", [])
    if "optional" in flags and rnd.random() < 0.5:
        return
    times = rnd.choice([1, 1, 2, 3]) if "multiple" in flags else 1
    for i in range(times):
        if arg.get("token") and (i == 0 or "multiple_token" in flags):
            out.append(arg["token"])
        value(rnd, arg, out)


def value(rnd, arg, out):
    kind = arg["type"]
    if kind == "pure-token":
        return
    if kind == "oneof":
        choice = as_map(rnd.choice(arg["arguments"]))
        choice.pop("flags", None)
        fill(rnd, [x for kv in choice.items() for x in kv], out)
    elif kind == "block":
        for sub in arg["arguments"]:
            fill(rnd, sub, out)
    elif arg["name"] == "group" and rnd.random() < 0.7:
        out.append("g")  # the group SETUP made, so consumers and their entries are fuzzed
    elif arg["name"] in ("seconds", "milliseconds", "ttl", "timeout"):
        # No TTL short enough to run out between the two servers' copies.
        out.append(rnd.choice(["100000", "0", "-1", "abc", "9223372036854775807"]))
    else:
        pool = {
            "key": KEYS, "integer": INTS, "double": DOUBLES, "pattern": PATTERNS,
            "unix-time": ["0", "1", str(int(time.time()) + 1000), "99999999999", "-1", "x"],
        }.get(kind, STRINGS + [arg["name"]])
        out.append(rnd.choice(pool))


def random_command(rnd, table, names):
    name = rnd.choice(names)
    words = name.split("|")
    out = list(words)
    for arg in table[name].get("arguments", []):
        fill(rnd, arg, out)
    if rnd.random() < 0.05 and len(out) > len(words):
        del out[rnd.randrange(len(words), len(out))]
    if rnd.random() < 0.05:
        out.insert(rnd.randrange(len(words), len(out) + 1), rnd.choice(STRINGS + INTS))
    if words[0] == "xadd":
        # Explicit IDs: `*` takes each server's clock.
        out = [f"{rnd.randint(1, 5)}-{rnd.randint(0, 3)}" if a == "*" else a for a in out]
    if "BLOCK" in (a.upper() for a in out):
        return name, None
    return name, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ferrokv", default="target/release/ferrokv")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--resp3", action="store_true")
    ap.add_argument("--script", action="store_true")
    ap.add_argument("--effects", action="store_true")
    ap.add_argument("--notify", default="KEA")
    ap.add_argument("--track", action="store_true")
    ap.add_argument("--config", nargs=2, action="append", default=[])
    ap.add_argument("--only", default="")
    ap.add_argument("--expired", action="store_true")
    opts = ap.parse_args()
    work = tempfile.mkdtemp(prefix="fuzz-commands-")
    extra = ["--notify-keyspace-events", opts.notify] if opts.effects else []
    for name, value in opts.config:
        extra += [f"--{name}", value]
    if opts.expired:
        extra += ["--enable-debug-command", "yes"]

    def launch(binary, core):
        proc, port = start(binary, core, work, extra)
        return proc, Conn(port), Effects(port, opts.track) if opts.effects else None

    ours_proc, ours, ours_fx = launch(opts.ferrokv, 0)
    theirs_proc, theirs, theirs_fx = launch("redis-server", 1 % os.cpu_count())
    table = command_table(theirs)
    if opts.only:
        table = {k: v for k, v in table.items() if k in opts.only.split(",")}
    names = sorted(table)
    unordered = {n for n in names
                 if "nondeterministic_output_order" in str(theirs.call(["command", "info", n.split("|")[0]]))}
    # Listed in dict order, though 7.0 gives them no such tip.
    unordered |= {"pubsub|channels", "pubsub|shardchannels"}

    def both(args):
        return ours.call(args), theirs.call(args)

    def canonical(name, reply):
        if name == "exec" and isinstance(reply, tuple):
            return (reply[0], [(e[0], sorted(map(str, e[1]))) if isinstance(e, tuple) else e
                               for e in reply[1]])
        if name in unordered and isinstance(reply, tuple):
            return (reply[0], sorted(map(str, reply[1])))
        return reply

    def effects(i):
        """Each server's side effects of the last command."""
        if not opts.effects:
            return None, None
        marker = str(i)
        published = both(["publish", "fuzz-sync", marker])
        if not all(isinstance(r, bytes) and r.startswith(b":") for r in published):
            # Queued inside MULTI: the marker (and the effects) come with EXEC.
            return None, None
        try:
            got = ours_fx.upto(marker), theirs_fx.upto(marker)
        except (OSError, EOFError) as err:
            sys.exit(f"lost the side effects after {history[-3:]}: {err!r}")
        now = [counters(c) for c in (ours, theirs)]
        delta = [tuple(a - b for a, b in zip(n, before)) for n, before in zip(now, last_counters)]
        last_counters[:] = now
        return (*got[0], delta[0]), (*got[1], delta[1])

    last_counters = [(0, 0, 0), (0, 0, 0)]

    expiring = random.Random(opts.seed + 1)
    expired_at_reset = []

    def reset():
        # A transaction the commands left open would queue the reset.
        both(["discard"])
        both(["select", "0"])
        if opts.resp3:
            both(["hello", "3"])
        for c in SETUP:
            both(c)
        if opts.expired:
            replies = both(["debug", "set-active-expire", "0"])
            if replies != (b"+OK", b"+OK"):
                print(f"DEBUG SET-ACTIVE-EXPIRE answered {replies}")
            expired_at_reset[:] = [k for k in KEYS if expiring.random() < 0.4]
            for key in expired_at_reset:
                both(["pexpire", key, "1"])
            # Past their time on both servers before any command runs.
            time.sleep(0.005)
        if opts.track:
            for conn, fx in ((ours, ours_fx), (theirs, theirs_fx)):
                conn.call(["client", "tracking", "off"])
                conn.call(["client", "tracking", "on", "redirect", fx.redirect_id])
        effects("reset")

    rnd = random.Random(opts.seed)
    reset()
    history, differences = [], 0
    for i in range(opts.count):
        name, args = random_command(rnd, table, names)
        if args is None:
            continue
        if opts.script:
            fn = "pcall" if rnd.random() < 0.5 else "call"
            # Half the time the script reads RESP3 replies (redis.setresp).
            resp = "redis.setresp(3) " if rnd.random() < 0.5 else ""
            args = ["eval", f"{resp}return redis.{fn}(unpack(ARGV))", "0", *args]
        a, b = both(args)
        history.append(" ".join(args))
        fa, fb = (None, None) if "EOF" in (a, b) else effects(i)
        if name in unordered and fa is not None:
            fa, fb = (sorted(fa[0]), sorted(fa[1]), fa[2]), (sorted(fb[0]), sorted(fb[1]), fb[2])
        if canonical(name, a) != canonical(name, b) or not same_effects(fa, fb):
            differences += 1
            print(f"DIFF #{i}: {args!r}")
            print(f"  ferrokv: {str(a)[:400]}")
            print(f"  redis  : {str(b)[:400]}")
            if fa != fb:
                print(f"  ferrokv effects: {str(fa)[:600]}")
                print(f"  redis   effects: {str(fb)[:600]}")
            if opts.expired:
                print(f"  expired at the reset: {expired_at_reset}")
            print(f"  since the reset: {history[:-1]}")
            if a == "EOF":
                stop(ours_proc)
                ours_proc, ours, ours_fx = launch(opts.ferrokv, 0)
            if b == "EOF":
                stop(theirs_proc)
                theirs_proc, theirs, theirs_fx = launch("redis-server", 1 % os.cpu_count())
            reset()
            history = []
        elif a == b == "EOF":
            # Both closed the connection alike (CLIENT KILL, a RESET of the
            # link...): the servers go on, and so does the run, anew.
            ours, theirs = Conn(ours.port), Conn(theirs.port)
            reset()
            history = []
        elif len(history) > 60:
            reset()
            history = []
    print(f"{differences} differences in {opts.count} commands")
    stop(ours_proc)
    stop(theirs_proc)
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
