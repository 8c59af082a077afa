//! Bevy's bloom after the tile pass (feature `bloom`, issue 32): a tile camera with `Bloom`
//! stays on the tile path, its tile pass stores the camera's HDR light (not tone mapped) in the
//! main texture, Bevy's own bloom, tone mapping and blit run after it, and the frame is Bevy's
//! `Core3d` frame with the same bloom. The scene is Bevy's `bloom_3d` example's: bright emissive
//! spheres (here beside the lit spheres), TonyMcMapface, `Bloom::NATURAL`.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp,
        image_compare::{EffectBounds, assert_effect_as_in_bevy},
    },
    scenes,
};
use bevy::{
    camera::Hdr,
    core_pipeline::tonemapping::Tonemapping,
    prelude::*,
    render::view::{ColorGrading, ColorGradingGlobal, ColorGradingSection, Msaa},
};
use bevy_post_process::bloom::{Bloom, BloomPlugin};
use bevy_tile_deferred::{
    TileDeferred,
    frame_graph::Format,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// Bevy's bloom mips at this size (`Bloom::max_mip_dimension` 512: 8 mips).
const BLOOM_MIPS: usize = 8;

/// Bevy's bloom presets a case uses.
#[derive(Clone, Copy, Debug, PartialEq)]
enum BloomKind {
    None,
    /// `Bloom::NATURAL`: energy-conserving.
    Natural,
    /// `Bloom::OLD_SCHOOL`: additive, with a prefilter threshold.
    OldSchool,
}

impl BloomKind {
    fn settings(self) -> Option<Bloom> {
        match self {
            Self::None => None,
            Self::Natural => Some(Bloom::NATURAL),
            Self::OldSchool => Some(Bloom::OLD_SCHOOL),
        }
    }
}

/// What a case puts on its camera.
#[derive(Clone, Copy, Debug)]
struct Case {
    bloom: BloomKind,
    msaa: Msaa,
    /// FXAA after the tone mapping (feature `anti_alias`).
    fxaa: bool,
    /// A `ColorGrading` other than the default, which Bevy's tone mapping applies.
    graded: bool,
}

impl Case {
    fn name(self) -> String {
        let fxaa = if self.fxaa { "-fxaa" } else { "" };
        let graded = if self.graded { "-graded" } else { "" };
        format!(
            "bloom-{:?}{fxaa}{graded}-{}x",
            self.bloom,
            self.msaa.samples()
        )
    }

    /// The case without what it tests: the grading where it grades, otherwise the bloom.
    fn without_tested_effect(self) -> Self {
        if self.graded {
            Self {
                graded: false,
                ..self
            }
        } else {
            Self {
                bloom: BloomKind::None,
                ..self
            }
        }
    }
}

/// The scene of Bevy's `bloom_3d` example beside the lit spheres, with `BloomPlugin` in the
/// app (as Bevy's `DefaultPlugins` has it with its `bevy_post_process` feature), rendered by a
/// tile camera (`tile`) or Bevy's `Core3d`.
fn frame(case: Case, tile: bool) -> (HeadlessApp, Entity, Frame) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.app.add_plugins(BloomPlugin);
    #[cfg(feature = "anti_alias")]
    headless.app.add_plugins(bevy_anti_alias::fxaa::FxaaPlugin);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    spawn_emissive_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Hdr,
        Tonemapping::TonyMcMapface,
        case.msaa,
    ));
    let mut entity = headless.app.world_mut().entity_mut(camera);
    if let Some(bloom) = case.bloom.settings() {
        entity.insert(bloom);
    }
    if case.graded {
        entity.insert(warm_grading());
    }
    #[cfg(feature = "anti_alias")]
    if case.fxaa {
        entity.insert(bevy_anti_alias::fxaa::Fxaa::default());
    }
    if tile {
        entity.insert(TileDeferred {
            tier: TierSetting::Force(if case.msaa.samples() > 1 {
                RenderTier::TileDeferredMsaa {
                    samples: case.msaa.samples(),
                }
            } else {
                RenderTier::TileDeferred
            }),
            ..default()
        });
    }
    headless.use_cpu_light_clustering();
    let frame = headless.render(3);
    (headless, camera, frame)
}

/// A warm, contrasty grade touching every part of Bevy's colour grading.
fn warm_grading() -> ColorGrading {
    let section = ColorGradingSection {
        saturation: 1.2,
        contrast: 1.15,
        gamma: 0.95,
        ..default()
    };
    ColorGrading {
        global: ColorGradingGlobal {
            exposure: 0.25,
            temperature: 0.2,
            tint: -0.05,
            hue: 0.1,
            post_saturation: 1.1,
            ..default()
        },
        shadows: section,
        midtones: section,
        highlights: section,
    }
}

/// `bloom_3d`'s emissive spheres: far brighter than 1, so that they bloom.
fn spawn_emissive_spheres(world: &mut World) {
    let sphere = world
        .resource_mut::<Assets<Mesh>>()
        .add(Sphere::new(0.35).mesh().uv(32, 16));
    let colours = [
        LinearRgba::rgb(13.99, 5.32, 2.0),
        LinearRgba::rgb(2.0, 13.99, 5.32),
        LinearRgba::rgb(5.32, 2.0, 13.99),
    ];
    for (i, emissive) in colours.into_iter().enumerate() {
        let material = world
            .resource_mut::<Assets<StandardMaterial>>()
            .add(StandardMaterial {
                emissive,
                ..default()
            });
        world.spawn((
            Mesh3d(sphere.clone()),
            MeshMaterial3d(material),
            Transform::from_xyz(-2.0 + 2.0 * i as f32, 2.6, 0.5),
        ));
    }
}

/// Bloom in both composite modes, with 4x MSAA, and with FXAA after it: the camera stays on the
/// tile path with nothing listed, its tile pass stores the HDR light in the main texture in one
/// render pass, the report names and prices the bloom, Bevy's tone mapping and the blit, and the
/// frame is Bevy's frame with the same bloom (>= 40 dB, p99.5 <= 8/255); what the bloom changes
/// in the tile frame is what it changes in Bevy's (so it ran, on the tile frame's light). With
/// colour grading, which Bevy's tone mapping applies after the bloom, the camera stays on the
/// tile path too, and the grade changes the frame as it changes Bevy's.
#[test]
fn bloom_runs_after_the_tile_pass_as_bevy_runs_it() {
    let _test = GpuTest::start("bloom_runs_after_the_tile_pass_as_bevy_runs_it");
    #[cfg_attr(not(feature = "anti_alias"), allow(unused_mut))]
    let mut cases = vec![
        Case {
            bloom: BloomKind::Natural,
            msaa: Msaa::Off,
            fxaa: false,
            graded: false,
        },
        Case {
            bloom: BloomKind::OldSchool,
            msaa: Msaa::Off,
            fxaa: false,
            graded: false,
        },
        Case {
            bloom: BloomKind::Natural,
            msaa: Msaa::Sample4,
            fxaa: false,
            graded: false,
        },
        // Colour grading, which sends a camera without bloom to `Core3d`: Bevy's tone mapping
        // grades the frame after the bloom.
        Case {
            bloom: BloomKind::Natural,
            msaa: Msaa::Off,
            fxaa: false,
            graded: true,
        },
    ];
    #[cfg(feature = "anti_alias")]
    cases.push(Case {
        bloom: BloomKind::Natural,
        msaa: Msaa::Off,
        fxaa: true,
        graded: false,
    });
    for case in cases {
        let name = case.name();
        let (headless, camera, tile) = frame(case, true);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        let effects: &[&str] = if case.fxaa {
            &["Bloom", "Fxaa"]
        } else {
            &["Bloom"]
        };
        assert_eq!(report.post_processing, effects, "{name}");
        // The tile frame is still one render pass, and stores the light at the main texture's
        // HDR format.
        assert_eq!(report.render_passes_recorded, 1, "{name}");
        let output = report
            .compiled
            .attachment_named("output")
            .expect("the tile frame's output");
        assert_eq!(output.format, Format::Rgba16Float, "{name}");
        let priced = report
            .post_process_pass
            .as_ref()
            .expect("the effects are priced");
        // Bloom: a downsample into each mip, an upsample into each but the last and the final
        // one into the main texture; then tone mapping, FXAA where asked, and the blit.
        let passes = 2 * BLOOM_MIPS + 1 + usize::from(case.fxaa) + 1;
        assert_eq!(priced.render_pass_count(), passes, "{}", priced.describe());

        let (_, _, bevy) = frame(case, false);
        let (_, _, tile_plain) = frame(case.without_tested_effect(), true);
        let (_, _, bevy_plain) = frame(case.without_tested_effect(), false);
        assert_effect_as_in_bevy(
            &name,
            "the bloom (or the grading)",
            [&tile, &bevy, &tile_plain, &bevy_plain],
            EffectBounds {
                min_bevy_change: 1.0,
                apart_fraction: 0.2,
            },
            "",
        );
    }
}

/// Without `BloomPlugin` in the app, bloom is not run after the pass: the camera falls back,
/// with the bloom listed, as before the feature.
#[test]
fn bloom_without_its_plugin_is_listed_and_falls_back() {
    let _test = GpuTest::start("bloom_without_its_plugin_is_listed_and_falls_back");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        Bloom::NATURAL,
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
        ["post-processing: Bloom"],
        "Bloom without BloomPlugin"
    );
    let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
    assert_eq!(tier, RenderTier::Forward);
}
