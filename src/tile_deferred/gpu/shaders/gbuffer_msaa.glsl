// MSAA lighting (subpass 1 at N samples), included by gbuffer_input.glsl when MSAA is defined.
// Defines msaa_classify_pixel() (Lauritzen's edge test on the N G-buffer samples) and, for the
// lighting shaders, load_gbuffer(s) with the same contract as the single-sample one (false =
// discard, true = shade s and write the result). Two schemes share it:
//
// Stencil split (the default where the device has a multisampled depth-stencil format and
// sampleRateShading): the lighting subpass binds the depth-stencil attachment with depth
// read-only and stencil written, and depth stays readable as an input attachment.
//   1. msaa_classify.glsl, one full-screen draw per pixel: classifies the pixel once and
//      discards unless it is an edge; surviving pixels get stencil = 1 on every sample. An
//      occlusion query around it counts the edge samples (N per edge pixel).
//   2. the MSAA_STENCIL_PIXEL variants, stencil == 0, per pixel: shade sample 0's surface at the
//      pixel centre and write it to every covered sample (interior and all-background pixels;
//      background discards).
//   3. the MSAA_STENCIL_SAMPLE variants, stencil == 1, sampleShadingEnable with
//      minSampleShading 1.0: each invocation shades its own sample gl_SampleID (a background
//      sample discards). Writes go to that sample only.
// The lighting draw is issued once per pass (2 and 3), and only 1 classifies.
//
// Per-sample-index draws (the fallback: no stencil format or no sampleRateShading), the
// MSAA variants without either define: the Rust side issues every lighting draw N times,
// with msaa.x = s = 0 .. N-1. Shading stays per pixel (nothing reads gl_SampleID). Each
// invocation classifies its pixel from the N G-buffer samples, then:
//   s == 0: all-background pixel -> discard; interior pixel -> shade sample 0 and write it to
//           every sample (gl_SampleMask = (1 << N) - 1); edge pixel -> shade sample 0 and write
//           sample 0 only (a background sample 0 -> discard).
//   s > 0:  background sample s, interior or all-background pixel -> discard; edge pixel -> shade
//           sample s, write sample s only (gl_SampleMask = 1 << s).
//
// In both schemes the write mask is ANDed with the draw's coverage (and, for per-sample-index
// draws, nothing else): a full-screen draw covers every sample. Blending stays ONE + ONE onto
// the emissive written in subpass 0: every sample receives its lighting exactly once.
//
// Requires common.glsl, pbr_lighting.glsl and the declarations of gbuffer_input.glsl.

#ifndef TILE_DEFERRED_GBUFFER_MSAA_GLSL
#define TILE_DEFERRED_GBUFFER_MSAA_GLSL

#define MSAA_FLAG_PER_SAMPLE (1u << 0)  // brute force: every pixel with geometry is an edge
#define MSAA_FLAG_DEBUG_EDGES (1u << 1) // read by the MSAA tonemap pass only
#define MSAA_MAX_SAMPLES 8

#define MSAA_PIXEL_BACKGROUND 0 // every sample is background
#define MSAA_PIXEL_INTERIOR 1   // every sample is one surface: shade once, write to all samples
#define MSAA_PIXEL_EDGE 2       // shade each sample

// --- Edge classification thresholds (see msaa_classify_pixel) ---
// Normals: Lauritzen's 0.99, i.e. up to ~8.1 degrees between two samples' shading normals.
const float MSAA_NORMAL_MIN_DOT = 0.99;
// Depth: allowed |linear depth difference| =
//   footprint * (1 + MSAA_DEPTH_SLOPE_SCALE * min(tan(theta), MSAA_DEPTH_MAX_TAN)),
// footprint = the size of one pixel at sample 0's distance, theta = the angle between sample 0's
// normal and its view ray.
const float MSAA_DEPTH_SLOPE_SCALE = 2.0;
const float MSAA_DEPTH_MAX_TAN = 10.0;
// Albedo (linear rgb) and diffuse occlusion: max per-channel difference. Lighting is linear in
// albedo, so this bounds the error of sharing sample 0's shading with a sample (<= 1% of the
// lit value before tone mapping).
const float MSAA_ALBEDO_TOLERANCE = 0.01;
// Roughness, metallic, reflectance (R8G8B8A8_UNORM): more than one code apart. Specular highlights
// of smooth surfaces are sensitive to roughness, so only quantisation noise is tolerated. The
// unlit flag (alpha 0 or 1) always differs by more.
const float MSAA_MATERIAL_TOLERANCE = 1.5 / 255.0;

int msaa_sample_count() {
    return int(clamp(msaa_params.msaa.y, 1u, uint(MSAA_MAX_SAMPLES)));
}

// Framebuffer coordinates of sample i of this pixel: where its depth was rasterised, so that the
// reconstructed position lies on the surface. Without the standard locations (a device with
// standardSampleLocations == VK_FALSE) the error is below a pixel along the surface, the same order
// as forward MSAA shading every covered sample at the pixel centre. floor(gl_FragCoord) is the
// pixel's corner whether gl_FragCoord is the pixel centre (per-pixel shading) or a sample's
// location (sample-rate shading).
vec2 msaa_sample_frag_coord(int sample_count, int sample_index) {
    return floor(gl_FragCoord.xy) + msaa_sample_location(sample_count, sample_index);
}

// Distance in front of the camera plane (view-space -z) of a reverse-Z depth (> 0), from
// clip_from_view: perspective (finite or infinite far): depth = (P22 z + P32) / -z; orthographic:
// depth = P22 z + P32.
float msaa_linear_depth(float depth) {
    float p22 = view.clip_from_view[2][2];
    float p32 = view.clip_from_view[3][2];
    if (view_is_orthographic(view)) {
        return (p32 - depth) / p22;
    }
    return p32 / (depth + p22);
}

// Size of one pixel, in world units, at linear depth z: the larger of its width and height.
float msaa_pixel_footprint(float z) {
    float pixel_size = max(2.0 / (abs(view.clip_from_view[0][0]) * view.viewport.z),
                           2.0 / (abs(view.clip_from_view[1][1]) * view.viewport.w));
    return view_is_orthographic(view) ? pixel_size : pixel_size * z;
}

// Lauritzen's deferred-MSAA test ("Deferred Rendering for Current and Future Rendering Pipelines",
// SIGGRAPH 2010), every sample i against sample 0:
// - coverage: edge iff some samples are background (depth 0) and others are not;
// - depth: edge iff |z_i - z_0| exceeds a slope-aware tolerance (below);
// - normal: edge iff dot(N_i, N_0) < 0.99 after decoding;
// - material: edge iff albedo/occlusion or roughness/metallic/reflectance/unlit differ noticeably.
// With MSAA_FLAG_PER_SAMPLE every pixel that is not all background is an edge.
//
// Depth tolerance. Lauritzen bounds |z_i - z_0| by the triangle's screen-space depth derivatives
// stored in the G-buffer; a full-screen pass has no derivatives and the G-buffer stores none, so
// the slope is estimated from sample 0's shading normal instead. On a plane whose normal makes the
// angle theta with the view ray, the linear depth changes by about footprint * tan(theta) per pixel
// of screen distance, footprint = one pixel's size at that distance (z * 2 / (P11 * height) in
// perspective, constant in orthographic). The samples of a pixel are at most 0.8 pixel from sample
// 0 (standard patterns: 0.71 at 2x, 0.79 at 4x, 0.64 at 8x), so a single plane stays within
// 0.8 * footprint * tan(theta); the tolerance footprint * (1 + 2 * min(tan(theta), 10)) leaves a
// 2.5x margin for the shading normal (normal maps) differing from the geometric one and for the
// off-axis stretch of wide fields of view, and a one-pixel floor for curved surfaces, adjacent
// triangles and depth quantisation (D32 reverse-Z: ~2^-24 relative). Scaling by the footprint
// makes the test distance- and resolution-independent: a depth step smaller than a pixel's width
// at that distance (plus the slope) is a crease of one surface, not a silhouette. tan(theta) is
// capped at 10 (84 degrees), so the tolerance never exceeds 21 footprints: a plane's own samples
// exceed it only beyond ~88 degrees (0.8 * tan > 21), where grazing surfaces become edges (which
// only costs time), and a real silhouette in front of a grazing surface is never hidden behind an
// unbounded tolerance. Whatever the depth test misses on surfaces of the same normal and material differs
// only in position by less than the tolerance, which the lighting barely sees.
int msaa_classify_pixel(int sample_count, bool per_sample) {
    float depth0 = TILE_READ_SAMPLE(gbuffer_depth, 0).r;
    if (depth0 == 0.0) {
        for (int i = 1; i < sample_count; ++i) {
            if (TILE_READ_SAMPLE(gbuffer_depth, i).r != 0.0) {
                return MSAA_PIXEL_EDGE;
            }
        }
        return MSAA_PIXEL_BACKGROUND;
    }
    if (per_sample) {
        return MSAA_PIXEL_EDGE;
    }

    vec4 albedo0 = TILE_READ_SAMPLE(gbuffer_albedo_occlusion, 0);
    vec2 encoded_normal0 = TILE_READ_SAMPLE(gbuffer_normal, 0).xy;
    vec4 material0 = TILE_READ_SAMPLE(gbuffer_material, 0);
    vec3 N0 = octahedral_decode(encoded_normal0);

    float z0 = msaa_linear_depth(depth0);
    vec3 P0 = world_position_from_depth(view, msaa_sample_frag_coord(sample_count, 0), depth0);
    vec3 V0 = calculate_view(view, P0, view_is_orthographic(view));
    float cos_theta = abs(dot(N0, V0));
    float tan_theta = sqrt(max(1.0 - cos_theta * cos_theta, 0.0)) / max(cos_theta, 1e-4);
    float depth_tolerance = msaa_pixel_footprint(z0)
        * (1.0 + MSAA_DEPTH_SLOPE_SCALE * min(tan_theta, MSAA_DEPTH_MAX_TAN));

    for (int i = 1; i < sample_count; ++i) {
        float depth = TILE_READ_SAMPLE(gbuffer_depth, i).r;
        if (depth == 0.0) {
            return MSAA_PIXEL_EDGE; // coverage: partly background
        }
        if (abs(msaa_linear_depth(depth) - z0) > depth_tolerance) {
            return MSAA_PIXEL_EDGE;
        }
        // Samples of one primitive hold bit-identical attributes (the G-buffer fragment shader
        // runs once per pixel and primitive): skip the decode then.
        vec2 encoded_normal = TILE_READ_SAMPLE(gbuffer_normal, i).xy;
        if (any(notEqual(encoded_normal, encoded_normal0))
            && dot(octahedral_decode(encoded_normal), N0) < MSAA_NORMAL_MIN_DOT) {
            return MSAA_PIXEL_EDGE;
        }
        vec4 material = TILE_READ_SAMPLE(gbuffer_material, i);
        // material.a is an exact code (common.glsl): compared exactly.
        if (any(greaterThan(abs(material.rgb - material0.rgb), vec3(MSAA_MATERIAL_TOLERANCE)))
            || gbuffer_material_code(material.a) != gbuffer_material_code(material0.a)) {
            return MSAA_PIXEL_EDGE;
        }
        vec4 albedo = TILE_READ_SAMPLE(gbuffer_albedo_occlusion, i);
        if (any(greaterThan(abs(albedo - albedo0), vec4(MSAA_ALBEDO_TOLERANCE)))) {
            return MSAA_PIXEL_EDGE;
        }
    }
    return MSAA_PIXEL_INTERIOR;
}

#if !defined(MSAA_CLASSIFY) && !defined(MSAA_STENCIL_SAMPLE)
// An interior pixel is shaded once, at its centre, where forward MSAA shades it: not at sample
// 0 (for 4x, 0.4 px off the centre), which would shift every sharp feature of the lighting
// that is not a geometric edge (a shadow's border) by that much. All its samples lie on one
// surface, whose reverse-Z depth is affine in screen space across a triangle, and the standard
// sample locations are centred on the pixel: the samples' mean depth is the depth at the
// centre.
void msaa_shade_at_pixel_centre(int sample_count, inout GbufferSample s) {
    float depth = 0.0;
    for (int i = 0; i < sample_count; i++) {
        depth += TILE_READ_SAMPLE(gbuffer_depth, i).r;
    }
    depth /= float(sample_count);
    s.world_position = world_position_from_depth(view, floor(gl_FragCoord.xy) + 0.5, depth);
    s.V = calculate_view(view, s.world_position, view_is_orthographic(view));
}
#endif

#if defined(MSAA_STENCIL_PIXEL)
// Stencil split, stencil == 0 (interior or all-background pixel), per pixel: sample 0's surface
// at the pixel centre, written to every covered sample.
bool load_gbuffer(out GbufferSample s) {
    int sample_count = msaa_sample_count();
    if (!load_gbuffer_sample(0, msaa_sample_frag_coord(sample_count, 0), s)) {
        return false;
    }
    msaa_shade_at_pixel_centre(sample_count, s);
    return true;
}
#elif defined(MSAA_STENCIL_SAMPLE)
// Stencil split, stencil == 1 (edge pixel), sample-rate shading: this invocation's sample.
bool load_gbuffer(out GbufferSample s) {
    int sample_count = msaa_sample_count();
    int sample_index = gl_SampleID;
    return load_gbuffer_sample(sample_index, msaa_sample_frag_coord(sample_count, sample_index),
                               s);
}
#elif !defined(MSAA_CLASSIFY)
// Per-sample-index draws: the G-buffer sample this draw shades (see the top of this file); sets
// gl_SampleMask on every path that returns true. Returns false where the draw must discard.
bool load_gbuffer(out GbufferSample s) {
    int sample_count = msaa_sample_count();
    int sample_index = int(msaa_params.msaa.x);
    bool per_sample = (msaa_params.msaa.z & MSAA_FLAG_PER_SAMPLE) != 0u;
    s = GbufferSample(vec3(0.0), 1.0, vec3(0.0, 0.0, 1.0), 1.0, 0.0, 0.5, vec3(0.0),
                      vec3(0.0, 0.0, 1.0), false, true);

    if (sample_index >= sample_count
        || (sample_index > 0 && TILE_READ_SAMPLE(gbuffer_depth, sample_index).r == 0.0)) {
        // Out of range, or a background sample (of an edge or all-background pixel): never lit.
        return false;
    }

    int pixel = msaa_classify_pixel(sample_count, per_sample);
    if (pixel == MSAA_PIXEL_BACKGROUND) {
        return false;
    }
    if (sample_index == 0) {
        gl_SampleMask[0] = pixel == MSAA_PIXEL_EDGE ? 1 : (1 << sample_count) - 1;
    } else {
        if (pixel != MSAA_PIXEL_EDGE) {
            return false;
        }
        gl_SampleMask[0] = 1 << sample_index;
    }
    if (!load_gbuffer_sample(sample_index, msaa_sample_frag_coord(sample_count, sample_index), s)) {
        return false;
    }
    if (pixel == MSAA_PIXEL_INTERIOR) {
        msaa_shade_at_pixel_centre(sample_count, s);
    }
    return true;
}
#endif

#endif // TILE_DEFERRED_GBUFFER_MSAA_GLSL
