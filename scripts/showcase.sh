#!/usr/bin/env bash
# Runs the showcase: in a window when a display exists, otherwise headless (writes a PNG and
# prints the device profile and the frame's plan).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-packages.sh mesa-vulkan-drivers libvulkan1 libx11-6 libxcursor1 libxi6 \
    libxrandr2 libxkbcommon-x11-0

if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
    export XDG_RUNTIME_DIR="$(mktemp -d)"
fi

cargo run --release --example showcase -- "$@"
