// Port of Bevy 0.19.1's PBR lighting (bevy_pbr/src/render/pbr_lighting.wgsl, pbr_ambient.wgsl and
// the lighting-input setup of apply_pbr_lighting in pbr_functions.wgsl), for the configuration the
// tile-deferred path supports: no clearcoat, no anisotropy, no transmission, no light textures,
// no shadows, no DFG LUT (bevy's `dfg_lut` feature is off, so F_AB is the polynomial fit).
//
// Every function keeps Bevy's constants, clamps and order of operations; do not "simplify".
// The exceptions, each equal to Bevy's maths within rounding and there because the point-light
// loop is most of a frame's shading: pow(x, 5.0) is pow5(), point_light() takes the direction
// and the distance from one inversesqrt, and a light of radius 0 skips the representative-point
// maths that reduces to the identity for it. LightingInput also carries the BRDF terms that
// depend on the surface alone (the same operations, done once per pixel, not once per light).
// Requires common.glsl to be included first.

#ifndef TILE_DEFERRED_PBR_LIGHTING_GLSL
#define TILE_DEFERRED_PBR_LIGHTING_GLSL

const float PI = 3.141592653589793; // bevy_render::maths::PI

// lighting::LightingInput with a single (base) layer.
struct LightingInput {
    vec3 N;                     // layers[LAYER_BASE].N
    vec3 R;                     // layers[LAYER_BASE].R
    float NdotV;                // layers[LAYER_BASE].NdotV
    float perceptual_roughness; // layers[LAYER_BASE].perceptual_roughness
    float roughness;            // layers[LAYER_BASE].roughness
    vec3 P;
    vec3 V;
    vec3 diffuse_color;
    float metallic;
    vec3 F0_dielectric;
    vec3 F0_metallic;
    vec2 F_ab;
    // The per-light BRDF's terms that depend on the surface alone, computed once per pixel by
    // make_lighting_input() rather than once per light (the same operations in the same order,
    // so the same values as Bevy's inline ones; a mobile shader compiler may not hoist them
    // out of the light loop itself):
    vec3 F0;                    // specular(), ambient: calculate_F0(), mix(F0_dielectric, F0_metallic, metallic)
    float F90;                  // fresnel(), the environment's specular occlusion: saturate(dot(F0, vec3(50.0 * 0.33)))
    vec3 energy_compensation;   // specular_multiscatter(): 1.0 + F0 * (1.0 / (F_ab.x + F_ab.y) - 1.0)
    float view_fresnel;         // Fd_Burley()'s viewScatter: pow(1.0 - NdotV, 5.0)
};

struct DerivedLightingInput {
    vec3 H;
    float NdotL;
    float NdotH;
    float LdotH;
};

float saturate(float x) { return clamp(x, 0.0, 1.0); }

float getRangeFalloff(float distanceSquare, float inverseRangeSquared) {
    float factor = distanceSquare * inverseRangeSquared;
    float smoothFactor = saturate(1.0 - factor * factor);
    return smoothFactor * smoothFactor;
}

float getDistanceAttenuation(float distanceSquare, float inverseRangeSquared) {
    return getRangeFalloff(distanceSquare, inverseRangeSquared) * 1.0 / max(distanceSquare, 0.0001);
}

float D_GGX(float roughness, float NdotH) {
    float oneMinusNdotHSquared = 1.0 - NdotH * NdotH;
    float a = NdotH * roughness;
    float k = roughness / (oneMinusNdotHSquared + a * a);
    float d = k * k * (1.0 / PI);
    return d;
}

float V_SmithGGXCorrelated(float roughness, float NdotV, float NdotL) {
    float a2 = roughness * roughness;
    float lambdaV = NdotL * sqrt((NdotV - a2 * NdotV) * NdotV + a2);
    float lambdaL = NdotV * sqrt((NdotL - a2 * NdotL) * NdotL + a2);
    float v = 0.5 / (lambdaV + lambdaL);
    return v;
}

// Bevy's pow(1.0 - x, 5.0) as three multiplies. A pow is a log2 and an exp2 on the GPU's
// transcendental unit, which issues at a quarter of the multiply rate or less (NVIDIA, Mali,
// Adreno), and the point-light loop evaluates three per light and pixel. The product is within
// rounding of the pow for x in [0, 1], the only inputs here (saturated dot products).
float pow5(float x) {
    float x2 = x * x;
    return x2 * x2 * x;
}

vec3 F_Schlick_vec(vec3 f0, float f90, float VdotH) {
    // not using mix to keep the vec3 and float versions identical
    return f0 + (f90 - f0) * pow5(1.0 - VdotH);
}

float F_Schlick(float f0, float f90, float VdotH) {
    return f0 + (f90 - f0) * pow5(1.0 - VdotH);
}

// Bevy's fresnel(f0, LdotH) with its f_90 (saturate(dot(f0, vec3(50.0 * 0.33))), suitable for
// ambient occlusion) precomputed: LightingInput.F90.
vec3 fresnel(vec3 f0, float f90, float LdotH) {
    return F_Schlick_vec(f0, f90, LdotH);
}

// Bevy's specular_multiscatter with its energy compensation precomputed:
// LightingInput.energy_compensation.
vec3 specular_multiscatter(float D, float V, vec3 F, vec3 energy_compensation, float specular_intensity) {
    vec3 Fr = (specular_intensity * D * V) * F;
    Fr *= energy_compensation;
    return Fr;
}

DerivedLightingInput derive_lighting_input(vec3 N, vec3 V, vec3 L) {
    DerivedLightingInput o;
    vec3 H = normalize(L + V);
    o.H = H;
    o.NdotL = saturate(dot(N, L));
    o.NdotH = saturate(dot(N, H));
    o.LdotH = saturate(dot(L, H));
    return o;
}

// Returns L in xyz and the modified roughness in w (Karis 2013 representative point).
vec4 compute_specular_layer_values_for_point_light(
    LightingInput i, vec3 light_to_frag, float light_radius, float distance_
) {
    vec3 R = i.R;
    float a = i.roughness;

    float LtFdotR = dot(light_to_frag, R);
    // Bevy's fix for https://github.com/bevyengine/bevy/issues/13318
    LtFdotR = max(0.0001, LtFdotR);

    vec3 centerToRay = LtFdotR * R - light_to_frag;
    vec3 closestPoint = light_to_frag + centerToRay * saturate(
        light_radius * inversesqrt(dot(centerToRay, centerToRay)));
    float LspecLengthInverse = inversesqrt(dot(closestPoint, closestPoint));

    float a_prime = saturate(a + light_radius / (2.0 * distance_));

    vec3 L = closestPoint * LspecLengthInverse;
    return vec4(L, a_prime);
}

vec3 specular(LightingInput i, DerivedLightingInput d, float roughness, float specular_intensity) {
    float NdotV = i.NdotV;
    float NdotL = d.NdotL;
    float NdotH = d.NdotH;
    float LdotH = d.LdotH;

    float D = D_GGX(roughness, NdotH);
    float V = V_SmithGGXCorrelated(roughness, NdotV, NdotL);
    vec3 F = fresnel(i.F0, i.F90, LdotH);

    vec3 Fr = specular_multiscatter(D, V, F, i.energy_compensation, specular_intensity);
    return Fr;
}

float Fd_Burley(LightingInput i, DerivedLightingInput d) {
    float roughness = i.roughness;
    float NdotL = d.NdotL;
    float LdotH = d.LdotH;

    float f90 = 0.5 + 2.0 * roughness * LdotH * LdotH;
    float lightScatter = F_Schlick(1.0, f90, NdotL);
    // F_Schlick(1.0, f90, NdotV), its pow precomputed (LightingInput.view_fresnel).
    float viewScatter = 1.0 + (f90 - 1.0) * i.view_fresnel;
    return lightScatter * viewScatter * (1.0 / PI);
}

// Scale/bias approximation (polynomial; Bevy without the `dfg_lut` feature).
vec2 F_AB(float perceptual_roughness, float NdotV) {
    const vec4 c0 = vec4(-1.0, -0.0275, -0.572, 0.022);
    const vec4 c1 = vec4(1.0, 0.0425, 1.04, -0.04);
    vec4 r = perceptual_roughness * c0 + c1;
    float a004 = min(r.x * r.x, exp2(-9.28 * NdotV)) * r.x + r.y;
    // Keep F_ab positive to avoid divide-by-zero in downstream BRDF terms.
    const float f_ab_epsilon = 0.00005;
    return max(vec2(-1.04, 1.04) * a004 + r.zw, vec2(f_ab_epsilon));
}

vec3 EnvBRDFApprox(vec3 F0, vec2 F_ab) {
    return F0 * F_ab.x + F_ab.y;
}

float perceptualRoughnessToRoughness(float perceptualRoughness) {
    float clampedPerceptualRoughness = clamp(perceptualRoughness, 0.089, 1.0);
    return clampedPerceptualRoughness * clampedPerceptualRoughness;
}

float specular_fix_remap(float a) {
    float inv_a_sq = (1.0 - a) * (1.0 - a);
    return 1.0 - inv_a_sq * inv_a_sq;
}

// lighting::point_light without clearcoat/anisotropy/light textures (texture_sample == 1).
vec3 point_light(ClusterableLight light, LightingInput i) {
    vec3 diffuse_color = i.diffuse_color;
    vec3 P = i.P;
    vec3 N = i.N;
    vec3 V = i.V;

    vec3 light_to_frag = light.position_radius.xyz - P;
    float distance_square = dot(light_to_frag, light_to_frag);
    // normalize() and sqrt() from one reciprocal square root: a transcendental op less per light.
    float inverse_distance = inversesqrt(distance_square);
    vec3 L = light_to_frag * inverse_distance;
    float distance_ = distance_square * inverse_distance;
    float rangeAttenuation = getDistanceAttenuation(distance_square, light.color_inverse_square_range.w);

    DerivedLightingInput derived_input = derive_lighting_input(N, V, L);
    float a = i.roughness;
    float light_radius = light.position_radius.w;
    vec3 specular_light;
    float specular_NdotL;
    if (light_radius > 0.0) {
        vec4 specular_L_a_prime = compute_specular_layer_values_for_point_light(
            i, light_to_frag, light_radius, distance_);
        vec3 L_spec = specular_L_a_prime.xyz;
        float a_prime = specular_L_a_prime.w;
        DerivedLightingInput specular_derived_input = derive_lighting_input(N, V, L_spec);

        float normalizationFactor = a / a_prime;
        float specular_intensity = normalizationFactor * normalizationFactor;

        float brdf_roughness = mix(a, a_prime, specular_fix_remap(a));

        specular_light = specular(i, specular_derived_input, brdf_roughness, specular_intensity);

        // Sphere area light visibility (solid-angle attenuation)
        float solid_angle = light_radius * light_radius / (distance_ * distance_);
        specular_light *= saturate(specular_derived_input.NdotL / max(specular_derived_input.NdotL + solid_angle, 1e-4));
        specular_NdotL = specular_derived_input.NdotL;
    } else {
        // A point light of radius 0 (PointLight's default): Bevy's representative point is the
        // light itself (closestPoint = light_to_frag), so the specular L is L, a' = a, the
        // normalization is 1 and the BRDF roughness is a. The specular term then shares the
        // diffuse term's half vector, and the representative-point maths (two reciprocal square
        // roots and two divides per light) is skipped. Every lane of a warp usually evaluates
        // the same light, so the branch does not diverge.
        specular_light = specular(i, derived_input, a, 1.0);
        specular_NdotL = derived_input.NdotL;
    }

    // Diffuse.
    vec3 diffuse = diffuse_color * Fd_Burley(i, derived_input);

    vec3 color_times_NdotL = diffuse * derived_input.NdotL + specular_light * specular_NdotL;

    return color_times_NdotL * light.color_inverse_square_range.rgb * rangeAttenuation;
}

// lighting::spot_light. Bevy stores only the spot direction's x and z plus a "y negative" flag
// and rebuilds y; the same reconstruction is done here from the full direction so that the result
// is bit-for-bit what Bevy computes from the same x, z.
vec3 spot_light(ClusterableLight light, LightingInput i) {
    vec3 point_light_ = point_light(light, i);

    vec3 spot_dir = vec3(light.spot_direction_range.x, 0.0, light.spot_direction_range.z);
    spot_dir.y = sqrt(max(0.0, 1.0 - spot_dir.x * spot_dir.x - spot_dir.z * spot_dir.z));
    // POINT_LIGHT_FLAGS_SPOT_LIGHT_Y_NEGATIVE is set from `direction.y.is_sign_negative()`.
    if ((floatBitsToUint(light.spot_direction_range.y) & 0x80000000u) != 0u) {
        spot_dir.y = -spot_dir.y;
    }
    vec3 light_to_frag = light.position_radius.xyz - i.P.xyz;

    // The direction as point_light() computes it, so that the compiler shares the inversesqrt.
    float cd = dot(-spot_dir, light_to_frag * inversesqrt(dot(light_to_frag, light_to_frag)));
    float attenuation = saturate(cd * light.spot_scale_offset_kind.x + light.spot_scale_offset_kind.y);
    float spot_attenuation = attenuation * attenuation;

    return point_light_ * spot_attenuation;
}

// lighting::directional_light (no shadows, no light textures, no atmosphere).
vec3 directional_light(DirectionalLight light, LightingInput i) {
    vec3 diffuse_color = i.diffuse_color;
    vec3 N = i.N;
    vec3 V = i.V;
    float roughness = i.roughness;

    vec3 L = light.direction_to_light.xyz;
    DerivedLightingInput derived_input = derive_lighting_input(N, V, L);

    vec3 diffuse = diffuse_color * Fd_Burley(i, derived_input);

    vec3 specular_light = specular(i, derived_input, roughness, 1.0);

    vec3 color = (diffuse + specular_light) * derived_input.NdotL;
    color *= light.color.rgb;
    return color;
}

// ambient::ambient_light. `ambient_color` is Bevy's lights.ambient_color.rgb
// (LinearRgba(GlobalAmbientLight.color) * brightness).
vec3 ambient_light(float NdotV, vec3 diffuse_color, vec3 specular_color, float perceptual_roughness,
                   vec3 occlusion, vec3 ambient_color) {
    vec3 diffuse_ambient = EnvBRDFApprox(diffuse_color, F_AB(1.0, NdotV));
    vec3 specular_ambient = EnvBRDFApprox(specular_color, F_AB(perceptual_roughness, NdotV));

    // "pre-baked specular occlusion" that extinguishes the fresnel term for F0 < 0.02.
    float specular_occlusion = saturate(dot(specular_color, vec3(50.0 * 0.33)));

    return (diffuse_ambient + specular_ambient * specular_occlusion) * ambient_color * occlusion;
}

// pbr_functions::calculate_view. Bevy decides orthographic with clip_from_view[3].w == 1.0.
bool view_is_orthographic(View view) {
    return view.clip_from_view[3].w == 1.0;
}

vec3 calculate_view(View view, vec3 world_position, bool is_orthographic) {
    vec3 V;
    if (is_orthographic) {
        V = normalize(vec3(view.clip_from_world[0].z, view.clip_from_world[1].z, view.clip_from_world[2].z));
    } else {
        V = normalize(view.world_position.xyz - world_position.xyz);
    }
    return V;
}

// pbr_functions::calculate_F0_dielectric / calculate_F0 (reflectance is a scalar here: Bevy's
// vec3 reflectance is specular_tint * reflectance, see the report).
vec3 calculate_F0_dielectric(vec3 reflectance) {
    return 0.16 * reflectance * reflectance;
}

vec3 calculate_F0(vec3 base_color, float metallic, vec3 reflectance) {
    return mix(calculate_F0_dielectric(reflectance), base_color, metallic);
}

// The lighting-input setup at the top of apply_pbr_lighting.
LightingInput make_lighting_input(vec3 base_color, float metallic, float perceptual_roughness,
                                  float reflectance_, vec3 N, vec3 V, vec3 P) {
    vec3 reflectance = vec3(reflectance_);
    float roughness = perceptualRoughnessToRoughness(perceptual_roughness);

    // Neubelt and Pettineo 2013, "Crafting a Next-gen Material Pipeline for The Order: 1886"
    float NdotV = max(dot(N, V), 0.0001);
    vec3 R = reflect(-V, N);

    // calculate_diffuse_color with specular_transmission = diffuse_transmission = 0.
    vec3 diffuse_color = base_color * (1.0 - metallic) * (1.0 - 0.0) * (1.0 - 0.0);

    LightingInput i;
    i.NdotV = NdotV;
    i.N = N;
    i.R = R;
    i.perceptual_roughness = perceptual_roughness;
    i.roughness = roughness;
    i.P = P;
    i.V = V;
    i.diffuse_color = diffuse_color;
    i.metallic = metallic;
    i.F0_dielectric = calculate_F0_dielectric(reflectance);
    i.F0_metallic = base_color;
    i.F_ab = F_AB(perceptual_roughness, NdotV);
    i.F0 = calculate_F0(base_color, metallic, reflectance);
    i.F90 = saturate(dot(i.F0, vec3(50.0 * 0.33)));
    i.energy_compensation = 1.0 + i.F0 * (1.0 / (i.F_ab.x + i.F_ab.y) - 1.0);
    i.view_fresnel = pow5(1.0 - NdotV);
    return i;
}

#endif // TILE_DEFERRED_PBR_LIGHTING_GLSL
