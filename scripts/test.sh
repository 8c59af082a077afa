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

# Window tests need an X display: use the session's, or a private Xvfb.
if [ -z "${DISPLAY:-}" ]; then
    exec xvfb-run -a -s "-screen 0 1280x720x24" cargo test --all-features "$@"
fi
cargo test --all-features "$@"
