//! Gizmos over a tile camera (feature `gizmos`, issue 14): drawn as Bevy draws them, or never
//! silently missing.
//!
//! The tile path finds the gizmo draws Bevy queued for a tile camera (its `Transparent3d`
//! phase). Where it can, it draws them after its pass with Bevy's own draw functions: the tile
//! pass ends with a depth export subpass into Bevy's depth texture, and the gizmos are drawn into
//! the main texture over that depth and blended over the output. On an HDR camera, whose gizmos
//! Bevy tone maps with the scene, the tile pass stores its light from the frame after the gizmos
//! appear, the gizmos are drawn into it (with MSAA: into every sample of Bevy's multisampled texture first), and
//! Bevy's own tone mapping runs after them. Where it cannot draw them (the unmerged debug tier,
//! which has no depth export), it reports them in `TileMissing`, keeps a forced tier rendering
//! and logs them once. With the gizmo plugin in the app and nothing drawn, or gizmos drawn on
//! render layers the camera does not see, nothing changes.
//!
//! The scene: lit meshes and, while `DrawGizmos` is on, a magenta line, sphere and grid, the
//! line passing behind the cube (depth-tested away there). Cameras, all in one app: Bevy's
//! (`Core3d`), an `Auto` and a forced tile camera at 1x, a Bevy / `Auto` pair at 4x MSAA, a
//! Bevy / `Auto` / forced trio with `Hdr`, a Bevy / `Auto` pair with `Hdr` at 4x, and a camera
//! forced to the unmerged tier. The tile images must match Bevy's (>= 36 dB PSNR,
//! p99.5 <= 8/255; 4x: >= 34 dB, the MSAA bar; the whole frame and the gizmos' region) and show
//! the gizmos (magenta pixels), so that a pass that did not draw them could not pass.

use crate::harness::{Frame, GpuTest, HeadlessApp, image_compare, lower_right_viewport};
use bevy::{
    camera::{Hdr, RenderTarget, visibility::RenderLayers},
    gizmos::config::{DefaultGizmoConfigGroup, GizmoConfigStore},
    prelude::*,
    render::view::Msaa,
};
use bevy_tile_deferred::{
    TileDeferred, TileRenderReports,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 192;
const MIN_PSNR: f64 = 36.0;
const MAX_P995: u8 = 8;
/// The gizmos' colour: drawn after the meshes' in-shader tone mapping with HDR off, it shows as
/// it is (sRGB); nothing else in the scene is near it.
const GIZMO_SRGB: [u8; 3] = [255, 0, 255];

/// Whether the `Update` system draws the gizmos this frame.
#[derive(Resource)]
struct DrawGizmos(bool);

fn draw_gizmos(draw: Res<DrawGizmos>, mut gizmos: Gizmos) {
    if !draw.0 {
        return;
    }
    let [r, g, b] = GIZMO_SRGB;
    let magenta = Color::srgb_u8(r, g, b);
    // From in front of the scene to behind the cube: partly hidden by it.
    gizmos.line(
        Vec3::new(1.8, 0.5, 1.5),
        Vec3::new(-1.6, 0.5, -1.6),
        magenta,
    );
    gizmos.sphere(
        Isometry3d::from_translation(Vec3::new(0.9, 0.6, 0.4)),
        0.8,
        magenta,
    );
    gizmos.grid(
        Isometry3d::new(
            Vec3::new(0.0, 0.01, 0.0),
            Quat::from_rotation_x(std::f32::consts::FRAC_PI_2),
        ),
        UVec2::splat(6),
        Vec2::splat(0.5),
        magenta,
    );
}

/// Lit meshes: a ground plane, a cube (which hides part of the line) and a sphere, a shadowed
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
            materials.add(Color::srgb(0.2, 0.3, 0.9)),
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

/// Magenta pixels (within 40/255 per channel) and their bounding box.
fn gizmo_pixels(frame: &Frame) -> (usize, Option<URect>) {
    let mut count = 0;
    let mut rect: Option<URect> = None;
    for (i, p) in frame.rgba.chunks_exact(4).enumerate() {
        if (0..3).all(|c| p[c].abs_diff(GIZMO_SRGB[c]) <= 40) {
            count += 1;
            let at = UVec2::new(i as u32 % frame.width, i as u32 / frame.width);
            rect = Some(rect.map_or(URect::from_corners(at, at + 1), |r| {
                r.union(URect::from_corners(at, at + 1))
            }));
        }
    }
    (count, rect)
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

/// Compares two frames; the failure message (with saved images) when below the bar.
fn compare(name: &str, actual: &Frame, expected: &Frame, min_psnr: f64) -> Option<String> {
    let psnr = image_compare::psnr(actual, expected);
    let p995 = image_compare::channel_difference_percentile(actual, expected, 99.5);
    eprintln!("{name}: PSNR {psnr:.2} dB, p99.5 {p995}");
    (psnr < min_psnr || p995 > MAX_P995).then(|| {
        let paths = [
            actual.save_png(&format!("{name}-actual")),
            expected.save_png(&format!("{name}-expected")),
            image_compare::difference_image(actual, expected).save_png(&format!("{name}-diff")),
        ];
        format!(
            "{name}: PSNR {psnr:.2} dB (need >= {min_psnr}), p99.5 {p995} (need <= {MAX_P995}); \
             images: {}",
            paths.map(|p| p.display().to_string()).join(", ")
        )
    })
}

fn decision(headless: &HeadlessApp, camera: Entity) -> TierDecision {
    headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .expect("a tile camera has a decision")
        .clone()
}

fn missing(headless: &HeadlessApp, camera: Entity) -> Vec<String> {
    headless
        .app
        .world()
        .get::<TileMissing>(camera)
        .map(|m| m.items.iter().map(ToString::to_string).collect())
        .unwrap_or_default()
}

/// The 4x MSAA bar against Bevy forward 4x.
const MIN_PSNR_MSAA: f64 = 34.0;

#[test]
fn gizmos_over_a_tile_camera_are_drawn_or_never_silently_missing() {
    let test = GpuTest::start("gizmos_over_a_tile_camera_are_drawn_or_never_silently_missing");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless
        .app
        .insert_resource(DrawGizmos(false))
        .add_systems(Update, draw_gizmos);
    headless.update();
    spawn_scene(headless.app.world_mut());
    let forced_tile = Some(TierSetting::Force(RenderTier::TileDeferred));
    // (name, tile setting, MSAA, HDR): Bevy's camera first in each group.
    let cameras_spec = [
        ("bevy", None, Msaa::Off, false),
        ("auto", Some(TierSetting::Auto), Msaa::Off, false),
        ("forced", forced_tile, Msaa::Off, false),
        ("bevy-msaa4", None, Msaa::Sample4, false),
        ("auto-msaa4", Some(TierSetting::Auto), Msaa::Sample4, false),
        ("bevy-hdr", None, Msaa::Off, true),
        ("auto-hdr", Some(TierSetting::Auto), Msaa::Off, true),
        ("forced-hdr", forced_tile, Msaa::Off, true),
        ("bevy-hdr-msaa4", None, Msaa::Sample4, true),
        (
            "auto-hdr-msaa4",
            Some(TierSetting::Auto),
            Msaa::Sample4,
            true,
        ),
        (
            "forced-unmerged",
            Some(TierSetting::Force(RenderTier::Unmerged { samples: 1 })),
            Msaa::Off,
            false,
        ),
    ];
    let mut targets = Vec::new();
    let mut cameras = Vec::new();
    for (name, tier, msaa, hdr) in cameras_spec {
        let target = headless.add_target(WIDTH, HEIGHT);
        let world = headless.app.world_mut();
        let mut camera = world.spawn((
            Camera3d::default(),
            Transform::from_xyz(-2.5, 3.0, 5.0).looking_at(Vec3::new(0.0, 0.4, 0.0), Vec3::Y),
            RenderTarget::Image(target.clone().into()),
            msaa,
            Name::new(name),
        ));
        if let Some(tier) = tier {
            camera.insert(TileDeferred { tier, ..default() });
        }
        if hdr {
            camera.insert(Hdr);
        }
        cameras.push(camera.id());
        targets.push(target);
    }
    let [
        _,
        auto,
        forced,
        _,
        auto_msaa4,
        _,
        auto_hdr,
        forced_hdr,
        _,
        auto_hdr_msaa4,
        forced_unmerged,
    ] = cameras[..]
    else {
        unreachable!()
    };
    let drawing = [
        ("auto", auto),
        ("forced", forced),
        ("auto-msaa4", auto_msaa4),
        ("auto-hdr", auto_hdr),
        ("forced-hdr", forced_hdr),
        ("auto-hdr-msaa4", auto_hdr_msaa4),
    ];
    let tile_cameras = [
        ("auto", auto),
        ("forced", forced),
        ("auto-msaa4", auto_msaa4),
        ("auto-hdr", auto_hdr),
        ("forced-hdr", forced_hdr),
        ("auto-hdr-msaa4", auto_hdr_msaa4),
    ];
    let hdr_cameras = [auto_hdr, forced_hdr, auto_hdr_msaa4];
    let post_processing = |headless: &HeadlessApp, camera: Entity| -> Vec<String> {
        let reports = headless.app.world().resource::<TileRenderReports>();
        reports
            .get(camera)
            .expect("a tile report")
            .post_processing
            .clone()
    };
    let stored = |headless: &HeadlessApp, camera: Entity| -> Vec<String> {
        let reports = headless.app.world().resource::<TileRenderReports>();
        let report = reports.get(camera).expect("a tile report");
        assert_eq!(report.render_passes_recorded, 1);
        assert_eq!(report.compiled.render_pass_count(), 1);
        let mut stored: Vec<String> = report
            .attachments
            .iter()
            .filter(|a| a.store_op == "STORE")
            .map(|a| a.name.clone())
            .collect();
        stored.sort();
        stored
    };

    // The gizmo plugin is in the app, nothing is drawn: the tile path keeps every camera, and
    // its frames store only the output.
    for _ in 0..4 {
        headless.update();
    }
    for (name, camera) in tile_cameras {
        let d = decision(&headless, camera);
        assert!(d.tier.is_tile(), "{name} without gizmos: {}", d.summary());
        assert!(missing(&headless, camera).is_empty(), "{name}");
        assert_eq!(stored(&headless, camera), ["output"], "{name}");
    }

    // Gizmos drawn. Every camera on a merged tile tier keeps its tier and draws them: an HDR
    // one from the frame after they appear (the render world finds them after extraction chose
    // the frame's route), one with MSAA once Bevy's textures are multisampled. The camera forced
    // to the unmerged tier, which has no depth export, keeps its tier and lists them.
    headless.app.insert_resource(DrawGizmos(true));
    for _ in 0..4 {
        headless.update();
    }
    for (name, camera) in drawing {
        let d = decision(&headless, camera);
        assert!(d.tier.is_tile(), "{name} with gizmos: {}", d.summary());
        assert!(
            missing(&headless, camera).is_empty(),
            "{name}: {:?}",
            missing(&headless, camera)
        );
        // The depth export stores Bevy's depth texture in the same render pass; the gizmos'
        // own passes are priced apart. An HDR camera's tile pass stores its light as its output
        // (the main texture) for Bevy's tone mapping, which runs after the gizmos are drawn into
        // it, in one pass (with MSAA over the light written into every sample first).
        let reports = headless.app.world().resource::<TileRenderReports>();
        let report = reports.get(camera).expect("a tile report");
        let hdr = hdr_cameras.contains(&camera);
        let gizmo_passes = if hdr { 1 } else { 2 };
        let post_processing: &[&str] = if hdr { &["Tonemapping"] } else { &[] };
        assert_eq!(
            stored(&headless, camera),
            ["output", "view_depth"],
            "{name}"
        );
        assert_eq!(report.post_processing, post_processing, "{name}");
        let gizmo_pass = report
            .gizmo_pass
            .as_ref()
            .expect("the gizmo passes are priced");
        assert_eq!(
            gizmo_pass.render_pass_count(),
            gizmo_passes,
            "{name}: {}",
            gizmo_pass.describe()
        );
        // Priced at the camera's samples: Bevy's depth texture is multisampled like the pass.
        let depth = gizmo_pass
            .attachment_named("view_depth")
            .expect("the depth is priced");
        assert_eq!(
            depth.samples,
            report.samples,
            "{name}: {}",
            gizmo_pass.describe()
        );
    }
    let unmerged = decision(&headless, forced_unmerged);
    assert!(unmerged.tier.is_unmerged(), "{}", unmerged.summary());
    let listed = missing(&headless, forced_unmerged);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(
        listed[0].contains(&format!("{forced_unmerged} (\"forced-unmerged\")"))
            && listed[0].contains("gizmos")
            && listed[0].contains("unmerged"),
        "{listed:?}"
    );
    let warnings = test.take_warnings();
    for (name, camera) in tile_cameras
        .into_iter()
        .chain([("forced-unmerged", forced_unmerged)])
    {
        let lines = warnings
            .iter()
            .filter(|w| w.contains(&format!("camera {camera} ")) && w.contains("gizmos"))
            .count();
        let expected = usize::from(camera == forced_unmerged);
        assert_eq!(
            lines, expected,
            "{name} is logged {expected} times: {warnings:#?}"
        );
    }

    let frames = headless.read_images(&targets);
    let [
        bevy,
        auto_frame,
        forced_frame,
        bevy_msaa4,
        auto_msaa4_frame,
        bevy_hdr,
        auto_hdr_frame,
        forced_hdr_frame,
        bevy_hdr_msaa4,
        auto_hdr_msaa4_frame,
        _,
    ] = &frames[..]
    else {
        unreachable!()
    };
    let mut failures = Vec::new();
    // The gizmos' region, from Bevy's LDR image (the HDR cameras tone map their magenta).
    let (_, bevy_region) = gizmo_pixels(bevy);
    let bevy_region = bevy_region.expect("Bevy draws the gizmos");
    for (name, actual, expected, bar) in [
        ("gizmos-auto", auto_frame, bevy, MIN_PSNR),
        ("gizmos-forced", forced_frame, bevy, MIN_PSNR),
        (
            "gizmos-auto-msaa4",
            auto_msaa4_frame,
            bevy_msaa4,
            MIN_PSNR_MSAA,
        ),
        ("gizmos-auto-hdr", auto_hdr_frame, bevy_hdr, MIN_PSNR),
        ("gizmos-forced-hdr", forced_hdr_frame, bevy_hdr, MIN_PSNR),
        (
            "gizmos-auto-hdr-msaa4",
            auto_hdr_msaa4_frame,
            bevy_hdr_msaa4,
            MIN_PSNR_MSAA,
        ),
    ] {
        failures.extend(compare(name, actual, expected, bar));
        let hdr = std::ptr::eq(expected, bevy_hdr) || std::ptr::eq(expected, bevy_hdr_msaa4);
        let (expected_count, region) = gizmo_pixels(expected);
        let (actual_count, _) = gizmo_pixels(actual);
        eprintln!("{name}: gizmo pixels {actual_count} (Bevy {expected_count}), region {region:?}");
        if !hdr {
            assert!(expected_count >= 300, "{name}: Bevy draws the gizmos");
            assert!(
                actual_count * 10 >= expected_count * 9,
                "{name}: the tile camera shows the gizmos ({actual_count} of {expected_count})"
            );
        }
        let region = region.unwrap_or(bevy_region);
        failures.extend(compare(
            &format!("{name}-region"),
            &crop(actual, region),
            &crop(expected, region),
            bar,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // No more gizmos. The HDR cameras keep Bevy's tone mapping a while, so that gizmos drawn on
    // some frames only do not switch their route (and miss a frame) each time; then every camera
    // is back to one render pass storing only the output, and nothing is listed.
    headless.app.insert_resource(DrawGizmos(false));
    let mut frames_kept = 0u32;
    while hdr_cameras
        .into_iter()
        .any(|camera| !post_processing(&headless, camera).is_empty())
    {
        headless.update();
        frames_kept += 1;
        assert!(
            frames_kept <= 80,
            "the HDR cameras keep Bevy's tone mapping"
        );
    }
    eprintln!("gizmos: the HDR cameras kept Bevy's tone mapping {frames_kept} frames after");
    assert!(
        // 60 frames after the last draw (`overlays::gizmos`), give or take pipelining.
        (55..=80).contains(&frames_kept),
        "the route is kept a while: {frames_kept} frames"
    );
    let assert_all_tile = |headless: &HeadlessApp, when: &str| {
        for (name, camera) in tile_cameras {
            let d = decision(headless, camera);
            assert!(d.tier.is_tile(), "{name} {when}: {}", d.summary());
            assert_eq!(d.missing_fallback, None, "{name} {when}");
            assert!(missing(headless, camera).is_empty(), "{name} {when}");
            assert_eq!(stored(headless, camera), ["output"], "{name} {when}");
            assert!(
                post_processing(headless, camera).is_empty(),
                "{name} {when}"
            );
            let reports = headless.app.world().resource::<TileRenderReports>();
            assert!(
                reports.get(camera).unwrap().gizmo_pass.is_none(),
                "{name} {when}"
            );
        }
    };
    assert_all_tile(&headless, "after the gizmos stopped");
    assert!(missing(&headless, forced_unmerged).is_empty());

    // Gizmos drawn on render layers no camera sees: Bevy draws none, nothing is missing.
    headless
        .app
        .world_mut()
        .resource_mut::<GizmoConfigStore>()
        .config_mut::<DefaultGizmoConfigGroup>()
        .0
        .render_layers = RenderLayers::layer(5);
    headless.app.insert_resource(DrawGizmos(true));
    for _ in 0..4 {
        headless.update();
    }
    assert_all_tile(&headless, "with gizmos on other render layers");
    let bevy = headless.read_image(&targets[0]);
    assert_eq!(
        gizmo_pixels(&bevy).0,
        0,
        "Bevy draws no gizmos there either"
    );
}

/// Gizmos on a tile camera with 4x MSAA in a viewport drawn over another camera's frame (Bevy's
/// `split_screen`, at Bevy's default MSAA): the camera stays on the tile path with nothing
/// listed, and Bevy draws its gizmos over the tile frame inside the viewport, as over Bevy's
/// own frame on the same scene (>= 34 dB, the MSAA bar, whole frame and the gizmos' region;
/// the magenta shows). Before session 37 such a camera fell back for them.
#[test]
fn gizmos_with_msaa_in_a_split_screen_viewport_are_drawn() {
    let _test = GpuTest::start("gizmos_with_msaa_in_a_split_screen_viewport_are_drawn");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless
        .app
        .insert_resource(DrawGizmos(true))
        .add_systems(Update, draw_gizmos);
    headless.update();
    spawn_scene(headless.app.world_mut());
    let viewport = lower_right_viewport(WIDTH, HEIGHT);
    let mut targets = Vec::new();
    let mut tile_camera = None;
    for tile in [true, false] {
        let target = headless.add_target(WIDTH, HEIGHT);
        let world = headless.app.world_mut();
        // Bevy's camera draws the whole target first, from another side.
        world.spawn((
            Camera3d::default(),
            Transform::from_xyz(3.0, 4.0, -4.0).looking_at(Vec3::ZERO, Vec3::Y),
            RenderTarget::Image(target.clone().into()),
            Msaa::Sample4,
        ));
        let mut camera = world.spawn((
            Camera3d::default(),
            Camera {
                order: 1,
                viewport: Some(viewport.clone()),
                ..default()
            },
            Transform::from_xyz(-2.5, 3.0, 5.0).looking_at(Vec3::new(0.0, 0.4, 0.0), Vec3::Y),
            RenderTarget::Image(target.clone().into()),
            Msaa::Sample4,
        ));
        if tile {
            camera.insert(TileDeferred {
                tier: TierSetting::Auto,
                ..default()
            });
            tile_camera = Some(camera.id());
        }
        targets.push(target);
    }
    let camera = tile_camera.expect("the tile camera");
    for _ in 0..6 {
        headless.update();
    }
    let d = decision(&headless, camera);
    assert!(d.tier.is_tile() && !d.tier.is_unmerged(), "{}", d.summary());
    assert_eq!(d.tier.tile_samples(), 4, "{}", d.summary());
    let listed = missing(&headless, camera);
    assert!(listed.is_empty(), "{listed:?}");
    let reports = headless.app.world().resource::<TileRenderReports>();
    let report = reports.get(camera).expect("a tile report");
    assert!(report.gizmo_pass.is_some(), "the gizmo passes are priced");

    let frames = headless.read_images(&targets);
    let (tile, bevy) = (&frames[0], &frames[1]);
    let (expected_count, region) = gizmo_pixels(bevy);
    let (actual_count, _) = gizmo_pixels(tile);
    eprintln!("gizmos-split-screen-4x: gizmo pixels {actual_count} (Bevy {expected_count})");
    assert!(expected_count >= 300, "Bevy draws the gizmos");
    assert!(
        actual_count * 10 >= expected_count * 9,
        "the tile camera shows the gizmos ({actual_count} of {expected_count})"
    );
    let region = region.expect("Bevy's gizmos");
    let failures: Vec<String> = [
        compare("gizmos-split-screen-4x", tile, bevy, MIN_PSNR_MSAA),
        compare(
            "gizmos-split-screen-4x-region",
            &crop(tile, region),
            &crop(bevy, region),
            MIN_PSNR_MSAA,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
