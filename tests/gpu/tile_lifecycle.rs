//! The tile path in a real app's life: screenshots, several cameras, run-time changes,
//! despawned cameras, unsupported settings and materials.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp, assert_frames_match},
    scenes,
};
use bevy::{
    prelude::*,
    render::view::{
        Msaa,
        screenshot::{Screenshot, ScreenshotCaptured},
    },
};
use bevy_tile_deferred::{
    TileDeferred, TileKeepGpuLightClustering, TileMaterialsOverTile, TileRenderReports,
};
use std::sync::{Arc, Mutex};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 144;

fn tile_camera() -> impl Bundle {
    (
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        TileDeferred::default(),
    )
}

fn image_to_frame(image: &Image) -> Frame {
    let rgba = image
        .clone()
        .try_into_dynamic()
        .expect("screenshot converts")
        .to_rgba8();
    Frame {
        width: rgba.width(),
        height: rgba.height(),
        rgba: rgba.into_raw(),
    }
}

/// Bevy's `Screenshot` of a tile camera's image returns the rendered frame, not black (wgpu
/// zero-fills its fresh capture texture unless the tile path marks it initialised).
#[test]
fn screenshot_of_tile_camera_is_the_rendered_frame() {
    let _test = GpuTest::start("screenshot_of_tile_camera_is_the_rendered_frame");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    headless.spawn_camera(tile_camera());
    let readback = headless.render(3);

    let captured: Arc<Mutex<Option<Image>>> = Arc::default();
    let sink = captured.clone();
    let target = headless.target.clone();
    headless
        .app
        .world_mut()
        .spawn(Screenshot::image(target))
        .observe(move |event: On<ScreenshotCaptured>| {
            *sink.lock().unwrap() = Some(event.image.clone());
        });
    for _ in 0..10 {
        headless.update();
        if captured.lock().unwrap().is_some() {
            break;
        }
    }
    let screenshot = image_to_frame(&captured.lock().unwrap().take().expect("screenshot taken"));
    // Not black: objects and the clear colour are there...
    let lit = screenshot
        .rgba
        .chunks_exact(4)
        .filter(|p| p[0] > 60 || p[1] > 60 || p[2] > 60)
        .count();
    assert!(
        lit > (WIDTH * HEIGHT / 10) as usize,
        "screenshot is (nearly) black"
    );
    // ...and it is the frame the readback saw.
    assert_frames_match("screenshot-vs-readback", &screenshot, &readback, 40.0, 2);
}

/// A tile camera and a Bevy camera in one app, each into its own image, both correct.
#[test]
fn tile_and_bevy_cameras_in_one_app() {
    let _test = GpuTest::start("tile_and_bevy_cameras_in_one_app");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    // The Bevy camera renders into a second image.
    let second = headless.add_target(WIDTH, HEIGHT);
    headless.app.world_mut().spawn((
        Camera3d::default(),
        Camera {
            order: 1,
            ..scenes::reference_camera()
        },
        scenes::reference_camera_transform(),
        Msaa::Off,
        bevy::camera::RenderTarget::Image(second.clone().into()),
    ));
    let tile_entity = headless.spawn_camera(tile_camera());
    let tile = headless.render(3);
    let forward = headless.read_image(&second);
    assert_frames_match("two-cameras", &tile, &forward, 36.0, 8);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    assert!(
        reports.get(tile_entity).is_some(),
        "the tile camera went through the tile path"
    );
}

/// Changing a material's colour and moving a mesh at run time shows up in the next frames.
#[test]
fn run_time_changes_show_up() {
    let _test = GpuTest::start("run_time_changes_show_up");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera(tile_camera());
    let before = headless.render(3);
    // Recolour every sphere material to white and move the cube out of view.
    let world = headless.app.world_mut();
    let mut query = world.query::<(&Name, &MeshMaterial3d<StandardMaterial>, &mut Transform)>();
    let mut recolour = Vec::new();
    for (name, material, mut transform) in query.iter_mut(world) {
        if name.as_str() == "red sphere" {
            recolour.push(material.id());
        }
        if name.as_str() == "yellow cube" {
            transform.translation.y = -50.0;
        }
    }
    for id in recolour {
        let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
        materials.get_mut(id).unwrap().base_color = Color::srgb(0.1, 0.1, 0.9);
    }
    let after = headless.render(2);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    assert_eq!(
        reports.get(camera).unwrap().instances,
        4,
        "the cube left the view"
    );
    let changed = before
        .rgba
        .chunks_exact(4)
        .zip(after.rgba.chunks_exact(4))
        .filter(|(a, b)| a[0].abs_diff(b[0]) > 40)
        .count();
    assert!(
        changed > 500,
        "only {changed} pixels changed after recolouring a sphere"
    );
}

/// Despawning a tile camera releases its Vulkan objects; a new one recreates them.
#[test]
fn despawned_cameras_leak_nothing() {
    let _test = GpuTest::start("despawned_cameras_leak_nothing");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera(tile_camera());
    headless.render(3);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let with_camera = reports.live_vulkan_objects();
    headless.app.world_mut().despawn(camera);
    for _ in 0..8 {
        headless.update();
    }
    let without_camera = reports.live_vulkan_objects();
    assert!(
        without_camera < with_camera,
        "despawning the camera released nothing ({with_camera} -> {without_camera})"
    );
    for _ in 0..5 {
        let camera = headless.spawn_camera(tile_camera());
        headless.render(2);
        assert_eq!(
            reports.live_vulkan_objects(),
            with_camera,
            "a camera costs the same each time"
        );
        headless.app.world_mut().despawn(camera);
        for _ in 0..8 {
            headless.update();
        }
        assert_eq!(
            reports.live_vulkan_objects(),
            without_camera,
            "no leak after a despawn"
        );
    }
}

/// A mesh pipeline lives while something draws with it: a double-sided cube (a pipeline of its
/// own: no back-face culling) hidden for longer than the 60 frames the crate keeps an unused
/// pipeline gives its pipeline back, and shown again gets it built again, drawn as before.
#[test]
fn a_mesh_pipeline_unused_for_a_while_is_destroyed_and_built_again() {
    let _test = GpuTest::start("a_mesh_pipeline_unused_for_a_while_is_destroyed_and_built_again");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    headless.spawn_camera(tile_camera());
    headless.render(3);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let pipelines = || reports.resource_counts().pipelines;
    let without_cube = pipelines();

    let world = headless.app.world_mut();
    let mesh = world
        .resource_mut::<Assets<Mesh>>()
        .add(Cuboid::new(0.8, 0.8, 0.8));
    let material = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial {
            base_color: Color::srgb(0.9, 0.5, 0.2),
            cull_mode: None,
            double_sided: true,
            ..default()
        });
    let cube = world
        .spawn((
            Name::new("double-sided cube"),
            Mesh3d(mesh),
            MeshMaterial3d(material),
            Transform::from_xyz(0.0, 0.6, 1.5).with_rotation(Quat::from_rotation_y(0.6)),
        ))
        .id();
    let shown = headless.render(3);
    assert_eq!(
        pipelines(),
        without_cube + 1,
        "the cube's pipeline was built"
    );

    headless
        .app
        .world_mut()
        .entity_mut(cube)
        .insert(Visibility::Hidden);
    for _ in 0..70 {
        headless.update();
    }
    let hidden = headless.read_target();
    assert_eq!(
        pipelines(),
        without_cube,
        "the hidden cube's pipeline was destroyed after 60 frames unused"
    );
    assert!(
        crate::harness::image_compare::psnr(&hidden, &shown) < 40.0,
        "hiding the cube changed the picture"
    );

    headless
        .app
        .world_mut()
        .entity_mut(cube)
        .insert(Visibility::Inherited);
    let shown_again = headless.render(3);
    assert_eq!(
        pipelines(),
        without_cube + 1,
        "the cube's pipeline was built again"
    );
    assert_frames_match("pipeline-built-again", &shown_again, &shown, 60.0, 0);
}

/// Meshes the tile path cannot draw are reported once, by entity and name, and never vanish
/// silently; the rest of the frame renders. A clearcoat mesh under the scene's point lights, in
/// an app that keeps Bevy's GPU light clustering (`TileKeepGpuLightClustering`): Bevy cannot
/// draw it over the tile frame, so it is reported. Without that, the crate has Bevy cluster the
/// lights on the CPU and Bevy draws it over the tile frame: nothing is reported.
#[test]
fn unsupported_settings_are_reported_not_hidden() {
    let test = GpuTest::start("unsupported_settings_are_reported_not_hidden");
    for keep_gpu_clustering in [true, false] {
        let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
        if keep_gpu_clustering {
            headless.app.insert_resource(TileKeepGpuLightClustering);
        }
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let glass = headless
            .app
            .world_mut()
            .resource_mut::<Assets<StandardMaterial>>()
            .add(StandardMaterial {
                clearcoat: 1.0,
                ..default()
            });
        let sphere = headless
            .app
            .world_mut()
            .resource_mut::<Assets<Mesh>>()
            .add(Sphere::new(0.5));
        let ball = headless
            .app
            .world_mut()
            .spawn((
                Name::new("glass ball"),
                Mesh3d(sphere),
                MeshMaterial3d(glass),
                Transform::from_xyz(0.0, 2.5, 0.0),
            ))
            .id();
        let camera = headless.spawn_camera((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            Msaa::Sample4,
            TileDeferred::default(),
        ));
        let frame = headless.render(3);
        assert!(
            frame.rgba.chunks_exact(4).any(|p| p[0] > 100),
            "the frame was rendered"
        );
        let warnings = test.take_warnings();
        let about = |needle: &str| warnings.iter().filter(|w| w.contains(needle)).count();
        let drawn_over_tile = headless
            .app
            .world()
            .get::<TileMaterialsOverTile>(camera)
            .is_some_and(|over_tile| over_tile.meshes.contains(&ball));
        if keep_gpu_clustering {
            assert_eq!(
                about("\"glass ball\""),
                1,
                "the clearcoat mesh reported once by name: {warnings:#?}"
            );
            assert!(!drawn_over_tile);
        } else {
            assert_eq!(about("\"glass ball\""), 0, "{warnings:#?}");
            assert!(
                drawn_over_tile,
                "Bevy draws the clearcoat mesh over the tile frame"
            );
        }
    }
}
