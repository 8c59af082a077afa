// Shared interface of the tile-deferred shaders and the Rust side (src/tile_deferred/gpu/types.rs
// mirrors every struct here; keep them in sync). Every struct member is a vec4, uvec4 or mat4 so
// that std140 and std430 layouts are identical and trivially mirrored by #[repr(C)] Rust structs.
//
// Conventions (the same as Bevy/wgpu so Bevy's matrices are used unchanged):
// - The pipelines use a negative viewport height (wgpu's Y flip): clip_from_world is Bevy's
//   matrix as is, NDC y points up, gl_FragCoord has its origin at the top-left.
// - Reverse-Z: depth 1 at the near plane, 0 at infinity; the depth buffer is cleared to 0 and
//   tested with GREATER_OR_EQUAL. A G-buffer pixel with depth == 0.0 is background.
// - All colours are linear. Light colours are NOT pre-exposed; shaders multiply by
//   view.exposure.x as Bevy does, so the light accumulation attachment holds pre-exposed values.
//
// Descriptor sets:
//   set 0 (per view, every pipeline): binding 0 = View (uniform), binding 1 = ClusterableLights
//          (storage, read-only; point and spot lights), binding 2 = ClusterLightMasks (storage,
//          read-only; one bit per light per cluster, word-major, see clusters.glsl),
//          binding 3 = samplerCubeArrayShadow point-light shadow maps, binding 4 =
//          sampler2DArrayShadow directional cascades and spot-light shadow maps (Bevy's own
//          shadow textures, see shadows.glsl), binding 5 = AnimationData (storage, read-only,
//          vertex stage; joint matrices and morph weights), binding 6 = MorphDisplacements
//          (storage, read-only, vertex stage), see gbuffer.vert.
//   set 1 (per material, G-buffer pipeline): binding 0 = Material (uniform),
//          bindings 1..5 = sampler2D base_color, emissive, metallic_roughness, occlusion,
//          normal_map (a 1x1 white texture is bound where the material has none; flags say which
//          are real), binding 6 = sampler2D lightmap (the draw's Lightmap image, or the 1x1
//          white texture for meshes without one; gbuffer.frag).
//   set 2 (lighting subpass): input attachments 0..3 = albedo_occlusion, normal, material, depth
//          (input_attachment_index 0..3, bindings 0..3).
//   set 3 (tonemap subpass): binding 0 = light accumulation (input_attachment_index 0),
//          binding 1 = depth (input_attachment_index 1), binding 2 = sampler3D tonemapping LUT
//          (Bevy's TonyMcMapface LUT, or AgX's, or a 1x1x1 dummy for analytic operators),
//          binding 3 = skybox cube, binding 4 = the G-buffer material (input_attachment_index 2;
//          its alpha's GBUFFER_NO_FOG bit).

#define MAX_DIRECTIONAL_LIGHTS 10
#define MAX_CASCADES_PER_LIGHT 4

struct DirectionalCascade {
    mat4 clip_from_world;
    vec4 texel_size_far_bound; // x: texel size (world units), y: far bound (view depth)
};

struct DirectionalLight {
    vec4 direction_to_light; // xyz: unit vector from the surface towards the light (world)
    vec4 color;              // rgb: linear colour * illuminance in lux; a: unused
    vec4 shadow_biases_overlap; // x: depth bias, y: normal bias, z: cascade overlap proportion
    uvec4 shadow_cascades;   // x: cascades with a shadow map (0: no shadow), y: first cascade's layer
    DirectionalCascade cascades[MAX_CASCADES_PER_LIGHT];
};

// View.counts.z: the camera's ShadowFilteringMethod (gpu_types::shadow_filter).
#define SHADOW_FILTER_HARDWARE_2X2 0u
#define SHADOW_FILTER_GAUSSIAN 1u
#define SHADOW_FILTER_TEMPORAL 2u

// An irradiance volume (LightProbe + IrradianceVolume; environment.glsl): Bevy's RenderLightProbe
// fields that its irradiance_volume_light reads. Bevy's MAX_VIEW_LIGHT_PROBES per view.
#define MAX_IRRADIANCE_VOLUMES 8
struct IrradianceVolume {
    vec4 light_from_world_transposed[3]; // rows of the world-to-probe transform (probe: unit cube)
    vec4 falloff_intensity;              // xyz: LightProbe::falloff; w: IrradianceVolume::intensity
};

struct View {
    mat4 clip_from_world;
    mat4 world_from_clip;
    mat4 view_from_world;
    mat4 clip_from_view;
    vec4 world_position;     // xyz: camera position (world); w: 1.0 if orthographic else 0.0
    vec4 viewport;           // x, y, width, height of the camera's viewport in target pixels
    vec4 ambient;            // rgb: ambient colour * brightness (Bevy's GlobalAmbientLight units); a: unused
    vec4 exposure;           // x: exposure factor (Bevy's Exposure::exposure()); y: ColorGrading's global exposure, z: its post_saturation, as the tone mapping applies them (0 and 1 where Bevy tone maps after the pass); w: unused
    uvec4 counts;            // x: directional lights, y: clusterable (point+spot) lights, z: SHADOW_FILTER_*, w: frame count
    uvec4 cluster_grid;      // clusters across, down, in depth; w: 32-bit light-mask words per cluster
    vec4 cluster_params;     // x: tile size (px), y: near depth, z: first slice depth, w: slices per log unit (clusters.rs)
    DirectionalLight directional_lights[MAX_DIRECTIONAL_LIGHTS];
    // Scene content (issue 15), appended: see skybox.glsl.
    vec4 skybox;             // x: Skybox::brightness * exposure; y: 1.0 when the camera draws a skybox
    mat4 skybox_transform;   // the inverse of Skybox::rotation
    vec4 fog_base_color;              // DistanceFog, as Bevy's GpuFog (fog.glsl)
    vec4 fog_directional_light_color;
    vec4 fog_be_exponent;             // xyz: be; w: directional_light_exponent
    vec4 fog_bi_mode;                 // xyz: bi; w: mode (FOG_MODE_*, 0 = no fog)
    vec4 environment;          // EnvironmentMapLight: x intensity, y smallest specular mip, z 1.0 when used
    vec4 environment_rotation; // the inverse of EnvironmentMapLight::rotation (quaternion xyzw)
    uvec4 irradiance_volume_count; // x: irradiance volumes in view (0 to MAX_IRRADIANCE_VOLUMES)
    IrradianceVolume irradiance_volumes[MAX_IRRADIANCE_VOLUMES]; // nearest to the camera first
};

struct ClusterableLight {
    vec4 position_radius;              // xyz: world position; w: light radius in metres
    vec4 color_inverse_square_range;   // rgb: linear colour * intensity / (4 pi); w: 1 / range^2
    vec4 spot_direction_range;         // xyz: spot direction (world, unit); w: range in metres
    vec4 spot_scale_offset_kind;       // x: spot scale, y: spot offset (Bevy's), z: 1.0 spot, 0.0 point; w: tan(outer angle)
    vec4 shadow;                       // x: depth bias, y: normal bias, z: shadow near plane, w: shadow map layer or -1
};

// Per-instance flags (GpuInstance::flags.x).
#define INSTANCE_SHADOW_RECEIVER (1u << 0)
// The mesh has a Lightmap (set 1 binding 6, GpuInstance::lightmap); bicubic_sampling.
#define INSTANCE_LIGHTMAPPED (1u << 1)
#define INSTANCE_LIGHTMAP_BICUBIC (1u << 2)

// G-buffer material.a: an exact 8-bit code (written as code / 255.0, read back with
// gbuffer_material_code). Bits 0..1, the category: what the lighting subpass does with the pixel
// (unlit pixels keep what subpass 0 wrote; lit ones receive shadows unless the mesh has
// NotShadowReceiver). Bit 2, GBUFFER_NO_FOG: the material has fog_enabled = false, so the
// camera's distance fog leaves the pixel alone (Bevy's FOG_ENABLED material flag). Bit 3,
// GBUFFER_NO_LIGHT: a lit mesh that emits no light (no emissive colour, no lightmap) left the
// light attachment unwritten (its pipeline masks the write off, pipelines.rs), so what the pixel
// holds there is not its light: the lighting replaces it instead of adding to it.
#define GBUFFER_LIT_SHADOW_RECEIVER 0u
#define GBUFFER_LIT_NO_SHADOWS 1u
#define GBUFFER_UNLIT 2u
#define GBUFFER_CATEGORY_MASK 3u
#define GBUFFER_NO_FOG (1u << 2)
#define GBUFFER_NO_LIGHT (1u << 3)

float gbuffer_material_alpha(uint code) {
    return float(code) / 255.0;
}

uint gbuffer_material_code(float material_a) {
    return uint(round(material_a * 255.0));
}

// The G-buffer subpass wrote this surface pixel's light (see GBUFFER_NO_LIGHT).
bool gbuffer_light_written(float material_a) {
    return (gbuffer_material_code(material_a) & GBUFFER_NO_LIGHT) == 0u;
}

bool gbuffer_no_fog(float material_a) {
    return (gbuffer_material_code(material_a) & GBUFFER_NO_FOG) != 0u;
}

// Material flag bits (Material.flags.x).
#define MATERIAL_BASE_COLOR_TEXTURE         (1u << 0)
#define MATERIAL_EMISSIVE_TEXTURE           (1u << 1)
#define MATERIAL_METALLIC_ROUGHNESS_TEXTURE (1u << 2)
#define MATERIAL_OCCLUSION_TEXTURE          (1u << 3)
#define MATERIAL_NORMAL_MAP_TEXTURE         (1u << 4)
#define MATERIAL_UNLIT                      (1u << 5)
#define MATERIAL_DOUBLE_SIDED               (1u << 6)
#define MATERIAL_FLIP_NORMAL_MAP_Y          (1u << 7)
#define MATERIAL_TWO_COMPONENT_NORMAL_MAP   (1u << 8)
#define MATERIAL_ALPHA_MASK                 (1u << 9)
// The texture is sampled with the second UV set (UvChannel::Uv1, Bevy's *_UV_B shader defs).
#define MATERIAL_BASE_COLOR_UV_B            (1u << 10)
#define MATERIAL_EMISSIVE_UV_B              (1u << 11)
#define MATERIAL_METALLIC_ROUGHNESS_UV_B    (1u << 12)
#define MATERIAL_OCCLUSION_UV_B             (1u << 13)
#define MATERIAL_NORMAL_MAP_UV_B            (1u << 14)
// StandardMaterial::fog_enabled == false: the camera's distance fog leaves the surface alone.
#define MATERIAL_FOG_DISABLED               (1u << 15)

struct Material {
    vec4 base_color;          // linear RGBA
    vec4 emissive;            // rgb: linear emissive (Bevy's LinearRgba, nits-like); a: exposure weight (Bevy's emissive.a)
    vec4 roughness_metallic_reflectance_cutoff; // x: perceptual roughness, y: metallic, z: reflectance, w: alpha cutoff
    vec4 uv_transform_matrix; // Bevy's Affine2 uv_transform matrix2: (x_axis.x, x_axis.y, y_axis.x, y_axis.y)
    vec4 uv_transform_translation; // xy: translation; zw: unused
    uvec4 flags;              // x: MATERIAL_* bits; y, z, w: unused
};

// The G-buffer (subpass 0 colour outputs; 128 bits per pixel of colour in total):
//   location 0 albedo_occlusion  R8G8B8A8_SRGB      rgb: base colour (linear written, sRGB stored); a: diffuse occlusion
//   location 1 normal            R16G16_SFLOAT      octahedral-encoded world normal in [-1, 1]^2
//   location 2 material          R8G8B8A8_UNORM     r: perceptual roughness, g: metallic, b: reflectance, a: GBUFFER_* code (category, no fog)
//   location 3 light             B10G11R11_UFLOAT   pre-exposed light: emissive in subpass 0, lights added (blend ONE, ONE) in subpass 1;
//                                                   unlit pixels hold their base colour (Bevy does not expose unlit colour)
// plus depth (D32_SFLOAT), read as input attachment 3 in the lighting subpass.

vec2 octahedral_encode(vec3 n) {
    n /= abs(n.x) + abs(n.y) + abs(n.z);
    vec2 e = n.xy;
    if (n.z < 0.0) {
        e = (1.0 - abs(n.yx)) * vec2(e.x >= 0.0 ? 1.0 : -1.0, e.y >= 0.0 ? 1.0 : -1.0);
    }
    return e;
}

vec3 octahedral_decode(vec2 e) {
    vec3 n = vec3(e, 1.0 - abs(e.x) - abs(e.y));
    float t = max(-n.z, 0.0);
    n.x += n.x >= 0.0 ? -t : t;
    n.y += n.y >= 0.0 ? -t : t;
    return normalize(n);
}

// Vulkan's standard sample locations (VkPhysicalDeviceLimits::standardSampleLocations, the D3D
// pattern), in pixel units from the pixel's top-left corner: entries [N - 2, 2N - 2) for
// N = 2, 4, 8.
const vec2 MSAA_STANDARD_SAMPLE_LOCATIONS[14] = vec2[](
    // 2 samples
    vec2(0.75, 0.75), vec2(0.25, 0.25),
    // 4 samples
    vec2(0.375, 0.125), vec2(0.875, 0.375), vec2(0.125, 0.625), vec2(0.625, 0.875),
    // 8 samples
    vec2(0.5625, 0.3125), vec2(0.4375, 0.6875), vec2(0.8125, 0.5625), vec2(0.3125, 0.1875),
    vec2(0.1875, 0.8125), vec2(0.0625, 0.4375), vec2(0.6875, 0.9375), vec2(0.9375, 0.0625));

// Where sample i of a pixel is, in pixel units from the pixel's top-left corner: the standard
// location, or the centre for counts without one.
vec2 msaa_sample_location(int sample_count, int sample_index) {
    if (sample_count == 2 || sample_count == 4 || sample_count == 8) {
        return MSAA_STANDARD_SAMPLE_LOCATIONS[sample_count - 2 + sample_index];
    }
    return vec2(0.5);
}

// World position of a pixel from its depth (reverse-Z, wgpu clip conventions).
vec3 world_position_from_depth(View view, vec2 frag_coord, float depth) {
    vec2 uv = (frag_coord - view.viewport.xy) / view.viewport.zw;
    vec4 clip = vec4(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, depth, 1.0);
    vec4 world = view.world_from_clip * clip;
    return world.xyz / world.w;
}

// Debug views (the fragment push constants' msaa.w, TileDebugView on the Rust side). The G-buffer
// views replace the lighting with the value shown (emissive is not written); LIGHT shows the light
// accumulation without tone mapping; LIGHT_COUNT shows, per pixel, how many point and spot lights
// its cluster holds (a heat map in the tonemap pass).
#define DEBUG_VIEW_NONE 0u
#define DEBUG_VIEW_ALBEDO 1u
#define DEBUG_VIEW_NORMAL 2u
#define DEBUG_VIEW_MATERIAL 3u
#define DEBUG_VIEW_DEPTH 4u
#define DEBUG_VIEW_LIGHT 5u
#define DEBUG_VIEW_LIGHT_COUNT 6u

bool debug_view_replaces_lighting(uint debug_view) {
    return debug_view >= DEBUG_VIEW_ALBEDO && debug_view <= DEBUG_VIEW_DEPTH;
}

// The exact sRGB EOTF: a G-buffer debug value meant to be seen as the 8-bit code v is written as
// srgb_to_linear(v), which the output's sRGB encode turns back into v.
vec3 srgb_to_linear(vec3 c) {
    c = clamp(c, vec3(0.0), vec3(1.0));
    vec3 lo = c / 12.92;
    vec3 hi = pow((c + 0.055) / 1.055, vec3(2.4));
    return mix(hi, lo, lessThanEqual(c, vec3(0.04045)));
}
