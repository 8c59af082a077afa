//! What a tile camera draws around its surfaces (issue 15): its `Skybox`, drawn by the tonemap
//! subpass on background pixels (skybox.glsl), in place of the clear colour; its
//! `EnvironmentMapLight`, added to the indirect light by the lighting subpass
//! (environment.glsl); and its `DistanceFog`, applied by the tonemap subpass to surface pixels
//! (fog.glsl). Irradiance volumes (`LightProbe` + `IrradianceVolume`) are drawn as Bevy draws
//! them where texture binding arrays are not usable: the view's nearest 8, weighted by their
//! falloff, all sampled from the nearest one's voxels (environment.glsl). Reflection probes
//! (`LightProbe` + `EnvironmentMapLight`) are not drawn: `find_missing` (missing.rs) lists each
//! in a tile camera's view in its `TileMissing`, so that an `Auto` camera falls back to Bevy's
//! `Core3d` while one is in view (as it does for irradiance volumes with more than one texture
//! where Bevy samples each from its own).
//!
//! Bevy keeps these uniforms private (`SkyboxUniforms`, `GpuFog`, its light-probe view info), so
//! they are recomputed here from the public `Skybox`, `DistanceFog` and `EnvironmentMapLight`
//! components; the cubes are Bevy's own `GpuImage`s, bound through their raw Vulkan views as
//! material textures are, with samplers made from the images' own sampler settings (the render
//! world keeps only wgpu's samplers).

use crate::tile_deferred::{
    camera::TileDeferred,
    error::{TileResult, step},
    gpu::keys::SamplerKey,
    gpu::{
        samplers::SamplerCache,
        types::{GpuIrradianceVolume, GpuView, MAX_IRRADIANCE_VOLUMES, fog_mode},
    },
};
use ash::vk;
use bevy::{
    camera::visibility::VisibleEntities,
    light::{
        EnvironmentMapLight, IrradianceVolume, LightProbe, Skybox, cluster::ClusterVisibilityClass,
    },
    math::FloatOrd,
    pbr::{DistanceFog, FogFalloff},
    platform::collections::HashMap,
    prelude::*,
    render::{
        Extract,
        render_asset::RenderAssets,
        render_resource::{DefaultImageSamplerDescriptor, TextureDimension, TextureViewDimension},
        sync_world::RenderEntity,
        texture::GpuImage,
    },
};

/// How Bevy samples the images of the tile cameras' skyboxes: each image's own sampler, or the
/// app's default (`ImagePlugin::default_sampler`), by image.
#[derive(Resource, Default)]
pub(crate) struct TileEnvironmentSamplers(HashMap<AssetId<Image>, SamplerKey>);

/// A tile camera's `EnvironmentMapLight` as the lighting subpass reads it, on the render-world
/// camera (Bevy's own extraction keeps it private).
#[derive(Component, Clone, Debug)]
pub(crate) struct TileEnvironmentMap {
    diffuse: AssetId<Image>,
    specular: AssetId<Image>,
    intensity: f32,
    rotation: Quat,
    /// Bevy samples both cubes with the diffuse image's sampler.
    sampler: SamplerKey,
}

type TileCameraEnvironments<'w, 's> = Query<
    'w,
    's,
    (
        RenderEntity,
        Option<&'static Skybox>,
        Option<&'static EnvironmentMapLight>,
        &'static GlobalTransform,
        &'static VisibleEntities,
    ),
    With<TileDeferred>,
>;

/// A tile camera's irradiance volumes as the lighting subpass reads them, on the render-world
/// camera: what Bevy's `gather_light_probes::<IrradianceVolume>` keeps of them (Bevy's own list
/// is private), and the voxels Bevy binds where binding arrays are not usable (the nearest
/// volume's).
#[derive(Component, Clone, Debug)]
pub(crate) struct TileIrradianceVolumes {
    voxels: AssetId<Image>,
    /// The voxels' own sampler (Bevy binds the image's).
    sampler: SamplerKey,
    volumes: Vec<GpuIrradianceVolume>,
}

type SceneIrradianceVolumes<'w, 's> = Query<
    'w,
    's,
    (
        &'static GlobalTransform,
        &'static LightProbe,
        &'static IrradianceVolume,
    ),
>;

/// The irradiance volumes Bevy gives a view (`gather_light_probes`): those in its view whose
/// voxels are uploaded, nearest to the camera first, at most 8; with the nearest one's voxels.
fn view_irradiance_volumes(
    camera: &GlobalTransform,
    visible: &VisibleEntities,
    volumes: &SceneIrradianceVolumes,
    uploaded: impl Fn(AssetId<Image>) -> bool,
) -> Option<(AssetId<Image>, Vec<GpuIrradianceVolume>)> {
    let mut found: Vec<(FloatOrd, AssetId<Image>, GpuIrradianceVolume)> = visible
        .get(std::any::TypeId::of::<ClusterVisibilityClass>())
        .iter()
        .filter_map(|&entity| volumes.get(entity).ok())
        .filter(|(_, _, volume)| uploaded(volume.voxels.id()))
        .map(|(transform, probe, volume)| {
            let world_from_light = transform.affine();
            let distance =
                (world_from_light.translation - camera.translation_vec3a()).length_squared();
            let gpu = gpu_irradiance_volume(&world_from_light, probe, volume);
            (FloatOrd(distance), volume.voxels.id(), gpu)
        })
        .collect();
    // Bevy's `sort_by_cached_key` is stable too: equally distant volumes keep the view's order.
    found.sort_by_key(|(distance, ..)| *distance);
    found.truncate(MAX_IRRADIANCE_VOLUMES);
    let voxels = found.first()?.1;
    Some((voxels, found.into_iter().map(|(.., gpu)| gpu).collect()))
}

/// What Bevy's `RenderLightProbe` holds of a volume that its shader reads: the transposed
/// inverse of the probe's transform (three rows), the falloff and the intensity.
fn gpu_irradiance_volume(
    world_from_light: &bevy::math::Affine3A,
    probe: &LightProbe,
    volume: &IrradianceVolume,
) -> GpuIrradianceVolume {
    let transposed = Mat4::from(world_from_light.inverse()).transpose();
    GpuIrradianceVolume {
        light_from_world_transposed: [
            transposed.x_axis.to_array(),
            transposed.y_axis.to_array(),
            transposed.z_axis.to_array(),
        ],
        falloff_intensity: probe.falloff.extend(volume.intensity).to_array(),
    }
}

/// Reads what the tile cameras' skyboxes and environment maps need beyond Bevy's render-world
/// data: the images' sampler settings (the render world's `GpuImage` holds only the wgpu
/// sampler made from them), the environment map itself, and the irradiance volumes in view.
/// (A `GeneratedEnvironmentMapLight` is drawn: bevy_pbr inserts an `EnvironmentMapLight` beside
/// it whose cubes its compute passes fill in the `Render` schedule, outside any camera's
/// schedule, and the tile path samples them as any environment map. Reflection probes are not
/// drawn: `find_missing` reports them.)
pub(crate) fn extract_environment(
    mut commands: Commands,
    cameras: Extract<TileCameraEnvironments>,
    volumes: Extract<SceneIrradianceVolumes>,
    images: Extract<Res<Assets<Image>>>,
    uploaded: Res<RenderAssets<GpuImage>>,
    default_sampler: Option<Res<DefaultImageSamplerDescriptor>>,
    mut samplers: ResMut<TileEnvironmentSamplers>,
) {
    samplers.0.clear();
    let default_sampler = default_sampler.as_deref().map(|d| &d.0);
    let sampler_of = |handle: &Handle<Image>| {
        images
            .get(handle)
            .map(|image| SamplerKey::for_image(&image.sampler, default_sampler))
    };
    for (render_entity, skybox, environment_map, transform, visible) in &cameras {
        if let Some(handle) = skybox.and_then(|skybox| skybox.image.as_ref())
            && let Some(key) = sampler_of(handle)
        {
            samplers.0.insert(handle.id(), key);
        }
        let mut entity = commands.entity(render_entity);
        match environment_map {
            Some(map) => {
                entity.try_insert(TileEnvironmentMap {
                    diffuse: map.diffuse_map.id(),
                    specular: map.specular_map.id(),
                    intensity: map.intensity,
                    rotation: map.rotation,
                    sampler: sampler_of(&map.diffuse_map).unwrap_or_else(SamplerKey::bevy_default),
                });
            }
            None => {
                entity.try_remove::<TileEnvironmentMap>();
            }
        }
        let in_view = view_irradiance_volumes(transform, visible, &volumes, |id| {
            uploaded.get(id).is_some()
        });
        match in_view {
            Some((voxels, volumes)) => {
                let key = images
                    .get(voxels)
                    .map(|image| SamplerKey::for_image(&image.sampler, default_sampler));
                entity.try_insert(TileIrradianceVolumes {
                    voxels,
                    sampler: key.unwrap_or_else(SamplerKey::bevy_default),
                    volumes,
                });
            }
            None => {
                entity.try_remove::<TileIrradianceVolumes>();
            }
        }
    }
}

/// Whether Bevy samples light probes from texture binding arrays on `device`
/// (`MULTIPLE_LIGHT_PROBES_IN_ARRAY`): bevy_pbr's `binding_arrays_are_usable`, which is private.
/// Its other two conditions, where Bevy turns binding arrays off, are not checked: bevy_pbr's
/// `shader_format_glsl` feature (this crate does not enable it) and an Adreno 610 or older; on
/// such an app or device the tile path reports more than needed, never less.
pub(crate) fn bevy_uses_binding_arrays(device: &bevy::render::renderer::RenderDevice) -> bool {
    // bevy_pbr's STANDARD_MATERIAL_FRAGMENT_SHADER_MIN_TEXTURE_BINDINGS + MAX_VIEW_LIGHT_PROBES.
    const ELEMENTS: u32 = 16 + 8;
    let limits = device.limits();
    limits.max_binding_array_elements_per_shader_stage >= ELEMENTS
        && limits.max_binding_array_sampler_elements_per_shader_stage >= ELEMENTS
        && device.features().contains(
            bevy::render::settings::WgpuFeatures::TEXTURE_BINDING_ARRAY
                | bevy::render::settings::WgpuFeatures::SAMPLED_TEXTURE_AND_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING,
        )
}

/// A texture one of the view's descriptor sets samples: Bevy's image and the sampler to read it
/// with.
pub(crate) struct ViewTexture<'a> {
    pub(crate) image: &'a GpuImage,
    pub(crate) sampler: vk::Sampler,
}

/// What the view's environment is made of in the render world (the scene's images, Bevy's
/// fallback cube, the extracted samplers), borrowed from the pass's scene parameters.
#[derive(Clone, Copy)]
pub(crate) struct EnvironmentSources<'a> {
    pub(crate) images: &'a RenderAssets<GpuImage>,
    pub(crate) fallback_cube: &'a GpuImage,
    /// Bevy's fallback 3D image, bound where the view has no irradiance volume.
    pub(crate) fallback_volume: &'a GpuImage,
    pub(crate) samplers: &'a TileEnvironmentSamplers,
}

/// What the view draws around its surfaces this frame.
pub(crate) struct ViewEnvironment<'a> {
    /// The skybox cube; Bevy's fallback cube when the camera draws none (the binding must hold
    /// a cube either way).
    pub(crate) skybox: ViewTexture<'a>,
    /// The environment map's diffuse and specular cubes (the fallback cube without one).
    environment_maps: [ViewTexture<'a>; 2],
    /// The voxels of the view's nearest irradiance volume (the fallback 3D image without one).
    irradiance_volume: ViewTexture<'a>,
    /// `GpuView::irradiance_volumes`, nearest first (none without voxels to sample).
    irradiance_volumes: Vec<GpuIrradianceVolume>,
    /// `GpuView::environment` and `environment_rotation`, zero without an environment map.
    environment_uniform: [[f32; 4]; 2],
    /// `GpuView::skybox` and `skybox_transform`, when the camera draws a skybox.
    skybox_uniform: Option<([f32; 4], [[f32; 4]; 4])>,
    /// `GpuView::fog_*`, mode 0 without fog.
    fog: GpuFogFields,
}

/// The fog fields of `GpuView`: base colour, directional light colour, (be, exponent),
/// (bi, mode).
type GpuFogFields = [[f32; 4]; 4];

impl<'a> ViewEnvironment<'a> {
    /// The camera's skybox, if it has one Bevy would draw, with the view's `exposure`.
    pub(crate) fn gather(
        mut samplers: SamplerCache,
        scene: EnvironmentSources<'a>,
        skybox: Option<&Skybox>,
        fog: Option<&DistanceFog>,
        environment_map: Option<&TileEnvironmentMap>,
        irradiance_volumes: Option<&TileIrradianceVolumes>,
        exposure: f32,
    ) -> TileResult<Self> {
        let drawn = skybox.and_then(|skybox| Some((skybox, usable_skybox_image(skybox, scene)?)));
        let (image, key) = match drawn {
            Some((_, (id, image))) => {
                let samplers = &scene.samplers.0;
                let key = samplers.get(&id).copied();
                (image, key.unwrap_or_else(SamplerKey::bevy_default))
            }
            None => (scene.fallback_cube, SamplerKey::bevy_default()),
        };
        let sampler = step("creating the skybox sampler", samplers.get(&key))?;
        let fallback = scene.fallback_cube;
        let maps =
            environment_map.and_then(|map| Some((map, usable_environment_maps(map, scene)?)));
        let ((diffuse, specular), key) = match maps {
            Some((map, images)) => (images, map.sampler),
            None => ((fallback, fallback), SamplerKey::bevy_default()),
        };
        let map_sampler = step("creating the environment map sampler", samplers.get(&key))?;
        let volumes = irradiance_volumes
            .and_then(|volumes| Some((volumes, usable_voxels(volumes.voxels, scene)?)));
        let (voxels, key) = match volumes {
            Some((volumes, image)) => (image, volumes.sampler),
            None => (scene.fallback_volume, SamplerKey::bevy_default()),
        };
        let voxel_sampler = step("creating the irradiance volume sampler", samplers.get(&key))?;
        Ok(Self {
            irradiance_volume: ViewTexture {
                image: voxels,
                sampler: voxel_sampler,
            },
            irradiance_volumes: volumes
                .map(|(volumes, _)| volumes.volumes.clone())
                .unwrap_or_default(),
            skybox: ViewTexture { image, sampler },
            environment_maps: [diffuse, specular].map(|image| ViewTexture {
                image,
                sampler: map_sampler,
            }),
            environment_uniform: maps.map_or_else(Default::default, |(map, (_, specular))| {
                environment_uniform(map, specular.texture.mip_level_count())
            }),
            skybox_uniform: drawn.map(|(skybox, _)| skybox_uniform(skybox, exposure)),
            fog: fog.map(gpu_fog).unwrap_or_default(),
        })
    }

    /// The textures the view's sets sample: the skybox, environment diffuse and specular cubes,
    /// and the irradiance volume's voxels.
    pub(crate) fn textures(&self) -> [&ViewTexture<'a>; 4] {
        let [diffuse, specular] = &self.environment_maps;
        [&self.skybox, diffuse, specular, &self.irradiance_volume]
    }

    /// Writes the skybox's, the environment map's and the fog's uniforms into the view's (zero
    /// where the camera has none: not drawn).
    pub(crate) fn write_uniforms(&self, gpu_view: &mut GpuView) {
        let [environment, rotation] = self.environment_uniform;
        gpu_view.environment = environment;
        gpu_view.environment_rotation = rotation;
        let count = self.irradiance_volumes.len().min(MAX_IRRADIANCE_VOLUMES);
        gpu_view.irradiance_volume_count = [count as u32, 0, 0, 0];
        gpu_view.irradiance_volumes[..count].copy_from_slice(&self.irradiance_volumes[..count]);
        let (skybox, transform) = self.skybox_uniform.unwrap_or_default();
        gpu_view.skybox = skybox;
        gpu_view.skybox_transform = transform;
        let [base_color, light_color, be_exponent, bi_mode] = self.fog;
        gpu_view.fog_base_color = base_color;
        gpu_view.fog_directional_light_color = light_color;
        gpu_view.fog_be_exponent = be_exponent;
        gpu_view.fog_bi_mode = bi_mode;
    }
}

/// The skybox's image, if Bevy would draw it: set, loaded, and viewed as a cube (Bevy skips any
/// other view, with a warning of its own, `sanity_check_skybox_image_and_warn`).
fn usable_skybox_image<'a>(
    skybox: &Skybox,
    scene: EnvironmentSources<'a>,
) -> Option<(AssetId<Image>, &'a GpuImage)> {
    let id = skybox.image.as_ref()?.id();
    let image = scene.images.get(id)?;
    let dimension = image
        .texture_view_descriptor
        .as_ref()
        .and_then(|descriptor| descriptor.dimension);
    (dimension == Some(TextureViewDimension::Cube)).then_some((id, image))
}

/// The environment map's cubes, if Bevy would light with them: both loaded (Bevy's
/// `EnvironmentMapLight::id` needs both) and viewed as cubes.
fn usable_environment_maps<'a>(
    map: &TileEnvironmentMap,
    scene: EnvironmentSources<'a>,
) -> Option<(&'a GpuImage, &'a GpuImage)> {
    let cube = |id: AssetId<Image>| {
        let image = scene.images.get(id)?;
        let dimension = image.texture_view_descriptor.as_ref()?.dimension;
        (dimension == Some(TextureViewDimension::Cube)).then_some(image)
    };
    Some((cube(map.diffuse)?, cube(map.specular)?))
}

/// The irradiance volume's voxels, if Bevy would sample them: uploaded and a 3D texture.
fn usable_voxels<'a>(id: AssetId<Image>, scene: EnvironmentSources<'a>) -> Option<&'a GpuImage> {
    let image = scene.images.get(id)?;
    (image.texture_descriptor.dimension == TextureDimension::D3).then_some(image)
}

/// What Bevy's light-probe uniform holds for the view's environment map: intensity, the
/// specular map's smallest mip level (its roughness-1 level), and the inverse rotation.
fn environment_uniform(map: &TileEnvironmentMap, specular_mips: u32) -> [[f32; 4]; 2] {
    let smallest_mip = specular_mips.saturating_sub(1) as f32;
    [
        [map.intensity, smallest_mip, 1.0, 0.0],
        map.rotation.inverse().to_array(),
    ]
}

/// What Bevy's `extract_skybox` puts in `SkyboxUniforms`: brightness times exposure, and the
/// inverse rotation as a matrix (x: brightness, y: 1 = draw it).
pub(crate) fn skybox_uniform(skybox: &Skybox, exposure: f32) -> ([f32; 4], [[f32; 4]; 4]) {
    let transform = Transform::from_rotation(skybox.rotation.inverse()).to_matrix();
    (
        [skybox.brightness * exposure, 1.0, 0.0, 0.0],
        transform.to_cols_array_2d(),
    )
}

/// What Bevy's `prepare_fog` writes into `GpuFog` for `fog`, as the view's fog fields.
pub(crate) fn gpu_fog(fog: &DistanceFog) -> GpuFogFields {
    let (mode, be, bi) = match fog.falloff {
        FogFalloff::Linear { start, end } => {
            (fog_mode::LINEAR, Vec3::new(start, end, 0.0), Vec3::ZERO)
        }
        FogFalloff::Exponential { density } => (
            fog_mode::EXPONENTIAL,
            Vec3::new(density, 0.0, 0.0),
            Vec3::ZERO,
        ),
        FogFalloff::ExponentialSquared { density } => (
            fog_mode::EXPONENTIAL_SQUARED,
            Vec3::new(density, 0.0, 0.0),
            Vec3::ZERO,
        ),
        FogFalloff::Atmospheric {
            extinction,
            inscattering,
        } => (fog_mode::ATMOSPHERIC, extinction, inscattering),
    };
    [
        LinearRgba::from(fog.color).to_f32_array(),
        LinearRgba::from(fog.directional_light_color).to_f32_array(),
        be.extend(fog.directional_light_exponent).to_array(),
        bi.extend(mode).to_array(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skybox_uniform_is_bevys() {
        let skybox = Skybox {
            image: None,
            brightness: 1000.0,
            rotation: Quat::from_rotation_y(0.7),
        };
        let (params, transform) = skybox_uniform(&skybox, 0.5);
        assert_eq!(params, [500.0, 1.0, 0.0, 0.0]);
        let rotated = Mat4::from_cols_array_2d(&transform).transform_vector3(Vec3::X);
        let expected = Quat::from_rotation_y(-0.7) * Vec3::X;
        assert!(rotated.abs_diff_eq(expected, 1e-6), "{rotated}");
    }

    #[test]
    fn fog_fields_are_bevys_gpu_fog() {
        let fog = DistanceFog {
            color: Color::linear_rgba(0.1, 0.2, 0.3, 0.9),
            directional_light_color: Color::linear_rgba(1.0, 0.5, 0.0, 0.4),
            directional_light_exponent: 12.0,
            falloff: FogFalloff::Linear {
                start: 5.0,
                end: 20.0,
            },
        };
        let [base, light, be, bi] = gpu_fog(&fog);
        assert_eq!(base, [0.1, 0.2, 0.3, 0.9]);
        assert_eq!(light, [1.0, 0.5, 0.0, 0.4]);
        assert_eq!(be, [5.0, 20.0, 0.0, 12.0]);
        assert_eq!(bi[3], fog_mode::LINEAR);
        let atmospheric = DistanceFog {
            falloff: FogFalloff::Atmospheric {
                extinction: Vec3::new(0.1, 0.2, 0.3),
                inscattering: Vec3::new(0.4, 0.5, 0.6),
            },
            ..fog
        };
        let [_, _, be, bi] = gpu_fog(&atmospheric);
        assert_eq!(be, [0.1, 0.2, 0.3, 12.0]);
        assert_eq!(bi, [0.4, 0.5, 0.6, fog_mode::ATMOSPHERIC]);
        // No fog: mode 0, which fog.glsl leaves alone.
        assert_eq!(GpuFogFields::default()[3][3], fog_mode::OFF);
    }
}
