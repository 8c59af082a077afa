//! A test tool, not a scene to copy (see `tile_camera` for that).
//!
//! Soak: a tile camera renders a churning scene into an image for `--frames` frames (10,000 by
//! default), each frame waited for, and nothing may grow.
//!
//! Every frame the lights move; every 4 frames a mesh, a material and a light are spawned and
//! the oldest beyond 8 despawned (their assets dropped); every 500 frames the target is resized
//! (100%, 150%, 50% of `--width`x`--height`); every 1,000 frames the camera's tier switches
//! (tile, tile + 4x MSAA, unmerged 1x and 4x, Bevy forward). The first 100 frames visit every
//! tier at every size once, so they hold the whole working set.
//!
//! At the start (after the first 100 frames), the middle and the end, the same state is
//! restored (first size, tile tier, no spawned batches) and left to settle for 70 frames, then
//! it prints the process's resident memory (VmRSS), the GPU memory the crate allocated (and the
//! `VkDeviceMemory` blocks holding it), the crate's live Vulkan objects by kind and its
//! descriptor sets, and the Rust heap (the crate's, Bevy's and wgpu's live allocations, counted
//! by this binary's allocator). It exits with status 1 if any of the crate's counts grew since
//! the start (compared exactly), the Rust heap grew by more than 384 KiB or 100 blocks, or
//! resident memory by more than 10% (see `HEAP_TOLERANCE_BYTES` and `RSS_TOLERANCE` in
//! `scenes/soak.rs` for why). Resident memory is not asserted on Mesa lavapipe before 23.0,
//! which grows it by itself (`rss_grows_in_driver`).
//!
//! ```sh
//! cargo run --release --example soak                                        # 10,000 frames
//! cargo run --release --example soak -- --frames 2000 --width 320 --height 180   # lavapipe
//! ```

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::{
    log::{Level, LogPlugin},
    prelude::*,
};
use bevy_tile_deferred::{DeviceProfile, TileDeferredPlugin};
use scenes::soak::{self, SoakPlan};
use std::time::Instant;

/// Counts the Rust heap for the checkpoints (`scenes::soak::rust_heap`).
#[global_allocator]
static ALLOCATOR: soak::CountingAllocator = soak::CountingAllocator;

fn main() {
    let plan = match plan_from_args() {
        Ok(plan) => plan,
        Err(message) => {
            eprintln!("soak: {message}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    println!(
        "soak: {} frames at {}x{}; batch every {} frames (at most {} alive), resize every {}, \
         tier switch every {}; checkpoints {:?} after {} settling frames each",
        plan.frames,
        plan.width,
        plan.height,
        plan.churn_every,
        plan.max_batches,
        plan.resize_every,
        plan.tier_every,
        plan.checkpoints().map(|(_, frame)| frame),
        plan.settle,
    );

    let mut app = App::new();
    app.add_plugins(scenes::headless::benchmark_plugins().set(LogPlugin {
        level: Level::WARN,
        filter: "wgpu=error,naga=warn".into(),
        ..default()
    }))
    .add_plugins(TileDeferredPlugin);
    let target = app
        .world_mut()
        .resource_mut::<Assets<Image>>()
        .add(scenes::headless::target_image(plan.width, plan.height));

    let started = Instant::now();
    let samples = soak::run(&mut app, &plan, target, |sample| {
        println!("{}", sample.line());
    });
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(profile) = app.world().get_resource::<DeviceProfile>() {
        println!("device: {}", profile.summary());
    }
    println!(
        "{} frames in {elapsed:.1} s ({:.2} ms per frame, waited for)",
        plan.frames,
        elapsed * 1000.0 / f64::from(plan.frames)
    );
    if let [start, .., end] = samples.as_slice()
        && let (Some(before), Some(after)) = (start.rss_kib, end.rss_kib)
    {
        println!(
            "RSS {:+.1} MiB ({:+.2}%) from start to end (tolerance +{:.0}%)",
            (after as f64 - before as f64) / 1024.0,
            (after as f64 / before as f64 - 1.0) * 100.0,
            soak::RSS_TOLERANCE * 100.0
        );
    }

    let rss_exempt = app
        .world()
        .get_resource::<DeviceProfile>()
        .and_then(soak::rss_grows_in_driver);
    if let Some(reason) = &rss_exempt {
        println!("RSS not asserted: {reason}");
    }
    if let [start, .., end] = samples.as_slice()
        && let (Some(before), Some(after)) = (start.heap, end.heap)
    {
        println!(
            "Rust heap {:+.1} KiB, {:+} blocks from start to end (tolerance +{} KiB, +{} blocks)",
            (after.bytes as f64 - before.bytes as f64) / 1024.0,
            after.blocks as i64 - before.blocks as i64,
            soak::HEAP_TOLERANCE_BYTES / 1024,
            soak::HEAP_TOLERANCE_BLOCKS
        );
    }
    let problems = soak::problems(&samples, rss_exempt.is_some());
    if problems.is_empty() {
        println!(
            "flat: the crate's objects, descriptor sets and GPU bytes are the same at every \
             checkpoint, the Rust heap within tolerance{}",
            if rss_exempt.is_some() {
                ""
            } else {
                ", RSS within tolerance"
            }
        );
    } else {
        for problem in &problems {
            println!("GREW: {problem}");
        }
        std::process::exit(1);
    }
}

const USAGE: &str = "usage: soak [--frames N (10000)] [--width W (640)] [--height H (360)]";

fn plan_from_args() -> Result<SoakPlan, String> {
    let (mut frames, mut width, mut height) = (10_000, 640, 360);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || -> Result<u32, String> {
            let text = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            text.parse()
                .map_err(|_| format!("`{text}` is not a number"))
        };
        match flag.as_str() {
            "--frames" => frames = value()?,
            "--width" => width = value()?,
            "--height" => height = value()?,
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown flag `{other}`")),
        }
    }
    if width < 2 || height < 2 {
        return Err("width and height must be at least 2".into());
    }
    let plan = SoakPlan::full(frames, width, height);
    plan.validate()?;
    Ok(plan)
}
