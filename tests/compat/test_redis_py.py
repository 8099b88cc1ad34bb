"""redis-py against the server: what a Python client sees must be what Redis 7 gives.

Most tests run four times: {redis, rialto} x {RESP2, RESP3}. Expected values are written out (every
one was checked against redis-server 7.0.15); where the exact value is subtle (errors, float
formatting, pipelines) the `pair` fixture runs the same calls against a reference Redis and the
server under test and compares.
"""

import datetime
import os
import random
import signal
import subprocess
import time

import pytest
import redis
from redis.exceptions import ResponseError

import servers
from resp import Reply

# ---------------------------------------------------------------------------------------------
# helpers


def err(client, *args):
    """The error message a command fails with (asserting that it does fail)."""
    with pytest.raises(ResponseError) as e:
        client.execute_command(*args)
    return str(e.value)


def outcome(client, *args):
    """A command's result as parsed by redis-py (no response callbacks), or ("error", message)."""
    try:
        return client.execute_command(*args)
    except ResponseError as e:
        return ("error", str(e))


def uncooked(client):
    """A client sharing `client`'s connections that skips redis-py's per-command result callbacks,
    so results are the parsed replies themselves (bytes, ints, lists, None, dicts for RESP3 maps)."""
    raw = redis.Redis(connection_pool=client.connection_pool)
    raw.response_callbacks.clear()
    return raw


def s(x):
    """bytes -> str (redis-py decodes some replies in RESP2 but not in RESP3)."""
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [s(i) for i in x]
    return x


def same(pair, calls):
    """Runs each call (a tuple of command args) on both servers, in order; asserts equal outcomes."""
    ref, tgt = (uncooked(c) for c in pair)
    for args in calls:
        want = outcome(ref, *args)
        got = outcome(tgt, *args)
        assert got == want, f"{args!r}: redis gives {want!r}, server under test gives {got!r}"


def wrong_args(cmd):
    return f"wrong number of arguments for '{cmd}' command"


NOT_INT = "value is not an integer or out of range"
SYNTAX = "syntax error"


def invalid_expire(cmd):
    return f"invalid expire time in '{cmd}' command"


# ---------------------------------------------------------------------------------------------
# connection


def test_ping_echo(server, r):
    assert r.ping() is True
    c = server.conn()
    assert c.call("PING") == Reply("+", b"PONG")
    assert c.call("PING", "hello") == Reply("$", b"hello")
    c.close()
    assert r.echo(b"") == b""
    everything = bytes(range(256))
    assert r.echo(everything) == everything
    assert err(r, "PING", "a", "b") == wrong_args("ping")
    assert err(r, "ECHO") == wrong_args("echo")
    assert err(r, "ECHO", "a", "b") == wrong_args("echo")


def test_hello_raw(server):
    c = server.conn()
    raw2 = c.call("HELLO", "2")
    assert raw2.kind == "*" and len(raw2.value) == 14
    fields = {raw2.value[i].value: raw2.value[i + 1] for i in range(0, 14, 2)}
    assert set(fields) == {b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"}
    assert fields[b"proto"] == Reply(":", 2)
    assert fields[b"id"].kind == ":" and fields[b"id"].value > 0
    assert fields[b"mode"].value == b"standalone" and fields[b"role"].value == b"master"
    assert fields[b"modules"] == Reply("*", [])
    raw3 = c.call("HELLO", "3")
    assert raw3.kind == "%"
    m = {k.value: v for k, v in raw3.value}
    assert m[b"proto"] == Reply(":", 3)
    assert m[b"id"] == fields[b"id"]
    # Now RESP3: nulls are '_'.
    assert c.call("GET", "missing") == Reply("_", None)
    assert c.call("HELLO", "4") == Reply("-", b"NOPROTO unsupported protocol version")
    assert c.call("HELLO", "abc") == Reply("-", b"ERR Protocol version is not an integer or out of range")
    assert c.call("HELLO", "3", "foo") == Reply("-", b"ERR Syntax error in HELLO option 'foo'")
    # HELLO with SETNAME sets the name; a failed HELLO leaves the protocol alone.
    assert c.call("HELLO", "2", "SETNAME", "named").kind == "*"
    assert c.call("CLIENT", "GETNAME") == Reply("$", b"named")
    assert c.call("GET", "missing") == Reply("$", None)
    c.close()


def test_client_name(r):
    assert r.client_getname() is None
    assert r.client_setname("worker-1") is True
    assert s(r.client_getname()) == "worker-1"
    assert err(r, "CLIENT", "SETNAME", "has space") == (
        "Client names cannot contain spaces, newlines or special characters."
    )
    assert s(r.client_getname()) == "worker-1"
    assert r.client_setname("") is True
    assert r.client_getname() is None
    assert err(r, "CLIENT", "SETNAME") == wrong_args("client|setname")
    assert err(r, "CLIENT", "NOSUCH").startswith("unknown subcommand 'NOSUCH'. Try CLIENT HELP.")
    assert err(r, "CLIENT") == wrong_args("client")


def test_client_id_list_info(r):
    r.client_setname("lister")
    cid = r.client_id()
    assert isinstance(cid, int) and cid > 0
    assert r.client_id() == cid  # same pooled connection
    mine = [c for c in r.client_list() if c["id"] == str(cid)]
    assert len(mine) == 1
    assert mine[0]["name"] == "lister" and mine[0]["db"] == "0"
    assert "addr" in mine[0] and mine[0]["addr"].startswith("127.0.0.1:")
    info = r.client_info()
    assert info["id"] == cid and info["name"] == "lister" and info["db"] == 0
    assert str(info["resp"]) == str(r.connection_pool.connection_kwargs.get("protocol") or 2)
    assert r.client_list(client_id=[str(cid)])[0]["id"] == str(cid)
    assert err(r, "CLIENT", "LIST", "TYPE", "foo") == "Unknown client type 'foo'"


def test_client_fd_is_the_servers_socket(server):
    """CLIENT LIST/INFO `fd` is the connection's descriptor in the server process, as in Redis:
    what an operator matches with `ls -l /proc/PID/fd`, `ss -p` or `lsof`."""
    a, b = server.client(), server.client()
    fds = []
    for c in (a, b):
        info = c.client_info()
        fd = int(info["fd"])
        assert fd > 2, info
        mine = [x for x in c.client_list() if x["id"] == str(info["id"])][0]
        assert int(mine["fd"]) == fd
        assert os.readlink(f"/proc/{server.proc.pid}/fd/{fd}").startswith("socket:")
        fds.append(fd)
    assert fds[0] != fds[1]
    a.close()
    b.close()


def test_client_kill(server, r):
    victim = server.conn()
    vid = victim.call("CLIENT", "ID").value
    addr = [c["addr"] for c in r.client_list() if c["id"] == str(vid)][0]
    assert r.client_kill_filter(_id=vid) == 1
    assert victim.wait_closed(), "CLIENT KILL ID did not close the connection"
    assert r.client_kill_filter(_id=vid) == 0
    victim2 = server.conn()
    vid2 = victim2.call("CLIENT", "ID").value
    addr2 = [c["addr"] for c in r.client_list() if c["id"] == str(vid2)][0]
    assert r.client_kill(addr2) is True  # old form: CLIENT KILL ip:port -> +OK
    assert victim2.wait_closed()
    assert err(r, "CLIENT", "KILL", addr) == "No such client"
    assert r.client_kill_filter(addr="1.2.3.4:5") == 0
    assert err(r, "CLIENT", "KILL", "ID", "abc") == "client-id should be greater than 0"
    assert err(r, "CLIENT", "KILL", "FOO", "bar") == SYNTAX
    assert r.ping()


def test_reset(server):
    c = server.conn()
    c.call("SET", "k0", "v0")
    assert c.call("SELECT", "3") == Reply("+", b"OK")
    c.call("SET", "k3", "v3")
    c.call("CLIENT", "SETNAME", "before")
    c.call("HELLO", "3")
    assert c.call("RESET") == Reply("+", b"RESET")
    assert c.call("GET", "missing") == Reply("$", None)  # back to RESP2
    assert c.call("CLIENT", "GETNAME") == Reply("$", None)
    assert c.call("GET", "k0") == Reply("$", b"v0")  # back to db 0
    assert c.call("GET", "k3") == Reply("$", None)
    assert c.call("RESET", "x") == Reply("-", b"ERR wrong number of arguments for 'reset' command")
    c.close()


def test_quit(server, r):
    c = server.conn()
    c.send_command(["QUIT"])
    assert c.read_reply()[0] == b"+OK\r\n"
    assert c.wait_closed(), "server kept the connection open after QUIT"
    c.close()
    # A pipeline ending in QUIT: everything before it is answered, then +OK, then the close.
    c = server.conn()
    c.send(b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n")
    assert [c.read_reply()[0] for _ in range(3)] == [b"+PONG\r\n", b"$1\r\nx\r\n", b"+OK\r\n"]
    assert c.wait_closed()
    c.close()
    assert r.quit() is True
    r.connection_pool.disconnect()  # (whether redis-py notices the close by itself is racy)
    assert r.ping() is True


# ---------------------------------------------------------------------------------------------
# server


def test_info(server, r):
    r.set("a", "1")
    r.set("b", "2", ex=1000)
    c2 = server.client(db=2, protocol=r.connection_pool.connection_kwargs.get("protocol", 2))
    c2.set("c", "3")
    everything = r.info()
    assert isinstance(everything, dict)
    for field in ("redis_version", "connected_clients", "tcp_port"):
        assert field in everything, f"INFO lacks {field}"
    assert everything["tcp_port"] == server.port
    assert str(everything["redis_version"]).startswith("7.")
    ks = r.info("keyspace")
    assert set(ks) == {"db0", "db2"}
    assert ks["db0"]["keys"] == 2 and ks["db0"]["expires"] == 1
    assert ks["db2"]["keys"] == 1 and ks["db2"]["expires"] == 0
    assert "connected_clients" in r.info("clients")
    assert r.info("clients")["connected_clients"] >= 2
    assert "redis_version" in r.info("server")
    assert r.info("nosuchsection") == {}
    multi = r.info("server", "keyspace")
    assert "redis_version" in multi and "db0" in multi
    assert "db0" in r.info("all") and "db0" in r.info("everything")
    c2.close()


def test_info_raw_sections(server, protocol):
    c = server.conn()
    if protocol == 3:
        c.call("HELLO", "3")
    rep = c.call("INFO", "keyspace")
    assert rep.kind == ("=" if protocol == 3 else "$")
    assert rep.text() == b"# Keyspace\r\n"  # no keys: header only
    c.call("SET", "k", "v")
    assert c.call("INFO", "keyspace").text() == b"# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n"
    text = c.call("INFO").text()
    for header in (b"# Server\r\n", b"# Clients\r\n", b"# Keyspace\r\n"):
        assert header in text
    c.close()


# Requests that end in errors of every kind Redis 7.0 counts: refused before running (unknown
# command or subcommand, arity, NOPERM, inside MULTI), failed while running (a bad value, a wrong
# password, inside EXEC, EXECABORT, a script's error), and a protocol error.
ERROR_SCRIPT = [
    ("SET", "s", "x"),
    ("INCR", "s"),
    ("NOSUCH", "a", "b"),
    ("GET",),
    ("CONFIG", "FOO"),
    ("AUTH", "nobody", "wrong"),
    ("SET", "k", "v", "EX", "0"),
    ("MULTI",), ("INCR", "s"), ("GET",), ("EXEC",),
    ("MULTI",), ("INCR", "s"), ("SET", "a", "b"), ("EXEC",),
    ("EVAL", "return redis.error_reply('MY bad')", "0"),
    ("EVAL", "return {err='X'}", "0"),
    ("GET", "s"),
]

# Commands whose commandstats line must match (no subcommands: Redis and Rialto name them alike).
COUNTED = ("get", "set", "incr", "exec", "multi", "auth", "eval")


def _stat_lines(conn, section):
    return conn.call("INFO", section).text().decode().split("\r\n")


def _error_counters(server):
    c = server.conn()
    stats = dict(l.split(":", 1) for l in _stat_lines(c, "stats") if ":" in l)
    errorstats = [l for l in _stat_lines(c, "errorstats") if l]
    cmdstats = {}
    for line in _stat_lines(c, "commandstats"):
        if not line.startswith("cmdstat_"):
            continue
        name, fields = line[len("cmdstat_"):].split(":", 1)
        if name in COUNTED:
            f = dict(kv.split("=") for kv in fields.split(","))
            cmdstats[name] = (f["calls"], f["rejected_calls"], f["failed_calls"])
    c.close()
    return stats["total_error_replies"], errorstats, cmdstats


def _make_errors(server):
    c = server.conn()
    assert c.call("CONFIG", "RESETSTAT").value == b"OK"
    assert c.call("ACL", "SETUSER", "bob", "on", "nopass", "+@all", "-get", "~*").value == b"OK"
    for args in ERROR_SCRIPT:
        c.call(*args)
    bob = server.conn()
    assert not bob.call("AUTH", "bob", "any").is_error
    assert bob.call("GET", "s").is_error  # NOPERM
    bob.close()
    raw = server.conn()
    raw.send(b"*1\r\n$abc\r\n")  # a protocol error
    assert raw.read_reply()[0].startswith(b"-ERR Protocol error")
    raw.close()
    c.close()


def test_error_counters_match_redis(start_server):
    """INFO stats total_error_replies, INFO errorstats and commandstats' rejected_calls and
    failed_calls after the same errors, against redis-server 7, then after CONFIG RESETSTAT."""
    ref, tgt = start_server("redis"), start_server("rialto")
    for s in (ref, tgt):
        _make_errors(s)
    want, got = _error_counters(ref), _error_counters(tgt)
    assert int(want[0]) > 10, want
    assert got[0] == want[0], f"total_error_replies: redis {want[0]}, server under test {got[0]}"
    assert got[1] == want[1], f"errorstats: redis {want[1]}, server under test {got[1]}"
    assert got[2] == want[2], f"commandstats (calls, rejected, failed): redis {want[2]}, server under test {got[2]}"
    for s in (ref, tgt):
        c = s.conn()
        c.call("CONFIG", "RESETSTAT")
        c.close()
        total, errorstats, cmdstats = _error_counters(s)
        assert (total, errorstats, cmdstats) == ("0", ["# Errorstats"], {}), s


def test_time(r):
    secs, usecs = r.time()
    assert abs(secs + usecs / 1e6 - time.time()) < 5
    assert 0 <= usecs < 1_000_000
    assert err(r, "TIME", "x") == wrong_args("time")


def test_command(server, r):
    n = r.command_count()
    assert isinstance(n, int) and n > 0
    assert s(r.command_getkeys("SET", "a", "b")) == ["a"]
    assert s(r.command_getkeys("MSET", "a", "1", "b", "2")) == ["a", "b"]
    assert s(r.command_getkeys("MGET", "a", "b", "c")) == ["a", "b", "c"]
    assert s(r.command_getkeys("RENAME", "a", "b")) == ["a", "b"]
    assert s(r.command_getkeys("GETEX", "a", "EX", "10")) == ["a"]
    assert err(r, "COMMAND", "GETKEYS", "PING", "x") == "The command has no key arguments"
    assert err(r, "COMMAND", "GETKEYS", "NOSUCH", "a") == "Invalid command specified"
    assert err(r, "COMMAND", "GETKEYS", "GET", "a", "b") == "Invalid number of arguments specified for command"
    assert err(r, "COMMAND", "GETKEYS", "GET") == wrong_args("command|getkeys")
    c = server.conn()
    rep = c.call("COMMAND", "INFO", "get", "SET", "nosuch", "mget")
    assert rep.kind == "*" and len(rep.value) == 4
    get, set_, nosuch, mget = rep.value
    assert nosuch.is_null
    # name, arity, flags, first key, last key, step
    for entry, name, arity, keys in ((get, b"get", 2, (1, 1, 1)), (set_, b"set", -3, (1, 1, 1)), (mget, b"mget", -2, (1, -1, 1))):
        assert entry.kind == "*"
        assert entry.value[0] == Reply("$", name)
        assert entry.value[1] == Reply(":", arity)
        assert tuple(x.value for x in entry.value[3:6]) == keys
    c.close()


def test_config_get(r):
    assert r.config_get("databases") == {"databases": "16"}
    assert r.config_get("nosuchparameter") == {}
    assert err(r, "CONFIG", "GET") == wrong_args("config|get")
    both = r.config_get("databases", "nosuchparameter")
    assert both == {"databases": "16"}


def test_slowlog_redacts_secrets(server, r):
    """AUTH, HELLO's AUTH, ACL SETUSER's rules and CONFIG SET of a password are logged with
    their secrets replaced, as Redis 7.0 does."""
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    r.config_set("requirepass", "s3cret")
    r.execute_command("AUTH", "s3cret")
    r.execute_command("ACL", "SETUSER", "bob", "on", ">bobpass", "+@all", "~*")
    r.execute_command("AUTH", "bob", "bobpass")
    hello = server.client(protocol=3, username="bob", password="bobpass")
    hello.ping()
    hello.close()
    r.execute_command("AUTH", "default", "s3cret")
    r.config_set("requirepass", "")
    r.config_set("slowlog-log-slower-than", 10000)
    logged = [[a.decode() if isinstance(a, bytes) else a for a in e["command"].split(b" ")]
              if isinstance(e["command"], bytes) else e["command"].split(" ")
              for e in r.slowlog_get(128)]
    text = repr(logged)
    for secret in ("s3cret", "bobpass"):
        assert secret not in text, text
    for want in (
        ["CONFIG", "SET", "requirepass", "(redacted)"],
        ["AUTH", "(redacted)"],
        ["ACL", "SETUSER", "(redacted)", "(redacted)", "(redacted)", "(redacted)", "(redacted)"],
        ["AUTH", "(redacted)", "(redacted)"],
        ["HELLO", "3", "AUTH", "(redacted)", "(redacted)"],
    ):
        assert want in logged, text


def test_slowlog(r):
    assert r.slowlog_reset() is True
    assert isinstance(r.slowlog_len(), int)
    entries = r.slowlog_get()
    assert isinstance(entries, list)
    for e in entries:
        assert {"id", "start_time", "duration", "command"} <= set(e)
    assert r.slowlog_get(1) is not None
    assert err(r, "SLOWLOG", "GET", "abc") == "count should be greater than or equal to -1"
    assert err(r, "SLOWLOG", "NOSUCH").startswith("unknown subcommand 'NOSUCH'. Try SLOWLOG HELP.")


def test_dbsize_and_info_keyspace_count_expired_keys_until_removed(start_server):
    """As Redis: a key whose time has passed counts in DBSIZE and INFO keyspace until the
    expiry pass removes it (with the pass off, nothing reads the expired keys here)."""

    def run(server):
        c = server.client()
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        c.set("live", 1)
        c.set("ttl", 1, ex=1000)
        for i in range(3):
            c.set(f"gone{i}", 1, px=20)
        time.sleep(0.3)
        seen = [c.dbsize(), keyspace(c)]
        c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        deadline = time.time() + 10
        while c.dbsize() > 2 and time.time() < deadline:
            time.sleep(0.05)
        seen += [c.dbsize(), keyspace(c)]
        c.execute_command("SELECT", 5)
        c.set("other", 1, ex=100)
        seen += [c.dbsize(), keyspace(c)]
        c.flushall()
        seen += [c.dbsize(), keyspace(c)]
        c.close()
        return seen

    def keyspace(c):
        # avg_ttl is Redis's estimate; Rialto keeps none (design.md 11.4).
        return {db: (v["keys"], v["expires"]) for db, v in c.info("keyspace").items()}

    redis, rialto = (run(start_server(role, args=["--enable-debug-command", "yes"]))
                     for role in ("redis", "rialto"))
    assert rialto == redis
    assert rialto[:2] == [5, {"db0": (5, 4)}]
    assert rialto[-2:] == [0, {}]


def test_dbsize_select_flush(server, protocol):
    dbs = [server.client(db=i, protocol=protocol) for i in (0, 1, 15)]
    for i, c in enumerate(dbs):
        for k in range(i + 1):
            c.set(f"key{k}", i)
    assert [c.dbsize() for c in dbs] == [1, 2, 3]
    assert dbs[1].get("key0") == b"1"
    assert dbs[1].flushdb() is True
    assert [c.dbsize() for c in dbs] == [1, 0, 3]
    assert dbs[0].flushdb(asynchronous=True) is True
    assert dbs[0].dbsize() == 0 and dbs[2].dbsize() == 3
    dbs[0].set("x", 1)
    assert dbs[0].flushall() is True
    assert [c.dbsize() for c in dbs] == [0, 0, 0]
    dbs[0].set("y", 1)
    assert dbs[0].execute_command("FLUSHALL", "SYNC") is True
    assert dbs[0].dbsize() == 0
    assert err(dbs[0], "SELECT", "16") == "DB index is out of range"
    assert err(dbs[0], "SELECT", "-1") == "DB index is out of range"
    assert err(dbs[0], "SELECT", "x") == NOT_INT
    assert err(dbs[0], "FLUSHDB", "x") == SYNTAX
    assert err(dbs[0], "FLUSHALL", "SYNC", "ASYNC") == SYNTAX
    assert err(dbs[0], "DBSIZE", "x") == wrong_args("dbsize")
    for c in dbs:
        c.close()


def test_select_is_per_connection(server):
    a, b = server.conn(), server.conn()
    assert a.call("SELECT", "5") == Reply("+", b"OK")
    a.call("SET", "k", "five")
    assert b.call("GET", "k") == Reply("$", None)
    b.call("SELECT", "5")
    assert b.call("GET", "k") == Reply("$", b"five")
    a.close()
    b.close()


# ---------------------------------------------------------------------------------------------
# strings


def test_set_get(r):
    assert r.get("k") is None
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.set("k", b"") is True
    assert r.get("k") == b""
    assert r.set("n", 42) is True
    assert r.get("n") == b"42"
    assert r.set("f", 1.5) is True
    assert r.get("f") == b"1.5"


def test_set_nx_xx_get(r):
    assert r.set("k", "a", xx=True) is None
    assert r.exists("k") == 0
    assert r.set("k", "a", nx=True) is True
    assert r.set("k", "b", nx=True) is None
    assert r.get("k") == b"a"
    assert r.set("k", "c", xx=True) is True
    assert r.set("k", "d", get=True) == b"c"
    assert r.set("new", "x", get=True) is None
    assert r.get("new") == b"x"
    # NX + GET is allowed since Redis 7.0: sets only if missing, returns the old value.
    assert r.set("k", "e", nx=True, get=True) == b"d"
    assert r.get("k") == b"d"
    assert r.set("nx-get", "e", nx=True, get=True) is None
    assert r.get("nx-get") == b"e"
    assert r.set("k", "f", xx=True, get=True) == b"d"
    assert r.set("missing", "f", xx=True, get=True) is None
    assert r.exists("missing") == 0
    assert err(r, "SET", "k", "v", "NX", "XX") == SYNTAX
    assert uncooked(r).execute_command("SET", "k", "g", "GET", "GET") == b"f"  # a repeated GET is fine


def test_set_expiry_options(r):
    now = int(time.time())
    assert r.set("ex", "v", ex=100) is True
    assert 99 <= r.ttl("ex") <= 100
    assert r.set("px", "v", px=100_000) is True
    assert 99_000 < r.pttl("px") <= 100_000
    assert r.set("exat", "v", exat=now + 1000) is True
    assert r.expiretime("exat") == now + 1000
    assert r.set("pxat", "v", pxat=(now + 1000) * 1000 + 123) is True
    assert r.pexpiretime("pxat") == (now + 1000) * 1000 + 123
    assert r.expiretime("pxat") == now + 1000  # rounded to the nearest second...
    r.set("pxat2", "v", pxat=(now + 1000) * 1000 + 600)
    assert r.expiretime("pxat2") == now + 1001  # ...up as well as down
    r.set("round", "v", px=1800)
    assert r.ttl("round") == 2  # TTL rounds too: 1.8 s left is 2
    # A plain SET clears the TTL; KEEPTTL keeps it.
    assert r.set("ex", "w") is True
    assert r.ttl("ex") == -1
    r.set("keep", "v", ex=100)
    assert r.set("keep", "w", keepttl=True) is True
    assert 99 <= r.ttl("keep") <= 100
    assert r.get("keep") == b"w"
    # An absolute time in the past: OK, and the key is gone.
    assert r.set("past", "v", exat=1) is True
    assert r.get("past") is None
    assert r.exists("past") == 0
    for opts in (("EX", "10", "PX", "10"), ("EX", "10", "KEEPTTL"), ("PX", "1", "EXAT", "1"), ("EX",), ("KEEPTTL", "PXAT", "5")):
        assert err(r, "SET", "k", "v", *opts) == SYNTAX, opts
    assert err(r, "SET", "k", "v", "EX", "0") == invalid_expire("set")
    assert err(r, "SET", "k", "v", "EX", "-5") == invalid_expire("set")
    assert err(r, "SET", "k", "v", "PX", "0") == invalid_expire("set")
    assert err(r, "SET", "k", "v", "EX", "9223372036854775807") == invalid_expire("set")
    assert err(r, "SET", "k", "v", "EX", "1.5") == NOT_INT
    assert err(r, "SET", "k", "v", "EX", "abc") == NOT_INT
    assert err(r, "SET", "k", "v", "FOO") == SYNTAX
    assert err(r, "SET", "k") == wrong_args("set")


def test_setnx_setex_psetex(r):
    assert r.setnx("k", "a") is True
    assert r.setnx("k", "b") is False
    assert r.get("k") == b"a"
    assert r.setex("k", 100, "c") is True
    assert r.get("k") == b"c" and 99 <= r.ttl("k") <= 100
    assert r.psetex("k", 100_000, "d") is True
    assert r.get("k") == b"d" and 99_000 < r.pttl("k") <= 100_000
    assert err(r, "SETEX", "k", "0", "v") == invalid_expire("setex")
    assert err(r, "SETEX", "k", "-1", "v") == invalid_expire("setex")
    assert err(r, "PSETEX", "k", "0", "v") == invalid_expire("psetex")
    assert err(r, "SETEX", "k", "10.0", "v") == NOT_INT
    assert err(r, "SETEX", "k", "10") == wrong_args("setex")
    assert r.get("k") == b"d"


def test_getset_getdel_getex(r):
    assert r.getset("k", "a") is None
    assert r.getset("k", "b") == b"a"
    r.expire("k", 100)
    assert r.getset("k", "c") == b"b"
    assert r.ttl("k") == -1  # GETSET clears the TTL
    assert r.getdel("k") == b"c"
    assert r.getdel("k") is None
    assert r.exists("k") == 0
    assert r.getex("missing") is None
    # On a missing key the expiry is not even parsed: nil, not an error.
    assert r.execute_command("GETEX", "missing", "EX", "-1") is None
    assert r.execute_command("GETEX", "missing", "PX", "abc") is None
    assert err(r, "GETEX", "missing", "EX", "10", "PERSIST") == SYNTAX  # but the syntax is checked
    r.set("k", "v")
    assert r.getex("k") == b"v" and r.ttl("k") == -1
    assert r.getex("k", ex=100) == b"v" and 99 <= r.ttl("k") <= 100
    assert r.getex("k", px=200_000) == b"v" and r.pttl("k") > 199_000
    now = int(time.time())
    assert r.getex("k", exat=now + 500) == b"v" and r.expiretime("k") == now + 500
    assert r.getex("k", pxat=(now + 600) * 1000) == b"v" and r.expiretime("k") == now + 600
    assert r.getex("k", persist=True) == b"v" and r.ttl("k") == -1
    assert r.getex("k", exat=1) == b"v"  # in the past: returns the value, deletes the key
    assert r.exists("k") == 0
    r.set("k", "v")
    assert err(r, "GETEX", "k", "EX", "10", "PERSIST") == SYNTAX
    assert err(r, "GETEX", "k", "KEEPTTL") == SYNTAX
    assert err(r, "GETEX", "k", "EX", "0") == invalid_expire("getex")
    assert err(r, "GETEX", "k", "PX", "-1") == invalid_expire("getex")
    assert err(r, "GETEX", "k", "EX") == SYNTAX
    assert err(r, "GETEX") == wrong_args("getex")


def test_mget_mset_msetnx(r):
    assert r.mset({"a": "1", "b": "2"}) is True
    assert r.mget("a", "missing", "b") == [b"1", None, b"2"]
    assert r.mget(["a"]) == [b"1"]
    assert r.msetnx({"c": "3", "a": "x"}) is False
    assert r.exists("c") == 0 and r.get("a") == b"1"
    assert r.msetnx({"c": "3", "d": "4"}) is True
    assert r.mget("c", "d") == [b"3", b"4"]
    assert r.execute_command("MSET", "dup", "1", "dup", "2") is True
    assert r.get("dup") == b"2"
    assert r.execute_command("MSETNX", "e", "1", "e", "2") is True
    assert r.get("e") == b"2"
    r.expire("a", 100)
    r.mset({"a": "new"})
    assert r.ttl("a") == -1
    assert err(r, "MSET", "a") == wrong_args("mset")
    assert err(r, "MSET", "a", "1", "b") == wrong_args("mset")
    assert err(r, "MSETNX", "a", "1", "b") == wrong_args("msetnx")
    assert err(r, "MGET") == wrong_args("mget")


def test_append_strlen(r):
    assert r.append("k", "hello") == 5
    assert r.append("k", " world") == 11
    assert r.get("k") == b"hello world"
    assert r.strlen("k") == 11
    assert r.strlen("missing") == 0
    assert r.append("empty", "") == 0
    assert r.exists("empty") == 1  # APPEND of nothing still creates the key
    r.set("n", 10)
    assert r.append("n", 5) == 3
    assert r.get("n") == b"105"
    assert r.incr("n") == 106
    r.set("t", "v", ex=100)
    r.append("t", "w")
    assert 99 <= r.ttl("t") <= 100  # APPEND keeps the TTL


def test_getrange_setrange(r):
    r.set("k", "hello")
    assert r.getrange("k", 0, -1) == b"hello"
    assert r.getrange("k", -3, -1) == b"llo"
    assert r.getrange("k", 1, 1) == b"e"
    assert r.getrange("k", 3, 1) == b""
    assert r.getrange("k", -100, 100) == b"hello"
    assert r.getrange("k", 10, 20) == b""
    assert r.getrange("k", -1, -5) == b""
    assert r.getrange("k", 0, 9223372036854775807) == b"hello"
    assert r.getrange("missing", 0, -1) == b""
    assert r.execute_command("SUBSTR", "k", 0, 1) == b"he"
    assert r.setrange("k", 1, "XY") == 5
    assert r.get("k") == b"hXYlo"
    assert r.setrange("k", 7, "!") == 8
    assert r.get("k") == b"hXYlo\x00\x00!"
    assert r.setrange("pad", 3, "x") == 4
    assert r.get("pad") == b"\x00\x00\x00x"
    assert r.setrange("missing", 0, "") == 0
    assert r.exists("missing") == 0  # an empty SETRANGE does not create the key
    assert r.setrange("k", 100, "") == 8  # nor grow an existing one
    assert err(r, "SETRANGE", "k", "-1", "x") == "offset is out of range"
    assert err(r, "SETRANGE", "k", "536870912", "x") == "string exceeds maximum allowed size (proto-max-bulk-len)"
    assert err(r, "SETRANGE", "k", "x", "x") == NOT_INT
    assert err(r, "GETRANGE", "k", "a", "1") == NOT_INT
    assert err(r, "GETRANGE", "k", "0") == wrong_args("getrange")


def test_incr_decr(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 20) == -10
    assert r.incrby("n", -5) == -15
    assert r.get("n") == b"-15"
    r.set("n", "9223372036854775806")
    assert r.incr("n") == 9223372036854775807
    assert err(r, "INCR", "n") == "increment or decrement would overflow"
    r.set("n", "-9223372036854775808")
    assert err(r, "DECR", "n") == "increment or decrement would overflow"
    assert err(r, "DECRBY", "n", "-9223372036854775808") == "decrement would overflow"
    r.set("z", 0)
    assert err(r, "DECRBY", "z", "-9223372036854775808") == "decrement would overflow"
    assert r.incrby("z", -9223372036854775808) == -9223372036854775808
    for bad in ("abc", "", " 1", "1 ", "01", "+1", "-0", "1.0", "0x10", "9223372036854775808"):
        r.set("bad", bad)
        assert err(r, "INCR", "bad") == NOT_INT, bad
        assert r.get("bad") == bad.encode()
    assert err(r, "INCRBY", "n", "abc") == NOT_INT
    assert err(r, "INCRBY", "n", "1.5") == NOT_INT
    assert err(r, "INCR", "a", "b") == wrong_args("incr")
    r.set("ttl", 5, ex=100)
    assert r.incr("ttl") == 6
    assert 99 <= r.ttl("ttl") <= 100  # INCR keeps the TTL


@pytest.mark.parametrize(
    "start, incr, want",
    [
        (None, "0.1", b"0.1"),
        ("0.1", "0.2", b"0.3"),  # long double arithmetic: not 0.30000000000000004
        ("10.5", "0.1", b"10.6"),
        ("5.0e3", "0", b"5000"),
        ("1.5e3", "1", b"1501"),
        (None, "1e-20", b"0"),  # printed with %.17Lf: tiny values become 0
        (None, "1e-17", b"0.00000000000000001"),
        (None, "-0.0", b"0"),
        (None, ".5", b"0.5"),
        (None, "5.", b"5"),
        (None, "+5", b"5"),
        (None, "0x10", b"16"),  # strtold accepts hex
        ("3", "1.5", b"4.5"),
        ("-1", "0.25", b"-0.75"),
        (None, "1e20", b"100000000000000000000"),
    ],
)
def test_incrbyfloat(r, start, incr, want):
    if start is not None:
        r.set("f", start)
    r.execute_command("INCRBYFLOAT", "f", incr)
    assert r.get("f") == want


def test_incrbyfloat_errors(r):
    r.set("s", "abc")
    assert err(r, "INCRBYFLOAT", "s", "1") == "value is not a valid float"
    for bad in ("abc", "", " 1", "1 ", "1e", "nan"):
        assert err(r, "INCRBYFLOAT", "f", bad) == "value is not a valid float", bad
    assert err(r, "INCRBYFLOAT", "f", "inf") == "increment would produce NaN or Infinity"
    assert r.exists("f") == 0
    r.set("ttl", "1.5", ex=100)
    assert r.incrbyfloat("ttl", 1) == 2.5
    assert 99 <= r.ttl("ttl") <= 100
    assert err(r, "INCRBYFLOAT", "f") == wrong_args("incrbyfloat")


def test_float_formatting_matches_redis(pair):
    """INCRBYFLOAT's results are long doubles printed with %.17Lf and trailing zeros cut."""
    calls = []
    rng = random.Random(7)
    incs = ["0.1", "0.2", "1.5", "-2.25", "1e3", "3.0e-5", "1e-17", "123456789.123456789", "-0.3", "7", "1e15", "0.7"]
    for i in range(200):
        calls.append(("INCRBYFLOAT", f"f{i % 5}", rng.choice(incs)))
        calls.append(("GET", f"f{i % 5}"))
    calls += [("SET", "big", "1e308"), ("INCRBYFLOAT", "big", "1e308"), ("GET", "big"), ("INCRBYFLOAT", "big", "1e308")]
    calls += [("SET", "x", "1.7976931348623157e308"), ("INCRBYFLOAT", "x", "1"), ("GET", "x")]
    same(pair, calls)


# ---------------------------------------------------------------------------------------------
# keys


def test_del_unlink_exists_type(r):
    r.mset({"a": 1, "b": 2, "c": 3})
    assert r.exists("a", "a", "missing", "b") == 3  # repeated keys count each time
    assert r.delete("a", "a", "missing") == 1
    assert r.unlink("b", "missing") == 1
    assert r.exists("a", "b", "c") == 1
    assert r.type("c") == b"string"
    assert r.type("missing") == b"none"
    assert err(r, "DEL") == wrong_args("del")
    assert err(r, "UNLINK") == wrong_args("unlink")
    assert err(r, "EXISTS") == wrong_args("exists")
    assert err(r, "TYPE") == wrong_args("type")


def test_expire_family(r):
    r.set("k", "v")
    assert r.ttl("k") == -1 and r.pttl("k") == -1
    assert r.expiretime("k") == -1 and r.pexpiretime("k") == -1
    assert r.ttl("missing") == -2 and r.pttl("missing") == -2
    assert r.expiretime("missing") == -2 and r.pexpiretime("missing") == -2
    assert r.expire("missing", 100) is False
    # No TTL counts as infinite: GT never applies, LT always does.
    assert r.expire("k", 100, gt=True) is False
    assert r.expire("k", 100, xx=True) is False
    assert r.expire("k", 100, lt=True) is True
    assert 99 <= r.ttl("k") <= 100
    assert r.expire("k", 200, lt=True) is False
    assert r.expire("k", 200, gt=True) is True
    assert r.expire("k", 300, nx=True) is False
    assert r.expire("k", 300, xx=True) is True
    assert 299 <= r.ttl("k") <= 300
    assert r.pexpire("k", 50_000) is True
    assert 49_000 < r.pttl("k") <= 50_000
    now = int(time.time())
    assert r.expireat("k", now + 1000) is True
    assert r.expiretime("k") == now + 1000
    assert r.pexpiretime("k") == (now + 1000) * 1000
    assert r.pexpireat("k", (now + 2000) * 1000 + 1) is True
    assert r.pexpiretime("k") == (now + 2000) * 1000 + 1
    assert r.expireat("k", now + 10, gt=True) is False
    assert r.pexpireat("k", (now + 10) * 1000, lt=True) is True
    assert r.persist("k") is True
    assert r.persist("k") is False
    assert r.persist("missing") is False
    assert r.ttl("k") == -1
    # Zero, negative or past expirations delete the key at once and return 1.
    for how in (("EXPIRE", "0"), ("EXPIRE", "-1"), ("PEXPIRE", "-1000"), ("EXPIREAT", "1"), ("PEXPIREAT", "0")):
        r.set("d", "v")
        assert r.execute_command(how[0], "d", how[1]) == 1, how
        assert r.exists("d") == 0, how
    assert r.execute_command("EXPIRE", "d", "0") == 0


def test_expire_errors(pair):
    ref, tgt = pair
    for c in (ref, tgt):
        c.set("k", "v")
    same(
        pair,
        [
            ("EXPIRE", "k", "100", "NX", "XX"),
            ("EXPIRE", "k", "100", "GT", "LT"),
            ("EXPIRE", "k", "100", "NX", "GT"),
            ("EXPIRE", "k", "100", "FOO"),
            ("EXPIRE", "k", "abc"),
            ("EXPIRE", "k", "abc", "FOO"),
            ("EXPIRE", "k", "1.5"),
            ("EXPIRE", "k", "9223372036854775807"),
            ("EXPIRE", "k", "-9223372036854775808"),
            ("PEXPIRE", "k", "9223372036854775807"),
            ("EXPIREAT", "k", "9223372036854775807"),
            ("EXPIRE", "k"),
            ("EXPIRE", "k", "100", "nx", "nx"),
            ("TTL",),
            ("PTTL", "a", "b"),
            ("PERSIST",),
            ("EXPIRETIME",),
            ("EXPIRE", "k", "200", "xX", "gt"),
            ("TTL", "k"),
        ],
    )


def test_expire_messages(r):
    r.set("k", "v")
    assert err(r, "EXPIRE", "k", "100", "NX", "XX") == "NX and XX, GT or LT options at the same time are not compatible"
    assert err(r, "EXPIRE", "k", "100", "GT", "LT") == "GT and LT options at the same time are not compatible"
    assert err(r, "EXPIRE", "k", "100", "FOO") == "Unsupported option FOO"
    assert err(r, "EXPIRE", "k", "abc") == NOT_INT
    assert err(r, "EXPIRE", "k", "9223372036854775807") == invalid_expire("expire")
    assert r.ttl("k") == -1


def test_rename(r):
    r.set("a", "1", ex=100)
    assert r.rename("a", "b") is True
    assert r.get("b") == b"1" and r.exists("a") == 0
    assert 99 <= r.ttl("b") <= 100  # the TTL moves with the value
    r.set("c", "2", ex=500)
    assert r.rename("b", "c") is True  # overwrites, and the target's TTL is replaced
    assert 99 <= r.ttl("c") <= 100
    assert r.rename("c", "c") is True  # same name: OK
    assert err(r, "RENAME", "missing", "x") == "no such key"
    assert err(r, "RENAME", "missing", "missing") == "no such key"
    r.set("d", "3")
    assert r.renamenx("c", "d") is False
    assert r.renamenx("c", "c") is False
    assert r.renamenx("c", "e") is True
    assert r.get("e") == b"1" and 99 <= r.ttl("e") <= 100
    assert err(r, "RENAMENX", "missing", "x") == "no such key"
    assert err(r, "RENAME", "a") == wrong_args("rename")


def test_keys_patterns(r):
    names = ["a1", "a2", "ab", "a*", "a\\", "b", "hello", "hallo", "hxllo", "heeeello", "", "h?llo"]
    for n in names:
        r.set(n, "v")

    def keys(pattern):
        return sorted(k.decode() for k in r.keys(pattern))

    assert keys("*") == sorted(names)
    assert keys("a?") == ["a*", "a1", "a2", "a\\", "ab"]
    assert keys("h?llo") == ["h?llo", "hallo", "hello", "hxllo"]
    assert keys("h*llo") == ["h?llo", "hallo", "heeeello", "hello", "hxllo"]
    assert keys("h[ae]llo") == ["hallo", "hello"]
    assert keys("h[^e]llo") == ["h?llo", "hallo", "hxllo"]
    assert keys("h[a-b]llo") == ["hallo"]
    assert keys("a[2-1]") == ["a1", "a2"]  # a reversed range still matches
    assert keys("a\\*") == ["a*"]
    assert keys("h\\?llo") == ["h?llo"]
    assert keys("a\\\\") == ["a\\"]
    assert keys("a[b") == ["ab"]  # an unclosed bracket still matches
    assert keys("nomatch*") == []
    assert keys("b") == ["b"]
    assert r.keys("") == [b""]


def test_scan_iter(r):
    names = {f"user:{i}".encode() for i in range(500)} | {f"other:{i}".encode() for i in range(100)}
    pipe = r.pipeline(transaction=False)
    for n in names:
        pipe.set(n, "v")
    pipe.execute()
    assert set(r.scan_iter()) == names
    users = list(r.scan_iter(match="user:*", count=7))
    assert set(users) == {n for n in names if n.startswith(b"user:")}
    assert set(r.scan_iter(match="user:1?", count=1000)) == {f"user:{i}".encode() for i in range(10, 20)}
    assert list(r.scan_iter(match="nomatch*")) == []
    assert set(r.scan_iter(_type="string", count=50)) == names
    # Manual iteration: the cursor is an integer, 0 at the end.
    seen, cursor, rounds = set(), 0, 0
    while True:
        cursor, batch = r.scan(cursor, count=100)
        seen.update(batch)
        rounds += 1
        if cursor == 0:
            break
        assert rounds < 10_000
    assert seen == names
    assert err(r, "SCAN", "abc") == "invalid cursor"
    assert err(r, "SCAN", "0", "COUNT", "0") == SYNTAX
    assert err(r, "SCAN", "0", "MATCH") == SYNTAX
    assert err(r, "SCAN", "0", "FOO", "bar") == SYNTAX


def test_scan_empty(r, server):
    assert r.scan(0) == (0, [])
    assert list(r.scan_iter()) == []
    # The cursor is parsed with strtoull: "-1" is 2^64-1, a valid cursor for Redis; 2^64 is
    # not. Rialto accepts only cursors it issued (docs/design.md §11.4).
    raw = uncooked(r)
    if server.role == "redis":
        assert raw.execute_command("SCAN", "-1") == [b"0", []]
        assert raw.execute_command("SCAN", "18446744073709551615") == [b"0", []]
    else:
        assert err(r, "SCAN", "-1") == "invalid cursor"
    assert err(r, "SCAN", "18446744073709551616") == "invalid cursor"


def test_randomkey(r):
    assert r.randomkey() is None
    r.mset({"a": 1, "b": 2, "c": 3})
    for _ in range(20):
        assert r.randomkey() in (b"a", b"b", b"c")
    assert err(r, "RANDOMKEY", "x") == wrong_args("randomkey")


# ---------------------------------------------------------------------------------------------
# pipelines


def _mixed_pipeline(pipe, seed, n=1000):
    rng = random.Random(seed)
    keys = [f"p{i}" for i in range(12)]
    for _ in range(n):
        k, k2 = rng.choice(keys), rng.choice(keys)
        op = rng.randrange(16)
        if op == 0:
            pipe.set(k, rng.randrange(100))
        elif op == 1:
            pipe.get(k)
        elif op == 2:
            pipe.incr(k)
        elif op == 3:
            pipe.incrby(k, rng.randrange(-50, 50))
        elif op == 4:
            pipe.append(k, rng.choice(["x", "1", ""]))
        elif op == 5:
            pipe.delete(k, k2)
        elif op == 6:
            pipe.exists(k, k2)
        elif op == 7:
            pipe.expire(k, 1000 + rng.randrange(1000))
        elif op == 8:
            pipe.persist(k)
        elif op == 9:
            pipe.mget(k, k2)
        elif op == 10:
            pipe.strlen(k)
        elif op == 11:
            pipe.setnx(k, "n")
        elif op == 12:
            pipe.getrange(k, rng.randrange(-3, 3), rng.randrange(-3, 3))
        elif op == 13:
            pipe.execute_command("INCRBYFLOAT", k, rng.choice(["0.5", "x", "1e2"]))
        elif op == 14:
            pipe.getset(k, "g")
        else:
            pipe.ttl(k)


def _normalise(results):
    out = []
    for x in results:
        if isinstance(x, Exception):
            out.append(("error", type(x).__name__, str(x)))
        elif isinstance(x, int) and not isinstance(x, bool) and x > 2:
            out.append(x)  # TTLs are within 1 second of each other: compared below
        else:
            out.append(x)
    return out


def test_pipeline_1000_mixed(pair):
    ref, tgt = pair
    results = []
    for c in (ref, tgt):
        pipe = c.pipeline(transaction=False)
        _mixed_pipeline(pipe, seed=1234)
        results.append(_normalise(pipe.execute(raise_on_error=False)))
    want, got = results
    assert len(got) == len(want) == 1000
    for i, (w, g) in enumerate(zip(want, got)):
        if isinstance(w, int) and isinstance(g, int) and not isinstance(w, bool) and w >= 1000 and g >= 1000:
            assert abs(w - g) <= 1, f"command {i}: {w} vs {g}"  # TTLs
        else:
            assert g == w, f"pipeline command {i}: redis {w!r}, server under test {g!r}"


def test_pipeline_1000_model(r):
    """1000 pipelined commands against a Python model of what they must return."""
    pipe = r.pipeline(transaction=False)
    model, want = {}, []
    rng = random.Random(99)
    for i in range(1000):
        k = f"m{rng.randrange(20)}"
        op = rng.randrange(4)
        if op == 0:
            v = str(rng.randrange(1000)).encode()
            pipe.set(k, v)
            model[k] = v
            want.append(True)
        elif op == 1:
            pipe.get(k)
            want.append(model.get(k))
        elif op == 2:
            pipe.incr(k)
            model[k] = str(int(model.get(k, b"0")) + 1).encode()
            want.append(int(model[k]))
        else:
            pipe.delete(k)
            want.append(1 if model.pop(k, None) is not None else 0)
    assert pipe.execute() == want
    assert r.dbsize() == len(model)


# ---------------------------------------------------------------------------------------------
# binary safety and sizes


def test_binary_keys_and_values(r):
    every = bytes(range(256))
    assert r.set(every, every[::-1]) is True
    assert r.get(every) == every[::-1]
    pipe = r.pipeline(transaction=False)
    for b in range(256):
        pipe.set(bytes([b]), bytes([255 - b]) * 3)
    pipe.execute()
    got = r.mget([bytes([b]) for b in range(256)])
    assert got == [bytes([255 - b]) * 3 for b in range(256)]
    assert set(r.keys("*")) == {bytes([b]) for b in range(256)} | {every}
    assert r.dbsize() == 257
    crlf = b"a\r\nb\r\n$3\r\n*1\r\n"
    r.set(crlf, crlf)
    assert r.get(crlf) == crlf
    assert r.append(crlf, b"\x00") == len(crlf) + 1
    assert r.rename(crlf, b"\x00") is True
    assert r.get(b"\x00") == crlf + b"\x00"


def test_empty_key_and_value(r):
    assert r.set("", "") is True
    assert r.get("") == b""
    assert r.exists("") == 1
    assert r.strlen("") == 0
    assert r.type("") == b"string"
    assert r.getrange("", 0, -1) == b""
    assert r.keys("*") == [b""]
    assert r.delete("") == 1
    assert r.get("") is None


def test_one_mib_value(r):
    value = random.Random(5).randbytes(1 << 20)
    assert r.set("big", value) is True
    assert r.get("big") == value
    assert r.strlen("big") == 1 << 20
    assert r.append("big", value) == 2 << 20
    assert r.getrange("big", (1 << 20) - 3, (1 << 20) + 2) == value[-3:] + value[:3]
    assert r.setrange("big", 1, b"XY") == 2 << 20
    assert r.mget("big", "missing")[0] == value[:1] + b"XY" + value[3:] + value
    assert r.getdel("big")[:3] == value[:1] + b"XY"


# ---------------------------------------------------------------------------------------------
# expiry really expires


def test_expiry_expires(server, r):
    r.set("px", "v", px=80)
    r.psetex("psetex", 80, "v")
    r.set("pexpire", "v")
    r.pexpire("pexpire", 80)
    r.set("getex", "v")
    r.getex("getex", px=80)
    r.set("pxat", "v", pxat=int(time.time() * 1000) + 80)
    r.set("forever", "v")
    r.set("later", "v", px=60_000)
    other = server.client(db=1, protocol=r.connection_pool.connection_kwargs.get("protocol", 2))
    other.set("px1", "v", px=80)
    gone = ["px", "psetex", "pexpire", "getex", "pxat"]
    assert r.exists(*gone) == 5
    time.sleep(0.3)
    assert r.exists(*gone) == 0
    for k in gone:
        assert r.get(k) is None, k
        assert r.ttl(k) == -2, k
    assert sorted(r.keys("*")) == [b"forever", b"later"]
    assert r.dbsize() == 2  # (the expired keys were all touched above, so Redis reclaimed them)
    assert set(r.scan_iter()) == {b"forever", b"later"}
    assert other.get("px1") is None
    assert other.incr("px1") == 1  # an expired key behaves as missing for writes too
    assert other.ttl("px1") == -1
    assert r.set("px", "new", nx=True) is True
    assert r.append("pexpire", "x") == 1
    other.close()


def test_expiry_does_not_leak_through_rename(r):
    r.set("a", "v", px=80)
    time.sleep(0.2)
    assert err(r, "RENAME", "a", "b") == "no such key"
    assert r.exists("b") == 0


# ---------------------------------------------------------------------------------------------
# restart: data and TTLs survive SHUTDOWN and SIGTERM (the server under test only)


def _fill_for_restart(c, c3):
    now = int(time.time())
    c.set("plain", "v1")
    c.set(b"bin\x00\xff", bytes(range(256)))
    c.set("ttl", "v2", ex=1000)
    c.set("pttl", "v3", pxat=(now + 2000) * 1000 + 7)
    c.set("short", "v4", px=400)  # expires while the server is down
    c.set("counter", 41)
    c.incr("counter")
    c.set("empty", "")
    c.set("deleted", "x")
    c.delete("deleted")
    c.set("persisted", "x", ex=100)
    c.persist("persisted")
    c3.set("in-db3", "v3", ex=3000)
    return now


def _check_after_restart(c, c3, now):
    assert c.get("plain") == b"v1"
    assert c.get(b"bin\x00\xff") == bytes(range(256))
    assert c.get("ttl") == b"v2"
    assert 900 <= c.ttl("ttl") <= 1000
    assert c.pexpiretime("pttl") == (now + 2000) * 1000 + 7
    assert c.get("short") is None and c.exists("short") == 0
    assert c.get("counter") == b"42"
    assert c.get("empty") == b""
    assert c.exists("deleted") == 0
    assert c.get("persisted") == b"x" and c.ttl("persisted") == -1
    assert c3.get("in-db3") == b"v3" and 2900 <= c3.ttl("in-db3") <= 3000
    assert sorted(c.keys("*")) == sorted([b"plain", b"bin\x00\xff", b"ttl", b"pttl", b"counter", b"empty", b"persisted"])


@pytest.mark.parametrize("how", ["shutdown", "sigterm"])
def test_restart_keeps_data_and_ttls(target, start_server, how):
    if target == "redis":
        pytest.skip("the reference redis-server runs without persistence")
    s = start_server("rialto")
    c, c3 = s.client(), s.client(db=3)
    now = _fill_for_restart(c, c3)
    if how == "shutdown":
        c.shutdown()  # redis-py treats the closed connection as success
        status = s.wait_exit(15)
    else:
        status = s.stop(signal.SIGTERM, timeout=15)
    assert status == 0, f"exit status {status} after {how}\n{s.describe()}"
    c.close()
    c3.close()
    time.sleep(0.5)  # "short" expires meanwhile
    s2 = start_server("rialto", data_dir=s.dir)
    c, c3 = s2.client(), s2.client(db=3)
    _check_after_restart(c, c3, now)
    # And the restarted server takes writes that survive another restart.
    c.set("after", "restart")
    c.shutdown()
    assert s2.wait_exit(15) == 0
    s3 = start_server("rialto", data_dir=s.dir)
    c = s3.client()
    assert c.get("after") == b"restart" and c.get("plain") == b"v1"
    c.close()


# ---------------------------------------------------------------------------------------------
# the same answers as Redis for a catalogue of edge cases


EDGE_CASES = [
    ("SET", "s", "hello"),
    ("SET", "i", "10"),
    ("GET", "s", "x"),
    ("SET", "s", "v", "NX", "XX"),
    ("SET", "s", "v", "EX", "10", "EX", "20"),
    ("SET", "s", "v", "ex", "10", "px", "20"),
    ("SET", "s", "v", "KEEPTTL", "KEEPTTL"),
    ("SET", "s", "v", "GET", "NX"),
    ("SET", "s", "hello", "xx", "get"),
    ("GETEX", "s", "PERSIST", "PERSIST"),
    ("GETEX", "s", "EX", "10", "EX", "20"),
    ("GETEX", "s", "PX", "abc"),
    ("GETRANGE", "s", "0", "-1", "x"),
    ("SETRANGE", "s", "0"),
    ("INCR", "s"),
    ("INCRBY", "i", "9223372036854775807"),
    ("INCRBY", "i", "-9223372036854775808"),
    ("DECRBY", "i", "-9223372036854775808"),
    ("INCRBYFLOAT", "i", "1.5"),
    ("INCRBYFLOAT", "i", "1e400"),
    ("GET", "i"),
    ("INCRBYFLOAT", "i", "-1e400"),
    ("INCR", "i"),
    ("APPEND", "s"),
    ("STRLEN", "s", "x"),
    ("MGET", "s", "i", "nope"),
    ("MSETNX", "s", "1"),
    ("RENAME", "s", "s"),
    ("RENAMENX", "s", "s"),
    ("EXISTS", "s", "s", "s"),
    ("EXPIRE", "s", "100", "lt"),
    ("EXPIRE", "s", "50", "gt"),
    ("PEXPIRE", "s", "100000", "GT"),
    ("EXPIRETIME", "nope"),
    ("PERSIST", "s", "x"),
    ("KEYS", "*", "x"),
    ("SCAN",),
    ("SCAN", "0", "COUNT", "-1"),
    ("SCAN", "0", "COUNT", "abc"),
    ("SCAN", "0", "TYPE"),
    ("SCAN", "18446744073709551616"),
    ("SELECT",),
    ("SELECT", "1.5"),
    ("FLUSHDB", "ASYNC", "x"),
    ("PING", "a", "b"),
    ("ECHO",),
    ("nosuchcommand", "a", "b"),
    ("NoSuch",),
    ("CLIENT", "SETNAME", "a\nb"),
    ("CLIENT", "SETNAME", "ok-name"),
    ("CLIENT", "GETNAME"),
    ("CLIENT", "GETNAME", "x"),
    ("CLIENT", "KILL", "ID", "0"),
    ("CLIENT", "KILL", "ID", "999999"),
    ("CLIENT", "LIST", "ID", "abc"),
    ("CLIENT", "LIST", "TYPE", "master"),
    ("CLIENT", "NOSUCH"),
    ("CONFIG", "GET", "databases"),
    ("CONFIG", "NOSUCH"),
    ("COMMAND", "GETKEYS", "SET", "k"),
    ("COMMAND", "GETKEYS", "MSET", "a", "1", "b"),
    ("COMMAND", "GETKEYS", "EXPIRE", "k", "10", "NX"),
    ("COMMAND", "NOSUCH"),
    ("SLOWLOG", "GET", "-2"),
    ("SLOWLOG", "RESET", "x"),
    ("HELLO", "3", "AUTH", "default"),
    ("HELLO", "1"),
    ("TIME", "x"),
    ("DBSIZE",),
]


def test_edge_cases_match_redis(pair):
    same(pair, EDGE_CASES)


def test_role_of_a_standalone_server_is_a_master_without_replicas(r):
    role = r.execute_command("ROLE")
    assert role[0] == b"master" and isinstance(role[1], int) and role[2] == []


def test_client_list_shows_the_query_buffer_and_the_subcommand(r):
    # Redis's own introspection test: the buffer holds the request being run (26 bytes of
    # RESP for CLIENT INFO or CLIENT LIST), and the command is named with its subcommand.
    info = r.client_info()
    assert str(info["qbuf"]) == "26", info
    assert int(info["qbuf-free"]) >= 0
    assert info["cmd"] == "client|info", info
    me = r.client_id()
    mine = [c for c in r.client_list() if str(c["id"]) == str(me)]
    assert len(mine) == 1 and mine[0]["cmd"] == "client|list" and str(mine[0]["qbuf"]) == "26", mine


def test_feature_store_hashes_written_and_read_in_pipelines(r):
    # One hash per entity, 20 features, written with HSET plus EXPIRE in pipelines and read
    # back with pipelined HMGET of a few features, as a feature store serving a model does.
    entities, features = 300, [f"f{i:02d}" for i in range(20)]
    rng = random.Random(7)
    truth = {}
    for start in range(0, entities, 50):
        pipe = r.pipeline(transaction=False)
        for e in range(start, start + 50):
            row = {f: f"{rng.random():.6f}" for f in features}
            # Some rows with a long value: their hashes keep fields as keys of their own.
            if e % 7 == 0:
                row["f19"] = "x" * 100
            truth[e] = row
            pipe.hset(f"user:{e}", mapping=row)
            pipe.expire(f"user:{e}", 3600)
        assert pipe.execute() == [20, True] * 50
    wanted = ["f03", "f07", "f11", "f19", "missing"]
    pipe = r.pipeline(transaction=False)
    for e in range(entities):
        pipe.hmget(f"user:{e}", wanted)
    for e, got in enumerate(pipe.execute()):
        want = [truth[e].get(f) for f in wanted]
        assert [s(v) for v in got] == want, e
    assert r.hlen("user:0") == 20 and 3500 < r.ttl("user:0") <= 3600
    assert r.object("encoding", "user:1") == b"listpack"
    assert r.object("encoding", "user:0") == b"hashtable"
    assert r.dbsize() == entities
    # An update of one feature keeps the others and the TTL.
    r.hset("user:5", "f03", "updated")
    assert s(r.hmget("user:5", "f03", "f04")) == ["updated", truth[5]["f04"]]
    assert r.ttl("user:5") > 3500
    assert r.delete(*[f"user:{e}" for e in range(entities)]) == entities
    assert r.dbsize() == 0


def expected_feature(i, j):
    """Feature j of entity i of `rialto gen-table` (rialto_push_input::FeatureTable), as a
    hash push renders it: computed here, independently of Rialto's rendering."""
    kind = j % 6
    if kind == 0:
        return str(31 * i + j - 500)
    if kind == 1:
        v = i / 4 + j
        return str(int(v)) if v == int(v) else repr(v)  # a whole float has no ".0"
    if kind == 2:
        return f"s{i}-{j}"
    if kind == 3:
        return "true" if (i + j) % 2 == 0 else "false"
    if kind == 4:
        ms = 1_700_000_000_000 + 1000 * i + j
        t = datetime.datetime.fromtimestamp(ms // 1000, tz=datetime.timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"
    v = 100 * i + j
    return f"{v // 100}.{v % 100:02d}"


def rialto_cli(*args):
    return subprocess.run([str(servers.rialto_bin()), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_feature_store_table_pushed_as_hashes_then_rolled_back(start_server, tmp_path):
    # The batch side of the feature store above: a Parquet table of 20 typed feature columns
    # loaded with `rialto push --layout hash`, each entity a hash read with pipelined HMGET as
    # HSET-made ones are; a second push, a rollback to the first, and a push refused at a null
    # under --nulls error, the version serving throughout.
    srv = start_server("rialto")
    if not srv.is_rialto:
        pytest.skip("pushes are Rialto's (COMPAT_TARGET=redis)")
    r = srv.client()
    addr = f"{srv.host}:{srv.port}"
    entities, features = 2000, [f"f{j:02d}" for j in range(20)]
    first, second, nulls = tmp_path / "v1.parquet", tmp_path / "v2.parquet", tmp_path / "n.parquet"
    for path, null_every in ((first, 0), (second, 3), (nulls, 5)):
        out = rialto_cli("gen-table", "--rows", entities, "--columns", 20, "--null-every", null_every,
                         "--out", path)
        assert out.returncode == 0, out.stderr
    assert rialto_cli("store", "create", "feat", "--server", addr).returncode == 0

    def push(path, *extra):
        return rialto_cli("push", "--server", addr, "--store", "feat", "--input", path, "--key-field", "id",
                          "--layout", "hash", "-q", *extra)

    out = push(first)
    assert out.returncode == 0, out.stderr
    assert "records: 2000\n" in out.stdout, out.stdout

    wanted = ["f00", "f01", "f02", "f03", "f04", "f05", "f13", "f19", "missing"]

    def check(version_nulls):
        pipe = r.pipeline(transaction=False)
        for e in range(entities):
            pipe.hmget(f"feat:{e:012d}", wanted)
        for e, got in enumerate(pipe.execute()):
            want = []
            for name in wanted:
                j = int(name[1:]) if name != "missing" else None
                null = j is None or (version_nulls and (e + j) % version_nulls == 0)
                want.append(None if null else expected_feature(e, j))
            assert [s(v) for v in got] == want, e

    check(0)
    assert r.hlen("feat:000000000000") == 20
    assert r.type("feat:000000000001") == b"hash"
    assert r.object("encoding", "feat:000000000001") == b"listpack"
    got = {k.decode(): v.decode() for k, v in r.hgetall("feat:000000000001").items()}
    assert got == {f: expected_feature(1, int(f[1:])) for f in features}

    # Nulls are skipped by default: the second version's hashes lack those fields.
    out = push(second)
    assert out.returncode == 0, out.stderr
    check(3)
    assert r.hlen("feat:000000000000") == 20 - len([j for j in range(20) if j % 3 == 0])

    assert r.execute_command("STORE", "ROLLBACK", "feat")
    check(0)

    # A null under --nulls error: one line naming the row and the field, exit 2, nothing swapped.
    out = push(nulls, "--nulls", "error")
    assert out.returncode == 2
    errors = [line for line in out.stderr.splitlines() if not line.startswith("push: ")]
    assert errors == [f'error: {nulls}: row 1: field "f00" is null (--nulls error)'], out.stderr
    assert r.execute_command("PUSH", "LIST") == []
    check(0)
