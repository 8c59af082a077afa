#version 450
#extension GL_GOOGLE_include_directive : require

// Unmerged tier: tonemap_ms.frag reading the multisampled light and depth as textures stored by
// the earlier render passes; the shader is in tonemap_pass.glsl.

#define MSAA
#define SAMPLED_ATTACHMENTS

#include "tonemap_pass.glsl"
