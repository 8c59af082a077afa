#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 1, drawn with fullscreen.vert, blend ONE + ONE into the light attachment: the whole
// lighting of a pixel (or, on MSAA edges, of a sample) in one draw. Bevy's ambient term
// (pbr_ambient.wgsl, with the occlusion texture's diffuse occlusion), every directional light and
// the point and spot lights of the pixel's cluster (clusters.glsl; pbr_lighting.wgsl
// point_light / spot_light), each times its shadow (shadows.glsl) where the surface receives
// shadows, times the view exposure as apply_pbr_lighting does:
// exposure * (direct + indirect). Emissive was written in subpass 0.
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
    float view_z = (view.view_from_world * vec4(s.world_position, 1.0)).z;

    // Directional lights (direct)
    vec3 direct_light = vec3(0.0);
    uint n_directional_lights = min(view.counts.x, uint(MAX_DIRECTIONAL_LIGHTS));
    for (uint i = 0u; i < n_directional_lights; i = i + 1u) {
        float shadow = 1.0;
        if (SHADOWS && s.shadow_receiver && view.directional_lights[i].shadow_cascades.x > 0u) {
            shadow = fetch_directional_shadow(i, s.world_position, s.N, view_z, gl_FragCoord.xy);
        }
        direct_light += directional_light(view.directional_lights[i], lighting_input) * shadow;
    }

    // Point and spot lights (direct): the set bits of the cluster's masks, in index order.
    for (uint word = 0u; word < words; word++) {
        uint bits = cluster_light_masks[word * clusters + cluster];
        while (bits != 0u) {
            uint bit = uint(findLSB(bits));
            bits &= bits - 1u;
            ClusterableLight light = clusterable_lights[word * 32u + bit];
            // getRangeFalloff is exactly 0 for distance^2 * inverse_range^2 >= 1.
            vec3 light_to_frag = light.position_radius.xyz - s.world_position;
            if (dot(light_to_frag, light_to_frag) * light.color_inverse_square_range.w >= 1.0) {
                continue;
            }
            bool spot = light.spot_scale_offset_kind.z > 0.5;
            float shadow = 1.0;
            if (SHADOWS && s.shadow_receiver && light.shadow.w >= 0.0) {
                shadow = spot ? fetch_spot_shadow(light, s.world_position, s.N, gl_FragCoord.xy)
                              : fetch_point_shadow(light, s.world_position, s.N, gl_FragCoord.xy);
            }
            if (spot) {
                direct_light += spot_light(light, lighting_input) * shadow;
            } else {
                direct_light += point_light(light, lighting_input) * shadow;
            }
        }
    }

    // Ambient light (indirect). specular_color is F0 = calculate_F0(base_color, metallic, reflectance).
    vec3 F0 = calculate_F0(s.base_color, s.metallic, vec3(s.reflectance));
    vec3 indirect_light = ambient_light(lighting_input.NdotV, lighting_input.diffuse_color, F0,
                                        s.perceptual_roughness, vec3(s.diffuse_occlusion),
                                        view.ambient.rgb);

    // Environment map light (indirect), before the ambient light as in apply_pbr_lighting.
    indirect_light += environment_map_light(lighting_input, vec3(s.diffuse_occlusion));

    out_light = vec4(view.exposure.x * (direct_light + indirect_light), 0.0);
}
