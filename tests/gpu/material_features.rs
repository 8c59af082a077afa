//! `StandardMaterial` features the G-buffer has no room for (clearcoat, anisotropy, specular
//! tint, a parallax depth map), in a scene shaped like Bevy's `clearcoat`, `anisotropy`,
//! `specular_tint` and `parallax_mapping` examples: Bevy's own pipelines draw those meshes over
//! the tile frame, as they draw custom materials (`custom_materials.rs`), and the tile pass
//! leaves them out. The camera stays on the tile path, the meshes are listed in
//! `TileMaterialsOverTile`, they still cast the sun's shadows (Bevy's shadow pass draws every
//! caster), and the frame is Bevy's. A blended pane of a plain `StandardMaterial` in front of
//! one of them is drawn by Bevy too, after it, as `Core3d` orders them.

use crate::harness::{GpuTest, HeadlessApp, assert_frames_match, image_compare::psnr};
use bevy::{
    asset::RenderAssetUsages,
    prelude::*,
    render::{
        render_resource::{Extent3d, TextureDimension, TextureFormat},
        view::Msaa,
    },
};
use bevy_tile_deferred::{
    TileDeferred, TileMaterialsOverTile, TileRenderReports,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// The meshes whose material has a feature the G-buffer lacks, by name.
const FEATURE_MESHES: [&str; 5] = [
    "clearcoat sphere",
    "anisotropic sphere",
    "tinted sphere",
    "parallax cube",
    "blended clearcoat pane",
];

/// The meshes the tile pass draws itself: the ground and a plain sphere.
const TILE_DRAWN_MESHES: usize = 2;

/// A blended pane of a plain `StandardMaterial` in front of the clearcoat sphere.
const PLAIN_PANE: &str = "plain blended pane";

/// A checkerboard of 8x8-texel squares, `dark` and `light` texels of `format` (one texel's
/// bytes each): the parallax cube's height map and its colour, so that the parallax offset
/// shows as shifted edges.
fn checker(format: TextureFormat, dark: &[u8], light: &[u8]) -> Image {
    const SIZE: u32 = 64;
    let data = (0..SIZE * SIZE)
        .flat_map(|i| {
            let (x, y) = (i % SIZE, i / SIZE);
            if (x / 8 + y / 8) % 2 == 0 {
                dark
            } else {
                light
            }
        })
        .copied()
        .collect();
    Image::new(
        Extent3d {
            width: SIZE,
            height: SIZE,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        format,
        RenderAssetUsages::RENDER_WORLD,
    )
}

/// A ground and a plain sphere the tile path draws, the five meshes with features it lacks,
/// and a plain blended pane in front of the clearcoat sphere, under a shadow-casting sun; a
/// camera (a tile camera when `tile`) with `msaa`. Returns the app, the camera and the meshes
/// Bevy draws over a tile camera's frame (the feature meshes and the plain pane), in entity
/// order.
fn app(tile: bool, msaa: Msaa) -> (HeadlessApp, Entity, Vec<Entity>) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    let world = headless.app.world_mut();
    let (heights, colours) = {
        let mut images = world.resource_mut::<Assets<Image>>();
        (
            images.add(checker(TextureFormat::R8Unorm, &[0], &[255])),
            images.add(checker(
                TextureFormat::Rgba8UnormSrgb,
                &[60, 50, 40, 255],
                &[230, 200, 150, 255],
            )),
        )
    };
    let (ground, sphere, cube, pane) = {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        (
            meshes.add(Plane3d::default().mesh().size(12.0, 12.0)),
            // Anisotropy and parallax read the tangents (Bevy's examples generate them too).
            meshes.add(
                Sphere::new(0.6)
                    .mesh()
                    .uv(48, 24)
                    .with_generated_tangents()
                    .expect("a UV sphere has UVs and normals"),
            ),
            meshes.add(
                Cuboid::new(1.0, 1.0, 1.0)
                    .mesh()
                    .build()
                    .with_generated_tangents()
                    .expect("a cuboid has UVs and normals"),
            ),
            meshes.add(Rectangle::new(1.2, 1.2)),
        )
    };
    let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
    let grey = materials.add(StandardMaterial {
        base_color: Color::srgb(0.5, 0.5, 0.5),
        perceptual_roughness: 0.9,
        ..default()
    });
    let plain = materials.add(StandardMaterial {
        base_color: Color::srgb(0.2, 0.7, 0.3),
        perceptual_roughness: 0.5,
        ..default()
    });
    // Bevy's `clearcoat` example: a rough red base under a smooth coat.
    let clearcoat = materials.add(StandardMaterial {
        base_color: Color::srgb(0.9, 0.1, 0.1),
        perceptual_roughness: 0.6,
        clearcoat: 1.0,
        clearcoat_perceptual_roughness: 0.1,
        ..default()
    });
    // Bevy's `anisotropy` example without its texture: brushed metal.
    let anisotropic = materials.add(StandardMaterial {
        base_color: Color::srgb(0.8, 0.8, 0.85),
        metallic: 1.0,
        perceptual_roughness: 0.35,
        anisotropy_strength: 0.9,
        anisotropy_rotation: 0.6,
        ..default()
    });
    // Bevy's `specular_tint` example.
    let tinted = materials.add(StandardMaterial {
        base_color: Color::srgb(0.1, 0.1, 0.1),
        perceptual_roughness: 0.2,
        specular_tint: Color::srgb(1.0, 0.3, 0.1),
        ..default()
    });
    // Bevy's `parallax_mapping` example's material, with a generated height map and colour.
    let parallax = materials.add(StandardMaterial {
        base_color_texture: Some(colours),
        perceptual_roughness: 0.7,
        depth_map: Some(heights),
        parallax_depth_scale: 0.08,
        max_parallax_layer_count: 16.0,
        ..default()
    });
    // A blended pane with a coat: Bevy's transparent pass draws it.
    let pane_material = materials.add(StandardMaterial {
        base_color: Color::srgba(0.2, 0.4, 1.0, 0.5),
        alpha_mode: AlphaMode::Blend,
        clearcoat: 1.0,
        double_sided: true,
        cull_mode: None,
        ..default()
    });
    let plain_pane = materials.add(StandardMaterial {
        base_color: Color::srgba(1.0, 0.9, 0.2, 0.6),
        alpha_mode: AlphaMode::Blend,
        double_sided: true,
        cull_mode: None,
        ..default()
    });
    world.spawn((Name::new("ground"), Mesh3d(ground), MeshMaterial3d(grey)));
    world.spawn((
        Name::new("plain sphere"),
        Mesh3d(sphere.clone()),
        MeshMaterial3d(plain),
        Transform::from_xyz(0.0, 0.6, -1.8),
    ));
    let mut features = vec![
        world
            .spawn((
                Name::new(FEATURE_MESHES[0]),
                Mesh3d(sphere.clone()),
                MeshMaterial3d(clearcoat),
                Transform::from_xyz(-2.4, 0.6, 0.0),
            ))
            .id(),
        world
            .spawn((
                Name::new(FEATURE_MESHES[1]),
                Mesh3d(sphere.clone()),
                MeshMaterial3d(anisotropic),
                Transform::from_xyz(-0.8, 0.6, 0.3),
            ))
            .id(),
        world
            .spawn((
                Name::new(FEATURE_MESHES[2]),
                Mesh3d(sphere),
                MeshMaterial3d(tinted),
                Transform::from_xyz(0.8, 0.6, 0.3),
            ))
            .id(),
        world
            .spawn((
                Name::new(FEATURE_MESHES[3]),
                Mesh3d(cube),
                MeshMaterial3d(parallax),
                Transform::from_xyz(2.4, 0.5, 0.0).with_rotation(Quat::from_rotation_y(0.6)),
            ))
            .id(),
        // In front of the plain sphere, facing the camera.
        world
            .spawn((
                Name::new(FEATURE_MESHES[4]),
                Mesh3d(pane.clone()),
                MeshMaterial3d(pane_material),
                Transform::from_xyz(0.3, 0.9, 1.8).looking_to(Vec3::new(0.0, -0.3, -1.0), Vec3::Y),
            ))
            .id(),
        world
            .spawn((
                Name::new(PLAIN_PANE),
                Mesh3d(pane),
                MeshMaterial3d(plain_pane),
                Transform::from_xyz(-2.1, 0.8, 1.2).looking_to(Vec3::new(0.2, -0.3, -1.0), Vec3::Y),
            ))
            .id(),
    ];
    features.sort_unstable();
    world.spawn((
        DirectionalLight {
            illuminance: 6_000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(3.0, 8.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let camera = headless.spawn_camera((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::srgb(0.1, 0.12, 0.16)),
            ..default()
        },
        Transform::from_xyz(0.0, 3.0, 6.5).looking_at(Vec3::new(0.0, 0.5, 0.0), Vec3::Y),
        msaa,
    ));
    if tile {
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .insert(TileDeferred {
                tier: TierSetting::Auto,
                ..default()
            });
    }
    (headless, camera, features)
}

/// Makes `camera` of [`app`] an HDR camera.
fn make_hdr(headless: &mut HeadlessApp, camera: Entity) {
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(bevy::camera::Hdr);
}

/// Frames rendered before a frame is compared (see `custom_materials.rs`).
const FRAMES: u32 = 5;

/// On an LDR tile camera at 1x and 4x MSAA, and on an HDR one at 1x and 4x (into the light the
/// tile pass stores, tone mapped with it by Bevy; with MSAA over the light written into every sample of Bevy's multisampled texture): the meshes with features the G-buffer lacks are
/// drawn by Bevy over the tile frame and not by the tile pass, nothing is listed as missing,
/// the camera stays on tile, and the frame is Bevy's (>= 36 dB, p99.5 <= 8/255). Bevy's frame
/// with the features taken off the materials differs from it, so the comparison can fail.
#[test]
fn standard_material_features_the_gbuffer_lacks_are_drawn_by_bevy_over_the_tile_frame() {
    let _test = GpuTest::start(
        "standard_material_features_the_gbuffer_lacks_are_drawn_by_bevy_over_the_tile_frame",
    );
    for (msaa, hdr) in [
        (Msaa::Off, false),
        (Msaa::Sample4, false),
        (Msaa::Off, true),
        (Msaa::Sample4, true),
    ] {
        let name = format!("material-features-{}x-hdr-{hdr}", msaa.samples());
        let (mut headless, camera, features) = app(true, msaa);
        if hdr {
            make_hdr(&mut headless, camera);
        }
        let tile = headless.render(FRAMES);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        let world = headless.app.world();
        let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
        assert_eq!(
            world
                .get::<TileMaterialsOverTile>(camera)
                .map(|over| over.meshes.clone()),
            Some(features),
            "{name}"
        );
        assert_eq!(
            report.instances, TILE_DRAWN_MESHES,
            "{name}: the tile pass draws only the meshes it can"
        );
        assert!(report.gizmo_pass.is_some(), "{name}: Bevy's pass is priced");
        if hdr {
            // Bevy's tone mapping after them, priced too.
            assert_eq!(report.post_processing, ["Tonemapping"], "{name}");
        }

        let (mut bevy_app, bevy_camera, _) = app(false, msaa);
        if hdr {
            make_hdr(&mut bevy_app, bevy_camera);
        }
        let bevy = bevy_app.render(FRAMES);
        // Bevy's frame without the features: what the tile pass alone would draw.
        let world = bevy_app.app.world_mut();
        for (_, material) in world.resource_mut::<Assets<StandardMaterial>>().iter_mut() {
            material.clearcoat = 0.0;
            material.anisotropy_strength = 0.0;
            material.specular_tint = Color::WHITE;
            material.depth_map = None;
        }
        let bevy_without = bevy_app.render(2);
        let apart = psnr(&bevy, &bevy_without);
        assert!(apart < 36.0, "{name}: the features matter ({apart:.1} dB)");
        let path = tile.save_png(&name);
        eprintln!(
            "{name}: the tile camera ({tier:?}) against Bevy's: PSNR {:.2} dB, Bevy's without \
             the features {apart:.2} dB ({})",
            psnr(&tile, &bevy),
            path.display()
        );
        assert_frames_match(&name, &tile, &bevy, 36.0, 8);
    }
}

/// On a camera with Bevy's depth prepass, which a custom material may read and the tile path
/// does not run, Bevy cannot draw them over the tile frame: each mesh is listed with its
/// feature and the reason, and `Auto` hands the camera to Bevy.
#[test]
fn standard_material_features_fall_back_on_a_camera_with_prepasses() {
    let _test = GpuTest::start("standard_material_features_fall_back_on_a_camera_with_prepasses");
    let (mut headless, camera, features) = app(true, Msaa::Sample4);
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(bevy::core_pipeline::prepass::DepthPrepass);
    headless.render(FRAMES);
    let world = headless.app.world();
    assert_eq!(
        world.get::<TierDecision>(camera).expect("a decision").tier,
        RenderTier::Forward
    );
    let listed = world
        .get::<TileMissing>(camera)
        .map(|m| m.items.clone())
        .unwrap_or_default();
    let listed_features: Vec<Entity> = listed
        .iter()
        .filter(|item| {
            item.what.starts_with("StandardMaterial ") && item.what.contains("prepasses")
        })
        .map(|item| item.entity)
        .collect();
    let named = |entity: &Entity| {
        headless
            .app
            .world()
            .get::<Name>(*entity)
            .is_some_and(|name| name.as_str() != PLAIN_PANE)
    };
    let features: Vec<Entity> = features.into_iter().filter(named).collect();
    assert_eq!(listed_features, features, "{listed:#?}");
    assert_eq!(world.get::<TileMaterialsOverTile>(camera), None);
}

/// bevy_ui over a tile camera whose frame Bevy draws meshes over: Bevy draws its UI pass after
/// them, so the tile pass does not draw the UI in its `ui` subpass (the meshes would cover it),
/// and the frame, a panel over the clearcoat sphere included, is Bevy's.
#[cfg(feature = "ui")]
#[test]
fn ui_stays_over_the_meshes_bevy_draws_over_the_tile_frame() {
    let _test = GpuTest::start("ui_stays_over_the_meshes_bevy_draws_over_the_tile_frame");
    let frame = |tile: bool| {
        let (mut headless, camera, _) = app(tile, Msaa::Off);
        // Over the clearcoat sphere, on the left of the frame.
        headless.app.world_mut().spawn((
            Node {
                position_type: PositionType::Absolute,
                left: Val::Px(30.0),
                top: Val::Px(50.0),
                width: Val::Px(50.0),
                height: Val::Px(40.0),
                ..default()
            },
            BackgroundColor(Color::srgb(0.1, 0.9, 0.2)),
            bevy::ui::UiTargetCamera(camera),
        ));
        let frame = headless.render(FRAMES);
        let after_pass_reason = tile.then(|| {
            headless
                .app
                .world()
                .resource::<TileRenderReports>()
                .get(camera)
                .expect("a report")
                .ui_after_pass_reason
                .clone()
        });
        (frame, after_pass_reason)
    };
    let (tile, reason) = frame(true);
    let reason = reason
        .flatten()
        .expect("the UI is drawn after the tile pass");
    assert!(reason.contains("meshes of materials"), "{reason}");
    let (bevy, _) = frame(false);
    eprintln!(
        "UI over meshes Bevy draws over the tile frame: PSNR {:.2} dB against Bevy's",
        psnr(&tile, &bevy)
    );
    assert_frames_match("material-features-ui", &tile, &bevy, 36.0, 8);
}
