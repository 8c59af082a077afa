#version 450
#extension GL_GOOGLE_include_directive : require

// Single-sample light-volume lighting (subpass 1); the shader is in light_volume.glsl.

#include "light_volume.glsl"
