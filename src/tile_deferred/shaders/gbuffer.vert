#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 0 (G-buffer): port of bevy_pbr's mesh.wgsl vertex stage (no skinning, no morph targets).

#include "common.glsl"

// Which of Bevy's vertex attributes the mesh has; a missing one is fed from a zero buffer.
layout(constant_id = 0) const bool HAS_NORMALS = true;
layout(constant_id = 1) const bool HAS_UVS = true;
layout(constant_id = 2) const bool HAS_TANGENTS = false;
// Constant 3 is the fragment stage's ALPHA_MASK.
layout(constant_id = 4) const bool HAS_COLORS = false;
layout(constant_id = 5) const bool HAS_UV1 = false;

layout(set = 0, binding = 0, std140) uniform ViewUniform {
    View view;
};

layout(location = 0) in vec3 in_position;
layout(location = 1) in vec3 in_normal;
layout(location = 2) in vec2 in_uv;
layout(location = 3) in vec4 in_tangent;
layout(location = 4) in vec4 in_color;
layout(location = 5) in vec2 in_uv_b;
// Per instance: rows 0..2 of world_from_local, row i = (m[0][i], m[1][i], m[2][i], translation[i])
// (Bevy's transposed mat3x4 affine layout).
layout(location = 6) in vec4 in_world_from_local_row0;
layout(location = 7) in vec4 in_world_from_local_row1;
layout(location = 8) in vec4 in_world_from_local_row2;
// Per instance: GpuInstance::flags.x. Location 15, apart from the mesh attributes.
layout(location = 15) in uint in_instance_flags;

layout(location = 0) out vec4 out_world_position;
layout(location = 1) out vec3 out_world_normal;
layout(location = 2) out vec2 out_uv;
layout(location = 3) out vec4 out_world_tangent;
layout(location = 4) out vec4 out_color;
layout(location = 5) out vec2 out_uv_b;
layout(location = 8) flat out uint out_instance_flags;

void main() {
    // bevy_render::maths::affine3_to_square
    mat4 world_from_local = transpose(mat4(
        in_world_from_local_row0,
        in_world_from_local_row1,
        in_world_from_local_row2,
        vec4(0.0, 0.0, 0.0, 1.0)));
    mat3 m3 = mat3(world_from_local[0].xyz, world_from_local[1].xyz, world_from_local[2].xyz);

    // mesh_functions::mesh_position_local_to_world / position_world_to_clip
    vec4 world_position = world_from_local * vec4(in_position, 1.0);
    out_world_position = world_position;
    out_instance_flags = in_instance_flags;
    gl_Position = view.clip_from_world * vec4(world_position.xyz, 1.0);

    // Sign of the determinant of the 3x3 (Bevy's MESH_FLAGS_SIGN_DETERMINANT_MODEL_3X3_BIT is set
    // for determinant().is_sign_positive()).
    vec3 cross12 = cross(m3[1], m3[2]);
    float det = dot(m3[0], cross12);
    float sign_determinant = det >= 0.0 ? 1.0 : -1.0;

    // mesh_functions::mesh_normal_local_to_world: the inverse-transpose of the 3x3 (Bevy computes it
    // on the CPU). inverse(M)^T = cofactor(M) / det; the 1/det scale is removed by normalize() but
    // its sign is kept.
    if (HAS_NORMALS) {
        if (any(notEqual(in_normal, vec3(0.0)))) {
            mat3 cofactor = mat3(cross12, cross(m3[2], m3[0]), cross(m3[0], m3[1]));
            out_world_normal = normalize(cofactor * in_normal) * sign_determinant;
        } else {
            out_world_normal = in_normal;
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
        if (any(notEqual(in_tangent, vec4(0.0)))) {
            out_world_tangent = vec4(normalize(m3 * in_tangent.xyz), in_tangent.w * sign_determinant);
        } else {
            out_world_tangent = in_tangent;
        }
    } else {
        out_world_tangent = vec4(0.0);
    }
}
