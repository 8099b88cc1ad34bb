"""HyperLogLogs against redis-server: both hold the same string bytes after the same commands.

A HyperLogLog is a string (its `HYLL` header, then sparse opcodes or dense registers), so every
check reads the value back with GET as well as comparing replies: cardinalities of large random
sets, the change from sparse to dense at every `hll-sparse-max-bytes`, PFMERGE of mixed
encodings, the cached cardinality a PFCOUNT writes back (and WATCH seeing that write), DUMP of a
HyperLogLog on one server RESTOREd on the other, and damaged values, made by hand and at
random, which both must refuse (or read) alike. The differential test covers the commands'
arguments and errors on small values; this covers the encodings and sizes."""

import random

import redis


def both(pair, *cmd):
    out = []
    for c in pair:
        try:
            out.append(c.execute_command(*cmd))
        except redis.ResponseError as e:  # an error reply, compared by its text
            out.append(("error", str(e)))
    assert out[0] == out[1], (cmd[:4], out[0] if len(repr(out[0])) < 300 else "...", out[1] if len(repr(out[1])) < 300 else "...")
    return out[0]


def same_value(pair, key):
    """The key's bytes (GET) and encoding are equal on both servers; returns the bytes."""
    v = both(pair, "GET", key)
    if v is not None:
        both(pair, "PFDEBUG", "ENCODING", key)
    return v


def test_cardinalities_of_large_random_sets(pair):
    rng = random.Random(11)
    both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", "3000")
    for n in (1, 10, 100, 1000, 10_000, 60_000):
        key = "card:%d" % n
        seen = set()
        while len(seen) < n:
            batch = []
            while len(batch) < 1000 and len(seen) + len(batch) < n:
                e = "%x" % rng.getrandbits(48)
                if e not in seen:
                    batch.append(e)
            seen.update(batch)
            both(pair, "PFADD", key, *batch)
            same_value(pair, key)
        card = both(pair, "PFCOUNT", key)
        # 0.81% standard error: five of them.
        assert abs(card - n) <= 0.041 * n + 1, (n, card)
        # The count cached by the PFCOUNT is in the bytes.
        value = same_value(pair, key)
        assert value[15] & 0x80 == 0
        assert int.from_bytes(value[8:16], "little") == card
    both(pair, "PFCOUNT", *["card:%d" % n for n in (1, 10, 100, 1000, 10_000, 60_000)])


def test_sparse_to_dense_at_every_limit(pair):
    rng = random.Random(5)
    for limit in ("0", "1", "40", "300", "3000", "12000"):
        both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", limit)
        key = "promote:" + limit
        both(pair, "PFADD", key)
        for _ in range(60):
            # One element a command, as a client adds them: each edit of the sparse opcodes
            # (and the promotion) happens where Redis makes it.
            elements = ["x%d" % rng.randrange(1 << 30) for _ in range(25)]
            replies = []
            for c in pair:
                p = c.pipeline(transaction=False)
                for e in elements:
                    p.execute_command("PFADD", key, e)
                replies.append(p.execute())
            assert replies[0] == replies[1]
            same_value(pair, key)
            both(pair, "PFCOUNT", key)
        both(pair, "PFDEBUG", "DECODE", key)
    both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", "3000")


def test_pfmerge_of_mixed_encodings(pair):
    rng = random.Random(9)
    both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", "3000")
    sizes = {"s0": 3, "s1": 40, "s2": 400, "d0": 5000, "d1": 20, "d2": 0}
    for key, n in sizes.items():
        both(pair, "PFADD", key, *["%s-%d" % (key, rng.randrange(10_000)) for _ in range(n)])
        if key.startswith("d"):
            both(pair, "PFDEBUG", "TODENSE", key)
        same_value(pair, key)
    # Into a missing key, an existing sparse one, an existing dense one, itself.
    for dst, srcs in [
        ("m0", ["s0", "s1"]),
        ("m1", ["s0", "s1", "s2"]),
        ("m2", ["s1", "d1"]),
        ("s1", ["s0", "s2"]),
        ("d1", ["s0", "s1"]),
        ("m3", ["d0", "d2", "s2", "nosuch"]),
        ("m4", []),
        ("s0", ["s0"]),
    ]:
        both(pair, "PFMERGE", dst, *srcs)
        same_value(pair, dst)
        merged = both(pair, "PFCOUNT", dst)
        both(pair, "PFCOUNT", dst, *srcs)
        assert merged >= 0
    # Merging grows a sparse destination past its limit.
    both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", "200")
    both(pair, "PFMERGE", "m5", "s0", "s2")
    same_value(pair, "m5")
    both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", "3000")


def test_cached_cardinality_is_written_back(pair):
    for c in pair:
        c.delete("h")
    both(pair, "PFADD", "h", "a", "b", "c")
    assert both(pair, "GETRANGE", "h", "15", "15") == b"\x80"
    assert both(pair, "PFCOUNT", "h") == 3
    assert both(pair, "GETRANGE", "h", "15", "15") == b"\x00"
    same_value(pair, "h")
    # A stale cache's refresh is a write that WATCH sees; a valid one is not.
    both(pair, "PFADD", "h", "d")
    for expect_aborted in (True, False):
        out = []
        for c in pair:
            # WATCH belongs to a connection: one for the whole sequence.
            one = redis.Redis(connection_pool=c.connection_pool, single_connection_client=True)
            replies = [one.execute_command(*cmd) for cmd in (["WATCH", "h"], ["PFCOUNT", "h"], ["MULTI"], ["PING"])]
            replies.append(one.execute_command("EXEC"))
            one.close()
            out.append(replies)
        assert out[0] == out[1]
        assert (out[0][-1] is None) == expect_aborted, out[0]
    # Inside MULTI and scripts, as any other command.
    both(pair, "PFADD", "h", "e")
    replies = []
    for c in pair:
        p = c.pipeline(transaction=True)
        p.execute_command("PFADD", "h", "f")
        p.execute_command("PFCOUNT", "h")
        p.execute_command("PFCOUNT", "h", "nosuch")
        p.execute_command("PFMERGE", "h2", "h")
        replies.append(p.execute())
    assert replies[0] == replies[1]
    same_value(pair, "h")
    same_value(pair, "h2")
    both(pair, "EVAL", "redis.call('PFADD', KEYS[1], 'g'); return redis.call('PFCOUNT', KEYS[1])", "1", "h")
    both(pair, "EVAL_RO", "return redis.call('PFCOUNT', KEYS[1])", "1", "h2")
    both(pair, "EVAL", "return redis.call('PFCOUNT', KEYS[1])", "1", "h2")
    both(pair, "EVAL", "return redis.call('PFSELFTEST')", "0")
    same_value(pair, "h")
    same_value(pair, "h2")


def test_dump_restore_across_servers(pair):
    redis_side, rialto_side = pair
    rng = random.Random(3)
    both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", "3000")
    for i, n in enumerate((0, 5, 300, 8000)):
        key = "dump:%d" % i
        both(pair, "PFADD", key, *["e%d" % rng.randrange(1 << 40) for _ in range(n)])
        value = same_value(pair, key)
        # Each server's DUMP restores on the other, and the restored values go on alike.
        for src, dst in ((redis_side, rialto_side), (rialto_side, redis_side)):
            payload = src.execute_command("DUMP", key)
            assert dst.execute_command("RESTORE", key + ":copy", "0", payload, "REPLACE") == b"OK"
            assert dst.execute_command("GET", key + ":copy") == value
        same_value(pair, key + ":copy")
        both(pair, "PFCOUNT", key + ":copy")
        both(pair, "PFADD", key + ":copy", *["f%d" % j for j in range(50)])
        same_value(pair, key + ":copy")


def damaged_values():
    """Values a HyperLogLog command must refuse or read exactly as Redis does."""
    hdr = lambda enc, card=b"\0" * 7 + b"\x80": b"HYLL" + bytes([enc, 0, 0, 0]) + card
    dense = hdr(0) + bytes(12288)
    return [
        b"",
        b"HYLL",
        hdr(1),  # no opcodes
        hdr(1) + b"\x7f\xff",  # the empty HyperLogLog
        hdr(1) + b"\x7f",  # XZERO cut short
        hdr(1) + b"\x7f\xfe",  # one register short
        hdr(1) + b"\x7f\xff\x00",  # one register too many
        hdr(1) + b"\x7f\xfe\x80",  # a VAL to finish it
        hdr(1) + b"\x7f\xfe\x83",  # a VAL past the end
        hdr(1) + b"\x7f\xff\x80",  # a VAL past the end, registers covered
        hdr(1) + b"\x3f" * 256,  # ZEROs only
        hdr(1) + b"\x3f" * 300 + b"\xff",  # ZEROs past the end, then a VAL
        hdr(1) + b"\x7f\xff" * 5 + b"\xff",  # XZEROs past the end
        hdr(2) + b"\x7f\xff",  # unknown encoding
        b"HYLX" + hdr(1)[4:] + b"\x7f\xff",  # magic
        dense,
        dense[:-1],
        dense + b"\0",
        hdr(0, b"\x05" + b"\0" * 7) + bytes(12288),  # a valid cache over empty registers
        hdr(0) + b"\xff" * 12288,  # every register at 63
        hdr(1, b"\xff" * 8) + b"\x7f\xff",
    ]


def test_damaged_values(pair):
    both(pair, "CONFIG", "SET", "hll-sparse-max-bytes", "3000")
    cases = damaged_values()
    # And random damage to real values, sparse and dense.
    rng = random.Random(17)
    for c in pair:
        c.delete("src")
    for i in range(150):
        for c in pair:
            c.delete("src")
        both(pair, "PFADD", "src", *["r%d" % rng.randrange(10**9) for _ in range(rng.randrange(3000))])
        if rng.random() < 0.3:
            both(pair, "PFDEBUG", "TODENSE", "src")
        v = bytearray(same_value(pair, "src"))
        for _ in range(rng.randint(1, 5)):
            v[rng.randrange(len(v))] = rng.randrange(256)
        if rng.random() < 0.2:
            v = v[: rng.randrange(len(v))]
        cases.append(bytes(v))
    for i, v in enumerate(cases):
        key = "bad:%d" % i
        for c in pair:
            c.set(key, v)
        both(pair, "PFCOUNT", key)
        both(pair, "GET", key)
        both(pair, "PFCOUNT", key, "nosuch")
        both(pair, "PFMERGE", "out:%d" % i, key)
        both(pair, "GET", "out:%d" % i)
        both(pair, "PFDEBUG", "DECODE", key)
        both(pair, "PFDEBUG", "ENCODING", key)
        # One element: Redis keeps what a PFADD of several set before it met the damage.
        both(pair, "PFADD", key, "x%d" % i)
        both(pair, "GET", key)
        both(pair, "PFDEBUG", "TODENSE", key)
        both(pair, "GET", key)
        both(pair, "PFCOUNT", key)
