#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 1, blend ONE + ONE into the light attachment: one point or spot light (set 0 binding 1,
// index from light_volume.vert) on the pixels its bounding-sphere rectangle covers. Background,
// unlit pixels and pixels outside the light's range (where Bevy's range falloff is exactly 0) are
// discarded; the rest get Bevy's point_light / spot_light term times the view exposure.
//
// Compiled once per variant of the table in mod.rs (`ShaderId::LightVolume`), with the -D defines
// lighting_global.glsl describes (MSAA, MSAA_STENCIL_PIXEL, MSAA_STENCIL_SAMPLE,
// SAMPLED_ATTACHMENTS). Everything below is the same in all variants.

#include "common.glsl"
#include "pbr_lighting.glsl"
#include "gbuffer_input.glsl"

layout(set = 0, binding = 1, std430) readonly buffer ClusterableLights {
    ClusterableLight clusterable_lights[];
};

layout(location = 0) flat in uint in_light_index;

layout(location = 0) out vec4 out_light;

void main() {
    GbufferSample s;
    if (!load_gbuffer(s)) {
        discard;
    }

    ClusterableLight light = clusterable_lights[in_light_index];

    // getRangeFalloff is exactly 0 for distance^2 * inverse_range^2 >= 1.
    vec3 light_to_frag = light.position_radius.xyz - s.world_position;
    if (dot(light_to_frag, light_to_frag) * light.color_inverse_square_range.w >= 1.0) {
        discard;
    }

    if (msaa_params.msaa.w == DEBUG_VIEW_LIGHT_COUNT) {
        out_light = vec4(1.0, 0.0, 0.0, 0.0); // one more light reaches this pixel
        return;
    }
    LightingInput lighting_input = lighting_input_from_gbuffer(s);
    vec3 light_contrib;
    if (light.spot_scale_offset_kind.z > 0.5) {
        light_contrib = spot_light(light, lighting_input);
    } else {
        light_contrib = point_light(light, lighting_input);
    }

    out_light = vec4(view.exposure.x * light_contrib, 0.0);
}
