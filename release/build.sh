#!/usr/bin/env bash
# Builds the release tarballs into target/dist/: for x86_64 and arm64, a
# static musl binary (runs on any Linux) and a glibc one (dynamically linked
# against the system's glibc), each as offcode-VERSION-TARGET.tar.gz with the
# LICENSE, the third-party licences, the README, docs/, man pages, bash/zsh/
# fish completions, the default policy files, a commented config example and
# the config file's JSON schema;
# SHA256SUMS beside them. Each binary is checked: linked as its kind says,
# position-independent, under 10 MiB, and it runs (arm64 under qemu-user).
#
# Reproducible: paths of this checkout and of CARGO_HOME are remapped, the
# build date is the commit's (SOURCE_DATE_EPOCH), and the tarballs are made
# with sorted names, fixed owners and times; two builds of a commit give the
# same files (release/reproduce.sh checks it).
#
# Usage: release/build.sh [all|musl|x86_64|aarch64|TRIPLE...]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

musl=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
glibc=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)
case "${1:-all}" in
    all) targets=("${musl[@]}" "${glibc[@]}") ;;
    musl) targets=("${musl[@]}") ;;
    x86_64) targets=(x86_64-unknown-linux-musl x86_64-unknown-linux-gnu) ;;
    aarch64) targets=(aarch64-unknown-linux-musl aarch64-unknown-linux-gnu) ;;
    *-linux-*) targets=("$@") ;;
    *) echo "usage: $0 [all|musl|x86_64|aarch64|TRIPLE...]" >&2; exit 2 ;;
esac
setup=x86_64
for triple in "${targets[@]}"; do
    case "$triple" in aarch64-*) setup=all ;; esac
done
release/setup.sh "$setup"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export OFFCODE_COMMIT=${OFFCODE_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
target_dir=${CARGO_TARGET_DIR:-$root/target}
# No path of this machine in the binary: panic locations and the like name
# /offcode/src/..., /cargo/registry/... wherever it was built.
export RUSTFLAGS="--remap-path-prefix=$target_dir=/target --remap-path-prefix=$root=/offcode --remap-path-prefix=$cargo_home=/cargo ${RUSTFLAGS:-}"
# The same for the C code some crates build (tree-sitter's asserts name
# their source files).
export CFLAGS="-ffile-prefix-map=$target_dir=/target -ffile-prefix-map=$root=/offcode -ffile-prefix-map=$cargo_home=/cargo ${CFLAGS:-}"
export CARGO_INCREMENTAL=0
limit=10485760
dist=$target_dir/dist
mkdir -p "$dist"
rm -rf "$dist/stage"
for triple in "${targets[@]}"; do rm -f "$dist"/offcode-*-"$triple".tar.gz; done

# How to run a binary built for $1 on this machine.
runner() {
    case "$1" in
        "$(uname -m)"-*-musl) ;;
        "$(uname -m)"-*-gnu) ;;
        aarch64-*-musl) echo qemu-aarch64-static ;;
        aarch64-*-gnu) echo "qemu-aarch64-static -L /usr/aarch64-linux-gnu" ;;
        *) echo "error: no way to run $1 here" >&2; return 1 ;;
    esac
}

check() {
    local triple=$1 bin=$2
    local size
    size=$(stat -c %s "$bin")
    if [ "$size" -ge "$limit" ]; then
        echo "error: $bin is $size bytes, over the 10 MiB limit ($limit)" >&2
        exit 1
    fi
    if ! readelf -hW "$bin" | grep -q 'Type:.*DYN'; then
        echo "error: $bin is not position-independent" >&2
        exit 1
    fi
    case "$triple" in
        *-musl)
            if readelf -lW "$bin" | grep -q INTERP || readelf -dW "$bin" | grep -q NEEDED; then
                echo "error: $bin is dynamically linked" >&2
                exit 1
            fi
            kind="static-pie"
            ;;
        *-gnu)
            # Only glibc's own libraries: nothing a server may lack.
            local needed
            needed=$(readelf -dW "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
            for library in $needed; do
                case "$library" in
                    libc.so.6 | libm.so.6 | libgcc_s.so.1 | ld-linux-*.so.*) ;;
                    *) echo "error: $bin needs $library" >&2; exit 1 ;;
                esac
            done
            local glibc
            glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
            kind="dynamic PIE, needs ${needed% } ($glibc or later)"
            ;;
    esac
    echo "$triple: $kind, $size bytes"
}

package() {
    local triple=$1
    cargo build --profile dist --locked --target "$triple"
    local bin=$target_dir/$triple/dist/offcode
    check "$triple" "$bin"
    local run
    run=$(runner "$triple")
    # shellcheck disable=SC2086 # the runner is a command and its options
    echo "  runs: $($run "$bin" --version)"
    local name=offcode-$version-$triple
    local stage=$dist/stage/$name
    mkdir -p "$stage/man" "$stage/completions" "$stage/policy"
    cp "$bin" "$stage/offcode"
    cp LICENSE README.md "$stage/"
    cp -r docs "$stage/docs"
    cp policy/*.jsonc "$stage/policy/"
    cp release/offcode.example.jsonc "$stage/offcode.example.jsonc"
    release/licenses.py "$triple" > "$stage/THIRD-PARTY-LICENSES.md"
    # shellcheck disable=SC2086
    $run "$bin" config schema > "$stage/offcode.schema.json"
    # shellcheck disable=SC2086
    $run "$bin" man --dir "$stage/man"
    # shellcheck disable=SC2086
    $run "$bin" completions bash > "$stage/completions/offcode.bash"
    # shellcheck disable=SC2086
    $run "$bin" completions zsh > "$stage/completions/_offcode"
    # shellcheck disable=SC2086
    $run "$bin" completions fish > "$stage/completions/offcode.fish"
    # The same bytes from the same files: sorted, no owner, the commit's time.
    find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    chmod -R u+rwX,go+rX,go-w "$stage"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
        --format=gnu -C "$dist/stage" -cf - "$name" | gzip -9n > "$dist/$name.tar.gz"
}

built=()
for triple in "${targets[@]}"; do
    package "$triple"
    built+=("offcode-$version-$triple.tar.gz")
done
rm -rf "$dist/stage"
# The sums name what this run built, all from one commit: never a tarball
# left from an earlier build.
(cd "$dist" && sha256sum "${built[@]}" > SHA256SUMS && cat SHA256SUMS)
