// The camera's Skybox (bevy_core_pipeline 0.19.1 src/skybox/skybox.wgsl), drawn by the tonemap
// subpass on background pixels (depth 0, the reverse-Z far plane) in place of the clear colour:
// no extra pass and no extra store. Bevy draws it into the opaque pass's target without tone
// mapping or dithering (an LDR camera's mesh pipeline tone maps in its own shader, the skybox
// pipeline does not), so the tonemap subpass writes it as it is. Set 3 binding 3 is the cube
// (Bevy's fallback cube when the camera has no skybox); view.skybox.y says whether to draw it.
// Requires common.glsl.

#ifndef TILE_DEFERRED_SKYBOX_GLSL
#define TILE_DEFERRED_SKYBOX_GLSL

#ifndef TILE_DEFERRED_VIEW_UNIFORM
#define TILE_DEFERRED_VIEW_UNIFORM
layout(set = 0, binding = 0, std140) uniform ViewUniform {
    View view;
};
#endif

layout(set = 3, binding = 3) uniform samplerCube skybox_texture;

bool skybox_enabled() {
    return view.skybox.y > 0.5;
}

// skybox.wgsl coords_to_ray_direction: the direction from the camera through the pixel's point
// on the near plane (finite even with an infinite far plane), rotated by the skybox transform
// (the inverse of Skybox::rotation). The near-plane point in world space minus the camera
// position is the world_from_view rotation of Bevy's view-space point.
vec3 skybox_ray_direction(vec2 frag_coord) {
    vec2 uv = (frag_coord - view.viewport.xy) / view.viewport.zw;
    vec4 near = view.world_from_clip * vec4(uv * vec2(2.0, -2.0) + vec2(-1.0, 1.0), 1.0, 1.0);
    vec3 world_ray = near.xyz / near.w - view.world_position.xyz;
    return normalize((view.skybox_transform * vec4(world_ray, 0.0)).xyz);
}

// skybox_fragment: cube maps are left-handed, so z is negated; times brightness * exposure.
vec3 skybox_color(vec2 frag_coord) {
    vec3 ray = skybox_ray_direction(frag_coord);
    return texture(skybox_texture, ray * vec3(1.0, 1.0, -1.0)).rgb * view.skybox.x;
}

// What a background pixel shows: the skybox, else the camera's clear colour.
vec3 background_color(vec2 frag_coord, vec3 clear_rgb) {
    return skybox_enabled() ? skybox_color(frag_coord) : clear_rgb;
}

#endif // TILE_DEFERRED_SKYBOX_GLSL
