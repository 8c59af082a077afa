#version 450
// bevy_ui's box shadow shader, fragment stage: a line-by-line port of bevy_ui_render 0.19.1's
// box_shadow.wgsl (`fragment` and its helpers), constants and order kept, for the tile render
// pass's `ui` subpass. It is drawn with ui.vert: a shadow's vertex is a `UiVertex` (gpu/ui.rs,
// built by overlays/ui_in_pass.rs `push_box_shadow`) whose colour, size and radius are Bevy's
// `BoxShadowVertex`'s, whose `border.x` is the blur, and whose `point` is Bevy's
// `(uv - 0.5) * bounds`, computed per vertex on the CPU (affine over the quad: the same after
// interpolation). `SHADOW_SAMPLES` (a shader def in Bevy, `BoxShadowSamples`) is specialisation
// constant 0; `COVER_PIXELS` is ui.frag's constant 1: with MSAA only the pixels whose centre the
// laid-out quad covers are drawn, all samples of each, as Bevy's shadows at 1x.

layout(constant_id = 0) const int SHADOW_SAMPLES = 4;
layout(constant_id = 1) const bool COVER_PIXELS = false;

const float PI = 3.14159265358979323846;

layout(location = 0) in vec2 in_uv;
layout(location = 1) in vec4 in_color;
layout(location = 2) flat in vec2 in_size;
layout(location = 3) flat in uint in_flags;
layout(location = 4) flat in vec4 in_radius;
layout(location = 5) flat in vec4 in_border;
layout(location = 6) in vec2 in_point;
layout(location = 7) flat in vec4 in_bounds;

layout(location = 0) out vec4 out_color;

float gaussian(float x, float sigma) {
    return exp(-(x * x) / (2. * sigma * sigma)) / (sqrt(2. * PI) * sigma);
}

// Approximates the Gauss error function: https://en.wikipedia.org/wiki/Error_function
vec2 erf(vec2 p) {
    vec2 s = sign(p);
    vec2 a = abs(p);
    // Fourth degree polynomial approximation for erf.
    vec2 result = 1.0 + (0.278393 + (0.230389 + 0.078108 * (a * a)) * a) * a;
    result = result * result;
    return s - s / (result * result);
}

// The closest corner radius, from the signs of the components of p.
float select_corner(vec2 p, vec4 c) {
    return mix(mix(c.x, c.y, step(0., p.x)), mix(c.w, c.z, step(0., p.x)), step(0., p.y));
}

float horizontal_rounded_box_shadow(float x, float y, float blur, float corner, vec2 half_size) {
    float d = min(half_size.y - corner - abs(y), 0.);
    float c = half_size.x - corner + sqrt(max(0., corner * corner - d * d));
    vec2 integral = 0.5 + 0.5 * erf((x + vec2(-c, c)) * (sqrt(0.5) / blur));
    return integral.y - integral.x;
}

float rounded_box_shadow(vec2 lower, vec2 upper, vec2 point, float blur, vec4 corners) {
    vec2 center = (lower + upper) * 0.5;
    vec2 half_size = (upper - lower) * 0.5;
    vec2 p = point - center;
    float low = p.y - half_size.y;
    float high = p.y + half_size.y;
    float start = clamp(-3. * blur, low, high);
    float end = clamp(3. * blur, low, high);
    float step_size = (end - start) / float(SHADOW_SAMPLES);
    float y = start + step_size * 0.5;
    float value = 0.0;
    for (int i = 0; i < SHADOW_SAMPLES; i++) {
        float corner = select_corner(p, corners);
        value += horizontal_rounded_box_shadow(p.x, p.y - y, blur, corner, half_size)
            * gaussian(y, blur) * step_size;
        y += step_size;
    }
    return value;
}

void main() {
    if (COVER_PIXELS
        && (any(lessThan(gl_FragCoord.xy, in_bounds.xy))
            || any(greaterThanEqual(gl_FragCoord.xy, in_bounds.zw)))) {
        discard;
    }
    float g = in_color.a
        * rounded_box_shadow(-0.5 * in_size, 0.5 * in_size, in_point, max(in_border.x, 0.01),
                             in_radius);
    out_color = vec4(in_color.rgb, g);
}
