#version 450
// egui's shader, fragment stage: a line-by-line port of bevy_egui 0.42's egui.wgsl (`fs_main`
// and its colour helpers) for the tile render pass's `ui` subpass, drawn with ui.vert. egui's
// vertices reach it as `UiVertex`es (inspector/in_pass.rs): its position in the UI view's
// pixels, its UV, and its sRGB bytes over 255 as the colour, so that the colour is interpolated
// gamma-encoded, as egui.wgsl interpolates its `Unorm8x4`. The output is premultiplied linear
// light, blended with egui's `PREMULTIPLIED_ALPHA_BLENDING` (gpu/ui.rs).

layout(set = 0, binding = 0) uniform sampler2D image_texture;

layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec4 in_color;

layout(location = 0) out vec4 out_color;

// 0-1 linear from 0-1 sRGB gamma.
vec3 linear_from_gamma_rgb(vec3 srgb) {
    bvec3 cutoff = lessThan(srgb, vec3(0.04045));
    vec3 lower = srgb / vec3(12.92);
    vec3 higher = pow((srgb + vec3(0.055)) / vec3(1.055), vec3(2.4));
    return mix(higher, lower, cutoff);
}

// 0-1 sRGB gamma from 0-1 linear.
vec3 gamma_from_linear_rgb(vec3 rgb) {
    bvec3 cutoff = lessThan(rgb, vec3(0.0031308));
    vec3 lower = rgb * vec3(12.92);
    vec3 higher = vec3(1.055) * pow(rgb, vec3(1.0 / 2.4)) - vec3(0.055);
    return mix(higher, lower, cutoff);
}

// 0-1 sRGBA gamma from 0-1 linear.
vec4 gamma_from_linear_rgba(vec4 linear_rgba) {
    return vec4(gamma_from_linear_rgb(linear_rgba.rgb), linear_rgba.a);
}

void main() {
    // Quoting egui's GLSL shader, as egui.wgsl does: "We multiply the colors in gamma space,
    // because that's the only way to get text to look right."
    vec4 texture_color_linear = texture(image_texture, in_uv);
    vec4 texture_color_gamma = gamma_from_linear_rgba(texture_color_linear);
    vec4 color_gamma = texture_color_gamma * in_color;
    out_color = vec4(linear_from_gamma_rgb(color_gamma.rgb), color_gamma.a);
}
