//! Which schedule renders each camera: the tier decision applied.
//!
//! In the main world, [`route_cameras`] asks [`tiers`] for each tile camera's tier and switches
//! its `CameraRenderGraph` between the tile schedule ([`TileDeferredGraph`]) and Bevy's `Core3d`.
//! In the render world, [`take_over_msaa`] hides a tile camera's MSAA from Bevy's view
//! preparation.

use super::{TileDeferred, TileDeferredGraph, missing::TileMissing, plan, report};
use crate::{
    device::DeviceProfile,
    tiers::{self, PlanRequirements, TierDecision},
};
use bevy::{
    core_pipeline::schedule::Core3d,
    ecs::schedule::ScheduleLabel,
    platform::collections::HashSet,
    prelude::*,
    render::{camera::CameraRenderGraph, view::Msaa},
};

/// The cameras [`route_cameras`] puts on a schedule: every `Camera3d`, tile or not.
type RoutedCameras<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static mut CameraRenderGraph,
        Option<&'static TileDeferred>,
        Option<&'static Msaa>,
        Option<&'static TierDecision>,
        Option<&'static mut TileMissing>,
    ),
    With<Camera3d>,
>;

/// Chooses each tile camera's tier (device capabilities, requested MSAA, the camera's setting,
/// failures reported by the render world, what the camera sees that the tile path cannot draw),
/// records it on the camera as a [`TierDecision`], logs it when it changes, and puts the camera
/// on the tile schedule or back on `Core3d`. What a tile camera sees that the tile path cannot
/// draw is logged once per camera, entity and kind.
pub(super) fn route_cameras(
    mut commands: Commands,
    mut cameras: RoutedCameras,
    profile: Option<Res<DeviceProfile>>,
    reports: Res<report::TileRenderReports>,
    mut requirements: Local<Option<PlanRequirements>>,
    mut logged_missing: Local<HashSet<(Entity, Entity, String)>>,
) {
    let failures = reports.take_failures();
    for (entity, mut graph, tile, msaa, previous, mut missing) in &mut cameras {
        let decision = match (tile, profile.as_deref()) {
            (None, _) => None,
            // Until the device is probed (first frame), the tile schedule renders.
            (Some(_), None) => previous.cloned(),
            (Some(tile), Some(profile)) => {
                let failure = failures.get(&entity).map(String::as_str);
                let decision = tiers::decide(
                    profile,
                    requirements.get_or_insert_with(plan::requirements),
                    msaa.map_or(1, |m| m.samples()),
                    tile.tier,
                    tile.merge_subpasses,
                    previous,
                    failure,
                );
                if let Some(failure) = failure {
                    error!(
                        "bevy_tile_deferred: camera {entity}: {failure}; falling back to {}",
                        decision.tier
                    );
                }
                let summary = missing.as_deref().and_then(TileMissing::summary);
                let fell_back = previous.is_some_and(|p| p.missing_fallback.is_some());
                let frames_clear = missing.as_deref().map_or(0, |m| m.frames_clear);
                let (fall_back, frames_clear) =
                    tiers::missing_hysteresis(fell_back, summary.is_some(), frames_clear);
                if let Some(missing) = missing.as_deref_mut()
                    && missing.frames_clear != frames_clear
                {
                    missing.frames_clear = frames_clear;
                }
                let decision = tiers::apply_missing(
                    decision,
                    tile.tier,
                    summary.as_deref(),
                    fall_back,
                    previous,
                );
                // Each thing once, by entity and name: absent from a forced tile tier's frame,
                // or the cause of an `Auto` camera's fallback.
                let tile_or_fell_back =
                    decision.tier.is_tile() || decision.missing_fallback.is_some();
                if tile_or_fell_back && let Some(missing) = missing.as_deref() {
                    for item in &missing.items {
                        if !logged_missing.insert((entity, item.entity, item.what.clone())) {
                            continue;
                        }
                        if decision.tier.is_tile() {
                            warn!(
                                "bevy_tile_deferred: camera {entity} renders {} (forced) and \
                                 does not draw {item}",
                                decision.tier
                            );
                        } else {
                            warn!(
                                "bevy_tile_deferred: camera {entity} falls back to {} for {item}",
                                decision.tier
                            );
                        }
                    }
                }
                Some(decision)
            }
        };
        if decision.as_ref() != previous {
            match &decision {
                Some(decision) => {
                    let requested = msaa.map_or(1, |m| m.samples());
                    let auto = tile.is_some_and(|t| t.tier == tiers::TierSetting::Auto);
                    // A fallback for what the camera sees, and fewer samples than the camera's
                    // `Msaa` asks for (the device's counts, a driver rule), are warnings, like
                    // the render world's lowering of MSAA.
                    if let Some(fallback) = &decision.missing_fallback {
                        warn!(
                            "bevy_tile_deferred: camera {entity}: falling back to {} while it \
                             sees what the tile path cannot draw ({}); back to {} after {} \
                             frames without it",
                            decision.tier,
                            fallback.why,
                            fallback.tile_tier,
                            tiers::MISSING_RETURN_FRAMES
                        );
                    } else if auto
                        && decision.tier.is_tile()
                        && decision.tier.tile_samples() < requested
                    {
                        warn!(
                            "bevy_tile_deferred: camera {entity}: asked for {requested}x MSAA, \
                             rendering {}x: {}",
                            decision.tier.tile_samples(),
                            decision.summary()
                        );
                    } else {
                        info!(
                            "bevy_tile_deferred: camera {entity}: {}",
                            decision.summary()
                        );
                    }
                    commands.entity(entity).insert(decision.clone());
                }
                None => {
                    commands.entity(entity).remove::<TierDecision>();
                }
            }
        }
        let tile_tier = match (&decision, tile) {
            (Some(decision), _) => decision.tier.is_tile(),
            (None, tile) => tile.is_some() && profile.is_none(),
        };
        let wanted = if tile_tier {
            TileDeferredGraph.intern()
        } else {
            Core3d.intern()
        };
        let is_ours = graph.0 == TileDeferredGraph.intern();
        if graph.0 != wanted && (is_ours || tile.is_some()) {
            graph.0 = wanted;
        }
    }
}

/// The tile path owns a tile camera's MSAA: Bevy's view preparation sees `Msaa::Off`, so it
/// allocates no multisampled textures the tile path would never use (and none at a count the
/// device lacks). The tier keeps the requested count.
///
/// A view that drew gizmos lately keeps the tile tier's count instead: Bevy's pipelines draw the
/// gizmos into Bevy's textures after the tile pass (see
/// [`GizmoMsaaViews`](super::foreign_draws::GizmoMsaaViews)).
pub(super) fn take_over_msaa(
    mut views: Query<(Entity, &mut Msaa, Option<&TierDecision>), With<TileDeferred>>,
    gizmo_views: Res<super::foreign_draws::GizmoMsaaViews>,
) {
    for (entity, mut msaa, decision) in &mut views {
        let tile = decision.is_none_or(|decision| decision.tier.is_tile());
        if !tile {
            continue;
        }
        let wanted = match decision {
            Some(decision) if gizmo_views.keeps_msaa(entity) => {
                Msaa::from_samples(decision.tier.tile_samples())
            }
            _ => Msaa::Off,
        };
        if *msaa != wanted {
            *msaa = wanted;
        }
    }
}
