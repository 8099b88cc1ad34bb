"""Lua scripts (EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT) and functions (FUNCTION, FCALL,
FCALL_RO) against Redis 7 and the server under test.

Replies are compared byte for byte with redis-server 7.0.15 (RESP2 and RESP3): the conversions
between replies and Lua values, the errors a script raises and where, read-only globals, the
`redis` table, the script cache. Then what libraries build on scripts: redis-py's `Lock` and
`register_script`, and a script that fails half way keeping the writes it made (Redis has no
rollback).
"""

import hashlib
import threading
import time

import pytest
import redis


def replies(server, protocol, script):
    """Sends each command of `script` on one fresh raw connection; returns the parsed replies."""
    c = server.conn()
    if protocol == 3:
        c.call("HELLO", "3")
    out = [c.call(*cmd) for cmd in script]
    c.close()
    return out


CACHED = hashlib.sha1(b"return 'cached'").hexdigest()


def ev(body, *keys_then_args, numkeys=None):
    """An EVAL request; numkeys defaults to every argument being a key."""
    n = len(keys_then_args) if numkeys is None else numkeys
    return ["EVAL", body, str(n), *keys_then_args]


CASES = {
    "cjson-settings": [
        ev("return cjson.encode_keep_buffer(false)"),
        ev("cjson.encode_max_depth(1) return {pcall(cjson.encode, {a = {1}})}"),
        ev("return cjson.encode_max_depth(1000)"),
        ev("cjson.decode_max_depth(1) return (pcall(cjson.decode, '[[1]]'))"),
        ev("return cjson.decode_max_depth(1000)"),
        ev("return (pcall(cjson.encode, {num1 = 0/0}))"),
        ev("cjson.encode_invalid_numbers(true) return (pcall(cjson.encode, {num1 = 0/0}))"),
        ev("return cjson.encode({1/0, -1/0})"),
        ev("cjson.encode_invalid_numbers('null') return cjson.encode({1/0})"),
        ev("return cjson.encode_invalid_numbers(false)"),
        ev("cjson.encode_number_precision(3) return cjson.encode({3.14159, 1234.5, 0.000012345})"),
        ev("return cjson.encode_number_precision(14)"),
        ev("local ok, e = pcall(function() redis.call('incr', 'nope', 'x') end) return e"),
        ev("local ok, e = pcall(redis.call, 'lpush', 'pl', 'x') return {ok, e}"),
        ev("local ok, e = pcall(redis.call, 'incr', 'pl') return {tostring(ok), e}"),
        ev("local ok, e = pcall(cjson.decode, '{') return type(e)"),
        ev("return cjson.encode_keep_buffer(true)"),
    ],
    "conversions": [
        ev("return 3.99"),
        ev("return -3.99"),
        ev("return true"),
        ev("return false"),
        ev("return nil"),
        ev("return 'x'"),
        ev("return {1, 'a', {2, {3}}, nil, 5}"),
        ev("return {}"),
        ev("return {err = 'My Error'}"),
        ev("return {ok = 'FINE'}"),
        ev("return redis.error_reply('My Error')"),
        ev("return redis.error_reply('')"),
        ev("return redis.error_reply('-CODE some text\\r\\n')"),
        ev("error(redis.error_reply('X\\r\\n+INJECTED'))"),
        ev("setmetatable(_G, {})"),
        ev("local g = getmetatable(_G); g.__index = {}"),
        ev("getmetatable('').__index = function() return 1 end"),
        ev("return ('x'):upper()"),
        ev("return redis.status_reply('FINE')"),
        ev("return redis.sha1hex('')"),
        ev("return redis.sha1hex('Pizza & Mandolino')"),
        ["SET", "n", "7"],
        ev("return {redis.call('get', 'n'), redis.call('get', 'missing'), redis.call('incr', 'n')}"),
        ev("local t = redis.call('set', 'k', 'v'); return type(t) .. t.ok"),
        ev("return redis.call('exists', 'k', 'nope', 'n')"),
    ],
    "keys-and-argv": [
        ev("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", "a", "b", "c", numkeys=2),
        ev("return #KEYS .. ARGV[1]", "a", "b", "c", numkeys=2),
        ["EVAL", "return 1", "-1"],
        ["EVAL", "return 1", "3", "a"],
        ["EVAL", "return 1", "x"],
        ["EVAL", "return 1"],
        ev("redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])", "kk", "vv", numkeys=1),
    ],
    "errors": [
        ["SET", "s", "abc"],
        ev("return redis.call('incr', 's')"),
        ev("return redis.pcall('incr', 's')"),
        ev("local e = redis.pcall('incr', 's'); return e['err']"),
        ev("\n\nreturn redis.call('incr', 's')"),
        ev("error('boom')"),
        ev("error({err = 'CUSTOM failure'})"),
        ev("return redis.call('nosuch')"),
        ev("return redis.pcall('nosuch')"),
        ev("return redis.call()"),
        ev("return redis.call(1)"),
        ev("return redis.call('get', {})"),
        ev("return redis.call('get')"),
        ev("return redis.call('shutdown')"),
        ev("return redis.call('multi')"),
        ev("return redis.call('eval', 'return 1', '0')"),
        # Lua 5.1's unpack with a huge range once crashed the server: an error, as in Redis.
        ev("return {unpack({1,2,3}, 0, 2147483647)}"),
        ev("return {unpack({1,2,3}, -2147483648, -2)}"),
        ev("return {unpack({1,2,3}, 2, 3)}"),
        ev("syntax error here"),
        ev("return 1 +"),
    ],
    "globals": [
        ev("x = 1"),
        ev("return y"),
        ev("return _G.x"),
        ev("local ok, e = pcall(function() z = 1 end); return tostring(ok)"),
        ev("local t = {}; t.a = 1; return t.a"),
        ev("return type(loadfile)"),
        ev("return type(dofile)"),
        ev("print('some data')"),
        ev("redis.call = function() return 1 end"),
        ev("cjson.encode = function() return 1 end"),
        ev("bit.lshift = function() return 1 end"),
        ev("return string.format('%d', 5) .. ('x'):upper() .. table.concat({1, 2})"),
        ev("return loadstring(string.dump(function() return 1 end))()"),
        ev("return loadstring('return 7')()"),
        ev("return bit.band(7, 3) .. ' ' .. bit.bor(1, 2) .. ' ' .. bit.tohex(255)"),
        ev("return redis.REDIS_VERSION_NUM > 0"),
        ev("return redis.LOG_WARNING"),
    ],
    "shebang-and-cjson": [
        ev("#!lua flags=no-writes\nreturn redis.call('set','a','b')"),
        ev("#!lua flags=no-writes,allow-stale\nreturn 1"),
        ev("#!lua flags=bad\nreturn 1"),
        ev("#!lua name=x\nreturn 1"),
        ev("#!js\nreturn 1"),
        ev("#!lua\nreturn redis.call('set','a','b')"),
        ev("#!lua foo\nreturn 1"),
        ev("return cjson.encode({1,2,{a='x'}, true})"),
        ev("return cjson.encode({})"),
        ev("return cjson.encode({a=1.5})"),
        ev("return cjson.encode({[1]=1,[3]=3})"),
        ev("return cjson.encode(3)"),
        ev("return cjson.encode(0.1)"),
        ev("return cjson.encode(123456789012)"),
        ev("return cjson.encode('a\"b/\\\\\\n')"),
        ev("local t = cjson.decode('[1,2.5,\"x\",null,{\"k\":[true,false]}]'); "
           "return {t[1], t[3], tostring(t[4] == cjson.null), tostring(t[5].k[1])}"),
        ev("return cjson.decode('{\"a\":{\"b\":[1,2]}}').a.b[2]"),
        ev("return cjson.encode(1/0)"),
    ],
    "read-only": [
        ["SET", "ro", "1"],
        ["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "ro"],
        ["EVAL_RO", "return redis.call('set', KEYS[1], '2')", "1", "ro"],
        ["EVAL_RO", "return redis.pcall('del', KEYS[1])", "1", "ro"],
        ["GET", "ro"],
    ],
    "cache": [
        ["SCRIPT", "LOAD", "return 'cached'"],
        ["EVALSHA", CACHED, "0"],
        ["EVALSHA", CACHED.upper(), "0"],
        ["SCRIPT", "EXISTS", CACHED, "nosuchsha"],
        ["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        ["SCRIPT", "LOAD", "syntax error"],
        ["SCRIPT", "FLUSH", "bad"],
        ["SCRIPT", "FLUSH", "SYNC"],
        ["EVALSHA", CACHED, "0"],
        ["SCRIPT", "KILL"],
        ["SCRIPT", "nosuch"],
        ["SCRIPT", "EXISTS"],
    ],
    "functions": [
        ["FUNCTION", "FLUSH"],
        ["FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('echo', function(keys, args) return args[1] end)\n"
         "redis.register_function{function_name='ro', callback=function(keys) return redis.call('get', keys[1]) end, "
         "flags={'no-writes'}, description='reads'}"],
        ["FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('x', function() return 1 end)"],
        ["FUNCTION", "LOAD", "#!lua name=other\nredis.register_function('echo', function() return 1 end)"],
        ["FUNCTION", "LOAD", "redis.register_function('x', function() return 1 end)"],
        ["FUNCTION", "LOAD", "#!lua name=e\nreturn 1"],
        ["FUNCTION", "LOAD", "#!lua name=c\nredis.call('ping')"],
        ["FUNCTION", "LOAD", "#!lua name=c2\nx = 1"],
        ["FUNCTION", "LOAD", "#!js name=c3\nx"],
        ["FUNCTION", "LOAD", "#!lua name=c4 foo=bar\nx"],
        ["FUNCTION", "LOAD", "#!lua name=bad-name\nredis.register_function('x', function() return 1 end)"],
        ["FUNCTION", "LOAD", "#!lua name=f1\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'bad-flag'}}"],
        ["FUNCTION", "LOAD", "#!lua name=f1\nredis.register_function{function_name='f', callback=function() return 1 end, nosuch=1}"],
        ["FCALL", "echo", "0", "hello"],
        ["FCALL_RO", "echo", "0", "hello"],
        ["SET", "k", "v"],
        ["FCALL_RO", "ro", "1", "k"],
        ["FCALL", "nosuch", "0"],
        ["FCALL", "echo", "-1"],
        ["FCALL", "echo", "3", "a"],
        ["FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"],
        ["FUNCTION", "LIST", "bad"],
        ["FUNCTION", "LIST", "LIBRARYNAME"],
        ["FUNCTION", "STATS"],
        ["FUNCTION", "LOAD", "REPLACE", "#!lua name=mylib\nredis.register_function('echo', function(keys, args) return 'v2' end)"],
        ["FCALL", "echo", "0"],
        ["FCALL_RO", "ro", "1", "k"],
        ["FUNCTION", "LOAD", "#!lua name=errs\nredis.register_function('boom', function() error('boom') end)\n"
         "redis.register_function('callerr', function(keys) return redis.call('incr', keys[1]) end)"],
        ["FCALL", "boom", "0"],
        ["FCALL", "callerr", "1", "k"],
        ["FUNCTION", "DELETE", "nosuch"],
        ["FUNCTION", "DELETE", "errs"],
        ["FUNCTION", "RESTORE", "bad"],
        ["FUNCTION", "RESTORE", "bad", "nopolicy"],
        ["FUNCTION", "FLUSH", "bad"],
        ["FUNCTION", "KILL"],
        ["FLUSHALL"],
        ["FCALL", "echo", "0"],
        ["FUNCTION", "FLUSH", "SYNC"],
        ["FCALL", "echo", "0"],
    ],
    "function-names-and-arguments": [
        ["FUNCTION", "FLUSH"],
        ["FUNCTION", "LOAD", "#!lua name=test\nredis.register_function('test', function() return 'hello1' end)"],
        # Function names are case-insensitive (library names are not).
        ["FCALL", "TEST", "0"],
        ["FUNCTION", "LOAD", "#!lua name=TEST\nredis.register_function('Test', function() return 2 end)"],
        ["FUNCTION", "LOAD", "#!lua name=TEST\nredis.register_function('other', function() return 2 end)"],
        ["FUNCTION", "DELETE", "Test"],
        ["FCALL", "test", "bad_arg"],
        ["EVAL", "return 1", "bad_arg"],
        ["FUNCTION", "RESTORE", "arg1", "args2", "arg3"],
        ["FUNCTION", "RESTORE", "arg1", "bad"],
        ["FUNCTION", "FLUSH", "sync", "extra_arg"],
        ["FUNCTION", "FLUSH", "bad_arg"],
        ["FUNCTION", "LOAD", "#! name=e1\nredis.register_function('e1', function() return 1 end)"],
        ["FUNCTION", "LOAD", "#!js name=bad-name\nx"],
        ["FUNCTION", "LOAD", "#!lua name=m1 name=m2\nx"],
        ["FUNCTION", "LOAD", "#!lua name=nonewline"],
        ["FUNCTION", "LOAD", "#!lua name=\"unbalanced\nx"],
        ["FUNCTION", "LOAD", "#!lua NAME=\"quoted\"\nredis.register_function('quoted', function() return 1 end)"],
        ["FCALL", "quoted", "0"],
    ],
    "function-library-api": [
        ["FUNCTION", "FLUSH"],
        ["FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f1')"],
        ["FUNCTION", "LOAD", "#!lua name=l\nredis.register_function(nil, function() return 1 end)"],
        ["FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f2', 'not a function')"],
        ["FUNCTION", "LOAD", "#!lua name=l\nredis.register_function{[true]=1}"],
        ["FUNCTION", "LOAD", "#!lua name=l\nreturn math.random()"],
        ["FUNCTION", "LOAD", "#!lua name=l\nreturn error('x')"],
        ["FUNCTION", "LOAD", "#!lua name=l\nreturn redis.set_repl(redis.REPL_NONE)"],
        ["FUNCTION", "LOAD", "#!lua name=l\nreturn redis.sha1hex('x')"],
        ["FUNCTION", "LOAD", "#!lua name=l\nredis.x = 1"],
        ["FUNCTION", "LOAD", "#!lua name=l\nredis.log(redis.LOG_DEBUG, redis.REDIS_VERSION)\n"
         "redis.register_function(12, function() return 12 end)\n"
         "redis.register_function{FUNCTION_NAME='n', CallBack=function() return 2 end, flags={'NO-WRITES'}}"],
        ["FCALL", "12", "0"],
        ["FCALL_RO", "N", "0"],
        ["FUNCTION", "LOAD", "#!lua name=lib1\nlocal lib = redis\n"
         "lib.register_function('f1', function() lib.redis = redis end)\n"
         "lib.register_function('f2', function() lib.register_function('f3', function() end) end)\n"
         "lib.register_function('f4', function() return math.floor(2.5) end)"],
        ["FCALL", "f1", "0"],
        ["FCALL", "f2", "0"],
        ["FCALL", "f4", "0"],
        ["FUNCTION", "LOAD", "#!lua name=slow\nlocal a = 1\nwhile 1 do a = a + 1 end"],
        ["FCALL", "f4", "0"],
    ],
    "cmsgpack": [
        ev("return cmsgpack.pack(0, 127, 128, 65535, 65536, 2^32, 2^53, -1, -33, -129, -32769, -2^31 - 1)"),
        ev("return cmsgpack.pack(0.1, 1.5, 2^63, -0.0, 1/0, nil, true, false, 'abc', string.rep('x', 300))"),
        ev("return cmsgpack.pack({}, {1, 'a', {}}, {[2] = 1}, {a = {b = {c = 1}}}, redis.call)"),
        ev("local a = {} a[1] = a return cmsgpack.pack(a)"),
        ev("local t = {} for i = 1, 70000 do t[i] = i % 7 end return #cmsgpack.pack(t)"),
        ev("local s = cmsgpack.pack({1, 2, {x = 'y'}}, 'two', -7.25) "
           "local a, b, c = cmsgpack.unpack(s) return {a[3].x, b, tostring(c), cmsgpack.unpack_one(s, 0)}"),
        ev("local s = cmsgpack.pack('a', 'b', 'c') return {cmsgpack.unpack_limit(s, 2, 0)}"),
        ev("return {cmsgpack.unpack_limit(cmsgpack.pack('a', 'b'), 1, 2)}"),
        ev("return {pcall(cmsgpack.unpack, '\\205\\1')}"),
        ev("return {pcall(cmsgpack.unpack, '\\193')}"),
        ev("return {pcall(cmsgpack.unpack_one, 'a', 5)}"),
        ev("return {pcall(cmsgpack.unpack_limit, 'a', -1)}"),
        ev("return {pcall(cmsgpack.pack)}"),
        ev("return (cmsgpack.unpack(cmsgpack.pack({[1.5] = 'half', [3] = 'three'})))[1.5]"),
        ev("cmsgpack.pack = function() return 1 end"),
    ],
    "struct": [
        ev("return struct.pack('>I2 <I2 >i4 b >h >l >I3 >i10', 258, 258, -2, -1, -2, 1, 65536, -1)"),
        ev("return struct.pack('>d <f c3 c0 s xb', 1.5, 1.5, 'abcdef', 'ab', 'ab', 1)"),
        ev("return struct.pack('!4 b >i4 !b >d', 1, 2, 3, 0)"),
        ev("local s = struct.pack('>i2 I4 d c3 s b', -300, 4000000000, 2.25, 'xyz', 'zero', -5) "
           "return {struct.unpack('>i2 I4 c0 s b', struct.pack('>i2 I4 B c0 s b', -300, 7, 3, 'abc', 'z', -5))}"),
        ev("return {struct.unpack('>I2', '\\0\\0\\1\\2', 3)}"),
        ev("return {struct.size('>!4 b i4 d'), struct.size('i3 h'), struct.size('!8 b d')}"),
        ev("return {pcall(struct.unpack, '>I4', 'ab')}"),
        ev("return {pcall(struct.unpack, 'b', 'a', 0)}"),
        ev("return {pcall(struct.pack, 'q', 1)}"),
        ev("return {pcall(struct.pack, 'i33', 1)}"),
        ev("return {pcall(struct.pack, 'i99999999999', 1)}"),
        ev("return {pcall(struct.pack, '!3', 1)}"),
        ev("return {pcall(struct.pack, 'c5', 'ab')}"),
        ev("return {pcall(struct.unpack, 's', 'abc')}"),
        ev("return {pcall(struct.unpack, 'c0', 'abc')}"),
        ev("return {pcall(struct.size, 's')}"),
        # Named as the script called it (`?` through pcall, above).
        ev("return struct.unpack('>I4', 'ab')"),
        ev("return cmsgpack.pack()"),
        ev("struct.pack = function() return 1 end"),
    ],
    "select-and-transactions": [
        ev("redis.call('select', 3); redis.call('set', 'in3', 'x'); return redis.call('get', 'in3')"),
        ["GET", "in3"],
        ["SELECT", "3"],
        ["GET", "in3"],
        ["SELECT", "0"],
        ["MULTI"],
        ev("return redis.call('incr', 'm')"),
        ev("return redis.call('incr', 'm')"),
        ["EXEC"],
        ev("redis.call('set', 'half', '1'); redis.call('incr', 's2'); redis.call('set', 's2', 'x'); return redis.call('incr', 's2')"),
        ["GET", "half"],
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_replies_match_redis_byte_for_byte(start_server, protocol, case):
    ref = start_server("redis")
    tgt = start_server("rialto")
    assert replies(tgt, protocol, CASES[case]) == replies(ref, protocol, CASES[case])


def test_evalsha_of_a_loaded_script_and_resp3_conversions(r, protocol):
    sha = r.script_load("return {KEYS[1], ARGV[1]}")
    assert r.evalsha(sha, 1, "k", "v") == [b"k", b"v"]
    assert r.script_exists(sha) == [True]
    r.script_flush()
    assert r.script_exists(sha) == [False]
    # A script may speak RESP3 to the commands it calls, whatever its client speaks.
    got = r.eval("redis.setresp(3); return redis.call('ping')", 0)
    assert got in (b"PONG", "PONG", True)


def test_redis_py_lock_acquires_and_releases(server, protocol):
    a = server.client(protocol=protocol)
    b = server.client(protocol=protocol)
    lock = a.lock("resource", timeout=10, blocking=False)
    assert lock.acquire()
    other = b.lock("resource", timeout=10, blocking=False)
    assert not other.acquire()
    lock.extend(5)
    lock.release()
    assert other.acquire()
    other.release()
    assert a.get("resource") is None
    a.close()
    b.close()


def test_registered_script_increments_atomically_from_threads(server, protocol):
    clients = [server.client(protocol=protocol) for _ in range(4)]
    incr2 = clients[0].register_script(
        "local a = redis.call('incr', KEYS[1]); local b = redis.call('incr', KEYS[2]); return a - b"
    )
    diffs = []

    def work(c):
        for _ in range(100):
            diffs.append(incr2(keys=["x", "y"], client=c))

    threads = [threading.Thread(target=work, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Each script's two increments are never split by another's.
    assert set(diffs) == {0}
    assert int(clients[0].get("x")) == int(clients[0].get("y")) == 400
    for c in clients:
        c.close()


def _run_in_thread(client, *command):
    """Sends `command` on a thread; returns the thread and a dict that gets "reply" or "error"."""
    result = {}

    def run():
        try:
            result["reply"] = client.execute_command(*command)
        except Exception as e:  # noqa: BLE001 - the error is the point
            result["error"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    return t, result


def _wait_busy(client, timeout=10):
    """PINGs until the server answers BUSY; returns the error text."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            client.ping()
        except Exception as e:  # noqa: BLE001
            return str(e)
        time.sleep(0.02)
    return None


def test_a_busy_read_only_script_gets_busy_replies_and_is_killed(server):
    # With the server's defaults: a script never holds up the threads that serve others.
    runner = server.client()
    runner.config_set("lua-time-limit", 100)
    t, result = _run_in_thread(runner, "EVAL", "local i = 0; while true do i = i + 1 end", 0)
    other = server.client()
    busy = _wait_busy(other)
    assert busy is not None and busy.startswith("BUSY"), busy
    assert "SCRIPT KILL" in busy
    # FUNCTION STATS and FUNCTION KILL tell of functions only.
    with pytest.raises(redis.ResponseError, match="^BUSY.*SCRIPT KILL"):
        other.execute_command("FUNCTION", "STATS")
    with pytest.raises(redis.ResponseError, match="^BUSY.*SCRIPT KILL"):
        other.execute_command("FUNCTION", "KILL")
    with pytest.raises(redis.ResponseError, match="^BUSY"):
        other.script_load("return 1")
    assert other.script_kill()
    t.join(10)
    assert "Script killed by user with SCRIPT KILL" in result.get("error", ""), result
    assert other.ping()
    runner.close()
    other.close()


def test_a_busy_function_is_named_in_busy_replies_and_killed(server):
    runner = server.client()
    runner.function_load(
        "#!lua name=spin\nredis.register_function{function_name='spin', "
        "callback=function() local a = 1 while true do a = a + 1 end end, flags={'no-writes'}}"
    )
    runner.config_set("busy-reply-threshold", 100)
    t, result = _run_in_thread(runner, "FCALL", "spin", 0)
    other = server.client()
    busy = _wait_busy(other)
    assert busy is not None and "FUNCTION KILL" in busy, busy
    stats = other.execute_command("FUNCTION", "STATS")
    running = dict(zip(stats[1][::2], stats[1][1::2]))
    assert running[b"name"] == b"spin"
    assert [a.lower() for a in running[b"command"]] == [b"fcall", b"spin", b"0"]
    assert running[b"duration_ms"] >= 0
    with pytest.raises(redis.ResponseError, match="^BUSY.*FUNCTION KILL"):
        other.script_kill()
    assert other.execute_command("FUNCTION", "KILL") in (b"OK", "OK", True)
    t.join(10)
    assert "killed" in result.get("error", ""), result
    other.close()
    runner.close()


def test_a_busy_script_that_wrote_stops_only_with_shutdown_nosave(target, start_server):
    s = start_server(target)
    c = s.client()
    c.set("k", "before")
    c.config_set("lua-time-limit", 100)
    runner = s.client()
    t, _ = _run_in_thread(runner, "EVAL", "redis.call('set', KEYS[1], 'during') while true do end", 1, "k")
    other = s.client()
    busy = _wait_busy(other)
    assert busy is not None and busy.startswith("BUSY"), busy
    with pytest.raises(redis.ResponseError, match="^UNKILLABLE"):
        other.script_kill()
    with pytest.raises(redis.ResponseError, match="^BUSY"):
        other.execute_command("SHUTDOWN")
    with pytest.raises(redis.ConnectionError):
        other.execute_command("SHUTDOWN", "NOSAVE")
    assert s.wait_exit(15) == 0 or target == "redis"
    t.join(10)
    for cl in (c, runner, other):
        cl.close()
    if target == "rialto":
        # The script's write was dropped with it: a script takes effect whole or not at all.
        s2 = start_server("rialto", data_dir=s.dir)
        c2 = s2.client()
        assert c2.get("k") == b"before"
        c2.close()


def test_a_whole_table_of_7999_values_unpacks(r):
    body = "local a = {} for i = 1, 7999 do a[i] = 1 end return select('#', unpack(a))"
    assert r.eval(body, 0) == 7999


def test_info_memory_counts_cached_scripts_and_functions(r):
    r.script_flush()
    r.function_flush()
    for j in range(5):
        r.script_load(f"return {j}")
    r.function_load("#!lua name=cnt\nredis.register_function('c1', function() return 1 end)\n"
                    "redis.register_function('c2', function() return 2 end)")
    info = r.info("memory")
    assert (info["number_of_cached_scripts"], info["number_of_functions"], info["number_of_libraries"]) == (5, 2, 1)
    r.script_flush()
    assert r.info("memory")["number_of_cached_scripts"] == 0
    r.function_flush()


def test_function_dump_and_restore_round_trip(r):
    r.function_flush()
    r.function_load("#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")
    r.function_load("#!lua name=lib2\nredis.register_function('f2', function() return 2 end)")
    payload = r.function_dump()
    r.function_flush()
    with pytest.raises(Exception, match="Function not found"):
        r.fcall("f1", 0)
    r.function_restore(payload)
    assert r.fcall("f1", 0) == 1 and r.fcall("f2", 0) == 2
    with pytest.raises(Exception, match="^Library lib[12] already exists$"):
        r.function_restore(payload)
    r.function_restore(payload, "REPLACE")
    r.function_restore(payload, "FLUSH")
    assert len(r.function_list()) == 2


def test_libraries_survive_a_restart_and_flushall(target, start_server):
    if target == "redis":
        pytest.skip("the reference redis-server runs without persistence")
    s = start_server("rialto")
    c = s.client()
    c.function_load("#!lua name=keep\nredis.register_function('kept', function() return 'here' end)")
    c.flushall()
    assert c.fcall("kept", 0) == b"here"
    c.shutdown()
    assert s.wait_exit(15) == 0
    c.close()
    s2 = start_server("rialto", data_dir=s.dir)
    c = s2.client()
    assert c.fcall("kept", 0) == b"here"
    assert c.function_list()[0][:2] == [b"library_name", b"keep"]
    c.close()


def _listing(client, *args):
    """FUNCTION LIST as {library: (engine, sorted functions as (name, description, flags), code)}."""
    out = {}
    for lib in client.execute_command("FUNCTION", "LIST", *args):
        lib = dict(zip(lib[::2], lib[1::2])) if isinstance(lib, list) else lib
        fns = []
        for f in lib[b"functions"]:
            f = dict(zip(f[::2], f[1::2])) if isinstance(f, list) else f
            fns.append((f[b"name"], f[b"description"], sorted(f[b"flags"])))
        out[lib[b"library_name"]] = (lib[b"engine"], sorted(fns), lib.get(b"library_code"))
    return out


def test_function_list_matches_redis_whatever_the_order(pair):
    ref, tgt = pair
    for c in (ref, tgt):
        c.function_flush()
        c.function_load("#!lua name=mylib\nredis.register_function('echo', function(k, a) return a[1] end)\n"
                        "redis.register_function{function_name='ro', callback=function(k) return 1 end, "
                        "flags={'no-writes', 'allow-stale'}, description='reads'}")
        c.function_load("#!lua name=other\nredis.register_function('o', function() return 1 end)")
    for args in [(), ("WITHCODE",), ("LIBRARYNAME", "my*"), ("LIBRARYNAME", "*", "WITHCODE")]:
        assert _listing(tgt, *args) == _listing(ref, *args), args


def test_acl_check_cmd_tells_whether_the_scripts_user_may_run_a_command(server, protocol):
    admin = server.client(protocol=protocol)
    admin.execute_command("ACL", "SETUSER", "bob", "on", ">123", "+@scripting", "+set", "~x*")
    bob = server.client(protocol=protocol)
    bob.execute_command("AUTH", "bob", "123")
    check = "return redis.acl_check_cmd(unpack(ARGV))"
    assert bob.eval(check, 0, "set", "xx", 1) == 1
    assert bob.eval(check, 0, "hset", "xx", "f", 1) is None
    assert bob.eval(check, 0, "set", "yy", 1) is None
    with pytest.raises(redis.ResponseError, match="Invalid command passed to redis.acl_check_cmd"):
        bob.eval(check, 0, "invalid-cmd", "arg")
    assert admin.eval(check, 0, "hset", "k", "f", "v") == 1
    bob.close()
    admin.close()


def _info(conn, section):
    """INFO `section` on a raw connection as {field: value} (a client library's handshake
    could add error replies of its own)."""
    text = conn.call("INFO", section).value.decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _counters(conn, commands):
    """Each command's calls, failed and rejected calls (INFO commandstats), the error replies
    by prefix (INFO errorstats) and their total."""
    stats = _info(conn, "commandstats")
    out = {}
    for name in commands:
        fields = dict(f.split("=") for f in stats.get(f"cmdstat_{name}", "calls=0").split(","))
        out[name] = tuple(int(fields.get(f, 0)) for f in ("calls", "failed_calls", "rejected_calls"))
    return out, _info(conn, "errorstats"), _info(conn, "stats")["total_error_replies"]


SCRIPT_STATS = [
    # A script's calls count as calls of their commands.
    ("set", "k", "v"),
    ("eval", "redis.call('set', KEYS[1], 0) redis.call('expire', KEYS[1], 100) redis.call('get', KEYS[1])", 1, "k"),
    # redis.call's error: a failed call of SELECT and of EVAL, one error reply.
    ("eval", "return redis.call('select', 99)", 0),
    # redis.pcall's table, looked at and returned: one error reply either way.
    ("eval", "local t = redis.pcall('select', 99) return t['err'] == 'ERR DB index is out of range'", 0),
    ("eval", "return redis.pcall('incr', KEYS[1])", 1, "k"),
    ("eval", "error(redis.pcall('incr', KEYS[1]))", 1, "k"),
    # Refused inside the script: a rejected call.
    ("eval_ro", "return redis.call('set', KEYS[1], 'y')", 1, "k"),
    ("eval", "return redis.call('get')", 0),
    ("eval", "return redis.call('nosuchcommand')", 0),
    # The script's own errors: counted as its error replies.
    ("eval", "return redis.error_reply('MY_ERR custom')", 0),
    ("eval", "return redis.call()", 0),
    ("eval", "error('plain')", 0),
    # In a transaction.
    ("multi",),
    ("eval", "return redis.call('incr', KEYS[1])", 1, "k"),
    ("eval", "return redis.call('select', 99)", 0),
    ("eval", "return redis.pcall('select', 99)", 0),
    ("eval", "return redis.error_reply('IN_EXEC no')", 0),
    ("exec",),
]


def test_commands_a_script_calls_are_counted_as_redis_counts_them(start_server):
    got = []
    for kind in ("redis", "rialto"):
        conn = start_server(kind).conn()
        for cmd in SCRIPT_STATS:
            conn.call(*map(str, cmd))
        got.append(_counters(conn, ["set", "get", "expire", "select", "incr", "eval", "eval_ro", "exec"]))
        conn.close()
    assert got[1] == got[0]


def test_a_script_reads_replies_of_tens_of_thousands_of_items(pair):
    # Regression: a reply longer than 8,000 items panicked the thread running scripts, and
    # every later write on the server waited for it.
    for c in pair:
        c.rpush("big", *range(20000))
        c.hset("bigh", mapping={f"f{i}": i for i in range(10000)})
    for c in pair:
        assert c.eval("return #redis.call('lrange', KEYS[1], 0, -1)", 1, "big") == 20000
        assert c.eval("return #redis.call('hgetall', KEYS[1])", 1, "bigh") == 20000
        assert c.eval("redis.setresp(3) local m = redis.call('hgetall', KEYS[1]).map "
                      "return m['f9999']", 1, "bigh") == b"9999"
        assert c.set("after", 1) is True
