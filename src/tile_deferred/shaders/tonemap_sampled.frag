#version 450
#extension GL_GOOGLE_include_directive : require

// Unmerged tier: tonemap.frag reading the light and depth as textures stored by the earlier
// render passes; the shader is in tonemap_pass.glsl.

#define SAMPLED_ATTACHMENTS

#include "tonemap_pass.glsl"
