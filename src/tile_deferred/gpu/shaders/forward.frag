#version 450
#extension GL_GOOGLE_include_directive : require

// The transparent pass (drawn with gbuffer.vert): one transparent StandardMaterial mesh, shaded per
// fragment as Bevy's forward mesh pipeline shades it (pbr.wgsl fragment): the surface
// (material.glsl), apply_pbr_lighting (surface_light() of surface_lighting.glsl plus the emissive
// term), then main_pass_post_lighting_processing: distance fog, for an LDR camera in-shader tone
// mapping and deband dither (TONEMAP_IN_SHADER), and premultiply_alpha for the blend mode. The
// pipeline blends the result with Bevy's BlendState, depth-tested against the G-buffer depth
// without writing it: an LDR camera's after tonemap, into the tone-mapped colour; an HDR camera's
// (INTO_LIGHT) before it, into the light accumulation.
//
// Specialisation constants: 0 and 1 are shadows.glsl's; 10..15 are gbuffer.vert's 0..5 (the mesh's
// attributes) with BLEND_MODE in place of its alpha mask.

#include "common.glsl"
#include "pbr_lighting.glsl"

layout(constant_id = 10) const bool HAS_NORMALS = true;
layout(constant_id = 11) const bool HAS_UVS = true;
layout(constant_id = 12) const bool HAS_TANGENTS = false;
// pipelines::TransparentBlend: 0 Blend, 1 Premultiplied, 2 Add, 3 Multiply.
layout(constant_id = 13) const uint BLEND_MODE = 0u;
layout(constant_id = 14) const bool HAS_COLORS = false;
layout(constant_id = 15) const bool HAS_UV1 = false;
// An HDR camera's pass (before tonemap): the pre-exposed linear light is blended into the light
// accumulation, as Bevy blends it into its HDR main texture, and tone mapped with it afterwards.
layout(constant_id = 16) const bool INTO_LIGHT = false;

#define BLEND_ALPHA 0u
#define BLEND_PREMULTIPLIED 1u
#define BLEND_ADD 2u
#define BLEND_MULTIPLY 3u

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

// The tonemap subpass's push constants (tonemap.glsl): mode.x the tone mapping method, mode.y
// deband dither, mode.z the sRGB encode of a UNORM output.
layout(push_constant) uniform TonemapParams {
    vec4 clear_color;
    uvec4 mode;
    uvec4 msaa;
} params;

layout(location = 0) out vec4 out_color;

#include "material.glsl"
#include "clusters.glsl"
#include "shadows.glsl"
#include "environment.glsl"
#include "surface_lighting.glsl"
#include "tonemapping.glsl"
#include "fog.glsl"

void main() {
    StandardSurface surface = standard_surface(gl_FrontFacing);
    vec3 world_position = in_world_position.xyz;
    // alpha_discard keeps the alpha of every blended mode.
    vec4 color;
    if (surface.unlit) {
        color = surface.base_color;
    } else {
        LightingInput lighting_input = make_lighting_input(
            surface.base_color.rgb, surface.metallic, surface.perceptual_roughness,
            surface.reflectance, surface.N, surface.V, world_position);
        uint cluster = cluster_index(gl_FragCoord.xy, world_position);
        // Bevy's forward path offsets shadow lookups along the interpolated normal.
        bool shadow_receiver = (in_instance_flags & INSTANCE_SHADOW_RECEIVER) != 0u;
        vec3 light = surface_light(lighting_input, world_position, surface.world_normal,
                                   shadow_receiver, gl_FragCoord.xy, cluster,
                                   surface.perceptual_roughness, surface.diffuse_occlusion);
        vec4 emissive = surface.emissive;
        vec3 emissive_light = emissive.rgb * surface.base_color.a;
        emissive_light = emissive_light * mix(1.0, view.exposure.x, emissive.a);
        color = vec4(emissive_light + light * view.exposure.x, surface.base_color.a);
    }

    // main_pass_post_lighting_processing: fog, tone mapping and dither in the shader (an LDR
    // camera's mesh pipeline), then the premultiplication of the blend mode.
    // Bevy fogs only materials with fog_enabled (its FOG_ENABLED material flag).
    if (fog_mode() != FOG_MODE_OFF && (material.flags.x & MATERIAL_FOG_DISABLED) == 0u) {
        color.rgb = apply_fog(color.rgb, world_position, gl_FragCoord.xy);
    }
    if (!INTO_LIGHT) {
        color = tone_mapping(color, params.mode.x, view.exposure.yz);
        if (params.mode.y == 1u) {
            vec3 rgb = powsafe(color.rgb, 1.0 / 2.2);
            rgb += screen_space_dither(gl_FragCoord.xy);
            color.rgb = powsafe(rgb, 2.2);
        }
    }
    if (BLEND_MODE == BLEND_ADD) {
        color = vec4(color.rgb * color.a, 0.0);
    } else if (BLEND_MODE == BLEND_MULTIPLY) {
        color = vec4(color.rgb * color.a, color.a);
    }
    // A UNORM output stores sRGB-encoded values (its blending then happens on encoded values).
    bool encode_srgb = !INTO_LIGHT && params.mode.z == 1u;
    out_color = encode_srgb ? vec4(linear_to_srgb(color.rgb), color.a) : color;
}
