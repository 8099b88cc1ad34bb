"""Streams through redis-py, against Redis 7 and the server under test: blocking XREAD and
XREADGROUP woken by XADD from another connection (in the order they blocked), consumer-group
flows (read, history, ack, claim, autoclaim, consumer deletion), DUMP and RESTORE both ways
between the two servers, and (Rialto) streams and their groups surviving a restart and a
SIGKILL.
"""

import signal
import threading
import time

import pytest
from redis.exceptions import ResponseError


def blocked(r, n, timeout=5.0):
    """Waits until `n` clients are blocked (INFO clients)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if int(r.info("clients")["blocked_clients"]) == n:
            return
        time.sleep(0.01)
    raise AssertionError(f"{n} clients never blocked")


RAW = ("XREAD", "XREADGROUP", "XAUTOCLAIM", "XCLAIM", "XRANGE", "XPENDING")


def raw(client):
    """The client with the stream commands' replies left as the server sent them."""
    for name in RAW:
        client.set_response_callback(name, lambda r, **kw: r)
    return client


class Waiter(threading.Thread):
    """Runs one blocking command on its own connection and keeps its reply (or error)."""

    def __init__(self, server, protocol, *cmd):
        super().__init__(daemon=True)
        self.client = raw(server.client(protocol=protocol))
        self.cmd = cmd
        self.reply = None
        self.error = None

    def run(self):
        try:
            self.reply = self.client.execute_command(*self.cmd)
        except Exception as e:  # the reply under test may be an error
            self.error = e

    def result(self, timeout=5.0):
        self.join(timeout)
        assert not self.is_alive(), f"{self.cmd} still blocked"
        return self.reply


def field(d, name):
    """A field of a map reply, whichever way the client decoded its keys."""
    return d[name] if name in d else d[name.encode()]


def entries(reply, key):
    """The entries an XREAD/XREADGROUP reply holds for `key` (RESP2 list or RESP3 map)."""
    if isinstance(reply, dict):
        return [(i, list(f)) for i, f in reply[key]]
    for k, es in reply:
        if k == key:
            return [(i, list(f)) for i, f in es]
    raise AssertionError(f"{key} not in {reply}")


def test_xread_block_is_woken_by_xadd_from_another_connection(server, protocol):
    r = raw(server.client(protocol=protocol))
    r.xadd("s", {"old": "1"}, id="1-0")
    first = Waiter(server, protocol, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    first.start()
    blocked(r, 1)
    second = Waiter(server, protocol, "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "other", "s", "0", "$")
    second.start()
    blocked(r, 2)
    r.xadd("s", {"new": "2"}, id="2-0")
    # Every reader is served by the one entry, in the order they blocked; only its stream.
    assert entries(first.result(), b"s") == [(b"2-0", [b"new", b"2"])]
    assert entries(second.result(), b"s") == [(b"2-0", [b"new", b"2"])]
    assert int(r.info("clients")["blocked_clients"]) == 0


def test_xread_block_times_out_with_null_and_ignores_writes_of_other_kinds(server, protocol):
    r = raw(server.client(protocol=protocol))
    start = time.time()
    assert r.execute_command("XREAD", "BLOCK", "100", "STREAMS", "s", "$") is None
    assert time.time() - start >= 0.09
    w = Waiter(server, protocol, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    w.start()
    blocked(r, 1)
    r.set("s", "a string")
    time.sleep(0.1)
    assert w.is_alive()
    r.delete("s")
    r.xadd("s", {"f": "v"}, id="5-0")
    assert entries(w.result(), b"s") == [(b"5-0", [b"f", b"v"])]


def test_xreadgroup_block_serves_one_consumer_per_entry(server, protocol):
    r = server.client(protocol=protocol)
    r.xgroup_create("s", "g", id="$", mkstream=True)
    a = Waiter(server, protocol, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    a.start()
    blocked(r, 1)
    b = Waiter(server, protocol, "XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "STREAMS", "s", ">")
    b.start()
    blocked(r, 2)
    r.xadd("s", {"n": "1"}, id="1-0")
    assert entries(a.result(), b"s") == [(b"1-0", [b"n", b"1"])]
    # The group's cursor moved past the entry: bob still waits, for the next one.
    time.sleep(0.1)
    assert b.is_alive()
    r.xadd("s", {"n": "2"}, id="2-0")
    assert entries(b.result(), b"s") == [(b"2-0", [b"n", b"2"])]
    summary = r.xpending("s", "g")
    assert summary["pending"] == 2
    assert sorted((c["name"], int(c["pending"])) for c in summary["consumers"]) == [(b"alice", 1), (b"bob", 1)]


def test_blocked_xreadgroup_errors_when_its_stream_or_group_goes(server, protocol):
    r = server.client(protocol=protocol)
    r.xgroup_create("s", "g", id="$", mkstream=True)
    w = Waiter(server, protocol, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    w.start()
    blocked(r, 1)
    r.delete("s")
    w.result()
    assert w.error is not None and "no longer exists" in str(w.error)
    r.xgroup_create("s", "g", id="$", mkstream=True)
    w = Waiter(server, protocol, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    w.start()
    blocked(r, 1)
    r.xgroup_destroy("s", "g")
    w.result()
    assert w.error is not None and "consumer group this client was blocked on no longer exists" in str(w.error)


def test_blocking_reads_inside_multi_do_not_wait(r):
    r = raw(r)
    r.xgroup_create("s", "g", id="$", mkstream=True)
    p = r.pipeline(transaction=True)
    p.execute_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    p.execute_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    assert p.execute() == [None, None]


def test_scripts_refuse_block(r):
    with pytest.raises(ResponseError, match="not allowed with BLOCK option from scripts"):
        r.eval("return redis.call('XREAD', 'BLOCK', '0', 'STREAMS', 's', '$')", 0)
    r.xadd("s", {"f": "v"}, id="1-0")
    assert r.eval("return redis.call('XLEN', KEYS[1])", 1, "s") == 1


def test_a_consumer_group_flow(r):
    r = raw(r)
    for i in range(1, 6):
        r.xadd("s", {"n": str(i)}, id=f"{i}-0")
    r.xgroup_create("s", "g", id="0")
    got = r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")
    assert [i for i, _ in entries(got, b"s")] == [b"1-0", b"2-0", b"3-0"]
    got = r.execute_command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    assert [i for i, _ in entries(got, b"s")] == [b"4-0", b"5-0"]
    # History: alice's pending entries, each delivered again.
    got = r.execute_command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    assert [i for i, _ in entries(got, b"s")] == [b"1-0", b"2-0", b"3-0"]
    assert r.xack("s", "g", "1-0", "9-0") == 1
    pending = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert [(p[0], p[1], p[3]) for p in pending] == [
        (b"2-0", b"alice", 2), (b"3-0", b"alice", 2), (b"4-0", b"bob", 1), (b"5-0", b"bob", 1),
    ]
    # Claims: bob takes alice's entries; a deleted entry is dropped from the pending list.
    assert r.execute_command("XCLAIM", "s", "g", "bob", "0", "2-0", "JUSTID") == [b"2-0"]
    r.xdel("s", "3-0")
    cursor, claimed, deleted = r.execute_command("XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "10")
    assert cursor == b"0-0"
    assert [c[0] for c in claimed] == [b"2-0", b"4-0", b"5-0"]
    assert deleted == [b"3-0"]
    assert r.xgroup_delconsumer("s", "g", "carol") == 3
    assert r.execute_command("XPENDING", "s", "g")[0] == 0
    groups = r.xinfo_groups("s")
    shown = [tuple(field(g, f) for f in ("name", "consumers", "pending", "last-delivered-id")) for g in groups]
    assert shown == [(b"g", 2, 0, b"5-0")]
    with pytest.raises(ResponseError, match="NOGROUP"):
        r.execute_command("XREADGROUP", "GROUP", "nosuch", "c", "STREAMS", "s", ">")


def test_wrongtype_both_ways(r):
    r.set("str", "v")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        r.xadd("str", {"f": "v"})
    r.xadd("s", {"f": "v"}, id="1-0")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        r.get("s")
    assert r.type("s") == b"stream"
    assert r.object("encoding", "s") == b"stream"
    assert r.scan(0, _type="stream", count=1000)[1] == [b"s"]


@pytest.mark.parametrize("how", ["shutdown", "sigkill"])
def test_restart_keeps_streams_and_groups(target, start_server, how):
    if target == "redis":
        pytest.skip("the reference redis-server runs without persistence")
    s = start_server("rialto")
    c = raw(s.client())
    for i in range(1, 301):
        c.xadd("s", {"n": str(i), "pad": "x" * (i % 7)}, id=f"{i}-1")
    c.xdel("s", "10-1", "20-1")
    c.xgroup_create("s", "g", id="0")
    c.xreadgroup("g", "alice", {"s": ">"}, count=5)
    c.xack("s", "g", "2-1")
    c.expire("s", 3600)
    before = (c.xrange("s"), c.xinfo_groups("s"), c.execute_command("XPENDING", "s", "g", "-", "+", "100"), c.xlen("s"))
    if how == "shutdown":
        c.shutdown()
        assert s.wait_exit(15) == 0
    else:
        # Every acknowledged write is durable: a kill loses none of them.
        s.stop(signal.SIGKILL)
    c.close()
    s2 = start_server("rialto", data_dir=s.dir)
    c = raw(s2.client())
    after = (c.xrange("s"), c.xinfo_groups("s"), c.execute_command("XPENDING", "s", "g", "-", "+", "100"), c.xlen("s"))
    assert [p[:2] + p[3:] for p in after[2]] == [p[:2] + p[3:] for p in before[2]]
    assert (after[0], after[1], after[3]) == (before[0], before[1], before[3])
    assert 0 < c.ttl("s") <= 3600
    got = c.execute_command("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
    assert [i for i, _ in entries(got, b"s")] == [b"6-1", b"7-1"]
    c.close()


def test_dump_and_restore_move_streams_both_ways(pair):
    ref, tgt = raw(pair[0]), raw(pair[1])
    for c in (ref, tgt):
        c.config_set("stream-node-max-entries", 3)
        for i in range(1, 12):
            c.xadd("s", {"f": i, **({"g": i * 10} if i % 4 == 0 else {})}, id=f"{i}-0")
        c.xdel("s", "2-0", "9-0")
        c.xgroup_create("s", "g", id="0")
        c.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s", ">")
        c.execute_command("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
        c.xack("s", "g", "3-0")
        c.xgroup_create("s", "h", id="$", entries_read=9)
    moved = [(ref, tgt, ref.dump("s")), (tgt, ref, tgt.dump("s")), (tgt, tgt, tgt.dump("s"))]
    for src, dst, payload in moved:
        dst.restore("copy", 0, payload, replace=True)
        for what in (("XRANGE", "{k}", "-", "+"), ("XINFO", "GROUPS", "{k}"), ("XPENDING", "{k}", "g", "-", "+", "10")):
            got = dst.execute_command(*[a.format(k="copy") for a in what])
            want = src.execute_command(*[a.format(k="s") for a in what])
            if what[0] == "XPENDING":
                got, want = [p[:2] + p[3:] for p in got], [p[:2] + p[3:] for p in want]
            assert got == want, what
        info = dst.xinfo_stream("copy")
        shown = tuple(field(info, f) for f in ("length", "last-generated-id", "entries-added"))
        assert shown == (9, b"11-0", 11)
