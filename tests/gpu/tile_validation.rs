//! Tile validation on a desktop (issue 33): a tile camera with `TileValidation` gets each frame
//! what a chosen device would do with its frame, without that device. Validated against the
//! device it runs on (lavapipe), the report is what the tile path really did: its tier, render
//! passes, breaks and traffic. Against phone profiles, what their tier rules and tile budgets
//! give the showcase: Bevy's forward path on Xclipse, one binned render pass without MSAA on an
//! Adreno 6xx, 4x MSAA on an Adreno 7xx, Bevy's forward path on a 128-bit Mali. The camera
//! itself renders as before.

use crate::{
    harness::{GpuTest, HeadlessApp},
    scenes,
};
use bevy::{prelude::*, render::view::Msaa};
use bevy_tile_deferred::{
    DeviceProfile, TileDeferred, TileRenderReports, TileValidation, TileValidationReport,
    tiers::{RenderTier, TierDecision, TierSetting, choose_tier},
    tile_deferred::validation::tile_path_requirements,
};

const WIDTH: u32 = 480;
const HEIGHT: u32 = 270;

/// Puts `validation` on `camera`, runs a frame, and returns its report.
fn validate(
    headless: &mut HeadlessApp,
    camera: Entity,
    validation: TileValidation,
) -> TileValidationReport {
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(validation);
    headless.update();
    headless
        .app
        .world()
        .get::<TileValidationReport>(camera)
        .expect("a validated camera has a report")
        .clone()
}

#[test]
fn tile_validation_reports_what_each_device_would_do_with_the_showcase() {
    let test =
        GpuTest::start("tile_validation_reports_what_each_device_would_do_with_the_showcase");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_showcase(headless.app.world_mut(), 12);
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Sample4,
        TileDeferred::default(),
    ));
    headless.render(3);
    let world = headless.app.world();
    let here = world.resource::<DeviceProfile>().clone();
    let decision = world.get::<TierDecision>(camera).expect("decided").clone();
    let frame = world
        .resource::<TileRenderReports>()
        .get(camera)
        .expect("a tile frame");
    assert_eq!(decision.tier, RenderTier::TileDeferredMsaa { samples: 4 });

    // The device it runs on: the report is the frame the tile path recorded.
    let report = validate(
        &mut headless,
        camera,
        TileValidation {
            device: here.clone(),
        },
    );
    assert_eq!(report.device, here.device_name);
    assert_eq!(report.tier, decision.tier);
    assert_eq!(report.failure, None);
    assert_eq!(report.render_passes, frame.render_passes_recorded);
    assert_eq!(report.render_passes, frame.compiled.render_pass_count());
    let breaks: Vec<String> = frame
        .compiled
        .breaks
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(report.breaks, breaks);
    assert_eq!(report.bytes_per_frame, frame.compiled.cost.bytes());
    assert!(report.stays_on_tile(), "{report:#?}");

    // Phones: what their rules and tile budgets give the same frame at 4x.
    let requirements = tile_path_requirements();
    for name in [
        "Samsung Xclipse 920",
        "Adreno (TM) 610",
        "Adreno (TM) 750",
        "Mali-T880",
        "Mali-G57",
        "PowerVR Rogue GE8320",
    ] {
        let validation = TileValidation::phone(name).expect("a listed phone");
        let rules = choose_tier(&validation.device, &requirements, 4, TierSetting::Auto);
        let report = validate(&mut headless, camera, validation);
        assert_eq!(report.device, name);
        assert_eq!(report.tier_reasons, rules.reasons, "{name}");
        match name {
            "Samsung Xclipse 920" => {
                assert_eq!(report.tier, RenderTier::Forward, "{name}");
                assert_eq!(report.render_passes, 0, "{name}");
            }
            "Adreno (TM) 610" | "PowerVR Rogue GE8320" => {
                // No tile MSAA there by the rules: one render pass at 1x.
                assert_eq!(report.tier, RenderTier::TileDeferred, "{name}");
                assert!(report.stays_on_tile(), "{name}: {report:#?}");
            }
            "Adreno (TM) 750" => {
                assert_eq!(report.tier, rules.tier, "{name}");
                assert_eq!(report.tier, RenderTier::TileDeferredMsaa { samples: 4 });
                assert!(report.tile_use[0].contains("bins"), "{report:#?}");
                assert!(report.stays_on_tile(), "{name}: {report:#?}");
            }
            "Mali-T880" => {
                // 128 bits of tile colour per pixel cannot hold the merged G-buffer and
                // lighting (160): the rules prefer Bevy's forward path there.
                assert_eq!(report.tier, RenderTier::Forward, "{name}");
                assert_eq!(report.tier, rules.tier, "{name}");
                assert!(
                    report
                        .tier_reasons
                        .iter()
                        .any(|reason| reason.contains("tile colour budget")),
                    "{name}: {report:#?}"
                );
                assert!(!report.stays_on_tile());
            }
            "Mali-G57" => {
                // 4x would not fit 256 bits per pixel: the tile path lowers it.
                assert_eq!(report.tier, rules.tier, "{name}");
                assert_eq!(report.render_passes, 1, "{name}");
                assert!(report.msaa_lowered.is_some(), "{name}: {report:#?}");
            }
            _ => unreachable!(),
        }
        assert!(report.texture_reads_in_pass.is_empty(), "{name}");
        eprintln!(
            "{name}: {}, {} render passes{}{}",
            report.tier,
            report.render_passes,
            report.failure.as_deref().map_or(String::new(), |f| format!(
                "; {}",
                f.lines().next().unwrap_or("")
            )),
            report
                .msaa_lowered
                .as_deref()
                .map_or(String::new(), |m| format!("; {m}")),
        );
    }

    // Validation changes nothing the camera renders.
    let world = headless.app.world();
    assert_eq!(
        world.get::<TierDecision>(camera).map(|d| d.tier),
        Some(decision.tier)
    );
    let frame_after = world.resource::<TileRenderReports>().get(camera).unwrap();
    assert_eq!(frame_after.compiled, frame.compiled);
    // Removed: the report goes with it.
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .remove::<TileValidation>();
    headless.update();
    assert!(
        headless
            .app
            .world()
            .get::<TileValidationReport>(camera)
            .is_none()
    );
    assert!(test.take_errors().is_empty());
}
