"""MULTI/EXEC/DISCARD/WATCH/UNWATCH through redis-py, against Redis 7 and the server under test.

Transactional pipelines are redis-py's default (`r.pipeline()`), and `r.transaction()` is its
optimistic-locking loop: what they see must be what Redis gives, including the errors that make
a library raise and the WATCH races a second connection causes.
"""

import threading
import time

import pytest
from redis.exceptions import ExecAbortError, ResponseError, WatchError
from resp import Reply



def replies(server, protocol, script):
    """Sends each command of `script` on one fresh raw connection; returns the parsed replies."""
    c = server.conn()
    if protocol == 3:
        c.call("HELLO", "3")
    out = [c.call(*cmd) for cmd in script]
    c.close()
    return out


def test_transactional_pipeline_returns_each_reply(r):
    pipe = r.pipeline()  # transaction=True by default: MULTI ... EXEC
    pipe.set("a", 1).incr("a").get("a").delete("a").exists("a")
    assert pipe.execute() == [True, 2, b"2", 1, 0]


def test_a_refused_command_aborts_the_whole_transaction(r):
    r.set("keep", "old")
    pipe = r.pipeline()
    pipe.set("keep", "new")
    pipe.execute_command("NOSUCHCOMMAND")
    with pytest.raises((ExecAbortError, ResponseError)):
        pipe.execute()
    assert r.get("keep") == b"old"


def test_an_error_at_exec_does_not_undo_the_other_commands(r):
    r.set("s", "text")
    pipe = r.pipeline()
    pipe.set("x", 1).incr("s").incr("x")
    got = pipe.execute(raise_on_error=False)
    assert got[0] is True and got[2] == 2
    assert isinstance(got[1], ResponseError)
    assert "not an integer" in str(got[1])
    assert r.get("x") == b"2"


def test_watched_key_written_by_another_connection_fails_exec(server, r, protocol):
    other = server.client(protocol=protocol)
    r.set("w", 1)
    with r.pipeline() as pipe:
        pipe.watch("w")
        other.set("w", 1)  # the same value: still a change
        pipe.multi()
        pipe.set("w", 99)
        with pytest.raises(WatchError):
            pipe.execute()
    assert r.get("w") == b"1"
    other.close()


def test_watched_key_left_alone_lets_exec_run_and_is_then_unwatched(server, r, protocol):
    other = server.client(protocol=protocol)
    with r.pipeline() as pipe:
        pipe.watch("w", "v")
        other.set("unrelated", 1)
        pipe.multi()
        pipe.set("w", 2)
        assert pipe.execute() == [True]
    # After EXEC nothing is watched: a later change does not fail the next transaction.
    other.set("w", 3)
    pipe = r.pipeline()
    pipe.get("w")
    assert pipe.execute() == [b"3"]
    other.close()


def test_optimistic_increments_from_threads_lose_nothing(server, protocol):
    clients = [server.client(protocol=protocol) for _ in range(4)]
    clients[0].set("counter", 0)
    done = [0] * len(clients)

    def work(i):
        def incr(pipe):
            v = int(pipe.get("counter"))
            pipe.multi()
            pipe.set("counter", v + 1)

        for _ in range(50):
            clients[i].transaction(incr, "counter")
            done[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert int(clients[0].get("counter")) == sum(done) == 200
    for c in clients:
        c.close()


@pytest.mark.parametrize(
    "script",
    [
        # Queue errors, nesting and WATCH inside MULTI (Redis 7.0's texts).
        [["MULTI"], ["SET", "a", "1"], ["FOO"], ["EXEC"]],
        [["MULTI"], ["MULTI"], ["WATCH", "x"], ["SET", "a", "1"], ["EXEC"]],
        [["EXEC"], ["DISCARD"], ["MULTI"], ["DISCARD"], ["EXEC"]],
        [["MULTI"], ["GET"], ["SET", "a", "1"], ["EXEC"]],
        [["MULTI"], ["EXEC", "extra"], ["EXEC"]],
        [["MULTI"], ["SHUTDOWN"], ["EXEC"]],
        [["MULTI"], ["UNWATCH"], ["PING"], ["ECHO", "hi"], ["EXEC"]],
        [["UNWATCH"], ["WATCH", "a", "a", "b"], ["UNWATCH"], ["UNWATCH"]],
        # Reads and writes see each other inside EXEC; errors stay in place.
        [["SET", "n", "5"], ["MULTI"], ["INCRBY", "n", "x"], ["INCR", "n"], ["GET", "n"],
         ["SET", "n", "1", "EX", "0"], ["APPEND", "n", "z"], ["EXEC"]],
        # SELECT inside a transaction moves the commands after it.
        [["MULTI"], ["SELECT", "3"], ["SET", "k", "db3"], ["SELECT", "0"], ["GET", "k"],
         ["EXEC"], ["SELECT", "3"], ["GET", "k"]],
        # FLUSHDB, and whole-keyspace reads at the end of a transaction (they see its state).
        [["SET", "a", "1"], ["SET", "b", "2"], ["MULTI"], ["FLUSHDB"], ["SET", "c", "3"],
         ["DBSIZE"], ["KEYS", "*"], ["EXEC"], ["DBSIZE"]],
        [["SELECT", "2"], ["SET", "a", "1"], ["MULTI"], ["FLUSHALL"], ["EXEC"], ["DBSIZE"]],
        # An empty transaction.
        [["MULTI"], ["EXEC"]],
        # Blocking pops inside MULTI do not block: they answer at once, nil on empty keys.
        [["MULTI"], ["BLPOP", "el", "0"], ["BRPOP", "el", "0"], ["BRPOPLPUSH", "e1", "e2", "0"],
         ["BLMOVE", "e1", "e2", "LEFT", "LEFT", "0"], ["BZPOPMIN", "ez", "0"],
         ["BZPOPMAX", "ez", "0"], ["EXEC"]],
        # RESET leaves the transaction.
        [["MULTI"], ["SET", "a", "1"], ["RESET"], ["EXEC"], ["GET", "a"]],
    ],
    ids=lambda s: " ".join(" ".join(c) for c in s)[:60],
)
def test_replies_match_redis_byte_for_byte(start_server, protocol, script):
    ref = start_server("redis")
    tgt = start_server("rialto")
    assert replies(tgt, protocol, script) == replies(ref, protocol, script)


def test_watch_semantics_match_redis(start_server, protocol):
    """Each case: WATCH on connection A, a change from connection B (or A before MULTI), EXEC."""
    cases = [
        # (setup, watch, change (on B), expected to abort)
        ([["SET", "x", "30"]], ["x"], [["SET", "x", "40"]], True),
        ([["SET", "x", "30"]], ["a", "b", "x", "k", "z"], [["SET", "x", "40"]], True),
        ([["SET", "x", "30"]], ["x"], [["GET", "x"]], False),
        ([["SET", "x", "30"]], ["x"], [["EXPIRE", "x", "100"]], True),
        ([["SET", "x", "30"]], ["x"], [["SET", "y", "1"]], False),
        ([["SET", "x", "30"]], ["x"], [["FLUSHALL"]], True),
        ([["DEL", "x"]], ["x"], [["FLUSHALL"]], False),
        ([["SET", "x", "30"]], ["x"], [["FLUSHDB"]], True),
        ([["SET", "x", "30"]], ["x"], [["SELECT", "1"], ["FLUSHDB"]], False),
        ([["SET", "x", "30"]], ["x"], [["SELECT", "1"], ["SET", "x", "1"]], False),
        ([["SET", "x", "30"]], ["x"], [["DEL", "nothere"]], False),
        ([["SET", "x", "30"]], ["x"], [["DEL", "x"]], True),
        ([["SET", "x", "30"]], ["x"], [["RENAME", "x", "y"]], True),
        ([["SET", "s", "30"]], ["x"], [["RENAME", "s", "x"]], True),
        ([["SET", "x", "1"]], ["x"], [["INCRBY", "x", "notanumber"]], False),
    ]
    for setup, watch, change, aborts in cases:
        outcomes = []
        for role in ("redis", "rialto"):
            s = start_server(role)
            a = s.client(protocol=protocol)
            b = s.client(protocol=protocol)
            for c in setup:
                a.execute_command(*c)
            a.execute_command("WATCH", *watch)
            for c in change:
                try:
                    b.execute_command(*c)
                except ResponseError:
                    pass
            a.execute_command("MULTI")
            a.execute_command("PING")
            outcomes.append(a.execute_command("EXEC"))
            a.close()
            b.close()
        assert outcomes[0] == outcomes[1], (setup, watch, change)
        assert (outcomes[1] is None) == aborts, (setup, watch, change, outcomes)


def test_watch_remembers_the_database_and_discard_unwatches(r):
    r.execute_command("SELECT", 5)
    r.set("x", 1)
    r.execute_command("WATCH", "x")
    r.execute_command("SELECT", 1)
    r.set("x", 2)  # another database's x
    r.execute_command("SELECT", 5)
    r.execute_command("MULTI")
    r.execute_command("PING")
    assert r.execute_command("EXEC") == [b"PONG"] or r.execute_command("PING")
    # DISCARD clears a dirty flag and unwatches.
    r.execute_command("WATCH", "x")
    r.set("x", 3)
    r.execute_command("MULTI")
    r.execute_command("DISCARD")
    r.execute_command("MULTI")
    r.execute_command("PING")
    assert r.execute_command("EXEC") is not None


def test_a_watched_key_that_expires_before_exec_fails_it(r):
    r.set("ttl", 1, px=100)
    r.execute_command("WATCH", "ttl")
    time.sleep(0.25)
    r.execute_command("MULTI")
    r.execute_command("PING")
    assert r.execute_command("EXEC") is None


def test_a_stale_watched_key_removed_by_expiry_does_not_fail_exec(r):
    r.set("gone", 1, px=1)
    time.sleep(0.05)  # expired, maybe not yet removed
    r.execute_command("WATCH", "gone")
    time.sleep(0.3)  # active expiry may remove it meanwhile: no logical change
    r.execute_command("MULTI")
    r.execute_command("PING")
    assert r.execute_command("EXEC") is not None


def test_a_push_swap_or_rollback_fails_exec_watching_the_stores_keys(target, start_server, protocol):
    if target != "rialto":
        pytest.skip("stores are Rialto's")
    s = start_server("rialto")
    c = s.client(protocol=protocol)
    c.execute_command("STORE", "CREATE", "feat", "PREFIX", "feat:")

    def push(pairs):
        push_id = c.execute_command("PUSH", "BEGIN", "feat", "MIN-RECORDS", 0, "MAX-SHRINK", 100)
        flat = [x for kv in pairs for x in kv]
        c.execute_command("PUSH", "ADD", push_id, *flat)
        c.execute_command("PUSH", "COMMIT", push_id)

    push([("a", "1")])
    for change in ("swap", "rollback", "unrelated"):
        w = s.client(protocol=protocol)
        w.execute_command("WATCH", "feat:a", "other")
        if change == "swap":
            push([("a", "2")])
        elif change == "rollback":
            c.execute_command("STORE", "ROLLBACK", "feat")
        else:
            c.execute_command("SET", "plain", "1")
        w.execute_command("MULTI")
        w.execute_command("GET", "feat:a")
        got = w.execute_command("EXEC")
        assert (got is None) == (change != "unrelated"), change
        w.close()


def two_connection_replies(server, protocol, steps):
    """Runs `steps`, each (connection 0 or 1, command), on two fresh raw connections of one
    server, in order; returns the parsed replies."""
    conns = [server.conn(), server.conn()]
    if protocol == 3:
        for c in conns:
            c.call("HELLO", "3")
    out = [conns[i].call(*cmd) for i, cmd in steps]
    for c in conns:
        c.close()
    return out


@pytest.mark.parametrize(
    "steps",
    [
        # min-replicas-to-write on a node without replicas: writes refused, also queued ones
        # and an EXEC whose transaction holds one when the setting came after the queueing;
        # reads go on; max-lag 0 (or to-write 0) turns it off.
        [(0, ["SET", "xx", "1"]), (0, ["MULTI"]), (0, ["INCR", "xx"]), (0, ["GET", "xx"]),
         (1, ["CONFIG", "SET", "min-replicas-to-write", "2"]), (0, ["EXEC"]), (0, ["GET", "xx"]),
         (0, ["SET", "xx", "2"]), (0, ["MULTI"]), (0, ["GET", "xx"]), (0, ["SET", "xx", "3"]),
         (0, ["EXEC"]), (0, ["MULTI"]), (0, ["GET", "xx"]), (0, ["PING"]), (0, ["EXEC"]),
         (0, ["CONFIG", "GET", "min-replicas-to-write"]),
         (0, ["CONFIG", "GET", "min-replicas-max-lag"]),
         (0, ["CONFIG", "SET", "min-replicas-max-lag", "0"]), (0, ["INCR", "xx"]),
         (0, ["CONFIG", "SET", "min-replicas-max-lag", "10"]),
         (0, ["CONFIG", "SET", "min-replicas-to-write", "0"]), (0, ["INCR", "xx"])],
        # Scripts under min-replicas-to-write: one without flags fails at its first write
        # call, one that declares writes before it runs, a no-writes one runs.
        [(0, ["SET", "k", "v"]), (1, ["CONFIG", "SET", "min-replicas-to-write", "1"]),
         (0, ["EVAL", "return redis.call('get', KEYS[1])", "1", "k"]),
         (0, ["EVAL", "return redis.call('set', KEYS[1], 'w')", "1", "k"]),
         (0, ["EVAL", "#!lua\nreturn redis.call('get', KEYS[1])", "1", "k"]),
         (0, ["EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "k"]),
         (0, ["MULTI"]), (0, ["EVAL", "#!lua\nreturn 1", "0"]), (0, ["EXEC"]),
         (1, ["CONFIG", "SET", "min-replicas-to-write", "0"])],
        # Over maxmemory, EXEC of reads runs, EXEC holding a command that may grow the data
        # is refused (the limit set after the queueing); DISCARD is always taken.
        [(0, ["SET", "x", "value"]), (0, ["MULTI"]), (0, ["GET", "x"]), (0, ["PING"]),
         (1, ["CONFIG", "SET", "maxmemory", "1"]), (0, ["EXEC"]),
         (1, ["CONFIG", "SET", "maxmemory", "0"]), (0, ["MULTI"]), (0, ["SET", "x", "1"]),
         (0, ["GET", "x"]), (1, ["CONFIG", "SET", "maxmemory", "1"]), (0, ["EXEC"]),
         (0, ["MULTI"]), (0, ["DISCARD"]), (1, ["CONFIG", "SET", "maxmemory", "0"]),
         (0, ["GET", "x"])],
        # SAVE: taken alone, refused inside MULTI (which then aborts).
        [(0, ["SAVE"]), (0, ["MULTI"]), (0, ["SET", "foo", "bar"]), (0, ["SAVE"]),
         (0, ["EXEC"]), (0, ["GET", "foo"]), (0, ["EVAL", "return redis.call('save')", "0"])],
        # FLUSHALL touching several keys one client watches.
        [(0, ["MSET", "a", "a", "b", "b"]), (0, ["WATCH", "b", "a"]), (1, ["FLUSHALL"]),
         (0, ["PING"]), (0, ["MULTI"]), (0, ["PING"]), (0, ["EXEC"]), (0, ["WATCH", "b", "a"]),
         (0, ["FLUSHALL"]), (0, ["PING"])],
    ],
    ids=["min-replicas", "min-replicas-scripts", "exec-over-maxmemory", "save", "flushall-watch"],
)
def test_exec_refusals_and_server_state_match_redis(start_server, protocol, steps):
    ref = start_server("redis")
    tgt = start_server("rialto")
    assert two_connection_replies(tgt, protocol, steps) == two_connection_replies(
        ref, protocol, steps
    )


def test_a_config_set_that_fails_inside_exec_answers_its_error_in_place(server):
    c = server.conn()
    c.call("MULTI")
    c.call("SET", "foo", "bar")
    c.call("CONFIG", "SET", "maxmemory", "bla")
    got = c.call("EXEC").value
    assert got[0] == Reply("+", b"OK")
    assert got[1].is_error
    assert got[1].text().startswith(b"ERR CONFIG SET failed (possibly related to argument 'maxmemory')")
    assert c.call("GET", "foo") == Reply("$", b"bar")
    c.close()
