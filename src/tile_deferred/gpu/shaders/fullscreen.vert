#version 450

// Full-screen triangle for the lighting, edge classification and tonemap draws: draw 3 vertices,
// no vertex buffers, no inputs, no outputs besides gl_Position. The triangle covers NDC [-1, 1]^2
// (and beyond, clipped).
//
// Depth: the triangle lies at NDC z = 1.0 (the reverse-Z near plane). The fragment shaders read
// depth through the input attachment, so the pipelines run without a depth test.

void main() {
    // (0: -1,-1), (1: 3,-1), (2: -1,3)
    vec2 p = vec2(float((gl_VertexIndex << 1) & 2), float(gl_VertexIndex & 2));
    gl_Position = vec4(p * 2.0 - 1.0, 1.0, 1.0);
}
