#version 450
#extension GL_GOOGLE_include_directive : require

// Stencil split of the MSAA lighting subpass (see gbuffer_msaa.glsl): the light-volume lighting of the
// pixels the classification left at stencil 0 (interior and background), shaded once per pixel
// from sample 0 and written to every covered sample. The light-volume lighting itself is light_volume.glsl,
// shared with the single-sample shader.

#define MSAA
#define MSAA_STENCIL_PIXEL

#include "light_volume.glsl"
