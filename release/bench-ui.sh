#!/usr/bin/env bash
# Measures the interactive UI end to end: the static release binary runs
# in tmux (100x30) against the mock model streaming 3000 words at about
# 1000 a second, and its CPU time is read from /proc while it draws them.
# Usage: release/bench-ui.sh
#
# Target (issue 5): rendering keeps up with a 1000 tokens/s stream (the
# last word is on screen right after the stream ends) using at most one
# core. `cargo bench --bench ui` measures the UI's own cost per token, per
# keystroke and per approval prompt.
set -euo pipefail
cd "$(dirname "$0")/.."

# The binary that ships, built as release/build.sh builds it.
release/build.sh x86_64-unknown-linux-musl >/dev/null
cargo build --quiet --release --example mock-server
bin=$PWD/target/x86_64-unknown-linux-musl/dist/offcode
mock=$PWD/target/release/examples/mock-server

work=$(mktemp -d)
socket=offcode-bench-ui-$$
cleanup() {
    tmux -L "$socket" kill-server 2>/dev/null || true
    kill "$mock_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
"$mock" --port 0 --timing-log "$work/timing.log" > "$work/mock.out" &
mock_pid=$!
for _ in $(seq 100); do grep -q 'http://' "$work/mock.out" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'http://[^ ]*' "$work/mock.out")
mkdir -p "$work/home" "$work/project"

tmux -L "$socket" new-session -d -x 100 -y 30 -s ui -c "$work/project" \
    "env -i HOME=$work/home PATH=$PATH TERM=xterm-256color LANG=C.UTF-8 OFFCODE_BASE_URL=$url OFFCODE_MODEL=mock-model $bin"
screen() { tmux -L "$socket" capture-pane -p -t ui; }
wait_for() {
    local limit=$(( $(date +%s) + 60 ))
    while [ "$(date +%s)" -lt "$limit" ]; do screen | grep -q "$1" && return 0; sleep 0.005; done
    echo "error: \`$1\` did not appear" >&2; screen >&2; exit 1
}
wait_for 'Type a task'
pid=$(pgrep -n -f "^$bin\$")
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)

# The clock in ns, read by bash itself: `$(date +%s%N)` forks and execs,
# about 1.2 ms here, which landed inside the exit lag it was to time.
now_ns() { local t=$EPOCHREALTIME; printf -v "$1" '%s000' "${t/./}"; }
before=$(ticks)
now_ns start
tmux -L "$socket" send-keys -t ui -l 'stream fast'
tmux -L "$socket" send-keys -t ui Enter
wait_for 'The end\.'
now_ns end
after=$(ticks)
wait_for 'ready'

request=$(awk '$1 == "request" {print $2}' "$work/timing.log" | tail -1)
stream_end=$(awk '$1 == "response_end" {print $2}' "$work/timing.log" | tail -1)
awk -v t=$(( after - before )) -v hz="$hz" -v w=$(( end - start )) \
    -v q=$(( request - start )) -v s=$(( stream_end - request )) -v l=$(( end - stream_end )) 'BEGIN {
    wall = w / 1e9; cpu = t / hz
    printf "%-48s %8.3f s\n", "Enter to the request at the server", q / 1e9
    printf "%-48s %8.3f s\n", "the stream (3000 words, 1 ms apart)", s / 1e9
    printf "%-48s %8.3f s\n", "end of the stream to the last word on screen", l / 1e9
    printf "%-48s %8.3f s (%.0f%% of one core)\n", "offcode CPU time, Enter to the last word", cpu, 100 * cpu / wall
    printf "targets: under one core; the last word on screen well under 1 s after the stream ends\n"
}'
