#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 2 with fullscreen.vert, single-sample: Bevy's in-shader tone mapping of an LDR camera
// (bevy_core_pipeline tonemapping_shared.wgsl tone_mapping() as the mesh pipeline compiles it, then
// pbr_functions.wgsl main_pass_post_lighting_processing's DEBAND_DITHER), on the pre-exposed light
// accumulated in subpasses 0 and 1. Background pixels get the clear colour untouched.
// The bindings and the tone mapping operators are in tonemap.glsl (shared with tonemap_ms.frag).

#include "common.glsl"
#include "tonemap.glsl"

void main() {
    bool encode_srgb = params.mode.z == 1u;

    float depth = subpassLoad(depth_input).r;
    if (depth == 0.0) {
        // Background: Bevy neither tone maps nor dithers the clear colour of an LDR camera.
        if (params.clear_color.a < 0.5) {
            discard;
        }
        vec3 clear_rgb = params.clear_color.rgb;
        out_color = vec4(encode_srgb ? linear_to_srgb(clear_rgb) : clear_rgb, 1.0);
        return;
    }

    vec4 output_color = vec4(subpassLoad(light_accumulation).rgb, 1.0);
    output_color = tone_mapping(output_color, params.mode.x);

    if (params.mode.y == 1u) {
        vec3 output_rgb = output_color.rgb;
        output_rgb = powsafe(output_rgb, 1.0 / 2.2);
        output_rgb += screen_space_dither(gl_FragCoord.xy);
        // This conversion back to linear space is required because the output is stored as sRGB.
        output_rgb = powsafe(output_rgb, 2.2);
        output_color = vec4(output_rgb, output_color.a);
    }

    out_color = vec4(encode_srgb ? linear_to_srgb(output_color.rgb) : output_color.rgb, 1.0);
}
