#!/usr/bin/env python3
"""GETs per second a redis-py client gets with its client-side cache (CLIENT TRACKING, RESP3
invalidation pushes) against without, on one server: Rialto or Redis.

    target/compat-venv/bin/python scripts/bench-client-cache.py --port 6379 [--keys 100] [--gets 50000] [--rounds 3]

One client reads `--keys` hot keys round-robin, `--gets` GETs per measurement, first without a
cache, then with one; a second client rewrites one key every 100 GETs so that invalidations
flow during the cached run (the cache must drop that key and read it again). Prints the median
of the rounds for each and their ratio.

redis-py 5.3 enables its cache only for servers that say 7.4 or later; the protocol it uses is
Redis 6.0's, so the version check is lowered here, as in tests/compat/test_tracking.py.
"""

import argparse
import statistics
import time

import redis
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection


def run(client, writer, keys, gets):
    start = time.perf_counter()
    for i in range(gets):
        if i % 100 == 0:
            writer.set(keys[i % len(keys)], str(i))
        client.get(keys[i % len(keys)])
    return gets / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--gets", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    CacheProxyConnection.MIN_ALLOWED_VERSION = "7.0.0"
    writer = redis.Redis(host=a.host, port=a.port)
    keys = [f"hot:{i}" for i in range(a.keys)]
    for k in keys:
        writer.set(k, "x" * 100)
    plain = redis.Redis(host=a.host, port=a.port, protocol=3)
    cached = redis.Redis(host=a.host, port=a.port, protocol=3, cache_config=CacheConfig())
    without, with_cache = [], []
    for _ in range(a.rounds):
        without.append(run(plain, writer, keys, a.gets))
        with_cache.append(run(cached, writer, keys, a.gets))
    w, c = statistics.median(without), statistics.median(with_cache)
    print(f"GETs/s without cache {w:.0f}, with client-side cache {c:.0f}, ratio {c / w:.1f}x "
          f"({a.keys} hot keys, one rewritten every 100 GETs, median of {a.rounds})")


if __name__ == "__main__":
    main()
