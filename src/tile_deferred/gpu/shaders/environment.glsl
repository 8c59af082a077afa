// The camera's EnvironmentMapLight (bevy_pbr 0.19.1 light_probe/environment_map.wgsl,
// environment_map_light for the view's own map: no reflection probes, no parallax correction,
// no clearcoat) and the view's irradiance volumes (irradiance_volume.wgsl, one texture), added
// by the lighting subpass to the indirect light as apply_pbr_lighting does.
// Set 2 bindings 4 and 5 are the diffuse (irradiance) and specular (radiance) cubes (Bevy's
// fallback cube when the camera has none); view.environment.z says whether to use them.
// Requires common.glsl, pbr_lighting.glsl and the view uniform.

#ifndef TILE_DEFERRED_ENVIRONMENT_GLSL
#define TILE_DEFERRED_ENVIRONMENT_GLSL

layout(set = 2, binding = 4) uniform samplerCube diffuse_environment_map;
layout(set = 2, binding = 5) uniform samplerCube specular_environment_map;
// The voxels of the view's nearest irradiance volume (Bevy's fallback 3D image without one):
// Bevy binds one texture for all of the view's volumes where binding arrays are not usable.
layout(set = 2, binding = 6) uniform sampler3D irradiance_volume;

// light_probe.wgsl light_probe_iterator_next: the weight of a probe at `world_position`, 0
// outside its unit cube, ramping up over the falloff region.
float light_probe_weight(vec4 light_from_world_transposed[3], vec3 falloff_in,
                         vec3 world_position, out mat4 light_from_world) {
    light_from_world = transpose(mat4(light_from_world_transposed[0],
                                      light_from_world_transposed[1],
                                      light_from_world_transposed[2],
                                      vec4(0.0, 0.0, 0.0, 1.0)));
    vec3 probe_space_pos = (light_from_world * vec4(world_position, 1.0)).xyz;
    vec3 falloff = max(falloff_in, vec3(0.0001));
    vec3 axis_weights = clamp((1.0 - 2.0 * abs(probe_space_pos)) / (2.0 * falloff), 0.0, 1.0);
    return min(min(axis_weights.x, axis_weights.y), axis_weights.z);
}

// irradiance_volume.wgsl irradiance_volume_light: the view's irradiance volumes containing the
// point, weighted, each sampled (Valve's ambient cube) from the one bound texture.
vec3 irradiance_volume_light(vec3 world_position, vec3 N) {
    float total_weight = 0.0;
    vec3 total_irradiance = vec3(0.0);
    uint count = min(view.irradiance_volume_count.x, uint(MAX_IRRADIANCE_VOLUMES));
    for (uint i = 0u; i < count; i++) {
        IrradianceVolume volume = view.irradiance_volumes[i];
        mat4 light_from_world;
        float weight = light_probe_weight(volume.light_from_world_transposed,
                                          volume.falloff_intensity.xyz, world_position,
                                          light_from_world);
        if (weight == 0.0) {
            continue;
        }
        vec3 atlas_resolution = vec3(textureSize(irradiance_volume, 0));
        vec3 resolution = vec3(textureSize(irradiance_volume, 0) / ivec3(1, 2, 3));
        vec3 unit_pos = (light_from_world * vec4(world_position, 1.0)).xyz;
        vec3 stp = clamp((unit_pos + 0.5) * resolution, vec3(0.5), resolution - vec3(0.5));
        vec3 uvw = stp / atlas_resolution;
        vec3 neg_offset = mix(vec3(0.0), vec3(0.5), lessThan(N, vec3(0.0)));
        vec3 uvw_x = uvw + vec3(0.0, neg_offset.x, 0.0);
        vec3 uvw_y = uvw + vec3(0.0, neg_offset.y, 1.0 / 3.0);
        vec3 uvw_z = uvw + vec3(0.0, neg_offset.z, 2.0 / 3.0);
        vec3 rgb_x = textureLod(irradiance_volume, uvw_x, 0.0).rgb;
        vec3 rgb_y = textureLod(irradiance_volume, uvw_y, 0.0).rgb;
        vec3 rgb_z = textureLod(irradiance_volume, uvw_z, 0.0).rgb;
        vec3 NN = N * N;
        total_irradiance += (rgb_x * NN.x + rgb_y * NN.y + rgb_z * NN.z) *
            volume.falloff_intensity.w * weight;
        total_weight += weight;
    }
    if (total_weight != 0.0) {
        total_irradiance /= total_weight;
    }
    return total_irradiance;
}

// environment_map.wgsl quat_rotate
vec3 environment_quat_rotate(vec4 q, vec3 dir) {
    vec3 t = 2.0 * cross(q.xyz, dir);
    return dir + q.w * t + cross(q.xyz, t);
}

// environment_map.wgsl radiance_sample_direction
vec3 radiance_sample_direction(vec3 N, vec3 R, float roughness) {
    float smoothness = clamp(1.0 - roughness, 0.0, 1.0);
    float lerp_factor = smoothness * (sqrt(smoothness) + roughness);
    return mix(N, R, lerp_factor);
}

// The cube direction for a world direction: the inverse of EnvironmentMapLight::rotation, then
// z negated (cube maps are left-handed).
vec3 environment_sample_dir(vec3 world_dir) {
    vec3 dir = environment_quat_rotate(view.environment_rotation, world_dir);
    return vec3(dir.xy, -dir.z);
}

struct MultiscatterResult {
    vec3 FssEss;
    vec3 FmsEms;
    vec3 Edss;
};

MultiscatterResult compute_multiscatter(vec3 F0, vec2 F_ab, float Ems, float specular_occlusion) {
    MultiscatterResult result;
    result.FssEss = (F0 * F_ab.x + F_ab.y) * specular_occlusion;
    vec3 Favg = F0 + (1.0 - F0) / 21.0;
    result.FmsEms = result.FssEss * Favg / (1.0 - Ems * Favg) * Ems;
    result.Edss = 1.0 - (result.FssEss + result.FmsEms);
    return result;
}

// environment_map_light's diffuse * diffuse_occlusion + specular (the surface's own specular
// occlusion is 1: no SSAO on the tile path), before the view exposure. `found_diffuse_indirect`:
// an irradiance volume gave the diffuse indirect light (no diffuse from the map).
vec3 environment_map_light(LightingInput i, vec3 diffuse_occlusion, bool found_diffuse_indirect) {
    if (view.environment.z < 0.5) {
        return vec3(0.0);
    }
    float intensity = view.environment.x;
    // compute_radiances: the specular mip is perceptual roughness times the smallest mip level.
    float radiance_level = i.perceptual_roughness * view.environment.y;
    vec3 irradiance = vec3(0.0);
    if (!found_diffuse_indirect) {
        irradiance =
            textureLod(diffuse_environment_map, environment_sample_dir(i.N), 0.0).rgb * intensity;
    }
    vec3 radiance_dir = radiance_sample_direction(i.N, i.R, i.roughness);
    vec3 radiance = textureLod(specular_environment_map, environment_sample_dir(radiance_dir),
                               radiance_level).rgb * intensity;
    if (all(equal(irradiance, vec3(0.0))) && all(equal(radiance, vec3(0.0)))) {
        return vec3(0.0);
    }

    // Bevy's specular_occlusion here is saturate(dot(F0, vec3(50.0 * 0.33))) of the surface's
    // F0: LightingInput.F90.
    float specular_occlusion = i.F90;
    float Ems = 1.0 - (i.F_ab.x + i.F_ab.y);
    MultiscatterResult ms_dielectric = compute_multiscatter(i.F0_dielectric, i.F_ab, Ems, specular_occlusion);
    MultiscatterResult ms_metallic = compute_multiscatter(i.F0_metallic, i.F_ab, Ems, specular_occlusion);
    vec3 FssEss = mix(ms_dielectric.FssEss, ms_metallic.FssEss, i.metallic);
    vec3 FmsEms = mix(ms_dielectric.FmsEms, ms_metallic.FmsEms, i.metallic);
    vec3 kD = i.diffuse_color * ms_dielectric.Edss;

    vec3 diffuse = found_diffuse_indirect ? vec3(0.0) : (FmsEms + kD) * irradiance;
    vec3 specular = FssEss * radiance;
    return diffuse * diffuse_occlusion + specular;
}

#endif // TILE_DEFERRED_ENVIRONMENT_GLSL
