#version 450
#extension GL_GOOGLE_include_directive : require

// The tonemap pass (fullscreen.vert) in its four variants (the table in mod.rs,
// `ShaderId::Tonemap`): single-sample with input attachments (no defines), MSAA (-D MSAA), and the
// unmerged tier's (-D SAMPLED_ATTACHMENTS, with or without MSAA: the light, depth and G-buffer
// material are textures stored by the earlier render passes, see attachment_read.glsl). Everything below is the same in
// all of them.

#include "common.glsl"
#include "tonemap.glsl"
#include "skybox.glsl"
#include "shadows.glsl"
#include "fog.glsl"
#include "tonemap_display.glsl"

#ifndef MSAA
// Subpass 2 with fullscreen.vert, single-sample: Bevy's in-shader tone mapping of an LDR camera
// (bevy_core_pipeline tonemapping_shared.wgsl tone_mapping() as the mesh pipeline compiles it, then
// pbr_functions.wgsl main_pass_post_lighting_processing's DEBAND_DITHER), on the pre-exposed light
// accumulated in subpasses 0 and 1. Background pixels get the clear colour untouched.
// The bindings and the tone mapping operators are in tonemap.glsl.

void main() {
    float depth = TILE_READ(depth_input).r;
    if (depth == 0.0) {
        out_color = background_output();
        return;
    }
    bool fog = tonemap_fogs() && fogs_surface(TILE_READ(material_input).a);
    out_color = surface_output(TILE_READ(light_accumulation).rgb, depth, fog);
}

#else // MSAA

// MSAA variant of the single-sample pass above: subpass 2 at N samples with fullscreen.vert,
// shaded per pixel. Reads every sample of the light accumulation and the depth (subpassInputMS,
// set 3 bindings 0 and 1; the LUT is binding 2 as without MSAA; the material binding 4, where the
// pass fogs) and writes one colour per pixel to location 0, an N-sample transient attachment that
// pResolveAttachments resolves in-pass into the single-sample output (the hardware average of N
// identical values is that value). msaa_pixel_display (tonemap_display.glsl) says how.

void main() {
    out_color = encoded_output(msaa_pixel_display(vec3(0.0)));
}

#endif // MSAA
