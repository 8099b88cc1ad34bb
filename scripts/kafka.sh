#!/usr/bin/env bash
# A local Apache Kafka cluster (KRaft mode) for development and tests: Rialto's replicated log in
# cluster mode. Kafka's official jars come from Maven Central through mvn (the distribution
# tarball is not published there); the nodes run as local processes on 127.0.0.1.
#
# Usage:
#   scripts/kafka.sh fetch [--version V]
#   scripts/kafka.sh up [--brokers N] [--base-port P] [--dir D] [--timeout S] [--version V]
#   scripts/kafka.sh down [--dir D] [--timeout S]
#   scripts/kafka.sh status [--dir D]
#   scripts/kafka.sh bootstrap [--dir D]
#   scripts/kafka.sh kill-broker I [--dir D] [--graceful]
#   scripts/kafka.sh start-broker I [--dir D] [--timeout S]
#
#   fetch         download Kafka's jars (and their dependencies) into the cache; instant when
#                 they are already there. Prints the cache directory.
#   up            format and start a fresh cluster: N brokers (default 3) and one dedicated
#                 controller, then wait until every broker answers in a metadata response.
#                 Prints the bootstrap servers (127.0.0.1:P,127.0.0.1:P+1,...) on stdout.
#                 Broker I (1..N) has node id I and listens on P+I-1; the controller has node
#                 id 100 and listens on P+N. D holds one directory per node: its
#                 server.properties, data, server.log (the broker's log), stdout.log and pid.
#                 A cluster left in D by an earlier `up` is replaced.
#   down          stop every node: SIGTERM, SIGKILL after --timeout seconds (default 30).
#                 The data and logs stay in D until the next `up`.
#   status        one line per node (running or stopped, pid, port); exit 0.
#   bootstrap     print the bootstrap servers of the cluster in D.
#   kill-broker   crash broker I with SIGKILL (--graceful: SIGTERM, a controlled shutdown)
#                 and wait until its process is gone.
#   start-broker  start broker I again and wait until the cluster lists it.
#
#   --brokers N     brokers, 1..9 (default 3)
#   --base-port P   first port (default 19092); the cluster uses P..P+N
#   --dir D         cluster directory (default: target/kafka-cluster in this repo)
#   --timeout S     seconds to wait (default 120 for up and start-broker, 30 for down)
#   --version V     Kafka version (default 4.4.0, or $RIALTO_KAFKA_VERSION)
#
# Environment:
#   RIALTO_KAFKA_VERSION    Kafka version (default 4.4.0)
#   RIALTO_KAFKA_HOME       where the jars go (default ~/.cache/rialto/kafka-<version>)
#   RIALTO_KAFKA_HEAP       broker heap (default 512m; the controller gets 256m)
#   RIALTO_KAFKA_JAVA_OPTS  more JVM options for every node
#   JAVA_HOME               the Java (17 or later) to run; else `java` on PATH
#
# Replication settings: default.replication.factor = min(3, N), min.insync.replicas = 2 (1 when
# N = 1), unclean leader election off, the internal topics replicated the same way
# (docs/kafka-dev.md says why each). The controller runs apart from the brokers so that
# kill-broker never takes the metadata quorum with it.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prog="kafka.sh"

usage() { sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }

die() {
    echo "$prog: error: $*" >&2
    exit 1
}
note() { echo "$prog: $*" >&2; }

version="${RIALTO_KAFKA_VERSION:-4.4.0}"
brokers=3
base_port=19092
dir="$repo/target/kafka-cluster"
timeout=""
graceful=0
index=""
controller_id=100

java_bin() {
    if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
        echo "$JAVA_HOME/bin/java"
    elif command -v java >/dev/null 2>&1; then
        command -v java
    else
        die "java not found (install a JDK 17 or later, or set JAVA_HOME)"
    fi
}

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

parse_options() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --brokers) [ $# -ge 2 ] || die "--brokers needs a value"; brokers="$2"; shift 2 ;;
            --brokers=*) brokers="${1#*=}"; shift ;;
            --base-port) [ $# -ge 2 ] || die "--base-port needs a value"; base_port="$2"; shift 2 ;;
            --base-port=*) base_port="${1#*=}"; shift ;;
            --dir) [ $# -ge 2 ] || die "--dir needs a value"; dir="$2"; shift 2 ;;
            --dir=*) dir="${1#*=}"; shift ;;
            --timeout) [ $# -ge 2 ] || die "--timeout needs a value"; timeout="$2"; shift 2 ;;
            --timeout=*) timeout="${1#*=}"; shift ;;
            --version) [ $# -ge 2 ] || die "--version needs a value"; version="$2"; shift 2 ;;
            --version=*) version="${1#*=}"; shift ;;
            --graceful) graceful=1; shift ;;
            -h | --help) usage; exit 0 ;;
            -*) die "unknown option $1 (see $prog --help)" ;;
            *)
                [ -z "$index" ] || die "unexpected argument $1 (see $prog --help)"
                index="$1"
                shift
                ;;
        esac
    done
    if ! is_uint "$brokers" || [ "$brokers" -lt 1 ] || [ "$brokers" -gt 9 ]; then
        die "--brokers must be 1..9, not $brokers"
    fi
    if ! is_uint "$base_port" || [ "$base_port" -lt 1024 ] || [ $((base_port + brokers)) -gt 65535 ]; then
        die "--base-port must leave room for $((brokers + 1)) ports in 1024..65535, not $base_port"
    fi
    [ -z "$timeout" ] || { is_uint "$timeout" && [ "$timeout" -ge 1 ]; } || die "--timeout must be a positive number of seconds"
    [[ "$version" =~ ^4\.[0-9]+\.[0-9]+$ ]] || die "--version must be a Kafka 4.x release such as 4.4.0, not $version"
    dir="$(mkdir -p "$(dirname "$dir")" && cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"
}

kafka_home() { echo "${RIALTO_KAFKA_HOME:-$HOME/.cache/rialto/kafka-$version}"; }

# ---------------------------------------------------------------------------------------- fetch

# Maven has no Kafka distribution, so a throwaway project depends on the server (kafka_2.13,
# which brings the KRaft modules: server, metadata, raft, storage, coordinators) and on the
# command-line tools, and copies the whole runtime classpath into one directory.
fetch() {
    local home libs work core_jar log4j_version
    home="$(kafka_home)"
    libs="$home/libs"
    if [ -f "$home/fetched" ] && [ "$(cat "$home/fetched")" = "$version" ]; then
        echo "$home"
        return
    fi
    command -v mvn >/dev/null 2>&1 || die "mvn not found (install Maven 3.8 or later: apt-get install maven)"
    java_bin >/dev/null
    work="$home/fetch-work"
    rm -rf "$work"
    mkdir -p "$work"
    cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.rialto</groupId>
  <artifactId>kafka-classpath</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
EOF
    note "fetching Kafka $version with mvn into $home"
    if ! mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$work/libs" >"$work/mvn.log" 2>&1; then
        tail -n 20 "$work/mvn.log" >&2
        die "mvn could not resolve Kafka $version from Maven Central (full output: $work/mvn.log)"
    fi
    # Kafka logs through SLF4J 1.7 and ships Log4j 2 without the binding between them; without
    # it the brokers would log nothing. The binding must match the Log4j version Kafka uses.
    core_jar="$(find "$work/libs" -maxdepth 1 -name 'log4j-core-*.jar' -printf '%f\n' | head -n 1)"
    [ -n "$core_jar" ] || die "Kafka $version's dependencies have no log4j-core; cannot set up broker logging"
    log4j_version="${core_jar#log4j-core-}"
    log4j_version="${log4j_version%.jar}"
    if ! mvn -B -q -f "$work/pom.xml" dependency:copy \
        -Dartifact="org.apache.logging.log4j:log4j-slf4j-impl:$log4j_version" \
        -DoutputDirectory="$work/libs" >>"$work/mvn.log" 2>&1; then
        tail -n 20 "$work/mvn.log" >&2
        die "mvn could not fetch log4j-slf4j-impl $log4j_version (full output: $work/mvn.log)"
    fi
    [ -f "$work/libs/kafka_2.13-$version.jar" ] || die "mvn ran but kafka_2.13-$version.jar is missing from $work/libs"
    rm -rf "$libs"
    mv "$work/libs" "$libs"
    rm -rf "$work"
    echo "$version" >"$home/fetched"
    note "fetched $(find "$libs" -maxdepth 1 -name '*.jar' | wc -l) jars"
    echo "$home"
}

# ------------------------------------------------------------------------------- cluster layout

node_dir() { if [ "$1" = controller ]; then echo "$dir/controller"; else echo "$dir/broker-$1"; fi; }
node_port() { if [ "$1" = controller ]; then echo $((base_port + brokers)); else echo $((base_port + $1 - 1)); fi; }
node_id() { if [ "$1" = controller ]; then echo "$controller_id"; else echo "$1"; fi; }
node_name() { if [ "$1" = controller ]; then echo "controller"; else echo "broker $1"; fi; }
all_nodes() { echo controller; seq 1 "$brokers"; }

bootstrap_servers() {
    local i out=""
    for i in $(seq 1 "$brokers"); do out="${out:+$out,}127.0.0.1:$(node_port "$i")"; done
    echo "$out"
}

# Reads what `up` recorded, so the other commands need only --dir.
load_cluster() {
    [ -f "$dir/cluster.env" ] || die "no cluster in $dir (start one with: $prog up --dir $dir)"
    # shellcheck disable=SC1091
    . "$dir/cluster.env"
    version="$KAFKA_VERSION"
    brokers="$KAFKA_BROKERS"
    base_port="$KAFKA_BASE_PORT"
}

libs_dir() { echo "$(kafka_home)/libs"; }

# The pid of a node's process if it is running, else nothing. The command line is checked too:
# a stale pid file must not make us signal an unrelated process that reused the pid.
node_pid() {
    local nd pid
    nd="$(node_dir "$1")"
    [ -f "$nd/pid" ] || return 0
    pid="$(cat "$nd/pid")"
    is_uint "$pid" || return 0
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$nd/server.properties"; then
        echo "$pid"
    fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_log_configs() {
    cat >"$dir/log4j2.properties" <<'EOF'
# Each node logs to server.log in its own directory (kafka.logs.dir), 3 x 50 MB at most.
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.filePattern = ${sys:kafka.logs.dir}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
EOF
    cat >"$dir/tools-log4j2.properties" <<'EOF'
# The command-line tools run by this script: warnings and errors only, to stderr.
status = warn
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = err
EOF
}

write_configs() {
    local rf min_isr controller_port node nd
    rf=$((brokers < 3 ? brokers : 3))
    min_isr=$((brokers == 1 ? 1 : 2))
    controller_port="$(node_port controller)"
    for node in $(all_nodes); do
        nd="$(node_dir "$node")"
        mkdir -p "$nd/data"
        {
            echo "node.id=$(node_id "$node")"
            echo "controller.quorum.voters=$controller_id@127.0.0.1:$controller_port"
            echo "controller.listener.names=CONTROLLER"
            echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
            echo "log.dirs=$nd/data"
            if [ "$node" = controller ]; then
                echo "process.roles=controller"
                echo "listeners=CONTROLLER://127.0.0.1:$controller_port"
            else
                echo "process.roles=broker"
                echo "listeners=PLAINTEXT://127.0.0.1:$(node_port "$node")"
                echo "advertised.listeners=PLAINTEXT://127.0.0.1:$(node_port "$node")"
                echo "inter.broker.listener.name=PLAINTEXT"
            fi
            # The controller applies topic defaults when it creates a topic and elects leaders;
            # the brokers apply log defaults and create the internal topics.
            [ "$node" != controller ] || echo "default.replication.factor=$rf"
            echo "min.insync.replicas=$min_isr"
            echo "unclean.leader.election.enable=false"
            echo "offsets.topic.replication.factor=$rf"
            echo "transaction.state.log.replication.factor=$rf"
            echo "transaction.state.log.min.isr=$min_isr"
            echo "share.coordinator.state.topic.replication.factor=$rf"
            echo "share.coordinator.state.topic.min.isr=$min_isr"
            echo "auto.create.topics.enable=false"
            # Rialto nodes hold their masterships as members of a consumer group: a session
            # as short as 1 s must be allowed (Kafka's floor is 6 s), and an empty group's
            # first assignment need not wait for more members (3 s by default).
            echo "group.min.session.timeout.ms=1000"
            echo "group.initial.rebalance.delay.ms=0"
            # A dead broker is fenced (and leaves the in-sync replicas, so writes continue on the
            # others) after 3 s without a heartbeat instead of Kafka's 9 s.
            if [ "$node" = controller ]; then echo "broker.session.timeout.ms=3000"; else echo "broker.heartbeat.interval.ms=500"; fi
        } >"$nd/server.properties"
    done
    {
        echo "KAFKA_VERSION=$version"
        echo "KAFKA_BROKERS=$brokers"
        echo "KAFKA_BASE_PORT=$base_port"
        echo "KAFKA_CLUSTER_ID=$cluster_id"
    } >"$dir/cluster.env"
}

# A command-line tool of Kafka's, on the same classpath, with a small heap and quick start-up.
run_tool() {
    local class="$1"
    shift
    "$(java_bin)" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
        -Dlog4j2.configurationFile="$dir/tools-log4j2.properties" \
        -cp "$(libs_dir)/*" "$class" "$@"
}

start_node() {
    local node="$1" nd heap
    nd="$(node_dir "$node")"
    if [ "$node" = controller ]; then heap=256m; else heap="${RIALTO_KAFKA_HEAP:-512m}"; fi
    rm -f "$nd/pid"
    # setsid: the node outlives this script and a Ctrl-C in its terminal; every descriptor goes
    # to a file, so a caller that reads this script's output does not wait for the node's end.
    # The node writes its own pid (`$$` of the shell that then execs Java): setsid forks when
    # its caller leads a process group, so `$!` may be a process that is already gone.
    # shellcheck disable=SC2086,SC2016
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$nd/pid" \
        "$(java_bin)" -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
        -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
        -Djava.awt.headless=true -Dkafka.logs.dir="$nd" \
        -Dlog4j2.configurationFile="$dir/log4j2.properties" ${RIALTO_KAFKA_JAVA_OPTS:-} \
        -cp "$(libs_dir)/*" kafka.Kafka "$nd/server.properties" \
        </dev/null >"$nd/stdout.log" 2>&1 &
    # Not a job of this shell: stopping it later must not print a job status line.
    disown $!
    for _ in $(seq 100); do [ -s "$nd/pid" ] && break; sleep 0.05; done
}

fail_with_log() {
    local node="$1" msg="$2" nd
    nd="$(node_dir "$node")"
    {
        echo "--- last lines of $nd/server.log:"
        tail -n 30 "$nd/server.log" 2>/dev/null || true
        if [ -s "$nd/stdout.log" ]; then
            echo "--- last lines of $nd/stdout.log:"
            tail -n 10 "$nd/stdout.log"
        fi
    } >&2
    die "$msg"
}

# The broker ids in a metadata response from the cluster, one a line (fenced brokers are left
# out of metadata responses, so a listed broker serves clients).
metadata_broker_ids() {
    run_tool org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$(bootstrap_servers)" 2>/dev/null |
        sed -n 's/^[^ ]* (id: \([0-9]*\) .*/\1/p' | sort -n
}

# Waits until every node in "$@" runs with its port open and the cluster's metadata lists every
# broker in "$@"; on timeout or a node's exit, fails with the tail of that node's log.
wait_ready() {
    local deadline="$1" node pid ids want
    shift
    while :; do
        local pending=0
        for node in "$@"; do
            pid="$(node_pid "$node")"
            [ -n "$pid" ] || fail_with_log "$node" "$(node_name "$node") exited while starting (log: $(node_dir "$node")/server.log)"
            port_open "$(node_port "$node")" || pending=1
        done
        if [ "$pending" = 0 ]; then
            ids="$(metadata_broker_ids || true)"
            want=1
            for node in "$@"; do
                [ "$node" = controller ] || grep -qx "$node" <<<"$ids" || want=0
            done
            [ "$want" = 0 ] || return 0
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            for node in "$@"; do
                [ "$node" = controller ] && continue
                grep -qx "$node" <<<"${ids:-}" || fail_with_log "$node" "$(node_name "$node") not serving after ${timeout}s (log: $(node_dir "$node")/server.log)"
            done
            fail_with_log controller "cluster not ready after ${timeout}s"
        fi
        sleep 0.5
    done
}

# Sends signal $1 to the given nodes together, then SIGKILL to those still running after $2
# seconds; returns once all are gone.
stop_nodes() {
    local signal="$1" wait_s="$2" node pid deadline left
    shift 2
    for node in "$@"; do
        pid="$(node_pid "$node")"
        [ -z "$pid" ] || kill -s "$signal" "$pid" 2>/dev/null || true
    done
    deadline=$((SECONDS + wait_s))
    while :; do
        left=()
        for node in "$@"; do [ -z "$(node_pid "$node")" ] || left+=("$node"); done
        [ "${#left[@]}" -gt 0 ] || break
        if [ "$SECONDS" -ge "$deadline" ]; then
            for node in "${left[@]}"; do
                note "$(node_name "$node") still running after ${wait_s}s; sending SIGKILL"
                pid="$(node_pid "$node")"
                [ -z "$pid" ] || kill -s KILL "$pid" 2>/dev/null || true
            done
            deadline=$((SECONDS + 10))
            wait_s=10
            signal=KILL
        fi
        sleep 0.2
    done
    for node in "$@"; do rm -f "$(node_dir "$node")/pid"; done
}

any_running() {
    local node
    for node in $(all_nodes); do [ -z "$(node_pid "$node")" ] || return 0; done
    return 1
}

# ---------------------------------------------------------------------------------- subcommands

up() {
    local start node port entry
    start="$SECONDS"
    timeout="${timeout:-120}"
    if [ -f "$dir/cluster.env" ]; then
        local want_brokers="$brokers" want_port="$base_port" want_version="$version"
        load_cluster
        ! any_running || die "a cluster is already running in $dir (stop it with: $prog down --dir $dir)"
        brokers="$want_brokers" base_port="$want_port" version="$want_version"
    elif [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
        die "$dir exists and is not a cluster directory of this script; refusing to replace it"
    fi
    fetch >/dev/null
    for node in $(all_nodes); do
        port="$(node_port "$node")"
        ! port_open "$port" || die "port $port is in use (choose another --base-port)"
    done
    # Only what an earlier `up` created is removed.
    if [ -d "$dir" ]; then
        for entry in "$dir"/controller "$dir"/broker-[0-9] "$dir"/cluster.env "$dir"/*log4j2.properties; do
            [ ! -e "$entry" ] || rm -rf "$entry"
        done
    fi
    mkdir -p "$dir"
    write_log_configs
    cluster_id="$(run_tool kafka.tools.StorageTool random-uuid)" || die "kafka.tools.StorageTool random-uuid failed"
    write_configs
    note "formatting $((brokers + 1)) nodes (cluster id $cluster_id)"
    local pids=() failed=0
    for node in $(all_nodes); do
        run_tool kafka.tools.StorageTool format --cluster-id "$cluster_id" \
            --config "$(node_dir "$node")/server.properties" >"$(node_dir "$node")/format.log" 2>&1 &
        pids+=("$!")
    done
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    if [ "$failed" = 1 ]; then
        for node in $(all_nodes); do cat "$(node_dir "$node")/format.log" >&2; done
        die "formatting the storage failed"
    fi
    local nodes
    mapfile -t nodes < <(all_nodes)
    trap 'stop_nodes KILL 10 "${nodes[@]}"; exit 130' INT TERM
    for node in "${nodes[@]}"; do start_node "$node"; done
    note "started $brokers brokers and a controller; waiting for them to serve (at most ${timeout}s)"
    (wait_ready $((start + timeout)) "${nodes[@]}") || {
        stop_nodes KILL 10 "${nodes[@]}"
        exit 1
    }
    trap - INT TERM
    note "cluster ready in $((SECONDS - start))s: $brokers brokers, controller on port $(node_port controller), directory $dir"
    bootstrap_servers
}

down() {
    load_cluster
    local nodes=()
    for node in $(seq 1 "$brokers"); do nodes+=("$node"); done
    # Brokers first: a broker's controlled shutdown needs the controller.
    stop_nodes TERM "${timeout:-30}" "${nodes[@]}"
    stop_nodes TERM "${timeout:-30}" controller
    note "stopped the cluster in $dir"
}

status() {
    load_cluster
    local node pid state
    echo "cluster $KAFKA_CLUSTER_ID, Kafka $version, directory $dir"
    for node in $(all_nodes); do
        pid="$(node_pid "$node")"
        if [ -n "$pid" ]; then state="running (pid $pid)"; else state="stopped"; fi
        printf '%-11s node %-3s 127.0.0.1:%-5s %s\n' "$(node_name "$node")" "$(node_id "$node")" "$(node_port "$node")" "$state"
    done
    echo "bootstrap: $(bootstrap_servers)"
}

broker_index() {
    [ -n "$index" ] || die "which broker? give its index, 1..$brokers"
    if ! is_uint "$index" || [ "$index" -lt 1 ] || [ "$index" -gt "$brokers" ]; then
        die "broker index must be 1..$brokers, not $index"
    fi
}

kill_broker() {
    load_cluster
    broker_index
    [ -n "$(node_pid "$index")" ] || die "broker $index is not running"
    if [ "$graceful" = 1 ]; then
        stop_nodes TERM "${timeout:-30}" "$index"
    else
        stop_nodes KILL 10 "$index"
    fi
    note "broker $index stopped"
}

start_broker() {
    local start="$SECONDS"
    load_cluster
    broker_index
    [ -z "$(node_pid "$index")" ] || die "broker $index is already running"
    [ -n "$(node_pid controller)" ] || die "the controller is not running (start the cluster with: $prog up --dir $dir)"
    timeout="${timeout:-120}"
    start_node "$index"
    (wait_ready $((start + timeout)) "$index") || {
        stop_nodes KILL 10 "$index"
        exit 1
    }
    note "broker $index serving again after $((SECONDS - start))s"
}

[ $# -gt 0 ] || {
    usage >&2
    exit 2
}
command="$1"
shift
case "$command" in
    -h | --help | help) usage; exit 0 ;;
    fetch | up | down | status | bootstrap | kill-broker | start-broker) ;;
    *) die "unknown command $command (commands: fetch, up, down, status, bootstrap, kill-broker, start-broker; see $prog --help)" ;;
esac
parse_options "$@"
case "$command" in
    kill-broker | start-broker) ;;
    *) [ -z "$index" ] || die "unexpected argument $index (see $prog --help)" ;;
esac
case "$command" in
    fetch) fetch ;;
    up) up ;;
    down) down ;;
    status) status ;;
    bootstrap) load_cluster; bootstrap_servers ;;
    kill-broker) kill_broker ;;
    start-broker) start_broker ;;
esac
