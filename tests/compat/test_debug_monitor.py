"""DEBUG, MONITOR and CLIENT REPLY against Redis 7 and the server under test, byte for byte:
DEBUG's gate (`enable-debug-command`) and its errors, DEBUG PROTOCOL in RESP2 and RESP3,
DEBUG OBJECT's line, DEBUG DIGEST and DIGEST-VALUE; MONITOR's lines (format, quoting, sources,
redaction, transactions and scripts), monitor mode's rules and its output bound; CLIENT REPLY
ON, OFF and SKIP.
"""

import re
import socket
import time

import pytest

DEBUG_ON = ["--enable-debug-command", "yes"]


def both(start_server, fn, args=DEBUG_ON):
    """Runs `fn(server)` on a fresh Redis and a fresh server under test; returns both results."""
    return [fn(start_server(role, args=args)) for role in ("redis", "rialto")]


def raw_call(c, *args):
    c.send_command(list(args))
    return c.read_reply()[0]


def read_raw(c, timeout=5.0):
    c.sock.settimeout(timeout)
    try:
        return c.read_reply()[0]
    finally:
        c.sock.settimeout(c.timeout)


def nothing_pending(c, wait=0.3):
    """True if nothing arrives on `c` within `wait` seconds."""
    c.sock.settimeout(wait)
    try:
        return c.sock.recv(1, socket.MSG_PEEK) == b""
    except socket.timeout:
        return True
    finally:
        c.sock.settimeout(c.timeout)


# --- DEBUG -----------------------------------------------------------------------------------


def test_debug_is_refused_unless_enabled(start_server):
    def run(s):
        c = s.conn()
        return [
            raw_call(c, "DEBUG", "PROTOCOL", "string"),
            raw_call(c, "DEBUG"),
            raw_call(c, "CONFIG", "SET", "enable-debug-command", "yes"),
            raw_call(c, "CONFIG", "GET", "enable-debug-command"),
        ]

    redis, rialto = both(start_server, run, args=())
    assert rialto == redis
    assert redis[0].startswith(b"-ERR DEBUG command not allowed. If the enable-debug-command")


def test_debug_local_allows_loopback_clients(start_server):
    def run(s):
        return raw_call(s.conn(), "DEBUG", "PROTOCOL", "integer")

    redis, rialto = both(start_server, run, args=["--enable-debug-command", "local"])
    assert rialto == redis == b":12345\r\n"


@pytest.mark.parametrize("protocol", [2, 3], ids=lambda p: f"resp{p}")
def test_debug_protocol(start_server, protocol):
    kinds = "string integer double bignum null array set map attrib push verbatim true false nope"

    def run(s):
        c = s.conn()
        if protocol == 3:
            c.call("HELLO", "3")
        out = []
        for kind in kinds.split():
            out.append(raw_call(c, "DEBUG", "PROTOCOL", kind))
            if kind == "push" and protocol == 3:
                out.append(read_raw(c))  # the reply after the push
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_scripts_call_debug_once_deny_scripts_is_disabled(start_server, protocol):
    # Redis's own suite converts its protocol test values through scripts this way.
    kinds = "string integer double bignum null array set map verbatim true false"

    def run(s):
        c = s.conn()
        if protocol == 3:
            c.call("HELLO", "3")
        out = [raw_call(c, "EVAL", "return redis.call('debug', 'protocol', 'map')", "0")]
        out.append(raw_call(c, "DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"))
        for resp in (2, 3):
            for kind in kinds.split():
                body = f"redis.setresp({resp}); return redis.call('debug', 'protocol', '{kind}')"
                out.append(raw_call(c, "EVAL", body, "0"))
            # What a script returns converts by the protocol it ends in.
            out.append(raw_call(c, "EVAL", f"redis.setresp({resp}); return {{true, false}}", "0"))
        out.append(raw_call(c, "EVAL", "return {big_number='123\\r\\n123'}", "0"))
        out.append(raw_call(c, "EVAL", "return {ok='a\\nb'}", "0"))
        # Time stands still in a script, even across a sleep.
        body = "redis.call('set', 'k', 'v', 'px', 1) redis.call('debug', 'sleep', 0.01) " \
               "return redis.call('exists', 'k')"
        out.append(raw_call(c, "EVAL", body, "0"))
        out.append(raw_call(c, "DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"))
        out.append(raw_call(c, "EVAL", "return redis.call('debug', 'protocol', 'map')", "0"))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_debug_object_finds_a_key_that_expired_but_is_still_stored(start_server):
    def run(s):
        c = s.conn()
        out = [raw_call(c, "DEBUG", "SET-ACTIVE-EXPIRE", "0"), raw_call(c, "SET", "k", "v", "PX", "1")]
        time.sleep(0.05)
        line = raw_call(c, "DEBUG", "OBJECT", "k")
        out.append(isinstance(line, (bytes, str)) and "encoding:embstr" in str(line))
        out.append(raw_call(c, "EXISTS", "k"))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_debug_object_line(start_server):
    # Over 20 bytes, text LZF cannot shrink: Rialto reports the uncompressed length.
    text = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP"
    values = ["12", "-12345678901234", "10001", "hello", text[:44], text[:45], "012", "-0", "9999"]

    def run(s):
        c = s.conn()
        out = [raw_call(c, "DEBUG", "OBJECT", "missing")]
        for i, v in enumerate(values):
            c.call("SET", f"k{i}", v)
            line = raw_call(c, "DEBUG", "OBJECT", f"k{i}").decode()
            # The address and the LRU clock are the process's own.
            line = re.sub(r"at:0x[0-9a-f]+", "at:ADDR", line)
            out.append(re.sub(r"lru:\d+ lru_seconds_idle:\d+", "lru:L", line))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_debug_digest_is_redis_s_for_strings(start_server):
    def run(s):
        c = s.conn()
        out = [raw_call(c, "DEBUG", "DIGEST")]
        c.call("SET", "a", "1")
        c.call("SET", "b", "hello world")
        c.call("SET", "c", "x", "EX", "100")
        c.call("SELECT", "2")
        c.call("SET", "a", "other db")
        out.append(raw_call(c, "DEBUG", "DIGEST"))
        c.call("SELECT", "0")
        out.append(raw_call(c, "DEBUG", "DIGEST-VALUE", "a", "c", "missing"))
        out.append(raw_call(c, "DEBUG", "DIGEST-VALUE"))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_debug_subcommand_errors_and_simple_answers(start_server):
    def run(s):
        c = s.conn()
        out = [
            raw_call(c, "DEBUG", "JMAP"),
            raw_call(c, "DEBUG", "stringmatch-len"),
            raw_call(c, "DEBUG", "object"),
            raw_call(c, "DEBUG", "sleep"),
            raw_call(c, "DEBUG", "SLEEP", "0"),
            raw_call(c, "DEBUG", "SLEEP", "0.01x"),
            raw_call(c, "DEBUG", "LOG", "hello from the compat suite"),
            raw_call(c, "DEBUG", "CHANGE-REPL-ID"),
            raw_call(c, "DEBUG", "SET-ACTIVE-EXPIRE", "0"),
            raw_call(c, "DEBUG", "SET-ACTIVE-EXPIRE", "1"),
            raw_call(c, "DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"),
            raw_call(c, "DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "abc"),
            raw_call(c, "DEBUG", "REPLYBUFFER", "RESIZING", "0"),
            raw_call(c, "DEBUG", "REPLYBUFFER", "other", "0"),
        ]
        help_lines = c.call("DEBUG", "HELP").value
        out.append([help_lines[0], help_lines[-2], help_lines[-1]])
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_debug_sleep_blocks_only_its_connection(start_server):
    s = start_server("rialto", args=DEBUG_ON)
    sleeper, other = s.conn(), s.conn()
    sleeper.send_command(["DEBUG", "SLEEP", "1"])
    t = time.monotonic()
    assert other.call("PING").value == b"PONG"
    assert time.monotonic() - t < 0.5
    assert read_raw(sleeper) == b"+OK\r\n"


# --- MONITOR ---------------------------------------------------------------------------------

LINE = re.compile(rb"^\+\d+\.\d{6} \[(\d+) (127\.0\.0\.1:\d+|lua)\] (.*)\r\n$")


def monitor_lines(m, n):
    """The next `n` lines `m` receives, with the time and the client's port left out."""
    out = []
    for _ in range(n):
        raw = read_raw(m)
        got = LINE.match(raw)
        assert got, raw
        source = b"lua" if got.group(2) == b"lua" else b"client"
        out.append(b"[" + got.group(1) + b" " + source + b"] " + got.group(3))
    return out


def test_monitor_lines(start_server):
    def run(s):
        m, c = s.conn(), s.conn()
        out = [raw_call(m, "MONITOR")]
        c.call("SET", b'a\x00"\\\n\r\t\x07\x08\xff \xc3\xa9~', "12")
        c.call("select", "3")
        c.call("get", "k")
        c.call("auth", "not-real")
        c.call("AUTH", "user", "not-a-password")
        c.call("hello", "2", "AUTH", "u", "p", "SETNAME", "n")
        c.call("CLIENT", "LIST")  # administrative: never shown
        c.call("CONFIG", "GET", "port")
        c.call("CLIENT", "ID")
        c.call("EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v")
        c.call("EVAL", "return redis.call('nosuch')", "0")
        c.call("nosuch")  # refused before it runs: never shown
        c.call("GET")
        c.call("MULTI")
        c.call("SET", "foo", "bar")
        c.call("SELECT", "4")
        c.call("INCR", "n")
        c.call("EXEC")
        c.call("MULTI")
        c.call("SET")
        c.call("EXEC")
        c.call("EXEC")  # without MULTI: shown too
        c.call("PING")
        out += monitor_lines(m, 19)
        out.append(nothing_pending(m))
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_monitor_mode(start_server):
    def run(s):
        m, c = s.conn(), s.conn()
        out = [raw_call(m, "MONITOR")]
        m.send_command(["MONITOR"])  # again: no reply at all
        out.append(nothing_pending(m))
        flags = [line.split(b" flags=")[1].split(b" ")[0] for line in c.call("CLIENT", "LIST").value.splitlines()]
        out.append(sorted(flags))
        out.append(raw_call(m, "GET", "k"))
        out.append(raw_call(m, "SET", "k", "v"))
        out.append(raw_call(m, "PING"))
        out += monitor_lines(m, 1)  # its own PING, after the reply
        c.call("ECHO", "x")
        out += monitor_lines(m, 1)
        out.append(raw_call(m, "RESET"))
        c.call("ECHO", "y")
        out.append(nothing_pending(m))
        out.append(raw_call(m, "GET", "k"))
        t = s.conn()
        out += [raw_call(t, "MULTI"), raw_call(t, "MONITOR"), raw_call(t, "EXEC")]
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_a_monitor_that_does_not_read_is_disconnected(start_server):
    def run(s):
        c = s.conn()
        c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 256kb 0 0")
        m = socket.socket()
        m.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        m.connect((s.host, s.port))
        m.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
        time.sleep(0.2)
        value = "x" * 65536
        for i in range(400):
            c.call("SET", f"k{i}", value)
        for _ in range(50):
            flags = [line.split(b" flags=")[1].split(b" ")[0] for line in c.call("CLIENT", "LIST").value.splitlines()]
            if b"O" not in flags:
                break
            time.sleep(0.1)
        m.close()
        return flags

    redis, rialto = both(start_server, run)
    assert rialto == redis == [b"N"]


# --- CLIENT REPLY ----------------------------------------------------------------------------


def test_client_reply(start_server):
    def run(s):
        c = s.conn()
        for args in [
            ["CLIENT", "REPLY", "OFF"],
            ["PING", "a"],
            ["nosuch"],
            ["GET"],
            ["CLIENT", "REPLY", "SKIP"],
            ["CLIENT", "REPLY", "ON"],
            ["PING", "b"],
            ["CLIENT", "REPLY", "SKIP"],
            ["PING", "c"],
            ["PING", "d"],
            ["CLIENT", "REPLY", "SKIP"],
            ["GET"],
            ["SET", "k", "v"],
            ["CLIENT", "REPLY", "SKIP"],
            ["SET", "k", "w"],
            ["GET", "k"],
            ["CLIENT", "REPLY", "SKIP"],
            ["CLIENT", "REPLY", "SKIP"],
            ["PING", "e"],
            ["PING", "f"],
            ["CLIENT", "REPLY", "maybe"],
            ["CLIENT", "REPLY", "OFF"],
            ["RESET"],
            ["PING", "g"],
            ["CLIENT", "REPLY", "OFF"],
            ["QUIT"],
        ]:
            c.send_command(args)
        out = []
        while True:
            try:
                out.append(read_raw(c, timeout=2.0))
            except Exception:
                break
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis


def test_slow_commands_inside_exec_are_logged_not_exec(start_server):
    def run(s):
        c = s.client()
        c.config_set("slowlog-log-slower-than", 100000)
        c.slowlog_reset()
        p = c.pipeline(transaction=True)
        p.execute_command("DEBUG", "SLEEP", "0.2")
        p.execute()
        return [e["command"] for e in c.slowlog_get()]

    redis, rialto = both(start_server, run)
    assert rialto == redis == [b"DEBUG SLEEP 0.2"]


def test_info_replication_has_redis_s_fields(start_server):
    def run(s):
        c, out = s.conn(), []
        for _ in range(2):
            text = c.call("INFO", "replication").value.decode()
            out.append(dict(line.split(":", 1) for line in text.split("\r\n")[1:] if line))
            c.call("DEBUG", "CHANGE-REPL-ID")
        changed = out[0]["master_replid"] != out[1]["master_replid"]
        del out[0]["master_replid"], out[1]["master_replid"]
        return out, changed

    redis, rialto = both(start_server, run)
    assert rialto == redis


# --- LATENCY ---------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 3], ids=lambda p: f"resp{p}")
def test_latency_monitor(start_server, protocol):
    def run(s):
        c = s.conn()
        if protocol == 3:
            c.call("HELLO", "3")
        out = [
            raw_call(c, "CONFIG", "GET", "latency-monitor-threshold"),
            raw_call(c, "LATENCY", "LATEST"),
            raw_call(c, "LATENCY", "DEBUG"),
            raw_call(c, "LATENCY", "HELP", "x"),
            raw_call(c, "LATENCY", "GRAPH", "command"),
        ]
        c.call("DEBUG", "SLEEP", "0.15")  # threshold 0: nothing recorded
        out.append(raw_call(c, "LATENCY", "LATEST"))
        c.call("CONFIG", "SET", "latency-monitor-threshold", "100")
        c.call("DEBUG", "SLEEP", "0.15")
        latest = c.call("LATENCY", "LATEST").value
        assert len(latest) == 1
        event, t, latency, high = (x.value for x in latest[0].value)
        out.append([event, abs(t - time.time()) < 5, 150 <= latency < 400, high == latency])
        history = c.call("LATENCY", "HISTORY", "command").value
        out.append([(h.value[0].value, h.value[1].value) for h in history] == [(t, latency)])
        out += [
            raw_call(c, "LATENCY", "HISTORY", "nothing"),
            raw_call(c, "LATENCY", "RESET", "nothing", "other"),
            raw_call(c, "LATENCY", "GRAPH", "nothing"),
            c.call("LATENCY", "GRAPH", "command").text().split(b"\n")[0].startswith(b"command - high "),
            c.call("LATENCY", "DOCTOR").text().startswith(b"Dave, I have observed latency spikes"),
            raw_call(c, "LATENCY", "RESET"),
            raw_call(c, "LATENCY", "LATEST"),
            c.call("LATENCY", "DOCTOR").kind,
        ]
        return out

    redis, rialto = both(start_server, run)
    assert rialto == redis
