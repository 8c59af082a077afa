// What the tonemap pass writes for a pixel (or sample) from its light: Bevy's in-shader tone
// mapping and deband dither, the fog, the background and the debug views. Included by the tonemap
// pass (tonemap_pass.glsl) and by the lighting that tone maps (lighting.glsl,
// TONEMAP_IN_LIGHTING). Requires common.glsl, tonemap.glsl, skybox.glsl, shadows.glsl and
// fog.glsl.

#ifndef TILE_DEFERRED_TONEMAP_DISPLAY_GLSL
#define TILE_DEFERRED_TONEMAP_DISPLAY_GLSL

// The centre of this pixel, in framebuffer coordinates: gl_FragCoord where the shader runs per
// pixel, and under sample-rate shading (the lighting's MSAA edge draw) still the pixel's, so
// that the dither, the skybox ray and the shadow filter's noise are per pixel, as in Bevy.
vec2 pixel_centre() {
    return floor(gl_FragCoord.xy) + 0.5;
}

// The path of a non-background pixel (or sample), before the sRGB encode: tone mapping, then
// Bevy's deband dither (per pixel: every sample of a pixel gets the same dither).
vec3 tone_map_and_dither(vec3 light) {
    vec4 output_color = vec4(light, 1.0);
    output_color = tone_mapping(output_color, params.mode.x, view.exposure.yz);

    if (params.mode.y == 1u) {
        vec3 output_rgb = output_color.rgb;
        output_rgb = powsafe(output_rgb, 1.0 / 2.2);
        output_rgb += screen_space_dither(pixel_centre());
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
    return apply_fog(light, world_position_from_depth(view, at, depth), pixel_centre());
}

// mode.w bits (gpu_types::tonemap_flags).
#define TONEMAP_FLAG_HDR_BACKGROUND 1u
#define TONEMAP_FLAG_BACKGROUND_IN_LIGHT 2u
#define TONEMAP_FLAG_STORES_LIGHT 8u

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

// The output's value for a display-referred linear colour: sRGB-encoded for a UNORM output.
vec4 encoded_output(vec3 color) {
    return vec4(params.mode.z == 1u ? linear_to_srgb(color) : color, 1.0);
}

#ifndef MSAA
// A single-sample background pixel (depth 0): its clear colour or skybox, as the LDR or HDR
// camera shows it. Discards where the output keeps what it held (no clear colour, no skybox).
vec4 background_output() {
    // Bevy neither tone maps nor dithers the clear colour (or the skybox) of an LDR camera.
    if (params.clear_color.a < 0.5 && !skybox_enabled()) {
        discard;
    }
    vec3 clear_rgb = background_color(pixel_centre(), params.clear_color.rgb);
    vec3 light = background_in_light() ? TILE_READ(light_accumulation).rgb : clear_rgb;
    return encoded_output(background_display(clear_rgb, light));
}

// A single-sample surface pixel of accumulated `light` at `depth`, fogged where `fog`.
vec4 surface_output(vec3 light, float depth, bool fog) {
    return encoded_output(display_color(fogged_light(light, depth, pixel_centre(), fog)));
}
#else // MSAA

#ifndef MSAA_FLAG_DEBUG_EDGES
#define MSAA_FLAG_DEBUG_EDGES (1u << 1)
#endif
#ifndef MSAA_MAX_SAMPLES
#define MSAA_MAX_SAMPLES 8
#endif

// msaa.z bit 1 (the edge-mask debug view): a colour shaded per sample, pure red mixed 50% over.
vec3 debug_edge_tint(vec3 color) {
    if ((params.msaa.z & MSAA_FLAG_DEBUG_EDGES) != 0u) {
        return mix(color, vec3(1.0, 0.0, 0.0), 0.5);
    }
    return color;
}

// The light subpass 0 left in surface sample i. Where the lighting tone maps, it reads that light
// itself, and a mesh that emits none left it unwritten (GBUFFER_NO_LIGHT): zero. (The tonemap
// pass reads the light after the lighting has replaced it there.)
vec3 surface_light_sample(int i) {
#ifdef TONEMAP_IN_LIGHTING
    if (!gbuffer_light_written(TILE_READ_SAMPLE(material_input, i).a)) {
        return vec3(0.0);
    }
#endif
    return TILE_READ_SAMPLE(light_accumulation, i).rgb;
}

int tonemap_sample_count() {
    return int(clamp(params.msaa.y, 1u, uint(MSAA_MAX_SAMPLES)));
}

// Sample i's display colour, clamped to [0, 1] as the 8-bit output stores it: `added` is light
// to add if it is a surface sample, `clear_rgb` the pixel's background. A surface sample is
// fogged at its own location (a point on its surface). Where the output stores the light that
// Bevy tone maps after the pass (TONEMAP_FLAG_STORES_LIGHT, mode.w bit 3), nothing is clamped:
// Bevy resolves its HDR main texture's samples as they are, before its bloom and tone mapping.
vec3 msaa_sample_display(int i, vec3 added, vec3 clear_rgb) {
    float depth = TILE_READ_SAMPLE(depth_input, i).r;
    vec3 color;
    if (depth == 0.0) {
        color = background_display(clear_rgb, TILE_READ_SAMPLE(light_accumulation, i).rgb);
    } else {
        bool fog = tonemap_fogs() && fogs_surface(TILE_READ_SAMPLE(material_input, i).a);
        vec2 at = floor(gl_FragCoord.xy) + msaa_sample_location(tonemap_sample_count(), i);
        color = display_color(fogged_light(surface_light_sample(i) + added, depth, at, fog));
    }
    if ((params.mode.w & TONEMAP_FLAG_STORES_LIGHT) != 0u) {
        return color;
    }
    return clamp(color, vec3(0.0), vec3(1.0));
}

// What one pixel shows with MSAA, from every sample of the light accumulation and the depth
// (and, where the pass fogs, the material), `added` being light to add to each surface sample
// first (the lighting that tone maps shades an interior pixel once; the tonemap pass adds
// nothing). Tone mapping happens before the resolve, so that bright edges anti-alias like Bevy's
// forward MSAA (which tone maps per fragment and resolves the display-referred colours):
// - interior pixel (every sample has the same light and the same background-ness) -> tone map
//   once: exactly the single-sample result for that light;
// - otherwise -> tone map (and dither) each sample, background samples taking the clear colour
//   untouched as without MSAA, clamp each to [0, 1] as the 8-bit output stores it, and average
//   the display-referred linear colours; the sRGB encode (UNORM outputs) is applied to the
//   average, as an *_SRGB attachment's (linear) resolve would.
// Surface samples whose materials differ in fog_enabled (GBUFFER_NO_FOG) also make an edge pixel
// when the pass fogs. Sample depths are not compared beyond background-ness: the samples of one
// sloped surface have different depths but, with the same light, the same tone-mapped colour, so
// comparing depths would only send every sloped surface down the per-sample path for the same
// result.
// msaa.z bit 1 (debug): pixels that took the per-sample path are tinted, pure red mixed 50% over
// the result.
// clear_color.a == 0 (keep the loaded contents) is not used with MSAA; the clear colour is
// written on background samples regardless, which is safe.
vec3 msaa_pixel_display(vec3 added) {
    int sample_count = tonemap_sample_count();
    // Background: Bevy neither tone maps nor dithers the clear colour of an LDR camera.
    // (Or the skybox, where there is one: Bevy shades it once per pixel, at the pixel centre.)
    vec3 clear_rgb = background_color(pixel_centre(), params.clear_color.rgb);

    float depth0 = TILE_READ_SAMPLE(depth_input, 0).r;
    bool background0 = depth0 == 0.0;
    vec3 light0 = background0 ? TILE_READ_SAMPLE(light_accumulation, 0).rgb
                              : surface_light_sample(0) + added;
    // The material is read only for surface samples (a background sample's is undefined) and
    // only where the pass fogs.
    bool fogs = tonemap_fogs();
    bool fog0 = fogs && !background0 && fogs_surface(TILE_READ_SAMPLE(material_input, 0).a);
    bool interior = true;
    for (int i = 1; i < sample_count; ++i) {
        bool background = TILE_READ_SAMPLE(depth_input, i).r == 0.0;
        bool lit = !background || background_in_light();
        vec3 light = background ? TILE_READ_SAMPLE(light_accumulation, i).rgb
                                : surface_light_sample(i) + added;
        if (background != background0
            || (lit && any(notEqual(light, light0)))
            || (fogs && !background
                && fogs_surface(TILE_READ_SAMPLE(material_input, i).a) != fog0)) {
            interior = false;
            break;
        }
    }

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
        return background0
            ? background_display(clear_rgb, light0)
            : display_color(fogged_light(light0, centre_depth, pixel_centre(), fog0));
    }
    // Each sample clamped to [0, 1] as the 8-bit output would store it, so that one very bright
    // sample (TONEMAP_NONE, or an emissive over the clear colour) cannot outweigh the others:
    // what forward MSAA's per-sample stores and resolve give.
    vec3 sum = vec3(0.0);
    for (int i = 0; i < sample_count; ++i) {
        sum += msaa_sample_display(i, added, clear_rgb);
    }
    return debug_edge_tint(sum / float(sample_count));
}

#endif // MSAA

#endif // TILE_DEFERRED_TONEMAP_DISPLAY_GLSL
