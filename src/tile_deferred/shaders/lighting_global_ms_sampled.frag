#version 450
#extension GL_GOOGLE_include_directive : require

// Unmerged tier: lighting_global_ms.frag (per-sample-index draws) reading the multisampled G-buffer as
// textures stored by the G-buffer render pass; the shader is in lighting_global.glsl.

#define MSAA
#define SAMPLED_ATTACHMENTS

#include "lighting_global.glsl"
