//! Suspend and resume, as Android does it (issue 16): when the activity stops, its surface is
//! destroyed; when it comes back, a new surface is made for the window. bevy_winit 0.19.1 does
//! this by removing the primary window's `RawHandleWrapper` on `suspended` (Bevy's renderer then
//! drops the window's surface and swapchain) and inserting a new one on `resumed` (a new surface
//! is created). This test does the same to a window under Xvfb while a tile camera (4x MSAA)
//! renders into it, and sends the same `AppLifecycle` messages.
//!
//! While suspended the tile path must stop drawing and give back the view's swapchain-sized
//! attachments and framebuffers; after resuming it draws the same image again, holds exactly the
//! Vulkan objects it held before, and nothing logs an error.

use crate::harness::{
    Frame, GpuTest,
    image_compare::psnr,
    presented::{self, PresentedAndScreenshot},
    run_window_test_in_child_process,
    window::{Shared, drawn_fraction, latest_report_frame, lit_spheres_window_app},
};
use bevy::{
    diagnostic::FrameCount,
    prelude::*,
    window::{AppLifecycle, PrimaryWindow, RawHandleWrapper},
};
use bevy_tile_deferred::{TileDeferred, TileRenderReports, TileResourceCounts as ResourceCounts};

const TITLE: &str = "child_tile_window_suspended_and_resumed";
/// Frames rendered before anything is measured (pipelines built, the view settled).
const WARM_FRAMES: u32 = 20;
/// Frames after a capture before counting objects: a screenshot frame's framebuffer and the
/// retired per-frame objects are destroyed a few frames after their last use.
const SETTLE_FRAMES: u32 = 10;
/// At most this many frames after the capture on resuming, while the live objects differ from
/// before the suspension: under load (every window test at once) a retired framebuffer can
/// outlast `SETTLE_FRAMES` before the GPU is done with it. A leak never settles, and fails.
const MAX_SETTLE_FRAMES: u32 = 120;
/// Frames the app runs while suspended (more than the tile path keeps an unused view).
const SUSPENDED_FRAMES: u32 = 20;

#[test]
fn a_tile_window_suspended_and_resumed_renders_again_and_leaks_nothing() {
    run_window_test_in_child_process("suspend::child_tile_window_suspended_and_resumed");
}

/// Where the run is.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
enum Phase {
    #[default]
    Warming,
    CapturingBefore,
    SettlingBefore(u32),
    Suspended(u32),
    Resumed(u32),
    CapturingAfter,
    SettlingAfter(u32),
    Done,
}

/// What the run saw.
#[derive(Default)]
struct Seen {
    phase: Phase,
    capture: PresentedAndScreenshot,
    before: Option<(Frame, Frame)>,
    after: Option<(Frame, Frame)>,
    counts_before: ResourceCounts,
    counts_suspended: ResourceCounts,
    counts_after: ResourceCounts,
    report_frame_before: Option<u64>,
    /// The camera's report frame at the end of the suspension (None: forgotten).
    report_frame_suspended: Option<u64>,
    report_frame_after: Option<u64>,
    /// The window's handle while it is taken away.
    handle: Option<RawHandleWrapper>,
}

#[test]
#[ignore = "run in a child process by \
            a_tile_window_suspended_and_resumed_renders_again_and_leaks_nothing"]
fn child_tile_window_suspended_and_resumed() {
    let test = GpuTest::start("suspended_and_resumed");
    let shared = Shared::<Seen>::default();
    lit_spheres_window_app(TITLE, 320, 180, true, &shared)
        .add_systems(Update, drive)
        .run();

    let seen = shared.take();
    let summary = format!(
        "phase {:?}; objects before {:?}, suspended {:?}, after {:?}; report frames before \
         {:?}, suspended {:?}, after {:?}",
        seen.phase,
        seen.counts_before,
        seen.counts_suspended,
        seen.counts_after,
        seen.report_frame_before,
        seen.report_frame_suspended,
        seen.report_frame_after
    );
    eprintln!("{summary}");
    assert_eq!(seen.phase, Phase::Done, "the run finished: {summary}");
    let errors = test.take_errors();
    assert!(errors.is_empty(), "{errors:#?}");

    // Suspended: nothing drawn, the view's attachments and framebuffers given back.
    assert!(
        seen.report_frame_suspended <= seen.report_frame_before,
        "the camera was not drawn while its surface was gone: {summary}"
    );
    let (before, suspended) = (&seen.counts_before, &seen.counts_suspended);
    assert!(before.images > 0 && before.framebuffers > 0, "{summary}");
    assert_eq!(
        (suspended.images, suspended.framebuffers),
        (0, 0),
        "attachments and framebuffers released while suspended: {summary}"
    );
    assert!(
        suspended.gpu_allocated_bytes < before.gpu_allocated_bytes,
        "attachment memory released while suspended: {summary}"
    );

    // Resumed: drawing again, the same objects as before.
    assert!(
        seen.report_frame_after > seen.report_frame_before,
        "the tile path draws again after resuming: {summary}"
    );
    assert_eq!(
        seen.counts_after.vulkan_objects(),
        seen.counts_before.vulkan_objects(),
        "the same live Vulkan objects before and after: {summary}"
    );
    assert_eq!(
        seen.counts_after.gpu_allocated_bytes, seen.counts_before.gpu_allocated_bytes,
        "{summary}"
    );

    // What the window showed: the scene before, the same scene after (static scene and camera).
    let (presented_before, screenshot_before) = seen.before.expect("captured before");
    let (presented_after, screenshot_after) = seen.after.expect("captured after");
    presented::assert_presented_matches_screenshot(
        "suspend_before",
        &presented_before,
        &screenshot_before,
        None,
    );
    presented::assert_presented_matches_screenshot(
        "suspend_after",
        &presented_after,
        &screenshot_after,
        None,
    );
    let drawn = drawn_fraction(&presented_after);
    assert!(
        drawn > 0.2,
        "the resumed window shows the scene, not the clear colour ({drawn:.3} drawn)"
    );
    let similarity = psnr(&presented_before, &presented_after);
    if similarity < 36.0 {
        presented_before.save_png("suspend_presented_before");
        presented_after.save_png("suspend_presented_after");
    }
    assert!(
        similarity >= 36.0,
        "the window shows the same image after resuming: {similarity:.1} dB"
    );
}

fn drive(
    mut commands: Commands,
    frames: Res<FrameCount>,
    window: Query<(Entity, Option<&RawHandleWrapper>), With<PrimaryWindow>>,
    cameras: Query<Entity, With<TileDeferred>>,
    reports: Res<TileRenderReports>,
    shared: Res<Shared<Seen>>,
    mut lifecycle: MessageWriter<AppLifecycle>,
    mut exit: MessageWriter<AppExit>,
) {
    let mut seen = shared.lock();
    let seen = &mut *seen;
    let Ok((window, handle)) = window.single() else {
        return;
    };
    let report_frame = || latest_report_frame(&reports, cameras.iter());
    seen.phase = match seen.phase {
        Phase::Warming if frames.0 >= WARM_FRAMES => Phase::CapturingBefore,
        Phase::CapturingBefore => match seen.capture.step(&mut commands, TITLE) {
            Some(captured) => {
                seen.before = Some(captured);
                Phase::SettlingBefore(0)
            }
            None => Phase::CapturingBefore,
        },
        Phase::SettlingBefore(n) if n < SETTLE_FRAMES => Phase::SettlingBefore(n + 1),
        Phase::SettlingBefore(_) => {
            // What bevy_winit does on Android's `suspended`: the window's raw handle goes, and
            // with it Bevy's surface and swapchain.
            seen.counts_before = reports.resource_counts();
            seen.report_frame_before = report_frame();
            seen.handle = handle.cloned();
            assert!(seen.handle.is_some(), "the window has a raw handle");
            lifecycle.write(AppLifecycle::WillSuspend);
            lifecycle.write(AppLifecycle::Suspended);
            commands.entity(window).remove::<RawHandleWrapper>();
            Phase::Suspended(0)
        }
        Phase::Suspended(n) if n < SUSPENDED_FRAMES => Phase::Suspended(n + 1),
        Phase::Suspended(_) => {
            // And on `resumed`: a handle again, so a new surface is created.
            seen.counts_suspended = reports.resource_counts();
            seen.report_frame_suspended = report_frame();
            lifecycle.write(AppLifecycle::WillResume);
            lifecycle.write(AppLifecycle::Running);
            let handle = seen.handle.take().expect("the handle taken at suspension");
            commands.entity(window).insert(handle);
            Phase::Resumed(0)
        }
        Phase::Resumed(n) if n < WARM_FRAMES => Phase::Resumed(n + 1),
        Phase::Resumed(_) => Phase::CapturingAfter,
        Phase::CapturingAfter => match seen.capture.step(&mut commands, TITLE) {
            Some(captured) => {
                seen.after = Some(captured);
                Phase::SettlingAfter(0)
            }
            None => Phase::CapturingAfter,
        },
        Phase::SettlingAfter(n)
            if n < SETTLE_FRAMES
                || (n < MAX_SETTLE_FRAMES
                    && reports.resource_counts().vulkan_objects()
                        != seen.counts_before.vulkan_objects()) =>
        {
            Phase::SettlingAfter(n + 1)
        }
        Phase::SettlingAfter(_) => {
            seen.counts_after = reports.resource_counts();
            seen.report_frame_after = report_frame();
            Phase::Done
        }
        other => other,
    };
    if seen.phase == Phase::Done || frames.0 > 2000 {
        exit.write(AppExit::Success);
    }
}
