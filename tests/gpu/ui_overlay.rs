//! bevy_ui over a tile camera (feature `ui`, issue 14): a panel (a translucent node with a
//! rounded border), an opaque node and a text label over a lit 3D scene, drawn by Bevy's own UI
//! pass after the tile pass, compared with the same UI over the same scene on a Bevy (`Core3d`)
//! camera in the same app: HDR off, HDR on and 4x MSAA, the whole frame and the region of each UI
//! element on its own (>= 36 dB PSNR, p99.5 <= 8/255). Each element must also show in both
//! images (its colour in its region), so UI that both renderers left out could not pass. The
//! tile frame's report must still be one render pass storing only the output, with the UI's own
//! passes priced apart, and UI must not be listed as missing.

use crate::harness::{Frame, GpuTest, HeadlessApp, image_compare};
use bevy::{
    camera::{Hdr, RenderTarget},
    prelude::*,
    render::view::Msaa,
    ui::{ComputedNode, UiGlobalTransform},
};
use bevy_tile_deferred::{
    TileDeferred, TileRenderReports, tiers::TierDecision, tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 320;
const HEIGHT: u32 = 240;
const MIN_PSNR: f64 = 36.0;
const MAX_P995: u8 = 8;
/// The opaque node's colour: UI is drawn after tone mapping, so it shows exactly (sRGB).
const OPAQUE_SRGB: [u8; 3] = [230, 120, 20];
/// The label's colour.
const LABEL_SRGB: [u8; 3] = [255, 255, 255];

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
fn spawn_scene(world: &mut World) {
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
            BackgroundColor(Color::srgba(0.1, 0.3, 0.9, 0.55)),
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
    let node = world.get::<ComputedNode>(element).expect("laid out");
    let centre = world
        .get::<UiGlobalTransform>(element)
        .expect("laid out")
        .affine()
        .translation;
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

fn crop(frame: &Frame, rect: URect) -> Frame {
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
    let pixels = (frame.width * frame.height) as usize;
    match element {
        "opaque" => pixels_of(frame, OPAQUE_SRGB, 2) * 10 >= pixels * 7,
        "label" => pixels_of(frame, LABEL_SRGB, 24) >= 60,
        "panel" => pixels_of(frame, [255, 237, 28], 24) >= 300,
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
        // is still one render pass storing only the output, with the UI priced apart.
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
        let ui = report.ui_pass.as_ref().expect("the UI's passes are priced");
        // Clear, ui_pass, composite: an image target needs no pass storing it for wgpu.
        assert_eq!(ui.render_pass_count(), 3, "{name}: {}", ui.describe());
        let pixels = u64::from(WIDTH * HEIGHT);
        // Main texture: stored by the clear, loaded and stored by ui_pass, read by the
        // composite; output (RGBA8): loaded and stored by the composite.
        let main_bytes = if case.hdr { 8 } else { 4 };
        assert_eq!(
            ui.cost.bytes(),
            pixels * (4 * main_bytes + 2 * 4),
            "{name}: {}",
            ui.describe()
        );
        eprintln!(
            "{name}: tile frame {} render pass(es), stores {stored:?}; UI passes {} ({:.2} MB)",
            report.compiled.render_pass_count(),
            ui.render_pass_count(),
            ui.cost.bytes() as f64 / 1e6
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
