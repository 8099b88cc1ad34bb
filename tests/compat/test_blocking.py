"""Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP) through
redis-py, against Redis 7 and the server under test: who is served first, what a writer's next
command sees, timeouts, CLIENT UNBLOCK, MULTI, and a waiter that disconnects.
"""

import socket
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


class Waiter(threading.Thread):
    """Runs one blocking command on its own connection and keeps its reply (or error)."""

    def __init__(self, server, protocol, *cmd):
        super().__init__(daemon=True)
        self.client = server.client(protocol=protocol)
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


def test_an_element_there_is_popped_at_once(r):
    r.rpush("l", "a", "b")
    assert list(r.blpop(["none", "l"], timeout=1)) == [b"l", b"a"]
    assert list(r.execute_command("BRPOP", "l", "0")) == [b"l", b"b"]


def test_waiters_are_served_oldest_first_before_the_writers_next_command(server, protocol):
    r = server.client(protocol=protocol)
    first = Waiter(server, protocol, "BLPOP", "q", "0")
    first.start()
    blocked(r, 1)
    second = Waiter(server, protocol, "BLPOP", "other", "q", "0")
    second.start()
    blocked(r, 2)
    assert r.rpush("q", "a", "b", "c") == 3
    # Both were served within the push: the writer's next command sees what is left.
    assert r.lrange("q", 0, -1) == [b"c"]
    assert list(first.result()) == [b"q", b"a"]
    assert list(second.result()) == [b"q", b"b"]
    assert int(r.info("clients")["blocked_clients"]) == 0


def test_a_timeout_replies_null_and_a_float_timeout_works(r):
    start = time.time()
    assert r.execute_command("BLPOP", "empty", "0.1") is None
    assert r.execute_command("BLMOVE", "empty", "dst", "LEFT", "RIGHT", "0.05") is None
    assert time.time() - start >= 0.14
    for bad, msg in (("-1", "timeout is negative"), ("x", "timeout is not a float")):
        with pytest.raises(ResponseError, match=msg):
            r.execute_command("BLPOP", "empty", bad)


def test_a_wrong_type_fails_at_once(r):
    r.set("s", "v")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        r.execute_command("BLPOP", "s", "0")


def test_blmove_chains_to_the_next_waiter(server, protocol):
    r = server.client(protocol=protocol)
    mover = Waiter(server, protocol, "BLMOVE", "a", "b", "RIGHT", "LEFT", "0")
    mover.start()
    blocked(r, 1)
    popper = Waiter(server, protocol, "BRPOP", "b", "0")
    popper.start()
    blocked(r, 2)
    r.lpush("a", "x")
    assert mover.result() == b"x"
    assert list(popper.result()) == [b"b", b"x"]
    assert r.exists("a", "b") == 0


def test_sorted_set_pops_wait_too(server, protocol):
    r = server.client(protocol=protocol)
    w = Waiter(server, protocol, "BZPOPMIN", "z", "0")
    w.start()
    blocked(r, 1)
    r.zadd("z", {"m": 1.5, "n": 3})
    got = w.result()
    assert got[0] == b"z" and got[1] == b"m" and float(got[2]) == 1.5
    mp = Waiter(server, protocol, "BZMPOP", "0", "2", "y", "z", "MAX", "COUNT", "5")
    mp.start()
    assert mp.result()[0] == b"z"
    assert r.exists("z") == 0


def test_blmpop_takes_count_elements(r):
    r.rpush("l", 1, 2, 3)
    got = r.execute_command("BLMPOP", "1", "2", "x", "l", "RIGHT", "COUNT", "2")
    assert got[0] == b"l" and list(got[1]) == [b"3", b"2"]


def test_client_unblock_ends_a_wait_as_a_timeout_or_an_error(server, protocol):
    r = server.client(protocol=protocol)
    w = Waiter(server, protocol, "BLPOP", "k", "0")
    wid = w.client.client_id()
    w.start()
    blocked(r, 1)
    assert r.execute_command("CLIENT", "UNBLOCK", wid) == 1
    assert w.result() is None
    w = Waiter(server, protocol, "BRPOP", "k", "0")
    wid = w.client.client_id()
    w.start()
    blocked(r, 1)
    assert r.execute_command("CLIENT", "UNBLOCK", wid, "ERROR") == 1
    w.result()
    assert "UNBLOCKED" in str(w.error)
    assert r.execute_command("CLIENT", "UNBLOCK", wid) == 0


def test_inside_multi_a_blocking_pop_does_not_wait(r):
    pipe = r.pipeline()
    pipe.execute_command("BLPOP", "nothing", "0")
    pipe.rpush("l", "a")
    pipe.execute_command("BLPOP", "l", "0")
    out = pipe.execute()
    assert out[0] is None and out[1] == 1 and list(out[2]) == [b"l", b"a"]


def test_a_waiter_that_disconnects_is_not_served(server, protocol):
    r = server.client(protocol=protocol)
    s = socket.create_connection((server.host, server.port))
    s.sendall(b"*3\r\n$5\r\nBLPOP\r\n$4\r\ngone\r\n$1\r\n0\r\n")
    blocked(r, 1)
    s.close()
    blocked(r, 0)
    r.rpush("gone", "kept")
    assert r.lrange("gone", 0, -1) == [b"kept"]


def test_commands_pipelined_after_a_blocked_pop_wait_for_it(server, protocol):
    r = server.client(protocol=protocol)
    s = socket.create_connection((server.host, server.port))
    s.sendall(b"*3\r\n$5\r\nBLPOP\r\n$1\r\np\r\n$1\r\n0\r\n*2\r\n$4\r\nLLEN\r\n$1\r\np\r\n")
    blocked(r, 1)
    r.rpush("p", "a", "b")
    s.settimeout(5)
    data = b""
    while data.count(b"\r\n") < 6:
        data += s.recv(4096)
    s.close()
    # The pop's reply, then LLEN run after it: one element left.
    assert data.endswith(b":1\r\n") and b"$1\r\na\r\n" in data


def test_replies_before_a_blocked_pop_leave_while_it_waits(server, protocol):
    r = server.client(protocol=protocol)
    s = socket.create_connection((server.host, server.port))
    s.settimeout(5)
    s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*3\r\n$5\r\nBLPOP\r\n$1\r\nw\r\n$1\r\n0\r\n")
    assert s.recv(64) == b"+OK\r\n"
    blocked(r, 1)
    r.rpush("w", "x")
    data = b""
    while data.count(b"\r\n") < 5:
        data += s.recv(4096)
    s.close()
    assert data == b"*2\r\n$1\r\nw\r\n$1\r\nx\r\n"
