#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 1, drawn with fullscreen.vert, blended into the light attachment (ONE +
// ONE_MINUS_SRC_ALPHA): the whole lighting of a pixel (or, on MSAA edges, of a sample) in one
// draw: surface_light() (surface_lighting.glsl) of the G-buffer's surface, times the view exposure
// as apply_pbr_lighting does: exposure * (direct + indirect). Added (alpha 0) to the emissive
// light subpass 0 wrote, or replacing (alpha 1) what the attachment holds where subpass 0 wrote
// none (GBUFFER_NO_LIGHT: a mesh that emits no light).
//
// Compiled once per variant of the table in mod.rs (`ShaderId::Lighting`), with -D defines:
// none (single-sample); MSAA (gbuffer_input.glsl then reads the multisampled G-buffer and
// gbuffer_msaa.glsl defines load_gbuffer()): with MSAA_STENCIL_PIXEL (stencil split, interior
// pixels: sample 0 for every sample), with MSAA_STENCIL_SAMPLE (stencil split, edge pixels:
// sample-rate shading, gl_SampleID) or alone (the fallback drawn N times, once per sample index:
// classifies the pixel, picks the sample and sets gl_SampleMask); SAMPLED_ATTACHMENTS (the unmerged
// tier, see attachment_read.glsl); TONEMAP_IN_LIGHTING (merged, no transparent pass; with MSAA
// only under the stencil split: the plan has no tonemap subpass, and this one writes the output,
// reading the light attachment's emissive as input attachment 4 and tone mapping the sum as the
// tonemap pass would; one full-screen pass and the blend into the light less). Everything else
// is the same in all variants.

#include "common.glsl"
#include "pbr_lighting.glsl"
#ifdef TONEMAP_IN_LIGHTING
// The tonemap set's light, depth and material are this subpass's input attachments 4, 3 and 2
// (plan.rs declares albedo, normal, material, depth, then the light).
#define TONEMAP_LIGHT_INPUT 4
#define TONEMAP_DEPTH_INPUT 3
#define TONEMAP_MATERIAL_INPUT 2
#include "tonemap.glsl"
#define msaa_params params
#endif
#include "gbuffer_input.glsl"
#include "clusters.glsl"
#include "shadows.glsl"
#include "environment.glsl"
#include "surface_lighting.glsl"
#ifdef TONEMAP_IN_LIGHTING
#include "skybox.glsl"
#include "fog.glsl"
#include "tonemap_display.glsl"
#endif

// The stencil split's test must run before the shader: the lighting draws write no depth or
// stencil, and a driver that tests late (the shader may discard) would shade every sample of every
// pixel in the edge draw (measured on lavapipe: edge-selective lighting then cost 1.4x lighting
// every sample).
layout(early_fragment_tests) in;

#ifndef TONEMAP_IN_LIGHTING
layout(location = 0) out vec4 out_light;
#endif

// What a G-buffer debug view shows of this sample, as light the tonemap pass displays unchanged:
// linear albedo; the normal, roughness/metallic/reflectance and a depth ramp as 8-bit codes.
vec3 gbuffer_debug_value(GbufferSample s, uint debug_view) {
    if (debug_view == DEBUG_VIEW_ALBEDO) {
        return s.base_color;
    }
    if (debug_view == DEBUG_VIEW_NORMAL) {
        return srgb_to_linear(s.N * 0.5 + 0.5);
    }
    if (debug_view == DEBUG_VIEW_MATERIAL) {
        return srgb_to_linear(vec3(s.perceptual_roughness, s.metallic, s.reflectance));
    }
    // Depth: 1 at the camera, 0.5 at 10 world units, towards 0 far away.
    float distance_to_view = length(s.world_position - view.world_position.xyz);
    return srgb_to_linear(vec3(1.0 / (1.0 + 0.1 * distance_to_view)));
}

// The light this pass adds to the pixel (or sample): false where it adds none (background and
// unlit pixels keep what subpass 0 wrote). `light_written`: subpass 0 wrote the pixel's light.
bool added_light(out vec3 added, out bool light_written) {
    added = vec3(0.0);
    GbufferSample s;
    bool surface = load_gbuffer(s);
    light_written = s.light_written;
    if (!surface) {
        return false;
    }
    uint debug_view = msaa_params.msaa.w;
    uint cluster = cluster_index(gl_FragCoord.xy, s.world_position);
    uint clusters = cluster_count();
    uint words = view.cluster_grid.w;
    if (debug_view == DEBUG_VIEW_LIGHT_COUNT) {
        uint count = 0u;
        for (uint word = 0u; word < words; word++) {
            count += uint(bitCount(cluster_light_masks[word * clusters + cluster]));
        }
        added = vec3(float(count), 0.0, 0.0);
        return true;
    }
    if (debug_view_replaces_lighting(debug_view)) {
        added = gbuffer_debug_value(s, debug_view);
        return true;
    }
    LightingInput lighting_input = lighting_input_from_gbuffer(s);

    // Shadows are looked up with the shading normal (Bevy's forward path uses the interpolated
    // geometric one, its deferred path the shading one, as here).
    vec3 light = surface_light(lighting_input, s.world_position, s.N, s.shadow_receiver,
                               gl_FragCoord.xy, cluster, s.perceptual_roughness,
                               s.diffuse_occlusion);
    added = view.exposure.x * light;
    return true;
}

#ifndef TONEMAP_IN_LIGHTING
void main() {
    vec3 added;
    bool light_written;
    if (!added_light(added, light_written)) {
        discard; // background or unlit: keep what subpass 0 wrote
    }
    out_light = vec4(added, light_written ? 0.0 : 1.0);
}
#elif !defined(MSAA)
// The tonemap pass's single-sample main (tonemap_pass.glsl) on the light attachment plus the
// light added here, summed at full precision (the tonemap pass reads it back from the 32-bit
// light attachment).
void main() {
    float depth = TILE_READ(depth_input).r;
    if (depth == 0.0) {
        out_color = background_output();
        return;
    }
    vec3 added;
    bool light_written;
    bool lit = added_light(added, light_written);
    vec3 light = light_written ? TILE_READ(light_accumulation).rgb : vec3(0.0);
    if (lit) {
        light += added;
    }
    bool fog = tonemap_fogs() && fogs_surface(TILE_READ(material_input).a);
    out_color = surface_output(light, depth, fog);
}
#elif defined(MSAA_STENCIL_PIXEL)
// The stencil split's interior (and all-background) pixels, once per pixel: the tonemap pass's
// MSAA main (msaa_pixel_display) with the light shaded here added to every surface sample,
// written to every sample of the multisampled output (resolved at the end of the subpass).
void main() {
    vec3 added;
    bool light_written;
    if (!added_light(added, light_written)) {
        added = vec3(0.0);
    }
    out_color = encoded_output(msaa_pixel_display(added));
}
#elif defined(MSAA_STENCIL_SAMPLE)
// The stencil split's edge pixels, per sample: this sample's light plus the light shaded here,
// tone mapped and clamped as the tonemap pass's per-sample path does; the resolve averages the
// samples (in linear light: this variant is used only where the output is not a UNORM format
// encoded in the shader, see plan::ViewFrameDesc::lighting_tonemaps).
void main() {
    vec3 added;
    bool light_written;
    if (!added_light(added, light_written)) {
        added = vec3(0.0);
    }
    vec3 clear_rgb = background_color(pixel_centre(), params.clear_color.rgb);
    out_color = encoded_output(debug_edge_tint(msaa_sample_display(gl_SampleID, added, clear_rgb)));
}
#else
#error "the lighting tone maps with MSAA only under the stencil split"
#endif
