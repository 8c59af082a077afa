#version 450
#extension GL_GOOGLE_include_directive : require
// bevy_ui's node shader, fragment stage: a line-by-line port of bevy_ui_render 0.19.1's ui.wgsl
// (`fragment` and its helpers), constants and order kept, for the tile render pass's `ui`
// subpass. `ANTI_ALIAS` (a shader def in Bevy, `UiAntiAlias`) is specialisation constant 0.
// `COVER_PIXELS` (constant 1, not Bevy's) is on with MSAA: Bevy draws UI at 1x over the resolved
// image, so only pixels whose centre the laid-out quad covers are drawn, all samples of each
// (the quads come grown by a pixel: gpu/ui.rs `cover_whole_pixels`).

layout(constant_id = 0) const bool ANTI_ALIAS = true;
layout(constant_id = 1) const bool COVER_PIXELS = false;

const uint TEXTURED = 1u;

#include "ui_node.glsl"

layout(set = 0, binding = 0) uniform sampler2D sprite_texture;

layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec4 in_color;
layout(location = 2) flat in vec2 in_size;
layout(location = 3) flat in uint in_flags;
layout(location = 4) flat in vec4 in_radius;
layout(location = 5) flat in vec4 in_border;
layout(location = 6) in vec2 in_point;
layout(location = 7) flat in vec4 in_bounds;

layout(location = 0) out vec4 out_color;

void main() {
    // Sampled in uniform control flow whatever the flags say, as Bevy does.
    vec4 texture_color = texture(sprite_texture, in_uv);

    // Without sample shading gl_FragCoord is the pixel's centre: the pixel is the UI's where
    // the quad as laid out covers it, as at 1x (left and top edges in, right and bottom out).
    if (COVER_PIXELS
        && (any(lessThan(gl_FragCoord.xy, in_bounds.xy))
            || any(greaterThanEqual(gl_FragCoord.xy, in_bounds.zw)))) {
        discard;
    }

    // The texture's colour only with `TEXTURED`: textured and untextured shapes share batches.
    vec4 color = enabled(in_flags, TEXTURED) ? in_color * texture_color : in_color;

    if (enabled(in_flags, BORDER_ANY)) {
        out_color = draw_uinode_border(color, in_point, in_size, in_radius, in_border, in_flags);
    } else {
        out_color = draw_uinode_background(color, in_point, in_size, in_radius, in_border, in_flags);
    }
}
