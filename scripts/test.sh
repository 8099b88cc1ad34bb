#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this). Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "error: cargo not found; install Rust (https://rustup.rs) and rerun" >&2
        exit 1
    fi
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== setup: redis-server 7 and the compatibility suite's Python venv (installed if missing)"
COMPAT_SETUP_ONLY=1 bash scripts/compat-tests.sh
# Two scratch redis-servers for the Rust tests that compare the command table and the ACL module
# with Redis byte for byte (vs_redis.rs in crates/server/src/command_table and src/acl; they skip
# without them).
scratch="$(mktemp -d)"
redis_pids=()
stop_redis() {
    # Wait for the servers to exit before removing their directory: a redis-server still
    # shutting down writes its log there, and `rm -rf` then fails with "Directory not empty".
    for p in "${redis_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${redis_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$scratch" || echo "warning: could not remove $scratch" >&2
}
trap stop_redis EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for var in CMDTABLE_REDIS ACL_REDIS; do
    port="$(free_port)"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$scratch" \
        --logfile "$scratch/$var.log" &
    redis_pids+=("$!")
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    export "$var=127.0.0.1:$port"
done
echo "== cargo test"
out="${CARGO_TARGET_DIR:-target}/test-output.txt"
mkdir -p "$(dirname "$out")"
cargo test --workspace --locked 2>&1 | tee "$out"
echo "== fuzzing, short run (a few seconds per target; skipped without nightly + cargo-fuzz)"
# The corpus itself is replayed by `cargo test -p rialto-fuzzing` above, on stable.
bash scripts/fuzz.sh --short
echo "== compatibility suite (redis-py, redis-server differential, malformed input over TCP)"
# The debug binary `cargo test` just built (tests/serve.rs needs it); the script installs
# redis-server and a Python venv with redis-py and pytest if missing.
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
compat_out="$target_dir/compat-output.txt"
RIALTO_BIN="$target_dir/debug/rialto" bash scripts/compat-tests.sh -q -p no:cacheprovider 2>&1 | tee "$compat_out"
# One summary line in the form every runner understands: cargo's results plus pytest's.
{
    awk '/^test result:/ { p += $4; f += $6; i += $8 } END { print p, f, i }' "$out"
    # pytest's last line, e.g. "392 passed, 2 skipped in 19.9s".
    tail -n 1 "$compat_out" | awk '{
        p = f = s = 0
        for (k = 2; k <= NF; k++) {
            if ($k ~ /^passed/) p = $(k - 1)
            if ($k ~ /^failed/) f = $(k - 1)
            if ($k ~ /^skipped/) s = $(k - 1)
            if ($k ~ /^error/) f += $(k - 1)
        }
        print p, f, s
    }'
} | awk '{ p += $1; f += $2; i += $3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, i }'
