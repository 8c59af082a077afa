// A StandardMaterial's surface at a fragment: port of bevy_pbr's pbr_input_from_vertex_output and
// pbr_input_from_standard_material (pbr_fragment.wgsl), prepare_world_normal and
// apply_normal_mapping (pbr_functions.wgsl). Shared by the G-buffer subpass (gbuffer.frag), which
// writes the surface to the G-buffer, and the transparent pass (forward.frag), which lights it.
// Requires common.glsl, pbr_lighting.glsl, `view` (set 0 binding 0), the vertex outputs of
// gbuffer.vert as in_* inputs, and the constants HAS_NORMALS, HAS_UVS, HAS_TANGENTS, HAS_COLORS
// and HAS_UV1.

#ifndef TILE_DEFERRED_MATERIAL_GLSL
#define TILE_DEFERRED_MATERIAL_GLSL

layout(set = 1, binding = 0, std140) uniform MaterialUniform {
    Material material;
};
layout(set = 1, binding = 1) uniform sampler2D base_color_texture;
layout(set = 1, binding = 2) uniform sampler2D emissive_texture;
layout(set = 1, binding = 3) uniform sampler2D metallic_roughness_texture;
layout(set = 1, binding = 4) uniform sampler2D occlusion_texture;
layout(set = 1, binding = 5) uniform sampler2D normal_map_texture;

// pbr_functions::apply_normal_mapping (TBN columns T, B, N).
vec3 apply_normal_mapping(uint flags, mat3 TBN, bool double_sided, bool is_front, vec3 in_Nt) {
    vec3 T = TBN[0];
    vec3 B = TBN[1];
    vec3 N = TBN[2];

    vec3 Nt = in_Nt;
    if ((flags & MATERIAL_TWO_COMPONENT_NORMAL_MAP) != 0u) {
        // Only use the xy components and derive z for 2-component normal maps.
        Nt = vec3(Nt.rg * 2.0 - 1.0, 0.0);
        Nt.z = sqrt(1.0 - Nt.x * Nt.x - Nt.y * Nt.y);
    } else {
        Nt = Nt * 2.0 - 1.0;
    }
    // Normal maps authored for DirectX require flipping the y component
    if ((flags & MATERIAL_FLIP_NORMAL_MAP_Y) != 0u) {
        Nt.y = -Nt.y;
    }

    if (double_sided && !is_front) {
        Nt = -Nt;
    }

    N = Nt.x * T + Nt.y * B + Nt.z * N;

    return normalize(N);
}

struct StandardSurface {
    vec4 base_color;            // linear; alpha as the material and textures give it
    vec3 N;                     // unit shading normal (normal-mapped)
    vec3 world_normal;          // the interpolated normal, flipped for back faces as Bevy does
    vec3 V;
    float perceptual_roughness;
    float metallic;
    float reflectance;
    float diffuse_occlusion;
    vec4 emissive;              // rgb, a: emissive_exposure_weight
    bool unlit;
};

// Everything is sampled before any discard by the caller, so that implicit derivatives stay
// defined.
StandardSurface standard_surface(bool is_front) {
    StandardSurface surface;
    uint flags = material.flags.x;
    bool double_sided = (flags & MATERIAL_DOUBLE_SIDED) != 0u;
    bool has_normal_map = (flags & MATERIAL_NORMAL_MAP_TEXTURE) != 0u;
    surface.unlit = (flags & MATERIAL_UNLIT) != 0u;

    // pbr_input_from_vertex_output
    bool is_orthographic = view_is_orthographic(view);
    vec3 V = calculate_view(view, in_world_position.xyz, is_orthographic);
    surface.V = V;
    vec3 world_normal;
    if (HAS_NORMALS) {
        // prepare_world_normal: Bevy only flips back faces when the mesh has no tangents and the
        // material has no normal map (with either, a back face keeps its front normal unless the
        // normal map flips the tangent-space normal below).
        world_normal = in_world_normal;
        if (!HAS_TANGENTS && !has_normal_map) {
            world_normal = (float(!double_sided || is_front) * 2.0 - 1.0) * world_normal;
        }
    } else {
        // Deviation (Bevy leaves the normal at zero): the flat face normal, facing the camera.
        vec3 face_normal = normalize(cross(dFdx(in_world_position.xyz), dFdy(in_world_position.xyz)));
        world_normal = dot(face_normal, V) < 0.0 ? -face_normal : face_normal;
    }

    // pbr_input_from_vertex_output starts from the vertex colour (VERTEX_COLORS), which
    // pbr_input_from_standard_material then multiplies by the material's base colour.
    vec4 base_color = HAS_COLORS ? in_color * material.base_color : material.base_color;

    // Bevy samples nothing without VERTEX_UVS. All samples are taken before any discard so that
    // implicit derivatives stay defined.
    vec2 uv = vec2(0.0);
    vec4 base_color_sample = vec4(1.0);
    vec3 emissive_sample = vec3(1.0);
    vec4 metallic_roughness_sample = vec4(1.0);
    float occlusion_sample = 1.0;
    vec3 normal_map_sample = vec3(0.5, 0.5, 1.0);
    if (HAS_UVS) {
        // uv = (uv_transform * vec3(in.uv, 1.0)).xy with uv_transform = Mat3::from(Affine2).
        mat3 uv_transform = mat3(
            vec3(material.uv_transform_matrix.xy, 0.0),
            vec3(material.uv_transform_matrix.zw, 0.0),
            vec3(material.uv_transform_translation.xy, 1.0));
        uv = (uv_transform * vec3(in_uv, 1.0)).xy;
        // Without a second UV set, Bevy samples the UV_B textures with the first.
        vec2 uv_b = HAS_UV1 ? (uv_transform * vec3(in_uv_b, 1.0)).xy : uv;

        if ((flags & MATERIAL_BASE_COLOR_TEXTURE) != 0u) {
            base_color_sample = texture(
                base_color_texture, (flags & MATERIAL_BASE_COLOR_UV_B) != 0u ? uv_b : uv);
        }
        if ((flags & MATERIAL_EMISSIVE_TEXTURE) != 0u) {
            emissive_sample = texture(
                emissive_texture, (flags & MATERIAL_EMISSIVE_UV_B) != 0u ? uv_b : uv).rgb;
        }
        if ((flags & MATERIAL_METALLIC_ROUGHNESS_TEXTURE) != 0u) {
            metallic_roughness_sample = texture(
                metallic_roughness_texture,
                (flags & MATERIAL_METALLIC_ROUGHNESS_UV_B) != 0u ? uv_b : uv);
        }
        if ((flags & MATERIAL_OCCLUSION_TEXTURE) != 0u) {
            occlusion_sample = texture(
                occlusion_texture, (flags & MATERIAL_OCCLUSION_UV_B) != 0u ? uv_b : uv).r;
        }
        if (HAS_TANGENTS && has_normal_map) {
            normal_map_sample = texture(
                normal_map_texture, (flags & MATERIAL_NORMAL_MAP_UV_B) != 0u ? uv_b : uv).rgb;
        }

        if ((flags & MATERIAL_BASE_COLOR_TEXTURE) != 0u) {
            base_color *= base_color_sample;
        }
    }

    // N (normal vector)
    vec3 N = normalize(world_normal);
    if (HAS_UVS && HAS_TANGENTS && has_normal_map) {
        // calculate_tbn_mikktspace: neither normalised nor orthogonalised, on purpose.
        vec3 T = in_world_tangent.xyz;
        vec3 B = in_world_tangent.w * cross(world_normal, T);
        mat3 TBN = mat3(T, B, world_normal);
        N = apply_normal_mapping(flags, TBN, double_sided, is_front, normal_map_sample);
    }

    float perceptual_roughness = material.roughness_metallic_reflectance_cutoff.x;
    float metallic = material.roughness_metallic_reflectance_cutoff.y;
    float reflectance = material.roughness_metallic_reflectance_cutoff.z;
    if (HAS_UVS && (flags & MATERIAL_METALLIC_ROUGHNESS_TEXTURE) != 0u) {
        // Sampling from GLTF standard channels for now
        metallic *= metallic_roughness_sample.b;
        perceptual_roughness *= metallic_roughness_sample.g;
    }

    vec3 diffuse_occlusion = vec3(1.0);
    if (HAS_UVS && (flags & MATERIAL_OCCLUSION_TEXTURE) != 0u) {
        diffuse_occlusion *= occlusion_sample;
    }

    vec4 emissive = material.emissive;
    if (HAS_UVS && (flags & MATERIAL_EMISSIVE_TEXTURE) != 0u) {
        emissive = vec4(emissive.rgb * emissive_sample, emissive.a);
    }

    surface.base_color = base_color;
    surface.N = N;
    surface.world_normal = world_normal;
    surface.perceptual_roughness = perceptual_roughness;
    surface.metallic = metallic;
    surface.reflectance = reflectance;
    surface.diffuse_occlusion = diffuse_occlusion.r;
    surface.emissive = emissive;
    return surface;
}

#endif // TILE_DEFERRED_MATERIAL_GLSL
