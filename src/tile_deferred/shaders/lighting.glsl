#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 1, drawn with fullscreen.vert, blend ONE + ONE into the light attachment: the whole
// lighting of a pixel (or, on MSAA edges, of a sample) in one draw: surface_light()
// (surface_lighting.glsl) of the G-buffer's surface, times the view exposure as apply_pbr_lighting
// does: exposure * (direct + indirect). Emissive was written in subpass 0.
//
// Compiled once per variant of the table in mod.rs (`ShaderId::Lighting`), with -D defines:
// none (single-sample); MSAA (gbuffer_input.glsl then reads the multisampled G-buffer and
// gbuffer_msaa.glsl defines load_gbuffer()): with MSAA_STENCIL_PIXEL (stencil split, interior
// pixels: sample 0 for every sample), with MSAA_STENCIL_SAMPLE (stencil split, edge pixels:
// sample-rate shading, gl_SampleID) or alone (the fallback drawn N times, once per sample index:
// classifies the pixel, picks the sample and sets gl_SampleMask); SAMPLED_ATTACHMENTS (the unmerged
// tier, see attachment_read.glsl). Everything below is the same in all variants.

#include "common.glsl"
#include "pbr_lighting.glsl"
#include "gbuffer_input.glsl"
#include "clusters.glsl"
#include "shadows.glsl"
#include "environment.glsl"
#include "surface_lighting.glsl"

// The stencil split's test must run before the shader: the lighting draws write no depth or
// stencil, and a driver that tests late (the shader may discard) would shade every sample of every
// pixel in the edge draw (measured on lavapipe: edge-selective lighting then cost 1.4x lighting
// every sample).
layout(early_fragment_tests) in;

layout(location = 0) out vec4 out_light;

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

void main() {
    GbufferSample s;
    if (!load_gbuffer(s)) {
        discard; // background or unlit: keep what subpass 0 wrote
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
        out_light = vec4(float(count), 0.0, 0.0, 0.0);
        return;
    }
    if (debug_view_replaces_lighting(debug_view)) {
        out_light = vec4(gbuffer_debug_value(s, debug_view), 0.0);
        return;
    }
    LightingInput lighting_input = lighting_input_from_gbuffer(s);

    // Shadows are looked up with the shading normal (Bevy's forward path uses the interpolated
    // geometric one, its deferred path the shading one, as here).
    vec3 light = surface_light(lighting_input, s.world_position, s.N, s.shadow_receiver,
                               gl_FragCoord.xy, cluster, s.base_color, s.metallic, s.reflectance,
                               s.perceptual_roughness, s.diffuse_occlusion);
    out_light = vec4(view.exposure.x * light, 0.0);
}
