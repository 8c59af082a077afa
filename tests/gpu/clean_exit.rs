//! Clean exit (issue 17): an app that never waits for the GPU (`app.run()` with a runner that
//! loops without a pause, pipelined rendering, image targets) queues frames faster than
//! lavapipe renders them, then sends `AppExit` with that work still queued. Its process must
//! exit with status 0, promptly, with no validation error, and the tile path must not make the
//! shutdown slower than Bevy's own renderer does with the same cameras.
//!
//! Each app runs in a child process of this test binary (an ignored test run by its parent),
//! which measures the time from `AppExit` to the end of the process.

use crate::{
    harness::{GpuTest, test_plugins},
    scenes,
};
use bevy::{app::ScheduleRunnerPlugin, prelude::*, render::RenderApp};
use bevy_tile_deferred::{TileDeferred, TileDeferredPlugin, TileFaultInjection, TileRenderReports};
use std::{
    process::{Command, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// Frames run before `AppExit`.
const FRAMES: u32 = 30;
const WIDTH: u32 = 960;
const HEIGHT: u32 = 540;

/// Milliseconds since the epoch, comparable between processes.
fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis()
}

/// Runs the lit-spheres scene with a 1x and a 4x MSAA camera (tile cameras when `tile`), each
/// into its own image, for [`FRAMES`] frames without waiting for the GPU, then exits. Prints
/// when it sent `AppExit`.
fn run_and_exit(tile: bool) {
    let errors = run_and_exit_with(tile, None);
    assert!(errors.is_empty(), "{errors:#?}");
}

/// [`run_and_exit`], with `injection` in the render world; the errors logged.
fn run_and_exit_with(tile: bool, injection: Option<TileFaultInjection>) -> Vec<String> {
    let test = GpuTest::start("clean_exit child");
    let mut app = App::new();
    app.add_plugins(test_plugins(None))
        .add_plugins(ScheduleRunnerPlugin::run_loop(Duration::ZERO));
    if tile {
        app.add_plugins(TileDeferredPlugin);
    }
    if let Some(injection) = injection {
        app.sub_app_mut(RenderApp).insert_resource(injection);
    }
    scenes::headless::spawn_exit_scene(app.world_mut(), tile, WIDTH, HEIGHT);
    let started = Instant::now();
    app.add_systems(
        Update,
        move |mut frames: Local<u32>,
              mut exit: MessageWriter<AppExit>,
              reports: Option<Res<TileRenderReports>>,
              cameras: Query<Entity, With<TileDeferred>>| {
            *frames += 1;
            if *frames == FRAMES {
                let tile_reports = reports.as_ref().map_or(0, |reports| {
                    cameras.iter().filter(|c| reports.get(*c).is_some()).count()
                });
                println!(
                    "CLEAN_EXIT frames={FRAMES} cpu_ms={} tile_cameras_reported={tile_reports} \
                     exit_sent_ms={}",
                    started.elapsed().as_millis(),
                    now_ms()
                );
                if let Some(reports) = &reports {
                    println!(
                        "CLEAN_EXIT most_frames_in_flight={}",
                        reports.most_frames_in_flight()
                    );
                }
                exit.write(AppExit::Success);
            }
        },
    );
    let exit = app.run();
    println!("CLEAN_EXIT run_returned_ms={}", now_ms());
    assert_eq!(exit, AppExit::Success);
    drop(app);
    println!("CLEAN_EXIT app_dropped_ms={}", now_ms());
    test.take_errors()
}

#[test]
#[ignore = "run in a child process by tile_cameras_exit_promptly_with_gpu_work_queued"]
fn child_exit_with_gpu_work_queued_tile() {
    run_and_exit(true);
}

#[test]
#[ignore = "run in a child process by tile_cameras_exit_promptly_with_gpu_work_queued"]
fn child_exit_with_gpu_work_queued_bevy() {
    run_and_exit(false);
}

#[test]
#[ignore = "run in a child process by a_hung_gpu_at_exit_leaks_the_tile_objects_once"]
fn child_exit_with_a_hung_gpu() {
    let injection = TileFaultInjection::default();
    injection.expire_teardown_wait();
    let errors = run_and_exit_with(true, Some(injection));
    for error in &errors {
        println!("CLEAN_EXIT error: {}", error.replace('\n', " "));
    }
    println!("CLEAN_EXIT errors={}", errors.len());
}

/// What a child run measured.
#[derive(Debug)]
struct ExitRun {
    /// From `AppExit` to `app.run()` returning.
    run_returned: u128,
    /// From `AppExit` to the app dropped (the crate's and wgpu's teardown).
    dropped: u128,
    /// From `AppExit` to the end of the process.
    exited: u128,
    tile_cameras_reported: usize,
    /// CPU time of the frames before `AppExit`.
    cpu: u128,
    /// How long the crate's teardown waited for the GPU to finish the queued frames (0
    /// without the crate).
    teardown_wait: u128,
    /// The most tile frames the GPU had queued at once (`TileRenderReports`; 0 without the
    /// crate).
    most_frames_in_flight: usize,
}

/// Runs the ignored test `name` in a child process; fails unless it exits with status 0 within
/// a minute.
fn exit_run(name: &str) -> ExitRun {
    exit_run_output(name).0
}

/// [`exit_run`], and the child's standard output.
fn exit_run_output(name: &str) -> (ExitRun, String) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        // The crate logs how long its teardown waited for the GPU at debug level.
        .env(
            "RUST_LOG",
            "info,wgpu=warn,naga=warn,offset_allocator=warn,\
             bevy_tile_deferred::vulkan::context=debug",
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("the killed child's output");
            panic!(
                "{name}: still running after 120 s (killed):\n{}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let exited_ms = now_ms();
    let output = child.wait_with_output().expect("the child's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        status.success() && stdout.contains("1 passed"),
        "{name}: exit status {status}:\n{stdout}\n{stderr}"
    );
    let find = |key: &str| -> Option<u128> {
        stdout
            .split_whitespace()
            .find_map(|word| word.strip_prefix(&format!("{key}=")))
            .and_then(|v| {
                v.trim_end_matches(|c: char| !c.is_ascii_digit())
                    .parse()
                    .ok()
            })
    };
    let value = |key: &str| -> u128 {
        find(key).unwrap_or_else(|| panic!("{name}: no {key} in:\n{stdout}"))
    };
    let sent = value("exit_sent_ms");
    let run = ExitRun {
        run_returned: value("run_returned_ms") - sent,
        dropped: value("app_dropped_ms") - sent,
        exited: exited_ms - sent,
        tile_cameras_reported: value("tile_cameras_reported") as usize,
        cpu: value("cpu_ms"),
        teardown_wait: find("teardown_wait_ms").unwrap_or(0),
        most_frames_in_flight: find("most_frames_in_flight").unwrap_or(0) as usize,
    };
    eprintln!("{name}: {run:?} (ms after AppExit); frames: {FRAMES}");
    (run, stdout.into_owned())
}

/// Tile cameras (1x and 4x MSAA, image targets) in an app that never waits for the GPU exit
/// with status 0 and without a validation error (the child fails on any), within the frames
/// still in flight at `AppExit` (pipelined rendering has up to two) plus a short teardown. The
/// same app with Bevy's renderer is run first for comparison (printed).
#[test]
fn tile_cameras_exit_promptly_with_gpu_work_queued() {
    let _test = GpuTest::start("tile_cameras_exit_promptly_with_gpu_work_queued");
    let bevy = exit_run("clean_exit::child_exit_with_gpu_work_queued_bevy");
    let tile = exit_run("clean_exit::child_exit_with_gpu_work_queued_tile");
    assert_eq!(
        tile.tile_cameras_reported, 2,
        "both cameras on the tile path"
    );
    let frame_ms = tile.cpu / u128::from(FRAMES);
    // The app is dropped inside `app.run()` (Bevy moves it into the runner).
    assert!(tile.run_returned <= tile.dropped && tile.dropped <= tile.exited);
    assert!(tile.teardown_wait <= tile.dropped, "{tile:?}");
    // Frame pacing: lavapipe renders these frames far slower than the app records them, yet
    // the GPU never has more than 4 tile frames queued (an app that never waits would otherwise
    // queue all 30, and at 4K on the H200 wgpu panicked at shutdown waiting for them).
    assert!(
        (1..=4).contains(&tile.most_frames_in_flight),
        "at most 4 tile frames queued: {tile:?}"
    );
    assert!(
        tile.exited < 3 * frame_ms + 2000,
        "tile exit {} ms after AppExit with frames of {frame_ms} ms ({tile:?}); Bevy's \
         renderer: {} ms ({bevy:?})",
        tile.exited,
        bevy.exited
    );
}

/// Teardown with GPU work queued and a GPU that never finishes it (injected: the wait for the
/// crate's last frame expires): the crate leaks its Vulkan objects rather than destroying what
/// the GPU may still use, says so once, and the process still exits with status 0, promptly.
#[test]
fn a_hung_gpu_at_exit_leaks_the_tile_objects_once() {
    let _test = GpuTest::start("a_hung_gpu_at_exit_leaks_the_tile_objects_once");
    let (run, stdout) = exit_run_output("clean_exit::child_exit_with_a_hung_gpu");
    let errors: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("CLEAN_EXIT error: "))
        .collect();
    let leaks = errors
        .iter()
        .filter(|e| e.contains("did not finish the tile path's last frame"))
        .count();
    assert_eq!(leaks, 1, "one leak message: {errors:#?}");
    eprintln!("hung GPU at exit: {run:?}; errors: {errors:#?}");
    assert_eq!(errors.len(), 1, "nothing but the leak message: {errors:#?}");
    assert!(run.exited < 10_000, "{run:?}");
}
