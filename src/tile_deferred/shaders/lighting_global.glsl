// Subpass 1, drawn with fullscreen.vert, blend ONE + ONE into the light attachment: Bevy's
// ambient term (pbr_ambient.wgsl, with the occlusion texture's diffuse occlusion) and every
// directional light (pbr_lighting.wgsl directional_light), times the view exposure as
// apply_pbr_lighting does: exposure * (direct + indirect). Emissive was written in subpass 0,
// point and spot lights are added by light_volume.frag.
//
// Shared by lighting_global.frag (single-sample) and the MSAA variants, which define MSAA first
// (gbuffer_input.glsl then reads the multisampled G-buffer and gbuffer_msaa.glsl defines
// load_gbuffer()): lighting_global_pixel_ms.frag (stencil split, interior pixels: sample 0 for every
// sample), lighting_global_sample_ms.frag (stencil split, edge pixels: sample-rate shading, gl_SampleID)
// and lighting_global_ms.frag (the fallback drawn N times, once per sample index: classifies the pixel,
// picks the sample and sets gl_SampleMask). Everything below is the same in all variants.

#include "common.glsl"
#include "pbr_lighting.glsl"
#include "gbuffer_input.glsl"

layout(location = 0) out vec4 out_light;

void main() {
    GbufferSample s;
    if (!load_gbuffer(s)) {
        discard; // background or unlit: keep what subpass 0 wrote
    }
    LightingInput lighting_input = lighting_input_from_gbuffer(s);

    // Directional lights (direct)
    vec3 direct_light = vec3(0.0);
    uint n_directional_lights = min(view.counts.x, uint(MAX_DIRECTIONAL_LIGHTS));
    for (uint i = 0u; i < n_directional_lights; i = i + 1u) {
        direct_light += directional_light(view.directional_lights[i], lighting_input);
    }

    // Ambient light (indirect). specular_color is F0 = calculate_F0(base_color, metallic, reflectance).
    vec3 F0 = calculate_F0(s.base_color, s.metallic, vec3(s.reflectance));
    vec3 indirect_light = ambient_light(lighting_input.NdotV, lighting_input.diffuse_color, F0,
                                        s.perceptual_roughness, vec3(s.diffuse_occlusion),
                                        view.ambient.rgb);

    out_light = vec4(view.exposure.x * (direct_light + indirect_light), 0.0);
}
