//! Surface loss (issue 17), under Xvfb, each run in a child process (one winit event loop per
//! process):
//! - a tile camera's window shrinks to nothing (0 x 0, as minimised), comes back at another
//!   size, then at its own;
//! - a tile camera's window is closed (its entity despawned, so Bevy drops its surface and
//!   swapchain) and a new window is opened and targeted by the camera;
//! - the X window is resized behind Bevy's back, so that the swapchain no longer matches it
//!   (what the driver answers `vkAcquireNextImageKHR`/`vkQueuePresentKHR` with then: see
//!   [`a_swapchain_gone_stale_renders_again_and_leaks_nothing`]).
//!
//! Each time the tile path draws again once the window is back, and holds exactly the Vulkan
//! objects (and GPU memory) it held before.

use crate::harness::{
    Frame, GpuTest, capture,
    image_compare::psnr,
    presented::{self, PresentedAndScreenshot},
    record_error_counts, run_window_test_against_control, run_window_test_against_control_with_env,
    run_window_test_in_child_process,
    window::{Shared, drawn_fraction, latest_report_frame, lit_spheres_window_app},
};
use bevy::{
    camera::RenderTarget,
    diagnostic::FrameCount,
    ecs::system::NonSendMarker,
    prelude::*,
    window::{PrimaryWindow, WindowRef, WindowResolution},
};
use bevy_tile_deferred::{TileDeferred, TileRenderReports, TileResourceCounts as ResourceCounts};

// Stock Bevy 0.19.1 (wgpu 29) gives validation errors of its own under Xvfb when it configures
// a surface at a size the X window no longer has (`VUID-VkSwapchainCreateInfoKHR-imageExtent-01274`;
// for a window set to 0 x 0 it configures the surface at 1 x 1, and around that swapchain an
// acquire semaphore is reused signalled and an image presented unwritten, `...-01286` and
// `...-01296`). The tests of those scenarios run a Bevy camera as the control
// (`run_window_test_against_control`): the tile run may give what Bevy's gives, no more.

#[test]
fn a_tile_window_shrunk_to_nothing_renders_again_and_leaks_nothing() {
    // Stock Bevy's run gives validation messages of its own here (the stale extent, and an
    // acquire and a present around the 1 x 1 swapchain): the tile run may give those, no more.
    run_window_test_against_control(
        "surface_loss::child_bevy_window_shrunk_to_nothing",
        "surface_loss::child_tile_window_shrunk_to_nothing",
    );
}

/// What the run saw, per phase.
#[derive(Default, Debug)]
struct Seen {
    live_before: ResourceCounts,
    live_after: ResourceCounts,
    /// The tile report's frame number at the end of each phase.
    report_frames: Vec<Option<u64>>,
    sizes: Vec<UVec2>,
    done: bool,
}

#[test]
#[ignore = "run in a child process by a_tile_window_shrunk_to_nothing_renders_again_and_leaks_nothing"]
fn child_tile_window_shrunk_to_nothing() {
    shrink_to_nothing(true);
}

#[test]
#[ignore = "run in a child process by a_tile_window_shrunk_to_nothing_renders_again_and_leaks_nothing"]
fn child_bevy_window_shrunk_to_nothing() {
    shrink_to_nothing(false);
}

/// Runs the window phases with a tile camera (`tile`) or a Bevy one.
fn shrink_to_nothing(tile: bool) {
    let test = GpuTest::start("shrink_to_nothing");
    let shared = Shared::<Seen>::default();
    lit_spheres_window_app(
        "child_tile_window_shrunk_to_nothing",
        320,
        180,
        tile,
        &shared,
    )
    .add_systems(Update, drive)
    .run();
    let seen = shared.take();
    eprintln!("{seen:?}");
    assert!(seen.done, "the run finished: {seen:?}");
    let errors = test.take_errors();
    // The parent compares both runs' errors; run alone, the child allows none.
    if !record_error_counts(&errors) {
        assert!(errors.is_empty(), "{errors:#?}");
    }
    if !tile {
        return;
    }
    // Phases: before, 0x0, 200x120, restored. The tile path rendered before and after.
    let frames = &seen.report_frames;
    assert!(frames[0].is_some(), "{seen:?}");
    assert!(
        frames[3] > frames[2] && frames[3] > frames[0],
        "the tile path renders again after the window came back: {seen:?}"
    );
    assert!(seen.live_before.vulkan_objects() > 0);
    assert_same_objects(&seen.live_before, &seen.live_after, &format!("{seen:?}"));
}

fn drive(
    frames: Res<FrameCount>,
    mut windows: Query<&mut Window>,
    cameras: Query<Entity, With<TileDeferred>>,
    reports: Res<TileRenderReports>,
    shared: Res<Shared<Seen>>,
    mut exit: MessageWriter<AppExit>,
) {
    let mut seen = shared.lock();
    let Ok(mut window) = windows.single_mut() else {
        return;
    };
    let end_phase = |seen: &mut Seen, window: &Window| {
        seen.report_frames
            .push(latest_report_frame(&reports, cameras.iter()));
        seen.sizes.push(window.physical_size());
    };
    match frames.0 {
        15 => {
            seen.live_before = reports.resource_counts();
            end_phase(&mut seen, &window);
            window.resolution.set_physical_resolution(0, 0);
        }
        30 => {
            end_phase(&mut seen, &window);
            window.resolution.set_physical_resolution(200, 120);
        }
        45 => {
            end_phase(&mut seen, &window);
            window.resolution.set_physical_resolution(320, 180);
        }
        // Views, framebuffers and attachments of the other sizes are retired a few frames
        // after their last use.
        75 => {
            end_phase(&mut seen, &window);
            seen.live_after = reports.resource_counts();
            seen.done = true;
        }
        _ => {}
    }
    if seen.done || frames.0 > 400 {
        exit.write(AppExit::Success);
    }
}

const CLOSED_TITLE: &str = "child_tile_window_closed";
const REOPENED_TITLE: &str = "child_tile_window_reopened";
/// Frames rendered before anything is measured (pipelines built, the view settled).
const WARM_FRAMES: u32 = 20;
/// Frames after a capture before counting objects: a screenshot frame's framebuffer and the
/// retired per-frame objects are destroyed a few frames after their last use.
const SETTLE_FRAMES: u32 = 10;
/// Frames the app runs with no window (more than the tile path keeps an unused view).
const CLOSED_FRAMES: u32 = 20;

#[test]
fn a_tile_window_closed_and_reopened_renders_again_and_leaks_nothing() {
    run_window_test_in_child_process("surface_loss::child_tile_window_closed_and_reopened");
}

/// Where the closed-and-reopened run is.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
enum Reopening {
    #[default]
    Warming,
    CapturingBefore,
    SettlingBefore(u32),
    Closed(u32),
    Reopened(u32),
    CapturingAfter,
    SettlingAfter(u32),
    Done,
}

/// What the closed-and-reopened run saw.
#[derive(Default)]
struct Reopen {
    phase: Reopening,
    capture: PresentedAndScreenshot,
    before: Option<(Frame, Frame)>,
    after: Option<(Frame, Frame)>,
    counts_before: ResourceCounts,
    counts_closed: ResourceCounts,
    counts_after: ResourceCounts,
    report_frame_before: Option<u64>,
    report_frame_closed: Option<u64>,
    report_frame_after: Option<u64>,
    /// The first and the second window.
    windows: Vec<Entity>,
}

#[test]
#[ignore = "run in a child process by \
            a_tile_window_closed_and_reopened_renders_again_and_leaks_nothing"]
fn child_tile_window_closed_and_reopened() {
    let test = GpuTest::start("closed_and_reopened");
    let shared = Shared::<Reopen>::default();
    lit_spheres_window_app(CLOSED_TITLE, 320, 180, true, &shared)
        .add_systems(Update, close_and_reopen)
        .run();

    let seen = shared.take();
    let summary = format!(
        "phase {:?}; windows {:?}; objects before {:?}, closed {:?}, after {:?}; report frames \
         before {:?}, closed {:?}, after {:?}",
        seen.phase,
        seen.windows,
        seen.counts_before,
        seen.counts_closed,
        seen.counts_after,
        seen.report_frame_before,
        seen.report_frame_closed,
        seen.report_frame_after
    );
    eprintln!("{summary}");
    assert_eq!(seen.phase, Reopening::Done, "the run finished: {summary}");
    let errors = test.take_errors();
    assert!(errors.is_empty(), "{errors:#?}");

    // Closed: nothing drawn, the view's attachments and framebuffers given back.
    assert!(
        seen.report_frame_closed <= seen.report_frame_before,
        "the camera was not drawn while it had no window: {summary}"
    );
    let (before, closed) = (&seen.counts_before, &seen.counts_closed);
    assert!(before.images > 0 && before.framebuffers > 0, "{summary}");
    assert_eq!(
        (closed.images, closed.framebuffers),
        (0, 0),
        "attachments and framebuffers released while the window was closed: {summary}"
    );
    assert!(
        closed.gpu_allocated_bytes < before.gpu_allocated_bytes,
        "attachment memory released while the window was closed: {summary}"
    );

    // Reopened (same size): drawing again, the same objects and memory as before.
    assert!(
        seen.report_frame_after > seen.report_frame_before,
        "the tile path draws into the new window: {summary}"
    );
    assert_same_objects(&seen.counts_before, &seen.counts_after, &summary);
    assert_eq!(
        seen.counts_after.gpu_allocated_bytes, seen.counts_before.gpu_allocated_bytes,
        "{summary}"
    );

    // What the windows showed: the scene in the first, the same scene in the second.
    let (presented_before, screenshot_before) = seen.before.expect("captured before");
    let (presented_after, screenshot_after) = seen.after.expect("captured after");
    presented::assert_presented_matches_screenshot(
        "reopen_before",
        &presented_before,
        &screenshot_before,
        None,
    );
    presented::assert_presented_matches_screenshot(
        "reopen_after",
        &presented_after,
        &screenshot_after,
        None,
    );
    let drawn = drawn_fraction(&presented_after);
    assert!(
        drawn > 0.2,
        "the new window shows the scene, not the clear colour ({drawn:.3} drawn)"
    );
    let similarity = psnr(&presented_before, &presented_after);
    if similarity < 36.0 {
        presented_before.save_png("reopen_presented_before");
        presented_after.save_png("reopen_presented_after");
    }
    assert!(
        similarity >= 36.0,
        "the new window shows what the first one did: {similarity:.1} dB"
    );
}

fn close_and_reopen(
    mut commands: Commands,
    frames: Res<FrameCount>,
    primary: Query<Entity, With<PrimaryWindow>>,
    mut cameras: Query<(Entity, &mut RenderTarget), With<TileDeferred>>,
    reports: Res<TileRenderReports>,
    shared: Res<Shared<Reopen>>,
    mut exit: MessageWriter<AppExit>,
) {
    let mut seen = shared.lock();
    let seen = &mut *seen;
    let report_frame = || latest_report_frame(&reports, cameras.iter().map(|(camera, _)| camera));
    seen.phase = match seen.phase {
        Reopening::Warming if frames.0 >= WARM_FRAMES => Reopening::CapturingBefore,
        Reopening::CapturingBefore => match seen.capture.step(&mut commands, CLOSED_TITLE) {
            Some(captured) => {
                seen.before = Some(captured);
                Reopening::SettlingBefore(0)
            }
            None => Reopening::CapturingBefore,
        },
        Reopening::SettlingBefore(n) if n < SETTLE_FRAMES => Reopening::SettlingBefore(n + 1),
        Reopening::SettlingBefore(_) => {
            // Closing a window is despawning it: Bevy closes the winit window and drops the
            // window's surface and swapchain; the camera's target no longer exists.
            seen.counts_before = reports.resource_counts();
            seen.report_frame_before = report_frame();
            let window = primary.single().expect("the first window");
            seen.windows.push(window);
            commands.entity(window).despawn();
            Reopening::Closed(0)
        }
        Reopening::Closed(n) if n < CLOSED_FRAMES => Reopening::Closed(n + 1),
        Reopening::Closed(_) => {
            seen.counts_closed = reports.resource_counts();
            seen.report_frame_closed = report_frame();
            // A new window (primary, for the screenshot), and the camera pointed at it.
            let window = commands
                .spawn((
                    Window {
                        resolution: WindowResolution::new(320, 180),
                        title: REOPENED_TITLE.into(),
                        ..default()
                    },
                    PrimaryWindow,
                ))
                .id();
            seen.windows.push(window);
            for (_, mut target) in &mut cameras {
                *target = RenderTarget::Window(WindowRef::Entity(window));
            }
            Reopening::Reopened(0)
        }
        Reopening::Reopened(n) if n < WARM_FRAMES => Reopening::Reopened(n + 1),
        Reopening::Reopened(_) => Reopening::CapturingAfter,
        Reopening::CapturingAfter => match seen.capture.step(&mut commands, REOPENED_TITLE) {
            Some(captured) => {
                seen.after = Some(captured);
                Reopening::SettlingAfter(0)
            }
            None => Reopening::CapturingAfter,
        },
        Reopening::SettlingAfter(n) if n < SETTLE_FRAMES => Reopening::SettlingAfter(n + 1),
        Reopening::SettlingAfter(_) => {
            seen.counts_after = reports.resource_counts();
            seen.report_frame_after = report_frame();
            Reopening::Done
        }
        other => other,
    };
    if seen.phase == Reopening::Done || frames.0 > 2000 {
        exit.write(AppExit::Success);
    }
}

const STALE_TITLE: &str = "child_tile_swapchain_gone_stale";
/// Frames with the X window at the size Bevy does not know of yet, and after it is back.
const STALE_FRAMES: u32 = 20;
/// Frames at the last size before the phase ends (the tile report comes a frame late).
const STALE_SETTLE_FRAMES: u32 = 6;

/// The X window of a tile camera (4x MSAA) is resized through winit (by the X server, as a
/// window manager or the user would), not through Bevy, every frame for a while: the
/// swapchain Bevy made for the size it knew no longer matches the window until Bevy hears of
/// the resize and configures the surface again, by which time the window has moved on.
///
/// Who sees the stale swapchain: only wgpu. The crate never calls `vkAcquireNextImageKHR` or
/// `vkQueuePresentKHR`; it records into the swapchain image Bevy acquired (through wgpu) for
/// the frame and leaves it in `PRESENT_SRC_KHR`. `VK_ERROR_OUT_OF_DATE_KHR` from the acquire
/// becomes `CurrentSurfaceTexture::Outdated` in wgpu-hal (`swapchain/native.rs`), and Bevy's
/// `prepare_windows` answers it by configuring the surface again with the configuration it has
/// and acquiring once more; from the present, wgpu-core maps it to `Status::Outdated` and wgpu
/// drops it (the next acquire fails the same way). `VK_SUBOPTIMAL_KHR` is taken as success
/// (wgpu-hal logs it for a present). Mesa 22.3's lavapipe under Xvfb answers a stale present
/// with `VK_SUBOPTIMAL_KHR`, not `VK_ERROR_OUT_OF_DATE_KHR`: the test records what the driver
/// answered (wgpu's debug messages), prints it, and asserts that the driver did notice the
/// stale swapchain, that the tile path drew through it and after, at the new size, that the
/// only validation message is the one stock Bevy gives for the same resizes
/// (`VUID-VkSwapchainCreateInfoKHR-imageExtent-01274`, a Bevy camera run shows it), and that the crate holds the
/// same objects and memory once the window has its old size again.
#[test]
fn a_swapchain_gone_stale_renders_again_and_leaks_nothing() {
    run_window_test_against_control_with_env(
        "surface_loss::child_bevy_swapchain_gone_stale",
        "surface_loss::child_tile_swapchain_gone_stale",
        &[(capture::WATCH_SWAPCHAIN_ENV, "1")],
    );
}

/// Where the stale-swapchain run is.
#[derive(Default, Debug, Clone, Copy, PartialEq)]
enum Staling {
    #[default]
    Warming,
    Stale(u32),
    Restored(u32),
    Capturing,
    Settling(u32),
    Done,
}

/// What the stale-swapchain run saw.
#[derive(Default)]
struct Stale {
    phase: Staling,
    capture: PresentedAndScreenshot,
    after: Option<(Frame, Frame)>,
    counts_before: ResourceCounts,
    counts_after: ResourceCounts,
    report_frames: Vec<Option<u64>>,
    /// The tile report's output size at the end of each phase.
    report_sizes: Vec<Option<UVec2>>,
    /// Bevy's idea of the window's size at the end of each phase.
    window_sizes: Vec<UVec2>,
    /// wgpu's surface messages during each phase.
    events: Vec<Vec<String>>,
}

#[test]
#[ignore = "run in a child process by a_swapchain_gone_stale_renders_again_and_leaks_nothing"]
fn child_tile_swapchain_gone_stale() {
    go_stale(true);
}

#[test]
#[ignore = "run in a child process by a_swapchain_gone_stale_renders_again_and_leaks_nothing"]
fn child_bevy_swapchain_gone_stale() {
    go_stale(false);
}

/// Runs the stale-swapchain phases with a tile camera (`tile`) or a Bevy one.
fn go_stale(tile: bool) {
    let test = GpuTest::start("swapchain_gone_stale");
    let shared = Shared::<Stale>::default();
    lit_spheres_window_app(STALE_TITLE, 320, 180, tile, &shared)
        .add_systems(Update, drive_stale)
        .run();

    let seen = shared.take();
    let summary = format!(
        "phase {:?}; objects before {:?}, after {:?}; report frames {:?}, sizes {:?}; window \
         sizes {:?}",
        seen.phase,
        seen.counts_before,
        seen.counts_after,
        seen.report_frames,
        seen.report_sizes,
        seen.window_sizes,
    );
    eprintln!("{summary}");
    for (phase, events) in ["warming", "stale", "restored"].iter().zip(&seen.events) {
        eprintln!("surface messages while {phase}:");
        for event in events {
            eprintln!("  {event}");
        }
    }
    assert_eq!(seen.phase, Staling::Done, "the run finished: {summary}");
    let errors = test.take_errors();
    // The parent compares both runs' errors; run alone, the child allows none.
    if !record_error_counts(&errors) {
        assert!(errors.is_empty(), "{errors:#?}");
    }

    // The driver noticed: a present answered SUBOPTIMAL, or an acquire OUT_OF_DATE (Bevy then
    // configures the surface at the size it still has, 320 x 180, before it hears of the
    // resize and configures it at 240 x 140).
    let stale = &seen.events[1];
    let suboptimal = stale
        .iter()
        .filter(|e| e.contains("Suboptimal present"))
        .count();
    let configured: Vec<&String> = stale
        .iter()
        .filter(|e| e.contains("configuring surface"))
        .collect();
    let out_of_date = configured
        .iter()
        .take_while(|e| !(e.contains("width: 240") && e.contains("height: 140")))
        .count();
    eprintln!(
        "while stale: {suboptimal} SUBOPTIMAL presents, {out_of_date} surface configurations \
         at the old size (OUT_OF_DATE acquires), {} configurations in all",
        configured.len()
    );
    assert!(
        suboptimal + out_of_date > 0,
        "the driver never answered SUBOPTIMAL or OUT_OF_DATE: {stale:#?}"
    );
    if !tile {
        return;
    }

    // Drawn before, while and after; at the new size while stale (once Bevy caught up).
    let frames = &seen.report_frames;
    assert!(frames[0].is_some(), "{summary}");
    assert!(frames[1] > frames[0] && frames[2] > frames[1], "{summary}");
    assert_eq!(
        seen.report_sizes[1],
        Some(UVec2::new(240, 140)),
        "{summary}"
    );
    assert_eq!(
        seen.report_sizes[2],
        Some(UVec2::new(320, 180)),
        "{summary}"
    );
    assert_same_objects(&seen.counts_before, &seen.counts_after, &summary);
    assert_eq!(
        seen.counts_after.gpu_allocated_bytes, seen.counts_before.gpu_allocated_bytes,
        "{summary}"
    );
    let (presented, screenshot) = seen.after.expect("captured after");
    presented::assert_presented_matches_screenshot("stale_after", &presented, &screenshot, None);
    let drawn = drawn_fraction(&presented);
    assert!(
        drawn > 0.2,
        "the window shows the scene after the resize ({drawn:.3} drawn)"
    );
}

/// Resizes `window`'s X window through winit, which Bevy hears of only when winit reports it.
fn resize_behind_bevys_back(window: Entity, width: u32, height: u32) {
    bevy::winit::WINIT_WINDOWS.with_borrow(|windows| {
        let winit_window = windows.get_window(window).expect("the winit window");
        let _ = winit_window.request_inner_size(winit::dpi::PhysicalSize::new(width, height));
    });
}

#[allow(
    clippy::too_many_arguments,
    reason = "a Bevy system: each parameter is a separate query or resource"
)]
fn drive_stale(
    _on_main_thread: NonSendMarker,
    mut commands: Commands,
    frames: Res<FrameCount>,
    windows: Query<(Entity, &Window), With<PrimaryWindow>>,
    cameras: Query<Entity, With<TileDeferred>>,
    reports: Res<TileRenderReports>,
    shared: Res<Shared<Stale>>,
    mut exit: MessageWriter<AppExit>,
) {
    let mut seen = shared.lock();
    let seen = &mut *seen;
    let Ok((window, bevy_window)) = windows.single() else {
        return;
    };
    let end_phase = |seen: &mut Stale| {
        seen.report_frames
            .push(latest_report_frame(&reports, cameras.iter()));
        seen.report_sizes.push(
            cameras
                .iter()
                .filter_map(|camera| reports.get(camera))
                .filter_map(|report| report.compiled.native_passes.last().map(|pass| pass.extent))
                .map(|extent| UVec2::new(extent.width, extent.height))
                .next(),
        );
        seen.window_sizes.push(bevy_window.physical_size());
        seen.events.push(capture::take_swapchain_events());
    };
    seen.phase = match seen.phase {
        Staling::Warming if frames.0 >= WARM_FRAMES => {
            seen.counts_before = reports.resource_counts();
            end_phase(seen);
            resize_behind_bevys_back(window, 240, 140);
            Staling::Stale(0)
        }
        Staling::Stale(n) if n < STALE_FRAMES => {
            // A new size every frame, so that the X window keeps ahead of the swapchain; then
            // 240 x 140 for the last frames, for Bevy (and the tile view) to catch up.
            if n + STALE_SETTLE_FRAMES < STALE_FRAMES {
                resize_behind_bevys_back(window, 244 + 4 * (n % 4), 142 + 2 * (n % 4));
            } else if n + STALE_SETTLE_FRAMES == STALE_FRAMES {
                resize_behind_bevys_back(window, 240, 140);
            }
            Staling::Stale(n + 1)
        }
        Staling::Stale(_) => {
            end_phase(seen);
            resize_behind_bevys_back(window, 320, 180);
            Staling::Restored(0)
        }
        Staling::Restored(n) if n < STALE_FRAMES => Staling::Restored(n + 1),
        Staling::Restored(_) => Staling::Capturing,
        Staling::Capturing => match seen.capture.step(&mut commands, STALE_TITLE) {
            Some(captured) => {
                seen.after = Some(captured);
                Staling::Settling(0)
            }
            None => Staling::Capturing,
        },
        Staling::Settling(n) if n < SETTLE_FRAMES => Staling::Settling(n + 1),
        Staling::Settling(_) => {
            seen.counts_after = reports.resource_counts();
            end_phase(seen);
            Staling::Done
        }
        other => other,
    };
    if seen.phase == Staling::Done || frames.0 > 2000 {
        exit.write(AppExit::Success);
    }
}

/// The same live Vulkan objects before and after, but for the swapchain's framebuffers: one is
/// made for each frame's swapchain image and retired with that frame, so how many are alive when
/// the counts are read depends on how many frames the GPU has not finished (the crate paces at
/// most 3). A leak would grow them without bound.
fn assert_same_objects(before: &ResourceCounts, after: &ResourceCounts, summary: &str) {
    assert_eq!(
        after.vulkan_objects() - after.framebuffers,
        before.vulkan_objects() - before.framebuffers,
        "the same live Vulkan objects before and after: {summary}"
    );
    for counts in [before, after] {
        assert!(
            (1..=4).contains(&counts.framebuffers),
            "the frames in flight's framebuffers: {summary}"
        );
    }
}
