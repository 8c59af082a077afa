//! The GPU's light assignment (`cluster_assign.comp`, the default) gives the clusters the CPU
//! reference ([`TileCpuLightAssignment`]) gives: the light-count debug view (each pixel's
//! cluster's lights, counted from the masks) and the lit frame of the clustered scenes (1024
//! point lights of varied ranges, one around the camera; spot cones in and out of view), at 1x
//! and 4x. The GPU's statistics, read back a frame late, match the CPU's occupancy.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp,
        image_compare::{difference_image, psnr},
    },
    scenes::fidelity::{self, FidelityScene},
};
use bevy::{prelude::*, render::RenderApp, render::view::Msaa};
use bevy_tile_deferred::{
    TileClusterStats, TileCpuLightAssignment, TileDebugView, TileDeferred, TileRenderReports,
};

const WIDTH: u32 = 640;
const HEIGHT: u32 = 360;

/// One camera of `scene`'s case `case` drawn with `debug_view`, the lights assigned on the CPU
/// or the GPU: the frame and the camera's cluster statistics.
fn render(
    scene: &FidelityScene,
    case: usize,
    msaa: Msaa,
    debug_view: TileDebugView,
    on_cpu: bool,
) -> (Frame, TileClusterStats) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    if on_cpu {
        headless
            .app
            .sub_app_mut(RenderApp)
            .insert_resource(TileCpuLightAssignment);
    }
    (scene.spawn)(headless.app.world_mut());
    let cases = (scene.cases)();
    let camera = &cases[case].cameras[0];
    let entity = headless.spawn_camera((
        camera.bundle(),
        TileDeferred {
            debug_view,
            ..default()
        },
    ));
    headless.app.world_mut().entity_mut(entity).insert(msaa);
    // Enough frames for the GPU's statistics to come back (a frame or more late).
    let frame = headless.render(4);
    let report = headless
        .app
        .world()
        .resource::<TileRenderReports>()
        .get(entity)
        .expect("the tile camera reports its frame");
    (frame, report.clusters)
}

/// Pixels (of every channel) that differ.
fn differing_pixels(a: &Frame, b: &Frame) -> usize {
    a.rgba
        .chunks_exact(4)
        .zip(b.rgba.chunks_exact(4))
        .filter(|(p, q)| p[..3] != q[..3])
        .count()
}

#[test]
fn gpu_light_assignment_matches_the_cpu_reference() {
    let _test = GpuTest::start("gpu_light_assignment_matches_the_cpu_reference");
    let pixels = (WIDTH * HEIGHT) as usize;
    for (scene, case, msaa) in [
        (&fidelity::CLUSTERED_1024, 0, Msaa::Off),
        (&fidelity::CLUSTERED_1024, 1, Msaa::Off),
        (&fidelity::SPOT_CONES, 0, Msaa::Off),
        (&fidelity::CLUSTERED_1024, 0, Msaa::Sample4),
    ] {
        let name = format!("{}-{case}-{msaa:?}", scene.name);
        let (count_cpu, stats_cpu) = render(scene, case, msaa, TileDebugView::LightCount, true);
        let (count_gpu, stats_gpu) = render(scene, case, msaa, TileDebugView::LightCount, false);
        let (lit_cpu, _) = render(scene, case, msaa, TileDebugView::None, true);
        let (lit_gpu, _) = render(scene, case, msaa, TileDebugView::None, false);
        let counts_differ = differing_pixels(&count_cpu, &count_gpu);
        let lit_psnr = psnr(&lit_cpu, &lit_gpu);
        println!(
            "{name}: light-count view {counts_differ} of {pixels} pixels differ; lit frame \
             {lit_psnr:.2} dB; CPU {stats_cpu:?}; GPU {stats_gpu:?}"
        );
        if counts_differ > 0 {
            count_cpu.save_png(&format!("light-assignment-{name}-cpu"));
            count_gpu.save_png(&format!("light-assignment-{name}-gpu"));
            difference_image(&count_cpu, &count_gpu)
                .save_png(&format!("light-assignment-{name}-difference"));
        }
        assert!(
            !stats_cpu.assigned_on_gpu && stats_gpu.assigned_on_gpu,
            "{name}"
        );
        assert!(
            stats_cpu.max_lights_per_cluster > 1,
            "{name}: {stats_cpu:?}"
        );
        // The same pairs, tested with the same formulas: the GPU's sqrt and dot may round a
        // light that grazes a cluster box the other way, nothing more.
        assert!(
            counts_differ * 1000 <= pixels,
            "{name}: {counts_differ} light-count pixels differ"
        );
        assert!(
            lit_psnr >= 60.0,
            "{name}: lit frames differ ({lit_psnr:.2} dB)"
        );
        assert_eq!(stats_gpu.dimensions, stats_cpu.dimensions, "{name}");
        assert_eq!(stats_gpu.mask_bytes, stats_cpu.mask_bytes, "{name}");
        assert!(
            stats_gpu
                .max_lights_per_cluster
                .abs_diff(stats_cpu.max_lights_per_cluster)
                <= 1,
            "{name}: {stats_gpu:?} vs {stats_cpu:?}"
        );
        let mean_gap = (stats_gpu.mean_lights_per_occupied_cluster
            - stats_cpu.mean_lights_per_occupied_cluster)
            .abs();
        assert!(
            mean_gap <= 0.01 * stats_cpu.mean_lights_per_occupied_cluster,
            "{name}: {stats_gpu:?} vs {stats_cpu:?}"
        );
    }
}
