#version 450
#extension GL_GOOGLE_include_directive : require

// Single-sample tone mapping into the output (the tonemap subpass); the shader is in
// tonemap_pass.glsl.

#include "tonemap_pass.glsl"
