//! Injected faults (issue 17): one Vulkan call of a tile view fails on purpose — the memory of
//! each attachment image the crate allocates, each pipeline creation, each descriptor set
//! allocation (pool exhausted: counted over the view's sets; every material pool, the one the
//! crate adds for the occasion included), the submission of the view's command buffer. Each time the
//! camera falls back with the reason logged, the next frame renders, nothing panics, the
//! validation layer reports nothing (the harness fails the test on any error but the logged
//! fallback), and once the camera is gone the crate holds exactly the Vulkan objects it held
//! before.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp},
    scenes,
};
use bevy::{prelude::*, render::RenderApp, render::view::Msaa};
use bevy_tile_deferred::{
    TileDeferred, TileFaultInjection, TileRenderReports,
    tiers::TierDecision,
    vulkan::{FaultOutcome, TileFault},
};

const WIDTH: u32 = 160;
const HEIGHT: u32 = 96;

fn tile_camera(msaa: Msaa) -> impl Bundle {
    (
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        msaa,
        TileDeferred::default(),
    )
}

/// Frames until views, passes and pipelines no camera uses are retired and destroyed.
fn settle(headless: &mut HeadlessApp) {
    for _ in 0..8 {
        headless.update();
    }
}

/// A lit-spheres frame, not a black or clear-only one.
fn assert_rendered(name: &str, frame: &Frame) {
    let pixels = (frame.width * frame.height) as usize;
    let lit = frame
        .rgba
        .chunks_exact(4)
        .filter(|p| u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]) > 45)
        .count();
    let red = frame.rgba.chunks_exact(4).filter(|p| p[0] > 100).count();
    assert!(
        lit >= pixels * 9 / 10 && red > 0,
        "{name}: not a rendered frame ({lit} of {pixels} lit, {red} reddish); image: {}",
        frame.save_png(name).display()
    );
}

/// Arms `fault`, spawns a fresh tile camera (so that its render passes, pipelines, attachments
/// and descriptor sets are all created) and checks what follows. Returns false when the view
/// never reached the fault's point (a counting fault past the last such call).
fn inject(
    test: &GpuTest,
    headless: &mut HeadlessApp,
    injection: &TileFaultInjection,
    fault: TileFault,
    msaa: Msaa,
) -> bool {
    let name = format!("{fault:?} {msaa:?}");
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let baseline = reports.resource_counts();
    injection.arm(fault.clone());
    if fault == TileFault::MaterialPoolsExhausted {
        // Material sets outlive views: a changed material has its set built again, in the
        // new camera's first view.
        touch_a_material(headless);
    }
    let camera = headless.spawn_camera(tile_camera(msaa));
    // The camera's first tile view comes a frame or two after its spawn.
    for _ in 0..5 {
        headless.update();
        if injection.outcome() != FaultOutcome::Armed {
            break;
        }
    }
    let outcome = injection.outcome();
    let struck = match outcome {
        FaultOutcome::Struck(_) => true,
        FaultOutcome::Missed => false,
        other => panic!("{name}: the fault neither struck nor missed: {other:?}"),
    };
    // The next frames render: through the lower tier after a fault, the tile path otherwise.
    let frame = headless.render(1);
    assert_rendered(&name, &frame);
    let decision = headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .cloned()
        .expect("a tile camera has a decision");
    let errors = test.take_errors();
    if struck {
        let failure = decision.failure.clone().unwrap_or_default();
        assert!(
            !failure.is_empty(),
            "{name}: the camera did not fall back: {decision:?}"
        );
        assert!(
            errors.len() == 1 && errors[0].contains("falling back") && errors[0].contains(&failure),
            "{name}: one logged fallback with its reason, nothing else: {errors:#?}"
        );
        eprintln!("{name}: {}", errors[0]);
        // Clear the (sticky) failure: the camera goes back to the tile path and renders.
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .remove::<TierDecision>();
        let frame = headless.render(2);
        assert_rendered(&format!("{name} recovered"), &frame);
        let decision = headless.app.world().get::<TierDecision>(camera).cloned();
        assert!(
            decision
                .as_ref()
                .is_some_and(|d| d.failure.is_none() && d.tier.is_tile()),
            "{name}: back on the tile path: {decision:?}"
        );
    } else {
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        assert!(decision.failure.is_none(), "{name}: {decision:?}");
    }
    assert!(
        reports.get(camera).is_some(),
        "{name}: the tile path rendered the camera"
    );
    headless.app.world_mut().despawn(camera);
    settle(headless);
    let after = reports.resource_counts();
    assert!(
        after.growth_since(&baseline).is_empty()
            && after.vulkan_objects() == baseline.vulkan_objects(),
        "{name}: leaked: {:?} (before {baseline:?}, after {after:?})",
        after.growth_since(&baseline)
    );
    struck
}

/// Changes one of the scene's materials a little (its reflectance, back and forth), so that
/// its set is rebuilt (an unchanged material keeps its set).
fn touch_a_material(headless: &mut HeadlessApp) {
    let mut materials = headless
        .app
        .world_mut()
        .resource_mut::<Assets<StandardMaterial>>();
    let id = materials.ids().next().expect("the scene has materials");
    let mut material = materials.get_mut(id).expect("the material exists");
    material.reflectance = if material.reflectance == 0.5 {
        0.52
    } else {
        0.5
    };
}

/// Every fault point, without and with MSAA, one at a time in one app.
#[test]
fn injected_faults_fall_back_render_the_next_frame_and_leak_nothing() {
    let test = GpuTest::start("injected_faults_fall_back_render_the_next_frame_and_leak_nothing");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let injection = TileFaultInjection::default();
    headless
        .app
        .sub_app_mut(RenderApp)
        .insert_resource(injection.clone());
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    for msaa in [Msaa::Off, Msaa::Sample4] {
        // A first camera creates what outlives views (layouts, shaders, materials); its report
        // names the attachments the crate allocates.
        let camera = headless.spawn_camera(tile_camera(msaa));
        headless.render(2);
        let report = reports.get(camera).expect("the tile path rendered");
        let attachments: Vec<String> = report
            .attachments
            .iter()
            .filter(|a| a.image_usage.is_some())
            .map(|a| a.name.clone())
            .collect();
        assert!(attachments.len() >= 3, "{attachments:?}");
        headless.app.world_mut().despawn(camera);
        settle(&mut headless);

        let mut struck = Vec::new();
        for fault in [
            TileFault::FrameStart,
            TileFault::Submit,
            TileFault::MaterialPoolsExhausted,
        ]
        .into_iter()
        .chain(
            attachments
                .iter()
                .cloned()
                .map(TileFault::AttachmentAllocation),
        ) {
            assert!(
                inject(&test, &mut headless, &injection, fault.clone(), msaa),
                "{fault:?} {msaa:?}: never reached"
            );
            struck.push(fault);
        }
        let counting: [fn(u32) -> TileFault; 2] = [
            TileFault::PipelineCreation,
            TileFault::DescriptorPoolExhausted,
        ];
        for make in counting {
            let mut reached = 0;
            while inject(&test, &mut headless, &injection, make(reached), msaa) {
                struck.push(make(reached));
                reached += 1;
                assert!(reached < 32, "{:?}: never missed", make(reached));
            }
            assert!(reached > 0, "{:?} {msaa:?}: never reached", make(0));
        }
        eprintln!("{msaa:?}: {} faults injected: {struck:?}", struck.len());
    }
}
