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
echo "== cargo test"
out="${CARGO_TARGET_DIR:-target}/test-output.txt"
mkdir -p "$(dirname "$out")"
cargo test --workspace --locked 2>&1 | tee "$out"
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
