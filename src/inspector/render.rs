//! Drawing the overlay over a tile camera.
//!
//! bevy_egui's `egui_pass` draws into the camera's main texture, which `Core3d` later blits to
//! the output (upscaling). A tile camera's render pass writes the output directly and never
//! uses the main texture, so after the tile pass this module clears the main texture to
//! transparent, runs bevy_egui's `prepare_egui_pass` and `egui_pass` into it, and blends it
//! (premultiplied alpha, Bevy's blit pipeline) over the output. Only views that carry an egui
//! context run these systems: with the inspector hidden nothing is recorded.

use super::TileInspectorSystems;
use crate::{TileDeferredGraph, TileOutputLoadedAfter};
use bevy::{
    core_pipeline::blit::{BlitPipeline, BlitPipelineKey},
    ecs::schedule::{InternedSystemSet, ScheduleLabel},
    prelude::*,
    render::{
        Extract, ExtractSchedule, Render, RenderApp, RenderSystems,
        camera::ExtractedCamera,
        render_resource::{
            BlendState, CachedRenderPipelineId, LoadOp, PipelineCache, RenderPassDescriptor,
            SpecializedRenderPipelines,
        },
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
            (prepare_composite_pipelines, mark_overlaid_tile_views).in_set(RenderSystems::Prepare),
        );
    // Everything the tile schedule runs so far (the tile pass) comes before the overlay.
    let before: Vec<InternedSystemSet> = render_app
        .world_mut()
        .resource_mut::<Schedules>()
        .get(TileDeferredGraph)
        .map(|schedule| {
            schedule
                .graph()
                .systems
                .iter()
                .flat_map(|(_, system, _)| system.default_system_sets())
                .collect()
        })
        .unwrap_or_default();
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
/// `EguiCameraView` on a camera whose context was removed; its egui view is gone).
fn view_shows_egui(
    view: Res<CurrentView>,
    cameras: Query<&EguiCameraView>,
    egui_views: Query<&EguiViewTarget>,
) -> bool {
    cameras
        .get(view.0)
        .and_then(|camera| egui_views.get(camera.0))
        .is_ok_and(|target| target.0 == view.0)
}

/// The composite loads the tile camera's output after the tile pass: tell the tile pass on the
/// frames the overlay is drawn, so that a window's swapchain image holds the tile frame for wgpu
/// (see [`TileOutputLoadedAfter`]); take the marker off when it is not.
fn mark_overlaid_tile_views(
    mut commands: Commands,
    views: Query<(
        Entity,
        &ExtractedCamera,
        Option<&EguiCameraView>,
        Has<TileOutputLoadedAfter>,
    )>,
    egui_views: Query<&EguiViewTarget>,
) {
    for (entity, camera, egui, marked) in &views {
        let overlaid = camera.schedule == TileDeferredGraph.intern()
            && egui.is_some_and(|egui| egui_views.get(egui.0).is_ok_and(|t| t.0 == entity));
        if overlaid && !marked {
            commands.entity(entity).insert(TileOutputLoadedAfter);
        } else if !overlaid && marked {
            commands.entity(entity).remove::<TileOutputLoadedAfter>();
        }
    }
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
        if !live || camera.schedule != TileDeferredGraph.intern() {
            continue;
        }
        let Some(format) = target.out_texture_view_format() else {
            continue;
        };
        let id = pipelines.specialize(
            &pipeline_cache,
            &blit,
            BlitPipelineKey {
                target_format: format,
                blend_state: Some(BlendState::PREMULTIPLIED_ALPHA_BLENDING),
                samples: 1,
                source_space: None,
            },
        );
        commands.entity(entity).insert(OverlayCompositePipeline(id));
    }
}

/// Clears the main texture to transparent (and takes its first-use clear, so that `egui_pass`
/// loads instead of clearing it to the camera's clear colour).
fn clear_overlay_target(view: ViewQuery<&ViewTarget>, mut ctx: RenderContext) {
    let target = view.into_inner();
    let mut attachment = target.get_unsampled_color_attachment();
    attachment.ops.load = LoadOp::Clear(wgpu::Color::TRANSPARENT);
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some("tile_inspector_clear"),
            color_attachments: &[Some(attachment)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

/// Blends the main texture (egui's drawing) over the output the tile pass wrote.
fn composite_overlay(
    view: ViewQuery<(&ViewTarget, &OverlayCompositePipeline, &ExtractedCamera)>,
    pipeline_cache: Res<PipelineCache>,
    blit: Res<BlitPipeline>,
    mut ctx: RenderContext,
) {
    let (target, pipeline, camera) = view.into_inner();
    let Some(pipeline) = pipeline_cache.get_render_pipeline(pipeline.0) else {
        return;
    };
    let bind_group = blit.create_bind_group(
        ctx.render_device(),
        target.main_texture_view(),
        &pipeline_cache,
    );
    let Some(output) = target.out_texture_color_attachment(None) else {
        return;
    };
    let mut pass = ctx
        .command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some("tile_inspector_composite"),
            color_attachments: &[Some(output)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
    if let Some(viewport) = &camera.viewport {
        let (position, size) = (viewport.physical_position, viewport.physical_size);
        pass.set_scissor_rect(position.x, position.y, size.x, size.y);
    }
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, &bind_group, &[]);
    pass.draw(0..3, 0..1);
}
