#!/usr/bin/env bash
# Reads when the data is four times the memory: Rialto's engine against RocksDB, and Rialto's
# server, each in a memory cgroup whose limit is a quarter of the dataset, so that most reads
# miss the page cache and go to the disk (the cgroup's limit covers the page cache it faults
# in, as well as the process's own memory).
#
# 1. Engines: `rialto bench-compare --benchmarks fillrandom,readrandom` (Rialto and RocksDB in
#    turn, fresh databases, alternating rounds, medians and ratios; the same key count, value
#    size, block cache (`--cache_size`) and bloom bits on both), run inside the cgroup.
# 2. Server: `rialto serve` (its defaults: appendfsync always, caches `auto`, which size
#    themselves from the cgroup's headroom) inside the cgroup, loaded with NUM keys by
#    pipelined SETs of redis-benchmark (the keys redis-benchmark -r NUM draws), then
#    `redis-benchmark -t get -n READS -c 50 -r NUM` rounds: GET/s and p99. Redis cannot take
#    part: it holds its whole dataset in memory and would be killed by the limit.
#
# Usage: scripts/bench-larger-than-memory.sh [--limit 512mb] [--num 16000000] [--reads 1000000]
#                                            [--cache 64mb] [--rounds 3] [--skip-engines]
# Check the setup quickly: --limit 64mb --num 1000000 --reads 50000 --rounds 1.
# Environment: CARGO_TARGET_DIR (where the build with RocksDB goes, by scripts/bench-compare.sh;
# default target/rocksdb, apart from the ordinary build), BENCH_DIR (default target/bench-ltm; on
# disk, never tmpfs), RIALTO_PORT (default 7651). Needs root (or a delegated cgroup) to create
# the cgroup, redis-tools, and what scripts/bench-compare.sh installs for the RocksDB build.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

limit=512mb num=16000000 reads=1000000 cache=64mb rounds=3 engines=true
while [ $# -gt 0 ]; do
    case "$1" in
        --limit) limit=$2; shift 2 ;;
        --num) num=$2; shift 2 ;;
        --reads) reads=$2; shift 2 ;;
        --cache) cache=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --skip-engines) engines=false; shift ;;
        *) echo "error: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done

bytes() {
    local v=${1,,}
    case "$v" in
        *gb) echo $(( ${v%gb} << 30 )) ;;
        *mb) echo $(( ${v%mb} << 20 )) ;;
        *kb) echo $(( ${v%kb} << 10 )) ;;
        *[0-9]) echo "$v" ;;
        *) echo "error: '$1' is not a size (e.g. 512mb)" >&2; exit 2 ;;
    esac
}
limit_b=$(bytes "$limit")
cache_b=$(bytes "$cache")
port=${RIALTO_PORT:-7651}
bench_dir=${BENCH_DIR:-$repo/target/bench-ltm}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target/rocksdb}
mkdir -p "$bench_dir"
if [ "$(df --output=fstype "$bench_dir" | tail -1)" = tmpfs ]; then
    echo "error: $bench_dir is on tmpfs" >&2
    exit 1
fi

# The cgroup: v2 where it is mounted unified, else v1's memory controller.
name=rialto-ltm-$$
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cg=/sys/fs/cgroup/$name
    mkdir "$cg"
    echo "$limit_b" > "$cg/memory.max"
    echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
else
    cg=/sys/fs/cgroup/memory/$name
    mkdir "$cg"
    echo "$limit_b" > "$cg/memory.limit_in_bytes"
fi
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    # Move anything left out before removing the group.
    if [ -f "$cg/cgroup.procs" ]; then
        while read -r p; do echo "$p" > "$(dirname "$cg")/cgroup.procs" 2>/dev/null || true; done < "$cg/cgroup.procs"
    fi
    rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Runs a command inside the cgroup.
in_cgroup() {
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

bin=$(scripts/bench-compare.sh --build-only)
[[ $bin == /* ]] || bin=$repo/$bin

echo "# larger than memory: $num keys of 16 + 100 bytes, memory limit $limit ($limit_b bytes), block cache $cache"
echo
if $engines; then
    echo "## engines: rialto bench-compare --benchmarks fillrandom,readrandom --num $num --reads $reads --cache_size $cache_b --rounds $rounds (inside the cgroup)"
    echo
    in_cgroup "$bin" bench-compare --benchmarks fillrandom,readrandom --num "$num" --reads "$reads" \
        --cache_size "$cache_b" --rounds "$rounds" --db "$bench_dir/engines"
    echo
fi

echo "## server: rialto serve (defaults) inside the cgroup; redis-benchmark -t get -n $reads -c 50 -r $num"
echo
data=$bench_dir/server
rm -rf "$data"
# Started without a subshell between, so that $! is the server itself (sh execs it).
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$bin" serve --dir "$data" --port "$port" \
    > "$bench_dir/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 300); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
done
echo "loading: redis-benchmark -t set -n $((num * 3 / 2)) -c 50 -P 16 -d 100 -r $num" >&2
redis-benchmark -p "$port" -t set -n $((num * 3 / 2)) -c 50 -P 16 -d 100 -r "$num" --csv >&2
keys=$(redis-cli -p "$port" dbsize)
# Let flushes and compactions of the load finish before reading, as db_bench's readrandom
# follows a settled fill.
sleep 30
echo "| round | GET/s | p50 ms | p99 ms | RSS MiB | cgroup MiB |"
echo "|---|---:|---:|---:|---:|---:|"
for r in $(seq "$rounds"); do
    line=$(redis-benchmark -p "$port" -t get -n "$reads" -c 50 -d 100 -r "$num" --csv | grep '"GET"')
    IFS=, read -r _ rps _ _ p50 _ p99 _ <<< "${line//\"/}"
    rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$server_pid/status")
    if [ -f "$cg/memory.current" ]; then used=$(cat "$cg/memory.current"); else used=$(cat "$cg/memory.usage_in_bytes"); fi
    echo "| $r | $rps | $p50 | $p99 | $rss | $((used >> 20)) |"
done
echo
echo "keys loaded: $keys; disk: $(du -sh "$data" | cut -f1)"
