#version 450
#extension GL_GOOGLE_include_directive : require

// Unmerged tier: msaa_classify.frag reading the multisampled G-buffer as textures; the shader
// is in msaa_classify.glsl.

#define MSAA
#define MSAA_CLASSIFY
#define SAMPLED_ATTACHMENTS

#include "msaa_classify.glsl"
