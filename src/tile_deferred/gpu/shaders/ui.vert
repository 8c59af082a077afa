#version 450
// bevy_ui's node shader, vertex stage: a line-by-line port of bevy_ui_render 0.19.1's ui.wgsl
// (`vertex`), for the tile render pass's `ui` subpass, and the vertex stage of box_shadow.frag,
// ui_texture_slice.frag and ui_gradient.frag. The vertex layout is Bevy's `UiVertex` (88 bytes),
// the quad's bounds and three vectors for the slices and gradients (gpu/ui.rs `UiVertex`);
// Bevy's `view.clip_from_world` of the UI view is a push constant (the UI pipeline layout has no
// view set).

layout(push_constant) uniform UiView {
    mat4 clip_from_world;
} ui_view;

layout(location = 0) in vec3 vertex_position;
layout(location = 1) in vec2 vertex_uv;
layout(location = 2) in vec4 vertex_color;
layout(location = 3) in uint vertex_flags;
// x: top left, y: top right, z: bottom right, w: bottom left.
layout(location = 4) in vec4 vertex_radius;
// x: left, y: top, z: right, w: bottom.
layout(location = 5) in vec4 vertex_border;
layout(location = 6) in vec2 vertex_size;
layout(location = 7) in vec2 vertex_point;
// Not Bevy's: with MSAA, the quad as laid out, in framebuffer pixels (gpu/ui.rs
// `cover_whole_pixels`).
layout(location = 8) in vec4 vertex_bounds;
// Not Bevy's `UiVertex`: a fourth vector for ui_texture_slice.frag (Bevy's `repeat`) and
// ui_gradient.frag (Bevy's `g_start` and `dir`), then the gradients' end colour and span (the
// segment's start and end along the gradient, its hint, its interpolation space).
layout(location = 9) in vec4 vertex_extra;
layout(location = 10) in vec4 vertex_end_color;
layout(location = 11) in vec4 vertex_span;

layout(location = 0) out vec2 out_uv;
layout(location = 1) out vec4 out_color;
layout(location = 2) flat out vec2 out_size;
layout(location = 3) flat out uint out_flags;
layout(location = 4) flat out vec4 out_radius;
layout(location = 5) flat out vec4 out_border;
// Position relative to the center of the rectangle.
layout(location = 6) out vec2 out_point;
layout(location = 7) flat out vec4 out_bounds;
layout(location = 8) flat out vec4 out_extra;
layout(location = 9) flat out vec4 out_end_color;
layout(location = 10) flat out vec4 out_span;

void main() {
    out_uv = vertex_uv;
    gl_Position = ui_view.clip_from_world * vec4(vertex_position, 1.0);
    out_color = vertex_color;
    out_flags = vertex_flags;
    out_radius = vertex_radius;
    out_size = vertex_size;
    out_border = vertex_border;
    out_point = vertex_point;
    out_bounds = vertex_bounds;
    out_extra = vertex_extra;
    out_end_color = vertex_end_color;
    out_span = vertex_span;
}
