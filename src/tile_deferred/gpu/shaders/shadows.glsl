// Shadows, a line-by-line port of bevy_pbr 0.19.1's shadows.wgsl and shadow_sampling.wgsl
// (without PCSS, which needs Bevy's experimental_pbr_pcss feature). The shadow maps are Bevy's
// own: point lights' cube array and the directional cascades + spot lights' 2D array, rendered
// by Bevy's shadow passes before the tile pass reads them (set 0 bindings 3 and 4), sampled
// through a comparison sampler (GREATER_OR_EQUAL: reverse-Z, lit where the surface is at least
// as near the light as the stored depth; linear filter, so each lookup is a hardware 2x2 PCF).
//
// Bevy picks the filter with a shader def per camera; here it is a specialization constant of
// the lighting pipeline (SHADOW_FILTER), and SHADOW_KINDS says which kinds of light sample a
// shadow map this frame (the directional cascades, the point and spot maps of clustered lights,
// both or none): the driver then compiles only the filter in use and the kinds in use. Code a
// draw never runs is not free: a GPU allocates registers for the largest path, and llvmpipe
// (lavapipe) runs both sides of a branch under a lane mask. On an NVIDIA H200 at 4K (issue 34),
// a sun's cascades with the point-light shadow code compiled in but unused cost the lighting
// subpass about 4 ms more than without it. Requires common.glsl and `view`.

#ifndef TILE_DEFERRED_SHADOWS_GLSL
#define TILE_DEFERRED_SHADOWS_GLSL

layout(constant_id = 0) const uint SHADOW_FILTER = SHADOW_FILTER_GAUSSIAN;
// Bit 0: directional cascades; bit 1: point and spot maps (pipelines.rs `SampledShadows`).
layout(constant_id = 1) const uint SHADOW_KINDS = 3u;
const bool DIRECTIONAL_SHADOWS = (SHADOW_KINDS & 1u) != 0u;
const bool CLUSTERED_SHADOWS = (SHADOW_KINDS & 2u) != 0u;

layout(set = 0, binding = 3) uniform samplerCubeArrayShadow point_shadow_maps;
layout(set = 0, binding = 4) uniform sampler2DArrayShadow directional_shadow_maps;

const float SPOT_SHADOW_TEXEL_SIZE = 0.0134277345;
const float POINT_SHADOW_SCALE = 0.003;
const float POINT_SHADOW_TEMPORAL_OFFSET_SCALE = 0.5;
const float SHADOW_PI = 3.141592653589793;

const vec2 D3D_SAMPLE_POINT_POSITIONS[8] = vec2[](
    vec2(0.125, -0.375), vec2(-0.125, 0.375), vec2(0.625, 0.125), vec2(-0.375, -0.625),
    vec2(-0.625, 0.625), vec2(-0.875, -0.125), vec2(0.375, 0.875), vec2(0.875, -0.875));
const float D3D_SAMPLE_POINT_COEFFS[8] = float[](
    0.157112, 0.157112, 0.138651, 0.130251, 0.114946, 0.114946, 0.107982, 0.079001);
// bevy_pbr::utils::SPIRAL_OFFSET_*
const vec2 SPIRAL_OFFSETS[8] = vec2[](
    vec2(-0.7071, 0.7071), vec2(-0.0000, -0.8750), vec2(0.5303, 0.5303), vec2(-0.6250, -0.0000),
    vec2(0.3536, -0.3536), vec2(-0.0000, 0.3750), vec2(-0.1768, -0.1768), vec2(0.1250, 0.0000));

// bevy_render::maths::orthonormalize: an orthonormal basis whose z axis is `z_basis`.
mat3 shadow_orthonormalize(vec3 z_basis) {
    float sign_z = z_basis.z >= 0.0 ? 1.0 : -1.0;
    float a = -1.0 / (sign_z + z_basis.z);
    float b = z_basis.x * z_basis.y * a;
    vec3 x_basis = vec3(1.0 + sign_z * z_basis.x * z_basis.x * a, sign_z * b, -sign_z * z_basis.x);
    vec3 y_basis = vec3(b, sign_z + z_basis.y * z_basis.y * a, -z_basis.y);
    return mat3(x_basis, y_basis, z_basis);
}

// bevy_pbr::utils::interleaved_gradient_noise
float interleaved_gradient_noise(vec2 pixel_coordinates, uint frame) {
    vec2 xy = pixel_coordinates + 5.588238 * float(frame % 64u);
    return fract(52.9829189 * fract(0.06711056 * xy.x + 0.00583715 * xy.y));
}

// A WGSL mat2x2(m.y, -m.x, m.x, m.y) is column-major like GLSL's mat2.
mat2 random_rotation_matrix(vec2 scale, bool temporal) {
    float random_angle = 2.0 * SHADOW_PI * interleaved_gradient_noise(
        scale, temporal ? view.counts.w : 1u);
    vec2 m = vec2(sin(random_angle), cos(random_angle));
    return mat2(m.y, -m.x, m.x, m.y);
}

// ---- Directional cascades and spot lights (2D array) ----

// Bevy's textureSampleCompareLevel(.., level 0). Core GLSL has no textureLod for array shadow
// samplers (GL_EXT_texture_shadow_lod is newer than Debian's glslang) and textureGrad with zero
// gradients takes a GPU's slow explicit-gradient path: on an NVIDIA H200 at 4K the nine taps of
// the Gaussian filter cost the lighting subpass 8 ms more through it (issue 34). So this is an
// implicit lookup in GLSL, and the crate rewrites it into Bevy's explicit lookup at level 0 when
// it creates the module (shaders/explicit_lod.rs): the SPIR-V the device runs takes no
// derivatives, which would be undefined in the light loop's non-uniform control flow. Should the
// rewrite ever refuse a module, the implicit lookup still gives the same result: Bevy's shadow
// maps have one mip level and the comparison sampler filters linearly when minifying and
// magnifying, so any level of detail samples level 0 bilinearly.
float sample_shadow_map_hardware(vec2 light_local, float depth, int array_index) {
    return texture(directional_shadow_maps, vec4(light_local, float(array_index), depth));
}

float sample_shadow_map_castano_thirteen(vec2 light_local, float depth, int array_index) {
    vec2 shadow_map_size = vec2(textureSize(directional_shadow_maps, 0).xy);
    vec2 inv_shadow_map_size = 1.0 / shadow_map_size;

    vec2 uv = light_local * shadow_map_size;
    vec2 base_uv = floor(uv + 0.5);
    float s = (uv.x + 0.5 - base_uv.x);
    float t = (uv.y + 0.5 - base_uv.y);
    base_uv -= 0.5;
    base_uv *= inv_shadow_map_size;

    float uw0 = (4.0 - 3.0 * s);
    float uw1 = 7.0;
    float uw2 = (1.0 + 3.0 * s);

    float u0 = (3.0 - 2.0 * s) / uw0 - 2.0;
    float u1 = (3.0 + s) / uw1;
    float u2 = s / uw2 + 2.0;

    float vw0 = (4.0 - 3.0 * t);
    float vw1 = 7.0;
    float vw2 = (1.0 + 3.0 * t);

    float v0 = (3.0 - 2.0 * t) / vw0 - 2.0;
    float v1 = (3.0 + t) / vw1;
    float v2 = t / vw2 + 2.0;

    float sum = 0.0;
    sum += uw0 * vw0 * sample_shadow_map_hardware(base_uv + (vec2(u0, v0) * inv_shadow_map_size), depth, array_index);
    sum += uw1 * vw0 * sample_shadow_map_hardware(base_uv + (vec2(u1, v0) * inv_shadow_map_size), depth, array_index);
    sum += uw2 * vw0 * sample_shadow_map_hardware(base_uv + (vec2(u2, v0) * inv_shadow_map_size), depth, array_index);
    sum += uw0 * vw1 * sample_shadow_map_hardware(base_uv + (vec2(u0, v1) * inv_shadow_map_size), depth, array_index);
    sum += uw1 * vw1 * sample_shadow_map_hardware(base_uv + (vec2(u1, v1) * inv_shadow_map_size), depth, array_index);
    sum += uw2 * vw1 * sample_shadow_map_hardware(base_uv + (vec2(u2, v1) * inv_shadow_map_size), depth, array_index);
    sum += uw0 * vw2 * sample_shadow_map_hardware(base_uv + (vec2(u0, v2) * inv_shadow_map_size), depth, array_index);
    sum += uw1 * vw2 * sample_shadow_map_hardware(base_uv + (vec2(u1, v2) * inv_shadow_map_size), depth, array_index);
    sum += uw2 * vw2 * sample_shadow_map_hardware(base_uv + (vec2(u2, v2) * inv_shadow_map_size), depth, array_index);
    return sum * (1.0 / 144.0);
}

float map_range(float min1, float max1, float min2, float max2, float value) {
    return min2 + (value - min1) * (max2 - min2) / (max1 - min1);
}

vec2 calculate_uv_offset_scale_jimenez_fourteen(float texel_size, float blur_size) {
    vec2 shadow_map_size = vec2(textureSize(directional_shadow_maps, 0).xy);
    // Empirically chosen fudge factor to make PCF look better across different CSM cascades
    // (Bevy's comment).
    float f = map_range(0.00390625, 0.022949219, 0.015, 0.035, texel_size);
    return f * blur_size / (texel_size * shadow_map_size);
}

float sample_shadow_map_jimenez_fourteen(vec2 light_local, float depth, int array_index,
                                         vec2 frag_coord_xy, float texel_size, float blur_size,
                                         bool temporal) {
    mat2 rotation_matrix = random_rotation_matrix(frag_coord_xy, temporal);
    vec2 uv_offset_scale = calculate_uv_offset_scale_jimenez_fourteen(texel_size, blur_size);
    float sum = 0.0;
    for (int k = 0; k < 8; k++) {
        vec2 sample_offset = (rotation_matrix * SPIRAL_OFFSETS[k]) * uv_offset_scale;
        sum += sample_shadow_map_hardware(light_local + sample_offset, depth, array_index);
    }
    return sum / 8.0;
}

float sample_shadow_map(vec2 light_local, float depth, int array_index, vec2 frag_coord_xy,
                        float texel_size) {
    uint filter_method = SHADOW_FILTER;
    if (filter_method == SHADOW_FILTER_GAUSSIAN) {
        return sample_shadow_map_castano_thirteen(light_local, depth, array_index);
    }
    if (filter_method == SHADOW_FILTER_TEMPORAL) {
        return sample_shadow_map_jimenez_fourteen(light_local, depth, array_index, frag_coord_xy,
                                                  texel_size, 1.0, true);
    }
    return sample_shadow_map_hardware(light_local, depth, array_index);
}

// ---- Point lights (cube array) ----

// Core GLSL has no explicit-level lookup for samplerCubeArrayShadow either: as for the 2D array
// above, the module rewrite makes this Bevy's lookup at level 0 (the cube maps have one mip
// level, so the implicit lookup would sample the same texels).
float sample_shadow_cubemap_hardware(vec3 light_local, float depth, int light_layer) {
    return texture(point_shadow_maps, vec4(light_local, float(light_layer)), depth);
}

float sample_shadow_cubemap_gaussian(vec3 light_local, float depth, float scale,
                                     float distance_to_light, int light_layer) {
    mat3 basis = shadow_orthonormalize(normalize(light_local)) * scale * distance_to_light;
    float sum = 0.0;
    for (int k = 0; k < 8; k++) {
        vec2 position = D3D_SAMPLE_POINT_POSITIONS[k];
        sum += sample_shadow_cubemap_hardware(
            light_local + position.x * basis[0] + position.y * basis[1], depth, light_layer)
            * D3D_SAMPLE_POINT_COEFFS[k];
    }
    return sum;
}

float sample_shadow_cubemap_jittered(vec3 light_local, float depth, vec2 frag_coord_xy,
                                     float scale, float distance_to_light, int light_layer,
                                     bool temporal) {
    mat2 rotation_matrix = random_rotation_matrix(frag_coord_xy, temporal);
    mat3 basis = shadow_orthonormalize(normalize(light_local)) * scale * distance_to_light;
    float sum = 0.0;
    for (int k = 0; k < 8; k++) {
        vec2 position = rotation_matrix * SPIRAL_OFFSETS[k] * POINT_SHADOW_TEMPORAL_OFFSET_SCALE;
        sum += sample_shadow_cubemap_hardware(
            light_local + position.x * basis[0] + position.y * basis[1], depth, light_layer)
            * 0.125;
    }
    return sum;
}

float sample_shadow_cubemap(vec3 light_local, float distance_to_light, float depth,
                            int light_layer, vec2 frag_coord_xy) {
    uint filter_method = SHADOW_FILTER;
    if (filter_method == SHADOW_FILTER_GAUSSIAN) {
        return sample_shadow_cubemap_gaussian(light_local, depth, POINT_SHADOW_SCALE,
                                              distance_to_light, light_layer);
    }
    if (filter_method == SHADOW_FILTER_TEMPORAL) {
        return sample_shadow_cubemap_jittered(light_local, depth, frag_coord_xy,
                                              POINT_SHADOW_SCALE, distance_to_light, light_layer,
                                              true);
    }
    return sample_shadow_cubemap_hardware(light_local, depth, light_layer);
}

// ---- Per light kind (shadows.wgsl) ----

// fetch_point_shadow. The cube faces were rendered with perspective_infinite_reverse_rh(pi/2,
// 1, near_z), whose depth at view distance d along the major axis is near_z / d.
float fetch_point_shadow(ClusterableLight light, vec3 frag_position, vec3 surface_normal,
                         vec2 frag_coord_xy) {
    // because the shadow maps align with the axes and the frustum planes are at 45 degrees
    // we can get the worldspace depth by taking the largest absolute axis
    vec3 surface_to_light = light.position_radius.xyz - frag_position;
    vec3 surface_to_light_abs = abs(surface_to_light);
    float distance_to_light = max(surface_to_light_abs.x, max(surface_to_light_abs.y, surface_to_light_abs.z));

    // The normal bias is already scaled by the texel size at 1 world unit from the light.
    vec3 normal_offset = light.shadow.y * distance_to_light * surface_normal;
    vec3 depth_offset = light.shadow.x * normalize(surface_to_light);
    vec3 offset_position = frag_position + normal_offset + depth_offset;

    vec3 frag_ls = offset_position - light.position_radius.xyz;
    vec3 abs_position_ls = abs(frag_ls);
    float major_axis_magnitude = max(abs_position_ls.x, max(abs_position_ls.y, abs_position_ls.z));
    float depth = light.shadow.z / major_axis_magnitude;

    // Cubemaps assume a left-handed coordinate space: flip z.
    return sample_shadow_cubemap(frag_ls * vec3(1.0, 1.0, -1.0), distance_to_light, depth,
                                 int(light.shadow.w), frag_coord_xy);
}

// fetch_spot_shadow
float fetch_spot_shadow(ClusterableLight light, vec3 frag_position, vec3 surface_normal,
                        vec2 frag_coord_xy) {
    vec3 surface_to_light = light.position_radius.xyz - frag_position;

    // The spot direction as Bevy's shader rebuilds it (x and z, y from their length and the
    // sign bit), so that the basis below is the one its shadow view was rendered with.
    vec3 spot_dir = vec3(light.spot_direction_range.x, 0.0, light.spot_direction_range.z);
    spot_dir.y = sqrt(max(0.0, 1.0 - spot_dir.x * spot_dir.x - spot_dir.z * spot_dir.z));
    if ((floatBitsToUint(light.spot_direction_range.y) & 0x80000000u) != 0u) {
        spot_dir.y = -spot_dir.y;
    }

    // view matrix z_axis is the reverse of transform.forward()
    vec3 fwd = -spot_dir;
    float distance_to_light = dot(fwd, surface_to_light);
    vec3 offset_position = -surface_to_light
        + (light.shadow.x * normalize(surface_to_light))
        + (surface_normal * light.shadow.y) * distance_to_light;

    mat3 light_inv_rot = shadow_orthonormalize(fwd);
    // WGSL `v * M` is transpose(M) * v.
    vec3 projected_position = offset_position * light_inv_rot;

    float f_div_minus_z = 1.0 / (light.spot_scale_offset_kind.w * -projected_position.z);
    vec2 shadow_xy_ndc = projected_position.xy * f_div_minus_z;
    vec2 shadow_uv = shadow_xy_ndc * vec2(0.5, -0.5) + vec2(0.5, 0.5);

    float depth = light.shadow.z / -projected_position.z;
    return sample_shadow_map(shadow_uv, depth, int(light.shadow.w), frag_coord_xy,
                             SPOT_SHADOW_TEXEL_SIZE);
}

// The directional functions take the light's index and read the uniform in place, as Bevy's
// take a pointer: a DirectionalLight passed by value is a 384-byte copy per call, which a
// driver may keep in per-thread memory when a cascade is picked by a computed index.
uint get_cascade_index(uint light_id, float view_z) {
    uint n = view.directional_lights[light_id].shadow_cascades.x;
    for (uint i = 0u; i < n; i = i + 1u) {
        if (-view_z < view.directional_lights[light_id].cascades[i].texel_size_far_bound.y) {
            return i;
        }
    }
    return n;
}

// world_to_directional_light_local: xy uv, z depth; w == 0 outside the shadow map.
vec4 world_to_directional_light_local(uint light_id, uint cascade_index,
                                      vec4 offset_position) {
    vec4 offset_position_clip =
        view.directional_lights[light_id].cascades[cascade_index].clip_from_world * offset_position;
    if (offset_position_clip.w <= 0.0) {
        return vec4(0.0);
    }
    vec3 offset_position_ndc = offset_position_clip.xyz / offset_position_clip.w;
    // No shadow outside the orthographic projection volume
    if (any(lessThan(offset_position_ndc.xy, vec2(-1.0))) || offset_position_ndc.z < 0.0
            || any(greaterThan(offset_position_ndc, vec3(1.0)))) {
        return vec4(0.0);
    }
    vec2 light_local = offset_position_ndc.xy * vec2(0.5, -0.5) + vec2(0.5, 0.5);
    return vec4(light_local, offset_position_ndc.z, 1.0);
}

float sample_directional_cascade(uint light_id, uint cascade_index, vec3 frag_position,
                                 vec3 surface_normal, vec2 frag_coord_xy) {
    float texel_size =
        view.directional_lights[light_id].cascades[cascade_index].texel_size_far_bound.x;
    vec4 biases = view.directional_lights[light_id].shadow_biases_overlap;
    // The normal bias is scaled to the texel size.
    vec3 normal_offset = biases.y * texel_size * surface_normal;
    vec3 depth_offset = biases.x * view.directional_lights[light_id].direction_to_light.xyz;
    vec4 offset_position = vec4(frag_position + normal_offset + depth_offset, 1.0);

    vec4 light_local = world_to_directional_light_local(light_id, cascade_index, offset_position);
    if (light_local.w == 0.0) {
        return 1.0;
    }
    int array_index = int(view.directional_lights[light_id].shadow_cascades.y + cascade_index);
    return sample_shadow_map(light_local.xy, light_local.z, array_index, frag_coord_xy,
                             texel_size);
}

// fetch_directional_shadow; view_z is the view-space z (negative in front of the camera).
float fetch_directional_shadow(uint light_id, vec3 frag_position, vec3 surface_normal,
                               float view_z, vec2 frag_coord_xy) {
    uint cascade_index = get_cascade_index(light_id, view_z);
    uint n = view.directional_lights[light_id].shadow_cascades.x;
    if (cascade_index >= n) {
        return 1.0;
    }
    float shadow = sample_directional_cascade(light_id, cascade_index, frag_position,
                                              surface_normal, frag_coord_xy);
    // Blend with the next cascade, if there is one.
    uint next_cascade_index = cascade_index + 1u;
    if (next_cascade_index < n) {
        float this_far_bound =
            view.directional_lights[light_id].cascades[cascade_index].texel_size_far_bound.y;
        float next_near_bound =
            (1.0 - view.directional_lights[light_id].shadow_biases_overlap.z) * this_far_bound;
        if (-view_z >= next_near_bound) {
            float next_shadow = sample_directional_cascade(light_id, next_cascade_index,
                                                           frag_position, surface_normal,
                                                           frag_coord_xy);
            shadow = mix(shadow, next_shadow,
                         (-view_z - next_near_bound) / (this_far_bound - next_near_bound));
        }
    }
    return shadow;
}

#endif
