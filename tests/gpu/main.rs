//! GPU tests: real frames rendered by Mesa lavapipe (or any Vulkan device) under the Khronos
//! validation layer with synchronization validation. Any error-level message fails the test
//! that caused it.
//!
//! One binary for all GPU tests: each extra test binary re-links Bevy.

mod harness;
#[path = "../../examples/scenes/mod.rs"]
mod scenes;

mod animated;
#[cfg(feature = "auto_exposure")]
mod auto_exposure;
mod bad_values;
mod best_practices;
#[cfg(feature = "bloom")]
mod bloom;
mod clean_exit;
mod color_grading;
mod content;
mod custom_materials;
mod debug_views;
mod device_loss;
mod device_probe;
#[cfg(feature = "effect_stack")]
mod effect_stack;
mod faults;
mod forward_reference;
#[cfg(feature = "serde")]
mod frame_report;
#[cfg(feature = "gizmos")]
mod gizmos;
mod gltf_animation;
mod indirect_draws;
#[cfg(feature = "inspector")]
mod inspector;
mod light_assignment;
mod light_probes;
mod lightmaps;
mod material_features;
mod missing;
#[cfg(feature = "anti_alias")]
mod post_process;
mod retained;
mod robustness;
mod showcase;
mod soak;
mod surface_loss;
mod suspend;
mod tiers;
mod tile_deferred;
mod tile_fidelity;
mod tile_lifecycle;
mod tile_msaa;
mod tile_validation;
mod tile_window;
mod transmission;
mod transparent;
#[cfg(feature = "ui")]
mod ui_in_pass;
#[cfg(feature = "ui")]
mod ui_overlay;
mod unusual_content;
mod validation_net;

/// Counts the Rust heap for the soak (`scenes::soak::rust_heap`).
#[global_allocator]
static ALLOCATOR: scenes::soak::CountingAllocator = scenes::soak::CountingAllocator;
