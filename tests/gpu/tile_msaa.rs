//! MSAA on tile memory: a multisampled G-buffer lit per sample only at edges, tonemapped per
//! sample and resolved in-pass, against the brute-force every-sample mode, Bevy's forward MSAA
//! and the same scene without MSAA.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp, assert_frames_match, image_compare::psnr},
    scenes::{self, aliasing},
};
use bevy::{
    prelude::*,
    render::{RenderApp, view::Msaa},
};
use bevy_tile_deferred::{
    MsaaShading, TileDebugView, TileDeferred, TileNoStencilSplit, TileRenderReports,
    TileViewReport,
    tiers::{RenderTier, TierDecision},
};

const WIDTH: u32 = 320;
const HEIGHT: u32 = 192;

/// What to render: the scene, its camera, and how.
#[derive(Clone, Copy)]
struct Setup {
    scene: fn(&mut World),
    camera: fn() -> Transform,
    msaa: Msaa,
    tile: Option<(MsaaShading, bool)>,
    /// Light with per-sample-index draws instead of the stencil split (the path of devices
    /// without sample-rate shading; lavapipe has it, so a test hook selects it).
    no_stencil_split: bool,
}

fn render(setup: Setup) -> (Frame, Option<TileViewReport>) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    if setup.no_stencil_split {
        headless
            .app
            .sub_app_mut(RenderApp)
            .insert_resource(TileNoStencilSplit);
    }
    (setup.scene)(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        (setup.camera)(),
        setup.msaa,
    ));
    if let Some((msaa_shading, show_msaa_edges)) = setup.tile {
        let debug_view = if show_msaa_edges {
            TileDebugView::MsaaEdges
        } else {
            TileDebugView::None
        };
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .insert(TileDeferred {
                msaa_shading,
                debug_view,
                ..default()
            });
    }
    let frame = headless.render(3);
    // Occlusion results are read a few frames late.
    for _ in 0..4 {
        headless.update();
    }
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    (frame, reports.get(camera))
}

fn tile(
    scene: fn(&mut World),
    camera: fn() -> Transform,
    msaa: Msaa,
    shading: MsaaShading,
) -> Setup {
    Setup {
        scene,
        camera,
        msaa,
        tile: Some((shading, false)),
        no_stencil_split: false,
    }
}

/// Mean squared luminance step between neighbouring pixels: staircase silhouettes make big
/// steps; anti-aliased ones spread them over several pixels, which lowers the squared sum.
fn aliasing_energy(frame: &Frame) -> f64 {
    let luminance = |x: u32, y: u32| {
        let p = frame.pixel(x as i32, y as i32);
        0.2126 * f64::from(p[0]) + 0.7152 * f64::from(p[1]) + 0.0722 * f64::from(p[2])
    };
    let mut sum = 0.0;
    let mut count = 0.0;
    for y in 0..frame.height - 1 {
        for x in 0..frame.width - 1 {
            let here = luminance(x, y);
            let dx = luminance(x + 1, y) - here;
            let dy = luminance(x, y + 1) - here;
            sum += dx * dx + dy * dy;
            count += 1.0;
        }
    }
    sum / count
}

#[test]
fn msaa_plan_keeps_every_sample_on_tile() {
    let _test = GpuTest::start("msaa_plan_keeps_every_sample_on_tile");
    let (_, report) = render(tile(
        aliasing::spawn_aliasing_scene,
        aliasing::aliasing_camera_transform,
        Msaa::Sample4,
        MsaaShading::EdgeSelective,
    ));
    let report = report.expect("the tile path rendered");
    let plan = &report.compiled;
    assert_eq!(report.samples, 4);
    assert_eq!(plan.render_pass_count(), 1, "{}", plan.describe());
    // G-buffer, then the lighting, which tone maps each pixel (each sample on edges) into the
    // multisampled colour and resolves it: no tonemap subpass.
    assert_eq!(report.subpass_count, 2);
    let native = &plan.native_passes[0];
    let subpasses: Vec<&str> = native.subpasses.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(subpasses, ["gbuffer", "lighting"], "{}", plan.describe());
    assert!(native.subpasses.iter().all(|_| native.samples == 4));
    // lavapipe has sampleRateShading and a multisampled depth-stencil format: the lighting
    // subpass splits edges with the stencil (depth read-only and read as an input attachment,
    // stencil written).
    let depth = native
        .attachments
        .iter()
        .position(|a| a.name == "depth")
        .unwrap();
    assert!(native.attachments[depth].format.has_stencil());
    let lighting = &native.subpasses[1];
    assert!(lighting.input.contains(&depth));
    assert!(
        lighting
            .depth
            .is_some_and(|d| d.attachment == depth && d.read_only && d.stencil_write),
        "{:?}",
        lighting.depth
    );
    for (planned, created) in native.attachments.iter().zip(&report.attachments) {
        if planned.name == "output" {
            assert_eq!((created.samples, created.store_op.as_str()), (1, "STORE"));
        } else {
            assert_eq!(created.samples, 4, "{} is multisampled", planned.name);
            assert_eq!(
                created.store_op, "DONT_CARE",
                "{} samples are never stored",
                planned.name
            );
            assert!(planned.transient, "{} is transient", planned.name);
        }
    }
    // The resolve happens in the last subpass (the lighting), into the output.
    let last = native.subpasses.last().unwrap();
    assert!(
        last.resolve
            .iter()
            .flatten()
            .any(|&i| native.attachments[i].name == "output")
    );
    // Traffic: one store of the 1-sample output, nothing else.
    assert_eq!(plan.cost.total.stored, u64::from(WIDTH * HEIGHT * 4));
    assert_eq!(plan.cost.total.loaded, 0);
}

#[test]
fn edge_selective_matches_every_sample_and_bevy_msaa() {
    let _test = GpuTest::start("edge_selective_matches_every_sample_and_bevy_msaa");
    for (name, scene, camera) in [
        (
            "aliasing",
            aliasing::spawn_aliasing_scene as fn(&mut World),
            aliasing::aliasing_camera_transform as fn() -> Transform,
        ),
        (
            "lit-spheres",
            scenes::spawn_lit_spheres,
            scenes::reference_camera_transform,
        ),
    ] {
        let (selective, selective_report) = render(tile(
            scene,
            camera,
            Msaa::Sample4,
            MsaaShading::EdgeSelective,
        ));
        let (every, every_report) =
            render(tile(scene, camera, Msaa::Sample4, MsaaShading::EverySample));
        let (bevy_msaa, _) = render(Setup {
            scene,
            camera,
            msaa: Msaa::Sample4,
            tile: None,
            no_stencil_split: false,
        });
        let (no_msaa, _) = render(tile(scene, camera, Msaa::Off, MsaaShading::EdgeSelective));
        assert_frames_match(
            &format!("msaa-{name}-selective-vs-every-sample"),
            &selective,
            &every,
            45.0,
            8,
        );
        let against_bevy = psnr(&selective, &bevy_msaa);
        assert!(
            against_bevy >= 34.0,
            "{name}: tile 4x vs Bevy forward 4x PSNR {against_bevy:.2} dB < 34 (images: {}, {})",
            selective.save_png(&format!("msaa-{name}-tile")).display(),
            bevy_msaa.save_png(&format!("msaa-{name}-bevy")).display()
        );
        let (aliased, smooth) = (aliasing_energy(&no_msaa), aliasing_energy(&selective));
        assert!(
            smooth < aliased * 0.97,
            "{name}: MSAA does not smooth edges (aliasing energy {aliased:.1} -> {smooth:.1})"
        );
        // Work saved: only edges are lit per sample.
        let fraction = selective_report
            .unwrap()
            .per_sample_fraction
            .expect("measured");
        let every_fraction = every_report.unwrap().per_sample_fraction.expect("measured");
        eprintln!(
            "{name}: PSNR vs every-sample {:.2} dB, vs Bevy 4x {against_bevy:.2} dB; \
             aliasing energy {aliased:.1} -> {smooth:.1}; per-sample pixels {:.1}% \
             (every-sample mode {:.1}%)",
            psnr(&selective, &every),
            fraction * 100.0,
            every_fraction * 100.0
        );
        assert!(
            fraction > 0.0 && fraction < every_fraction,
            "{fraction} vs {every_fraction}"
        );
    }
}

/// Devices without sample-rate shading (or a multisampled depth-stencil format) light each
/// sample index with its own draws: same image as the stencil split and as every-sample
/// shading, no stencil in the plan, and the per-sample fraction still measured.
#[test]
fn per_sample_index_draws_match_the_stencil_split() {
    let _test = GpuTest::start("per_sample_index_draws_match_the_stencil_split");
    let setup = |shading, no_stencil_split| Setup {
        no_stencil_split,
        ..tile(
            aliasing::spawn_aliasing_scene,
            aliasing::aliasing_camera_transform,
            Msaa::Sample4,
            shading,
        )
    };
    let (split, split_report) = render(setup(MsaaShading::EdgeSelective, false));
    let (draws, draws_report) = render(setup(MsaaShading::EdgeSelective, true));
    let (every, _) = render(setup(MsaaShading::EverySample, false));
    let (draws_every, draws_every_report) = render(setup(MsaaShading::EverySample, true));
    let report = draws_report.expect("the tile path rendered");
    assert_eq!(report.samples, 4);
    let native = &report.compiled.native_passes[0];
    let depth = native.attachment_named("depth").unwrap();
    assert!(!depth.format.has_stencil(), "no stencil without the split");
    assert!(
        native.subpasses[1]
            .depth
            .is_some_and(|d| d.read_only && !d.stencil_write),
        "lighting tests depth read-only, writes no stencil"
    );
    assert_eq!(
        report.compiled.cost.total.stored,
        u64::from(WIDTH * HEIGHT * 4)
    );
    assert_frames_match("msaa-draws-vs-split", &draws, &split, 45.0, 8);
    assert_frames_match("msaa-draws-vs-every-sample", &draws, &every, 45.0, 8);
    assert_frames_match("msaa-draws-every-vs-every", &draws_every, &every, 45.0, 8);
    // The same pixels are edges: the fallback's query counts one sample per edge pixel, the
    // split's every sample of it, both normalised to a fraction of the pixels.
    let fraction = report.per_sample_fraction.expect("measured");
    let split_fraction = split_report.unwrap().per_sample_fraction.expect("measured");
    let every_fraction = draws_every_report
        .unwrap()
        .per_sample_fraction
        .expect("measured");
    eprintln!(
        "per-sample pixels: draws {:.2}%, stencil split {:.2}%, draws every sample {:.2}%",
        fraction * 100.0,
        split_fraction * 100.0,
        every_fraction * 100.0
    );
    assert!(
        (fraction - split_fraction).abs() < 0.002,
        "{fraction} vs {split_fraction}"
    );
    assert!(fraction > 0.0 && fraction < every_fraction);
}

#[test]
fn unsupported_sample_count_falls_back_to_the_highest_supported() {
    let _test = GpuTest::start("unsupported_sample_count_falls_back_to_the_highest_supported");
    // lavapipe supports 1x and 4x: 8x becomes 4x and 2x becomes 1x, with the reason recorded.
    for (requested, expected, tier) in [
        (
            Msaa::Sample8,
            4,
            RenderTier::TileDeferredMsaa { samples: 4 },
        ),
        (Msaa::Sample2, 1, RenderTier::TileDeferred),
    ] {
        let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let camera = headless.spawn_camera((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            requested,
            TileDeferred::default(),
        ));
        let frame = headless.render(3);
        let decision = headless
            .app
            .world()
            .get::<TierDecision>(camera)
            .unwrap()
            .clone();
        assert_eq!(decision.tier, tier, "{decision:?}");
        assert!(
            decision.summary().contains("MSAA"),
            "{}",
            decision.summary()
        );
        let reports = headless.app.world().resource::<TileRenderReports>().clone();
        assert_eq!(reports.get(camera).unwrap().samples, expected);
        assert!(frame.rgba.chunks_exact(4).any(|p| p[0] > 100), "rendered");
    }
}

#[test]
fn edge_mask_debug_view_shows_edges() {
    let _test = GpuTest::start("edge_mask_debug_view_shows_edges");
    let setup = Setup {
        tile: Some((MsaaShading::EdgeSelective, true)),
        ..tile(
            aliasing::spawn_aliasing_scene,
            aliasing::aliasing_camera_transform,
            Msaa::Sample4,
            MsaaShading::EdgeSelective,
        )
    };
    let (debug, _) = render(setup);
    let (plain, _) = render(tile(
        aliasing::spawn_aliasing_scene,
        aliasing::aliasing_camera_transform,
        Msaa::Sample4,
        MsaaShading::EdgeSelective,
    ));
    let reddened = debug
        .rgba
        .chunks_exact(4)
        .zip(plain.rgba.chunks_exact(4))
        .filter(|(d, p)| d[0] > p[0].saturating_add(40) && d[1] < p[1].max(1))
        .count();
    debug.save_png("msaa-edge-mask");
    assert!(
        reddened > 100,
        "only {reddened} pixels tinted by the edge-mask view"
    );
}
