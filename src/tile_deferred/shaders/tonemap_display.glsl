// What the tonemap pass writes for a pixel (or sample) from its light: Bevy's in-shader tone
// mapping and deband dither, the fog, the background and the debug views. Included by the tonemap
// pass (tonemap_pass.glsl) and by the lighting that tone maps (lighting.glsl,
// TONEMAP_IN_LIGHTING). Requires common.glsl, tonemap.glsl, skybox.glsl, shadows.glsl and
// fog.glsl.

#ifndef TILE_DEFERRED_TONEMAP_DISPLAY_GLSL
#define TILE_DEFERRED_TONEMAP_DISPLAY_GLSL

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
    vec3 clear_rgb = background_color(gl_FragCoord.xy, params.clear_color.rgb);
    vec3 light = background_in_light() ? TILE_READ(light_accumulation).rgb : clear_rgb;
    return encoded_output(background_display(clear_rgb, light));
}

// A single-sample surface pixel of accumulated `light` at `depth`, fogged where `fog`.
vec4 surface_output(vec3 light, float depth, bool fog) {
    return encoded_output(display_color(fogged_light(light, depth, gl_FragCoord.xy, fog)));
}
#endif

#endif // TILE_DEFERRED_TONEMAP_DISPLAY_GLSL
