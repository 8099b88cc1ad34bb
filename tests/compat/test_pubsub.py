"""Pub/sub against Redis 7 and the server under test: the exact bytes of subscribe flows in RESP2
and RESP3, message order from several publishers, RESP2's subscribed mode, PUBSUB
introspection, redis-py's pubsub() API, and a slow subscriber cut off at its output limit.
"""

import socket
import threading
import time

import pytest


def raw(server, protocol):
    c = server.conn()
    if protocol == 3:
        c.call("HELLO", "3")
    return c


def exchange(c, script):
    """Sends each command of `script` (a command, and how many replies it gets) and returns the
    raw bytes of every reply, in order."""
    out = []
    for cmd, n in script:
        c.send_command(list(cmd))
        for _ in range(n):
            out.append(c.read_reply()[0])
    return out


FLOWS = [
    # (subscriber's commands, replies each gets)
    [(("SUBSCRIBE", "a", "b", "a"), 3), (("PING",), 1), (("PING", "hi"), 1), (("UNSUBSCRIBE", "a"), 1),
     (("UNSUBSCRIBE", "b", "nope"), 2), (("UNSUBSCRIBE",), 1)],
    [(("PSUBSCRIBE", "n.*", "x?"), 2), (("PUNSUBSCRIBE", "x?"), 1), (("PUNSUBSCRIBE",), 1),
     (("PUNSUBSCRIBE",), 1)],
    [(("UNSUBSCRIBE",), 1), (("PUNSUBSCRIBE", "p"), 1), (("SUNSUBSCRIBE",), 1)],
    [(("SUBSCRIBE", "c"), 1), (("PSUBSCRIBE", "c*"), 1), (("SSUBSCRIBE", "s"), 1), (("UNSUBSCRIBE",), 1),
     (("PUNSUBSCRIBE",), 1), (("SUNSUBSCRIBE", "s"), 1)],
    # Subscribed, RESP2 refuses everything else (RESP3 runs it).
    [(("SUBSCRIBE", "c"), 1), (("GET", "k"), 1), (("ECHO", "e"), 1), (("SET", "k", "v"), 1),
     (("UNSUBSCRIBE",), 1), (("GET", "k"), 1)],
    # Errors of the family itself.
    [(("SUBSCRIBE",), 1), (("PSUBSCRIBE",), 1), (("PUBLISH", "c"), 1), (("PUBSUB", "NOSUCH"), 1),
     (("PUBSUB", "CHANNELS", "a", "b"), 1), (("PUBSUB", "NUMPAT", "x"), 1)],
]


@pytest.mark.parametrize("flow", range(len(FLOWS)))
def test_subscribe_flows_are_byte_for_byte_redis(start_server, protocol, flow):
    ref, tgt = start_server("redis"), start_server("rialto")
    got = [exchange(raw(s, protocol), FLOWS[flow]) for s in (ref, tgt)]
    assert got[1] == got[0]


def test_messages_reach_subscribers_in_publish_order_byte_for_byte(start_server, protocol):
    results = []
    for role in ("redis", "rialto"):
        s = start_server(role)
        sub = raw(s, protocol)
        exchange(sub, [(("SUBSCRIBE", "news"), 1), (("PSUBSCRIBE", "ne*"), 1)])
        pub = raw(s, protocol)
        counts = [pub.call("PUBLISH", "news", f"m{i}").value for i in range(5)]
        counts.append(pub.call("PUBLISH", "nothing-here", "x").value)
        counts.append(pub.call("PUBLISH", "nest", "y").value)
        msgs = [sub.read_reply()[0] for _ in range(11)]
        results.append((counts, msgs))
    assert results[1] == results[0]
    assert results[0][0] == [2, 2, 2, 2, 2, 0, 1]


def test_several_publishers_each_keep_their_order(server, protocol):
    sub = raw(server, protocol)
    exchange(sub, [(("SUBSCRIBE", "ch"), 1)])
    n, publishers = 300, 3

    def publish(p):
        c = server.conn()
        for i in range(n):
            c.call("PUBLISH", "ch", f"{p}:{i}")
        c.close()

    threads = [threading.Thread(target=publish, args=(p,)) for p in range(publishers)]
    for t in threads:
        t.start()
    seen = {p: [] for p in range(publishers)}
    for _ in range(n * publishers):
        _, r = sub.read_reply()
        kind, _, payload = [x.value for x in r.value]
        assert kind == b"message"
        p, i = payload.decode().split(":")
        seen[int(p)].append(int(i))
    for t in threads:
        t.join()
    assert all(v == list(range(n)) for v in seen.values())


def test_resp3_pushes_interleave_with_replies(server):
    c = raw(server, 3)
    exchange(c, [(("SUBSCRIBE", "me"), 1)])
    # A publish to itself: the message push comes before the PUBLISH reply, as in Redis.
    got = exchange(c, [(("PUBLISH", "me", "hello"), 2), (("SET", "k", "v"), 1), (("GET", "k"), 1)])
    assert got == [b">3\r\n$7\r\nmessage\r\n$2\r\nme\r\n$5\r\nhello\r\n", b":1\r\n", b"+OK\r\n", b"$1\r\nv\r\n"]


def test_pubsub_introspection_matches_redis(start_server, protocol):
    results = []
    for role in ("redis", "rialto"):
        s = start_server(role)
        a, b = raw(s, protocol), raw(s, protocol)
        exchange(a, [(("SUBSCRIBE", "x1", "x2", "y"), 3), (("PSUBSCRIBE", "x*", "z"), 2)])
        exchange(b, [(("SUBSCRIBE", "x1"), 1), (("PSUBSCRIBE", "x*"), 1), (("SSUBSCRIBE", "sh"), 1)])
        q = s.client(protocol=protocol)
        results.append(
            (
                sorted(q.execute_command("PUBSUB", "CHANNELS")),
                sorted(q.execute_command("PUBSUB", "CHANNELS", "x*")),
                q.execute_command("PUBSUB", "NUMSUB", "x1", "y", "none"),
                q.execute_command("PUBSUB", "NUMPAT"),
                q.execute_command("PUBSUB", "SHARDCHANNELS"),
                q.execute_command("PUBSUB", "SHARDNUMSUB", "sh", "x1"),
                q.publish("x1", "m"),
                q.execute_command("SPUBLISH", "sh", "m"),
                {k: v for k, v in q.info("stats").items() if k.startswith("pubsub")},
                sorted(
                    (c["sub"], c["psub"], c["ssub"], c["flags"])
                    for c in q.client_list()
                ),
            )
        )
        a.close()
        b.close()
        # Closed connections are unsubscribed.
        deadline = time.time() + 5
        while q.execute_command("PUBSUB", "NUMPAT") and time.time() < deadline:
            time.sleep(0.02)
        assert q.execute_command("PUBSUB", "NUMPAT") == 0
        assert q.execute_command("PUBSUB", "CHANNELS") == []
    assert results[1] == results[0]


def test_reset_unsubscribes(server, protocol):
    c = raw(server, protocol)
    exchange(c, [(("SUBSCRIBE", "a"), 1), (("PSUBSCRIBE", "b*"), 1)])
    assert c.call("RESET").value == b"RESET"
    q = server.client()
    assert q.publish("a", "x") == 0 and q.publish("bb", "x") == 0
    assert c.call("GET", "k").is_null


def test_redis_py_pubsub_api(r):
    p = r.pubsub()
    p.subscribe("chan")
    p.psubscribe("pat.*")
    got = []
    deadline = time.time() + 5
    while len(got) < 2 and time.time() < deadline:
        m = p.get_message(timeout=0.5)
        if m:
            got.append((m["type"], m["channel"], m["data"]))
    assert got == [("subscribe", b"chan", 1), ("psubscribe", b"pat.*", 2)]
    assert r.publish("chan", "hello") == 1
    assert r.publish("pat.x", "world") == 1
    msgs = []
    while len(msgs) < 2 and time.time() < deadline:
        m = p.get_message(timeout=0.5)
        if m:
            msgs.append((m["type"], m.get("pattern"), m["channel"], m["data"]))
    assert msgs == [("message", None, b"chan", b"hello"), ("pmessage", b"pat.*", b"pat.x", b"world")]
    p.unsubscribe()
    p.punsubscribe()
    p.close()
    assert r.execute_command("PUBSUB", "NUMSUB", "chan") == [b"chan", 0]


def test_redis_py_pubsub_thread_with_handler(r):
    got = []
    done = threading.Event()

    def handler(m):
        got.append(m["data"])
        if len(got) == 3:
            done.set()

    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe(**{"events": handler})
    worker = p.run_in_thread(sleep_time=0.01, daemon=True)
    deadline = time.time() + 5
    while r.execute_command("PUBSUB", "NUMSUB", "events")[1] == 0 and time.time() < deadline:
        time.sleep(0.01)
    for i in range(3):
        r.publish("events", f"e{i}")
    assert done.wait(5)
    worker.stop()
    worker.join(5)
    p.close()
    assert got == [b"e0", b"e1", b"e2"]


def test_a_slow_subscriber_is_disconnected_at_the_pubsub_limit(server):
    """A subscriber that never reads: once its pending messages pass the pubsub hard limit it
    is disconnected (both servers), and on Rialto the memory held for it stays bounded."""
    q = server.client()
    q.config_set("client-output-buffer-limit", "pubsub 256kb 128kb 60")
    sub = server.conn()
    exchange(sub, [(("SUBSCRIBE", "flood"), 1)])
    sub.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    payload = "x" * 16384
    delivered = 0
    deadline = time.time() + 20
    while time.time() < deadline:
        n = q.publish("flood", payload)
        delivered += n
        if n == 0:
            break
    # Redis and Rialto both drop the subscriber; its subscription goes with it.
    assert q.execute_command("PUBSUB", "NUMSUB", "flood") == [b"flood", 0]
    # What was accepted for it is bounded by the limit plus what the kernel's socket buffers
    # took (a few MB), not by how long the publisher kept going.
    assert n == 0
    assert delivered * len(payload) < 16 * 1024 * 1024
    sub.close()


def test_subscribed_clients_are_exempt_from_timeout(server):
    q = server.client()
    q.config_set("timeout", "1")
    sub = server.conn()
    exchange(sub, [(("SUBSCRIBE", "t"), 1)])
    idle = server.conn()
    time.sleep(2.5)
    assert q.publish("t", "still here") == 1
    _, r = sub.read_reply()
    assert r.value[2].value == b"still here"
    assert idle.wait_closed(3)


def test_client_output_buffer_limit_config_is_redis(start_server):
    script = [
        ("CONFIG", "GET", "client-output-buffer-limit"),
        ("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 2kb 3"),
        ("CONFIG", "GET", "client-output-buffer-limit"),
        ("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 2kb"),
        ("CONFIG", "SET", "client-output-buffer-limit", "foo 1 2 3"),
        ("CONFIG", "SET", "client-output-buffer-limit", "pubsub 32mb 8mb 60"),
        ("CONFIG", "GET", "client-output-buffer-limit"),
    ]
    got = []
    for role in ("redis", "rialto"):
        c = start_server(role).conn()
        got.append([c.send_command(list(cmd)) or c.read_reply()[0] for cmd in script])
    assert got[1] == got[0]


def test_acl_channels_refuse_and_a_revoked_subscriber_is_disconnected(start_server, protocol):
    got = []
    for role in ("redis", "rialto"):
        s = start_server(role)
        admin = s.conn()
        admin.call("ACL", "SETUSER", "u", "on", "nopass", "+@all", "~*", "resetchannels", "&news.*", "&lit*")
        c = raw(s, protocol)
        c.call("AUTH", "u", "x")
        out = exchange(
            c,
            [
                (("SUBSCRIBE", "other"), 1),
                (("PUBLISH", "other", "m"), 1),
                (("PSUBSCRIBE", "news.a*"), 1),
                (("SUBSCRIBE", "news.1"), 1),
                (("PSUBSCRIBE", "lit*"), 1),
            ],
        )
        # Still allowed: stays. Revoked: Redis 7.0 disconnects the subscriber.
        admin.call("ACL", "SETUSER", "u", "&more")
        out.append(admin.call("PUBLISH", "news.1", "x").value)
        out.append(c.read_reply()[0])
        admin.call("ACL", "SETUSER", "u", "resetchannels", "&news.*")
        out.append(c.wait_closed(3))
        got.append(out)
    assert got[1] == got[0]
    assert got[0][-1] is True


def test_subscribe_inside_multi(server, protocol):
    """Rialto keeps EXEC's element count (one element per queued command); with one channel in
    RESP2 that is Redis's byte for byte (see design §11.10 for several channels)."""
    c = raw(server, protocol)
    got = exchange(c, [(("MULTI",), 1), (("SUBSCRIBE", "m"), 1), (("EXEC",), 1)])
    if protocol == 2 or server.is_rialto:
        # Redis in RESP3 sends the confirmation as a push inside EXEC's array instead.
        assert got[2] == b"*1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nm\r\n:1\r\n"
    q = server.client()
    assert q.publish("m", "after") == 1
