#!/usr/bin/env bash
# Runs each release tarball's binary (target/dist/*.tar.gz, after
# release/build.sh) against the mock model server: the 3-step task (read,
# write, answer), a resume, `offcode doctor`, a confined shell command, and
# the task again in an empty root (a user namespace and chroot holding only
# the binary, with the glibc loader and libraries for a glibc build). The
# arm64 ones run under qemu-user, which has no Landlock, so there every
# shell command must ask instead.
# Usage: release/smoke.sh   (after release/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --example mock-server --example mcp-server
mock=$PWD/target/debug/examples/mock-server
mcp_server=$PWD/target/debug/examples/mcp-server
work=$(mktemp -d)
cleanup() { kill "$mock_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$mock" --port 0 > "$work/mock.out" &
mock_pid=$!
for _ in $(seq 100); do grep -q 'http://' "$work/mock.out" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'http://[^ ]*' "$work/mock.out")
port=${url##*:}; port=${port%%/*}
unshare=$(command -v unshare)

# Runs a session of the binary in $1 (with its runner after it) under
# strace: an MCP server started, a confined command run (natively), the
# task answered.
# Fails on any connection but the one to the mock model, and on any
# datagram sent to an address (DNS, say).
egress() {
    local dir=$1; shift
    mkdir -p "$dir/home/.config/offcode" "$dir/project"
    printf '{ "mcp": { "probe": { "type": "local", "command": ["%s"] } } }\n' "$mcp_server" \
        > "$dir/home/.config/offcode/offcode.jsonc"
    (cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url \
        strace -f -qq -Y -e trace=connect,sendto,sendmsg,sendmmsg -o "$dir/trace" \
        "$@" run --yes 'run `echo egress > made.txt`' > "$dir/answer" 2> "$dir/stderr") || true
    # Natively the command runs confined; under qemu-user (no Landlock) it
    # is refused, as every command there must ask.
    local ran=true
    if [ $# -eq 1 ]; then grep -q 'egress' "$dir/project/made.txt" 2>/dev/null || ran=false; fi
    local other
    # A connect the kernel refused made no connection: a shell in the
    # sandbox asking nscd for a user's name finds no socket (`/run` is
    # hidden there). One still under way (EINPROGRESS) counts.
    other=$(grep -E 'connect\(|sendto\(|sendmsg\(|sendmmsg\(' "$dir/trace" \
        | grep -v 'resumed>' \
        | grep -v -E '= -1 E(NOENT|ACCES|PERM|CONNREFUSED|NETUNREACH|HOSTUNREACH|AFNOSUPPORT|ADDRNOTAVAIL) ' \
        | grep -v "connect([0-9]*, {sa_family=AF_INET, sin_port=htons($port), sin_addr=inet_addr(\"127.0.0.1\")}" \
        | grep -v -E 'send(to|msg)\([0-9]+, .*(NULL, 0\)|msg_name=NULL)' || true)
    if [ -n "$other" ] || [ "$ran" = false ] \
        || ! grep -q "connect(.*htons($port)" "$dir/trace"; then
        echo "error: the egress check failed: connections other than the model's, or the session did not run" >&2
        echo "$other" >&2
        cat "$dir/answer" "$dir/stderr" >&2
        return 1
    fi
}

# An empty root for the binary at $1 built for $2: the binary, a project
# with an input, /tmp; for glibc, the loader and libraries it names; for
# another arch, the static qemu-user that runs it.
empty_root() {
    local bin=$1 triple=$2 root=$3
    mkdir -p "$root/bin" "$root/tmp" "$root/project" "$root/home"
    cp "$bin" "$root/bin/offcode"
    printf 'smoke input\n' > "$root/project/input.txt"
    local prefix=/
    case "$triple" in aarch64-*) [ "$(uname -m)" = aarch64 ] || prefix=/usr/aarch64-linux-gnu/ ;; esac
    case "$triple" in
        *-gnu)
            local library found
            for library in $(readelf -dW "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
                found=$(find "$prefix"lib* "$prefix"usr/lib* -maxdepth 2 -name "$library" 2>/dev/null | head -1 || true)
                mkdir -p "$root/$(dirname "${found#"$prefix"}")"
                cp -L "$found" "$root/${found#"$prefix"}"
            done
            library=$(readelf -lW "$bin" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
            mkdir -p "$root/$(dirname "$library")"
            cp -L "${prefix%/}$library" "$root/$library"
            ;;
    esac
    case "$triple" in
        "$(uname -m)"-*) ;;
        *) cp "$(command -v qemu-aarch64-static)" "$root/bin/qemu" ;;
    esac
}

repo=$PWD
status=0
# The tarballs SHA256SUMS names, all from one build: their binaries must
# name one commit.
commits=()
(cd target/dist && sha256sum --check --quiet SHA256SUMS)
for tarball in $(sed 's#^[0-9a-f]*  #target/dist/#' target/dist/SHA256SUMS); do
    name=$(basename "$tarball" .tar.gz)
    triple=${name#offcode-*-}
    arch=${triple%%-*}
    dir=$work/$triple
    mkdir -p "$dir"
    tar -xzf "$tarball" -C "$dir"
    bin=$dir/$name/offcode
    runner=()
    case "$triple" in
        "$(uname -m)"-*) ;;
        *-gnu) runner=(qemu-"$arch"-static -L /usr/"$arch"-linux-gnu) ;;
        *) runner=(qemu-"$arch"-static) ;;
    esac
    commits+=("$("${runner[@]}" "$bin" --version | sed 's/.*(\([0-9a-f]*\) .*/\1/')")
    mkdir -p "$dir/project"
    printf 'smoke input\n' > "$dir/project/input.txt"
    answer=$(cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url "${runner[@]}" "$bin" run --yes "read input.txt then write out.txt" 2>"$dir/stderr") && answer_code=0 || answer_code=$?
    again=$(cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url "${runner[@]}" "$bin" run --continue "hello again" 2>>"$dir/stderr") && again_code=0 || again_code=$?
    doctor=$(cd "$dir/project" && HOME=$dir/home OFFCODE_BASE_URL=$url "${runner[@]}" "$bin" doctor 2>>"$dir/stderr") && doctor_code=0 || doctor_code=$?
    # A script that writes outside the workspace: confined, the write
    # fails; under qemu-user (no Landlock) the command is not run at all.
    printf 'echo pwned > "$HOME/outside.txt"\n' > "$dir/project/w.sh"
    shell=$(cd "$dir/project" && HOME=$dir/home "${runner[@]}" "$bin" tool --yes bash '{"command": "bash w.sh"}' 2>&1) && shell_code=0 || shell_code=$?
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
        echo "$name: task, resume, doctor and confinement ok"
    else
        echo "error: $name failed the smoke task" >&2
        echo "exit codes (task, resume, doctor, shell): $codes, expected $expected_codes" >&2
        echo "answer: $answer / again: $again / doctor: $doctor / shell: $shell" >&2
        cat "$dir/stderr" >&2
        status=1
    fi
    if egress "$dir/egress" "${runner[@]}" "$bin"; then
        echo "$name: a session with an MCP server and a command connected only to the model"
    else
        status=1
    fi
    # The task again with nothing else there: no /proc, /dev, /etc, HOME.
    root=$dir/empty
    empty_root "$bin" "$triple" "$root"
    inside=(/bin/offcode)
    [ -z "${runner[*]}" ] || inside=(/bin/qemu /bin/offcode)
    bare=$(env -i OFFCODE_BASE_URL="$url" OFFCODE_DATA_DIR=/home/data \
        "$unshare" -rm --fork --root="$root" --wd=/project "${inside[@]}" run --yes "read input.txt then write out.txt" 2>"$dir/bare.stderr") \
        && bare_code=0 || bare_code=$?
    if [ "$bare_code" = 0 ] && [ "$bare" = "Done: I read input.txt and wrote out.txt." ] \
        && grep -q 'smoke input' "$root/project/out.txt" 2>/dev/null; then
        echo "$name: the task in an empty root ok"
    else
        echo "error: $name failed the task in an empty root (exit $bare_code): $bare" >&2
        cat "$dir/bare.stderr" >&2
        status=1
    fi
done
if [ "$(printf '%s\n' "${commits[@]}" | sort -u | wc -l)" != 1 ]; then
    echo "error: the tarballs come from different commits: ${commits[*]}" >&2
    status=1
fi
exit $status
