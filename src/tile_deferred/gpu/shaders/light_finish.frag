#version 450
#extension GL_GOOGLE_include_directive : require

// The lighting subpass's last draws (fullscreen.vert) for an HDR camera whose transparent meshes
// are blended into the light before tonemap (plan::TransparentPass::BeforeTonemap). Bevy draws
// such a camera's opaque meshes and skybox into its HDR main texture, each opaque fragment fogged
// in its own shader, then blends the transparent meshes over that, then tone maps everything.
// The tile path tone maps (and, without this, fogs and draws the skybox) in the tonemap subpass,
// after the transparent pass; these draws bring the skybox and the fog into the light before it:
//
// KIND 0: the skybox, into the light of background samples (the G-buffer pass cleared it to the
//   clear colour); tonemap then reads the background from the light and tone maps it.
// KIND 1 and 2: the camera's distance fog, on the light of surface samples. apply_fog (fog.glsl)
//   is affine in the colour, fog(c) = c * m + a per channel (atmospheric fog has per-channel
//   factors): draw 1 multiplies the light by m (blend ZERO, SRC_COLOR), draw 2 adds a (blend
//   ONE, ONE). Tonemap then leaves the light unfogged (tonemap_flags::FOG_IN_LIGHT). Samples
//   of materials with fog_enabled = false (GBUFFER_NO_FOG in the G-buffer's material.a) are
//   left untouched, as Bevy leaves such fragments unfogged.
//
// Both are evaluated at the pixel centre, as the tonemap subpass does (the skybox: as Bevy
// shades it, once per pixel). With -D MSAA every sample is shaded (gl_SampleID): an edge pixel's
// background and surface samples each get their own. The depth is the G-buffer's (set 2 binding
// 3, the lighting subpass's fourth input attachment) and the material code is binding 2's; the
// skybox cube is the tonemap set's.

// 0 and 1 are shadows.glsl's (the fog's inscattering is shadowed).
layout(constant_id = 2) const uint KIND = 0u;

#include "common.glsl"
#include "skybox.glsl"
#include "shadows.glsl"
#include "fog.glsl"
#include "attachment_read.glsl"

TILE_ATTACHMENT(2, 2, 2, gbuffer_material);
TILE_ATTACHMENT(2, 3, 3, gbuffer_depth);

layout(location = 0) out vec4 out_color;

void main() {
#ifdef MSAA
    float depth = TILE_READ_SAMPLE(gbuffer_depth, gl_SampleID).r;
#else
    float depth = TILE_READ(gbuffer_depth).r;
#endif
    vec2 pixel_centre = floor(gl_FragCoord.xy) + 0.5;
    if (KIND == 0u) {
        if (depth != 0.0) {
            discard;
        }
        out_color = vec4(skybox_color(pixel_centre), 0.0);
        return;
    }
    if (depth == 0.0) {
        discard;
    }
#ifdef MSAA
    float material_a = TILE_READ_SAMPLE(gbuffer_material, gl_SampleID).a;
#else
    float material_a = TILE_READ(gbuffer_material).a;
#endif
    if (gbuffer_no_fog(material_a)) {
        discard;
    }
    // Where the depth was rasterised: with MSAA this draw runs per sample (it reads
    // gl_SampleID) and gl_FragCoord is the sample's location, so the point lies on the surface
    // (see tonemap_pass.glsl fogged_light); without MSAA, the pixel centre.
    vec3 world_position = world_position_from_depth(view, gl_FragCoord.xy, depth);
    vec3 offset = apply_fog(vec3(0.0), world_position, pixel_centre);
    if (KIND == 1u) {
        out_color = vec4(apply_fog(vec3(1.0), world_position, pixel_centre) - offset, 1.0);
    } else {
        out_color = vec4(offset, 0.0);
    }
}
