#!/usr/bin/env bash
# Builds and checks examples/android_game_activity, a GameActivity app (Bevy's default features
# plus android-game-activity, as Bevy's examples/mobile) with bevy_tile_deferred as an ordinary
# dependency:
#   1. the features Cargo resolves for aarch64-linux-android: android-activity gets
#      game-activity and not native-activity (android-activity refuses to build with both, so
#      this fails if the crate ever turns an activity on again);
#   2. with a real NDK (ANDROID_NDK_HOME or ANDROID_NDK_ROOT, see scripts/android-ndk.sh): the
#      library for arm64-v8a, then check-so.py (bionic symbols and versions at API 26, NEEDED
#      list, 16 KiB LOAD alignment, no text relocations) and the entry points that GameActivity's
#      Java side and its native glue call, exported: GameActivity_onCreate,
#      Java_com_google_androidgamesdk_GameActivity_initializeNativeCode and android_main.
# Without a real NDK step 2 is skipped with a note: GameActivity's C++ glue (compiled by
# android-activity's build script) needs the NDK's libc++ (headers, libc++_static.a,
# libc++abi.a) and its <jni.h> and <android/*.h> headers, which the hand-made sysroot in
# shared/android does not have. No APK is made either way: it needs the Java classes of
# androidx.games:games-activity (an AAR on Google's Maven), so Gradle packages it
# (docs/android.md).
#
# Usage: scripts/android-game-activity.sh [--profile PROFILE] [--require-ndk]
#   --profile      cargo profile (default release; CI uses android-ci)
#   --require-ndk  fail instead of skipping step 2 when no real NDK is set
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

target=aarch64-linux-android
api=26
profile=release
require_ndk=0
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile=$2; shift 2 ;;
        --require-ndk) require_ndk=1; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
app=examples/android_game_activity
manifest=$app/Cargo.toml
lib_name=android_game_activity

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    rustup target add "$target"
fi

echo "== $lib_name: features of android-activity for $target"
features=$(cargo tree --manifest-path "$manifest" --target "$target" -e normal \
    -f '{p} [{f}]' --prefix none -i android-activity | head -1)
echo "$features"
case "$features" in
    *native-activity*)
        echo "error: android-activity gets native-activity: something turns NativeActivity on" >&2
        exit 1 ;;
    *game-activity*) ;;
    *)
        echo "error: android-activity does not get game-activity" >&2
        exit 1 ;;
esac

if [ -z "${ANDROID_NDK_HOME:-}" ] && [ -z "${ANDROID_NDK_ROOT:-}" ]; then
    echo "== $lib_name: library not built: no real NDK (ANDROID_NDK_HOME or ANDROID_NDK_ROOT)." \
        "GameActivity's C++ glue needs the NDK's libc++ and <jni.h>/<android/*.h>, which the" \
        "hand-made sysroot lacks (docs/android.md)."
    [ "$require_ndk" = 0 ] || exit 1
    exit 0
fi

target_dir=${CARGO_TARGET_DIR:-$repo/$app/target}
# shellcheck source=scripts/android-ndk.sh
. "$repo/scripts/android-ndk.sh"
bash scripts/ensure-packages.sh llvm python3

case "$profile" in
    dev) profile_dir=debug ;;
    *) profile_dir=$profile ;;
esac
echo "building $lib_name for $target (profile $profile, API $api)"
cargo build --manifest-path "$manifest" --target "$target" --profile "$profile" --lib

lib=$target_dir/$target/$profile_dir/lib$lib_name.so
[ -f "$lib" ] || { echo "error: $lib not built" >&2; exit 1; }
echo "== $lib_name: $(du -m "$lib" | cut -f1) MB library, check-so.py"
# --no-activity: check-so.py's entry-point check is NativeActivity's; GameActivity's follows.
python3 "$shared/check-so.py" "$maps_ndk" "$lib" --api "$api" --no-activity

echo "== $lib_name: GameActivity entry points"
exports=$(llvm-readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") {print $8}')
missing=0
for symbol in GameActivity_onCreate Java_com_google_androidgamesdk_GameActivity_initializeNativeCode \
    android_main; do
    if grep -qx "$symbol" <<<"$exports"; then
        echo "exported: $symbol"
    else
        echo "ERROR: $symbol not exported" >&2
        missing=1
    fi
done
if grep -qx ANativeActivity_onCreate <<<"$exports"; then
    echo "ERROR: ANativeActivity_onCreate exported: NativeActivity glue is linked in" >&2
    missing=1
fi
[ "$missing" = 0 ] || exit 1
echo "== $lib_name: $lib passed every check (no APK: Gradle adds GameActivity's Java classes)"
