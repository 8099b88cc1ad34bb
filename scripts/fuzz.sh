#!/usr/bin/env bash
# Coverage-guided fuzzing of Rialto with cargo-fuzz (libFuzzer), on the nightly toolchain.
#
# The targets' bodies live in crates/fuzzing (see its lib.rs for what each one checks); the
# binaries in fuzz/fuzz_targets are one-liners around them. The committed corpus
# (fuzz/corpus/<target>) and crash regressions (fuzz/regressions/<target>) are also replayed
# by the stable `cargo test -p rialto-fuzzing`.
#
# Usage: scripts/fuzz.sh [options] [target ...]
#   targets             resp_decode wal_reader sstable manifest engine_ops (default: all)
#   --runs N            executions per target (default 10000000)
#   --time S            run each target for S seconds instead of a number of executions
#   --short             a few seconds per target (5, or --time S), for the test suite; prints
#                       one line and exits 0 when nightly or cargo-fuzz is missing and cannot
#                       be installed
#   --jobs N            N fuzzing processes per target at once (default 1), each with its own
#                       seed and 1/N of the executions (or the whole --time); the table sums
#                       them. They share the work corpus, so one's finds reach the others
#                       when they restart. Use it on otherwise idle cores only.
#   --sanitizer S       none (default: about twice the executions per second) or address
#                       (AddressSanitizer: also catches memory errors in unsafe code, such as
#                       the memtable's skiplist, and in the C zstd library)
#   --cmin              instead of fuzzing: merge the inputs found by earlier runs into
#                       fuzz/corpus/<target> and minimise it (cargo fuzz cmin)
#
# Targets run one after another (one core each). New inputs found while fuzzing go to
# fuzz/target/work-corpus/<target>, not to the committed corpus: run --cmin to fold them in.
# At the end a table `target | executions | exec/s | crashes` is printed; the exit status is
# 1 if any target crashed. A crashing input is saved in fuzz/artifacts/<target>/: reproduce
# it with `cargo +nightly fuzz run <target> <file>`, minimise it with
# `cargo +nightly fuzz tmin <target> <file>`, fix the bug, and keep the input as
# fuzz/regressions/<target>/<short-name>.
#
# Examples:
#   scripts/fuzz.sh                         # 10^7 executions of every target
#   scripts/fuzz.sh --time 1200 engine_ops  # 20 minutes of one target
#   scripts/fuzz.sh --short                 # smoke run, a few seconds each
set -euo pipefail

ALL_TARGETS=(resp_decode wal_reader sstable manifest engine_ops)
runs=10000000
jobs=1
seconds=""
short=false
sanitizer=none
cmin=false
targets=()

while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --time) seconds="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --short) short=true; shift ;;
        --sanitizer) sanitizer="$2"; shift 2 ;;
        --cmin) cmin=true; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *)
            if [[ " ${ALL_TARGETS[*]} " != *" $1 "* ]]; then
                echo "fuzz.sh: unknown target $1 (targets: ${ALL_TARGETS[*]})" >&2
                exit 2
            fi
            targets+=("$1"); shift ;;
    esac
done
[[ ${#targets[@]} -eq 0 ]] && targets=("${ALL_TARGETS[@]}")
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz.sh: --jobs takes a positive number, not '$jobs'" >&2
    exit 2
fi
if $short; then
    seconds="${seconds:-5}"
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"
# cargo-fuzz builds into fuzz/target; a target directory chosen for the main workspace
# would mix nightly, sanitizer-instrumented artifacts into it.
unset CARGO_TARGET_DIR

# Nightly and cargo-fuzz: use them if present, else try to install them. A short run skips
# when that fails (the test suite must pass on machines without them); a long run fails.
unavailable() {
    if $short; then
        echo "fuzz.sh --short: skipped: $1"
        exit 0
    fi
    echo "fuzz.sh: $1" >&2
    exit 1
}
# A short run installs quietly, so that a skip is one line.
install_log=/dev/stderr
if $short; then
    install_log=/dev/null
fi
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    $short || echo "fuzz.sh: installing the nightly toolchain" >&2
    timeout 600 rustup toolchain install nightly --profile minimal >"$install_log" 2>&1 \
        || unavailable "the nightly toolchain is not installed and could not be installed"
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    $short || echo "fuzz.sh: installing cargo-fuzz" >&2
    timeout 900 cargo install cargo-fuzz --locked >"$install_log" 2>&1 \
        || unavailable "cargo-fuzz is not installed and could not be installed"
fi

echo "fuzz.sh: building the targets (sanitizer: $sanitizer)" >&2
cargo +nightly fuzz build -s "$sanitizer" >&2

if $cmin; then
    for t in "${targets[@]}"; do
        work="target/work-corpus/$t"
        if [[ -d "$work" ]]; then
            echo "fuzz.sh: merging $work into corpus/$t" >&2
            cargo +nightly fuzz run -s "$sanitizer" "$t" "corpus/$t" "$work" -- -merge=1 >&2
        fi
        echo "fuzz.sh: minimising corpus/$t" >&2
        cargo +nightly fuzz cmin -s "$sanitizer" "$t" "corpus/$t" >&2
    done
    exit 0
fi

if [[ -n "$seconds" ]]; then
    limit=(-runs=-1 "-max_total_time=$seconds")
else
    limit=("-runs=$(( (runs + jobs - 1) / jobs ))")
fi

logs="target/fuzz-logs"
mkdir -p "$logs"
rows=()
failed=false
for t in "${targets[@]}"; do
    mkdir -p "target/work-corpus/$t" "artifacts/$t"
    before=$(find "artifacts/$t" -type f | wc -l)
    rm -f "$logs/$t".*log
    echo "fuzz.sh: fuzzing $t (${limit[*]}, $jobs job(s)), logs in fuzz/$logs/$t.*log" >&2
    pids=()
    for ((j = 1; j <= jobs; j++)); do
        log="$logs/$t.log"
        [[ $jobs -gt 1 ]] && log="$logs/$t.$j.log"
        # -timeout: an execution taking this long is a hang, reported as a crash.
        # -malloc_limit_mb: a single allocation this large is a bug (decoders bound theirs).
        # -seed: distinct per job, so parallel jobs do not repeat each other.
        cargo +nightly fuzz run -s "$sanitizer" "$t" "target/work-corpus/$t" "corpus/$t" -- \
            "${limit[@]}" -print_final_stats=1 -timeout=60 -rss_limit_mb=3072 \
            -malloc_limit_mb=1024 "-seed=$((RANDOM * 32768 + RANDOM + j))" >"$log" 2>&1 &
        pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do
        wait "$pid" || status=$?
    done
    execs=0
    rate=0
    for ((j = 1; j <= jobs; j++)); do
        log="$logs/$t.log"
        [[ $jobs -gt 1 ]] && log="$logs/$t.$j.log"
        e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        r=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
        execs=$((execs + ${e:-0}))
        rate=$((rate + ${r:-0}))
    done
    crashes=$(( $(find "artifacts/$t" -type f | wc -l) - before ))
    interrupted=false
    if grep -q "libFuzzer: run interrupted" "$logs/$t".*log; then
        # Stopped by Ctrl-C / SIGINT: the executions so far count, nothing crashed.
        interrupted=true
    fi
    if [[ $status -ne 0 && $crashes -eq 0 ]] && ! $interrupted; then
        # Stopped without saving an input (a build failure, an abort in the harness...).
        crashes=1
    fi
    if [[ $crashes -gt 0 ]]; then
        failed=true
        echo "fuzz.sh: $t FAILED (exit $status); last lines of its logs in fuzz/$logs:" >&2
        tail -n 30 "$logs/$t".*log >&2
    fi
    rows+=("$t|$execs|$rate|$crashes")
done

printf '\n%-12s | %12s | %8s | %s\n' target executions exec/s crashes
printf -- '-------------+--------------+----------+--------\n'
for row in "${rows[@]}"; do
    IFS='|' read -r t e r c <<<"$row"
    printf '%-12s | %12s | %8s | %s\n' "$t" "$e" "$r" "$c"
done
if $failed; then
    exit 1
fi
