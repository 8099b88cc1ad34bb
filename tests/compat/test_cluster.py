"""Cluster mode on Kafka: 3 brokers and 3 Rialto nodes as local processes (scripts/cluster.sh),
driven by redis-py's RedisCluster and by plain connections to single addresses.

Skipped without Java and Maven (Kafka's jars come from Maven Central) or with COMPAT_TARGET=redis.
"""

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

import servers

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "cluster.sh"
BASE = 27000
PARTITIONS = 3

pytestmark = pytest.mark.skipif(
    servers.target_mode() == "redis" or not (shutil.which("java") and shutil.which("mvn")),
    reason="cluster mode needs Java and Maven for Kafka, and the rialto binary",
)


def node_port(i):
    return BASE + 100 * (i - 1)


def node_of_port(port):
    return (port - BASE) // 100 + 1


def run(*args, check=True):
    r = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"cluster.sh {' '.join(args)} failed:\n{r.stderr[-3000:]}")
    return r


@pytest.fixture(scope="module")
def cluster():
    d = tempfile.mkdtemp(prefix="rialto-cluster.")
    common = ["--dir", d]
    try:
        out = run("up", "--nodes", "3", "--partitions", str(PARTITIONS), "--base-port", str(BASE),
                  "--bin", str(servers.rialto_bin()), *common)
    except AssertionError as e:
        pytest.fail(str(e))
    assert out.stdout.split() == [f"127.0.0.1:{node_port(i)}" for i in (1, 2, 3)]
    yield common
    run("down", *common, check=False)
    shutil.rmtree(d, ignore_errors=True)


def slots(port):
    return redis.Redis(port=port).execute_command("CLUSTER SLOTS")


def master_of(port, slot):
    for lo, hi, master, *replicas in slots(port):
        if lo <= slot <= hi:
            return master[1], [r[1] for r in replicas]
    raise AssertionError(f"slot {slot} not served")


def key_in(lo, hi, prefix="k"):
    return next(f"{prefix}{i}" for i in range(100000) if lo <= key_slot(f"{prefix}{i}".encode()) <= hi)


def wait_for(cond, timeout=60.0, what="condition"):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            if cond():
                return
        except redis.RedisError as e:
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last error: {last!r})")


def every_slot_served():
    ranges = sorted((lo, hi, len(rest)) for lo, hi, *rest in slots(node_port(1)))
    return (len(ranges) == PARTITIONS and ranges[0][0] == 0 and ranges[-1][1] == 16383
            and all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:])))


def settled():
    """Every slot served by a master with both replicas, and every master takes a write: no
    hand-over under way (the group hands a partition back to a node that rejoined)."""
    ranges = slots(node_port(1))
    if not every_slot_served() or any(len(rest) != 3 for _, _, *rest in ranges):
        return False
    for lo, hi, master, *_ in ranges:
        redis.Redis(port=master[1], socket_timeout=5).set(key_in(lo, hi, "settle"), 1)
    return True


def test_every_slot_has_a_master_and_two_replicas_on_other_nodes(cluster):
    s = slots(node_port(1))
    assert sorted((lo, hi) for lo, hi, *_ in s) == [(0, 5460), (5461, 10921), (10922, 16383)]
    for lo, hi, *addrs in s:
        nodes = [node_of_port(a[1]) for a in addrs]
        assert sorted(nodes) == [1, 2, 3], addrs
        p = [a[1] - node_port(node_of_port(a[1])) for a in addrs]
        assert len(set(p)) == 1, "one partition's addresses"
        assert all(len(a[2]) == 40 for a in addrs)
    # Every node tells the same story.
    assert sorted(map(tuple, map(lambda r: r[:3], slots(node_port(2))))) == sorted(map(tuple, map(lambda r: r[:3], s)))
    # redis-py parses CLUSTER NODES and CLUSTER INFO as it does Redis's.
    nodes = redis.Redis(port=node_port(1), decode_responses=True).execute_command("CLUSTER NODES")
    assert len(nodes) == 9
    assert sum("myself" in n["flags"] for n in nodes.values()) == 1
    assert sum("master" in n["flags"] for n in nodes.values()) == 3
    info = redis.Redis(port=node_port(1), decode_responses=True).execute_command("CLUSTER INFO")
    assert info["cluster_state"] == "ok" and int(info["cluster_slots_ok"]) == 16384
    assert redis.Redis(port=node_port(1)).execute_command("CLUSTER KEYSLOT", "{user1000}.following") == key_slot(b"user1000")


def test_redirections_and_refusals_use_redis_texts(cluster):
    key = key_in(10922, 16383)
    mport, replicas = master_of(node_port(1), key_slot(key.encode()))
    other = node_port(1) if node_port(1) != mport else node_port(2)
    c = redis.Redis(port=other)
    with pytest.raises(redis.ResponseError) as e:
        c.set(key, "v")
    assert str(e.value) == f"MOVED {key_slot(key.encode())} 127.0.0.1:{mport}"
    m = redis.Redis(port=mport)
    with pytest.raises(redis.ResponseError, match="^CROSSSLOT Keys in request don't hash to the same slot$"):
        m.mset({"a": 1, "b": 2})
    with pytest.raises(redis.ResponseError, match="SELECT is not allowed in cluster mode"):
        m.select(1)
    with pytest.raises(redis.ResponseError, match="REWIND is not available in cluster mode"):
        m.execute_command("STORE", "CREATE", "features", "PREFIX", "f:", "REWIND", "60")
    # A replica address redirects reads unless READONLY, then serves them; writes always move.
    m.set(key, "v")
    r = redis.Redis(port=replicas[0])
    with pytest.raises(redis.ResponseError, match="^MOVED"):
        r.get(key)
    assert r.execute_command("READONLY") in (b"OK", True)
    wait_for(lambda: r.get(key) == b"v", 10, "the replica to apply the write")
    with pytest.raises(redis.ResponseError, match="^MOVED"):
        r.set(key, "w")
    assert r.execute_command("READWRITE") in (b"OK", True)
    with pytest.raises(redis.ResponseError, match="^MOVED"):
        r.get(key)
    # Each address tells its own role, as a Redis Cluster node does.
    hello = redis.Redis(port=replicas[0], protocol=3).execute_command("HELLO", "3")
    assert (hello[b"mode"], hello[b"role"]) == (b"cluster", b"replica")
    assert redis.Redis(port=mport, protocol=3).execute_command("HELLO", "3")[b"role"] == b"master"
    info = redis.Redis(port=replicas[0]).info("replication")
    assert (info["role"], info["master_port"]) == ("slave", mport)
    assert redis.Redis(port=mport).info("replication")["connected_slaves"] == 2
    assert redis.Redis(port=mport).info("server")["redis_mode"] == "cluster"


def test_redis_py_cluster_client_runs_the_shared_scenario(cluster):
    from redis.cluster import LoadBalancingStrategy

    rc = RedisCluster(host="127.0.0.1", port=node_port(2),
                      load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS)
    for i in range(300):
        rc.set(f"scenario:{i}", i)
    # Replica reads may trail the master by a moment: the values appear.
    wait_for(lambda: all(rc.get(f"scenario:{i}") == str(i).encode() for i in range(0, 300, 7)), 10,
             "replica reads")
    rc.mset({"{user:1}:name": "ada", "{user:1}:lang": "en"})
    wait_for(lambda: rc.mget("{user:1}:name", "{user:1}:lang") == [b"ada", b"en"], 10, "hash-tag MGET")
    p = rc.pipeline()
    for i in range(20):
        p.incr(f"pipe:{i % 4}")
    assert p.execute() == [i // 4 + 1 for i in range(20)]
    # INCR replies are the applied result, and a master read right after sees it.
    m = RedisCluster(host="127.0.0.1", port=node_port(3))
    for i in range(1, 51):
        assert m.incr("ctr:rw") == i
        assert m.get("ctr:rw") == str(i).encode()
    # The keyspace commands answer for each address's own slots.
    total = sum(redis.Redis(port=port).dbsize() for port in {a[1] for _, _, a, *_ in slots(node_port(1))})
    assert total == len(m.keys(target_nodes=RedisCluster.PRIMARIES)) >= 300 + 2 + 4 + 1


def test_a_node_moves_a_key_of_another_partition_it_masters_to_its_own_address_for_it(cluster):
    # Regression: the node answered TRYAGAIN, as if it were handing the partition over.
    for lo, hi, master, *_ in slots(node_port(1)):
        node = node_of_port(master[1])
        own = node_port(node)
        if master[1] == own:
            continue  # partition 0's master: its key is served at this very address
        key = key_in(lo, hi, "own")
        with pytest.raises(redis.ResponseError) as e:
            redis.Redis(port=own).get(key)
        assert str(e.value) == f"MOVED {key_slot(key.encode())} 127.0.0.1:{master[1]}"
        return
    pytest.skip("every master is partition 0's")


def test_a_transaction_in_one_slot_is_one_record(cluster):
    key = key_in(5461, 10921, "tx")
    mport, replicas = master_of(node_port(1), key_slot(key.encode()))
    m = redis.Redis(port=mport)
    tag = "{" + key + "}"
    p = m.pipeline(transaction=True)
    p.set(f"{tag}:a", 1).incr(f"{tag}:a").get(f"{tag}:a").incrby(f"{tag}:b", 5).ping()
    assert p.execute() == [True, 2, b"2", 5, True]
    # Applied as one: a replica shows both keys.
    r = redis.Redis(port=replicas[0])
    r.execute_command("READONLY")
    wait_for(lambda: r.mget(f"{tag}:a", f"{tag}:b") == [b"2", b"5"], 10, "the replica to apply it")
    # A command in another slot fails the transaction at queueing, as in Redis Cluster.
    other = key_in(5461, 10921, "ty")
    assert key_slot(other.encode()) != key_slot(key.encode())
    p = m.pipeline(transaction=True)
    p.set(f"{tag}:a", 9).set(other, 9)
    with pytest.raises(redis.ResponseError, match="CROSSSLOT|EXECABORT"):
        p.execute()
    assert m.get(f"{tag}:a") == b"2"


def test_watch_fails_exec_after_a_change_and_loses_no_update_under_concurrent_writes(cluster):
    key = key_in(5461, 10921, "watch")
    mport, _ = master_of(node_port(1), key_slot(key.encode()))
    m = redis.Redis(port=mport)
    other = redis.Redis(port=mport)
    m.set(key, 1)
    p = m.pipeline(transaction=True)
    p.watch(key)
    other.set(key, 2)
    p.multi()
    p.set(key, 3)
    with pytest.raises(redis.WatchError):
        p.execute()
    assert m.get(key) == b"2"
    p = m.pipeline(transaction=True)
    p.watch(key)
    p.multi()
    p.set(key, 4)
    assert p.execute() == [True]
    # Optimistic increments (WATCH, GET, MULTI, SET) racing plain INCRs that are still in the
    # log when the EXEC is checked: no increment is lost.
    m.set(key, 0)
    rounds, workers = 150, 3
    errors = []

    def optimistic():
        c = redis.Redis(port=mport)
        try:
            for _ in range(rounds):
                c.transaction(_incr, key)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def _incr(pipe):
        v = int(pipe.get(key))
        pipe.multi()
        pipe.set(key, v + 1)

    def plain():
        c = redis.Redis(port=mport)
        pipe = c.pipeline(transaction=False)
        for _ in range(rounds):
            pipe.incr(key)
        pipe.execute()

    threads = [threading.Thread(target=optimistic) for _ in range(workers)]
    threads += [threading.Thread(target=plain) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert int(m.get(key)) == 2 * rounds * workers


def test_read_your_writes_on_a_replica_with_a_lastwrite_token(cluster):
    key = key_in(0, 5460, "ryw")
    mport, replicas = master_of(node_port(1), key_slot(key.encode()))
    m = redis.Redis(port=mport)
    assert m.execute_command("LASTWRITE") is None
    replica = redis.Redis(port=replicas[0])
    replica.execute_command("READONLY")
    for i in range(20):
        m.set(key, f"v{i}")
        token = m.execute_command("LASTWRITE")
        p, offset = token.split(b":")
        assert int(p) == 0
        # Once WAITAPPLIED says 1, the replica's read sees the write.
        assert replica.execute_command("WAITAPPLIED", token, 5000) == 1
        assert replica.get(key) == f"v{i}".encode()
    # A token from the future times out with 0; bad input is refused.
    assert replica.execute_command("WAITAPPLIED", f"0:{int(offset) + 10**9}", 50) == 0
    for bad in (["x", 10], ["0:1", -1], ["9:1", 10], ["0:1", 10**9]):
        with pytest.raises(redis.ResponseError):
            replica.execute_command("WAITAPPLIED", *bad)


def kafka(*args, cluster):
    d = cluster[cluster.index("--dir") + 1]
    subprocess.run(["bash", str(REPO / "scripts" / "kafka.sh"), *args, "--dir", f"{d}/kafka"],
                   check=True, capture_output=True, text=True)


def test_broker_faults_one_tolerated_two_refuse_writes_cleanly_reads_go_on(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    key = key_in(0, 16383, "bf")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    wait_for(lambda: rc.set(key, "0"), 30, "writes to be served")
    mport, _ = master_of(node_port(1), key_slot(key.encode()))
    m = redis.Redis(port=mport, socket_timeout=30)
    # One broker down: writes go on (once Kafka has fenced it and shrunk the in-sync replicas).
    kafka("kill-broker", "1", cluster=cluster)
    wait_for(lambda: m.incr(key) >= 1, 30, "writes with one broker down")
    # Two down: fewer in-sync replicas than min.insync.replicas; a write is refused with an
    # error (never acknowledged), and reads go on.
    before = int(m.get(key))
    kafka("kill-broker", "2", cluster=cluster)
    time.sleep(4)
    with pytest.raises(redis.ResponseError) as e:
        m.incr(key)
    assert re.match(r"^(NOREPLICAS|ERR The log did not confirm|ERR No outcome|TRYAGAIN)", str(e.value)), str(e.value)
    after_refusal = int(m.get(key))
    assert after_refusal == before
    # Both back: writes are acknowledged again (the group may have moved the master), and the
    # refused INCR was applied at most once.
    kafka("start-broker", "1", cluster=cluster)
    kafka("start-broker", "2", cluster=cluster)
    wait_for(lambda: rc.incr(key) > 0, 60, "writes once the brokers are back")
    final = int(rc.get(key))
    assert before + 1 <= final <= before + 2


def partition_key(prefix):
    return key_in(0, 5460, prefix)


def incr_through_fault(rc, key, fault, seconds=20.0):
    """INCRs `key` for `seconds`, calling `fault()` once after 2 s: returns (acked, ambiguous,
    longest gap between acknowledged writes)."""
    acked = ambiguous = 0
    last = time.time()
    gap = 0.0
    start = time.time()
    done_fault = False
    while time.time() - start < seconds:
        if not done_fault and time.time() - start > 2:
            fault()
            done_fault = True
        try:
            rc.incr(key)
            acked += 1
            now = time.time()
            gap = max(gap, now - last)
            last = now
        except redis.RedisError as e:
            if "may still be applied" in str(e) or isinstance(e, (redis.ConnectionError, redis.TimeoutError)):
                ambiguous += 1
            time.sleep(0.02)
    return acked, ambiguous, gap


def test_kill_minus_nine_of_a_master_loses_no_acknowledged_write(cluster):
    key = partition_key("fo")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10,
                      socket_timeout=5)
    rc.delete(key)
    mport, _ = master_of(node_port(1), key_slot(key.encode()))
    victim = node_of_port(mport)
    acked, ambiguous, gap = incr_through_fault(
        rc, key, lambda: run("kill-node", str(victim), "--signal", "KILL", *cluster))
    print(f"kill -9 of node {victim}: {acked} acknowledged, {ambiguous} ambiguous, longest write gap {gap:.2f} s")
    value = int(rc.get(key))
    assert acked <= value <= acked + ambiguous
    new_port, _ = master_of(next(node_port(i) for i in (1, 2, 3) if i != victim), key_slot(key.encode()))
    assert node_of_port(new_port) != victim
    # The node comes back, catches up from its stored position, and holds the same value.
    run("start-node", str(victim), *cluster)
    wait_for(every_slot_served, 60, "every slot served")
    replica = redis.Redis(port=node_port(victim) + (mport - node_port(victim)))
    replica.execute_command("READONLY")
    wait_for(lambda: replica.get(key) == str(value).encode(), 30, "the restarted node to catch up")


def test_a_stalled_master_never_acknowledges_after_it_is_replaced(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    key = partition_key("stall")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10,
                      socket_timeout=5)
    # A node that rejoined may be handed a partition back (the group balances): wait it out.
    wait_for(lambda: rc.delete(key) is not None and rc.incr(key) == 1, 30, "writes to be served")
    mport, _ = master_of(node_port(1), key_slot(key.encode()))
    victim = node_of_port(mport)
    # A client of the master sends a write that the master reads only after it wakes.
    stale = redis.Redis(port=mport, socket_timeout=60)
    run("kill-node", str(victim), "--signal", "STOP", *cluster)
    try:
        others = [node_port(i) for i in (1, 2, 3) if i != victim]
        wait_for(lambda: node_of_port(master_of(others[0], key_slot(key.encode()))[0]) != victim, 30,
                 "a new master")
        for _ in range(10):
            rc.incr(key)
    finally:
        run("kill-node", str(victim), "--signal", "CONT", *cluster)
    try:
        late = stale.incr(key)
    except redis.ResponseError as e:
        late = str(e)
    assert isinstance(late, str) and re.match(r"^(MOVED|TRYAGAIN)", late), late
    assert int(rc.get(key)) == 11
    wait_for(settled, 60, "the cluster to settle")


def test_flushall_on_an_address_flushes_its_slots_on_every_replica_and_no_others(cluster):
    wait_for(settled, 60, "the cluster to settle")
    keys = {p: [key_in(lo, hi, f"fl{p}-{i}-") for i in range(30)]
            for p, (lo, hi) in enumerate([(0, 5460), (5461, 10921), (10922, 16383)])}
    rc = RedisCluster(host="127.0.0.1", port=node_port(1))
    for ks in keys.values():
        for i, k in enumerate(ks):
            rc.set(k, "v", ex=3600 if i % 2 else None)
    mport, replicas = master_of(node_port(1), 5461)
    with pytest.raises(redis.exceptions.ReadOnlyError):
        redis.Redis(port=replicas[0]).flushall()
    assert redis.Redis(port=mport).flushall() is True
    assert all(rc.get(k) is None for k in keys[1])
    assert all(rc.get(k) == b"v" for p in (0, 2) for k in keys[p])
    for port in replicas:
        r = redis.Redis(port=port)
        r.execute_command("READONLY")
        wait_for(lambda: r.dbsize() == 0, 10, "the replica to flush its partition")
        assert all(r.get(k) is None for k in keys[1])
    # A flush inside a transaction is one record, answering OK like the others.
    tag = "{" + keys[1][0] + "}"
    p = redis.Redis(port=mport).pipeline(transaction=True)
    p.set(f"{tag}:x", 1).flushdb().get(f"{tag}:x")
    assert p.execute() == [True, True, None]
    # The cluster client's FLUSHALL reaches every master.
    rc.flushall()
    assert all(rc.get(k) is None for ks in keys.values() for k in ks)


def test_scripts_run_as_one_record_alike_on_every_replica(cluster):
    wait_for(settled, 60, "the cluster to settle")
    key = key_in(10922, 16383, "lua")
    tag = "{" + key + "}"
    mport, replicas = master_of(node_port(1), key_slot(key.encode()))
    m = redis.Redis(port=mport)
    # The applied result is the reply; random numbers and TIME are the record's, so every
    # replica writes what the master wrote.
    body = ("redis.call('SET', KEYS[1], math.random(1, 1000000000) .. ':' .. math.random() .. ':' "
            ".. redis.call('TIME')[1]) return redis.call('INCRBY', KEYS[2], ARGV[1])")
    assert m.eval(body, 2, f"{tag}:r", f"{tag}:n", 5) == 5
    assert m.eval(body, 2, f"{tag}:r", f"{tag}:n", 5) == 10
    want = m.get(f"{tag}:r")
    for port in replicas:
        r = redis.Redis(port=port)
        r.execute_command("READONLY")
        wait_for(lambda: r.get(f"{tag}:n") == b"10", 10, "the replica to apply the script")
        assert r.get(f"{tag}:r") == want
        # A read-only script runs on a replica that serves reads.
        assert r.eval_ro("return redis.call('GET', KEYS[1])", 1, f"{tag}:n") == b"10"
    # EVALSHA resolves the body on the master: replicas never need the script cache.
    sha = m.script_load("return redis.call('INCR', KEYS[1])")
    assert m.evalsha(sha, 1, f"{tag}:n") == 11
    with pytest.raises(redis.exceptions.NoScriptError):
        m.evalsha("0" * 40, 1, f"{tag}:n")
    # Keys of another partition, or keys called but in no slot of this one, are refused.
    far = key_in(0, 5460, "far")
    with pytest.raises(redis.ResponseError, match="non local key"):
        m.eval("return redis.call('SET', ARGV[1], 1)", 1, f"{tag}:n", far)
    with pytest.raises(redis.ResponseError, match="^MOVED"):
        redis.Redis(port=replicas[0]).eval("return 1", 1, f"{tag}:n")
    # A runaway script stops at its instruction budget, at the same instruction everywhere,
    # and the partition goes on.
    m.config_set("cluster-script-max-instructions", 1_000_000)
    try:
        with pytest.raises(redis.ResponseError, match="instruction budget"):
            m.eval("redis.call('INCR', KEYS[1]) while true do end", 1, f"{tag}:n")
    finally:
        m.config_set("cluster-script-max-instructions", 500_000_000)
    assert m.incr(f"{tag}:n") == 13
    for port in replicas:
        r = redis.Redis(port=port)
        r.execute_command("READONLY")
        wait_for(lambda: r.get(f"{tag}:n") == b"13", 10, "the replica to pass the stopped script")


def test_redis_py_lock_works_through_the_cluster_client(cluster):
    wait_for(settled, 60, "the cluster to settle")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1))
    lock = rc.lock("resource-lock", timeout=10, blocking_timeout=1)
    assert lock.acquire()
    other = rc.lock("resource-lock", timeout=10, blocking_timeout=0.2)
    assert not other.acquire()
    assert lock.extend(5)
    lock.release()
    assert other.acquire()
    other.release()
    assert rc.get("resource-lock") is None


def shards_by_port(port):
    out = {}
    for shard in redis.Redis(port=port, decode_responses=True).execute_command("CLUSTER SHARDS"):
        shard = dict(zip(shard[::2], shard[1::2])) if isinstance(shard, list) else shard
        for n in shard["nodes"]:
            n = dict(zip(n[::2], n[1::2])) if isinstance(n, list) else n
            out[n["port"]] = n
    return out


def test_lagging_replicas_leave_the_slot_map_and_progress_is_reported(cluster):
    wait_for(settled, 60, "the cluster to settle")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1))
    for i in range(30):
        rc.set(f"lag{i}", i)
    # Every node's progress reaches every other through the status topic.
    wait_for(lambda: all(n["replication-offset"] > 0 and n["health"] == "online"
                         for n in shards_by_port(node_port(1)).values()), 30, "progress reports")
    # ROLE and INFO replication agree with the slot map (once a node that rejoined in an
    # earlier test is back in the group's member list).
    def roles_agree():
        mport, replicas = master_of(node_port(1), key_slot(b"lag0"))
        role = redis.Redis(port=mport).execute_command("ROLE")
        rrole = redis.Redis(port=replicas[0]).execute_command("ROLE")
        info = redis.Redis(port=mport).info("replication")
        return (role[0] == b"master" and role[1] > 0 and len(replicas) == 2
                and sorted(int(r[1]) for r in role[2]) == sorted(replicas)
                and rrole[:3] == [b"slave", b"127.0.0.1", mport] and rrole[3] == b"connected"
                and info["role"] == "master" and info["connected_slaves"] == 2)
    wait_for(roles_agree, 30, "ROLE and INFO replication to agree with the slot map")
    # With no lag allowed every replica counts as lagging: the slot map keeps the masters only,
    # CLUSTER SHARDS shows the replicas as loading; allowing lag again brings them back.
    n1 = redis.Redis(port=node_port(1))
    n1.config_set("replica-max-lag-ms", 0)
    try:
        assert all(len(rest) == 1 for _, _, *rest in slots(node_port(1)))
        assert all(n["health"] == "loading" for n in shards_by_port(node_port(1)).values()
                   if n["role"] == "replica")
        nodes = redis.Redis(port=node_port(1), decode_responses=True).execute_command("CLUSTER NODES")
        assert all("master" in n["flags"] for n in nodes.values())
    finally:
        n1.config_set("replica-max-lag-ms", 10000)
    wait_for(lambda: all(len(rest) == 3 for _, _, *rest in slots(node_port(1))), 30,
             "the replicas back in the slot map")


def digest(port):
    """The partition's content as the address at `port` holds it: keys, values and absolute
    expiry times."""
    r = redis.Redis(port=port)
    r.execute_command("READONLY")
    items = sorted((k, value(r, k), r.execute_command("PEXPIRETIME", k)) for k in r.scan_iter(count=1000))
    return hashlib.sha256(repr(items).encode()).hexdigest(), len(items)


def value(r, key):
    """The value at `key`, whatever its type, in a form that compares."""
    kind = r.type(key)
    if kind == b"list":
        return r.lrange(key, 0, -1)
    if kind == b"hash":
        return sorted(r.hgetall(key).items())
    if kind == b"set":
        return sorted(r.smembers(key))
    if kind == b"zset":
        return r.zrange(key, 0, -1, withscores=True)
    return r.get(key)


def test_a_wiped_node_loads_every_partition_from_the_log_and_all_replicas_agree(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    for i in range(300):
        rc.set(f"bs{i}", f"v{i}", px=3_600_000 if i % 3 == 0 else None)
        if i % 10 == 0:
            rc.incr(f"bsn{i % 7}")
    victim = 3
    run("kill-node", str(victim), "--signal", "KILL", *cluster)
    wait_for(lambda: every_slot_served() and all(node_of_port(m[1]) != victim
                                                 for _, _, m, *_ in slots(node_port(1))),
             60, "every slot served without the node")
    for i in range(100):
        rc.set(f"bs-after{i}", i)
    run("start-node", str(victim), "--wipe", *cluster)
    wait_for(every_slot_served, 60, "every slot served")
    # Once every replica has applied its master's last write, every address of a partition
    # holds the same content, the wiped node's too.
    for lo, hi, master, *rest in slots(node_port(1)):
        m = redis.Redis(port=master[1])
        m.set("{" + key_in(lo, hi, "bsmark") + "}", "x")
        token = m.execute_command("LASTWRITE")
        ports = [master[1]] + [node_port(i) + (master[1] - node_port(node_of_port(master[1])))
                               for i in (1, 2, 3) if i != node_of_port(master[1])]
        for port in ports[1:]:
            r = redis.Redis(port=port)
            r.execute_command("READONLY")
            assert r.execute_command("WAITAPPLIED", token, 60000) == 1, port
        digests = {port: digest(port) for port in ports}
        assert len(set(digests.values())) == 1, digests
        assert next(iter(digests.values()))[1] > 0


LIB = """#!lua name=counters
redis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)
redis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}
"""


def test_functions_are_each_partitions_own_replicated_through_its_log(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    # Loaded on every master address, as a cluster client's FUNCTION LOAD goes to every primary.
    for _, _, master, *_ in slots(node_port(1)):
        m = redis.Redis(port=master[1])
        m.function_flush()
        assert m.function_load(LIB) in (b"counters", "counters")
        with pytest.raises(redis.ResponseError, match="already exists"):
            m.function_load(LIB)
    key = key_in(5461, 10921, "fn")
    mport, replicas = master_of(node_port(1), key_slot(key.encode()))
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    assert rc.fcall("bump", 1, key, 5) == 5
    assert rc.fcall("bump", 1, key, 2) == 7
    for port in replicas:
        r = redis.Redis(port=port)
        r.execute_command("READONLY")
        # The replica has the library from the log, runs the read-only function, refuses changes.
        wait_for(lambda: r.fcall_ro("peek", 1, key) == b"7", 10, "the replica to apply the call")
        assert b"counters" in repr(r.function_list()).encode()
        with pytest.raises(redis.exceptions.ReadOnlyError):
            r.function_delete("counters")
        with pytest.raises(redis.ResponseError, match="^MOVED"):
            redis.Redis(port=port).fcall("bump", 1, key, 1)
    # A new master has the partition's functions without loading them again.
    victim = node_of_port(mport)
    run("kill-node", str(victim), "--signal", "KILL", *cluster)
    try:
        wait_for(lambda: node_of_port(master_of(node_port(1 if victim != 1 else 2),
                                                key_slot(key.encode()))[0]) != victim,
                 60, "a new master")
        wait_for(lambda: rc.fcall("bump", 1, key, 1) == 8, 30, "FCALL on the new master")
    finally:
        run("start-node", str(victim), *cluster)
    wait_for(every_slot_served, 60, "every slot served")


def push_csv(path, rows):
    with open(path, "w") as f:
        f.write("key,value\n")
        for k, v in rows:
            f.write(f"{k},{v}\n")


def cli_push(store, path, port, *extra):
    return subprocess.run([str(servers.rialto_bin()), "push", "--store", store, "--input", str(path),
                           "--server", f"127.0.0.1:{port}", "--no-progress", *extra],
                          capture_output=True, text=True, timeout=300)


def partition_versions(port, store):
    d = redis.Redis(port=port, protocol=3).execute_command("STORE", "DESCRIBE", store)
    return [p[b"current-version"] if p else None for p in d[b"partitions"]]


def settle():
    """Waits until every replica applied each partition's master's last write (a marker); a
    master that changes meanwhile (a rejoining node handed its partition back) is followed."""
    for p in range(PARTITIONS):
        lo, hi = p * 16384 // PARTITIONS, (p + 1) * 16384 // PARTITIONS - 1
        key = "{" + key_in(lo, hi, "pmark") + "}"
        end = time.time() + 60
        while True:
            mport = master_of(node_port(1), lo)[0]
            try:
                m = redis.Redis(port=mport)
                m.set(key, "x")
                token = m.execute_command("LASTWRITE")
                break
            except redis.ResponseError as e:
                if time.time() > end or not str(e).startswith(("MOVED", "TRYAGAIN")):
                    raise
                time.sleep(0.2)
        off = mport - node_port(node_of_port(mport))
        for i in (1, 2, 3):
            if node_port(i) + off != mport:
                r = redis.Redis(port=node_port(i) + off)
                r.execute_command("READONLY")
                assert r.execute_command("WAITAPPLIED", token, 60000) == 1


def every_replica_agrees():
    for lo, hi, master, *_ in slots(node_port(1)):
        off = master[1] - node_port(node_of_port(master[1]))
        digests = {i: digest(node_port(i) + off) for i in (1, 2, 3)}
        assert len(set(digests.values())) == 1, digests


def test_a_push_swaps_each_partition_at_one_point_and_replays_streamed_writes(cluster, tmp_path):
    wait_for(every_slot_served, 60, "every slot served")
    c1 = redis.Redis(port=node_port(1))
    c1.execute_command("STORE", "CREATE", "feat")
    # Every partition has it on the node that answered; the others apply the same records.
    assert partition_versions(node_port(1), "feat") == [1, 1, 1]
    for i in (2, 3):
        wait_for(lambda: partition_versions(node_port(i), "feat") == [1, 1, 1], 30,
                 f"node {i} to create the store")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    # A group of keys in one slot, read together by MGET while versions are swapped.
    group = [f"{{g}}{i}" for i in range(20)]
    n = 20000
    rows = lambda v: [(k, f"{v}:{k}") for k in group] + [(f"r{i}", f"{v}:{i}") for i in range(n)]
    push_csv(tmp_path / "v2.csv", rows(2))
    done = cli_push("feat", tmp_path / "v2.csv", node_port(2))
    assert done.returncode == 0, done.stderr
    assert rc.get("feat:r7") == b"2:7"
    stop = threading.Event()
    mixed, seen, acked, errors = [], set(), {}, []

    def reader():
        r = RedisCluster(host="127.0.0.1", port=node_port(3), cluster_error_retry_attempts=10)
        while not stop.is_set():
            vals = r.mget([f"feat:{k}" for k in group])
            versions = {v.split(b":")[0] for v in vals}
            seen.update(versions)
            if len(versions) != 1:
                mixed.append(vals)

    def writer():
        w = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
        i = 0
        while not stop.is_set():
            k = f"feat:s{i % 200}"
            try:
                w.set(k, f"w{i}")
                acked[k] = f"w{i}".encode()
            except redis.RedisError as e:
                errors.append(e)
            i += 1

    # Version 3 over RESP: the writes acknowledged after PUSH BEGIN are replayed onto it.
    c3 = redis.Redis(port=node_port(3))
    v = c3.execute_command("PUSH", "BEGIN", "feat")
    threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
    for t in threads:
        t.start()
    try:
        flat = [x for kv in rows(3) for x in kv]
        for i in range(0, len(flat), 4000):
            c3.execute_command("PUSH", "ADD", v, *flat[i:i + 4000])
        c3.execute_command("PUSH", "COMMIT", v)
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not mixed, mixed[:3]
    assert seen >= {b"2", b"3"}
    assert not errors, errors[:3]
    # Every acknowledged streamed write is there after the swap (replayed onto version 3).
    for k, v in acked.items():
        assert rc.get(k) == v, k
    assert rc.get("feat:r7") == b"3:7"
    settle()
    for i in (1, 2, 3):
        assert partition_versions(node_port(i), "feat") == [3, 3, 3]
    every_replica_agrees()
    # A rollback goes back in every partition; the streamed writes stay.
    c1.execute_command("STORE", "ROLLBACK", "feat")
    assert rc.get("feat:r7") == b"2:7"
    for k, v in acked.items():
        assert rc.get(k) == v, k
    settle()
    for i in (1, 2, 3):
        assert partition_versions(node_port(i), "feat") == [2, 2, 2]
    with pytest.raises(redis.ResponseError, match="keeps no version older"):
        c1.execute_command("STORE", "ROLLBACK", "feat")


def test_a_push_of_duplicate_keys_or_no_records_is_refused_and_a_closed_connection_aborts(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    c2 = redis.Redis(port=node_port(2))
    c2.execute_command("STORE", "CREATE", "dup")
    v = c2.execute_command("PUSH", "BEGIN", "dup")
    c2.execute_command("PUSH", "ADD", v, "a", "1", "b", "2", "a", "3")
    with pytest.raises(redis.ResponseError, match='^push failed: duplicate key "a"$'):
        c2.execute_command("PUSH", "COMMIT", v)
    assert c2.execute_command("PUSH", "LIST") == []
    settle()
    for i in (1, 2, 3):
        assert partition_versions(node_port(i), "dup") == [1, 1, 1]
    # An empty push is refused before anything is loaded.
    v = c2.execute_command("PUSH", "BEGIN", "dup")
    with pytest.raises(redis.ResponseError, match="fewer than the 1 required"):
        c2.execute_command("PUSH", "COMMIT", v)
    # Another connection cannot touch a push; closing its own aborts it.
    owner = redis.Redis(port=node_port(1))
    v = owner.execute_command("PUSH", "BEGIN", "dup")
    with pytest.raises(redis.ResponseError, match="belongs to another connection"):
        redis.Redis(port=node_port(1)).execute_command("PUSH", "ABORT", v)
    owner.close()
    wait_for(lambda: redis.Redis(port=node_port(3), protocol=3)
             .execute_command("STORE", "DESCRIBE", "dup")[b"pushing-version"] is None,
             30, "the closed connection's push to be aborted")
    v2 = c2.execute_command("PUSH", "BEGIN", "dup", "DUPLICATES", "LAST-WINS")
    c2.execute_command("PUSH", "ADD", v2, "a", "1", "a", "2")
    reply = c2.execute_command("PUSH", "COMMIT", v2)
    assert reply[reply.index(b"records") + 1] == 1
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    wait_for(lambda: rc.get("dup:a") == b"2", 30, "the last-wins push")
    c2.execute_command("STORE", "DELETE", "dup")
    assert rc.get("dup:a") is None
    assert b"dup" not in c2.execute_command("STORE", "LIST")


def test_a_node_down_during_a_push_or_wiped_loads_the_versions_it_needs(cluster, tmp_path):
    wait_for(every_slot_served, 60, "every slot served")
    c1 = redis.Redis(port=node_port(1))
    c1.execute_command("STORE", "CREATE", "boot")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    for v in (2, 3):
        push_csv(tmp_path / f"b{v}.csv", [(f"k{i}", f"{v}:{i}") for i in range(3000)])
        assert cli_push("boot", tmp_path / f"b{v}.csv", node_port(1)).returncode == 0
    # Node 3 dies after the push began: the live nodes commit without it.
    victim = 3
    v = c1.execute_command("PUSH", "BEGIN", "boot")
    c1.execute_command("PUSH", "ADD", v, *[x for i in range(3000) for x in (f"k{i}", f"4:{i}")])
    run("kill-node", str(victim), "--signal", "KILL", *cluster)
    wait_for(lambda: every_slot_served() and all(node_of_port(m[1]) != victim
                                                 for _, _, m, *_ in slots(node_port(1))),
             60, "every slot served without the node")
    reply = c1.execute_command("PUSH", "COMMIT", v)
    assert reply[reply.index(b"nodes") + 1] == 2
    assert rc.get("boot:k5") == b"4:5"
    # Back with its data, it loads version 4 before its partitions swap it in.
    run("start-node", str(victim), *cluster)
    wait_for(every_slot_served, 60, "every slot served")
    settle()
    assert partition_versions(node_port(victim), "boot") == [4, 4, 4]
    every_replica_agrees()
    # Wiped, it rebuilds from the log: version 2's topic is gone (superseded), 3 and 4 load.
    run("kill-node", str(victim), "--signal", "KILL", *cluster)
    wait_for(lambda: every_slot_served() and all(node_of_port(m[1]) != victim
                                                 for _, _, m, *_ in slots(node_port(1))),
             60, "every slot served without the node")
    run("start-node", str(victim), "--wipe", *cluster)
    wait_for(every_slot_served, 60, "every slot served")
    settle()
    assert partition_versions(node_port(victim), "boot") == [4, 4, 4]
    every_replica_agrees()
    c1.execute_command("STORE", "ROLLBACK", "boot")
    settle()
    every_replica_agrees()
    r = redis.Redis(port=node_port(victim) + slot_partition("boot:k5"))
    r.execute_command("READONLY")
    assert r.get("boot:k5") == b"3:5"


def test_a_store_keeps_its_versions_and_codec_on_every_node_and_rolls_back_to_one_named(cluster, tmp_path):
    wait_for(every_slot_served, 60, "every slot served")
    c1 = redis.Redis(port=node_port(1), protocol=3)
    c1.execute_command("STORE", "CREATE", "kp", "KEEP", "3", "COMPRESSION", "zstd")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    for v in (2, 3, 4):
        push_csv(tmp_path / f"kp{v}.csv", [(f"r{i}", f"{v}:{i}") for i in range(2000)])
        done = cli_push("kp", tmp_path / f"kp{v}.csv", node_port(2))
        assert done.returncode == 0, done.stderr
    rc.set("kp:streamed", "x")
    settle()
    for i in (1, 2, 3):
        d = redis.Redis(port=node_port(i), protocol=3).execute_command("STORE", "DESCRIBE", "kp")
        assert (d[b"keep"], d[b"compression"], d[b"kept-versions"]) == (3, b"zstd", [3, 2]), d
        assert [p[b"kept-versions"] for p in d[b"partitions"]] == [[3, 2]] * 3, d
    with pytest.raises(redis.ResponseError, match="roll back to are 3, 2"):
        c1.execute_command("STORE", "ROLLBACK", "kp", "1")
    # Two versions back at once, in every partition; the streamed write stays.
    redis.Redis(port=node_port(3)).execute_command("STORE", "ROLLBACK", "kp", "2")
    assert rc.get("kp:r7") == b"2:7"
    assert rc.get("kp:streamed") == b"x"
    settle()
    for i in (1, 2, 3):
        assert partition_versions(node_port(i), "kp") == [2, 2, 2]
    with pytest.raises(redis.ResponseError, match="keeps no version older"):
        c1.execute_command("STORE", "ROLLBACK", "kp")
    d = c1.execute_command("STORE", "CONFIG", "kp", "KEEP", "1", "COMPRESSION", "lz4")
    assert (d[b"keep"], d[b"compression"]) == (1, b"lz4"), d
    push_csv(tmp_path / "kp5.csv", [(f"r{i}", f"5:{i}") for i in range(2000)])
    assert cli_push("kp", tmp_path / "kp5.csv", node_port(1)).returncode == 0
    settle()
    d = c1.execute_command("STORE", "DESCRIBE", "kp")
    assert d[b"kept-versions"] == [] and [p[b"kept-versions"] for p in d[b"partitions"]] == [[]] * 3, d
    every_replica_agrees()


def test_a_push_survives_a_broker_killed_in_its_middle(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    c1 = redis.Redis(port=node_port(1), socket_timeout=60)
    c1.execute_command("STORE", "CREATE", "brk")
    v = c1.execute_command("PUSH", "BEGIN", "brk")
    rows = [x for i in range(20000) for x in (f"k{i}", f"{i}")]
    c1.execute_command("PUSH", "ADD", v, *rows[:20000])
    kafka("kill-broker", "3", cluster=cluster)
    try:
        # With two brokers of three the version topic and the logs take writes (min ISR 2).
        c1.execute_command("PUSH", "ADD", v, *rows[20000:])
        reply = c1.execute_command("PUSH", "COMMIT", v)
        assert reply[reply.index(b"records") + 1] == 20000
    finally:
        kafka("start-broker", "3", cluster=cluster)
    rc = RedisCluster(host="127.0.0.1", port=node_port(2), cluster_error_retry_attempts=10)
    wait_for(lambda: rc.get("brk:k19999") == b"19999", 60, "the pushed version")
    settle()
    every_replica_agrees()


def test_a_push_whose_coordinator_dies_is_aborted_by_the_others(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    c1 = redis.Redis(port=node_port(1), protocol=3)
    c1.execute_command("STORE", "CREATE", "orphan")
    victim = 2
    c = redis.Redis(port=node_port(victim))
    v = c.execute_command("PUSH", "BEGIN", "orphan")
    c.execute_command("PUSH", "ADD", v, "a", "1")
    # Every node lists the cluster's pushes, whichever node coordinates them.
    assert redis.Redis(port=node_port(3)).execute_command("PUSH", "LIST") == [v, b"orphan"]
    run("kill-node", str(victim), "--signal", "KILL", *cluster)
    try:
        # Out of the group for twice cluster-node-timeout: any node aborts its push.
        wait_for(lambda: c1.execute_command("STORE", "DESCRIBE", "orphan")[b"pushing-version"] is None,
                 60, "the orphaned push to be aborted")
    finally:
        run("start-node", str(victim), *cluster)
    wait_for(every_slot_served, 60, "every slot served")
    v2 = c1.execute_command("PUSH", "BEGIN", "orphan")
    c1.execute_command("PUSH", "ADD", v2, "a", "2")
    c1.execute_command("PUSH", "COMMIT", v2)
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    assert rc.get("orphan:a") == b"2"


def slot_partition(key):
    s = key_slot(key.encode())
    for p in range(PARTITIONS):
        lo, hi = p * 16384 // PARTITIONS, (p + 1) * 16384 // PARTITIONS - 1
        if lo <= s <= hi:
            return p
    raise AssertionError(key)


def test_blocking_pops_are_served_by_writes_through_the_log(cluster):
    wait_for(every_slot_served, 60, "every slot served")
    rc = RedisCluster(host="127.0.0.1", port=node_port(1), cluster_error_retry_attempts=10)
    src, dst, zkey = "{bq}src", "{bq}dst", "{bq}z"
    rc.delete(src, dst, zkey)
    master, _ = master_of(node_port(1), key_slot(b"{bq}"))
    results = {}

    def blocked(name, *command):
        c = redis.Redis(port=master, socket_timeout=30)
        try:
            results[name] = c.execute_command(*command)
        except redis.RedisError as e:
            results[name] = e
        finally:
            c.close()

    # A pop with nothing to take waits; the push that follows, ordered by the partition's log,
    # serves it, oldest waiter first.
    waiters = [
        threading.Thread(target=blocked, args=("blpop", "BLPOP", src, 20)),
        threading.Thread(target=blocked, args=("blmove", "BLMOVE", src, dst, "LEFT", "RIGHT", 20)),
        threading.Thread(target=blocked, args=("bzpopmin", "BZPOPMIN", zkey, 20)),
    ]
    for t in waiters:
        t.start()
        time.sleep(0.3)
    rc.rpush(src, "a", "b")
    rc.zadd(zkey, {"m": 1.5})
    for t in waiters:
        t.join(30)
    assert list(results["blpop"]) == [src.encode(), b"a"], results
    assert results["blmove"] == b"b", results
    assert list(results["bzpopmin"]) == [zkey.encode(), b"m", 1.5], results
    assert rc.lrange(dst, 0, -1) == [b"b"]
    assert rc.exists(src) == 0
    # A timeout answers nil; nothing was taken.
    c = redis.Redis(port=master)
    assert c.execute_command("BRPOP", src, "0.2") is None
    settle()
    every_replica_agrees()


def test_a_hash_push_loads_rows_as_hashes_on_every_replica(cluster, tmp_path):
    wait_for(every_slot_served, 60, "every slot served")
    c1 = redis.Redis(port=node_port(1))
    c1.execute_command("STORE", "CREATE", "ent")
    for i in (1, 2, 3):
        wait_for(lambda: partition_versions(node_port(i), "ent") == [1, 1, 1], 30,
                 f"node {i} to create the store")
    n = 3000
    path = tmp_path / "ent.csv"
    with open(path, "w") as f:
        f.write("id,clicks,score,label\n")
        for i in range(n):
            # CSV has no nulls: an empty field is an empty string.
            label = "" if i % 7 == 0 else f"l{i}"
            f.write(f"e{i},{i},{i / 4},{label}\n")
    done = cli_push("ent", path, node_port(3), "--key-field", "id", "--layout", "hash")
    assert done.returncode == 0, done.stderr
    rc = RedisCluster(host="127.0.0.1", port=node_port(2), cluster_error_retry_attempts=10)
    assert rc.hgetall("ent:e5") == {b"clicks": b"5", b"score": b"1.25", b"label": b"l5"}
    assert rc.hgetall("ent:e7") == {b"clicks": b"7", b"score": b"1.75", b"label": b""}
    assert rc.hmget("ent:e2999", ["clicks", "label"]) == [b"2999", b"l2999"]
    assert rc.type("ent:e1") == b"hash"
    settle()
    # Every replica holds the same version of every partition, and reads it.
    for i in (1, 2, 3):
        assert partition_versions(node_port(i), "ent") == [2, 2, 2]
    _, replicas = master_of(node_port(1), key_slot(b"ent:e5"))
    r = redis.Redis(port=replicas[0])
    r.execute_command("READONLY")
    assert r.hget("ent:e5", "score") == b"1.25"
    every_replica_agrees()
