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
//! Add [`TileDeferredPlugin`] after `DefaultPlugins` and put [`TileDeferred`] on a camera; the
//! [`prelude`] holds what a game uses:
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_tile_deferred::prelude::*;
//!
//! App::new()
//!     .add_plugins((DefaultPlugins, TileDeferredPlugin))
//!     .add_systems(Startup, |mut commands: Commands| {
//!         commands.spawn((TileDeferred::default(), Msaa::Sample4));
//!     })
//!     .run();
//! ```
//!
//! A camera that cannot take the tile path (not Vulkan, a device rule, a failure, or under
//! [`TierSetting::Auto`] something in view the tile path does not draw) is rendered by Bevy's
//! `Core3d`; its [`TierDecision`] says why, [`TileMissing`] lists what it sees that the tile path
//! does not draw, and a [`TileTierChanged`] message is written each time its tier changes.
//!
//! The parts, in the order a frame's data flows through them:
//! - [`device`]: what the GPU can really do, read from Vulkan at start-up ([`DeviceProfile`]).
//! - [`tiers`]: which path each tile camera takes on this device (tile + MSAA, tile, the
//!   unmerged debug tier or Bevy's forward path), as data-driven rules with their reasons.
//! - `frame_graph` (unstable, hidden from these docs): passes declare how they use
//!   attachments; `compile()` merges them into native render passes with subpasses, picks
//!   load/store ops, makes intermediates memoryless, explains every merge it refused and prices
//!   the frame in bytes, GB/s and mW.
//! - `vulkan` (unstable, hidden): a small ash layer (context, memory, render passes from a plan,
//!   pipelines, timing) that decides nothing the compiler decided.
//! - [`tile_deferred`]: the camera schedule that renders a [`TileDeferred`] camera as one
//!   native render pass, stage by stage.
//! - `inspector` (feature `inspector`): a live egui overlay of the compiled frame.
//!
//! Modules and items hidden from these docs (the frame-graph compiler, the Vulkan layer, test
//! hooks) are public only for the crate's tests, benches and tools: they may change in any
//! release.

pub mod device;
#[doc(hidden)]
pub mod frame_graph;
pub mod frame_report;
#[cfg(feature = "inspector")]
pub mod inspector;
pub mod tiers;
pub mod tile_deferred;
#[doc(hidden)]
pub mod vulkan;

/// What a game uses: `use bevy_tile_deferred::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "serde")]
    pub use crate::frame_report::TileReportFile;
    #[cfg(feature = "inspector")]
    pub use crate::inspector::{TileInspector, TileInspectorPlugin};
    #[cfg(feature = "ui")]
    pub use crate::tile_deferred::TileUiSystems;
    pub use crate::{
        DeviceProfile, MsaaShading, TileDebugView, TileDeferred, TileDeferredPlugin,
        TileDeferredSystems, TileGizmoSystems, TileKeepGpuLightClustering, TileMaterialsOverTile,
        frame_report::{TileCameraReport, TileFrameReport, TileFrameReportParam},
        tiers::{
            MeasureOn, RenderTier, TierChangeReason, TierDecision, TierMeasurement, TierSetting,
            TileAutoMeasure, TileTierChanged,
        },
        tile_deferred::{
            missing::{MissingFeature, TileMissing},
            report::{TileRenderReports, TileViewReport},
            validation::{TileValidation, TileValidationReport},
        },
    };
}

pub use device::{DeviceProfile, GpuModel, GpuVendor, GraphicsBackend};
#[cfg(feature = "serde")]
pub use frame_report::TileReportFile;
pub use frame_report::{TileCameraReport, TileFrameReport, TileFrameReportParam, TileReportDevice};
#[cfg(feature = "inspector")]
pub use inspector::TileInspectorPlugin;
pub use tiers::{
    MeasureOn, RenderTier, TierChangeReason, TierDecision, TierMeasurement, TierSetting,
    TileAutoMeasure, TileTierChanged,
};
#[cfg(feature = "ui")]
pub use tile_deferred::TileUiSystems;
pub use tile_deferred::{
    MsaaShading, TileDebugView, TileDeferred, TileDeferredGraph, TileDeferredSystems,
    TileGizmoSystems, TileMaterialsOverTile, TileOutputLoadedAfter,
    missing::{MissingFeature, TileMissing},
    report::{
        TileClusterStats, TileEguiInPass, TileGpuTimes, TileInstanceBatches, TileMeshDrawMode,
        TileRenderReports, TileUiInPass, TileViewReport,
    },
    validation::{TileValidation, TileValidationReport},
};
pub use tile_deferred::{TileCpuLightAssignment, TileKeepGpuLightClustering};
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
        // Before the renderer check: a game's readers of these work with or without a renderer.
        app.add_message::<TileTierChanged>()
            .register_type::<TileDeferred>()
            .register_type::<TierDecision>()
            .register_type::<TileMissing>()
            .register_type::<TileMaterialsOverTile>()
            .register_type::<tile_deferred::validation::TileValidation>()
            .register_type::<tile_deferred::validation::TileValidationReport>()
            .register_type::<DeviceProfile>()
            .register_type::<TileTierChanged>()
            .register_type::<TileOutputLoadedAfter>()
            .register_type::<tile_deferred::missing::UiDrawnOverTileCameras>()
            .register_type::<tile_deferred::missing::EguiDrawnOverTileCameras>()
            .register_type::<TileCpuLightAssignment>()
            .register_type::<TileKeepGpuLightClustering>()
            .register_type::<TileNoStencilSplit>()
            .register_type::<tiers::TileAutoMeasure>()
            .init_resource::<tiers::TileAutoMeasure>();
        // After everything else of the frame: the reports and components it reads are final.
        #[cfg(feature = "serde")]
        app.add_systems(Last, frame_report::json::write_report_file);
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
        #[cfg(feature = "remote")]
        frame_report::remote::finish(app);
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

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::ecs::reflect::{ReflectComponent, ReflectResource};

    /// Without a renderer the plugin installs nothing of the tile path, but a game's readers of
    /// `TileTierChanged` and Bevy's reflection tools still find the crate's types.
    #[test]
    fn the_plugin_registers_its_types_and_message_without_a_renderer() {
        let mut app = App::new();
        app.add_plugins(TileDeferredPlugin);
        assert!(
            app.world()
                .contains_resource::<bevy::ecs::message::Messages<TileTierChanged>>()
        );
        let registry = app.world().resource::<AppTypeRegistry>().read();
        for (name, component) in [
            (
                "TileDeferred",
                registry
                    .get_type_data::<ReflectComponent>(std::any::TypeId::of::<TileDeferred>())
                    .is_some(),
            ),
            (
                "TierDecision",
                registry
                    .get_type_data::<ReflectComponent>(std::any::TypeId::of::<TierDecision>())
                    .is_some(),
            ),
            (
                "TileMissing",
                registry
                    .get_type_data::<ReflectComponent>(std::any::TypeId::of::<TileMissing>())
                    .is_some(),
            ),
            (
                "DeviceProfile",
                registry
                    .get_type_data::<ReflectResource>(std::any::TypeId::of::<DeviceProfile>())
                    .is_some(),
            ),
        ] {
            assert!(component, "{name} is not registered with its reflect data");
        }
        // Field types come with them.
        assert!(registry.get(std::any::TypeId::of::<RenderTier>()).is_some());
        assert!(
            registry
                .get(std::any::TypeId::of::<MissingFeature>())
                .is_some()
        );
    }
}
