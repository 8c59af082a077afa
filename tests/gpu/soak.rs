//! The soak in short (issue 17): the `soak` example's churning scene, resizes and tier
//! switches, scaled down to what CI can afford on lavapipe, with the crate's Vulkan objects,
//! descriptor sets and GPU bytes compared exactly between checkpoints that restore the same
//! state, and the Rust heap and resident memory within the soak's tolerances (resident memory
//! except on a driver that grows it by itself: see `soak::rss_grows_in_driver`).

use crate::{
    harness::{GpuTest, HeadlessApp},
    scenes::soak::{self, SoakPlan, SoakSample},
};
use bevy_tile_deferred::DeviceProfile;
use std::{sync::OnceLock, time::Instant};

/// 360 frames at 128x72: the warm-up tours every tier at every size, then resizes every 25
/// frames and tier switches every 50 (the example's 500 and 1,000 scaled by 1/20).
fn ci_plan() -> SoakPlan {
    SoakPlan {
        resize_every: 25,
        tier_every: 50,
        ..SoakPlan::full(360, 128, 72)
    }
}

/// The checkpoints, and why resident memory is not asserted on this driver (if it is not).
type Soak = (Vec<SoakSample>, Option<String>);

/// The soak, run once for both tests (whichever runs first, holding the GPU): CI pays for one.
fn soak_once() -> &'static Soak {
    static SOAK: OnceLock<Soak> = OnceLock::new();
    SOAK.get_or_init(|| run_soak("soak"))
}

fn run_soak(name: &'static str) -> Soak {
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
    let profile = headless
        .app
        .world()
        .get_resource::<DeviceProfile>()
        .expect("the device profile");
    (samples, soak::rss_grows_in_driver(profile))
}

/// Nothing the crate owns grows: the same Vulkan objects of every kind, descriptor sets and
/// GPU bytes at the start, middle and end checkpoints, each rendered by the tile path.
#[test]
fn soak_keeps_the_crates_objects_and_gpu_memory_flat() {
    let _test = GpuTest::start("soak_keeps_the_crates_objects_and_gpu_memory_flat");
    let (samples, _) = soak_once();
    let start = &samples[0];
    for sample in samples {
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

/// The Rust heap (the crate's, Bevy's and wgpu's allocations, counted by the test binary's
/// allocator) stays within [`soak::HEAP_TOLERANCE_BYTES`] and
/// [`soak::HEAP_TOLERANCE_BLOCKS`], and resident memory within
/// [`soak::RSS_TOLERANCE`] except on a driver known to grow it by itself (Mesa lavapipe before
/// 23.0: see [`soak::rss_grows_in_driver`]), where the log says so and shows how much.
#[test]
fn soak_keeps_the_rust_heap_and_resident_memory_flat() {
    let _test = GpuTest::start("soak_keeps_the_rust_heap_and_resident_memory_flat");
    let (samples, rss_exempt) = soak_once();
    for sample in samples {
        assert!(
            sample.heap.is_some_and(|heap| heap.blocks > 0),
            "{}: the Rust heap was counted (the test binary installs soak::CountingAllocator)",
            sample.label
        );
    }
    if let Some(reason) = &rss_exempt {
        let (start, end) = (&samples[0], &samples[2]);
        if let (Some(before), Some(after)) = (start.rss_kib, end.rss_kib) {
            eprintln!(
                "soak: RSS {:+.1} MiB from start to end, not asserted: {reason}",
                (after as f64 - before as f64) / 1024.0
            );
        }
    }
    let problems: Vec<String> = soak::problems(samples, rss_exempt.is_some())
        .into_iter()
        .filter(|p| p.contains("RSS") || p.contains("Rust heap"))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}
