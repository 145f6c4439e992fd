#!/usr/bin/env bash
# Builds the release binaries as static musl executables, checks that they
# are static and run, and writes them with SHA-256 sums to target/dist/.
# Usage: release/build.sh [x86_64|aarch64|all]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
want=${1:-all}
release/setup.sh "$want"
mkdir -p target/dist

build() {
    local arch=$1 triple="$1-unknown-linux-musl"
    cargo build --release --locked --target "$triple"
    local bin="target/$triple/release/offcode"
    if readelf -lW "$bin" | grep -q 'INTERP' || readelf -dW "$bin" | grep -q 'NEEDED'; then
        echo "error: $bin is dynamically linked" >&2
        readelf -dW "$bin" | grep NEEDED >&2 || true
        exit 1
    fi
    local runner=()
    if [ "$arch" != "$(uname -m)" ]; then runner=(qemu-"$arch"-static); fi
    local version
    version=$("${runner[@]}" "$bin" --version)
    echo "$triple: static, $(stat -c %s "$bin") bytes, runs: $version"
    cp "$bin" "target/dist/offcode-$arch-linux"
}

case "$want" in
    x86_64) build x86_64 ;;
    aarch64) build aarch64 ;;
    all) build x86_64; build aarch64 ;;
    *) echo "usage: $0 [x86_64|aarch64|all]" >&2; exit 2 ;;
esac
(cd target/dist && sha256sum offcode-*-linux > SHA256SUMS && cat SHA256SUMS)
