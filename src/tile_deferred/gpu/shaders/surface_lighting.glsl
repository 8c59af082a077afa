// The light a lit surface receives, before the view exposure: Bevy's apply_pbr_lighting
// (pbr_functions.wgsl) without the emissive term. Every directional light, the point and spot
// lights of the surface's cluster (clusters.glsl; pbr_lighting.wgsl point_light / spot_light),
// each times its shadow (shadows.glsl) where the surface receives shadows, then the ambient and
// environment map light. Shared by the lighting subpass (lighting.glsl, from the G-buffer) and the
// transparent pass (forward.frag, per fragment). `shadow_normal` offsets the shadow lookups (normal
// bias); `cluster` is cluster_index() of the surface.
// Requires common.glsl, pbr_lighting.glsl, `view`, clusters.glsl, shadows.glsl and
// environment.glsl.

#ifndef TILE_DEFERRED_SURFACE_LIGHTING_GLSL
#define TILE_DEFERRED_SURFACE_LIGHTING_GLSL

// Which indirect light sources the view has (pipelines.rs `IndirectSources`): bit 0 an environment
// map, bit 1 irradiance volumes. Specialised as shadows.glsl's SHADOW_KINDS is: a view without
// them is lit without their code (Bevy, likewise, compiles its light probes' code only into the
// mesh pipelines of views that have them). The view uniform still says what each has.
layout(constant_id = 3) const uint INDIRECT_SOURCES = 3u;
const bool ENVIRONMENT_MAP = (INDIRECT_SOURCES & 1u) != 0u;
const bool IRRADIANCE_VOLUMES = (INDIRECT_SOURCES & 2u) != 0u;

vec3 surface_light(LightingInput lighting_input, vec3 world_position, vec3 shadow_normal,
                   bool shadow_receiver, vec2 frag_coord, uint cluster, float perceptual_roughness,
                   float diffuse_occlusion) {
    uint clusters = cluster_count();
    uint words = view.cluster_grid.w;
    float view_z = (view.view_from_world * vec4(world_position, 1.0)).z;

    // Directional lights (direct)
    vec3 direct_light = vec3(0.0);
    uint n_directional_lights = min(view.counts.x, uint(MAX_DIRECTIONAL_LIGHTS));
    for (uint i = 0u; i < n_directional_lights; i = i + 1u) {
        // directional_light() is its BRDF times saturate(N.L): a surface facing away from the
        // light gets nothing from it, so its shadow (up to 18 filtered taps where cascades
        // blend) is not fetched.
        bool faces_light =
            dot(lighting_input.N, view.directional_lights[i].direction_to_light.xyz) > 0.0;
        float shadow = 1.0;
        if (DIRECTIONAL_SHADOWS && shadow_receiver && faces_light
                && view.directional_lights[i].shadow_cascades.x > 0u) {
            shadow = fetch_directional_shadow(i, world_position, shadow_normal, view_z, frag_coord);
        }
        direct_light += directional_light(view.directional_lights[i], lighting_input) * shadow;
    }

    // Point and spot lights (direct): the set bits of the cluster's masks, in index order.
    for (uint word = 0u; word < words; word++) {
        uint bits = cluster_light_masks[word * clusters + cluster];
        while (bits != 0u) {
            uint bit = uint(findLSB(bits));
            bits &= bits - 1u;
            ClusterableLight light = clusterable_lights[word * 32u + bit];
            // getRangeFalloff is exactly 0 for distance^2 * inverse_range^2 >= 1.
            vec3 light_to_frag = light.position_radius.xyz - world_position;
            if (dot(light_to_frag, light_to_frag) * light.color_inverse_square_range.w >= 1.0) {
                continue;
            }
            bool spot = light.spot_scale_offset_kind.z > 0.5;
            vec3 light_reaching = spot ? spot_light(light, lighting_input)
                                       : point_light(light, lighting_input);
            // The shadow only scales the light: where none arrives (the surface faces away,
            // or lies outside a spot's cone) its eight cube or nine map taps are not fetched.
            float shadow = 1.0;
            if (CLUSTERED_SHADOWS && shadow_receiver && light.shadow.w >= 0.0
                    && any(notEqual(light_reaching, vec3(0.0)))) {
                shadow = spot ? fetch_spot_shadow(light, world_position, shadow_normal, frag_coord)
                              : fetch_point_shadow(light, world_position, shadow_normal, frag_coord);
            }
            direct_light += light_reaching * shadow;
        }
    }

    // Ambient light (indirect). specular_color is Bevy's calculate_F0(base_color, metallic,
    // reflectance): LightingInput.F0.
    vec3 indirect_light = ambient_light(lighting_input.NdotV, lighting_input.diffuse_color,
                                        lighting_input.F0,
                                        perceptual_roughness, vec3(diffuse_occlusion),
                                        view.ambient.rgb);

    // Irradiance volumes (indirect): where the view has any, Bevy's IRRADIANCE_VOLUME path
    // gives the diffuse indirect light (zero outside every volume) and the environment map
    // adds no diffuse light anywhere in the view.
    bool found_diffuse_indirect = IRRADIANCE_VOLUMES && view.irradiance_volume_count.x > 0u;
    if (found_diffuse_indirect) {
        indirect_light += irradiance_volume_light(world_position, lighting_input.N) *
            lighting_input.diffuse_color * diffuse_occlusion;
    }

    // Environment map light (indirect), before the ambient light as in apply_pbr_lighting.
    if (ENVIRONMENT_MAP) {
        indirect_light += environment_map_light(lighting_input, vec3(diffuse_occlusion),
                                                found_diffuse_indirect);
    }

    return direct_light + indirect_light;
}

#endif // TILE_DEFERRED_SURFACE_LIGHTING_GLSL
