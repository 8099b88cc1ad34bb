#!/usr/bin/env python3
"""Rialto's cluster on Kafka against a Redis 7 Cluster, with redis-benchmark --cluster.

Both clusters run side by side on this machine for the whole run and take turns, round by round
(which one goes first swaps every round): Rialto with 3 nodes and 3 partitions on 3 Kafka
brokers (scripts/cluster.sh, nodes at appendfsync everysec: the log is Kafka, acks=all with
min.insync.replicas=2), and Redis with 3 masters and 1 replica each, appendonly yes and
appendfsync always. Each case is `redis-benchmark --cluster -c 50 -d 100 -r 100000 -n N -t T`.
The table shows medians over the rounds and the median of the rounds' own ratios, p50/p99
latency, and CPU time per request of each group of processes (Rialto's nodes, Kafka's brokers
and controller, Redis's servers, the client), since on 2 cores they all share the CPU. During
Rialto's SETs, every node's INFO cluster is sampled every 100 ms for the replicas' lag.

Before the rounds, both clusters take --warmup SETs (default 200,000): Kafka's brokers are JVMs
whose first minute runs interpreted and JIT-compiling code, at several times the CPU per
request they settle at.

Usage: scripts/bench-cluster.py [--rounds 3] [--requests 100000] [--tests set,get] [--warmup N]
Environment: RIALTO_BIN (default target/release/rialto, built first). Needs Java and Maven
(Kafka), redis-server 7 and redis-tools. Data under target/bench-cluster (on disk, not tmpfs).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "target" / "bench-cluster"
RIALTO_BASE = 7000
REDIS_PORTS = list(range(30001, 30007))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(*args, **kw):
    return subprocess.run(args, check=True, text=True, capture_output=True, **kw)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def pids_of(pattern):
    out = subprocess.run(["pgrep", "-f", pattern], text=True, capture_output=True).stdout
    return [int(p) for p in out.split()]


def start_redis_cluster():
    d = WORK / "redis"
    shutil.rmtree(d, ignore_errors=True)
    for port in REDIS_PORTS:
        nd = d / str(port)
        nd.mkdir(parents=True)
        subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(nd),
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                        "--daemonize", "yes", "--logfile", str(nd / "redis.log"),
                        "--pidfile", str(nd / "redis.pid")], check=True)
    for port in REDIS_PORTS:
        for _ in range(100):
            if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
    sh("redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in REDIS_PORTS],
       "--cluster-replicas", "1", "--cluster-yes")
    for _ in range(300):
        info = sh("redis-cli", "-p", str(REDIS_PORTS[0]), "cluster", "info").stdout
        if "cluster_state:ok" in info:
            return [int((d / str(p) / "redis.pid").read_text()) for p in REDIS_PORTS]
        time.sleep(0.1)
    raise SystemExit("the Redis cluster did not become ok")


def stop_redis_cluster():
    for port in REDIS_PORTS:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)


def benchmark(port, test, n):
    out = sh("redis-benchmark", "--cluster", "-h", "127.0.0.1", "-p", str(port), "-t", test,
             "-n", str(n), "-c", "50", "-d", "100", "-r", "100000", "--csv").stdout
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if cells and cells[0].upper() == test.upper():
            return float(cells[1]), float(cells[4]), float(cells[6])
    raise SystemExit(f"no result for {test} in:\n{out}")


class LagSampler(threading.Thread):
    """Every 100 ms, each node's replica partitions: lag in records and ms since caught up."""

    def __init__(self):
        super().__init__(daemon=True)
        self.records, self.ms, self.stop = [], [], False

    def run(self):
        while not self.stop:
            for i in range(3):
                r = subprocess.run(["redis-cli", "-p", str(RIALTO_BASE + 100 * i), "info", "cluster"],
                                   text=True, capture_output=True).stdout
                for line in r.splitlines():
                    if line.startswith("partition") and "role=replica" in line:
                        kv = dict(f.split("=") for f in line.split(":", 1)[1].split(","))
                        self.records.append(int(kv["lag_records"]))
                        self.ms.append(int(kv["caught_up_ms_ago"]))
            time.sleep(0.1)


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--tests", default="set,get")
    ap.add_argument("--warmup", type=int, default=200000)
    a = ap.parse_args()
    tests = a.tests.split(",")
    rialto_bin = os.environ.get("RIALTO_BIN")
    if not rialto_bin:
        log("building target/release/rialto")
        subprocess.run(["cargo", "build", "--release", "--bin", "rialto"], cwd=REPO, check=True)
        rialto_bin = str(REPO / "target" / "release" / "rialto")
    WORK.mkdir(parents=True, exist_ok=True)
    cdir = WORK / "rialto"
    log("starting the Rialto cluster (3 brokers, 3 nodes)")
    sh("bash", str(REPO / "scripts" / "cluster.sh"), "up", "--bin", rialto_bin, "--dir", str(cdir),
       "--base-port", str(RIALTO_BASE))
    log("starting the Redis cluster (3 masters, 3 replicas, appendfsync always)")
    redis_pids = start_redis_cluster()
    try:
        groups = {
            "rialto": {"rialto nodes": pids_of(f"rialto serve --dir {cdir}"),
                       "kafka": pids_of(f"{cdir}/kafka")},
            "redis": {"redis servers": redis_pids},
        }
        if a.warmup:
            log(f"warming up both clusters with {a.warmup:,} SETs each")
            for port in (RIALTO_BASE, REDIS_PORTS[0]):
                benchmark(port, "set", a.warmup)
        results = {}  # (test, side) -> list of (ops, p50, p99, {group: us/req}, client us/req)
        lag = {"records": [], "ms": []}
        for rnd in range(a.rounds):
            for test in tests:
                order = ["redis", "rialto"] if rnd % 2 == 0 else ["rialto", "redis"]
                for side in order:
                    port = RIALTO_BASE if side == "rialto" else REDIS_PORTS[0]
                    before = {g: sum(cpu_ticks(p) for p in ps) for g, ps in groups[side].items()}
                    c0 = os.times()
                    sampler = LagSampler() if side == "rialto" and test == "set" else None
                    if sampler:
                        sampler.start()
                    ops, p50, p99_ms = benchmark(port, test, a.requests)
                    if sampler:
                        sampler.stop = True
                        sampler.join()
                        lag["records"] += sampler.records
                        lag["ms"] += sampler.ms
                    c1 = os.times()
                    after = {g: sum(cpu_ticks(p) for p in ps) for g, ps in groups[side].items()}
                    cpu = {g: (after[g] - before[g]) / CLK_TCK * 1e6 / a.requests for g in before}
                    client = ((c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)) * 1e6 / a.requests
                    results.setdefault((test, side), []).append((ops, p50, p99_ms, cpu, client))
                    log(f"round {rnd + 1} {test} {side}: {ops:,.0f} ops/s p50 {p50} p99 {p99_ms} ms "
                        + " ".join(f"{g} {v:.1f}us" for g, v in cpu.items()) + f" client {client:.1f}us")
        print("| case | Redis ops/s | Rialto ops/s | ratio (rounds' own) | p50 ms Redis / Rialto | p99 ms Redis / Rialto | CPU µs/request Redis | CPU µs/request Rialto nodes + Kafka | client µs/request Redis / Rialto |")
        print("|---|---:|---:|---:|---|---|---:|---:|---|")
        for test in tests:
            r, x = results[(test, "redis")], results[(test, "rialto")]
            med = lambda rows, i: statistics.median(row[i] for row in rows)
            own = statistics.median(xr[0] / rr[0] for rr, xr in zip(r, x))
            rc = statistics.median(row[3]["redis servers"] for row in r)
            xn = statistics.median(row[3]["rialto nodes"] for row in x)
            xk = statistics.median(row[3]["kafka"] for row in x)
            print(f"| {test.upper()} | {med(r, 0):,.0f} | {med(x, 0):,.0f} | {med(x, 0) / med(r, 0):.2f}× ({own:.2f}×) "
                  f"| {med(r, 1)} / {med(x, 1)} | {med(r, 2)} / {med(x, 2)} | {rc:.1f} | {xn:.1f} + {xk:.1f} "
                  f"| {med(r, 4):.1f} / {med(x, 4):.1f} |")
        if lag["records"]:
            print(f"\nReplica lag during Rialto's SETs ({len(lag['records'])} samples): p50 {statistics.median(lag['records'])} records, "
                  f"p99 {p99(lag['records'])} records; time since caught up p50 {statistics.median(lag['ms'])} ms, p99 {p99(lag['ms'])} ms")
    finally:
        stop_redis_cluster()
        subprocess.run(["bash", str(REPO / "scripts" / "cluster.sh"), "down", "--dir", str(cdir)], capture_output=True)


if __name__ == "__main__":
    main()
