# cross-rs's pinned arm64 musl image, linking through the static-PIE wrapper
# with the image's own musl gcc (see Cross.toml).
FROM ghcr.io/cross-rs/aarch64-unknown-linux-musl:0.2.5
COPY aarch64-musl-static-pie-cc /usr/local/bin/aarch64-musl-static-pie-cc
ENV CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=/usr/local/bin/aarch64-musl-static-pie-cc \
    CC_LINKER=aarch64-linux-musl-gcc
