#!/usr/bin/env bash
# Runs the 3-step task (read, write, answer), a resume, `offcode doctor` and a
# confined shell command with each built static binary in target/dist/ against
# the mock model server; the arm64 one runs under qemu-user, which has no
# Landlock, so there every shell command must ask instead.
# Usage: release/smoke.sh   (after release/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --example mock-server
mock=$PWD/target/debug/examples/mock-server
work=$(mktemp -d)
cleanup() { kill "$mock_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$mock" --port 0 > "$work/mock.out" &
mock_pid=$!
for _ in $(seq 100); do grep -q 'http://' "$work/mock.out" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'http://[^ ]*' "$work/mock.out")

repo=$PWD
status=0
for bin in target/dist/offcode-*-linux; do
    arch=${bin#target/dist/offcode-}; arch=${arch%-linux}
    runner=()
    if [ "$arch" != "$(uname -m)" ]; then runner=(qemu-"$arch"-static); fi
    dir=$work/$arch
    mkdir -p "$dir/project"
    printf 'smoke input\n' > "$dir/project/input.txt"
    answer=$(cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url "${runner[@]}" "$repo/$bin" run --yes "read input.txt then write out.txt" 2>"$dir/stderr") && answer_code=0 || answer_code=$?
    again=$(cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url "${runner[@]}" "$repo/$bin" run --continue "hello again" 2>>"$dir/stderr") && again_code=0 || again_code=$?
    doctor=$(cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url "${runner[@]}" "$repo/$bin" doctor 2>>"$dir/stderr") && doctor_code=0 || doctor_code=$?
    # A script that writes outside the workspace: confined, the write
    # fails; under qemu-user (no Landlock) the command is not run at all.
    printf 'echo pwned > "$HOME/outside.txt"\n' > "$dir/project/w.sh"
    shell=$(cd "$dir/project" && HOME=$dir/home "${runner[@]}" "$repo/$bin" tool --yes bash '{"command": "bash w.sh"}' 2>&1) && shell_code=0 || shell_code=$?
    # Exit codes: the task and the resume succeed; doctor fails only where
    # it found a problem; the script fails (confined) or is refused.
    expected_codes="0 0 0 1"
    if [ -z "${runner[*]}" ]; then
        expected_doctor="No problems found."
        # The read-only mount tree answers EROFS; Landlock alone, EACCES.
        case "$shell" in
            *"Read-only file system"*) expected_shell="Read-only file system" ;;
            *) expected_shell="Permission denied" ;;
        esac
    else
        expected_doctor="shell commands cannot be confined: this kernel has no Landlock"
        expected_codes="0 0 1 1"
        expected_shell="cannot be confined"
    fi
    codes="$answer_code $again_code $doctor_code $shell_code"
    if [ "$codes" = "$expected_codes" ] \
        && [ "$answer" = "Done: I read input.txt and wrote out.txt." ] \
        && grep -q 'smoke input' "$dir/project/out.txt" 2>/dev/null \
        && [ "$again" = "Mock model here. You said: hello again" ] \
        && [[ "$doctor" == *"$expected_doctor"* ]] \
        && [[ "$shell" == *"$expected_shell"* ]] \
        && [ ! -e "$dir/home/outside.txt" ]; then
        echo "$bin: task, resume, doctor and confinement ok"
    else
        echo "error: $bin failed the smoke task" >&2
        echo "exit codes (task, resume, doctor, shell): $codes, expected $expected_codes" >&2
        echo "answer: $answer / again: $again / doctor: $doctor / shell: $shell" >&2
        cat "$dir/stderr" >&2
        status=1
    fi
done
exit $status
