#!/usr/bin/env bash
# GET latency of a Rialto server while a batch push runs into it, against the same server idle.
#
# One `rialto serve` (durable, as deployed) holds a store `features` whose current version has
# --keys records: keys 000000000000, 000000000001, ... (12 digits, as redis-benchmark's
# __rand_int__ writes them) with 100-byte values. Then, for each of --rounds rounds, in turn:
#   idle   redis-benchmark -n 200000 -c 50 -P 1 -r KEYS GET features:__rand_int__
#   push   `rialto push --server` of --push-records records (the same keys and more) into the
#          store; the same redis-benchmark starts 1 s later. The round counts only if the push
#          was still running when redis-benchmark finished, so every GET overlapped it.
# Which of the two goes first swaps every round; after a push the script waits --settle
# seconds before the next measurement. It prints the medians
# of ops/s and p99 for both and their ratio (the target: p99 during a push <= 1.2x idle),
# and the pushes' own records/s.
#
# Usage:
#   scripts/bench-push-latency.sh [--rounds N] [--keys N] [--push-records N] [--settle S] [--quick]
#     --rounds N         rounds (default 3)
#     --keys N           keys the GETs draw from, loaded before the rounds (default 1000000)
#     --push-records N   records of each measured push (default 10000000, >= --keys)
#     --settle S         seconds to wait after a push (default 10)
#     --requests N       GETs of each measurement (default 200000); more give a steadier p99 and
#                        need a push that lasts longer (--push-records)
#     --server-arg ARG   passed to `rialto serve` (repeatable), e.g. --server-arg=--push-page-cache=none
#     --client-nice N    CPU niceness of the `rialto push` client, 0..19 or idle (SCHED_IDLE,
#                        with chrt; default 0). The client
#                        stands in for the batch job, which in production runs on other
#                        machines; here it shares the server's cores, and at 0 the GETs measure
#                        that contention as much as the server. The server's own ingestion
#                        threads run at its push-nice setting either way.
#     --quick            --keys 100000 --push-records 2000000 -n 20000, to check the setup
#
# Environment:
#   RIALTO_BIN   the rialto binary (default: target/release/rialto, built here first)
#   BENCH_DIR    where the data directory and the input files go (default: target/bench-push-latency
#                in this repo; on disk, never tmpfs: the server syncs)
#   RIALTO_PORT  port to use (default 7613)
#
# Needs redis-tools (redis-benchmark, redis-cli); installed with apt-get when missing.
# Progress goes to stderr, the table to stdout.
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
[ -n "${RIALTO_BIN:-}" ] && [[ $RIALTO_BIN != /* ]] && [[ $RIALTO_BIN == */* ]] && RIALTO_BIN=$PWD/$RIALTO_BIN
[ -n "${BENCH_DIR:-}" ] && [[ $BENCH_DIR != /* ]] && BENCH_DIR=$PWD/$BENCH_DIR
cd "$(dirname "$0")/.."
repo=$PWD

rounds=3
keys=1000000
push_records=10000000
requests=200000
clients=50
value_size=100
settle_secs=10
client_nice=0
server_args=()
port=${RIALTO_PORT:-7613}
bench_dir=${BENCH_DIR:-$repo/target/bench-push-latency}

die() {
    echo "error: $*" >&2
    exit 1
}
log() { echo "$*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) [ $# -ge 2 ] || die "--rounds needs a value"; rounds=$2; shift 2 ;;
        --keys) [ $# -ge 2 ] || die "--keys needs a value"; keys=$2; shift 2 ;;
        --push-records) [ $# -ge 2 ] || die "--push-records needs a value"; push_records=$2; shift 2 ;;
        --settle) [ $# -ge 2 ] || die "--settle needs a value"; settle_secs=$2; shift 2 ;;
        --requests) [ $# -ge 2 ] || die "--requests needs a value"; requests=$2; shift 2 ;;
        --server-arg) [ $# -ge 2 ] || die "--server-arg needs a value"; server_args+=("$2"); shift 2 ;;
        --server-arg=*) server_args+=("${1#--server-arg=}"); shift ;;
        --client-nice) [ $# -ge 2 ] || die "--client-nice needs a value"; client_nice=$2; shift 2 ;;
        --quick) keys=100000; push_records=2000000; requests=20000; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $settle_secs =~ ^[0-9]+$ ]] || die "--settle must be a number of seconds, not '$settle_secs'"
[[ $client_nice =~ ^([0-9]|1[0-9]|idle)$ ]] || die "--client-nice must be 0..19 or idle, not '$client_nice'"
for v in rounds keys push_records requests; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--${v//_/-} must be a positive integer, not '${!v}'"
done
((push_records >= keys)) || die "--push-records must be at least --keys, so that every GET still hits after a push"

# --- tools -------------------------------------------------------------------------------
if ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
    log "== installing redis-tools"
    if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
        die "redis-tools are missing and there is no root or sudo to install them"
    fi
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq redis-tools >&2
fi
if [ -z "${RIALTO_BIN:-}" ]; then
    log "== building rialto (release)"
    nice -n 10 cargo build --release --locked -p rialto >&2
    RIALTO_BIN=$repo/target/release/rialto
fi
[ -x "$RIALTO_BIN" ] || die "RIALTO_BIN=$RIALTO_BIN is not an executable"

probe=$bench_dir
until [ -d "$probe" ]; do probe=$(dirname "$probe"); done
fstype=$(df --output=fstype "$probe" 2>/dev/null | tail -n 1) || true
case "$fstype" in
    tmpfs|ramfs) die "$bench_dir is on $fstype: set BENCH_DIR to a directory on disk" ;;
esac
mkdir -p "$bench_dir"
run_dir=$(mktemp -d "$bench_dir/run.XXXXXX")

server_pid=
push_pid=
cleanup() {
    for p in $push_pid $server_pid; do
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$run_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# input N FILE: a CSV of keys 0..N-1 (12 digits) and 100-byte values; kept between runs.
input() {
    local n=$1 file=$2
    [ -s "$file" ] && return 0
    log "== writing $file ($n records)"
    awk -v n="$n" -v size="$value_size" 'BEGIN {
            v = sprintf("%" size "s", ""); gsub(/ /, "v", v)
            print "key,value"
            for (i = 0; i < n; i++) printf "%012d,%s\n", i, v
        }' >"$file.tmp"
    mv "$file.tmp" "$file"
}
preload_csv=$bench_dir/keys-$keys.csv
push_csv=$bench_dir/keys-$push_records.csv
input "$keys" "$preload_csv"
input "$push_records" "$push_csv"

cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && die "port $port is already in use (set RIALTO_PORT)"
"$RIALTO_BIN" serve --dir "$run_dir/db" --port "$port" ${server_args[@]+"${server_args[@]}"} >"$run_dir/server.log" 2>&1 &
server_pid=$!
for ((i = 0; i < 300; i++)); do
    kill -0 "$server_pid" 2>/dev/null || { tail -n 20 "$run_dir/server.log" >&2; die "rialto serve exited while starting"; }
    [ "$(cli ping 2>/dev/null)" = PONG ] && break
    sleep 0.1
done
[ "$(cli ping 2>/dev/null)" = PONG ] || die "rialto serve did not answer PING within 30 s"

"$RIALTO_BIN" store create features --server "127.0.0.1:$port" >&2
if [ "$client_nice" = idle ]; then client_prio=(chrt -i 0); else client_prio=(nice -n "$client_nice"); fi
push() { "${client_prio[@]}" "$RIALTO_BIN" push --store features --input "$1" --server "127.0.0.1:$port" --no-progress; }
log "== loading $keys keys"
push "$preload_csv" >&2
got=$(cli get "features:$(printf %012d $((keys - 1)))")
[ ${#got} -eq "$value_size" ] || die "preload check: GET returned '${got:0:40}'"

# After a push the server removes the version it retired (whole tables dropped, then the
# rest deleted) and compacts: give that time, so it does not land in the next measurement.
settle() { [ -z "${pushed:-}" ] || sleep "$settle_secs"; pushed=; }

# gets: prints "ops_per_sec p99_ms".
gets() {
    local out line
    out=$(redis-benchmark -h 127.0.0.1 -p "$port" -n "$requests" -c "$clients" -P 1 -r "$keys" \
        --csv GET "features:__rand_int__" 2>&1) || die "redis-benchmark failed: $(head -c 2000 <<<"$out")"
    [[ $out != *"Error"* ]] || die "the server answered errors: $(grep -m1 Error <<<"$out")"
    line=$(grep -m1 '^"GET' <<<"$out") || die "no CSV result line in: $out"
    awk -F, '{ gsub(/"/, ""); print $2, $7 }' <<<"$line"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A ops p99
push_rates=""
log "== $rounds round(s): redis-benchmark -n $requests -c $clients -P 1 -r $keys GET, idle and during a push of $push_records records (push client at priority $client_nice)"
for ((round = 1; round <= rounds; round++)); do
    if ((round % 2)); then order=(idle push); else order=(push idle); fi
    for kind in "${order[@]}"; do
        settle
        if [ "$kind" = idle ]; then
            res=$(gets)
        else
            started=$(date +%s.%N)
            push "$push_csv" >"$run_dir/push.out" 2>&1 &
            push_pid=$!
            sleep 1
            kill -0 "$push_pid" 2>/dev/null || die "the push ended within 1 s: use more --push-records"
            res=$(gets)
            kill -0 "$push_pid" 2>/dev/null \
                || die "the push ended before the GETs did: use more --push-records"
            wait "$push_pid" || { cat "$run_dir/push.out" >&2; die "the push failed"; }
            push_pid=
            pushed=1
            secs=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
            rate=$(awk -v n="$push_records" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
            push_rates+="$rate "
            log "round $round/$rounds  push of $push_records records: ${secs%.*} s, $rate records/s"
        fi
        read -r rps lat <<<"$res"
        ops[$kind]+="$rps "
        p99[$kind]+="$lat "
        log "round $round/$rounds  $(printf '%-5s %12s GET/s  p99 %s ms' "$kind" "$rps" "$lat")"
    done
done

idle_ops=$(median <<<"${ops[idle]}")
push_ops=$(median <<<"${ops[push]}")
idle_p99=$(median <<<"${p99[idle]}")
push_p99=$(median <<<"${p99[push]}")
printf '\n%-24s | %12s | %10s\n' "GETs (median of $rounds)" "ops/s" "p99 ms"
printf -- '-------------------------+--------------+-----------\n'
printf '%-24s | %12s | %10s\n' idle "$idle_ops" "$idle_p99"
printf '%-24s | %12s | %10s\n' "during a push" "$push_ops" "$push_p99"
awk -v a="$push_p99" -v b="$idle_p99" 'BEGIN { printf "p99 during a push / idle: %.2fx (target <= 1.2x)\n", a / b }'
echo "push records/s (end to end, median): $(median <<<"$push_rates")"
