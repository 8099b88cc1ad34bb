#!/usr/bin/env python3
"""Differential test: the same seeded random command stream to redis-server and to Rialto over raw
sockets, every reply compared byte for byte.

    differential.py --seed N --commands 10000 --redis-port P --rialto-port Q

Both servers must be running on --host (127.0.0.1) without a password; both are FLUSHALLed. Two
streams run per seed: one in RESP2 and one that starts with HELLO 3. Commands come from a small
key space (so they collide) and cover the string, bitmap, HyperLogLog, hash, set, sorted-set, key,
connection and server
commands Rialto implements, with random valid and invalid arguments (wrong arity, bad integers and floats, syntax
errors, conflicting options, odd casing, unknown commands and subcommands).

Replies are compared byte for byte, except where Redis itself is not deterministic, which are
compared structurally: TTL/PTTL/EXPIRETIME/PEXPIRETIME (within 2 s), TIME, RANDOMKEY (nil or not),
CLIENT ID/LIST/INFO (type; name, db and resp fields), INFO (type; keyspace keys and expires),
HELLO (fields other than id/server/version), COMMAND COUNT/INFO (arity and key positions),
SLOWLOG GET/LEN (type), KEYS (as a sorted list), single SCAN calls (shape), and full SCAN
iterations (the set of keys found; shown as `SCAN* MATCH p COUNT n` in reports); a hash's or a
set's members as sorted lists (HGETALL, HKEYS, HVALS, SMEMBERS, SINTER, SUNION, SDIFF, SPOP of a
whole set), whole HSCAN, SSCAN and ZSCAN pages as sets, random picks (HRANDFIELD, SRANDMEMBER) by
count, and a string's OBJECT ENCODING by being one. Errors are always compared exactly. SPOP is
only sent with counts whose outcome is not random. Sorted sets' lex ranges run on keys whose
members all have score 0 (`z:lex*`): Redis leaves a lex range over different scores unspecified.
HyperLogLogs live on their own keys (`hll:*`), read back with GET so their bytes are compared;
one of them (`hll:c`) is also damaged with SETRANGE and APPEND, and it and the keys of the
general space get PFADDs of at most one element (Redis keeps the registers a PFADD set before it met the damage; Rialto's failed write
writes nothing).

On the first mismatch it prints the seed, stream, command index, command and both replies, then
shrinks the stream (delta debugging, replaying from an empty database each time) to a short
reproducer, printed as redis-cli input. Exit status 1 on any mismatch, 0 otherwise.

Timing: relative expirations are either non-positive (immediate) or >= 1000 s and unique within a
stream (so GT/LT comparisons never depend on the millisecond), absolute ones are in the past
(immediate) or after 2100; SET never gets a past EXAT/PXAT (Redis keeps such a key until it is
touched, and DBSIZE counts it meanwhile).
"""

import argparse
import math
import os
import hashlib
import random
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from resp import ConnectionClosed, Connection, ProtocolError, Reply, encode_command  # noqa: E402

SCAN_ALL = b"SCAN*"  # virtual command: a full SCAN iteration, compared as a set of keys
HSCAN_ALL = b"HSCAN*"  # virtual command: a full HSCAN iteration, compared as a set of pairs
# Hash fields: a few short ones, and one longer than hash-max-listpack-value (64), which makes
# the hash a hashtable on both sides.
FIELDS = [b"f0", b"f1", b"f2", b"f3", b"", b"\x00f\xff", b"x" * 70]
FIELD_WEIGHTS = [10, 8, 6, 4, 1, 1, 1]
# Sorted-set members: a few short ones, and one longer than zset-max-listpack-value (64), which
# makes the set a skiplist on both sides.
MEMBERS = [b"a", b"b", b"c", b"d", b"e", b"", b"\x00m\xff", b"y" * 70]
MEMBER_WEIGHTS = [10, 9, 8, 6, 4, 1, 1, 1]
SCORES = [
    b"0", b"1", b"-1", b"2", b"2.5", b"0.1", b"-0.25", b"1e20", b"1e-7", b"inf", b"-inf", b"+inf",
    b"-0", b"3.0", b"10", b"123456789012345678", b"0x10", b"0.30000000000000004",
]
BAD_SCORES = [b"nan", b"abc", b"", b" 1", b"1 ", b"1e400", b"(1"]
RANGE_SCORES = [b"-inf", b"+inf", b"0", b"1", b"(1", b"2.5", b"(2.5", b"-1", b"(0", b"10", b"", b"(", b"abc", b"nan", b" 1", b"1e400"]
LEX_BOUNDS = [b"-", b"+", b"[a", b"(a", b"[c", b"(c", b"[e", b"[", b"(", b"a", b"", b"+x", b"[y"]
# Keys whose members all have score 0, for the lex-range commands (Redis leaves a lex range
# over members of different scores unspecified: its skiplist answers by its random levels).
LEX_KEYS = [b"z:lex0", b"z:lex1"]
FUTURE = 4102444800  # 2100-01-01
# Geospatial indexes: keys only the geo generators write, with positions (never ZADD's odd
# scores, whose decoding C leaves undefined), a string and a missing key for the refusals.
GEO_KEYS = [b"geo:0", b"geo:1"]
GEO_OTHER = [b"geo:str", b"geo:none"]
GEO_UNITS = [b"m", b"km", b"KM", b"mi", b"ft", b"Ft", b"yd"]
GEO_MEMBERS = [b"p%d" % i for i in range(24)] + [b"", b"\x00p\xff"]

KEYS = [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5", b"", b"bin\x00\xff", b"two words", b"k*"]
KEY_WEIGHTS = [10, 10, 8, 6, 5, 4, 1, 1, 1, 1]
VALUES = [
    b"0", b"1", b"-1", b"10", b"42", b"9223372036854775807", b"-9223372036854775808",
    b"9223372036854775806", b"1.5", b"0.1", b"1e3", b"hello", b"", b"abc", b" 1", b"01", b"+1",
    b"\x00\x01\xff\r\n", b"x" * 100, b"3.0", b"-0", b"0x10",
]
BAD_INTS = [b"abc", b"", b"1.5", b" 1", b"+1", b"01", b"-", b"99999999999999999999", b"9223372036854775808", b"1e3"]
FLOATS = [
    b"0.1", b"0.2", b"1.5", b"-2.25", b"1e3", b"3.0e-5", b"10", b"-0.5", b"5.", b".5", b"0x10",
    b"1e-20", b"123456789.123456789", b"-1e15", b"7", b"0", b"-0.0", b"1E2",
]
BAD_FLOATS = [b"inf", b"-inf", b"nan", b"abc", b"", b" 1", b"1 ", b"1e", b"1e400", b"--1"]
PATTERNS = [b"*", b"k*", b"k[0-2]", b"?", b"??", b"*\\**", b"k[^1]", b"", b"[", b"k?", b"*o*", b"\\", b"k[2-0]", b"bin*", b"K*"]
# Scripts of the stream: (body, number of keys); each also gets one argument.
SCRIPTS = [
    (b"return redis.call('GET', KEYS[1])", 1),
    (b"return redis.call('INCR', KEYS[1])", 1),
    (b"redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])", 1),
    (b"return redis.pcall('INCRBYFLOAT', KEYS[1], ARGV[1])", 1),
    (b"return redis.call('DEL', unpack(KEYS))", 2),
    (b"local v = redis.call('GET', KEYS[1]); if v then return #v else return -1 end", 1),
    (b"return redis.call('APPEND', KEYS[1], ARGV[1])", 1),
    (b"return {redis.call('EXISTS', KEYS[1], KEYS[2]), redis.call('SETNX', KEYS[2], ARGV[1])}", 2),
    (b"redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[1])", 1),
    (b"for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[1]) end return #KEYS", 3),
    (b"return redis.call('RENAME', KEYS[1], KEYS[2])", 2),
    (b"error('failed on purpose')", 0),
    (b"return {1, 'two', {3}, nil, 5}", 0),
    (b"return redis.status_reply(ARGV[1])", 0),
]
INFO_SECTIONS = [b"keyspace", b"server", b"clients", b"nosuch", b"all", b"default", b"everything", b"KEYSPACE"]
NAMES = [b"worker", b"w-1", b"", b"has space", b"new\nline", b"x" * 30]
# SORT's own keys, which only its generators write, so that their types are known: a list
# (stored order is Redis's), a sorted set, a set of integers (intset: Redis iterates it in
# order, as Rialto does) and a small set of words (never NUL bytes: ALPHA compares such a set
# as C strings, where elements equal up to a NUL would tie in an order the layout decides).
SORT_LIST, SORT_ZSET, SORT_INTS, SORT_WORDS = b"sort:l", b"sort:z", b"sort:i", b"sort:s"
SORT_KEYS = [SORT_LIST, SORT_ZSET, SORT_INTS, SORT_WORDS]
# Redis 7.0's SORT judges a number by `errno == ERANGE` after `strtod` without clearing errno
# first, so a range error left by an earlier command (ZADD k 1e400 ...) fails a later sort of
# good numbers. Rialto does not keep that state: each SORT the stream sends follows a ZADD of
# a valid score, whose parse clears errno on Redis's side.
SORT_ERRNO_RESET = [b"ZADD", b"sort:errno", b"0", b"x"]
SORT_NUMBERS = [b"1", b"2", b"3", b"10", b"-5", b"1.5", b"0", b"7", b"100", b"-0.5"]
SORT_WORDS_MIXED = [b"a", b"b", b"c", b"ab", b"B", b"", b"ba"]
SORT_ODD = [b"inf", b"0x10", b" 7", b"7 ", b"1e400", b"-inf"]
SORT_INT_ELEMS = [b"1", b"2", b"3", b"10", b"-5", b"0", b"42", b"-100", b"7"]
SORT_WORD_ELEMS = [b"a", b"b", b"c", b"ab", b"B", b"ba", b"zz", b"A", b"aa"]
# Weights (`w_<element>` strings, `h_<element>` hashes) and patterns naming them or not.
SORT_WEIGHTS = [b"1", b"2", b"2", b"10", b"-3", b"0.5", b"1", b"", b"1e5", b"inf", b"0x1p3", b"3", b"b", b"a"]
SORT_BAD_WEIGHTS = [b"x", b"nan", b"1e400", b"1 "]
SORT_BY = [b"w_*", b"w_*", b"h_*->f", b"h_*->f", b"h_*->g", b"nosort", b"k*", b"*", b"w_*->", b"#", b"w_*\x00x", b"h_*->"]
SORT_GET = [b"#", b"#", b"w_*", b"h_*->f", b"h_*->g", b"nosuch", b"k*", b"*->", b"h_*->f\x00", b"w_*->f"]
# HyperLogLogs: keys only the HyperLogLog generators write (and damage: HLL_DAMAGED), elements
# from a space wide enough to fill registers and small enough to repeat.
HLL_KEYS = [b"hll:0", b"hll:1", b"hll:2", b"hll:c"]
HLL_KEY_WEIGHTS = [10, 7, 4, 4]
HLL_DAMAGED = b"hll:c"
HLL_SPARSE_MAX = [b"3000", b"3000", b"3000", b"400", b"100", b"0"]
SORT_LIMITS = [(b"0", b"1"), (b"1", b"2"), (b"0", b"-1"), (b"-3", b"2"), (b"2", b"100"), (b"5", b"0"), (b"100", b"1"), (b"0", b"0"), (b"1", b"9223372036854775807"), (b"x", b"1")]

# Streams: keys only the stream generators write (and, now and then, a key of the shared pool,
# for WRONGTYPE both ways); explicit ids from a small range (`*` would take each server's clock),
# `ms-*` for the next sequence; groups and consumers from small pools. Idle times and delivery
# times differ between the servers by how long the commands took: min-idle arguments are 0 or
# an hour (never between), and replies that carry times are compared with them masked.
STREAM_KEYS = [b"s:0", b"s:1", b"s:2"]
STREAM_GROUPS = [b"g0", b"g1", b"g2"]
STREAM_CONSUMERS = [b"c0", b"c1", b"c2", b""]
STREAM_FIELDS = [b"f", b"g", b"f", b"h", b"12", b"", b"x" * 70]
STREAM_BAD_IDS = [b"abc", b"-1", b"1-", b"1-x", b"", b"18446744073709551616", b"+", b"-", b"1.5", b" 2", b"+3-1", b"-01", b"4-\x005"]


class Gen:
    """A seeded stream of commands (lists of bytes)."""

    def __init__(self, seed, resp3=False):
        self.rng = random.Random(seed)
        self.resp3 = resp3
        self.i = 0
        self.force_hello = False
        # A command to send next, before any other (SORT after its errno reset).
        self.queued = None
        w = [
            (12, self.set_), (10, self.get), (2, self.setnx), (2, self.setex), (2, self.psetex),
            (2, self.getset), (2, self.getdel), (4, self.getex), (3, self.mget), (3, self.mset),
            (2, self.msetnx), (4, self.append), (3, self.strlen), (3, self.getrange), (3, self.setrange),
            (4, self.incr), (3, self.incrby), (4, self.incrbyfloat),
            (4, self.del_), (4, self.exists), (2, self.type_), (6, self.expire), (5, self.ttl),
            (2, self.persist), (3, self.rename), (2, self.keys), (1, self.scan), (2, self.scan_all),
            (2, self.dbsize), (1, self.randomkey), (0.3, self.flush), (3, self.select),
            (2, self.ping), (1, self.echo), (3, self.client), (1, self.hello), (0.3, self.reset),
            (0.2, self.quit), (1, self.server), (1, self.unknown),
            (1.5, self.multi), (1.5, self.exec_), (0.3, self.discard), (1, self.watch), (0.4, self.unwatch),
            (4, self.eval_), (1, self.evalsha), (0.5, self.script),
            (6, self.hset), (1, self.hmset), (2, self.hsetnx), (5, self.hget), (3, self.hmget),
            (3, self.hgetall), (3, self.hdel), (2, self.hexists), (2, self.hlen), (2, self.hstrlen),
            (1, self.hkeys), (1, self.hvals), (3, self.hincrby), (2, self.hincrbyfloat),
            (2, self.hrandfield), (1, self.hscan), (1, self.hscan_all),
            (2, self.copy), (2, self.move), (1, self.touch), (0.7, self.swapdb),
            (3, self.setbit), (2, self.getbit), (2, self.bitcount), (2, self.bitpos), (2, self.bitop),
            (3, self.bitfield), (1, self.bitfield_ro), (2, self.lcs),
            (6, self.sadd), (3, self.srem), (3, self.sismember), (2, self.smismember),
            (3, self.smembers), (2, self.scard), (1.5, self.spop), (2, self.srandmember),
            (2, self.smove), (2, self.sinter), (1, self.sintercard), (2, self.sunion),
            (2, self.sdiff), (2, self.sstore), (1, self.sscan), (1, self.object_encoding),
            (7, self.zadd), (2, self.zincrby), (3, self.zrem), (3, self.zscore), (2, self.zmscore),
            (2, self.zcard), (5, self.zrange), (2, self.zrangebyscore), (2, self.zrangebylex),
            (1, self.zrevrange), (2, self.zrank), (2, self.zcount), (2, self.zlexcount),
            (2, self.zpop), (2, self.zremrange), (1, self.zscan),
            (1, self.zrandmember), (1, self.zrangestore), (2, self.zcombine), (2, self.zstore),
            (1, self.zmpop),
            (7, self.lpush), (3, self.lpop), (4, self.lrange), (2, self.lindex), (2, self.llen),
            (2, self.lset), (2, self.linsert), (2, self.lrem), (2, self.ltrim), (2, self.lpos),
            (2, self.lmove), (1, self.lmpop), (1, self.bpop),
            (8, self.sort), (6, self.sort_setup),
            (6, self.geoadd), (2, self.geopos), (2, self.geodist), (2, self.geohash),
            (4, self.georadius), (5, self.geosearch), (2, self.geosearchstore),
            (8, self.pfadd), (4, self.pfcount), (2, self.pfmerge), (2, self.pfdebug),
            (4, self.hll_read), (1.5, self.hll_damage), (0.3, self.hll_config),
            (10, self.xadd), (2, self.xlen), (4, self.xrange), (2, self.xdel), (2, self.xtrim),
            (3, self.xread), (1, self.xsetid), (3, self.xgroup), (5, self.xreadgroup),
            (2, self.xack), (3, self.xpending), (2, self.xclaim), (2, self.xautoclaim),
            (3, self.xinfo), (0.3, self.stream_nodes),
        ]
        # Whether a MULTI is open (as far as the stream knows): whole-keyspace reads, CLIENT,
        # HELLO and server commands are not generated inside one (their replies inside a
        # transaction differ by design, design.md 11.8, or are normalised only outside one).
        self.in_multi = False
        self.weights = [x[0] for x in w]
        self.makers = [x[1] for x in w]

    # --- building blocks

    def key(self):
        return self.rng.choices(KEYS, KEY_WEIGHTS)[0]

    def keys_(self, lo=1, hi=4):
        return [self.key() for _ in range(self.rng.randint(lo, hi))]

    def value(self):
        if self.rng.random() < 0.1:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(12)))
        return self.rng.choice(VALUES)

    def ci(self, word):
        """A command or option name in random case, sometimes."""
        if self.rng.random() < 0.15:
            return bytes(c ^ 0x20 if chr(c).isalpha() and self.rng.random() < 0.5 else c for c in word)
        return word

    def rel(self, unit_ms=False, nonpositive=0.08, bad=0.05):
        """A relative expiry: unique and >= 1000 s, or non-positive, or not an integer."""
        x = self.rng.random()
        if x < nonpositive:
            return self.rng.choice([b"0", b"-1", b"-100", b"-9223372036854775808"])
        if x < nonpositive + bad:
            return self.rng.choice(BAD_INTS + [b"9223372036854775807"])
        seconds = 1000 + self.i
        return str(seconds * 1000 + 500 if unit_ms else seconds).encode()

    def abs_(self, unit_ms=False, past=0.2, bad=0.05):
        x = self.rng.random()
        if x < past:
            return self.rng.choice([b"1", b"0", b"1000000000", b"-5"])
        if x < past + bad:
            return self.rng.choice(BAD_INTS + [b"9223372036854775807"])
        t = FUTURE + self.i
        return str(t * 1000 + 7 if unit_ms else t).encode()

    # --- commands

    def set_(self):
        args = [self.ci(b"SET"), self.key(), self.value()]
        opts = []
        if self.rng.random() < 0.3:
            opts.append([self.ci(b"NX")] if self.rng.random() < 0.5 else [self.ci(b"XX")])
        if self.rng.random() < 0.2:
            opts.append([self.ci(b"GET")])
        if self.rng.random() < 0.4:
            kind = self.rng.choice([b"EX", b"PX", b"EXAT", b"PXAT", b"KEEPTTL"])
            if kind == b"KEEPTTL":
                opts.append([self.ci(kind)])
            elif kind in (b"EX", b"PX"):
                opts.append([self.ci(kind), self.rel(kind == b"PX")])
            else:
                opts.append([self.ci(kind), self.abs_(kind == b"PXAT", past=0)])
        if self.rng.random() < 0.05:  # conflicting or bogus options
            opts.append(self.rng.choice([[b"NX"], [b"XX"], [b"EX", b"1000"], [b"KEEPTTL"], [b"FOO"], [b"GET"], [b"PX"]]))
        self.rng.shuffle(opts)
        for o in opts:
            args += o
        return args

    def get(self):
        return [self.ci(b"GET"), self.key()]

    def setnx(self):
        return [self.ci(b"SETNX"), self.key(), self.value()]

    def setex(self):
        return [self.ci(b"SETEX"), self.key(), self.rel(), self.value()]

    def psetex(self):
        return [self.ci(b"PSETEX"), self.key(), self.rel(True), self.value()]

    def getset(self):
        return [self.ci(b"GETSET"), self.key(), self.value()]

    def getdel(self):
        return [self.ci(b"GETDEL"), self.key()]

    def getex(self):
        args = [self.ci(b"GETEX"), self.key()]
        r = self.rng.random()
        if r < 0.2:
            args += [self.ci(b"EX"), self.rel()]
        elif r < 0.35:
            args += [self.ci(b"PX"), self.rel(True)]
        elif r < 0.5:
            args += [self.ci(b"EXAT"), self.abs_()]
        elif r < 0.6:
            args += [self.ci(b"PXAT"), self.abs_(True)]
        elif r < 0.75:
            args += [self.ci(b"PERSIST")]
        elif r < 0.85:
            args += self.rng.choice([[b"EX", b"1000", b"PERSIST"], [b"KEEPTTL"], [b"EX"], [b"PERSIST", b"PERSIST"], [b"FOO"]])
        return args

    def mget(self):
        return [self.ci(b"MGET")] + self.keys_(1, 5)

    def mset(self):
        args = [self.ci(b"MSET")]
        for k in self.keys_(1, 4):
            args += [k, self.value()]
        return args

    def msetnx(self):
        args = [self.ci(b"MSETNX")]
        for k in self.keys_(1, 3):
            args += [k, self.value()]
        return args

    def append(self):
        return [self.ci(b"APPEND"), self.key(), self.value()]

    def strlen(self):
        return [self.ci(b"STRLEN"), self.key()]

    def idx(self):
        return str(self.rng.choice([0, 1, 2, 3, 5, 10, 100, -1, -2, -3, -10, -100, 9223372036854775807, -9223372036854775808])).encode()

    def getrange(self):
        name = b"SUBSTR" if self.rng.random() < 0.1 else b"GETRANGE"
        return [self.ci(name), self.key(), self.idx(), self.idx()]

    def setrange(self):
        offset = self.rng.choice([b"0", b"1", b"3", b"5", b"10", b"64", b"-1", b"536870912", b"abc"])
        return [self.ci(b"SETRANGE"), self.key(), offset, self.rng.choice([b"", b"x", b"XYZ", b"\x00"])]

    def incr(self):
        return [self.ci(self.rng.choice([b"INCR", b"DECR"])), self.key()]

    def incrby(self):
        n = self.rng.choice([b"1", b"-1", b"10", b"-100", b"0", b"9223372036854775807", b"-9223372036854775808", b"4611686018427387904"])
        if self.rng.random() < 0.1:
            n = self.rng.choice(BAD_INTS)
        return [self.ci(self.rng.choice([b"INCRBY", b"DECRBY"])), self.key(), n]

    def incrbyfloat(self):
        f = self.rng.choice(FLOATS) if self.rng.random() < 0.9 else self.rng.choice(BAD_FLOATS)
        return [self.ci(b"INCRBYFLOAT"), self.key(), f]

    def del_(self):
        return [self.ci(self.rng.choice([b"DEL", b"UNLINK"]))] + self.keys_(1, 3)

    def exists(self):
        return [self.ci(b"EXISTS")] + self.keys_(1, 4)

    def type_(self):
        return [self.ci(b"TYPE"), self.key()]

    def expire(self):
        cmd = self.rng.choice([b"EXPIRE", b"PEXPIRE", b"EXPIREAT", b"PEXPIREAT"])
        if cmd == b"EXPIRE":
            t = self.rel()
        elif cmd == b"PEXPIRE":
            t = self.rel(True)
        else:
            t = self.abs_(cmd == b"PEXPIREAT")
        args = [self.ci(cmd), self.key(), t]
        r = self.rng.random()
        if r < 0.4:
            args.append(self.ci(self.rng.choice([b"NX", b"XX", b"GT", b"LT"])))
        elif r < 0.5:
            args += self.rng.sample([b"NX", b"XX", b"GT", b"LT", b"FOO", b"nx"], 2)
        return args

    def ttl(self):
        return [self.ci(self.rng.choice([b"TTL", b"PTTL", b"EXPIRETIME", b"PEXPIRETIME"])), self.key()]

    def persist(self):
        return [self.ci(b"PERSIST"), self.key()]

    def rename(self):
        return [self.ci(self.rng.choice([b"RENAME", b"RENAMENX"])), self.key(), self.key()]

    def keys(self):
        return [self.ci(b"KEYS"), self.rng.choice(PATTERNS)]

    def scan(self):
        # Only cursors both servers define: 0, and values neither parses. Rialto's cursors are
        # ids it issued (docs/design.md §11.4); an id it never issued, such as Redis's -1, is
        # "ERR invalid cursor" there, while Redis treats any number as a table position.
        args = [self.ci(b"SCAN"), self.rng.choice([b"0", b"0", b"", b"abc", b" 1", b"18446744073709551616"])]
        if self.rng.random() < 0.5:
            args += [self.ci(b"MATCH"), self.rng.choice(PATTERNS)]
        if self.rng.random() < 0.5:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"5", b"100", b"0", b"-1", b"abc"])]
        if self.rng.random() < 0.1:
            args += self.rng.choice([[b"TYPE", b"string"], [b"TYPE", b"list"], [b"TYPE"], [b"FOO", b"x"], [b"MATCH"]])
        return args

    def scan_all(self):
        args = [SCAN_ALL]
        if self.rng.random() < 0.6:
            args += [b"MATCH", self.rng.choice(PATTERNS)]
        args += [b"COUNT", self.rng.choice([b"1", b"2", b"10", b"1000"])]
        if self.rng.random() < 0.15:
            args += [b"TYPE", self.rng.choice([b"string", b"list"])]
        return args

    def dbsize(self):
        return [self.ci(b"DBSIZE")]

    def randomkey(self):
        return [self.ci(b"RANDOMKEY")]

    def flush(self):
        args = [self.ci(self.rng.choice([b"FLUSHDB", b"FLUSHDB", b"FLUSHALL"]))]
        if self.rng.random() < 0.4:
            args.append(self.rng.choice([b"ASYNC", b"SYNC", b"sync", b"FOO"]))
        return args

    def select(self):
        db = self.rng.choices([b"0", b"1", b"15", b"16", b"-1", b"abc", b"1.0"], [40, 40, 3, 2, 1, 1, 1])[0]
        return [self.ci(b"SELECT"), db]

    def ping(self):
        return [self.ci(b"PING")] + ([self.value()] if self.rng.random() < 0.4 else [])

    def echo(self):
        return [self.ci(b"ECHO"), self.value()]

    def client(self):
        r = self.rng.random()
        if r < 0.3:
            return [b"CLIENT", self.ci(b"SETNAME"), self.rng.choice(NAMES)]
        if r < 0.55:
            return [b"CLIENT", self.ci(b"GETNAME")]
        if r < 0.65:
            return [b"CLIENT", self.ci(b"ID")]
        if r < 0.72:
            return [b"CLIENT", self.ci(b"INFO")]
        if r < 0.8:
            return [b"CLIENT", self.ci(b"LIST")] + self.rng.choice([[], [b"TYPE", b"normal"], [b"TYPE", b"foo"], [b"ID", b"abc"], [b"ID", b"999999999"]])
        if r < 0.92:
            return [b"CLIENT", self.ci(b"KILL")] + self.rng.choice(
                [[b"ID", b"999999999"], [b"ID", b"abc"], [b"ID", b"0"], [b"ADDR", b"1.2.3.4:5"], [b"1.2.3.4:5"], [b"FOO", b"bar"], [b"ADDR", b"1.2.3.4:5", b"SKIPME", b"yes"]]
            )
        return [b"CLIENT", self.rng.choice([b"NOSUCH", b"setname"])]

    def hello(self):
        if self.resp3:
            proto = self.rng.choices([b"3", b"2", b"4", b"abc"], [6, 1, 1, 1])[0]
        else:
            proto = self.rng.choices([b"2", b"3", b"4", b"abc"], [6, 1, 1, 1])[0]
        args = [self.ci(b"HELLO"), proto]
        r = self.rng.random()
        if r < 0.2:
            args += [b"SETNAME", self.rng.choice(NAMES)]
        elif r < 0.3:
            args += [b"AUTH", b"default", b"anything"]
        elif r < 0.35:
            args += self.rng.choice([[b"FOO"], [b"AUTH"], [b"SETNAME"]])
        return args

    def reset(self):
        return [self.ci(b"RESET")]

    def quit(self):
        return [self.ci(b"QUIT")]

    def server(self):
        return self.rng.choice(
            [
                lambda: [b"TIME"],
                lambda: [b"COMMAND", b"COUNT"],
                lambda: [b"COMMAND", b"GETKEYS"] + self.rng.choice(
                    [[b"SET", b"a", b"b"], [b"MSET", b"a", b"1", b"b", b"2"], [b"GET"], [b"PING"], [b"NOSUCH", b"a"], [b"EXPIRE", b"k", b"10"], [b"RENAME", b"a", b"b"], [b"GET", b"a", b"b"]]
                ),
                lambda: [b"COMMAND", b"INFO"] + self.rng.sample([b"get", b"set", b"nosuch", b"mset", b"expire", b"client"], 2),
                lambda: [b"CONFIG", b"GET"] + self.rng.choice([[b"databases"], [b"nosuchparam"], [], [b"databases", b"nosuch"]]),
                lambda: [b"CONFIG"],
                lambda: [b"SLOWLOG", self.rng.choice([b"GET", b"LEN", b"RESET", b"NOSUCH"])],
                lambda: [b"SLOWLOG", b"GET", self.rng.choice([b"1", b"-1", b"abc", b"-2"])],
                lambda: [b"INFO"] + ([self.rng.choice(INFO_SECTIONS)] if self.rng.random() < 0.8 else []),
                lambda: [b"TIME", b"x"],
                lambda: [b"DBSIZE", b"x"],
            ]
        )()

    def multi(self):
        return [self.ci(b"MULTI")]

    def exec_(self):
        return [self.ci(b"EXEC")]

    def discard(self):
        return [self.ci(b"DISCARD")]

    def watch(self):
        return [self.ci(b"WATCH")] + self.keys_(1, 3)

    def unwatch(self):
        return [self.ci(b"UNWATCH")]

    def eval_(self):
        body, nkeys = self.rng.choice(SCRIPTS)
        keys = [self.key() for _ in range(nkeys)]
        return [self.ci(self.rng.choice([b"EVAL", b"EVAL", b"EVAL_RO"])), body, str(nkeys).encode()] + keys + [self.value()]

    def evalsha(self):
        body, nkeys = self.rng.choice(SCRIPTS)
        sha = hashlib.sha1(body).hexdigest().encode()
        keys = [self.key() for _ in range(nkeys)]
        return [self.ci(b"EVALSHA"), sha, str(nkeys).encode()] + keys + [self.value()]

    def script(self):
        body, _ = self.rng.choice(SCRIPTS)
        return self.rng.choice(
            [
                [b"SCRIPT", self.ci(b"LOAD"), body],
                [b"SCRIPT", self.ci(b"EXISTS"), hashlib.sha1(body).hexdigest().encode(), b"0" * 40],
                [b"SCRIPT", self.ci(b"FLUSH")],
            ]
        )

    def db_arg(self):
        return self.rng.choice([b"0", b"1", b"2", b"15", b"16", b"-1", b"abc", b"99999999999"])

    def copy(self):
        args = [self.ci(b"COPY"), self.key(), self.key()]
        if self.rng.random() < 0.5:
            args += [self.ci(b"DB"), self.db_arg()]
        if self.rng.random() < 0.5:
            args.append(self.ci(b"REPLACE"))
        if self.rng.random() < 0.05:
            args.append(self.rng.choice([b"DB", b"extra"]))
        return args

    def move(self):
        return [self.ci(b"MOVE"), self.key(), self.db_arg()]

    def swapdb(self):
        pick = lambda: self.rng.choices([b"0", b"1", b"2", b"16", b"-1", b"x"], [40, 40, 10, 2, 1, 1])[0]
        return [self.ci(b"SWAPDB"), pick(), pick()]

    def bit_offset(self):
        return self.rng.choice([b"0", b"1", b"7", b"8", b"13", b"63", b"100", b"200", b"-1", b"4294967296", b"x"])

    def setbit(self):
        return [self.ci(b"SETBIT"), self.key(), self.bit_offset(), self.rng.choice([b"0", b"1", b"1", b"2", b"x"])]

    def getbit(self):
        return [self.ci(b"GETBIT"), self.key(), self.bit_offset()]

    def bit_range(self, n):
        idx = [b"0", b"1", b"2", b"-1", b"-2", b"5", b"100", b"-100", b"x"]
        args = [self.rng.choice(idx) for _ in range(n)]
        if n and self.rng.random() < 0.4:
            args.append(self.rng.choice([b"BYTE", b"BIT", b"bit", b"BITS"]))
        return args

    def bitcount(self):
        return [self.ci(b"BITCOUNT"), self.key()] + self.bit_range(self.rng.choice([0, 2, 2, 1]))

    def bitpos(self):
        bit = self.rng.choice([b"0", b"1", b"1", b"2"])
        return [self.ci(b"BITPOS"), self.key(), bit] + self.bit_range(self.rng.choice([0, 1, 2, 2]))

    def bitop(self):
        op = self.rng.choice([b"AND", b"OR", b"XOR", b"NOT", b"not", b"NAND"])
        return [self.ci(b"BITOP"), op, self.key()] + self.keys_(1, 3)

    def field_sub(self, write):
        ty = self.rng.choice([b"i8", b"u8", b"i1", b"u1", b"i5", b"u63", b"i64", b"u64", b"i65", b"x8"])
        off = self.rng.choice([b"0", b"3", b"8", b"#1", b"#2", b"100", b"-1", b"x"])
        val = self.rng.choice([b"1", b"-1", b"100", b"300", b"-200", b"9223372036854775807", b"x"])
        r = self.rng.random()
        if not write or r < 0.35:
            return [b"GET", ty, off]
        if r < 0.6:
            return [b"SET", ty, off, val]
        if r < 0.85:
            return [b"INCRBY", ty, off, val]
        return [b"OVERFLOW", self.rng.choice([b"WRAP", b"SAT", b"FAIL", b"fail", b"NOPE"])]

    def bitfield(self):
        args = [self.ci(b"BITFIELD"), self.key()]
        for _ in range(self.rng.randint(0, 3)):
            args += self.field_sub(True)
        return args

    def bitfield_ro(self):
        args = [self.ci(b"BITFIELD_RO"), self.key()]
        for _ in range(self.rng.randint(0, 2)):
            args += self.field_sub(self.rng.random() < 0.2)
        return args

    def lcs(self):
        args = [self.ci(b"LCS"), self.key(), self.key()]
        for _ in range(self.rng.randint(0, 3)):
            args += self.rng.choice([[b"LEN"], [b"IDX"], [b"WITHMATCHLEN"], [b"MINMATCHLEN", self.rng.choice([b"0", b"2", b"-1", b"x"])], [b"MINMATCHLEN"], [b"nope"]])
        return args

    def touch(self):
        return [self.ci(b"TOUCH")] + self.keys_()

    def hll_key(self):
        # Now and then a key of the general space: a string that is no HyperLogLog, or another
        # type (WRONGTYPE either way).
        if self.rng.random() < 0.06:
            return self.key()
        return self.rng.choices(HLL_KEYS, HLL_KEY_WEIGHTS)[0]

    def hll_element(self):
        r = self.rng.random()
        if r < 0.03:
            return b""
        if r < 0.06:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 20)))
        return b"e%d" % self.rng.randrange(30000)

    def pfadd(self):
        key = self.hll_key()
        n = self.rng.choices([0, 1, 2, 5, 30, 300], [1, 6, 4, 3, 2, 1])[0]
        if key not in HLL_KEYS[:3]:
            # The damaged key, or one of the general space that other writes may damage.
            n = min(n, 1)
        return [self.ci(b"PFADD"), key] + [self.hll_element() for _ in range(n)]

    def pfcount(self):
        n = self.rng.choices([1, 2, 3], [6, 2, 1])[0]
        return [self.ci(b"PFCOUNT")] + [self.hll_key() for _ in range(n)]

    def pfmerge(self):
        return [self.ci(b"PFMERGE"), self.hll_key()] + [self.hll_key() for _ in range(self.rng.randint(0, 3))]

    def pfdebug(self):
        sub = self.rng.choices([b"GETREG", b"DECODE", b"ENCODING", b"TODENSE", b"nosuch"], [1, 4, 4, 2, 1])[0]
        return [self.ci(b"PFDEBUG"), self.ci(sub), self.hll_key()]

    def hll_read(self):
        key = self.rng.choices(HLL_KEYS, HLL_KEY_WEIGHTS)[0]
        return self.rng.choices(
            [[b"GET", key], [b"GETRANGE", key, b"15", b"15"], [b"STRLEN", key], [b"OBJECT", b"ENCODING", key]],
            [6, 2, 1, 1],
        )[0]

    def hll_damage(self):
        if self.rng.random() < 0.25:
            return [b"APPEND", HLL_DAMAGED, bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 3)))]
        if self.rng.random() < 0.1:
            return [b"DEL", HLL_DAMAGED]
        at = self.rng.randrange(40) if self.rng.random() < 0.6 else self.rng.randrange(3000)
        return [b"SETRANGE", HLL_DAMAGED, b"%d" % at, bytes([self.rng.randrange(256)])]

    def hll_config(self):
        return [b"CONFIG", b"SET", b"hll-sparse-max-bytes", self.rng.choice(HLL_SPARSE_MAX)]

    def field(self):
        return self.rng.choices(FIELDS, FIELD_WEIGHTS)[0]

    def hset(self):
        if self.rng.random() < 0.03:
            # Past hash-max-listpack-entries (128): a hashtable on both sides.
            pairs = []
            for i in range(self.rng.randint(120, 160)):
                pairs += [b"m%d" % i, self.value()]
            return [self.ci(b"HSET"), self.key()] + pairs
        pairs = []
        for _ in range(self.rng.randint(1, 3)):
            pairs += [self.field(), self.value()]
        return [self.ci(b"HSET"), self.key()] + pairs

    def hmset(self):
        return [self.ci(b"HMSET"), self.key(), self.field(), self.value()]

    def hsetnx(self):
        return [self.ci(b"HSETNX"), self.key(), self.field(), self.value()]

    def hget(self):
        return [self.ci(b"HGET"), self.key(), self.field()]

    def hmget(self):
        return [self.ci(b"HMGET"), self.key()] + [self.field() for _ in range(self.rng.randint(1, 4))]

    def hgetall(self):
        return [self.ci(b"HGETALL"), self.key()]

    def hdel(self):
        return [self.ci(b"HDEL"), self.key()] + [self.field() for _ in range(self.rng.randint(1, 3))]

    def hexists(self):
        return [self.ci(b"HEXISTS"), self.key(), self.field()]

    def hlen(self):
        return [self.ci(b"HLEN"), self.key()]

    def hstrlen(self):
        return [self.ci(b"HSTRLEN"), self.key(), self.field()]

    def hkeys(self):
        return [self.ci(b"HKEYS"), self.key()]

    def hvals(self):
        return [self.ci(b"HVALS"), self.key()]

    def hincrby(self):
        by = self.rng.choice([b"1", b"-3", b"100", b"9223372036854775807", b"-9223372036854775808"] + BAD_INTS[:3])
        return [self.ci(b"HINCRBY"), self.key(), self.field(), by]

    def hincrbyfloat(self):
        by = self.rng.choice(FLOATS + BAD_FLOATS[:5])
        return [self.ci(b"HINCRBYFLOAT"), self.key(), self.field(), by]

    def hrandfield(self):
        args = [self.ci(b"HRANDFIELD"), self.key()]
        if self.rng.random() < 0.7:
            args.append(self.rng.choice([b"0", b"1", b"2", b"3", b"200", b"-1", b"-4", b"abc"]))
            if self.rng.random() < 0.4:
                args.append(self.rng.choice([b"WITHVALUES", b"withvalues", b"WITHSCORES"]))
        return args

    def hscan(self):
        args = [self.ci(b"HSCAN"), self.key(), self.rng.choice([b"0", b"0", b"abc", b""])]
        if self.rng.random() < 0.4:
            args += [self.ci(b"MATCH"), self.rng.choice([b"*", b"f*", b"m1*", b"[", b"?"])]
        if self.rng.random() < 0.4:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"10", b"0", b"-1", b"abc"])]
        return args

    def hscan_all(self):
        args = [HSCAN_ALL, self.key()]
        if self.rng.random() < 0.4:
            args += [b"MATCH", self.rng.choice([b"*", b"f*", b"m1*"])]
        args += [b"COUNT", self.rng.choice([b"1", b"7", b"100"])]
        return args

    def member(self):
        """A set member: integers (an intset on both sides while all are) or strings."""
        return self.rng.choice([b"1", b"2", b"3", b"-5", b"10", b"01", b"a", b"b", b"", b"x" * 70])

    def sadd(self):
        r = self.rng.random()
        if r < 0.03:
            # Past set-max-listpack-entries (128) or set-max-intset-entries (512).
            n = self.rng.choice([140, 530])
            fmt = b"%d" if n == 530 else b"m%d"
            return [self.ci(b"SADD"), self.key()] + [fmt % i for i in range(n)]
        return [self.ci(b"SADD"), self.key()] + [self.member() for _ in range(self.rng.randint(1, 4))]

    def srem(self):
        return [self.ci(b"SREM"), self.key()] + [self.member() for _ in range(self.rng.randint(1, 3))]

    def sismember(self):
        return [self.ci(b"SISMEMBER"), self.key(), self.member()]

    def smismember(self):
        return [self.ci(b"SMISMEMBER"), self.key()] + [self.member() for _ in range(self.rng.randint(1, 3))]

    def smembers(self):
        return [self.ci(b"SMEMBERS"), self.key()]

    def scard(self):
        return [self.ci(b"SCARD"), self.key()]

    def spop(self):
        # Only pops whose outcome is not random: the whole set, none, or an error.
        return [self.ci(b"SPOP"), self.key(), self.rng.choice([b"1000", b"0", b"-1", b"abc"])]

    def srandmember(self):
        args = [self.ci(b"SRANDMEMBER"), self.key()]
        if self.rng.random() < 0.8:
            args.append(self.rng.choice([b"0", b"1", b"3", b"1000", b"-1", b"-4", b"abc", b"-9223372036854775808"]))
        return args

    def smove(self):
        return [self.ci(b"SMOVE"), self.key(), self.key(), self.member()]

    def sinter(self):
        return [self.ci(b"SINTER")] + self.keys_(1, 3)

    def sintercard(self):
        keys = self.keys_(1, 3)
        args = [self.ci(b"SINTERCARD"), self.rng.choice([b"%d" % len(keys)] * 4 + [b"0", b"9", b"abc"])] + keys
        if self.rng.random() < 0.4:
            args += [self.ci(b"LIMIT"), self.rng.choice([b"0", b"1", b"2", b"-1", b"abc"])]
        return args

    def sunion(self):
        return [self.ci(b"SUNION")] + self.keys_(1, 3)

    def sdiff(self):
        return [self.ci(b"SDIFF")] + self.keys_(1, 3)

    def sstore(self):
        name = self.rng.choice([b"SINTERSTORE", b"SUNIONSTORE", b"SDIFFSTORE"])
        return [self.ci(name), self.key()] + self.keys_(1, 3)

    def sscan(self):
        args = [self.ci(b"SSCAN"), self.key(), self.rng.choice([b"0", b"0", b"abc", b""])]
        if self.rng.random() < 0.4:
            args += [self.ci(b"MATCH"), self.rng.choice([b"*", b"1*", b"m1*", b"[", b"?"])]
        if self.rng.random() < 0.4:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"10", b"0", b"-1", b"abc"])]
        return args

    def object_encoding(self):
        return [self.ci(b"OBJECT"), self.ci(b"ENCODING"), self.key()]
        return self.rng.choices(MEMBERS, MEMBER_WEIGHTS)[0]

    def score(self):
        return self.rng.choice(BAD_SCORES) if self.rng.random() < 0.03 else self.rng.choice(SCORES)

    def rscore(self):
        return self.rng.choice(RANGE_SCORES)

    def lex(self):
        return self.rng.choice(LEX_BOUNDS)

    def zadd(self):
        lex = self.rng.random() < 0.25
        key = self.rng.choice(LEX_KEYS) if lex else self.key()
        opts = []
        for o in (b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"):
            if self.rng.random() < (0.02 if lex and o == b"INCR" else 0.12):
                opts.append(self.ci(o))
        if lex:
            opts = [o for o in opts if o.upper() != b"INCR"]
        score = (lambda: b"0") if lex else self.score
        if self.rng.random() < 0.03:
            # Past zset-max-listpack-entries (128): a skiplist on both sides.
            items = []
            for i in range(self.rng.randint(120, 160)):
                items += [score(), b"m%d" % i]
            return [self.ci(b"ZADD"), key] + opts + items
        items = []
        for _ in range(1 if self.rng.random() < 0.5 else self.rng.randint(1, 3)):
            items += [score(), self.member()]
        return [self.ci(b"ZADD"), key] + opts + items

    def zincrby(self):
        return [self.ci(b"ZINCRBY"), self.key(), self.score(), self.member()]

    def zrem(self):
        return [self.ci(b"ZREM"), self.key()] + [self.member() for _ in range(self.rng.randint(1, 3))]

    def zscore(self):
        return [self.ci(b"ZSCORE"), self.key(), self.member()]

    def zmscore(self):
        return [self.ci(b"ZMSCORE"), self.key()] + [self.member() for _ in range(self.rng.randint(1, 3))]

    def zcard(self):
        return [self.ci(b"ZCARD"), self.rng.choice([self.key()] + LEX_KEYS)]

    def zrange_opts(self, by_allowed=True, rev_allowed=True, withscores=True):
        opts = []
        if self.rng.random() < 0.3:
            opts += [self.ci(b"LIMIT"), self.rng.choice([b"0", b"1", b"2", b"-1", b"5"]), self.rng.choice([b"1", b"2", b"-1", b"0", b"10", b"-3"])]
        if withscores and self.rng.random() < 0.4:
            opts.append(self.ci(b"WITHSCORES"))
        if rev_allowed and self.rng.random() < 0.1:
            opts.append(self.ci(b"REV"))
        self.rng.shuffle(opts)
        return opts

    def zrange(self):
        r = self.rng.random()
        if r < 0.4:
            args = [self.ci(b"ZRANGE"), self.key(), self.rng.choice([b"0", b"1", b"-1", b"-2", b"3", b"-100"]), self.rng.choice([b"-1", b"0", b"2", b"100", b"-3"])]
            opts = self.zrange_opts()
            if self.rng.random() < 0.3:
                # LIMIT with a rank range is an error, except Redis's "no limit" count of -1.
                opts = [o for o in opts if o.upper() != b"LIMIT"]
        elif r < 0.8:
            args = [self.ci(b"ZRANGE"), self.key(), self.rscore(), self.rscore(), self.ci(b"BYSCORE")]
            opts = self.zrange_opts()
        else:
            args = [self.ci(b"ZRANGE"), self.rng.choice(LEX_KEYS), self.lex(), self.lex(), self.ci(b"BYLEX")]
            opts = self.zrange_opts(withscores=self.rng.random() < 0.1)
        args += opts
        if self.rng.random() < 0.1:
            args.insert(self.rng.randrange(4, len(args) + 1), self.rng.choice([b"BYSCORE", b"BYLEX", b"REV"]))
        return args

    def zrangebyscore(self):
        name = self.rng.choice([b"ZRANGEBYSCORE", b"ZREVRANGEBYSCORE"])
        return [self.ci(name), self.key(), self.rscore(), self.rscore()] + self.zrange_opts(rev_allowed=False)

    def zrangebylex(self):
        name = self.rng.choice([b"ZRANGEBYLEX", b"ZREVRANGEBYLEX"])
        return [self.ci(name), self.rng.choice(LEX_KEYS), self.lex(), self.lex()] + self.zrange_opts(rev_allowed=False, withscores=self.rng.random() < 0.1)

    def zrevrange(self):
        args = [self.ci(b"ZREVRANGE"), self.key(), self.rng.choice([b"0", b"1", b"-2"]), self.rng.choice([b"-1", b"1", b"5"])]
        if self.rng.random() < 0.5:
            args.append(self.ci(b"WITHSCORES"))
        return args

    def zrank(self):
        return [self.ci(self.rng.choice([b"ZRANK", b"ZREVRANK"])), self.rng.choice([self.key(), self.key(), LEX_KEYS[0]]), self.member()]

    def zcount(self):
        return [self.ci(b"ZCOUNT"), self.key(), self.rscore(), self.rscore()]

    def zlexcount(self):
        return [self.ci(b"ZLEXCOUNT"), self.rng.choice(LEX_KEYS), self.lex(), self.lex()]

    def zpop(self):
        args = [self.ci(self.rng.choice([b"ZPOPMIN", b"ZPOPMAX"])), self.rng.choice([self.key(), self.key(), LEX_KEYS[1]])]
        if self.rng.random() < 0.5:
            args.append(self.rng.choice([b"0", b"1", b"2", b"5", b"-1", b"abc"]))
        return args

    def zmpop(self):
        args = [self.ci(b"ZMPOP")]
        keys = self.keys_(1, 3)
        args.append(self.rng.choice([str(len(keys)).encode()] * 8 + [b"0", b"9", b"x"]))
        args += keys
        args.append(self.ci(self.rng.choice([b"MIN", b"MAX", b"MIN", b"MAX", b"UP"])))
        if self.rng.random() < 0.5:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"2", b"10", b"0", b"-1", b"x"])]
        return args

    # --- lists

    def element(self):
        if self.rng.random() < 0.02:
            # Past list-max-listpack-size's 8 KiB: a large list on Rialto's side.
            return b"e" * self.rng.randint(8000, 9000)
        return self.rng.choice([b"a", b"b", b"c", b"1", b"22", b""]) if self.rng.random() < 0.7 else self.value()

    def index(self):
        return self.rng.choice([b"0", b"1", b"2", b"-1", b"-2", b"5", b"-7", b"100", b"x", b"9223372036854775807", b"-9223372036854775808"])

    def lpush(self):
        cmd = self.rng.choice([b"LPUSH", b"RPUSH", b"LPUSH", b"RPUSH", b"LPUSHX", b"RPUSHX"])
        n = self.rng.randint(1, 5) if self.rng.random() < 0.97 else self.rng.randint(200, 300)
        return [self.ci(cmd), self.key()] + [self.element() for _ in range(n)]

    def lpop(self):
        args = [self.ci(self.rng.choice([b"LPOP", b"RPOP"])), self.key()]
        if self.rng.random() < 0.5:
            args.append(self.rng.choice([b"0", b"1", b"2", b"5", b"-1", b"abc", b"1000"]))
        return args

    def lrange(self):
        return [self.ci(b"LRANGE"), self.key(), self.index(), self.index()]

    def lindex(self):
        return [self.ci(b"LINDEX"), self.key(), self.index()]

    def llen(self):
        return [self.ci(b"LLEN"), self.key()]

    def lset(self):
        return [self.ci(b"LSET"), self.key(), self.index(), self.element()]

    def linsert(self):
        return [self.ci(b"LINSERT"), self.key(), self.ci(self.rng.choice([b"BEFORE", b"AFTER", b"AROUND"])), self.element(), self.element()]

    def lrem(self):
        return [self.ci(b"LREM"), self.key(), self.rng.choice([b"0", b"1", b"-1", b"2", b"-3", b"x"]), self.element()]

    def ltrim(self):
        return [self.ci(b"LTRIM"), self.key(), self.index(), self.index()]

    def lpos(self):
        args = [self.ci(b"LPOS"), self.key(), self.element()]
        for opt, vals in ((b"RANK", [b"1", b"2", b"-1", b"-2", b"0", b"x"]), (b"COUNT", [b"0", b"1", b"3", b"-1"]), (b"MAXLEN", [b"0", b"2", b"-1"])):
            if self.rng.random() < 0.3:
                args += [self.ci(opt), self.rng.choice(vals)]
        if self.rng.random() < 0.03:
            args.append(b"BOGUS")
        return args

    def lmove(self):
        if self.rng.random() < 0.3:
            return [self.ci(b"RPOPLPUSH"), self.key(), self.key()]
        side = lambda: self.ci(self.rng.choice([b"LEFT", b"RIGHT", b"LEFT", b"RIGHT", b"MIDDLE"]))
        return [self.ci(b"LMOVE"), self.key(), self.key(), side(), side()]

    def lmpop(self):
        args = [self.ci(b"LMPOP")]
        keys = self.keys_(1, 3)
        args.append(self.rng.choice([str(len(keys)).encode()] * 8 + [b"0", b"9", b"x"]))
        args += keys
        args.append(self.ci(self.rng.choice([b"LEFT", b"RIGHT", b"LEFT", b"RIGHT", b"UP"])))
        if self.rng.random() < 0.5:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"2", b"10", b"0", b"-1", b"x"])]
        return args

    def bpop(self):
        # Short timeouts only: a pop that waits replies null on both sides after it.
        timeout = self.rng.choice([b"0.01", b"0.02", b"0.01", b"-1", b"x"])
        r = self.rng.random()
        if r < 0.3:
            return [self.ci(self.rng.choice([b"BLPOP", b"BRPOP"]))] + self.keys_(1, 3) + [timeout]
        if r < 0.5:
            return [self.ci(self.rng.choice([b"BZPOPMIN", b"BZPOPMAX"]))] + self.keys_(1, 3) + [timeout]
        if r < 0.7:
            side = lambda: self.ci(self.rng.choice([b"LEFT", b"RIGHT"]))
            return [self.ci(b"BLMOVE"), self.key(), self.key(), side(), side(), timeout]
        if r < 0.8:
            return [self.ci(b"BRPOPLPUSH"), self.key(), self.key(), timeout]
        keys = self.keys_(1, 3)
        which = self.rng.choice([b"BLMPOP", b"BZMPOP"])
        where = self.rng.choice([b"LEFT", b"RIGHT"] if which == b"BLMPOP" else [b"MIN", b"MAX"])
        args = [self.ci(which), timeout, str(len(keys)).encode()] + keys + [self.ci(where)]
        if self.rng.random() < 0.5:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"3", b"0"])]
        return args

    # --- streams

    def skey(self):
        if self.rng.random() < 0.04:
            return self.key()
        return self.rng.choice(STREAM_KEYS)

    def sid(self, strict=True, star=False):
        """An explicit id, now and then one that does not parse (or a `ms-*`)."""
        r = self.rng.random()
        if r < 0.04:
            return self.rng.choice(STREAM_BAD_IDS)
        # A clock for the streams: XADD's ids mostly move forward, the others land around
        # what was added lately.
        if not hasattr(self, "sms"):
            self.sms = 1
        if star:
            if self.rng.random() < 0.3:
                self.sms += self.rng.randint(1, 3)
            ms = self.sms if self.rng.random() < 0.85 else self.rng.randint(0, self.sms)
            if r < 0.6:
                return b"%d-*" % ms
        else:
            ms = self.rng.randint(max(0, self.sms - 25), self.sms + 1)
        if r < 0.15:
            return b"%d" % ms
        if r < 0.17:
            return b"18446744073709551615-18446744073709551615"
        return b"%d-%d" % (ms, self.rng.randint(0, 3))

    def sbound(self, low):
        r = self.rng.random()
        if r < 0.25:
            return b"-" if low else b"+"
        if r < 0.3:
            return b"+" if low else b"-"
        if r < 0.45:
            return b"(" + self.sid()
        return self.sid()

    def sfields(self):
        out = []
        for _ in range(self.rng.randint(1, 3)):
            out += [self.rng.choice(STREAM_FIELDS), self.value()]
        if self.rng.random() < 0.03:
            out.pop()
        return out

    def strim(self):
        kind = self.ci(self.rng.choice([b"MAXLEN", b"MINID"]))
        op = self.rng.choice([[], [b"="], [b"~"], [b"~"]])
        if kind.upper() == b"MAXLEN":
            thr = self.rng.choice([b"0", b"1", b"2", b"3", b"5", b"8", b"-1", b"x"])
        else:
            thr = self.sid()
        args = [kind] + op + [thr]
        if self.rng.random() < 0.3:
            args += [self.ci(b"LIMIT"), self.rng.choice([b"0", b"1", b"2", b"5", b"-1", b"y"])]
        return args

    def xadd(self):
        args = [self.ci(b"XADD"), self.skey()]
        if self.rng.random() < 0.1:
            args.append(self.ci(b"NOMKSTREAM"))
        if self.rng.random() < 0.25:
            args += self.strim()
        return args + [self.sid(star=True)] + self.sfields()

    def xlen(self):
        return [self.ci(b"XLEN"), self.skey()]

    def xrange(self):
        rev = self.rng.random() < 0.4
        a, b = self.sbound(not rev), self.sbound(rev)
        args = [self.ci(b"XREVRANGE" if rev else b"XRANGE"), self.skey(), a, b]
        if self.rng.random() < 0.4:
            args += [self.ci(b"COUNT"), self.rng.choice([b"0", b"1", b"2", b"5", b"-1", b"x"])]
        return args

    def xdel(self):
        return [self.ci(b"XDEL"), self.skey()] + [self.sid() for _ in range(self.rng.randint(1, 3))]

    def xtrim(self):
        return [self.ci(b"XTRIM"), self.skey()] + self.strim()

    def xsetid(self):
        args = [self.ci(b"XSETID"), self.skey(), self.sid()]
        if self.rng.random() < 0.3:
            args += [self.ci(b"ENTRIESADDED"), self.rng.choice([b"0", b"3", b"10", b"100", b"-1", b"z"])]
        if self.rng.random() < 0.3:
            args += [self.ci(b"MAXDELETEDID"), self.sid()]
        return args

    def xstreams(self, group):
        keys = [self.skey() for _ in range(self.rng.randint(1, 2))]
        ids = []
        for _ in keys:
            r = self.rng.random()
            if group:
                ids.append(b">" if r < 0.6 else b"$" if r < 0.63 else b"0" if r < 0.8 else self.sid())
            else:
                ids.append(b"$" if r < 0.15 else b">" if r < 0.17 else b"0" if r < 0.4 else self.sid())
        if self.rng.random() < 0.03:
            ids.pop()
        return [self.ci(b"STREAMS")] + keys + ids

    def xread(self):
        args = [self.ci(b"XREAD")]
        if self.rng.random() < 0.4:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"2", b"0", b"-1"])]
        if self.rng.random() < 0.1:
            args += [self.ci(b"BLOCK"), self.rng.choice([b"1", b"2", b"-1", b"x"])]
        return args + self.xstreams(False)

    def xgroup(self):
        key, group = self.skey(), self.rng.choice(STREAM_GROUPS)
        r = self.rng.random()
        if r < 0.4:
            args = [self.ci(b"XGROUP"), self.ci(b"CREATE"), key, group, self.rng.choice([b"$", b"0", self.sid()])]
            if self.rng.random() < 0.4:
                args.append(self.ci(b"MKSTREAM"))
            if self.rng.random() < 0.2:
                args += [self.ci(b"ENTRIESREAD"), self.rng.choice([b"0", b"2", b"-1", b"-2", b"q"])]
            return args
        if r < 0.55:
            args = [self.ci(b"XGROUP"), self.ci(b"SETID"), key, group, self.rng.choice([b"$", b"0", b"+", self.sid()])]
            if self.rng.random() < 0.3:
                args += [self.ci(b"ENTRIESREAD"), self.rng.choice([b"0", b"3", b"-1"])]
            return args
        if r < 0.65:
            return [self.ci(b"XGROUP"), self.ci(b"DESTROY"), key, group]
        if r < 0.8:
            return [self.ci(b"XGROUP"), self.ci(b"CREATECONSUMER"), key, group, self.rng.choice(STREAM_CONSUMERS)]
        if r < 0.95:
            return [self.ci(b"XGROUP"), self.ci(b"DELCONSUMER"), key, group, self.rng.choice(STREAM_CONSUMERS)]
        # (HELP's text is Rialto's own words, design.md 11.4.)
        return [self.ci(b"XGROUP"), self.rng.choice([b"NOSUCH", b"CREATE"])]

    def xreadgroup(self):
        args = [self.ci(b"XREADGROUP"), self.ci(b"GROUP"), self.rng.choice(STREAM_GROUPS), self.rng.choice(STREAM_CONSUMERS)]
        if self.rng.random() < 0.4:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"2", b"0"])]
        if self.rng.random() < 0.15:
            args.append(self.ci(b"NOACK"))
        if self.rng.random() < 0.08:
            args += [self.ci(b"BLOCK"), self.rng.choice([b"1", b"2"])]
        return args + self.xstreams(True)

    def xack(self):
        return [self.ci(b"XACK"), self.skey(), self.rng.choice(STREAM_GROUPS)] + [self.sid() for _ in range(self.rng.randint(1, 3))]

    def min_idle(self):
        return self.rng.choice([b"0", b"0", b"3600000", b"-5", b"x"])

    def xpending(self):
        args = [self.ci(b"XPENDING"), self.skey(), self.rng.choice(STREAM_GROUPS)]
        if self.rng.random() < 0.6:
            if self.rng.random() < 0.3:
                args += [self.ci(b"IDLE"), self.min_idle()]
            args += [self.sbound(True), self.sbound(False), self.rng.choice([b"1", b"3", b"10", b"0", b"-1"])]
            if self.rng.random() < 0.4:
                args.append(self.rng.choice(STREAM_CONSUMERS))
        return args

    def xclaim(self):
        args = [self.ci(b"XCLAIM"), self.skey(), self.rng.choice(STREAM_GROUPS), self.rng.choice(STREAM_CONSUMERS), self.min_idle()]
        args += [self.sid() for _ in range(self.rng.randint(1, 3))]
        for opt in (b"FORCE", b"JUSTID"):
            if self.rng.random() < 0.2:
                args.append(self.ci(opt))
        if self.rng.random() < 0.15:
            args += [self.ci(b"IDLE"), self.rng.choice([b"0", b"100000000", b"x"])]
        if self.rng.random() < 0.1:
            args += [self.ci(b"TIME"), self.rng.choice([b"1", b"4102444800000"])]
        if self.rng.random() < 0.15:
            args += [self.ci(b"RETRYCOUNT"), self.rng.choice([b"0", b"5", b"-1"])]
        if self.rng.random() < 0.1:
            args += [self.ci(b"LASTID"), self.sid()]
        if self.rng.random() < 0.03:
            args.append(self.ci(b"NOSUCH"))
        return args

    def xautoclaim(self):
        args = [self.ci(b"XAUTOCLAIM"), self.skey(), self.rng.choice(STREAM_GROUPS), self.rng.choice(STREAM_CONSUMERS), self.min_idle(), self.sbound(True)]
        if self.rng.random() < 0.5:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"2", b"10", b"0", b"-1"])]
        if self.rng.random() < 0.3:
            args.append(self.ci(b"JUSTID"))
        return args

    def xinfo(self):
        key = self.skey()
        r = self.rng.random()
        if r < 0.4:
            args = [self.ci(b"XINFO"), self.ci(b"STREAM"), key]
            if self.rng.random() < 0.4:
                args.append(self.ci(b"FULL"))
                if self.rng.random() < 0.5:
                    args += [self.ci(b"COUNT"), self.rng.choice([b"0", b"1", b"3", b"-1"])]
            return args
        if r < 0.7:
            return [self.ci(b"XINFO"), self.ci(b"GROUPS"), key]
        if r < 0.95:
            return [self.ci(b"XINFO"), self.ci(b"CONSUMERS"), key, self.rng.choice(STREAM_GROUPS)]
        return [self.ci(b"XINFO"), self.rng.choice([b"NOSUCH", b"STREAM"])]

    def stream_nodes(self):
        """Small nodes, so that approximate trims have nodes to remove."""
        if self.in_multi:
            return [self.ci(b"XLEN"), self.skey()]
        return [b"CONFIG", b"SET", b"stream-node-max-entries", self.rng.choice([b"2", b"3", b"5", b"100"])]

    # --- SORT

    def sort_elem(self):
        r = self.rng.random()
        pool = SORT_NUMBERS if r < 0.6 else SORT_WORDS_MIXED if r < 0.95 else SORT_ODD
        return self.rng.choice(pool)

    def sort_setup(self):
        """Writes SORT's keys: its list, sorted set and sets, and the weights its patterns read."""
        r = self.rng.random()
        pick = lambda pool, lo, hi: [self.rng.choice(pool) for _ in range(self.rng.randint(lo, hi))]
        if r < 0.25:
            # Sometimes long enough for Redis's partial quicksort to pick medians of nine.
            n = self.rng.randint(1, 6) if self.rng.random() < 0.7 else self.rng.randint(40, 70)
            theme = self.rng.choice([SORT_NUMBERS, SORT_WORDS_MIXED, None])
            items = [self.rng.choice(theme) if theme else self.sort_elem() for _ in range(n)]
            if self.rng.random() < 0.5:
                # Start over, so that numbers alone are often what it holds.
                self.queued = [b"RPUSH", SORT_LIST] + items
                return [b"DEL", SORT_LIST]
            return [b"RPUSH", SORT_LIST] + items
        if r < 0.37:
            items = []
            # Past zset-max-listpack-entries sometimes: a skiplist on both sides.
            members = [self.sort_elem() for _ in range(self.rng.randint(1, 5))]
            if self.rng.random() < 0.1:
                members = [b"%d" % i for i in range(130)]
            for m in members:
                items += [self.rng.choice([b"1", b"2", b"-1", b"0.5", b"3"]), m]
            return [b"ZADD", SORT_ZSET] + items
        if r < 0.47:
            return [b"SADD", SORT_INTS] + pick(SORT_INT_ELEMS, 1, 4)
        if r < 0.55:
            return [b"SADD", SORT_WORDS] + pick(SORT_WORD_ELEMS, 1, 4)
        if r < 0.58:
            return [b"DEL", self.rng.choice(SORT_KEYS)]
        elem = self.rng.choice(SORT_NUMBERS + SORT_WORDS_MIXED + SORT_INT_ELEMS + SORT_WORD_ELEMS + [b"5", b"6"])
        weight = self.rng.choice(SORT_WEIGHTS) if self.rng.random() < 0.95 else self.rng.choice(SORT_BAD_WEIGHTS)
        if r < 0.8:
            return [b"SET", b"w_" + elem, weight]
        if r < 0.97:
            field = self.rng.choice([b"f", b"f", b"g"])
            return [b"HSET", b"h_" + elem, field, weight]
        return [b"DEL", self.rng.choice([b"w_", b"h_"]) + elem]

    def sort(self):
        """SORT and SORT_RO where the result does not depend on how a set happens to iterate:
        by number (ties fall back to the elements' bytes), by ALPHA into STORE (whole bytes),
        ALPHA, by nosort, by ALPHA weights (a list or a set of integers, whose order is Redis's
        on both sides), and from scripts. The key sorted is one of SORT's own (whose types the
        stream knows) or, for WRONGTYPE, a weight: never one of the other keys, since Redis
        converts a sorted set it sorts to a skiplist, which OBJECT ENCODING would show; the
        other keys are STORE's destinations."""
        own = self.rng.random() < 0.9
        weight = self.rng.choice([b"w_", b"h_"]) + self.rng.choice(SORT_NUMBERS)
        key = self.rng.choice(SORT_KEYS) if own else weight
        ordered = key in (SORT_LIST, SORT_INTS)
        store = self.rng.random() < 0.25
        ro = not store and self.rng.random() < 0.2
        opts = []
        alpha = self.rng.random() < 0.5 and (store or own)
        by = None
        if self.rng.random() < 0.5:
            by = self.rng.choice(SORT_BY)
            nosort = b"*" not in by.split(b"\x00")[0]
            if nosort and not store and key in (SORT_WORDS,) + tuple(KEYS):
                by = None  # a set (of words, or any key that may be one) would iterate
            elif alpha and not nosort and not ordered:
                by = None  # equal ALPHA weights keep the input order, a set's or a zset's
        if by is not None:
            opts += [self.ci(b"BY"), by]
        if self.rng.random() < 0.4:
            opts += [self.ci(b"LIMIT"), *self.rng.choice(SORT_LIMITS)]
        for _ in range(self.rng.choice([0, 0, 1, 1, 2])):
            opts += [self.ci(b"GET"), self.rng.choice(SORT_GET)]
        if self.rng.random() < 0.4:
            opts.append(self.ci(self.rng.choice([b"ASC", b"DESC", b"DESC"])))
        if alpha:
            opts.append(self.ci(b"ALPHA"))
        if store:
            opts += [self.ci(b"STORE"), self.rng.choice([self.key(), b"sort:dst"])]
        if self.rng.random() < 0.03:
            # A stray option name takes the word after it (a stray BY could make that nosort
            # over a set of words).
            stray = [b"LIMIT", b"GET", b"STORE", b"NOSUCH"] + ([b"BY"] if key != SORT_WORDS else [])
            opts.insert(self.rng.randrange(len(opts) + 1), self.rng.choice(stray))
        if own and not store and self.rng.random() < 0.1:
            # From a script: a set under nosort is sorted ALPHA there.
            body = b"return redis.call('" + self.rng.choice([b"sort", b"sort_ro"]) + b"', KEYS[1], unpack(ARGV))"
            self.queued = [self.ci(b"EVAL"), body, b"1", key] + opts
        else:
            self.queued = [self.ci(b"SORT_RO" if ro else b"SORT"), key] + opts
        return list(SORT_ERRNO_RESET)

    def zremrange(self):
        r = self.rng.random()
        if r < 0.35:
            return [self.ci(b"ZREMRANGEBYRANK"), self.key(), self.rng.choice([b"0", b"1", b"-1", b"5", b"abc"]), self.rng.choice([b"0", b"-1", b"2", b"-3"])]
        if r < 0.7:
            return [self.ci(b"ZREMRANGEBYSCORE"), self.key(), self.rscore(), self.rscore()]
        return [self.ci(b"ZREMRANGEBYLEX"), self.rng.choice(LEX_KEYS), self.lex(), self.lex()]

    def zscan(self):
        args = [self.ci(b"ZSCAN"), self.rng.choice([self.key(), LEX_KEYS[0]]), self.rng.choice([b"0", b"0", b"abc"])]
        if self.rng.random() < 0.4:
            args += [self.ci(b"MATCH"), self.rng.choice([b"*", b"a*", b"m1*", b"["])]
        if self.rng.random() < 0.4:
            args += [self.ci(b"COUNT"), self.rng.choice([b"1", b"10", b"0", b"abc"])]
        return args

    def zrandmember(self):
        args = [self.ci(b"ZRANDMEMBER"), self.key()]
        if self.rng.random() < 0.7:
            args.append(self.rng.choice([b"0", b"1", b"2", b"200", b"-1", b"-3", b"abc"]))
            if self.rng.random() < 0.4:
                args.append(self.rng.choice([b"WITHSCORES", b"withscores", b"WITHVALUES"]))
        return args

    def zrangestore(self):
        if self.rng.random() < 0.5:
            args = [self.ci(b"ZRANGESTORE"), self.key(), self.key(), self.rng.choice([b"0", b"1", b"-2"]), self.rng.choice([b"-1", b"2"])]
        else:
            args = [self.ci(b"ZRANGESTORE"), self.key(), self.key(), self.rscore(), self.rscore(), self.ci(b"BYSCORE")]
        return args + self.zrange_opts(withscores=self.rng.random() < 0.05)

    def zcombine_args(self, store, card=False):
        n = self.rng.randint(1, 3)
        keys = [self.rng.choice([self.key(), self.key(), LEX_KEYS[0]]) for _ in range(n)]
        num = str(n).encode() if self.rng.random() < 0.95 else self.rng.choice([b"0", b"-1", b"5", b"abc"])
        opts = []
        if card:
            if self.rng.random() < 0.4:
                opts += [self.ci(b"LIMIT"), self.rng.choice([b"0", b"1", b"2", b"-1", b"abc"])]
        else:
            if self.rng.random() < 0.3:
                opts += [self.ci(b"WEIGHTS")] + [self.rng.choice([b"1", b"2", b"-1.5", b"0", b"inf", b"0.1", b"abc"]) for _ in range(n)]
            if self.rng.random() < 0.3:
                opts += [self.ci(b"AGGREGATE"), self.rng.choice([b"SUM", b"min", b"MAX", b"avg"])]
            if not store and self.rng.random() < 0.5:
                opts.append(self.ci(b"WITHSCORES"))
        return [num] + keys + opts

    def zcombine(self):
        name = self.rng.choice([b"ZUNION", b"ZINTER", b"ZDIFF", b"ZINTERCARD"])
        return [self.ci(name)] + self.zcombine_args(False, name == b"ZINTERCARD")

    def zstore(self):
        name = self.rng.choice([b"ZUNIONSTORE", b"ZINTERSTORE", b"ZDIFFSTORE"])
        # (Never into a lex key: a union of other keys would give it different scores.)
        return [self.ci(name), self.key()] + self.zcombine_args(True)

    # --- geospatial indexes

    def geo_key(self):
        r = self.rng.random()
        return self.rng.choice(GEO_OTHER) if r < 0.08 else self.rng.choice(GEO_KEYS)

    def geo_coord(self):
        """A longitude and a latitude: mostly near one another, some anywhere, a few invalid."""
        r = self.rng.random()
        if r < 0.04:
            return [self.rng.choice([b"181", b"-180.5", b"abc", b"nan", b"inf"]), b"10"]
        if r < 0.07:
            return [b"10", self.rng.choice([b"85.06", b"-86", b"90", b"1e400", b""])]
        if r < 0.25:
            lon, lat = self.rng.uniform(-180, 180), self.rng.uniform(-85.05, 85.05)
        else:
            lon, lat = self.rng.uniform(10, 14), self.rng.uniform(40, 44)
        return [b"%.6f" % lon, b"%.6f" % lat]

    def geo_unit(self):
        return self.rng.choices(GEO_UNITS, [4, 6, 2, 2, 2, 1, 0.3])[0]

    def geo_radius(self):
        r = self.rng.random()
        if r < 0.03:
            return self.rng.choice([b"-1", b"abc", b""])
        return b"%.3f" % self.rng.choice([self.rng.uniform(0, 50), self.rng.uniform(0, 500), self.rng.uniform(0, 5e5)])

    def geo_opts(self, store):
        opts = []
        for o in (b"WITHDIST", b"WITHCOORD", b"WITHHASH"):
            if not store and self.rng.random() < 0.25:
                opts.append(self.ci(o))
        if self.rng.random() < 0.4:
            opts.append(self.ci(self.rng.choice([b"ASC", b"DESC"])))
        if self.rng.random() < 0.35:
            opts += [self.ci(b"COUNT"), self.rng.choice([b"1", b"2", b"3", b"10", b"0", b"-1", b"x"])]
            if self.rng.random() < 0.3:
                opts.append(self.ci(b"ANY"))
        elif self.rng.random() < 0.03:
            opts.append(self.ci(b"ANY"))
        self.rng.shuffle(opts)
        return opts

    def geoadd(self):
        key = self.rng.choice(GEO_KEYS)
        if self.rng.random() < 0.02:
            return [self.ci(b"SET"), b"geo:str", b"x"]
        opts = [self.ci(o) for o in (b"NX", b"XX", b"CH") if self.rng.random() < 0.1]
        items = []
        for _ in range(self.rng.randint(1, 4)):
            items += self.geo_coord() + [self.rng.choice(GEO_MEMBERS)]
        if self.rng.random() < 0.03:
            items.pop()
        return [self.ci(b"GEOADD"), key] + opts + items

    def geopos(self):
        if self.rng.random() < 0.15:
            return [self.ci(b"ZRANGE"), b"geo:dist", b"0", b"-1", self.ci(b"WITHSCORES")]
        return [self.ci(b"GEOPOS"), self.geo_key()] + [self.rng.choice(GEO_MEMBERS) for _ in range(self.rng.randint(0, 3))]

    def geohash(self):
        return [self.ci(b"GEOHASH"), self.geo_key()] + [self.rng.choice(GEO_MEMBERS) for _ in range(self.rng.randint(0, 3))]

    def geodist(self):
        args = [self.ci(b"GEODIST"), self.geo_key(), self.rng.choice(GEO_MEMBERS), self.rng.choice(GEO_MEMBERS)]
        if self.rng.random() < 0.6:
            args.append(self.geo_unit())
        return args

    def georadius(self):
        by_member = self.rng.random() < 0.4
        ro = self.rng.random() < 0.3
        name = (b"GEORADIUSBYMEMBER" if by_member else b"GEORADIUS") + (b"_RO" if ro else b"")
        centre = [self.rng.choice(GEO_MEMBERS)] if by_member else self.geo_coord()
        store = not ro and self.rng.random() < 0.3
        args = [self.ci(name), self.geo_key()] + centre + [self.geo_radius(), self.geo_unit()]
        args += self.geo_opts(store)
        if store or self.rng.random() < 0.03:
            args += self.geo_store_to()
        return args

    def geo_store_to(self):
        """STORE into a searched key, or STOREDIST into one only ZRANGE reads (distances
        decode to near-identical positions, whose order by distance Redis leaves open)."""
        if self.rng.random() < 0.5:
            return [self.ci(b"STORE"), self.rng.choice(GEO_KEYS)]
        return [self.ci(b"STOREDIST"), b"geo:dist"]

    def geo_search_args(self):
        args = []
        if self.rng.random() < 0.5:
            args += [self.ci(b"FROMMEMBER"), self.rng.choice(GEO_MEMBERS)]
        else:
            args += [self.ci(b"FROMLONLAT")] + self.geo_coord()
        if self.rng.random() < 0.5:
            args += [self.ci(b"BYRADIUS"), self.geo_radius(), self.geo_unit()]
        else:
            args += [self.ci(b"BYBOX"), self.geo_radius(), self.geo_radius(), self.geo_unit()]
        r = self.rng.random()
        if r < 0.03:
            args = args[2:]
        elif r < 0.05:
            args += [self.ci(b"FROMLONLAT"), b"1", b"2"]
        return args

    def geosearch(self):
        return [self.ci(b"GEOSEARCH"), self.geo_key()] + self.geo_search_args() + self.geo_opts(False)

    def geosearchstore(self):
        dist = self.rng.random() < 0.4
        dst = b"geo:dist" if dist else self.rng.choice(GEO_KEYS)
        args = [self.ci(b"GEOSEARCHSTORE"), dst, self.geo_key()]
        args += self.geo_search_args() + self.geo_opts(True)
        if dist:
            args.append(self.ci(b"STOREDIST"))
        return args

    def unknown(self):
        return self.rng.choice([[b"NOSUCHCMD"], [b"nosuch", b"a", b"b"], [b"GETT", b"k0"], [b"x" * 60, b"y"]])

    def mutate(self, args):
        """Breaks a command: arity, a bad integer, or an extra token."""
        if args[0] in (SCAN_ALL, HSCAN_ALL) or len(args) < 1:
            return args
        if args[0].upper() == b"SPOP":
            # A mutated SPOP could pop at random, and the sides would then hold different sets.
            return args
        if len(args) > 1 and args[1] in LEX_KEYS:
            # A broken ZADD could give a lex key's members different scores.
            return args
        if len(args) > 1 and args[1] in SORT_KEYS + [SORT_ERRNO_RESET[1]]:
            # A broken write could make a SORT key's order one the sides keep differently.
            return args
        if len(args) > 1 and (args[1] == HLL_DAMAGED or (args[0].upper() == b"PFADD" and args[1] not in HLL_KEYS)):
            # A second element for the damaged HyperLogLog (see the module docs), or a bad
            # offset that grows it to an odd length.
            return args
        if [a.upper() for a in args[:3]] == [b"CONFIG", b"SET", b"HLL-SPARSE-MAX-BYTES"]:
            # Refusals of a bad size are worded differently (Rialto's size parser is shared).
            return args
        args = list(args)
        # Keep the subcommand of container commands (a bare COMMAND lists the whole table, in
        # hash order).
        first = 2 if args[0].upper() in (b"CLIENT", b"COMMAND", b"CONFIG", b"SLOWLOG") else 1
        r = self.rng.random()
        if r < 0.35 and len(args) > first:
            del args[self.rng.randrange(first, len(args))]
        elif r < 0.6:
            # (No small positive numbers: `SET k v PX` + "1" would make a key that expires mid-run.)
            args.insert(self.rng.randrange(1, len(args) + 1), self.rng.choice([b"extra", b"-1", b"NX", b"EX", b""]))
        elif len(args) > first:
            args[self.rng.randrange(first, len(args))] = self.rng.choice(BAD_INTS)
        return args

    def next(self):
        self.i += 1
        if self.force_hello:
            self.force_hello = False
            return [b"HELLO", b"3"]
        if self.queued:
            args, self.queued = self.queued, None
            return args
        while True:
            maker = self.rng.choices(self.makers, self.weights)[0]
            if not (self.in_multi and maker in (self.keys, self.scan, self.scan_all, self.hscan_all, self.dbsize, self.randomkey, self.client, self.hello, self.server)):
                break
        args = maker()
        if self.rng.random() < 0.07 and args[0].upper() != b"QUIT" and [a.upper() for a in args[:2]] not in ([b"CLIENT", b"KILL"], [b"CONFIG", b"SET"]):
            args = self.mutate(args)
        name = args[0].upper()
        if name == b"MULTI" and len(args) == 1:
            self.in_multi = True
        elif name in (b"EXEC", b"QUIT") or (name in (b"DISCARD", b"RESET") and len(args) == 1):
            # (An EXEC with arguments is refused with EXECABORT, which ends the transaction
            # too; a DISCARD or RESET with arguments is refused and queues nothing.)
            self.in_multi = False
        if self.resp3 and (name in (b"QUIT", b"RESET") or (name == b"HELLO" and len(args) > 1 and args[1] == b"2")):
            self.force_hello = True
        return args


def generate(seed, n, resp3=False):
    g = Gen(seed * 2 + (1 if resp3 else 0), resp3)
    return [g.next() for _ in range(n)]


# ------------------------------------------------------------------------------------------------
# comparing replies


class Result:
    """What one server answered to one command: raw bytes and decoded reply, or a failure note."""

    __slots__ = ("raw", "reply", "note")

    def __init__(self, raw=b"", reply=None, note=None):
        self.raw, self.reply, self.note = raw, reply, note

    def show(self, limit=400):
        text = repr(self.raw[:limit]) + ("..." if len(self.raw) > limit else "")
        if self.note:
            text = f"{text} <{self.note}>" if self.raw else f"<{self.note}>"
        return text


def _int_reply(res):
    return res.reply is not None and res.reply.kind == ":"


def _text(rep):
    return rep.text() if rep is not None and rep.kind in ("$", "=", "+") and rep.value is not None else None


def _client_fields(rep):
    """CLIENT LIST/INFO: name, db and resp of the newest client (highest id: this connection)."""
    text = _text(rep)
    if text is None:
        return None
    best, best_id = {}, -1
    for line in text.split(b"\n"):
        fields = dict(f.split(b"=", 1) for f in line.strip().split(b" ") if b"=" in f)
        if not fields:
            continue
        try:
            cid = int(fields.get(b"id", b"-1"))
        except ValueError:
            cid = -1
        if cid >= best_id:
            best, best_id = fields, cid
    return {k: best.get(k) for k in (b"name", b"db", b"resp")} if best else {}


def _keyspace(rep):
    text = _text(rep)
    if text is None:
        return None
    out, inside = {}, False
    for line in text.split(b"\r\n"):
        if line.startswith(b"#"):
            inside = line.strip().lower() == b"# keyspace"
            continue
        if inside and line.startswith(b"db") and b":" in line:
            db, rest = line.split(b":", 1)
            kv = dict(p.split(b"=", 1) for p in rest.split(b",") if b"=" in p)
            out[db] = (kv.get(b"keys"), kv.get(b"expires"))
    return out, b"# Keyspace" in text, text == b""


def _as_pairs(rep):
    if rep.kind == "%":
        return sorted((k.value, v.value) for k, v in rep.value)
    if rep.kind == "*" and rep.value is not None and len(rep.value) % 2 == 0:
        return sorted((rep.value[i].value, rep.value[i + 1].value) for i in range(0, len(rep.value), 2))
    return None


def _issued_only_divergence(args):
    """Whether SCAN's cursor is a number (as strtoull reads it) other than 0."""
    c = args[1] if len(args) > 1 else b""
    body = c[1:] if c[:1] in (b"+", b"-") else c
    return body.isdigit() and int(body) != 0 and int(body) < 2**64


def _scan_shape(rep):
    return (
        rep.kind == "*"
        and rep.value is not None
        and len(rep.value) == 2
        and rep.value[0].kind == "$"
        and re.fullmatch(rb"[0-9]+", rep.value[0].value or b"x") is not None
        and rep.value[1].kind == "*"
    )


def _tree(rep):
    """A reply as nested Python values: arrays as lists, maps as ["%", k, v, ...], the kind of
    every scalar kept."""
    if rep.kind == "%":
        out = ["%"]
        for k, v in rep.value:
            out += [_tree(k), _tree(v)]
        return out
    if rep.kind in ("*", "~", ">") and rep.value is not None:
        return [_tree(x) for x in rep.value]
    return (rep.kind, rep.value)


def _fields(node):
    """The key-value pairs of a map as _tree gives it (RESP3 map or RESP2 flat array)."""
    flat = node[1:] if node[:1] == ["%"] else node
    return [(flat[i], i + (1 if node[:1] == ["%"] else 0) + 1) for i in range(0, len(flat) - 1, 2)]


def _mask(node, key, how):
    """Applies `how` to the value of `key` (bytes) in map `node`, in place."""
    if not isinstance(node, list):
        return
    for k, at in _fields(node):
        if k == ("$", key) or k == ("+", key):
            node[at] = how(node[at])


def _mask_items(index):
    """Masks element `index` of each array in a list."""
    def how(v):
        if isinstance(v, list):
            for item in v:
                if isinstance(item, list) and len(item) > index:
                    item[index] = "*"
        return v
    return how


def _stream_times_masked(args, rep):
    """A stream reply with what depends on each server's clock (idle, seen and delivery times)
    and Redis's radix-tree internals (radix-tree-nodes) masked; None if not such a reply."""
    name = args[0].upper()
    sub = args[1].upper() if len(args) > 1 else b""
    t = _tree(rep)
    if not isinstance(t, list):
        return None
    if name == b"XPENDING" and len(args) >= 6:
        _mask_items(2)(t)
        return t
    if name == b"XINFO" and sub == b"CONSUMERS":
        for c in t:
            _mask(c, b"idle", lambda v: "*")
        return t
    if name == b"XINFO" and sub == b"STREAM":
        _mask(t, b"radix-tree-nodes", lambda v: "*")

        def group(g):
            _mask(g, b"pending", _mask_items(2))

            def consumers(cs):
                for c in cs if isinstance(cs, list) else []:
                    _mask(c, b"seen-time", lambda v: "*")
                    _mask(c, b"pending", _mask_items(1))
                return cs

            _mask(g, b"consumers", consumers)
            return g

        _mask(t, b"groups", lambda gs: [group(g) for g in gs] if isinstance(gs, list) else gs)
        return t
    return None


def compare(args, a, b):
    """None if `a` and `b` agree for command `args`, else a short reason."""
    if a.note or b.note:
        if (a.note, a.raw) == (b.note, b.raw):
            return None
        return "different connection outcome"
    if a.raw == b.raw:
        return None
    ra, rb = a.reply, b.reply
    if (
        args[:1] and args[0].upper() == b"SCAN" and not ra.is_error
        and b.raw == b"-ERR invalid cursor\r\n" and _issued_only_divergence(args)
    ):
        # Rialto's cursors are ids it issued (docs/design.md §11.4): a non-zero cursor it never
        # returned is refused, where Redis reads any number as a table position.
        return None
    if ra.is_error or rb.is_error:
        return "different reply"
    name = args[0].upper()
    sub = args[1].upper() if len(args) > 1 else b""
    if name in (b"TTL", b"EXPIRETIME", b"PTTL", b"PEXPIRETIME"):
        if _int_reply(a) and _int_reply(b) and ra.value >= 0 and rb.value >= 0:
            tol = 2000 if name.startswith(b"P") else 2
            return None if abs(ra.value - rb.value) <= tol else "TTLs differ by more than 2 s"
        return "different reply"
    if name in (b"XPENDING", b"XINFO"):
        ta, tb = _stream_times_masked(args, ra), _stream_times_masked(args, rb)
        if ta is not None or tb is not None:
            return None if ta == tb else f"{name.decode()}: different reply (times masked)"
    if name == b"TIME":
        ok = all(
            r.kind == "*" and r.value is not None and len(r.value) == 2 and all(x.kind == "$" and (x.value or b"").isdigit() for x in r.value)
            for r in (ra, rb)
        )
        return None if ok else "TIME is not two integers"
    if name == b"RANDOMKEY":
        if ra.is_null or rb.is_null:
            return None if ra.is_null and rb.is_null and ra.kind == rb.kind else "RANDOMKEY: nil on one side only"
        return None if ra.kind == rb.kind else "different reply type"
    if name == b"CLIENT" and sub == b"ID":
        return None if ra.kind == rb.kind == ":" else "CLIENT ID not an integer"
    if name == b"CLIENT" and sub in (b"LIST", b"INFO"):
        if ra.kind != rb.kind:
            return "different reply type"
        fa, fb = _client_fields(ra), _client_fields(rb)
        return None if fa == fb else f"client fields differ: {fa} vs {fb}"
    if name == b"INFO":
        if ra.kind != rb.kind:
            return "different reply type"
        ka, kb = _keyspace(ra), _keyspace(rb)
        return None if ka == kb else f"INFO keyspace differs: {ka} vs {kb}"
    if name == b"HELLO":
        pa, pb = _as_pairs(ra), _as_pairs(rb)
        if ra.kind != rb.kind or pa is None or pb is None:
            return "different reply type"
        skip = (b"id", b"server", b"version")
        fa = [p for p in pa if p[0] not in skip]
        fb = [p for p in pb if p[0] not in skip]
        return None if (fa == fb and [p[0] for p in pa] == [p[0] for p in pb]) else "HELLO fields differ"
    if name == b"COMMAND" and len(args) == 1:
        return None if ra.kind == rb.kind else "different reply type"
    if name == b"COMMAND" and sub == b"COUNT":
        return None if ra.kind == rb.kind == ":" else "COMMAND COUNT not an integer"
    if name == b"COMMAND" and sub == b"INFO":
        if ra.kind != "*" or rb.kind != "*" or len(ra.value) != len(rb.value):
            return "different reply shape"
        for x, y in zip(ra.value, rb.value):
            if x.is_null != y.is_null:
                return "COMMAND INFO: nil on one side only"
            if x.is_null:
                continue
            if x.kind != "*" or y.kind != "*" or len(x.value) < 6 or len(y.value) < 6:
                return "COMMAND INFO: entry is not an array of at least 6"
            if [x.value[i] for i in (0, 1, 3, 4, 5)] != [y.value[i] for i in (0, 1, 3, 4, 5)]:
                return "COMMAND INFO: name, arity or key positions differ"
        return None
    if name == b"SLOWLOG" and sub in (b"GET", b"LEN"):
        return None if ra.kind == rb.kind else "different reply type"
    if name == b"CONFIG" and sub == b"GET":
        return None if (ra.kind == rb.kind and _as_pairs(ra) == _as_pairs(rb)) else "CONFIG GET differs"
    if name == b"KEYS":
        if ra.kind == rb.kind == "*":
            return None if sorted(x.value for x in ra.value) == sorted(x.value for x in rb.value) else "KEYS found different keys"
        return "different reply"
    if name == b"SCAN":
        return None if _scan_shape(ra) and _scan_shape(rb) else "SCAN reply shape differs"
    if name in (b"HGETALL", b"HKEYS", b"HVALS"):
        # A hashtable's order is its own on each side.
        return None if _items(ra) == _items(rb) else f"{name.decode()}: different fields"
    if name == b"ZRANDMEMBER":
        if ra.kind != rb.kind or (ra.value is None) != (rb.value is None):
            return "different reply type"
        if ra.kind != "*":
            return None
        if len(ra.value) != len(rb.value):
            return "ZRANDMEMBER: different counts"
        count = int(args[2]) if len(args) > 2 and args[2].lstrip(b"-").isdigit() else 0
        if count >= 200:
            return None if _items(ra) == _items(rb) else "ZRANDMEMBER: different members"
        return None
    if name == b"HRANDFIELD":
        if ra.kind != rb.kind or (ra.value is None) != (rb.value is None):
            return "different reply type"
        if ra.kind != "*":
            return None
        if len(ra.value) != len(rb.value):
            return "HRANDFIELD: different counts"
        count = int(args[2]) if len(args) > 2 and args[2].lstrip(b"-").isdigit() else 0
        # A count covering the hash returns it whole on both sides.
        if count >= 200:
            return None if _items(ra) == _items(rb) else "HRANDFIELD: different fields"
        return None
    if name == b"OBJECT" and sub == b"ENCODING":
        # A string's encoding is Redis's rule for its value here; Redis's also depends on how
        # it was written (APPEND makes it raw). Collections' encodings are compared exactly.
        strings = (b"int", b"embstr", b"raw")
        return None if ra.value in strings and rb.value in strings else "different encoding"
    if name in (b"SMEMBERS", b"SINTER", b"SUNION", b"SDIFF", b"SPOP"):
        # A set's order is its own on each side (an intset's is the same, numeric).
        if ra.kind != rb.kind:
            return "different reply type"
        return None if _items(ra) == _items(rb) else f"{name.decode()}: different members"
    if name == b"SRANDMEMBER":
        if ra.kind != rb.kind or (ra.value is None) != (rb.value is None):
            return "different reply type"
        if ra.kind != "*":
            return None
        if len(ra.value) != len(rb.value):
            return "SRANDMEMBER: different counts"
        count = int(args[2]) if len(args) > 2 and args[2].lstrip(b"-").isdigit() else 0
        # A count covering the set returns it whole on both sides.
        if count >= 1000:
            return None if _items(ra) == _items(rb) else "SRANDMEMBER: different members"
        return None
    if name == b"SSCAN":
        if not (_scan_shape(ra) and _scan_shape(rb)):
            return "SSCAN reply shape differs"
        if ra.value[0].value == rb.value[0].value == b"0":
            return None if _items(ra.value[1]) == _items(rb.value[1]) else "SSCAN: different members"
        return None
    if name in (b"HSCAN", b"ZSCAN"):
        if not (_scan_shape(ra) and _scan_shape(rb)):
            return f"{name.decode()} reply shape differs"
        if ra.value[0].value == rb.value[0].value == b"0":
            return None if _pairs_of(ra.value[1]) == _pairs_of(rb.value[1]) else f"{name.decode()}: different items"
        return None
    return "different reply"


def _pairs_of(rep):
    """A flat array of field-value pairs as a sorted list of pairs."""
    if rep.kind != "*" or rep.value is None or len(rep.value) % 2:
        return rep.kind
    return sorted((rep.value[i].value, rep.value[i + 1].value) for i in range(0, len(rep.value), 2))


def _items(rep):
    """The items of an array or map reply as a sorted list (nested pairs flattened)."""
    if rep.kind == "%":
        return sorted((k.value, v.value) for k, v in rep.value)
    if rep.kind in ("*", "~") and rep.value is not None:
        flat = []
        for x in rep.value:
            flat.extend(y.value for y in x.value) if x.kind == "*" else flat.append(x.value)
        return sorted(flat, key=lambda v: (v is None, v or b""))
    return rep.kind


# ------------------------------------------------------------------------------------------------
# running streams


def fmt_arg(a):
    if a and re.fullmatch(rb"[A-Za-z0-9_.:*?\-+\[\]^@/|{}]+", a):
        return a.decode()
    out = '"'
    for c in a:
        ch = chr(c)
        if ch in '"\\':
            out += "\\" + ch
        elif 32 <= c < 127:
            out += ch
        else:
            out += f"\\x{c:02x}"
    return out + '"'


def fmt_cmd(args):
    if args and args[0] == SCAN_ALL:
        return "SCAN* " + " ".join(fmt_arg(a) for a in args[1:]) + "   # (full SCAN iteration, keys compared as a set)"
    if args and args[0] == HSCAN_ALL:
        return "HSCAN* " + " ".join(fmt_arg(a) for a in args[1:]) + "   # (full HSCAN iteration, pairs compared as a set)"
    return " ".join(fmt_arg(a) for a in args)


class Side:
    def __init__(self, name, host, port, timeout=10.0):
        self.name, self.host, self.port, self.timeout = name, host, port, timeout
        self.conn = None

    def connect(self):
        self.close()
        self.conn = Connection(self.host, self.port, self.timeout)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def fresh(self):
        """Empty every database and start a new connection (RESP2, db 0, no name)."""
        admin = Connection(self.host, self.port, self.timeout)
        try:
            rep = admin.call(b"FLUSHALL")
            if rep.kind != "+":
                raise RuntimeError(f"{self.name}: FLUSHALL failed: {rep!r}")
        finally:
            admin.close()
        self.connect()

    def send_batch(self, batch):
        try:
            self.conn.send(b"".join(encode_command(a) for a in batch))
            return None
        except OSError as e:
            return f"send failed: {e}"

    def read_results(self, n, send_error=None):
        out = []
        for _ in range(n):
            if send_error or self.conn is None:
                out.append(Result(note=send_error or "not connected"))
                continue
            try:
                raw, rep = self.conn.read_reply()
                out.append(Result(raw, rep))
            except ConnectionClosed:
                out.append(Result(note="connection closed"))
                self.conn.close()
                self.conn = None
            except socket.timeout:
                out.append(Result(note=f"no reply within {self.timeout:.0f}s"))
                self.conn.close()
                self.conn = None
            except (ProtocolError, OSError) as e:
                out.append(Result(note=f"{type(e).__name__}: {e}"))
                self.conn.close()
                self.conn = None
        return out

    def quit(self, args):
        err = self.send_batch([args])
        res = self.read_results(1, err)[0]
        if self.conn is not None and not res.note:
            closed = self.conn.wait_closed(2.0)
            if not closed:
                res.note = "connection still open after QUIT"
        self.connect()
        return res

    def hscan_all(self, args):
        """Runs HSCAN to completion; the Result lists the pairs found (sorted, unique)."""
        key, opts = args[1], list(args[2:])
        cursor, found = b"0", set()
        for _ in range(100_000):
            err = self.send_batch([[b"HSCAN", key, cursor] + opts])
            res = self.read_results(1, err)[0]
            if res.note or res.reply.is_error:
                return res
            rep = res.reply
            if not _scan_shape(rep) or len(rep.value[1].value) % 2:
                return Result(res.raw, rep, "malformed HSCAN reply")
            cursor = rep.value[0].value
            items = rep.value[1].value
            found.update((items[i].value, items[i + 1].value) for i in range(0, len(items), 2))
            if cursor == b"0":
                pairs = sorted(found)
                return Result(b"pairs: " + repr(pairs).encode(), Reply("*", [Reply("$", f + b"=" + v) for f, v in pairs]))
        return Result(note="HSCAN did not finish in 100000 calls")

    def scan_all(self, args):
        """Runs SCAN to completion; the Result lists the keys found (sorted, unique)."""
        opts = list(args[1:])
        cursor, found = b"0", set()
        for _ in range(100_000):
            err = self.send_batch([[b"SCAN", cursor] + opts])
            res = self.read_results(1, err)[0]
            if res.note:
                return res
            rep = res.reply
            if rep.is_error:
                return res
            if not _scan_shape(rep):
                return Result(res.raw, rep, "malformed SCAN reply")
            cursor = rep.value[0].value
            found.update(x.value for x in rep.value[1].value)
            if cursor == b"0":
                keys = sorted(found)
                return Result(b"keys: " + repr(keys).encode(), Reply("*", [Reply("$", k) for k in keys]))
        return Result(note="SCAN did not finish in 100000 calls")


class Mismatch:
    def __init__(self, index, args, a, b, reason):
        self.index, self.args, self.a, self.b, self.reason = index, args, a, b, reason


def run_stream(sides, ops, stop_at_first=True, batch_size=64, max_mismatches=1, stats=None):
    """Sends `ops` to both sides from a fresh state; returns the list of Mismatch.

    `stats`, if a dict, gets per-command counts: {NAME: [replies, error replies]} (first side)."""
    a, b = sides
    a.fresh()
    b.fresh()
    mismatches = []
    queued = None  # the commands queued since MULTI, while one is open
    i = 0
    while i < len(ops):
        args = ops[i]
        special = args[0] in (SCAN_ALL, HSCAN_ALL) or args[0].upper() == b"QUIT"
        if special:
            if args[0] == SCAN_ALL:
                ra, rb = a.scan_all(args), b.scan_all(args)
            elif args[0] == HSCAN_ALL:
                ra, rb = a.hscan_all(args), b.hscan_all(args)
            else:
                ra, rb = a.quit(args), b.quit(args)
            results = [(i, args, ra, rb)]
            i += 1
        else:
            batch, size = [], 0
            while i + len(batch) < len(ops) and len(batch) < batch_size and size < 32768:
                nxt = ops[i + len(batch)]
                if nxt[0] in (SCAN_ALL, HSCAN_ALL) or nxt[0].upper() == b"QUIT":
                    break
                batch.append(nxt)
                size += sum(len(x) for x in nxt) + 16
            ea, eb = a.send_batch(batch), b.send_batch(batch)
            res_a, res_b = a.read_results(len(batch), ea), b.read_results(len(batch), eb)
            results = [(i + j, batch[j], res_a[j], res_b[j]) for j in range(len(batch))]
            i += len(batch)
        for idx, cmd, ra, rb in results:
            # What an EXEC answers is the queued commands' replies: compared one by one, each
            # by its own command's rule (TTLs within 2 s and the like).
            name0 = cmd[0].upper() if cmd else b""
            if name0 == b"MULTI" and len(cmd) == 1 and ra.raw == b"+OK\r\n":
                queued = []
            elif queued is not None and ra.raw == b"+QUEUED\r\n":
                queued.append(cmd)
            elif name0 in (b"EXEC", b"DISCARD", b"RESET", b"QUIT") and not (name0 == b"DISCARD" and len(cmd) != 1):
                if name0 == b"EXEC" and queued is not None and _exec_items(ra, rb, len(queued)):
                    for q, xa, xb in zip(queued, ra.reply.value, rb.reply.value):
                        reason = compare(q, Result(repr(xa).encode(), xa), Result(repr(xb).encode(), xb))
                        if reason:
                            detail = f"redis {xa!r:.300} / rialto {xb!r:.300}"
                            mismatches.append(Mismatch(idx, cmd, ra, rb, f"in EXEC, {fmt_cmd(q)}: {reason}: {detail}"))
                            break
                    queued = None
                    continue
                queued = None
            if stats is not None:
                name = cmd[0].upper().decode(errors="replace")
                if name in ("CLIENT", "COMMAND", "CONFIG", "SLOWLOG") and len(cmd) > 1:
                    name += " " + cmd[1].upper().decode(errors="replace")
                entry = stats.setdefault(name, [0, 0])
                entry[0] += 1
                entry[1] += bool(ra.reply is not None and ra.reply.is_error)
            reason = compare(cmd, ra, rb)
            if reason:
                mismatches.append(Mismatch(idx, cmd, ra, rb, reason))
                if stop_at_first or len(mismatches) >= max_mismatches:
                    return mismatches
        for s in (a, b):
            if s.conn is None:
                s.connect()
    return mismatches


def _exec_items(ra, rb, n):
    """Whether both EXEC replies are arrays of `n` replies."""
    return all(
        r.reply is not None and r.reply.kind == "*" and r.reply.value is not None and len(r.reply.value) == n
        for r in (ra, rb)
    )


def ddmin(items, fails, budget):
    """Delta debugging: a 1-minimal sublist of `items` for which fails() holds (within budget)."""
    n = 2
    while len(items) >= 2 and budget["tests"] > 0 and time.monotonic() < budget["deadline"]:
        chunk = math.ceil(len(items) / n)
        subsets = [items[k : k + chunk] for k in range(0, len(items), chunk)]
        reduced = False
        for s in subsets:
            if len(subsets) > 1 and fails(s):
                items, n, reduced = s, 2, True
                break
        if not reduced:
            for k in range(len(subsets)):
                comp = [x for j, s in enumerate(subsets) if j != k for x in s]
                if fails(comp):
                    items, n, reduced = comp, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(items):
                break
            n = min(n * 2, len(items))
    return items


def minimise(sides, preamble, ops, budget_tests=400, budget_seconds=90, log=print):
    """Shrinks ops (which must end in a mismatch) to a short stream that still mismatches."""
    budget = {"tests": budget_tests, "deadline": time.monotonic() + budget_seconds}
    cache = {}

    def fails(candidate):
        key = tuple(tuple(c) for c in candidate)
        if key in cache:
            return cache[key]
        budget["tests"] -= 1
        result = bool(run_stream(sides, preamble + list(candidate)))
        cache[key] = result
        return result

    if not fails(ops):
        log("  (the mismatch did not reproduce when replayed from an empty database: timing-dependent?)")
        return None
    # Most reproducers need only the last few commands: try growing suffixes first.
    k = 1
    while k < len(ops):
        if fails(ops[-k:]):
            ops = ops[-k:]
            break
        k *= 2
    ops = ddmin(list(ops), fails, budget)
    return ops


def report_mismatch(m, seed, stream, a_name, b_name, log=print):
    log(f"MISMATCH seed={seed} stream={stream} command #{m.index}: {fmt_cmd(m.args)}")
    log(f"  why:    {m.reason}")
    log(f"  {a_name + ':':7} {m.a.show()}")
    log(f"  {b_name + ':':7} {m.b.show()}")


def run_differential(seed, commands, redis_addr, rialto_addr, streams=("resp2", "resp3"), minimize=True,
                     log=print, budget_tests=400, budget_seconds=90, keep_going=False, show_stats=False,
                     skip=()):
    """Runs the streams for one seed; returns a list of (stream, Mismatch, reproducer-or-None).

    `skip`: command names (upper case) left out of the stream, to look past a known mismatch."""
    sides = (Side("redis", *redis_addr), Side("rialto", *rialto_addr))
    found = []
    try:
        for stream in streams:
            resp3 = stream == "resp3"
            preamble = [[b"HELLO", b"3"]] if resp3 else []
            ops = [op for op in generate(seed, commands, resp3) if op[0].upper() not in skip]
            t0 = time.monotonic()
            st = {}
            mism = run_stream(sides, preamble + ops, stop_at_first=not keep_going, max_mismatches=20 if keep_going else 1, stats=st)
            took = time.monotonic() - t0
            if show_stats:
                for name, (n, e) in sorted(st.items(), key=lambda x: -x[1][0]):
                    log(f"  {name:20} {n:6} replies, {e:5} errors")
            if not mism:
                errors = sum(e for _, e in st.values())
                log(f"seed={seed} stream={stream}: {commands} commands ({errors} answered with errors), no mismatch ({took:.1f}s)")
                continue
            for m in mism:
                report_mismatch(m, seed, stream, "redis", "rialto", log)
            m = mism[0]
            repro = None
            if minimize and m.index >= len(preamble):
                log("  minimising...")
                body = ops[: m.index - len(preamble) + 1]
                repro = minimise(sides, preamble, body, budget_tests, budget_seconds, log)
                if repro is not None:
                    log(f"  reproducer ({len(repro)} command{'s' if len(repro) != 1 else ''}, from an empty database"
                        f"{', after HELLO 3' if resp3 else ''}; redis-cli syntax):")
                    for c in preamble + repro:
                        log(f"    {fmt_cmd(c)}")
                    last = run_stream(sides, preamble + repro)
                    if last:
                        log(f"  replies to #{last[0].index} ({fmt_cmd(last[0].args)}): "
                            f"redis {last[0].a.show()}  rialto {last[0].b.show()}")
            found.append((stream, m, repro))
    finally:
        for s in sides:
            s.close()
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    ap.add_argument("--seeds", type=int, default=1, help="how many consecutive seeds to run (default 1)")
    ap.add_argument("--commands", type=int, default=10000, help="commands per stream (default 10000)")
    ap.add_argument("--host", default="127.0.0.1", help="where both servers listen (default 127.0.0.1)")
    ap.add_argument("--redis-port", type=int, required=True)
    ap.add_argument("--rialto-port", type=int, required=True)
    ap.add_argument("--streams", default="resp2,resp3", help="comma-separated: resp2, resp3 (default both)")
    ap.add_argument("--no-minimize", action="store_true", help="report the first mismatch without shrinking")
    ap.add_argument("--keep-going", action="store_true", help="report up to 20 mismatches per stream (later ones may be fallout)")
    ap.add_argument("--minimize-seconds", type=float, default=90)
    ap.add_argument("--print-stream", action="store_true", help="print the generated commands and exit")
    ap.add_argument("--stats", action="store_true", help="print how often each command ran and failed")
    ap.add_argument("--skip", default="", help="comma-separated commands to leave out (to look past a known mismatch), e.g. SUBSTR,SCAN")
    args = ap.parse_args(argv)
    streams = [s.strip() for s in args.streams.split(",") if s.strip()]
    for s in streams:
        if s not in ("resp2", "resp3"):
            ap.error(f"unknown stream {s!r}")
    if args.print_stream:
        for stream in streams:
            print(f"# seed {args.seed} stream {stream}")
            if stream == "resp3":
                print("HELLO 3")
            for c in generate(args.seed, args.commands, stream == "resp3"):
                print(fmt_cmd(c))
        return 0
    failures = 0
    for seed in range(args.seed, args.seed + args.seeds):
        found = run_differential(
            seed, args.commands, (args.host, args.redis_port), (args.host, args.rialto_port), streams,
            minimize=not args.no_minimize, budget_seconds=args.minimize_seconds, keep_going=args.keep_going,
            show_stats=args.stats, skip={c.strip().upper().encode() for c in args.skip.split(",") if c.strip()},
        )
        failures += len(found)
    print(f"{'FAIL' if failures else 'ok'}: {failures} stream(s) with mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
