#!/usr/bin/env python3
"""A feature table loaded as hashes: `rialto push --layout hash` of a Parquet table of N rows x
20 typed feature columns into a store, against loading the same rows into redis-server 7 as
pipelined HSETs (one per row, every field), alternating rounds; medians and their ratio.

The table is `rialto gen-table` (rialto_push_input::FeatureTable: int64, float64, string,
boolean, timestamp and decimal columns in turn), written once under BENCH_DIR as Parquet (what
Rialto reads) and as CSV, whose text is exactly what the hash push stores in each field; the
HSET commands are made from the CSV as RESP before any clock starts.

For each round, each side in turn (the first alternates every round):
- Rialto: a fresh `rialto serve` (defaults: appendfsync always), `STORE CREATE bench PREFIX
  key:`, then `rialto push --server --layout hash`, timed end to end (the client reads and
  renders the Parquet file, the server sorts, writes tables and swaps).
- Redis: a fresh `redis-server` (appendonly yes, appendfsync always: acknowledged is durable,
  as a committed push is), then `redis-cli --pipe` of the HSETs, timed end to end.
A few keys are read back from each (HGETALL) and compared with the CSV. Then, on the loaded
server: its resident memory (VmRSS) per entity, and redis-benchmark's HMGET of 5 of the 20
features of random entities (`-n READS -c 50 -r ROWS`, the entity ids are its `__rand_int__`),
with the resident memory again after those reads. Each server has a data directory of its own
under BENCH_DIR, removed when it stops.

Usage: scripts/bench-push-hash.py [--rows 1000000] [--columns 20] [--rounds 3] [--reads 200000]
Check the setup quickly: --rows 2000 --rounds 1.
Environment: RIALTO_BIN (default: target/release/rialto, built here first), REDIS_SERVER
(default redis-server), BENCH_DIR (default target/bench-push-hash in this repo; on disk, never
tmpfs), RIALTO_PORT (default 7631), REDIS_PORT (default 7632). Needs redis-server 7 and
redis-tools. Progress goes to stderr, the table to stdout.
"""

import argparse
import csv
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


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


def resp(args):
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def make_inputs(rialto, work, rows, columns):
    """The Parquet file, the CSV of the same rows and the HSETs as RESP, each made once."""
    stem = work / f"features-{rows}x{columns}"
    parquet, table, hsets = stem.with_suffix(".parquet"), stem.with_suffix(".csv"), stem.with_suffix(".resp")
    for path in (parquet, table):
        if not (path.exists() and path.stat().st_size > 0):
            log(f"writing {rows} rows x {columns} features to {path}")
            tmp = path.with_name("tmp-" + path.name)
            subprocess.run([rialto, "gen-table", "--rows", str(rows), "--columns", str(columns),
                            "--out", str(tmp)], check=True)
            tmp.rename(path)
    if not (hsets.exists() and hsets.stat().st_size > 0):
        log(f"writing the HSETs to {hsets}")
        tmp = hsets.with_name("tmp-" + hsets.name)
        with open(table, newline="") as f, open(tmp, "wb") as out:
            r = csv.reader(f)
            header = next(r)
            for row in r:
                args = ["HSET", "key:" + row[0]]
                for name, v in zip(header[1:], row[1:]):
                    args += [name, v]
                out.write(resp(args))
        tmp.rename(hsets)
    samples = []
    with open(table, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        wanted = {0, rows // 2, rows - 1}
        for i, row in enumerate(r):
            if i in wanted:
                samples.append(("key:" + row[0], dict(zip(header[1:], row[1:]))))
    return parquet, hsets, samples


class Server:
    """A server on a data directory of its own, removed when stopped."""

    def __init__(self, argv_of, work, port):
        self.dir = Path(tempfile.mkdtemp(prefix="run.", dir=work))
        self.port = port
        self.log = open(self.dir / "server.log", "w")
        self.proc = subprocess.Popen(argv_of(self.dir), stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if self.proc.poll() is not None:
                self.stop(keep=True)
                die(f"{argv_of(self.dir)[0]} exited while starting (see {self.dir}/server.log)")
            if cli(port, "ping") == "PONG":
                return
            time.sleep(0.1)
        self.stop(keep=True)
        die("the server did not answer PING within 30 s")

    def stop(self, keep=False):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def hmget(port, rows, reads, key_prefix):
    """redis-benchmark HMGET of 5 features of random entities: (requests/s, p99 ms)."""
    fields = ["f00", "f05", "f10", "f15", "f19"]
    r = subprocess.run(["redis-benchmark", "-p", str(port), "-n", str(reads), "-c", "50", "-r", str(rows),
                        "--csv", "hmget", key_prefix + "__rand_int__", *fields],
                       text=True, capture_output=True)
    for line in r.stdout.splitlines():
        if line.lower().startswith('"hmget'):
            cols = [c.strip('"') for c in line.split('","')]
            return float(cols[1]), float(cols[6])
    die(f"redis-benchmark gave no HMGET result: {(r.stdout + r.stderr)[-500:]}")


def after_load(srv, rows, reads, key_prefix):
    """Resident bytes after the load, HMGET figures, resident bytes after the reads."""
    time.sleep(2)
    rss_loaded = rss_bytes(srv.proc.pid)
    rps, p99 = hmget(srv.port, rows, reads, key_prefix) if reads else (0.0, 0.0)
    return rss_loaded, rps, p99, rss_bytes(srv.proc.pid)


def check(port, samples, side):
    for key, want in samples:
        lines = subprocess.run(["redis-cli", "-p", str(port), "hgetall", key], text=True,
                               capture_output=True).stdout.split("\n")
        got = dict(zip(lines[0:-1:2], lines[1:-1:2]))
        if got != want:
            die(f"{side}: {key} does not read back as the CSV holds it: {got}")


def run_rialto(rialto, work, port, parquet, samples, rows, reads):
    srv = Server(lambda d: [rialto, "serve", "--dir", str(d / "db"), "--port", str(port)], work, port)
    try:
        if "prefix" not in cli(port, "store", "create", "bench", "prefix", "key:"):
            die("STORE CREATE failed")
        t = time.perf_counter()
        r = subprocess.run([rialto, "push", "--store", "bench", "--input", str(parquet), "--key-field", "id",
                            "--layout", "hash", "--server", f"127.0.0.1:{port}", "--no-progress"],
                           text=True, capture_output=True)
        secs = time.perf_counter() - t
        if r.returncode != 0:
            die(f"the push failed: {r.stderr[-1000:]}")
        check(port, samples, "rialto")
        return (secs, *after_load(srv, rows, reads, "key:"))
    finally:
        srv.stop()


def run_redis(redis_server, work, port, hsets, samples, rows, reads):
    srv = Server(lambda d: [redis_server, "--port", str(port), "--dir", str(d), "--save", "",
                            "--appendonly", "yes", "--appendfsync", "always"], work, port)
    try:
        t = time.perf_counter()
        with open(hsets, "rb") as f:
            r = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], stdin=f, capture_output=True,
                               text=True)
        secs = time.perf_counter() - t
        if r.returncode != 0 or "errors: 0," not in r.stdout:
            die(f"redis-cli --pipe failed: {(r.stdout + r.stderr)[-1000:]}")
        check(port, samples, "redis")
        return (secs, *after_load(srv, rows, reads, "key:"))
    finally:
        srv.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--columns", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reads", type=int, default=200_000, help="HMGETs after each load (0: none)")
    a = ap.parse_args()
    for name in ("rows", "columns", "rounds"):
        if getattr(a, name) < 1:
            die(f"--{name} must be positive")
    redis_server = os.environ.get("REDIS_SERVER", "redis-server")
    for tool in (redis_server, "redis-cli"):
        if not shutil.which(tool):
            die(f"{tool} is missing: apt-get install redis-server redis-tools")

    rialto = os.environ.get("RIALTO_BIN")
    if not rialto:
        log("== building rialto (release)")
        subprocess.run(["nice", "-n", "10", "cargo", "build", "--release", "--locked", "-p", "rialto"],
                       cwd=REPO, check=True, stdout=sys.stderr)
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        rialto = str(target / "release" / "rialto")
    if not os.access(rialto, os.X_OK):
        die(f"RIALTO_BIN={rialto} is not an executable")
    work = Path(os.environ.get("BENCH_DIR", REPO / "target" / "bench-push-hash")).resolve()
    if on_tmpfs(work):
        die(f"{work} is on tmpfs: set BENCH_DIR to a directory on disk")
    work.mkdir(parents=True, exist_ok=True)
    rport = int(os.environ.get("RIALTO_PORT", "7631"))
    dport = int(os.environ.get("REDIS_PORT", "7632"))
    for port in (rport, dport):
        if cli(port, "ping") == "PONG":
            die(f"port {port} is already in use (set RIALTO_PORT / REDIS_PORT)")

    parquet, hsets, samples = make_inputs(rialto, work, a.rows, a.columns)
    sides = {
        "rialto": lambda: run_rialto(rialto, work, rport, parquet, samples, a.rows, a.reads),
        "redis": lambda: run_redis(redis_server, work, dport, hsets, samples, a.rows, a.reads),
    }
    secs = {name: [] for name in sides}
    rss = {name: [] for name in sides}
    rss_read = {name: [] for name in sides}
    reads = {name: [] for name in sides}
    p99s = {name: [] for name in sides}
    log(f"== {a.rounds} round(s): {a.rows} rows x {a.columns} features, rialto push --layout hash "
        f"against redis-cli --pipe of HSETs")
    for rnd in range(a.rounds):
        order = list(sides) if rnd % 2 == 0 else list(reversed(sides))
        for name in order:
            s, m, rps, p99, m2 = sides[name]()
            secs[name].append(s)
            rss[name].append(m)
            rss_read[name].append(m2)
            reads[name].append(rps)
            p99s[name].append(p99)
            log(f"round {rnd + 1}/{a.rounds} {name:>6}: {s:.2f} s ({a.rows / s:,.0f} rows/s), "
                f"RSS {m / a.rows:.0f} B/entity, HMGET {rps:,.0f}/s p99 {p99} ms, RSS after reads "
                f"{m2 / a.rows:.0f} B/entity")

    med = {name: statistics.median(v) for name, v in secs.items()}
    print(f"\n{a.rows} rows x {a.columns} typed features as hashes, median of {a.rounds} round(s)")
    print("| load | s | rows/s |")
    print("|---|---:|---:|")
    for name, label in (("rialto", "rialto push --layout hash (Parquet)"),
                        ("redis", "redis-server, pipelined HSET (appendfsync always)")):
        print(f"| {label} | {med[name]:.2f} | {a.rows / med[name]:,.0f} |")
    print(f"\nrialto / redis time: {med['rialto'] / med['redis']:.2f}x "
          f"(rows/s: {med['redis'] / med['rialto']:.2f}x redis's)")
    if a.reads:
        m = {n: statistics.median(v) for n, v in reads.items()}
        q = {n: statistics.median(v) for n, v in p99s.items()}
        r1 = {n: statistics.median(v) / a.rows for n, v in rss.items()}
        r2 = {n: statistics.median(v) / a.rows for n, v in rss_read.items()}
        print("\n| after the load | Redis | Rialto | Rialto/Redis |")
        print("|---|---:|---:|---:|")
        print(f"| HMGET 5 of {a.columns} fields, random entities, -c 50: requests/s | {m['redis']:,.0f} | "
              f"{m['rialto']:,.0f} | {m['rialto'] / m['redis']:.2f}x |")
        print(f"| HMGET p99 ms | {q['redis']} | {q['rialto']} | |")
        print(f"| resident bytes per entity after the load | {r1['redis']:.0f} | {r1['rialto']:.0f} | "
              f"{r1['rialto'] / r1['redis']:.2f}x |")
        print(f"| resident bytes per entity after the reads | {r2['redis']:.0f} | {r2['rialto']:.0f} | "
              f"{r2['rialto'] / r2['redis']:.2f}x |")


if __name__ == "__main__":
    main()
