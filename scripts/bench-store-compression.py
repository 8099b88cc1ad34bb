#!/usr/bin/env python3
"""What a store's compression costs and saves: the same dataset pushed into a store with each
codec (none, lz4, zstd), with its push time, the bytes of the version on disk, and GET
throughput and latency at random keys afterwards, each against `none`.

For each round, each codec in turn (the order rotates every round, so that no codec always
runs first or last):
1. a fresh `rialto serve` (its own data directory under BENCH_DIR, removed afterwards) and
   `STORE CREATE bench PREFIX key: COMPRESSION <codec>`;
2. `rialto push --server` of the dataset, timed end to end (the client reads the same JSONL
   file for every codec); the version's bytes on disk are the push's `file-bytes` (its table
   files); three records are read back and compared;
3. after --settle seconds, a warm-up of --warmup GETs, then `redis-benchmark -t get -P 1
   -c CLIENTS -n GETS -r RECORDS` (keys `key:%012d`, as redis-benchmark's __rand_int__ writes
   them): GET/s, p50 and p99 from its CSV.
It prints the median of the rounds for each codec and each figure's ratio to `none`'s.

The dataset (written once to BENCH_DIR/records-N-SEED.jsonl, kept between runs): keys
000000000000, 000000000001, ...; values are feature blobs as a batch job derives them, JSON
objects of 100 to 200 bytes whose field names repeat in every record and whose values come
from small vocabularies (country, language, segments, model version, date) or are numbers
(user id, counters, rates), e.g.
  {"user":1234567,"country":"FR","lang":"fr","segments":["sports","news"],"ctr_7d":0.0312,
   "clicks_30d":17,"model":"v42","updated":"2026-11-27"}
(`rialto push` stores a JSON object value as its compact text).

The server runs with its defaults except `--row-cache-size` (0 here unless given: every GET
then reads its block through the block cache, where a miss pays the codec's decompression;
with a row cache, hot keys skip blocks altogether) and the repeatable --server-arg.

Usage: scripts/bench-store-compression.py [--records 5000000] [--rounds 3] [--gets 1000000]
           [--clients 50] [--warmup 200000] [--settle 2] [--codecs none,lz4,zstd]
           [--row-cache-size 0] [--server-arg=--cache-size=1gb ...]
Check the setup quickly: --records 20000 --rounds 1 --gets 20000 --warmup 2000.
Environment: RIALTO_BIN (default: target/release/rialto, built here first), BENCH_DIR (default
target/bench-store-compression in this repo; on disk, never tmpfs), RIALTO_PORT (default 7623).
Needs redis-tools (redis-benchmark, redis-cli). Progress goes to stderr, the table to stdout.
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODECS = ("none", "lz4", "zstd")
COUNTRIES = ["FR", "DE", "US", "GB", "ES", "IT", "NL", "BR", "JP", "IN"]
LANGS = ["fr", "de", "en", "es", "it", "nl", "pt", "ja", "hi"]
SEGMENTS = ["sports", "news", "tech", "travel", "food", "music", "finance", "gaming", "auto", "health"]
MODELS = ["v40", "v41", "v42"]
DATES = ["2026-11-25", "2026-11-26", "2026-11-27"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def value(rng, i):
    """Record i's value: a JSON object of about 100 to 200 bytes (compact)."""
    return {
        "user": 1_000_000 + i,
        "country": rng.choice(COUNTRIES),
        "lang": rng.choice(LANGS),
        "segments": rng.sample(SEGMENTS, rng.randint(1, 4)),
        "ctr_7d": round(rng.random() * 0.1, 4),
        "clicks_30d": rng.randint(0, 500),
        "model": rng.choice(MODELS),
        "updated": rng.choice(DATES),
    }


def make_dataset(path, n, seed):
    """Writes the JSONL file once; returns three (key, compact value) samples to read back."""
    rng = random.Random(seed)
    samples = {0, n // 2, n - 1}
    picked = []
    fresh = not (path.exists() and path.stat().st_size > 0)
    if fresh:
        log(f"writing {n} records to {path}")
    tmp = path.with_suffix(".tmp")
    out = open(tmp, "w") if fresh else None
    try:
        for i in range(n):
            v = value(rng, i)
            key = f"{i:012d}"
            if out:
                out.write(json.dumps({"key": key, "value": v}, separators=(",", ":")) + "\n")
            if i in samples:
                picked.append((key, json.dumps(v, separators=(",", ":"))))
    finally:
        if out:
            out.close()
    if fresh:
        tmp.rename(path)
    return picked


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
    """A `rialto serve` on a data directory of its own, removed when stopped."""

    def __init__(self, rialto, work, port, extra):
        self.dir = Path(tempfile.mkdtemp(prefix="run.", dir=work))
        self.port = port
        self.log = open(self.dir / "server.log", "w")
        self.proc = subprocess.Popen([rialto, "serve", "--dir", str(self.dir / "db"), "--port", str(port),
                                      *extra], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if self.proc.poll() is not None:
                self.stop()
                die(f"rialto serve exited while starting (see {self.dir}/server.log)")
            if cli(port, "ping") == "PONG":
                return
            time.sleep(0.1)
        self.stop()
        die("rialto serve did not answer PING within 30 s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def push(rialto, data, port):
    """`rialto push --server`: returns (seconds, file-bytes of the version)."""
    t = time.perf_counter()
    r = subprocess.run([rialto, "push", "--store", "bench", "--input", str(data), "--key-field", "key",
                        "--value-field", "value", "--server", f"127.0.0.1:{port}", "--no-progress"],
                       text=True, capture_output=True)
    secs = time.perf_counter() - t
    if r.returncode != 0:
        die(f"the push failed: {r.stderr[-1000:]}")
    fields = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    return secs, int(fields["file-bytes"])


def gets(port, n, clients, records):
    """redis-benchmark GETs at random keys: (GET/s, p50 ms, p99 ms)."""
    r = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", "get", "-P", "1",
                        "-c", str(clients), "-n", str(n), "-r", str(records), "--csv"],
                       text=True, capture_output=True)
    out = r.stdout + r.stderr
    if r.returncode != 0 or "Error" in out:
        die(f"redis-benchmark failed: {out[:2000]}")
    rows = [line for line in out.splitlines() if line.startswith('"GET"')]
    if not rows:
        die(f"no CSV result line in: {out[:2000]}")
    f = [x.strip('"') for x in rows[0].split(",")]
    # test, rps, avg, min, p50, p95, p99, max
    return float(f[1]), float(f[4]), float(f[6])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gets", type=int, default=1_000_000, help="GETs of each measurement")
    ap.add_argument("--warmup", type=int, default=200_000, help="GETs before each measurement, not counted")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--settle", type=float, default=2.0, help="seconds between a push and its GETs")
    ap.add_argument("--codecs", default=",".join(CODECS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--row-cache-size", default="0")
    ap.add_argument("--server-arg", action="append", default=[], help="passed to rialto serve (repeatable)")
    a = ap.parse_args()
    codecs = [c.strip() for c in a.codecs.split(",") if c.strip()]
    if not codecs or any(c not in CODECS for c in codecs):
        die(f"--codecs takes some of {','.join(CODECS)}")
    if "none" not in codecs:
        codecs.insert(0, "none")
    for name in ("records", "rounds", "gets", "clients"):
        if getattr(a, name) < 1:
            die(f"--{name} must be positive")
    for tool in ("redis-benchmark", "redis-cli"):
        if not shutil.which(tool):
            die(f"{tool} is missing: apt-get install redis-tools")

    rialto = os.environ.get("RIALTO_BIN")
    if not rialto:
        log("== building rialto (release)")
        subprocess.run(["nice", "-n", "10", "cargo", "build", "--release", "--locked", "-p", "rialto"],
                       cwd=REPO, check=True, stdout=sys.stderr)
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        rialto = str(target / "release" / "rialto")
    if not os.access(rialto, os.X_OK):
        die(f"RIALTO_BIN={rialto} is not an executable")
    work = Path(os.environ.get("BENCH_DIR", REPO / "target" / "bench-store-compression")).resolve()
    if on_tmpfs(work):
        die(f"{work} is on tmpfs: set BENCH_DIR to a directory on disk")
    work.mkdir(parents=True, exist_ok=True)
    port = int(os.environ.get("RIALTO_PORT", "7623"))
    if cli(port, "ping") == "PONG":
        die(f"port {port} is already in use (set RIALTO_PORT)")

    data = work / f"records-{a.records}-{a.seed}.jsonl"
    samples = make_dataset(data, a.records, a.seed)
    extra = ["--row-cache-size", a.row_cache_size, *a.server_arg]
    res = {c: {"push": [], "bytes": [], "rps": [], "p50": [], "p99": []} for c in codecs}
    log(f"== {a.rounds} round(s) of {', '.join(codecs)}: {a.records} records, then {a.gets} GETs "
        f"(-c {a.clients} -P 1) at random keys; rialto serve {' '.join(extra)}")
    for rnd in range(a.rounds):
        k = rnd % len(codecs)
        for codec in codecs[k:] + codecs[:k]:
            srv = Server(rialto, work, port, extra)
            try:
                got = cli(port, "store", "create", "bench", "prefix", "key:", "compression", codec)
                if "compression" not in got or codec not in got:
                    die(f"STORE CREATE ... COMPRESSION {codec} answered: {got}")
                secs, file_bytes = push(rialto, data, port)
                for key, want in samples:
                    if cli(port, "get", f"key:{key}") != want:
                        die(f"{codec}: key:{key} does not read back as pushed")
                time.sleep(a.settle)
                if a.warmup > 0:
                    gets(port, a.warmup, a.clients, a.records)
                rps, p50, p99 = gets(port, a.gets, a.clients, a.records)
            finally:
                srv.stop()
            r = res[codec]
            r["push"].append(secs)
            r["bytes"].append(file_bytes)
            r["rps"].append(rps)
            r["p50"].append(p50)
            r["p99"].append(p99)
            log(f"round {rnd + 1}/{a.rounds} {codec:>4}: push {secs:.2f} s ({a.records / secs:,.0f} records/s), "
                f"{file_bytes / 1e6:.1f} MB, {rps:,.0f} GET/s, p50 {p50:.3f} ms, p99 {p99:.3f} ms")

    med = {c: {k: statistics.median(v) for k, v in r.items()} for c, r in res.items()}
    base = med["none"]
    print(f"\n{a.records} records (JSON feature blobs, 100-200 B), {a.gets} GETs at -c {a.clients} -P 1, "
          f"median of {a.rounds} round(s); ratios against none")
    print("| codec | push s | records/s | version MB | bytes/record | GET/s | p50 ms | p99 ms "
          "| push time | size | GET/s | p99 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in codecs:
        m = med[c]
        print(f"| {c} | {m['push']:.2f} | {a.records / m['push']:,.0f} | {m['bytes'] / 1e6:.1f} "
              f"| {m['bytes'] / a.records:.1f} | {m['rps']:,.0f} | {m['p50']:.3f} | {m['p99']:.3f} "
              f"| {m['push'] / base['push']:.2f}x | {m['bytes'] / base['bytes']:.2f}x "
              f"| {m['rps'] / base['rps']:.2f}x | {m['p99'] / base['p99']:.2f}x |")


if __name__ == "__main__":
    main()
