#!/usr/bin/env bash
# Checks that release builds are reproducible: builds each TARGET's tarball
# with release/build.sh, then again from a copy of this checkout in another
# folder with another CARGO_HOME (its registry copied, so no network), and
# compares the two byte for byte. Only committed state is named by the
# version, so run it on a clean tree.
# Usage: release/reproduce.sh [TARGET...]   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    set -- x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu
fi
cargo_home=${CARGO_HOME:-$HOME/.cargo}
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
    echo "warning: the tree has changes not committed; both builds include them" >&2
fi

release/build.sh "$@"

work=$(mktemp -d "${TMPDIR:-/tmp}/offcode-reproduce.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/elsewhere/checkout" "$work/cargo-home/registry"
tar -C . --exclude=./target -cf - . | tar -C "$work/elsewhere/checkout" -xf -
cp -a "$cargo_home/registry/index" "$cargo_home/registry/cache" "$work/cargo-home/registry/"
(
    cd "$work/elsewhere/checkout"
    unset CARGO_TARGET_DIR
    CARGO_HOME=$work/cargo-home CARGO_NET_OFFLINE=true release/build.sh "$@"
)
status=0
for target in "$@"; do
    first=$(ls target/dist/offcode-*-"$target".tar.gz)
    second=$(ls "$work"/elsewhere/checkout/target/dist/offcode-*-"$target".tar.gz)
    if cmp -s "$first" "$second"; then
        echo "reproducible: $(basename "$first") $(sha256sum "$first" | cut -d' ' -f1) from both checkouts"
        continue
    fi
    status=1
    echo "error: the two builds of $target differ" >&2
    mkdir -p "$work/a/$target" "$work/b/$target"
    tar -xzf "$first" -C "$work/a/$target"
    tar -xzf "$second" -C "$work/b/$target"
    diff -r "$work/a/$target" "$work/b/$target" >&2 || true
    echo "first differing bytes (offset, values):" >&2
    cmp -l "$work"/a/"$target"/*/offcode "$work"/b/"$target"/*/offcode 2>/dev/null | head -5 >&2 || true
done
if [ "$status" != 0 ]; then
    # Kept for a look: the second checkout and both unpacked tarballs.
    trap - EXIT
    echo "kept in $work" >&2
fi
exit "$status"
