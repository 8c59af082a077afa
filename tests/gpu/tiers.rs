//! Device tiers at run time: each tier forced renders correctly, a failing tile tier falls back
//! with its reason, switching tiers back and forth leaks nothing, and an `Auto` camera on a GPU
//! that is not a tiler keeps the faster path by measurement.

use crate::{
    harness::{GpuTest, HeadlessApp, assert_frames_match},
    scenes,
};
use bevy::{prelude::*, render::RenderApp, render::view::Msaa};
use bevy_tile_deferred::{
    TileDeferred, TileFaultInjection, TileRenderReports,
    tiers::{
        MeasureOn, MeasuredPath, RenderTier, TierChangeReason, TierDecision, TierMeasurement,
        TierSetting, TileAutoMeasure, TileTierChanged, choose,
    },
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 144;

fn app_with_camera(msaa: Msaa, tile: Option<TierSetting>) -> (HeadlessApp, Entity) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        msaa,
    ));
    if let Some(tier) = tile {
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .insert(TileDeferred { tier, ..default() });
    }
    (headless, camera)
}

#[test]
fn every_forced_tier_renders_like_bevy() {
    let _test = GpuTest::start("every_forced_tier_renders_like_bevy");
    for (tier, msaa, min_psnr) in [
        (
            RenderTier::TileDeferredMsaa { samples: 4 },
            Msaa::Sample4,
            34.0,
        ),
        (RenderTier::TileDeferred, Msaa::Off, 36.0),
        (RenderTier::Unmerged { samples: 1 }, Msaa::Off, 36.0),
        (RenderTier::Unmerged { samples: 4 }, Msaa::Sample4, 34.0),
        (RenderTier::Forward, Msaa::Sample4, 60.0),
    ] {
        let (mut reference, _) = app_with_camera(msaa, None);
        let expected = reference.render(6);
        let (mut forced, camera) = app_with_camera(msaa, Some(TierSetting::Force(tier)));
        let actual = forced.render(6);
        let decision = forced.app.world().get::<TierDecision>(camera).unwrap();
        assert_eq!(decision.tier, tier);
        let reports = forced.app.world().resource::<TileRenderReports>().clone();
        assert_eq!(reports.get(camera).is_some(), tier.is_tile(), "{tier}");
        if let Some(report) = reports.get(camera) {
            // The unmerged tier records one render pass per pass, the merged ones one in all.
            let passes = if tier.is_unmerged() { 3 } else { 1 };
            assert_eq!(report.render_passes_recorded, passes, "{tier}");
            assert_eq!(report.compiled.render_pass_count(), passes, "{tier}");
            assert_eq!(report.samples, tier.tile_samples(), "{tier}");
        }
        assert_frames_match(&format!("tier-{tier}"), &actual, &expected, min_psnr, 8);
    }
}

/// Every `TileTierChanged` the app has written, in order.
#[derive(Resource, Default)]
struct TierChanges(Vec<TileTierChanged>);

fn record_tier_changes(mut changes: MessageReader<TileTierChanged>, mut seen: ResMut<TierChanges>) {
    seen.0.extend(changes.read().cloned());
}

#[test]
fn a_failing_tile_tier_falls_back_to_forward() {
    let test = GpuTest::start("a_failing_tile_tier_falls_back_to_forward");
    let (mut headless, camera) = app_with_camera(Msaa::Off, Some(TierSetting::Auto));
    // The render world moves to its own thread once the app runs: install the hook first.
    let fault = TileFaultInjection::default();
    headless
        .app
        .sub_app_mut(RenderApp)
        .insert_resource(fault.clone());
    headless
        .app
        .init_resource::<TierChanges>()
        .add_systems(Last, record_tier_changes);
    headless.render(2);
    // The first decision is a message too, for the device's rules.
    let changes = &headless.app.world().resource::<TierChanges>().0;
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(
        (changes[0].camera, changes[0].from, changes[0].to),
        (camera, None, RenderTier::TileDeferred)
    );
    assert!(matches!(changes[0].reason, TierChangeReason::Rules(_)));
    assert_eq!(
        headless
            .app
            .world()
            .get::<TierDecision>(camera)
            .unwrap()
            .tier,
        RenderTier::TileDeferred
    );
    // Make the next tile frame fail as if a Vulkan object could not be created.
    fault.0.store(true, std::sync::atomic::Ordering::Relaxed);
    let frame = headless.render(4);
    let decision = headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .unwrap()
        .clone();
    assert_eq!(decision.tier, RenderTier::Forward, "{decision:?}");
    assert!(
        decision
            .failure
            .as_deref()
            .unwrap()
            .contains("injected fault")
    );
    // A game hears of it: one message, with the error as the reason.
    let changes = &headless.app.world().resource::<TierChanges>().0;
    assert_eq!(changes.len(), 2, "{changes:#?}");
    let fell = &changes[1];
    assert_eq!(
        (fell.camera, fell.from, fell.to),
        (camera, Some(RenderTier::TileDeferred), RenderTier::Forward)
    );
    assert!(
        matches!(&fell.reason, TierChangeReason::Failure(why) if why.contains("injected fault")),
        "{fell:?}"
    );
    let errors = test.take_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("falling back to Bevy forward")),
        "the fallback is logged: {errors:#?}"
    );
    // Not black: Bevy's forward path draws the camera now.
    let (mut reference, _) = app_with_camera(Msaa::Off, None);
    let expected = reference.render(6);
    assert_frames_match("tier-after-fallback", &frame, &expected, 60.0, 2);
}

#[test]
fn switching_tiers_a_hundred_times_leaks_nothing() {
    let _test = GpuTest::start("switching_tiers_a_hundred_times_leaks_nothing");
    let (mut headless, camera) = app_with_camera(
        Msaa::Sample4,
        Some(TierSetting::Force(RenderTier::TileDeferred)),
    );
    let settle = |headless: &mut HeadlessApp| {
        for _ in 0..6 {
            headless.update();
        }
    };
    settle(&mut headless);
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let baseline = reports.live_vulkan_objects();
    let tiers = [
        RenderTier::TileDeferredMsaa { samples: 4 },
        RenderTier::Forward,
        RenderTier::Unmerged { samples: 4 },
        RenderTier::TileDeferred,
        RenderTier::Unmerged { samples: 1 },
    ];
    for i in 0..100 {
        let tier = tiers[i % tiers.len()];
        headless
            .app
            .world_mut()
            .get_mut::<TileDeferred>(camera)
            .unwrap()
            .tier = TierSetting::Force(tier);
        headless.update();
    }
    // Back where it started, settled: the same objects as before the switches.
    headless
        .app
        .world_mut()
        .get_mut::<TileDeferred>(camera)
        .unwrap()
        .tier = TierSetting::Force(RenderTier::TileDeferred);
    settle(&mut headless);
    let frame = headless.render(1);
    assert!(
        frame.rgba.chunks_exact(4).any(|p| p[0] > 100),
        "still rendering"
    );
    // Render passes and pipelines of a tier not in use are kept a few frames, then retired.
    for _ in 0..8 {
        headless.update();
    }
    assert_eq!(
        reports.live_vulkan_objects(),
        baseline,
        "live Vulkan objects after 100 tier switches"
    );
}

/// Renders frames until the camera's measurement has chosen a path (at most `frames`), checking
/// that the tile path really rendered the camera while it was timed (its report is new).
fn render_until_chosen(headless: &mut HeadlessApp, camera: Entity, frames: u32) -> TierDecision {
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let mut tile_frames_reported = 0;
    for _ in 0..frames {
        let timing_tile = matches!(
            headless
                .app
                .world()
                .get::<TierDecision>(camera)
                .and_then(|d| d.measured.clone()),
            Some(TierMeasurement::Timing {
                path: MeasuredPath::Tile,
                ..
            })
        );
        let before = reports.get(camera).map(|r| r.frame);
        headless.render(1);
        let report = reports.get(camera);
        if timing_tile && report.as_ref().map(|r| r.frame) != before {
            assert_eq!(report.unwrap().render_passes_recorded, 1);
            tile_frames_reported += 1;
        }
        let decision = headless.app.world().get::<TierDecision>(camera).unwrap();
        if matches!(decision.measured, Some(TierMeasurement::Chosen { .. })) {
            assert!(
                tile_frames_reported > 0,
                "the tile path rendered while it was timed"
            );
            return decision.clone();
        }
    }
    panic!(
        "no choice after {frames} frames: {:?}",
        headless.app.world().get::<TierDecision>(camera)
    );
}

/// On a GPU that is not a tiler (lavapipe, with `MeasureOn::AllButTilers`; by default only real
/// GPUs measure), an `Auto` camera times the tile path and Bevy's `Core3d` on real frames, keeps
/// the faster, says so with both times, and times them again when its view changes a lot.
#[test]
fn an_auto_camera_on_an_immediate_mode_gpu_keeps_the_faster_path() {
    let _test = GpuTest::start("an_auto_camera_on_an_immediate_mode_gpu_keeps_the_faster_path");
    let (mut reference, _) = app_with_camera(Msaa::Sample4, None);
    let expected = reference.render(6);
    let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
    let measure = TileAutoMeasure {
        on: MeasureOn::AllButTilers,
        frames: 6,
        warm_up: 2,
        ..default()
    };

    // The default margin: the faster of the two measured paths is kept.
    let (mut headless, camera) = app_with_camera(Msaa::Sample4, Some(TierSetting::Auto));
    headless
        .app
        .insert_resource(measure)
        .init_resource::<TierChanges>()
        .add_systems(Last, record_tier_changes);
    let decision = render_until_chosen(&mut headless, camera, 120);
    let Some(TierMeasurement::Chosen {
        tile_tier,
        tile_ms,
        core3d_ms,
        tile_chosen,
    }) = decision.measured
    else {
        unreachable!()
    };
    assert_eq!(tile_tier, msaa4);
    assert!(tile_ms > 0.0 && core3d_ms > 0.0, "{decision:?}");
    assert_eq!(tile_chosen, choose(tile_ms, core3d_ms, measure.margin));
    let kept = if tile_chosen {
        msaa4
    } else {
        RenderTier::Forward
    };
    assert_eq!(decision.tier, kept);
    assert!(
        decision.summary().contains(&format!("{tile_ms:.2} ms")),
        "the choice says both times: {}",
        decision.summary()
    );
    println!("measured on lavapipe at 4x: {}", decision.summary());
    // Both paths rendered the camera on the way: the tile tier, Bevy's, then the one kept.
    let changes = &headless.app.world().resource::<TierChanges>().0;
    let tiers: Vec<RenderTier> = changes.iter().map(|c| c.to).collect();
    assert_eq!(&tiers[..2], [msaa4, RenderTier::Forward], "{changes:#?}");
    assert!(
        changes[1..]
            .iter()
            .all(|c| matches!(c.reason, TierChangeReason::Measured(_)))
    );
    let frame = headless.render(3);
    assert_frames_match("auto-measured", &frame, &expected, 34.0, 8);

    // Bevy's path preferred by the margin (faster by any amount of time would do): the switch
    // to Bevy's path, whose picture is Bevy's.
    let (mut headless, camera) = app_with_camera(Msaa::Sample4, Some(TierSetting::Auto));
    headless.app.insert_resource(TileAutoMeasure {
        margin: -1.0e9,
        ..measure
    });
    let decision = render_until_chosen(&mut headless, camera, 120);
    assert_eq!(decision.tier, RenderTier::Forward, "{decision:?}");
    assert!(matches!(
        decision.measured,
        Some(TierMeasurement::Chosen {
            tile_chosen: false,
            ..
        })
    ));
    let frame = headless.render(3);
    assert_frames_match("auto-measured-core3d", &frame, &expected, 60.0, 2);

    // The view changes a lot (three times the meshes in view): both are timed again.
    let world = headless.app.world_mut();
    let meshes: Vec<(Mesh3d, MeshMaterial3d<StandardMaterial>, Transform)> = world
        .query::<(&Mesh3d, &MeshMaterial3d<StandardMaterial>, &Transform)>()
        .iter(world)
        .map(|(mesh, material, transform)| (mesh.clone(), material.clone(), *transform))
        .collect();
    for _ in 0..2 {
        world.spawn_batch(meshes.clone());
    }
    headless.render(2);
    let decision = headless.app.world().get::<TierDecision>(camera).unwrap();
    assert!(
        matches!(decision.measured, Some(TierMeasurement::Timing { .. })),
        "{decision:?}"
    );
    render_until_chosen(&mut headless, camera, 120);
}
