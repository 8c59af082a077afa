//! Light probes (`LightProbe` entities, issue 15): reflection probes (`LightProbe` +
//! `EnvironmentMapLight`) and irradiance volumes (`LightProbe` + `IrradianceVolume`).
//!
//! The tile path lights with the camera's own `EnvironmentMapLight`, not with reflection
//! probes: where Bevy samples them, each in a tile camera's view is listed in its `TileMissing`,
//! so that an `Auto` camera falls back to Bevy's `Core3d` while one is in view; where Bevy
//! ignores them (no binding arrays), the tile camera ignores them too and stays. It draws irradiance volumes as Bevy does
//! without binding arrays (all of the view's volumes sampled from the nearest one's voxels;
//! where Bevy has binding arrays and the volumes have several textures, they are listed).
//!
//! What Bevy itself draws depends on the device: bevy_pbr 0.19.1 samples reflection probes only
//! where texture binding arrays are usable (`binding_arrays_are_usable`: the features
//! `TEXTURE_BINDING_ARRAY` and `SAMPLED_TEXTURE_AND_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING`
//! and 24 array elements per stage; its shaders then get `MULTIPLE_LIGHT_PROBES_IN_ARRAY`).
//! Elsewhere `compute_radiances` reads the view's environment map only, and reflection probes
//! change nothing. Mesa lavapipe 22.3 has no descriptor indexing
//! (`shaderSampledImageArrayDynamicIndexing = false`), so Bevy ignores reflection probes there,
//! which [`what_bevy_draws_of_light_probes_on_this_device`] checks on the frames. Irradiance
//! volumes it draws on every Vulkan device (one 3D texture where arrays are not usable).

use crate::{
    content::{
        MIN_PSNR, MIN_PSNR_MSAA, Region, RegionCheck, add_image, add_material, add_mesh,
        assert_content_matches_to, distinct_colours, environment_cube, headless, spawn,
        spawn_sphere_grid,
    },
    harness::{Frame, GpuTest, HeadlessApp, image_compare::psnr},
    scenes::fidelity::{FidelityCamera, FidelityCase, FidelityScene, stage_origin},
};
use bevy::{
    asset::RenderAssetUsages,
    light::{IrradianceVolume, LightProbe},
    prelude::*,
    render::{
        render_resource::{
            Extent3d, TextureDimension, TextureFormat, TextureViewDescriptor, TextureViewDimension,
        },
        renderer::RenderDevice,
        settings::WgpuFeatures,
        view::Msaa,
    },
};
use bevy_tile_deferred::{
    TileDeferred,
    tiers::{MISSING_RETURN_FRAMES, RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::{MissingFeature, TileMissing},
};

/// Where the sphere grid is: stage 0, its centre 1.4 above the ground.
fn grid_centre() -> Vec3 {
    stage_origin(0) + Vec3::new(0.0, 1.4, 0.0)
}

/// The front camera on the grid (the environment-map scene's).
fn front_camera() -> FidelityCamera {
    let centre = grid_centre();
    FidelityCamera::looking(centre + Vec3::new(0.0, 0.6, 4.6), centre)
}

/// The reflection probe's box: around the grid's two left columns (x -1.56 and -0.78), all
/// rows, nothing of the three right columns.
fn probe_transform() -> Transform {
    Transform::from_translation(grid_centre() + Vec3::new(-1.17, 0.0, 0.0))
        .with_scale(Vec3::new(1.5, 3.2, 1.6))
}

/// In the images, the two left columns (inside the probe's box) and the two right ones
/// (outside it).
const INSIDE_PROBE: Region = Region {
    x0: 0.2,
    y0: 0.15,
    x1: 0.43,
    y1: 0.88,
};
const OUTSIDE_PROBE: Region = Region {
    x0: 0.57,
    y0: 0.15,
    x1: 0.8,
    y1: 0.88,
};

/// A cube map of one colour (linear `rgb`) with `mips` levels of `size`, sRGB: what the
/// reflection probe holds, far from the view's sky-and-ground map.
fn solid_cube(size: u32, mips: u32, rgb: Vec3) -> Image {
    let srgb = Color::linear_rgb(rgb.x, rgb.y, rgb.z).to_srgba();
    let texel = [srgb.red, srgb.green, srgb.blue].map(|v| (v * 255.0).round() as u8);
    let mut data = Vec::new();
    for _face in 0..6 {
        for mip in 0..mips {
            let level = (size >> mip).max(1);
            for _ in 0..level * level {
                data.extend(texel);
                data.push(255);
            }
        }
    }
    let mut image = Image::new(
        Extent3d {
            width: size,
            height: size,
            depth_or_array_layers: 6,
        },
        TextureDimension::D2,
        vec![0; (size * size * 6 * 4) as usize],
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.data = Some(data);
    image.texture_descriptor.mip_level_count = mips;
    image.texture_view_descriptor = Some(TextureViewDescriptor {
        dimension: Some(TextureViewDimension::Cube),
        ..default()
    });
    image
}

/// An irradiance volume's voxels in bevy_pbr's layout (a 3D texture of 2 x 2 x 2 ambient cubes:
/// width x, height 2 y (positive then negative), depth 3 z (the x, y, z faces)), every face a
/// warm orange.
fn orange_voxels() -> Image {
    let (width, height, depth) = (2, 4, 6);
    let data = [230u8, 110, 30, 255].repeat(width * height * depth);
    Image::new(
        Extent3d {
            width: width as u32,
            height: height as u32,
            depth_or_array_layers: depth as u32,
        },
        TextureDimension::D3,
        data,
        TextureFormat::Rgba8Unorm,
        RenderAssetUsages::default(),
    )
}

/// The scene: the roughness x metallic sphere grid under a sun. The cameras get the view's
/// environment map (`view_map`).
fn spawn_grid(world: &mut World) {
    spawn_sphere_grid(world, grid_centre());
    world.spawn((
        DirectionalLight {
            illuminance: 2_000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_translation(stage_origin(0) + Vec3::new(2.0, 5.0, 4.0))
            .looking_at(stage_origin(0), Vec3::Y),
    ));
}

/// The view's environment map (sky over ground, the environment-map scene's cubes).
fn view_map(world: &mut World) -> EnvironmentMapLight {
    EnvironmentMapLight {
        diffuse_map: add_image(world, environment_cube(8, 1, 0.9)),
        specular_map: add_image(world, environment_cube(32, 6, 0.0)),
        intensity: 1_200.0,
        ..default()
    }
}

/// The reflection probe's environment map: a solid magenta cube, brighter than the view's.
fn probe_map(world: &mut World) -> EnvironmentMapLight {
    let rgb = Vec3::new(0.9, 0.05, 0.6);
    EnvironmentMapLight {
        diffuse_map: add_image(world, solid_cube(8, 1, rgb)),
        specular_map: add_image(world, solid_cube(32, 6, rgb)),
        intensity: 2_500.0,
        ..default()
    }
}

/// Whether Bevy samples reflection probes on this app's device: bevy_pbr's
/// `binding_arrays_are_usable` (16 standard-material textures + 8 probes per stage; this crate
/// builds Bevy without `shader_format_glsl`, and the test devices are no Adreno).
fn bevy_draws_reflection_probes(app: &App) -> bool {
    let device = app.world().resource::<RenderDevice>();
    let limits = device.limits();
    limits.max_binding_array_elements_per_shader_stage >= 24
        && limits.max_binding_array_sampler_elements_per_shader_stage >= 24
        && device.features().contains(
            WgpuFeatures::TEXTURE_BINDING_ARRAY
                | WgpuFeatures::SAMPLED_TEXTURE_AND_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING,
        )
}

fn decision(headless: &HeadlessApp, camera: Entity) -> TierDecision {
    headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .expect("a tile camera has a decision")
        .clone()
}

fn missing(headless: &HeadlessApp, camera: Entity) -> Vec<MissingFeature> {
    headless
        .app
        .world()
        .get::<TileMissing>(camera)
        .map(|m| m.items.clone())
        .unwrap_or_default()
}

/// A reflection probe in an `Auto` tile camera's view, where Bevy draws reflection probes:
/// listed in `TileMissing` by entity and name, and the camera falls back to `Core3d` while it is
/// in view; where Bevy ignores them (lavapipe), nothing is listed and the camera stays. Out of
/// view (frustum-culled), nothing is listed and the tile path draws. An irradiance volume (one
/// texture) is drawn by the tile path: not listed, no fall back.
#[test]
fn light_probes_make_auto_fall_back_only_where_bevy_draws_them() {
    let _test = GpuTest::start("light_probes_make_auto_fall_back_only_where_bevy_draws_them");
    let mut headless = headless();
    let world = headless.app.world_mut();
    spawn_grid(world);
    let environment = view_map(world);
    let reflection = probe_map(world);
    let far_away = Transform::from_xyz(400.0, 0.0, 0.0);
    let probe = world
        .spawn((
            Name::new("left reflection probe"),
            LightProbe::default(),
            reflection,
            far_away,
        ))
        .id();
    let camera = headless.spawn_camera((
        front_camera().bundle(),
        environment,
        TileDeferred::default(),
    ));
    headless.render(3);
    assert_eq!(
        decision(&headless, camera).tier,
        RenderTier::TileDeferred,
        "a probe out of view changes nothing"
    );
    assert_eq!(missing(&headless, camera), []);

    // Into view: listed, and `Auto` falls back, only where Bevy draws reflection probes;
    // elsewhere Bevy's picture has no probe, and the tile camera stays.
    *headless
        .app
        .world_mut()
        .get_mut::<Transform>(probe)
        .unwrap() = probe_transform();
    headless.render(3);
    if !bevy_draws_reflection_probes(&headless.app) {
        let stays = decision(&headless, camera);
        assert_eq!(stays.tier, RenderTier::TileDeferred, "{stays:?}");
        assert_eq!(missing(&headless, camera), []);
    } else {
        let fell = decision(&headless, camera);
        assert_eq!(fell.tier, RenderTier::Forward, "{fell:?}");
        assert!(
            fell.summary().contains("reflection probe"),
            "{}",
            fell.summary()
        );
        let listed = missing(&headless, camera);
        assert!(
            listed.iter().any(|m| m.entity == probe
                && m.name.as_deref() == Some("left reflection probe")
                && m.what.contains("reflection probe")),
            "{listed:?}"
        );
    }

    // Out of view again: back to the tile path after the hysteresis.
    *headless
        .app
        .world_mut()
        .get_mut::<Transform>(probe)
        .unwrap() = far_away;
    for _ in 0..MISSING_RETURN_FRAMES + 2 {
        headless.update();
    }
    assert_eq!(decision(&headless, camera).tier, RenderTier::TileDeferred);
    assert_eq!(missing(&headless, camera), []);

    // An irradiance volume over the whole grid.
    let voxels = add_image(headless.app.world_mut(), orange_voxels());
    let volume = headless
        .app
        .world_mut()
        .spawn((
            Name::new("grid irradiance volume"),
            LightProbe::default(),
            IrradianceVolume {
                voxels,
                intensity: 3_000.0,
                ..default()
            },
            Transform::from_translation(grid_centre()).with_scale(Vec3::new(5.0, 3.2, 1.6)),
        ))
        .id();
    headless.render(3);
    let stays = decision(&headless, camera);
    assert_eq!(stays.tier, RenderTier::TileDeferred, "{stays:?}");
    let listed = missing(&headless, camera);
    assert!(
        !listed.iter().any(|m| m.entity == volume),
        "the tile path draws the volume: {listed:?}"
    );
}

/// Bevy forward on this device, without and with each kind of probe (no tile camera): where
/// binding arrays are not usable (lavapipe), a reflection probe changes no pixel, though its
/// magenta map would change the left columns beyond the fidelity bar (the picture of the grid
/// under the probe's map as the view's, which is what Bevy draws inside the probe where it
/// samples probes). An irradiance volume changes the picture on every device (the tile path
/// draws it: [`content_irradiance_volumes`]). This is why the tile path reports reflection
/// probes: the fallback is Bevy's own picture on every device.
#[test]
fn what_bevy_draws_of_light_probes_on_this_device() {
    let _test = GpuTest::start("what_bevy_draws_of_light_probes_on_this_device");
    let mut headless = headless();
    headless.use_cpu_light_clustering();
    let draws_probes = bevy_draws_reflection_probes(&headless.app);
    let world = headless.app.world_mut();
    spawn_grid(world);
    let environment = view_map(world);
    let reflection = probe_map(world);
    let camera = headless.spawn_camera((front_camera().bundle(), environment.clone()));
    let plain = headless.render(4);
    assert!(
        distinct_colours(&INSIDE_PROBE.crop(&plain)) > 20,
        "the grid is drawn"
    );

    let probe = headless
        .app
        .world_mut()
        .spawn((LightProbe::default(), reflection.clone(), probe_transform()))
        .id();
    let with_probe = headless.render(4);
    let inside = psnr(&INSIDE_PROBE.crop(&plain), &INSIDE_PROBE.crop(&with_probe));
    let whole = psnr(&plain, &with_probe);
    eprintln!(
        "Bevy forward, reflection probe vs none: binding arrays usable {draws_probes}; inside the \
         probe {inside:.2} dB, whole frame {whole:.2} dB"
    );
    if draws_probes {
        assert!(
            inside < MIN_PSNR,
            "Bevy samples the probe here: {inside:.2} dB"
        );
    } else {
        assert!(
            inside >= 60.0 && whole >= 60.0,
            "Bevy ignores reflection probes without binding arrays: {inside:.2} / {whole:.2} dB"
        );
    }

    // The grid under the probe's map as the view's: what Bevy draws inside the probe where it
    // samples probes (the probe's weight is 1 inside its box without falloff).
    headless.app.world_mut().entity_mut(probe).despawn();
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(reflection);
    let under_probe_map = headless.render(4);
    let probe_map_difference = psnr(
        &INSIDE_PROBE.crop(&plain),
        &INSIDE_PROBE.crop(&under_probe_map),
    );
    eprintln!("Bevy forward, the probe's map as the view's: {probe_map_difference:.2} dB");
    assert!(
        probe_map_difference < 25.0,
        "the probe's map would show: {probe_map_difference:.2} dB"
    );

    // An irradiance volume over the grid, back under the view's map.
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(environment);
    let voxels = add_image(headless.app.world_mut(), orange_voxels());
    headless.app.world_mut().spawn((
        LightProbe::default(),
        IrradianceVolume {
            voxels,
            intensity: 3_000.0,
            ..default()
        },
        Transform::from_translation(grid_centre()).with_scale(Vec3::new(5.0, 3.2, 1.6)),
    ));
    let with_volume = headless.render(4);
    let volume_difference = psnr(&plain, &with_volume);
    eprintln!("Bevy forward, irradiance volume vs none: whole frame {volume_difference:.2} dB");
    assert!(
        volume_difference < 30.0,
        "Bevy samples irradiance volumes on every Vulkan device: {volume_difference:.2} dB"
    );
}

// ------------------------------------------------------------------------------------------
// A tile camera forced onto the tile path with a reflection probe in view: the same picture as
// Bevy forward on a device where Bevy ignores reflection probes.

const REFLECTION_PROBE_SCENE: FidelityScene = FidelityScene {
    name: "reflection_probe",
    spawn: spawn_reflection_probe_scene,
    cases: reflection_probe_cases,
};

fn reflection_probe_cases() -> Vec<FidelityCase> {
    let mut msaa = front_camera();
    msaa.msaa = Some(Msaa::Sample4);
    vec![
        FidelityCase::single("reflection_probe", front_camera()),
        FidelityCase::single("reflection_probe_msaa", msaa),
    ]
}

fn spawn_reflection_probe_scene(world: &mut World) {
    spawn_grid(world);
    let environment = view_map(world);
    let reflection = probe_map(world);
    world.spawn((
        Name::new("left reflection probe"),
        LightProbe::default(),
        reflection,
        probe_transform(),
    ));
    world.add_observer(move |add: On<Add, Camera3d>, mut commands: Commands| {
        commands.entity(add.entity).insert(environment.clone());
    });
    // Forced tile tiers: an `Auto` camera would fall back to Bevy for the probe
    // (`render_scene_in` checks that every tile camera drew with a tile tier).
    world.add_observer(
        |add: On<Add, TileDeferred>, mut commands: Commands, msaa: Query<&Msaa>| {
            let tier = match msaa.get(add.entity) {
                Ok(Msaa::Sample4) => RenderTier::TileDeferredMsaa { samples: 4 },
                _ => RenderTier::TileDeferred,
            };
            commands.entity(add.entity).insert(TileDeferred {
                tier: TierSetting::Force(tier),
                ..default()
            });
        },
    );
}

/// A tile camera forced onto the tile path (1x and 4x MSAA) with a reflection probe over the
/// grid's left columns, against Bevy forward: on a device where Bevy ignores reflection probes
/// (lavapipe) both draw the view's environment map everywhere, whole frame and inside and
/// outside the probe's box (a tile path that drew the probe would fail inside it: see
/// [`what_bevy_draws_of_light_probes_on_this_device`]). Where Bevy samples probes the tile
/// path does not draw what Bevy draws, which `TileMissing` reports; the comparison is skipped.
#[test]
fn content_reflection_probe_forced_tile_matches_bevy() {
    let _test = GpuTest::start("content_reflection_probe_forced_tile_matches_bevy");
    let mut headless = headless();
    // The render device is there once the app has finished its setup.
    headless.update();
    if bevy_draws_reflection_probes(&headless.app) {
        eprintln!(
            "skipped: Bevy samples reflection probes on this device, the tile path reports them"
        );
        return;
    }
    let lit = |f: &Frame| distinct_colours(f) >= 30;
    let checks: Vec<RegionCheck> = reflection_probe_cases()
        .iter()
        .flat_map(|case| {
            [
                (INSIDE_PROBE, "the grid's left columns, inside the probe"),
                (OUTSIDE_PROBE, "the grid's right columns, outside the probe"),
            ]
            .map(|(region, shows)| RegionCheck {
                case: case.name,
                region,
                shows,
                visible: lit,
            })
        })
        .collect();
    assert_content_matches_to(headless, &REFLECTION_PROBE_SCENE, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

// ------------------------------------------------------------------------------------------
// Irradiance volumes, drawn by the tile path: against Bevy forward.

/// Voxels of `res` ambient cubes in bevy_pbr's atlas layout (width x, height y with the
/// positive faces above the negative ones, depth z for the x, y and z faces, one after the
/// other), each texel a different colour from its voxel, axis and sign (`tint` mixes them).
fn varied_voxels(res: UVec3, tint: Vec3) -> Image {
    let (width, height, depth) = (res.x, res.y * 2, res.z * 3);
    let mut data = Vec::with_capacity((width * height * depth * 4) as usize);
    for z in 0..depth {
        for y in 0..height {
            for x in 0..width {
                let axis = (z / res.z) as f32;
                let negative = if y >= res.y { 1.0 } else { 0.0 };
                let voxel = Vec3::new(
                    x as f32 / (res.x - 1).max(1) as f32,
                    (y % res.y) as f32 / (res.y - 1).max(1) as f32,
                    (z % res.z) as f32 / (res.z - 1).max(1) as f32,
                );
                let rgb = Vec3::new(
                    0.15 + 0.7 * voxel.x,
                    0.2 + 0.25 * axis + 0.3 * voxel.y,
                    0.85 - 0.5 * negative - 0.2 * voxel.z,
                )
                .lerp(tint, 0.35);
                data.extend(
                    rgb.to_array()
                        .map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8),
                );
                data.push(255);
            }
        }
    }
    Image::new(
        Extent3d {
            width,
            height,
            depth_or_array_layers: depth,
        },
        TextureDimension::D3,
        data,
        TextureFormat::Rgba8Unorm,
        RenderAssetUsages::default(),
    )
}

/// In the front image, the inside of the translucent sphere.
const GLASS: Region = Region {
    x0: 0.27,
    y0: 0.57,
    x1: 0.34,
    y1: 0.68,
};

const IRRADIANCE_VOLUMES: FidelityScene = FidelityScene {
    name: "irradiance_volumes",
    spawn: spawn_irradiance_volumes,
    cases: irradiance_volume_cases,
};

fn irradiance_volume_cases() -> Vec<FidelityCase> {
    let mut msaa = front_camera();
    msaa.msaa = Some(Msaa::Sample4);
    let centre = grid_centre();
    let mut side = front_camera();
    side.transform =
        Transform::from_translation(centre + Vec3::new(-3.0, 2.0, 3.4)).looking_at(centre, Vec3::Y);
    vec![
        FidelityCase::single("irradiance_volumes", front_camera()),
        FidelityCase::single("irradiance_volumes_msaa", msaa),
        FidelityCase::single("irradiance_volumes_side", side),
    ]
}

/// The grid under the view's environment map with two irradiance volumes: a sharp one around
/// the two left columns (nearest to the front camera: Bevy binds its voxels for both), and a
/// larger one with a 30% falloff around the right half (voxels of its own, which Bevy does not
/// sample without binding arrays). A translucent white sphere in front of the left columns,
/// inside the sharp volume, is lit by the transparent subpass.
fn spawn_irradiance_volumes(world: &mut World) {
    spawn_grid(world);
    let sphere = add_mesh(world, Sphere::new(0.3).mesh().uv(32, 16));
    let glass = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgba(0.95, 0.95, 0.95, 0.6),
            alpha_mode: AlphaMode::Blend,
            perceptual_roughness: 0.6,
            ..default()
        },
    );
    spawn(
        world,
        &sphere,
        &glass,
        Transform::from_translation(grid_centre() + Vec3::new(-1.17, -0.35, 0.6)),
    );
    let environment = view_map(world);
    world.add_observer(move |add: On<Add, Camera3d>, mut commands: Commands| {
        commands.entity(add.entity).insert(environment.clone());
    });
    let left = add_image(
        world,
        varied_voxels(UVec3::new(3, 2, 2), Vec3::new(1.0, 0.4, 0.1)),
    );
    let right = add_image(
        world,
        varied_voxels(UVec3::new(2, 2, 2), Vec3::new(0.1, 0.9, 0.3)),
    );
    world.spawn((
        Name::new("left irradiance volume"),
        LightProbe::default(),
        IrradianceVolume {
            voxels: left,
            intensity: 2_500.0,
            ..default()
        },
        probe_transform(),
    ));
    world.spawn((
        Name::new("right irradiance volume"),
        LightProbe {
            falloff: Vec3::splat(0.3),
        },
        IrradianceVolume {
            voxels: right,
            intensity: 4_000.0,
            ..default()
        },
        Transform::from_translation(grid_centre() + Vec3::new(1.0, 0.0, -0.3))
            .with_scale(Vec3::new(2.4, 3.2, 2.0)),
    ));
}

/// Two irradiance volumes (one sharp, one with falloff) over a sphere grid under an environment
/// map, a translucent sphere among them, from the front (1x and 4x MSAA) and the side, `Auto` tile cameras (they stay on the
/// tile path) against Bevy forward: whole frame and each volume's columns.
#[test]
fn content_irradiance_volumes() {
    let _test = GpuTest::start("content_irradiance_volumes");
    let lit = |f: &Frame| distinct_colours(f) >= 30;
    let checks: Vec<RegionCheck> = irradiance_volume_cases()
        .iter()
        .filter(|case| case.name != "irradiance_volumes_side")
        .flat_map(|case| {
            [
                (INSIDE_PROBE, "the left columns, in the sharp volume"),
                (
                    OUTSIDE_PROBE,
                    "the right columns, in the volume with falloff",
                ),
            ]
            .map(|(region, shows)| RegionCheck {
                case: case.name,
                region,
                shows,
                visible: lit,
            })
        })
        .chain([
            RegionCheck {
                case: "irradiance_volumes_side",
                region: Region::CENTRE,
                shows: "the grid from the side",
                visible: lit,
            },
            RegionCheck {
                case: "irradiance_volumes",
                region: GLASS,
                shows: "the translucent sphere, lit by the sharp volume",
                visible: |f| distinct_colours(f) >= 8,
            },
        ])
        .collect();
    assert_content_matches_to(headless(), &IRRADIANCE_VOLUMES, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

const IRRADIANCE_VOLUMES_UNMERGED: FidelityScene = FidelityScene {
    name: "irradiance_volumes_unmerged",
    spawn: spawn_irradiance_volumes_unmerged,
    cases: irradiance_volume_unmerged_cases,
};

fn irradiance_volume_unmerged_cases() -> Vec<FidelityCase> {
    let mut msaa = front_camera();
    msaa.msaa = Some(Msaa::Sample4);
    vec![
        FidelityCase::single("irradiance_volumes_unmerged", front_camera()),
        FidelityCase::single("irradiance_volumes_unmerged_msaa", msaa),
    ]
}

/// [`spawn_irradiance_volumes`] with the tile cameras on the unmerged tier (the G-buffer stored
/// and sampled as textures: the lighting shaders' sampled variants).
fn spawn_irradiance_volumes_unmerged(world: &mut World) {
    spawn_irradiance_volumes(world);
    world.add_observer(|add: On<Add, TileDeferred>, mut commands: Commands| {
        commands.entity(add.entity).insert(TileDeferred {
            merge_subpasses: false,
            ..default()
        });
    });
}

/// [`content_irradiance_volumes`] on the unmerged tier, 1x and 4x MSAA.
#[test]
fn content_irradiance_volumes_unmerged() {
    let _test = GpuTest::start("content_irradiance_volumes_unmerged");
    let lit = |f: &Frame| distinct_colours(f) >= 30;
    let checks: Vec<RegionCheck> = irradiance_volume_unmerged_cases()
        .iter()
        .flat_map(|case| {
            [INSIDE_PROBE, OUTSIDE_PROBE].map(|region| RegionCheck {
                case: case.name,
                region,
                shows: "the columns in a volume",
                visible: lit,
            })
        })
        .collect();
    assert_content_matches_to(headless(), &IRRADIANCE_VOLUMES_UNMERGED, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}
