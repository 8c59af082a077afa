#version 450

// Light assignment on the GPU (clusters.rs, `ClusterInputs`): one invocation per cluster sets
// the cluster's bit of every point and spot light that reaches its box, word by word
// (cluster_light_masks as clusters.glsl reads it), and adds the cluster's light count to the
// frame's statistics.
//
// The CPU prepares what is per light or per axis (a few thousand floats): each light's reach
// (LightReach in clusters.rs: a bounding sphere, and for a spot light its cone) and the extents
// of the cluster boxes along x, y and depth. What is per (light, cluster) pair, the part that
// grows with lights x clusters, runs here, with the CPU reference's formulas in the same order
// (`precise`: no fused multiply-adds, so the sums round as the CPU's do).

layout(local_size_x = 64) in;

struct LightReach {
    vec4 center_radius;   // view space (x, y, depth) and radius of a sphere holding the reach
    vec4 apex_cos;        // spot: apex; w: cos(outer angle)
    vec4 direction_sin;   // spot: unit direction (view space, depth forward); w: sin(outer angle)
    vec4 range_kind;      // x: range; y: 0 reaches nothing, 1 sphere, 2 cone
};

layout(set = 0, binding = 2, std430) writeonly buffer ClusterLightMasks {
    uint cluster_light_masks[];
};

layout(set = 0, binding = 7, std430) readonly buffer LightReaches {
    LightReach light_reaches[];
};

// The boxes' extents (min, max): z slices first (grid.z), then the columns of each slice
// (grid.z * grid.x), then its rows (grid.z * grid.y).
layout(set = 0, binding = 8, std430) readonly buffer ClusterExtents {
    vec2 extents[];
};

// Per frame slot: the most lights in one cluster, the sum of the counts, the clusters with any.
layout(set = 0, binding = 9, std430) buffer ClusterStats {
    uint cluster_stats[];
};

layout(push_constant) uniform AssignParams {
    uvec4 grid;   // clusters across, down, in depth; lights
    uvec4 stats;  // x: the first word of this frame's statistics slot; y: 1 to gather them
} params;

precise float gap_squared(float value, vec2 range) {
    precise float gap = max(max(range.x - value, value - range.y), 0.0);
    precise float squared = gap * gap;
    return squared;
}

// LightReach::cone_misses.
bool cone_misses(LightReach reach, vec3 center, float radius) {
    vec3 v = center - reach.apex_cos.xyz;
    float along = dot(v, reach.direction_sin.xyz);
    float across = sqrt(max(dot(v, v) - along * along, 0.0));
    float closest = reach.apex_cos.w * across - along * reach.direction_sin.w;
    return closest > radius || along > radius + reach.range_kind.x || along < -radius;
}

// LightReach::reaches.
bool reaches(LightReach reach, vec2 column, vec2 row, vec2 slice) {
    vec3 c = reach.center_radius.xyz;
    precise float distance_squared =
        gap_squared(c.x, column) + gap_squared(c.y, row) + gap_squared(c.z, slice);
    precise float radius_squared = reach.center_radius.w * reach.center_radius.w;
    if (distance_squared > radius_squared) {
        return false;
    }
    if (reach.range_kind.y < 1.5) {
        return true;
    }
    vec3 lo = vec3(column.x, row.x, slice.x);
    vec3 hi = vec3(column.y, row.y, slice.y);
    return !cone_misses(reach, (lo + hi) * 0.5, length(hi - lo) * 0.5);
}

void main() {
    uvec3 grid = params.grid.xyz;
    uint clusters = grid.x * grid.y * grid.z;
    uint cluster = gl_GlobalInvocationID.x;
    if (cluster >= clusters) {
        return;
    }
    uint x = cluster % grid.x;
    uint y = (cluster / grid.x) % grid.y;
    uint k = cluster / (grid.x * grid.y);
    vec2 slice = extents[k];
    vec2 column = extents[grid.z + k * grid.x + x];
    vec2 row = extents[grid.z + grid.z * grid.x + k * grid.y + y];

    uint lights = params.grid.w;
    uint count = 0u;
    for (uint first = 0u; first < lights; first += 32u) {
        uint word = 0u;
        uint last = min(first + 32u, lights);
        for (uint light = first; light < last; light++) {
            LightReach reach = light_reaches[light];
            if (reach.range_kind.y > 0.5 && reaches(reach, column, row, slice)) {
                word |= 1u << (light - first);
            }
        }
        cluster_light_masks[(first / 32u) * clusters + cluster] = word;
        count += uint(bitCount(word));
    }
    if (count > 0u && params.stats.y != 0u) {
        uint slot = params.stats.x;
        atomicMax(cluster_stats[slot], count);
        atomicAdd(cluster_stats[slot + 1u], count);
        atomicAdd(cluster_stats[slot + 2u], 1u);
    }
}
