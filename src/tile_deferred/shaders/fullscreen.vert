#version 450

// Full-screen triangle for the lighting (global) and tonemap subpasses: draw 3 vertices, no
// vertex buffers, no inputs, no outputs besides gl_Position. The triangle covers NDC [-1, 1]^2
// (and beyond, clipped).
//
// Depth: the triangle lies at NDC z = 1.0 (the reverse-Z near plane), like the full-screen case
// of light_volume.vert. The fragment shaders read depth through the input attachment, so the
// pipelines are meant to run without a depth test; a depth test GREATER_OR_EQUAL without writes
// (the state that suits light_volume.vert) also passes every pixel.

void main() {
    // (0: -1,-1), (1: 3,-1), (2: -1,3)
    vec2 p = vec2(float((gl_VertexIndex << 1) & 2), float(gl_VertexIndex & 2));
    gl_Position = vec4(p * 2.0 - 1.0, 1.0, 1.0);
}
