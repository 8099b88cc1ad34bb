#!/usr/bin/env bash
# Rialto's server against Redis 7 with redis-benchmark, on this machine.
#
# For each round, each server configuration is started fresh (new data directory on the disk
# that holds this repository, never tmpfs: fsync on tmpfs costs nothing and would make the
# durable numbers meaningless), benchmarked, and stopped; Redis and Rialto alternate, and which
# of them goes first swaps every round so neither always gets the warmer machine. The table
# shows medians over the rounds, and the median of the rounds' own ratios: the two runs of a
# round are minutes apart at most, so that ratio cancels the machine's slower drifts (on this
# shared 2-core machine, ±10% from one round to the next) and it is the one a target is judged by.
#
# Cases (redis-benchmark -n 200000 -c 50 -d 100 -r 1000000):
#   get-p1        GET, -P 1; all 1,000,000 keys are loaded first so every GET hits, and both
#                 servers are then left until their background work is done (as db_bench's
#                 waitforcompaction between a fill and a read phase; --no-settle skips it)
#   get-p16       GET, -P 16 (same servers as get-p1)
#   set-always    SET; Redis appendonly yes + appendfsync always vs Rialto --appendfsync always
#   set-always-p16  the same with -P 16 (same servers as set-always, after it)
#   set-everysec  SET; appendfsync everysec on both
#   multi-always  MULTI, SET, SET, EXEC (random keys, two 100-byte values) per request, appendfsync
#                 always, on the set-always servers after their SETs; redis-benchmark cannot send
#                 a transaction, so scripts/txn-load (Go, built here) runs redis-benchmark's
#                 closed loop for it and prints its CSV: ops/s are transactions per second
#   multi-everysec  the same on the everysec servers
#   evalsha-always  EVALSHA of a script that INCRs two random keys (loaded with SCRIPT LOAD
#                 first), appendfsync always, on the set-always servers after their SETs
#   evalsha-everysec  the same on the everysec servers
#   publish       PUBLISH of a -d byte message to a channel 10 redis-cli subscribers listen on,
#                 on the everysec servers (PUBLISH touches no data: the durability mode does not
#                 matter); the subscribers share the machine too
#   hset-always   HSET myhash element:__rand_int__ <value> (redis-benchmark's hset test: one hash
#                 growing to up to -r fields of -d bytes, a hashtable on both sides), appendfsync
#                 always, on the set-always servers after their SETs
#   hset-always-p16  the same with -P 16
#   hset-everysec the same, appendfsync everysec, on the everysec servers
#   T-always, T-always-p16, T-everysec, T-everysec-p16  for each collection test T of
#                 redis-benchmark (lpush, rpop, lrange_100, sadd, spop, zadd, zpopmin), at -P 1
#                 and -P 16, on the set-always or set-everysec servers after their SETs, in that
#                 order: rpop pops what lpush pushed, lrange_100 reads the first 100 elements of
#                 the list redis-benchmark pushes for it, spop and zpopmin pop what sadd and zadd
#                 added (one list, set and sorted set, each growing to -r members: large on both
#                 sides)
#   ping          PING (-t ping_mbulk), -P 1, on the everysec servers before their SETs: a
#                 command that does nothing, so its rate is what this client, the loopback and
#                 the two cores carry at -P 1 whatever the server does (a reference, no target)
# Each -P 1 case also reports p99 latency (redis-benchmark --csv's p99_latency_ms).
# Every case also reports CPU time per request: the server process's (all its threads, from
# /proc/PID/stat) and redis-benchmark's (user + system). With the client and the server on the
# same two cores, these say which of them limits a case: a server that needs less CPU per
# request than the other but is not faster is waiting for the client, or for its disk.
# Targets (Rialto / Redis): GET >= 1.0x, durable SET >= 1.5x, everysec SET >= 1.0x,
# transactions >= 1.0x, and a Rialto p99 <= 1 ms at -c 50 -P 1.
#
# Usage:
#   scripts/bench-redis.sh [--rounds N] [--quick] [--no-settle] [--against BIN] [--cases get-p1,...]
#     --rounds N   rounds (default 3)
#     --against BIN  compare with another Rialto build (BIN, e.g. the previous commit's) instead
#                  of Redis: it takes Redis's side of every case, started as Rialto is
#     --quick      -n 20000 instead of 200000, to check the setup
#     --requests N -n N instead of 200000 (longer runs for the fast cases, such as -P 16)
#     --no-settle  GETs start right after the load, while Rialto still flushes and compacts it
#     --cases L    comma-separated subset of the cases above (default: all)
#
# Environment:
#   RIALTO_BIN   the rialto binary (default: target/release/rialto, built here first)
#   BENCH_DIR    parent of the data directories (default: target/bench-redis in this repo)
#   REDIS_PORT, RIALTO_PORT   ports to use (default 7611 and 7612)
#
# Needs redis-server 7 and redis-tools (redis-benchmark, redis-cli); on Debian/Ubuntu they are
# installed with apt-get when missing. Progress goes to stderr, the table to stdout.
set -euo pipefail
# Paths given by the caller are relative to where it ran, not to the repository.
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
[ -n "${RIALTO_BIN:-}" ] && [[ $RIALTO_BIN != /* ]] && [[ $RIALTO_BIN == */* ]] && RIALTO_BIN=$PWD/$RIALTO_BIN
[ -n "${BENCH_DIR:-}" ] && [[ $BENCH_DIR != /* ]] && BENCH_DIR=$PWD/$BENCH_DIR
cd "$(dirname "$0")/.."
repo=$PWD

rounds=3
settle=true
requests=200000
all_cases=(get-p1 get-p16 set-always set-always-p16 multi-always evalsha-always hset-always hset-always-p16 set-everysec multi-everysec evalsha-everysec hset-everysec publish ping)
# The collection tests, each in both durability modes at -P 1 and -P 16 (run in this order).
coll_tests=(lpush rpop lrange_100 sadd spop zadd zpopmin)
for t in "${coll_tests[@]}"; do
    for m in always everysec; do
        all_cases+=("$t-$m" "$t-$m-p16")
    done
done
cases=(get-p1 get-p16 set-always set-everysec ping)
against=
clients=50
data_size=100
keyspace=1000000
redis_port=${REDIS_PORT:-7611}
rialto_port=${RIALTO_PORT:-7612}
bench_dir=${BENCH_DIR:-$repo/target/bench-redis}
# A hung server must not hang the script; generous for 200000 durable SETs on a slow disk.
bench_timeout=900

die() {
    echo "error: $*" >&2
    exit 1
}
log() { echo "$*" >&2; }

usage() {
    sed -n '2,/^set -euo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) [ $# -ge 2 ] || die "--rounds needs a value"; rounds=$2; shift 2 ;;
        --rounds=*) rounds=${1#*=}; shift ;;
        --quick) requests=20000; shift ;;
        --requests) [ $# -ge 2 ] || die "--requests needs a value"; requests=$2; shift 2 ;;
        --requests=*) requests=${1#*=}; shift ;;
        --no-settle) settle=false; shift ;;
        --against) [ $# -ge 2 ] || die "--against needs a binary"; against=$2; shift 2 ;;
        --against=*) against=${1#*=}; shift ;;
        --cases) [ $# -ge 2 ] || die "--cases needs a value"; IFS=, read -r -a cases <<<"$2"; shift 2 ;;
        --cases=*) IFS=, read -r -a cases <<<"${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, not '$rounds'"
[[ $requests =~ ^[1-9][0-9]*$ ]] || die "--requests must be a positive integer, not '$requests'"
[ ${#cases[@]} -gt 0 ] || die "--cases is empty"
for c in "${cases[@]}"; do
    [[ " ${all_cases[*]} " == *" $c "* ]] || die "unknown case '$c' (known: ${all_cases[*]})"
done
want() { [[ " ${cases[*]} " == *" $1 "* ]]; }
[ "$redis_port" != "$rialto_port" ] || die "REDIS_PORT and RIALTO_PORT must differ"

# --- tools -------------------------------------------------------------------------------
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null \
    || ! command -v redis-cli >/dev/null; then
    log "== installing redis-server and redis-tools"
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null; then
        sudo=(sudo)
    else
        die "redis-server/redis-tools are missing and there is no root or sudo to install them"
    fi
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq redis-server redis-tools >&2
    # The package starts a system-wide Redis on 6379; it is not ours to stop, and its port
    # is not one of ours.
fi
redis_version=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
[[ $redis_version == 7.* ]] || log "warning: the comparison is meant against Redis 7, this is '$redis_version'"

if [ -z "${RIALTO_BIN:-}" ]; then
    log "== building rialto (release)"
    nice -n 10 cargo build --release --locked -p rialto >&2
    RIALTO_BIN=$repo/target/release/rialto
fi
[ -x "$RIALTO_BIN" ] || die "RIALTO_BIN=$RIALTO_BIN is not an executable"

# --- data directories: on disk, never tmpfs ------------------------------------------------
# Checked on the nearest existing ancestor, before creating anything there.
probe=$bench_dir
until [ -d "$probe" ]; do probe=$(dirname "$probe"); done
fstype=$(df --output=fstype "$probe" 2>/dev/null | tail -n 1) || true
[ -n "$fstype" ] || fstype=$(stat -f -c %T "$probe")
case "$fstype" in
    tmpfs|ramfs) die "$bench_dir is on $fstype: fsync there is free, so durable results would mean nothing; set BENCH_DIR to a directory on disk" ;;
esac
mkdir -p "$bench_dir"
run_dir=$(mktemp -d "$bench_dir/run.XXXXXX")

# --- cleanup: our servers and our directories, whatever happens ---------------------------
server_pid=
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$run_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_server redis|rialto MODE DIR: MODE is none (Redis without AOF), always or everysec.
start_server() {
    local kind=$1 mode=$2 dir=$3 port
    if [ "$kind" = redis ]; then port=$redis_port; else port=$rialto_port; fi
    port_in_use "$port" && die "port $port is already in use (set ${kind^^}_PORT)"
    if [ "$kind" = redis ] && [ -n "$against" ]; then
        [ "$mode" = none ] && mode=always
        "$against" serve --dir "$dir" --port "$port" --appendfsync "$mode" \
            >"$dir/server.log" 2>&1 &
    elif [ "$kind" = redis ]; then
        local aof=(--appendonly yes --appendfsync "$mode")
        [ "$mode" = none ] && aof=(--appendonly no)
        redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' "${aof[@]}" \
            >"$dir/server.log" 2>&1 &
    else
        "$RIALTO_BIN" serve --dir "$dir" --port "$port" --appendfsync "$mode" \
            >"$dir/server.log" 2>&1 &
    fi
    server_pid=$!
    local i
    for ((i = 0; i < 300; i++)); do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            tail -n 20 "$dir/server.log" >&2 || true
            server_pid=
            die "$kind exited while starting"
        fi
        [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && return 0
        sleep 0.1
    done
    tail -n 20 "$dir/server.log" >&2 || true
    die "$kind did not answer PING on port $port within 30 s"
}

stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM "$server_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 150; i++)); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

# Loads every key of redis-benchmark's -r keyspace (key:%012d, values of -d bytes), so that
# every GET hits. A redis-benchmark SET run would not do: random keys cover only part of it.
preload() {
    local port=$1 out
    out=$(awk -v n="$keyspace" -v size="$data_size" 'BEGIN {
            v = sprintf("%" size "s", ""); gsub(/ /, "x", v)
            for (i = 0; i < n; i++)
                printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, size, v
        }' | redis-cli -h 127.0.0.1 -p "$port" --pipe 2>&1) || true
    # redis-cli prints every error reply; the first and the totals tell enough.
    [[ $out == *"errors: 0, replies: $keyspace"* ]] \
        || die "preload failed: $(head -n 1 <<<"$out") ... $(tail -n 1 <<<"$out")"
    local got
    got=$(redis-cli -h 127.0.0.1 -p "$port" get "key:$(printf %012d $((keyspace - 1)))")
    [ ${#got} -eq "$data_size" ] || die "preload check: GET returned '${got:0:40}'"
}

# Waits until the server's background work is done: Rialto's flush and compaction counters
# (INFO) unchanged for 3 s in a row, at most 300 s. Redis has none, so it passes at once.
wait_settled() {
    local port=$1 prev="" cur quiet=0 t=0
    while ((quiet < 3 && t < 300)); do
        cur=$(redis-cli -h 127.0.0.1 -p "$port" info 2>/dev/null \
            | grep -E '^(flushes|compactions|flush_bytes_written|compaction_bytes_written):' | tr -d '\r' | tr '\n' ' ')
        if [ "$cur" = "$prev" ]; then quiet=$((quiet + 1)); else quiet=0; prev=$cur; fi
        sleep 1
        t=$((t + 1))
    done
    echo "$t"
}

# CPU time of process PID so far, in clock ticks (user + system, every thread). The fields
# are counted after the command name, which is in parentheses and may hold spaces.
proc_cpu() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
clk_tck=$(getconf CLK_TCK)
TIMEFORMAT='%U %S'

# The transaction client (see the multi-* cases).
txn_load=
if want multi-always || want multi-everysec; then
    command -v go >/dev/null || die "the multi-* cases need Go to build scripts/txn-load"
    txn_load=$repo/target/txn-load
    (cd "$repo/scripts/txn-load" && go build -o "$txn_load" .) >&2 || die "cannot build scripts/txn-load"
fi

# The script of the evalsha-* cases: two increments, one reply.
incr2_script="return {redis.call('INCR', KEYS[1]), redis.call('INCR', KEYS[2])}"
tail_args=()

# bench PORT TEST PIPELINE: prints "ops_per_sec p99_ms server_cpu_us_per_request
# client_cpu_us_per_request" for the server started last.
bench() {
    local port=$1 test=$2 pipeline=$3 out line cpu0 cpu1 rc=0
    local out_file=$run_dir/bench.out time_file=$run_dir/bench.time
    cpu0=$(proc_cpu "$server_pid")
    local client=(redis-benchmark -t "$test" -P "$pipeline" --csv)
    [ "$test" = multi ] && client=("$txn_load")
    local subscribers=()
    if [ "$test" = publish ]; then
        local k
        for ((k = 0; k < 10; k++)); do
            redis-cli -h 127.0.0.1 -p "$port" subscribe bench-channel >/dev/null 2>&1 &
            subscribers+=("$!")
        done
        # Until all ten are subscribed.
        for ((k = 0; k < 100; k++)); do
            [ "$(redis-cli -h 127.0.0.1 -p "$port" pubsub numsub bench-channel | tail -n 1)" = 10 ] && break
            sleep 0.05
        done
        client=(redis-benchmark -P "$pipeline" --csv)
        tail_args=(publish bench-channel "$(head -c "$data_size" /dev/zero | tr '\0' x)")
    elif [ "$test" = evalsha ]; then
        local sha
        sha=$(redis-cli -h 127.0.0.1 -p "$port" script load "$incr2_script") || die "SCRIPT LOAD failed"
        client=(redis-benchmark -P "$pipeline" --csv)
        tail_args=(evalsha "$sha" 2 "counter:__rand_int__" "other:__rand_int__")
    else
        tail_args=()
    fi
    { time timeout "$bench_timeout" "${client[@]}" -h 127.0.0.1 -p "$port" \
        -n "$requests" -c "$clients" -d "$data_size" -r "$keyspace" "${tail_args[@]}" \
        >"$out_file" 2>&1; } 2>"$time_file" || rc=$?
    cpu1=$(proc_cpu "$server_pid")
    for k in "${subscribers[@]}"; do kill "$k" 2>/dev/null || true; done
    for k in "${subscribers[@]}"; do wait "$k" 2>/dev/null || true; done
    out=$(<"$out_file")
    [ "$rc" -eq 0 ] || die "redis-benchmark failed (or took over ${bench_timeout}s): $(head -c 2000 <<<"$out")"
    # redis-benchmark 7 exits non-zero on an error reply; older ones only printed it, and a
    # server answering errors must not score.
    [[ $out != *"Error from server"* ]] || die "the server answered errors: $(grep -m1 'Error from server' <<<"$out")"
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    # redis-benchmark names ping_mbulk's line PING_MBULK.
    # (A command redis-benchmark runs as given is named by its whole text.)
    local pattern="^\"$test\","
    [ "$test" = evalsha ] && pattern='^"evalsha '
    [ "$test" = publish ] && pattern='^"publish '
    [ "$test" = lrange_100 ] && pattern='^"LRANGE_100 '
    line=$(grep -m1 -i "$pattern" <<<"$out") || die "no CSV result line in: $out"
    read -r user sys <"$time_file"
    awk -F, -v c0="$cpu0" -v c1="$cpu1" -v hz="$clk_tck" -v n="$requests" -v cu="$user" -v cs="$sys" \
        '{ gsub(/"/, ""); printf "%s %s %.2f %.2f\n", $2, $7, (c1 - c0) / hz * 1e6 / n, (cu + cs) * 1e6 / n }' <<<"$line"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# The median of per-round ratios: $1 the peer's values, $2 Rialto's, in round order.
paired_ratio() {
    paste <(tr ' ' '\n' <<<"$1" | grep .) <(tr ' ' '\n' <<<"$2" | grep .) |
        awk '$1 > 0 { print $2 / $1 }' | median
}

# --- rounds --------------------------------------------------------------------------------
declare -A ops p99 scpu ccpu
groups=()
{ want get-p1 || want get-p16; } && groups+=(get)
wants_coll() {
    local t
    for t in "${coll_tests[@]}"; do
        { want "$t-$1" || want "$t-$1-p16"; } && return 0
    done
    return 1
}
{ want set-always || want set-always-p16 || want multi-always || want evalsha-always || want hset-always || want hset-always-p16 || wants_coll always; } && groups+=(set-always)
{ want set-everysec || want ping || want multi-everysec || want evalsha-everysec || want publish || want hset-everysec || wants_coll everysec; } && groups+=(set-everysec)

log "== $rounds round(s), redis-benchmark -n $requests -c $clients -d $data_size -r $keyspace; data in $bench_dir ($fstype)"
for ((round = 1; round <= rounds; round++)); do
    if ((round % 2)); then order=(redis rialto); else order=(rialto redis); fi
    for group in "${groups[@]}"; do
        for kind in "${order[@]}"; do
            port=$redis_port
            [ "$kind" = rialto ] && port=$rialto_port
            case "$group" in
                # Reads do not touch the AOF; Rialto runs as deployed, durable.
                get) [ "$kind" = redis ] && mode=none || mode=always ;;
                set-always) mode=always ;;
                set-everysec) mode=everysec ;;
            esac
            dir=$(mktemp -d "$run_dir/$kind-$group-$round.XXXXXX")
            start_server "$kind" "$mode" "$dir"
            runs=()
            if [ "$group" = get ]; then
                preload "$port"
                if $settle; then
                    log "round $round/$rounds  $(printf '%-13s %-7s' get "$kind") background work settled after $(wait_settled "$port") s"
                fi
                want get-p1 && runs+=("get-p1 get 1")
                want get-p16 && runs+=("get-p16 get 16")
            elif [ "$group" = set-everysec ]; then
                want ping && runs+=("ping ping_mbulk 1")
                want set-everysec && runs+=("set-everysec set 1")
                want multi-everysec && runs+=("multi-everysec multi 1")
                want evalsha-everysec && runs+=("evalsha-everysec evalsha 1")
                want publish && runs+=("publish publish 1")
                want hset-everysec && runs+=("hset-everysec hset 1")
                for t in "${coll_tests[@]}"; do
                    want "$t-everysec" && runs+=("$t-everysec $t 1")
                    want "$t-everysec-p16" && runs+=("$t-everysec-p16 $t 16")
                done
            else
                want set-always && runs+=("set-always set 1")
                want set-always-p16 && runs+=("set-always-p16 set 16")
                want multi-always && runs+=("multi-always multi 1")
                want evalsha-always && runs+=("evalsha-always evalsha 1")
                want hset-always && runs+=("hset-always hset 1")
                want hset-always-p16 && runs+=("hset-always-p16 hset 16")
                for t in "${coll_tests[@]}"; do
                    want "$t-always" && runs+=("$t-always $t 1")
                    want "$t-always-p16" && runs+=("$t-always-p16 $t 16")
                done
            fi
            for r in "${runs[@]}"; do
                read -r case test pipeline <<<"$r"
                res=$(bench "$port" "$test" "$pipeline") || exit 1
                read -r rps lat s_us c_us <<<"$res"
                ops[$case,$kind]+="$rps "
                p99[$case,$kind]+="$lat "
                scpu[$case,$kind]+="$s_us "
                ccpu[$case,$kind]+="$c_us "
                log "round $round/$rounds  $(printf '%-13s %-7s %12s ops/s  p99 %s ms  CPU/request: server %s us, client %s us' "$case" "$kind" "$rps" "$lat" "$s_us" "$c_us")"
            done
            stop_server
            rm -rf "$dir"
        done
    done
done

# --- table ---------------------------------------------------------------------------------
label() {
    case "$1" in
        get-p1) echo "GET -P 1" ;;
        get-p16) echo "GET -P 16" ;;
        set-always) echo "SET, appendfsync always" ;;
        set-always-p16) echo "SET -P 16, appendfsync always" ;;
        set-everysec) echo "SET, appendfsync everysec" ;;
        multi-always) echo "MULTI/SET/SET/EXEC, appendfsync always" ;;
        multi-everysec) echo "MULTI/SET/SET/EXEC, appendfsync everysec" ;;
        evalsha-always) echo "EVALSHA (2 INCRs), appendfsync always" ;;
        evalsha-everysec) echo "EVALSHA (2 INCRs), appendfsync everysec" ;;
        publish) echo "PUBLISH to 10 subscribers" ;;
        ping) echo "PING (no-op reference)" ;;
        hset-always) echo "HSET, appendfsync always" ;;
        hset-always-p16) echo "HSET -P 16, appendfsync always" ;;
        hset-everysec) echo "HSET, appendfsync everysec" ;;
        *-p16) local t=${1%-*}; echo "$(tr a-z A-Z <<<"${t%-*}") -P 16, appendfsync ${t##*-}" ;;
        *) echo "$(tr a-z A-Z <<<"${1%-*}"), appendfsync ${1##*-}" ;;
    esac
}
min_ratio() {
    if [ -n "$against" ]; then
        echo 0.98
        return
    fi
    case "$1" in
        set-always) echo 1.5 ;;
        set-always-p16) echo 1.0 ;;
        *) echo 1.0 ;;
    esac
}

echo
when="GETs after background work settled"
$settle || when="GETs right after the load"
peer="Redis"
[ -n "$against" ] && peer="Before"
if [ -n "$against" ]; then
    echo "Before ($against) vs after ($RIALTO_BIN), both Rialto: redis-benchmark -n $requests -c $clients -d $data_size -r $keyspace, median of $rounds round(s), $(nproc) cores, data on $fstype, $when"
else
    echo "Redis $redis_version vs Rialto ($RIALTO_BIN): redis-benchmark -n $requests -c $clients -d $data_size -r $keyspace, median of $rounds round(s), $(nproc) cores, data on $fstype, $when"
fi
echo
echo "| case | $peer ops/s | Rialto ops/s | Rialto/$peer | per-round Rialto/$peer | $peer p99 ms | Rialto p99 ms | server CPU µs/req $peer / Rialto | client CPU µs/req against $peer / Rialto | target | met |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
for c in "${all_cases[@]}"; do
    want "$c" || continue
    r_ops=$(median <<<"${ops[$c,redis]}")
    x_ops=$(median <<<"${ops[$c,rialto]}")
    paired=$(paired_ratio "${ops[$c,redis]}" "${ops[$c,rialto]}")
    r_p99=$(median <<<"${p99[$c,redis]}")
    x_p99=$(median <<<"${p99[$c,rialto]}")
    r_s=$(median <<<"${scpu[$c,redis]}")
    x_s=$(median <<<"${scpu[$c,rialto]}")
    r_c=$(median <<<"${ccpu[$c,redis]}")
    x_c=$(median <<<"${ccpu[$c,rialto]}")
    need=$(min_ratio "$c")
    # p99 is judged at -P 1 only: with -P 16 a reply waits for its whole batch.
    judge_p99=1
    [ "$c" = get-p16 ] || [ "$c" = set-always-p16 ] || [[ $c == multi-* ]] || [[ $c == evalsha-* ]] || [ "$c" = publish ] || [ -n "$against" ] && judge_p99=0
    awk -v c="$(label "$c")" -v ro="$r_ops" -v xo="$x_ops" -v pr="$paired" -v rp="$r_p99" -v xp="$x_p99" \
        -v rs="$r_s" -v xs="$x_s" -v rc="$r_c" -v xc="$x_c" -v ref="$([ "$c" = ping ] && echo 1 || echo 0)" \
        -v need="$need" -v jp="$judge_p99" 'BEGIN {
        ratio = (ro > 0) ? xo / ro : 0
        target = sprintf("≥%g×", need); if (jp) target = target ", p99 ≤1 ms"
        miss = ""
        if (pr < need) miss = "ratio"
        if (jp && xp > 1.0) miss = miss (miss == "" ? "" : ", ") "p99"
        met = (miss == "") ? "✓" : "✗ (" miss ")"
        if (ref) { target = "reference"; met = "—" }
        printf "| %s | %.0f | %.0f | %.2f× | %.2f× | %.3f | %.3f | %.2f / %.2f | %.2f / %.2f | %s | %s |\n", c, ro, xo, ratio, pr, rp, xp, rs, xs, rc, xc, target, met
    }'
done
