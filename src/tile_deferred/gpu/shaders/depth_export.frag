#version 450

// The depth export subpass (fullscreen.vert), the last of a frame that draws Bevy's gizmos
// after the tile pass: the tile depth, read on tile as an input attachment, is written into
// Bevy's depth texture of the camera, every sample, so that the gizmos are depth-tested
// against the scene as in Core3d. The pipeline tests nothing (ALWAYS) and writes depth.
//
// Bound through the tonemap set (set 3, binding 1: the tile depth); this subpass's only input
// attachment is the depth, hence input_attachment_index 0. With -D MSAA the subpass runs at N
// samples and gl_SampleID (per-sample shading) picks each sample's own depth.

#ifdef MSAA
layout(input_attachment_index = 0, set = 3, binding = 1) uniform subpassInputMS tile_depth;

void main() {
    gl_FragDepth = subpassLoad(tile_depth, gl_SampleID).r;
}
#else
layout(input_attachment_index = 0, set = 3, binding = 1) uniform subpassInput tile_depth;

void main() {
    gl_FragDepth = subpassLoad(tile_depth).r;
}
#endif
