#!/usr/bin/env bash
# Redis 7.0.15's own Tcl test suite (tests/unit/*.tcl, run by its ./runtest in external mode,
# --host/--port) against a fresh redis-server 7.0.15 and a fresh `rialto serve`, side by side:
# which tests pass on each. For every unit, each side gets its own servers, started fresh
# (temporary directories; redis-server with --save '' --appendonly no, like upstream's external CI
# also with --enable-debug-command yes --enable-protected-configs yes) and stopped after it.
#
# The suite is Debian's source package of redis (`apt-get source redis`, the version of the
# installed redis-server: the tests of 7.0.15 with Debian's security patches, as that binary was
# built from), fetched once into a cache directory. That needs a deb-src entry: one is added
# (/etc/apt/sources.list.d/redis-tcl-tests-src.sources) only when apt has no redis source.
#
# How runtest is run (see tests/test_helper.tcl and tests/support/server.tcl of the suite):
#   ./runtest --host 127.0.0.1 --port P --single UNIT --durable --timeout T --clients 1 --baseport B
#   --host       external mode: tests tagged external:skip are left out ("ignored"), nothing is
#                spawned; every other tag (needs:debug, needs:repl, needs:config-maxmemory...)
#                runs unless denied with --tags, e.g. `-- --tags "-needs:debug -needs:repl"`.
#   --durable    an error that is not an assertion (an unknown command) fails its test instead of
#                ending the whole run ("[exception]"); errors outside a test still end a block.
#   --timeout T  seconds without progress before runtest reports [TIMEOUT] and stops; the hung
#                test is then marked "timeout" and the unit rerun (fresh servers) without it.
#   --baseport B the test server's own port is the first free one below B: chosen free, so that
#                two runs at once (or another suite) do not collide on the default 21079.
# Before every start_server block the harness sends SELECT 9, FLUSHALL and FUNCTION FLUSH, and
# CONFIG GET/SET for the block's overrides: a server that refuses one of them ends the unit
# ("aborted"; --lenient-harness ignores a FUNCTION FLUSH error). Before every test it opens a
# connection of its own and sends DEBUG LOG on it (errors ignored).
#
# Usage:
#   scripts/redis-tcl-tests.sh [options] [UNIT...] [-- RUNTEST-ARGS...]
#     UNIT                 a unit of the suite, e.g. unit/multi (or multi) or unit/type/list (default:
#                          unit/multi unit/scripting unit/functions unit/pubsub unit/tracking
#                          unit/type/stream unit/type/stream-cgroups)
#     --side S             both (default), redis or rialto: run one side only (no comparison)
#     --test-timeout S     runtest --timeout: seconds without progress = a hung test (default 60)
#     --unit-timeout S     wall-clock limit of one runtest run (default 900)
#     --retries N          reruns of a unit after hung tests, each without them (default 3)
#     --lenient-harness    run a copy of the harness whose FUNCTION FLUSH before each block
#                          ignores errors (for servers without FUNCTION); marked in the output
#     --run-external-skip  run what is tagged external:skip too (unit/acl, unit/auth and
#                          unit/info are tagged so as a whole), on both sides alike, with a
#                          copy of the harness: tags_acceptable no longer leaves those tags out,
#                          and a block whose overrides the server refuses with CONFIG SET
#                          (aclfile, user: set at start only) is reported as ignored
#                          ("Overrides refused: CONFIG SET <param>", the ones set before it
#                          undone) instead of ending the unit. Tests that spawn servers of their
#                          own (restart_server, src/redis-server) fail on both sides.
#     --results DIR        where logs and tables go (default: a new directory under
#                          ${CARGO_TARGET_DIR:-target}/redis-tcl-results, linked as latest)
#     --fetch-only         obtain (and verify) the suite, then exit
#     -- RUNTEST-ARGS      extra runtest arguments for every run, e.g. --tags -needs:debug,
#                          --only 'MULTI / EXEC basics', --singledb, --ignore-encoding
#
# Output: a table (unit, test, result on redis-server, result on Rialto) and a summary line per
# unit on stdout; results: ok, err, skip (--only/--skiptest), ignored (a tag external mode or
# --tags leaves out), timeout, "-" (never reached: the unit ended before it). The results
# directory holds each run's runtest output and server log, report.md (stdout), table.tsv,
# regressions.txt (the first lines of each failure on Rialto of a test that passes on
# redis-server) and block-errors.txt (errors outside any test, which end their block, and units
# that ended early).
#
# Exit status: 0 when every test that passes on redis-server passes on Rialto too, or is listed in
# tests/redis-tcl/expected-failures.txt (lines "UNIT<TAB>TEST NAME<TAB>reason"); 1 otherwise;
# 2 when the run itself failed (setup, or the redis-server side did not complete a unit).
#
# Environment:
#   RIALTO_BIN      the rialto binary (default ${CARGO_TARGET_DIR:-target}/release/rialto, built
#                   with `cargo build --release -p rialto` if that default is missing)
#   RIALTO_ARGS     extra `rialto serve` flags (split on spaces)
#   REDIS_SERVER    the redis-server binary (default redis-server, installed with apt if missing)
#   REDIS_ARGS      extra redis-server flags (split on spaces; later ones win)
#   REDIS_TCL_CACHE where the suite is kept (default ${CARGO_TARGET_DIR:-target}/redis-tests-7.0.15)
#   REDIS_TCL_EXPECTED  the expected-failures file (default tests/redis-tcl/expected-failures.txt)
#
# Needs root or sudo only to install packages (redis-server, tcl, dpkg-dev, python3) and to add
# the deb-src entry; progress goes to stderr.
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
# Paths given by the caller are relative to where it ran, not to the repository.
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
if [ -n "${RIALTO_BIN:-}" ]; then
    # A bare name is a file here, or else a command on PATH.
    if [[ $RIALTO_BIN == */* ]] || [ -e "$RIALTO_BIN" ]; then
        RIALTO_BIN=$(abspath "$RIALTO_BIN")
    else
        RIALTO_BIN=$(command -v "$RIALTO_BIN" || echo "$RIALTO_BIN")
    fi
fi
[ -n "${REDIS_TCL_CACHE:-}" ] && REDIS_TCL_CACHE=$(abspath "$REDIS_TCL_CACHE")
[ -n "${REDIS_TCL_EXPECTED:-}" ] && REDIS_TCL_EXPECTED=$(abspath "$REDIS_TCL_EXPECTED")
cd "$(dirname "$0")/.."
repo=$PWD

REDIS_VERSION=7.0.15
DEFAULT_UNITS=(unit/multi unit/scripting unit/functions unit/pubsub unit/tracking unit/type/stream unit/type/stream-cgroups)
APT_SRC_FILE=/etc/apt/sources.list.d/redis-tcl-tests-src.sources
EXPECTED_FILE=${REDIS_TCL_EXPECTED:-$repo/tests/redis-tcl/expected-failures.txt}

die() {
    echo "error: $*" >&2
    exit 2
}
log() { echo "$*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'; }

target_dir=$(abspath "${CARGO_TARGET_DIR:-target}")
cache=${REDIS_TCL_CACHE:-$target_dir/redis-tests-$REDIS_VERSION}
suite_dir=$cache/suite

side=both
test_timeout=60
unit_timeout=900
retries=3
lenient=false
run_external_skip=false
results=
fetch_only=false
units=()
runtest_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --side) [ $# -ge 2 ] || die "--side needs a value"; side=$2; shift 2 ;;
        --side=*) side=${1#*=}; shift ;;
        --test-timeout) [ $# -ge 2 ] || die "--test-timeout needs a value"; test_timeout=$2; shift 2 ;;
        --test-timeout=*) test_timeout=${1#*=}; shift ;;
        --unit-timeout) [ $# -ge 2 ] || die "--unit-timeout needs a value"; unit_timeout=$2; shift 2 ;;
        --unit-timeout=*) unit_timeout=${1#*=}; shift ;;
        --retries) [ $# -ge 2 ] || die "--retries needs a value"; retries=$2; shift 2 ;;
        --retries=*) retries=${1#*=}; shift ;;
        --lenient-harness) lenient=true; shift ;;
        --run-external-skip) run_external_skip=true; shift ;;
        --results) [ $# -ge 2 ] || die "--results needs a directory"; results=$(abspath "$2"); shift 2 ;;
        --results=*) results=$(abspath "${1#*=}"); shift ;;
        --fetch-only) fetch_only=true; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; runtest_args=("$@"); break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) units+=("$1"); shift ;;
    esac
done
case "$side" in both|redis|rialto) ;; *) die "--side must be both, redis or rialto, not '$side'" ;; esac
for v in test_timeout unit_timeout; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--${v/_/-} must be a positive integer, not '${!v}'"
done
[[ $retries =~ ^[0-9]+$ ]] || die "--retries must be a non-negative integer, not '$retries'"
[ ${#units[@]} -gt 0 ] || units=("${DEFAULT_UNITS[@]}")

# --- cleanup: our servers, our runtest, our temporary directory, whatever happens -------------
tmp=
server_pid=
runtest_pid=
policy_rc=
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
    local status=$?
    if [ -n "$runtest_pid" ]; then
        # timeout(1) leads its own process group: runtest's sh, its test server and test client.
        kill -TERM -- "-$runtest_pid" 2>/dev/null || true
        sleep 0.2
        kill -KILL -- "-$runtest_pid" 2>/dev/null || true
        wait "$runtest_pid" 2>/dev/null || true
    fi
    if [ -n "$server_pid" ]; then
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    [ -n "$policy_rc" ] && rm -f "$policy_rc"
    [ -n "$tmp" ] && rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- packages ---------------------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
else
    sudo=(false)
fi
apt_updated=false
apt_update() {
    $apt_updated && return 0
    log "== apt-get update"
    "${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed"
    apt_updated=true
}
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "missing $*, and no apt-get to install them"
    [ "${sudo[0]:-}" != false ] || die "missing $*, and no root or sudo to install them"
    apt_update
    log "== apt-get install $*"
    # Keep an installed redis-server package from starting a system-wide server on 6379.
    if [ ! -e /usr/sbin/policy-rc.d ] && [ "$(id -u)" -eq 0 ]; then
        policy_rc=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy_rc"
        chmod +x "$policy_rc"
    fi
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >&2 ||
        die "apt-get install $* failed"
    if [ -n "$policy_rc" ]; then rm -f "$policy_rc"; policy_rc=; fi
}

need=()
# runtest looks for tclsh8.5, tclsh8.6 or tclsh8.7 by those names.
command -v tclsh8.6 >/dev/null 2>&1 || command -v tclsh8.5 >/dev/null 2>&1 ||
    command -v tclsh8.7 >/dev/null 2>&1 || need+=(tcl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ! $fetch_only; then
    if [ "$side" != rialto ] && [ -z "${REDIS_SERVER:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
        need+=(redis-server)
    fi
    # redis-cli tells when a server is up.
    command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
fi
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
REDIS_SERVER=${REDIS_SERVER:-redis-server}

# --- the suite: Debian's source package of redis 7.0.15 -------------------------------------
# apt-cache showsrc's versions of the redis source package that are REDIS_VERSION, newest first.
src_versions() {
    apt-cache showsrc redis 2>/dev/null | sed -n 's/^Version: //p' |
        grep -E "^([0-9]+:)?${REDIS_VERSION//./\\.}-" | sort -ruV || true
}

fetch_suite() {
    command -v apt-get >/dev/null 2>&1 || die "no apt-get: cannot fetch Debian's redis source package"
    command -v dpkg-source >/dev/null 2>&1 || apt_install dpkg-dev
    local versions
    versions=$(src_versions)
    if [ -z "$versions" ]; then
        if [ ! -e "$APT_SRC_FILE" ] &&
            ! grep -rqsE '^[[:space:]]*(deb-src[[:space:]]|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
            [ "${sudo[0]:-}" != false ] || die "apt has no deb-src entry and there is no root or sudo to add one"
            local codename
            # shellcheck disable=SC1091
            codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
            [ -n "$codename" ] || die "cannot tell the Debian release (VERSION_CODENAME in /etc/os-release)"
            log "== adding deb-src entries for $codename to $APT_SRC_FILE"
            "${sudo[@]}" tee "$APT_SRC_FILE" >/dev/null <<EOF
# Added by rialto's scripts/redis-tcl-tests.sh: Debian source packages (apt-get source redis),
# for Redis's own test suite.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        fi
        apt_updated=false
        apt_update
        versions=$(src_versions)
    fi
    [ -n "$versions" ] || die "apt has no source package of redis $REDIS_VERSION (apt-cache showsrc redis)"
    # The version the installed redis-server was built from, when apt has it: same patches.
    local installed version
    installed=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null || true)
    if [ -n "$installed" ] && grep -qxF "$installed" <<<"$versions"; then
        version=$installed
    else
        version=$(head -n 1 <<<"$versions")
        log "note: installed redis-server is '${installed:-none}'; using source version $version"
    fi
    mkdir -p "$cache"
    local work
    work=$(mktemp -d "$cache/fetch.XXXXXX")
    log "== apt-get source redis=$version (into $work)"
    if ! (cd "$work" && apt-get source -q "redis=$version" >apt-get-source.log 2>&1); then
        tail -n 20 "$work/apt-get-source.log" >&2
        rm -rf "$work"
        die "apt-get source redis=$version failed"
    fi
    local src
    src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'redis-*' | head -n 1)
    if [ -z "$src" ] || [ ! -f "$src/tests/test_helper.tcl" ] || [ ! -x "$src/runtest" ]; then
        rm -rf "$work"
        die "the redis source package has no tests/test_helper.tcl or runtest"
    fi
    local got
    got=$(sed -n 's/^#define REDIS_VERSION "\(.*\)"$/\1/p' "$src/src/version.h")
    if [ "$got" != "$REDIS_VERSION" ]; then
        rm -rf "$work"
        die "the source package is Redis '$got', not $REDIS_VERSION (src/version.h)"
    fi
    local new=$cache/suite.new
    rm -rf "$new"
    mkdir -p "$new/src"
    cp -a "$src/runtest" "$src/tests" "$new/"
    cp -a "$src/src/version.h" "$new/src/"
    cp -a "$src/debian/changelog" "$new/debian-changelog"
    cp -a "$src/debian/patches" "$new/debian-patches"
    printf 'redis %s\ndebian-source redis=%s\nfetched %s\n' "$REDIS_VERSION" "$version" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$new/SOURCE"
    rm -rf "$suite_dir" "$work"
    mv "$new" "$suite_dir"
}

if [ ! -f "$suite_dir/SOURCE" ]; then fetch_suite; fi
# Verified on every run, not only after the fetch.
[ "$(sed -n 's/^#define REDIS_VERSION "\(.*\)"$/\1/p' "$suite_dir/src/version.h" 2>/dev/null)" = "$REDIS_VERSION" ] ||
    die "$suite_dir is not Redis $REDIS_VERSION's suite (remove it to fetch it again)"
log "== suite: $(sed -n 's/^debian-source //p' "$suite_dir/SOURCE") in $suite_dir"
if $fetch_only; then exit 0; fi

for i in "${!units[@]}"; do
    u=${units[$i]%.tcl}
    # "multi" for unit/multi.
    [ ! -f "$suite_dir/tests/$u.tcl" ] && [ -f "$suite_dir/tests/unit/$u.tcl" ] && u=unit/$u
    [ -f "$suite_dir/tests/$u.tcl" ] || die "no unit $u in the suite (tests/$u.tcl; see ./runtest --list-tests there)"
    units[i]=$u
done

# --- the servers ------------------------------------------------------------------------------
if [ "$side" != rialto ]; then
    redis_version=$("$REDIS_SERVER" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
    [ "$redis_version" = "$REDIS_VERSION" ] ||
        log "warning: $REDIS_SERVER is '$redis_version', the suite is $REDIS_VERSION's: differences may be the version's"
fi
if [ "$side" != redis ]; then
    if [ -z "${RIALTO_BIN:-}" ]; then
        RIALTO_BIN=$target_dir/release/rialto
        if [ ! -x "$RIALTO_BIN" ]; then
            if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
                export PATH="$HOME/.cargo/bin:$PATH"
            fi
            command -v cargo >/dev/null 2>&1 || die "$RIALTO_BIN missing and cargo not found to build it"
            log "== building rialto (cargo build --release -p rialto)"
            cargo build --release -p rialto >&2
        fi
    fi
    [ -x "$RIALTO_BIN" ] || die "RIALTO_BIN=$RIALTO_BIN is not an executable"
fi
read -r -a rialto_args <<<"${RIALTO_ARGS:-}"
read -r -a redis_args <<<"${REDIS_ARGS:-}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/redis-tcl-tests.XXXXXX")
# runtest runs from a copy: it writes under tests/tmp, and the cache stays pristine.
cp -a "$suite_dir" "$tmp/suite"
if $lenient; then
    f=$tmp/suite/tests/support/server.tcl
    [ "$(grep -cx '    r function flush' "$f")" = 1 ] || die "--lenient-harness: 'r function flush' not found once in $f"
    sed -i 's/^    r function flush$/    catch {r function flush}/' "$f"
fi
if $run_external_skip; then
    python3 - "$tmp/suite/tests/support/server.tcl" <<'PYTHON' || die "--run-external-skip: the harness is not the one expected"
import sys

path = sys.argv[1]
text = open(path, encoding="utf-8").read()


def once(old, new):
    global text
    if text.count(old) != 1:
        sys.exit("--run-external-skip: not found once in %s: %r" % (path, old.splitlines()[0]))
    text = text.replace(old, new)


once('    if {$::external && [lsearch $tags "external:skip"] >= 0} {',
     '    if {0 && $::external && [lsearch $tags "external:skip"] >= 0} {')
once('''        dict set saved_config $param [lindex [r config get $param] 1]
        r config set $param $val
''', '''        set previous [lindex [r config get $param] 1]
        if {[catch {r config set $param $val}]} {
            dict for {p v} $saved_config { catch {r config set $p $v} }
            incr ::num_aborted
            send_data_packet $::test_server_fd ignore "Overrides refused: CONFIG SET $param"
            set srv [lpop ::servers]
            [dict get $srv "client"] close
            return
        }
        dict set saved_config $param $previous
''')
open(path, "w", encoding="utf-8").write(text)
PYTHON
fi
# For units that run the tools by the suite's paths (src/redis-cli, src/redis-benchmark).
for t in redis-cli redis-benchmark; do
    p=$(command -v "$t" 2>/dev/null) && ln -sf "$p" "$tmp/suite/src/$t"
done

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# A --baseport for runtest: its test server listens on the first free port of BASE-32..BASE-1
# whose port+10000 is free too (default 21079, which two runs at once would both take).
free_baseport() {
    python3 -c '
import random, socket
for _ in range(200):
    p = random.randrange(30000, 50000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("0.0.0.0", q)); s.close()
    except OSError:
        continue
    print(p + 32); break
else:
    raise SystemExit("no free port pair found")'
}

# start_server redis|rialto DIR LOG: starts it on a free port, sets server_pid and port.
start_server() {
    local kind=$1 dir=$2 logf=$3 attempt i
    for attempt in 1 2 3; do
        port=$(free_port)
        if [ "$kind" = redis ]; then
            "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
                --daemonize no --logfile '' --enable-debug-command yes --enable-protected-configs yes \
                "${redis_args[@]}" >"$logf" 2>&1 &
        else
            "$RIALTO_BIN" serve --port "$port" --dir "$dir/data" "${rialto_args[@]}" >"$logf" 2>&1 &
        fi
        server_pid=$!
        for ((i = 0; i < 300; i++)); do
            kill -0 "$server_pid" 2>/dev/null || break
            if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
                # The port was free a moment ago: make sure the answer was our server's.
                sleep 0.1
                kill -0 "$server_pid" 2>/dev/null && return 0
                break
            fi
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=
        log "$kind did not start on port $port (attempt $attempt):"
        tail -n 5 "$logf" >&2 || true
    done
    die "$kind would not start (log: $logf)"
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

# --- the parser (runtest output) and the report -------------------------------------------------
cat >"$tmp/report.py" <<'PYTHON'
import os, re, sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
STATUS = re.compile(r"^\[(ok|err|skip|ignore|exception|TIMEOUT)\]: ?(.*)$")
# The reasons tags_acceptable gives (tests/support/server.tcl).
REASON = r"(Not supported on external server|Not supported on singledb|Not supported in cluster mode|" \
         r"Not supported in tls mode|large memory flag not provided|Tag: none of the tags allowed|Tag: \S+ denied|" \
         r"Overrides refused: CONFIG SET \S+)"
IGNORED_TEST = re.compile(r"^(.*): " + REASON + r"$")
IGNORED_BLOCK = re.compile(r"^" + REASON + r"$")
IN_PROGRESS = re.compile(r"^\S+ => \(IN PROGRESS\) (.*)$")


def parse(path):
    """One runtest output: tests in order as [key, name, result, detail], and what ended it."""
    lines = [ANSI.sub("", l) for l in open(path, encoding="utf-8", errors="replace").read().split("\n")]
    out = {"tests": [], "block_ignored": 0, "block_errors": [], "aborted": None, "hung": None,
           "hung_key": None, "timeout": False}
    seen = {}

    def add(name, result, detail=""):
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else "%s (occurrence %d)" % (name, seen[name])
        out["tests"].append([key, name, result, detail])

    def following(i, n=12):
        got = []
        for l in lines[i + 1:]:
            if STATUS.match(l) or l.startswith("Testing ") or l.strip() == "The End" or len(got) >= n:
                break
            if l.strip():
                got.append(l.rstrip())
        return got

    for i, line in enumerate(lines):
        m = STATUS.match(line)
        if not m:
            continue
        status, data = m.groups()
        if status == "ok":
            add(re.sub(r" \(\d+ ms\)$", "", data), "ok")
        elif status == "err":
            t = re.match(r"^(.*) in tests/\S+\.tcl$", data)
            if t:
                detail = following(i)
                # runtest --durable cuts 10 characters off an error that is not an assertion, and
                # prints it whole on the next line.
                if len(detail) > 1 and detail[1].endswith(detail[0]):
                    detail = detail[1:]
                add(t.group(1), "err", "\n".join(detail))
            else:
                detail = [data] + following(i, 4)
                if len(detail) > 1 and detail[1].endswith(detail[0]):
                    detail = detail[1:]
                out["block_errors"].append("\n".join(detail))
        elif status == "skip":
            add(data, "skip")
        elif status == "ignore":
            t = IGNORED_TEST.match(data)
            if t:
                add(t.group(1), "ignored", t.group(2))
            elif IGNORED_BLOCK.match(data):
                out["block_ignored"] += 1
            else:
                add(data, "ignored")
        elif status == "exception":
            out["aborted"] = "\n".join([data] + following(i, 6))
        elif status == "TIMEOUT":
            out["timeout"] = True
            for l in lines[i + 1:i + 20]:
                t = IN_PROGRESS.match(l)
                if t:
                    name = t.group(1)
                    out["hung"] = name
                    n = seen.get(name, 0) + 1
                    out["hung_key"] = name if n == 1 else "%s (occurrence %d)" % (name, n)
                    break
    return out


def cmd_hung(path):
    r = parse(path)
    if r["timeout"] and r["hung"]:
        print(r["hung"])


def merge(runs):
    """Attempts of one unit on one side (manifest rows), merged: later attempts win."""
    order, res, hung, info = [], {}, {}, {"block_ignored": 0, "block_errors": [], "ended": "completed"}
    for run in runs:
        p = parse(run["log"])
        for key, name, result, detail in p["tests"]:
            if key not in res:
                order.append(key)
            res[key] = (name, result, detail)
        info["block_ignored"] = p["block_ignored"]
        info["block_errors"] = p["block_errors"]
        if p["timeout"] and p["hung"]:
            hung[p["hung_key"]] = p["hung"]
            if p["hung_key"] not in res:
                # Never reported: it goes after the last test that attempt reported.
                last = p["tests"][-1][0] if p["tests"] else None
                order.insert(order.index(last) + 1 if last in order else len(order), p["hung_key"])
                res[p["hung_key"]] = (p["hung"], "timeout", "")
        rc = run["rc"]
        if p["aborted"]:
            info["ended"] = "aborted: " + p["aborted"].split("\n")[0][:200]
            if "unknown command 'function'" in p["aborted"] and "'flush'" in p["aborted"]:
                info["ended"] += " (the harness sends FUNCTION FLUSH before each block; see --lenient-harness)"
        elif rc == 124 or rc == 137:
            info["ended"] = "unit timed out (--unit-timeout)"
        elif p["timeout"]:
            info["ended"] = "hung in %s" % (repr(p["hung"]) if p["hung"] else "code outside any test")
        elif rc not in (0, 1):
            info["ended"] = "runtest exited with %d" % rc
        else:
            info["ended"] = "completed"
    for key, name in hung.items():
        # Later attempts skipped it (--skiptest), with every other test of the same name.
        res[key] = (name, "timeout", "no progress for --test-timeout seconds: hung")
    for key in order:
        name, result, detail = res[key]
        if result == "skip" and name in hung.values():
            res[key] = (name, "skip", "skipped: a test of the same name hung")
    return order, res, info


def counts(res):
    c = {"ok": 0, "err": 0, "skip": 0, "ignored": 0, "timeout": 0}
    for name, result, detail in res.values():
        c[result] += 1
    return c


def cmd_report(results, expected_file, sides, lenient, external_skip):
    manifest = []
    for line in open(os.path.join(results, "manifest.tsv")):
        unit, side, attempt, log, rc = line.rstrip("\n").split("\t")
        manifest.append({"unit": unit, "side": side, "attempt": int(attempt),
                         "log": os.path.join(results, log), "rc": int(rc)})
    expected = {}
    if os.path.exists(expected_file):
        for n, line in enumerate(open(expected_file, encoding="utf-8"), 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 2:
                print("warning: %s:%d: not UNIT<TAB>TEST<TAB>reason: %r" % (expected_file, n, line), file=sys.stderr)
                continue
            expected[(parts[0], parts[1])] = parts[2] if len(parts) > 2 else ""
    both = sides == "both"
    units = []
    for m in manifest:
        if m["unit"] not in units:
            units.append(m["unit"])

    table = []          # unit, key, redis, rialto, note
    summary = []
    regressions = []    # unit, key, detail
    stale = []
    baseline_broken = []
    ended = []          # unit, side, info
    for unit in units:
        per = {}
        for side in ("redis", "rialto"):
            runs = sorted((m for m in manifest if m["unit"] == unit and m["side"] == side), key=lambda m: m["attempt"])
            if runs:
                per[side] = merge(runs)
        keys = []
        for side in ("redis", "rialto"):
            if side in per:
                keys += [k for k in per[side][0] if k not in keys]
        hidden = 0
        for key in keys:
            r = {s: (per[s][1][key][1] if s in per and key in per[s][1] else "-") for s in ("redis", "rialto")}
            if r["redis"] in ("skip", "-") and r["rialto"] in ("skip", "-"):
                hidden += 1
                continue
            note = ""
            if both and r["redis"] == "ok" and r["rialto"] != "ok":
                if (unit, key) in expected:
                    note = "expected: " + expected[(unit, key)]
                else:
                    note = "REGRESSION"
                    detail = per["rialto"][1][key][2] if key in per["rialto"][1] else "never reached"
                    regressions.append((unit, key, detail))
            elif both and (unit, key) in expected:
                note = "expected-failure entry no longer needed"
                stale.append((unit, key))
            table.append((unit, key, r["redis"] if "redis" in per else "", r["rialto"] if "rialto" in per else "", note))
        parts = []
        for side, label in (("redis", "redis-server"), ("rialto", "rialto")):
            if side not in per:
                continue
            order, res, info = per[side]
            ended.append((unit, label, info))
            c = counts(res)
            s = "%s %d passed, %d failed, %d timeout, %d skipped/ignored" % (
                label, c["ok"], c["err"], c["timeout"], c["skip"] + c["ignored"])
            if info["block_ignored"]:
                s += " (+%d ignored blocks)" % info["block_ignored"]
            if info["block_errors"]:
                s += ", %d block errors" % len(info["block_errors"])
            if info["ended"] != "completed":
                s += " [%s]" % info["ended"]
            parts.append(s)
            if side == "redis" and (info["ended"].startswith("aborted") or info["ended"].startswith("unit timed out")
                                    or c["ok"] == 0):
                baseline_broken.append(unit)
        if both:
            n_reg = sum(1 for u, k, d in regressions if u == unit)
            n_exp = sum(1 for row in table if row[0] == unit and row[4].startswith("expected:"))
            parts.append("failing on rialto but passing on redis-server: %d (+%d expected)" % (n_reg, n_exp))
        if hidden:
            parts.append("%d skipped on both sides not shown" % hidden)
        summary.append("%s: %s" % (unit, "; ".join(parts)))

    if both:
        listed = {(row[0], row[1]) for row in table}
        unknown = sorted(k for k in expected if k[0] in units and k not in listed)
        for unit, key in unknown:
            print("warning: expected-failures entry for a test this run does not have: %s\t%s" % (unit, key),
                  file=sys.stderr)
    with open(os.path.join(results, "table.tsv"), "w") as f:
        f.write("unit\ttest\tredis-server\trialto\tnote\n")
        for row in table:
            f.write("\t".join(row) + "\n")
    with open(os.path.join(results, "regressions.txt"), "w") as f:
        for unit, key, detail in regressions:
            f.write("== %s: %s\n%s\n\n" % (unit, key, detail))
    with open(os.path.join(results, "block-errors.txt"), "w") as f:
        for unit, side, info in ended:
            for e in info["block_errors"]:
                f.write("== %s on %s: an error outside any test ended its block\n%s\n\n" % (unit, side, e))
            if info["ended"] != "completed":
                f.write("== %s on %s: %s\n\n" % (unit, side, info["ended"]))

    esc = lambda s: s.replace("|", "\\|")
    if lenient:
        print("(--lenient-harness: FUNCTION FLUSH errors before each block were ignored)")
    if external_skip:
        print("(--run-external-skip: blocks and tests tagged external:skip were run; blocks whose overrides "
              "a server refused are ignored)")
    print("| unit | test | redis-server | rialto | note |")
    print("|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(esc(x) for x in row) + " |")
    print()
    for line in summary:
        print(line)
    if stale:
        print("expected-failures.txt: %d entries whose test now passes on rialto (or no longer on redis-server)" % len(stale))
    print("results: %s" % results)
    if baseline_broken:
        print("error: the redis-server side did not complete %s: the comparison is not valid" % " ".join(baseline_broken),
              file=sys.stderr)
        return 2
    if regressions:
        print("%d tests pass on redis-server but not on rialto (not in %s); first lines of each failure: %s"
              % (len(regressions), expected_file, os.path.join(results, "regressions.txt")), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "hung":
        cmd_hung(sys.argv[2])
    else:
        sys.exit(cmd_report(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "true", sys.argv[6] == "true"))
PYTHON

# --- the runs -------------------------------------------------------------------------------
if [ -z "$results" ]; then
    mkdir -p "$target_dir/redis-tcl-results"
    results=$(mktemp -d "$target_dir/redis-tcl-results/$(date +%Y%m%d-%H%M%S).XXXX")
    ln -sfn "$(basename "$results")" "$target_dir/redis-tcl-results/latest"
fi
mkdir -p "$results"
: >"$results/manifest.tsv"
{
    echo "suite: $(tr '\n' ' ' <"$suite_dir/SOURCE")"
    echo "units: ${units[*]}"
    echo "runtest extra args: ${runtest_args[*]:-}"
    echo "lenient harness: $lenient"
    echo "external:skip run: $run_external_skip"
    [ "$side" != rialto ] && echo "redis-server: $("$REDIS_SERVER" --version) args: ${redis_args[*]:-}"
    [ "$side" != redis ] && echo "rialto: $RIALTO_BIN args: ${rialto_args[*]:-}"
} >"$results/run-info.txt"

sides=(redis rialto)
[ "$side" = both ] || sides=("$side")
log "== units: ${units[*]}; sides: ${sides[*]}; results in $results"
for unit in "${units[@]}"; do
    uname=${unit//\//_}
    for kind in "${sides[@]}"; do
        skips=()
        for ((attempt = 1; attempt <= retries + 1; attempt++)); do
            base=$uname.$kind.$attempt
            dir=$(mktemp -d "$tmp/$base.XXXXXX")
            start_server "$kind" "$dir" "$results/$base.server.log"
            started=$(date +%s)
            rc=0
            baseport=$(free_baseport)
            (cd "$tmp/suite" && TERM=dumb exec timeout -k 10 "$unit_timeout" ./runtest \
                --host 127.0.0.1 --port "$port" --single "$unit" --durable --timeout "$test_timeout" \
                --clients 1 --baseport "$baseport" "${skips[@]}" "${runtest_args[@]}") \
                >"$results/$base.runtest.log" 2>&1 &
            runtest_pid=$!
            wait "$runtest_pid" || rc=$?
            runtest_pid=
            stop_server
            rm -rf "$dir"
            printf '%s\t%s\t%d\t%s\t%d\n' "$unit" "$kind" "$attempt" "$base.runtest.log" "$rc" >>"$results/manifest.tsv"
            res=$(sed 's/\x1b\[[0-9;]*m//g' "$results/$base.runtest.log" | grep -oE '^\[(ok|err|skip|ignore|exception|TIMEOUT)\]' |
                sort | uniq -c | awk '{ printf "%s%s %s", sep, $2, $1; sep = ", " }' | tr -d '[]' || true)
            log "$(printf '%-16s %-7s attempt %d: %4ds, exit %d, %s' "$unit" "$kind" "$attempt" "$(($(date +%s) - started))" "$rc" "${res:-no results}")"
            hung=$(python3 "$tmp/report.py" hung "$results/$base.runtest.log")
            [ -n "$hung" ] || break
            log "$(printf '%-16s %-7s hung in "%s": rerunning without it' "$unit" "$kind" "$hung")"
            skips+=(--skiptest "$hung")
        done
    done
done

set +e
python3 "$tmp/report.py" report "$results" "$EXPECTED_FILE" "$side" "$lenient" "$run_external_skip" | tee "$results/report.md"
status=${PIPESTATUS[0]}
set -e
exit "$status"
