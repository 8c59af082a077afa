//! bevy_ui over a tile camera (feature `ui`, issue 14): a panel (a translucent node with a
//! rounded border), an opaque node and a text label over a lit 3D scene, drawn inside the tile
//! render pass (issue 29), compared with the same UI over the same scene on a Bevy (`Core3d`)
//! camera in the same app: HDR off, HDR on and 4x MSAA, the whole frame and the region of each UI
//! element on its own (>= 36 dB PSNR, p99.5 <= 8/255). Each element must also show in both
//! images (its colour in its region), so UI that both renderers left out could not pass. The
//! tile frame's report must be one render pass ending in the UI subpass and storing only the
//! output, with nothing priced after it, and UI must not be listed as missing.
//!
//! The same UI over the lit spheres on a tile camera in a window (1x and 4x MSAA, under Xvfb):
//! what is presented must be Bevy's screenshot, show every element over the tile frame, and
//! leave the frame unchanged outside the UI; no pass follows the tile pass, not even the empty
//! one that stores a window's image for wgpu.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp, image_compare,
        presented::{self, PresentedAndScreenshot},
        run_window_test_in_child_process, test_plugins,
        window::{self as harness_window, Shared},
    },
    scenes,
};
use bevy::{
    camera::{Hdr, RenderTarget},
    diagnostic::FrameCount,
    prelude::*,
    render::view::Msaa,
    ui::{ComputedNode, UiGlobalTransform},
    window::WindowResolution,
};
use bevy_tile_deferred::{
    TileDeferred, TileDeferredPlugin, TileRenderReports, TileViewReport, tiers::TierDecision,
    tile_deferred::missing::TileMissing,
};

pub(crate) const WIDTH: u32 = 320;
pub(crate) const HEIGHT: u32 = 240;
const MIN_PSNR: f64 = 36.0;
const MAX_P995: u8 = 8;
/// The opaque node's colour: UI is drawn after tone mapping, so it shows exactly (sRGB).
const OPAQUE_SRGB: [u8; 3] = [230, 120, 20];
/// The label's colour.
const LABEL_SRGB: [u8; 3] = [255, 255, 255];
/// The panel's translucent background.
const PANEL_BACKGROUND: Color = Color::srgba(0.1, 0.3, 0.9, 0.55);

/// One way of rendering both cameras.
#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    hdr: bool,
    msaa: Msaa,
}

const CASES: [Case; 3] = [
    Case {
        name: "hdr-off",
        hdr: false,
        msaa: Msaa::Off,
    },
    Case {
        name: "hdr-on",
        hdr: true,
        msaa: Msaa::Off,
    },
    Case {
        name: "msaa4",
        hdr: false,
        msaa: Msaa::Sample4,
    },
];

/// The UI elements over each camera, by name.
const ELEMENTS: [&str; 3] = ["panel", "opaque", "label"];

/// A small lit scene like Bevy's 3D examples: a ground plane, a cube and a sphere, a shadowed
/// directional light and a point light.
pub(crate) fn spawn_scene(world: &mut World) {
    let (plane, cube, sphere) = {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        (
            meshes.add(Plane3d::default().mesh().size(8.0, 8.0)),
            meshes.add(Cuboid::new(1.0, 1.0, 1.0)),
            meshes.add(Sphere::new(0.6).mesh().uv(32, 18)),
        )
    };
    let (ground, red, blue) = {
        let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
        (
            materials.add(Color::srgb(0.3, 0.5, 0.3)),
            materials.add(Color::srgb(0.8, 0.2, 0.2)),
            materials.add(StandardMaterial {
                base_color: Color::srgb(0.2, 0.3, 0.9),
                perceptual_roughness: 0.3,
                ..default()
            }),
        )
    };
    world.spawn((Mesh3d(plane), MeshMaterial3d(ground)));
    world.spawn((
        Mesh3d(cube),
        MeshMaterial3d(red),
        Transform::from_xyz(-0.8, 0.5, 0.0),
    ));
    world.spawn((
        Mesh3d(sphere),
        MeshMaterial3d(blue),
        Transform::from_xyz(0.9, 0.6, 0.4),
    ));
    world.spawn((
        DirectionalLight {
            illuminance: 8000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(3.0, 6.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    world.spawn((
        PointLight {
            intensity: 200_000.0,
            ..default()
        },
        Transform::from_xyz(-2.0, 2.5, 2.0),
    ));
}

/// The UI over `camera`: a translucent panel with a rounded border, an opaque node and a text
/// label. Returns the element entities in [`ELEMENTS`] order.
fn spawn_ui(world: &mut World, camera: Entity) -> [Entity; 3] {
    let root = world
        .spawn((
            Node {
                width: percent(100),
                height: percent(100),
                ..default()
            },
            UiTargetCamera(camera),
        ))
        .id();
    let panel = world
        .spawn((
            Node {
                position_type: PositionType::Absolute,
                left: px(16),
                top: px(16),
                width: px(140),
                height: px(70),
                border: UiRect::all(px(5)),
                border_radius: BorderRadius::all(px(12)),
                ..default()
            },
            BackgroundColor(PANEL_BACKGROUND),
            BorderColor::all(Color::srgb(1.0, 0.85, 0.1)),
            ChildOf(root),
        ))
        .id();
    let [r, g, b] = OPAQUE_SRGB;
    let opaque = world
        .spawn((
            Node {
                position_type: PositionType::Absolute,
                right: px(20),
                top: px(24),
                width: px(60),
                height: px(40),
                ..default()
            },
            BackgroundColor(Color::srgb_u8(r, g, b)),
            ChildOf(root),
        ))
        .id();
    let [r, g, b] = LABEL_SRGB;
    let label = world
        .spawn((
            Text::new("Tile UI 42"),
            TextFont {
                font_size: 26.0.into(),
                ..default()
            },
            TextColor(Color::srgb_u8(r, g, b)),
            Node {
                position_type: PositionType::Absolute,
                left: px(24),
                bottom: px(20),
                ..default()
            },
            ChildOf(root),
        ))
        .id();
    [panel, opaque, label]
}

/// An element's rectangle in physical pixels (its node's box, 2 pixels larger for anti-aliased
/// edges), clamped to the image.
fn element_rect(world: &World, element: Entity) -> URect {
    node_rect(
        element,
        world.get::<ComputedNode>(element).expect("laid out"),
        world.get::<UiGlobalTransform>(element).expect("laid out"),
    )
}

/// [`element_rect`] from the element's laid-out node and transform.
pub(crate) fn node_rect(
    element: Entity,
    node: &ComputedNode,
    transform: &UiGlobalTransform,
) -> URect {
    let centre = transform.affine().translation;
    let half = node.size / 2.0 + 2.0;
    let min = (centre - half).max(Vec2::ZERO).floor().as_uvec2();
    let max = (centre + half)
        .min(Vec2::new(WIDTH as f32, HEIGHT as f32))
        .ceil()
        .as_uvec2();
    assert!(
        max.x > min.x + 4 && max.y > min.y + 4,
        "element {element} is laid out too small: {min}..{max}"
    );
    URect::from_corners(min, max)
}

pub(crate) fn crop(frame: &Frame, rect: URect) -> Frame {
    let row = frame.width as usize * 4;
    let rgba = (rect.min.y..rect.max.y)
        .flat_map(|y| {
            &frame.rgba[y as usize * row + rect.min.x as usize * 4..][..rect.width() as usize * 4]
        })
        .copied()
        .collect();
    Frame {
        width: rect.width(),
        height: rect.height(),
        rgba,
    }
}

/// Pixels of `frame` within `tolerance` of `srgb` on every channel.
fn pixels_of(frame: &Frame, srgb: [u8; 3], tolerance: u8) -> usize {
    frame
        .rgba
        .chunks_exact(4)
        .filter(|p| (0..3).all(|c| p[c].abs_diff(srgb[c]) <= tolerance))
        .count()
}

/// Whether `frame` (an element's region) shows the element: the opaque node's colour over most
/// of its box, the label's white glyphs, the panel's yellow border.
fn shows(element: &str, frame: &Frame) -> bool {
    let (found, needed) = element_pixels(element, frame);
    found >= needed
}

/// The pixels of `frame` (an element's region) in the element's colour, and how many show it.
fn element_pixels(element: &str, frame: &Frame) -> (usize, usize) {
    let pixels = (frame.width * frame.height) as usize;
    match element {
        "opaque" => (pixels_of(frame, OPAQUE_SRGB, 2), (pixels * 7).div_ceil(10)),
        "label" => (pixels_of(frame, LABEL_SRGB, 24), 60),
        "panel" => (pixels_of(frame, [255, 237, 28], 24), 300),
        _ => unreachable!(),
    }
}

/// Compares two frames; the failure message (with saved images) when below the bar.
fn compare(name: &str, tile: &Frame, forward: &Frame) -> (f64, u8, Option<String>) {
    let psnr = image_compare::psnr(tile, forward);
    let p995 = image_compare::channel_difference_percentile(tile, forward, 99.5);
    let failure = (psnr < MIN_PSNR || p995 > MAX_P995).then(|| {
        let paths = [
            tile.save_png(&format!("{name}-actual")),
            forward.save_png(&format!("{name}-expected")),
            image_compare::difference_image(tile, forward).save_png(&format!("{name}-diff")),
        ];
        format!(
            "{name}: PSNR {psnr:.2} dB (need >= {MIN_PSNR}), p99.5 {p995} (need <= {MAX_P995}); \
             images: {}",
            paths.map(|p| p.display().to_string()).join(", ")
        )
    });
    (psnr, p995, failure)
}

#[test]
fn ui_over_a_tile_camera_matches_bevy() {
    let _test = GpuTest::start("ui_over_a_tile_camera_matches_bevy");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.update();
    spawn_scene(headless.app.world_mut());
    // Per case: (forward target, tile target, tile camera, [forward elements, tile elements]).
    let mut spawned = Vec::new();
    for case in CASES {
        let mut targets = Vec::new();
        let mut cameras = Vec::new();
        let mut elements = Vec::new();
        for tile in [false, true] {
            let target = headless.add_target(WIDTH, HEIGHT);
            let world = headless.app.world_mut();
            let mut camera = world.spawn((
                Camera3d::default(),
                Transform::from_xyz(-2.5, 3.0, 5.0).looking_at(Vec3::new(0.0, 0.4, 0.0), Vec3::Y),
                RenderTarget::Image(target.clone().into()),
                case.msaa,
            ));
            if case.hdr {
                camera.insert(Hdr);
            }
            if tile {
                camera.insert(TileDeferred::default());
            }
            let camera = camera.id();
            elements.push(spawn_ui(world, camera));
            targets.push(target);
            cameras.push(camera);
        }
        spawned.push((case, targets, cameras, elements));
    }
    for _ in 0..6 {
        headless.update();
    }
    let images: Vec<Handle<Image>> = spawned
        .iter()
        .flat_map(|(_, targets, _, _)| targets.iter().cloned())
        .collect();
    let frames = headless.read_images(&images);

    let mut failures = Vec::new();
    for ((case, _, cameras, elements), pair) in spawned.iter().zip(frames.chunks_exact(2)) {
        let (forward, tile) = (&pair[0], &pair[1]);
        let name = format!("ui-{}", case.name);
        let (psnr, p995, failure) = compare(&name, tile, forward);
        eprintln!("{name}: whole frame PSNR {psnr:.2} dB, p99.5 {p995}");
        failures.extend(failure);
        let world = headless.app.world();
        for (i, element) in ELEMENTS.iter().enumerate() {
            // The same layout over both cameras (same size): the tile camera's rectangle.
            let rect = element_rect(world, elements[1][i]);
            assert_eq!(
                rect,
                element_rect(world, elements[0][i]),
                "{element} layout"
            );
            let (tile, forward) = (crop(tile, rect), crop(forward, rect));
            let region = format!("{name}-{element}");
            let (psnr, p995, failure) = compare(&region, &tile, &forward);
            eprintln!("{region}: region {rect:?} PSNR {psnr:.2} dB, p99.5 {p995}");
            failures.extend(failure);
            for (renderer, frame) in [("tile", &tile), ("Bevy forward", &forward)] {
                if !shows(element, frame) {
                    let path = frame.save_png(&format!("{region}-{renderer}"));
                    failures.push(format!(
                        "{region}: the {renderer} image does not show the {element} ({})",
                        path.display()
                    ));
                }
            }
        }

        // The tile camera rendered with the tile path, UI not listed as missing, and its frame
        // is still one render pass storing only the output, the UI in it.
        let tile_camera = cameras[1];
        let decision = world.get::<TierDecision>(tile_camera).expect("decided");
        assert!(decision.tier.is_tile(), "{name}: {}", decision.summary());
        let missing = world
            .get::<TileMissing>(tile_camera)
            .map(|m| m.items.clone())
            .unwrap_or_default();
        assert!(missing.is_empty(), "{name}: reported missing: {missing:?}");
        let report = world
            .resource::<TileRenderReports>()
            .get(tile_camera)
            .expect("a tile report");
        assert_eq!(report.render_passes_recorded, 1, "{name}");
        assert_eq!(report.compiled.render_pass_count(), 1, "{name}");
        let stored: Vec<&str> = report
            .attachments
            .iter()
            .filter(|a| a.store_op == "STORE")
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(stored, ["output"], "{name}: {:?}", report.attachments);
        check_ui_route(&name, &report);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// In a window (issue 14): the same UI over the lit spheres on a tile camera drawing into a
// window, hidden and then shown. What is presented (the X server's copy of the window, the
// swapchain image) must be Bevy's screenshot of it: the tile pass stores the swapchain image in
// an empty wgpu pass first, or wgpu would zero-fill it before the UI's composite loads it. So
// the presented UI must show each element, the translucent panel must be blended over the tile
// frame (not over black), and outside the UI the window must show the tile frame unchanged.

#[test]
fn ui_over_a_tile_camera_in_a_window() {
    run_window_test_in_child_process("ui_overlay::child_ui_over_a_tile_camera_in_a_window");
}

#[test]
fn ui_over_an_msaa_tile_camera_in_a_window() {
    run_window_test_in_child_process("ui_overlay::child_ui_over_an_msaa_tile_camera_in_a_window");
}

#[test]
#[ignore = "run in a child process by ui_over_a_tile_camera_in_a_window (one winit event loop \
            per process)"]
fn child_ui_over_a_tile_camera_in_a_window() {
    ui_window_run(
        "child_ui_over_a_tile_camera_in_a_window",
        "ui-window",
        Msaa::Off,
    );
}

#[test]
#[ignore = "run in a child process by ui_over_an_msaa_tile_camera_in_a_window (one winit event \
            loop per process)"]
fn child_ui_over_an_msaa_tile_camera_in_a_window() {
    ui_window_run(
        "child_ui_over_an_msaa_tile_camera_in_a_window",
        "ui-window-msaa4",
        Msaa::Sample4,
    );
}

/// What the window run saw; read once `app.run()` returns.
#[derive(Default)]
struct UiWindowRun {
    /// The window's title (window tests find their window by it).
    title: &'static str,
    camera: Option<Entity>,
    /// The UI's root node (hidden at first) and its elements, in [`ELEMENTS`] order.
    root: Option<Entity>,
    elements: Option<[Entity; 3]>,
    /// The frame from which the current state is settled.
    settled_at: Option<u32>,
    capture: PresentedAndScreenshot,
    /// (presented, screenshot) with the UI hidden, then shown.
    hidden: Option<(Frame, Frame)>,
    shown: Option<(Frame, Frame)>,
    /// The elements' regions, laid out, with the UI shown.
    rects: Option<[URect; 3]>,
    /// The camera's tier decision (summary), whether it is a tile tier, what it lacks.
    tier: Option<(bool, String)>,
    missing: Vec<String>,
    report: Option<TileViewReport>,
}

/// Runs the lit spheres under a tile camera with `msaa` in a `WIDTH` x `HEIGHT` window with the
/// UI over it, captures the presented window and a screenshot with the UI hidden and shown, and
/// checks them (images written as `<images>-<hidden|shown>-presented.png` and `-screenshot.png`).
fn ui_window_run(name: &'static str, images: &str, msaa: Msaa) {
    let test = GpuTest::start(name);
    let shared = Shared::<UiWindowRun>::default();
    shared.lock().title = name;
    let mut app = App::new();
    app.add_plugins(test_plugins(Some(Window {
        resolution: WindowResolution::new(WIDTH, HEIGHT),
        title: name.into(),
        ..default()
    })))
    .add_plugins(TileDeferredPlugin)
    .insert_resource(shared.clone())
    .add_systems(Startup, move |world: &mut World| {
        scenes::spawn_lit_spheres(world);
        let camera = world
            .spawn((
                Camera3d::default(),
                scenes::reference_camera(),
                scenes::reference_camera_transform(),
                msaa,
                TileDeferred::default(),
            ))
            .id();
        let elements = spawn_ui(world, camera);
        let root = world
            .get::<ChildOf>(elements[0])
            .expect("the elements are children of the root")
            .parent();
        world.entity_mut(root).insert(Visibility::Hidden);
        let shared = world.resource::<Shared<UiWindowRun>>().clone();
        let mut run = shared.lock();
        run.camera = Some(camera);
        run.root = Some(root);
        run.elements = Some(elements);
    })
    .add_systems(Update, drive_ui_window_run);
    app.run();

    let run = shared.take();
    let errors = test.take_errors();
    assert!(errors.is_empty(), "errors in the window run: {errors:#?}");
    let (hidden, hidden_screenshot) = run.hidden.expect("captured with the UI hidden");
    let (shown, shown_screenshot) = run.shown.expect("captured with the UI shown");
    let rects = run.rects.expect("the UI was laid out");

    // (1) What the window shows is Bevy's screenshot of it, with the UI hidden and shown; (2)
    // nowhere is it wgpu's zero fill (the UI has no black).
    for (state, presented, screenshot) in [
        ("hidden", &hidden, &hidden_screenshot),
        ("shown", &shown, &shown_screenshot),
    ] {
        let step = format!("{images}-{state}");
        presented.save_png(&format!("{step}-presented"));
        screenshot.save_png(&format!("{step}-screenshot"));
        assert_eq!(
            (presented.width, presented.height),
            (WIDTH, HEIGHT),
            "{step}: the window's size"
        );
        presented::assert_presented_matches_screenshot(&step, presented, screenshot, None);
        let ((_, _), (differ, total)) =
            presented::differing_inside_and_out(presented, screenshot, None);
        let (black, pixels) = presented::black_outside(presented, None);
        eprintln!(
            "{step}: {differ} of {total} pixels differ from the screenshot, {black} of {pixels} \
             black"
        );
        assert!(
            black * 100 < pixels,
            "{step}: {black} of {pixels} presented pixels are black"
        );
    }

    // Each element shows in its region of the presented window (and of the screenshot), and
    // did not before the UI was shown.
    let mut failures = Vec::new();
    for (element, rect) in ELEMENTS.iter().zip(rects) {
        for (what, frame, expected) in [
            ("presented", &shown, true),
            ("screenshot", &shown_screenshot, true),
            ("presented without the UI", &hidden, false),
        ] {
            let region = crop(frame, rect);
            let (found, needed) = element_pixels(element, &region);
            eprintln!(
                "{images}: {element} {rect:?}, {what}: {found} of {} pixels in its colour \
                 (shows it from {needed})",
                rect.width() * rect.height()
            );
            if shows(element, &region) != expected {
                let path = region.save_png(&format!("{images}-{element}-{what}"));
                failures.push(format!(
                    "{images}: the {what} window {} the {element} in {rect:?} ({})",
                    if expected {
                        "does not show"
                    } else {
                        "already shows"
                    },
                    path.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Outside the UI the window shows the tile frame it showed without the UI.
    let outside_ui = |x: u32, y: u32| !rects.iter().any(|r| r.contains(UVec2::new(x, y)));
    let (mut differ, mut total) = (0, 0);
    for y in 0..HEIGHT {
        for x in (0..WIDTH).filter(|&x| outside_ui(x, y)) {
            let (a, b) = (
                hidden.pixel(x as i32, y as i32),
                shown.pixel(x as i32, y as i32),
            );
            differ += usize::from((0..3).any(|c| a[c].abs_diff(b[c]) > 8));
            total += 1;
        }
    }
    eprintln!("{images}: outside the UI {differ} of {total} pixels changed when it was shown");
    assert!(
        differ * 500 <= total,
        "{images}: showing the UI changed {differ} of {total} pixels outside it"
    );
    let drawn = harness_window::drawn_fraction(&hidden);
    eprintln!("{images}: {drawn:.2} of the window differs from the clear colour");
    assert!(
        drawn > 0.2,
        "{images}: the lit spheres are drawn ({drawn:.2})"
    );

    // Inside the panel's border its translucent background is blended over the tile frame
    // (in linear light: sRGB render targets), not over black.
    let panel = rects[0];
    let inner = URect::from_corners(panel.min + 15, panel.max - 15);
    let background = PANEL_BACKGROUND.to_linear();
    let alpha = background.alpha;
    let (mut close, mut worst, mut pixels) = (0, 0, 0);
    for y in inner.min.y..inner.max.y {
        for x in inner.min.x..inner.max.x {
            let under = hidden.pixel(x as i32, y as i32);
            let under = Color::srgb_u8(under[0], under[1], under[2]).to_linear();
            let expected = Color::LinearRgba(LinearRgba::rgb(
                background.red * alpha + under.red * (1.0 - alpha),
                background.green * alpha + under.green * (1.0 - alpha),
                background.blue * alpha + under.blue * (1.0 - alpha),
            ))
            .to_srgba()
            .to_u8_array();
            let actual = shown.pixel(x as i32, y as i32);
            let d = (0..3)
                .map(|c| actual[c].abs_diff(expected[c]))
                .max()
                .unwrap();
            worst = worst.max(d);
            close += usize::from(d <= 4);
            pixels += 1;
        }
    }
    eprintln!(
        "{images}: panel interior {inner:?}: {close} of {pixels} pixels within 4 of the \
         background blended over the tile frame (worst {worst})"
    );
    assert!(
        close * 100 >= pixels * 95,
        "{images}: the panel is not blended over the tile frame: {close} of {pixels} pixels \
         within 4 (worst {worst})"
    );

    // (3) The camera rendered with the tile path, with nothing missing; its frame is one render
    // pass storing only the output, the UI in it.
    let (is_tile, summary) = run.tier.expect("the tier was decided");
    assert!(is_tile, "{images}: {summary}");
    assert!(
        run.missing.is_empty(),
        "{images}: reported missing: {:?}",
        run.missing
    );
    let report = run.report.expect("a tile report");
    assert_eq!(report.samples, msaa.samples(), "{images}");
    assert_eq!(report.render_passes_recorded, 1, "{images}");
    assert_eq!(report.compiled.render_pass_count(), 1, "{images}");
    let stored: Vec<&str> = report
        .attachments
        .iter()
        .filter(|a| a.store_op == "STORE")
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(stored, ["output"], "{images}: {:?}", report.attachments);
    // No pass after the tile pass: not even the empty one that stores a window's image for
    // wgpu (`TileOutputLoadedAfter`).
    eprintln!("{images}: {summary}");
    check_ui_route(images, &report);
}

/// The camera's UI was drawn inside the tile render pass, in its last subpass (with MSAA, the
/// subpass that resolves): nothing is priced apart, and the frame (one render pass) stores the
/// 4-byte output once, all of its traffic.
fn check_ui_route(name: &str, report: &TileViewReport) {
    let pixels = u64::from(WIDTH * HEIGHT);
    let in_pass = report
        .ui_in_pass
        .expect("the UI was drawn in the tile pass");
    assert!(
        report.ui_pass.is_none() && report.ui_after_pass_reason.is_none(),
        "{name}: UI drawn after the pass too ({:?})",
        report.ui_after_pass_reason
    );
    let native = &report.compiled.native_passes[0];
    let last = native.subpasses.last().expect("subpasses");
    assert_eq!(last.name, "ui", "{name}: {}", report.compiled.describe());
    if report.samples > 1 {
        assert_eq!(
            last.resolve.len(),
            1,
            "{name}: {}",
            report.compiled.describe()
        );
    }
    assert!(
        in_pass.items >= 3 && in_pass.quads >= in_pass.items && in_pass.batches >= 1,
        "{name}: {in_pass:?}"
    );
    assert_eq!(
        report.compiled.cost.bytes(),
        pixels * 4,
        "{name}: {}",
        report.compiled.describe()
    );
    eprintln!(
        "{name}: UI in the tile pass at {}x ({in_pass:?}); the frame: {} render pass, {:.2} MB",
        report.samples,
        report.compiled.render_pass_count(),
        report.compiled.cost.bytes() as f64 / 1e6
    );
}

fn drive_ui_window_run(
    mut commands: Commands,
    frames: Res<FrameCount>,
    shared: Res<Shared<UiWindowRun>>,
    mut visibility: Query<&mut Visibility>,
    nodes: Query<(&ComputedNode, &UiGlobalTransform)>,
    decisions: Query<(&TierDecision, Option<&TileMissing>)>,
    reports: Res<TileRenderReports>,
    mut exit: MessageWriter<AppExit>,
) {
    let mut run = shared.lock();
    let run = &mut *run;
    if run.shown.is_some() || frames.0 > 600 {
        exit.write(AppExit::Success);
        return;
    }
    // Set the state (the UI hidden, then shown), then give it frames to settle.
    let Some(settled_at) = run.settled_at else {
        if run.hidden.is_some()
            && let Some(mut root) = run.root.and_then(|root| visibility.get_mut(root).ok())
        {
            *root = Visibility::Inherited;
        }
        run.settled_at = Some(frames.0 + 20);
        return;
    };
    if frames.0 < settled_at {
        return;
    }
    let title = run.title;
    let Some(captured) = run.capture.step(&mut commands, title) else {
        return;
    };
    if run.hidden.is_none() {
        run.hidden = Some(captured);
        run.settled_at = None;
        return;
    }
    let elements = run.elements.expect("the UI was spawned");
    run.rects = Some(elements.map(|element| {
        let (node, transform) = nodes.get(element).expect("laid out");
        node_rect(element, node, transform)
    }));
    let camera = run.camera.expect("the camera was spawned");
    if let Ok((decision, missing)) = decisions.get(camera) {
        run.tier = Some((decision.tier.is_tile(), decision.summary()));
        run.missing = missing
            .map(|m| m.items.iter().map(|item| format!("{item:?}")).collect())
            .unwrap_or_default();
    }
    run.report = reports.get(camera);
    run.shown = Some(captured);
}
