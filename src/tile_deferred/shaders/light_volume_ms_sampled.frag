#version 450
#extension GL_GOOGLE_include_directive : require

// Unmerged tier: light_volume_ms.frag (per-sample-index draws) reading the multisampled G-buffer as
// textures stored by the G-buffer render pass; the shader is in light_volume.glsl.

#define MSAA
#define SAMPLED_ATTACHMENTS

#include "light_volume.glsl"
