#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, fuzz/seeds/<target>/, from real
data: files, payloads and packets that redis-server 7.0 writes, and the
bytes real clients (redis-cli, redis-benchmark) send, captured through a
recording proxy.

    scripts/fuzz-seeds.py            # rewrites fuzz/seeds/
    scripts/fuzz-seeds.py --check    # exit 1 if a target has no seeds

Needs redis-server, redis-cli and redis-benchmark (7.0) on PATH. Seeds are
named by their SHA-1, as libFuzzer names its corpus files; the script
rewrites fuzz/seeds/ whole. Inputs that once crashed a target are kept in
fuzz/regressions/TARGET/, which this script leaves alone.
"""

import argparse
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")
ASSETS = os.path.join(ROOT, "..", "shared", "redis-tests-7.0", "tests", "assets")
TARGETS = [
    "request", "rdb_load", "restore", "aof_load", "aof_manifest", "cluster_msg",
    "repl_handshake", "lua_cjson", "lua_cmsgpack", "lua_struct", "hll", "compact",
    "config_file",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Conn:
    """A minimal RESP2 client."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _fill(self):
        chunk = self.s.recv(1 << 16)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-"):
            return rest if t == b"+" else RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ValueError(line)

    def __call__(self, *args):
        self.s.sendall(encode(*args))
        r = self._reply()
        if isinstance(r, RuntimeError):
            raise r
        return r


class Server:
    """A redis-server in a directory of its own."""

    def __init__(self, *args):
        self.dir = tempfile.mkdtemp(prefix="fuzz-seeds-")
        # A port picked free may be taken meanwhile (a cluster node's bus
        # port is its port + 10000): try another.
        for attempt in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--dir", self.dir, "--save", "",
                 "--daemonize", "no", "--logfile", os.path.join(self.dir, "log"), *args],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 30
            while self.proc.poll() is None:
                try:
                    self.c = Conn(self.port)
                    self.c("PING")
                    return
                except (OSError, EOFError, RuntimeError):
                    if time.time() > deadline:
                        raise
                    time.sleep(0.05)
        raise RuntimeError("redis-server did not start: see %s/log" % self.dir)

    def wait(self, what, check, timeout=20):
        deadline = time.time() + timeout
        while not check():
            if time.time() > deadline:
                raise TimeoutError(what)
            time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """Forwards a port to another and records what each side sent, one
    record per connection: (client->server bytes, server->client bytes)."""

    def __init__(self, to_port):
        self.to_port = to_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.records = []
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                a, _ = self.sock.accept()
            except OSError:
                return
            b = socket.create_connection(("127.0.0.1", self.to_port))
            rec = [bytearray(), bytearray()]
            self.records.append(rec)
            self.conns.append((a, b))
            threading.Thread(target=self._pump, args=(a, b, rec[0]), daemon=True).start()
            threading.Thread(target=self._pump, args=(b, a, rec[1]), daemon=True).start()

    @staticmethod
    def _pump(src, dst, rec):
        while True:
            try:
                data = src.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            rec += data
            try:
                dst.sendall(data)
            except OSError:
                return

    def cut(self):
        """Closes the connections under way (their peers reconnect)."""
        for a, b in self.conns:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.conns = []

    def close(self):
        self.cut()
        self.sock.close()


class Seeds:
    def __init__(self):
        self.counts = {}

    def add(self, target, data):
        if not data:
            return
        d = os.path.join(SEEDS, target)
        os.makedirs(d, exist_ok=True)
        name = hashlib.sha1(data).hexdigest()
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        self.counts[target] = self.counts.get(target, 0) + 1


def populate(c):
    """One key of every type in each of Redis's encodings, with TTLs and a
    second database."""
    c("SET", "str:int", "12345")
    c("SET", "str:embstr", "hello")
    c("SET", "str:raw", "x" * 100)
    c("SET", "str:long", "abcdefghij" * 50)
    c("SET", "str:ttl", "v", "PX", "100000000")
    c("RPUSH", "list:small", "a", "1", "-7", "longer element", "9223372036854775807")
    c("RPUSH", "list:big", *[("e%d" % i) * (1 + i % 9) for i in range(600)])
    c("HSET", "hash:small", "f1", "v1", "f2", "2", "f3", "-300000")
    c("HSET", "hash:big", *sum([["field%d" % i, "v" * (i % 70)] for i in range(300)], []))
    c("SADD", "set:int", "1", "2", "3", "-100", "70000", "5000000000")
    c("SADD", "set:str", "a", "b", "c", "word")
    c("SADD", "set:big", *["m%d" % i for i in range(600)])
    c("ZADD", "zset:small", "1", "a", "2.5", "b", "-3", "c", "inf", "d")
    c("ZADD", "zset:big", *sum([[str(i / 7), "member%d" % i] for i in range(300)], []))
    c("XADD", "stream", "1-1", "a", "1", "b", "2")
    c("XADD", "stream", "2-1", "a", "3", "c", "4")
    for i in range(150):
        c("XADD", "stream", "*", "field", str(i), "other", "x" * (i % 30))
    c("XGROUP", "CREATE", "stream", "g1", "0")
    c("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "stream", ">")
    c("XGROUP", "CREATE", "stream", "g2", "$", "ENTRIESREAD", "0")
    c("XDEL", "stream", "1-1")
    c("XADD", "stream:empty", "5-5", "f", "v")
    c("XDEL", "stream:empty", "5-5")
    c("PFADD", "hll:sparse", "a", "b", "c")
    c("PFADD", "hll:dense", *["e%d" % i for i in range(5000)])
    c("SETBIT", "bits", "1000", "1")
    c("GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
    c("EXPIRE", "hash:small", "100000")
    c("SELECT", "3")
    c("SET", "db3", "other database")
    c("HSET", "db3:hash", "a", "b")
    c("SELECT", "0")
    c("FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")


def rdb_files(seeds, srv):
    srv.c("SAVE")
    with open(os.path.join(srv.dir, "dump.rdb"), "rb") as f:
        seeds.add("rdb_load", f.read())
    for name in os.listdir(ASSETS):
        if name.endswith(".rdb"):
            with open(os.path.join(ASSETS, name), "rb") as f:
                seeds.add("rdb_load", f.read())


def rdb_string(data, pos):
    """Reads an RDB length-prefixed plain string (no LZF) at pos."""
    b = data[pos]
    kind = b >> 6
    if kind == 0:
        return data[pos + 1: pos + 1 + (b & 0x3F)], pos + 1 + (b & 0x3F)
    if kind == 1:
        n = ((b & 0x3F) << 8) | data[pos + 1]
        return data[pos + 2: pos + 2 + n], pos + 2 + n
    if b == 0x80:
        n = int.from_bytes(data[pos + 1: pos + 5], "big")
        return data[pos + 5: pos + 5 + n], pos + 5 + n
    if b == 0x81:
        n = int.from_bytes(data[pos + 1: pos + 9], "big")
        return data[pos + 9: pos + 9 + n], pos + 9 + n
    return None, pos


def payloads(seeds, srv):
    """DUMP payloads (restore) and the blobs inside them (compact)."""
    c = srv.c
    c("CONFIG", "SET", "rdbcompression", "no")
    for db in (0, 3):
        c("SELECT", str(db))
        for key in c("KEYS", "*"):
            p = c("DUMP", key)
            seeds.add("restore", p)
            t = p[0]
            body = p[1:-10]
            # The compact encodings: one string holding the blob.
            selector = {16: [0, 4], 17: [0, 5], 11: [2], 13: [1, 5], 9: [3], 10: [1]}.get(t)
            if selector:
                blob, _ = rdb_string(body, 0)
                if blob:
                    for s in selector:
                        seeds.add("compact", bytes([s]) + blob)
            if t == 18:
                # Quicklist 2: node count, then (container, listpack) pairs.
                n = body[0]
                pos = 1
                for _ in range(n if n < 64 else 0):
                    pos += 1
                    blob, pos = rdb_string(body, pos)
                    if blob is None:
                        break
                    seeds.add("compact", b"\x00" + blob)
            if t in (15, 19):
                seeds.add("compact", bytes([6 if t == 19 else 7]) + body)
            if key.startswith(b"hll:"):
                v = c("GET", key)
                seeds.add("hll", v[4:])
    c("SELECT", "0")
    c("CONFIG", "SET", "rdbcompression", "yes")


def aof_files(seeds):
    srv = Server("--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    try:
        populate(srv.c)
        srv.c("MULTI")
        srv.c("INCR", "counter")
        srv.c("LPUSH", "list:small", "in-multi")
        srv.c("EXEC")
        srv.c("SET", "k", "v", "EX", "100")
        srv.c("GETDEL", "str:embstr")
        srv.c("EXPIRE", "list:big", "1000")
        srv.c("BLMOVE", "list:small", "list:other", "LEFT", "RIGHT", "0")
        srv.c("XAUTOCLAIM", "stream", "g1", "bob", "0", "0-0")
        srv.c("SETRANGE", "str:raw", "5", "zz")
        srv.c("SPOP", "set:big", "3")
        srv.c("SELECT", "5")
        srv.c("FLUSHDB")
        aofdir = os.path.join(srv.dir, "appendonlydir")

        def read_all():
            for name in sorted(os.listdir(aofdir)):
                with open(os.path.join(aofdir, name), "rb") as f:
                    data = f.read()
                if name.endswith(".manifest"):
                    seeds.add("aof_manifest", data)
                elif not data.startswith(b"REDIS"):
                    seeds.add("aof_load", data)
        read_all()
        # A rewrite: a base of commands, a new incremental file, history.
        srv.c("BGREWRITEAOF")
        srv.wait("aof rewrite", lambda: b"aof_rewrite_in_progress:0" in srv.c("INFO", "persistence")
                 and b"aof_rewrite_scheduled:0" in srv.c("INFO", "persistence"))
        srv.c("SET", "after", "rewrite")
        read_all()
        srv.c("CONFIG", "SET", "aof-timestamp-enabled", "yes")
        srv.c("SET", "stamped", "1")
        read_all()
    finally:
        srv.stop()
    with open(os.path.join(ASSETS, "rdb-preamble.aof"), "rb") as f:
        seeds.add("rdb_load", f.read())


def requests(seeds, srv):
    proxy = Proxy(srv.port)
    bench = ["redis-benchmark", "-p", str(proxy.port), "-n", "20", "-c", "1", "-q"]
    subprocess.run(bench, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(bench + ["-P", "8", "-t", "set,get,lpush,hset,zadd,mset"], check=True,
                   stdout=subprocess.DEVNULL)
    # One value past the 32 KiB at which arguments are read apart.
    subprocess.run(bench[:3] + ["-n", "1", "-c", "1", "-q", "-d", "33000", "-t", "set"],
                   check=True, stdout=subprocess.DEVNULL)
    cli = ["redis-cli", "-p", str(proxy.port)]
    for cmd in (["SET", "key", "value with spaces"], ["HSET", "h", "f", "a\r\nb"],
                ["CLIENT", "SETNAME", "seed"], ["XADD", "s", "*", "a", "b"],
                ["EVAL", "return {1,2,redis.call('ping')}", "0"], ["AUTH", "nopass"]):
        subprocess.run(cli + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # A telnet-style client: inline commands, quoting, a pipeline.
    s = socket.create_connection(("127.0.0.1", proxy.port))
    s.sendall(b"PING\r\nSET \"quoted \\x41\\n\" 'single'\r\nGET a\n\r\n*1\r\n$4\r\nPING\r\n")
    s.recv(1 << 16)
    s.close()
    time.sleep(0.2)
    proxy.close()
    for up, _ in proxy.records:
        for head in (0x00, 0x38, 0x04, 0xF8):
            seeds.add("request", bytes([head]) + bytes(up))


def replication(seeds):
    for diskless in ("no", "yes"):
        master = Server("--repl-diskless-sync", diskless, "--repl-diskless-sync-delay", "0")
        proxy = Proxy(master.port)
        replica = Server()
        try:
            populate(master.c)
            replica.c("REPLICAOF", "127.0.0.1", str(proxy.port))
            up = lambda: b"master_link_status:up" in replica.c("INFO", "replication")
            replica.wait("sync", up)
            master.c("SET", "streamed", "1")
            master.c("INCR", "n")
            master.c("WAIT", "1", "2000")
            # Cut the link: the replica comes back with PSYNC and gets
            # +CONTINUE and the backlog.
            master.c("CLIENT", "PAUSE", "200", "WRITE")
            proxy.cut()
            master.c("SET", "while-away", "1")
            replica.wait("resync", lambda: len(proxy.records) >= 2 and up())
            master.c("WAIT", "1", "2000")
            time.sleep(0.2)
            for _, down in proxy.records:
                # Reads of 1 and 512 bytes.
                for head in (0x00, 0x90):
                    seeds.add("repl_handshake", bytes([head]) + bytes(down))
        finally:
            replica.stop()
            proxy.close()
            master.stop()


def cluster(seeds):
    """Three masters; b announces a recording proxy as its bus port, so
    every packet a sends b, and b's answers, pass through it: MEET, PING,
    PONG with gossip, PUBLISH, PUBLISHSHARD, and FAIL once c is killed."""
    proxy = Proxy(0)
    nodes = []
    try:
        opts = ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"]
        a = Server(*opts)
        # A hostname, so its packets carry the hostname extension.
        b = Server(*opts, "--cluster-announce-bus-port", str(proxy.port),
                   "--cluster-announce-hostname", "node-b.example")
        c = Server(*opts)
        nodes = [a, b, c]
        proxy.to_port = b.port + 10000
        a.c("CLUSTER", "ADDSLOTSRANGE", "0", "5000")
        b.c("CLUSTER", "ADDSLOTSRANGE", "5001", "10000")
        c.c("CLUSTER", "ADDSLOTSRANGE", "10001", "16383")
        a.c("CLUSTER", "MEET", "127.0.0.1", str(b.port), str(proxy.port))
        a.c("CLUSTER", "MEET", "127.0.0.1", str(c.port))
        ok = lambda n: b"cluster_state:ok" in n.c("CLUSTER", "INFO")
        a.wait("cluster ok", lambda: all(ok(n) for n in nodes))
        a.c("PUBLISH", "channel", "message")
        a.c("SPUBLISH", "shard", "message")
        c.proc.kill()
        c.proc.wait()
        a.wait("c failed", lambda: b"fail" in a.c("CLUSTER", "NODES").split(b"\n")[0] or
               any(b" fail " in l or b",fail " in l for l in a.c("CLUSTER", "NODES").split(b"\n")))
        time.sleep(0.5)
        for up, down in proxy.records:
            for stream in (bytes(up), bytes(down)):
                pos = 0
                while pos + 8 <= len(stream):
                    n = int.from_bytes(stream[pos + 4: pos + 8], "big")
                    if n < 8 or pos + n > len(stream):
                        break
                    seeds.add("cluster_msg", stream[pos: pos + n])
                    pos += n
        # The bodies no capture brought, on a captured header: FAIL (a
        # node name), UPDATE (epoch, name, slot bitmap), failover auth
        # request and ack and MFSTART (no body). clusterMsg's header is
        # 2256 bytes; its type is at 12, its total length at 4.
        header = bytes(proxy.records[0][0][:2256]) if proxy.records else b""
        if len(header) == 2256:
            name = b"0123456789abcdef0123456789abcdef01234567"
            for kind, body in ((3, name), (7, (5).to_bytes(8, "big") + name + b"\xff" * 2048),
                               (5, b""), (6, b""), (8, b"")):
                m = bytearray(header + body)
                m[4:8] = len(m).to_bytes(4, "big")
                m[12:14] = kind.to_bytes(2, "big")
                seeds.add("cluster_msg", bytes(m))
    finally:
        proxy.close()
        for n in nodes:
            n.stop()


def lua(seeds, srv):
    c = srv.c
    tables = [
        "{1,2,3}", "{a=1,b={c='d'},e={1.5,-2,true,false}}", "{}", "'str\\0ing'", "12.25",
        "{[1]='x',[3]='y'}", "{nested={{{{1}}}}}", "-1e300", "{s=string.rep('x',300)}",
        "{k=cjson and 1 or 2, arr={1,{2,{3}}}}",
    ]
    for t in tables:
        j = c("EVAL", "return cjson.encode(%s)" % t, "0")
        seeds.add("lua_cjson", j)
        m = c("EVAL", "return cmsgpack.pack(%s)" % t, "0")
        seeds.add("lua_cmsgpack", m)
    for doc in (b'{"a":[1,2,{"b":null}],"c":"\\u00e9\\n"}', b"[[[[[]]]]]", b'"\\ud83d\\ude00"',
                b"1e400", b"-0.0", b'{"x":true,"y":false}'):
        seeds.add("lua_cjson", doc)
    m = c("EVAL", "return cmsgpack.pack(1, 'two', {3}, 2^40, -2^40, 0.5, string.rep('z', 70000))", "0")
    seeds.add("lua_cmsgpack", m)
    for fmt, args in (("<i4", "1"), (">d", "3.5"), ("!4 b h i l", "1, 2, 3, 4"), ("s", "'str'"),
                      ("c5", "'abcde'"), ("i3 B", "-5, 200"), ("<I8 >f", "7, 1.5"), ("c0 i", "'', 1")):
        try:
            data = c("EVAL", "return struct.pack('%s', %s)" % (fmt, args), "0")
        except RuntimeError:
            continue
        seeds.add("lua_struct", fmt.encode() + b"\x00" + data)


def configs(seeds, srv):
    for path in ("/etc/redis/redis.conf", os.path.join(ASSETS, "default.conf"),
                 os.path.join(ASSETS, "minimal.conf"), os.path.join(ROOT, "redis.conf.example")):
        if os.path.exists(path):
            with open(path, "rb") as f:
                seeds.add("config_file", f.read())
    # CONFIG REWRITE of a server started with many directives changed.
    conf = os.path.join(srv.dir, "rewritten.conf")
    with open(conf, "w") as f:
        f.write("# written by CONFIG REWRITE\n")
    port = free_port()
    proc = subprocess.Popen(["redis-server", conf, "--port", str(port), "--dir", srv.dir,
                             "--save", "900 1", "--maxmemory", "1gb",
                             "--client-output-buffer-limit", "replica 1gb 512mb 60",
                             "--notify-keyspace-events", "KEA", "--rename-command", "KEYS", "",
                             "--user", "alice", "on", ">pw", "~*", "+@all"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                Conn(port)("CONFIG", "REWRITE")
                break
            except (OSError, EOFError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        with open(conf, "rb") as f:
            seeds.add("config_file", f.read())
    finally:
        proc.terminate()
        proc.wait()


def dicts(srv):
    """libFuzzer dictionaries (fuzz/dicts/TARGET.dict): command names,
    subcommands and argument tokens from COMMAND DOCS for the targets that
    run commands, directive names from CONFIG GET * for config files."""
    words = set()

    def tokens(args):
        for a in args or []:
            if isinstance(a, list):
                d = dict(zip(a[0::2], a[1::2]))
                if d.get(b"token"):
                    words.add(d[b"token"])
                tokens(d.get(b"arguments"))

    docs = srv.c("COMMAND", "DOCS")
    for name, doc in zip(docs[0::2], docs[1::2]):
        words.update(name.split(b"|"))
        d = dict(zip(doc[0::2], doc[1::2]))
        tokens(d.get(b"arguments"))
        subs = d.get(b"subcommands") or []
        for sub, sdoc in zip(subs[0::2], subs[1::2]):
            words.update(sub.split(b"|"))
            sd = dict(zip(sdoc[0::2], sdoc[1::2]))
            tokens(sd.get(b"arguments"))
    directives = set(srv.c("CONFIG", "GET", "*")[0::2])
    os.makedirs(os.path.join(ROOT, "fuzz", "dicts"), exist_ok=True)

    def write(target, items, extra=()):
        with open(os.path.join(ROOT, "fuzz", "dicts", target + ".dict"), "w") as f:
            for w in sorted(set(items)) + list(extra):
                esc = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02x" % ord(c)
                              for c in w.decode("latin-1"))
                f.write('"%s"\n' % esc)

    resp = [b"\r\n", b"*1\r\n$", b"*2\r\n", b"*3\r\n", b"$-1\r\n"]
    write("request", words, resp)
    write("aof_load", words, resp)
    write("config_file", directives, [b"yes", b"no", b"include", b"rename-command", b"user", b"save"])
    return len(words), len(directives)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only check every target has seeds")
    args = ap.parse_args()
    if args.check:
        empty = [t for t in TARGETS
                 if not os.path.isdir(os.path.join(SEEDS, t)) or not os.listdir(os.path.join(SEEDS, t))]
        if empty:
            print("no seeds for: " + " ".join(empty))
            return 1
        return 0
    # The seeds are rewritten whole: files carry timestamps, so a second
    # run would otherwise add near-copies. Crash inputs live apart, in
    # fuzz/regressions/.
    shutil.rmtree(SEEDS, ignore_errors=True)
    seeds = Seeds()
    srv = Server("--appendonly", "no")
    try:
        populate(srv.c)
        rdb_files(seeds, srv)
        payloads(seeds, srv)
        requests(seeds, srv)
        lua(seeds, srv)
        configs(seeds, srv)
        nwords, ndirectives = dicts(srv)
    finally:
        srv.stop()
    aof_files(seeds)
    replication(seeds)
    cluster(seeds)
    for t in TARGETS:
        print("%-16s %d seeds" % (t, seeds.counts.get(t, 0)))
    print("dictionaries: %d command words, %d directives" % (nwords, ndirectives))
    return 0


if __name__ == "__main__":
    sys.exit(main())
