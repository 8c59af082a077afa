#!/usr/bin/env bash
# Compiles every .vert/.frag in src/tile_deferred/shaders/ to SPIR-V in its spirv/ folder
# (spirv/<name>.<stage>.spv, e.g. spirv/gbuffer.frag.spv) with glslangValidator for Vulkan 1.1 (SPIR-V 1.3).
# Deterministic: no debug information (-g0), so the same sources always give the same bytes.
# Fails on any compiler warning, and validates each module with spirv-val when it is installed.
# Variants are separate sources, never -D flags (the spirv_matches_glsl_sources test compiles each
# file without any): e.g. lighting_global_ms.frag is `#define MSAA` + `#include "lighting_global.glsl"`,
# the body it shares with lighting_global.frag. Include files (*.glsl) are not compiled on their own.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shader_dir="$repo_root/src/tile_deferred/shaders"

if ! command -v glslangValidator >/dev/null 2>&1; then
    echo "compile-shaders: glslangValidator not found (Debian/Ubuntu: apt-get install glslang-tools)" >&2
    exit 1
fi
have_spirv_val=0
if command -v spirv-val >/dev/null 2>&1; then
    have_spirv_val=1
else
    echo "compile-shaders: spirv-val not found, skipping validation (apt-get install spirv-tools)" >&2
fi

cd "$shader_dir"
shopt -s nullglob
sources=(*.vert *.frag)
if [ ${#sources[@]} -eq 0 ]; then
    echo "compile-shaders: no shaders in $shader_dir" >&2
    exit 1
fi

status=0
for src in "${sources[@]}"; do
    out="spirv/$src.spv"
    tmp="$(mktemp "${TMPDIR:-/tmp}/compile-shaders.XXXXXX")"
    # glslangValidator prints the file name, then any message, on stdout.
    if ! log="$(glslangValidator -V --target-env vulkan1.1 -g0 -o "$tmp" "$src" 2>&1)"; then
        echo "$log" >&2
        echo "compile-shaders: $src failed to compile" >&2
        rm -f "$tmp"
        status=1
        continue
    fi
    messages="$(printf '%s\n' "$log" | grep -v -x -F "$src" || true)"
    if [ -n "$messages" ]; then
        echo "$messages" >&2
        echo "compile-shaders: $src compiled with warnings" >&2
        rm -f "$tmp"
        status=1
        continue
    fi
    if [ "$have_spirv_val" -eq 1 ] && ! spirv-val --target-env vulkan1.1 "$tmp"; then
        echo "compile-shaders: $src failed spirv-val" >&2
        rm -f "$tmp"
        status=1
        continue
    fi
    mv "$tmp" "$out"
    chmod 644 "$out"
    echo "compile-shaders: $src -> src/tile_deferred/shaders/$out"
done
exit $status
