#!/usr/bin/env bash
# Checks that a release build is reproducible: builds TARGET's tarball with
# release/build.sh, then again from a copy of this checkout in another folder
# with another CARGO_HOME (its registry copied, so no network), and compares
# the two byte for byte. Only committed state is named by the version, so
# run it on a clean tree.
# Usage: release/reproduce.sh [TARGET]   (default: x86_64-unknown-linux-musl)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-x86_64-unknown-linux-musl}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
    echo "warning: the tree has changes not committed; both builds include them" >&2
fi

release/build.sh "$target"
first=$(ls target/dist/offcode-*-"$target".tar.gz)
first_sum=$(sha256sum "$first" | cut -d' ' -f1)

work=$(mktemp -d "${TMPDIR:-/tmp}/offcode-reproduce.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/elsewhere/checkout" "$work/cargo-home/registry"
tar -C . --exclude=./target -cf - . | tar -C "$work/elsewhere/checkout" -xf -
cp -a "$cargo_home/registry/index" "$cargo_home/registry/cache" "$work/cargo-home/registry/"
(
    cd "$work/elsewhere/checkout"
    unset CARGO_TARGET_DIR
    CARGO_HOME=$work/cargo-home CARGO_NET_OFFLINE=true release/build.sh "$target"
)
second=$(ls "$work"/elsewhere/checkout/target/dist/offcode-*-"$target".tar.gz)
second_sum=$(sha256sum "$second" | cut -d' ' -f1)

if [ "$first_sum" = "$second_sum" ]; then
    echo "reproducible: $(basename "$first") $first_sum from both checkouts"
else
    echo "error: the two builds differ: $first_sum and $second_sum" >&2
    mkdir -p "$work/a" "$work/b"
    tar -xzf "$first" -C "$work/a"
    tar -xzf "$second" -C "$work/b"
    diff -r "$work/a" "$work/b" >&2 || true
    echo "first differing bytes (offset, values):" >&2
    cmp -l "$work"/a/*/offcode "$work"/b/*/offcode 2>/dev/null | head -5 >&2 || true
    # Kept for a look: the second checkout and both unpacked tarballs.
    trap - EXIT
    echo "kept in $work" >&2
    exit 1
fi
