//! Drawing the overlay over a tile camera.
//!
//! Where it can, the tile render pass draws egui's meshes itself, in its last `ui` subpass
//! after bevy_ui (`tile_deferred::overlays::egui_in_pass`, installed from here): the overlay
//! then adds no pass and no attachment traffic.
//!
//! Otherwise (see `EguiAfterTilePass` for why: bevy_ui drawn after the tile pass, gizmos, the
//! unmerged tier, `TileDeferred::ui_in_pass` off, a paint callback) the overlay takes bevy_egui's
//! own route. bevy_egui's `egui_pass` draws into the camera's main texture, which `Core3d` later
//! blits to the output (upscaling). A tile camera's render pass writes the output directly and
//! never uses the main texture, so after the tile pass this module clears the main texture to
//! transparent, runs bevy_egui's `prepare_egui_pass` and `egui_pass` into it, and blends it
//! (premultiplied alpha, Bevy's blit pipeline) over the output, with the passes bevy_ui's overlay
//! shares (`tile_deferred::overlays::composite`). Only views that carry an egui context and
//! whose egui the tile pass did not draw run these systems: with the inspector hidden nothing
//! is recorded.

use super::TileInspectorSystems;
use crate::{
    TileDeferredGraph, TileRenderReports,
    tile_deferred::overlays::{
        EguiDrawnOverTileCameras, composite as overlay,
        egui_in_pass::{self, EguiAfterTilePass, EguiInTilePass},
    },
};
use bevy::{
    core_pipeline::blit::BlitPipeline,
    ecs::schedule::InternedSystemSet,
    prelude::*,
    render::{
        Extract, ExtractSchedule, Render, RenderApp, RenderSystems,
        camera::ExtractedCamera,
        render_resource::{CachedRenderPipelineId, PipelineCache, SpecializedRenderPipelines},
        renderer::{CurrentView, RenderContext, ViewQuery},
        sync_world::MainEntity,
        view::ViewTarget,
    },
};
use bevy_egui::{
    EguiContext,
    render::{EguiCameraView, EguiViewTarget, egui_pass, prepare_egui_pass},
};

/// The composite pipeline of a tile view that shows egui.
#[derive(Component)]
struct OverlayCompositePipeline(CachedRenderPipelineId);

/// Adds the render-world systems (from the plugin's `finish`, when the tile schedule exists
/// with the tile pass in it).
pub(super) fn build(app: &mut App) {
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    render_app
        .add_systems(ExtractSchedule, forget_removed_egui_contexts)
        .add_systems(
            Render,
            prepare_composite_pipelines.in_set(RenderSystems::Prepare),
        );
    // Decides, per tile view, whether the tile pass draws egui (and marks the views whose
    // output the composite below loads).
    egui_in_pass::install(render_app);
    // Everything the tile schedule runs so far (the tile pass) comes before the overlay. A
    // system added twice (Bevy's `main_build_indirect_parameters`, before each of the two draws
    // over the tile frame) has an ambiguous type set, which Bevy refuses to order against: it
    // is left out, and is ordered before a system that is in the list.
    let mut counts: std::collections::HashMap<InternedSystemSet, usize> = Default::default();
    if let Some(schedule) = render_app
        .world_mut()
        .resource_mut::<Schedules>()
        .get(TileDeferredGraph)
    {
        for (_, system, _) in schedule.graph().systems.iter() {
            for set in system.default_system_sets() {
                *counts.entry(set).or_default() += 1;
            }
        }
    }
    let before: Vec<InternedSystemSet> = counts
        .into_iter()
        .filter_map(|(set, count)| (count == 1).then_some(set))
        .collect();
    if before.is_empty() {
        warn!(
            "bevy_tile_deferred inspector: the tile schedule has no pass yet (add \
             TileDeferredPlugin before TileInspectorPlugin); the overlay is not drawn over tile \
             cameras"
        );
        return;
    }
    render_app.add_systems(
        TileDeferredGraph,
        (
            clear_overlay_target,
            prepare_egui_pass,
            egui_pass,
            composite_overlay,
        )
            .chain()
            .in_set(TileInspectorSystems),
    );
    for set in before {
        render_app.configure_sets(TileDeferredGraph, TileInspectorSystems.after(set));
    }
    render_app.configure_sets(
        TileDeferredGraph,
        TileInspectorSystems.run_if(view_shows_egui),
    );
    // Tile cameras draw egui now: `TileMissing` stops reporting egui contexts on them.
    app.insert_resource(EguiDrawnOverTileCameras);
}

/// bevy_egui 0.42 leaves `EguiCameraView` on a camera whose egui context was removed, and its
/// `prepare_egui_transforms_system` then fails on the missing egui view. The inspector removes its
/// context when hidden, so take the stale component off.
fn forget_removed_egui_contexts(
    mut commands: Commands,
    views: Query<(Entity, &MainEntity), With<EguiCameraView>>,
    contexts: Extract<Query<(), With<EguiContext>>>,
) {
    for (entity, main) in &views {
        if !contexts.contains(main.id()) {
            commands.entity(entity).remove::<EguiCameraView>();
        }
    }
}

/// Whether the view being rendered has an egui view this frame (bevy_egui leaves a stale
/// `EguiCameraView` on a camera whose context was removed; its egui view is gone) that the tile
/// pass did not draw.
fn view_shows_egui(
    view: Res<CurrentView>,
    cameras: Query<&EguiCameraView, Without<EguiInTilePass>>,
    egui_views: Query<&EguiViewTarget>,
) -> bool {
    cameras
        .get(view.0)
        .and_then(|camera| egui_views.get(camera.0))
        .is_ok_and(|target| target.0 == view.0)
}

fn prepare_composite_pipelines(
    mut commands: Commands,
    views: Query<(Entity, &ViewTarget, &ExtractedCamera, &EguiCameraView)>,
    egui_views: Query<&EguiViewTarget>,
    pipeline_cache: Res<PipelineCache>,
    blit: Option<Res<BlitPipeline>>,
    pipelines: Option<ResMut<SpecializedRenderPipelines<BlitPipeline>>>,
) {
    let (Some(blit), Some(mut pipelines)) = (blit, pipelines) else {
        return;
    };
    for (entity, target, camera, egui) in &views {
        let live = egui_views.get(egui.0).is_ok_and(|t| t.0 == entity);
        if !live || !crate::tile_deferred::is_tile_schedule(camera.schedule) {
            continue;
        }
        let Some(format) = target.out_texture_view_format() else {
            continue;
        };
        let id = overlay::specialize_composite(&pipeline_cache, &blit, &mut pipelines, format);
        commands.entity(entity).insert(OverlayCompositePipeline(id));
    }
}

/// Clears the main texture to transparent before `egui_pass` draws into it.
fn clear_overlay_target(view: ViewQuery<&ViewTarget>, mut ctx: RenderContext) {
    overlay::clear_main_texture(view.into_inner(), &mut ctx, "tile_inspector_clear");
}

/// What [`composite_overlay`] reads of its view.
type OverlayCompositeView = (
    &'static ViewTarget,
    &'static OverlayCompositePipeline,
    &'static ExtractedCamera,
    &'static MainEntity,
    Option<&'static EguiAfterTilePass>,
);

/// Blends the main texture (egui's drawing) over the output the tile pass wrote, and says in
/// the view's report why egui was drawn this way.
fn composite_overlay(
    view: ViewQuery<OverlayCompositeView>,
    pipeline_cache: Res<PipelineCache>,
    blit: Res<BlitPipeline>,
    reports: Res<TileRenderReports>,
    mut ctx: RenderContext,
) {
    let (target, pipeline, camera, main_entity, reason) = view.into_inner();
    if let Some(reason) = reason {
        reports.amend(main_entity.id(), |report| {
            report.egui_after_pass_reason = Some(reason.0.clone());
        });
    }
    overlay::composite_main_texture(
        target,
        camera,
        pipeline.0,
        &pipeline_cache,
        &blit,
        &mut ctx,
        "tile_inspector_composite",
    );
}
