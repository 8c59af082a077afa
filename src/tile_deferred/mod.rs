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

// Layers, bottom first: each folder may use the ones above it in this list, never one below
// (`layout_tests` checks it).
mod camera;
pub(crate) use camera::is_tile_schedule;
mod coverage;
mod error;
mod frame;
mod gpu;
#[cfg(test)]
mod layout_tests;
mod lighting;
pub(crate) mod overlays;
pub(crate) mod plan;
pub mod report;
mod scene;

pub use camera::{
    MsaaShading, POISON_COLOR, POISON_DEPTH_STENCIL, TileDebugView, TileDeferred,
    TileDeferredGraph, TileDeferredSystems, TileMaterialsOverTile, TileOutputLoadedAfter,
};
#[doc(hidden)]
pub use coverage::light_clustering::TileKeepGpuLightClustering;
pub use coverage::{missing, validation};
pub use overlays::gizmos::TileGizmoSystems;
#[cfg(feature = "ui")]
pub use overlays::ui::TileUiSystems;
pub use scene::params::{TileCpuLightAssignment, TileFaultInjection, TileNoStencilSplit};

use gpu::backend::TileBackend;

use crate::{tiers::TierDecision, vulkan::VulkanContext};
use bevy::{
    prelude::*,
    render::{
        ExtractSchedule, Render, RenderApp, RenderStartup, RenderSystems,
        extract_component::ExtractComponentPlugin, renderer::RenderDevice,
    },
};

/// Sets up the tile path in the main and render worlds (called by the crate's plugin).
pub(crate) fn build(app: &mut App) {
    let reports = report::TileRenderReports::default();
    app.add_plugins((
        ExtractComponentPlugin::<TileDeferred>::default(),
        ExtractComponentPlugin::<TierDecision>::default(),
    ))
    .insert_resource(reports.clone());
    overlays::gizmos::build(app);
    coverage::timing::build(app);
    app.init_resource::<coverage::light_clustering::LightClusteringForMaterials>()
        .add_systems(
            PostUpdate,
            // After `find_missing` has found what needs Bevy's clusters this frame, before
            // Bevy assigns lights to them.
            coverage::light_clustering::switch_light_clustering
                .after(coverage::missing::find_missing)
                .before(bevy::light::SimulationLightSystems::AssignLightsToClusters),
        );
    app.add_systems(
        PostUpdate,
        (
            coverage::missing::find_missing,
            coverage::route::route_cameras,
            coverage::validation::validate_tile_cameras,
        )
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
    schedule.configure_sets(
        (
            TileDeferredSystems::Shadows,
            TileDeferredSystems::TilePass,
            TileDeferredSystems::PostProcess,
            TileDeferredSystems::Overlays,
        )
            .chain(),
    );
    schedule.add_systems((
        bevy::pbr::per_view_shadow_pass::<{ bevy::pbr::EARLY_SHADOW_PASS }>
            .in_set(TileDeferredSystems::Shadows),
        frame::pass::tile_deferred_pass.in_set(TileDeferredSystems::TilePass),
    ));
    render_app
        .add_schedule(schedule)
        // Gizmos (other plugins' `Transparent3d` draws) after the tile pass.
        .add_systems(
            TileDeferredGraph,
            (
                overlays::gizmos::draw_foreign_transparent.in_set(TileGizmoSystems),
                // Where Bevy post-processes the frame: into its main texture, before the effects.
                overlays::gizmos::draw_foreign_into_main_texture
                    .in_set(overlays::gizmos::DrawsIntoMainTextureSystems),
            ),
        )
        .configure_sets(
            TileDeferredGraph,
            (
                TileGizmoSystems
                    .in_set(TileDeferredSystems::Overlays)
                    .run_if(overlays::gizmos::view_draws_gizmos),
                overlays::gizmos::DrawsIntoMainTextureSystems
                    .in_set(TileDeferredSystems::PostProcess)
                    .run_if(overlays::gizmos::view_draws_into_main_texture),
            ),
        )
        .init_resource::<scene::extract::TileMeshInstances>()
        .init_resource::<scene::draws::TileRetainedDraws>()
        .init_resource::<scene::extract::TileMaterials>()
        .init_resource::<lighting::environment::TileEnvironmentSamplers>()
        .add_systems(RenderStartup, create_backend)
        .add_systems(
            ExtractSchedule,
            (
                (
                    scene::extract::extract_tile_meshes,
                    scene::extract::extract_tile_materials,
                )
                    .chain(),
                scene::extract::skip_empty_viewports.after(bevy::render::camera::extract_cameras),
                // Before Bevy queues its material meshes (in `Render`), after it prepares the
                // phases and clears the frame's dirty specialisations.
                scene::bevy_phases::leave_out_opaque_phases
                    .after(bevy::core_pipeline::core_3d::extract_core_3d_camera_phases)
                    .after(bevy::render::camera::DirtySpecializationSystems::Clear),
                lighting::environment::extract_environment,
            ),
        )
        .add_systems(
            Render,
            (
                // Before Bevy keys its views' specialisation on their `Msaa` (it was ambiguous
                // with it, and ran first only by chance).
                coverage::route::take_over_msaa
                    .in_set(RenderSystems::PrepareAssets)
                    .before(bevy::pbr::check_views_need_specialization),
                scene::extract::skip_unusable_lights.in_set(RenderSystems::PrepareAssets),
                // Before Bevy batches the phases (`PrepareResources`).
                scene::bevy_phases::keep_only_meshes_over_tile
                    .in_set(RenderSystems::QueueMeshes)
                    .after(bevy::pbr::queue_material_meshes),
                // Before bevy_ui's and egui's routes build this frame's `ui` subpass draws.
                #[cfg(any(feature = "ui", feature = "inspector"))]
                overlays::in_pass::forget_last_frames_ui_draws.in_set(RenderSystems::Queue),
                overlays::composite::prepare_composite_pipelines.in_set(RenderSystems::Prepare),
                (
                    frame::pass::end_frame,
                    forget_output_loaded_after,
                    scene::draws::forget_stale_draws,
                    scene::bevy_phases::forget_materials_over_tile,
                )
                    .in_set(RenderSystems::Cleanup),
            ),
        );
}

/// Completes the tile schedule once Bevy's plugins are finished: where Bevy builds mesh
/// instances on the GPU, the shadow passes draw indirectly from buffers that Bevy's mesh
/// preprocessing fills inside each camera's schedule (`Core3d`: bevy_pbr 0.19.1
/// render/gpu_preprocess.rs:436-448), so the tile schedule runs the same systems, in the same
/// order, before the cascades are drawn. The tile camera itself has no opaque phases to
/// preprocess (`scene::bevy_phases`).
pub(crate) fn finish(app: &mut App) {
    // Bevy's tone mapping of graded HDR cameras, bloom, FXAA, SMAA and CAS after the tile
    // pass, where the app has their plugins.
    overlays::post_process::finish(app);
    use bevy::{
        core_pipeline::prepass::{
            DeferredPrepass, DepthPrepass, MotionVectorPrepass, NormalPrepass,
        },
        ecs::schedule::common_conditions::any_match_filter,
        pbr::{
            EARLY_SHADOW_PASS, MeshInputUniform, MeshUniform, PreprocessBindGroups,
            PreprocessPipelines, ShadowView, SkipGpuPreprocess, clear_indirect_parameters_metadata,
            early_gpu_preprocess, early_prepass_build_indirect_parameters,
            main_build_indirect_parameters, per_view_shadow_pass, unpack_bins,
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
            .in_set(TileDeferredSystems::Shadows)
            .before(per_view_shadow_pass::<EARLY_SHADOW_PASS>),
    );
    // The wireframes drawn after the tile pass (with the gizmos) draw indirectly where Bevy
    // builds instances on the GPU: their indirect parameters are built as `Core3d` builds them
    // before its main pass (gpu_preprocess.rs:465-473).
    let build_indirect_parameters =
        || {
            main_build_indirect_parameters
                .run_if(
                    any_match_filter::<(
                        With<PreprocessBindGroups>,
                        Without<SkipGpuPreprocess>,
                        Without<NoIndirectDrawing>,
                    )>,
                )
                .run_if(resource_exists::<PreprocessPipelines>.and_then(
                    resource_exists::<BatchedInstanceBuffers<MeshUniform, MeshInputUniform>>,
                ))
        };
    // One for each of the two places they are drawn (a view draws in one of them).
    render_app.add_systems(
        TileDeferredGraph,
        (
            build_indirect_parameters()
                .in_set(TileGizmoSystems)
                .before(overlays::gizmos::draw_foreign_transparent),
            build_indirect_parameters()
                .in_set(overlays::gizmos::DrawsIntoMainTextureSystems)
                .before(overlays::gizmos::draw_foreign_into_main_texture),
        ),
    );
    // bevy_ui's pass after the tile pass.
    #[cfg(feature = "ui")]
    overlays::ui::finish(app);
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
    fault: Option<Res<TileFaultInjection>>,
) {
    commands.remove_resource::<TileBackend>();
    let Some(context) = VulkanContext::new(&render_device) else {
        info!("bevy_tile_deferred: not running on Vulkan; tile cameras use Bevy's renderer");
        return;
    };
    // Test hook: a fault armed before start-up may strike the backend's creation.
    context
        .faults
        .arm_for_view(fault.as_deref().map(TileFaultInjection::for_view));
    // Counted from the start, so that what a failed start-up left behind shows (nothing).
    if let Ok(mut live) = reports.live.lock() {
        *live = Some(context.live.clone());
    }
    let created = TileBackend::new(context);
    if let Ok(backend) = &created {
        backend.context.faults.view_done();
    }
    match created {
        Ok(backend) => {
            reports
                .backends_created
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            commands.insert_resource(backend);
        }
        Err(error) => error!(
            "bevy_tile_deferred: cannot create the Vulkan objects of the tile path ({error}); \
             tile cameras use Bevy's renderer"
        ),
    }
}
