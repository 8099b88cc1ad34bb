"""Geospatial indexes against redis-server: thousands of positions (a large sorted set on
Rialto, a skiplist on Redis), clustered and spread over the world, then hundreds of random
GEORADIUS, GEOSEARCH and GEOSEARCHSTORE requests around positions and members, circles and
boxes, every unit and option: replies must be equal, member order included (both servers read
the same cells in the same order). The differential test covers the commands' errors on small
sets; this covers the search on large ones."""

import random

POINTS = 3000
SEARCHES = 300


def both(pair, *cmd):
    out = []
    for c in pair:
        try:
            out.append(c.execute_command(*cmd))
        except Exception as e:  # an error reply, compared by its text
            out.append(("error", str(e)))
    assert out[0] == out[1], cmd
    return out[0]


def test_searches_over_a_large_index_reply_as_redis(pair):
    rng = random.Random(7)
    points = []
    for i in range(POINTS):
        if rng.random() < 0.5:
            lon, lat = rng.uniform(10, 12), rng.uniform(40, 42)
        else:
            lon, lat = rng.uniform(-180, 180), rng.uniform(-85, 85)
        points += ["%.7f" % lon, "%.7f" % lat, "m%d" % i]
    assert both(pair, "GEOADD", "pts", *points) == POINTS
    both(pair, "OBJECT", "ENCODING", "pts")
    for _ in range(SEARCHES):
        if rng.random() < 0.7:
            lon, lat = rng.uniform(9, 13), rng.uniform(39, 43)
        else:
            lon, lat = rng.uniform(-180, 180), rng.uniform(-85, 85)
        unit = rng.choice(["m", "km", "mi", "ft"])
        radius = "%.3f" % rng.choice([rng.uniform(0, 50), rng.uniform(0, 500), rng.uniform(0, 5000)])
        opts = rng.sample(["WITHDIST", "WITHCOORD", "WITHHASH"], rng.randint(0, 3))
        opts += rng.sample(["ASC", "DESC"], rng.randint(0, 1))
        if rng.random() < 0.3:
            opts += ["COUNT", str(rng.randint(1, 20))] + (["ANY"] if rng.random() < 0.3 else [])
        kind = rng.random()
        if kind < 0.3:
            both(pair, "GEORADIUS", "pts", "%.6f" % lon, "%.6f" % lat, radius, unit, *opts)
        elif kind < 0.4:
            both(pair, "GEORADIUSBYMEMBER_RO", "pts", "m%d" % rng.randrange(POINTS), radius, unit, *opts)
        else:
            if rng.random() < 0.5:
                shape = ["BYBOX", "%.3f" % rng.uniform(0, 3000), "%.3f" % rng.uniform(0, 3000), unit]
            else:
                shape = ["BYRADIUS", radius, unit]
            if rng.random() < 0.7:
                centre = ["FROMLONLAT", "%.6f" % lon, "%.6f" % lat]
            else:
                centre = ["FROMMEMBER", "m%d" % rng.randrange(POINTS)]
            if kind < 0.85:
                both(pair, "GEOSEARCH", "pts", *centre, *shape, *opts)
            else:
                store = [o for o in opts if not o.startswith("WITH")]
                dist = ["STOREDIST"] if rng.random() < 0.5 else []
                both(pair, "GEOSEARCHSTORE", "dst", "pts", *centre, *shape, *store, *dist)
                both(pair, "ZRANGE", "dst", "0", "-1", "WITHSCORES")
    both(pair, "GEOPOS", "pts", "m0", "m1", "nobody")
    both(pair, "GEOHASH", "pts", "m0", "m1", "nobody")
    both(pair, "GEODIST", "pts", "m0", "m1", "km")
