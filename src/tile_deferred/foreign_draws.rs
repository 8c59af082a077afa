//! Draws that other render plugins queue for a tile camera in Bevy's `Transparent3d` phase and
//! that the tile path does not draw: Bevy's 3D gizmos above all.
//!
//! bevy_gizmos_render 0.19.1 (`pipeline_3d.rs`, `queue_line_gizmos_3d` and
//! `queue_line_joint_gizmos_3d`) queues every gizmo group with lines this frame, and every
//! retained `Gizmo`, as `Transparent3d` items of each 3D view whose render layers they
//! intersect, and draws them in `Core3d`'s main transparent pass, depth-tested against the
//! view's depth. A tile camera keeps `Camera3d`, so Bevy prepares its `Transparent3d` phase and
//! the gizmo plugin fills it; the tile schedule never draws that phase. The crate does not need
//! to compile bevy_gizmos to see this: an item of a tile camera's phase whose draw function is
//! not bevy_pbr's `DrawMaterial` (the meshes, which the tile path draws itself or
//! `find_missing` (`missing.rs`) reports mesh by mesh) is something another
//! plugin draws there. Only actual content is found: bevy_gizmos_render queues nothing for a
//! group without lines, a disabled group, or a view outside the gizmo's render layers, so an
//! app with the gizmo plugin and nothing drawn keeps its tile cameras.
//!
//! The render world counts those items per tile camera each frame ([`count_foreign_draws`]) into
//! [`ForeignTransparentDraws`], shared with the main world, where `find_missing` reports them
//! on the camera on the next frame it runs: an `Auto` camera falls back to `Core3d` (which draws
//! them) from the frame after the gizmos first appear, a forced tier logs them once.

use super::TileDeferred;
use bevy::{
    core_pipeline::core_3d::Transparent3d,
    pbr::DrawMaterial,
    platform::collections::HashMap,
    prelude::*,
    render::{
        Render, RenderApp, RenderSystems,
        render_phase::{DrawFunctions, ViewSortedRenderPhases},
        sync_world::MainEntity,
        view::ExtractedView,
    },
};
use std::sync::{Arc, Mutex};

/// What `find_missing` reports on a tile camera whose `Transparent3d` phase holds draws of
/// another render plugin.
pub(crate) const FOREIGN_TRANSPARENT_DRAWS: &str = "Transparent3d draws of a render plugin (gizmos and the like; the tile path does not draw \
     them)";

/// Shared by the main and render worlds: per tile camera (main-world entity), how many
/// `Transparent3d` items of its last rendered frame the tile path does not draw (only cameras
/// with some are listed).
#[derive(Resource, Clone, Default)]
pub(crate) struct ForeignTransparentDraws(Arc<Mutex<HashMap<Entity, usize>>>);

impl ForeignTransparentDraws {
    /// How many items of `camera`'s last frame the tile path does not draw (0 if none).
    pub(crate) fn count(&self, camera: Entity) -> usize {
        self.0
            .lock()
            .ok()
            .and_then(|counts| counts.get(&camera).copied())
            .unwrap_or(0)
    }

    fn replace(&self, counts: HashMap<Entity, usize>) {
        if let Ok(mut shared) = self.0.lock() {
            *shared = counts;
        }
    }
}

/// Shares the counts between the worlds and counts them each frame in the render world.
pub(super) fn build(app: &mut App) {
    let counts = ForeignTransparentDraws::default();
    app.insert_resource(counts.clone());
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    render_app.insert_resource(counts).add_systems(
        Render,
        // Items are queued in `Queue` and sorted in `PhaseSort`, both before `Prepare`.
        count_foreign_draws.in_set(RenderSystems::Prepare),
    );
}

/// Counts, for every camera with [`TileDeferred`] (on the tile schedule or fallen back to
/// `Core3d`, so that the fallback lasts while the gizmos do), the `Transparent3d` items of its
/// view that are not bevy_pbr's mesh draws.
fn count_foreign_draws(
    views: Query<(&MainEntity, &ExtractedView), With<TileDeferred>>,
    phases: Option<Res<ViewSortedRenderPhases<Transparent3d>>>,
    draw_functions: Option<Res<DrawFunctions<Transparent3d>>>,
    shared: Res<ForeignTransparentDraws>,
) {
    let (Some(phases), Some(draw_functions)) = (phases, draw_functions) else {
        return;
    };
    let mesh_draw = draw_functions.read().get_id::<DrawMaterial>();
    let mut counts = HashMap::default();
    for (main_entity, view) in &views {
        let Some(phase) = phases.get(&view.retained_view_entity) else {
            continue;
        };
        let foreign = phase
            .items
            .values()
            .filter(|item| Some(item.draw_function) != mesh_draw)
            .count();
        if foreign > 0 {
            counts.insert(main_entity.id(), foreign);
        }
    }
    shared.replace(counts);
}
