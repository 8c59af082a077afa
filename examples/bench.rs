//! A measuring tool, not a scene to copy (see `tile_camera` for that).
//!
//! Benchmark: one scene rendered by the tile-deferred path (without MSAA; at 4x MSAA lighting
//! edges per sample and interiors once, `MsaaShading::EdgeSelective`; at 4x lighting every
//! sample, `MsaaShading::EverySample`; and as the unmerged debug tier: the same passes as
//! separate render passes, what merging saves) and by stock Bevy's forward (`Msaa::Off` and
//! `Msaa::Sample4`) and deferred paths, in one headless run, each path in a fresh app.
//!
//! For each path and light count (default 1, 16, 256, 1024) it prints:
//! - a time table: GPU time as the `device.poll(Wait)` after `app.update()` (Bevy submits the
//!   frame's command buffers at the end of `app.update()`, so on a GPU this is the frame's GPU
//!   time; the same measure for every path, and the one the ratios use; on a CPU device such
//!   as lavapipe the frame renders inside `app.update()` and the ratios use the wall time
//!   instead), the wall time of a frame rendered and waited for, the time per frame of a loop
//!   that never waits (CPU and GPU overlap: the slower of the two), the CPU time of
//!   `app.update()` (pipelined rendering is off, so the render world runs inside it); for the
//!   tile paths the crate's own timestamps per subpass (the lighting subpass alone: `ts
//!   light`), its per-view CPU time, its CPU time assigning lights to clusters
//!   (`report.clusters.assignment_ms`), the cluster grid with the most lights in one cluster,
//!   and with MSAA the fraction of pixels lit per sample;
//! - a traffic table: attachment traffic per frame, the tile path's compiled plan, and for
//!   Bevy's paths the frame-graph model of the passes Bevy 0.19.1 records
//!   (`frame_graph::stock_bevy`), with GB/s and mW at 60 fps, and ratios against each Bevy path;
//! - the ratios of issue 12 per light count: tile 1x / Bevy forward 1x, tile 4x edge-selective
//!   and tile 4x every sample / Bevy forward 4x, tile 1x / Bevy deferred, and the lighting
//!   subpass at 4x edge-selective / at 1x (and 4x every sample / 4x edge-selective), with the
//!   issue's targets.
//!
//! With `--shadows` (issue 13) every light count is measured twice per path, without and with
//! shadows: the sun casting shadows through Bevy's default 4 cascades and the first 4 point
//! lights casting cube-map shadows (`--shadows` turns on `--sun`). The tables gain a `shadows`
//! column (time and traffic) and the ratios a column per light count with shadows.
//! `--sun-shadows` (issue 34) is the same with the sun's cascades alone. `--filter
//! hardware|gaussian|temporal` sets the camera's `ShadowFilteringMethod` (Bevy's default:
//! gaussian). Traffic with
//! shadows includes the shadow maps' stores: the tile path's from its priced frame
//! (`TileViewReport::priced`: Bevy's shadow passes, then the tile pass), stock Bevy's from
//! `StockBevyOptions::shadow_maps` set to the maps the tile report says were rendered
//! (`TileViewReport::shadow_maps`), so both sides pay for the same maps.
//!
//! With several `--meshes` counts it measures instead how CPU time per frame grows with the
//! number of meshes, for the tile path and Bevy forward: unchanged, or with `--moving P` P% of
//! the objects moving every frame (issue 34: 1,000 to 100,000 meshes, unchanged and with 10%
//! moving).
//!
//! The scene (examples/scenes/bench.rs) is a grid of `--meshes` PBR objects under a grid of
//! point lights whose range shrinks as lights are added; `--range R` gives every light R
//! metres instead, `--sun` adds a directional light, and `--scene dense` draws `bench_msaa`'s
//! dense scene (geometry over the whole frame, its own sun, the lights in front of its fence;
//! default range 2.5 m) instead of the grid.
//!
//! Issue 12's table, before and after clustered lighting (release builds; one run per line):
//! the `bench` scene; the issue's "64 PBR objects, a sun and point lights of 6 m range" (the
//! grid scene with `--range 6 --sun`: the dense scene is not that scene, it has about 140
//! objects and lights of 2.5 m); the dense scene of the edge-selective target (4x every sample
//! / 4x edge-selective lighting subpass >= 1.5 at 16 lights; `bench_msaa --scene dense --lights
//! 16` measures the same scene and also offers 2x and 8x); and lavapipe. Before clustering a
//! 4x frame at 1024 lights takes seconds, hence the short runs:
//!
//! ```sh
//! cargo run --release --example bench -- --width 3840 --height 2160 --lights 1,16,256,1024 \
//!     --frames 20 --warmup 5
//! cargo run --release --example bench -- --width 3840 --height 2160 --lights 16,256 \
//!     --range 6 --sun --frames 20 --warmup 5
//! cargo run --release --example bench -- --width 3840 --height 2160 --lights 16 \
//!     --scene dense --frames 20 --warmup 5
//! cargo run --release --example bench -- --width 1280 --height 720 --lights 16,64 \
//!     --range 6 --sun --frames 10 --warmup 3 --paths tile,tile4x,tile4xall,fwd,fwd4x  # lavapipe
//! ```
//!
//! Issue 13's shadows column (H200, then lavapipe):
//!
//! ```sh
//! cargo run --release --example bench -- --width 3840 --height 2160 --lights 16,256 \
//!     --range 6 --sun --shadows --frames 20 --warmup 5 --paths tile,tile4x,forward,forward4x
//! cargo run --release --example bench -- --width 1280 --height 720 --lights 16 --range 6 \
//!     --sun --shadows --frames 5 --warmup 2 --paths tile,tile4x,forward,forward4x  # lavapipe
//! ```
//!
//! Issue 34's shadowed scene, the sun's cascades alone (`--filter hardware` to time one tap
//! against Bevy's Gaussian default):
//!
//! ```sh
//! cargo run --release --example bench -- --width 3840 --height 2160 --lights 16 --range 6 \
//!     --sun-shadows --frames 20 --warmup 5 --paths tile,tile4x,forward,forward4x
//! ```
//!
//! Issue 34's `Auto` by measurement: what an `Auto` camera keeps on this GPU, against both
//! paths (`auto`, `auto4x`: timed once it has chosen; its choice and both of its own times are
//! printed under the tables):
//!
//! ```sh
//! cargo run --release --example bench -- --width 3840 --height 2160 --lights 16,256 \
//!     --range 6 --sun --frames 20 --warmup 5 --paths tile,tile4x,forward,forward4x,auto,auto4x
//! ```
//!
//! Other uses:
//!
//! ```sh
//! cargo run --release --example bench -- --meshes 1000,10000
//! cargo run --release --example bench -- --width 640 --height 360 --frames 10   # lavapipe
//! ```
//!
//! Flags: `--width W --height H` (1920x1080), `--lights 1,16,256,1024`, `--meshes M` (64; a
//! list switches to the mesh-scaling mode), `--frames N` (100) measured after `--warmup N`
//! (20), `--paths tile,tilecpu,tile4x,tile4xall,unmerged,forward,forward4x,deferred`
//! (`tilecpu`: 1x with the lights assigned on the CPU, `TileCpuLightAssignment`; `tiledirect`:
//! 1x with one `vkCmdDraw*` per mesh draw, `TileDeferred::indirect_draws` off; `tile4xdraws`:
//! 4x edge-selective with per-sample-index draws, `TileNoStencilSplit`; `tile4x`: 4x
//! edge-selective, `tile4xall`: 4x every sample; `auto`, `auto4x`: an `Auto` camera, which
//! measures on GPUs that are not tilers), `--range R` (metres), `--radius R` (every grid point
//! light's radius, metres; 0.05, and 0 is Bevy's default point light), `--sun`, `--shadows`
//! (each light count without and with shadows; grid scene, one `--meshes` count),
//! `--scene grid|dense`, `--plans` (print each compiled plan; the tile path's priced frame).

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::{
    app::PluginsState,
    camera::{ClearColorConfig, RenderTarget},
    core_pipeline::prepass::{DeferredPrepass, DepthPrepass},
    light::ShadowFilteringMethod,
    log::{Level, LogPlugin},
    pbr::DefaultOpaqueRendererMethod,
    prelude::*,
    render::{render_resource::PollType, renderer::RenderDevice},
};
use bevy_tile_deferred::{
    DeviceProfile, MsaaShading, TierDecision, TileAutoMeasure, TileClusterStats, TileDeferred,
    TileDeferredPlugin, TileInstanceBatches, TileRenderReports,
    device::DeviceKind,
    frame_graph::{
        CompiledFrame, DEFAULT_MW_PER_GBPS, DeviceCaps, Extent, Format, FrameCost, ShadowMaps,
        StockBevyOptions, StockBevyPath, bytes_to_mb, compile_stock_bevy,
    },
};
use scenes::bench::{BenchLayout, BenchScene};
use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    time::{Duration, Instant},
};

/// Frame rate at which traffic is turned into GB/s and milliwatts.
const FPS: f64 = 60.0;

fn main() {
    let options = match Options::from_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("bench: {message}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    let mut log = true;
    if options.meshes.len() > 1 {
        mesh_scaling(&options, &mut log);
    } else {
        paths_by_lights(&options, &mut log);
    }
}

const USAGE: &str = "usage: bench [--width W] [--height H] [--lights 1,16,256,1024] \
                     [--meshes M | --meshes 1000,10000] [--frames N] [--warmup N] \
                     [--paths tile,tilecpu,tiledirect,tile4x,tile4xall,tile4xdraws,unmerged,forward,forward4x,deferred] \
                     [--range METRES] [--radius METRES] [--sun] [--shadows | --sun-shadows] \
                     [--filter hardware|gaussian|temporal] [--moving PERCENT] \
                     [--scene grid|dense] [--plans]";

/// The main mode: every path at every light count.
fn paths_by_lights(options: &Options, log: &mut bool) {
    let meshes = options.meshes[0];
    println!(
        "{}x{}, {}, lights {:?}, {} frames after {} warm-up frames",
        options.width,
        options.height,
        options.scene(meshes, 0).describe(),
        options.lights,
        options.frames,
        options.warmup
    );
    let mut runs = Vec::new();
    for &lights in &options.lights {
        for &shadows in options.shadow_variants() {
            for &path in &options.paths {
                let scene = BenchScene {
                    shadows,
                    point_shadows: shadows && options.point_shadows,
                    ..options.scene(meshes, lights)
                };
                let run = measure(options, path, scene, log);
                print_progress(&run);
                runs.push(run);
            }
        }
    }
    let shadow_notes = price_shadowed_stock_runs(&mut runs, options);
    print_device(&runs);
    print_table(&runs, options);
    for note in shadow_notes {
        println!("{note}");
    }
}

/// Prices stock Bevy's shadowed runs with the shadow maps the tile path reported for the same
/// scene (`TileViewReport::shadow_maps`), so that both sides of a traffic ratio pay for the same
/// maps; returns notes on what could not be priced that way or looked wrong.
fn price_shadowed_stock_runs(runs: &mut [Run], options: &Options) -> Vec<String> {
    let mut notes = Vec::new();
    for &lights in &options.lights {
        let mut tile_maps: Vec<(PathKind, ShadowMaps)> = Vec::new();
        let shadowed_tile_runs = runs
            .iter()
            .filter(|r| r.path.is_tile() && r.scene.lights == lights && r.scene.casts_shadows());
        for run in shadowed_tile_runs {
            let Some(maps) = run.shadow_maps else {
                continue;
            };
            // The sun's cascades, and one cube per shadowed point light (issue 13's scene; issue
            // 34's has none).
            let shadowed_points = run.scene.shadowed_point_lights();
            if maps.cascades == 0 || maps.cubes as usize != shadowed_points {
                notes.push(format!(
                    "warning: {} at {lights} lights with shadows reported {}: not the scene's \
                     shadows (a sun with cascades and {shadowed_points} shadowed point lights)",
                    run.path.label(),
                    shadow_maps_cell(&maps)
                ));
            }
            tile_maps.push((run.path, maps));
        }
        let Some(&(source, maps)) = tile_maps.first() else {
            if runs.iter().any(|r| {
                r.path.stock().is_some() && r.scene.lights == lights && r.scene.casts_shadows()
            }) {
                notes.push(format!(
                    "no traffic for Bevy's paths with shadows at {lights} lights: no tile run \
                     reported which shadow maps were rendered (add a tile path to --paths)"
                ));
            }
            continue;
        };
        if let Some((other, other_maps)) = tile_maps.iter().find(|(_, m)| *m != maps) {
            notes.push(format!(
                "warning: at {lights} lights the tile runs reported different shadow maps: {} \
                 {}, {} {}; Bevy's paths are priced with the first",
                source.label(),
                shadow_maps_cell(&maps),
                other.label(),
                shadow_maps_cell(other_maps)
            ));
        }
        for run in runs.iter_mut().filter(|r| {
            r.path.stock().is_some() && r.scene.lights == lights && r.scene.casts_shadows()
        }) {
            let Some(stock) = run.path.stock() else {
                continue;
            };
            let caps = run.caps.unwrap_or_else(DeviceCaps::desktop);
            let graph = stock.graph_with(
                options.extent(),
                Format::Rgba8Srgb,
                StockBevyOptions {
                    shadow_maps: maps,
                    ..StockBevyOptions::default()
                },
            );
            match compile_stock_bevy(&graph, &caps) {
                Ok(plan) => {
                    if options.plans {
                        print_plan(options, run.path, &run.scene, &plan);
                    }
                    run.plan = Some(plan);
                    run.shadow_maps = Some(maps);
                }
                Err(e) => notes.push(format!(
                    "no traffic for {} at {lights} lights with shadows: stock-Bevy model: {e}",
                    run.path.label()
                )),
            }
        }
    }
    notes
}

/// The shadow maps of a frame, compactly: `4 cascades + 4 cubes`.
fn shadow_maps_cell(maps: &ShadowMaps) -> String {
    if maps.pass_count() == 0 {
        return "none".to_owned();
    }
    let mut parts = Vec::new();
    if maps.cascades > 0 {
        parts.push(format!("{} cascades", maps.cascades));
    }
    if maps.spot_maps > 0 {
        parts.push(format!("{} spot", maps.spot_maps));
    }
    if maps.cubes > 0 {
        parts.push(format!("{} cubes", maps.cubes));
    }
    parts.join(" + ")
}

fn print_plan(options: &Options, path: PathKind, scene: &BenchScene, plan: &CompiledFrame) {
    println!(
        "\nplan of {}{} ({} lights, {}x{}):\n{}",
        path.label(),
        if scene.casts_shadows() {
            " with shadows"
        } else {
            ""
        },
        scene.lights,
        options.width,
        options.height,
        plan.describe()
    );
}

/// The `--meshes 1000,10000` mode: CPU time per frame against the number of unchanged meshes.
fn mesh_scaling(options: &Options, log: &mut bool) {
    let lights = if options.lights_given {
        options.lights[0]
    } else {
        16
    };
    println!(
        "{}x{}, meshes {:?} ({}% moving every frame), {lights} lights ({}), {} frames after {} \
         warm-up frames",
        options.width,
        options.height,
        options.meshes,
        options.moving,
        options.scene(0, lights).lighting(),
        options.frames,
        options.warmup
    );
    let paths: Vec<PathKind> = [PathKind::Tile, PathKind::TileDirect, PathKind::Forward]
        .into_iter()
        .filter(|p| options.paths.contains(p))
        .collect();
    let mut runs = Vec::new();
    for &meshes in &options.meshes {
        for &path in &paths {
            let run = measure(options, path, options.scene(meshes, lights), log);
            print_progress(&run);
            runs.push(run);
        }
    }
    print_device(&runs);
    let mut table = Table::new(&[
        "meshes",
        "path",
        "CPU ms",
        "crate CPU ms",
        "draws",
        "calls",
        "instances",
        "batches kept",
        "wall ms",
        "loop ms",
    ]);
    for run in &runs {
        let tile = run.tile.as_ref();
        table.row(vec![
            run.scene.meshes.to_string(),
            run.path.label().to_owned(),
            opt_ms(run.timing.as_ref().map(|t| t.cpu_ms)),
            opt_ms(tile.map(|t| t.crate_cpu_ms)),
            tile.map_or("-".into(), |t| t.draws.to_string()),
            tile.map_or("-".into(), |t| t.draw_calls.to_string()),
            tile.map_or("-".into(), |t| t.instances.to_string()),
            tile.map_or("-".into(), |t| t.batches_kept.clone()),
            opt_ms(run.timing.as_ref().map(|t| t.wall_ms)),
            opt_ms(run.timing.as_ref().map(|t| t.loop_ms)),
        ]);
    }
    table.print();
    print_failures(&runs);

    // Growth from the smallest to the largest mesh count, per measure.
    let (first, last) = (options.meshes[0], options.meshes[options.meshes.len() - 1]);
    let find = |meshes: usize, path: PathKind| {
        runs.iter()
            .find(|r| r.scene.meshes == meshes && r.path == path && r.timing.is_some())
    };
    println!();
    println!(
        "growth from {first} to {last} meshes (x{:.1} meshes):",
        last as f64 / first as f64
    );
    let growth = |what: &str, a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => {
            println!("  {what:<32} {a:>8.3} -> {b:>8.3} ms  x{:.2}", b / a)
        }
        _ => println!("  {what:<32} not measured"),
    };
    let cpu = |r: Option<&Run>| r.and_then(|r| r.timing.as_ref()).map(|t| t.cpu_ms);
    let crate_cpu = |r: Option<&Run>| r.and_then(|r| r.tile.as_ref()).map(|t| t.crate_cpu_ms);
    let (tile_a, tile_b) = (find(first, PathKind::Tile), find(last, PathKind::Tile));
    let (fwd_a, fwd_b) = (
        find(first, PathKind::Forward),
        find(last, PathKind::Forward),
    );
    growth(
        "tile: crate CPU per frame",
        crate_cpu(tile_a),
        crate_cpu(tile_b),
    );
    growth("tile: total CPU per frame", cpu(tile_a), cpu(tile_b));
    growth("Bevy forward: total CPU per frame", cpu(fwd_a), cpu(fwd_b));
    if let (Some(ta), Some(tb), Some(fa), Some(fb)) =
        (crate_cpu(tile_a), crate_cpu(tile_b), cpu(fwd_a), cpu(fwd_b))
        && last != first
    {
        // What each added mesh costs per frame: the crate's own work against Bevy's whole frame.
        let per_thousand = 1000.0 / (last as f64 - first as f64);
        let crate_growth = (tb - ta) * per_thousand;
        let bevy_growth = (fb - fa) * per_thousand;
        println!(
            "  per 1000 added meshes: the crate's own CPU work +{crate_growth:.3} ms per frame, \
             Bevy forward's whole frame +{bevy_growth:.3} ms: {}",
            if crate_growth <= bevy_growth.max(0.0) {
                "the crate grows no faster than Bevy"
            } else {
                "the crate grows FASTER than Bevy"
            }
        );
    }
}

/// The paths under comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PathKind {
    /// The tile path without MSAA.
    Tile,
    /// The tile path without MSAA, the lights assigned to the clusters on the CPU
    /// (`TileCpuLightAssignment`) rather than by the GPU's compute dispatch.
    TileCpuAssign,
    /// The tile path without MSAA, each mesh draw a `vkCmdDraw*` of its own
    /// (`TileDeferred::indirect_draws` off). Not in the default list.
    TileDirect,
    /// The tile path at 4x MSAA, edges lit per sample and interiors once
    /// (`MsaaShading::EdgeSelective`).
    Tile4xEdge,
    /// The tile path at 4x MSAA, every sample lit (`MsaaShading::EverySample`).
    Tile4xEvery,
    /// The tile path at 4x MSAA, edge-selective, lit with per-sample-index draws instead of the
    /// stencil split (`TileNoStencilSplit`: the path of devices without sample-rate shading).
    Tile4xDraws,
    /// The tile path's unmerged debug tier: the same passes as separate render passes.
    TileUnmerged,
    Forward,
    Forward4x,
    Deferred,
    /// An `Auto` camera as a game gets it: on a GPU that is not a tiler it times the tile path
    /// and Bevy's `Core3d` and keeps the faster (`TileAutoMeasure`); timed once it has chosen.
    /// Not in the default list.
    Auto,
    /// [`PathKind::Auto`] at 4x MSAA.
    Auto4x,
}

impl PathKind {
    const ALL: [PathKind; 9] = [
        PathKind::Tile,
        PathKind::TileCpuAssign,
        PathKind::Tile4xEdge,
        PathKind::Tile4xEvery,
        PathKind::Tile4xDraws,
        PathKind::TileUnmerged,
        PathKind::Forward,
        PathKind::Forward4x,
        PathKind::Deferred,
    ];

    fn label(self) -> &'static str {
        match self {
            PathKind::Tile => "tile 1x",
            PathKind::TileCpuAssign => "tile 1x, CPU assignment",
            PathKind::TileDirect => "tile 1x, direct draws",
            PathKind::Tile4xEdge => "tile 4x edge-selective",
            PathKind::Tile4xEvery => "tile 4x every sample",
            PathKind::Tile4xDraws => "tile 4x per-sample draws",
            PathKind::TileUnmerged => "tile 1x unmerged (debug)",
            PathKind::Forward => "Bevy forward 1x",
            PathKind::Forward4x => "Bevy forward 4x",
            PathKind::Deferred => "Bevy deferred",
            PathKind::Auto => "Auto 1x (measured)",
            PathKind::Auto4x => "Auto 4x (measured)",
        }
    }

    fn short(self) -> &'static str {
        match self {
            PathKind::Tile => "tile",
            PathKind::TileCpuAssign => "tilecpu",
            PathKind::TileDirect => "tiledirect",
            PathKind::Tile4xEdge => "tile4x",
            PathKind::Tile4xEvery => "tile4xall",
            PathKind::Tile4xDraws => "tile4xdraws",
            PathKind::TileUnmerged => "tileU",
            PathKind::Forward => "fwd",
            PathKind::Forward4x => "fwd4x",
            PathKind::Deferred => "def",
            PathKind::Auto => "auto",
            PathKind::Auto4x => "auto4x",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "tile" => Some(PathKind::Tile),
            "tilecpu" => Some(PathKind::TileCpuAssign),
            "tiledirect" => Some(PathKind::TileDirect),
            "tile4x" | "tile4x-edge" => Some(PathKind::Tile4xEdge),
            "tile4xall" | "tile4x-every" => Some(PathKind::Tile4xEvery),
            "tile4xdraws" => Some(PathKind::Tile4xDraws),
            "unmerged" | "tileU" => Some(PathKind::TileUnmerged),
            "forward" | "fwd" => Some(PathKind::Forward),
            "forward4x" | "fwd4x" => Some(PathKind::Forward4x),
            "deferred" | "def" => Some(PathKind::Deferred),
            "auto" => Some(PathKind::Auto),
            "auto4x" => Some(PathKind::Auto4x),
            _ => None,
        }
    }

    /// Bevy's path, for the stock-Bevy traffic model.
    fn stock(self) -> Option<StockBevyPath> {
        match self {
            PathKind::Tile
            | PathKind::TileCpuAssign
            | PathKind::TileDirect
            | PathKind::Tile4xEdge
            | PathKind::Tile4xEvery
            | PathKind::Tile4xDraws
            | PathKind::TileUnmerged
            | PathKind::Auto
            | PathKind::Auto4x => None,
            PathKind::Forward => Some(StockBevyPath::Forward { msaa_samples: 1 }),
            PathKind::Forward4x => Some(StockBevyPath::Forward { msaa_samples: 4 }),
            PathKind::Deferred => Some(StockBevyPath::Deferred),
        }
    }

    /// Rendered by the crate's tile schedule.
    fn is_tile(self) -> bool {
        self.stock().is_none() && !self.is_auto()
    }

    /// An `Auto` camera that chooses its path by measurement.
    fn is_auto(self) -> bool {
        matches!(self, PathKind::Auto | PathKind::Auto4x)
    }

    fn msaa(self) -> Msaa {
        match self {
            PathKind::Tile4xEdge
            | PathKind::Tile4xEvery
            | PathKind::Tile4xDraws
            | PathKind::Forward4x
            | PathKind::Auto4x => Msaa::Sample4,
            _ => Msaa::Off,
        }
    }

    /// The tile camera's settings (None for Bevy's paths).
    fn tile_settings(self) -> Option<TileDeferred> {
        match self {
            PathKind::Tile | PathKind::TileCpuAssign | PathKind::Auto | PathKind::Auto4x => {
                Some(TileDeferred::default())
            }
            PathKind::TileDirect => Some(TileDeferred {
                indirect_draws: false,
                ..default()
            }),
            PathKind::Tile4xEdge | PathKind::Tile4xDraws => Some(TileDeferred {
                msaa_shading: MsaaShading::EdgeSelective,
                ..default()
            }),
            PathKind::Tile4xEvery => Some(TileDeferred {
                msaa_shading: MsaaShading::EverySample,
                ..default()
            }),
            PathKind::TileUnmerged => Some(TileDeferred {
                merge_subpasses: false,
                ..default()
            }),
            PathKind::Forward | PathKind::Forward4x | PathKind::Deferred => None,
        }
    }
}

struct Options {
    width: u32,
    height: u32,
    lights: Vec<usize>,
    lights_given: bool,
    meshes: Vec<usize>,
    frames: u32,
    warmup: u32,
    paths: Vec<PathKind>,
    plans: bool,
    /// `--range R`: every point light's range, metres.
    range: Option<f32>,
    /// `--radius R`: every grid point light's radius, metres.
    light_radius: f32,
    /// `--sun`: a directional light too.
    sun: bool,
    /// `--shadows` or `--sun-shadows`: each light count also with the sun's shadows.
    shadows: bool,
    /// `--shadows`: and four point lights' shadows.
    point_shadows: bool,
    /// `--filter`: the camera's shadow filter.
    filter: ShadowFilteringMethod,
    /// `--moving P`: P% of the objects move every frame.
    moving: u32,
    /// `--scene grid|dense`.
    layout: BenchLayout,
}

impl Options {
    fn from_args() -> Result<Self, String> {
        let mut options = Options {
            width: 1920,
            height: 1080,
            lights: vec![1, 16, 256, 1024],
            lights_given: false,
            meshes: vec![64],
            frames: 100,
            warmup: 20,
            paths: PathKind::ALL.to_vec(),
            plans: false,
            range: None,
            light_radius: scenes::bench::DEFAULT_LIGHT_RADIUS,
            sun: false,
            shadows: false,
            point_shadows: false,
            filter: ShadowFilteringMethod::default(),
            moving: 0,
            layout: BenchLayout::Grid,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--width" => options.width = number(&value()?)?,
                "--height" => options.height = number(&value()?)?,
                "--frames" => options.frames = number(&value()?)?,
                "--warmup" => options.warmup = number(&value()?)?,
                "--lights" => {
                    options.lights = list(&value()?)?;
                    options.lights_given = true;
                }
                "--meshes" => options.meshes = list(&value()?)?,
                "--paths" => {
                    options.paths = value()?
                        .split(',')
                        .map(|p| PathKind::parse(p.trim()).ok_or(format!("unknown path `{p}`")))
                        .collect::<Result<_, _>>()?;
                }
                "--plans" => options.plans = true,
                "--moving" => {
                    options.moving = number(&value()?)?;
                    if options.moving > 100 {
                        return Err("--moving is a percentage: 0 to 100".into());
                    }
                }
                "--range" => {
                    let range: f32 = number(&value()?)?;
                    if !(range > 0.0 && range.is_finite()) {
                        return Err(format!(
                            "--range {range}: must be a positive number of metres"
                        ));
                    }
                    options.range = Some(range);
                }
                "--radius" => {
                    let radius: f32 = number(&value()?)?;
                    if !(radius >= 0.0 && radius.is_finite()) {
                        return Err(format!(
                            "--radius {radius}: must be zero or a positive number of metres"
                        ));
                    }
                    options.light_radius = radius;
                }
                "--sun" => options.sun = true,
                "--shadows" => {
                    options.shadows = true;
                    options.point_shadows = true;
                }
                "--sun-shadows" => options.shadows = true,
                "--filter" => {
                    options.filter = match value()?.as_str() {
                        "hardware" => ShadowFilteringMethod::Hardware2x2,
                        "gaussian" => ShadowFilteringMethod::Gaussian,
                        "temporal" => ShadowFilteringMethod::Temporal,
                        other => {
                            return Err(format!(
                                "unknown filter `{other}`: hardware, gaussian or temporal"
                            ));
                        }
                    };
                }
                "--scene" => {
                    options.layout = match value()?.as_str() {
                        "grid" => BenchLayout::Grid,
                        "dense" => BenchLayout::Dense,
                        other => return Err(format!("unknown scene `{other}`: grid or dense")),
                    };
                }
                "--help" | "-h" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown flag `{other}`")),
            }
        }
        if options.width == 0 || options.height == 0 || options.frames == 0 {
            return Err("width, height and frames must be positive".into());
        }
        if options.lights.is_empty() || options.meshes.is_empty() || options.paths.is_empty() {
            return Err("--lights, --meshes and --paths need at least one value".into());
        }
        if options.layout == BenchLayout::Dense && options.meshes.len() > 1 {
            return Err("--scene dense has a fixed set of objects: no --meshes list".into());
        }
        if options.shadows {
            if options.layout == BenchLayout::Dense {
                return Err(
                    "--shadows needs the grid scene: the dense scene's lights cast none \
                            (no --scene dense)"
                        .into(),
                );
            }
            if options.meshes.len() > 1 {
                return Err("--shadows compares paths per light count: no --meshes list".into());
            }
            // The shadowed scene is issue 13's: the sun's cascades and four point lights' cubes.
            options.sun = true;
        }
        Ok(options)
    }

    /// The shadow settings each light count is measured with.
    fn shadow_variants(&self) -> &'static [bool] {
        if self.shadows {
            &[false, true]
        } else {
            &[false]
        }
    }

    fn extent(&self) -> Extent {
        Extent::new(self.width, self.height)
    }

    /// The scene drawn with `meshes` objects and `lights` lights.
    fn scene(&self, meshes: usize, lights: usize) -> BenchScene {
        BenchScene {
            range: self.range,
            light_radius: self.light_radius,
            sun: self.sun,
            layout: self.layout,
            ..BenchScene::grid(meshes, lights)
        }
    }
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))
}

fn list(text: &str) -> Result<Vec<usize>, String> {
    text.split(',').map(number).collect()
}

/// What one app instance measured.
struct Run {
    path: PathKind,
    scene: BenchScene,
    device: Option<String>,
    /// The device is a CPU (lavapipe): its "GPU" work runs inside `app.update()`.
    software: bool,
    timing: Option<Timing>,
    tile: Option<TileStats>,
    /// Attachment traffic per frame and its plan: the tile path's priced frame (its compiled
    /// frame after Bevy's shadow passes), or the stock-Bevy model's.
    plan: Option<CompiledFrame>,
    /// The device's capabilities, for the stock-Bevy model.
    caps: Option<DeviceCaps>,
    /// The shadow maps in `plan`: for the tile path the ones its report says were rendered,
    /// for Bevy's paths the ones its model was given (None: not known).
    shadow_maps: Option<ShadowMaps>,
    error: Option<String>,
    /// An `Auto` camera's decision once it had chosen (its summary: the path and both times).
    auto: Option<String>,
}

/// Medians over the measured frames, ms.
struct Timing {
    /// `app.update()`.
    cpu_ms: f64,
    /// `device.poll(Wait)` after it.
    wait_ms: f64,
    /// Both.
    wall_ms: f64,
    /// Per frame of a loop of `app.update()` without waits, then one wait.
    loop_ms: f64,
}

/// The tile path's own report, averaged over the measured frames.
struct TileStats {
    /// G-buffer, lighting, tonemap, ms (None without timestamps).
    gpu_ms: Option<[f64; 3]>,
    crate_cpu_ms: f64,
    draws: usize,
    /// The `vkCmdDraw*` calls of those draws (fewer where indirect calls draw several).
    draw_calls: usize,
    instances: usize,
    /// Measured frames that kept the last frame's draws, of those reported ("18/20").
    batches_kept: String,
    clustered_lights: usize,
    /// The last frame's light clusters (grid and occupancy).
    clusters: TileClusterStats,
    /// The crate's CPU time assigning lights to clusters (median), ms.
    assignment_ms: f64,
    /// The largest `max_lights_per_cluster` seen over the measured frames.
    max_lights_per_cluster: u32,
    /// With MSAA: the fraction of pixels lit per sample (edges), the last one reported.
    per_sample_fraction: Option<f32>,
    /// Samples per pixel actually rendered (after any fallback).
    samples: u32,
}

fn print_progress(run: &Run) {
    let what = match run.scene.layout {
        BenchLayout::Grid => format!(
            "{} / {} lights / {} meshes",
            run.path.label(),
            run.scene.lights,
            run.scene.meshes
        ),
        BenchLayout::Dense => format!("{} / {} lights / dense", run.path.label(), run.scene.lights),
    };
    match (&run.timing, &run.error) {
        (_, Some(error)) => eprintln!("  {what}: FAILED: {error}"),
        (Some(t), None) => eprintln!("  {what}: wall {:.3} ms, CPU {:.3} ms", t.wall_ms, t.cpu_ms),
        (None, None) => {}
    }
}

fn print_device(runs: &[Run]) {
    let device = runs.iter().find_map(|r| r.device.clone());
    println!();
    println!(
        "device: {}",
        device.as_deref().unwrap_or("unknown (no DeviceProfile)")
    );
}

fn print_failures(runs: &[Run]) {
    for run in runs.iter().filter(|r| r.error.is_some()) {
        println!(
            "failed: {} at {} lights, {} meshes: {}",
            run.path.label(),
            run.scene.lights,
            run.scene.meshes,
            run.error.as_deref().unwrap_or_default()
        );
    }
}

/// Renders `frames` frames of `scene` with `path` in a fresh app and measures them.
fn measure(options: &Options, path: PathKind, scene: BenchScene, log: &mut bool) -> Run {
    let mut run = Run {
        path,
        scene,
        device: None,
        software: false,
        timing: None,
        tile: None,
        plan: None,
        caps: None,
        shadow_maps: None,
        error: None,
        auto: None,
    };
    let first_app = std::mem::replace(log, false);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        measure_in_app(options, path, scene, first_app, &mut run)
    }));
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(error)) => run.error = Some(error),
        Err(panic) => {
            run.error = Some(format!(
                "panicked: {}",
                panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)")
            ));
        }
    }
    // With shadows, Bevy's paths are priced once the tile path has said which maps were rendered
    // (price_shadowed_stock_runs).
    if run.plan.is_none()
        && !scene.casts_shadows()
        && let Some(stock) = path.stock()
    {
        // The model does not need the app: price Bevy's path even when the run failed.
        run.plan = stock
            .compile(options.extent(), Format::Rgba8Srgb, &DeviceCaps::desktop())
            .ok();
    }
    run
}

fn measure_in_app(
    options: &Options,
    path: PathKind,
    scene: BenchScene,
    log: bool,
    run: &mut Run,
) -> Result<(), String> {
    let mut app = new_app(path, log);
    if path == PathKind::TileCpuAssign {
        app.sub_app_mut(bevy::render::RenderApp)
            .insert_resource(bevy_tile_deferred::TileCpuLightAssignment);
    }
    if path == PathKind::Tile4xDraws {
        app.sub_app_mut(bevy::render::RenderApp)
            .insert_resource(bevy_tile_deferred::TileNoStencilSplit);
    }
    let camera = spawn_scene_and_camera(&mut app, options, path, scene);
    // As Bevy's runners do: wait for the renderer to be created, then finish the plugins.
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
    }
    app.finish();
    app.cleanup();

    for _ in 0..options.warmup {
        app.update();
        wait_for_gpu(&app)?;
    }
    // An `Auto` camera times both paths first: the measured frames are the chosen path's.
    if path.is_auto() {
        for _ in 0..600 {
            let decision = app.world().get::<TierDecision>(camera);
            let measuring = decision
                .and_then(|d| d.measured.as_ref())
                .is_some_and(|m| matches!(m, bevy_tile_deferred::TierMeasurement::Timing { .. }));
            if !measuring {
                break;
            }
            app.update();
            wait_for_gpu(&app)?;
        }
        run.auto = app
            .world()
            .get::<TierDecision>(camera)
            .map(TierDecision::summary);
    }

    // Frames rendered and waited for one by one.
    let mut cpu = Vec::new();
    let mut wait = Vec::new();
    let mut wall = Vec::new();
    let mut tile = TileAccumulator::default();
    for _ in 0..options.frames {
        let started = Instant::now();
        app.update();
        let updated = Instant::now();
        wait_for_gpu(&app)?;
        let done = Instant::now();
        cpu.push(ms(updated - started));
        wait.push(ms(done - updated));
        wall.push(ms(done - started));
        if path.is_tile() {
            tile.add(&app, camera);
        }
    }
    // A loop that never waits: CPU and GPU overlap.
    let started = Instant::now();
    for _ in 0..options.frames {
        app.update();
    }
    wait_for_gpu(&app)?;
    let loop_ms = ms(started.elapsed()) / f64::from(options.frames);

    run.timing = Some(Timing {
        cpu_ms: median(&mut cpu),
        wait_ms: median(&mut wait),
        wall_ms: median(&mut wall),
        loop_ms,
    });
    let profile = app.world().get_resource::<DeviceProfile>().cloned();
    run.device = profile.as_ref().map(DeviceProfile::summary);
    run.software = profile
        .as_ref()
        .is_some_and(|p| p.device_kind == DeviceKind::Cpu);
    let caps = profile
        .as_ref()
        .map_or_else(DeviceCaps::desktop, DeviceProfile::frame_graph_caps);
    run.caps = Some(caps);
    match path.stock() {
        None if path.is_auto() => {}
        None => {
            run.plan = tile.plan.take();
            run.shadow_maps = tile.shadow_maps;
            run.tile = tile.finish();
            if run.tile.is_none() {
                return Err(
                    "the tile path reported nothing (did the camera fall back to \
                            Core3d?)"
                        .into(),
                );
            }
        }
        // With shadows: priced by price_shadowed_stock_runs.
        Some(_) if scene.casts_shadows() => {}
        Some(stock) => {
            run.plan = Some(
                stock
                    .compile(options.extent(), Format::Rgba8Srgb, &caps)
                    .map_err(|e| format!("stock-Bevy model: {e}"))?,
            );
            run.shadow_maps = Some(ShadowMaps::NONE);
        }
    }
    if options.plans
        && let Some(plan) = &run.plan
    {
        print_plan(options, path, &scene, plan);
    }

    // Tear down: let the renderers release the camera's resources, finish the GPU's work, then
    // drop the app (and with it the device) while nothing is in flight.
    app.world_mut().despawn(camera);
    for _ in 0..2 {
        app.update();
        wait_for_gpu(&app)?;
    }
    drop(app);
    Ok(())
}

fn new_app(path: PathKind, log: bool) -> App {
    let mut app = App::new();
    let plugins = scenes::headless::benchmark_plugins().set(LogPlugin {
        level: Level::WARN,
        filter: "wgpu=error,naga=warn".into(),
        ..default()
    });
    if log {
        app.add_plugins(plugins);
    } else {
        // Bevy's logger is global: only the first app installs it.
        app.add_plugins(plugins.disable::<LogPlugin>());
    }
    // The tile paths are measured as they are: an `Auto` camera on a desktop GPU would otherwise
    // time Bevy's path against them and might switch to it.
    app.add_plugins(TileDeferredPlugin);
    if !path.is_auto() {
        app.insert_resource(TileAutoMeasure::NEVER);
    }
    if path == PathKind::Deferred {
        app.insert_resource(DefaultOpaqueRendererMethod::deferred());
    }
    app.add_systems(Update, move_objects);
    app
}

/// An object that `--moving` moves every frame: it bobs around where the scene put it.
#[derive(Component)]
struct Moving {
    rest: Vec3,
    phase: f32,
}

/// Marks every k-th object of the grid (not the ground, which has a `Name`) so that `percent`%
/// of them move.
fn mark_moving_objects(world: &mut World, percent: u32) {
    if percent == 0 {
        return;
    }
    let objects: Vec<(Entity, Vec3)> = world
        .query_filtered::<(Entity, &Transform), (With<Mesh3d>, Without<Name>)>()
        .iter(world)
        .map(|(entity, transform)| (entity, transform.translation))
        .collect();
    let moving = (objects.len() * percent as usize).div_ceil(100);
    let step = objects.len() as f64 / moving.max(1) as f64;
    for i in 0..moving {
        let (entity, rest) = objects[(i as f64 * step) as usize];
        world.entity_mut(entity).insert(Moving {
            rest,
            phase: i as f32,
        });
    }
}

/// Moves the marked objects by a frame count, not by the clock: every run moves them alike.
fn move_objects(mut objects: Query<(&Moving, &mut Transform)>, mut frame: Local<u32>) {
    *frame += 1;
    let t = *frame as f32 * 0.1;
    for (moving, mut transform) in &mut objects {
        transform.translation = moving.rest + Vec3::Y * 0.2 * (t + moving.phase).sin();
    }
}

fn spawn_scene_and_camera(
    app: &mut App,
    options: &Options,
    path: PathKind,
    scene: BenchScene,
) -> Entity {
    let image = scenes::headless::target_image(options.width, options.height);
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    scene.spawn(app.world_mut());
    mark_moving_objects(app.world_mut(), options.moving);
    let mut camera = app.world_mut().spawn((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(scenes::CLEAR_COLOR),
            ..default()
        },
        scene.camera_transform(),
        RenderTarget::Image(target.into()),
        path.msaa(),
        options.filter,
    ));
    if let Some(settings) = path.tile_settings() {
        camera.insert(settings);
    }
    if path == PathKind::Deferred {
        camera.insert((DepthPrepass, DeferredPrepass));
    }
    camera.id()
}

fn wait_for_gpu(app: &App) -> Result<(), String> {
    let device = app
        .world()
        .get_resource::<RenderDevice>()
        .ok_or("no RenderDevice in the main world")?;
    device
        .wgpu_device()
        .poll(PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .map(|_| ())
        .map_err(|e| format!("waiting for the GPU: {e}"))
}

/// Collects the tile path's per-frame reports (each frame's report is read once).
#[derive(Default)]
struct TileAccumulator {
    last_frame: Option<u64>,
    gpu: Vec<[f64; 3]>,
    crate_cpu: Vec<f64>,
    draws: usize,
    draw_calls: usize,
    instances: usize,
    /// Measured frames that kept the last frame's instanced draws (`TileInstanceBatches`).
    batches_kept: usize,
    clustered_lights: usize,
    clusters: TileClusterStats,
    assignment: Vec<f64>,
    max_lights_per_cluster: u32,
    per_sample_fraction: Option<f32>,
    samples: u32,
    plan: Option<CompiledFrame>,
    shadow_maps: Option<ShadowMaps>,
}

impl TileAccumulator {
    fn add(&mut self, app: &App, camera: Entity) {
        let Some(report) = app
            .world()
            .get_resource::<TileRenderReports>()
            .and_then(|reports| reports.get(camera))
        else {
            return;
        };
        if self.last_frame == Some(report.frame) {
            return;
        }
        self.last_frame = Some(report.frame);
        if let Some(t) = report.gpu_times {
            self.gpu.push([t.gbuffer_ms, t.lighting_ms, t.tonemap_ms]);
        }
        self.crate_cpu.push(report.cpu_ms);
        self.draws = report.draws;
        self.draw_calls = report.mesh_draw_calls;
        self.instances = report.instances;
        if matches!(report.instance_batches, TileInstanceBatches::Kept { .. }) {
            self.batches_kept += 1;
        }
        self.clustered_lights = report.clustered_lights;
        self.clusters = report.clusters;
        self.assignment.push(report.clusters.assignment_ms);
        self.max_lights_per_cluster = self
            .max_lights_per_cluster
            .max(report.clusters.max_lights_per_cluster);
        self.per_sample_fraction = report.per_sample_fraction.or(self.per_sample_fraction);
        self.samples = report.samples;
        // The priced frame: the tile pass after Bevy's shadow passes (the plan alone without
        // shadows).
        self.plan = Some(report.priced);
        self.shadow_maps = Some(report.shadow_maps);
    }

    fn finish(&mut self) -> Option<TileStats> {
        if self.crate_cpu.is_empty() {
            return None;
        }
        let gpu_ms = (!self.gpu.is_empty()).then(|| {
            let n = self.gpu.len() as f64;
            let mut sum = [0.0; 3];
            for t in &self.gpu {
                for (s, v) in sum.iter_mut().zip(t) {
                    *s += v;
                }
            }
            sum.map(|s| s / n)
        });
        Some(TileStats {
            gpu_ms,
            crate_cpu_ms: median(&mut self.crate_cpu),
            draws: self.draws,
            draw_calls: self.draw_calls,
            instances: self.instances,
            batches_kept: format!("{}/{}", self.batches_kept, self.crate_cpu.len()),
            clustered_lights: self.clustered_lights,
            clusters: self.clusters,
            assignment_ms: median(&mut self.assignment),
            max_lights_per_cluster: self.max_lights_per_cluster,
            per_sample_fraction: self.per_sample_fraction,
            samples: self.samples,
        })
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        0.5 * (values[mid - 1] + values[mid])
    } else {
        values[mid]
    }
}

fn opt_ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// The main mode's output: a time table and a traffic table (one row per light count and path),
/// then the ratios per light count.
fn print_table(runs: &[Run], options: &Options) {
    println!(
        "resolution {}x{}, {}; times in ms per frame (medians; tile timestamps are means)",
        options.width,
        options.height,
        options.scene(options.meshes[0], 0).describe()
    );
    if options.shadows {
        let shadowed = BenchScene {
            shadows: true,
            point_shadows: options.point_shadows,
            ..options.scene(options.meshes[0], options.lights[0])
        };
        println!(
            "shadows on: {}; filter {:?}",
            shadowed.lighting(),
            options.filter
        );
    }
    print_time_table(runs);
    println!();
    print_traffic_table(runs, options);
    println!();
    print_ratios(runs, options);
    for run in runs.iter().filter(|r| r.path.is_tile()) {
        if let Some(t) = &run.tile
            && t.gpu_ms.is_none()
        {
            println!(
                "{} at {} lights: no GPU timestamps on this device",
                run.path.label(),
                run.scene.lights
            );
        }
    }
    for run in runs.iter().filter(|r| r.path.is_auto()) {
        println!(
            "{} at {} lights: {}",
            run.path.label(),
            run.scene.lights,
            run.auto.as_deref().unwrap_or("no decision")
        );
    }
    print_failures(runs);
}

/// GPU and CPU time per path and light count.
fn print_time_table(runs: &[Run]) {
    let shadows = any_shadows(runs);
    let mut headers = vec!["lights", "path"];
    if shadows {
        headers.push("shadows");
    }
    headers.extend([
        "GPU",
        "wall",
        "loop",
        "CPU",
        "ts gbuf",
        "ts light",
        "ts tone",
        "ts total",
        "crate CPU",
        "assign",
        "clusters: grid, lights, max/cluster",
        "per-sample px",
    ]);
    let mut table = Table::new(&headers);
    for run in runs {
        let ts = run.tile.as_ref().and_then(|t| t.gpu_ms);
        let timing = run.timing.as_ref();
        let tile = run.tile.as_ref();
        let mut row = vec![run.scene.lights.to_string(), run.path.label().to_owned()];
        if shadows {
            row.push(shadows_cell(&run.scene).to_owned());
        }
        row.extend([
            opt_ms(timing.map(|t| t.wait_ms)),
            opt_ms(timing.map(|t| t.wall_ms)),
            opt_ms(timing.map(|t| t.loop_ms)),
            opt_ms(timing.map(|t| t.cpu_ms)),
            opt_ms(ts.map(|t| t[0])),
            opt_ms(ts.map(|t| t[1])),
            opt_ms(ts.map(|t| t[2])),
            opt_ms(ts.map(|t| t.iter().sum())),
            opt_ms(tile.map(|t| t.crate_cpu_ms)),
            opt_ms(
                tile.filter(|t| clusters_reported(t))
                    .map(|t| t.assignment_ms),
            ),
            tile.map_or_else(|| "-".into(), clusters_cell),
            tile.map_or_else(
                || "-".into(),
                |t| match (t.samples, t.per_sample_fraction) {
                    (1, _) => "-".into(),
                    (_, Some(f)) => format!("{:.1}%", f * 100.0),
                    (samples, None) => format!("? ({samples}x)"),
                },
            ),
        ]);
        table.row(row);
    }
    table.print();
    for line in [
        "GPU: the poll(Wait) after app.update(), which submits the frame's command buffers at \
         its end: on a GPU, the frame's GPU time, the same measure for every path (on lavapipe \
         the work runs inside app.update(): read wall)",
        "wall: app.update() + poll(Wait) | loop: per frame of frames rendered back to back \
         without waiting | CPU: app.update()",
        "ts gbuf/light/tone/total: the tile path's GPU timestamps per subpass (ts light: the \
         lighting subpass alone; tile 1x has no tonemap subpass, its lighting tone maps: ts \
         tone about 0, ts light includes the tone mapping) | crate CPU: the crate's own \
         per-view CPU time (report.cpu_ms)",
        "assign: the crate's CPU time assigning lights to clusters \
         (report.clusters.assignment_ms): preparing the GPU's inputs (each light's reach, the \
         cluster boxes), or with tilecpu the whole assignment on the CPU | clusters: grid \
         x*y*z (report.clusters.dimensions), point/spot lights in the view, the most in one \
         cluster (from the GPU a frame late); '-' while the crate does not report clusters",
        "per-sample px: the fraction of pixels lit per sample (MSAA edges; \
         report.per_sample_fraction)",
    ] {
        println!("  {line}");
    }
    if let Some(shadowed) = runs.iter().find(|r| r.scene.casts_shadows()) {
        println!(
            "  shadows: on = {}; their passes are in GPU, wall and loop (ts: the tile pass's \
             subpasses only)",
            shadowed.scene.lighting()
        );
    }
}

/// Whether any run drew the shadowed scene.
fn any_shadows(runs: &[Run]) -> bool {
    runs.iter().any(|r| r.scene.casts_shadows())
}

fn shadows_cell(scene: &BenchScene) -> &'static str {
    if scene.casts_shadows() { "on" } else { "off" }
}

/// Whether the crate filled in its cluster statistics (all zero before clustered lighting).
fn clusters_reported(t: &TileStats) -> bool {
    t.clusters.dimensions != [0; 3]
}

/// The light clusters of a tile run, compactly: `16x9x24, 256 lights, max 31`.
fn clusters_cell(t: &TileStats) -> String {
    let [x, y, z] = t.clusters.dimensions;
    if clusters_reported(t) {
        format!(
            "{x}x{y}x{z}, {} lights, max {}",
            t.clustered_lights, t.max_lights_per_cluster
        )
    } else {
        format!("-, {} lights, max -", t.clustered_lights)
    }
}

/// Attachment traffic per path and light count.
fn print_traffic_table(runs: &[Run], options: &Options) {
    let bevy_paths: Vec<PathKind> = options
        .paths
        .iter()
        .copied()
        .filter(|p| p.stock().is_some())
        .collect();
    let shadows = any_shadows(runs);
    let mut headers: Vec<String> = vec!["lights".to_owned(), "path".to_owned()];
    if shadows {
        headers.extend(["shadows", "shadow maps", "shadow MB"].map(str::to_owned));
    }
    headers.extend(["MB/frame", "GB/s@60", "mW@60", "draws"].map(str::to_owned));
    for p in &bevy_paths {
        headers.push(format!("MB {}/", p.short()));
    }
    let mut table = Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
    for run in runs {
        let cost: Option<&FrameCost> = run.plan.as_ref().map(|p| &p.cost);
        let mut row = vec![run.scene.lights.to_string(), run.path.label().to_owned()];
        if shadows {
            // The maps are in the plan only once they are known (run.shadow_maps).
            let maps = run.shadow_maps.filter(|_| run.plan.is_some());
            row.extend([
                shadows_cell(&run.scene).to_owned(),
                maps.map_or("-".into(), |m| shadow_maps_cell(&m)),
                maps.map_or("-".into(), |m| {
                    format!("{:.2}", bytes_to_mb(m.stored_bytes()))
                }),
            ]);
        }
        row.extend([
            cost.map_or("-".into(), |c| format!("{:.2}", c.mb())),
            cost.map_or("-".into(), |c| format!("{:.2}", c.gb_per_s(FPS))),
            cost.map_or("-".into(), |c| {
                format!("{:.0}", c.milliwatts(FPS, DEFAULT_MW_PER_GBPS))
            }),
            run.tile
                .as_ref()
                .map_or("-".into(), |t| format!("{}/{}", t.draws, t.instances)),
        ]);
        for &p in &bevy_paths {
            let theirs = find_run(runs, p, run.scene.lights, run.scene.casts_shadows())
                .and_then(|r| r.plan.as_ref())
                .map(|p| p.cost.mb());
            row.push(quotient(theirs, cost.map(FrameCost::mb)));
        }
        table.row(row);
    }
    table.print();
    println!(
        "  MB: attachment traffic per frame (tile: its priced frame, report.priced; Bevy: \
         stock_bevy model) | GB/s and mW at {FPS:.0} fps, {DEFAULT_MW_PER_GBPS:.0} mW per GB/s"
    );
    println!(
        "  draws: the tile path's instanced draws/instances | MB X/: that Bevy path's traffic \
         divided by this row's, shadows alike (above 1: this row moves less)"
    );
    if shadows {
        let sizes = runs
            .iter()
            .filter_map(|r| r.shadow_maps.filter(|m| m.pass_count() > 0))
            .map(|m| {
                format!(
                    "cascades {0}x{0}, cube faces {1}x{1}",
                    m.array_size, m.cube_size
                )
            })
            .next()
            .unwrap_or_else(|| "no shadow maps reported".to_owned());
        println!(
            "  shadow maps: the maps the tile report says Bevy rendered ({sizes}, Depth32Float; \
             one depth-only pass per cascade and cube face), the same maps in Bevy's model | \
             shadow MB: their stores, part of MB/frame (tile: report.priced, Bevy: \
             StockBevyOptions::shadow_maps)"
        );
    }
}

/// One comparison of issue 12: `over`'s time divided by `under`'s, by one measure.
struct Ratio {
    what: &'static str,
    over: PathKind,
    under: PathKind,
    measure: &'static str,
    value: fn(&Run) -> Option<f64>,
    /// Issue 12's target ("" for none).
    target: &'static str,
}

/// Issue 12's target for the tile path against Bevy forward at the same sample count.
const TARGET_VS_FORWARD: &str = "<= 0.8 at 256, < 1 at 1024";

/// The comparisons of issue 12, per light count: each a quotient of two measured times.
fn print_ratios(runs: &[Run], options: &Options) {
    use PathKind::*;
    fn gpu(r: &Run) -> Option<f64> {
        r.timing.as_ref().map(|t| t.wait_ms)
    }
    fn wall(r: &Run) -> Option<f64> {
        r.timing.as_ref().map(|t| t.wall_ms)
    }
    fn lighting(r: &Run) -> Option<f64> {
        r.tile.as_ref().and_then(|t| t.gpu_ms).map(|t| t[1])
    }
    // Lighting and tone mapping together: where the lighting tone maps there is no tonemap
    // subpass, so "ts light" alone compares a 4x lighting that tone maps with whatever the 1x
    // one does; this compares the same work.
    fn lighting_and_tonemap(r: &Run) -> Option<f64> {
        r.tile.as_ref().and_then(|t| t.gpu_ms).map(|t| t[1] + t[2])
    }
    let ratio = |what, over, under, by_gpu: bool, target| Ratio {
        what,
        over,
        under,
        measure: if by_gpu { "GPU" } else { "wall" },
        value: if by_gpu { gpu } else { wall },
        target,
    };
    let ratios = [
        ratio(
            "tile 1x / Bevy forward 1x",
            Tile,
            Forward,
            true,
            TARGET_VS_FORWARD,
        ),
        ratio("tile 1x / Bevy forward 1x", Tile, Forward, false, ""),
        ratio(
            "tile 4x edge / Bevy forward 4x",
            Tile4xEdge,
            Forward4x,
            true,
            TARGET_VS_FORWARD,
        ),
        ratio("Auto 1x / Bevy forward 1x", Auto, Forward, true, ""),
        ratio("Auto 4x / Bevy forward 4x", Auto4x, Forward4x, true, ""),
        ratio(
            "tile 4x edge / Bevy forward 4x",
            Tile4xEdge,
            Forward4x,
            false,
            "",
        ),
        ratio(
            "tile 4x every / Bevy forward 4x",
            Tile4xEvery,
            Forward4x,
            true,
            "",
        ),
        ratio(
            "tile 4x every / Bevy forward 4x",
            Tile4xEvery,
            Forward4x,
            false,
            "",
        ),
        ratio("tile 1x / Bevy deferred", Tile, Deferred, true, ""),
        Ratio {
            what: "lighting subpass 4x edge / 1x",
            over: Tile4xEdge,
            under: Tile,
            measure: "ts light",
            value: lighting,
            target: "<= 1.5 (bench scene)",
        },
        Ratio {
            what: "lighting + tonemap 4x edge / 1x",
            over: Tile4xEdge,
            under: Tile,
            measure: "ts l+t",
            value: lighting_and_tonemap,
            target: "",
        },
        Ratio {
            what: "lighting subpass 4x every / 4x edge",
            over: Tile4xEvery,
            under: Tile4xEdge,
            measure: "ts light",
            value: lighting,
            target: ">= 1.5 (dense scene, 16 lights)",
        },
    ];
    // One column per light count, and with --shadows one more per light count with shadows.
    let columns: Vec<(usize, bool)> = options
        .lights
        .iter()
        .flat_map(|&l| options.shadow_variants().iter().map(move |&s| (l, s)))
        .collect();
    let mut headers = vec!["ratio".to_owned(), "measure".to_owned()];
    headers.extend(columns.iter().map(|&(l, shadows)| {
        let lights = if l == 1 {
            "1 light".to_owned()
        } else {
            format!("{l} lights")
        };
        if shadows {
            format!("{lights} + shadows")
        } else {
            lights
        }
    }));
    headers.push("issue 12 target".to_owned());
    let mut table = Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
    // On a CPU device the frame is rendered inside app.update(): the wait measures nothing.
    let software = runs.iter().any(|r| r.software);
    for r in ratios {
        if !options.paths.contains(&r.over) || !options.paths.contains(&r.under) {
            continue;
        }
        if software && r.measure == "GPU" {
            continue;
        }
        let mut row = vec![r.what.to_owned(), r.measure.to_owned()];
        for &(lights, shadows) in &columns {
            let value = |p: PathKind| find_run(runs, p, lights, shadows).and_then(r.value);
            row.push(quotient(value(r.over), value(r.under)));
        }
        row.push(r.target.to_owned());
        table.row(row);
    }
    println!("ratios: the first path's time / the second's (below 1: the first is cheaper)");
    table.print();
    println!(
        "  GPU and wall as in the time table; ts light: the lighting subpass's own timestamps \
         (with MSAA edge-selective and single-sample the lighting also tone maps); ts l+t: ts \
         light + ts tone"
    );
    if options.shadows {
        println!("  N lights + shadows: both paths drawing the shadowed scene");
    }
    if software {
        println!(
            "  no GPU rows: on this CPU device the frame renders inside app.update(), so the \
             GPU column measures almost nothing; compare wall"
        );
    }
    println!(
        "  targets: release builds, NVIDIA H200, 3840x2160; issue 12 also asks: light \
         assignment (assign) <= 0.3 ms per frame at 1024 lights; with --range 6 --sun, tile / \
         Bevy forward <= 0.8 at 16 and 256 lights, 1x and 4x; on lavapipe, 16-64 lights, tile \
         4x / Bevy forward 4x <= 1.2 (wall)"
    );
    if options.shadows {
        println!();
        print_shadow_cost(runs, options, software);
    }
}

/// What shadows cost each path: its time with shadows / without, per light count.
fn print_shadow_cost(runs: &[Run], options: &Options, software: bool) {
    let (measure, value): (&str, fn(&Timing) -> f64) = if software {
        ("wall", |t| t.wall_ms)
    } else {
        ("GPU", |t| t.wait_ms)
    };
    let mut headers = vec!["path".to_owned(), "measure".to_owned()];
    headers.extend(options.lights.iter().map(|&l| format!("{l} lights")));
    let mut table = Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
    for &path in &options.paths {
        let mut row = vec![path.label().to_owned(), measure.to_owned()];
        for &lights in &options.lights {
            let time = |shadows| {
                find_run(runs, path, lights, shadows)
                    .and_then(|r| r.timing.as_ref())
                    .map(value)
            };
            row.push(quotient(time(true), time(false)));
        }
        table.row(row);
    }
    println!("shadows: each path's time with shadows / without (above 1: what shadows add)");
    table.print();
}

/// The run of `path` at `lights` lights, with or without shadows.
fn find_run(runs: &[Run], path: PathKind, lights: usize, shadows: bool) -> Option<&Run> {
    runs.iter()
        .find(|r| r.path == path && r.scene.lights == lights && r.scene.casts_shadows() == shadows)
}

/// `a / b` as `0.83x`.
fn quotient(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// A text table with aligned columns (first two left-aligned, the rest right-aligned).
struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn print(&self) {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .chain(std::iter::once(&self.headers[c]))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let text: Vec<String> = cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(c, (s, &w))| {
                    if c < 2 {
                        format!("{s:<w$}")
                    } else {
                        format!("{s:>w$}")
                    }
                })
                .collect();
            println!("{}", text.join("  ").trim_end());
        };
        line(&self.headers);
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        line(&rule);
        for r in &self.rows {
            line(r);
        }
    }
}
