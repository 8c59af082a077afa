//! Bad input (issue 17): what a game may hand the tile path by mistake or on purpose — empty
//! viewports, an MSAA count the device lacks, HDR switched every frame, many cameras at once, a
//! camera's output sampled by another camera in the same frame. Each renders without a panic,
//! a validation error (the harness fails the test on any) or a black frame; the cameras that can
//! draw do, and nothing leaks.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp, assert_frames_match, image_compare::psnr},
    scenes,
};
use bevy::{
    camera::{ClearColorConfig, Hdr, RenderTarget, Viewport, visibility::RenderLayers},
    core_pipeline::tonemapping::Tonemapping,
    prelude::*,
    render::{
        gpu_readback::{Readback, ReadbackComplete},
        view::Msaa,
    },
};
use bevy_tile_deferred::{
    TileDeferred, TileRenderReports,
    tiers::{RenderTier, TierDecision},
};
use std::sync::{Arc, Mutex};

const WIDTH: u32 = 192;
const HEIGHT: u32 = 108;

/// The reference camera of the lit-spheres scene at `order`, rendered by the tile path.
fn tile_camera(order: isize, msaa: Msaa) -> impl Bundle {
    (
        Camera3d::default(),
        Camera {
            order,
            ..scenes::reference_camera()
        },
        scenes::reference_camera_transform(),
        msaa,
        TileDeferred::default(),
    )
}

/// Bevy's forward render of the lit-spheres scene from `transform`, `width` x `height`.
fn bevy_forward(width: u32, height: u32, transform: Transform, msaa: Msaa) -> Frame {
    let mut headless = HeadlessApp::new(width, height);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        transform,
        msaa,
    ));
    headless.render(3)
}

/// Pixels brighter than near-black (the scene's clear colour is well above it).
fn not_black(frame: &Frame) -> usize {
    frame
        .rgba
        .chunks_exact(4)
        .filter(|p| u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]) > 45)
        .count()
}

/// Asserts the frame is a rendered lit-spheres frame, not a black or cleared-only one.
fn assert_rendered(name: &str, frame: &Frame) {
    let pixels = (frame.width * frame.height) as usize;
    let lit = not_black(frame);
    let red = frame.rgba.chunks_exact(4).filter(|p| p[0] > 100).count();
    if lit < pixels * 9 / 10 || red == 0 {
        panic!(
            "{name}: not a rendered frame ({lit} of {pixels} pixels not black, {red} reddish); \
             image: {}",
            frame.save_png(name).display()
        );
    }
}

/// Runs frames until the crate's retired objects are destroyed (kept a few frames after their
/// last use, then destroyed once the GPU is done with them).
fn settle(headless: &mut HeadlessApp) {
    for _ in 0..8 {
        headless.update();
    }
}

/// Cameras with an empty viewport (0 x 0, 0 x N, N x 0, with and without MSAA, before and
/// after a good camera on its target, and alone on a target) draw nothing and disturb nothing:
/// the good camera renders like Bevy; a camera whose viewport shrinks to nothing at run time
/// and comes back renders again with the same Vulkan objects as before.
#[test]
fn zero_size_viewports_draw_nothing_and_stop_nothing() {
    let _test = GpuTest::start("zero_size_viewports_draw_nothing_and_stop_nothing");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let side = headless.add_target(WIDTH, HEIGHT);
    let main_target = headless.render_target();
    let side_target = RenderTarget::Image(side.clone().into());
    let empty = |position: UVec2, size: UVec2| {
        Some(Viewport {
            physical_position: position,
            physical_size: size,
            ..default()
        })
    };
    let mut broken = Vec::new();
    for (order, viewport, target, msaa) in [
        (-1, empty(UVec2::ZERO, UVec2::ZERO), &main_target, Msaa::Off),
        (
            1,
            empty(UVec2::new(10, 10), UVec2::new(0, HEIGHT / 2)),
            &main_target,
            Msaa::Off,
        ),
        (
            2,
            empty(UVec2::ZERO, UVec2::new(WIDTH, 0)),
            &main_target,
            Msaa::Sample4,
        ),
        (
            0,
            empty(UVec2::ZERO, UVec2::ZERO),
            &side_target,
            Msaa::Sample4,
        ),
        (
            1,
            empty(UVec2::ZERO, UVec2::new(0, 40)),
            &side_target,
            Msaa::Off,
        ),
    ] {
        let camera = headless
            .app
            .world_mut()
            .spawn((tile_camera(order, msaa), target.clone()))
            .id();
        headless
            .app
            .world_mut()
            .get_mut::<Camera>(camera)
            .unwrap()
            .viewport = viewport;
        broken.push(camera);
    }
    let good = headless.spawn_camera(tile_camera(0, Msaa::Off));
    let frame = headless.render(3);
    headless.read_image(&side);
    let expected = bevy_forward(
        WIDTH,
        HEIGHT,
        scenes::reference_camera_transform(),
        Msaa::Off,
    );
    eprintln!(
        "good camera beside empty viewports vs Bevy forward: PSNR {:.2} dB",
        psnr(&frame, &expected)
    );
    assert_frames_match("zero-viewport-good-camera", &frame, &expected, 36.0, 8);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    assert!(reports.get(good).is_some(), "the good camera rendered");
    for camera in &broken {
        assert!(
            reports.get(*camera).is_none(),
            "camera {camera} with an empty viewport recorded a tile pass"
        );
    }

    // The good camera's viewport shrinks to nothing for a while, then comes back.
    settle(&mut headless);
    let with_view = reports.live_vulkan_objects();
    for size in [UVec2::ZERO, UVec2::new(0, HEIGHT), UVec2::new(WIDTH, 0)] {
        headless
            .app
            .world_mut()
            .get_mut::<Camera>(good)
            .unwrap()
            .viewport = empty(UVec2::ZERO, size);
        for _ in 0..3 {
            headless.update();
        }
    }
    settle(&mut headless);
    assert!(
        reports.live_vulkan_objects() < with_view,
        "the idle view's objects are retired ({with_view} before)"
    );
    headless
        .app
        .world_mut()
        .get_mut::<Camera>(good)
        .unwrap()
        .viewport = None;
    let again = headless.render(2);
    assert_frames_match("zero-viewport-comes-back", &again, &expected, 36.0, 8);
    settle(&mut headless);
    assert_eq!(
        reports.live_vulkan_objects(),
        with_view,
        "the view recreated with the same objects"
    );
}

/// `Msaa::Sample8` on a device whose highest count is 4 (lavapipe). Bevy's `Msaa` offers 1, 2,
/// 4 and 8 samples (no 16x), so 8x is the most absurd request a Bevy app can make here: the
/// tile path renders at 4x, says why in the log, and matches Bevy's forward 4x.
#[test]
fn msaa_beyond_the_device_renders_at_its_highest_count() {
    let test = GpuTest::start("msaa_beyond_the_device_renders_at_its_highest_count");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera(tile_camera(0, Msaa::Sample8));
    let frame = headless.render(3);
    let decision = headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .unwrap()
        .clone();
    assert_eq!(
        decision.tier,
        RenderTier::TileDeferredMsaa { samples: 4 },
        "{decision:?}"
    );
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    assert_eq!(reports.get(camera).expect("tile path rendered").samples, 4);
    let warnings = test.take_warnings();
    let reason: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("8x MSAA") && w.contains("4x"))
        .collect();
    assert_eq!(
        reason.len(),
        1,
        "the lowered MSAA is logged once, with its reason: {warnings:#?}"
    );
    let expected = bevy_forward(
        WIDTH,
        HEIGHT,
        scenes::reference_camera_transform(),
        Msaa::Sample4,
    );
    let against_bevy = psnr(&frame, &expected);
    eprintln!("tile 8x-requested (4x) vs Bevy forward 4x: PSNR {against_bevy:.2} dB");
    assert!(
        against_bevy >= 34.0,
        "PSNR {against_bevy:.2} dB < 34 vs Bevy forward 4x (images: {}, {})",
        frame.save_png("msaa8-tile").display(),
        expected.save_png("msaa8-bevy-4x").display()
    );
}

/// Runs `frames` frames, calling `change` on the main world before each, and returns every
/// frame's picture of each of `targets` (one readback per frame, in frame order).
fn read_every_frame(
    headless: &mut HeadlessApp,
    targets: &[Handle<Image>],
    frames: usize,
    mut change: impl FnMut(&mut World, usize),
) -> Vec<Vec<Frame>> {
    let received: Vec<Arc<Mutex<Vec<Vec<u8>>>>> = targets.iter().map(|_| Arc::default()).collect();
    let readers: Vec<Entity> = targets
        .iter()
        .zip(&received)
        .map(|(target, received)| {
            let sink = received.clone();
            headless
                .app
                .world_mut()
                .spawn(Readback::texture(target.clone()))
                .observe(move |event: On<ReadbackComplete>| {
                    sink.lock().unwrap().push(event.data.clone());
                })
                .id()
        })
        .collect();
    for frame in 0..frames {
        change(headless.app.world_mut(), frame);
        headless.update();
    }
    // The last frames' readbacks arrive in the next frames; the readers read those too.
    for _ in 0..3 {
        headless.update();
    }
    for reader in readers {
        headless.app.world_mut().despawn(reader);
    }
    targets
        .iter()
        .zip(received)
        .map(|(target, received)| {
            let size = headless
                .app
                .world()
                .resource::<Assets<Image>>()
                .get(target)
                .expect("the target exists")
                .size();
            let data = std::mem::take(&mut *received.lock().unwrap());
            assert!(
                data.len() >= frames,
                "{} frames read back of {frames}",
                data.len()
            );
            data.into_iter()
                .map(|data| crate::harness::unpad(data, size))
                .collect()
        })
        .collect()
}

/// `Hdr` added and removed every frame on a tile camera without MSAA and one with 4x: every
/// frame is the rendered scene, and once it stops the crate holds the Vulkan objects it held
/// before.
#[test]
fn hdr_toggled_every_frame_renders_every_frame() {
    let _test = GpuTest::start("hdr_toggled_every_frame_renders_every_frame");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let side = headless.add_target(WIDTH, HEIGHT);
    let cameras = [
        headless.spawn_camera(tile_camera(0, Msaa::Off)),
        headless
            .app
            .world_mut()
            .spawn((
                tile_camera(0, Msaa::Sample4),
                RenderTarget::Image(side.clone().into()),
            ))
            .id(),
    ];
    let targets = [headless.target.clone(), side];
    headless.render(3);
    let before = headless.read_images(&targets);
    for (i, frame) in before.iter().enumerate() {
        assert_rendered(&format!("hdr-before-{i}"), frame);
    }
    settle(&mut headless);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let baseline = reports.live_vulkan_objects();

    // Every frame of each target, read back while HDR flips.
    const FRAMES: usize = 20;
    let received = read_every_frame(&mut headless, &targets, FRAMES, |world, frame| {
        for camera in cameras {
            let mut camera = world.entity_mut(camera);
            if frame % 2 == 0 {
                camera.insert(Hdr);
            } else {
                camera.remove::<Hdr>();
            }
        }
    });
    for camera in cameras {
        headless.app.world_mut().entity_mut(camera).remove::<Hdr>();
    }
    for (i, (frames, before)) in received.iter().zip(&before).enumerate() {
        for (n, frame) in frames.iter().enumerate() {
            let name = format!("hdr-toggle-{i}-frame-{n}");
            assert_rendered(&name, frame);
            assert_frames_match(&name, frame, before, 36.0, 8);
        }
    }
    settle(&mut headless);
    assert_eq!(
        reports.live_vulkan_objects(),
        baseline,
        "live Vulkan objects after {FRAMES} HDR toggles"
    );
}

/// Where the `i`-th of `n` cameras looks from: around the scene.
fn orbit(i: usize, n: usize) -> Transform {
    let angle = i as f32 / n as f32 * std::f32::consts::TAU;
    Transform::from_xyz(9.0 * angle.sin(), 4.0, 9.0 * angle.cos())
        .looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y)
}

const CAMERAS: usize = 16;

/// Where sixteen cameras draw: each into its own image, or each into a cell of a 4 x 4 grid of
/// viewports of one image.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    OwnTargets,
    Viewports,
}

impl Layout {
    /// Size of each camera's image, or of the one shared image.
    fn target_size(self) -> UVec2 {
        match self {
            Self::OwnTargets => UVec2::new(96, 64),
            Self::Viewports => UVec2::new(192, 128),
        }
    }

    /// An app with the lit-spheres scene and the layout's images (the first is `target`).
    fn app(self) -> (HeadlessApp, Vec<Handle<Image>>) {
        let size = self.target_size();
        let mut headless = HeadlessApp::new(size.x, size.y);
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let mut targets = vec![headless.target.clone()];
        if self == Self::OwnTargets {
            targets.extend((1..CAMERAS).map(|_| headless.add_target(size.x, size.y)));
        }
        (headless, targets)
    }

    /// Spawns the `i`-th camera of the layout (a Bevy one unless `tile`).
    fn spawn(
        self,
        headless: &mut HeadlessApp,
        targets: &[Handle<Image>],
        i: usize,
        tile: bool,
    ) -> Entity {
        let (target, viewport) = match self {
            Self::OwnTargets => (&targets[i], None),
            Self::Viewports => {
                let cell = self.target_size() / 4;
                let position = UVec2::new(i as u32 % 4, i as u32 / 4) * cell;
                (
                    &targets[0],
                    Some(Viewport {
                        physical_position: position,
                        physical_size: cell,
                        ..default()
                    }),
                )
            }
        };
        let mut camera = headless.app.world_mut().spawn((
            Camera3d::default(),
            Camera {
                order: i as isize,
                viewport,
                ..scenes::reference_camera()
            },
            orbit(i, CAMERAS),
            Msaa::Off,
            RenderTarget::Image(target.clone().into()),
        ));
        if tile {
            camera.insert(TileDeferred::default());
        }
        camera.id()
    }
}

/// Sixteen tile cameras at once, laid out as `layout`: all render (several checked against the
/// same cameras in Bevy's forward renderer), and despawning fifteen of them gives back every
/// Vulkan object they took.
fn sixteen_tile_cameras(layout: Layout) {
    let (mut headless, targets) = layout.app();
    let first = layout.spawn(&mut headless, &targets, 0, true);
    headless.render(3);
    settle(&mut headless);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let one_camera = reports.live_vulkan_objects();

    let mut cameras = vec![first];
    cameras.extend((1..CAMERAS).map(|i| layout.spawn(&mut headless, &targets, i, true)));
    for _ in 0..2 {
        headless.update();
    }
    let frames = headless.read_images(&targets);
    for (i, camera) in cameras.iter().enumerate() {
        assert!(
            reports.get(*camera).is_some(),
            "{layout:?}: camera {i} used the tile path"
        );
    }
    let (mut reference, reference_targets) = layout.app();
    for i in 0..CAMERAS {
        layout.spawn(&mut reference, &reference_targets, i, false);
    }
    reference.render(3);
    let expected = reference.read_images(&reference_targets);
    let name = |i: usize| format!("sixteen-{layout:?}-{i}");
    for (i, (frame, expected)) in frames.iter().zip(&expected).enumerate() {
        assert_rendered(&name(i), frame);
        eprintln!(
            "{layout:?}: image {i} vs Bevy forward: PSNR {:.2} dB",
            psnr(frame, expected)
        );
        assert_frames_match(&name(i), frame, expected, 36.0, 8);
    }

    for camera in &cameras[1..] {
        headless.app.world_mut().despawn(*camera);
    }
    settle(&mut headless);
    assert_eq!(
        reports.live_vulkan_objects(),
        one_camera,
        "{layout:?}: live Vulkan objects after despawning 15 of 16 cameras"
    );
    assert_rendered(&name(99), &headless.render(1));
}

#[test]
fn sixteen_tile_cameras_into_their_own_images() {
    let _test = GpuTest::start("sixteen_tile_cameras_into_their_own_images");
    sixteen_tile_cameras(Layout::OwnTargets);
}

#[test]
fn sixteen_tile_cameras_in_viewports_of_one_image() {
    let _test = GpuTest::start("sixteen_tile_cameras_in_viewports_of_one_image");
    sixteen_tile_cameras(Layout::Viewports);
}

const PRODUCER_GREEN: Color = Color::srgb(0.1, 0.8, 0.1);
const CUBE_RED: Color = Color::srgb(0.9, 0.1, 0.1);
const CUBE_BLUE: Color = Color::srgb(0.1, 0.1, 0.9);
const CONSUMER_CLEAR_AFTER: Color = Color::srgb(0.9, 0.9, 0.1);

/// Who draws what in the sampled-target app.
#[derive(Clone, Copy, Debug)]
struct SampledSetup {
    /// The producer (renders into the image) is a tile camera.
    producer_tile: bool,
    /// The producer's MSAA.
    producer_msaa: Msaa,
    /// The consumer (samples the image) is a tile camera.
    consumer_tile: bool,
    /// The producer's camera order is the lower one.
    producer_first: bool,
}

/// The sampled-target app's entities the test changes.
struct SampledTarget {
    producer: Entity,
    consumer: Entity,
    cube_material: Handle<StandardMaterial>,
}

/// A producer camera rendering a red cube on green into a 64 x 64 image (render layer 1), and
/// a consumer camera rendering a quad textured with that image (layer 0: no camera samples its
/// own output) into the 128 x 128 main target. Both unlit and without tonemapping, so the
/// texture's colours pass through.
fn sampled_target_app(setup: SampledSetup) -> (HeadlessApp, SampledTarget) {
    let mut headless = HeadlessApp::new(128, 128);
    let texture = headless.add_target(64, 64);
    let world = headless.app.world_mut();
    let (cube, quad) = {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        (
            meshes.add(Cuboid::new(1.5, 1.5, 1.5)),
            meshes.add(Rectangle::new(2.0, 2.0)),
        )
    };
    let (cube_material, screen) = {
        let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
        (
            materials.add(StandardMaterial {
                base_color: CUBE_RED,
                unlit: true,
                ..default()
            }),
            materials.add(StandardMaterial {
                base_color: Color::WHITE,
                base_color_texture: Some(texture.clone()),
                unlit: true,
                ..default()
            }),
        )
    };
    world.spawn((
        Mesh3d(cube),
        MeshMaterial3d(cube_material.clone()),
        Transform::IDENTITY,
        RenderLayers::layer(1),
    ));
    world.spawn((Mesh3d(quad), MeshMaterial3d(screen), Transform::IDENTITY));
    let (producer_order, consumer_order) = if setup.producer_first { (0, 1) } else { (1, 0) };
    let producer = world
        .spawn((
            Camera3d::default(),
            Camera {
                order: producer_order,
                clear_color: ClearColorConfig::Custom(PRODUCER_GREEN),
                ..default()
            },
            Transform::from_xyz(0.0, 0.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
            setup.producer_msaa,
            Tonemapping::None,
            RenderLayers::layer(1),
            RenderTarget::Image(texture.into()),
        ))
        .id();
    let consumer = headless.spawn_camera((
        Camera3d::default(),
        Camera {
            order: consumer_order,
            ..scenes::reference_camera()
        },
        Transform::from_xyz(0.0, 0.0, 3.5).looking_at(Vec3::ZERO, Vec3::Y),
        Msaa::Off,
        Tonemapping::None,
    ));
    for (camera, tile) in [
        (producer, setup.producer_tile),
        (consumer, setup.consumer_tile),
    ] {
        if tile {
            headless
                .app
                .world_mut()
                .entity_mut(camera)
                .insert(TileDeferred::default());
        }
    }
    (
        headless,
        SampledTarget {
            producer,
            consumer,
            cube_material,
        },
    )
}

fn srgb(color: Color) -> [u8; 3] {
    let c = color.to_srgba().to_u8_array();
    [c[0], c[1], c[2]]
}

fn close(pixel: [u8; 4], expected: Color) -> bool {
    let expected = srgb(expected);
    (0..3).all(|c| pixel[c].abs_diff(expected[c]) <= 6)
}

/// Where the consumer's picture shows the producer's cube, the producer's background, and its
/// own background.
const CENTRE: (i32, i32) = (64, 64);
const QUAD: (i32, i32) = (64, 24);
const OUTSIDE: (i32, i32) = (4, 4);

/// A tile camera renders into an image that another tile camera samples as a material's
/// `base_color_texture` in the same frame, under synchronization validation: the consumer
/// shows the producer's picture of that very frame when the producer comes first (a frame
/// late when it comes second, as Bevy's cameras do), also with a 4x producer, and beside
/// Bevy's own cameras on either side.
#[test]
fn a_tile_camera_samples_another_tile_cameras_output() {
    let _test = GpuTest::start("a_tile_camera_samples_another_tile_cameras_output");
    let at = |frame: &Frame, (x, y): (i32, i32)| frame.pixel(x, y);
    let mut references: Vec<((Msaa, bool), Frame)> = Vec::new();
    let tile_into_tile = SampledSetup {
        producer_tile: true,
        producer_msaa: Msaa::Off,
        consumer_tile: true,
        producer_first: true,
    };
    for setup in [
        tile_into_tile,
        SampledSetup {
            producer_first: false,
            ..tile_into_tile
        },
        SampledSetup {
            producer_msaa: Msaa::Sample4,
            ..tile_into_tile
        },
        SampledSetup {
            consumer_tile: false,
            ..tile_into_tile
        },
        SampledSetup {
            producer_tile: false,
            ..tile_into_tile
        },
    ] {
        let name = format!(
            "sampled-target-{}{}-into-{}{}",
            if setup.producer_tile { "tile" } else { "bevy" },
            if setup.producer_msaa == Msaa::Off {
                ""
            } else {
                "-4x"
            },
            if setup.consumer_tile { "tile" } else { "bevy" },
            if setup.producer_first {
                ""
            } else {
                "-consumer-first"
            }
        );
        // The same cameras, all Bevy's (rendered once per producer MSAA and camera order).
        let key = (setup.producer_msaa, setup.producer_first);
        if !references.iter().any(|(k, _)| *k == key) {
            let (mut reference, reference_app) = sampled_target_app(SampledSetup {
                producer_tile: false,
                consumer_tile: false,
                ..setup
            });
            // Warm-up frames: with the consumer first it shows the producer's previous frame.
            let expected = reference.render(5);
            assert!(
                close(at(&expected, CENTRE), CUBE_RED)
                    && close(at(&expected, QUAD), PRODUCER_GREEN)
                    && close(at(&expected, OUTSIDE), scenes::CLEAR_COLOR),
                "{name}: the reference is laid out as the test expects (image: {})",
                expected.save_png(&format!("{name}-reference")).display()
            );
            let name = format!("{name}-reference");
            assert_eq!(
                late_frames(&mut reference, &reference_app, &name),
                usize::from(!setup.producer_first),
                "{name}: frames where Bevy's consumer showed the producer's previous frame"
            );
            references.push((key, expected));
        }
        let expected = &references.iter().find(|(k, _)| *k == key).unwrap().1;
        let (mut headless, app) = sampled_target_app(setup);
        let frame = headless.render(5);
        let reports = headless.app.world().resource::<TileRenderReports>().clone();
        assert_eq!(
            reports.get(app.producer).is_some(),
            setup.producer_tile,
            "{name}"
        );
        assert_eq!(
            reports.get(app.consumer).is_some(),
            setup.consumer_tile,
            "{name}"
        );
        assert!(
            close(at(&frame, CENTRE), CUBE_RED) && close(at(&frame, QUAD), PRODUCER_GREEN),
            "{name}: the consumer does not show the producer's picture (image: {})",
            frame.save_png(&name).display()
        );
        eprintln!("{name} vs Bevy: PSNR {:.2} dB", psnr(&frame, expected));
        assert_frames_match(&name, &frame, expected, 36.0, 8);

        assert_eq!(
            late_frames(&mut headless, &app, &name),
            usize::from(!setup.producer_first),
            "{name}: frames where the consumer showed the producer's previous frame"
        );
    }
}

/// Turns the producer's cube blue and the consumer's own background yellow in the same frame,
/// and returns how many of the consumer's frames then show its new background with the old
/// cube: none when the producer renders first (every frame shows both changes or neither), one
/// when it renders after the consumer.
fn late_frames(headless: &mut HeadlessApp, app: &SampledTarget, name: &str) -> usize {
    let at = |frame: &Frame, (x, y): (i32, i32)| frame.pixel(x, y);
    let target = headless.target.clone();
    let frames = read_every_frame(
        headless,
        std::slice::from_ref(&target),
        4,
        |world, frame| {
            if frame == 1 {
                world
                    .resource_mut::<Assets<StandardMaterial>>()
                    .get_mut(&app.cube_material)
                    .unwrap()
                    .base_color = CUBE_BLUE;
                world.get_mut::<Camera>(app.consumer).unwrap().clear_color =
                    ClearColorConfig::Custom(CONSUMER_CLEAR_AFTER);
            }
        },
    )
    .remove(0);
    let mut late = 0;
    for (n, frame) in frames.iter().enumerate() {
        let (cube, outside) = (at(frame, CENTRE), at(frame, OUTSIDE));
        let before = close(cube, CUBE_RED) && close(outside, scenes::CLEAR_COLOR);
        let after = close(cube, CUBE_BLUE) && close(outside, CONSUMER_CLEAR_AFTER);
        let one_frame_late = close(cube, CUBE_RED) && close(outside, CONSUMER_CLEAR_AFTER);
        assert!(
            before || after || one_frame_late,
            "{name}: frame {n}: centre {cube:?}, outside {outside:?} (image: {})",
            frame.save_png(&format!("{name}-frame-{n}")).display()
        );
        late += usize::from(one_frame_late);
    }
    late
}
