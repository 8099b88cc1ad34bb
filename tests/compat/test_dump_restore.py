"""DUMP, RESTORE and MIGRATE between redis-server 7.0 and Rialto, both ways.

Values of every type in every encoding Redis 7.0 keeps them in are made on redis-server, DUMPed
there, RESTOREd into Rialto and compared with DEBUG DIGEST-VALUE (which does not depend on the
encoding); Rialto's DUMP of each goes back into redis-server the same way. RESTORE's errors are
compared text for text. MIGRATE runs Rialto to redis-server, redis-server to Rialto and Rialto to
Rialto, with its options, a target that refuses, and targets that never answer."""

import socket
import threading
import time

import pytest
import redis

DEBUG = ["--enable-debug-command", "yes"]


def big(prefix, n):
    return [f"{prefix}-{i}" for i in range(n)]


# name -> (commands that build key "k" on redis-server, the encoding redis-server reports)
VALUES = {
    "string-embstr": ([["SET", "k", "hello"]], b"embstr"),
    "string-int": ([["SET", "k", "-12345"]], b"int"),
    "string-int64": ([["SET", "k", "12345678901234"]], b"int"),
    "string-raw-lzf": ([["SET", "k", "abc" * 100]], b"raw"),
    "string-binary": ([["SET", "k", bytes(range(256)) * 3]], b"raw"),
    "list-listpack": ([["RPUSH", "k", "a", "0", "127", "-4096", "32767", "8388607", "2147483647", "-9223372036854775808", "x" * 70]], b"quicklist"),
    "list-quicklist": ([["RPUSH", "k", *big("element", 3000)]], b"quicklist"),
    "set-intset": ([["SADD", "k", "1", "-70000", "7000000000"]], b"intset"),
    "set-hashtable": ([["SADD", "k", "a", "b", "1"]], b"hashtable"),
    "set-hashtable-large": ([["SADD", "k", *big("m", 700)]], b"hashtable"),
    "zset-listpack": ([["ZADD", "k", "1", "a", "2.5", "b", "-inf", "c", "1e300", "d"]], b"listpack"),
    "zset-skiplist": ([["ZADD", "k", *sum(([str(i * 0.5), f"m{i}"] for i in range(300)), [])]], b"skiplist"),
    "hash-listpack": ([["HSET", "k", "f1", "v1", "n", "-77"]], b"listpack"),
    "hash-hashtable": ([["HSET", "k", *sum(([f"f{i}", f"v{i}"] for i in range(700)), [])]], b"hashtable"),
    "hash-long-value": ([["HSET", "k", "f", "v" * 100]], b"hashtable"),
}


@pytest.fixture
def both(start_server):
    ref = start_server("redis", args=DEBUG).client()
    ria = start_server("rialto", args=DEBUG).client()
    yield ref, ria
    ref.close()
    ria.close()


def digest(c, key):
    return c.execute_command("DEBUG", "DIGEST-VALUE", key)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_move_both_ways(both, name):
    ref, ria = both
    cmds, encoding = VALUES[name]
    # Plain nodes: elements of at least 100 bytes go in nodes of their own.
    for c in cmds:
        ref.execute_command(*c)
    assert ref.object("encoding", "k") == encoding
    want = digest(ref, "k")
    payload = ref.dump("k")
    assert ria.restore("k", 0, payload) == b"OK"
    assert digest(ria, "k") == want
    back = ria.dump("k")
    assert ref.restore("back", 0, back) == b"OK"
    assert digest(ref, "back") == want
    # Redis loads Rialto's plain types into its own compact encoding.
    assert ref.object("encoding", "back") == encoding
    # And Rialto takes its own DUMP.
    assert ria.restore("again", 0, back) == b"OK"
    assert digest(ria, "again") == want


def test_plain_and_compressed_list_nodes(both):
    ref, ria = both
    ref.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100")
    ref.config_set("list-compress-depth", 1)
    ref.rpush("k", "small", "p" * 150, *big("e", 2000), "q" * 300)
    ria.restore("k", 0, ref.dump("k"))
    assert digest(ria, "k") == digest(ref, "k")
    assert ria.lrange("k", 0, 1) == [b"small", b"p" * 150]


def test_restore_errors_match(pair):
    ref, ria = pair
    payload = ref.set("s", "v") and ref.dump("s")
    ria.set("s", "v")
    stream = ref.xadd("x", {"f": "v"}) and ref.dump("x")

    def errors(c):
        out = []
        for args in (
            ["RESTORE", "s", "0", payload],  # BUSYKEY, before anything else
            ["RESTORE", "s", "-1", b"junk"],
            ["RESTORE", "n", "x", payload],
            ["RESTORE", "n", "-1", payload],
            ["RESTORE", "n", "0", b"junk"],
            ["RESTORE", "n", "0", payload[:-1] + bytes([payload[-1] ^ 1])],
            ["RESTORE", "n", "0", payload, "BOGUS"],
            ["RESTORE", "n", "0", payload, "IDLETIME", "-1"],
            ["RESTORE", "n", "0", payload, "IDLETIME", "x"],
            ["RESTORE", "n", "0", payload, "FREQ", "256"],
            ["RESTORE", "n", "0", payload, "FREQ", "1", "IDLETIME", "1"],
            ["RESTORE", "n", "0"],
        ):
            try:
                out.append(c.execute_command(*args))
            except redis.ResponseError as e:
                out.append(str(e))
        return out

    # A stream restores as Redis wrote it (test_streams.py moves streams with groups both ways).
    assert ria.restore("n", 0, stream) in (True, b"OK")
    assert ria.xrange("n") == ref.xrange("x")
    ria.delete("n")
    got, want = errors(ria), errors(ref)
    assert got == want
    assert "BUSYKEY Target key name already exists." in want
    assert "DUMP payload version or checksum are wrong" in want


def test_restore_ttls_and_options(pair):
    ref, ria = pair
    for c in (ref, ria):
        c.set("s", "v")
        p = c.dump("s")
        now_ms = int(time.time() * 1000)
        assert c.restore("a", 5000, p) == b"OK"
        assert 4000 < c.pttl("a") <= 5000
        assert c.restore("b", now_ms + 9000, p, absttl=True) == b"OK"
        assert 7000 < c.pttl("b") <= 9000
        # A time already past: OK, nothing written; with REPLACE, the key goes.
        assert c.restore("gone", 1, p, absttl=True) == b"OK"
        assert c.exists("gone") == 0
        assert c.restore("a", 1, p, absttl=True, replace=True) == b"OK"
        assert c.exists("a") == 0
        assert c.execute_command("RESTORE", "c", "0", p, "REPLACE", "IDLETIME", "10") == b"OK"
        assert c.execute_command("RESTORE", "c", "0", p, "REPLACE", "FREQ", "5") == b"OK"
        assert c.get("c") == b"v"
        assert c.dump("missing") is None


def test_migrate_getkeys_and_info(pair):
    ref, ria = pair
    for line in (
        ["MIGRATE", "h", "1", "k", "0", "10"],
        ["MIGRATE", "h", "1", "", "0", "10", "COPY", "KEYS", "a", "b"],
        ["MIGRATE", "h", "1", "", "0", "10", "AUTH", "keys", "KEYS", "a"],
        ["MIGRATE", "h", "1", "", "0", "10", "AUTH2", "u", "keys", "KEYS", "a", "b"],
    ):
        # (The name "COMMAND GETKEYS" keeps redis-py from parsing the reply as COMMAND's.)
        assert ria.execute_command("COMMAND GETKEYS", *line) == ref.execute_command("COMMAND GETKEYS", *line)
    for c in (ref, ria):
        with pytest.raises(redis.ResponseError, match="Invalid arguments"):
            c.execute_command("COMMAND GETKEYS", "MIGRATE", "h", "1", "k", "0", "10", "KEYS", "a")
    info = lambda c: c.execute_command("COMMAND INFO", "MIGRATE")[0]  # noqa: E731
    want, got = info(ref), info(ria)
    assert got[:6] == want[:6]
    assert b"movablekeys" in got[2]


def fill(c):
    c.set("s", "v")
    c.set("t", "ttl", px=50_000)
    c.rpush("l", *big("e", 300))
    c.hset("h", mapping={"a": 1, "b": 2})
    c.sadd("set", 1, 2, 3)
    c.zadd("z", {"m": 1.5})


KEYS = ["s", "t", "l", "h", "set", "z"]


@pytest.mark.parametrize("direction", ["rialto-to-redis", "redis-to-rialto", "rialto-to-rialto"])
def test_migrate_moves_keys(start_server, direction):
    src_role, dst_role = {"rialto-to-redis": ("rialto", "redis"), "redis-to-rialto": ("redis", "rialto"), "rialto-to-rialto": ("rialto", "rialto")}[direction]
    src_s = start_server(src_role, args=DEBUG)
    dst_s = start_server(dst_role, args=DEBUG)
    src, dst = src_s.client(), dst_s.client()
    fill(src)
    digests = {k: digest(src, k) for k in KEYS}
    # One key, to database 2.
    assert src.execute_command("MIGRATE", dst_s.host, dst_s.port, "s", 2, 5000) == b"OK"
    assert src.exists("s") == 0
    d2 = dst_s.client(db=2)
    assert digest(d2, "s") == digests["s"]
    # Several with KEYS and COPY: the source keeps them.
    assert src.execute_command("MIGRATE", dst_s.host, dst_s.port, "", 0, 5000, "COPY", "KEYS", "t", "l", "h", "missing") == b"OK"
    assert src.exists("t", "l", "h") == 3
    for k in ("t", "l", "h"):
        assert digest(dst, k) == digests[k]
    assert 40_000 < dst.pttl("t") <= 50_000
    # Already there: the target's BUSYKEY, forwarded; REPLACE overwrites.
    with pytest.raises(redis.ResponseError) as e:
        src.execute_command("MIGRATE", dst_s.host, dst_s.port, "", 0, 5000, "KEYS", "l", "set")
    assert str(e.value) == "Target instance replied with error: BUSYKEY Target key name already exists."
    # The key the target accepted moved, the refused one stayed.
    assert src.exists("l") == 1 and src.exists("set") == 0
    assert digest(dst, "set") == digests["set"]
    assert src.execute_command("MIGRATE", dst_s.host, dst_s.port, "", 0, 5000, "REPLACE", "KEYS", "l", "h", "z") == b"OK"
    assert src.exists("l", "h", "z") == 0
    for k in ("l", "h", "z"):
        assert digest(dst, k) == digests[k]
    # Nothing to move.
    assert src.execute_command("MIGRATE", dst_s.host, dst_s.port, "nothing", 0, 5000) == b"NOKEY"


@pytest.mark.parametrize("src_role", ["redis", "rialto"])
def test_migrate_auth(start_server, src_role):
    src_s = start_server(src_role)
    dst_s = start_server("redis", password="secret")
    src = src_s.client()
    dst = dst_s.client()
    dst.acl_setuser("mover", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all"])
    src.set("a", 1)
    src.set("b", 2)
    with pytest.raises(redis.ResponseError) as e:
        src.execute_command("MIGRATE", dst_s.host, dst_s.port, "a", 0, 5000)
    assert str(e.value).startswith("Target instance replied with error: NOAUTH")
    with pytest.raises(redis.ResponseError) as e:
        src.execute_command("MIGRATE", dst_s.host, dst_s.port, "a", 0, 5000, "AUTH", "wrong")
    assert str(e.value).startswith("Target instance replied with error: WRONGPASS")
    assert src.exists("a") == 1
    assert src.execute_command("MIGRATE", dst_s.host, dst_s.port, "a", 0, 5000, "AUTH", "secret") == b"OK"
    assert src.execute_command("MIGRATE", dst_s.host, dst_s.port, "", 0, 5000, "AUTH2", "mover", "pw", "KEYS", "b") == b"OK"
    assert dst.mget("a", "b") == [b"1", b"2"]
    assert src.exists("a", "b") == 0


def silent_listener():
    """A port that accepts connections and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    held = []

    def accept():
        while True:
            try:
                held.append(s.accept())
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return s, held


@pytest.mark.parametrize("src_role", ["redis", "rialto"])
def test_migrate_io_errors(start_server, src_role):
    src = start_server(src_role).client()
    src.set("k", "v")
    # Nothing listens there.
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()
    with pytest.raises(redis.ResponseError) as e:
        src.execute_command("MIGRATE", "127.0.0.1", port, "k", 0, 500)
    assert str(e.value) == "IOERR error or timeout writing to target instance"
    # Accepts, never answers: the timeout, then IOERR reading.
    s, _held = silent_listener()
    try:
        start = time.monotonic()
        with pytest.raises(redis.ResponseError) as e:
            src.execute_command("MIGRATE", "127.0.0.1", s.getsockname()[1], "k", 0, 300)
        assert str(e.value) == "IOERR error or timeout reading to target instance"
        assert time.monotonic() - start < 5
    finally:
        s.close()
    assert src.get("k") == b"v"
    with pytest.raises(redis.ResponseError, match="When using MIGRATE KEYS option"):
        src.execute_command("MIGRATE", "127.0.0.1", port, "k", 0, 500, "KEYS", "k")


def test_migrate_does_not_block_other_clients(start_server):
    src_s = start_server("rialto")
    src = src_s.client()
    other = src_s.client()
    src.set("k", "v")
    s, _held = silent_listener()
    try:
        done = []
        t = threading.Thread(
            target=lambda: done.append(
                pytest.raises(redis.ResponseError, src.execute_command, "MIGRATE", "127.0.0.1", s.getsockname()[1], "k", 0, 2000)
            )
        )
        t.start()
        time.sleep(0.3)
        # While MIGRATE waits on the target, others read and write.
        start = time.monotonic()
        other.set("x", 1)
        assert other.get("k") == b"v"
        assert time.monotonic() - start < 1
        assert t.is_alive()
        t.join()
    finally:
        s.close()


def test_migrate_keeps_a_key_written_while_in_flight(start_server):
    """The key is written by another client while the target has not answered yet: MIGRATE
    deletes nothing (that write is not lost) and says so; the target got the value read."""
    src_s = start_server("rialto")
    src, other = src_s.client(), src_s.client()
    src.set("k", "old")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    written = threading.Event()
    got = []

    def target():
        conn, _ = listener.accept()
        with conn:
            data = b""
            while data.count(b"\r\n") < 9:  # SELECT (5 lines) and RESTORE (up to its payload)
                data += conn.recv(65536)
            got.append(data)
            written.wait(10)
            conn.sendall(b"+OK\r\n+OK\r\n")

    t = threading.Thread(target=target)
    t.start()
    result = []
    m = threading.Thread(
        target=lambda: result.append(
            pytest.raises(redis.ResponseError, src.execute_command, "MIGRATE", "127.0.0.1", listener.getsockname()[1], "k", 0, 5000)
        )
    )
    m.start()
    for _ in range(100):
        if got:
            break
        time.sleep(0.05)
    assert got and b"RESTORE" in got[0]
    other.set("k", "new")
    written.set()
    m.join()
    t.join()
    listener.close()
    assert "changed while MIGRATE ran" in str(result[0].value)
    assert src.get("k") == b"new"
