#version 450
#extension GL_GOOGLE_include_directive : require

// The MSAA edge classification draw (fullscreen.vert, per pixel), compiled with -D MSAA, reading
// the G-buffer as input attachments, or also with -D SAMPLED_ATTACHMENTS (the unmerged tier:
// textures); see the table in mod.rs (`ShaderId::MsaaClassify`).

//
// Stencil split of the MSAA lighting subpass, first draw: classifies
// the pixel once from its N G-buffer samples (msaa_classify_pixel, gbuffer_msaa.glsl) and
// discards it unless it is an edge. The pipeline writes stencil = 1 (compare ALWAYS, pass
// REPLACE) on every sample of the surviving pixels and no colour; the lighting draws that follow
// test the stencil. Without the stencil split (per-sample-index draws) the same draw, with no
// stencil and no colour writes, only feeds the occlusion query that counts the edge pixels (N
// samples each). With MSAA_FLAG_PER_SAMPLE (the every-sample reference) every pixel with
// geometry is an edge.

// gbuffer_msaa.glsl: only the classification, no load_gbuffer().
#define MSAA_CLASSIFY

#include "common.glsl"
#include "pbr_lighting.glsl"
#include "gbuffer_input.glsl"

void main() {
    bool per_sample = (msaa_params.msaa.z & MSAA_FLAG_PER_SAMPLE) != 0u;
    if (msaa_classify_pixel(msaa_sample_count(), per_sample) != MSAA_PIXEL_EDGE) {
        discard;
    }
}
