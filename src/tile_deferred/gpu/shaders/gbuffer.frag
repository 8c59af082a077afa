#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 0 (G-buffer): the StandardMaterial's surface (material.glsl), alpha_discard
// (pbr_functions.wgsl) and the emissive term of apply_pbr_lighting, written to the G-buffer that
// common.glsl lays out.

#include "common.glsl"
#include "pbr_lighting.glsl"

layout(constant_id = 0) const bool HAS_NORMALS = true;
layout(constant_id = 1) const bool HAS_UVS = true;
layout(constant_id = 2) const bool HAS_TANGENTS = false;
// The pipeline draws AlphaMode::Mask materials (Bevy's MAY_DISCARD): discard below the cutoff.
layout(constant_id = 3) const bool ALPHA_MASK = false;
// The mesh has Mesh::ATTRIBUTE_COLOR (Bevy's VERTEX_COLORS) and Mesh::ATTRIBUTE_UV_1
// (VERTEX_UVS_B).
layout(constant_id = 4) const bool HAS_COLORS = false;
layout(constant_id = 5) const bool HAS_UV1 = false;

layout(set = 0, binding = 0, std140) uniform ViewUniform {
    View view;
};

layout(location = 0) in vec4 in_world_position;
layout(location = 1) in vec3 in_world_normal;
layout(location = 2) in vec2 in_uv;
layout(location = 3) in vec4 in_world_tangent;
layout(location = 4) in vec4 in_color;
layout(location = 5) in vec2 in_uv_b;
// GpuInstance::flags.x (INSTANCE_* in common.glsl).
layout(location = 8) flat in uint in_instance_flags;
// GpuInstance::lightmap (lightmap.glsl).
layout(location = 9) flat in uvec4 in_instance_lightmap;

// The fragment push constants (48 bytes, see gbuffer_input.glsl); msaa.w is the debug view.
layout(push_constant) uniform GbufferParams {
    layout(offset = 32) uvec4 msaa;
} params;

layout(location = 0) out vec4 out_albedo_occlusion;
layout(location = 1) out vec2 out_normal;
layout(location = 2) out vec4 out_material;
layout(location = 3) out vec4 out_light;

// Largest finite value of the 10-bit (blue) channel of B10G11R11_UFLOAT; the 11-bit channels go to
// 65024. Keeps huge emissive values finite instead of relying on the implementation's overflow.
const float LIGHT_ATTACHMENT_MAX = 64512.0;

#include "material.glsl"
#include "lightmap.glsl"

void main() {
    StandardSurface surface = standard_surface(gl_FrontFacing);
    vec4 base_color = surface.base_color;

    // alpha_discard: opaque -> alpha 1; mask -> discard below the cutoff, else alpha 1.
#ifdef MSAA
    // The module compiled with MSAA draws AlphaMode::AlphaToCoverage with MSAA: sample s of the
    // pixel's N is covered where alpha > s / N (Mesa llvmpipe's alpha-to-coverage; hardware
    // patterns differ by vendor, not in how many samples a given alpha covers by more than one).
    // In the shader, because the hardware's would take the alpha from output 0, where the G-buffer
    // keeps the diffuse occlusion. Its own module: a shader that declares the sample mask must
    // write it on every path, which the other G-buffer pipelines need not pay for.
    uint samples = clamp(params.msaa.y, 1u, 32u);
    uint covered = 0u;
    for (uint s = 0u; s < samples; s++) {
        if (base_color.a > float(s) / float(samples)) {
            covered |= 1u << s;
        }
    }
    if (covered == 0u) {
        discard;
    }
    gl_SampleMask[0] = int(covered);
    base_color.a = 1.0;
#else
    if (ALPHA_MASK) {
        if (base_color.a >= material.roughness_metallic_reflectance_cutoff.w) {
            base_color.a = 1.0;
        } else {
            discard;
        }
    } else {
        base_color.a = 1.0;
    }
#endif
    vec3 N = surface.N;
    uint no_fog = (material.flags.x & MATERIAL_FOG_DISABLED) != 0u ? GBUFFER_NO_FOG : 0u;

    if (surface.unlit) {
        // Bevy's unlit output is the base colour as is: no exposure, no emissive; it is still
        // tone mapped and dithered like every other pixel.
        out_albedo_occlusion = vec4(base_color.rgb, 1.0);
        out_normal = octahedral_encode(N);
        out_material = vec4(1.0, 0.0, 0.5, gbuffer_material_alpha(GBUFFER_UNLIT | no_fog));
        out_light = vec4(min(base_color.rgb, vec3(LIGHT_ATTACHMENT_MAX)), 1.0);
        if (params.msaa.w != DEBUG_VIEW_NONE && params.msaa.w != DEBUG_VIEW_LIGHT) {
            out_light = vec4(0.0, 0.0, 0.0, 1.0); // debug views show only what they name
        }
        return;
    }

    // apply_pbr_lighting's emissive term: it is not multiplied by the view exposure with the rest of
    // the light, but by mix(1.0, exposure, emissive.a) (StandardMaterial::emissive_exposure_weight).
    vec4 emissive = surface.emissive;
    vec3 emissive_light = emissive.rgb * base_color.a;
    emissive_light = emissive_light * mix(1.0, view.exposure.x, emissive.a);
    // apply_pbr_lighting's lightmap term (LIGHTMAP): indirect_light += lightmap_light *
    // diffuse_color, without occlusion, pre-exposed with the rest of the light. Ambient and direct
    // light still reach lightmapped meshes in the lighting subpass (Bevy's defaults; what differs
    // from them falls back, missing.rs).
    if ((in_instance_flags & INSTANCE_LIGHTMAPPED) != 0u) {
        vec3 diffuse_color = base_color.rgb * (1.0 - surface.metallic);
        bool bicubic = (in_instance_flags & INSTANCE_LIGHTMAP_BICUBIC) != 0u;
        emissive_light += view.exposure.x
            * lightmap_light(in_uv_b, in_instance_lightmap, bicubic) * diffuse_color;
    }

    // A mesh without emissive colour or lightmap emits nothing, and its pipeline does not write
    // the light (TileMaterial::emits_light, GbufferPipelineKey::blend_attachments): same test.
    bool emits_light = any(notEqual(material.emissive.rgb, vec3(0.0)))
        || (in_instance_flags & INSTANCE_LIGHTMAPPED) != 0u;
    uint no_light = emits_light ? 0u : GBUFFER_NO_LIGHT;

    out_albedo_occlusion = vec4(base_color.rgb, surface.diffuse_occlusion);
    out_normal = octahedral_encode(N);
    out_material = vec4(surface.perceptual_roughness, surface.metallic, surface.reflectance,
                        gbuffer_material_alpha(
                            ((in_instance_flags & INSTANCE_SHADOW_RECEIVER) != 0u
                                 ? GBUFFER_LIT_SHADOW_RECEIVER
                                 : GBUFFER_LIT_NO_SHADOWS)
                            | no_fog | no_light));
    out_light = vec4(clamp(emissive_light, vec3(0.0), vec3(LIGHT_ATTACHMENT_MAX)), 1.0);
    if (params.msaa.w != DEBUG_VIEW_NONE && params.msaa.w != DEBUG_VIEW_LIGHT) {
        out_light = vec4(0.0, 0.0, 0.0, 1.0); // debug views show only what they name
    }
}
