//! The structs the tile-deferred shaders read, mirrored from `shaders/common.glsl`.
//!
//! Every member is a 16-byte vector or a matrix so that std140 and std430 agree and `#[repr(C)]`
//! matches both.

use bytemuck::{Pod, Zeroable};

/// Directional lights the lighting subpass evaluates (Bevy's own limit).
pub const MAX_DIRECTIONAL_LIGHTS: usize = 10;

/// Shadow cascades a directional light has at most (Bevy's `MAX_CASCADES_PER_LIGHT`).
pub const MAX_CASCADES_PER_LIGHT: usize = 4;

/// `DirectionalCascade` in common.glsl: one cascade of a directional light's shadow map, as
/// Bevy's `GpuDirectionalCascade`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuDirectionalCascade {
    /// The cascade's `clip_from_world`.
    pub clip_from_world: [[f32; 4]; 4],
    /// x: texel size in world units, y: far bound (view depth); z, w unused.
    pub texel_size_far_bound: [f32; 4],
}

/// `DirectionalLight` in common.glsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuDirectionalLight {
    /// xyz: unit vector from the surface towards the light.
    pub direction_to_light: [f32; 4],
    /// rgb: linear colour times illuminance (lux).
    pub color: [f32; 4],
    /// x: shadow depth bias, y: shadow normal bias (Bevy's, already times sqrt 2), z: cascade
    /// overlap proportion; w unused.
    pub shadow_biases_overlap: [f32; 4],
    /// x: cascades with a shadow map (0: the light casts no shadow), y: the first cascade's
    /// layer in the directional shadow map array; z, w unused.
    pub shadow_cascades: [u32; 4],
    /// The cascades, `shadow_cascades[0]` of them valid.
    pub cascades: [GpuDirectionalCascade; MAX_CASCADES_PER_LIGHT],
}

/// `View` in common.glsl: the per-view uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct GpuView {
    /// Bevy's `clip_from_world`.
    pub clip_from_world: [[f32; 4]; 4],
    /// Inverse of `clip_from_world`.
    pub world_from_clip: [[f32; 4]; 4],
    /// Bevy's `view_from_world`.
    pub view_from_world: [[f32; 4]; 4],
    /// Bevy's `clip_from_view` (projection).
    pub clip_from_view: [[f32; 4]; 4],
    /// xyz: camera position; w: 1 if orthographic.
    pub world_position: [f32; 4],
    /// x, y, width, height of the viewport in target pixels.
    pub viewport: [f32; 4],
    /// rgb: ambient colour times brightness.
    pub ambient: [f32; 4],
    /// x: exposure factor; y: the `ColorGrading`'s global exposure and z its post-saturation,
    /// which the tone mapping applies (0 and 1 where Bevy tone maps after the tile pass).
    pub exposure: [f32; 4],
    /// x: directional light count, y: point and spot light count, z: the camera's shadow filter
    /// (`shadow_filter`), w: frame count (the temporal filter's noise).
    pub counts: [u32; 4],
    /// Clusters across, down and in depth; 32-bit mask words per cluster.
    pub cluster_grid: [u32; 4],
    /// Cluster tile size in pixels, near depth, first slice depth, slices per log unit (see
    /// `clusters::ClusterGrid`).
    pub cluster_params: [f32; 4],
    /// Directional lights, `counts[0]` of them valid.
    pub directional_lights: [GpuDirectionalLight; MAX_DIRECTIONAL_LIGHTS],
    /// x: `Skybox::brightness` times the exposure; y: 1 when the camera draws a skybox
    /// (`environment::skybox_uniform`).
    pub skybox: [f32; 4],
    /// The inverse of `Skybox::rotation`, applied to the view ray.
    pub skybox_transform: [[f32; 4]; 4],
    /// `DistanceFog` as Bevy's `GpuFog` (`environment::gpu_fog`): linear base colour.
    pub fog_base_color: [f32; 4],
    /// Linear directional-light inscattering colour.
    pub fog_directional_light_color: [f32; 4],
    /// xyz: `be` (linear start/end, density, or atmospheric extinction); w: the directional
    /// light exponent.
    pub fog_be_exponent: [f32; 4],
    /// xyz: `bi` (atmospheric inscattering); w: the mode (`fog_mode`), 0 for no fog.
    pub fog_bi_mode: [f32; 4],
    /// `EnvironmentMapLight`: x intensity, y the specular map's smallest mip level, z 1 when
    /// the camera has one (`environment::ViewEnvironment`).
    pub environment: [f32; 4],
    /// The inverse of `EnvironmentMapLight::rotation`, as a quaternion (x, y, z, w).
    pub environment_rotation: [f32; 4],
    /// x: the irradiance volumes in `irradiance_volumes` (`environment::ViewEnvironment`).
    pub irradiance_volume_count: [u32; 4],
    /// The view's irradiance volumes, nearest to the camera first (Bevy's per-view list).
    pub irradiance_volumes: [GpuIrradianceVolume; MAX_IRRADIANCE_VOLUMES],
}

/// Irradiance volumes a view samples at most (Bevy's `MAX_VIEW_LIGHT_PROBES`).
pub const MAX_IRRADIANCE_VOLUMES: usize = 8;

/// `IrradianceVolume` in common.glsl: what Bevy's `RenderLightProbe` gives its
/// `irradiance_volume_light`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuIrradianceVolume {
    /// The rows of the world-to-probe transform (the probe is the unit cube at the origin).
    pub light_from_world_transposed: [[f32; 4]; 3],
    /// xyz: `LightProbe::falloff`; w: `IrradianceVolume::intensity`.
    pub falloff_intensity: [f32; 4],
}

/// `GpuView::fog_bi_mode.w` values, as `FOG_MODE_*` in fog.glsl.
pub mod fog_mode {
    /// No fog.
    #[allow(
        dead_code,
        reason = "mirrors FOG_MODE_OFF in fog.glsl; the CPU writes it as the zeroed default"
    )]
    pub const OFF: f32 = 0.0;
    /// `FogFalloff::Linear`.
    pub const LINEAR: f32 = 1.0;
    /// `FogFalloff::Exponential`.
    pub const EXPONENTIAL: f32 = 2.0;
    /// `FogFalloff::ExponentialSquared`.
    pub const EXPONENTIAL_SQUARED: f32 = 3.0;
    /// `FogFalloff::Atmospheric`.
    pub const ATMOSPHERIC: f32 = 4.0;
}

/// `ClusterableLight` in common.glsl: a point or spot light.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuClusterableLight {
    /// xyz: world position; w: radius.
    pub position_radius: [f32; 4],
    /// rgb: linear colour times intensity / (4 pi); w: 1 / range².
    pub color_inverse_square_range: [f32; 4],
    /// xyz: spot direction; w: range.
    pub spot_direction_range: [f32; 4],
    /// x: spot scale, y: spot offset, z: 1 for spot lights, w: tangent of the spot's outer angle.
    pub spot_scale_offset_kind: [f32; 4],
    /// x: shadow depth bias, y: shadow normal bias (Bevy's, already scaled to the shadow map's
    /// texel size), z: shadow map near plane, w: the shadow map's layer (point lights: cube
    /// index; spot lights: layer of the directional/spot array), or -1 without a shadow.
    pub shadow: [f32; 4],
}

/// `View.counts.z`: the camera's `ShadowFilteringMethod`, as `SHADOW_FILTER_*` in common.glsl.
pub mod shadow_filter {
    /// One hardware 2x2 comparison (`ShadowFilteringMethod::Hardware2x2`).
    pub const HARDWARE_2X2: u32 = 0;
    /// Castano's 13-tap filter, 9 bilinear comparisons (`Gaussian`, Bevy's default).
    pub const GAUSSIAN: u32 = 1;
    /// Jimenez's 8-tap spiral rotated by per-frame noise (`Temporal`).
    pub const TEMPORAL: u32 = 2;
}

/// Material flag bits, as `MATERIAL_*` in common.glsl.
pub mod material_flags {
    /// The material samples a base colour texture.
    pub const BASE_COLOR_TEXTURE: u32 = 1 << 0;
    /// The material samples an emissive texture.
    pub const EMISSIVE_TEXTURE: u32 = 1 << 1;
    /// The material samples a metallic/roughness texture.
    pub const METALLIC_ROUGHNESS_TEXTURE: u32 = 1 << 2;
    /// The material samples an occlusion texture.
    pub const OCCLUSION_TEXTURE: u32 = 1 << 3;
    /// The material samples a normal map (needs tangents).
    pub const NORMAL_MAP_TEXTURE: u32 = 1 << 4;
    /// Unlit: the base colour is the output.
    pub const UNLIT: u32 = 1 << 5;
    /// Back faces are drawn and their normals flipped.
    pub const DOUBLE_SIDED: u32 = 1 << 6;
    /// The normal map's green channel is flipped.
    pub const FLIP_NORMAL_MAP_Y: u32 = 1 << 7;
    /// The normal map stores only x and y.
    pub const TWO_COMPONENT_NORMAL_MAP: u32 = 1 << 8;
    /// Alpha mask: fragments under the cutoff are discarded.
    pub const ALPHA_MASK: u32 = 1 << 9;
    /// The base colour texture is sampled with the second UV set (`UvChannel::Uv1`).
    pub const BASE_COLOR_UV_B: u32 = 1 << 10;
    /// The emissive texture is sampled with the second UV set.
    pub const EMISSIVE_UV_B: u32 = 1 << 11;
    /// The metallic/roughness texture is sampled with the second UV set.
    pub const METALLIC_ROUGHNESS_UV_B: u32 = 1 << 12;
    /// The occlusion texture is sampled with the second UV set.
    pub const OCCLUSION_UV_B: u32 = 1 << 13;
    /// The normal map is sampled with the second UV set.
    pub const NORMAL_MAP_UV_B: u32 = 1 << 14;
    /// `fog_enabled: false`: the camera's distance fog leaves the surface alone.
    pub const FOG_DISABLED: u32 = 1 << 15;
}

/// `Material` in common.glsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuMaterial {
    /// Linear RGBA base colour.
    pub base_color: [f32; 4],
    /// rgb: linear emissive; a: exposure weight.
    pub emissive: [f32; 4],
    /// Perceptual roughness, metallic, reflectance, alpha cutoff.
    pub roughness_metallic_reflectance_cutoff: [f32; 4],
    /// The UV transform's 2x2 matrix, column-major.
    pub uv_transform_matrix: [f32; 4],
    /// xy: the UV transform's translation.
    pub uv_transform_translation: [f32; 4],
    /// x: `material_flags` bits.
    pub flags: [u32; 4],
}

/// Per-instance vertex data: the rows of `world_from_local` (locations 6..8), the instance's
/// flags (location 15) and its lightmap (location 14).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuInstance {
    /// Row i is (m\[0\]\[i\], m\[1\]\[i\], m\[2\]\[i\], translation\[i\]).
    pub world_from_local_rows: [[f32; 4]; 3],
    /// x: `instance_flags` bits; y: a skinned instance's first joint matrix, z: a morphed
    /// instance's morph header, both as vec4 indices into the view's animation data
    /// (`draws::AnimationData`); w unused (keeps the stride a multiple of 16).
    pub flags: [u32; 4],
    /// A lightmapped instance's (`instance_flags::LIGHTMAPPED`) lightmap: x, y its `uv_rect`
    /// packed as Bevy packs it (`pack_lightmap_uv_rect`: min and max as 16-bit unorm pairs),
    /// z the material's `lightmap_exposure` (`f32` bits); w unused.
    pub lightmap: [u32; 4],
}

/// `GpuInstance::flags` bits, as `INSTANCE_*` in common.glsl.
pub mod instance_flags {
    /// The mesh receives shadows (it has no `NotShadowReceiver`).
    pub const SHADOW_RECEIVER: u32 = 1 << 0;
    /// The mesh has a `Lightmap`: the G-buffer subpass adds its light (set 1 binding 6).
    pub const LIGHTMAPPED: u32 = 1 << 1;
    /// `Lightmap::bicubic_sampling`.
    pub const LIGHTMAP_BICUBIC: u32 = 1 << 2;
}

/// Push constants of the tonemap subpass.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuTonemapParams {
    /// rgb: linear clear colour; a: 1 to write it on background pixels, 0 to keep them.
    pub clear_color: [f32; 4],
    /// x: operator, y: dither on, z: encode sRGB in the shader, w: `tonemap_flags` bits.
    pub mode: [u32; 4],
}

/// `mode.w` bits of [`GpuTonemapParams`] (`TONEMAP_FLAG_*` in tonemap_pass.glsl).
pub mod tonemap_flags {
    /// An HDR camera: the background (clear colour or skybox) is tone mapped and dithered like
    /// every other pixel, as Bevy's tonemapping pass does to its HDR main texture.
    pub const HDR_BACKGROUND: u32 = 1 << 0;
    /// The light accumulation holds the background pixels' light (the clear colour, with the
    /// transparent meshes blended over it): tonemap reads it there.
    pub const BACKGROUND_IN_LIGHT: u32 = 1 << 1;
    /// The lighting subpass applied the camera's fog to the light (an HDR camera's transparent
    /// pass blends over fogged surfaces, as in Bevy): tonemap does not fog again.
    pub const FOG_IN_LIGHT: u32 = 1 << 2;
    /// The output is the camera's HDR light, which Bevy tone maps after the tile pass (after
    /// its bloom): MSAA samples are averaged as they are, as Bevy's resolve of its HDR main
    /// texture does, not clamped to the [0, 1] of a display-referred store first.
    pub const STORES_LIGHT: u32 = 1 << 3;
}

/// The fragment push constants of every tile pipeline: tonemap parameters, then MSAA
/// parameters of the lighting and tonemap subpasses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuPushConstants {
    /// Read by the tonemap subpass.
    pub tonemap: GpuTonemapParams,
    /// x: the sample a lighting draw shades, y: sample count, z: `msaa_flags` bits.
    pub msaa: [u32; 4],
}

/// `msaa.z` bits of [`GpuPushConstants`].
pub mod msaa_flags {
    /// Shade every sample of every pixel (the brute-force reference), not only edges.
    pub const PER_SAMPLE: u32 = 1 << 0;
    /// Tint edge pixels red in the output: the edge-mask debug view.
    pub const DEBUG_EDGES: u32 = 1 << 1;
}

/// `LightReach` in cluster_assign.comp: what a point or spot light reaches, in view space (x, y
/// and depth, depth growing away from the camera), prepared on the CPU
/// (`clusters::LightReach`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuLightReach {
    /// Centre and radius of a sphere holding everything the light reaches.
    pub center_radius: [f32; 4],
    /// Spot lights: the apex; w: cos of the outer angle.
    pub apex_cos: [f32; 4],
    /// Spot lights: the unit direction; w: sin of the outer angle.
    pub direction_sin: [f32; 4],
    /// x: range; y: 0 reaches nothing, 1 a sphere, 2 a cone; z, w unused.
    pub range_kind: [f32; 4],
}

/// The push constants of cluster_assign.comp.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct GpuClusterAssignParams {
    /// Clusters across, down and in depth; lights.
    pub grid: [u32; 4],
    /// x: the first word of the frame's statistics slot; y, z, w unused.
    pub stats: [u32; 4],
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes the GLSL std140/std430 layouts give these structs.
    #[test]
    fn layouts_match_glsl() {
        assert_eq!(size_of::<GpuDirectionalCascade>(), 80);
        assert_eq!(size_of::<GpuDirectionalLight>(), 64 + 4 * 80);
        assert_eq!(
            size_of::<GpuView>(),
            4 * 64
                + 7 * 16
                + MAX_DIRECTIONAL_LIGHTS * 384
                + 16
                + 64
                + 4 * 16
                + 2 * 16
                + 16
                + MAX_IRRADIANCE_VOLUMES * 64
        );
        assert_eq!(size_of::<GpuIrradianceVolume>(), 64);
        assert_eq!(size_of::<GpuClusterableLight>(), 80);
        assert_eq!(size_of::<GpuMaterial>(), 96);
        assert_eq!(size_of::<GpuInstance>(), 80);
        assert_eq!(size_of::<GpuTonemapParams>(), 32);
        assert_eq!(size_of::<GpuPushConstants>(), 48);
        assert_eq!(size_of::<GpuLightReach>(), 64);
        assert_eq!(size_of::<GpuClusterAssignParams>(), 32);
    }
}
