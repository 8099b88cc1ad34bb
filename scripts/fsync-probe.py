#!/usr/bin/env python3
"""What one write + fdatasync costs on this disk, for three ways of preparing a log file.

  append     the file grows with every write (each fdatasync also commits the new size)
  fallocate  space reserved with posix_fallocate, as Rialto's WAL segments are today: the
             extents are "unwritten", and writing into them changes extent metadata, which
             each fdatasync must commit too (ext4: ext4_write_inode in the fsync path)
  zeroed     the file written full of zeros and synced first: writes then overwrite
             allocated, written blocks, and fdatasync commits data only

Each mode writes N blocks of SIZE bytes at increasing offsets, each followed by fdatasync,
and reports p50 and p99 of write+fdatasync. Rounds alternate the modes.

Usage: scripts/fsync-probe.py [DIR] [--n N] [--size BYTES] [--rounds R]
DIR must be on the disk under test (default: target/fsync-probe in this repository; never
tmpfs). Run it on an idle machine: it measures latency.
"""
import argparse
import os
import statistics
import time


def run(directory, mode, n, size):
    path = os.path.join(directory, f"probe-{mode}")
    if os.path.exists(path):
        os.remove(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        total = n * size
        if mode == "fallocate":
            os.posix_fallocate(fd, 0, total)
        elif mode == "zeroed":
            chunk = b"\0" * (1 << 20)
            left = total
            while left > 0:
                left -= os.write(fd, chunk[: min(left, len(chunk))])
        os.fsync(fd)
        buf = b"x" * size
        lat = []
        for i in range(n):
            t = time.perf_counter()
            os.pwrite(fd, buf, i * size)
            os.fdatasync(fd)
            lat.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        os.remove(path)
    lat.sort()
    return statistics.median(lat) * 1e6, lat[int(len(lat) * 0.99)] * 1e6


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=os.path.join(repo, "target", "fsync-probe"))
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    modes = ["append", "fallocate", "zeroed"]
    res = {m: [] for m in modes}
    for r in range(a.rounds):
        for m in modes if r % 2 == 0 else reversed(modes):
            p50, p99 = run(a.dir, m, a.n, a.size)
            res[m].append((p50, p99))
            print(f"round {r + 1}  {m:<9}  p50 {p50:6.0f} us  p99 {p99:6.0f} us", flush=True)
    print(f"\n{a.n} x ({a.size}-byte pwrite + fdatasync) in {a.dir}, median of {a.rounds} rounds:")
    base = statistics.median(p for p, _ in res["append"])
    for m in modes:
        p50 = statistics.median(p for p, _ in res[m])
        p99 = statistics.median(p for _, p in res[m])
        print(f"  {m:<9}  p50 {p50:6.0f} us  p99 {p99:6.0f} us  ({p50 / base:.2f}x append)")


if __name__ == "__main__":
    main()
