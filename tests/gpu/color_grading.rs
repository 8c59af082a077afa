//! `ColorGrading` on tile cameras: the tonemap subpass applies what Bevy's in-shader tone
//! mapping applies (the global exposure and post-saturation; an LDR camera ignores the rest in
//! Bevy too), so those cameras stay on the tile path and look as `Core3d` draws them; on an HDR
//! camera graded beyond that (hue, white balance, sections), the tile pass stores the light and
//! Bevy's own tonemapping pass grades it after the pass, as `Core3d` does. (With bloom, the tone
//! mapping after the bloom grades the tile frame: `bloom.rs`.)

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp, assert_frames_match,
        image_compare::{EffectBounds, assert_effect_as_in_bevy, psnr},
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
    frame_graph::Format,
    tiers::{RenderTier, TierSetting},
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
    frame_at(grading, hdr, Msaa::Off, tier)
}

/// [`frame`] at `msaa`.
fn frame_at(
    grading: Option<ColorGrading>,
    hdr: bool,
    msaa: Msaa,
    tier: Option<TierSetting>,
) -> (HeadlessApp, Entity, Frame) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        msaa,
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
        headless.tile_report_with_nothing_missing(camera, &name);
        let (_, _, bevy) = frame(Some(grade), hdr, None);
        let (_, _, tile_plain) = frame(None, hdr, tile_tier);
        let (_, _, bevy_plain) = frame(None, hdr, None);
        let frames = [&tile, &bevy, &tile_plain, &bevy_plain];
        assert_effect_as_in_bevy(&name, "the grade", frames, graded(0.05), "");
    }
}

/// An HDR camera with `Tonemapping::None`: Bevy skips its tonemapping pass, so `Core3d` neither
/// grades nor dithers the frame, whatever its `ColorGrading`; the tile frame is Bevy's (>= 40
/// dB, p99.5 <= 8/255), not graded by the tonemap subpass (which would have doubled it here).
#[test]
fn an_hdr_camera_without_tone_mapping_is_not_graded_as_in_bevy() {
    use bevy::core_pipeline::tonemapping::Tonemapping;
    let _test = GpuTest::start("an_hdr_camera_without_tone_mapping_is_not_graded_as_in_bevy");
    let name = "grading-hdr-tonemapping-none";
    let tile_tier = Some(TierSetting::Force(RenderTier::TileDeferred));
    let render = |tier: Option<TierSetting>, graded: bool| {
        let grade = graded.then(|| grading(1.0, 0.4, default()));
        let (mut headless, camera, _) = frame(grade, true, tier);
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .insert(Tonemapping::None);
        let frame = headless.render(3);
        (headless, camera, frame)
    };
    let (headless, camera, tile) = render(tile_tier, true);
    headless.tile_report_with_nothing_missing(camera, name);
    let (_, _, bevy) = render(None, true);
    let (_, _, bevy_plain) = render(None, false);
    let path = tile.save_png(name);
    eprintln!(
        "{name}: the tile camera against Bevy's: PSNR {:.2} dB; Bevy's against its frame without \
         the grade: {:.2} dB ({})",
        psnr(&tile, &bevy),
        psnr(&bevy, &bevy_plain),
        path.display()
    );
    assert_frames_match(name, &tile, &bevy, 40.0, 8);
}

/// The grades' bounds: a grade changes Bevy's frame by more than 5/255 per channel on average,
/// and the tile frame's change is within `apart_fraction` of Bevy's.
fn graded(apart_fraction: f64) -> EffectBounds {
    EffectBounds {
        min_bevy_change: 5.0,
        apart_fraction,
    }
}

/// HDR cameras graded beyond exposure and post-saturation (a hue rotation; a warm, contrasty
/// grade touching the white balance and every section), at 1x and 4x MSAA: each `Auto` camera
/// stays on the tile path with nothing listed, its tile frame is one render pass storing the
/// light at the main texture's HDR format, the report names and prices Bevy's tone mapping and
/// blit after it, and the frame is Bevy's `Core3d` frame with the same grade (>= 40 dB, p99.5 <=
/// 8/255), the grade changing it as it changes Bevy's.
#[test]
fn hdr_grading_beyond_exposure_is_graded_by_bevy_after_the_tile_pass() {
    let _test = GpuTest::start("hdr_grading_beyond_exposure_is_graded_by_bevy_after_the_tile_pass");
    let mut hue = ColorGrading::default();
    hue.global.hue = 2.0;
    let section = ColorGradingSection {
        saturation: 1.2,
        contrast: 1.15,
        gamma: 0.95,
        ..default()
    };
    let warm = ColorGrading {
        global: ColorGradingGlobal {
            exposure: 0.25,
            temperature: 0.2,
            tint: -0.05,
            post_saturation: 1.1,
            ..default()
        },
        shadows: section,
        midtones: section,
        highlights: section,
    };
    let cases = [
        ("hue-1x", hue, Msaa::Off),
        ("warm-1x", warm.clone(), Msaa::Off),
        ("warm-4x", warm, Msaa::Sample4),
    ];
    for (name, grade, msaa) in cases {
        let name = format!("hdr-grading-{name}");
        let auto = Some(TierSetting::Auto);
        let (headless, camera, tile) = frame_at(Some(grade.clone()), true, msaa, auto);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        assert_eq!(report.post_processing, ["ColorGrading"], "{name}");
        assert_eq!(report.render_passes_recorded, 1, "{name}");
        let output = report
            .compiled
            .attachment_named("output")
            .expect("the tile frame's output");
        assert_eq!(output.format, Format::Rgba16Float, "{name}");
        let priced = report
            .post_process_pass
            .as_ref()
            .expect("the tone mapping and blit are priced");
        // Bevy's tone mapping (main texture to the other one), then the blit to the output.
        assert_eq!(priced.render_pass_count(), 2, "{}", priced.describe());
        let tile_bytes = report.compiled.cost.bytes();
        let after_bytes = priced.cost.bytes();

        let (_, _, bevy) = frame_at(Some(grade), true, msaa, None);
        let (_, _, tile_plain) = frame_at(None, true, msaa, auto);
        let (_, _, bevy_plain) = frame_at(None, true, msaa, None);
        let traffic = format!(
            "; traffic: tile frame {tile_bytes} B, Bevy's tone mapping and blit after it \
             {after_bytes} B"
        );
        let frames = [&tile, &bevy, &tile_plain, &bevy_plain];
        assert_effect_as_in_bevy(&name, "the grade", frames, graded(0.1), &traffic);
    }
}
