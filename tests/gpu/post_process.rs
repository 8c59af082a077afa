//! Bevy's FXAA, SMAA and contrast-adaptive sharpening after the tile pass (feature
//! `anti_alias`, issue 32): a tile camera with one of them stays on the tile path, its tile pass
//! writes the main texture, Bevy's own effect and blit run after it, and the frame is Bevy's
//! `Core3d` frame with the same effect.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp, assert_frames_match,
        image_compare::{EffectBounds, assert_effect_as_in_bevy, psnr},
    },
    scenes,
};
use bevy::{camera::Hdr, prelude::*, render::view::Msaa};
use bevy_anti_alias::{
    contrast_adaptive_sharpening::{CasPlugin, ContrastAdaptiveSharpening},
    fxaa::{Fxaa, FxaaPlugin},
    smaa::{Smaa, SmaaPlugin},
};
use bevy_tile_deferred::{
    TileDeferred, TileRenderReports,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// The effects a case puts on its camera.
#[derive(Clone, Copy, Debug)]
enum Effects {
    None,
    Fxaa,
    Smaa,
    Cas,
    FxaaAndCas,
}

impl Effects {
    fn names(self) -> &'static [&'static str] {
        match self {
            Self::None => &[],
            Self::Fxaa => &["Fxaa"],
            Self::Smaa => &["Smaa"],
            Self::Cas => &["ContrastAdaptiveSharpening"],
            Self::FxaaAndCas => &["Fxaa", "ContrastAdaptiveSharpening"],
        }
    }

    fn insert(self, camera: &mut EntityWorldMut) {
        let cas = ContrastAdaptiveSharpening {
            enabled: true,
            sharpening_strength: 0.9,
            ..default()
        };
        match self {
            Self::None => {}
            Self::Fxaa => {
                camera.insert(Fxaa::default());
            }
            Self::Smaa => {
                camera.insert(Smaa::default());
            }
            Self::Cas => {
                camera.insert(cas);
            }
            Self::FxaaAndCas => {
                camera.insert((Fxaa::default(), cas));
            }
        }
    }
}

/// Lit spheres under Bevy's reference camera, with the effect plugins in the app (as Bevy's
/// `DefaultPlugins` has them with its `bevy_anti_alias` feature), rendered by a tile camera
/// (`tile`) or Bevy's `Core3d`.
fn frame(effects: Effects, tile: bool, hdr: bool, msaa: Msaa) -> (HeadlessApp, Entity, Frame) {
    frame_with(effects, tile, hdr, msaa, |_, _| {})
}

/// [`frame`], with `add` spawning more into the world (given the camera) before the first frame.
fn frame_with(
    effects: Effects,
    tile: bool,
    hdr: bool,
    msaa: Msaa,
    add: impl FnOnce(&mut World, Entity),
) -> (HeadlessApp, Entity, Frame) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless
        .app
        .add_plugins((FxaaPlugin, SmaaPlugin, CasPlugin));
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        msaa,
    ));
    let mut entity = headless.app.world_mut().entity_mut(camera);
    effects.insert(&mut entity);
    if hdr {
        entity.insert(Hdr);
    }
    if tile {
        entity.insert(TileDeferred {
            tier: TierSetting::Force(if msaa.samples() > 1 {
                RenderTier::TileDeferredMsaa {
                    samples: msaa.samples(),
                }
            } else {
                RenderTier::TileDeferred
            }),
            ..default()
        });
    }
    add(headless.app.world_mut(), camera);
    headless.use_cpu_light_clustering();
    let frame = headless.render(3);
    (headless, camera, frame)
}

/// Each effect, and FXAA with CAS after it, on LDR and HDR cameras and with 4x MSAA: the camera
/// stays on the tile path with nothing listed, its report names the effects run after the pass
/// and prices them, and the frame is Bevy's frame with the same effects (>= 40 dB, p99.5 <=
/// 8/255); what the effects change in the tile frame is what they change in Bevy's (so they ran,
/// on the tile frame).
#[test]
fn fxaa_smaa_and_cas_run_after_the_tile_pass_as_bevy_runs_them() {
    let _test = GpuTest::start("fxaa_smaa_and_cas_run_after_the_tile_pass_as_bevy_runs_them");
    let cases = [
        (Effects::Fxaa, false, Msaa::Off),
        (Effects::Fxaa, true, Msaa::Off),
        (Effects::Smaa, false, Msaa::Off),
        (Effects::Cas, false, Msaa::Off),
        (Effects::Cas, true, Msaa::Sample4),
        (Effects::FxaaAndCas, false, Msaa::Off),
    ];
    for (effects, hdr, msaa) in cases {
        let name = format!("post-{effects:?}-hdr-{hdr}-{}x", msaa.samples());
        let (headless, camera, tile) = frame(effects, true, hdr, msaa);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        assert_eq!(report.post_processing, effects.names(), "{name}");
        let priced = report
            .post_process_pass
            .as_ref()
            .expect("the effects are priced");
        // One pass per effect (SMAA: three) and the blit, each a pass of its own.
        let passes = effects
            .names()
            .iter()
            .map(|effect| if *effect == "Smaa" { 3 } else { 1 })
            .sum::<usize>()
            + 1;
        assert_eq!(priced.render_pass_count(), passes, "{}", priced.describe());
        // The tile frame itself is still one render pass that stores one image.
        assert_eq!(report.render_passes_recorded, 1, "{name}");

        let (_, _, bevy) = frame(effects, false, hdr, msaa);
        let (_, _, tile_plain) = frame(Effects::None, true, hdr, msaa);
        let (_, _, bevy_plain) = frame(Effects::None, false, hdr, msaa);
        // The effects ran on the tile frame, and changed it as they changed Bevy's: not changing
        // it would leave it Bevy's whole change away. Well under Bevy's whole change: FXAA and
        // SMAA land within 6% of it; CAS sharpens the small differences the two frames had
        // before it too (dither, edges), and lands at 56%.
        assert_effect_as_in_bevy(
            &name,
            "the effects",
            [&tile, &bevy, &tile_plain, &bevy_plain],
            EffectBounds {
                min_bevy_change: 0.05,
                apart_fraction: 0.7,
            },
            "",
        );
    }
}

/// Without the effect's plugin in the app, the effect is not run after the pass: the camera
/// falls back, with the effect listed, as before the feature.
#[test]
fn an_effect_without_its_plugin_is_listed_and_falls_back() {
    let _test = GpuTest::start("an_effect_without_its_plugin_is_listed_and_falls_back");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.app.add_plugins(FxaaPlugin);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        ContrastAdaptiveSharpening {
            enabled: true,
            ..default()
        },
        TileDeferred::default(),
    ));
    headless.render(3);
    let world = headless.app.world();
    let listed: Vec<String> = world
        .get::<TileMissing>(camera)
        .map(|missing| missing.items.iter().map(|item| item.what.clone()).collect())
        .unwrap_or_default();
    assert_eq!(
        listed,
        ["post-processing: ContrastAdaptiveSharpening"],
        "CAS without CasPlugin"
    );
    let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
    assert_eq!(tier, RenderTier::Forward);
}

/// A HUD (bevy_ui, feature `ui`) over a tile camera with FXAA: Bevy draws its UI after FXAA, so
/// the UI goes after the tile pass and its effects, drawn over the output after the blit (the
/// report says why), and the frame is Bevy's `Core3d` frame with FXAA and the same HUD.
#[cfg(feature = "ui")]
#[test]
fn a_hud_over_a_post_processed_tile_camera_is_drawn_after_the_effects() {
    let _test =
        GpuTest::start("a_hud_over_a_post_processed_tile_camera_is_drawn_after_the_effects");
    let hud = |world: &mut World, camera: Entity| {
        let root = world
            .spawn((
                Node {
                    width: percent(100),
                    height: percent(100),
                    ..default()
                },
                bevy::ui::UiTargetCamera(camera),
            ))
            .id();
        world.spawn((
            Node {
                position_type: PositionType::Absolute,
                left: px(12),
                top: px(12),
                width: px(120),
                height: px(50),
                border: UiRect::all(px(4)),
                border_radius: BorderRadius::all(px(10)),
                ..default()
            },
            BackgroundColor(Color::srgba(0.05, 0.1, 0.3, 0.7)),
            BorderColor::all(Color::srgb(1.0, 0.85, 0.1)),
            ChildOf(root),
        ));
        world.spawn((
            Text::new("HP 42"),
            TextFont {
                font_size: 22.0.into(),
                ..default()
            },
            TextColor(Color::WHITE),
            Node {
                position_type: PositionType::Absolute,
                left: px(20),
                bottom: px(16),
                ..default()
            },
            ChildOf(root),
        ));
    };
    let (headless, camera, tile) = frame_with(Effects::Fxaa, true, false, Msaa::Off, hud);
    let world = headless.app.world();
    let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
    assert!(tier.is_tile(), "{tier:?}");
    let report = world
        .resource::<TileRenderReports>()
        .get(camera)
        .expect("a report");
    assert_eq!(report.post_processing, ["Fxaa"]);
    assert!(report.ui_pass.is_some(), "the HUD is drawn after the pass");
    let reason = report.ui_after_pass_reason.clone().unwrap_or_default();
    assert!(reason.contains("FXAA"), "{reason}");
    let (_, _, bevy) = frame_with(Effects::Fxaa, false, false, Msaa::Off, hud);
    let path = tile.save_png("post-fxaa-hud");
    eprintln!(
        "post-fxaa-hud: the tile camera against Bevy's: PSNR {:.2} dB ({})",
        psnr(&tile, &bevy),
        path.display()
    );
    assert_frames_match("post-fxaa-hud", &tile, &bevy, 40.0, 8);
}
