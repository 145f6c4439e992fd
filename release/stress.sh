#!/usr/bin/env bash
# Runs the whole test suite RUNS times in a row at each thread count, and
# says which runs failed and on which tests (issue 29: "the suite passes 10
# runs in a row at 1, 2 and 8 test threads"). Every run goes on after a
# failure, so one report covers them all; logs are kept in target/stress/.
# Usage: release/stress.sh [RUNS] [THREADS...]   (default: 10 1 2 8)
# Run it from a worktree of its own (its own target dir) to keep working
# beside it; what else runs on the machine is the load.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
shift || true
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 2 8)
logs=target/stress
mkdir -p "$logs"
cargo build --locked --quiet --all-targets || exit 1
failed=0
for n in "${threads[@]}"; do
    passed=0
    for i in $(seq "$runs"); do
        log=$logs/threads$n-run$i.log
        start=$SECONDS
        if cargo test --locked -q -- --test-threads="$n" >"$log" 2>&1; then
            passed=$((passed + 1))
            echo "threads $n run $i: passed in $((SECONDS - start)) s"
        else
            failed=$((failed + 1))
            echo "threads $n run $i: FAILED in $((SECONDS - start)) s ($log):"
            grep -E '^    [a-z_:]+$|^test .* FAILED$' "$log" | sort -u | sed 's/^/    /'
        fi
    done
    echo "threads $n: $passed of $runs passed"
done
exit $((failed > 0))
