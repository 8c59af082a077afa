//! A tile camera drawing into a real window (Xvfb on CI): presented frames, resizes that
//! rebuild the framebuffers without leaking, and the presented window (the X server's copy)
//! compared with Bevy's screenshot of it.
//!
//! winit allows one event loop per process, so each window scenario runs in a child process of
//! this test binary (an ignored test run by its parent).

use crate::{
    harness::{
        Frame, GpuTest,
        presented::{self, PresentedAndScreenshot, PresentedCapture},
        run_window_test_in_child_process, test_plugins_compiling,
    },
    scenes,
};
use bevy::{
    camera::Viewport,
    core_pipeline::tonemapping::{DebandDither, Tonemapping},
    diagnostic::FrameCount,
    prelude::*,
    render::{RenderApp, render_resource::PipelineCache, view::Msaa},
    window::WindowResolution,
};
use bevy_tile_deferred::{TileDeferred, TileDeferredGraph, TileDeferredPlugin, TileRenderReports};

#[test]
fn tile_camera_in_a_window() {
    run_window_test_in_child_process("tile_window::child_tile_camera_in_a_window");
}

/// The unmerged debug tier with 4x MSAA in a window: three render passes, the last resolving
/// into the swapchain image.
#[test]
fn unmerged_msaa_tile_camera_in_a_window() {
    run_window_test_in_child_process("tile_window::child_unmerged_msaa_tile_camera_in_a_window");
}

/// A Bevy (`Core3d`) camera drawing after the tile camera into the same window, over a
/// viewport: its upscaling pass loads the window's image the tile pass wrote.
#[test]
fn bevy_camera_over_a_tile_camera_in_a_window() {
    run_window_test_in_child_process(
        "tile_window::child_bevy_camera_over_a_tile_camera_in_a_window",
    );
}

/// Split screen in a window with 4x MSAA: a second tile camera draws after the first over a
/// viewport of the same swapchain image, keeping its samples. Its in-pass resolve writes only
/// its render area, so it does not load the image, and it takes the image from
/// `PRESENT_SRC_KHR` (not `UNDEFINED`), so that the first camera's drawing around it is kept.
#[test]
fn msaa_tile_camera_over_a_tile_camera_in_a_window() {
    run_window_test_in_child_process(
        "tile_window::child_msaa_tile_camera_over_a_tile_camera_in_a_window",
    );
}

#[test]
#[ignore = "run in a child process by msaa_tile_camera_over_a_tile_camera_in_a_window (one \
            winit event loop per process)"]
fn child_msaa_tile_camera_over_a_tile_camera_in_a_window() {
    window_run_with(
        "child_msaa_tile_camera_over_a_tile_camera_in_a_window",
        TileDeferred::default(),
        Msaa::Sample4,
        2,
        true,
        WindowRunOptions {
            inset_on_tile: true,
            ..default()
        },
    );
}

/// Bloom in a window (feature `bloom`): the tile pass writes the camera's main texture and
/// Bevy's bloom, tone mapping and blit write the window's image, through resizes, with no
/// validation message, and the window shows what Bevy's screenshot of it shows.
#[cfg(feature = "bloom")]
#[test]
fn bloom_tile_camera_in_a_window() {
    run_window_test_in_child_process("tile_window::child_bloom_tile_camera_in_a_window");
}

#[cfg(feature = "bloom")]
#[test]
#[ignore = "run in a child process by bloom_tile_camera_in_a_window (one winit event loop per \
            process)"]
fn child_bloom_tile_camera_in_a_window() {
    window_run_with(
        "child_bloom_tile_camera_in_a_window",
        TileDeferred::default(),
        Msaa::Off,
        1,
        false,
        WindowRunOptions {
            bloom: true,
            ..default()
        },
    );
}

/// The bloom window run with Bevy's pipelines compiled in the background, as a game's are
/// (every other GPU test compiles them synchronously): the first frames render while Bevy's
/// bloom, tone mapping and blit pipelines are still compiling, and the tile pass's writes to
/// the window's image must still wait on its acquire and reach its present, with no validation
/// message, through the resizes.
#[cfg(feature = "bloom")]
#[test]
fn bloom_tile_camera_with_pipelines_compiling_in_a_window() {
    run_window_test_in_child_process(
        "tile_window::child_bloom_tile_camera_with_pipelines_compiling_in_a_window",
    );
}

#[cfg(feature = "bloom")]
#[test]
#[ignore = "run in a child process by bloom_tile_camera_with_pipelines_compiling_in_a_window \
            (one winit event loop per process)"]
fn child_bloom_tile_camera_with_pipelines_compiling_in_a_window() {
    window_run_with(
        "child_bloom_tile_camera_with_pipelines_compiling_in_a_window",
        TileDeferred::default(),
        Msaa::Off,
        1,
        false,
        WindowRunOptions {
            bloom: true,
            pipelines_compiling: true,
            ..default()
        },
    );
}

/// Gizmos over a bloomed HDR tile camera with 4x MSAA in a window (feature `bloom`): the tile
/// pass resolves the light into the main texture, the gizmo pass writes it into every sample of
/// Bevy's multisampled texture, draws the gizmos over them and resolves into Bevy's other main
/// texture, then Bevy's bloom, tone mapping and blit write the window's image; through the
/// resizes, with no validation message, the window showing what Bevy's screenshot shows, with
/// the gizmos.
#[cfg(feature = "bloom")]
#[test]
fn gizmos_over_a_bloom_msaa_tile_camera_in_a_window() {
    run_window_test_in_child_process(
        "tile_window::child_gizmos_over_a_bloom_msaa_tile_camera_in_a_window",
    );
}

#[cfg(feature = "bloom")]
#[test]
#[ignore = "run in a child process by gizmos_over_a_bloom_msaa_tile_camera_in_a_window (one \
            winit event loop per process)"]
fn child_gizmos_over_a_bloom_msaa_tile_camera_in_a_window() {
    window_run_with(
        "child_gizmos_over_a_bloom_msaa_tile_camera_in_a_window",
        TileDeferred::default(),
        Msaa::Sample4,
        1,
        false,
        WindowRunOptions {
            bloom: true,
            gizmos: true,
            ..default()
        },
    );
}

/// What a window run adds to the plain scene.
#[derive(Clone, Copy, Default)]
struct WindowRunOptions {
    /// An HDR camera with `Bloom::NATURAL` and `BloomPlugin` in the app (feature `bloom`).
    bloom: bool,
    /// Bevy compiles its pipelines in the background (`synchronous_pipeline_compilation` off),
    /// and the run checks that some frames drew a tile camera while they were compiling. The
    /// run then reads the presented window only: Bevy's screenshot of a window skips the pass
    /// that copies the capture to the window's image while that pass's pipeline compiles,
    /// leaving the image acquired and unused (`VUID-vkAcquireNextImageKHR-semaphore-01286` on a
    /// later acquire, with or without this crate: bevy_render 0.19.1 `render_screenshot`).
    pipelines_compiling: bool,
    /// A magenta line and sphere drawn with Bevy's gizmos every frame.
    gizmos: bool,
    /// The later camera over [`INSET`] is a tile camera with the first camera's MSAA, instead
    /// of a Bevy camera without MSAA.
    inset_on_tile: bool,
}

/// Where the later Bevy camera draws (physical pixels of the 320x180 window).
const INSET: (UVec2, UVec2) = (UVec2::new(200, 16), UVec2::new(100, 60));

/// The later camera's clear colour (sRGB), clearly not the tile camera's.
const INSET_CLEAR: [u8; 3] = [64, 160, 64];

/// What the window run saw; shared because winit's runner takes the app.
#[derive(Resource, Clone, Default)]
struct SharedWindowRun(std::sync::Arc<std::sync::Mutex<WindowRun>>);

#[derive(Default)]
struct WindowRun {
    live_before_resize: i64,
    live_after_resizes: i64,
    /// The live objects after the resizes equal those before, or `SETTLE_LIMIT` came.
    settled: bool,
    /// The window's title.
    title: &'static str,
    capture: PresentedAndScreenshot,
    /// Capture the presented window only, without Bevy's screenshot (see
    /// [`WindowRunOptions::pipelines_compiling`]).
    presented_only: bool,
    presented_capture: Option<PresentedCapture>,
    /// The presented window and the screenshot (none where `presented_only`).
    captured: Option<(Frame, Option<Frame>)>,
    render_passes_recorded: usize,
    /// The samples each tile camera's frame was planned with.
    samples: Vec<u32>,
    /// What Bevy ran after the tile pass (the report's `post_processing`).
    post_processing: Vec<String>,
    /// Bevy's passes over the tile frame were priced (gizmos drawn).
    drawn_over: bool,
}

#[test]
#[ignore = "run in a child process by tile_camera_in_a_window (one winit event loop per process)"]
fn child_tile_camera_in_a_window() {
    window_run(
        "child_tile_camera_in_a_window",
        TileDeferred::default(),
        Msaa::Off,
        1,
        false,
    );
}

#[test]
#[ignore = "run in a child process by bevy_camera_over_a_tile_camera_in_a_window (one winit \
            event loop per process)"]
fn child_bevy_camera_over_a_tile_camera_in_a_window() {
    window_run(
        "child_bevy_camera_over_a_tile_camera_in_a_window",
        TileDeferred::default(),
        Msaa::Off,
        1,
        true,
    );
}

#[test]
#[ignore = "run in a child process by unmerged_msaa_tile_camera_in_a_window (one winit event \
            loop per process)"]
fn child_unmerged_msaa_tile_camera_in_a_window() {
    window_run(
        "child_unmerged_msaa_tile_camera_in_a_window",
        TileDeferred {
            merge_subpasses: false,
            ..default()
        },
        Msaa::Sample4,
        3,
        false,
    );
}

/// Runs the scene in a window with `tile` and `msaa` on the camera (and, with `inset`, a Bevy
/// camera drawing after it over [`INSET`]): resizes it, restores it, captures the presented
/// window and a screenshot, and checks what was drawn and that `render_passes` were recorded.
fn window_run(
    name: &'static str,
    tile: TileDeferred,
    msaa: Msaa,
    render_passes: usize,
    inset: bool,
) {
    window_run_with(name, tile, msaa, render_passes, inset, default());
}

/// [`window_run`] with `options`.
fn window_run_with(
    name: &'static str,
    tile: TileDeferred,
    msaa: Msaa,
    render_passes: usize,
    inset: bool,
    options: WindowRunOptions,
) {
    let WindowRunOptions {
        bloom,
        pipelines_compiling,
        gizmos,
        inset_on_tile,
    } = options;
    let test = GpuTest::start(name);
    let shared = SharedWindowRun::default();
    let mut app = App::new();
    let plugins = test_plugins_compiling(
        Some(Window {
            resolution: WindowResolution::new(320, 180),
            // Window tests find their window by its title.
            title: name.into(),
            ..default()
        }),
        !pipelines_compiling,
    );
    #[cfg(feature = "bloom")]
    let plugins = if bloom {
        plugins.add(bevy_post_process::bloom::BloomPlugin)
    } else {
        plugins
    };
    app.add_plugins(plugins)
        .add_plugins(TileDeferredPlugin)
        .insert_resource(shared.clone())
        .add_systems(Startup, move |world: &mut World| {
            scenes::spawn_lit_spheres(world);
            let mut camera = world.spawn((
                Camera3d::default(),
                scenes::reference_camera(),
                scenes::reference_camera_transform(),
                msaa,
                tile.clone(),
            ));
            #[cfg(feature = "bloom")]
            if bloom {
                camera.insert((bevy::camera::Hdr, bevy_post_process::bloom::Bloom::NATURAL));
            }
            #[cfg(not(feature = "bloom"))]
            let _ = (&mut camera, bloom);
            if inset {
                let mut inset = world.spawn((
                    Camera3d::default(),
                    Camera {
                        order: 1,
                        viewport: Some(Viewport {
                            physical_position: INSET.0,
                            physical_size: INSET.1,
                            ..default()
                        }),
                        clear_color: ClearColorConfig::Custom(Color::srgb_u8(
                            INSET_CLEAR[0],
                            INSET_CLEAR[1],
                            INSET_CLEAR[2],
                        )),
                        ..default()
                    },
                    // Looking up at the empty sky: its clear colour, untouched by tonemapping.
                    Transform::from_xyz(0.0, 1.0, 0.0)
                        .looking_at(Vec3::new(0.0, 100.0, 0.0), Vec3::Z),
                    Tonemapping::None,
                    DebandDither::Disabled,
                    Msaa::Off,
                ));
                if inset_on_tile {
                    inset.insert((msaa, tile.clone()));
                }
            }
        })
        .add_systems(Update, drive_window_run)
        .add_systems(Update, draw_gizmos.run_if(move || gizmos));
    // Frames whose render world drew a tile view while Bevy still had pipelines to compile.
    let frames_compiling = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = frames_compiling.clone();
    // In the tile camera's own schedule: it runs only when a tile view is rendered.
    app.sub_app_mut(RenderApp)
        .add_systems(TileDeferredGraph, move |cache: Res<PipelineCache>| {
            if cache.waiting_pipelines().next().is_some() {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
    {
        let mut run = shared.0.lock().unwrap();
        run.title = name;
        run.presented_only = pipelines_compiling;
    }
    app.run();
    let frames_compiling = frames_compiling.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("{name}: {frames_compiling} frames drew a tile camera with pipelines compiling");
    if pipelines_compiling {
        assert!(
            frames_compiling > 0,
            "no frame drew a tile camera while Bevy's pipelines were compiling: the run does \
             not test those frames"
        );
    }

    let run = std::mem::take(&mut *shared.0.lock().unwrap());
    assert_eq!(
        run.render_passes_recorded, render_passes,
        "render passes recorded per frame"
    );
    // Every tile camera keeps the camera's MSAA, a later one over a viewport too.
    let tile_cameras = if inset_on_tile { 2 } else { 1 };
    assert_eq!(
        run.samples,
        vec![msaa.samples(); tile_cameras],
        "planned samples"
    );
    let errors = test.take_errors();
    assert!(errors.is_empty(), "errors in the window run: {errors:#?}");
    let post_processed: &[&str] = if bloom { &["Bloom"] } else { &[] };
    assert_eq!(
        run.post_processing, post_processed,
        "run after the tile pass"
    );
    assert_eq!(run.drawn_over, gizmos, "Bevy's pass over the tile frame");
    assert!(run.live_before_resize > 0);
    assert_eq!(
        run.live_after_resizes, run.live_before_resize,
        "resizing and restoring the window leaves as many Vulkan objects as before"
    );
    let (presented, screenshot) = run.captured.expect("the window was captured");
    presented.save_png(&format!("{name}-presented"));
    if let Some(frame) = &screenshot {
        frame.save_png(name);
        assert_eq!((frame.width, frame.height), (320, 180));
        // What the window shows is the screenshot (with a Bevy camera drawing after the tile
        // pass too: not its drawing over wgpu's zero fill).
        presented::assert_presented_matches_screenshot(name, &presented, frame, None);
    }
    let frame = screenshot.as_ref().unwrap_or(&presented);
    let (black, total) = presented::black_outside(&presented, None);
    assert!(
        black * 100 < total,
        "{black} of {total} presented pixels are black"
    );
    let red = frame
        .rgba
        .chunks_exact(4)
        .filter(|p| p[0] > 120 && p[1] < 60 && p[2] < 60)
        .count();
    assert!(
        red > 300,
        "the red sphere is on the window's screenshot or presented image ({red} red pixels)"
    );
    if inset {
        // The later camera drew its viewport (its clear colour shows around what it sees).
        let (position, size) = INSET;
        let inset_clear = (position.y..position.y + size.y)
            .flat_map(|y| (position.x..position.x + size.x).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = presented.pixel(x as i32, y as i32);
                (0..3).all(|c| p[c].abs_diff(INSET_CLEAR[c]) <= 4)
            })
            .count();
        assert!(
            inset_clear * 4 > (size.x * size.y) as usize,
            "the later camera's viewport shows its clear colour ({inset_clear} pixels)"
        );
    }
}

/// The window run's gizmos: a magenta line across the spheres and a sphere's outline.
fn draw_gizmos(mut gizmos: Gizmos) {
    let magenta = Color::srgb(1.0, 0.0, 1.0);
    gizmos.line(Vec3::new(-2.0, 0.5, 0.0), Vec3::new(2.0, 0.5, 0.0), magenta);
    gizmos.sphere(
        Isometry3d::from_translation(Vec3::new(0.0, 0.5, 0.0)),
        0.9,
        magenta,
    );
}

fn drive_window_run(
    mut commands: Commands,
    frames: Res<FrameCount>,
    mut windows: Query<&mut Window>,
    cameras: Query<Entity, With<TileDeferred>>,
    reports: Res<TileRenderReports>,
    shared: Res<SharedWindowRun>,
    mut exit: MessageWriter<AppExit>,
) {
    /// The last frame on which the live objects are counted after the resizes.
    const SETTLE_LIMIT: u32 = 150;
    let mut run = shared.0.lock().unwrap();
    let Ok(mut window) = windows.single_mut() else {
        return;
    };
    match frames.0 {
        10 => {
            run.live_before_resize = reports.live_vulkan_objects();
            run.render_passes_recorded = cameras
                .iter()
                .filter_map(|camera| reports.get(camera))
                .map(|report| report.render_passes_recorded)
                .sum();
            run.samples = cameras
                .iter()
                .filter_map(|camera| reports.get(camera))
                .filter_map(|report| {
                    report
                        .compiled
                        .attachment_named("depth")
                        .map(|depth| depth.samples)
                })
                .collect();
            run.post_processing = cameras
                .iter()
                .filter_map(|camera| reports.get(camera))
                .flat_map(|report| report.post_processing)
                .collect();
            run.drawn_over = cameras
                .iter()
                .filter_map(|camera| reports.get(camera))
                .any(|report| report.gizmo_pass.is_some());
            window.resolution.set(400.0, 240.0);
        }
        20 => window.resolution.set(320.0, 180.0),
        // Counted once the retired swapchain framebuffers are gone: under load (every window
        // test at once) the GPU may still hold one 10 frames after the resize. A leak never
        // settles, and fails.
        30..=SETTLE_LIMIT if !run.settled => {
            run.live_after_resizes = reports.live_vulkan_objects();
            run.settled =
                run.live_after_resizes == run.live_before_resize || frames.0 == SETTLE_LIMIT;
        }
        31.. if run.captured.is_none() && run.settled => {
            let title = run.title;
            run.captured = if run.presented_only {
                let presented = run
                    .presented_capture
                    .get_or_insert_with(|| PresentedCapture::start(title))
                    .poll();
                presented.map(|presented| (presented, None))
            } else {
                run.capture
                    .step(&mut commands, title)
                    .map(|(presented, screenshot)| (presented, Some(screenshot)))
            };
        }
        _ => {}
    }
    if run.captured.is_some() || frames.0 > 300 {
        exit.write(AppExit::Success);
    }
}
