// The camera's DistanceFog: bevy_pbr 0.19.1 pbr_functions.wgsl apply_fog and fog.wgsl, applied
// by the tonemap subpass to a surface pixel's accumulated light before tone mapping (where
// Bevy's main_pass_post_lighting_processing applies it: to the exposed light and emissive of
// every material, lit or unlit, and never to the background); before an HDR camera's
// transparent pass, by the lighting subpass instead (light_finish.frag). The world position is
// reconstructed from depth. view.fog_* mirror Bevy's GpuFog; mode 0 is no fog.
// Requires common.glsl, the view uniform (skybox.glsl declares it for the tonemap pass) and
// shadows.glsl: as in Bevy, each directional light's inscattering is attenuated by its shadow at
// the fragment (sampled with the view direction as the normal).

#ifndef TILE_DEFERRED_FOG_GLSL
#define TILE_DEFERRED_FOG_GLSL

#define FOG_MODE_OFF 0u
#define FOG_MODE_LINEAR 1u
#define FOG_MODE_EXPONENTIAL 2u
#define FOG_MODE_EXPONENTIAL_SQUARED 3u
#define FOG_MODE_ATMOSPHERIC 4u

uint fog_mode() {
    return uint(view.fog_bi_mode.w + 0.5);
}

// fog.wgsl scattering_adjusted_fog_color
vec4 scattering_adjusted_fog_color(vec3 scattering) {
    vec4 base_color = view.fog_base_color;
    vec4 light_color = view.fog_directional_light_color;
    if (light_color.a > 0.0) {
        return vec4(base_color.rgb + scattering * light_color.rgb * light_color.a, base_color.a);
    }
    return base_color;
}

vec3 apply_fog(vec3 input_color, vec3 fragment_world_position, vec2 frag_coord) {
    uint mode = fog_mode();
    if (mode == FOG_MODE_OFF) {
        return input_color;
    }
    vec3 view_to_world = fragment_world_position - view.world_position.xyz;
    // Bevy takes the length, not the view z: curved fog that stays put as the camera turns.
    float distance = length(view_to_world);

    vec3 scattering = vec3(0.0);
    if (view.fog_directional_light_color.a > 0.0) {
        vec3 view_to_world_normalized = view_to_world / distance;
        // pbr_functions.wgsl apply_fog: the shadow at the fragment, the view direction as the
        // normal, the cascade chosen by the view-space z.
        float view_z = (view.view_from_world * vec4(fragment_world_position, 1.0)).z;
        vec3 view_direction_normal = normalize(-view_to_world);
        uint n_directional_lights = min(view.counts.x, uint(MAX_DIRECTIONAL_LIGHTS));
        for (uint i = 0u; i < n_directional_lights; i = i + 1u) {
            DirectionalLight light = view.directional_lights[i];
            float shadow = 1.0;
            if (DIRECTIONAL_SHADOWS && light.shadow_cascades.x > 0u) {
                shadow = fetch_directional_shadow(i, fragment_world_position,
                                                  view_direction_normal, view_z, frag_coord);
            }
            scattering += pow(
                max(dot(view_to_world_normalized, light.direction_to_light.xyz), 0.0),
                view.fog_be_exponent.w
            ) * light.color.rgb * view.exposure.x * shadow;
        }
    }

    vec4 fog_color = scattering_adjusted_fog_color(scattering);
    vec3 be = view.fog_be_exponent.xyz;
    if (mode == FOG_MODE_LINEAR) {
        float start = be.x;
        float end = be.y;
        fog_color.a *= 1.0 - clamp((end - distance) / (end - start), 0.0, 1.0);
    } else if (mode == FOG_MODE_EXPONENTIAL) {
        fog_color.a *= 1.0 - 1.0 / exp(distance * be.x);
    } else if (mode == FOG_MODE_EXPONENTIAL_SQUARED) {
        float distance_times_density = distance * be.x;
        fog_color.a *= 1.0 - 1.0 / exp(distance_times_density * distance_times_density);
    } else {
        // FOG_MODE_ATMOSPHERIC
        vec3 extinction_factor = 1.0 - 1.0 / exp(distance * be);
        vec3 inscattering_factor = 1.0 - 1.0 / exp(distance * view.fog_bi_mode.xyz);
        return input_color * (1.0 - extinction_factor * fog_color.a)
            + fog_color.rgb * inscattering_factor * fog_color.a;
    }
    return mix(input_color, fog_color.rgb, fog_color.a);
}

#endif // TILE_DEFERRED_FOG_GLSL
