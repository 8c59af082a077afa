#version 450
#extension GL_GOOGLE_include_directive : require

// Edge classification of the MSAA lighting subpass, reading the G-buffer as input attachments;
// the shader is in msaa_classify.glsl.

#define MSAA
#define MSAA_CLASSIFY

#include "msaa_classify.glsl"
