// The view's light clusters (src/tile_deferred/lighting/clusters.rs builds them): which cluster a pixel is
// in, and which point and spot lights reach that cluster. Any subpass that shades surfaces with the
// point and spot lights includes this (the lighting subpass today; a forward subpass for
// transparent surfaces can bind the same set 0). Requires common.glsl and `view` (set 0 binding 0).
//
// A cluster's lights are one bit per light, word-major: bit (l % 32) of
// cluster_light_masks[(l / 32) * cluster_count + cluster] is set when light l reaches the cluster.
// The bits are visited in index order, so a pixel sums its lights in the same order every frame.

#ifndef TILE_DEFERRED_CLUSTERS_GLSL
#define TILE_DEFERRED_CLUSTERS_GLSL

layout(set = 0, binding = 1, std430) readonly buffer ClusterableLights {
    ClusterableLight clusterable_lights[];
};

layout(set = 0, binding = 2, std430) readonly buffer ClusterLightMasks {
    uint cluster_light_masks[];
};

// The depth slice of a view depth (ClusterGrid::slice_of in clusters.rs): linear between the
// lights' nearest and farthest reach when orthographic; otherwise slice 0 up to the first slice
// depth, then logarithmic.
uint cluster_slice(float depth) {
    vec4 p = view.cluster_params;
    float k;
    if (view.world_position.w > 0.5) {
        k = floor((depth - p.y) * p.w);
    } else if (depth < p.z) {
        k = 0.0;
    } else {
        k = 1.0 + floor(log(depth / p.z) * p.w);
    }
    return uint(clamp(k, 0.0, float(view.cluster_grid.z - 1u)));
}

// The flat cluster index of a fragment at `frag_coord` (target pixels) whose surface is at
// `world_position`.
uint cluster_index(vec2 frag_coord, vec3 world_position) {
    uvec3 grid = view.cluster_grid.xyz;
    uvec2 tile = min(uvec2(max(frag_coord - view.viewport.xy, vec2(0.0)) / view.cluster_params.x),
                     grid.xy - 1u);
    float depth = -(view.view_from_world * vec4(world_position, 1.0)).z;
    uint slice = cluster_slice(depth);
    return (slice * grid.y + tile.y) * grid.x + tile.x;
}

uint cluster_count() {
    return view.cluster_grid.x * view.cluster_grid.y * view.cluster_grid.z;
}

#endif
