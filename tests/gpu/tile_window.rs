//! A tile camera drawing into a real window (Xvfb on CI): presented frames, resizes that
//! rebuild the framebuffers without leaking, and a screenshot of the window.
//!
//! winit allows one event loop per process, so each window scenario runs in a child process of
//! this test binary (an ignored test run by its parent).

use crate::{
    harness::{Frame, GpuTest, run_window_test_in_child_process, test_plugins},
    scenes,
};
use bevy::{
    diagnostic::FrameCount,
    prelude::*,
    render::view::{
        Msaa,
        screenshot::{Screenshot, ScreenshotCaptured},
    },
    window::WindowResolution,
};
use bevy_tile_deferred::{TileDeferred, TileDeferredPlugin, TileRenderReports};

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

/// What the window run saw; shared because winit's runner takes the app.
#[derive(Resource, Clone, Default)]
struct SharedWindowRun(std::sync::Arc<std::sync::Mutex<WindowRun>>);

#[derive(Default)]
struct WindowRun {
    live_before_resize: i64,
    live_after_resizes: i64,
    screenshot: Option<Image>,
    requested: bool,
    render_passes_recorded: usize,
}

#[test]
#[ignore = "run in a child process by tile_camera_in_a_window (one winit event loop per process)"]
fn child_tile_camera_in_a_window() {
    window_run(
        "child_tile_camera_in_a_window",
        TileDeferred::default(),
        Msaa::Off,
        1,
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
    );
}

/// Runs the scene in a window with `tile` and `msaa` on the camera: resizes it, restores it,
/// takes a screenshot, and checks what was drawn and that `render_passes` were recorded.
fn window_run(name: &'static str, tile: TileDeferred, msaa: Msaa, render_passes: usize) {
    let test = GpuTest::start(name);
    let shared = SharedWindowRun::default();
    let mut app = App::new();
    app.add_plugins(test_plugins(Some(Window {
        resolution: WindowResolution::new(320, 180),
        title: "bevy_tile_deferred window test".into(),
        ..default()
    })))
    .add_plugins(TileDeferredPlugin)
    .insert_resource(shared.clone())
    .add_systems(Startup, move |world: &mut World| {
        scenes::spawn_lit_spheres(world);
        world.spawn((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            msaa,
            tile.clone(),
        ));
    })
    .add_systems(Update, drive_window_run);
    app.run();

    let run = std::mem::take(&mut *shared.0.lock().unwrap());
    assert_eq!(
        run.render_passes_recorded, render_passes,
        "render passes recorded per frame"
    );
    let errors = test.take_errors_except_swapchain_noise();
    assert!(errors.is_empty(), "errors in the window run: {errors:#?}");
    assert!(run.live_before_resize > 0);
    assert_eq!(
        run.live_after_resizes, run.live_before_resize,
        "resizing and restoring the window leaves as many Vulkan objects as before"
    );
    let image = run.screenshot.expect("the window was captured");
    let rgba = image.try_into_dynamic().unwrap().to_rgba8();
    let frame = Frame {
        width: rgba.width(),
        height: rgba.height(),
        rgba: rgba.into_raw(),
    };
    frame.save_png(name);
    assert_eq!((frame.width, frame.height), (320, 180));
    let red = frame
        .rgba
        .chunks_exact(4)
        .filter(|p| p[0] > 120 && p[1] < 60 && p[2] < 60)
        .count();
    assert!(
        red > 300,
        "the red sphere is on the window's screenshot ({red} red pixels)"
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
            window.resolution.set(400.0, 240.0);
        }
        20 => window.resolution.set(320.0, 180.0),
        30 => run.live_after_resizes = reports.live_vulkan_objects(),
        31.. if !run.requested => {
            run.requested = true;
            commands.spawn(Screenshot::primary_window()).observe(
                |captured: On<ScreenshotCaptured>, shared: Res<SharedWindowRun>| {
                    shared.0.lock().unwrap().screenshot = Some(captured.image.clone());
                },
            );
        }
        _ => {}
    }
    if run.screenshot.is_some() || frames.0 > 300 {
        exit.write(AppExit::Success);
    }
}
