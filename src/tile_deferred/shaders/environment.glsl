// The camera's EnvironmentMapLight (bevy_pbr 0.19.1 light_probe/environment_map.wgsl,
// environment_map_light for the view's own map: no light probes, no parallax correction, no
// clearcoat), added by the lighting subpass to the indirect light as apply_pbr_lighting does.
// Set 2 bindings 4 and 5 are the diffuse (irradiance) and specular (radiance) cubes (Bevy's
// fallback cube when the camera has none); view.environment.z says whether to use them.
// Requires common.glsl, pbr_lighting.glsl and the view uniform.

#ifndef TILE_DEFERRED_ENVIRONMENT_GLSL
#define TILE_DEFERRED_ENVIRONMENT_GLSL

layout(set = 2, binding = 4) uniform samplerCube diffuse_environment_map;
layout(set = 2, binding = 5) uniform samplerCube specular_environment_map;

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
// occlusion is 1: no SSAO on the tile path), before the view exposure.
vec3 environment_map_light(LightingInput i, vec3 diffuse_occlusion) {
    if (view.environment.z < 0.5) {
        return vec3(0.0);
    }
    float intensity = view.environment.x;
    // compute_radiances: the specular mip is perceptual roughness times the smallest mip level.
    float radiance_level = i.perceptual_roughness * view.environment.y;
    vec3 irradiance =
        textureLod(diffuse_environment_map, environment_sample_dir(i.N), 0.0).rgb * intensity;
    vec3 radiance_dir = radiance_sample_direction(i.N, i.R, i.roughness);
    vec3 radiance = textureLod(specular_environment_map, environment_sample_dir(radiance_dir),
                               radiance_level).rgb * intensity;
    if (all(equal(irradiance, vec3(0.0))) && all(equal(radiance, vec3(0.0)))) {
        return vec3(0.0);
    }

    vec3 F0_surface = mix(i.F0_dielectric, i.F0_metallic, i.metallic);
    float specular_occlusion = clamp(dot(F0_surface, vec3(50.0 * 0.33)), 0.0, 1.0);
    float Ems = 1.0 - (i.F_ab.x + i.F_ab.y);
    MultiscatterResult ms_dielectric = compute_multiscatter(i.F0_dielectric, i.F_ab, Ems, specular_occlusion);
    MultiscatterResult ms_metallic = compute_multiscatter(i.F0_metallic, i.F_ab, Ems, specular_occlusion);
    vec3 FssEss = mix(ms_dielectric.FssEss, ms_metallic.FssEss, i.metallic);
    vec3 FmsEms = mix(ms_dielectric.FmsEms, ms_metallic.FmsEms, i.metallic);
    vec3 kD = i.diffuse_color * ms_dielectric.Edss;

    vec3 diffuse = (FmsEms + kD) * irradiance;
    vec3 specular = FssEss * radiance;
    return diffuse * diffuse_occlusion + specular;
}

#endif // TILE_DEFERRED_ENVIRONMENT_GLSL
