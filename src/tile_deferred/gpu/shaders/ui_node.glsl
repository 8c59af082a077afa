// bevy_ui's node shapes: the signed distances, borders and anti-aliasing of bevy_ui_render
// 0.19.1's ui.wgsl (`draw_uinode_border`, `draw_uinode_background` and their helpers), ported
// line by line, constants and order kept. Included by ui.frag and ui_gradient.frag (Bevy's
// gradient.wgsl imports them from ui.wgsl); the includer declares `ANTI_ALIAS`.

const uint RIGHT_VERTEX = 2u;
const uint BOTTOM_VERTEX = 4u;
// Bevy's `shader_flags::BORDER_*`.
const uint BORDER_LEFT = 256u;
const uint BORDER_TOP = 512u;
const uint BORDER_RIGHT = 1024u;
const uint BORDER_BOTTOM = 2048u;
const uint BORDER_ANY = BORDER_LEFT + BORDER_TOP + BORDER_RIGHT + BORDER_BOTTOM;
const uint INVERT = 4096u;

bool enabled(uint flags, uint mask) {
    return (flags & mask) != 0u;
}

// The shortest distance from `point` to the boundary of the rounded box: negative inside,
// positive outside. `corner_radii`: top left, top right, bottom right, bottom left.
float sd_rounded_box(vec2 point, vec2 size, vec4 corner_radii) {
    // If 0.0 < y then select bottom left (w) and bottom right corner radius (z), else top left
    // (x) and top right (y).
    vec2 rs = 0.0 < point.y ? corner_radii.wz : corner_radii.xy;
    float radius = 0.0 < point.x ? rs.y : rs.x;
    // Vector from the corner closest to the point, to the point.
    vec2 corner_to_point = abs(point) - 0.5 * size;
    // Vector from the center of the radius circle to the point.
    vec2 q = corner_to_point + radius;
    float l = length(max(q, vec2(0.0)));
    float m = min(max(q.x, q.y), 0.0);
    return l + m - radius;
}

float sd_inset_rounded_box(vec2 point, vec2 size, vec4 radius, vec4 inset) {
    vec2 inner_size = size - inset.xy - inset.zw;
    vec2 inner_center = inset.xy + 0.5 * inner_size - 0.5 * size;
    vec2 inner_point = point - inner_center;

    vec4 r = radius;
    // Top left corner.
    r.x = r.x - max(inset.x, inset.y);
    // Top right corner.
    r.y = r.y - max(inset.z, inset.y);
    // Bottom right corner.
    r.z = r.z - max(inset.z, inset.w);
    // Bottom left corner.
    r.w = r.w - max(inset.x, inset.w);

    vec2 half_size = inner_size * 0.5;
    float min_size = min(half_size.x, half_size.y);

    r = min(max(r, vec4(0.0)), vec4(min_size));

    return sd_rounded_box(inner_point, inner_size, r);
}

bool nearest_border_active(vec2 point_vs_mid, vec2 size, vec4 width, uint flags) {
    if ((flags & BORDER_ANY) == BORDER_ANY) {
        return true;
    }

    // The point against the top left.
    vec2 point = clamp(point_vs_mid + size * 0.49999, vec2(0.0), size);

    float left = point.x / width.x;
    float top = point.y / width.y;
    float right = (size.x - point.x) / width.z;
    float bottom = (size.y - point.y) / width.w;

    float min_dist = min(min(left, top), min(right, bottom));

    return (enabled(flags, BORDER_LEFT) && min_dist == left) ||
        (enabled(flags, BORDER_TOP) && min_dist == top) ||
        (enabled(flags, BORDER_RIGHT) && min_dist == right) ||
        (enabled(flags, BORDER_BOTTOM) && min_dist == bottom);
}

// The alpha that anti-aliases an SDF edge (Bevy: fwidth gave artifacts, so the distance alone).
float antialias(float distance) {
    return clamp(0.5 - distance, 0.0, 1.0);
}

vec4 draw_uinode_border(vec4 color, vec2 point, vec2 size, vec4 radius, vec4 border, uint flags) {
    // Signed distance from the exterior boundary.
    float external_distance = sd_rounded_box(point, size, radius);
    // Signed distance from the border's internal edge.
    float internal_distance = sd_inset_rounded_box(point, size, radius, border);
    // Signed distance from the border (negative inside the border).
    float border_distance = max(external_distance, -internal_distance);
    // Whether this node colours the nearest border.
    float nearest_border = nearest_border_active(point, size, border, flags) ? 1.0 : 0.0;

    float t;
    if (ANTI_ALIAS) {
        // Anti-alias only where a border of non-zero width is present.
        t = external_distance < internal_distance
            ? antialias(border_distance)
            : 1.0 - step(0.0, border_distance);
    } else {
        t = 1.0 - step(0.0, border_distance);
    }

    // Blended with ALPHA_BLENDING: alpha is not premultiplied here.
    return vec4(color.rgb, clamp(color.a * t * nearest_border, 0.0, 1.0));
}

vec4 draw_uinode_background(vec4 color, vec2 point, vec2 size, vec4 radius, vec4 border, uint flags) {
    // Only the internal area, not the border.
    float internal_distance = sd_inset_rounded_box(point, size, radius, border)
        * (enabled(flags, INVERT) ? -1.0 : 1.0);

    float t;
    if (ANTI_ALIAS) {
        t = antialias(internal_distance);
    } else {
        t = 1.0 - step(0.0, internal_distance);
    }

    return vec4(color.rgb, clamp(color.a * t, 0.0, 1.0));
}
