//! Indirect mesh draws (issue 34): a tile camera records its G-buffer and transparent draws as
//! indirect commands where the device can, and draws the ones that bind the same pipeline,
//! material and mesh buffers (different meshes of one material, in one of Bevy's mesh slabs) in
//! one call where it has `multiDrawIndirect`. Lavapipe has both. The same scene through a tile
//! camera with `indirect_draws` off, one call per draw, must give the same image bit for bit,
//! and both Bevy forward's picture.

use crate::{
    content::{MIN_PSNR, add_material, add_mesh, spawn_stage, spawn_sun},
    harness::{
        GpuTest, HeadlessApp,
        image_compare::{self, Frame},
        test_plugins,
    },
    scenes::fidelity::{FidelityCamera, IMAGE_SIZE, stage_origin},
};
use bevy::{
    camera::RenderTarget, prelude::*, render::pipelined_rendering::PipelinedRenderingPlugin,
};
use bevy_tile_deferred::{TileDeferred, TileMeshDrawMode};

/// Distinct meshes of one opaque material, a second material, and two transparent meshes of one
/// blended material: runs of draws an indirect call can share, and breaks between them.
fn spawn_scene(world: &mut World) {
    spawn_stage(world, 0);
    spawn_sun(world);
    let origin = stage_origin(0);
    let clay = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.8, 0.35, 0.2),
            perceptual_roughness: 0.5,
            ..default()
        },
    );
    let metal = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.6, 0.65, 0.7),
            metallic: 0.8,
            perceptual_roughness: 0.3,
            ..default()
        },
    );
    let glass = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgba(0.3, 0.6, 1.0, 0.45),
            alpha_mode: AlphaMode::Blend,
            ..default()
        },
    );
    let clay_meshes: Vec<Mesh> = vec![
        Sphere::new(0.45).mesh().uv(24, 12),
        Cuboid::new(0.7, 0.7, 0.7).into(),
        Capsule3d::new(0.25, 0.5).into(),
        Torus::new(0.2, 0.4).into(),
        Cylinder::new(0.3, 0.8).into(),
        Cone::new(0.4, 0.8).into(),
    ];
    for (i, mesh) in clay_meshes.into_iter().enumerate() {
        let mesh = add_mesh(world, mesh);
        let x = -2.5 + i as f32;
        world.spawn((
            Mesh3d(mesh.clone()),
            MeshMaterial3d(clay.clone()),
            Transform::from_translation(origin + Vec3::new(x, 0.5, 0.0)),
        ));
        if i % 2 == 0 {
            // A second instance of the same mesh: an instanced draw among the others.
            world.spawn((
                Mesh3d(mesh),
                MeshMaterial3d(clay.clone()),
                Transform::from_translation(origin + Vec3::new(x, 0.5, -1.5)),
            ));
        }
    }
    let pillar = add_mesh(world, Cylinder::new(0.2, 1.6));
    world.spawn((
        Mesh3d(pillar),
        MeshMaterial3d(metal),
        Transform::from_translation(origin + Vec3::new(0.0, 0.8, -2.5)),
    ));
    for (mesh, x) in [
        (add_mesh(world, Sphere::new(0.35).mesh().uv(16, 8)), -1.0),
        (add_mesh(world, Cuboid::new(0.5, 0.5, 0.5)), 1.0),
    ] {
        world.spawn((
            Mesh3d(mesh),
            MeshMaterial3d(glass.clone()),
            Transform::from_translation(origin + Vec3::new(x, 0.6, 1.4)),
        ));
    }
}

#[test]
fn indirect_draws_share_calls_and_draw_what_direct_draws_draw() {
    let _test = GpuTest::start("indirect_draws_share_calls_and_draw_what_direct_draws_draw");
    // Without pipelined rendering the report read after an update is that update's frame.
    let mut headless = HeadlessApp::with_plugins(
        IMAGE_SIZE.x,
        IMAGE_SIZE.y,
        test_plugins(None).disable::<PipelinedRenderingPlugin>(),
    );
    headless.use_cpu_light_clustering();
    spawn_scene(headless.app.world_mut());
    let camera = FidelityCamera::stage(0);
    let indirect = headless.spawn_camera((camera.bundle(), TileDeferred::default()));
    let direct_target = headless.add_target(IMAGE_SIZE.x, IMAGE_SIZE.y);
    let forward_target = headless.add_target(IMAGE_SIZE.x, IMAGE_SIZE.y);
    let world = headless.app.world_mut();
    let direct = world
        .spawn((
            camera.bundle(),
            TileDeferred {
                indirect_draws: false,
                ..default()
            },
            RenderTarget::Image(direct_target.clone().into()),
        ))
        .id();
    world.spawn((
        camera.bundle(),
        RenderTarget::Image(forward_target.clone().into()),
    ));
    let targets = [headless.target.clone(), direct_target, forward_target];
    let frames: Vec<Frame> = headless.read_images(&targets);
    let drawn = headless.tile_report_with_nothing_missing(indirect, "indirect draws");
    let reference = headless.tile_report_with_nothing_missing(direct, "direct draws");
    eprintln!(
        "indirect draws: {} draws in {} calls ({:?}); direct: {} draws in {} calls ({:?})",
        drawn.draws,
        drawn.mesh_draw_calls,
        drawn.mesh_draws,
        reference.draws,
        reference.mesh_draw_calls,
        reference.mesh_draws
    );
    assert!(
        matches!(drawn.mesh_draws, TileMeshDrawMode::Indirect { max_draws_per_call } if max_draws_per_call > 1),
        "lavapipe has drawIndirectFirstInstance and multiDrawIndirect: {:?}",
        drawn.mesh_draws
    );
    assert!(
        matches!(&reference.mesh_draws, TileMeshDrawMode::Direct { why } if why.contains("indirect_draws")),
        "the camera with indirect_draws off draws directly: {:?}",
        reference.mesh_draws
    );
    // The ground, six clay meshes (three of them two instances), the metal pillar and the two
    // glass meshes: ten draws either way.
    assert_eq!(drawn.draws, 10, "draws of the indirect camera");
    assert_eq!(reference.draws, 10, "draws of the direct camera");
    assert_eq!(reference.mesh_draw_calls, reference.draws);
    // The six clay meshes share pipeline, material and slab: one call. The ground and the
    // pillar have materials of their own, and the two glass meshes share one call: four calls
    // where there were ten.
    assert_eq!(
        drawn.mesh_draw_calls, 4,
        "consecutive draws of one pipeline, material and slab share a call"
    );

    assert_eq!(
        frames[0].rgba, frames[1].rgba,
        "indirect and direct draws give the same image"
    );
    for (frame, name) in [(&frames[0], "indirect"), (&frames[1], "direct")] {
        let psnr = image_compare::psnr(frame, &frames[2]);
        eprintln!("{name} draws against Bevy forward: PSNR {psnr:.2} dB");
        image_compare::assert_frames_match(
            &format!("indirect-draws-{name}"),
            frame,
            &frames[2],
            MIN_PSNR,
            8,
        );
    }
    // Nothing drawn is still nothing: the frame has draws only where meshes are in view.
    assert!(
        image_compare::psnr(&frames[0], &headless_blank(&frames[0])) < 30.0,
        "the tile image shows the scene"
    );
}

/// A frame of the same size holding only the first pixel's colour everywhere.
fn headless_blank(frame: &Frame) -> Frame {
    let first: [u8; 4] = frame.rgba[..4].try_into().expect("one pixel");
    Frame {
        width: frame.width,
        height: frame.height,
        rgba: first.repeat((frame.width * frame.height) as usize),
    }
}
