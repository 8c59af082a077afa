//! A measuring tool, not a scene to copy (see `tile_camera` for that).
//!
//! A game's HUD over the benchmark scene, measured (issue 29): the HUD of the UI tests
//! (`scenes/hud.rs`, shaped like Bevy's `ui/ui` and `ui/text` examples) over the 64 PBR objects,
//! the sun and the point lights of 6 m range of `bench --range 6 --sun`, rendered by the tile
//! path with its UI inside the tile render pass, by the tile path with its UI drawn after the
//! pass by Bevy's UI pass (`TileDeferred::ui_in_pass` off: the route before issue 29), and by
//! Bevy's forward renderer, each in a fresh app, in one headless run.
//!
//! Each frame is waited for. It prints, per path, the median wall time of a frame, of
//! `app.update()` (the CPU: pipelined rendering is off) and of the wait for the GPU after it (on
//! a GPU, the frame's GPU time after the CPU submitted it; on lavapipe the frame renders inside
//! `app.update()`, so compare wall times there), and the attachment traffic per frame: the tile
//! path's compiled frame plus its UI's passes after the tile pass where there are any
//! (`TileViewReport::ui_pass`); Bevy's from the stock-Bevy model plus its `ui_pass`, which loads
//! and stores the main texture. Ratios against the UI after the pass and against Bevy follow.
//!
//! ```sh
//! cargo run --release --features ui --example bench_ui -- --width 3840 --height 2160 --frames 60
//! cargo run --release --features ui --example bench_ui -- --msaa 4
//! cargo run --release --features ui --example bench_ui -- --width 1280 --height 720 --frames 20  # lavapipe
//! ```
//!
//! `--window in-pass|after|bevy` renders one path into a window instead, for `--frames` frames
//! after the warm-up, and exits: the frame a capture tool sees (`scripts/renderdoc-traffic.py`
//! counts the real Vulkan calls' loads and stores in a RenderDoc capture of it).
//!
//! `--gradients` puts gradients in the HUD (linear, radial and conic, on three nodes of its
//! z-stack, as the UI tests' `ZStackExtra::Gradients`).
//!
//! `--inspector` (with `--features inspector`) opens the inspector overlay over each path's
//! camera too: in the tile pass on the first path, after it on the second (with the UI), by
//! bevy_egui's own pass on Bevy's; its own passes (the inspector's price of them) are added to
//! the traffic.

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::{
    camera::RenderTarget,
    diagnostic::FrameCount,
    log::LogPlugin,
    prelude::*,
    render::{
        RenderPlugin,
        settings::{Backends, WgpuSettings},
        view::Msaa,
    },
    window::{ExitCondition, PresentMode},
};
use bevy_tile_deferred::{
    DeviceProfile, TileAutoMeasure, TileDeferred, TileDeferredPlugin, TileRenderReports,
    frame_graph::{DeviceCaps, Extent, Format, stock_bevy::StockBevyPath},
};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u32>().ok())
    };
    let options = Options {
        width: value("--width").unwrap_or(1920),
        height: value("--height").unwrap_or(1080),
        frames: value("--frames").unwrap_or(60).max(1),
        warmup: value("--warmup").unwrap_or(10),
        lights: value("--lights").unwrap_or(16) as usize,
        msaa: match value("--msaa").unwrap_or(1) {
            1 => Msaa::Off,
            2 => Msaa::Sample2,
            4 => Msaa::Sample4,
            8 => Msaa::Sample8,
            other => {
                eprintln!("unsupported --msaa {other}: expected 1, 2, 4 or 8");
                std::process::exit(2);
            }
        },
        inspector: args.iter().any(|a| a == "--inspector"),
        gradients: args.iter().any(|a| a == "--gradients"),
    };
    if options.inspector && !cfg!(feature = "inspector") {
        eprintln!("--inspector needs --features inspector");
        std::process::exit(2);
    }
    if let Some(name) = args
        .iter()
        .position(|a| a == "--window")
        .and_then(|i| args.get(i + 1))
    {
        let Some(path) = Path::from_name(name) else {
            eprintln!("unknown --window {name}: expected in-pass, after or bevy");
            std::process::exit(2);
        };
        run_in_window(&options, path);
        return;
    }
    println!(
        "the bench scene (64 objects, a sun, {} point lights of 6 m) with a HUD{}{} at {}x{}, {}x \
         MSAA, {} frames after {} warm-up frames, each waited for",
        options.lights,
        if options.gradients {
            " with gradients"
        } else {
            ""
        },
        if options.inspector {
            " and the inspector overlay"
        } else {
            ""
        },
        options.width,
        options.height,
        options.msaa.samples(),
        options.frames,
        options.warmup
    );
    let paths = [Path::TileUiInPass, Path::TileUiAfterPass, Path::BevyForward];
    let mut rows = Vec::new();
    for (index, path) in paths.into_iter().enumerate() {
        rows.push(measure(&options, path, index == 0));
    }
    print_rows(&options, &rows);
}

/// What changes between runs.
struct Options {
    width: u32,
    height: u32,
    frames: u32,
    warmup: u32,
    lights: usize,
    msaa: Msaa,
    /// The inspector overlay over the camera too.
    inspector: bool,
    /// The HUD's z-stack with gradients (`ZStackExtra::Gradients`).
    gradients: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    TileUiInPass,
    TileUiAfterPass,
    BevyForward,
}

impl Path {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "in-pass" => Some(Path::TileUiInPass),
            "after" => Some(Path::TileUiAfterPass),
            "bevy" => Some(Path::BevyForward),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Path::TileUiInPass => "tile, UI in the tile pass",
            Path::TileUiAfterPass => "tile, UI after the tile pass",
            Path::BevyForward => "Bevy forward",
        }
    }
}

/// One path's medians and traffic.
struct Row {
    path: Path,
    wall_ms: f64,
    update_ms: f64,
    wait_ms: f64,
    bytes: u64,
    device: String,
}

/// The scene, its camera (drawing into `target`) and the HUD, for `path`.
fn spawn_scene(world: &mut World, options: &Options, path: Path, target: RenderTarget) -> Entity {
    let scene = scenes::bench::BenchScene {
        range: Some(6.0),
        sun: true,
        ..scenes::bench::BenchScene::grid(64, options.lights)
    };
    scene.spawn(world);
    let mut camera = world.spawn((
        Camera3d::default(),
        scene.camera_transform(),
        target,
        options.msaa,
    ));
    match path {
        Path::TileUiInPass => camera.insert(TileDeferred::default()),
        Path::TileUiAfterPass => camera.insert(TileDeferred {
            ui_in_pass: false,
            ..default()
        }),
        Path::BevyForward => &mut camera,
    };
    let camera = camera.id();
    let checker = scenes::hud::checker_image(world);
    let extra = if options.gradients {
        scenes::hud::ZStackExtra::Gradients
    } else {
        scenes::hud::ZStackExtra::None
    };
    scenes::hud::spawn_hud(world, camera, checker, extra);
    camera
}

/// `--window`: one path in a window (Vulkan, FIFO), closed after the warm-up and `--frames`.
fn run_in_window(options: &Options, path: Path) {
    println!(
        "{} in a {}x{} window, {}x MSAA, {} frames",
        path.label(),
        options.width,
        options.height,
        options.msaa.samples(),
        options.warmup + options.frames
    );
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: format!("bench_ui: {}", path.label()),
                    resolution: (options.width, options.height).into(),
                    present_mode: PresentMode::Fifo,
                    ..default()
                }),
                exit_condition: ExitCondition::OnPrimaryClosed,
                ..default()
            })
            .set(RenderPlugin {
                render_creation: WgpuSettings {
                    backends: Some(Backends::VULKAN),
                    ..default()
                }
                .into(),
                synchronous_pipeline_compilation: true,
                ..default()
            }),
    )
    .add_plugins(TileDeferredPlugin)
    // Timed as they are: no `Auto` switch to Bevy's path on a desktop GPU.
    .insert_resource(TileAutoMeasure::NEVER)
    .add_systems(Update, scenes::hud::count_frames);
    add_inspector(&mut app, options);
    let last_frame = options.warmup + options.frames;
    app.add_systems(
        Last,
        move |frames: Res<FrameCount>, mut exit: MessageWriter<AppExit>| {
            if frames.0 >= last_frame {
                exit.write(AppExit::Success);
            }
        },
    );
    spawn_scene(app.world_mut(), options, path, RenderTarget::default());
    app.run();
}

fn measure(options: &Options, path: Path, log: bool) -> Row {
    let mut app = App::new();
    let plugins = scenes::headless::benchmark_plugins();
    if log {
        app.add_plugins(plugins.set(LogPlugin {
            filter: "wgpu=error,naga=warn,bevy_render=warn,bevy_light=error".into(),
            ..default()
        }));
    } else {
        // Bevy's logger is global: only the first app installs it.
        app.add_plugins(plugins.disable::<LogPlugin>());
    }
    app.add_plugins(TileDeferredPlugin)
        // Timed as they are: no `Auto` switch to Bevy's path on a desktop GPU.
        .insert_resource(TileAutoMeasure::NEVER)
        .add_systems(Update, scenes::hud::count_frames);
    add_inspector(&mut app, options);
    let world = app.world_mut();
    let target = world
        .resource_mut::<Assets<Image>>()
        .add(scenes::headless::target_image(
            options.width,
            options.height,
        ));
    let camera = spawn_scene(world, options, path, RenderTarget::Image(target.into()));
    app.finish();
    app.cleanup();
    for _ in 0..options.warmup {
        scenes::headless::update_and_wait(&mut app);
    }
    let (mut wall, mut update, mut wait) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..options.frames {
        let started = Instant::now();
        app.update();
        let updated = Instant::now();
        scenes::headless::wait_for_gpu(&app);
        let done = Instant::now();
        wall.push((done - started).as_secs_f64() * 1000.0);
        update.push((updated - started).as_secs_f64() * 1000.0);
        wait.push((done - updated).as_secs_f64() * 1000.0);
    }
    let extent = Extent::new(options.width, options.height);
    let overlay = overlay_bytes(&app, camera);
    let bytes = overlay
        + match app.world().resource::<TileRenderReports>().get(camera) {
            Some(report) => {
                if path == Path::TileUiInPass && report.ui_in_pass.is_none() {
                    eprintln!(
                        "the tile camera's UI was not drawn in the pass: {:?}",
                        report.ui_after_pass_reason
                    );
                }
                report.compiled.cost.bytes()
                    + report.ui_pass.as_ref().map_or(0, |ui| ui.cost.bytes())
            }
            None => {
                let stock = StockBevyPath::Forward {
                    msaa_samples: options.msaa.samples(),
                }
                .compile(extent, Format::Rgba8Srgb, &DeviceCaps::desktop())
                .map_or(0, |plan| plan.cost.bytes());
                // Bevy's `ui_pass` loads and stores its (LDR, 4-byte) main texture.
                stock + 2 * 4 * u64::from(options.width * options.height)
            }
        };
    let device = app
        .world()
        .get_resource::<DeviceProfile>()
        .map(DeviceProfile::summary)
        .unwrap_or_default();
    let row = Row {
        path,
        wall_ms: median(&mut wall),
        update_ms: median(&mut update),
        wait_ms: median(&mut wait),
        bytes,
        device,
    };
    println!(
        "  {}: wall {:.3} ms, update {:.3} ms, wait {:.3} ms",
        path.label(),
        row.wall_ms,
        row.update_ms,
        row.wait_ms
    );
    row
}

/// With `--inspector`: the inspector overlay, shown.
fn add_inspector(app: &mut App, options: &Options) {
    #[cfg(feature = "inspector")]
    if options.inspector {
        app.add_plugins(bevy_tile_deferred::TileInspectorPlugin::default())
            .world_mut()
            .resource_mut::<bevy_tile_deferred::inspector::TileInspector>()
            .visible = true;
    }
    #[cfg(not(feature = "inspector"))]
    let _ = (app, options);
}

/// The inspector overlay's own passes over `camera`, as it prices them (0 without it, or drawn
/// in the tile pass).
fn overlay_bytes(app: &App, camera: Entity) -> u64 {
    #[cfg(feature = "inspector")]
    if let Some(panels) = app
        .world()
        .get_resource::<bevy_tile_deferred::inspector::TileInspectorPanels>()
    {
        return panels
            .get(camera)
            .and_then(|panel| panel.overlay.as_ref())
            .map_or(0, |overlay| overlay.bytes_per_frame);
    }
    let _ = (app, camera);
    0
}

fn print_rows(options: &Options, rows: &[Row]) {
    if let Some(device) = rows.iter().map(|r| &r.device).find(|d| !d.is_empty()) {
        println!("device: {device}");
    }
    let floor = 4 * u64::from(options.width * options.height);
    println!(
        "{:<30} {:>9} {:>10} {:>9} {:>10} {:>8}",
        "path", "wall ms", "update ms", "wait ms", "MB/frame", "x floor"
    );
    for row in rows {
        println!(
            "{:<30} {:>9.3} {:>10.3} {:>9.3} {:>10.2} {:>8.2}",
            row.path.label(),
            row.wall_ms,
            row.update_ms,
            row.wait_ms,
            row.bytes as f64 / 1e6,
            row.bytes as f64 / floor as f64
        );
    }
    let find = |path| rows.iter().find(|r| r.path == path);
    if let (Some(in_pass), Some(after), Some(bevy)) = (
        find(Path::TileUiInPass),
        find(Path::TileUiAfterPass),
        find(Path::BevyForward),
    ) {
        for (name, other) in [("UI after the tile pass", after), ("Bevy forward", bevy)] {
            println!(
                "UI in the tile pass / {name}: wall {:.2}x, wait {:.2}x, traffic {:.2}x",
                in_pass.wall_ms / other.wall_ms,
                in_pass.wait_ms / other.wait_ms,
                in_pass.bytes as f64 / other.bytes as f64
            );
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
