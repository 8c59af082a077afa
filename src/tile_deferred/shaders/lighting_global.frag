#version 450
#extension GL_GOOGLE_include_directive : require

// Single-sample global lighting (subpass 1); the shader is in lighting_global.glsl.

#include "lighting_global.glsl"
