#!/usr/bin/env bash
# Measures the core's speed and memory targets against the mock server
# answering at once (the demo model), with the static release binary.
# Usage: release/bench.sh [RUNS]      (default 20)
#
# Targets (issues 2 and 29): --version < 5 ms and < 10 MB RSS; the 3-step
# task (read, write, answer) < 15 ms wall and < 8 MB peak RSS; start to
# first request < 5 ms; end of a response to the next request < 5 ms; end
# of the last response to the process's exit < 3 ms in every run; SSE
# parsing > 100 MB/s (cargo bench --bench sse).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}

# The binary that ships, built as release/build.sh builds it.
release/build.sh x86_64-unknown-linux-musl >/dev/null
cargo build --quiet --release --example mock-server
sse_line=$(cargo bench --quiet --bench sse 2>/dev/null | grep 'MB/s')
bin=$PWD/target/x86_64-unknown-linux-musl/dist/offcode
mock=$PWD/target/release/examples/mock-server

work=$(mktemp -d)
cleanup() { kill "$mock_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$mock" --port 0 --timing-log "$work/timing.log" > "$work/mock.out" &
mock_pid=$!
for _ in $(seq 100); do grep -q 'http://' "$work/mock.out" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'http://[^ ]*' "$work/mock.out")
export HOME=$work/home OFFCODE_BASE_URL=$url OFFCODE_MODEL=mock-model
mkdir -p "$work/project" "$HOME"
cd "$work/project"
printf 'first line of the input\nsecond line\n' > input.txt

# The clock in ns, read by bash itself: `$(date +%s%N)` forks and execs,
# about 1.2 ms here, which landed inside the exit lag it was to time.
now_ns() { local t=$EPOCHREALTIME; printf -v "$1" '%s000' "${t/./}"; }
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m}'; }

# --version: mean wall time over 200 runs, peak RSS of one.
now_ns start
for _ in $(seq 200); do "$bin" --version >/dev/null; done
now_ns stop
version_ms=$(awk -v d=$(( stop - start )) 'BEGIN {printf "%.2f", d / 200 / 1e6}')
version_rss=$(/usr/bin/time -f %M "$bin" --version 2>&1 >/dev/null)

# The 3-step task.
: > "$work/walls"; : > "$work/firsts"; : > "$work/gaps"; : > "$work/rss"; : > "$work/exits"
for _ in $(seq "$runs"); do
    rm -f out.txt
    : > "$work/timing.log"
    now_ns start
    "$bin" run --yes "read input.txt then write out.txt" >/dev/null 2>&1
    now_ns end
    test -s out.txt || { echo "error: the task did not write out.txt" >&2; exit 1; }
    echo $(( (end - start) / 1000 )) | awk '{printf "%.2f\n", $1 / 1000}' >> "$work/walls"
    awk -v s="$start" '$1 == "request" {printf "%.2f\n", ($2 - s) / 1e6; exit}' "$work/timing.log" >> "$work/firsts"
    awk '$1 == "response_end" {e = $2} $1 == "request" && e {printf "%.3f\n", ($2 - e) / 1e6}' "$work/timing.log" >> "$work/gaps"
    awk -v x="$end" '$1 == "response_end" {e = $2} END {printf "%.3f\n", (x - e) / 1e6}' "$work/timing.log" >> "$work/exits"
    rm -f out.txt
    /usr/bin/time -f %M -o "$work/rss.one" "$bin" run --yes "read input.txt then write out.txt" >/dev/null 2>&1
    cat "$work/rss.one" >> "$work/rss"
done

printf '%-44s %10s %10s\n' "measure ($runs runs of the task)" "measured" "target"
printf '%-44s %8s ms %7s ms\n' "--version, mean wall" "$version_ms" "< 5"
printf '%-44s %8s MB %7s MB\n' "--version, peak RSS" "$(awk -v k="$version_rss" 'BEGIN {printf "%.1f", k / 1024}')" "< 10"
printf '%-44s %8s ms %7s ms\n' "3-step task, median wall" "$(median < "$work/walls")" "< 15"
printf '%-44s %8s MB %7s MB\n' "3-step task, max peak RSS" "$(sort -n "$work/rss" | tail -1 | awk '{printf "%.1f", $1 / 1024}')" "< 8"
printf '%-44s %8s ms %7s ms\n' "start to first request, median" "$(median < "$work/firsts")" "< 5"
printf '%-44s %8s ms %7s ms\n' "response end to next request, median" "$(median < "$work/gaps")" "< 5"
printf '%-44s %8s ms\n' "response end to next request, max" "$(sort -n "$work/gaps" | tail -1)"
printf '%-44s %8s ms %7s ms\n' "last response end to exit, max" "$(sort -n "$work/exits" | tail -1)" "< 3"
# The SSE line has the target; the inline parser's lines are for the record.
printf '%s\n' "$sse_line" | sed '1s/$/   (target > 100 MB\/s)/'

