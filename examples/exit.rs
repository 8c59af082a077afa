//! A test tool, not a scene to copy (see `tile_camera` for that).
//!
//! Clean exit with GPU work still queued: a headless app with a 1x and a 4x MSAA tile camera,
//! each drawing the lit spheres into an image, runs as fast as its CPU allows (pipelined
//! rendering, a runner that never pauses, no frame waited for) and sends `AppExit` after
//! `--frames` frames. It prints when `AppExit` was sent, when `App::run` returned and when the
//! app was dropped (the crate's and wgpu's teardown), and exits with `App::run`'s status.
//! `--bevy` draws the same cameras with Bevy's renderer: the reference for what a shutdown with
//! queued work costs without the crate.
//!
//! ```sh
//! cargo run --release --example exit                     # tile cameras, 3840x2160, 300 frames
//! cargo run --release --example exit -- --bevy          # the same with Bevy's renderer
//! cargo run --release --example exit -- --frames 30 --width 960 --height 540   # lavapipe
//! ```

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::{
    app::ScheduleRunnerPlugin,
    prelude::*,
    render::{
        RenderPlugin,
        settings::{Backends, WgpuSettings},
    },
    window::ExitCondition,
    winit::WinitPlugin,
};
use bevy_tile_deferred::{TileDeferred, TileDeferredPlugin, TileRenderReports};
use std::time::{Duration, Instant};

fn main() -> AppExit {
    let options = match Options::from_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("exit: {message}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                close_when_requested: false,
                ..default()
            })
            .set(RenderPlugin {
                render_creation: WgpuSettings {
                    backends: Some(Backends::VULKAN),
                    ..default()
                }
                .into(),
                ..default()
            })
            .disable::<WinitPlugin>(),
        ScheduleRunnerPlugin::run_loop(Duration::ZERO),
    ));
    if !options.bevy {
        app.add_plugins(TileDeferredPlugin);
    }
    scenes::headless::spawn_exit_scene(
        app.world_mut(),
        !options.bevy,
        options.width,
        options.height,
    );
    let frames = options.frames;
    let started = Instant::now();
    app.add_systems(
        Update,
        move |mut frame: Local<u32>,
              mut exit: MessageWriter<AppExit>,
              reports: Option<Res<TileRenderReports>>,
              cameras: Query<Entity, With<TileDeferred>>| {
            *frame += 1;
            if *frame == frames {
                let reported = reports.map_or(0, |reports| {
                    cameras.iter().filter(|c| reports.get(*c).is_some()).count()
                });
                println!(
                    "exit: {frames} frames queued in {:.0} ms (tile cameras rendered: {reported}); \
                     AppExit sent",
                    started.elapsed().as_secs_f64() * 1000.0
                );
                exit.write(AppExit::Success);
            }
        },
    );
    let exit = app.run();
    let sent = started.elapsed();
    println!("exit: App::run returned {exit:?}");
    let dropping = Instant::now();
    drop(app);
    println!(
        "exit: app dropped in {:.0} ms ({:.0} ms since start)",
        dropping.elapsed().as_secs_f64() * 1000.0,
        sent.as_secs_f64() * 1000.0 + dropping.elapsed().as_secs_f64() * 1000.0
    );
    exit
}

const USAGE: &str = "usage: exit [--bevy] [--frames N] [--width W] [--height H]";

struct Options {
    bevy: bool,
    frames: u32,
    width: u32,
    height: u32,
}

impl Options {
    fn from_args() -> Result<Self, String> {
        let mut options = Self {
            bevy: false,
            frames: 300,
            width: 3840,
            height: 2160,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut number = |name: &str| -> Result<u32, String> {
                let value = args.next().ok_or(format!("{name} needs a value"))?;
                match value.parse() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(format!("{name} {value}: must be a positive whole number")),
                }
            };
            match arg.as_str() {
                "--bevy" => options.bevy = true,
                "--frames" => options.frames = number("--frames")?,
                "--width" => options.width = number("--width")?,
                "--height" => options.height = number("--height")?,
                "--help" | "-h" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(options)
    }
}
