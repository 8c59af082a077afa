// Subpass 1 (lighting): G-buffer input attachments (set 2) and the per-view bindings (set 0).
// Requires common.glsl and pbr_lighting.glsl to be included first.

#ifndef TILE_DEFERRED_GBUFFER_INPUT_GLSL
#define TILE_DEFERRED_GBUFFER_INPUT_GLSL

layout(set = 0, binding = 0, std140) uniform ViewUniform {
    View view;
};

layout(input_attachment_index = 0, set = 2, binding = 0) uniform subpassInput gbuffer_albedo_occlusion;
layout(input_attachment_index = 1, set = 2, binding = 1) uniform subpassInput gbuffer_normal;
layout(input_attachment_index = 2, set = 2, binding = 2) uniform subpassInput gbuffer_material;
layout(input_attachment_index = 3, set = 2, binding = 3) uniform subpassInput gbuffer_depth;

struct GbufferSample {
    vec3 base_color;            // linear
    float diffuse_occlusion;
    vec3 N;                     // unit world normal
    float perceptual_roughness;
    float metallic;
    float reflectance;
    vec3 world_position;
    vec3 V;
};

// Returns false for pixels the lighting subpass must leave alone: background (depth == 0.0, the
// clear value of the reverse-Z depth buffer) and unlit materials (material.a == 1.0).
bool load_gbuffer(out GbufferSample s) {
    s.base_color = vec3(0.0);
    s.diffuse_occlusion = 1.0;
    s.N = vec3(0.0, 0.0, 1.0);
    s.perceptual_roughness = 1.0;
    s.metallic = 0.0;
    s.reflectance = 0.5;
    s.world_position = vec3(0.0);
    s.V = vec3(0.0, 0.0, 1.0);

    float depth = subpassLoad(gbuffer_depth).r;
    if (depth == 0.0) {
        return false;
    }
    vec4 material = subpassLoad(gbuffer_material);
    if (material.a > 0.5) {
        return false;
    }
    vec4 albedo_occlusion = subpassLoad(gbuffer_albedo_occlusion);
    vec2 encoded_normal = subpassLoad(gbuffer_normal).xy;

    s.base_color = albedo_occlusion.rgb;
    s.diffuse_occlusion = albedo_occlusion.a;
    s.N = octahedral_decode(encoded_normal);
    s.perceptual_roughness = material.r;
    s.metallic = material.g;
    s.reflectance = material.b;
    s.world_position = world_position_from_depth(view, gl_FragCoord.xy, depth);
    s.V = calculate_view(view, s.world_position, view_is_orthographic(view));
    return true;
}

LightingInput lighting_input_from_gbuffer(GbufferSample s) {
    return make_lighting_input(s.base_color, s.metallic, s.perceptual_roughness, s.reflectance,
                               s.N, s.V, s.world_position);
}

#endif // TILE_DEFERRED_GBUFFER_INPUT_GLSL
