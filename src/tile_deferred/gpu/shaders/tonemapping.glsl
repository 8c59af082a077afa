// Bevy's in-shader tone mapping of an LDR camera (bevy_core_pipeline tonemapping_shared.wgsl
// tone_mapping() as the mesh pipeline compiles it) and the sRGB encode, shared by the tonemap
// subpass (tonemap.glsl) and the transparent pass (forward.frag), which tone maps each fragment
// as Bevy's mesh pipeline does (TONEMAP_IN_SHADER). Set 3 binding 2 is the LUT.

#ifndef TILE_DEFERRED_TONEMAPPING_GLSL
#define TILE_DEFERRED_TONEMAPPING_GLSL

layout(set = 3, binding = 2) uniform sampler3D tonemapping_lut;

#define TONEMAP_NONE 0u
#define TONEMAP_REINHARD 1u
#define TONEMAP_REINHARD_LUMINANCE 2u
#define TONEMAP_ACES_FITTED 3u
#define TONEMAP_AGX 4u
#define TONEMAP_SOMEWHAT_BORING_DISPLAY_TRANSFORM 5u
#define TONEMAP_TONY_MC_MAPFACE 6u
#define TONEMAP_BLENDER_FILMIC 7u
#define TONEMAP_PBR_NEUTRAL 8u

// The camera's ColorGrading as the mesh pipeline applies it: bevy_pbr never defines HUE_ROTATE,
// WHITE_BALANCE or SECTIONAL_COLOR_GRADING for in-shader tone mapping, so only the global exposure
// and post_saturation take part (`grading`: x exposure, y post_saturation; the view uniform's
// exposure.yz).

// bevy_render::maths::powsafe
vec3 powsafe(vec3 color, float power) {
    return pow(abs(color), vec3(power)) * sign(color);
}

vec3 saturate3(vec3 v) { return clamp(v, vec3(0.0), vec3(1.0)); }

vec3 sample_current_lut(vec3 p) {
    return textureLod(tonemapping_lut, p, 0.0).rgb;
}

// luminance coefficients from Rec. 709.
float tonemapping_luminance(vec3 v) {
    return dot(v, vec3(0.2126, 0.7152, 0.0722));
}

// --- SomewhatBoringDisplayTransform ---

vec3 rgb_to_ycbcr(vec3 col) {
    mat3 m = mat3(
        0.2126, 0.7152, 0.0722,
        -0.1146, -0.3854, 0.5,
        0.5, -0.4542, -0.0458
    );
    return col * m;
}

float tonemap_curve(float v) {
    return 1.0 - exp(-v);
}

vec3 tonemap_curve3_(vec3 v) {
    return vec3(tonemap_curve(v.r), tonemap_curve(v.g), tonemap_curve(v.b));
}

vec3 somewhat_boring_display_transform(vec3 col) {
    vec3 boring_color = col;
    vec3 ycbcr = rgb_to_ycbcr(boring_color);

    float bt = tonemap_curve(length(ycbcr.yz) * 2.4);
    float desat = max((bt - 0.7) * 0.8, 0.0);
    desat *= desat;

    vec3 desat_col = mix(boring_color.rgb, ycbcr.xxx, desat);

    float tm_luma = tonemap_curve(ycbcr.x);
    vec3 tm0 = boring_color.rgb * max(0.0, tm_luma / max(1e-5, tonemapping_luminance(boring_color.rgb)));
    float final_mult = 0.97;
    vec3 tm1 = tonemap_curve3_(desat_col);

    boring_color = mix(tm0, tm1, bt * bt);

    return boring_color * final_mult;
}

// --- Tony McMapface ---

const float TONY_MC_MAPFACE_LUT_DIMS = 48.0;

vec3 sample_tony_mc_mapface_lut(vec3 stimulus) {
    vec3 uv = (stimulus / (stimulus + 1.0)) * ((TONY_MC_MAPFACE_LUT_DIMS - 1.0) / TONY_MC_MAPFACE_LUT_DIMS) + 0.5 / TONY_MC_MAPFACE_LUT_DIMS;
    return sample_current_lut(saturate3(uv)).rgb;
}

// --- ACES Fitted ---

vec3 RRTAndODTFit(vec3 v) {
    vec3 a = v * (v + 0.0245786) - 0.000090537;
    vec3 b = v * (0.983729 * v + 0.4329510) + 0.238081;
    return a / b;
}

vec3 ACESFitted(vec3 color) {
    vec3 fitted_color = color;

    // sRGB => XYZ => D65_2_D60 => AP1 => RRT_SAT
    mat3 rgb_to_rrt = mat3(
        vec3(0.59719, 0.35458, 0.04823),
        vec3(0.07600, 0.90834, 0.01566),
        vec3(0.02840, 0.13383, 0.83777)
    );

    // ODT_SAT => XYZ => D60_2_D65 => sRGB
    mat3 odt_to_rgb = mat3(
        vec3(1.60475, -0.53108, -0.07367),
        vec3(-0.10208, 1.10813, -0.00605),
        vec3(-0.00327, -0.07276, 1.07602)
    );

    fitted_color *= rgb_to_rrt;

    // Apply RRT and ODT
    fitted_color = RRTAndODTFit(fitted_color);

    fitted_color *= odt_to_rgb;

    // Clamp to [0, 1]
    fitted_color = saturate3(fitted_color);

    return fitted_color;
}

// --- AgX ---

vec3 saturation(vec3 color, float saturationAmount) {
    float luma = tonemapping_luminance(color);
    return mix(vec3(luma), color, vec3(saturationAmount));
}

vec3 convertOpenDomainToNormalizedLog2_(vec3 color, float minimum_ev, float maximum_ev) {
    float in_midgray = 0.18;

    // remove negative before log transform
    vec3 normalized_color = max(vec3(0.0), color);
    // avoid infinite issue with log -- ref[1]
    normalized_color = mix(normalized_color, 0.00001525878 + normalized_color,
                           lessThan(normalized_color, vec3(0.00003051757)));
    normalized_color = clamp(
        log2(normalized_color / in_midgray),
        vec3(minimum_ev),
        vec3(maximum_ev)
    );
    float total_exposure = maximum_ev - minimum_ev;

    return (normalized_color - minimum_ev) / total_exposure;
}

vec3 applyAgXLog(vec3 Image) {
    vec3 prepared_image = max(vec3(0.0), Image); // clamp negatives
    float r = dot(prepared_image, vec3(0.84247906, 0.0784336, 0.07922375));
    float g = dot(prepared_image, vec3(0.04232824, 0.87846864, 0.07916613));
    float b = dot(prepared_image, vec3(0.04237565, 0.0784336, 0.87914297));
    prepared_image = vec3(r, g, b);

    prepared_image = convertOpenDomainToNormalizedLog2_(prepared_image, -10.0, 6.5);

    prepared_image = clamp(prepared_image, vec3(0.0), vec3(1.0));
    return prepared_image;
}

vec3 applyLUT3D(vec3 Image, float block_size) {
    return sample_current_lut(Image * ((block_size - 1.0) / block_size) + 0.5 / block_size).rgb;
}

// --- Blender Filmic ---

vec3 sample_blender_filmic_lut(vec3 stimulus) {
    float block_size = 64.0;
    vec3 normalized = saturate3(convertOpenDomainToNormalizedLog2_(stimulus, -11.0, 12.0));
    return applyLUT3D(normalized, block_size);
}

// --- Reinhard ---

vec3 tonemapping_reinhard(vec3 color) {
    return color / (1.0 + color);
}

vec3 tonemapping_change_luminance(vec3 c_in, float l_out) {
    float l_in = tonemapping_luminance(c_in);
    return c_in * (l_out / l_in);
}

vec3 tonemapping_reinhard_luminance(vec3 color) {
    float l_old = tonemapping_luminance(color);
    float l_new = l_old / (1.0 + l_old);
    return tonemapping_change_luminance(color, l_new);
}

// --- Khronos PBR Neutral (not in the push-constant contract; mode 8 as an extension) ---

vec3 tonemapping_pbr_neutral(vec3 color_in) {
    // 0.8 - 0.04, folded in double precision like naga does for the WGSL constant.
    const float start_compression = 0.76;
    const float desaturation = 0.15;

    float min_channel = min(color_in.r, min(color_in.g, color_in.b));
    float offset = min_channel < 0.08 ? min_channel - 6.25 * min_channel * min_channel : 0.04;
    vec3 offset_color = color_in - offset;
    float max_channel = max(offset_color.r, max(offset_color.g, offset_color.b));
    if (max_channel < start_compression) {
        return offset_color;
    }
    float d = 1.0 - start_compression;
    float new_max_channel = 1.0 - d * d / (max_channel + d - start_compression);
    vec3 color = offset_color * (new_max_channel / max_channel);
    float g = 1.0 - 1.0 / (desaturation * (max_channel - new_max_channel) + 1.0);
    return mix(color, vec3(new_max_channel), g);
}

// Source: Advanced VR Rendering, GDC 2015, Alex Vlachos, Valve, Slide 49
vec3 screen_space_dither(vec2 frag_coord) {
    vec3 dither = vec3(dot(vec2(171.0, 231.0), frag_coord)).xxx;
    dither = fract(dither.rgb / vec3(103.0, 71.0, 97.0));
    return (dither - 0.5) / 255.0;
}

vec4 tone_mapping(vec4 in_color, uint method, vec2 grading) {
    vec3 color = max(in_color.rgb, vec3(0.0));

    // Not SECTIONAL_COLOR_GRADING: only the global exposure (2^0 = 1 at defaults).
    color = color * powsafe(vec3(2.0), grading.x);

    if (method == TONEMAP_NONE) {
        color = color;
    } else if (method == TONEMAP_REINHARD) {
        color = tonemapping_reinhard(color.rgb);
    } else if (method == TONEMAP_REINHARD_LUMINANCE) {
        color = tonemapping_reinhard_luminance(color.rgb);
    } else if (method == TONEMAP_ACES_FITTED) {
        color = ACESFitted(color.rgb);
    } else if (method == TONEMAP_AGX) {
        color = applyAgXLog(color);
        color = applyLUT3D(color, 32.0);
    } else if (method == TONEMAP_SOMEWHAT_BORING_DISPLAY_TRANSFORM) {
        color = somewhat_boring_display_transform(color.rgb);
    } else if (method == TONEMAP_TONY_MC_MAPFACE) {
        color = sample_tony_mc_mapface_lut(color);
    } else if (method == TONEMAP_BLENDER_FILMIC) {
        color = sample_blender_filmic_lut(color.rgb);
    } else if (method == TONEMAP_PBR_NEUTRAL) {
        color = tonemapping_pbr_neutral(color.rgb);
    }

    // Perceptual post tonemapping grading
    color = saturation(color, grading.y);

    return vec4(color, in_color.a);
}

// The exact sRGB OETF (what an *_SRGB attachment applies on store), for UNORM targets.
vec3 linear_to_srgb(vec3 c) {
    c = clamp(c, vec3(0.0), vec3(1.0));
    vec3 lo = c * 12.92;
    vec3 hi = 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055;
    return mix(hi, lo, lessThanEqual(c, vec3(0.0031308)));
}

#endif // TILE_DEFERRED_TONEMAPPING_GLSL
