//! # bevy_tile_deferred
//!
//! Tile-based deferred rendering for Bevy on mobile GPUs.
//!
//! On a phone the frame's cost is DRAM traffic: every attachment a render pass loads from or
//! stores to memory costs bandwidth, power and heat. Stock Bevy stores every attachment of
//! every pass. This crate keeps the intermediate attachments of a frame (G-buffer, light
//! accumulation, depth, MSAA samples) in the GPU's on-chip tile memory through Vulkan subpasses,
//! and stores only the final image.
//!
//! The parts, in the order a frame's data flows through them:
//! - [`device`]: what the GPU can really do, read from Vulkan at start-up ([`DeviceProfile`]).
//! - [`tiers`]: which path each tile camera takes on this device (tile + MSAA, tile, the
//!   unmerged debug tier or Bevy's forward path), as data-driven rules with their reasons.
//! - [`frame_graph`]: passes declare how they use attachments; `compile()` merges them into
//!   native render passes with subpasses, picks load/store ops, makes intermediates memoryless,
//!   explains every merge it refused and prices the frame in bytes, GB/s and mW.
//! - [`vulkan`]: a small ash layer (context, memory, render passes from a plan, pipelines,
//!   timing) that decides nothing the compiler decided.
//! - [`tile_deferred`]: the camera schedule that renders a [`TileDeferred`] camera as one
//!   native render pass, stage by stage.
//! - `inspector` (feature `inspector`): a live egui overlay of the compiled frame.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_tile_deferred::TileDeferredPlugin;
//!
//! App::new()
//!     .add_plugins((DefaultPlugins, TileDeferredPlugin::default()))
//!     .run();
//! ```

pub mod device;
pub mod frame_graph;
#[cfg(feature = "inspector")]
pub mod inspector;
pub mod tiers;
pub mod tile_deferred;
pub mod vulkan;

pub use device::{DeviceProfile, GpuModel, GpuVendor, GraphicsBackend};
#[cfg(feature = "inspector")]
pub use inspector::TileInspectorPlugin;
pub use tile_deferred::TileCpuLightAssignment;
pub use tile_deferred::{
    MsaaShading, TileDebugView, TileDeferred, TileDeferredGraph, TileGizmoSystems,
    TileOutputLoadedAfter,
    report::{TileClusterStats, TileGpuTimes, TileRenderReports, TileViewReport},
};
#[doc(hidden)]
pub use tile_deferred::{TileFaultInjection, TileNoStencilSplit};
pub use vulkan::ResourceCounts as TileResourceCounts;

use bevy::{
    prelude::*,
    render::{
        ExtractSchedule, MainWorld, RenderApp, RenderStartup,
        renderer::{RenderAdapterInfo, RenderDevice},
    },
};

/// The plugin: add it after `DefaultPlugins`.
///
/// It probes the device at render start-up and publishes a [`DeviceProfile`] in the render
/// world and the main world, decides each tile camera's tier, and installs the tile path's
/// camera schedule ([`TileDeferredGraph`]).
#[derive(Default)]
pub struct TileDeferredPlugin;

impl Plugin for TileDeferredPlugin {
    fn build(&self, app: &mut App) {
        let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
            warn!("bevy_tile_deferred: no renderer, the tile path is disabled");
            return;
        };
        render_app
            .add_systems(RenderStartup, probe_device)
            .add_systems(ExtractSchedule, mirror_profile_to_main_world);
        tile_deferred::build(app);
    }

    fn finish(&self, app: &mut App) {
        tile_deferred::finish(app);
        // The renderer's device is in the main world once Bevy's RenderPlugin has finished: probe
        // it now so tiers are decided before the first frame (RenderStartup probes again in the
        // render world, also after device loss).
        let world = app.world();
        let (Some(render_device), Some(adapter_info)) = (
            world.get_resource::<RenderDevice>(),
            world.get_resource::<RenderAdapterInfo>(),
        ) else {
            return;
        };
        let profile = device::probe_render_device(render_device, adapter_info);
        app.insert_resource(profile);
    }
}

/// Runs each time a render device is acquired (start-up and device-loss recovery).
fn probe_device(
    mut commands: Commands,
    render_device: Res<RenderDevice>,
    adapter_info: Res<RenderAdapterInfo>,
) {
    let profile = device::probe_render_device(&render_device, &adapter_info);
    info!("bevy_tile_deferred device: {}", profile.summary());
    commands.insert_resource(profile);
}

/// Copies a new or changed [`DeviceProfile`] into the main world for UI and tests.
fn mirror_profile_to_main_world(
    profile: Option<Res<DeviceProfile>>,
    mut main_world: ResMut<MainWorld>,
) {
    let Some(profile) = profile else { return };
    if profile.is_changed() || !main_world.contains_resource::<DeviceProfile>() {
        main_world.insert_resource(profile.clone());
    }
}
