#!/usr/bin/env python3
"""Reads at serving scale: SET and GET of random keys over a keyspace that outgrows the caches,
Rialto against redis-server in one run, for a given time; then batch gets.

Both servers run for the whole soak, each on a data directory of its own on the disk that holds
this repository (never tmpfs): redis-server with `appendonly yes`, `appendfsync always`, and
`rialto serve` with its defaults (appendfsync always too). Rounds alternate between them, the
first swapping every round, so both see the same machine; a round is one
`redis-benchmark -t set,get -n REQUESTS -c 50 -d 100 -r KEYSPACE --csv` (SETs first: the dataset
grows through the soak, to about 0.63 x KEYSPACE keys after KEYSPACE SETs). The soak ends once
each server has had MINUTES of rounds. Then MGET of 100 random keys (`redis-benchmark` with 100
`key:__rand_int__` arguments) on each, alternating, MGET_ROUNDS times.

Per round it keeps (in ROUNDS.csv under the run's directory, for plotting): requests/s and p99 of
SET and GET, the server's CPU time per request (all its threads, /proc/PID/stat) and the
client's, the server's resident memory (VmRSS) after the round, and for Rialto its row- and
block-cache hits and misses in the round (INFO). The table prints, for each third of the rounds,
the medians of each figure, and Rialto / Redis ratios of the medians.

Usage: scripts/bench-soak.py [--minutes 10] [--requests 300000] [--keyspace 20000000]
                             [--mget-rounds 5] [--mget-requests 5000] [--rialto-arg ARG ...]
Check the setup quickly: --minutes 0.5 --requests 20000.
Environment: RIALTO_BIN (default: target/release/rialto, built here first), REDIS_SERVER
(default redis-server), BENCH_DIR (default target/bench-soak in this repo; on disk, never tmpfs),
RIALTO_PORT (default 7641), REDIS_PORT (default 7642). Needs redis-server 7 and redis-tools.
Progress goes to stderr, the table to stdout.
"""

import argparse
import csv
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def on_tmpfs(path):
    probe = path
    while not probe.exists():
        probe = probe.parent
    r = subprocess.run(["df", "--output=fstype", str(probe)], text=True, capture_output=True)
    return r.stdout.strip().splitlines()[-1:] in (["tmpfs"], ["ramfs"])


def cli(port, *args):
    r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], text=True,
                       capture_output=True)
    return r.stdout.rstrip("\n")


class Server:
    def __init__(self, name, argv, port, data):
        self.name, self.port, self.data = name, port, data
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        self.log = open(data.parent / f"{name}.log", "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if self.proc.poll() is not None:
                die(f"{name} exited while starting (see {data.parent}/{name}.log)")
            if cli(port, "ping") == "PONG":
                return
            time.sleep(0.1)
        self.stop()
        die(f"{name} did not answer PING within 30 s")

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def rss_bytes(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def info(self):
        out = {}
        for line in cli(self.port, "info", "everything").splitlines():
            k, sep, v = line.strip().partition(":")
            if sep:
                out[k] = v
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def client_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def benchmark(port, args):
    """redis-benchmark --csv: {test name: (requests/s, p99 ms)}."""
    r = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "--csv", *args],
                       text=True, capture_output=True)
    out = {}
    for line in r.stdout.splitlines():
        cols = [c.strip('"') for c in line.split('","')]
        if len(cols) >= 7 and cols[0] != "test":
            out[cols[0].split()[0].upper()] = (float(cols[1]), float(cols[6]))
    if not out:
        die(f"redis-benchmark gave no result: {(r.stdout + r.stderr)[-500:]}")
    return out


CACHE_FIELDS = ("row_cache_hits", "row_cache_misses", "block_cache_hits", "block_cache_misses")


def soak_round(srv, args):
    info0 = srv.info() if srv.name == "rialto" else {}
    cpu0, ccpu0 = srv.cpu_seconds(), client_cpu()
    res = benchmark(srv.port, ["-t", "set,get", "-n", str(args.requests), "-c", "50", "-d", "100",
                               "-r", str(args.keyspace)])
    cpu, ccpu = srv.cpu_seconds() - cpu0, client_cpu() - ccpu0
    reqs = 2 * args.requests
    row = {
        "server": srv.name,
        "set_rps": res["SET"][0], "set_p99_ms": res["SET"][1],
        "get_rps": res["GET"][0], "get_p99_ms": res["GET"][1],
        "server_cpu_us": cpu / reqs * 1e6, "client_cpu_us": ccpu / reqs * 1e6,
        "rss_bytes": srv.rss_bytes(),
    }
    if info0:
        info1 = srv.info()
        for k in CACHE_FIELDS:
            row[k] = int(info1.get(k, 0)) - int(info0.get(k, 0))
    return row


def mget_round(srv, args):
    cpu0 = srv.cpu_seconds()
    keys = ["key:__rand_int__"] * 100
    res = benchmark(srv.port, ["-n", str(args.mget_requests), "-c", "50", "-r", str(args.keyspace),
                               "mget", *keys])
    cpu = srv.cpu_seconds() - cpu0
    rps, p99 = res["MGET"]
    return {"server": srv.name, "keys_per_s": rps * 100, "mget_p99_ms": p99,
            "server_cpu_us_per_key": cpu / (args.mget_requests * 100) * 1e6}


def med(rows, key):
    vals = [r[key] for r in rows if key in r]
    return statistics.median(vals) if vals else float("nan")


def thirds(rows):
    n = len(rows)
    cut = [0, (n + 2) // 3, (2 * n + 2) // 3, n]
    return [rows[cut[i]:cut[i + 1]] for i in range(3)]


def fmt_rate(x):
    return f"{x / 1000:.1f}K"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="rounds' time per server")
    ap.add_argument("--requests", type=int, default=300_000, help="SETs, then GETs, per round")
    ap.add_argument("--keyspace", type=int, default=20_000_000, help="redis-benchmark -r")
    ap.add_argument("--mget-rounds", type=int, default=5)
    ap.add_argument("--mget-requests", type=int, default=5000, help="MGETs of 100 keys per round")
    ap.add_argument("--rialto-arg", action="append", default=[],
                    help="an extra `rialto serve` argument (repeat)")
    args = ap.parse_args()

    bench_dir = Path(os.environ.get("BENCH_DIR", REPO / "target" / "bench-soak"))
    if on_tmpfs(bench_dir):
        die(f"{bench_dir} is on tmpfs: fsync would cost nothing there")
    rialto = os.environ.get("RIALTO_BIN")
    if not rialto:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "rialto"], cwd=REPO, check=True)
        rialto = str(REPO / "target" / "release" / "rialto")
    redis_server = os.environ.get("REDIS_SERVER", "redis-server")
    for tool in ("redis-benchmark", "redis-cli", redis_server):
        if not shutil.which(tool):
            die(f"{tool} not found (apt-get install redis-server redis-tools)")
    rport = int(os.environ.get("RIALTO_PORT", "7641"))
    dport = int(os.environ.get("REDIS_PORT", "7642"))

    run = bench_dir / time.strftime("%Y%m%d-%H%M%S")
    run.mkdir(parents=True)
    log(f"run directory: {run}")
    servers = [
        Server("rialto", [rialto, "serve", "--dir", str(run / "rialto"), "--port", str(rport),
                          *args.rialto_arg], rport, run / "rialto"),
        Server("redis", [redis_server, "--port", str(dport), "--dir", str(run / "redis"),
                         "--save", "", "--appendonly", "yes", "--appendfsync", "always"],
               dport, run / "redis"),
    ]
    rounds = {"rialto": [], "redis": []}
    spent = {"rialto": 0.0, "redis": 0.0}
    mgets = {"rialto": [], "redis": []}
    try:
        n = 0
        while min(spent.values()) < args.minutes * 60:
            order = servers if n % 2 == 0 else servers[::-1]
            for srv in order:
                t = time.perf_counter()
                row = soak_round(srv, args)
                row["round"] = n
                row["elapsed_s"] = spent[srv.name] = spent[srv.name] + time.perf_counter() - t
                rounds[srv.name].append(row)
                log(f"round {n} {srv.name}: SET {row['set_rps']:.0f}/s GET {row['get_rps']:.0f}/s "
                    f"(p99 {row['get_p99_ms']:.2f} ms) RSS {row['rss_bytes'] / 2**20:.0f} MiB")
            n += 1
        for i in range(args.mget_rounds):
            order = servers if i % 2 == 0 else servers[::-1]
            for srv in order:
                m = mget_round(srv, args)
                mgets[srv.name].append(m)
                log(f"mget {i} {srv.name}: {m['keys_per_s']:.0f} keys/s p99 {m['mget_p99_ms']:.2f} ms")
        for srv in servers:
            log(f"{srv.name}: {cli(srv.port, 'dbsize')} keys at the end")
    finally:
        for srv in servers:
            srv.stop()

    fields = ["server", "round", "elapsed_s", "set_rps", "set_p99_ms", "get_rps", "get_p99_ms",
              "server_cpu_us", "client_cpu_us", "rss_bytes", *CACHE_FIELDS]
    with open(run / "rounds.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for name in ("rialto", "redis"):
            for r in rounds[name]:
                w.writerow({k: r.get(k, "") for k in fields})

    print(f"# soak: {len(rounds['rialto'])} rounds each of redis-benchmark -t set,get -n {args.requests} "
          f"-c 50 -d 100 -r {args.keyspace}; medians per third of the rounds; ratio = Rialto / Redis")
    print()
    print("| third | server | SET/s (p99 ms) | GET/s (p99 ms) | RSS | CPU/req server, client (µs) | row-cache hit % |")
    print("|---|---|---:|---:|---:|---:|---:|")
    parts = {name: thirds(rounds[name]) for name in rounds}
    for i, label in enumerate(("first", "middle", "last")):
        for name in ("rialto", "redis"):
            rs = parts[name][i]
            hit = ""
            if name == "rialto":
                h, m = sum(r["row_cache_hits"] for r in rs), sum(r["row_cache_misses"] for r in rs)
                hit = f"{100 * h / max(1, h + m):.0f}"
            print(f"| {label} | {name} | {fmt_rate(med(rs, 'set_rps'))} ({med(rs, 'set_p99_ms'):.2f}) "
                  f"| {fmt_rate(med(rs, 'get_rps'))} ({med(rs, 'get_p99_ms'):.2f}) "
                  f"| {med(rs, 'rss_bytes') / 1e9:.2f} GB "
                  f"| {med(rs, 'server_cpu_us'):.1f}, {med(rs, 'client_cpu_us'):.1f} | {hit} |")
        a, b = parts["rialto"][i], parts["redis"][i]
        print(f"| {label} | ratio | {med(a, 'set_rps') / med(b, 'set_rps'):.2f}x "
              f"| {med(a, 'get_rps') / med(b, 'get_rps'):.2f}x "
              f"| {med(a, 'rss_bytes') / med(b, 'rss_bytes'):.2f}x | | |")
    if args.mget_rounds:
        print()
        print(f"MGET of 100 random keys (-n {args.mget_requests} -c 50), medians of {args.mget_rounds} rounds:")
        print()
        print("| server | keys/s | p99 ms | server CPU/key (µs) |")
        print("|---|---:|---:|---:|")
        for name in ("rialto", "redis"):
            ms = mgets[name]
            print(f"| {name} | {fmt_rate(med(ms, 'keys_per_s'))} | {med(ms, 'mget_p99_ms'):.2f} "
                  f"| {med(ms, 'server_cpu_us_per_key'):.2f} |")
        print(f"| ratio | {med(mgets['rialto'], 'keys_per_s') / med(mgets['redis'], 'keys_per_s'):.2f}x "
              f"| | |")
    print()
    print(f"rounds: {run / 'rounds.csv'}")


if __name__ == "__main__":
    main()
