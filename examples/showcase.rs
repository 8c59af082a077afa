//! The showcase: a PBR scene with coloured lights orbiting it under a sky (a `Skybox` and an
//! `EnvironmentMapLight` from `assets/environment_maps/`), seen by an orbiting camera rendered by
//! the tile-deferred path (G-buffer, lighting and tonemap in one Vulkan render pass; only the
//! final image leaves tile memory).
//!
//! With a display it opens a window. Without one (or with `--headless`) it renders into an
//! image, writes `showcase.png` (or the path after `--out`) and prints the device profile, the
//! frame's plan and its bandwidth. With the `ui` feature a bevy_ui label is drawn over the tile
//! camera in the tile render pass's last subpass.
//!
//! ```sh
//! cargo run --release --example showcase             # window if a display exists
//! cargo run --release --example showcase -- --headless --out /tmp/showcase.png
//! ```

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::{
    app::ScheduleRunnerPlugin,
    camera::RenderTarget,
    diagnostic::FrameCount,
    prelude::*,
    render::view::screenshot::{Screenshot, ScreenshotCaptured},
    window::ExitCondition,
    winit::WinitPlugin,
};
use bevy_tile_deferred::{
    DeviceProfile, TileDeferred, TileDeferredPlugin, TileRenderReports,
    frame_graph::DEFAULT_MW_PER_GBPS, tiers::TierDecision, tile_deferred::missing::TileMissing,
};
use std::{path::PathBuf, time::Duration};

/// Orbiting coloured point lights.
const LIGHT_COUNT: usize = 48;
/// Frames rendered before the headless capture once the sky has loaded (pipelines warm, lights
/// moved).
const HEADLESS_FRAMES: u32 = 30;

// On Android, `bevy_main` exports the `android_main` entry point NativeActivity calls.
#[bevy_main]
fn main() {
    let options = Options::from_args();
    let mut app = App::new();
    if options.headless {
        app.add_plugins(
            DefaultPlugins
                .set(WindowPlugin {
                    primary_window: None,
                    exit_condition: ExitCondition::DontExit,
                    ..default()
                })
                .disable::<WinitPlugin>(),
        )
        .add_plugins(ScheduleRunnerPlugin::run_loop(Duration::ZERO))
        .insert_resource(HeadlessCapture {
            path: options.out.clone(),
            requested: false,
            warm_from: 0,
        })
        .add_systems(Startup, spawn_headless_camera)
        .add_systems(Update, capture_when_warm);
    } else {
        app.add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title: "bevy_tile_deferred showcase".into(),
                ..default()
            }),
            ..default()
        }))
        .add_systems(Startup, spawn_window_camera);
    }
    app.add_plugins(TileDeferredPlugin)
        .add_systems(Startup, |world: &mut World| {
            scenes::spawn_showcase(world, LIGHT_COUNT)
        })
        .add_systems(PostStartup, spawn_label)
        .add_systems(
            Update,
            (
                scenes::move_orbiting_lights,
                scenes::orbit_camera,
                print_device_profile,
            ),
        )
        .run();
}

/// A bevy_ui label over the tile camera (the only camera, so bevy_ui's default UI camera).
#[cfg(feature = "ui")]
fn spawn_label(mut commands: Commands) {
    commands.spawn((
        Text::new("bevy_tile_deferred: one render pass, only the output stored"),
        TextFont {
            font_size: 22.0.into(),
            ..default()
        },
        TextColor(Color::WHITE),
        Node {
            position_type: PositionType::Absolute,
            left: px(16),
            bottom: px(16),
            padding: UiRect::axes(px(10), px(6)),
            border_radius: BorderRadius::all(px(6)),
            ..default()
        },
        BackgroundColor(Color::srgba(0.0, 0.0, 0.0, 0.55)),
    ));
}

/// Without the `ui` feature there is no bevy_ui to draw a label with.
#[cfg(not(feature = "ui"))]
fn spawn_label() {}

struct Options {
    headless: bool,
    out: PathBuf,
}

impl Options {
    fn from_args() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let has_display = cfg!(target_os = "android")
            || cfg!(target_os = "windows")
            || cfg!(target_os = "macos")
            || std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some();
        let out = args
            .iter()
            .position(|a| a == "--out")
            .and_then(|i| args.get(i + 1))
            .map_or_else(|| PathBuf::from("showcase.png"), PathBuf::from);
        Self {
            headless: args.iter().any(|a| a == "--headless") || !has_display,
            out,
        }
    }
}

fn spawn_window_camera(mut commands: Commands, assets: Res<AssetServer>) {
    commands.spawn((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        TileDeferred::default(),
        scenes::showcase_sky(&assets),
    ));
}

#[derive(Resource)]
struct HeadlessCapture {
    path: PathBuf,
    requested: bool,
    /// The frame the sky was last seen still loading.
    warm_from: u32,
}

#[derive(Resource)]
struct HeadlessTarget(Handle<Image>);

fn spawn_headless_camera(
    mut commands: Commands,
    mut images: ResMut<Assets<Image>>,
    assets: Res<AssetServer>,
) {
    let image = scenes::headless::target_image(1280, 720);
    let handle = images.add(image);
    commands.insert_resource(HeadlessTarget(handle.clone()));
    commands.spawn((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        TileDeferred::default(),
        scenes::showcase_sky(&assets),
        RenderTarget::Image(handle.into()),
    ));
}

/// A tile camera, its tier and what the tile path would not draw in its view.
type TileCameraState = (
    Entity,
    Option<&'static TierDecision>,
    Option<&'static TileMissing>,
);

fn capture_when_warm(
    mut commands: Commands,
    frames: Res<FrameCount>,
    target: Res<HeadlessTarget>,
    mut capture: ResMut<HeadlessCapture>,
    reports: Res<TileRenderReports>,
    cameras: Query<TileCameraState, With<TileDeferred>>,
    skies: Query<&EnvironmentMapLight>,
    assets: Res<AssetServer>,
) {
    // The sky loads in the background: capture once it is drawn, not the clear colour.
    let sky_loaded = skies.iter().all(|sky| {
        assets.is_loaded_with_dependencies(&sky.diffuse_map)
            && assets.is_loaded_with_dependencies(&sky.specular_map)
    });
    if !sky_loaded {
        capture.warm_from = frames.0;
    }
    if capture.requested || frames.0 < capture.warm_from + HEADLESS_FRAMES {
        return;
    }
    capture.requested = true;
    for (camera, decision, missing) in &cameras {
        if let Some(decision) = decision {
            println!("camera {camera}: {}", decision.summary());
        }
        let missing = missing.and_then(TileMissing::summary);
        println!(
            "camera {camera}: missing on the tile path: {}",
            missing.as_deref().unwrap_or("nothing")
        );
        print_plan(&reports, camera);
    }
    let path = capture.path.clone();
    commands.spawn(Screenshot::image(target.0.clone())).observe(
        move |captured: On<ScreenshotCaptured>, mut exit: MessageWriter<AppExit>| {
            let saved = captured
                .image
                .clone()
                .try_into_dynamic()
                .map_err(|e| e.to_string())
                .and_then(|image| image.to_rgb8().save(&path).map_err(|e| e.to_string()));
            match saved {
                Ok(()) => {
                    println!("wrote {}", path.display());
                    exit.write(AppExit::Success);
                }
                Err(error) => {
                    error!("cannot write {}: {error}", path.display());
                    exit.write(AppExit::error());
                }
            }
        },
    );
}

fn print_device_profile(profile: Option<Res<DeviceProfile>>) {
    if let Some(profile) = profile.filter(|p| p.is_added()) {
        println!("device: {}", profile.summary());
    }
}

/// Prints the frame's plan and what it costs in bandwidth and power.
fn print_plan(reports: &TileRenderReports, camera: Entity) {
    let Some(report) = reports.get(camera) else {
        println!("camera {camera}: not rendered by the tile path (see the log for why)");
        return;
    };
    let plan = &report.compiled;
    println!("frame plan:\n{}", plan.describe());
    let cost = &plan.cost;
    println!(
        "attachment traffic: {:.2} MB/frame, {:.3} GB/s and about {:.0} mW at 60 fps \
         ({DEFAULT_MW_PER_GBPS} mW per GB/s)",
        cost.mb(),
        cost.gb_per_s(60.0),
        cost.milliwatts(60.0, DEFAULT_MW_PER_GBPS)
    );
    if let Some(times) = report.gpu_times {
        println!(
            "GPU: G-buffer {:.2} ms, lighting {:.2} ms, tonemap {:.2} ms",
            times.gbuffer_ms, times.lighting_ms, times.tonemap_ms
        );
    }
    println!(
        "{} draws, {} instances, {} clustered lights",
        report.draws, report.instances, report.clustered_lights
    );
}
