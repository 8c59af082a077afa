// Subpass 2 (tonemap), included by tonemap_pass.glsl in all its variants (MSAA: define MSAA
// before including), and by the lighting that tone maps (lighting.glsl, TONEMAP_IN_LIGHTING): the
// set 3 attachments, the push constants, and Bevy's in-shader tone
// mapping of an LDR camera (tonemapping.glsl; pbr_functions.wgsl
// main_pass_post_lighting_processing's DEBAND_DITHER is applied by the main functions). Requires
// common.glsl to be included first.

#ifndef TILE_DEFERRED_TONEMAP_GLSL
#define TILE_DEFERRED_TONEMAP_GLSL

#include "attachment_read.glsl"
#include "tonemapping.glsl"

// The light accumulation and depth (every sample with MSAA; textures in the unmerged variants),
// and the G-buffer material, whose alpha code says which surfaces the fog leaves alone
// (GBUFFER_NO_FOG; read only when the view has fog).
// Their input attachment indices are the tonemap subpass's (light, depth, material); the lighting
// subpass that tone maps (TONEMAP_IN_LIGHTING) reads them at its own indices.
#ifndef TONEMAP_LIGHT_INPUT
#define TONEMAP_LIGHT_INPUT 0
#define TONEMAP_DEPTH_INPUT 1
#define TONEMAP_MATERIAL_INPUT 2
#endif
TILE_ATTACHMENT(3, 0, TONEMAP_LIGHT_INPUT, light_accumulation);
TILE_ATTACHMENT(3, 1, TONEMAP_DEPTH_INPUT, depth_input);
TILE_ATTACHMENT(3, 4, TONEMAP_MATERIAL_INPUT, material_input);

layout(push_constant) uniform TonemapParams {
    vec4 clear_color; // linear rgb; a: 1.0 = write clear_color on background pixels (depth == 0), 0.0 = discard background pixels (keep loaded contents)
    uvec4 mode;       // x: method 0 None, 1 Reinhard, 2 ReinhardLuminance, 3 AcesFitted, 4 AgX, 5 SomewhatBoringDisplayTransform, 6 TonyMcMapface, 7 BlenderFilmic (8 KhronosPbrNeutral); y: 1 = deband dither; z: 1 = encode linear->sRGB in the shader (output format is UNORM, not SRGB); w: TONEMAP_FLAG_* bits (tonemap_display.glsl, gpu::types::tonemap_flags)
    uvec4 msaa;       // (offset 32) x: unused here; y: sample count N (MSAA); z: flags (bit 0: per-sample lighting, unused here; bit 1: tint edge pixels red, the edge-mask debug view); w: debug view (DEBUG_VIEW_* in common.glsl)
} params;

layout(location = 0) out vec4 out_color;

#endif // TILE_DEFERRED_TONEMAP_GLSL
