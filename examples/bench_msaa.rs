//! A measuring tool, not a scene to copy (see `tile_camera` for that).
//!
//! MSAA on tile memory, measured: a scene rendered with the tile path at 4x with edge-selective
//! lighting, at 4x lighting every sample (brute force), without MSAA, and with Bevy's forward
//! renderer at 4x, in one headless run. Prints the fraction of pixels lit per sample, the
//! lighting subpass's GPU time from the crate's timestamps, wall time per frame and attachment
//! traffic (the tile plan; Bevy's from the stock-Bevy model).
//!
//! `--scene aliasing` (the default) draws thin geometry against the sky, which covers about a
//! tenth of the frame; `--scene dense` fills the frame with geometry, so that interior pixels
//! dominate. `--samples 2|4|8` changes the MSAA sample count (default 4); `--screenshot FILE`
//! saves the edge-selective run's last frame as a PNG, and `--show-edges` tints the pixels lit
//! per sample red in every tile run (for looking at, not for timing).
//!
//! ```sh
//! cargo run --release --example bench_msaa -- --width 1920 --height 1080 --frames 60 --lights 64
//! cargo run --release --example bench_msaa -- --scene dense --frames 60 --lights 16
//! ```

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::{
    camera::{ClearColorConfig, RenderTarget},
    log::LogPlugin,
    prelude::*,
    render::{
        render_resource::PollType,
        renderer::RenderDevice,
        view::{
            Msaa,
            screenshot::{Screenshot, ScreenshotCaptured},
        },
    },
};
use bevy_tile_deferred::{
    DeviceProfile, MsaaShading, TileAutoMeasure, TileDebugView, TileDeferred, TileDeferredPlugin,
    TileRenderReports,
    frame_graph::{DeviceCaps, Extent, Format, stock_bevy::StockBevyPath},
};
use std::{
    sync::{Arc, Mutex},
    time::Instant,
};

/// The scene the benchmark draws (`--scene`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scene {
    /// Thin geometry against the sky (examples/scenes/aliasing.rs).
    Aliasing,
    /// Geometry over the whole frame (examples/scenes/dense.rs).
    Dense,
}

impl Scene {
    fn name(self) -> &'static str {
        match self {
            Scene::Aliasing => "aliasing",
            Scene::Dense => "dense",
        }
    }
}

/// The options that change what is drawn, shared by every run.
struct Options {
    width: u32,
    height: u32,
    scene: Scene,
    show_edges: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let arg =
        |name: &str, default: u32| value(name).and_then(|v| v.parse().ok()).unwrap_or(default);
    let (width, height, frames, lights, samples) = (
        arg("--width", 1920),
        arg("--height", 1080),
        arg("--frames", 30),
        arg("--lights", 0),
        arg("--samples", 4),
    );
    let scene = match value("--scene").as_deref() {
        None | Some("aliasing") => Scene::Aliasing,
        Some("dense") => Scene::Dense,
        Some(other) => {
            eprintln!("unknown --scene {other}: expected aliasing or dense");
            std::process::exit(2);
        }
    };
    let msaa_on = match samples {
        2 => Msaa::Sample2,
        4 => Msaa::Sample4,
        8 => Msaa::Sample8,
        other => {
            eprintln!("unsupported --samples {other}: expected 2, 4 or 8");
            std::process::exit(2);
        }
    };
    let screenshot = value("--screenshot");
    let options = Options {
        width,
        height,
        scene,
        show_edges: args.iter().any(|a| a == "--show-edges"),
    };
    println!(
        "{} scene + {lights} point lights at {width}x{height}, {frames} frames after 5 \
         warm-up frames",
        scene.name()
    );
    let runs = [
        (
            format!("tile {samples}x edge-selective"),
            msaa_on,
            Some(MsaaShading::EdgeSelective),
        ),
        (
            format!("tile {samples}x every sample"),
            msaa_on,
            Some(MsaaShading::EverySample),
        ),
        (
            "tile no MSAA".to_string(),
            Msaa::Off,
            Some(MsaaShading::EdgeSelective),
        ),
        (format!("Bevy forward {samples}x"), msaa_on, None),
    ];
    let mut rows = Vec::new();
    let mut device = String::new();
    for (index, (label, msaa, tile)) in runs.into_iter().enumerate() {
        let mut app = new_app(index == 0);
        let (camera, target) = spawn(&mut app, &options, msaa, tile);
        scenes::dense::spawn_dense_lights(
            app.world_mut(),
            lights as usize,
            scenes::dense::DENSE_LIGHT_RANGE,
        );
        app.finish();
        app.cleanup();
        for _ in 0..5 {
            app.update();
            wait(&app);
        }
        let (mut wall, mut lighting, mut total, mut fraction) =
            (Vec::new(), Vec::new(), Vec::new(), None);
        for _ in 0..frames {
            let started = Instant::now();
            app.update();
            wait(&app);
            wall.push(started.elapsed().as_secs_f64() * 1000.0);
            let report = app.world().resource::<TileRenderReports>().get(camera);
            if let Some(times) = report.as_ref().and_then(|r| r.gpu_times) {
                lighting.push(times.lighting_ms);
                total.push(times.total_ms());
            }
            fraction = report.and_then(|r| r.per_sample_fraction).or(fraction);
        }
        let reports = app.world().resource::<TileRenderReports>().clone();
        let megabytes = match reports.get(camera) {
            Some(report) => report.compiled.cost.mb(),
            None => StockBevyPath::Forward {
                msaa_samples: samples,
            }
            .compile(
                Extent::new(width, height),
                Format::Rgba8Srgb,
                &DeviceCaps::desktop(),
            )
            .map_or(f64::NAN, |plan| plan.cost.mb()),
        };
        if let Some(profile) = app.world().get_resource::<DeviceProfile>() {
            device = profile.summary();
        }
        rows.push((
            label,
            median(&mut wall),
            mean(&lighting),
            mean(&total),
            fraction,
            megabytes,
        ));
        if let (0, Some(path)) = (index, &screenshot) {
            save_screenshot(&mut app, target, path);
        }
        app.world_mut().despawn(camera);
        app.update();
        wait(&app);
    }
    println!("device: {device}");
    println!(
        "{:<24} {:>9} {:>12} {:>12} {:>14} {:>10}",
        "path", "wall ms", "lighting ms", "GPU pass ms", "per-sample px", "MB/frame"
    );
    for (label, wall, lighting, total, fraction, mb) in &rows {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
        println!(
            "{label:<24} {wall:>9.3} {:>12} {:>12} {:>14} {mb:>10.2}",
            opt(*lighting),
            opt(*total),
            fraction.map_or("-".to_string(), |f| format!("{:.1}%", f * 100.0))
        );
    }
    if let (Some(selective), Some(every)) = (rows[0].2, rows[1].2) {
        println!(
            "edge-selective lighting: {:.2}x faster than lighting every sample ({selective:.3} vs {every:.3} ms)",
            every / selective
        );
    }
    println!(
        "attachment traffic at {samples}x: tile {:.2} MB/frame vs Bevy forward {samples}x {:.2} MB/frame ({:.1}x less)",
        rows[0].5,
        rows[3].5,
        rows[3].5 / rows[0].5
    );
}

fn new_app(log: bool) -> App {
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
    // The tile paths are measured as they are: an `Auto` camera on a desktop GPU would otherwise
    // time Bevy's path against them and might switch to it.
    app.add_plugins(TileDeferredPlugin)
        .insert_resource(TileAutoMeasure::NEVER);
    app
}

fn spawn(
    app: &mut App,
    options: &Options,
    msaa: Msaa,
    tile: Option<MsaaShading>,
) -> (Entity, Handle<Image>) {
    let image = scenes::headless::target_image(options.width, options.height);
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    let transform = match options.scene {
        Scene::Aliasing => {
            scenes::aliasing::spawn_aliasing_scene(app.world_mut());
            scenes::aliasing::aliasing_camera_transform()
        }
        Scene::Dense => {
            scenes::dense::spawn_dense_scene(app.world_mut());
            scenes::dense::dense_camera_transform()
        }
    };
    let mut camera = app.world_mut().spawn((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(scenes::CLEAR_COLOR),
            ..default()
        },
        transform,
        RenderTarget::Image(target.clone().into()),
        msaa,
    ));
    if let Some(msaa_shading) = tile {
        camera.insert(TileDeferred {
            msaa_shading,
            debug_view: if options.show_edges {
                TileDebugView::MsaaEdges
            } else {
                TileDebugView::None
            },
            ..default()
        });
    }
    (camera.id(), target)
}

/// Saves the camera's image as a PNG at `path` (a few more frames, after the measured ones).
fn save_screenshot(app: &mut App, target: Handle<Image>, path: &str) {
    let captured: Arc<Mutex<Option<Image>>> = Arc::default();
    let sink = captured.clone();
    app.world_mut().spawn(Screenshot::image(target)).observe(
        move |event: On<ScreenshotCaptured>| {
            *sink.lock().unwrap() = Some(event.image.clone());
        },
    );
    for _ in 0..10 {
        app.update();
        wait(app);
        if captured.lock().unwrap().is_some() {
            break;
        }
    }
    let saved = captured
        .lock()
        .unwrap()
        .take()
        .ok_or_else(|| "no screenshot after 10 frames".to_string())
        .and_then(|image| image.try_into_dynamic().map_err(|e| e.to_string()))
        .and_then(|image| image.to_rgb8().save(path).map_err(|e| e.to_string()));
    match saved {
        Ok(()) => println!("wrote {path}"),
        Err(error) => eprintln!("cannot write {path}: {error}"),
    }
}

fn wait(app: &App) {
    let _ = app
        .world()
        .resource::<RenderDevice>()
        .wgpu_device()
        .poll(PollType::wait_indefinitely());
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}
