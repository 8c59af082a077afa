// A mesh's Lightmap: port of bevy_pbr's lightmap.wgsl (one lightmap per draw, Bevy's path without
// MULTIPLE_LIGHTMAPS_IN_ARRAY). Requires common.glsl and the instance's GpuInstance::lightmap as
// the flat input `in_instance_lightmap`.
//
// The draw's lightmap image with its own sampler (Bevy samples it with the GpuImage's sampler);
// the 1x1 white texture for draws without a lightmap, and, as in Bevy (the fallback image of
// RenderLightmaps' slots), while the lightmap image is not loaded.

#ifndef TILE_DEFERRED_LIGHTMAP_GLSL
#define TILE_DEFERRED_LIGHTMAP_GLSL

layout(set = 1, binding = 6) uniform sampler2D lightmap_texture;

// lightmap.wgsl's sample: mip level 0 (Bevy does not mipmap lightmaps), rgb.
vec3 lightmap_sample(vec2 uv) {
    return textureLod(lightmap_texture, uv, 0.0).rgb;
}

float lightmap_w0(float a) { return (1.0 / 6.0) * (a * (a * (-a + 3.0) - 3.0) + 1.0); }
float lightmap_w1(float a) { return (1.0 / 6.0) * (a * a * (3.0 * a - 6.0) + 4.0); }
float lightmap_w2(float a) { return (1.0 / 6.0) * (a * (a * (-3.0 * a + 3.0) + 3.0) + 1.0); }
float lightmap_w3(float a) { return (1.0 / 6.0) * (a * a * a); }
float lightmap_g0(float a) { return lightmap_w0(a) + lightmap_w1(a); }
float lightmap_g1(float a) { return lightmap_w2(a) + lightmap_w3(a); }
float lightmap_h0_approx(float a) { return -0.2 - a * (0.24 * a - 0.44); }
float lightmap_h1_approx(float a) { return 1.0 + a * (0.24 * a - 0.04); }

// lightmap.wgsl's lightmap: the indirect light the lightmap holds at UV_1 `uv`, times the
// material's lightmap_exposure. `packed` is GpuInstance::lightmap; `bicubic` is
// Lightmap::bicubic_sampling (LIGHTMAP_BICUBIC_SAMPLING).
vec3 lightmap_light(vec2 uv, uvec4 packed, bool bicubic) {
    vec4 uv_rect = vec4(unpackUnorm2x16(packed.x), unpackUnorm2x16(packed.y));
    vec2 lightmap_uv = mix(uv_rect.xy, uv_rect.zw, uv);
    float exposure = uintBitsToFloat(packed.z);

    vec3 color;
    if (bicubic) {
        // Bicubic 4-tap (GPU Gems 2, chapter 20), as lightmap.wgsl.
        vec2 texture_size = vec2(textureSize(lightmap_texture, 0));
        vec2 texel_size = 1.0 / texture_size;
        vec2 puv = lightmap_uv * texture_size + 0.5;
        vec2 iuv = floor(puv);
        vec2 fuv = fract(puv);
        float g0x = lightmap_g0(fuv.x);
        float g1x = lightmap_g1(fuv.x);
        float h0x = lightmap_h0_approx(fuv.x);
        float h1x = lightmap_h1_approx(fuv.x);
        float h0y = lightmap_h0_approx(fuv.y);
        float h1y = lightmap_h1_approx(fuv.y);
        vec2 p0 = (vec2(iuv.x + h0x, iuv.y + h0y) - 0.5) * texel_size;
        vec2 p1 = (vec2(iuv.x + h1x, iuv.y + h0y) - 0.5) * texel_size;
        vec2 p2 = (vec2(iuv.x + h0x, iuv.y + h1y) - 0.5) * texel_size;
        vec2 p3 = (vec2(iuv.x + h1x, iuv.y + h1y) - 0.5) * texel_size;
        color = lightmap_g0(fuv.y) * (g0x * lightmap_sample(p0) + g1x * lightmap_sample(p1))
            + lightmap_g1(fuv.y) * (g0x * lightmap_sample(p2) + g1x * lightmap_sample(p3));
    } else {
        color = lightmap_sample(lightmap_uv);
    }
    return color * exposure;
}

#endif
