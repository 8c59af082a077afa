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
//! A camera that leaves the tile path (an `Auto` camera timing or choosing `Core3d`, a
//! fallback) gets its phases back from Bevy the next frame, empty: Bevy queues only the meshes
//! that changed into a kept phase. The view is marked for Bevy to specialise and queue all of
//! its meshes again (`DirtySpecializations::views`, what Bevy does when a view's key changes).

use crate::tile_deferred::camera::is_tile_schedule;
use bevy::{
    core_pipeline::core_3d::{AlphaMask3d, Opaque3d},
    platform::collections::HashSet,
    prelude::*,
    render::{
        Extract,
        camera::{CameraRenderGraph, DirtySpecializations},
        render_phase::ViewBinnedRenderPhases,
        view::RetainedViewEntity,
    },
};

/// The active 3D cameras and the schedule each renders with this frame.
type Cameras3d<'w, 's> =
    Query<'w, 's, (Entity, &'static Camera, &'static CameraRenderGraph), With<Camera3d>>;

/// Removes the opaque phases of the 3D cameras drawn by the tile path this frame, and has Bevy
/// queue every mesh again for a camera that returns to `Core3d`.
///
/// Runs in `ExtractSchedule` after Bevy prepares the phases (`extract_core_3d_camera_phases`)
/// and clears the frame's dirty specialisations.
pub(crate) fn leave_out_opaque_phases(
    cameras: Extract<Cameras3d>,
    mut opaque_phases: ResMut<ViewBinnedRenderPhases<Opaque3d>>,
    mut alpha_mask_phases: ResMut<ViewBinnedRenderPhases<AlphaMask3d>>,
    mut dirty_specializations: ResMut<DirtySpecializations>,
    mut left_out: Local<HashSet<RetainedViewEntity>>,
) {
    let mut live: HashSet<RetainedViewEntity> = HashSet::default();
    for (main_entity, camera, graph) in &cameras {
        if !camera.is_active {
            continue;
        }
        // The retained view Bevy keys a camera's main phases by (core_3d/mod.rs:520).
        let view = RetainedViewEntity::new(main_entity.into(), None, 0);
        live.insert(view);
        if is_tile_schedule(graph.0) {
            opaque_phases.remove(&view);
            alpha_mask_phases.remove(&view);
            left_out.insert(view);
        } else if left_out.remove(&view) {
            dirty_specializations.views.insert(view);
        }
    }
    left_out.retain(|view| live.contains(view));
}
