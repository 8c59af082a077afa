//! Which schedule renders each camera: the tier decision applied.
//!
//! In the main world, [`route_cameras`] asks [`tiers`] for each tile camera's tier and switches
//! its `CameraRenderGraph` between the tile schedule ([`TileDeferredGraph`]) and Bevy's `Core3d`.
//! On a GPU that is not a tiler, an `Auto` camera first times both (`tiers::measure`; the
//! render world's half is `timing`): it renders them in turn, in their timed schedules, then
//! keeps the faster.
//! In the render world, [`take_over_msaa`] hides a tile camera's MSAA from Bevy's view
//! preparation.

use super::missing::TileMissing;
use crate::tile_deferred::{
    camera::{TileDeferred, TileDeferredGraph, TimedCameraSchedule, is_tile_schedule},
    plan,
    report::{self, FailedFrame},
};
use crate::{
    device::DeviceProfile,
    tiers::{
        self, AutoTiming, MeasuredPath, PlanRequirements, SceneSignature, TierDecision,
        TileAutoMeasure, TileTierChanged,
    },
};
use bevy::{
    camera::Hdr,
    camera::visibility::VisibleEntities,
    core_pipeline::schedule::Core3d,
    ecs::entity::EntityHashMap,
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
        ViewOfCamera,
    ),
    With<Camera3d>,
>;

/// What the router reads of a camera's view for [`tiers::SceneSignature`].
type ViewOfCamera = (
    Option<&'static Camera>,
    Option<&'static VisibleEntities>,
    Has<Hdr>,
);

/// The lights of the world, for [`tiers::SceneSignature`]: whether each casts shadows.
type Lights<'w, 's> = Query<
    'w,
    's,
    (
        Option<&'static PointLight>,
        Option<&'static SpotLight>,
        Option<&'static DirectionalLight>,
    ),
    Or<(With<PointLight>, With<SpotLight>, With<DirectionalLight>)>,
>;

/// The signature of a camera's view this frame. `lights` is counted once per frame, on first
/// use: (lights, lights casting shadows).
fn signature_of(
    (camera, visible, hdr): (Option<&Camera>, Option<&VisibleEntities>, bool),
    samples: u32,
    lights: (u32, u32),
) -> SceneSignature {
    SceneSignature {
        viewport: camera
            .and_then(Camera::physical_viewport_size)
            .unwrap_or_default(),
        samples,
        hdr,
        meshes: visible.map_or(0, |visible| {
            visible.len(std::any::TypeId::of::<Mesh3d>()) as u32
        }),
        lights: lights.0,
        shadow_casters: lights.1,
    }
}

fn count_lights(lights: &Lights) -> (u32, u32) {
    lights
        .iter()
        .fold((0, 0), |(all, shadowed), (point, spot, directional)| {
            let casts = point.is_some_and(|l| l.shadow_maps_enabled)
                || spot.is_some_and(|l| l.shadow_maps_enabled)
                || directional.is_some_and(|l| l.shadow_maps_enabled);
            (all + 1, shadowed + u32::from(casts))
        })
}

/// Chooses each tile camera's tier (device capabilities, requested MSAA, the camera's setting,
/// failures reported by the render world, what the camera sees that the tile path cannot draw),
/// records it on the camera as a [`TierDecision`], logs it and writes a [`TileTierChanged`] when
/// its tier changes, and puts the camera on the tile schedule or back on `Core3d`. What a tile camera sees that the tile path cannot
/// draw is logged once per camera, entity and kind.
pub(crate) fn route_cameras(
    mut commands: Commands,
    mut cameras: RoutedCameras,
    profile: Option<Res<DeviceProfile>>,
    reports: Res<report::TileRenderReports>,
    mut requirements: Local<Option<PlanRequirements>>,
    mut logged_missing: Local<HashSet<(Entity, Entity, String)>>,
    mut tier_changes: MessageWriter<TileTierChanged>,
    mut backends_seen: Local<u64>,
    (measure_settings, lights, mut timings): (
        Option<Res<TileAutoMeasure>>,
        Lights,
        Local<EntityHashMap<AutoTiming>>,
    ),
) {
    let failures = reports.take_failures();
    let timed = reports.take_timed();
    let measure_settings = measure_settings.as_deref().copied().unwrap_or_default();
    let mut light_counts = None;
    // Cameras no longer measured forget their timing.
    timings.retain(|camera, _| cameras.contains(*camera));
    // Bevy recovered from device loss with a new device: failures on the old one (sticky for
    // the rest of a device's life) no longer hold, and every camera tries its tile tier again.
    let backends = reports.backends_created();
    let new_device = *backends_seen > 0 && backends != *backends_seen;
    *backends_seen = backends;
    for (entity, mut graph, tile, msaa, recorded, mut missing, view) in &mut cameras {
        let failure = failures
            .get(&entity)
            .and_then(|failed| current_failure(entity, failed, recorded));
        let forgotten =
            recorded.and_then(|recorded| forget_on_new_device(entity, recorded, new_device));
        let previous = forgotten.as_ref().or(recorded);
        let decision = match (tile, profile.as_deref()) {
            (None, _) => None,
            // Until the device is probed (first frame), the tile schedule renders.
            (Some(_), None) => previous.cloned(),
            (Some(tile), Some(profile)) => {
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
                // On a GPU that is not a tiler, `Auto` times both paths and keeps the faster.
                let measure_here = measure_settings.applies_to(profile);
                // Not while it falls back for what it sees: Bevy draws it then, and the times
                // would not be the tile path's.
                let decision = if !fall_back && (measure_here || timings.contains_key(&entity)) {
                    let samples = msaa.map_or(1, |m| m.samples());
                    let lights = *light_counts.get_or_insert_with(|| count_lights(&lights));
                    let timing = timings.entry(entity).or_default();
                    let decision = tiers::measure(
                        decision,
                        tile.tier,
                        measure_here,
                        &measure_settings,
                        timing,
                        signature_of(view, samples, lights),
                        timed.get(&entity).map_or(&[], Vec::as_slice),
                    );
                    if let Some(why) = timing.retimed_because.take() {
                        info!(
                            "bevy_tile_deferred: camera {entity}: timing the tile path and \
                             Bevy's Core3d again: {why}"
                        );
                    }
                    if !measure_here {
                        timings.remove(&entity);
                    }
                    decision
                } else {
                    decision
                };
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
        if decision.as_ref() != recorded {
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
                    if let Some(change) =
                        TileTierChanged::between(entity, recorded, decision, failure)
                    {
                        tier_changes.write(change);
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
        // A camera timing a path renders it between two GPU timestamps.
        let timed = decision.as_ref().and_then(tiers::timed_path);
        let wanted = match (tile_tier, timed) {
            (true, Some(MeasuredPath::Tile)) => TimedCameraSchedule::Tile.intern(),
            (true, _) => TileDeferredGraph.intern(),
            (false, Some(MeasuredPath::Core3d)) => TimedCameraSchedule::Core3d.intern(),
            (false, _) => Core3d.intern(),
        };
        let is_ours = is_tile_schedule(graph.0) || graph.0 == TimedCameraSchedule::Core3d.intern();
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
/// [`ViewsDrawnOver`](crate::tile_deferred::overlays::gizmos::ViewsDrawnOver)).
pub(crate) fn take_over_msaa(
    mut views: Query<(Entity, &mut Msaa, Option<&TierDecision>), With<TileDeferred>>,
    gizmo_views: Res<crate::tile_deferred::overlays::gizmos::ViewsDrawnOver>,
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

/// The failure a frame reported, unless it rendered at a tier the camera has already left (it
/// was in flight when an earlier failure lowered the tier): then it says nothing about the
/// tier now.
fn current_failure<'a>(
    entity: Entity,
    (why, failed_at): &'a FailedFrame,
    recorded: Option<&TierDecision>,
) -> Option<&'a str> {
    let current = recorded.map(|recorded| {
        recorded
            .missing_fallback
            .as_ref()
            .map_or(recorded.tier, |missing| missing.tile_tier)
    });
    let stale = failed_at.is_some() && current.is_some() && *failed_at != current;
    if stale {
        debug!("bevy_tile_deferred: camera {entity}: stale failure ({why})");
        return None;
    }
    Some(why)
}

/// On a new render device (Bevy recovered from device loss), the decision without the failure
/// that held on the old one, for the camera to try its tile tier again.
fn forget_on_new_device(
    entity: Entity,
    recorded: &TierDecision,
    new_device: bool,
) -> Option<TierDecision> {
    let failure = recorded.failure.as_deref().filter(|_| new_device)?;
    info!(
        "bevy_tile_deferred: camera {entity}: a new render device; the failure on the old one \
         ({failure}) no longer holds"
    );
    Some(TierDecision {
        failure: None,
        ..recorded.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiers::{RenderTier, TierChangeReason};
    use bevy::ecs::message::Messages;

    /// The router alone, in an app without a renderer, on a lavapipe-like device.
    fn router() -> App {
        let mut app = App::new();
        app.add_message::<TileTierChanged>()
            .insert_resource(report::TileRenderReports::default())
            .insert_resource(DeviceProfile::lavapipe_for_tests())
            .add_systems(Update, route_cameras);
        app
    }

    fn changes(app: &mut App) -> Vec<TileTierChanged> {
        app.world_mut()
            .resource_mut::<Messages<TileTierChanged>>()
            .drain()
            .collect()
    }

    #[test]
    fn tier_changes_are_written_with_their_reason() {
        let mut app = router();
        // `TileDeferred` brings `Camera3d` (the router only sees 3D cameras); the render graph
        // is what Bevy's Core3dPlugin, absent here, makes `Camera3d` require.
        let camera = app
            .world_mut()
            .spawn((
                TileDeferred::default(),
                Msaa::Sample4,
                CameraRenderGraph::new(Core3d),
            ))
            .id();
        assert!(app.world().entity(camera).contains::<Camera3d>());
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };

        app.update();
        let first = changes(&mut app);
        assert_eq!(first.len(), 1, "{first:?}");
        assert_eq!(
            (first[0].camera, first[0].from, first[0].to),
            (camera, None, msaa4)
        );
        assert!(matches!(first[0].reason, TierChangeReason::Rules(_)));
        assert_eq!(
            app.world().get::<TierDecision>(camera).map(|d| d.tier),
            Some(msaa4)
        );
        assert_eq!(
            app.world().get::<CameraRenderGraph>(camera).map(|g| g.0),
            Some(TileDeferredGraph.intern())
        );

        // Nothing changes: nothing is written.
        app.update();
        assert_eq!(changes(&mut app), []);

        // The render world reports a failure: one tier down, with the error.
        app.world()
            .resource::<report::TileRenderReports>()
            .report_failure(camera, "render pass creation failed".into(), Some(msaa4));
        app.update();
        assert_eq!(
            changes(&mut app),
            [TileTierChanged {
                camera,
                from: Some(msaa4),
                to: RenderTier::TileDeferred,
                reason: TierChangeReason::Failure("render pass creation failed".into()),
            }]
        );

        // Something the tile path cannot draw comes into view: Core3d while it is there.
        app.world_mut().entity_mut(camera).insert(TileMissing {
            items: vec![super::super::missing::MissingFeature {
                entity: camera,
                name: None,
                what: "custom Material".into(),
            }],
            frames_clear: 0,
        });
        app.update();
        let fell = changes(&mut app);
        assert_eq!(fell.len(), 1, "{fell:?}");
        assert_eq!(fell[0].to, RenderTier::Forward);
        assert_eq!(
            fell[0].reason,
            TierChangeReason::Missing("custom Material x1".into())
        );

        // Out of view long enough: back on the tile tier the failure left.
        app.world_mut()
            .get_mut::<TileMissing>(camera)
            .unwrap()
            .items
            .clear();
        let mut back = Vec::new();
        for _ in 0..tiers::MISSING_RETURN_FRAMES {
            app.update();
            back.extend(changes(&mut app));
        }
        assert_eq!(
            back,
            [TileTierChanged {
                camera,
                from: Some(RenderTier::Forward),
                to: RenderTier::TileDeferred,
                reason: TierChangeReason::MissingCleared,
            }]
        );
    }

    #[test]
    fn a_new_render_device_forgets_failures_on_the_old_one() {
        let mut app = router();
        let reports = app.world().resource::<report::TileRenderReports>().clone();
        let created = |reports: &report::TileRenderReports| {
            reports
                .backends_created
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
        };
        created(&reports);
        let camera = app
            .world_mut()
            .spawn((TileDeferred::default(), CameraRenderGraph::new(Core3d)))
            .id();
        app.update();
        reports.report_failure(camera, "device lost".into(), None);
        app.update();
        let tier = |app: &App| app.world().get::<TierDecision>(camera).cloned().unwrap();
        assert_eq!(tier(&app).tier, RenderTier::Forward);
        // Sticky on the same device.
        for _ in 0..3 {
            app.update();
        }
        assert_eq!(tier(&app).failure.as_deref(), Some("device lost"));
        changes(&mut app);

        // Bevy's recovery made a new device, and the tile path a new backend.
        created(&reports);
        app.update();
        let decision = tier(&app);
        assert_eq!(
            (decision.tier, decision.failure),
            (RenderTier::TileDeferred, None)
        );
        let back = changes(&mut app);
        assert_eq!(back.len(), 1, "{back:?}");
        assert_eq!(back[0].from, Some(RenderTier::Forward));
        assert!(matches!(back[0].reason, TierChangeReason::Rules(_)));
        app.update();
        assert_eq!(changes(&mut app), [], "once");
    }

    #[test]
    fn a_failure_from_a_frame_at_a_tier_already_left_is_stale() {
        let mut app = router();
        let camera = app
            .world_mut()
            .spawn((
                TileDeferred::default(),
                Msaa::Sample4,
                CameraRenderGraph::new(Core3d),
            ))
            .id();
        app.update();
        let reports = app.world().resource::<report::TileRenderReports>().clone();
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
        reports.report_failure(camera, "out of memory".into(), Some(msaa4));
        app.update();
        let tier = |app: &App| app.world().get::<TierDecision>(camera).unwrap().tier;
        assert_eq!(tier(&app), RenderTier::TileDeferred);
        // The next 4x frame was in flight: its failure does not lower the tier again.
        reports.report_failure(camera, "out of memory".into(), Some(msaa4));
        app.update();
        assert_eq!(tier(&app), RenderTier::TileDeferred);
        // A failure at the tier it renders now does.
        reports.report_failure(
            camera,
            "out of memory".into(),
            Some(RenderTier::TileDeferred),
        );
        app.update();
        assert_eq!(tier(&app), RenderTier::Forward);
    }
}
