"""RANDOMKEY draws every live key of the database with the same probability, on both servers:
a few keys, and more keys than Rialto walks (past 10,000 it draws from the engine), in groups
of uneven sizes with wide gaps of the key space between them, where a seek to a random point
of the key order would favour the keys after the widest gap."""

import math


def draws(r, n):
    p = r.pipeline(transaction=False)
    for _ in range(n):
        p.randomkey()
    return p.execute()


def shares(keys):
    out = {}
    for k in keys:
        assert k is not None
        group = k.split(b":")[0]
        out[group] = out.get(group, 0) + 1
    return out


def assert_near(counts, expected, n):
    for group, p in expected.items():
        got = counts.get(group, 0)
        # Seven standard deviations of a binomial count: never by chance.
        tolerance = 7 * math.sqrt(n * p * (1 - p))
        assert abs(got - n * p) < tolerance, (group, got, n * p, counts)
    assert set(counts) <= set(expected), counts


def test_a_few_keys_are_drawn_alike(r):
    assert r.randomkey() is None
    r.mset({"aaa": 1, "bar": 2, "foo": 3, "zzz": 4})
    n = 4000
    counts = shares(draws(r, n))
    assert_near(counts, {b"aaa": 0.25, b"bar": 0.25, b"foo": 0.25, b"zzz": 0.25}, n)


def test_many_keys_across_gaps_are_drawn_alike(r):
    sizes = {"aaa": 1000, "bar": 4000, "foo": 2000, "zzz": 5000}
    for group, size in sizes.items():
        for start in range(0, size, 1000):
            r.mset({f"{group}:{i:05}": i for i in range(start, min(size, start + 1000))})
    # Deleted keys are never drawn.
    r.mset({f"gone:{i}": i for i in range(2000)})
    r.delete(*[f"gone:{i}" for i in range(2000)])
    total = sum(sizes.values())
    assert r.dbsize() == total
    n = 6000
    counts = shares(draws(r, n))
    assert_near(counts, {g.encode(): s / total for g, s in sizes.items()}, n)
    # Another database's keys are not this one's.
    r.select(1)
    assert r.randomkey() is None
    r.set("other", 1)
    assert r.randomkey() == b"other"
