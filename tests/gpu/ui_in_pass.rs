//! bevy_ui drawn inside the tile render pass (issue 29): a HUD shaped like Bevy's `ui/ui` and
//! `ui/text` examples (`examples/scenes/hud.rs`) over the lit scene of the UI tests, on two tile
//! cameras in one app: one draws its UI in its `ui` subpass, the other with Bevy's UI pass after
//! the tile pass (`TileDeferred::ui_in_pass` off). The scene under the UI is the same tile frame,
//! so each element's region compares the UI alone: >= 40 dB, p99.5 <= 4/255, HDR off and on, 1x
//! and 4x MSAA (in the pass the UI is drawn at 4x and resolved with the scene; Bevy draws it at
//! 1x over the resolved image), and each element must show. The in-pass frame must be one render pass whose only traffic is
//! one store of the output; the other pays for the passes after it. A box shadow in the HUD is
//! drawn in the pass too, and so are a 9-sliced image with a tiled centre, a tiled image and
//! gradients of every kind. With a `UiMaterial` in the middle of the HUD (not drawn in the
//! pass), the items under it are drawn in the pass and the rest after it, and the picture is
//! still Bevy's. On a second camera with a viewport into the first one's target, the same
//! holds. With `UiScale` 1.25 and `UiAntiAlias::Off` on both cameras, the same holds.

use crate::harness::{Frame, GpuTest, HeadlessApp, image_compare};
use crate::scenes::hud::{
    ELEMENTS, PlainUiMaterial, ZStackExtra, checker_image, count_frames, spawn_hud,
};
use crate::ui_overlay::{self, HEIGHT, WIDTH};
use bevy::{
    camera::{Hdr, RenderTarget},
    prelude::*,
    ui::{ComputedNode, UiGlobalTransform, UiScale},
    ui_render::{UiAntiAlias, prelude::UiMaterialPlugin},
};
use bevy_tile_deferred::{TileDeferred, TileRenderReports, TileViewReport};

const MIN_PSNR: f64 = 40.0;
const MAX_P995: u8 = 4;

#[test]
fn a_hud_drawn_in_the_tile_pass_matches_bevys_ui_pass() {
    let _test = GpuTest::start("a_hud_drawn_in_the_tile_pass_matches_bevys_ui_pass");
    let cases = [
        (false, Msaa::Off),
        (true, Msaa::Off),
        (false, Msaa::Sample4),
        (true, Msaa::Sample4),
    ];
    compare_routes(
        "hud",
        &cases,
        ZStackExtra::None,
        Variant::default(),
        check_traffic,
    );
}

/// The HUD scaled by `UiScale` (every node, border, radius and glyph 1.25x larger, text
/// rasterised at the scaled size) with `UiAntiAlias::Off` on the cameras (hard SDF edges): the
/// in-pass UI follows both, as Bevy's does.
#[test]
fn a_scaled_hud_without_anti_aliasing_matches_bevys_ui_pass() {
    let _test = GpuTest::start("a_scaled_hud_without_anti_aliasing_matches_bevys_ui_pass");
    let cases = [(false, Msaa::Off), (true, Msaa::Sample4)];
    let variant = Variant {
        ui_scale: 1.25,
        anti_alias: UiAntiAlias::Off,
    };
    compare_routes(
        "hud-scaled-aa-off",
        &cases,
        ZStackExtra::None,
        variant,
        check_traffic,
    );
}

/// What both cameras of every case share beyond the HUD: the app's `UiScale` and the cameras'
/// `UiAntiAlias`.
struct Variant {
    ui_scale: f32,
    anti_alias: UiAntiAlias,
}

impl Default for Variant {
    fn default() -> Self {
        Self {
            ui_scale: 1.0,
            anti_alias: UiAntiAlias::On,
        }
    }
}

/// A box shadow in the HUD (on the second node of the z-stack, Bevy's `ui/box_shadow`): drawn in
/// the pass with the rest of the HUD, with Bevy's blur, at 1x and 4x, HDR off and on.
#[test]
fn a_hud_with_a_box_shadow_is_drawn_in_the_tile_pass() {
    let _test = GpuTest::start("a_hud_with_a_box_shadow_is_drawn_in_the_tile_pass");
    let cases = [
        (false, Msaa::Off),
        (true, Msaa::Off),
        (false, Msaa::Sample4),
    ];
    compare_routes(
        "hud-box-shadow",
        &cases,
        ZStackExtra::BoxShadow,
        Variant::default(),
        |name, in_pass, after_pass| {
            // Everything in the pass, the shadow included (its region is compared with Bevy's
            // above): one render pass, one store of the output.
            assert_eq!(in_pass.ui_after_pass_reason, None, "{name}");
            check_traffic(name, in_pass, after_pass);
        },
    );
}

/// A 9-sliced image with a tiled centre and a tiled image in the HUD (the z-stack's second and
/// third nodes, Bevy's `ui/ui_texture_slice`): drawn in the pass with the rest of the HUD, at 1x
/// and 4x, HDR off and on.
#[test]
fn a_hud_with_sliced_and_tiled_images_is_drawn_in_the_tile_pass() {
    let _test = GpuTest::start("a_hud_with_sliced_and_tiled_images_is_drawn_in_the_tile_pass");
    let cases = [
        (false, Msaa::Off),
        (true, Msaa::Off),
        (false, Msaa::Sample4),
    ];
    compare_routes(
        "hud-sliced",
        &cases,
        ZStackExtra::SlicedImages,
        Variant::default(),
        |name, in_pass, after_pass| {
            assert_eq!(in_pass.ui_after_pass_reason, None, "{name}");
            check_traffic(name, in_pass, after_pass);
        },
    );
}

/// Gradients in the HUD (the z-stack's second to fourth nodes, Bevy's `ui/gradients`: linear,
/// radial and conic, two layered on one node, a border gradient, explicit stops and angles, a
/// hint, a hard edge, five interpolation spaces): drawn in the pass with the rest of the HUD, at
/// 1x and 4x, HDR off and on.
#[test]
fn a_hud_with_gradients_is_drawn_in_the_tile_pass() {
    let _test = GpuTest::start("a_hud_with_gradients_is_drawn_in_the_tile_pass");
    let cases = [
        (false, Msaa::Off),
        (true, Msaa::Off),
        (false, Msaa::Sample4),
        (true, Msaa::Sample4),
    ];
    compare_routes(
        "hud-gradients",
        &cases,
        ZStackExtra::Gradients,
        Variant::default(),
        |name, in_pass, after_pass| {
            assert_eq!(in_pass.ui_after_pass_reason, None, "{name}");
            check_traffic(name, in_pass, after_pass);
        },
    );
}

/// A `UiMaterial` in the middle of the HUD (on the second node of the z-stack): the subpass
/// draws the items under it, Bevy's UI pass after the tile pass draws it and every item over
/// it, and the picture is the one Bevy's UI pass draws alone.
#[test]
fn a_ui_material_sends_it_and_the_ui_over_it_after_the_tile_pass() {
    let _test = GpuTest::start("a_ui_material_sends_it_and_the_ui_over_it_after_the_tile_pass");
    let cases = [(false, Msaa::Off), (false, Msaa::Sample4)];
    compare_routes(
        "hud-ui-material",
        &cases,
        ZStackExtra::UiMaterial,
        Variant::default(),
        |name, split, after_pass| {
            let drawn = split
                .ui_in_pass
                .expect("the items under the material, in the pass");
            let priced = split.ui_pass.as_ref().expect("the rest, after the pass");
            let reason = split.ui_after_pass_reason.as_deref().unwrap_or_default();
            // The node is named by its entity (`<index>v<generation>`).
            let node = reason
                .strip_prefix("a UiMaterial (node ")
                .and_then(|rest| rest.split_once("):"))
                .map(|(node, _)| node);
            assert!(
                node.is_some_and(
                    |node| node.split_once('v').is_some_and(|(index, generation)| {
                        index.parse::<u32>().is_ok() && generation.parse::<u32>().is_ok()
                    })
                ),
                "{name}: {reason}"
            );
            assert!(drawn.items >= 8, "{name}: {drawn:?}");
            assert!(after_pass.ui_pass.is_some(), "{name}");
            // The tile pass is the same one render pass, its UI subpass included; the passes after
            // it are Bevy's three.
            assert_eq!(split.compiled.render_pass_count(), 1, "{name}");
            assert_eq!(
                priced.render_pass_count(),
                3,
                "{name}: {}",
                priced.describe()
            );
            eprintln!("{name}: {drawn:?} in the pass; after it: {reason}");
        },
    );
}

/// The HUD (with `extra` in its z-stack) over two tile cameras per case (HDR, MSAA),
/// one drawing its UI in the pass where it can and one after it: every element's region within
/// the bar, each showing; `check` gets each case's two reports.
fn compare_routes(
    prefix: &str,
    cases: &[(bool, Msaa)],
    extra: ZStackExtra,
    variant: Variant,
    check: impl Fn(&str, &TileViewReport, &TileViewReport),
) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless
        .app
        .add_plugins(UiMaterialPlugin::<PlainUiMaterial>::default())
        .add_systems(Update, count_frames)
        .insert_resource(UiScale(variant.ui_scale));
    headless.update();
    ui_overlay::spawn_scene(headless.app.world_mut());
    let checker = checker_image(headless.app.world_mut());
    // Per case: (in-pass camera, after-pass camera), their targets and HUD elements.
    let mut spawned = Vec::new();
    for &(hdr, msaa) in cases {
        let mut cameras = Vec::new();
        for in_pass in [true, false] {
            let target = headless.add_target(WIDTH, HEIGHT);
            let world = headless.app.world_mut();
            let mut camera = world.spawn((
                Camera3d::default(),
                Transform::from_xyz(-2.5, 3.0, 5.0).looking_at(Vec3::new(0.0, 0.4, 0.0), Vec3::Y),
                RenderTarget::Image(target.clone().into()),
                msaa,
                TileDeferred {
                    ui_in_pass: in_pass,
                    ..default()
                },
                variant.anti_alias,
            ));
            if hdr {
                camera.insert(Hdr);
            }
            let camera = camera.id();
            let elements = spawn_hud(world, camera, checker.clone(), extra);
            cameras.push((camera, target, elements));
        }
        spawned.push(((hdr, msaa), cameras));
    }
    // Enough frames for the counter to add new digits to the atlas on the way.
    for _ in 0..8 {
        headless.update();
    }
    let images: Vec<Handle<Image>> = spawned
        .iter()
        .flat_map(|(_, cameras)| cameras.iter().map(|(_, target, _)| target.clone()))
        .collect();
    let frames = headless.read_images(&images);

    let world = headless.app.world();
    let reports = world.resource::<TileRenderReports>();
    let mut failures = Vec::new();
    for (((hdr, msaa), cameras), pair) in spawned.iter().zip(frames.chunks_exact(2)) {
        let name = format!(
            "{prefix}-hdr-{}-{}x",
            if *hdr { "on" } else { "off" },
            msaa.samples()
        );
        let (in_pass, after_pass) = (&pair[0], &pair[1]);
        let psnr = image_compare::psnr(in_pass, after_pass);
        let path = in_pass.save_png(&format!("{name}-in-pass"));
        eprintln!(
            "{name}: whole frame, in the pass against after it: PSNR {psnr:.2} dB ({})",
            path.display()
        );
        for (i, element) in ELEMENTS.iter().enumerate() {
            let rect = element_rect(world, cameras[0].2[i]);
            assert_eq!(rect, element_rect(world, cameras[1].2[i]), "{element}");
            let region = format!("{name}-{element}");
            let (a, b) = (
                ui_overlay::crop(in_pass, rect),
                ui_overlay::crop(after_pass, rect),
            );
            failures.extend(compare(&region, &a, &b));
            for (route, frame) in [("in the pass", &a), ("after the pass", &b)] {
                if !shows_something(frame) {
                    let path = frame.save_png(&format!("{region}-{route}"));
                    failures.push(format!(
                        "{region}: drawn {route}, the region is one colour ({})",
                        path.display()
                    ));
                }
            }
        }
        check(
            &name,
            &reports.get(cameras[0].0).expect("a report"),
            &reports.get(cameras[1].0).expect("a report"),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The in-pass frame is one render pass whose only traffic is one store of the output, with
/// the UI subpass last and nothing priced after it; the after-pass frame has the same tile
/// pass and pays for Bevy's UI passes after it.
fn check_traffic(name: &str, in_pass: &TileViewReport, after_pass: &TileViewReport) {
    let floor = u64::from(WIDTH * HEIGHT) * 4;
    let drawn = in_pass
        .ui_in_pass
        .expect("the UI was drawn in the tile pass");
    assert!(
        drawn.items >= 20 && drawn.quads > drawn.items,
        "{name}: {drawn:?}"
    );
    assert!(in_pass.ui_pass.is_none(), "{name}");
    assert_eq!(in_pass.render_passes_recorded, 1, "{name}");
    assert_eq!(in_pass.compiled.render_pass_count(), 1, "{name}");
    let last = in_pass.compiled.native_passes[0].subpasses.last();
    assert_eq!(last.map(|s| s.name.as_str()), Some("ui"), "{name}");
    // The tile pass's own traffic (Bevy's shadow maps are priced beside it, the same for both).
    assert_eq!(in_pass.compiled.cost.bytes(), floor, "{name}");
    assert_eq!(
        in_pass.priced.cost.bytes(),
        after_pass.priced.cost.bytes(),
        "{name}"
    );
    assert!(after_pass.ui_in_pass.is_none(), "{name}");
    assert_eq!(
        after_pass.ui_after_pass_reason.as_deref(),
        Some("TileDeferred::ui_in_pass is off"),
        "{name}"
    );
    let priced = after_pass.ui_pass.as_ref().expect("priced after the pass");
    let after = after_pass.compiled.cost.bytes() + priced.cost.bytes();
    eprintln!(
        "{name}: {drawn:?}; in the pass {:.2} MB per frame ({:.2}x the floor), after it {:.2} MB \
         ({:.2}x, {} more passes), besides the shadow maps",
        in_pass.compiled.cost.bytes() as f64 / 1e6,
        in_pass.compiled.cost.bytes() as f64 / floor as f64,
        after as f64 / 1e6,
        after as f64 / floor as f64,
        priced.render_pass_count()
    );
}

/// The element's laid-out box in pixels, clamped to the image.
fn element_rect(world: &World, element: Entity) -> URect {
    ui_overlay::node_rect(
        element,
        world.get::<ComputedNode>(element).expect("laid out"),
        world.get::<UiGlobalTransform>(element).expect("laid out"),
    )
}

/// A region shows something when it is not one flat colour (each element has edges, text or
/// an image in it).
fn shows_something(frame: &Frame) -> bool {
    let first = &frame.rgba[..4];
    frame
        .rgba
        .chunks_exact(4)
        .filter(|p| (0..3).any(|c| p[c].abs_diff(first[c]) > 24))
        .count()
        > 20
}

/// The failure message (with saved images) of a region below the bar.
fn compare(name: &str, in_pass: &Frame, after_pass: &Frame) -> Option<String> {
    let psnr = image_compare::psnr(in_pass, after_pass);
    let p995 = image_compare::channel_difference_percentile(in_pass, after_pass, 99.5);
    eprintln!("{name}: PSNR {psnr:.2} dB, p99.5 {p995}");
    (psnr < MIN_PSNR || p995 > MAX_P995).then(|| {
        let paths = [
            in_pass.save_png(&format!("{name}-in-pass")),
            after_pass.save_png(&format!("{name}-after-pass")),
            image_compare::difference_image(in_pass, after_pass).save_png(&format!("{name}-diff")),
        ];
        format!(
            "{name}: PSNR {psnr:.2} dB (need >= {MIN_PSNR}), p99.5 {p995} (need <= {MAX_P995}); \
             images: {}",
            paths.map(|p| p.display().to_string()).join(", ")
        )
    })
}

/// The HUD on a second tile camera drawing into a viewport of the first camera's target (a
/// split screen's second player): the UI view covers the viewport, the tile pass's render area
/// is the viewport and the output keeps what the first camera drew. In the pass against after
/// it, the viewport's region >= 40 dB, the first camera's part of the image unchanged.
#[test]
fn a_hud_on_a_second_camera_in_a_viewport() {
    let _test = GpuTest::start("a_hud_on_a_second_camera_in_a_viewport");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.app.add_systems(Update, count_frames);
    headless.update();
    ui_overlay::spawn_scene(headless.app.world_mut());
    let checker = checker_image(headless.app.world_mut());
    let viewport = URect::from_corners(UVec2::new(48, 36), UVec2::new(WIDTH, HEIGHT));
    let mut targets = Vec::new();
    let mut second_cameras = Vec::new();
    for in_pass in [true, false] {
        let target = headless.add_target(WIDTH, HEIGHT);
        let world = headless.app.world_mut();
        let view =
            Transform::from_xyz(-2.5, 3.0, 5.0).looking_at(Vec3::new(0.0, 0.4, 0.0), Vec3::Y);
        world.spawn((
            Camera3d::default(),
            view,
            RenderTarget::Image(target.clone().into()),
            TileDeferred::default(),
        ));
        let second = world
            .spawn((
                Camera3d::default(),
                Camera {
                    order: 1,
                    viewport: Some(bevy::camera::Viewport {
                        physical_position: viewport.min,
                        physical_size: viewport.size(),
                        ..default()
                    }),
                    ..default()
                },
                Transform::from_xyz(2.5, 2.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
                RenderTarget::Image(target.clone().into()),
                TileDeferred {
                    ui_in_pass: in_pass,
                    ..default()
                },
            ))
            .id();
        spawn_hud(world, second, checker.clone(), ZStackExtra::None);
        targets.push(target);
        second_cameras.push(second);
    }
    for _ in 0..8 {
        headless.update();
    }
    let frames = headless.read_images(&targets);
    let (in_pass, after_pass) = (&frames[0], &frames[1]);
    let path = in_pass.save_png("hud-viewport-in-pass");
    eprintln!(
        "hud-viewport: the target with the UI in the pass: {}",
        path.display()
    );
    let mut failures = Vec::new();
    failures.extend(compare(
        "hud-viewport",
        &ui_overlay::crop(in_pass, viewport),
        &ui_overlay::crop(after_pass, viewport),
    ));
    failures.extend(compare("hud-viewport-whole-target", in_pass, after_pass));
    if !shows_something(&ui_overlay::crop(in_pass, viewport)) {
        failures.push("hud-viewport: the viewport is one colour".into());
    }
    let reports = headless.app.world().resource::<TileRenderReports>();
    let report = reports.get(second_cameras[0]).expect("a report");
    let drawn = report
        .ui_in_pass
        .expect("the UI was drawn in the tile pass");
    assert!(
        report.ui_pass.is_none(),
        "{:?}",
        report.ui_after_pass_reason
    );
    assert_eq!(report.compiled.render_pass_count(), 1);
    eprintln!("hud-viewport: {drawn:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
