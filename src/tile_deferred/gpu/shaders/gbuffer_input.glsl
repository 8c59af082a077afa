// Subpass 1 (lighting): G-buffer input attachments (set 2; textures in the unmerged variants, see
// attachment_read.glsl) and the per-view bindings (set 0).
// Requires common.glsl and pbr_lighting.glsl to be included first. With MSAA defined (the MSAA
// variants) the inputs are subpassInputMS and load_gbuffer() is the edge-selective per-sample
// loader of gbuffer_msaa.glsl.

#ifndef TILE_DEFERRED_GBUFFER_INPUT_GLSL
#define TILE_DEFERRED_GBUFFER_INPUT_GLSL

#ifndef TILE_DEFERRED_VIEW_UNIFORM
#define TILE_DEFERRED_VIEW_UNIFORM
layout(set = 0, binding = 0, std140) uniform ViewUniform {
    View view;
};
#endif

// The fragment push-constant range is 48 bytes: TonemapParams (bytes 0..32, read by the tonemap
// pass) then msaa (bytes 32..48). The lighting that tone maps (TONEMAP_IN_LIGHTING) declares the
// whole range as tonemap.glsl's `params` and names it msaa_params too.
#ifndef TONEMAP_IN_LIGHTING
layout(push_constant) uniform MsaaParams {
    // x: sample index s this draw shades (MSAA per-sample-index draws only); y: sample count N;
    // z: MSAA_FLAG_* bits; w: debug view (DEBUG_VIEW_* in common.glsl)
    layout(offset = 32) uvec4 msaa;
} msaa_params;
#endif

#include "attachment_read.glsl"

// With MSAA every subpass of the pass runs at N samples: the G-buffer is read per sample.
TILE_ATTACHMENT(2, 0, 0, gbuffer_albedo_occlusion);
TILE_ATTACHMENT(2, 1, 1, gbuffer_normal);
TILE_ATTACHMENT(2, 2, 2, gbuffer_material);
TILE_ATTACHMENT(2, 3, 3, gbuffer_depth);

struct GbufferSample {
    vec3 base_color;            // linear
    float diffuse_occlusion;
    vec3 N;                     // unit world normal
    float perceptual_roughness;
    float metallic;
    float reflectance;
    vec3 world_position;
    vec3 V;
    bool shadow_receiver;       // the mesh has no NotShadowReceiver
    bool light_written;         // the G-buffer subpass wrote its light (GBUFFER_NO_LIGHT unset)
};

// Returns false for pixels the lighting subpass must leave alone: background (depth == 0.0, the
// clear value of the reverse-Z depth buffer) and unlit materials (material.a's category GBUFFER_UNLIT).
// Single-sample: load_gbuffer(s) reads the pixel at gl_FragCoord. MSAA: the same body is
// load_gbuffer_sample(sample_index, sample_frag_coord, s), which reads one sample, placed at
// sample_frag_coord (framebuffer coordinates of the sample's location) for the position
// reconstruction; gbuffer_msaa.glsl defines load_gbuffer(s) on top of it.
#ifdef MSAA
bool load_gbuffer_sample(int sample_index, vec2 sample_frag_coord, out GbufferSample s) {
#define GBUFFER_LOAD(input) TILE_READ_SAMPLE(input, sample_index)
#define GBUFFER_FRAG_COORD sample_frag_coord
#else
bool load_gbuffer(out GbufferSample s) {
#define GBUFFER_LOAD(input) TILE_READ(input)
#define GBUFFER_FRAG_COORD gl_FragCoord.xy
#endif
    s.base_color = vec3(0.0);
    s.diffuse_occlusion = 1.0;
    s.N = vec3(0.0, 0.0, 1.0);
    s.perceptual_roughness = 1.0;
    s.metallic = 0.0;
    s.reflectance = 0.5;
    s.world_position = vec3(0.0);
    s.V = vec3(0.0, 0.0, 1.0);
    s.shadow_receiver = false;
    s.light_written = true;

    float depth = GBUFFER_LOAD(gbuffer_depth).r;
    if (depth == 0.0) {
        return false;
    }
    vec4 material = GBUFFER_LOAD(gbuffer_material);
    uint category = gbuffer_material_code(material.a) & GBUFFER_CATEGORY_MASK;
    if (category == GBUFFER_UNLIT) {
        return false;
    }
    s.shadow_receiver = category == GBUFFER_LIT_SHADOW_RECEIVER;
    s.light_written = gbuffer_light_written(material.a);
    vec4 albedo_occlusion = GBUFFER_LOAD(gbuffer_albedo_occlusion);
    vec2 encoded_normal = GBUFFER_LOAD(gbuffer_normal).xy;

    s.base_color = albedo_occlusion.rgb;
    s.diffuse_occlusion = albedo_occlusion.a;
    s.N = octahedral_decode(encoded_normal);
    s.perceptual_roughness = material.r;
    s.metallic = material.g;
    s.reflectance = material.b;
    s.world_position = world_position_from_depth(view, GBUFFER_FRAG_COORD, depth);
    s.V = calculate_view(view, s.world_position, view_is_orthographic(view));
    return true;
}
#undef GBUFFER_LOAD
#undef GBUFFER_FRAG_COORD

#ifdef MSAA
#include "gbuffer_msaa.glsl"
#endif

LightingInput lighting_input_from_gbuffer(GbufferSample s) {
    return make_lighting_input(s.base_color, s.metallic, s.perceptual_roughness, s.reflectance,
                               s.N, s.V, s.world_position);
}

#endif // TILE_DEFERRED_GBUFFER_INPUT_GLSL
