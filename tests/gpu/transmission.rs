//! `StandardMaterial` transmission over the tile frame, in a scene shaped like Bevy's
//! `transmission` example: a glass sphere (specular transmission) and a frosted cube (diffuse
//! transmission) in front of coloured meshes. Bevy draws them in its transmissive pass, which
//! samples a copy of the opaque frame: on a tile camera at 1x the tile pass writes its frame into
//! the main texture (LDR: effect `Transmission`; HDR: `Tonemapping`), leaves the transmissive
//! meshes out, and Bevy's transmissive pass runs over that frame between Bevy's opaque and
//! transparent draws, as `Core3d` orders them. With MSAA each transmissive mesh is listed and
//! `Auto` hands the camera to Bevy.

use crate::harness::{GpuTest, HeadlessApp, assert_frames_match, image_compare::psnr};
use bevy::{prelude::*, render::view::Msaa};
use bevy_tile_deferred::{
    TileDeferred, TileMaterialsOverTile, TileRenderReports,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// The transmissive meshes, by name.
const GLASS: [&str; 2] = ["glass sphere", "frosted cube"];

/// Frames rendered before a frame is compared (see `custom_materials.rs`).
const FRAMES: u32 = 5;

/// The scene under a camera at `msaa`, HDR where `hdr`, on the tile path (`Auto`) where `tile`;
/// its camera and the transmissive meshes in entity order.
fn app(tile: bool, msaa: Msaa, hdr: bool) -> (HeadlessApp, Entity, Vec<Entity>) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    let world = headless.app.world_mut();
    let mut meshes = world.resource_mut::<Assets<Mesh>>();
    let ground = meshes.add(Plane3d::default().mesh().size(10.0, 10.0));
    let sphere = meshes.add(Sphere::new(0.6).mesh().uv(48, 24));
    let cube = meshes.add(Cuboid::new(0.9, 0.9, 0.9));
    let pillar = meshes.add(Cuboid::new(0.5, 1.6, 0.5));
    let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
    let ground_material = materials.add(Color::srgb(0.35, 0.4, 0.35));
    let red = materials.add(Color::srgb(0.9, 0.15, 0.1));
    let blue = materials.add(Color::srgb(0.1, 0.3, 0.9));
    let glass = materials.add(StandardMaterial {
        base_color: Color::WHITE,
        specular_transmission: 0.9,
        thickness: 0.6,
        ior: 1.5,
        perceptual_roughness: 0.12,
        ..default()
    });
    let frosted = materials.add(StandardMaterial {
        base_color: Color::srgb(0.9, 0.9, 0.6),
        diffuse_transmission: 0.6,
        specular_transmission: 0.3,
        thickness: 0.4,
        perceptual_roughness: 0.5,
        ..default()
    });
    world.spawn((Mesh3d(ground), MeshMaterial3d(ground_material)));
    // Behind the glass, so that it shows through refracted.
    world.spawn((
        Mesh3d(pillar.clone()),
        MeshMaterial3d(red),
        Transform::from_xyz(-0.5, 0.8, -1.2),
    ));
    world.spawn((
        Mesh3d(pillar),
        MeshMaterial3d(blue),
        Transform::from_xyz(1.4, 0.8, -1.0),
    ));
    let mut glass_meshes = vec![
        world
            .spawn((
                Name::new(GLASS[0]),
                Mesh3d(sphere),
                MeshMaterial3d(glass),
                Transform::from_xyz(-0.4, 0.7, 0.6),
            ))
            .id(),
        world
            .spawn((
                Name::new(GLASS[1]),
                Mesh3d(cube),
                MeshMaterial3d(frosted),
                Transform::from_xyz(1.3, 0.55, 0.4).with_rotation(Quat::from_rotation_y(0.5)),
            ))
            .id(),
    ];
    glass_meshes.sort_unstable();
    world.spawn((
        DirectionalLight {
            illuminance: 8_000.0,
            ..default()
        },
        Transform::from_xyz(2.0, 6.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let camera = headless.spawn_camera((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::srgb(0.1, 0.12, 0.16)),
            ..default()
        },
        Transform::from_xyz(0.0, 2.2, 5.5).looking_at(Vec3::new(0.3, 0.6, 0.0), Vec3::Y),
        msaa,
    ));
    let mut entity = headless.app.world_mut().entity_mut(camera);
    if hdr {
        entity.insert(bevy::camera::Hdr);
    }
    if tile {
        entity.insert(TileDeferred {
            tier: TierSetting::Auto,
            ..default()
        });
    }
    (headless, camera, glass_meshes)
}

/// At 1x, LDR and HDR: the camera stays on the tile path with nothing listed, the transmissive
/// meshes are Bevy's (`TileMaterialsOverTile`, transmissive), Bevy's passes over the frame are
/// priced (the pass over the frame, the copy, the transmissive pass, the transparent draws),
/// and the frame is Bevy's (>= 36 dB, p99.5 <= 8/255). Bevy's frame without transmission
/// differs from it, so the comparison can fail.
#[test]
fn transmissive_meshes_are_drawn_by_bevy_over_the_tile_frame() {
    let _test = GpuTest::start("transmissive_meshes_are_drawn_by_bevy_over_the_tile_frame");
    for hdr in [false, true] {
        let name = format!("transmission-1x-hdr-{hdr}");
        let (mut headless, camera, glass) = app(true, Msaa::Off, hdr);
        let tile = headless.render(FRAMES);
        let world = headless.app.world();
        let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
        let missing = world.get::<TileMissing>(camera).map(|m| m.items.clone());
        assert_eq!(tier, RenderTier::TileDeferred, "{name}: {missing:#?}");
        assert_eq!(missing.unwrap_or_default(), [], "{name}");
        assert_eq!(
            world.get::<TileMaterialsOverTile>(camera),
            Some(&TileMaterialsOverTile {
                meshes: glass.clone(),
                transmissive: true,
            }),
            "{name}"
        );
        let report = world
            .resource::<TileRenderReports>()
            .get(camera)
            .expect("a report");
        let effect = if hdr { "Tonemapping" } else { "Transmission" };
        assert_eq!(report.post_processing, [effect], "{name}");
        let over = report
            .gizmo_pass
            .as_ref()
            .expect("Bevy's passes over the frame are priced");
        assert_eq!(over.render_pass_count(), 4, "{name}: {}", over.describe());

        let (mut bevy_app, _, _) = app(false, Msaa::Off, hdr);
        let bevy = bevy_app.render(FRAMES);
        // Bevy's frame without transmission: what a tile frame that drew them opaque would be.
        let world = bevy_app.app.world_mut();
        for (_, material) in world.resource_mut::<Assets<StandardMaterial>>().iter_mut() {
            material.specular_transmission = 0.0;
            material.diffuse_transmission = 0.0;
        }
        let bevy_without = bevy_app.render(2);
        let apart = psnr(&bevy, &bevy_without);
        assert!(apart < 36.0, "{name}: transmission matters ({apart:.1} dB)");
        let path = tile.save_png(&name);
        eprintln!(
            "{name}: the tile camera against Bevy's: PSNR {:.2} dB, Bevy's without transmission \
             {apart:.2} dB ({})",
            psnr(&tile, &bevy),
            path.display()
        );
        assert_frames_match(&name, &tile, &bevy, 36.0, 8);
    }
}

/// With MSAA Bevy's transmissive pass would draw into its multisampled texture over a copy of
/// the frame, which the tile pass resolves: each transmissive mesh is listed with the reason,
/// and `Auto` hands the camera to Bevy.
#[test]
fn transmissive_meshes_fall_back_with_msaa() {
    let _test = GpuTest::start("transmissive_meshes_fall_back_with_msaa");
    let (mut headless, camera, glass) = app(true, Msaa::Sample4, false);
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
    let listed_glass: Vec<Entity> = listed
        .iter()
        .filter(|item| item.what.contains("transmission") && item.what.contains("MSAA"))
        .map(|item| item.entity)
        .collect();
    assert_eq!(listed_glass, glass, "{listed:#?}");
}
