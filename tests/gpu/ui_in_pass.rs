//! bevy_ui drawn inside the tile render pass (issue 29): a HUD shaped like Bevy's `ui/ui` and
//! `ui/text` examples (a bordered side panel with a title, a clipped scrolling list and a
//! flipped image; overlapping nodes ordered by `ZIndex` and `GlobalZIndex`, rounded and
//! outlined; an FPS counter whose gold span changes every frame, so the glyph atlas grows while
//! it runs; a centred title with a text shadow) over the lit scene of the UI tests, on two tile
//! cameras in one app: one draws its UI in its `ui` subpass, the other with Bevy's UI pass after
//! the tile pass (`TileDeferred::ui_in_pass` off). The scene under the UI is the same tile frame,
//! so each element's region compares the UI alone: >= 40 dB, p99.5 <= 4/255, HDR off and on, 1x
//! and 4x MSAA (in the pass the UI is drawn at 4x and resolved with the scene; Bevy draws it at
//! 1x over the resolved image), and each element must show. The in-pass frame must be one render pass whose only traffic is
//! one store of the output; the other pays for the passes after it.

use crate::harness::{Frame, GpuTest, HeadlessApp, image_compare};
use crate::ui_overlay::{self, HEIGHT, WIDTH};
use bevy::{
    asset::RenderAssetUsages,
    camera::{Hdr, RenderTarget},
    prelude::*,
    render::render_resource::{Extent3d, TextureDimension, TextureFormat},
    ui::{ComputedNode, UiGlobalTransform},
};
use bevy_tile_deferred::{TileDeferred, TileRenderReports, TileViewReport};

const MIN_PSNR: f64 = 40.0;
const MAX_P995: u8 = 4;

/// The HUD's elements, by name, in [`spawn_hud`]'s order.
const ELEMENTS: [&str; 6] = ["side panel", "list", "image", "z-stack", "fps", "title"];

/// Marks the FPS counter's span, rewritten every frame.
#[derive(Component)]
struct FpsValue;

#[test]
fn a_hud_drawn_in_the_tile_pass_matches_bevys_ui_pass() {
    let _test = GpuTest::start("a_hud_drawn_in_the_tile_pass_matches_bevys_ui_pass");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.app.add_systems(Update, count_frames);
    headless.update();
    ui_overlay::spawn_scene(headless.app.world_mut());
    let checker = checker_image(headless.app.world_mut());
    // Per case: (in-pass camera, after-pass camera), their targets and HUD elements.
    let mut cases = Vec::new();
    for (hdr, msaa) in [
        (false, Msaa::Off),
        (true, Msaa::Off),
        (false, Msaa::Sample4),
        (true, Msaa::Sample4),
    ] {
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
            ));
            if hdr {
                camera.insert(Hdr);
            }
            let camera = camera.id();
            let elements = spawn_hud(world, camera, checker.clone());
            cameras.push((camera, target, elements));
        }
        cases.push(((hdr, msaa), cameras));
    }
    // Enough frames for the counter to add new digits to the atlas on the way.
    for _ in 0..8 {
        headless.update();
    }
    let images: Vec<Handle<Image>> = cases
        .iter()
        .flat_map(|(_, cameras)| cameras.iter().map(|(_, target, _)| target.clone()))
        .collect();
    let frames = headless.read_images(&images);

    let world = headless.app.world();
    let reports = world.resource::<TileRenderReports>();
    let mut failures = Vec::new();
    for (((hdr, msaa), cameras), pair) in cases.iter().zip(frames.chunks_exact(2)) {
        let name = format!(
            "hud-hdr-{}-{}x",
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
        check_traffic(
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

/// Counts frames in the FPS span: new digits every frame.
fn count_frames(mut frames: Local<u32>, mut spans: Query<&mut TextSpan, With<FpsValue>>) {
    *frames += 1;
    for mut span in &mut spans {
        span.0 = format!("{:.1}", 59.0 + f64::from(*frames) * 1.37);
    }
}

/// A 16x16 sRGB checker of two colours with a red corner (so that a flip shows).
fn checker_image(world: &mut World) -> Handle<Image> {
    let mut data = Vec::with_capacity(16 * 16 * 4);
    for y in 0..16u32 {
        for x in 0..16u32 {
            let pixel = if x < 4 && y < 4 {
                [230, 30, 30, 255]
            } else if (x / 4 + y / 4) % 2 == 0 {
                [240, 240, 240, 255]
            } else {
                [40, 90, 200, 255]
            };
            data.extend(pixel);
        }
    }
    let image = Image::new(
        Extent3d {
            width: 16,
            height: 16,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::RENDER_WORLD,
    );
    world.resource_mut::<Assets<Image>>().add(image)
}

/// The HUD over `camera`; returns its elements in [`ELEMENTS`] order.
fn spawn_hud(world: &mut World, camera: Entity, checker: Handle<Image>) -> [Entity; 6] {
    let text = |world: &mut World, value: &str, size: f32, parent: Entity| {
        world
            .spawn((
                Text::new(value),
                TextFont {
                    font_size: size.into(),
                    ..default()
                },
                ChildOf(parent),
            ))
            .id()
    };
    let root = world
        .spawn((
            Node {
                width: percent(100),
                height: percent(100),
                justify_content: JustifyContent::SpaceBetween,
                ..default()
            },
            UiTargetCamera(camera),
        ))
        .id();
    // ui/ui's left panel: a bordered column with a title, a clipped list and an image.
    let side_panel = world
        .spawn((
            Node {
                width: px(110),
                height: percent(100),
                flex_direction: FlexDirection::Column,
                border: UiRect::all(px(2)),
                padding: UiRect::all(px(4)),
                row_gap: px(4),
                ..default()
            },
            BackgroundColor(Color::srgb(0.15, 0.15, 0.15)),
            BorderColor::all(Color::srgb(0.8, 0.8, 1.0)),
            ChildOf(root),
        ))
        .id();
    text(world, "Text Example", 13.0, side_panel);
    let list = world
        .spawn((
            Node {
                height: px(64),
                flex_direction: FlexDirection::Column,
                overflow: Overflow::clip_y(),
                ..default()
            },
            BackgroundColor(Color::srgb(0.10, 0.10, 0.10)),
            ChildOf(side_panel),
        ))
        .id();
    for i in 0..8 {
        text(world, &format!("Item {i}"), 12.0, list);
    }
    let image = world
        .spawn((
            ImageNode {
                image: checker,
                flip_x: true,
                ..default()
            },
            Node {
                width: px(48),
                height: px(48),
                ..default()
            },
            ChildOf(side_panel),
        ))
        .id();
    // The right column: overlapping nodes, the FPS counter and the shadowed title.
    let column = world
        .spawn((
            Node {
                width: px(150),
                flex_direction: FlexDirection::Column,
                align_items: AlignItems::Center,
                row_gap: px(6),
                padding: UiRect::all(px(6)),
                ..default()
            },
            ChildOf(root),
        ))
        .id();
    let z_stack = world
        .spawn((
            Node {
                width: px(130),
                height: px(80),
                ..default()
            },
            ChildOf(column),
        ))
        .id();
    let colours = [
        Color::srgb(0.9, 0.3, 0.3),
        Color::srgba(0.3, 0.9, 0.3, 0.7),
        Color::srgba(0.3, 0.4, 0.95, 0.8),
        Color::srgb(0.95, 0.85, 0.2),
    ];
    for (i, colour) in colours.into_iter().enumerate() {
        let offset = i as f32 * 20.0;
        let mut node = world.spawn((
            Node {
                position_type: PositionType::Absolute,
                left: px(offset),
                top: px(offset / 2.0),
                width: px(60),
                height: px(40),
                border_radius: BorderRadius::all(px(8)),
                ..default()
            },
            BackgroundColor(colour),
            // Drawn in reverse of spawning order, the first one on top of everything.
            ZIndex(-(i as i32)),
            ChildOf(z_stack),
        ));
        if i == 0 {
            node.insert((GlobalZIndex(1), Outline::new(px(2), px(1), Color::WHITE)));
        }
    }
    let fps = world
        .spawn((
            Text::new("FPS: "),
            TextFont {
                font_size: 16.0.into(),
                ..default()
            },
            ChildOf(column),
        ))
        .id();
    world.spawn((
        TextSpan::new("60.0"),
        TextFont {
            font_size: 16.0.into(),
            ..default()
        },
        TextColor(Color::srgb(1.0, 0.84, 0.0)),
        FpsValue,
        ChildOf(fps),
    ));
    let title = world
        .spawn((
            Text::new("hello\nbevy!"),
            TextFont {
                font_size: 22.0.into(),
                ..default()
            },
            TextShadow::default(),
            TextLayout::justify(Justify::Center),
            ChildOf(column),
        ))
        .id();
    [side_panel, list, image, z_stack, fps, title]
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
