//! Bevy's auto exposure after the tile pass (feature `auto_exposure`, issue 32): an HDR tile
//! camera with `AutoExposure` stays on the tile path, Bevy's own shader meters the light the
//! tile pass stored, and Bevy's tone mapping applies the exposure, so the frame is Bevy's
//! `Core3d` frame with the same adaptation, frame by frame. The settings are those of Bevy's
//! `auto_exposure` example (a compensation curve, a metering mask), over the lit spheres.
//!
//! Auto exposure adapts over time, by each frame's delta time: the four cameras of a case
//! (tile and `Core3d`, with and without `AutoExposure`) render the same frames of one app, whose
//! clock advances by a fixed step per frame.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp,
        image_compare::{EffectBounds, assert_effect_as_in_bevy},
    },
    scenes,
};
use bevy::{
    asset::RenderAssetUsages,
    camera::{Hdr, RenderTarget},
    core_pipeline::tonemapping::Tonemapping,
    math::{cubic_splines::LinearSpline, vec2},
    prelude::*,
    render::{
        render_resource::{Extent3d, TextureDimension, TextureFormat},
        view::Msaa,
    },
    time::TimeUpdateStrategy,
};
use bevy_post_process::auto_exposure::{
    AutoExposure, AutoExposureCompensationCurve, AutoExposurePlugin,
};
use bevy_tile_deferred::{
    TileDeferred,
    frame_graph::Format,
    tiers::{RenderTier, TierSetting},
};
use std::time::Duration;

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

/// The clock's step per frame.
const FRAME_TIME: Duration = Duration::from_millis(50);

/// What a case puts on its cameras.
#[derive(Clone, Copy, Debug)]
struct Case {
    msaa: Msaa,
    /// Frames rendered before the one compared.
    frames: u32,
    /// Bevy's `auto_exposure` example's settings: a compensation curve, a metering mask that
    /// weighs only the left half, and faster adaptation.
    example_settings: bool,
    /// `Bloom::NATURAL` before the metering (feature `bloom`).
    bloom: bool,
}

impl Case {
    fn name(self) -> String {
        let mut name = format!(
            "auto-exposure-{}x-{}-frames",
            self.msaa.samples(),
            self.frames
        );
        if self.example_settings {
            name.push_str("-curve-mask");
        }
        if self.bloom {
            name.push_str("-bloom");
        }
        name
    }

    /// The effects the tile camera's report names, in the order they run.
    fn effects(self) -> Vec<&'static str> {
        if self.bloom {
            // Bevy's tone mapping is named by the bloom.
            vec!["Bloom", "AutoExposure"]
        } else {
            vec!["AutoExposure", "Tonemapping"]
        }
    }
}

/// The case's `AutoExposure`.
fn auto_exposure(case: Case, world: &mut World) -> AutoExposure {
    if !case.example_settings {
        return AutoExposure::default();
    }
    let curve = AutoExposureCompensationCurve::from_curve(LinearSpline::new([
        vec2(-4.0, -2.0),
        vec2(0.0, 0.0),
        vec2(2.0, 0.0),
        vec2(4.0, 2.0),
    ]))
    .expect("Bevy's example curve");
    let mask: Vec<u8> = (0..16 * 16)
        .flat_map(|texel| {
            let weight = if texel % 16 < 8 { 255 } else { 0 };
            [weight, weight, weight, 255]
        })
        .collect();
    let mask = Image::new(
        Extent3d {
            width: 16,
            height: 16,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        mask,
        TextureFormat::Rgba8Unorm,
        RenderAssetUsages::RENDER_WORLD,
    );
    AutoExposure {
        speed_brighten: 6.0,
        speed_darken: 6.0,
        compensation_curve: world
            .resource_mut::<Assets<AutoExposureCompensationCurve>>()
            .add(curve),
        metering_mask: world.resource_mut::<Assets<Image>>().add(mask),
        ..default()
    }
}

/// The lit spheres seen by four HDR cameras of one app, each into its own image: a tile camera
/// and a `Core3d` one with the case's `AutoExposure`, and the same two without. Returns the app,
/// the tile camera with auto exposure, and the four frames (tile, Bevy, tile plain, Bevy
/// plain), read in the same frame after `case.frames`.
fn frames(case: Case) -> (HeadlessApp, Entity, [Frame; 4]) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.app.add_plugins(AutoExposurePlugin);
    #[cfg(feature = "bloom")]
    if case.bloom {
        headless
            .app
            .add_plugins(bevy_post_process::bloom::BloomPlugin);
    }
    headless
        .app
        .insert_resource(TimeUpdateStrategy::ManualDuration(FRAME_TIME));
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let targets = [
        headless.target.clone(),
        headless.add_target(WIDTH, HEIGHT),
        headless.add_target(WIDTH, HEIGHT),
        headless.add_target(WIDTH, HEIGHT),
    ];
    let tier = TierSetting::Force(if case.msaa.samples() > 1 {
        RenderTier::TileDeferredMsaa {
            samples: case.msaa.samples(),
        }
    } else {
        RenderTier::TileDeferred
    });
    let mut cameras = Vec::new();
    for (index, target) in targets.iter().enumerate() {
        let (tile, exposed) = (index % 2 == 0, index < 2);
        let exposure = auto_exposure(case, headless.app.world_mut());
        let mut camera = headless.app.world_mut().spawn((
            Camera3d::default(),
            Camera {
                order: index as isize,
                ..scenes::reference_camera()
            },
            RenderTarget::Image(target.clone().into()),
            scenes::reference_camera_transform(),
            Tonemapping::TonyMcMapface,
            Hdr,
            case.msaa,
        ));
        if exposed {
            camera.insert(exposure);
        }
        #[cfg(feature = "bloom")]
        if case.bloom {
            camera.insert(bevy_post_process::bloom::Bloom::NATURAL);
        }
        if tile {
            camera.insert(TileDeferred { tier, ..default() });
        }
        cameras.push(camera.id());
    }
    headless.use_cpu_light_clustering();
    for _ in 0..case.frames {
        headless.update();
    }
    let Ok(frames) = <[Frame; 4]>::try_from(headless.read_images(&targets)) else {
        panic!("one frame per camera");
    };
    (headless, cameras[0], frames)
}

/// Mid-adaptation and adapted, with Bevy's defaults and with its example's curve and mask, at
/// 1x and 4x MSAA, after a bloom: the camera stays on the tile path with nothing listed, its
/// tile frame is one render pass storing the light, the report names and prices the metering
/// (a compute pass reading the light), Bevy's tone mapping and the blit, and the frame is
/// Bevy's frame of the same moment (>= 40 dB, p99.5 <= 8/255); what the exposure changes in the
/// tile frame is what it changes in Bevy's.
#[test]
fn auto_exposure_meters_the_tile_frame_as_bevy_meters_its_own() {
    let _test = GpuTest::start("auto_exposure_meters_the_tile_frame_as_bevy_meters_its_own");
    let adapting = Case {
        msaa: Msaa::Off,
        frames: 6,
        example_settings: false,
        bloom: false,
    };
    #[cfg_attr(not(feature = "bloom"), allow(unused_mut))]
    let mut cases = vec![
        adapting,
        Case {
            frames: 40,
            example_settings: true,
            ..adapting
        },
        Case {
            msaa: Msaa::Sample4,
            frames: 20,
            ..adapting
        },
    ];
    #[cfg(feature = "bloom")]
    cases.push(Case {
        bloom: true,
        frames: 20,
        ..adapting
    });
    for case in cases {
        let name = case.name();
        let (headless, camera, [tile, bevy, tile_plain, bevy_plain]) = frames(case);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        assert_eq!(report.post_processing, case.effects(), "{name}");
        assert_eq!(report.render_passes_recorded, 1, "{name}");
        let output = report
            .compiled
            .attachment_named("output")
            .expect("the tile frame's output");
        assert_eq!(output.format, Format::Rgba16Float, "{name}: the light");
        let priced = report
            .post_process_pass
            .as_ref()
            .expect("the effects are priced");
        assert!(
            priced
                .native_passes
                .iter()
                .any(|pass| pass.name == "auto_exposure"),
            "{name}: {}",
            priced.describe()
        );
        // Bevy's tone mapping and the blit, after the bloom's passes (a downsample into each of
        // its 8 mips, an upsample into each but the last and the final one into the main
        // texture).
        let passes = 2 + if case.bloom { 2 * 8 } else { 0 };
        assert_eq!(priced.render_pass_count(), passes, "{}", priced.describe());
        eprintln!(
            "{name}: the tile frame moves {} bytes, the effects after it {} ({} of them \
             texture reads)",
            report.compiled.cost.bytes(),
            priced.cost.bytes(),
            priced.cost.total.sampled
        );
        assert_effect_as_in_bevy(
            &name,
            "the exposure",
            [&tile, &bevy, &tile_plain, &bevy_plain],
            EffectBounds {
                min_bevy_change: 2.0,
                apart_fraction: 0.1,
            },
            "",
        );
    }
}
