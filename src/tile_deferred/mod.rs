//! The tile-deferred camera path.
//!
//! A camera with [`TileDeferred`] is rendered by the crate's own camera schedule
//! ([`TileDeferredGraph`]) instead of Bevy's `Core3d`: one Vulkan render pass with subpasses
//! (G-buffer, lighting reading the G-buffer as input attachments, tonemap writing the camera's
//! target; the lighting tone maps itself where nothing is blended after it, and transparent
//! meshes add a subpass), declared to the crate's frame-graph compiler and built from its plan,
//! so only the final image leaves tile memory. `Camera3d` stays on the camera (`TileDeferred`
//! requires it): Bevy's view, light and visibility preparation still run for it. The unmerged
//! debug tier ([`TileDeferred::merge_subpasses`] off) records the same passes as separate render
//! passes that store the G-buffer and read it back as textures, to measure what merging saves.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_tile_deferred::prelude::*;
//!
//! fn setup(mut commands: Commands) {
//!     commands.spawn((TileDeferred::default(), Msaa::Off));
//! }
//!
//! App::new()
//!     .add_plugins((DefaultPlugins, TileDeferredPlugin))
//!     .add_systems(Startup, setup)
//!     .run();
//! ```

mod backend;
mod cluster_stats;
mod clusters;
mod draws;
mod environment;
mod error;
mod extract;
mod foreign_draws;
pub(crate) mod gpu_types;
mod interop;
#[cfg(test)]
mod layout_tests;
mod materials;
pub mod missing;
pub(crate) mod overlay;
mod pass;
mod pipelines;
pub(crate) mod plan;
mod record;
mod render_passes;
pub mod report;
mod resources;
mod route;
mod scene;
mod shadows;
mod transforms;
#[doc(hidden)]
pub use scene::{TileCpuLightAssignment, TileFaultInjection, TileNoStencilSplit};
mod shaders;
#[cfg(feature = "ui")]
mod ui_overlay;
pub use foreign_draws::TileGizmoSystems;
#[cfg(feature = "ui")]
pub use ui_overlay::TileUiSystems;
mod view;

use backend::TileBackend;

use crate::{
    tiers::{TierDecision, TierSetting},
    vulkan::VulkanContext,
};
use bevy::{
    ecs::schedule::ScheduleLabel,
    prelude::*,
    render::{
        ExtractSchedule, Render, RenderApp, RenderStartup, RenderSystems,
        extract_component::{ExtractComponent, ExtractComponentPlugin},
        renderer::RenderDevice,
    },
};

/// Put this on a camera to render it with the tile-deferred path.
///
/// It requires `Camera3d` (inserted with its defaults if the camera has none): Bevy still
/// prepares the view, lights and visibility of a tile camera. Cameras without `TileDeferred` keep Bevy's `Core3d` renderer; cameras
/// with it fall back to `Core3d` (with a logged reason) where the device cannot run the tile
/// path, and, under [`TierSetting::Auto`], while they see something the tile path cannot draw
/// (listed on the camera as a [`TileMissing`](missing::TileMissing); with a forced tier it is
/// logged and left out of the frame).
#[derive(Component, Clone, Debug, Reflect, ExtractComponent)]
#[extract_component_filter(With<Camera>)]
#[reflect(Component, Clone, Debug, Default)]
#[require(Camera3d)]
pub struct TileDeferred {
    /// Merge the frame's passes into subpasses of one render pass (the point of this crate).
    /// Off renders the tile tier as the [`RenderTier::Unmerged`](crate::tiers::RenderTier)
    /// debug tier: separate render passes, the G-buffer stored and sampled, for A/B comparison.
    pub merge_subpasses: bool,
    /// With `Msaa` above `Off`: which samples the lighting shades.
    pub msaa_shading: MsaaShading,
    /// What the camera shows: the lit frame, or one of the debug views.
    pub debug_view: TileDebugView,
    /// Which tier to render with: the best the device supports, or a forced one.
    pub tier: TierSetting,
}

impl Default for TileDeferred {
    fn default() -> Self {
        Self {
            merge_subpasses: true,
            msaa_shading: MsaaShading::EdgeSelective,
            debug_view: TileDebugView::None,
            tier: TierSetting::Auto,
        }
    }
}

/// How a multisampled tile camera shades its samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, Default, PartialEq, Hash)]
pub enum MsaaShading {
    /// Interior pixels are lit once, geometric edges once per sample (Lauritzen's test on the
    /// G-buffer samples): MSAA quality for about the cost of no MSAA.
    #[default]
    EdgeSelective,
    /// Every sample of every pixel is lit: the brute-force reference to compare against.
    EverySample,
}

/// What a tile camera shows instead of the lit frame, for debugging. Every view renders the same
/// passes with the same plan; only what the shaders write changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, Default, PartialEq, Hash)]
pub enum TileDebugView {
    /// The lit, tone-mapped frame.
    #[default]
    None,
    /// Base colour (linear albedo) from the G-buffer.
    Albedo,
    /// World-space normal, mapped from [-1, 1] to [0, 1] per channel.
    Normal,
    /// Perceptual roughness (red), metallic (green) and reflectance (blue).
    RoughnessMetallic,
    /// Distance to the camera: white at the camera, half grey at 10 units, darker beyond.
    Depth,
    /// The light accumulation (emissive, ambient and every light) without tone mapping.
    LightAccumulation,
    /// How many point and spot lights the pixel's light cluster holds (the lights the lighting
    /// pass loops over there): dark blue for none, then blue, cyan, green, yellow, red at 16 or
    /// more.
    LightCount,
    /// The lit frame with the pixels lit per sample (MSAA edges) tinted red.
    MsaaEdges,
}

impl TileDebugView {
    /// Every view, in menu order.
    pub const ALL: [Self; 8] = [
        Self::None,
        Self::Albedo,
        Self::Normal,
        Self::RoughnessMetallic,
        Self::Depth,
        Self::LightAccumulation,
        Self::LightCount,
        Self::MsaaEdges,
    ];

    /// The shaders' `DEBUG_VIEW_*` value (`shaders/common.glsl`); `MsaaEdges` is a flag instead.
    pub(crate) fn shader_value(self) -> u32 {
        match self {
            Self::None | Self::MsaaEdges => 0,
            Self::Albedo => 1,
            Self::Normal => 2,
            Self::RoughnessMetallic => 3,
            Self::Depth => 4,
            Self::LightAccumulation => 5,
            Self::LightCount => 6,
        }
    }

    /// The view replaces the lighting with a G-buffer value (no light is evaluated or
    /// assigned to clusters).
    pub(crate) fn replaces_lighting(self) -> bool {
        (1..=4).contains(&self.shader_value())
    }
}

impl std::fmt::Display for TileDebugView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "lit frame",
            Self::Albedo => "albedo",
            Self::Normal => "normal",
            Self::RoughnessMetallic => "roughness / metallic",
            Self::Depth => "depth",
            Self::LightAccumulation => "light accumulation",
            Self::LightCount => "light count heat map",
            Self::MsaaEdges => "MSAA edge mask",
        })
    }
}

/// The camera schedule of tile-deferred cameras (the crate's replacement for `Core3d`).
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TileDeferredGraph;

/// Render-world marker on a tile camera's view: a wgpu pass drawn after the tile pass loads the
/// camera's output this frame (an overlay blended over the tile frame, like the inspector's,
/// recorded in [`TileDeferredGraph`] after the tile pass).
///
/// The tile pass writes a window's swapchain image with raw Vulkan, which wgpu cannot see: for
/// wgpu the image acquired this frame was never written, and it zero-fills it before the first
/// wgpu pass that loads it, leaving that pass's drawing over black. Where this marker is on the
/// view (or a later camera draws to the same window), the tile pass records an empty wgpu pass
/// before its own that stores the image (loading nothing, drawing nothing), so that wgpu counts
/// it as written. Without the marker nothing is added. Image targets and screenshot frames
/// need nothing.
///
/// Insert it in the render world each frame such a pass will run (e.g. in
/// `RenderSystems::Prepare`): it lasts one frame (the crate takes it off every view in
/// `RenderSystems::Cleanup`), so that several overlays (bevy_ui with feature `ui`, the inspector)
/// can each ask for it without taking it from one another.
#[derive(Component, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Component, Clone, Debug, Default)]
pub struct TileOutputLoadedAfter;

/// Sets up the tile path in the main and render worlds (called by the crate's plugin).
pub(crate) fn build(app: &mut App) {
    let reports = report::TileRenderReports::default();
    app.add_plugins((
        ExtractComponentPlugin::<TileDeferred>::default(),
        ExtractComponentPlugin::<TierDecision>::default(),
    ))
    .insert_resource(reports.clone());
    foreign_draws::build(app);
    app.add_systems(
        PostUpdate,
        (missing::find_missing, route::route_cameras)
            .chain()
            .after(bevy::camera::visibility::VisibilitySystems::CheckVisibility),
    );
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    render_app.insert_resource(reports);
    let mut schedule = bevy::ecs::schedule::Schedule::new(TileDeferredGraph);
    schedule.set_build_settings(bevy::ecs::schedule::ScheduleBuildSettings {
        auto_insert_apply_deferred: false,
        ..default()
    });
    // The camera's directional shadow cascades, which Bevy renders only inside a camera's
    // schedule: Bevy's own pass, before the tile pass samples them (see `shadows`). Point and
    // spot maps are rendered by Bevy before any camera.
    schedule.add_systems(
        (
            bevy::pbr::per_view_shadow_pass::<{ bevy::pbr::EARLY_SHADOW_PASS }>,
            pass::tile_deferred_pass,
        )
            .chain(),
    );
    render_app
        .add_schedule(schedule)
        // Gizmos (other plugins' `Transparent3d` draws) after the tile pass.
        .add_systems(
            TileDeferredGraph,
            foreign_draws::draw_foreign_transparent.in_set(TileGizmoSystems),
        )
        .configure_sets(
            TileDeferredGraph,
            TileGizmoSystems
                .after(pass::tile_deferred_pass)
                .run_if(foreign_draws::view_draws_gizmos),
        )
        .init_resource::<extract::TileMeshInstances>()
        .init_resource::<extract::TileMaterials>()
        .init_resource::<environment::TileEnvironmentSamplers>()
        .add_systems(RenderStartup, create_backend)
        .add_systems(
            ExtractSchedule,
            (
                (
                    extract::extract_tile_meshes,
                    extract::extract_tile_materials,
                )
                    .chain(),
                extract::skip_empty_viewports.after(bevy::render::camera::extract_cameras),
                environment::extract_environment,
            ),
        )
        .add_systems(
            Render,
            (
                // Before Bevy keys its views' specialisation on their `Msaa` (it was ambiguous
                // with it, and ran first only by chance).
                route::take_over_msaa
                    .in_set(RenderSystems::PrepareAssets)
                    .before(bevy::pbr::check_views_need_specialization),
                extract::skip_unusable_lights.in_set(RenderSystems::PrepareAssets),
                extract::skip_empty_meshes.in_set(RenderSystems::PrepareResources),
                overlay::prepare_composite_pipelines.in_set(RenderSystems::Prepare),
                (pass::end_frame, forget_output_loaded_after).in_set(RenderSystems::Cleanup),
            ),
        );
}

/// Completes the tile schedule once Bevy's plugins are finished: where Bevy builds mesh
/// instances on the GPU, the shadow passes draw indirectly from buffers that Bevy's mesh
/// preprocessing fills inside each camera's schedule (`Core3d`: bevy_pbr 0.19.1
/// render/gpu_preprocess.rs:436-448), so the tile schedule runs the same systems, in the same
/// order, before the cascades are drawn. They also preprocess the tile camera's own (unused)
/// opaque batches: compute work, no attachment traffic.
pub(crate) fn finish(app: &mut App) {
    use bevy::{
        core_pipeline::prepass::{
            DeferredPrepass, DepthPrepass, MotionVectorPrepass, NormalPrepass,
        },
        ecs::schedule::common_conditions::any_match_filter,
        pbr::{
            EARLY_SHADOW_PASS, MeshInputUniform, MeshUniform, PreprocessBindGroups,
            PreprocessPipelines, ShadowView, SkipGpuPreprocess, clear_indirect_parameters_metadata,
            early_gpu_preprocess, early_prepass_build_indirect_parameters, per_view_shadow_pass,
            unpack_bins,
        },
        render::{batching::gpu_preprocessing::BatchedInstanceBuffers, view::NoIndirectDrawing},
    };
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    // Bevy adds these systems to `Core3d` only where GPU preprocessing runs, and creates
    // their resources once the render device exists: the same condition, checked each frame.
    render_app.add_systems(
        TileDeferredGraph,
        (
            clear_indirect_parameters_metadata,
            unpack_bins,
            early_gpu_preprocess,
            early_prepass_build_indirect_parameters.run_if(
                any_match_filter::<(
                    With<PreprocessBindGroups>,
                    Without<SkipGpuPreprocess>,
                    Without<NoIndirectDrawing>,
                    Or<(
                        With<DepthPrepass>,
                        With<NormalPrepass>,
                        With<MotionVectorPrepass>,
                        With<DeferredPrepass>,
                        With<ShadowView>,
                    )>,
                )>,
            ),
        )
            .chain()
            .run_if(
                resource_exists::<PreprocessPipelines>.and_then(
                    resource_exists::<BatchedInstanceBuffers<MeshUniform, MeshInputUniform>>,
                ),
            )
            .before(per_view_shadow_pass::<EARLY_SHADOW_PASS>),
    );
    // bevy_ui's pass after the tile pass.
    #[cfg(feature = "ui")]
    ui_overlay::finish(app);
}

/// [`TileOutputLoadedAfter`] lasts one frame: whoever draws after the tile pass inserts it again.
fn forget_output_loaded_after(
    mut commands: Commands,
    views: Query<Entity, With<TileOutputLoadedAfter>>,
) {
    for view in &views {
        commands.entity(view).remove::<TileOutputLoadedAfter>();
    }
}

/// Creates the Vulkan backend on a Vulkan device (again after device loss).
fn create_backend(
    mut commands: Commands,
    render_device: Res<RenderDevice>,
    reports: Res<report::TileRenderReports>,
) {
    commands.remove_resource::<TileBackend>();
    let Some(context) = VulkanContext::new(&render_device) else {
        info!("bevy_tile_deferred: not running on Vulkan; tile cameras use Bevy's renderer");
        return;
    };
    match TileBackend::new(context) {
        Ok(backend) => {
            if let Ok(mut live) = reports.live.lock() {
                *live = Some(backend.context.live.clone());
            }
            commands.insert_resource(backend);
        }
        Err(error) => error!(
            "bevy_tile_deferred: cannot create the Vulkan objects of the tile path ({error}); \
             tile cameras use Bevy's renderer"
        ),
    }
}
