#!/usr/bin/env bash
# Benchmarks the file tools through `offcode tool` (static release binary,
# warm cache) against ripgrep, fd and find on the same tree and pattern.
# Usage: release/bench-tools.sh [TREE]   (default: the cargo registry sources)
# Needs rg and fdfind for the comparison (apt-get install ripgrep fd-find).
#
# Targets (issue 3): grep within 1.5x of ripgrep; glob and list likewise
# against fd/find; read, write and edit of a 10 MB file under 50 ms each.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -1)}
runs=7

# The binary that ships, built as release/build.sh builds it.
release/build.sh x86_64-unknown-linux-musl >/dev/null
bin=$PWD/target/x86_64-unknown-linux-musl/dist/offcode
tools_bench=$(cargo bench --quiet --bench tools 2>/dev/null)
for tool in rg fdfind find; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed for the comparison" >&2; exit 2; }
done

# Median wall time in ms of a command run $runs times (after one warm-up).
median_ms() {
    "$@" >/dev/null 2>&1 || true
    for _ in $(seq $runs); do
        local start end
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        end=$(date +%s%N)
        echo $(( (end - start) / 1000 ))
    done | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)] / 1000}'
}

row() { # name ours theirs-name theirs
    printf '%-34s %9s ms  %-22s %9s ms  %5s x\n' "$1" "$2" "$3" "$4" "$(awk -v a="$2" -v b="$4" 'BEGIN {printf "%.2f", a / b}')"
}

cd "$tree"
files=$(rg --files | wc -l)
echo "tree: $tree ($files files after .gitignore, $(du -sh . | cut -f1))"
printf '%-34s %12s  %-22s %12s  %7s\n' "offcode tool" "median" "reference" "median" "ratio"
rare='fn\s+zz_not_present_anywhere'
rare_json='fn\\s+zz_not_present_anywhere'
"$bin" tool grep "{\"pattern\": \"$rare_json\"}" | grep -q '^No matches' || { echo "error: the grep benchmark call failed" >&2; exit 1; }
row "grep (no match, full scan)" "$(median_ms "$bin" tool grep "{\"pattern\": \"$rare_json\"}")" "rg" "$(median_ms rg "$rare")"
some='unsafe impl Send for'
row "grep ($(rg -c "$some" | awk -F: '{s+=$2} END {print s}') matches, cap 1000)" "$(median_ms "$bin" tool grep "{\"pattern\": \"$some\", \"max_results\": 1000}")" "rg" "$(median_ms rg "$some")"
row "grep -i with include *.rs" "$(median_ms "$bin" tool grep "{\"pattern\": \"$rare_json\", \"case_insensitive\": true, \"include\": \"*.rs\"}")" "rg -i -g '*.rs'" "$(median_ms rg -i -g '*.rs' "$rare")"
row "glob **/*.rs" "$(median_ms "$bin" tool glob '{"pattern": "**/*.rs", "limit": 1000}')" "fd -g '*.rs'" "$(median_ms fdfind -g '*.rs' --type f)"
row "list (top directory)" "$(median_ms "$bin" tool list '{}')" "find -maxdepth 1" "$(median_ms find . -maxdepth 1 -printf '%f %s\n')"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
awk 'BEGIN {for (i = 0; i < 180000; i++) printf "line %d: the quick brown fox jumps over the lazy dog\n", i}' > big.txt
size=$(stat -c %s big.txt)
echo
echo "a $((size / 1000000)) MB file ($size bytes), end to end through \`offcode tool\` (process start,"
echo "10 MB of JSON arguments on stdin, the tool, fsync):"
printf '%-34s %9s ms  (target < 50 ms)\n' "read (first 2000 lines)" "$(median_ms "$bin" tool read '{"path": "big.txt"}')"
printf '%-34s %9s ms  (target < 50 ms)\n' "edit (one unique line)" "$(median_ms "$bin" tool --yes edit '{"path": "big.txt", "old_string": "line 90000: the", "new_string": "line 90000: a"}')"
for variant in a b; do
    python3 -c 'import json, sys; print(json.dumps({"path": "copy.txt", "content": open("big.txt").read().replace("lazy", sys.argv[1])}))' "$variant" > "args-$variant.json"
done
printf '%-34s %9s ms  (target < 50 ms)\n' "write (create a 10 MB file)" "$(median_ms sh -c "rm -f copy.txt; \"$bin\" tool --yes write - < args-a.json")"
# Alternate the content so every run replaces the file and diffs it.
printf '%-34s %9s ms  (target < 50 ms)\n' "write (replace it, every line changed)" "$(median_ms sh -c "if [ -e flip ]; then rm flip; v=a; else touch flip; v=b; fi; \"$bin\" tool --yes write - < args-\$v.json")"
echo
echo "the same tools called in-process, as the agent calls them (cargo bench --bench tools):"
echo "$tools_bench"
