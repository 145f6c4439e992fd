#!/usr/bin/env bash
# Installs what the release builds and tests need: the musl targets, for
# arm64 a cross C compiler (ring has C code) plus qemu-user to run the
# result, tmux for the terminal UI tests, Go for the validation test of a Go
# project (Debian's golang-go), and strace for the release egress check.
# Usage: release/setup.sh [x86_64|aarch64|all]   (default: x86_64)
set -euo pipefail
want=${1:-x86_64}

add_target() {
    rustup target list --installed | grep -qx "$1" || rustup target add "$1"
}

missing=()
command -v tmux >/dev/null || missing+=(tmux)
command -v go >/dev/null || missing+=(golang-go)
# release/smoke.sh's egress check traces a session's connections.
command -v strace >/dev/null || missing+=(strace)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

case "$want" in
    x86_64|all) add_target x86_64-unknown-linux-musl ;;
esac
case "$want" in
    aarch64|all)
        add_target aarch64-unknown-linux-musl
        # The glibc arm64 build (release/build.sh all builds both libcs).
        add_target aarch64-unknown-linux-gnu
        if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static >/dev/null
        fi
        ;;
esac
