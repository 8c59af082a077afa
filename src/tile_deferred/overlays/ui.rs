//! bevy_ui over tile cameras (feature `ui`): Bevy's own UI pass, run in the tile schedule after
//! the tile pass.
//!
//! bevy_ui_render 0.19.1 extracts a UI view for every active `Camera3d` (`extract_ui_camera_view`,
//! linked from the camera's view by `UiCameraView`), queues and prepares its nodes in `Render`,
//! and draws them with `ui_pass`, which it adds to `Core3d` and `Core2d` only: into the camera's
//! main texture, after post-processing and before the upscaling blit to the output. A tile camera
//! keeps `Camera3d`, so all of that already happens for it; only `ui_pass` is missing from its
//! schedule. Here it runs between a clear of the main texture to transparent and a composite of
//! the main texture over the output ([`overlay`](super::composite)), with Bevy's pipelines, text
//! atlas and blending: the UI looks as it does on a `Core3d` camera.

use super::{
    UiDrawnOverTileCameras,
    composite::{self as overlay, OverlayCompositePipeline, OverlayPassNames, OverlayShape},
    gizmos::TileGizmoSystems,
    in_pass::UiAfterTilePass,
};
use crate::tile_deferred::{
    camera::{TileDeferredGraph, TileDeferredSystems, TileOutputLoadedAfter},
    report::TileRenderReports,
};
use bevy::{
    core_pipeline::blit::BlitPipeline,
    prelude::*,
    render::{
        Render, RenderApp, RenderSystems,
        camera::ExtractedCamera,
        render_phase::ViewSortedRenderPhases,
        render_resource::PipelineCache,
        renderer::{CurrentView, RenderContext, ViewQuery},
        sync_world::MainEntity,
        view::{ExtractedView, ViewTarget},
    },
    ui_render::{TransparentUi, UiCameraView, ui_pass},
};

/// The names of the UI's passes in its priced plan ([`TileViewReport::ui_pass`](crate::tile_deferred::report::TileViewReport::ui_pass)).
pub(crate) const UI_PASS_NAMES: OverlayPassNames = OverlayPassNames {
    clear: "ui clear (main texture)",
    draw: "ui_pass",
    composite: "ui composite (over the output)",
};

/// Render-world system set, in [`TileDeferredGraph`], of the systems that draw bevy_ui over a
/// tile camera (clear, Bevy's `ui_pass`, composite), after the tile pass. It runs only for a view
/// with UI nodes to draw this frame.
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileUiSystems;

/// Installs the UI pass in the tile schedule (from the plugin's `finish`, once bevy_ui_render has
/// built). Without bevy_ui_render's `UiRenderPlugin` nothing draws UI anywhere, and nothing is
/// installed.
pub(crate) fn finish(app: &mut App) {
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    if !render_app
        .world()
        .contains_resource::<ViewSortedRenderPhases<TransparentUi>>()
    {
        return;
    }
    super::ui_in_pass::install(render_app);
    render_app
        .add_systems(
            Render,
            mark_ui_tile_views
                .in_set(RenderSystems::Prepare)
                // Views whose UI the tile pass draws have no items left by then.
                .after(super::ui_in_pass::build_tile_ui),
        )
        .add_systems(
            TileDeferredGraph,
            (clear_ui_target, ui_pass, composite_ui)
                .chain()
                .in_set(TileUiSystems),
        )
        .configure_sets(
            TileDeferredGraph,
            TileUiSystems
                .in_set(TileDeferredSystems::Overlays)
                // Bevy draws the UI over the gizmos.
                .after(TileGizmoSystems)
                .run_if(view_draws_ui),
        );
    // The tile path now draws UI over its cameras: `find_missing` stops reporting it.
    app.insert_resource(UiDrawnOverTileCameras);
}

/// Whether `view` (a tile camera's view) has UI items to draw this frame: the view's UI view
/// (bevy_ui_render's, through `UiCameraView`) has a non-empty sorted phase. bevy_ui_render
/// queues its phase in `RenderSystems::Queue` and sorts it in `PhaseSort`, before `Prepare`.
fn has_ui_items(
    view: Entity,
    ui_cameras: &Query<&UiCameraView>,
    ui_views: &Query<&ExtractedView>,
    phases: &ViewSortedRenderPhases<TransparentUi>,
) -> bool {
    ui_cameras
        .get(view)
        .and_then(|ui| ui_views.get(ui.0))
        .is_ok_and(|ui_view| {
            phases
                .get(&ui_view.retained_view_entity)
                .is_some_and(|phase| !phase.items.is_empty())
        })
}

/// Run condition of [`TileUiSystems`]: the view being rendered has UI to draw.
fn view_draws_ui(
    view: Res<CurrentView>,
    ui_cameras: Query<&UiCameraView>,
    ui_views: Query<&ExtractedView>,
    phases: Res<ViewSortedRenderPhases<TransparentUi>>,
) -> bool {
    has_ui_items(view.0, &ui_cameras, &ui_views, &phases)
}

/// The composite loads the tile camera's output after the tile pass: tell the tile pass on the
/// frames UI is drawn, so that a window's swapchain image holds the tile frame for wgpu (see
/// [`TileOutputLoadedAfter`]; the crate takes it off every view at the end of the frame).
fn mark_ui_tile_views(
    mut commands: Commands,
    views: Query<(Entity, &ExtractedCamera), With<ViewTarget>>,
    ui_cameras: Query<&UiCameraView>,
    ui_views: Query<&ExtractedView>,
    phases: Res<ViewSortedRenderPhases<TransparentUi>>,
) {
    for (entity, camera) in &views {
        if crate::tile_deferred::camera::is_tile_schedule(camera.schedule)
            && has_ui_items(entity, &ui_cameras, &ui_views, &phases)
        {
            commands.entity(entity).insert(TileOutputLoadedAfter);
        }
    }
}

/// Clears the main texture to transparent before `ui_pass` draws into it.
fn clear_ui_target(view: ViewQuery<&ViewTarget>, mut ctx: RenderContext) {
    overlay::clear_main_texture(view.into_inner(), &mut ctx, "tile_ui_clear");
}

/// What [`composite_ui`] reads of its view.
type UiCompositeView = (
    &'static ViewTarget,
    &'static ExtractedCamera,
    &'static MainEntity,
    Option<&'static OverlayCompositePipeline>,
    Option<&'static UiAfterTilePass>,
    Has<crate::tile_deferred::camera::PostProcessedAfterTile>,
);

/// Blends the main texture (the UI) over the output the tile pass wrote, and adds the price of
/// the UI's passes to the view's report.
fn composite_ui(
    view: ViewQuery<UiCompositeView>,
    pipeline_cache: Res<PipelineCache>,
    blit: Res<BlitPipeline>,
    reports: Res<TileRenderReports>,
    mut ctx: RenderContext,
) {
    let (target, camera, main_entity, pipeline, reason, post_processed) = view.into_inner();
    let Some(pipeline) = pipeline else {
        return;
    };
    overlay::composite_main_texture(
        target,
        camera,
        pipeline.0,
        &pipeline_cache,
        &blit,
        &mut ctx,
        "tile_ui_composite",
    );
    let Some(shape) = OverlayShape::of(target, camera, post_processed) else {
        return;
    };
    let priced = overlay::price_overlay(
        UI_PASS_NAMES,
        shape.extent,
        shape.main_format,
        shape.output_format,
        shape.target,
    );
    let reason = reason.map(|why| why.0.to_string());
    reports.amend(main_entity.id(), |report| {
        report.ui_pass = priced;
        report.ui_after_pass_reason = reason;
    });
}
