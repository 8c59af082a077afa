#!/usr/bin/env bash
# Type-checks the crate and the showcase example for Android (aarch64-linux-android), where the
# showcase's `#[bevy_main]` exports NativeActivity's `android_main`.
#
# This is a check, not a build: no Android NDK is available here (and none can be installed), so
# nothing is linked and no APK is made. One dependency's build script (blake3) compiles C; with
# no NDK its C sources are compiled by the host clang for the aarch64 Android target against the
# aarch64 glibc headers of libc6-dev-arm64-cross, only so that the build script succeeds: the
# object it makes is never linked. Everything written in Rust (this crate, Bevy's Android code,
# android-activity, ndk) is checked for the real target.
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-linux-android
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    rustup target add "$target"
fi
bash scripts/ensure-packages.sh clang llvm libc6-dev-arm64-cross

export CC_aarch64_linux_android=clang
export AR_aarch64_linux_android=llvm-ar
export CFLAGS_aarch64_linux_android="--target=$target -isystem /usr/aarch64-linux-gnu/include"
cargo check --target "$target" --lib --example showcase "$@"
