#!/usr/bin/env bash
# Runs every test: unit tests, the frame-graph property tests and the GPU tests, which render
# real frames on Mesa lavapipe (software Vulkan) under the Khronos validation layer.
set -euo pipefail
cd "$(dirname "$0")/.."

# lavapipe, the Vulkan loader, the validation layer, vulkaninfo (the probe test compares with
# it), Xvfb (window tests), xwd (x11-apps: window tests read the presented window with it) and
# the X11 libraries winit loads at run time.
bash scripts/ensure-packages.sh mesa-vulkan-drivers libvulkan1 vulkan-validationlayers \
    vulkan-tools glslang-tools xvfb xauth x11-apps libx11-6 libxcursor1 libxi6 libxrandr2 \
    libxkbcommon-x11-0

# Mesa's WSI complains without a runtime dir; give it a private one.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
    export XDG_RUNTIME_DIR="$(mktemp -d)"
fi

# Window tests need an X display: use the session's, or a private Xvfb for the whole script.
if [ -z "${DISPLAY:-}" ]; then
    exec xvfb-run -a -s "-screen 0 1280x720x24" bash "$0" "$@"
fi

# With arguments (a filter, `--test gpu -- name --nocapture`): one cargo test, as given.
if [ $# -gt 0 ]; then
    exec cargo test --all-features "$@"
fi

# Without (CI, the README's command): the library's tests and the doc tests, then the GPU tests
# in shards, one process each. Every Bevy app a test makes leaves memory behind in its process
# (50-100 MB each on lavapipe, most of it outside the validation layer; docs/measurements.md),
# and the whole GPU suite in one process reached 23.6 GB of this machine's 24 GB.
cargo test --all-features --lib
cargo test --all-features --doc
mapfile -t gpu_tests < <(cargo test --all-features --test gpu -- --list --format terse |
    sed -n 's/: test$//p')
if [ "${#gpu_tests[@]}" -eq 0 ]; then
    echo "no GPU tests listed" >&2
    exit 1
fi
shards=4
failed=0
for ((shard = 0; shard < shards; shard++)); do
    # Every shard-th test, so that each shard gets some of every module.
    names=()
    for ((i = shard; i < ${#gpu_tests[@]}; i += shards)); do
        names+=("${gpu_tests[i]}")
    done
    echo "== GPU tests, shard $((shard + 1)) of $shards: ${#names[@]} tests"
    cargo test --all-features --test gpu -- --exact "${names[@]}" || failed=1
done
exit "$failed"
