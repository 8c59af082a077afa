#version 450
#extension GL_GOOGLE_include_directive : require

// The tonemap pass (fullscreen.vert) in its four variants (the table in mod.rs,
// `ShaderId::Tonemap`): single-sample with input attachments (no defines), MSAA (-D MSAA), and the
// unmerged tier's (-D SAMPLED_ATTACHMENTS, with or without MSAA: the light, depth and G-buffer
// material are textures stored by the earlier render passes, see attachment_read.glsl). Everything below is the same in
// all of them.

#include "common.glsl"
#include "tonemap.glsl"
#include "skybox.glsl"
#include "shadows.glsl"
#include "fog.glsl"
#include "tonemap_display.glsl"

#ifndef MSAA
// Subpass 2 with fullscreen.vert, single-sample: Bevy's in-shader tone mapping of an LDR camera
// (bevy_core_pipeline tonemapping_shared.wgsl tone_mapping() as the mesh pipeline compiles it, then
// pbr_functions.wgsl main_pass_post_lighting_processing's DEBAND_DITHER), on the pre-exposed light
// accumulated in subpasses 0 and 1. Background pixels get the clear colour untouched.
// The bindings and the tone mapping operators are in tonemap.glsl.

void main() {
    float depth = TILE_READ(depth_input).r;
    if (depth == 0.0) {
        out_color = background_output();
        return;
    }
    bool fog = tonemap_fogs() && fogs_surface(TILE_READ(material_input).a);
    out_color = surface_output(TILE_READ(light_accumulation).rgb, depth, fog);
}

#else // MSAA

// MSAA variant of the single-sample pass above: subpass 2 at N samples with fullscreen.vert, shaded per pixel.
// Reads every sample of the light accumulation and the depth (subpassInputMS, set 3 bindings 0
// and 1; the LUT is binding 2 as without MSAA; the material binding 4, where the pass fogs) and writes one colour per pixel to location 0,
// an N-sample transient attachment that pResolveAttachments resolves in-pass into the
// single-sample output (the hardware average of N identical values is that value).
//
// Tone mapping happens before the resolve, so that bright edges anti-alias like Bevy's forward
// MSAA (which tone maps per fragment and resolves the display-referred colours):
// - interior pixel (every sample has the same light and the same background-ness) -> tone map
//   once: exactly the single-sample result for that light;
// - otherwise -> tone map (and dither) each sample, background samples taking the clear colour
//   untouched as without MSAA, clamp each to [0, 1] as the 8-bit output stores it, and average
//   the display-referred linear colours; the sRGB encode (UNORM outputs) is applied to the
//   average, as an *_SRGB attachment's (linear) resolve would.
// Surface samples whose materials differ in fog_enabled (GBUFFER_NO_FOG) also make an edge pixel
// when the pass fogs. Sample depths are not compared beyond background-ness: the samples of one sloped surface have
// different depths but, with the same light, the same tone-mapped colour, so comparing depths
// would only send every sloped surface down the per-sample path for the same result.
// msaa.z bit 1 (debug): pixels that took the per-sample path (the edge mask as it reaches the
// output) are tinted, pure red mixed 50% over the result.
// clear_color.a == 0 (keep the loaded contents) is not used with MSAA; the clear colour is
// written on background samples regardless, which is safe.

#define MSAA_FLAG_DEBUG_EDGES (1u << 1)
#define MSAA_MAX_SAMPLES 8

void main() {
    int sample_count = int(clamp(params.msaa.y, 1u, uint(MSAA_MAX_SAMPLES)));
    // Background: Bevy neither tone maps nor dithers the clear colour of an LDR camera.
    // (Or the skybox, where there is one: Bevy shades it once per pixel, at the pixel centre.)
    vec3 clear_rgb = background_color(gl_FragCoord.xy, params.clear_color.rgb);

    vec3 light0 = TILE_READ_SAMPLE(light_accumulation, 0).rgb;
    float depth0 = TILE_READ_SAMPLE(depth_input, 0).r;
    bool background0 = depth0 == 0.0;
    // The material is read only for surface samples (a background sample's is undefined) and
    // only where the pass fogs.
    bool fogs = tonemap_fogs();
    bool fog0 = fogs && !background0 && fogs_surface(TILE_READ_SAMPLE(material_input, 0).a);
    bool interior = true;
    for (int i = 1; i < sample_count; ++i) {
        bool background = TILE_READ_SAMPLE(depth_input, i).r == 0.0;
        bool lit = !background || background_in_light();
        if (background != background0
            || (lit && any(notEqual(TILE_READ_SAMPLE(light_accumulation, i).rgb, light0)))
            || (fogs && !background
                && fogs_surface(TILE_READ_SAMPLE(material_input, i).a) != fog0)) {
            interior = false;
            break;
        }
    }

    vec3 color;
    if (interior) {
        // Fogged once, at the pixel centre, where forward MSAA fogs it: all samples lie on one
        // surface, whose depth is affine in screen space, and the standard sample locations are
        // centred on the pixel, so the samples' mean depth is the depth at the centre (as the
        // lighting's msaa_shade_at_pixel_centre). Sample 0's depth at the centre would put the
        // point off a sloped surface.
        float centre_depth = depth0;
        if (fog0) {
            centre_depth = 0.0;
            for (int i = 0; i < sample_count; ++i) {
                centre_depth += TILE_READ_SAMPLE(depth_input, i).r;
            }
            centre_depth /= float(sample_count);
        }
        color = background0
            ? background_display(clear_rgb, light0)
            : display_color(fogged_light(light0, centre_depth, gl_FragCoord.xy, fog0));
    } else {
        // Each sample clamped to [0, 1] as the 8-bit output would store it, so that one very
        // bright sample (TONEMAP_NONE, or an emissive over the clear colour) cannot outweigh the
        // others: what forward MSAA's per-sample stores and resolve give.
        vec3 sum = vec3(0.0);
        for (int i = 0; i < sample_count; ++i) {
            vec3 sample_color;
            float depth = TILE_READ_SAMPLE(depth_input, i).r;
            if (depth == 0.0) {
                sample_color = background_display(clear_rgb, TILE_READ_SAMPLE(light_accumulation, i).rgb);
            } else {
                vec3 light = TILE_READ_SAMPLE(light_accumulation, i).rgb;
                bool fog = fogs && fogs_surface(TILE_READ_SAMPLE(material_input, i).a);
                // At the sample's own location: a point on its surface.
                vec2 at = floor(gl_FragCoord.xy) + msaa_sample_location(sample_count, i);
                sample_color = display_color(fogged_light(light, depth, at, fog));
            }
            sum += clamp(sample_color, vec3(0.0), vec3(1.0));
        }
        color = sum / float(sample_count);
        if ((params.msaa.z & MSAA_FLAG_DEBUG_EDGES) != 0u) {
            color = mix(color, vec3(1.0, 0.0, 0.0), 0.5);
        }
    }

    out_color = encoded_output(color);
}

#endif // MSAA
