#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 0 (G-buffer) and the transparent pass: port of bevy_pbr's mesh.wgsl vertex stage, with
// skinning (skinning.wgsl) and morph targets (morph.wgsl, storage-buffer path).

#include "common.glsl"

// Which of Bevy's vertex attributes the mesh has; a missing one is fed from a zero buffer.
layout(constant_id = 0) const bool HAS_NORMALS = true;
layout(constant_id = 1) const bool HAS_UVS = true;
layout(constant_id = 2) const bool HAS_TANGENTS = false;
// Constant 3 is the fragment stage's ALPHA_MASK.
layout(constant_id = 4) const bool HAS_COLORS = false;
layout(constant_id = 5) const bool HAS_UV1 = false;
// A `SkinnedMesh` whose mesh has joint indices and weights (Bevy's SKINNED).
layout(constant_id = 6) const bool SKINNED = false;
// A mesh with morph targets (Bevy's MORPH_TARGETS).
layout(constant_id = 7) const bool MORPHED = false;

layout(set = 0, binding = 0, std140) uniform ViewUniform {
    View view;
};

// The view's animation data (draws.rs `AnimationData`): joint matrices (4 columns each) of every
// skinned instance, and per morphed instance a header uvec4(first vertex, weight count, vertex
// count, index of its mesh's displacements) followed by its weights, 4 to a vec4.
layout(set = 0, binding = 5, std430) readonly buffer AnimationData {
    vec4 animation[];
};
// The morphed meshes' displacements: Bevy's `MorphAttributes`, 3 vec4 (position, normal,
// tangent) per vertex and target, target-major.
layout(set = 0, binding = 6, std430) readonly buffer MorphDisplacements {
    vec4 displacements[];
};

layout(location = 0) in vec3 in_position;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in vec2 in_uv;
layout(location = 3) in vec4 in_tangent;
layout(location = 4) in vec4 in_color;
layout(location = 5) in vec2 in_uv_b;
layout(location = 9) in uvec4 in_joint_indices;
layout(location = 10) in vec4 in_joint_weights;
// Per instance: rows 0..2 of world_from_local, row i = (m[0][i], m[1][i], m[2][i], translation[i])
// (Bevy's transposed mat3x4 affine layout).
layout(location = 6) in vec4 in_world_from_local_row0;
layout(location = 7) in vec4 in_world_from_local_row1;
layout(location = 8) in vec4 in_world_from_local_row2;
// Per instance: GpuInstance::flags (x: flag bits, y: first joint matrix, z: morph header, as
// indices into `animation`). Location 15, apart from the mesh attributes.
layout(location = 15) in uvec4 in_instance_flags;
// Per instance: GpuInstance::lightmap (x, y: Bevy's packed uv_rect; z: lightmap_exposure bits).
layout(location = 14) in uvec4 in_instance_lightmap;

layout(location = 0) out vec4 out_world_position;
layout(location = 1) out vec3 out_world_normal;
layout(location = 2) out vec2 out_uv;
layout(location = 3) out vec4 out_world_tangent;
layout(location = 4) out vec4 out_color;
layout(location = 5) out vec2 out_uv_b;
layout(location = 8) flat out uint out_instance_flags;
layout(location = 9) flat out uvec4 out_instance_lightmap;

// Joint matrix `index` of the instance whose joints start at `base`.
mat4 joint_matrix(uint base, uint index) {
    uint at = base + 4u * index;
    return mat4(animation[at], animation[at + 1u], animation[at + 2u], animation[at + 3u]);
}

// skinning::skin_model
mat4 skin_model(uint base, uvec4 indexes, vec4 weights) {
    return weights.x * joint_matrix(base, indexes.x)
        + weights.y * joint_matrix(base, indexes.y)
        + weights.z * joint_matrix(base, indexes.z)
        + weights.w * joint_matrix(base, indexes.w);
}

// Component `component` (0 position, 1 normal, 2 tangent) of target `target`'s displacement of
// `vertex` (morph.wgsl's get_morph_target).
vec3 morph_displacement(uvec4 header, uint target, uint vertex, uint component) {
    return displacements[header.w + 3u * (target * header.z + vertex) + component].xyz;
}

void main() {
    vec3 position = in_position;
    vec3 normal = in_normal;
    vec4 tangent = in_tangent;
    // mesh.wgsl's morph_vertex: the weighted displacements of the targets.
    if (MORPHED) {
        uint header_at = in_instance_flags.z;
        uvec4 header = floatBitsToUint(animation[header_at]);
        uint vertex = uint(gl_VertexIndex) - header.x;
        for (uint i = 0u; i < header.y; i++) {
            float weight = animation[header_at + 1u + i / 4u][i % 4u];
            if (weight == 0.0) {
                continue;
            }
            position += weight * morph_displacement(header, i, vertex, 0u);
            if (HAS_NORMALS) {
                normal += weight * morph_displacement(header, i, vertex, 1u);
            }
            if (HAS_TANGENTS) {
                tangent += vec4(weight * morph_displacement(header, i, vertex, 2u), 0.0);
            }
        }
    }

    // bevy_render::maths::affine3_to_square
    mat4 mesh_world_from_local = transpose(mat4(
        in_world_from_local_row0,
        in_world_from_local_row1,
        in_world_from_local_row2,
        vec4(0.0, 0.0, 0.0, 1.0)));
    // A skinned mesh is placed by its joints alone (mesh.wgsl).
    mat4 world_from_local = SKINNED
        ? skin_model(in_instance_flags.y, in_joint_indices, in_joint_weights)
        : mesh_world_from_local;
    mat3 m3 = mat3(world_from_local[0].xyz, world_from_local[1].xyz, world_from_local[2].xyz);

    // mesh_functions::mesh_position_local_to_world / position_world_to_clip
    vec4 world_position = world_from_local * vec4(position, 1.0);
    out_world_position = world_position;
    out_instance_flags = in_instance_flags.x;
    out_instance_lightmap = in_instance_lightmap;
    gl_Position = view.clip_from_world * vec4(world_position.xyz, 1.0);

    // Sign of the determinant of the mesh's 3x3 (Bevy's MESH_FLAGS_SIGN_DETERMINANT_MODEL_3X3_BIT
    // is set for determinant().is_sign_positive()); a skinned mesh's tangent takes it too.
    mat3 mesh3 = mat3(
        mesh_world_from_local[0].xyz, mesh_world_from_local[1].xyz, mesh_world_from_local[2].xyz);
    float mesh_det = dot(mesh3[0], cross(mesh3[1], mesh3[2]));
    float sign_determinant = mesh_det >= 0.0 ? 1.0 : -1.0;

    if (HAS_NORMALS) {
        mat3 cofactor = mat3(cross(m3[1], m3[2]), cross(m3[2], m3[0]), cross(m3[0], m3[1]));
        if (SKINNED) {
            // skinning::skin_normals: normalize(inverse_transpose_3x3m(m3) * normal), with the
            // inverse-transpose cofactor / det (the scale goes in normalize, the sign stays).
            float det = dot(m3[2], cofactor[2]);
            out_world_normal = normalize(cofactor * normal) * (det >= 0.0 ? 1.0 : -1.0);
        } else if (any(notEqual(normal, vec3(0.0)))) {
            // mesh_functions::mesh_normal_local_to_world: the inverse-transpose of the 3x3 (Bevy
            // computes it on the CPU) = cofactor(M) / det; the 1/det scale is removed by
            // normalize() but its sign is kept.
            out_world_normal = normalize(cofactor * normal) * sign_determinant;
        } else {
            out_world_normal = normal;
        }
    } else {
        // The fragment shader derives a flat normal from the world position.
        out_world_normal = vec3(0.0);
    }

    out_uv = HAS_UVS ? in_uv : vec2(0.0);
    out_uv_b = HAS_UV1 ? in_uv_b : vec2(0.0);
    // mesh.wgsl passes the vertex colour through unchanged.
    out_color = HAS_COLORS ? in_color : vec4(1.0);
    // wgpu draws point lists with 1-pixel points; Vulkan needs the size written.
    gl_PointSize = 1.0;

    // mesh_functions::mesh_tangent_local_to_world
    if (HAS_TANGENTS) {
        if (any(notEqual(tangent, vec4(0.0)))) {
            out_world_tangent = vec4(normalize(m3 * tangent.xyz), tangent.w * sign_determinant);
        } else {
            out_world_tangent = tangent;
        }
    } else {
        out_world_tangent = vec4(0.0);
    }
}
