#version 450
#extension GL_GOOGLE_include_directive : require

// MSAA variant of tonemap.frag: subpass 2 at N samples with fullscreen.vert, shaded per pixel.
// Reads every sample of the light accumulation and the depth (subpassInputMS, set 3 bindings 0
// and 1; the LUT is binding 2 as in tonemap.frag) and writes one colour per pixel to location 0,
// an N-sample transient attachment that pResolveAttachments resolves in-pass into the
// single-sample output (the hardware average of N identical values is that value).
//
// Tone mapping happens before the resolve, so that bright edges anti-alias like Bevy's forward
// MSAA (which tone maps per fragment and resolves the display-referred colours):
// - interior pixel (every sample has the same light and the same background-ness) -> tone map
//   once: exactly tonemap.frag's result for that light;
// - otherwise -> tone map (and dither) each sample, background samples taking the clear colour
//   untouched as in tonemap.frag, clamp each to [0, 1] as the 8-bit output stores it, and average
//   the display-referred linear colours; the sRGB encode (UNORM outputs) is applied to the
//   average, as an *_SRGB attachment's (linear) resolve would.
// Sample depths are not compared beyond background-ness: the samples of one sloped surface have
// different depths but, with the same light, the same tone-mapped colour, so comparing depths
// would only send every sloped surface down the per-sample path for the same result.
// msaa.z bit 1 (debug): pixels that took the per-sample path (the edge mask as it reaches the
// output) are tinted, pure red mixed 50% over the result.
// clear_color.a == 0 (keep the loaded contents) is not used with MSAA; the clear colour is
// written on background samples regardless, which is safe.

#define MSAA

#include "common.glsl"
#include "tonemap.glsl"

#define MSAA_FLAG_DEBUG_EDGES (1u << 1)
#define MSAA_MAX_SAMPLES 8

// tonemap.frag's path for a non-background pixel, before the sRGB encode: tone mapping, then
// Bevy's deband dither (per pixel: every sample of a pixel gets the same dither).
vec3 tone_map_and_dither(vec3 light) {
    vec4 output_color = vec4(light, 1.0);
    output_color = tone_mapping(output_color, params.mode.x);

    if (params.mode.y == 1u) {
        vec3 output_rgb = output_color.rgb;
        output_rgb = powsafe(output_rgb, 1.0 / 2.2);
        output_rgb += screen_space_dither(gl_FragCoord.xy);
        // This conversion back to linear space is required because the output is stored as sRGB.
        output_rgb = powsafe(output_rgb, 2.2);
        output_color = vec4(output_rgb, output_color.a);
    }
    return output_color.rgb;
}

void main() {
    bool encode_srgb = params.mode.z == 1u;
    int sample_count = int(clamp(params.msaa.y, 1u, uint(MSAA_MAX_SAMPLES)));
    // Background: Bevy neither tone maps nor dithers the clear colour of an LDR camera.
    vec3 clear_rgb = params.clear_color.rgb;

    vec3 light0 = subpassLoad(light_accumulation, 0).rgb;
    bool background0 = subpassLoad(depth_input, 0).r == 0.0;
    bool interior = true;
    for (int i = 1; i < sample_count; ++i) {
        bool background = subpassLoad(depth_input, i).r == 0.0;
        if (background != background0
            || (!background && any(notEqual(subpassLoad(light_accumulation, i).rgb, light0)))) {
            interior = false;
            break;
        }
    }

    vec3 color;
    if (interior) {
        color = background0 ? clear_rgb : tone_map_and_dither(light0);
    } else {
        // Each sample clamped to [0, 1] as the 8-bit output would store it, so that one very
        // bright sample (TONEMAP_NONE, or an emissive over the clear colour) cannot outweigh the
        // others: what forward MSAA's per-sample stores and resolve give.
        vec3 sum = vec3(0.0);
        for (int i = 0; i < sample_count; ++i) {
            vec3 sample_color;
            if (subpassLoad(depth_input, i).r == 0.0) {
                sample_color = clear_rgb;
            } else {
                sample_color = tone_map_and_dither(subpassLoad(light_accumulation, i).rgb);
            }
            sum += clamp(sample_color, vec3(0.0), vec3(1.0));
        }
        color = sum / float(sample_count);
        if ((params.msaa.z & MSAA_FLAG_DEBUG_EDGES) != 0u) {
            color = mix(color, vec3(1.0, 0.0, 0.0), 0.5);
        }
    }

    out_color = vec4(encode_srgb ? linear_to_srgb(color) : color, 1.0);
}
