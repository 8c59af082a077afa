//! The tile path under the validation layer's best-practices checks with Arm's vendor-specific
//! checks: in steady state it causes none of the tile-memory warnings (redundant loads and
//! stores, attachments needing readback, non-transient MSAA images...).

use crate::{
    harness::{GpuTest, HeadlessApp, run_in_child_process},
    scenes,
};
use bevy::{prelude::*, render::view::Msaa};
use bevy_tile_deferred::TileDeferred;

/// Best-practices message ids about attachments and tile memory (Vulkan-ValidationLayers
/// `best_practices` for Arm/IMG).
const TILE_WARNINGS: &[&str] = &[
    "redundant-store",
    "redundant-attachment-on-tile",
    "attachment-needs-readback",
    "loadOpLoad",
    "loadopload",
    "StoreOpDontCareThenLoadOpLoad",
    "ClearValueWithoutLoadOpClear",
    "ClearValueCountHigherThanAttachmentCount",
    "msaa",
    "MSAA",
    "TransientAttachment",
    "transient",
    "AvoidImageToImageCopy",
    "DepthPrePass",
    "FramebufferAttachment",
];

#[test]
fn tile_path_passes_arm_best_practices() {
    run_in_child_process("best_practices::child_tile_path_passes_arm_best_practices");
}

#[test]
#[ignore = "run in a child process by tile_path_passes_arm_best_practices (needs layer settings from the environment)"]
fn child_tile_path_passes_arm_best_practices() {
    best_practices_child("child_tile_path_passes_arm_best_practices", Msaa::Off);
}

#[test]
fn tile_path_with_msaa_passes_arm_best_practices() {
    run_in_child_process("best_practices::child_tile_path_with_msaa_passes_arm_best_practices");
}

/// 4x MSAA: the stencil split of the lighting subpass on lavapipe.
#[test]
#[ignore = "run in a child process by tile_path_with_msaa_passes_arm_best_practices (needs layer settings from the environment)"]
fn child_tile_path_with_msaa_passes_arm_best_practices() {
    best_practices_child(
        "child_tile_path_with_msaa_passes_arm_best_practices",
        Msaa::Sample4,
    );
}

fn best_practices_child(name: &'static str, msaa: Msaa) {
    // The validation layer reads its settings when the instance is created: only this child
    // process, which creates one instance, sets them.
    // SAFETY: this process runs only this test (filtered, one thread); no other thread reads or
    // writes the environment while it is changed, before any Vulkan instance exists.
    unsafe {
        std::env::set_var(
            "VK_LAYER_ENABLES",
            "VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT:VALIDATION_CHECK_ENABLE_VENDOR_SPECIFIC_ARM",
        );
    }
    let test = GpuTest::start(name);
    let mut headless = HeadlessApp::new(256, 144);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        msaa,
        TileDeferred::default(),
    ));
    headless.render(4);
    let warm_up = test.take_warnings();
    assert!(
        warm_up.iter().any(|w| w.contains("BestPractices")),
        "best-practices checks are active (no BestPractices message at all in warm-up)"
    );
    for _ in 0..5 {
        headless.update();
    }
    let steady: Vec<String> = test
        .take_warnings()
        .into_iter()
        .filter(|w| w.contains("BestPractices"))
        .filter(|w| TILE_WARNINGS.iter().any(|id| w.contains(id)))
        .collect();
    assert!(
        steady.is_empty(),
        "tile-memory best-practices warnings in steady state: {steady:#?}"
    );
    // Errors are still errors.
    let errors = test.take_errors();
    assert!(errors.is_empty(), "{errors:#?}");
}
