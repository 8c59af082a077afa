#version 450
// bevy_ui's texture slice shader, fragment stage: a line-by-line port of bevy_ui_render 0.19.1's
// ui_texture_slice.wgsl (`fragment` and its helpers) for the tile render pass's `ui` subpass,
// drawn with ui.vert: a sliced or tiled image's vertex is a `UiVertex` (gpu/ui.rs, built by
// overlays/ui_in_pass.rs `push_texture_slice`) whose `radius` holds Bevy's `texture_slices`,
// `border` its `target_slices`, `extra` its `repeat`, and `size` and `point` the two corners of
// its `atlas_rect`. `COVER_PIXELS` is ui.frag's constant 1: with MSAA only the pixels whose
// centre the laid-out quad covers are drawn, all samples of each, as Bevy's UI at 1x.

layout(constant_id = 1) const bool COVER_PIXELS = false;

layout(set = 0, binding = 0) uniform sampler2D sprite_texture;

layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec4 in_color;
layout(location = 2) flat in vec2 in_size;
layout(location = 3) flat in uint in_flags;
layout(location = 4) flat in vec4 in_radius;
layout(location = 5) flat in vec4 in_border;
layout(location = 6) in vec2 in_point;
layout(location = 7) flat in vec4 in_bounds;
layout(location = 8) flat in vec4 in_extra;

layout(location = 0) out vec4 out_color;

// Maps a point along the axis of the render target to slice coordinates.
float map_axis_with_repeat(
    // Normalized distance along the axis.
    float p,
    // Target min dividing point.
    float il,
    // Target max dividing point.
    float ih,
    // Slice min dividing point.
    float tl,
    // Slice max dividing point.
    float th,
    // Number of times to repeat the slice for sides and the center.
    float r
) {
    if (p < il) {
        // Inside one of the two left (horizontal axis) or top (vertical axis) corners.
        return (p / il) * tl;
    } else if (ih < p) {
        // Inside one of the two (horizontal axis) or top (vertical axis) corners.
        return th + ((p - ih) / (1 - ih)) * (1 - th);
    } else {
        // Not inside a corner, repeat the texture.
        return tl + fract((r * (p - il)) / (ih - il)) * (th - tl);
    }
}

vec2 map_uvs_to_slice(vec2 uv, vec4 target_slices, vec4 texture_slices, vec4 repeat_) {
    vec2 r;
    if (target_slices.x <= uv.x && uv.x <= target_slices.z && target_slices.y <= uv.y
        && uv.y <= target_slices.w) {
        // The center repeat values if the uv coords are inside the center slice of the target.
        r = repeat_.zw;
    } else {
        // The side repeat values if the uv coords are outside the center slice.
        r = repeat_.xy;
    }
    // Map the horizontal axis.
    float x = map_axis_with_repeat(uv.x, target_slices.x, target_slices.z, texture_slices.x,
                                   texture_slices.z, r.x);
    // Map the vertical axis.
    float y = map_axis_with_repeat(uv.y, target_slices.y, target_slices.w, texture_slices.y,
                                   texture_slices.w, r.y);
    return vec2(x, y);
}

void main() {
    if (COVER_PIXELS
        && (any(lessThan(gl_FragCoord.xy, in_bounds.xy))
            || any(greaterThanEqual(gl_FragCoord.xy, in_bounds.zw)))) {
        discard;
    }
    // Map the target uvs to slice coords.
    vec2 uv = map_uvs_to_slice(in_uv, in_border, in_radius, in_extra);
    // Map the slice coords to texture coords.
    vec4 atlas_rect = vec4(in_size, in_point);
    vec2 atlas_uv = atlas_rect.xy + uv * (atlas_rect.zw - atlas_rect.xy);
    out_color = in_color * texture(sprite_texture, atlas_uv);
}
