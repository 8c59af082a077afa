//! Bevy's effect stack after the tile pass (feature `effect_stack`, issue 32): a tile camera
//! with chromatic aberration, a vignette or lens distortion stays on the tile path, Bevy's own
//! effect-stack pipeline draws them over the main texture the tile pass wrote (the HDR light
//! on an HDR camera, then Bevy's tone mapping; the tone-mapped frame on an LDR one), and the
//! frame is Bevy's `Core3d` frame with the same effects. The effects are set as in Bevy's
//! `post_processing` example, over the lit spheres.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp,
        image_compare::{EffectBounds, assert_effect_as_in_bevy},
    },
    scenes,
};
use bevy::{camera::Hdr, core_pipeline::tonemapping::Tonemapping, prelude::*, render::view::Msaa};
use bevy_post_process::{
    PostProcessPlugin,
    effect_stack::{ChromaticAberration, LensDistortion, Vignette},
};
use bevy_tile_deferred::{
    TileDeferred,
    frame_graph::Format,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// What a case puts on its camera.
#[derive(Clone, Copy, Debug)]
struct Case {
    hdr: bool,
    msaa: Msaa,
    chromatic_aberration: bool,
    vignette: bool,
    lens_distortion: bool,
    /// `Bloom::NATURAL` before the stack (feature `bloom`).
    bloom: bool,
    /// FXAA after it (feature `anti_alias`).
    fxaa: bool,
}

impl Case {
    const fn new(hdr: bool, msaa: Msaa) -> Self {
        Self {
            hdr,
            msaa,
            chromatic_aberration: false,
            vignette: false,
            lens_distortion: false,
            bloom: false,
            fxaa: false,
        }
    }

    fn name(self) -> String {
        let mut name = format!(
            "effect-stack-{}-{}x",
            if self.hdr { "hdr" } else { "ldr" },
            self.msaa.samples()
        );
        for (on, what) in [
            (self.chromatic_aberration, "-ca"),
            (self.vignette, "-vignette"),
            (self.lens_distortion, "-lens"),
            (self.bloom, "-bloom"),
            (self.fxaa, "-fxaa"),
        ] {
            if on {
                name.push_str(what);
            }
        }
        name
    }

    /// The case without its effect stack.
    fn without_stack(self) -> Self {
        Self {
            chromatic_aberration: false,
            vignette: false,
            lens_distortion: false,
            ..self
        }
    }

    /// The effects the tile camera's report names, in the order they run.
    fn effects(self) -> Vec<&'static str> {
        let mut effects = Vec::new();
        if self.bloom {
            effects.push("Bloom");
        }
        effects.push("EffectStack");
        if self.hdr && !self.bloom {
            // Bevy's tone mapping after the stack, which read the light.
            effects.push("Tonemapping");
        }
        if self.fxaa {
            effects.push("Fxaa");
        }
        effects
    }
}

/// The lit spheres with the case's effects, with Bevy's `PostProcessPlugin` in the app (as
/// Bevy's `DefaultPlugins` has it with its `bevy_post_process` feature: bloom, depth of field
/// and the effect stack among others), rendered by a tile camera (`tile`) or Bevy's `Core3d`.
///
/// `EffectStackPlugin` alone would not do for `Core3d`: bevy_post_process 0.19.1 orders its
/// pass only after `depth_of_field` and before `tonemapping`, so without `DepthOfFieldPlugin`
/// (which runs after the bloom, in `Core3dSystems::PostProcess`) the pass may run before the
/// main pass, which then draws over another texture, and Bevy's frame shows no effect.
fn frame(case: Case, tile: bool) -> (HeadlessApp, Entity, Frame) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.app.add_plugins(PostProcessPlugin);
    #[cfg(feature = "anti_alias")]
    headless.app.add_plugins(bevy_anti_alias::fxaa::FxaaPlugin);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Tonemapping::TonyMcMapface,
        case.msaa,
    ));
    let mut entity = headless.app.world_mut().entity_mut(camera);
    if case.hdr {
        entity.insert(Hdr);
    }
    if case.chromatic_aberration {
        // Stronger than Bevy's default (0.02), so that the fringes show at this size.
        entity.insert(ChromaticAberration {
            intensity: 0.06,
            ..default()
        });
    }
    if case.vignette {
        entity.insert(Vignette::default());
    }
    if case.lens_distortion {
        entity.insert(LensDistortion {
            intensity: 0.4,
            ..default()
        });
    }
    #[cfg(feature = "bloom")]
    if case.bloom {
        entity.insert(bevy_post_process::bloom::Bloom::NATURAL);
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

/// Each effect of the stack, alone and together, on LDR and HDR cameras, with 4x MSAA, after
/// a bloom and before FXAA: the camera stays on the tile path with nothing listed, its tile
/// frame is still one render pass (storing the light on an HDR camera), the report names and
/// prices the stack, Bevy's tone mapping where it follows, and the blit, and the frame is
/// Bevy's frame with the same effects (>= 40 dB, p99.5 <= 8/255); what the stack changes in
/// the tile frame is what it changes in Bevy's (so it ran, on what the tile pass wrote).
#[test]
fn the_effect_stack_runs_after_the_tile_pass_as_bevy_runs_it() {
    let _test = GpuTest::start("the_effect_stack_runs_after_the_tile_pass_as_bevy_runs_it");
    let ldr = Case::new(false, Msaa::Off);
    let hdr = Case::new(true, Msaa::Off);
    let all = |case: Case| Case {
        chromatic_aberration: true,
        vignette: true,
        lens_distortion: true,
        ..case
    };
    #[cfg_attr(not(any(feature = "bloom", feature = "anti_alias")), allow(unused_mut))]
    let mut cases = vec![
        Case {
            chromatic_aberration: true,
            vignette: true,
            ..ldr
        },
        Case {
            lens_distortion: true,
            ..ldr
        },
        all(hdr),
        all(Case::new(false, Msaa::Sample4)),
        all(Case::new(true, Msaa::Sample4)),
    ];
    #[cfg(feature = "bloom")]
    cases.push(Case {
        bloom: true,
        vignette: true,
        ..hdr
    });
    #[cfg(feature = "anti_alias")]
    cases.push(Case {
        fxaa: true,
        ..all(ldr)
    });
    for case in cases {
        let name = case.name();
        let (headless, camera, tile) = frame(case, true);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        assert_eq!(report.post_processing, case.effects(), "{name}");
        assert_eq!(report.render_passes_recorded, 1, "{name}");
        if case.hdr {
            let output = report
                .compiled
                .attachment_named("output")
                .expect("the tile frame's output");
            assert_eq!(output.format, Format::Rgba16Float, "{name}: the light");
        }
        let priced = report
            .post_process_pass
            .as_ref()
            .expect("the effects are priced");
        // The stack's one pass, the bloom's (a downsample into each of its 8 mips, an upsample
        // into each but the last and the final one into the main texture), Bevy's tone mapping
        // on an HDR camera, FXAA where asked, and the blit.
        let passes = 1
            + if case.bloom { 2 * 8 } else { 0 }
            + usize::from(case.hdr)
            + usize::from(case.fxaa)
            + 1;
        assert_eq!(priced.render_pass_count(), passes, "{}", priced.describe());

        let (_, _, bevy) = frame(case, false);
        let (_, _, tile_plain) = frame(case.without_stack(), true);
        let (_, _, bevy_plain) = frame(case.without_stack(), false);
        assert_effect_as_in_bevy(
            &name,
            "the stack",
            [&tile, &bevy, &tile_plain, &bevy_plain],
            EffectBounds {
                min_bevy_change: 1.0,
                apart_fraction: 0.2,
            },
            "",
        );
    }
}

/// Without `EffectStackPlugin` in the app, the stack is not run after the pass: an `Auto`
/// camera falls back, with each effect listed, as before the feature.
#[test]
fn the_effect_stack_without_its_plugin_is_listed_and_falls_back() {
    let _test = GpuTest::start("the_effect_stack_without_its_plugin_is_listed_and_falls_back");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        Vignette::default(),
        LensDistortion::default(),
        TileDeferred::default(),
    ));
    headless.render(3);
    let world = headless.app.world();
    let mut listed: Vec<String> = world
        .get::<TileMissing>(camera)
        .map(|missing| missing.items.iter().map(|item| item.what.clone()).collect())
        .unwrap_or_default();
    listed.sort();
    assert_eq!(
        listed,
        [
            "post-processing: LensDistortion",
            "post-processing: Vignette"
        ],
        "the effect stack without EffectStackPlugin"
    );
    let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
    assert_eq!(tier, RenderTier::Forward);
}
