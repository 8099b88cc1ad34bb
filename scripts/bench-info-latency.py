#!/usr/bin/env python3
"""How long DBSIZE and INFO take once a server holds many keys: Rialto against redis-server,
the same key count on both, measured in alternating rounds.

Rialto (`rialto serve`, durable as deployed) gets its keys two ways, as serving data does: a
store `pushed` (prefix `p:`) whose version holds --keys * --pushed-share records loaded by
`rialto push`, and the rest written with SET (through `redis-cli --pipe`) into the default store,
a tenth of them with a TTL. redis-server (no persistence) gets the same count with
`DEBUG POPULATE`. Each round measures, on each server in turn, --calls sequential calls of each
command on one connection: DBSIZE, INFO keyspace and plain INFO (its default sections). Prints
p50, p99 and max in milliseconds per command and server (medians over the rounds) and the
ratio Rialto/Redis of the p99s; the goal is a p99 of at most 1 ms on Rialto. Results are kept
as JSON under the work directory.

Usage:
  python3 scripts/bench-info-latency.py [--keys 10000000] [--pushed-share 0.5] [--rounds 3]
      [--calls 2000]
Environment:
  RIALTO_BIN   the rialto binary (default: target/release/rialto, built here first)
  BENCH_DIR    work directory (default target/bench-info-latency; on disk, not tmpfs)
Needs redis-server and redis-tools (apt-get). Progress goes to stderr, results to stdout.
"""

import argparse
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RIALTO_PORT = 7630
REDIS_PORT = 7631
GOAL_MS = 1.0
COMMANDS = [("DBSIZE",), ("INFO", "keyspace"), ("INFO",)]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def encode(args):
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Conn:
    """A minimal RESP client: one request, one reply, on one connection."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def call(self, *args):
        self.s.sendall(encode(args))
        return self.read()

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("connection closed")
        t, rest = line[:1], line[1:-2]
        if t in (b"+", b":"):
            return rest
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")


def wait_port(port, proc, what, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            die(f"{what} exited with {proc.returncode}")
        try:
            Conn(port).call("PING")
            return
        except OSError:
            time.sleep(0.2)
    die(f"{what} did not start on port {port}")


def rialto_bin():
    b = os.environ.get("RIALTO_BIN")
    if b:
        return b
    log("building rialto (release)...")
    subprocess.run(["cargo", "build", "--release", "-p", "rialto"], cwd=REPO, check=True)
    return str(REPO / "target/release/rialto")


def set_commands(path, n):
    """`n` SETs of keys `d:<12 digits>`, every tenth with a TTL of a day, as RESP."""
    with open(path, "wb", buffering=1 << 20) as f:
        for i in range(n):
            k = b"d:%012d" % i
            if i % 10 == 0:
                f.write(encode((b"SET", k, b"v%d" % i, b"EX", b"86400")))
            else:
                f.write(encode((b"SET", k, b"v%d" % i)))


def push_csv(path, n):
    with open(path, "w", buffering=1 << 20) as f:
        f.write("key,value\n")
        for i in range(n):
            f.write(f"{i:012d},feature-vector-{i}\n")


def percentiles(samples):
    s = sorted(samples)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return {"p50": pick(0.50), "p99": pick(0.99), "max": s[-1]}


def measure(port, calls):
    c = Conn(port)
    out = {}
    for cmd in COMMANDS:
        c.call(*cmd)
        lat = []
        for _ in range(calls):
            t = time.perf_counter()
            c.call(*cmd)
            lat.append((time.perf_counter() - t) * 1000)
        out[" ".join(cmd)] = percentiles(lat)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--pushed-share", type=float, default=0.5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    for tool in ("redis-server", "redis-cli"):
        if not shutil.which(tool):
            die(f"{tool} not found (apt-get install redis-server redis-tools)")
    work = Path(os.environ.get("BENCH_DIR", REPO / "target/bench-info-latency")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    binary = rialto_bin()
    pushed = int(a.keys * a.pushed_share)
    streamed = a.keys - pushed
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    csv = work / f"pushed-{pushed}.csv"
    sets = work / f"sets-{streamed}.resp"
    if not csv.exists():
        log(f"writing {csv} ...")
        push_csv(csv, pushed)
    if not sets.exists():
        log(f"writing {sets} ...")
        set_commands(sets, streamed)
    procs = []
    try:
        rialto = subprocess.Popen(
            [binary, "serve", "--dir", str(data), "--port", str(RIALTO_PORT)],
            stdout=subprocess.DEVNULL, stderr=open(work / "rialto.log", "w"))
        procs.append(rialto)
        redis = subprocess.Popen(
            ["redis-server", "--port", str(REDIS_PORT), "--save", "", "--appendonly", "no",
             "--enable-debug-command", "yes", "--dir", str(work)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(redis)
        wait_port(RIALTO_PORT, rialto, "rialto serve")
        wait_port(REDIS_PORT, redis, "redis-server")
        log(f"loading {pushed} pushed and {streamed} written keys into Rialto ...")
        Conn(RIALTO_PORT).call("STORE", "CREATE", "pushed", "PREFIX", "p:")
        subprocess.run(
            [binary, "push", "--server", f"127.0.0.1:{RIALTO_PORT}", "--store", "pushed",
             "--no-progress", "--input", str(csv)],
            stdout=subprocess.DEVNULL, check=True)
        with open(sets, "rb") as f:
            subprocess.run(["redis-cli", "-p", str(RIALTO_PORT), "--pipe"], stdin=f,
                           stdout=subprocess.DEVNULL, check=True)
        log(f"loading {a.keys} keys into Redis (DEBUG POPULATE) ...")
        Conn(REDIS_PORT).call("DEBUG", "POPULATE", a.keys)
        sizes = {"rialto": int(Conn(RIALTO_PORT).call("DBSIZE")),
                 "redis": int(Conn(REDIS_PORT).call("DBSIZE"))}
        log(f"DBSIZE: {sizes}")
        if sizes["rialto"] != a.keys:
            die(f"Rialto holds {sizes['rialto']} keys, not {a.keys}")
        rounds = []
        for r in range(a.rounds):
            order = [("rialto", RIALTO_PORT), ("redis", REDIS_PORT)]
            if r % 2:
                order.reverse()
            got = {}
            for name, port in order:
                got[name] = measure(port, a.calls)
                log(f"round {r + 1} {name}: " + ", ".join(
                    f"{k} p99 {v['p99']:.3f} ms" for k, v in got[name].items()))
            rounds.append(got)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(data, ignore_errors=True)
    summary = {}
    print(f"{a.keys} keys ({pushed} pushed into a store, {streamed} written with SET); "
          f"{a.calls} calls per command per round, medians of {a.rounds} rounds; ms")
    print(f"{'command':<14} {'Rialto p50':>10} {'p99':>8} {'max':>8}   "
          f"{'Redis p50':>10} {'p99':>8} {'max':>8}   {'p99 ratio':>9}")
    for cmd in COMMANDS:
        name = " ".join(cmd)
        med = {s: {q: statistics.median(r[s][name][q] for r in rounds)
                   for q in ("p50", "p99", "max")} for s in ("rialto", "redis")}
        ratio = med["rialto"]["p99"] / med["redis"]["p99"]
        summary[name] = {**med, "p99_ratio": ratio}
        print(f"{name:<14} {med['rialto']['p50']:>10.3f} {med['rialto']['p99']:>8.3f} "
              f"{med['rialto']['max']:>8.3f}   {med['redis']['p50']:>10.3f} "
              f"{med['redis']['p99']:>8.3f} {med['redis']['max']:>8.3f}   {ratio:>8.2f}x")
    ok = all(summary[" ".join(c)]["rialto"]["p99"] <= GOAL_MS for c in COMMANDS)
    print(f"goal: Rialto p99 <= {GOAL_MS} ms for every command: {'met' if ok else 'NOT met'}")
    results = work / "results"
    results.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    (results / f"info-latency-{stamp}.json").write_text(json.dumps(
        {"keys": a.keys, "pushed": pushed, "rounds": rounds, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
