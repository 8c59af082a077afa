#version 450
#extension GL_GOOGLE_include_directive : require

// MSAA tone mapping before the in-pass resolve (the tonemap subpass at N samples); the shader is
// in tonemap_pass.glsl.

#define MSAA

#include "tonemap_pass.glsl"
