//! The tile path's debug views show the values they name, read back at the centres of the
//! lit-spheres scene's spheres, on the merged and the unmerged tiers, with and without MSAA
//! (the four shader variants that write and display them).

use crate::{
    harness::{Frame, GpuTest, HeadlessApp},
    scenes::{self, LIT_SPHERES_OBJECTS},
};
use bevy::{prelude::*, render::view::Msaa};
use bevy_tile_deferred::{
    TileDebugView, TileDeferred,
    tiers::{RenderTier, TierSetting},
};

const WIDTH: u32 = 320;
const HEIGHT: u32 = 180;

/// The spheres' base colour, perceptual roughness and metallic (examples/scenes/mod.rs).
const SPHERES: [(Color, f32, f32); 3] = [
    (Color::srgb(0.85, 0.08, 0.06), 0.4, 0.0),
    (Color::srgb(0.1, 0.8, 0.15), 0.3, 0.5),
    (Color::srgb(0.08, 0.2, 0.9), 0.8, 0.0),
];

fn code(value: f32) -> i32 {
    (value.clamp(0.0, 1.0) * 255.0).round() as i32
}

/// Linear [0, 1] -> its 8-bit sRGB code, as the output's sRGB encode stores it.
fn srgb_code(linear: f32) -> i32 {
    code(Color::linear_rgb(linear, 0.0, 0.0).to_srgba().red)
}

fn assert_near(frame: &Frame, at: Vec2, expected: [i32; 3], tolerance: i32, what: &str) {
    let pixel = frame.pixel(at.x.round() as i32, at.y.round() as i32);
    let close = (0..3).all(|c| (i32::from(pixel[c]) - expected[c]).abs() <= tolerance);
    assert!(
        close,
        "{what}: pixel {pixel:?} at {at}, expected {expected:?} (+-{tolerance})"
    );
}

#[test]
fn debug_views_show_what_they_name() {
    let _test = GpuTest::start("debug_views_show_what_they_name");
    for (tier, msaa) in [
        (TierSetting::Auto, Msaa::Off),
        (
            TierSetting::Force(RenderTier::Unmerged { samples: 1 }),
            Msaa::Off,
        ),
        (TierSetting::Auto, Msaa::Sample4),
        (
            TierSetting::Force(RenderTier::Unmerged { samples: 4 }),
            Msaa::Sample4,
        ),
    ] {
        let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let camera = headless.spawn_camera((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            msaa,
            TileDeferred { tier, ..default() },
        ));
        headless.update();
        let world = headless.app.world();
        let camera_component = world.get::<Camera>(camera).unwrap().clone();
        let camera_transform = *world.get::<GlobalTransform>(camera).unwrap();
        let eye = camera_transform.translation();
        let mut show = |view: TileDebugView| {
            headless
                .app
                .world_mut()
                .get_mut::<TileDeferred>(camera)
                .unwrap()
                .debug_view = view;
            let frame = headless.render(3);
            let name = format!("debug-view-{view:?}-{tier:?}-{msaa:?}");
            frame.save_png(&name.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
            frame
        };
        let label = |view| format!("{view} ({tier:?}, {msaa:?})");
        let albedo = show(TileDebugView::Albedo);
        let material = show(TileDebugView::RoughnessMetallic);
        let normal = show(TileDebugView::Normal);
        let depth = show(TileDebugView::Depth);
        let light_count = show(TileDebugView::LightCount);
        for (object, (base_color, roughness, metallic)) in LIT_SPHERES_OBJECTS.iter().zip(SPHERES) {
            let at = camera_component
                .world_to_viewport(&camera_transform, object.center)
                .unwrap();
            let what = |view| format!("{}: {}", object.name, label(view));
            let srgb = base_color.to_srgba();
            assert_near(
                &albedo,
                at,
                [code(srgb.red), code(srgb.green), code(srgb.blue)],
                2,
                &what(TileDebugView::Albedo),
            );
            // Reflectance: Bevy's default 0.5, stored as the 8-bit code 128.
            assert_near(
                &material,
                at,
                [code(roughness), code(metallic), 128],
                2,
                &what(TileDebugView::RoughnessMetallic),
            );
            // The ray through the centre hits the sphere where its normal faces the eye (within
            // the tessellation's interpolated normals and the pixel's rounding).
            let n = (eye - object.center).normalize();
            assert_near(
                &normal,
                at,
                [n.x, n.y, n.z].map(|c| code(c * 0.5 + 0.5)),
                6,
                &what(TileDebugView::Normal),
            );
            let distance = eye.distance(object.center) - object.radius;
            assert_near(
                &depth,
                at,
                [code(1.0 / (1.0 + 0.1 * distance)); 3],
                2,
                &what(TileDebugView::Depth),
            );
            // One point light (range 20) reaches every sphere: a quarter of the way from blue
            // to cyan on the heat ramp (linear (0, 0.25, 1)).
            assert_near(
                &light_count,
                at,
                [0, srgb_code(0.25), 255],
                3,
                &what(TileDebugView::LightCount),
            );
        }
    }
}

/// Pixels of `frame` exactly the poison marker (magenta, `POISON_COLOR` in sRGB).
fn poisoned_pixels(frame: &Frame) -> usize {
    frame
        .rgba
        .chunks_exact(4)
        .filter(|p| p[0] == 255 && p[1] == 0 && p[2] == 255)
        .count()
}

/// The poison view (issue 33): every attachment's undefined contents (`DONT_CARE` loads,
/// transient attachments at the start of the pass) are cleared to magenta. The tile frame reads
/// only what it wrote, so the frame is the lit frame exactly, on the merged and unmerged tiers,
/// with and without MSAA, and the plan shows the poisoned loads with their reason. Broken on
/// purpose (a test hook leaves the merged lighting subpass without its draw, so the output it
/// writes is left as the pass began it), the marker fills the frame.
#[test]
fn the_poison_view_changes_a_correct_frame_by_nothing_and_shows_a_broken_one() {
    use bevy::render::RenderApp;
    use bevy_tile_deferred::{
        TileFaultInjection, TileRenderReports, frame_graph::LoadOp, frame_graph::LoadReason,
    };
    let _test =
        GpuTest::start("the_poison_view_changes_a_correct_frame_by_nothing_and_shows_a_broken_one");
    for (tier, msaa) in [
        (TierSetting::Auto, Msaa::Off),
        (TierSetting::Auto, Msaa::Sample4),
        (
            TierSetting::Force(RenderTier::Unmerged { samples: 1 }),
            Msaa::Off,
        ),
        (
            TierSetting::Force(RenderTier::Unmerged { samples: 4 }),
            Msaa::Sample4,
        ),
    ] {
        let what = format!("{tier:?} {msaa:?}");
        let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
        let injection = TileFaultInjection::default();
        headless
            .app
            .sub_app_mut(RenderApp)
            .insert_resource(injection.clone());
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let camera = headless.spawn_camera((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            msaa,
            TileDeferred { tier, ..default() },
        ));
        let lit = headless.render(3);
        let set_view = |headless: &mut HeadlessApp, view| {
            headless
                .app
                .world_mut()
                .get_mut::<TileDeferred>(camera)
                .unwrap()
                .debug_view = view;
        };
        set_view(&mut headless, TileDebugView::UndefinedPoison);
        let poisoned = headless.render(3);
        assert_eq!(poisoned_pixels(&lit), 0, "{what}: the scene has no magenta");
        assert!(
            poisoned.rgba == lit.rgba,
            "{what}: the poisoned frame differs from the lit frame in {} pixels",
            poisoned
                .rgba
                .chunks_exact(4)
                .zip(lit.rgba.chunks_exact(4))
                .filter(|(a, b)| a != b)
                .count()
        );
        let report = headless
            .app
            .world()
            .resource::<TileRenderReports>()
            .get(camera)
            .expect("a tile frame");
        let loads: Vec<_> = report
            .compiled
            .native_passes
            .iter()
            .flat_map(|native| &native.attachments)
            .collect();
        assert!(
            loads.iter().all(|a| a.load != LoadOp::DontCare),
            "{what}: no DONT_CARE load left"
        );
        let poisoned_loads = loads
            .iter()
            .filter(|a| matches!(a.load_reason, LoadReason::Poisoned { .. }))
            .count();
        assert!(poisoned_loads > 0, "{what}: poisoned loads");

        // Broken on purpose: the lighting draws are skipped. On the merged tiers the lighting
        // subpass writes the output (it tone maps) over a `DONT_CARE` load, which is left
        // undefined; the unmerged tier's lighting blends into a light the G-buffer pass wrote
        // and stored, which the tonemap pass then writes every pixel from: darker, nothing
        // undefined.
        if tier != TierSetting::Auto {
            continue;
        }
        injection.skip_lighting_draws(true);
        let broken = headless.render(3);
        let share = poisoned_pixels(&broken) as f64 / (WIDTH * HEIGHT) as f64;
        if tier == TierSetting::Auto && msaa == Msaa::Off {
            lit.save_png("poison-view-correct");
            broken.save_png("poison-view-broken");
        }
        eprintln!(
            "{what}: {poisoned_loads} poisoned loads; broken frame {:.1}% marker",
            share * 100.0
        );
        assert!(
            share > 0.5,
            "{what}: the marker shows ({:.1}%)",
            share * 100.0
        );
        injection.skip_lighting_draws(false);
    }
}
