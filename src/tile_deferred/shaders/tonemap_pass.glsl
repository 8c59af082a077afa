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

// The path of a non-background pixel (or sample), before the sRGB encode: tone mapping, then
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

// Light-count heat map: 0 lights dark blue, then blue, cyan, green, yellow, red at 16 or more.
vec3 light_count_heat(float count) {
    float t = clamp(count / 16.0, 0.0, 1.0) * 4.0;
    vec3 stops[5] = vec3[](vec3(0.0, 0.0, 1.0), vec3(0.0, 1.0, 1.0), vec3(0.0, 1.0, 0.0),
                           vec3(1.0, 1.0, 0.0), vec3(1.0, 0.0, 0.0));
    if (count < 0.5) {
        return vec3(0.0, 0.0, 0.05);
    }
    int i = min(int(t), 3);
    return mix(stops[i], stops[i + 1], t - float(i));
}

// What a non-background pixel (or sample) shows: the tone-mapped light, or with a debug view
// (msaa.w, DEBUG_VIEW_* in common.glsl) the value the lighting pass wrote in its place, shown as
// is (no tone mapping, no dither), or the light count of the heat map.
// The light of a surface pixel (or sample) at `depth` with the camera's distance fog applied
// (fog.glsl); debug views show their values unfogged.
// mode.w bit 2 (TONEMAP_FLAG_FOG_IN_LIGHT): the lighting subpass already fogged the light.
bool tonemap_fogs() {
    return params.msaa.w == DEBUG_VIEW_NONE && fog_mode() != FOG_MODE_OFF
        && (params.mode.w & 4u) == 0u;
}

// Whether the fog applies to a surface pixel (or sample) whose G-buffer material.a is
// `material_a`: not to materials with fog_enabled = false (GBUFFER_NO_FOG), as in Bevy.
// Callers read the material only when tonemap_fogs().
bool fogs_surface(float material_a) {
    return !gbuffer_no_fog(material_a);
}

// `fog`: tonemap_fogs() and fogs_surface() of the pixel (or sample). `at` is where `depth` was
// rasterised (framebuffer coordinates), so that the fogged point lies on the surface: the
// directional inscattering's shadow lookup turns a point off the surface into a different shadow
// (and its acne into a different pattern). The shadow filter's noise follows the pixel, as in
// Bevy.
vec3 fogged_light(vec3 light, float depth, vec2 at, bool fog) {
    if (!fog) {
        return light;
    }
    return apply_fog(light, world_position_from_depth(view, at, depth), gl_FragCoord.xy);
}

// mode.w bits (gpu_types::tonemap_flags).
#define TONEMAP_FLAG_HDR_BACKGROUND 1u
#define TONEMAP_FLAG_BACKGROUND_IN_LIGHT 2u

bool background_in_light() {
    return (params.mode.w & TONEMAP_FLAG_BACKGROUND_IN_LIGHT) != 0u;
}

// What a background pixel (or sample) shows, `background` being its clear colour or skybox and
// `light` its light accumulation. An LDR camera shows the background as it is (Bevy neither tone
// maps nor dithers it); an HDR camera tone maps and dithers it like every pixel, as Bevy's
// tonemapping pass does to its HDR main texture, with the transparent meshes blended over it in
// the light where the light holds the background (the clear colour it was cleared to).
vec3 background_display(vec3 background, vec3 light) {
    if ((params.mode.w & TONEMAP_FLAG_HDR_BACKGROUND) == 0u || params.msaa.w != DEBUG_VIEW_NONE) {
        return background;
    }
    return tone_map_and_dither(background_in_light() ? light : background);
}

vec3 display_color(vec3 light) {
    uint debug_view = params.msaa.w;
    if (debug_view == DEBUG_VIEW_NONE) {
        return tone_map_and_dither(light);
    }
    if (debug_view == DEBUG_VIEW_LIGHT_COUNT) {
        return light_count_heat(light.r);
    }
    return clamp(light, vec3(0.0), vec3(1.0));
}

#ifndef MSAA
// Subpass 2 with fullscreen.vert, single-sample: Bevy's in-shader tone mapping of an LDR camera
// (bevy_core_pipeline tonemapping_shared.wgsl tone_mapping() as the mesh pipeline compiles it, then
// pbr_functions.wgsl main_pass_post_lighting_processing's DEBAND_DITHER), on the pre-exposed light
// accumulated in subpasses 0 and 1. Background pixels get the clear colour untouched.
// The bindings and the tone mapping operators are in tonemap.glsl.

void main() {
    bool encode_srgb = params.mode.z == 1u;

    float depth = TILE_READ(depth_input).r;
    if (depth == 0.0) {
        // Background: Bevy neither tone maps nor dithers the clear colour (or the skybox) of an
        // LDR camera.
        if (params.clear_color.a < 0.5 && !skybox_enabled()) {
            discard;
        }
        vec3 clear_rgb = background_color(gl_FragCoord.xy, params.clear_color.rgb);
        vec3 light = background_in_light() ? TILE_READ(light_accumulation).rgb : clear_rgb;
        vec3 color = background_display(clear_rgb, light);
        out_color = vec4(encode_srgb ? linear_to_srgb(color) : color, 1.0);
        return;
    }

    bool fog = tonemap_fogs() && fogs_surface(TILE_READ(material_input).a);
    vec3 color = display_color(fogged_light(TILE_READ(light_accumulation).rgb, depth, gl_FragCoord.xy, fog));
    out_color = vec4(encode_srgb ? linear_to_srgb(color) : color, 1.0);
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
    bool encode_srgb = params.mode.z == 1u;
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

    out_color = vec4(encode_srgb ? linear_to_srgb(color) : color, 1.0);
}

#endif // MSAA
