#!/usr/bin/env bash
# Builds Android examples as arm64-v8a NativeActivity APKs and checks them. It compiles and links
# with a real NDK when ANDROID_NDK_HOME or ANDROID_NDK_ROOT is set (as cargo-ndk does), else
# with the hand-made NDK sysroot in shared/android/ (see its README; the stand-in for the NDK on
# machines that cannot download it, as CI here): scripts/android-ndk.sh picks. Then for every
# library and APK:
#   - check-so.py: every undefined symbol and version exists in bionic at API 26, NEEDED list,
#     16 KiB LOAD alignment, no text relocations, NativeActivity's entry point exported;
#   - aapt dump badging (the manifest as Android reads it), zipalign -c, apksigner verify.
# Any finding fails the script. Nothing here runs the APK: no phone or emulator is reachable.
#
# Usage: scripts/android-apk.sh [--profile PROFILE] [--out DIR] [--dry-run] [EXAMPLE...]
#   EXAMPLE    cdylib examples with #[bevy_main] (default: android_showcase, the showcase scene
#              with the inspector overlay); each is a NativeActivity app (the examples' Android
#              dev-dependency picks bevy's android-native-activity)
#   --profile  cargo profile (default release; CI uses android-ci, see Cargo.toml)
#   --out      folder for the APKs (default: apk/ in the profile's target folder)
#   --dry-run  print the NDK, linker and cargo command it would use, and stop
# Environment: ANDROID_NDK_HOME or ANDROID_NDK_ROOT (a real NDK, r23 or newer); SHARED_ANDROID_DIR
# overrides where shared/android/ (check-so.py, build-apk.sh, the hand-made sysroot and the
# symbol maps check-so.py reads) is looked for; CARGO_TARGET_DIR is honoured (the unpacked
# sysroot is cached next to the builds).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

target=aarch64-linux-android
api=26
profile=release
out=
dry_run=0
examples=()
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) examples+=("$1"); shift ;;
    esac
done
[ ${#examples[@]} -gt 0 ] || examples=(android_showcase)

target_dir=${CARGO_TARGET_DIR:-$repo/target}
# shellcheck source=scripts/android-ndk.sh
. "$repo/scripts/android-ndk.sh"

if [ "$dry_run" = 0 ]; then
    bash scripts/ensure-packages.sh clang lld llvm python3 aapt zipalign apksigner \
        android-framework-res default-jre-headless
    if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        rustup target add "$target"
    fi
fi

case "$profile" in
    dev) profile_dir=debug ;;
    *) profile_dir=$profile ;;
esac
[ -n "$out" ] || out=$target_dir/$target/$profile_dir/apk
mkdir -p "$out"

# The folders of assets/ (shared with the desktop examples) each example loads.
shared_assets() {
    case "$1" in
        # The showcase's sky (examples/scenes/mod.rs, `showcase_sky`).
        android_showcase) echo environment_maps ;;
    esac
}

example_args=()
for example in "${examples[@]}"; do
    # NativeActivity loads lib$example.so by name: a system library's name would load that.
    case "$example" in
        android | c | m | dl | log | vulkan | EGL | GLESv2 | GLESv3 | z | nativewindow | aaudio | jnigraphics)
            echo "error: example $example would be lib$example.so, a system library's name" >&2
            exit 2 ;;
    esac
    example_args+=(--example "$example")
done
echo "building ${examples[*]} for $target (profile $profile, API $api)"
build=(cargo build --target "$target" --profile "$profile" --features inspector "${example_args[@]}")
if [ "$dry_run" = 1 ]; then
    echo "CC_aarch64_linux_android=$CC_aarch64_linux_android"
    echo "CXX_aarch64_linux_android=$CXX_aarch64_linux_android"
    echo "AR_aarch64_linux_android=$AR_aarch64_linux_android"
    echo "CARGO_TARGET_AARCH64_LINUX_ANDROID_RUSTFLAGS=${CARGO_TARGET_AARCH64_LINUX_ANDROID_RUSTFLAGS:-}"
    echo "check-so.py maps: $maps_ndk/maps"
    echo "would run: ${build[*]}"
    exit 0
fi
"${build[@]}"

for example in "${examples[@]}"; do
    lib=$target_dir/$target/$profile_dir/examples/lib$example.so
    [ -f "$lib" ] || { echo "error: $lib not built: is $example a cdylib example?" >&2; exit 1; }
    echo "== $example: $(du -m "$lib" | cut -f1) MB library, check-so.py"
    python3 "$shared/check-so.py" "$maps_ndk" "$lib" --api "$api"

    apk=$out/$example.apk
    # Bevy's AssetServer reads the APK's assets/ on Android, under the paths it reads assets/ by
    # on the desktop: the shared folders of assets/ the example loads, plus its own files
    # (assets/$example, packaged at the root), staged into one folder.
    staged=$out/$example.assets
    rm -rf "$staged"
    mkdir -p "$staged"
    for folder in $(shared_assets "$example"); do
        [ -d "assets/$folder" ] || { echo "error: assets/$folder not found" >&2; exit 1; }
        mkdir -p "$staged/$(dirname "$folder")"
        cp -r "assets/$folder" "$staged/$folder"
    done
    [ ! -d "assets/$example" ] || cp -r "assets/$example/." "$staged/"
    # Notes about the files (their sources and licences) stay in the repository.
    find "$staged" -name '*.md' -delete
    asset_args=()
    [ -z "$(ls -A "$staged")" ] || asset_args=(--assets "$staged")
    bash "$shared/build-apk.sh" "$lib" "$apk" --vulkan --min-sdk "$api" \
        --package "org.bevy_tile_deferred.$example" --label "bevy_tile_deferred $example" \
        "${asset_args[@]}"
    echo "== $example: $(du -m "$apk" | cut -f1) MB APK, aapt dump badging"
    aapt dump badging "$apk"
    if ! aapt list "$apk" | grep -qx "lib/arm64-v8a/lib$example.so"; then
        echo "error: $apk lacks lib/arm64-v8a/lib$example.so" >&2
        exit 1
    fi
    echo "== $example: aapt list assets/"
    (cd "$staged" && find . -type f | sed 's|^\./|assets/|' | sort) >"$out/$example.assets.list"
    aapt list "$apk" | grep '^assets/' | sort >"$out/$example.apk-assets.list" || true
    cat "$out/$example.apk-assets.list"
    if ! cmp -s "$out/$example.assets.list" "$out/$example.apk-assets.list"; then
        echo "error: $apk's assets/ differ from the staged ones:" >&2
        diff "$out/$example.assets.list" "$out/$example.apk-assets.list" >&2 || true
        exit 1
    fi
    echo "== $example: zipalign -c, apksigner verify"
    zipalign -c -p 4 "$apk"
    apksigner verify --verbose "$apk"
    echo "== $example: $apk passed every check"
done
