//! `StandardMaterial` transmission over the tile frame, in a scene shaped like Bevy's
//! `transmission` example: a glass sphere (specular transmission) and a frosted cube (diffuse
//! transmission) in front of coloured meshes. Bevy draws them in its transmissive pass, which
//! samples a copy of the opaque frame: on a tile camera the tile pass writes its frame into
//! the main texture (LDR: effect `Transmission`; HDR: `Tonemapping`), leaves the transmissive
//! meshes out, and Bevy's transmissive pass runs over that frame between Bevy's opaque and
//! transparent draws (where there are any), as `Core3d` orders them. With MSAA the tile pass resolves its frame into
//! the main texture, and Bevy's passes draw into its multisampled texture, which resolves into
//! the main texture each pass, as in `Core3d`.

use crate::harness::{GpuTest, HeadlessApp, assert_frames_match, image_compare::psnr};
use bevy::{pbr::ScreenSpaceTransmission, prelude::*, render::view::Msaa};
use bevy_tile_deferred::{
    TileDeferred, TileMaterialsOverTile,
    tiers::{TierDecision, TierSetting},
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// The transmissive meshes, by name.
const GLASS: [&str; 2] = ["glass sphere", "frosted cube"];

/// Frames rendered before a frame is compared (see `custom_materials.rs`).
const FRAMES: u32 = 5;

/// The scene under a camera at `msaa`, HDR where `hdr`, with Bevy's transmissive pass in
/// `steps` steps, and a blended pane in front where `pane`, on the tile path (`Auto`) where
/// `tile`; its camera and the meshes Bevy draws over the tile frame in entity order.
fn app(
    tile: bool,
    msaa: Msaa,
    (hdr, steps, pane): (bool, usize, bool),
) -> (HeadlessApp, Entity, Vec<Entity>) {
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
    if pane {
        // Blended: Bevy draws it after the transmissive pass, where it draws any mesh.
        let pane_mesh = meshes_for_pane(world);
        let pane_material =
            world
                .resource_mut::<Assets<StandardMaterial>>()
                .add(StandardMaterial {
                    base_color: Color::srgba(0.2, 0.9, 0.3, 0.4),
                    alpha_mode: AlphaMode::Blend,
                    ..default()
                });
        glass_meshes.push(
            world
                .spawn((
                    Mesh3d(pane_mesh),
                    MeshMaterial3d(pane_material),
                    Transform::from_xyz(-0.2, 0.6, 1.6),
                ))
                .id(),
        );
    }
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
    entity.insert(ScreenSpaceTransmission { steps, ..default() });
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

/// At 1x and 4x, LDR and HDR: the camera stays on the tile path with nothing listed, the
/// transmissive meshes are Bevy's (`TileMaterialsOverTile`, transmissive), Bevy's passes over
/// the frame are priced (the pass over the frame, the copy, the transmissive pass, the
/// transparent draws), and the frame is Bevy's (>= 36 dB, p99.5 <= 8/255). Bevy's frame without
/// transmission differs from it, so the comparison can fail.
#[test]
fn transmissive_meshes_are_drawn_by_bevy_over_the_tile_frame() {
    let _test = GpuTest::start("transmissive_meshes_are_drawn_by_bevy_over_the_tile_frame");
    // Bevy's default of one step, and two: two copies and transmissive passes, the first
    // step's samples resolved at 4x for the second's copy. (The two meshes do not overlap on
    // screen, so two steps draw Bevy's one-step picture; the case checks the passes, their
    // price and their validity.)
    // With a blended pane in front, Bevy's transparent draws follow in a pass of their own;
    // without, there is none, as in `Core3d`.
    for (msaa, hdr, steps, pane) in [
        (Msaa::Off, false, 1, false),
        (Msaa::Off, true, 1, true),
        (Msaa::Sample4, false, 1, false),
        (Msaa::Sample4, true, 1, false),
        (Msaa::Sample4, false, 1, true),
        (Msaa::Sample4, false, 2, false),
    ] {
        let name = format!(
            "transmission-{}x-hdr-{hdr}-steps-{steps}-pane-{pane}",
            msaa.samples()
        );
        let (mut headless, camera, glass) = app(true, msaa, (hdr, steps, pane));
        let tile = headless.render(FRAMES);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        let world = headless.app.world();
        let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
        assert_eq!(tier.tile_samples(), msaa.samples(), "{name}");
        assert_eq!(
            world.get::<TileMaterialsOverTile>(camera),
            Some(&TileMaterialsOverTile {
                meshes: glass.clone(),
                transmissive: true,
            }),
            "{name}"
        );
        assert_eq!(report.samples, msaa.samples(), "{name}");
        let effect = if hdr { "Tonemapping" } else { "Transmission" };
        assert_eq!(report.post_processing, [effect], "{name}");
        let over = report
            .gizmo_pass
            .as_ref()
            .expect("Bevy's passes over the frame are priced");
        // The pass over the frame, a copy and a transmissive pass per step, and the transparent
        // draws where there are any.
        assert_eq!(
            over.render_pass_count(),
            1 + 2 * steps + usize::from(pane),
            "{name}: {}",
            over.describe()
        );

        let (mut bevy_app, _, _) = app(false, msaa, (hdr, steps, pane));
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

/// A pane 1.2 m wide facing the camera.
fn meshes_for_pane(world: &mut World) -> Handle<Mesh> {
    world
        .resource_mut::<Assets<Mesh>>()
        .add(Cuboid::new(1.2, 0.8, 0.02))
}
