#!/usr/bin/env bash
# The long crash-test run; the test suite runs short versions of each.
#
#   bash scripts/crash-tests.sh [--cycles N] [--resp-cycles N] [--power-cycles N] [--countdown-ops N] [--seed S]
#
# 1. `rialto stress` in engine mode: N kill cycles (default 1000), half of them with one
#    of the engine's kill points armed; every key verified after every kill.
# 2. `rialto stress` over RESP against `rialto serve` (default 200 cycles).
# 3. `rialto stress` in power mode: N power losses (default 2000) that drop, cut or scatter
#    every unsynced byte; every restart must succeed and every key be verified.
# 4. The SQLite-style I/O error countdown: every write, sync, rename and create of a
#    10,000-operation workload failed in turn, with EIO and ENOSPC, once and persistently,
#    then a simulated power loss and a reopen (crates/lsm/tests/crash.rs).
# Builds a release binary with kill points into target/crash (never the one you serve with).
set -euo pipefail
cd "$(dirname "$0")/.."

cycles=1000
resp_cycles=200
power_cycles=2000
countdown_ops=10000
seed="$(date +%s)"
while [ $# -gt 0 ]; do
    case "$1" in
        --cycles) cycles="$2"; shift 2 ;;
        --resp-cycles) resp_cycles="$2"; shift 2 ;;
        --power-cycles) power_cycles="$2"; shift 2 ;;
        --countdown-ops) countdown_ops="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        *) echo "error: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
done

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/crash}"
echo "== build: release with kill points ($CARGO_TARGET_DIR)"
cargo build --release --locked --features kill-points -p rialto
bin="$CARGO_TARGET_DIR/release/rialto"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== rialto stress, engine mode, $cycles cycles"
"$bin" stress --mode engine --dir "$work/engine" --cycles "$cycles" --seed "$seed" \
    --kill-points-one-in 1000
echo "== rialto stress, RESP mode, $resp_cycles cycles"
"$bin" stress --mode resp --dir "$work/resp" --cycles "$resp_cycles" --seed "$seed" \
    --kill-points-one-in 1000
echo "== rialto stress, power mode, $power_cycles cycles"
"$bin" stress --mode power --dir "$work/power" --cycles "$power_cycles" --seed "$seed"
echo "== I/O error countdown over a $countdown_ops-operation workload (every point)"
RIALTO_COUNTDOWN_FULL=1 RIALTO_COUNTDOWN_OPS="$countdown_ops" \
    RIALTO_COUNTDOWN_THREADS="$(nproc)" \
    cargo test --release --locked -p rialto-lsm --test crash error_countdown -- --nocapture
