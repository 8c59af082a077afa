//! MSAA on tile memory, measured: the aliasing scene rendered with the tile path at 4x with
//! edge-selective lighting, at 4x lighting every sample (brute force), without MSAA, and with
//! Bevy's forward renderer at 4x, in one headless run. Prints the fraction of pixels lit per
//! sample, the lighting subpass's GPU time from the crate's timestamps, wall time per frame and
//! attachment traffic (the tile plan; Bevy's from the stock-Bevy model).
//!
//! ```sh
//! cargo run --release --example bench_msaa -- --width 1920 --height 1080 --frames 60 --lights 64
//! ```

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::{
    asset::RenderAssetUsages,
    camera::{ClearColorConfig, RenderTarget},
    log::LogPlugin,
    prelude::*,
    render::{
        RenderPlugin,
        pipelined_rendering::PipelinedRenderingPlugin,
        render_resource::{Extent3d, PollType, TextureDimension, TextureFormat, TextureUsages},
        renderer::RenderDevice,
        settings::{Backends, WgpuSettings},
        view::Msaa,
    },
    window::ExitCondition,
    winit::WinitPlugin,
};
use bevy_tile_deferred::{
    DeviceProfile, MsaaShading, TileDeferred, TileDeferredPlugin, TileRenderReports,
    frame_graph::{DeviceCaps, Extent, Format, stock_bevy::StockBevyPath},
};
use std::time::Instant;

fn main() {
    let arg = |name: &str, default: u32| {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (width, height, frames, lights) = (
        arg("--width", 1920),
        arg("--height", 1080),
        arg("--frames", 30),
        arg("--lights", 0),
    );
    println!(
        "aliasing scene + {lights} point lights at {width}x{height}, {frames} frames after 5 \
         warm-up frames"
    );
    let runs = [
        (
            "tile 4x edge-selective",
            Msaa::Sample4,
            Some(MsaaShading::EdgeSelective),
        ),
        (
            "tile 4x every sample",
            Msaa::Sample4,
            Some(MsaaShading::EverySample),
        ),
        ("tile no MSAA", Msaa::Off, Some(MsaaShading::EdgeSelective)),
        ("Bevy forward 4x", Msaa::Sample4, None),
    ];
    let mut rows = Vec::new();
    let mut device = String::new();
    for (index, (label, msaa, tile)) in runs.into_iter().enumerate() {
        let mut app = new_app(index == 0);
        let camera = spawn(&mut app, width, height, msaa, tile);
        spawn_point_lights(app.world_mut(), lights);
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
            None => StockBevyPath::Forward { msaa_samples: 4 }
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
        "attachment traffic at 4x: tile {:.2} MB/frame vs Bevy forward 4x {:.2} MB/frame ({:.1}x less)",
        rows[0].5,
        rows[3].5,
        rows[3].5 / rows[0].5
    );
}

/// `count` coloured point lights in a grid in front of the fence, so that lighting dominates
/// the lighting subpass (each pixel pays for the lights whose range covers it).
fn spawn_point_lights(world: &mut World, count: u32) {
    let side = (count as f32).sqrt().ceil().max(1.0) as u32;
    for i in 0..count {
        let (x, y) = ((i % side) as f32, (i / side) as f32);
        let t = i as f32 / count.max(1) as f32;
        world.spawn((
            PointLight {
                intensity: 20_000.0,
                range: 2.5,
                color: Color::hsl(t * 360.0, 0.8, 0.6),
                shadow_maps_enabled: false,
                ..default()
            },
            Transform::from_xyz(
                -2.5 + 5.0 * x / side as f32,
                0.2 + 2.6 * y / side as f32,
                0.8,
            ),
        ));
    }
}

fn new_app(log: bool) -> App {
    let mut app = App::new();
    let plugins = DefaultPlugins
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
            synchronous_pipeline_compilation: true,
            ..default()
        })
        .disable::<WinitPlugin>()
        .disable::<PipelinedRenderingPlugin>();
    if log {
        app.add_plugins(plugins.set(LogPlugin {
            filter: "wgpu=error,naga=warn,bevy_render=warn,bevy_light=error".into(),
            ..default()
        }));
    } else {
        // Bevy's logger is global: only the first app installs it.
        app.add_plugins(plugins.disable::<LogPlugin>());
    }
    app.add_plugins(TileDeferredPlugin);
    app
}

fn spawn(app: &mut App, width: u32, height: u32, msaa: Msaa, tile: Option<MsaaShading>) -> Entity {
    let mut image = Image::new_fill(
        Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        &[0, 0, 0, 255],
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.texture_descriptor.usage |= TextureUsages::RENDER_ATTACHMENT | TextureUsages::COPY_SRC;
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    scenes::aliasing::spawn_aliasing_scene(app.world_mut());
    let mut camera = app.world_mut().spawn((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(scenes::CLEAR_COLOR),
            ..default()
        },
        scenes::aliasing::aliasing_camera_transform(),
        RenderTarget::Image(target.into()),
        msaa,
    ));
    if let Some(msaa_shading) = tile {
        camera.insert(TileDeferred {
            msaa_shading,
            ..default()
        });
    }
    camera.id()
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
