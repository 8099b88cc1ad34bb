#!/usr/bin/env bash
# Redis-compatibility suite (tests/compat): redis-py, malformed-input and differential tests, each
# run against a fresh redis-server and a fresh `rialto serve`, and the dashboard in a headless
# browser. Installs what it needs: redis-server/redis-cli 7, chromium and chromium-driver (Debian
# packages; without the browser the dashboard test skips) and a venv with pinned redis-py, pytest
# and selenium.
#
#   bash scripts/compat-tests.sh                      # everything (builds rialto if missing)
#   bash scripts/compat-tests.sh -k differential -x   # extra arguments go to pytest
#   bash scripts/compat-tests.sh test_dashboard.py    # one file of tests/compat
#   COMPAT_TARGET=redis bash scripts/compat-tests.sh  # the "rialto" side is another redis-server
#
# Environment: RIALTO_BIN (default ${CARGO_TARGET_DIR:-target}/release/rialto, built with
# `cargo build --release -p rialto` if missing), RIALTO_ARGS (extra `rialto serve` flags),
# REDIS_SERVER, COMPAT_TARGET (rialto|redis), COMPAT_DIFF_SEEDS, COMPAT_DIFF_COMMANDS,
# COMPAT_KEEP_TMP=1 (keep server dirs and logs), COMPAT_BROWSER=0 (do not install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

REDIS_PY_VERSION=5.3.1
PYTEST_VERSION=8.4.2
SELENIUM_VERSION=4.50.0

die() {
    echo "error: $*" >&2
    exit 1
}

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac

tmp=""
pytest_pid=""
policy_rc=""
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
    local status=$?
    if [ -n "$pytest_pid" ] && kill -0 "$pytest_pid" 2>/dev/null; then
        # conftest turns SIGTERM into an orderly stop that kills every server it started (they
        # also die with pytest, through PR_SET_PDEATHSIG).
        kill -TERM "$pytest_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pytest_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pytest_pid" 2>/dev/null || true
        wait "$pytest_pid" 2>/dev/null || true
    fi
    [ -n "$policy_rc" ] && rm -f "$policy_rc"
    [ -n "$tmp" ] && rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- redis-server and redis-cli 7 ------------------------------------------------------------

redis_major() {
    command -v "${REDIS_SERVER:-redis-server}" >/dev/null 2>&1 || return 1
    command -v redis-cli >/dev/null 2>&1 || return 1
    "${REDIS_SERVER:-redis-server}" --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p'
}

major="$(redis_major || true)"
if [ -z "$major" ] || [ "$major" -lt 7 ]; then
    echo "== installing redis-server and redis-tools (Debian packages)"
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        die "redis-server/redis-cli 7 not found and cannot install them (needs root and apt-get): install Redis 7 or set REDIS_SERVER"
    fi
    # Keep the package's init script from starting a system-wide redis-server on 6379.
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy_rc=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy_rc"
        chmod +x "$policy_rc"
    fi
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq redis-server redis-tools; } >/dev/null 2>&1 ||
        die "apt-get install redis-server redis-tools failed; install Redis 7 by hand or set REDIS_SERVER"
    [ -n "$policy_rc" ] && rm -f "$policy_rc" && policy_rc=""
    major="$(redis_major || true)"
    if [ -z "$major" ] || [ "$major" -lt 7 ]; then
        die "the installed redis-server is not version 7 or later ($("${REDIS_SERVER:-redis-server}" --version 2>&1 | head -1)); install Redis 7 or set REDIS_SERVER"
    fi
fi
echo "== $("${REDIS_SERVER:-redis-server}" --version | cut -d' ' -f1-3)"

# --- chromium and chromedriver, for the dashboard test ------------------------------------------

# Best effort: without them test_dashboard.py skips and says why.
if [ "${COMPAT_BROWSER:-1}" != 0 ] && ! { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "== installing chromium and chromium-driver (Debian packages)"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null 2>&1 ||
            echo "warning: apt-get install chromium chromium-driver failed; the dashboard test will skip" >&2
    else
        echo "warning: chromium/chromedriver missing and cannot install them (needs root and apt-get); the dashboard test will skip" >&2
    fi
fi

# --- Python venv with pinned packages --------------------------------------------------------

python=""
for p in python3 python; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
        python="$p"
        break
    fi
done
[ -n "$python" ] || die "python 3.9 or later not found (apt-get install -y python3 python3-venv)"

venv="$target_dir/compat-venv"
pins=("redis==$REDIS_PY_VERSION" "pytest==$PYTEST_VERSION" "selenium==$SELENIUM_VERSION")
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.pins" 2>/dev/null)" != "${pins[*]}" ]; then
    echo "== creating $venv (${pins[*]})"
    rm -rf "$venv"
    mkdir -p "$target_dir"
    if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            rm -rf "$venv"
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; } >/dev/null 2>&1 ||
                die "cannot create a venv and apt-get install python3-venv failed"
            "$python" -m venv "$venv" || die "cannot create a venv at $venv"
        else
            die "cannot create a venv at $venv ($python -m venv failed; install python3-venv)"
        fi
    fi
    "$venv/bin/python" -m pip install --disable-pip-version-check -q "${pins[@]}" ||
        die "pip install ${pins[*]} failed"
    echo "${pins[*]}" >"$venv/.pins"
fi

# COMPAT_SETUP_ONLY=1: install what the suite needs, run nothing (scripts/test.sh uses it to
# have redis-server before the Rust tests that compare against it).
if [ -n "${COMPAT_SETUP_ONLY:-}" ]; then
    exit 0
fi

# --- the server under test -------------------------------------------------------------------

export COMPAT_TARGET="${COMPAT_TARGET:-rialto}"
if [ "$COMPAT_TARGET" = rialto ]; then
    export RIALTO_BIN="${RIALTO_BIN:-$target_dir/release/rialto}"
    if [ ! -x "$RIALTO_BIN" ]; then
        if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
            export PATH="$HOME/.cargo/bin:$PATH"
        fi
        command -v cargo >/dev/null 2>&1 || die "$RIALTO_BIN missing and cargo not found to build it"
        echo "== building rialto (cargo build --release -p rialto)"
        cargo build --release -p rialto
        [ -x "$RIALTO_BIN" ] || die "$RIALTO_BIN still missing after the build (set RIALTO_BIN?)"
    fi
    echo "== server under test: $RIALTO_BIN"
elif [ "$COMPAT_TARGET" = redis ]; then
    echo "== server under test: redis-server (COMPAT_TARGET=redis)"
else
    die "COMPAT_TARGET must be rialto or redis, not '$COMPAT_TARGET'"
fi

# --- run -------------------------------------------------------------------------------------

tmp="$(mktemp -d "${TMPDIR:-/tmp}/rialto-compat.XXXXXX")"
export COMPAT_TMPDIR="$tmp"
export PYTHONDONTWRITEBYTECODE=1
# A bare file name of tests/compat (test_x.py, test_x.py::name) runs that file alone.
args=()
named=""
for a in "$@"; do
    case "$a" in
        test_*.py | test_*.py::*)
            if [ ! -e "${a%%::*}" ] && [ -e "tests/compat/${a%%::*}" ]; then
                a="tests/compat/$a"
            fi
            ;;
    esac
    case "$a" in tests/compat/?*) named=1 ;; esac
    args+=("$a")
done
[ -n "$named" ] || args=(tests/compat "${args[@]}")
status=0
"$venv/bin/python" -m pytest "${args[@]}" &
pytest_pid=$!
wait "$pytest_pid" || status=$?
pytest_pid=""
exit "$status"
