#version 450
#extension GL_GOOGLE_include_directive : require

// Stencil split of the MSAA lighting subpass (see gbuffer_msaa.glsl): the light-volume lighting of the edge
// pixels (stencil 1), shaded per sample (sample-rate shading): each invocation lights its own
// sample gl_SampleID. The light-volume lighting itself is light_volume.glsl, shared with the single-sample
// shader.

#define MSAA
#define MSAA_STENCIL_SAMPLE

#include "light_volume.glsl"
