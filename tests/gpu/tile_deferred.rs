//! The tile-deferred path against Bevy's forward renderer on the reference scenes.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp, assert_frames_match},
    scenes,
};
use bevy::{prelude::*, render::view::Msaa};
use bevy_tile_deferred::TileDeferred;

const WIDTH: u32 = 384;
const HEIGHT: u32 = 216;

/// Renders `spawn_scene` once with Bevy's forward renderer and once with the tile path.
pub fn render_both(
    spawn_scene: fn(&mut World),
    camera: impl Fn() -> (Camera, Transform),
) -> (Frame, Frame) {
    let render = |tile: bool| {
        let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
        spawn_scene(headless.app.world_mut());
        let (camera_settings, transform) = camera();
        let entity =
            headless.spawn_camera((Camera3d::default(), camera_settings, transform, Msaa::Off));
        if tile {
            headless
                .app
                .world_mut()
                .entity_mut(entity)
                .insert(TileDeferred::default());
        }
        headless.render(3)
    };
    (render(false), render(true))
}

#[test]
fn tile_matches_forward_lit_spheres() {
    let _test = GpuTest::start("tile_matches_forward_lit_spheres");
    let (forward, tile) = render_both(scenes::spawn_lit_spheres, || {
        (
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
        )
    });
    tile.save_png("tile-lit-spheres");
    eprintln!(
        "PSNR {:.2} dB, p99.5 {}",
        crate::harness::image_compare::psnr(&tile, &forward),
        crate::harness::image_compare::channel_difference_percentile(&tile, &forward, 99.5)
    );
    assert_frames_match("tile-lit-spheres", &tile, &forward, 36.0, 8);
}

/// The Vulkan objects really created follow the compiled plan: one render pass with two
/// subpasses (G-buffer; lighting, which tone maps into the output), only the output stored,
/// everything else transient and never loaded; the report says why for each.
#[test]
fn tile_plan_is_one_render_pass_storing_only_the_output() {
    let _test = GpuTest::start("tile_plan_is_one_render_pass_storing_only_the_output");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        TileDeferred::default(),
    ));
    headless.render(3);
    let reports = headless
        .app
        .world()
        .resource::<bevy_tile_deferred::TileRenderReports>()
        .clone();
    let report = reports.get(camera).expect("the tile camera was rendered");
    let plan = &report.compiled;
    assert_eq!(plan.render_pass_count(), 1, "{}", plan.describe());
    assert!(plan.breaks.is_empty(), "{}", plan.describe());
    let native = &plan.native_passes[0];
    let subpasses: Vec<&str> = native.subpasses.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(subpasses, ["gbuffer", "lighting"], "{}", plan.describe());
    assert_eq!(
        report.subpass_count, 2,
        "the VkRenderPass has two subpasses"
    );
    assert_eq!(report.render_passes_recorded, 1);
    assert_eq!(report.attachments.len(), native.attachments.len());
    for (planned, created) in native.attachments.iter().zip(&report.attachments) {
        assert_eq!(planned.name, created.name);
        if planned.name == "output" {
            assert_eq!(created.store_op, "STORE", "the output is stored");
            assert_eq!(
                created.load_op, "DONT_CARE",
                "the output is overwritten, never loaded"
            );
            // The report says why, naming the pass that writes it.
            assert_eq!(
                created.store_reason,
                "stored: needed after the frame (presented or read back)"
            );
            assert_eq!(
                created.load_reason,
                "DONT_CARE: first use, by `lighting`; nothing before it to keep"
            );
            assert_eq!(
                created.image_usage, None,
                "the output is the camera's own image"
            );
        } else {
            assert!(
                planned.transient,
                "{} is transient in the plan",
                planned.name
            );
            assert_eq!(
                created.store_op, "DONT_CARE",
                "{} is never stored",
                planned.name
            );
            assert_ne!(created.load_op, "LOAD", "{} is never loaded", planned.name);
            assert_eq!(
                created.store_reason, "DONT_CARE: nothing reads it after this render pass",
                "{}",
                planned.name
            );
            let usage = ash::vk::ImageUsageFlags::from_raw(created.image_usage.unwrap());
            assert!(
                usage.contains(ash::vk::ImageUsageFlags::TRANSIENT_ATTACHMENT),
                "{} image is TRANSIENT_ATTACHMENT: {usage:?}",
                planned.name
            );
            assert!(
                usage.contains(ash::vk::ImageUsageFlags::INPUT_ATTACHMENT),
                "{} is read on tile as an input attachment: {usage:?}",
                planned.name
            );
        }
    }
    // The whole frame's attachment traffic is one store of the output.
    let output_bytes = u64::from(WIDTH * HEIGHT * 4);
    assert_eq!(plan.cost.total.loaded, 0);
    assert_eq!(plan.cost.total.stored, output_bytes);
    assert_eq!(report.instances, 5, "ground, three spheres and a cube");
    assert_eq!(report.clustered_lights, 1, "one point light");
    // The crate's own timestamps time each subpass (no tonemap subpass: its time is the
    // lighting's).
    headless.update();
    let report = reports.get(camera).unwrap();
    let times = report.gpu_times.expect("lavapipe has timestamps");
    assert!(
        times.gbuffer_ms > 0.0 && times.lighting_ms > 0.0 && times.tonemap_ms >= 0.0,
        "{times:?}"
    );
    assert!(report.cpu_ms > 0.0);
}
