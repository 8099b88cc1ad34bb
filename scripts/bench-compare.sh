#!/usr/bin/env bash
# Rialto against RocksDB: builds rialto with RocksDB compiled in, then runs
# `rialto bench-compare`, which runs both engines alternately for several rounds on fresh
# databases and prints a table of median ops/sec, ratios (Rialto / RocksDB) and the write
# amplification of fillrandom. The comparison logic lives in Rust (crates/bench/src/compare.rs);
# this script only installs what the build needs and builds.
#
# Usage:
#   scripts/bench-compare.sh [any rialto bench-compare / rialto bench flag...]
#   ROUNDS=5 NUM=1000000 BENCHMARKS=fillseq,fillrandom,readrandom scripts/bench-compare.sh
#   scripts/bench-compare.sh --rounds=3 --num=2000000 --threads=2 --compression_type=lz4
#   scripts/bench-compare.sh --check
#
# --build-only (alone) installs what the build needs, builds, and prints the binary's path
# (for other benchmark scripts that run the build with RocksDB).
#
# --check (alone) guards the code behind the `rocksdb` feature, which the ordinary test
# command never compiles: clippy with the feature, the RocksDB adapter's and loaders' tests
# (a differential test against the rialto adapter), and a tiny side-by-side run of every
# fill, read and sync benchmark. It exits non-zero on the first failure. Run it after
# changing crates/bench or upgrading the rocksdb crate.
#
# Environment (each optional; flags given on the command line win):
#   ROUNDS       rounds (default 3)
#   NUM          --num (default 1000000)
#   BENCHMARKS   --benchmarks (default: db_bench's list, see `rialto bench --help`)
#   DB           parent directory of the databases (default /tmp/rialtobench-$USER/compare)
#
# The first build compiles RocksDB's C++ sources: 20+ minutes on two cores. It needs a C++
# compiler and libclang (for the generated bindings); on Debian/Ubuntu the script installs
# clang and libclang-dev with apt-get when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if { [ "${1:-}" = "--check" ] || [ "${1:-}" = "--build-only" ]; } && [ $# -ne 1 ]; then
    echo "error: $1 takes no other arguments" >&2
    exit 2
fi

have_libclang() {
    ldconfig -p 2>/dev/null | grep -Eq 'libclang(-[0-9.]+)?\.so'
}

if ! command -v clang >/dev/null 2>&1 || ! have_libclang || ! command -v c++ >/dev/null 2>&1; then
    echo "== installing clang, libclang-dev and g++ (needed to build RocksDB and its bindings)" >&2
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
    else
        echo "error: clang/libclang-dev are missing and there is no root or sudo to install them" >&2
        exit 1
    fi
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq clang libclang-dev g++ >&2
fi

echo "== building rialto with RocksDB (the first build compiles RocksDB: 20+ minutes)" >&2
nice -n 10 cargo build --release --locked --features rocksdb -p rialto >&2
# Honours CARGO_TARGET_DIR (e.g. a separate directory, so that the ordinary release build
# does not rebuild without RocksDB over this one).
bin="${CARGO_TARGET_DIR:-target}/release/rialto"
if [ "${1:-}" = "--build-only" ]; then
    echo "$bin"
    exit 0
fi

if [ "${1:-}" = "--check" ]; then
    echo "== clippy with the rocksdb feature" >&2
    nice -n 10 cargo clippy --release --locked --features rocksdb -p rialto-bench -p rialto \
        --all-targets -- -D warnings
    echo "== tests of the RocksDB adapter and loaders" >&2
    nice -n 10 cargo test --release --locked --features rocksdb -p rialto-bench engines::rocksdb
    echo "== a tiny side-by-side run" >&2
    db=$(mktemp -d /tmp/rialto-bench-check-XXXXXX)
    trap 'rm -rf "$db"' EXIT
    out=$("$bin" bench-compare --engines=rialto,rocksdb --rounds=1 --num=2000 \
        --benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq,fillsync --db="$db")
    printf '%s\n' "$out"
    if ! grep -q 'rialto/rocksdb' <<<"$out"; then
        echo "error: bench-compare printed no rialto/rocksdb table" >&2
        exit 1
    fi
    echo "== the rocksdb feature builds, passes clippy and its tests, and runs" >&2
    exit 0
fi

args=()
[ -n "${ROUNDS:-}" ] && args+=("--rounds=$ROUNDS")
[ -n "${NUM:-}" ] && args+=("--num=$NUM")
[ -n "${BENCHMARKS:-}" ] && args+=("--benchmarks=$BENCHMARKS")
[ -n "${DB:-}" ] && args+=("--db=$DB")
# Later flags override earlier ones, so the command line wins over the environment.
exec "$bin" bench-compare ${args[@]+"${args[@]}"} "$@"
