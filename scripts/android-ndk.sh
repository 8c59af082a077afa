# shellcheck shell=bash disable=SC2154  # $repo, $target, $api and $target_dir come from the caller
# Sourced by scripts/android-apk.sh and scripts/android-game-activity.sh, with $repo, $target
# (aarch64-linux-android), $api and $target_dir set. Picks the NDK that compiles and links for
# $target at API $api and exports what cargo and the cc crate read (the linker, CC, CXX, AR).
#
# - A real NDK when ANDROID_NDK_HOME or ANDROID_NDK_ROOT is set (the variables cargo-ndk reads;
#   ANDROID_NDK_HOME wins when both are): its
#   toolchains/llvm/prebuilt/<host>/bin/$target$api-clang compiles and links, against its own
#   sysroot (toolchains/llvm/prebuilt/<host>/sysroot, which that clang uses by default).
# - Otherwise the hand-made sysroot of shared/android (the stand-in for the NDK on machines that
#   cannot download it, as CI here), unpacked once next to the builds.
# Either way check-so.py reads the symbol maps that come with the hand-made sysroot (AOSP's
# bionic, liblog and libandroid maps; an NDK ships stub libraries, not the maps), and
# build-apk.sh packages: both are in shared/android.
#
# Sets: shared (shared/android), ndk_kind ("real" or "hand-made"), ndk (the NDK root that builds),
# ndk_source (where it came from), ndk_bin, maps_ndk (the folder whose maps/ check-so.py reads).

# shared/android sits next to the main checkout (../shared/android from it); a clone elsewhere
# (a worktree, a CI folder) finds it in the nearest ancestor that has it, else at /work/shared.
find_shared_android() {
    if [ -n "${SHARED_ANDROID_DIR:-}" ]; then
        echo "$SHARED_ANDROID_DIR"
        return
    fi
    local dir=$repo
    while [ "$dir" != / ]; do
        dir=$(dirname "$dir")
        if [ -f "$dir/shared/android/build-apk.sh" ]; then
            echo "$dir/shared/android"
            return
        fi
    done
    echo /work/shared/android
}
shared=$(find_shared_android)
tarball=$shared/android-ndk-handmade-aarch64-api26.tar.gz
for file in "$tarball" "$shared/env.sh" "$shared/check-so.py" "$shared/build-apk.sh"; do
    [ -f "$file" ] || {
        echo "error: $file not found (set SHARED_ANDROID_DIR to the folder with check-so.py," \
            "build-apk.sh and the hand-made sysroot; see docs/android.md)" >&2
        exit 1
    }
done

# Unpacked once per tarball version, next to the builds that link against it: with a real NDK
# only its maps/ are read (by check-so.py).
unpack_handmade() {
    local dir
    dir=$target_dir/android-ndk-handmade-$(sha256sum "$tarball" | cut -c1-12)
    if [ ! -d "$dir/android-ndk-handmade" ]; then
        rm -rf "$dir.partial"
        mkdir -p "$dir.partial"
        tar xzf "$tarball" -C "$dir.partial"
        mv "$dir.partial" "$dir"
    fi
    echo "$dir/android-ndk-handmade"
}
maps_ndk=$(unpack_handmade)

# The NDK's prebuilt host folder: linux-x86_64, darwin-x86_64 (NDK r23+ ships one universal macOS
# build under that name).
ndk_host_tag() {
    case "$(uname -s)" in
        Linux) echo linux-x86_64 ;;
        Darwin) echo darwin-x86_64 ;;
        *)
            echo "error: no NDK host folder known for $(uname -s) (Linux and macOS are)" >&2
            exit 1 ;;
    esac
}

if [ -n "${ANDROID_NDK_HOME:-}" ]; then
    ndk_kind=real ndk=$ANDROID_NDK_HOME ndk_source=ANDROID_NDK_HOME
elif [ -n "${ANDROID_NDK_ROOT:-}" ]; then
    ndk_kind=real ndk=$ANDROID_NDK_ROOT ndk_source=ANDROID_NDK_ROOT
else
    ndk_kind=hand-made ndk=$maps_ndk ndk_source="$tarball (neither ANDROID_NDK_HOME nor ANDROID_NDK_ROOT is set)"
fi

if [ "$ndk_kind" = real ]; then
    [ -d "$ndk" ] || { echo "error: $ndk_source=$ndk is not a folder" >&2; exit 1; }
    ndk=$(cd "$ndk" && pwd)
    ndk_bin=$ndk/toolchains/llvm/prebuilt/$(ndk_host_tag)/bin
    for tool in "$target$api-clang" "$target$api-clang++" llvm-ar; do
        [ -x "$ndk_bin/$tool" ] || {
            echo "error: $ndk_bin/$tool not found: is $ndk_source=$ndk an NDK (r23 or newer)" \
                "with API $api for $target?" >&2
            exit 1
        }
    done
    export CC_aarch64_linux_android=$ndk_bin/$target$api-clang
    export CXX_aarch64_linux_android=$ndk_bin/$target$api-clang++
    export AR_aarch64_linux_android=$ndk_bin/llvm-ar
    export CARGO_TARGET_AARCH64_LINUX_ANDROID_LINKER=$ndk_bin/$target$api-clang
    # The same NDK for build scripts that look for it themselves (as cargo-ndk sets both).
    export ANDROID_NDK_HOME=$ndk ANDROID_NDK_ROOT=$ndk
    # 16 KiB pages (required for new apps on Android 15+): NDK r28 links with
    # -z max-page-size=16384 by default, older NDKs need it asked for. check-so.py checks the
    # result either way (it also catches a caller's RUSTFLAGS, which replaces this one, and an
    # NDK whose source.properties names no revision).
    ndk_major=$(sed -n 's/^Pkg\.Revision *= *\([0-9]*\).*/\1/p' "$ndk/source.properties" 2>/dev/null)
    if [ -n "$ndk_major" ] && [ "$ndk_major" -lt 28 ]; then
        export CARGO_TARGET_AARCH64_LINUX_ANDROID_RUSTFLAGS="${CARGO_TARGET_AARCH64_LINUX_ANDROID_RUSTFLAGS:+$CARGO_TARGET_AARCH64_LINUX_ANDROID_RUSTFLAGS }-C link-arg=-Wl,-z,max-page-size=16384"
    fi
else
    # shellcheck source=/dev/null
    . "$shared/env.sh" "$ndk" "$api"
    ndk_bin=$ndk/toolchains/llvm/prebuilt/linux-x86_64/bin
fi
echo "NDK: $ndk_kind, $ndk (from $ndk_source)"
echo "linker: $CARGO_TARGET_AARCH64_LINUX_ANDROID_LINKER"
