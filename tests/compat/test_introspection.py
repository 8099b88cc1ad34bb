"""Introspection that Redis's own Tcl units (unit/latency-monitor, unit/info, unit/acl,
unit/auth) rely on, against Redis 7 and the server under test: LATENCY HISTOGRAM, INFO
latencystats and the latency-tracking parameters; the ACL log (ACL LOG, acllog-max-len); MEMORY;
maxmemory's OOM refusals; failed EVALSHA calls in the error counters; an unauthenticated client
that does not read its replies is disconnected.

Timings differ between the servers: latency figures are compared by their shape (which commands,
how many calls, cumulative counts that end at the calls), everything else byte for byte.
"""

import re
import socket
import time

import pytest


def both(start_server, fn, **kwargs):
    """Runs `fn(server)` on a fresh Redis and a fresh server under test; returns both results."""
    return [fn(start_server(role, **kwargs)) for role in ("redis", "rialto")]


def raw_call(c, *args):
    c.send_command(list(args))
    return c.read_reply()[0]


def value(reply):
    """A decoded reply as plain Python values (bytes, ints, lists, lists of pairs)."""
    v = reply.value
    if isinstance(v, list):
        return [tuple(value(x) for x in item) if isinstance(item, tuple) else value(item) for item in v]
    return v


def as_dict(reply):
    """A map reply (RESP3) or a flat array of pairs (RESP2) as a list of (key, value) pairs."""
    v = value(reply)
    if v and isinstance(v[0], tuple):
        return v
    return list(zip(v[0::2], v[1::2]))


def histogram_shape(reply):
    """LATENCY HISTOGRAM's reply: each command with its calls, and whether its levels are
    increasing microseconds with cumulative counts that grow and end at the calls."""
    out = []
    for name, entry in as_dict(reply):
        fields = dict(as_dict_value(entry))
        levels = as_dict_value(fields[b"histogram_usec"])
        micros = [m for m, _ in levels]
        counts = [n for _, n in levels]
        sane = (
            micros == sorted(set(micros))
            and counts == sorted(set(counts))
            and counts[-1] == fields[b"calls"]
        )
        out.append((name, fields[b"calls"], sane))
    return sorted(out)


def as_dict_value(v):
    if v and isinstance(v[0], tuple):
        return v
    return list(zip(v[0::2], v[1::2]))


# --- LATENCY HISTOGRAM and INFO latencystats ------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 3], ids=lambda p: f"resp{p}")
def test_latency_histogram(start_server, protocol):
    def run(s):
        c = s.conn()
        if protocol == 3:
            c.call("HELLO", "3")
        c.call("CONFIG", "RESETSTAT")
        out = [histogram_shape(c.call("LATENCY", "HISTOGRAM"))]
        c.call("SET", "a", "b")
        c.call("SET", "c", "d")
        c.call("GET", "a")
        c.call("CLIENT", "ID")
        c.call("CLIENT", "GETNAME")
        out += [
            histogram_shape(c.call("LATENCY", "HISTOGRAM")),
            histogram_shape(c.call("LATENCY", "HISTOGRAM", "client")),
            histogram_shape(c.call("LATENCY", "HISTOGRAM", "CLIENT|ID")),
            histogram_shape(c.call("LATENCY", "HISTOGRAM", "blabla", "set", "set", "nosuch|x")),
            raw_call(c, "LATENCY", "HISTOGRAM", "blabla"),
        ]
        # Recorded whatever latency-tracking says later; only new calls are not.
        c.call("CONFIG", "SET", "latency-tracking", "no")
        c.call("SET", "a", "b")
        out.append(histogram_shape(c.call("LATENCY", "HISTOGRAM", "set")))
        c.call("CONFIG", "RESETSTAT")
        out.append(histogram_shape(c.call("LATENCY", "HISTOGRAM")))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis
    assert [name for name, _, _ in redis[1]] == [
        b"client|getname", b"client|id", b"config|resetstat", b"get", b"latency|histogram", b"set",
    ]
    assert all(sane for _, _, sane in redis[1] + rialto[1])


def latencystats(c):
    """INFO latencystats as (section header, {command: [percentile names]}, every value parses)."""
    text = c.call("INFO", "latencystats").text().decode()
    lines = text.split("\r\n")
    stats = {}
    parses = True
    for line in lines[1:]:
        if not line:
            continue
        name, _, rest = line.partition(":")
        pairs = [p.split("=") for p in rest.split(",")] if rest else []
        stats[name] = [p for p, _ in pairs]
        parses &= all(re.fullmatch(r"\d+\.\d{3}", v) is not None for _, v in pairs)
    return lines[0], stats, parses


def test_latencystats_and_the_latency_tracking_parameters(start_server):
    def run(s):
        c = s.conn()
        # CONFIG GET's order is Redis's hash order.
        out = [sorted(as_dict(c.call("CONFIG", "GET", "latency-tracking*")))]
        c.call("CONFIG", "RESETSTAT")
        c.call("SET", "a", "b")
        out.append(latencystats(c))
        for v in ["0.0 50.0 100.0", "1e1 33.3333333 99.99999999", "0x10", ""]:
            out.append(raw_call(c, "CONFIG", "SET", "latency-tracking-info-percentiles", v))
            out.append(raw_call(c, "CONFIG", "GET", "latency-tracking-info-percentiles"))
            out.append(latencystats(c)[1].get("latency_percentiles_usec_set"))
        c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99")
        for bad in ["10.0 50.0 a", "  1.5   2  ", "1  2", "nan", "1e999", "10.0 50.0 101.0", "-1", "inf"]:
            out.append(raw_call(c, "CONFIG", "SET", "latency-tracking-info-percentiles", bad))
        out.append(raw_call(c, "CONFIG", "GET", "latency-tracking-info-percentiles"))
        out.append(raw_call(c, "CONFIG", "SET", "latency-tracking", "maybe"))
        c.call("CONFIG", "SET", "latency-tracking", "no")
        out.append(latencystats(c))
        c.call("CONFIG", "SET", "latency-tracking", "yes")
        c.call("CONFIG", "RESETSTAT")
        out.append(latencystats(c))
        out.append(b"# Latencystats" in c.call("INFO", "everything").text())
        out.append(b"# Latencystats" in c.call("INFO").text())
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


# --- ACL LOG ---------------------------------------------------------------------------------


def acl_log(c, *args):
    """ACL LOG's entries without their age and client line, which differ by nature; the age's
    and the client line's form are checked instead."""
    out = []
    for entry in value(c.call("ACL", "LOG", *args)):
        fields = dict(as_dict_value(entry))
        age = fields.pop(b"age-seconds")
        info = fields.pop(b"client-info")
        out.append((sorted(fields.items()), float(age) < 60, info.startswith(b"id=")))
    return out


def test_acl_log(start_server):
    def run(s):
        c = s.conn()
        setup = ["ACL", "SETUSER", "antirez", ">foo", "on", "+set", "~object:1234", "+eval", "+multi",
                 "+exec", "resetchannels", "+publish"]
        c.call(*setup)
        out = [raw_call(c, "ACL", "LOG"), raw_call(c, "CONFIG", "GET", "acllog-max-len")]
        u = s.conn()
        for args in [
            ["AUTH", "antirez", "foo"],
            ["GET", "foo"],
            ["GET", "foo"],
            ["SET", "x", "1"],
            ["PUBLISH", "ch", "m"],
            ["SET", "object:1234", "1"],
            ["EVAL", "return redis.call('incr','foo')", "0"],
            ["MULTI"],
            ["INCR", "foo"],
            ["EXEC"],
            ["AUTH", "antirez", "bad"],
            ["HELLO", "2", "AUTH", "antirez", "bad2"],
            ["AUTH", "nouser", "bad"],
            ["auth", "antirez", "foo"],
        ]:
            out.append(raw_call(u, *args)[:8])
        out.append(acl_log(c))
        out.append(acl_log(c, "100"))
        out += [acl_log(c, "2"), acl_log(c, "0"), acl_log(c, "-1")]
        out += [raw_call(c, "ACL", "LOG", "x"), raw_call(c, "ACL", "LOG", "1", "2")]
        # A command the user lost between MULTI and EXEC.
        c.call("ACL", "SETUSER", "antirez", "+incr")
        u.call("MULTI")
        u.call("INCR", "object:1234")
        c.call("ACL", "SETUSER", "antirez", "-incr")
        out.append(raw_call(u, "EXEC"))
        out.append(acl_log(c, "1"))
        out.append(raw_call(c, "ACL", "LOG", "RESET"))
        out.append(acl_log(c))
        c.call("CONFIG", "SET", "acllog-max-len", "5")
        for j in range(10):
            raw_call(u, "SET", f"obj:{j}", "1")
        out.append(len(acl_log(c, "100")))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


# --- MEMORY ----------------------------------------------------------------------------------


def test_memory(start_server):
    def run(s):
        c = s.conn()
        out = []
        for key, v in [("k", "1"), ("k", "12345"), ("k", "abc"), ("k", "x" * 44), ("k", "x" * 45),
                       ("k", "x" * 100), ("k", "x" * 1000), ("k" * 40, "v"), ("k", "-0"), ("k", "007")]:
            c.call("SET", key, v)
            out.append(raw_call(c, "MEMORY", "USAGE", key))
            out.append(raw_call(c, "MEMORY", "USAGE", key, "SAMPLES", "0"))
        for args in [["nokey"], ["k", "samples"], ["k", "samples", "-1"], ["k", "samples", "x"],
                     ["k", "foo", "1"], ["k", "samples", "5", "extra"]]:
            out.append(raw_call(c, "MEMORY", "USAGE", *args))
        stats = as_dict(c.call("MEMORY", "STATS"))
        out.append([k for k, _ in stats if not k.startswith(b"db.")])
        doctor = c.call("MEMORY", "DOCTOR")
        out.append((doctor.kind, doctor.text().endswith(b"\n"), b"Sam" in doctor.text()))
        out.append(raw_call(c, "MEMORY", "PURGE"))
        out.append(c.call("MEMORY", "MALLOC-STATS").kind in ("$", "="))
        out += [raw_call(c, "MEMORY", "NOSUCH"), raw_call(c, "MEMORY", "DOCTOR", "x"),
                raw_call(c, "MEMORY", "HELP", "x")]
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


# --- maxmemory, errors of EVALSHA ---------------------------------------------------------


def counters(c, *names):
    """The errorstats and commandstats lines of `names` (commands and error prefixes)."""
    text = c.call("INFO", "everything").text().decode()
    lines = [l for l in text.split("\r\n") if l.startswith(("errorstat_", "cmdstat_", "total_error_replies"))]
    keep = [l for l in lines if any(l.split(":")[0].endswith("_" + n) for n in names) or l.startswith("total_error")]
    # Times differ: keep the counts.
    return sorted(re.sub(r"usec=\d+,usec_per_call=[\d.]+,", "", l) for l in keep)


def test_maxmemory_refuses_what_may_grow_the_data(start_server):
    def run(s):
        c = s.conn()
        c.call("SET", "k", "v")
        c.call("CONFIG", "RESETSTAT")
        out = [raw_call(c, "CONFIG", "SET", "maxmemory", "1"),
               raw_call(c, "CONFIG", "GET", "maxmemory"),
               raw_call(c, "SET", "a", "b"),
               raw_call(c, "INCR", "n"),
               raw_call(c, "GET", "k"),
               raw_call(c, "DEL", "k"),
               raw_call(c, "MULTI"),
               raw_call(c, "GET", "k"),
               raw_call(c, "EXEC"),
               counters(c, "set", "incr", "get", "OOM", "EXECABORT", "exec")]
        c.call("CONFIG", "SET", "maxmemory", "0")
        out.append(raw_call(c, "SET", "a", "b"))
        # Every name is checked before any value.
        for args in [["maxmemory", "10000001", "maxmemory", "10000002"],
                     ["maxmemory", "10000001", "MAXMEMORY", "10000002"],
                     ["maxmemory", "x", "nosuch", "1"],
                     ["maxmemory", "x", "maxmemory", "1"],
                     ["maxmemory", "1", "databases", "1"]]:
            out.append(raw_call(c, "CONFIG", "SET", *args))
        out.append(raw_call(c, "CONFIG", "GET", "maxmemory"))
        out.append("maxmemory:0\r\n" in c.call("INFO", "memory").text().decode())
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_maxmemory_and_scripts(start_server):
    def run(s):
        c = s.conn()
        c.call("SET", "x", "123")
        c.call("FUNCTION", "LOAD", "#!lua name=lib\n"
               "redis.register_function{function_name='w', callback=function(k) return redis.call('set', k[1], 1) end}\n"
               "redis.register_function{function_name='oom', callback=function(k) return redis.call('set', k[1], 1) end, flags={'allow-oom'}}\n"
               "redis.register_function{function_name='ro', callback=function(k) return redis.call('get', k[1]) end, flags={'no-writes'}}")
        sha = c.call("SCRIPT", "LOAD", "#!lua\nreturn 1").value
        c.call("CONFIG", "SET", "maxmemory", "1")
        out = [raw_call(c, "EVAL", "redis.call('set','x',1) return 1", "1", "x"),
               raw_call(c, "EVAL", "return redis.call('get','x')", "1", "x"),
               raw_call(c, "EVAL", "local t = redis.pcall('set','x','y') return t['err']", "1", "x"),
               raw_call(c, "EVAL", "#!lua flags=\nreturn 1", "0"),
               raw_call(c, "EVALSHA", sha, "0"),
               raw_call(c, "EVAL", "#!lua flags=allow-oom\nredis.call('set','x',1) return 1", "1", "x"),
               raw_call(c, "EVAL", "#!lua flags=no-writes\nreturn redis.call('get','x')", "0"),
               raw_call(c, "EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('get','x')", "1", "x"),
               raw_call(c, "FCALL", "w", "1", "x"),
               raw_call(c, "FCALL", "oom", "1", "x"),
               raw_call(c, "FCALL_RO", "ro", "1", "x"),
               raw_call(c, "FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('f', function() return 1 end)")]
        c.call("CONFIG", "SET", "maxmemory", "0")
        out.append(raw_call(c, "FCALL", "w", "1", "x"))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_a_failed_evalsha_is_a_failed_call(start_server):
    def run(s):
        c = s.conn()
        c.call("CONFIG", "RESETSTAT")
        out = [raw_call(c, "EVALSHA", "NotValidShaSUM", "0"),
               raw_call(c, "EVALSHA", "a" * 40, "0"),
               raw_call(c, "EVAL", "return 1", "x"),
               counters(c, "evalsha", "eval", "NOSCRIPT", "ERR")]
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


# --- unauthenticated clients -------------------------------------------------------------


def test_an_unauthenticated_client_that_does_not_read_is_disconnected(start_server):
    def run(s):
        sock = socket.create_connection((s.host, s.port), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        request = b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n5\r\n" * 1000
        deadline = time.monotonic() + 30
        closed = False
        try:
            while time.monotonic() < deadline:
                sock.sendall(request)
        except OSError:
            closed = True
        finally:
            sock.close()
        # An authenticated client is not limited: it gets every reply.
        c = s.client()
        pipe = c.pipeline(transaction=False)
        for _ in range(20000):
            pipe.set("x", "5")
        return closed, all(pipe.execute())

    redis, rialto = both(start_server, run, password="secret")
    assert rialto == redis == (True, True)


def query_buffer(r, name):
    for line in r.execute_command("CLIENT", "LIST").decode().splitlines():
        if f"name={name} " in line:
            fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
            return int(fields["qbuf"]) + int(fields["qbuf-free"])
    return None


@pytest.mark.parametrize("role", ["redis", "rialto"])
def test_query_buffers_shrink_after_a_peak_and_go_when_idle(start_server, role):
    s = start_server(role)
    admin, c = s.client(), s.client()
    c.client_setname("qb")
    first = query_buffer(admin, "qb")
    assert 16384 <= first < 32768
    # One large request: the buffer grows to hold it, then shrinks back once requests are
    # small again (to their peak, never to nothing while the client is busy).
    c.set("x", "A" * 400_000)
    peak = query_buffer(admin, "qb")
    assert peak > 32768
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        c.set("x", "A" * 100)
        if 0 < query_buffer(admin, "qb") < peak:
            break
        time.sleep(0.01)
    assert 0 < query_buffer(admin, "qb") < peak
    # Idle for more than two seconds: released (Redis may keep an allocation of a few bytes
    # once the buffer was resized; Rialto frees it).
    released = (lambda n: n == 0) if role == "rialto" else (lambda n: n < 1024)
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and not released(query_buffer(admin, "qb")):
        time.sleep(0.1)
    assert released(query_buffer(admin, "qb"))
    # The next request allocates one again and is served.
    assert c.get("x") == b"A" * 100
