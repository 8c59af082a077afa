#version 450
#extension GL_GOOGLE_include_directive : require

// Subpass 1: one instanced draw, vkCmdDraw(6, view.counts.y, 0, 0): instance i = clusterable light
// i. Emits a screen-space rectangle (two triangles, cull mode NONE) covering the projection of the
// light's bounding sphere (position, range), clipped to the viewport:
// - perspective, sphere entirely at or behind the near plane: degenerate (nothing rasterised);
// - perspective, sphere crossing (or close to) the near plane, camera inside: full screen;
// - perspective otherwise: tight bounds from the sphere's tangent planes (Mara & McGuire 2013);
// - orthographic: centre +- range in view x/y; degenerate when the sphere is outside the depth
//   range.
// The rectangle's depth is the nearest depth of the sphere (1.0 when full screen): with a depth
// test GREATER_OR_EQUAL against the G-buffer depth (no depth writes) only pixels whose geometry
// lies behind the sphere's front survive; without a depth test the result is the same, slower.

#include "common.glsl"

layout(set = 0, binding = 0, std140) uniform ViewUniform {
    View view;
};

layout(set = 0, binding = 1, std430) readonly buffer ClusterableLights {
    ClusterableLight clusterable_lights[];
};

layout(location = 0) flat out uint out_light_index;

// Slightly enlarged sphere so that rounding never clips a lit pixel (the fragment shader does the
// exact range test).
const float RADIUS_SCALE = 1.01;
const vec4 DEGENERATE = vec4(-4.0, -4.0, 0.5, 1.0);

// NDC depth of a view-space point.
float ndc_depth(vec3 view_position) {
    vec4 clip = view.clip_from_view * vec4(view_position, 1.0);
    return clip.z / clip.w;
}

// Bounds along one axis of the tangent planes through the camera of a circle (the sphere cut by the
// plane spanned by that axis and the view direction). c = (coordinate along the axis, distance in
// front of the camera); requires c.y > r. Returns the two tangent points in the same coordinates.
void tangent_points(vec2 c, float r, out vec2 p0, out vec2 p1) {
    float d2 = dot(c, c);
    float len = sqrt(d2);
    float cos_t = sqrt(max(d2 - r * r, 0.0)) / len;
    float sin_t = r / len;
    p0 = cos_t * vec2(c.x * cos_t - c.y * sin_t, c.x * sin_t + c.y * cos_t);
    p1 = cos_t * vec2(c.x * cos_t + c.y * sin_t, -c.x * sin_t + c.y * cos_t);
}

float project_x(vec2 p) {
    vec4 clip = view.clip_from_view * vec4(p.x, 0.0, -p.y, 1.0);
    return clip.x / clip.w;
}

float project_y(vec2 p) {
    vec4 clip = view.clip_from_view * vec4(0.0, p.x, -p.y, 1.0);
    return clip.y / clip.w;
}

void main() {
    uint light_index = uint(gl_InstanceIndex);
    out_light_index = light_index;

    ClusterableLight light = clusterable_lights[light_index];
    float r = light.spot_direction_range.w * RADIUS_SCALE;
    vec3 center = (view.view_from_world * vec4(light.position_radius.xyz, 1.0)).xyz;

    vec2 ndc_min;
    vec2 ndc_max;
    float depth;

    if (view.world_position.w > 0.5) {
        // Orthographic: the projection is affine.
        float d_front = ndc_depth(center + vec3(0.0, 0.0, r));
        float d_back = ndc_depth(center - vec3(0.0, 0.0, r));
        float d_near = max(d_front, d_back);
        float d_far = min(d_front, d_back);
        if (d_far > 1.0 || d_near < 0.0) {
            gl_Position = DEGENERATE;
            return;
        }
        vec4 a = view.clip_from_view * vec4(center.xy - vec2(r), center.z, 1.0);
        vec4 b = view.clip_from_view * vec4(center.xy + vec2(r), center.z, 1.0);
        vec2 na = a.xy / a.w;
        vec2 nb = b.xy / b.w;
        ndc_min = min(na, nb);
        ndc_max = max(na, nb);
        depth = clamp(d_near, 0.0, 1.0);
    } else {
        // Perspective (Bevy: infinite reverse-Z; near = P[3][2] / (1 + P[2][2]) covers finite far).
        float near = view.clip_from_view[3][2] / (1.0 + view.clip_from_view[2][2]);
        float z = -center.z; // distance in front of the camera plane
        if (z + r <= near) {
            // Entirely behind the near plane (so also when entirely behind the camera).
            gl_Position = DEGENERATE;
            return;
        }
        if (z - r <= 2.0 * near + 1e-4 * r) {
            // The camera is inside or near the sphere, or the sphere crosses the near plane.
            ndc_min = vec2(-1.0);
            ndc_max = vec2(1.0);
            depth = 1.0;
        } else {
            vec2 x0, x1, y0, y1;
            tangent_points(vec2(center.x, z), r, x0, x1);
            tangent_points(vec2(center.y, z), r, y0, y1);
            float ax = project_x(x0);
            float bx = project_x(x1);
            float ay = project_y(y0);
            float by = project_y(y1);
            ndc_min = vec2(min(ax, bx), min(ay, by));
            ndc_max = vec2(max(ax, bx), max(ay, by));
            depth = clamp(ndc_depth(vec3(0.0, 0.0, -(z - r))), 0.0, 1.0);
        }
    }

    ndc_min = max(ndc_min, vec2(-1.0));
    ndc_max = min(ndc_max, vec2(1.0));
    if (any(greaterThanEqual(ndc_min, ndc_max))) {
        // Off screen.
        gl_Position = DEGENERATE;
        return;
    }

    // Two triangles: (0,0) (1,0) (0,1) / (0,1) (1,0) (1,1).
    int v = gl_VertexIndex % 6;
    vec2 corner = vec2(
        (v == 1 || v == 4 || v == 5) ? 1.0 : 0.0,
        (v == 2 || v == 3 || v == 5) ? 1.0 : 0.0);
    gl_Position = vec4(mix(ndc_min, ndc_max, corner), depth, 1.0);
}
