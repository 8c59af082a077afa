//! `ColorGrading` on tile cameras: the tonemap subpass applies what Bevy's in-shader tone
//! mapping applies (the global exposure and post-saturation; an LDR camera ignores the rest in
//! Bevy too), so those cameras stay on the tile path and look as `Core3d` draws them; an HDR
//! camera graded beyond that (hue, white balance, sections), which Bevy's tonemapping pass
//! applies, is listed and falls back. (With bloom, Bevy's own tone mapping grades the tile frame:
//! `bloom.rs`.)

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp, assert_frames_match,
        image_compare::{changes_apart, psnr},
    },
    scenes,
};
use bevy::{
    camera::Hdr,
    prelude::*,
    render::view::{ColorGrading, ColorGradingGlobal, ColorGradingSection, Msaa},
};
use bevy_tile_deferred::{
    TileDeferred,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// The lit spheres under Bevy's reference camera, graded with `grading` (none: the default),
/// rendered by a tile camera of `tier` (none: Bevy's `Core3d`).
fn frame(
    grading: Option<ColorGrading>,
    hdr: bool,
    tier: Option<TierSetting>,
) -> (HeadlessApp, Entity, Frame) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        grading.unwrap_or_default(),
    ));
    let mut entity = headless.app.world_mut().entity_mut(camera);
    if hdr {
        entity.insert(Hdr);
    }
    if let Some(tier) = tier {
        entity.insert(TileDeferred { tier, ..default() });
    }
    headless.use_cpu_light_clustering();
    let frame = headless.render(3);
    (headless, camera, frame)
}

/// A grade of the global exposure and post-saturation, with `sections` for each section.
fn grading(exposure: f32, post_saturation: f32, sections: ColorGradingSection) -> ColorGrading {
    ColorGrading {
        global: ColorGradingGlobal {
            exposure,
            post_saturation,
            ..default()
        },
        shadows: sections,
        midtones: sections,
        highlights: sections,
    }
}

/// Exposure and post-saturation on LDR and HDR tile cameras, and sections on an LDR camera
/// (which Bevy's in-shader tone mapping ignores): nothing listed, the tile path kept, and the
/// frame is Bevy's with the same grade (>= 40 dB, p99.5 <= 8/255), the grade changing it as it
/// changes Bevy's.
#[test]
fn exposure_and_post_saturation_grade_the_tile_frame_as_bevy_grades_it() {
    let _test =
        GpuTest::start("exposure_and_post_saturation_grade_the_tile_frame_as_bevy_grades_it");
    let contrasty = ColorGradingSection {
        contrast: 1.3,
        saturation: 1.2,
        ..default()
    };
    let cases = [
        ("ldr", grading(0.6, 1.5, default()), false),
        ("ldr-sections", grading(0.6, 1.5, contrasty), false),
        ("hdr", grading(-0.4, 0.5, default()), true),
    ];
    for (name, grade, hdr) in cases {
        let name = format!("grading-{name}");
        let tile_tier = Some(TierSetting::Force(RenderTier::TileDeferred));
        let (headless, camera, tile) = frame(Some(grade.clone()), hdr, tile_tier);
        let world = headless.app.world();
        let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
        assert!(tier.is_tile(), "{name}: {tier:?}");
        let listed = world
            .get::<TileMissing>(camera)
            .map(|missing| missing.items.clone())
            .unwrap_or_default();
        assert!(listed.is_empty(), "{name}: {listed:?}");
        let (_, _, bevy) = frame(Some(grade), hdr, None);
        let (_, _, tile_plain) = frame(None, hdr, tile_tier);
        let (_, _, bevy_plain) = frame(None, hdr, None);
        let path = tile.save_png(&name);
        let (bevy_changed, apart) = changes_apart(&tile_plain, &tile, &bevy_plain, &bevy);
        eprintln!(
            "{name}: the tile camera against Bevy's: PSNR {:.2} dB; the grade changes Bevy's \
             frame by {bevy_changed:.3}/255 per channel on average, the tile frame's change is \
             {apart:.3}/255 from Bevy's ({})",
            psnr(&tile, &bevy),
            path.display()
        );
        assert_frames_match(&name, &tile, &bevy, 40.0, 8);
        assert!(bevy_changed > 5.0, "{name}: the grade changes too little");
        assert!(
            apart < 0.05 * bevy_changed,
            "{name}: the tile frame's change ({apart:.3}/255 from Bevy's) is not Bevy's \
             ({bevy_changed:.3}/255)"
        );
    }
}

/// An HDR camera with a hue rotation, which Bevy's tonemapping pass applies and the tonemap
/// subpass does not: listed by name, and an `Auto` camera falls back to `Core3d`.
#[test]
fn hdr_grading_beyond_exposure_is_listed_and_falls_back() {
    let _test = GpuTest::start("hdr_grading_beyond_exposure_is_listed_and_falls_back");
    let mut hue = ColorGrading::default();
    hue.global.hue = 0.5;
    let (headless, camera, _) = frame(Some(hue), true, Some(TierSetting::Auto));
    let world = headless.app.world();
    let listed: Vec<String> = world
        .get::<TileMissing>(camera)
        .map(|missing| missing.items.iter().map(|item| item.what.clone()).collect())
        .unwrap_or_default();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].starts_with("colour grading"), "{listed:?}");
    let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
    assert_eq!(tier, RenderTier::Forward);
}
