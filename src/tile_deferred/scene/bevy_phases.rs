//! Bevy's opaque phases are left out of the views the tile path draws.
//!
//! Bevy prepares an `Opaque3d` and an `AlphaMask3d` phase for every 3D camera, and each frame it
//! batches every mesh in them, writes a preprocessing work item per mesh and runs its GPU mesh
//! preprocessing over them: CPU and GPU work in proportion to the meshes in view. A camera on
//! the tile path never draws those phases (the G-buffer subpass draws its own instanced batches,
//! `draws`), so for such a camera the work is wasted. Bevy keeps its bins between frames, so the
//! CPU part is small; the GPU part writes a `MeshUniform` for every mesh in view every frame,
//! memory traffic on a phone. Without the opaque phase, `queue_material_meshes` skips the view
//! and nothing is batched or preprocessed for it.
//!
//! What stays: the `Transparent3d` phase (gizmos and other plugins' draws are drawn over the
//! tile frame from it), Bevy's specialisation of the view's meshes (it runs while any of the
//! view's phases exists, and only for what changed), the shadow views' phases and the
//! wireframes' phase.
//!
//! A tile camera with meshes Bevy draws over its frame ([`TileMaterialsOverTile`]: custom
//! materials, and `StandardMaterial`s with features the G-buffer lacks) keeps its opaque
//! phases, and [`keep_only_meshes_over_tile`] takes every mesh the tile path draws itself (the
//! other `StandardMaterial` meshes) out of them once Bevy has queued them: Bevy batches and
//! preprocesses only the meshes it draws.
//!
//! A camera that leaves the tile path (an `Auto` camera timing or choosing `Core3d`, a
//! fallback) gets its phases back from Bevy the next frame, empty: Bevy queues only the meshes
//! that changed into a kept phase. The view is marked for Bevy to specialise and queue all of
//! its meshes again (`DirtySpecializations::views`, what Bevy does when a view's key changes).

use crate::tile_deferred::camera::{
    MaterialsOverTileView, TileMaterialsOverTile, is_tile_schedule,
};
use bevy::{
    core_pipeline::core_3d::{AlphaMask3d, Opaque3d},
    pbr::RenderMaterialInstances,
    platform::collections::{HashMap, HashSet},
    prelude::*,
    render::{
        Extract,
        camera::{CameraRenderGraph, DirtySpecializations},
        render_phase::ViewBinnedRenderPhases,
        sync_world::RenderEntity,
        view::{ExtractedView, RenderVisibleEntities, RetainedViewEntity},
    },
};

/// The active 3D cameras, the schedule each renders with this frame, and the meshes Bevy draws
/// over the tile frame of a tile camera.
type Cameras3d<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static RenderEntity,
        &'static Camera,
        &'static CameraRenderGraph,
        Option<&'static TileMaterialsOverTile>,
    ),
    With<Camera3d>,
>;

/// Removes the opaque phases of the 3D cameras drawn by the tile path this frame, and has Bevy
/// queue every mesh again for a camera that returns to `Core3d`.
///
/// Runs in `ExtractSchedule` after Bevy prepares the phases (`extract_core_3d_camera_phases`)
/// and clears the frame's dirty specialisations.
pub(crate) fn leave_out_opaque_phases(
    mut commands: Commands,
    cameras: Extract<Cameras3d>,
    mut opaque_phases: ResMut<ViewBinnedRenderPhases<Opaque3d>>,
    mut alpha_mask_phases: ResMut<ViewBinnedRenderPhases<AlphaMask3d>>,
    mut dirty_specializations: ResMut<DirtySpecializations>,
    mut left_out: Local<HashSet<RetainedViewEntity>>,
    mut listed_before: Local<HashMap<RetainedViewEntity, Vec<Entity>>>,
) {
    let mut live: HashSet<RetainedViewEntity> = HashSet::default();
    for (main_entity, render_entity, camera, graph, over_tile) in &cameras {
        if !camera.is_active {
            continue;
        }
        // The retained view Bevy keys a camera's main phases by (core_3d/mod.rs:520).
        let view = RetainedViewEntity::new(main_entity.into(), None, 0);
        live.insert(view);
        // Only on the tile schedule: a camera that renders with `Core3d` keeps every mesh in
        // its phases, and draws them all.
        let on_tile = is_tile_schedule(graph.0);
        let over_tile = over_tile.filter(|over| on_tile && !over.meshes.is_empty());
        if let Some(over_tile) = over_tile {
            commands
                .entity(render_entity.id())
                .insert(MaterialsOverTileView::new(
                    over_tile.meshes.clone(),
                    over_tile.transmissive,
                ));
            // A `StandardMaterial` mesh newly listed (its material gained clearcoat, say) may
            // have been taken out of Bevy's kept bins before, and Bevy queues only what it
            // sees change: have it queue the view's meshes again. Meshes that only enter the
            // view are queued by Bevy anyway; this costs one re-queue of the view then.
            let before = listed_before.entry(view).or_default();
            if over_tile
                .meshes
                .iter()
                .any(|mesh| before.binary_search(mesh).is_err())
            {
                dirty_specializations.views.insert(view);
            }
            before.clone_from(&over_tile.meshes);
        } else {
            listed_before.remove(&view);
        }
        let over_tile = over_tile.is_some();
        if on_tile && !over_tile {
            opaque_phases.remove(&view);
            alpha_mask_phases.remove(&view);
            left_out.insert(view);
        } else if left_out.remove(&view) {
            dirty_specializations.views.insert(view);
        }
    }
    left_out.retain(|view| live.contains(view));
    listed_before.retain(|view, _| live.contains(view));
}

/// Takes the meshes the tile path draws itself (a `StandardMaterial` not listed in
/// [`TileMaterialsOverTile`]) out of the opaque phases of the tile views that keep them for the
/// listed ones, so that what Bevy batches, preprocesses and draws over the tile frame is only
/// the meshes the tile path does not draw.
///
/// Runs after Bevy queues its material meshes. Bevy's bins are kept between frames and Bevy
/// queues only what changed, so a mesh taken out stays out until it changes, and is taken out
/// again then. Bevy's bins hold only the view's visible meshes, so those are what is walked:
/// one hash lookup per mesh in view, per such view.
pub(crate) fn keep_only_meshes_over_tile(
    views: Query<(
        &ExtractedView,
        &MaterialsOverTileView,
        &RenderVisibleEntities,
    )>,
    material_instances: Option<Res<RenderMaterialInstances>>,
    mut opaque_phases: ResMut<ViewBinnedRenderPhases<Opaque3d>>,
    mut alpha_mask_phases: ResMut<ViewBinnedRenderPhases<AlphaMask3d>>,
) {
    let Some(material_instances) = material_instances else {
        return;
    };
    for (view, over_tile, visible) in &views {
        let key = view.retained_view_entity;
        let (Some(opaque), Some(alpha_mask), Some(meshes)) = (
            opaque_phases.get_mut(&key),
            alpha_mask_phases.get_mut(&key),
            visible.get::<Mesh3d>(),
        ) else {
            continue;
        };
        for (_, &mesh) in meshes.iter_visible() {
            if over_tile.drawn_by_tile_path(&material_instances, mesh) {
                opaque.remove(mesh);
                alpha_mask.remove(mesh);
            }
        }
    }
}

/// [`MaterialsOverTileView`] lasts one frame: extraction inserts it again.
pub(crate) fn forget_materials_over_tile(
    mut commands: Commands,
    views: Query<Entity, With<MaterialsOverTileView>>,
) {
    for view in &views {
        commands.entity(view).remove::<MaterialsOverTileView>();
    }
}
