"""Client-side caching (CLIENT TRACKING) against Redis 7 and the server under test: the
invalidation pushes (RESP3) and redirected messages (RESP2) byte for byte, what invalidates
(writes, DEL, EXPIRE, FLUSHALL), NOLOOP, BCAST prefixes, OPTIN, the option errors, redis-py's
client-side cache; and, on Rialto only, a store push's swap and rollback.
"""

import time

import pytest
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection


def raw(server, protocol=3):
    c = server.conn()
    if protocol == 3:
        c.call("HELLO", "3")
    return c


def read_raw(c, timeout=5.0):
    c.sock.settimeout(timeout)
    try:
        return c.read_reply()[0]
    finally:
        c.sock.settimeout(c.timeout)


def nothing_pending(c, wait=0.3):
    """True if nothing arrives on `c` within `wait` seconds (checked with a PING)."""
    time.sleep(wait)
    c.send_command(["PING"])
    return read_raw(c) == b"+PONG\r\n"


def both(start_server, fn):
    """Runs `fn(server)` on a fresh Redis and a fresh server under test; returns both results."""
    return [fn(start_server(role)) for role in ("redis", "rialto")]


def test_a_write_by_another_client_sends_one_invalidation(start_server):
    def run(s):
        c, w = raw(s), s.client()
        w.set("k", "v")
        out = [c.call("CLIENT", "TRACKING", "ON").value, c.call("GET", "k").value]
        w.set("k", "v2")
        out.append(read_raw(c))
        w.set("k", "v3")  # not read since: no second invalidation
        out.append(nothing_pending(c))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis
    assert redis[2] == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"


@pytest.mark.parametrize(
    "change",
    [
        ("DEL", "k"),
        ("EXPIRE", "k", "100"),
        ("PEXPIRE", "k", "0"),
        ("APPEND", "k", "x"),
        ("RENAME", "k", "k2"),
        ("GETDEL", "k"),
        ("INCR", "n"),
    ],
    ids=lambda c: c[0],
)
def test_every_kind_of_change_invalidates(start_server, change):
    def run(s):
        c, w = raw(s), s.client()
        w.mset({"k": "v", "n": "1"})
        c.call("CLIENT", "TRACKING", "ON")
        c.call("MGET", "k", "n")
        w.execute_command(*change)
        return read_raw(c)

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_keys_read_inside_a_transaction_are_tracked(start_server):
    def run(s):
        c, w = raw(s), s.client()
        c.call("CLIENT", "TRACKING", "ON")
        out = [c.call("MULTI").value, c.call("GET", "tx").value, c.call("EXEC").value[0].value]
        w.set("tx", "1")
        out.append(read_raw(c))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_flushall_sends_a_null_invalidation(start_server, protocol):
    def run(s):
        c, w = raw(s), s.client()
        w.set("k", "v")
        c.call("CLIENT", "TRACKING", "ON")
        c.call("GET", "k")
        w.flushall()
        return read_raw(c)

    redis, rialto = both(start_server, run)
    assert rialto == redis == b">2\r\n$10\r\ninvalidate\r\n_\r\n"


def test_own_write_invalidation_follows_its_reply_unless_noloop(start_server):
    def run(s):
        c, n = raw(s), raw(s)
        c.call("CLIENT", "TRACKING", "ON")
        n.call("CLIENT", "TRACKING", "ON", "NOLOOP")
        out = []
        c.call("GET", "mine")
        c.send_command(["SET", "mine", "1"])
        out += [read_raw(c), read_raw(c)]
        n.call("GET", "mine")
        n.send_command(["SET", "mine", "2"])
        out += [read_raw(n), nothing_pending(n, 0.2)]
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis
    # Redis 7.0 sends a client's own invalidations after its command's reply.
    assert redis[:2] == [b"+OK\r\n", b">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nmine\r\n"]
    assert redis[2:] == [b"+OK\r\n", True]


def test_resp2_redirect_to_a_subscriber_of_the_invalidate_channel(start_server):
    def run(s):
        sub = raw(s, 2)
        sub_id = sub.call("CLIENT", "ID").value
        sub.call("SUBSCRIBE", "__redis__:invalidate")
        c, w = raw(s, 2), s.client()
        w.set("k", "v")
        out = [c.call("CLIENT", "TRACKING", "ON", "REDIRECT", sub_id).value]
        out.append(c.call("CLIENT", "GETREDIR").value == sub_id)
        c.call("GET", "k")
        w.set("k", "v2")
        out.append(read_raw(sub))
        w.flushdb()
        out.append(read_raw(sub))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis
    assert redis[2] == b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n"


def test_bcast_prefixes_get_every_write_under_them(start_server):
    def run(s):
        c, w = raw(s), s.client()
        c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "item:")
        w.set("user:1", "a")
        first = read_raw(c)
        w.set("other", "b")
        w.set("item:9", "c")
        second = read_raw(c)
        return [first, second]

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_optin_tracks_only_after_caching_yes(start_server):
    def run(s):
        c, w = raw(s), s.client()
        c.call("CLIENT", "TRACKING", "ON", "OPTIN")
        c.call("GET", "a")
        c.call("CLIENT", "CACHING", "YES")
        c.call("GET", "b")
        c.call("GET", "a")  # CACHING YES covered only the command after it
        w.set("a", "1")
        w.set("b", "1")
        return [read_raw(c), nothing_pending(c)]

    redis, rialto = both(start_server, run)
    assert rialto == redis


ERROR_SCRIPTS = [
    [("CLIENT", "TRACKING", "ON", "PREFIX", "a")],
    [("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT")],
    [("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN")],
    [("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "ab")],
    [("CLIENT", "TRACKING", "ON", "REDIRECT", "999999")],
    [("CLIENT", "TRACKING", "ON", "REDIRECT", "x")],
    [("CLIENT", "TRACKING", "ON", "BOGUS")],
    [("CLIENT", "TRACKING", "MAYBE")],
    [("CLIENT", "CACHING", "YES")],
    [("CLIENT", "TRACKING", "ON"), ("CLIENT", "CACHING", "YES"), ("CLIENT", "CACHING", "NO"),
     ("CLIENT", "CACHING", "MAYBE"), ("CLIENT", "TRACKING", "ON", "BCAST")],
    [("CLIENT", "TRACKING", "ON", "OPTIN"), ("CLIENT", "TRACKING", "ON", "OPTOUT")],
    [("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"), ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab")],
    [("CLIENT", "GETREDIR"), ("CLIENT", "TRACKINGINFO"), ("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP",
     "PREFIX", "b", "PREFIX", "a"), ("CLIENT", "TRACKINGINFO"), ("CLIENT", "GETREDIR"), ("CLIENT", "TRACKING", "OFF"),
     ("CLIENT", "TRACKINGINFO")],
    [("CLIENT", "TRACKING", "ON", "OPTOUT"), ("CLIENT", "CACHING", "NO"), ("CLIENT", "TRACKINGINFO")],
]


@pytest.mark.parametrize("script", range(len(ERROR_SCRIPTS)))
def test_options_and_errors_are_redis_byte_for_byte(start_server, protocol, script):
    def run(s):
        c = raw(s, protocol)
        return [c.send_command(list(cmd)) or read_raw(c) for cmd in ERROR_SCRIPTS[script]]

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_info_and_client_list_show_tracking(server):
    c = raw(server)
    q = server.client()
    c.call("CLIENT", "TRACKING", "ON")
    c.call("MGET", "a", "b")
    info = q.info()
    assert info["tracking_clients"] == 1
    assert info["tracking_total_keys"] == 2
    me = [x for x in q.client_list() if "t" in x["flags"]]
    assert len(me) == 1 and me[0]["redir"] == "0"


def test_the_table_is_bounded_by_tracking_table_max_keys(server):
    q = server.client()
    q.config_set("tracking-table-max-keys", "3")
    c = raw(server)
    c.call("CLIENT", "TRACKING", "ON")
    for i in range(10):
        c.send_command(["GET", f"k{i}"])
    # Ten GET replies, and an invalidation for every key evicted (at least seven), in any order.
    pushes = replies = 0
    c.sock.settimeout(3)
    try:
        while replies < 10 or pushes < 7:
            raw_reply = c.read_reply()[0]
            if raw_reply.startswith(b">2\r\n$10\r\ninvalidate"):
                pushes += 1
            else:
                replies += 1
    finally:
        c.sock.settimeout(c.timeout)
    assert replies == 10 and pushes >= 7
    assert q.info()["tracking_total_keys"] <= 3


def test_redis_py_client_side_cache(server, monkeypatch):
    # redis-py 5.3 enables its cache only for servers that say 7.4 or later; the protocol it
    # uses (CLIENT TRACKING ON, RESP3 invalidation pushes) is 6.0's. Let it talk to 7.0.
    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    r = server.client(protocol=3, cache_config=CacheConfig())
    w = server.client()
    w.set("cached", "1")
    assert r.get("cached") == b"1"
    assert r.get("cached") == b"1"  # from the local cache
    cache = r.get_cache()
    assert cache is not None and cache.size == 1
    w.set("cached", "2")
    deadline = time.time() + 5
    while r.get("cached") != b"2" and time.time() < deadline:
        time.sleep(0.01)
    assert r.get("cached") == b"2"
    w.delete("cached")
    while r.get("cached") is not None and time.time() < deadline:
        time.sleep(0.01)
    assert r.get("cached") is None
    w.set("cached", "3")
    assert r.get("cached") in (None, b"3")
    w.flushall()
    while r.get("cached") is not None and time.time() < deadline:
        time.sleep(0.01)
    assert r.get("cached") is None
    r.close()


def test_a_push_swap_or_rollback_invalidates_the_stores_tracked_keys(target, start_server):
    if target != "rialto":
        pytest.skip("stores are Rialto's")
    s = start_server("rialto")
    c = s.client(protocol=3)
    c.execute_command("STORE", "CREATE", "feat", "PREFIX", "feat:")

    def push(pairs):
        push_id = c.execute_command("PUSH", "BEGIN", "feat", "MIN-RECORDS", 0, "MAX-SHRINK", 100)
        flat = [x for kv in pairs for x in kv]
        c.execute_command("PUSH", "ADD", push_id, *flat)
        c.execute_command("PUSH", "COMMIT", push_id)

    push([("a", "1"), ("b", "1")])
    t = raw(s)
    t.call("CLIENT", "TRACKING", "ON")
    bc = raw(s)
    bc.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "feat")
    far = raw(s)
    far.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zzz")
    for change in ("swap", "rollback"):
        t.call("MGET", "feat:a", "plain")  # tracked from now on
        if change == "swap":
            push([("a", "2"), ("b", "2")])
        else:
            c.execute_command("STORE", "ROLLBACK", "feat")
        # The tracked key under the store's prefix is invalidated; `plain` is not.
        assert read_raw(t) == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nfeat:a\r\n"
        assert nothing_pending(t, 0.2)
        # A BCAST client whose prefix overlaps the store's is told to drop everything.
        assert read_raw(bc) == b">2\r\n$10\r\ninvalidate\r\n_\r\n"
        assert nothing_pending(far, 0.1)
    # After the swap and the rollback, a re-read sees the version in service.
    assert t.call("GET", "feat:a").value == b"1"


@pytest.mark.parametrize("mode", ["OPTIN", "OPTOUT", "BCAST"])
def test_client_list_flags_of_a_tracking_client(start_server, mode):
    def run(s):
        c = raw(s)
        c.call("CLIENT", "TRACKING", "ON", mode)
        info = c.call("CLIENT", "INFO").text().decode()
        return info.split(" flags=")[1].split(" ")[0]

    redis, rialto = both(start_server, run)
    assert rialto == redis
