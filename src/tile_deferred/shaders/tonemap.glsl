// Subpass 2 (tonemap), included by tonemap_pass.glsl in all its variants (MSAA: define MSAA
// before including): the set 3 attachments, the push constants, and Bevy's in-shader tone
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
TILE_ATTACHMENT(3, 0, 0, light_accumulation);
TILE_ATTACHMENT(3, 1, 1, depth_input);
TILE_ATTACHMENT(3, 4, 2, material_input);

layout(push_constant) uniform TonemapParams {
    vec4 clear_color; // linear rgb; a: 1.0 = write clear_color on background pixels (depth == 0), 0.0 = discard background pixels (keep loaded contents)
    uvec4 mode;       // x: method 0 None, 1 Reinhard, 2 ReinhardLuminance, 3 AcesFitted, 4 AgX, 5 SomewhatBoringDisplayTransform, 6 TonyMcMapface, 7 BlenderFilmic (8 KhronosPbrNeutral); y: 1 = deband dither; z: 1 = encode linear->sRGB in the shader (output format is UNORM, not SRGB); w: unused
    uvec4 msaa;       // (offset 32) x: unused here; y: sample count N (MSAA); z: flags (bit 0: per-sample lighting, unused here; bit 1: tint edge pixels red, the edge-mask debug view); w: debug view (DEBUG_VIEW_* in common.glsl)
} params;

layout(location = 0) out vec4 out_color;

#endif // TILE_DEFERRED_TONEMAP_GLSL
