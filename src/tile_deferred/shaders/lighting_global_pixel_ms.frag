#version 450
#extension GL_GOOGLE_include_directive : require

// Stencil split of the MSAA lighting subpass (see gbuffer_msaa.glsl): the global lighting of the
// pixels the classification left at stencil 0 (interior and background), shaded once per pixel
// from sample 0 and written to every covered sample. The global lighting itself is lighting_global.glsl,
// shared with the single-sample shader.

#define MSAA
#define MSAA_STENCIL_PIXEL

#include "lighting_global.glsl"
