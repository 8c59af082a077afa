#version 450
#extension GL_GOOGLE_include_directive : require

// MSAA variant of light_volume.frag: subpass 1 at N samples, the G-buffer read as
// subpassInputMS. Drawn N times, msaa.x = sample index s = 0 .. N-1, with edge-selective
// per-sample shading as described in gbuffer_msaa.glsl. The light-volume lighting itself is
// light_volume.glsl, shared with the single-sample shader.

#define MSAA

#include "light_volume.glsl"
