#!/usr/bin/env python3
"""A batch push into Rialto's cluster on Kafka, against the same push into one `rialto serve`
and against loading the same records into a Redis 7 Cluster with pipelined SETs; and GET
latency on the cluster during a push against idle.

Everything runs side by side on this machine for the whole run; each round runs the three
loads in turn (the order rotates every round):
- Rialto cluster: 3 nodes, 3 partitions, 3 Kafka brokers (scripts/cluster.sh), nodes at
  appendfsync everysec; `rialto push --server` to one node (records go to the version topic,
  every node loads every partition, one swap per partition).
- One node: `rialto serve` (defaults: appendfsync always) and the same `rialto push --server`.
- Redis Cluster: 3 masters with 1 replica each, appendonly yes, appendfsync always; the records
  as SET commands, grouped by the master that owns each key's slot, each master's share sent
  by its own `redis-cli --pipe` at once (generated before the clock starts).
Then, on the cluster: `redis-benchmark --cluster -t get -c 50` over the pushed keys, idle and
while a push of the same records runs (p50/p99 from redis-benchmark's CSV).

Records are `key:%012d` (the keys redis-benchmark -r reads) with --value-size byte values, in a
CSV made once under target/bench-cluster-push (on disk, not tmpfs).

Usage: scripts/bench-cluster-push.py [--records 1000000] [--value-size 100] [--rounds 3]
Environment: RIALTO_BIN (default target/release/rialto). Needs Java and Maven (Kafka),
redis-server 7 and redis-tools.
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "target" / "bench-cluster-push"
CLUSTER_BASE = 7000
SINGLE_PORT = 7400
REDIS_PORTS = list(range(30001, 30007))  # as scripts/bench-cluster.py


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(*args, **kw):
    return subprocess.run(args, check=True, text=True, capture_output=True, **kw)


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def make_csv(path, n, size):
    if path.exists() and path.stat().st_size > 0:
        return
    log(f"writing {n} records to {path}")
    filler = ("x" * size)
    with open(path, "w") as f:
        f.write("key,value\n")
        for i in range(n):
            v = f"{i:012d}" + filler
            f.write(f"{i:012d},{v[:size]}\n")


def redis_pipes(csv, masters):
    """One RESP file per Redis master: SET commands for the keys whose slots it owns."""
    files = {port: open(WORK / f"redis-{port}.resp", "wb") for port, _ in masters}
    masters = sorted(masters, key=lambda m: m[1][0])
    with open(csv) as f:
        next(f)
        for line in f:
            k, v = line.rstrip("\n").split(",", 1)
            key = f"key:{k}".encode()
            slot = crc16(key) % 16384
            port = next(p for p, (lo, hi) in masters if lo <= slot <= hi)
            val = v.encode()
            files[port].write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(val), val))
    for fh in files.values():
        fh.close()
    return {port: WORK / f"redis-{port}.resp" for port in files}


def _bench_cluster():
    """scripts/bench-cluster.py, whose Redis Cluster (ports, persistence) this one shares."""
    spec = importlib.util.spec_from_file_location("bench_cluster", REPO / "scripts" / "bench-cluster.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.WORK = WORK
    return mod


def start_redis_cluster():
    """Starts the Redis Cluster; returns each master's slot ranges as (port, (lo, hi))."""
    _bench_cluster().start_redis_cluster()
    time.sleep(2)
    masters = []
    for line in sh("redis-cli", "-p", str(REDIS_PORTS[0]), "cluster", "nodes").stdout.splitlines():
        f = line.split()
        if "master" in f[2].split(","):
            port = int(f[1].split("@")[0].rsplit(":", 1)[1])
            for r in f[8:]:
                lo, _, hi = r.partition("-")
                masters.append((port, (int(lo), int(hi or lo))))
    return masters


def stop_redis_cluster():
    _bench_cluster().stop_redis_cluster()


def flush_redis(masters):
    for port, _ in masters:
        sh("redis-cli", "-p", str(port), "flushall")


def load_redis(pipes):
    t = time.time()
    procs = [subprocess.Popen(f"redis-cli -p {port} --pipe < {path}", shell=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for port, path in pipes.items()]
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0 or "errors: 0" not in out:
            raise RuntimeError(f"redis-cli --pipe failed: {out[-500:]}")
    return time.time() - t


def push(rialto, csv, port, store="bench"):
    t = time.time()
    r = subprocess.run([rialto, "push", "--store", store, "--input", str(csv), "--server",
                        f"127.0.0.1:{port}", "--no-progress", "--max-shrink", "100", "--batch", "5000"],
                       text=True, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"push to {port} failed: {r.stderr[-1000:]}")
    return time.time() - t


def get_latency(n, records, background=None):
    """redis-benchmark --cluster GETs on the Rialto cluster; returns (rps, p50, p99)."""
    proc = subprocess.Popen(background, stdout=subprocess.DEVNULL) if background else None
    try:
        out = sh("redis-benchmark", "--cluster", "-h", "127.0.0.1", "-p", str(CLUSTER_BASE), "-t", "get",
                 "-c", "50", "-n", str(n), "-r", str(records), "-d", "100", "--csv").stdout
    finally:
        if proc:
            proc.wait()
    row = [l for l in out.splitlines() if l.startswith('"GET"')][0]
    f = [x.strip('"') for x in row.split(",")]
    # test, rps, avg, min, p50, p95, p99, max
    return float(f[1]), float(f[4]), float(f[6])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gets", type=int, default=200_000)
    a = ap.parse_args()
    rialto = os.environ.get("RIALTO_BIN", str(REPO / "target" / "release" / "rialto"))
    WORK.mkdir(parents=True, exist_ok=True)
    csv = WORK / f"records-{a.records}-{a.value_size}.csv"
    make_csv(csv, a.records, a.value_size)
    cdir = WORK / "rialto-cluster"
    sdir = WORK / "single"
    shutil.rmtree(cdir, ignore_errors=True)
    shutil.rmtree(sdir, ignore_errors=True)
    sdir.mkdir(parents=True)
    single = None
    try:
        log("starting the Rialto cluster, one rialto serve and the Redis Cluster")
        sh("bash", str(REPO / "scripts" / "cluster.sh"), "up", "--bin", rialto, "--dir", str(cdir),
           "--base-port", str(CLUSTER_BASE))
        single = subprocess.Popen([rialto, "serve", "--port", str(SINGLE_PORT), "--dir", str(sdir / "data")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        masters = start_redis_cluster()
        pipes = redis_pipes(csv, masters)
        for port in (CLUSTER_BASE, SINGLE_PORT):
            sh("redis-cli", "-p", str(port), "store", "create", "bench", "prefix", "key:")
        # Warm-up: Kafka's JVMs and the page cache.
        push(rialto, csv, CLUSTER_BASE)
        results = {"cluster": [], "single": [], "redis": []}
        order = ["cluster", "single", "redis"]
        for rnd in range(a.rounds):
            for case in order[rnd % 3:] + order[:rnd % 3]:
                if case == "cluster":
                    t = push(rialto, csv, CLUSTER_BASE)
                elif case == "single":
                    t = push(rialto, csv, SINGLE_PORT)
                else:
                    flush_redis(masters)
                    t = load_redis(pipes)
                results[case].append(t)
                log(f"round {rnd + 1} {case}: {t:.2f} s, {a.records / t:,.0f} records/s")
        idle = [get_latency(a.gets, a.records) for _ in range(a.rounds)]
        busy = [get_latency(a.gets, a.records,
                            [rialto, "push", "--store", "bench", "--input", str(csv), "--server",
                             f"127.0.0.1:{CLUSTER_BASE + 100}", "--no-progress", "--max-shrink", "100"])
                for _ in range(a.rounds)]
    finally:
        if single:
            single.terminate()
            single.wait()
        stop_redis_cluster()
        subprocess.run(["bash", str(REPO / "scripts" / "cluster.sh"), "down", "--dir", str(cdir)],
                       capture_output=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    rate = {k: a.records / v for k, v in med.items()}
    print(f"records: {a.records} x {a.value_size} B, {a.rounds} rounds (median seconds)")
    print("| load | seconds | records/s | Rialto cluster / this |")
    print("|---|---:|---:|---:|")
    for k, name in [("cluster", "Rialto cluster push (3 nodes, RF 3)"), ("single", "one rialto serve push"),
                    ("redis", "Redis Cluster pipelined SET (3+3, always)")]:
        print(f"| {name} | {med[k]:.2f} | {rate[k]:,.0f} | {rate['cluster'] / rate[k]:.2f}x |")
    mi = [statistics.median(x[i] for x in idle) for i in range(3)]
    mb = [statistics.median(x[i] for x in busy) for i in range(3)]
    print("| GET on the cluster | rps | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    print(f"| idle | {mi[0]:,.0f} | {mi[1]:.3f} | {mi[2]:.3f} |")
    print(f"| during a push | {mb[0]:,.0f} | {mb[1]:.3f} | {mb[2]:.3f} |")
    print(f"p99 during a push / idle: {mb[2] / mi[2]:.2f}x")


if __name__ == "__main__":
    main()
