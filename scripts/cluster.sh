#!/usr/bin/env bash
# A local Rialto cluster for development and tests: 3 Kafka brokers (scripts/kafka.sh) and N
# Rialto nodes as local processes on 127.0.0.1, each serving every partition of the log
# (partition p at its port + p), as master of those Kafka's group gives it.
#
# Usage:
#   scripts/cluster.sh up [--nodes N] [--partitions P] [--base-port B] [--dir D] [--bin PATH]
#                         [--kafka BOOTSTRAP | --kafka-port K] [--release]
#   scripts/cluster.sh down [--dir D]
#   scripts/cluster.sh status [--dir D]
#   scripts/cluster.sh kill-node I [--dir D] [--signal SIG]
#   scripts/cluster.sh start-node I [--dir D] [--wipe]
#
#   up          start Kafka (unless --kafka names running brokers; its brokers listen on K,
#               K+1, K+2, default 19092), build rialto (unless --bin)
#               and start N nodes (default 3) with P partitions (default 3); node I listens on
#               B + 100 * (I - 1) + p for partition p (B default 7000). Waits until every
#               node sees a master for every partition and all N nodes, then prints one
#               address per node on stdout.
#   down        stop the nodes (SIGTERM) and the Kafka cluster this script started.
#   status      one line per node.
#   kill-node   send SIG (default KILL) to node I: KILL for a crash, STOP for a stall (CONT
#               resumes it).
#   start-node  start node I again with its data directory (--wipe: with an empty one, as a
#               new node that loads every partition from the log).
#
# RIALTO_NODE_OPTS adds options to every node's command line (e.g. "--cluster-linger-ms 5").
# D (default target/rialto-cluster in this repo) holds node-I/ (data, rialto.log, pid) and
# kafka/ (the brokers, see scripts/kafka.sh).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog="cluster.sh"
die() { echo "$prog: $*" >&2; exit 1; }
note() { echo "$prog: $*" >&2; }

cmd="${1:-}"; shift || true
nodes=3 partitions=3 base_port=7000 dir="$repo/target/rialto-cluster" bin="" kafka="" release=0
kafka_port=19092
signal=KILL index="" wipe=0
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) nodes="$2"; shift 2 ;;
        --partitions) partitions="$2"; shift 2 ;;
        --base-port) base_port="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        --bin) bin="$2"; shift 2 ;;
        --kafka) kafka="$2"; shift 2 ;;
        --kafka-port) kafka_port="$2"; shift 2 ;;
        --release) release=1; shift ;;
        --signal) signal="$2"; shift 2 ;;
        --wipe) wipe=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (--help lists them)" ;;
        *) [ -z "$index" ] || die "one node index only"; index="$1"; shift ;;
    esac
done
[[ "$nodes" =~ ^[1-9]$ ]] || die "--nodes must be 1 to 9"
[[ "$partitions" =~ ^[0-9]+$ ]] && [ "$partitions" -ge 1 ] && [ "$partitions" -le 100 ] \
    || die "--partitions must be 1 to 100"

node_port() { echo $((base_port + 100 * ($1 - 1))); }
node_dir() { echo "$dir/node-$1"; }

load() {
    [ -f "$dir/cluster.env" ] || die "no cluster in $dir (run: scripts/cluster.sh up)"
    # shellcheck disable=SC1091
    . "$dir/cluster.env"
}

start_node() {
    local i="$1" nd; nd="$(node_dir "$i")"
    mkdir -p "$nd"
    rm -f "$nd/pid"
    # The node writes its own pid: setsid forks (and `$!` is gone) when its caller leads a
    # process group.
    # shellcheck disable=SC2016
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$nd/pid" "$RIALTO_BIN" serve --dir "$nd/data" \
        --port "$(node_port "$i")" --appendfsync everysec \
        --cluster-enabled yes --cluster-kafka "$KAFKA" --cluster-node-id "$i" \
        --cluster-partitions "$PARTITIONS" --cluster-announce-ip 127.0.0.1 \
        --log-format text ${RIALTO_NODE_OPTS:-} </dev/null >>"$nd/rialto.log" 2>&1 &
    for _ in $(seq 100); do [ -s "$nd/pid" ] && break; sleep 0.05; done
}

node_pid() { local f; f="$(node_dir "$1")/pid"; [ -f "$f" ] && cat "$f"; }
alive() { local pid; pid="$(node_pid "$1")" && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

# Waits until node I sees a master for every partition and every node as a member.
wait_served() {
    local i="$1" port info; port="$(node_port "$i")"
    for _ in $(seq 600); do
        alive "$i" || { tail -n 20 "$(node_dir "$i")/rialto.log" >&2; die "node $i exited"; }
        info="$(redis-cli -p "$port" cluster info 2>/dev/null || true)"
        if grep -q '^cluster_state:ok' <<<"$info" \
            && grep -q "^cluster_known_nodes:$((NODES * PARTITIONS))" <<<"$info"; then
            return 0
        fi
        sleep 0.1
    done
    tail -n 20 "$(node_dir "$i")/rialto.log" >&2
    die "node $i: no master for every partition after 60 s"
}

# The masters as node I's CLUSTER NODES names them: "slot-range host:port" lines.
masters_seen() {
    redis-cli -p "$(node_port "$1")" cluster nodes 2>/dev/null \
        | awk '$3 ~ /master/ { sub(/@.*/, "", $2); print $9, $2 }' | sort
}

# Waits until every running node names the same masters and each of them writes its
# partition, three checks in a row over a second (a group that is still balancing moves
# masterships for a few seconds).
wait_settled() {
    local first="" seen ok p port addr stable=0 last=""
    for _ in $(seq 600); do
        ok=1 first=""
        for i in $(seq "$NODES"); do
            alive "$i" || continue
            seen="$(masters_seen "$i")"
            [ -n "$seen" ] || { ok=0; break; }
            if [ -z "$first" ]; then first="$seen"; elif [ "$seen" != "$first" ]; then ok=0; break; fi
        done
        if [ "$ok" = 1 ] && [ -n "$first" ]; then
            while read -r _ addr; do
                port="${addr##*:}"
                p=$(( (port - BASE_PORT) % 100 ))
                redis-cli -p "$port" info cluster 2>/dev/null | grep -q "^partition$p:role=master" || { ok=0; break; }
            done <<<"$first"
            if [ "$ok" = 1 ]; then
                if [ "$first" = "$last" ]; then stable=$((stable + 1)); else stable=1; fi
                last="$first"
                [ "$stable" -lt 3 ] || return 0
            fi
        fi
        [ "$ok" = 1 ] || stable=0
        sleep 0.5
    done
    die "the masters did not settle within 5 minutes"
}

case "$cmd" in
    up)
        command -v redis-cli >/dev/null || die "redis-cli is needed (apt-get install redis-tools)"
        if [ -d "$dir" ]; then "$0" down --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"; fi
        mkdir -p "$dir"
        if [ -z "$bin" ]; then
            if [ "$release" = 1 ]; then
                (cd "$repo" && cargo build --release --bin rialto >&2)
                bin="$repo/target/release/rialto"
            else
                (cd "$repo" && cargo build --bin rialto >&2)
                bin="$repo/target/debug/rialto"
            fi
        fi
        own_kafka=0
        if [ -z "$kafka" ]; then
            kafka="$(bash "$repo/scripts/kafka.sh" up --dir "$dir/kafka" --base-port "$kafka_port")"
            own_kafka=1
        fi
        {
            echo "RIALTO_BIN=$bin"
            echo "KAFKA=$kafka"
            echo "OWN_KAFKA=$own_kafka"
            echo "NODES=$nodes"
            echo "PARTITIONS=$partitions"
            echo "BASE_PORT=$base_port"
        } >"$dir/cluster.env"
        load
        for i in $(seq "$nodes"); do start_node "$i"; done
        for i in $(seq "$nodes"); do wait_served "$i"; done
        wait_settled
        for i in $(seq "$nodes"); do echo "127.0.0.1:$(node_port "$i")"; done
        ;;
    down)
        [ -f "$dir/cluster.env" ] || exit 0
        load
        base_port="$BASE_PORT"
        for i in $(seq "$NODES"); do
            if alive "$i"; then kill -CONT "$(node_pid "$i")" 2>/dev/null || true; kill -TERM "$(node_pid "$i")" || true; fi
        done
        for i in $(seq "$NODES"); do
            for _ in $(seq 300); do alive "$i" || break; sleep 0.1; done
            if alive "$i"; then kill -KILL "$(node_pid "$i")" || true; fi
        done
        [ "$OWN_KAFKA" != 1 ] || bash "$repo/scripts/kafka.sh" down --dir "$dir/kafka" >&2
        ;;
    status)
        load
        base_port="$BASE_PORT"
        for i in $(seq "$NODES"); do
            if alive "$i"; then s=running; else s=stopped; fi
            echo "node $i: $s, port $(node_port "$i") (+0..$((PARTITIONS - 1))), pid $(node_pid "$i" || echo -)"
        done
        [ "$OWN_KAFKA" != 1 ] || bash "$repo/scripts/kafka.sh" status --dir "$dir/kafka"
        ;;
    kill-node)
        load; base_port="$BASE_PORT"
        [ -n "$index" ] || die "kill-node needs a node index"
        alive "$index" || die "node $index is not running"
        kill -"$signal" "$(node_pid "$index")"
        if [ "$signal" = KILL ]; then
            for _ in $(seq 100); do alive "$index" || break; sleep 0.05; done
        fi
        ;;
    start-node)
        load; base_port="$BASE_PORT"
        [ -n "$index" ] || die "start-node needs a node index"
        ! alive "$index" || die "node $index is running"
        [ "$wipe" != 1 ] || rm -rf "$(node_dir "$index")/data"
        start_node "$index"
        wait_served "$index"
        for i in $(seq "$NODES"); do ! alive "$i" || wait_served "$i"; done
        wait_settled
        ;;
    *) die "usage: scripts/cluster.sh up|down|status|kill-node I|start-node I (--help)" ;;
esac
