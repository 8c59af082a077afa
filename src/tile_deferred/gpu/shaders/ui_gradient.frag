#version 450
#extension GL_GOOGLE_include_directive : require
// bevy_ui's gradient shader, fragment stage: a line-by-line port of bevy_ui_render 0.19.1's
// gradient.wgsl (`fragment` and its helpers) and of the colour operations it imports from
// bevy_render's color_operations.wgsl, constants and order kept, for the tile render pass's `ui`
// subpass. It is drawn with ui.vert: a gradient segment's vertex is a `UiVertex` (gpu/ui.rs,
// built by overlays/ui_gradients.rs `push_gradient`) whose colour is Bevy's `start_color`,
// whose `extra` is Bevy's `g_start` and `dir`, whose `end_color` is Bevy's, and whose `span` is
// Bevy's `start_len`, `end_len` and `hint` and the interpolation space. Bevy compiles a pipeline
// per space (`IN_OKLAB`, ...); here the space is per vertex and one pipeline draws them all.
// `ANTI_ALIAS` (a shader def in Bevy, `UiAntiAlias`) is specialisation constant 0;
// `COVER_PIXELS` is ui.frag's constant 1.

layout(constant_id = 0) const bool ANTI_ALIAS = true;
layout(constant_id = 1) const bool COVER_PIXELS = false;

#include "ui_node.glsl"

const float PI = 3.14159265358979323846;
const float TAU = 2. * PI;
const float HUE_GUARD = 0.0001;

// Bevy's gradient `shader_flags`.
const uint RADIAL = 16u;
const uint FILL_START = 32u;
const uint FILL_END = 64u;
const uint CONIC = 128u;

// The interpolation spaces, as overlays/ui_gradients.rs `space_code` numbers them (the order of
// Bevy's `InterpolationColorSpace`).
const uint IN_OKLAB = 0u;
const uint IN_OKLCH = 1u;
const uint IN_OKLCH_LONG = 2u;
const uint IN_SRGB = 3u;
const uint IN_LINEAR_RGB = 4u;
const uint IN_HSL = 5u;
const uint IN_HSL_LONG = 6u;
const uint IN_HSV = 7u;
const uint IN_HSV_LONG = 8u;

layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec4 in_start_color;
layout(location = 2) flat in vec2 in_size;
layout(location = 3) flat in uint in_flags;
layout(location = 4) flat in vec4 in_radius;
layout(location = 5) flat in vec4 in_border;
layout(location = 6) in vec2 in_point;
layout(location = 7) flat in vec4 in_bounds;
// xy: Bevy's `g_start`; zw: its `dir`.
layout(location = 8) flat in vec4 in_start_dir;
layout(location = 9) flat in vec4 in_end_color;
// x: start_len, y: end_len, z: hint, w: the interpolation space.
layout(location = 10) flat in vec4 in_span;

layout(location = 0) out vec4 out_color;

// WGSL's `%` on floats: the remainder truncated towards zero (GLSL's `mod` floors).
float wgsl_rem(float a, float b) {
    return a - b * trunc(a / b);
}

// color_operations.wgsl --------------------------------------------------------------------

// https://en.wikipedia.org/wiki/SRGB
float gamma(float value) {
    if (value <= 0.0) {
        return value;
    }
    if (value <= 0.04045) {
        return value / 12.92; // linear falloff in dark values
    } else {
        return pow((value + 0.055) / 1.055, 2.4); // gamma curve in other area
    }
}

vec3 srgb_to_linear_rgb(vec3 color) {
    return vec3(gamma(color.x), gamma(color.y), gamma(color.z));
}

// https://bottosson.github.io/posts/oklab/
vec3 oklab_to_linear_rgb(vec3 c) {
    float l_ = c.x + 0.39633778 * c.y + 0.21580376 * c.z;
    float m_ = c.x - 0.105561346 * c.y - 0.06385417 * c.z;
    float s_ = c.x - 0.08948418 * c.y - 1.2914855 * c.z;
    float l = l_ * l_ * l_;
    float m = m_ * m_ * m_;
    float s = s_ * s_ * s_;
    return vec3(
        4.0767417 * l - 3.3077116 * m + 0.23096994 * s,
        -1.268438 * l + 2.6097574 * m - 0.34131938 * s,
        -0.0041960863 * l - 0.7034186 * m + 1.7076147 * s
    );
}

vec3 hsl_to_linear_rgb(vec3 hsl) {
    float h = hsl.x;
    float s = hsl.y;
    float l = hsl.z;
    float c = (1.0 - abs(2.0 * l - 1.0)) * s;
    float hp = h * 6.0;
    float x = c * (1.0 - abs(wgsl_rem(hp, 2.0) - 1.0));
    float r = 0.0;
    float g = 0.0;
    float b = 0.0;
    if (0.0 <= hp && hp < 1.0) {
        r = c; g = x; b = 0.0;
    } else if (1.0 <= hp && hp < 2.0) {
        r = x; g = c; b = 0.0;
    } else if (2.0 <= hp && hp < 3.0) {
        r = 0.0; g = c; b = x;
    } else if (3.0 <= hp && hp < 4.0) {
        r = 0.0; g = x; b = c;
    } else if (4.0 <= hp && hp < 5.0) {
        r = x; g = 0.0; b = c;
    } else if (5.0 <= hp && hp < 6.0) {
        r = c; g = 0.0; b = x;
    }
    float m = l - 0.5 * c;
    return srgb_to_linear_rgb(vec3(r + m, g + m, b + m));
}

vec3 hsv_to_linear_rgb(vec3 hsva) {
    float h = hsva.x * 6.0;
    float s = hsva.y;
    float v = hsva.z;
    float c = v * s;
    float x = c * (1.0 - abs(wgsl_rem(h, 2.0) - 1.0));
    float m = v - c;
    float r = 0.0;
    float g = 0.0;
    float b = 0.0;
    if (0.0 <= h && h < 1.0) {
        r = c; g = x; b = 0.0;
    } else if (1.0 <= h && h < 2.0) {
        r = x; g = c; b = 0.0;
    } else if (2.0 <= h && h < 3.0) {
        r = 0.0; g = c; b = x;
    } else if (3.0 <= h && h < 4.0) {
        r = 0.0; g = x; b = c;
    } else if (4.0 <= h && h < 5.0) {
        r = x; g = 0.0; b = c;
    } else if (5.0 <= h && h < 6.0) {
        r = c; g = 0.0; b = x;
    }
    return srgb_to_linear_rgb(vec3(r + m, g + m, b + m));
}

vec3 oklch_to_linear_rgb(vec3 c) {
    float hue = c.z * TAU;
    return oklab_to_linear_rgb(vec3(c.x, c.y * cos(hue), c.y * sin(hue)));
}

// The hue of an endpoint with (almost) no chroma or saturation takes the other one's: a
// gradient from black or white to a colour passes through no unrelated hue.
vec2 guarded_hues(float a_hue, float a_chroma, float b_hue, float b_chroma) {
    float h = a_hue;
    float g = b_hue;
    if (a_chroma < HUE_GUARD) {
        h = g;
    } else if (b_chroma < HUE_GUARD) {
        g = h;
    }
    return vec2(h, g);
}

// The hue from `h` towards `g` at `t`, the short way round (or the long way with `longer`), as
// mix_oklch, mix_oklch_long, mix_hsv and mix_hsv_long step it.
float step_hue(float h, float g, float t, bool longer) {
    float hue_diff = g - h;
    if (!longer) {
        if (abs(hue_diff) > 0.5) {
            if (hue_diff > 0.0) {
                h += (hue_diff - 1.) * t;
            } else {
                h += (hue_diff + 1.) * t;
            }
        } else {
            h += hue_diff * t;
        }
    } else {
        if (abs(hue_diff) < 0.5) {
            if (hue_diff >= 0.0) {
                h += (hue_diff - 1.) * t;
            } else {
                h += (hue_diff + 1.) * t;
            }
        } else {
            h += hue_diff * t;
        }
    }
    return fract(h);
}

vec3 mix_oklch(vec3 a, vec3 b, float t, bool longer) {
    vec2 hg = guarded_hues(a.z, a.y, b.z, b.y);
    return vec3(mix(a.x, b.x, t), mix(a.y, b.y, t), step_hue(hg.x, hg.y, t, longer));
}

vec3 mix_hsv(vec3 a, vec3 b, float t, bool longer) {
    vec2 hg = guarded_hues(a.x, a.y, b.x, b.y);
    return vec3(step_hue(hg.x, hg.y, t, longer), mix(a.y, b.y, t), mix(a.z, b.z, t));
}

vec3 mix_hsl(vec3 a, vec3 b, float t) {
    vec2 hg = guarded_hues(a.x, a.y, b.x, b.y);
    float h = hg.x;
    float g = hg.y;
    return vec3(
        fract(h + (fract(g - h + 0.5) - 0.5) * t),
        mix(a.y, b.y, t),
        mix(a.z, b.z, t)
    );
}

vec3 mix_hsl_long(vec3 a, vec3 b, float t) {
    vec2 hg = guarded_hues(a.x, a.y, b.x, b.y);
    float h = hg.x;
    float g = hg.y;
    float d = fract(g - h + 0.5) - 0.5;
    return vec3(
        fract(h + (d + (0. < d ? -1. : 1.)) * t),
        mix(a.y, b.y, t),
        mix(a.z, b.z, t)
    );
}

// gradient.wgsl ----------------------------------------------------------------------------

// These functions give the distance in gradient space from the start of the gradient to the
// point; the distance picks the colour between the start and end colours.

float linear_distance(vec2 point, vec2 g_start, vec2 g_dir) {
    return dot(point - g_start, g_dir);
}

float radial_distance(vec2 point, vec2 center, float ratio) {
    vec2 d = point - center;
    return length(vec2(d.x, d.y * ratio));
}

float conic_distance(float start, vec2 point, vec2 center) {
    vec2 d = point - center;
    // WGSL's atan2(y, x) is GLSL's atan(y, x).
    float angle = atan(-d.x, d.y) + PI;
    return wgsl_rem(wgsl_rem(angle - start, TAU) + TAU, TAU);
}

// Mixes the colours the way the interpolation space asks.
vec3 mix_colors(vec3 start_color, vec3 end_color, float t, uint space) {
    switch (space) {
    case IN_OKLCH:
        return mix_oklch(start_color, end_color, t, false);
    case IN_OKLCH_LONG:
        return mix_oklch(start_color, end_color, t, true);
    case IN_HSV:
        return mix_hsv(start_color, end_color, t, false);
    case IN_HSV_LONG:
        return mix_hsv(start_color, end_color, t, true);
    case IN_HSL:
        return mix_hsl(start_color, end_color, t);
    case IN_HSL_LONG:
        return mix_hsl_long(start_color, end_color, t);
    default:
        // Just lerp in the linear RGBA, OkLab and sRGBA spaces.
        return mix(start_color, end_color, t);
    }
}

// A colour of the interpolation space in linear RGBA.
vec4 convert_to_linear_rgba(vec4 color, uint space) {
    vec3 rgb;
    switch (space) {
    case IN_OKLCH:
    case IN_OKLCH_LONG:
        rgb = oklch_to_linear_rgb(color.xyz);
        break;
    case IN_HSV:
    case IN_HSV_LONG:
        rgb = hsv_to_linear_rgb(color.xyz);
        break;
    case IN_HSL:
    case IN_HSL_LONG:
        rgb = hsl_to_linear_rgb(color.xyz);
        break;
    case IN_OKLAB:
        rgb = oklab_to_linear_rgb(color.xyz);
        break;
    case IN_SRGB:
        rgb = srgb_to_linear_rgb(color.xyz);
        break;
    default:
        // Already linear RGBA.
        rgb = color.rgb;
        break;
    }
    return vec4(rgb, color.a);
}

vec4 interpolate_gradient(
    float distance,
    vec4 start_color,
    float start_distance,
    vec4 end_color,
    float end_distance,
    float hint,
    uint flags,
    uint space
) {
    if (start_distance == end_distance) {
        if (distance <= start_distance && enabled(flags, FILL_START)) {
            return convert_to_linear_rgba(start_color, space);
        }
        if (start_distance <= distance && enabled(flags, FILL_END)) {
            return convert_to_linear_rgba(end_color, space);
        }
        return vec4(0.);
    }

    float t = (distance - start_distance) / (end_distance - start_distance);

    if (t < 0.0) {
        if (enabled(flags, FILL_START)) {
            return convert_to_linear_rgba(start_color, space);
        }
        return vec4(0.0);
    }

    if (1. < t) {
        if (enabled(flags, FILL_END)) {
            return convert_to_linear_rgba(end_color, space);
        }
        return vec4(0.0);
    }

    if (t < hint) {
        t = 0.5 * t / hint;
    } else {
        t = 0.5 * (1 + (t - hint) / (1.0 - hint));
    }

    return convert_to_linear_rgba(
        vec4(mix_colors(start_color.xyz, end_color.xyz, t, space), mix(start_color.a, end_color.a, t)),
        space
    );
}

void main() {
    // As ui.frag: with MSAA only the pixels whose centre the laid-out quad covers.
    if (COVER_PIXELS
        && (any(lessThan(gl_FragCoord.xy, in_bounds.xy))
            || any(greaterThanEqual(gl_FragCoord.xy, in_bounds.zw)))) {
        discard;
    }

    uint space = uint(in_span.w);
    vec2 g_start = in_start_dir.xy;
    vec2 dir = in_start_dir.zw;
    float g_distance;
    if (enabled(in_flags, RADIAL)) {
        g_distance = radial_distance(in_point, g_start, dir.x);
    } else if (enabled(in_flags, CONIC)) {
        g_distance = conic_distance(dir.x, in_point, g_start);
    } else {
        g_distance = linear_distance(in_point, g_start, dir);
    }

    vec4 gradient_color = interpolate_gradient(
        g_distance,
        in_start_color,
        in_span.x,
        in_end_color,
        in_span.y,
        in_span.z,
        in_flags,
        space
    );

    if (enabled(in_flags, BORDER_ANY)) {
        out_color = draw_uinode_border(gradient_color, in_point, in_size, in_radius, in_border, in_flags);
    } else {
        out_color = draw_uinode_background(gradient_color, in_point, in_size, in_radius, in_border, in_flags);
    }
}
