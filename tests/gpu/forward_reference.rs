//! Bevy's own forward renderer on the reference scenes, headless on lavapipe: the harness is
//! proven on real frames before the tile path compares itself against these.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp},
    scenes::{self, LIT_SPHERES_OBJECTS, SceneObject},
};
use bevy::{prelude::*, render::view::Msaa};

const WIDTH: u32 = 384;
const HEIGHT: u32 = 216;

/// Renders the lit-spheres scene with Bevy's forward renderer and returns the frame and where
/// each object's centre and silhouette radius land on screen.
fn render_lit_spheres(msaa: Msaa) -> (Frame, Vec<(SceneObject, Vec2, f32)>) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        msaa,
    ));
    let frame = headless.render(3);
    let world = headless.app.world();
    let camera_component = world.get::<Camera>(camera).unwrap();
    let camera_transform = world.get::<GlobalTransform>(camera).unwrap();
    let right = camera_transform.right();
    let projected = LIT_SPHERES_OBJECTS
        .iter()
        .map(|object| {
            let center = camera_component
                .world_to_viewport(camera_transform, object.center)
                .unwrap();
            let edge = camera_component
                .world_to_viewport(camera_transform, object.center + right * object.radius)
                .unwrap();
            (*object, center, center.distance(edge))
        })
        .collect();
    (frame, projected)
}

fn srgb8(color: Color) -> [u8; 3] {
    let c = color.to_srgba();
    [c.red, c.green, c.blue].map(|v| (v * 255.0).round() as u8)
}

fn is_clear_color(pixel: [u8; 4]) -> bool {
    let clear = srgb8(scenes::CLEAR_COLOR);
    (0..3).all(|c| pixel[c].abs_diff(clear[c]) <= 2)
}

/// Whether `channel` clearly dominates a pixel: bright, and 1.4x the other channels.
fn dominated_by(pixel: [u8; 4], channel: usize) -> bool {
    let value = f32::from(pixel[channel]);
    value > 60.0
        && (0..3)
            .filter(|&c| c != channel)
            .all(|c| value > 1.4 * f32::from(pixel[c]))
}

fn luminance(pixel: [u8; 4]) -> f32 {
    0.2126 * f32::from(pixel[0]) + 0.7152 * f32::from(pixel[1]) + 0.0722 * f32::from(pixel[2])
}

fn at(frame: &Frame, p: Vec2) -> [u8; 4] {
    frame.pixel(p.x.round() as i32, p.y.round() as i32)
}

fn assert_lit_spheres(frame: &Frame, projected: &[(SceneObject, Vec2, f32)], label: &str) {
    let saved = frame.save_png(label);
    let context = format!("{label} (image: {})", saved.display());

    // Nothing covers the top corners: the sky shows the clear colour.
    for (x, y) in [(2, 2), (WIDTH as i32 - 3, 2)] {
        let pixel = frame.pixel(x, y);
        assert!(
            is_clear_color(pixel),
            "{context}: corner ({x},{y}) is {pixel:?}, not the clear colour"
        );
    }

    for &(object, center, radius) in projected {
        let pixel = at(frame, center);
        assert!(
            !is_clear_color(pixel),
            "{context}: {} at {center} shows the clear colour",
            object.name
        );
        let Some(channel) = object.dominant_channel else {
            // The yellow cube: red and green both well above blue.
            assert!(
                pixel[0] > 90 && pixel[1] > 70 && f32::from(pixel[2]) < 0.6 * f32::from(pixel[1]),
                "{context}: {} at {center} is {pixel:?}, not yellow",
                object.name
            );
            continue;
        };
        // Inside the silhouette the sphere's colour dominates...
        for direction in [Vec2::X, -Vec2::X, Vec2::Y, -Vec2::Y] {
            let inside = center + direction * radius * 0.6;
            let p = at(frame, inside);
            assert!(
                dominated_by(p, channel),
                "{context}: {} inside its silhouette at {inside} is {p:?}",
                object.name
            );
        }
        // ...and just outside it, it does not (ground, sky or a neighbour of another colour).
        for direction in [Vec2::X, -Vec2::X, -Vec2::Y] {
            let outside = center + direction * radius * 1.25;
            let p = at(frame, outside);
            assert!(
                !dominated_by(p, channel),
                "{context}: {} bleeds outside its silhouette at {outside}: {p:?}",
                object.name
            );
        }
        // Lit from above: the upper half is brighter than the lower half.
        let top = luminance(at(frame, center - Vec2::Y * radius * 0.6));
        let bottom = luminance(at(frame, center + Vec2::Y * radius * 0.6));
        assert!(
            top > bottom + 5.0,
            "{context}: {} is not lit from above (top {top}, bottom {bottom})",
            object.name
        );
    }
}

#[test]
fn forward_lit_spheres_no_msaa() {
    let _test = GpuTest::start("forward_lit_spheres_no_msaa");
    let (frame, projected) = render_lit_spheres(Msaa::Off);
    assert_lit_spheres(&frame, &projected, "forward-lit-spheres-msaa-off");
}

#[test]
fn forward_lit_spheres_msaa4() {
    let _test = GpuTest::start("forward_lit_spheres_msaa4");
    let (frame, projected) = render_lit_spheres(Msaa::Sample4);
    assert_lit_spheres(&frame, &projected, "forward-lit-spheres-msaa4");
    // Anti-aliased silhouettes: some pixels on the red sphere's edge are blends, neither the
    // sphere's nor the background's colour.
    let (object, center, radius) = projected[0];
    let blended = (0..64)
        .map(|i| {
            let angle = i as f32 / 64.0 * std::f32::consts::TAU;
            at(&frame, center + Vec2::from_angle(angle) * radius)
        })
        .filter(|p| !dominated_by(*p, 0) && p[0] > 40)
        .count();
    assert!(blended > 0, "{}: no anti-aliased edge pixels", object.name);
}

/// The reference is stable from run to run, so later comparisons against it measure the
/// renderer under test, not noise.
#[test]
fn forward_reference_is_deterministic() {
    let _test = GpuTest::start("forward_reference_is_deterministic");
    let (first, _) = render_lit_spheres(Msaa::Off);
    let (second, _) = render_lit_spheres(Msaa::Off);
    crate::harness::assert_frames_match("forward-determinism", &second, &first, 60.0, 0);
}
