//! A game's HUD in bevy_ui, shaped like Bevy's `ui/ui` and `ui/text` examples: a bordered side
//! panel with a title, a clipped list and a flipped image; overlapping nodes ordered by `ZIndex`
//! and `GlobalZIndex`, rounded and outlined; an FPS counter whose gold span changes every frame
//! (so the glyph atlas grows while it runs); a centred title with a text shadow. Drawn by the
//! UI tests (`tests/gpu/ui_in_pass.rs`) and `examples/bench_ui.rs`.

use bevy::{
    asset::RenderAssetUsages,
    prelude::*,
    render::render_resource::{AsBindGroup, Extent3d, TextureDimension, TextureFormat},
    ui_render::prelude::{MaterialNode, UiMaterial},
};

/// Marks the FPS counter's span, rewritten every frame.
#[derive(Component)]
pub struct FpsValue;

/// Counts frames in the FPS span: new digits every frame.
pub fn count_frames(mut frames: Local<u32>, mut spans: Query<&mut TextSpan, With<FpsValue>>) {
    *frames += 1;
    for mut span in &mut spans {
        span.0 = format!("{:.1}", 59.0 + f64::from(*frames) * 1.37);
    }
}

/// A 16x16 sRGB checker of two colours with a red corner (so that a flip shows).
pub fn checker_image(world: &mut World) -> Handle<Image> {
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

/// The HUD's elements, by name, in [`spawn_hud`]'s order.
pub const ELEMENTS: [&str; 6] = ["side panel", "list", "image", "z-stack", "fps", "title"];

/// What the z-stack's second node carries besides its colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZStackExtra {
    #[default]
    None,
    /// A `BoxShadow` (Bevy's `ui/box_shadow`).
    BoxShadow,
    /// The checker as a 9-sliced `ImageNode` with a tiled centre (Bevy's
    /// `ui/ui_texture_slice`), and on the third node as a tiled one.
    SlicedImages,
    /// Gradients (Bevy's `ui/gradients`): on the second node a linear and a radial gradient
    /// layered, with explicit stops and a hint, and a border gradient; on the third a conic one
    /// with explicit angles (HSV, the long way round); on the fourth a radial one with a hard
    /// edge (OkLCh). Several interpolation spaces. And one across the clipped list's edge.
    Gradients,
    /// A [`PlainUiMaterial`] on the second node: a `UiMaterial`, which the tile pass does not
    /// draw (the app adds `UiMaterialPlugin::<PlainUiMaterial>`).
    UiMaterial,
}

/// The simplest `UiMaterial`: Bevy's default UI material shaders (white). Stands for any custom
/// UI material a game has.
#[derive(Asset, TypePath, AsBindGroup, Clone, Debug, Default)]
pub struct PlainUiMaterial {}

impl UiMaterial for PlainUiMaterial {}

/// The HUD over `camera` (with `UiTargetCamera`), with `extra` on the z-stack's second node;
/// returns its elements in [`ELEMENTS`] order.
pub fn spawn_hud(
    world: &mut World,
    camera: Entity,
    checker: Handle<Image>,
    extra: ZStackExtra,
) -> [Entity; 6] {
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
    if extra == ZStackExtra::Gradients {
        // Across the list's bottom edge: clipped, its gradient with it.
        world.spawn((
            Node {
                position_type: PositionType::Absolute,
                left: px(10),
                top: px(40),
                width: px(60),
                height: px(40),
                ..default()
            },
            BackgroundGradient::from(LinearGradient::to_bottom(vec![
                ColorStop::auto(Color::srgba(0.2, 0.9, 0.5, 0.9)),
                ColorStop::auto(Color::srgba(0.9, 0.3, 0.1, 0.9)),
            ])),
            ChildOf(list),
        ));
    }
    let image = world
        .spawn((
            ImageNode {
                image: checker.clone(),
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
    let material = (extra == ZStackExtra::UiMaterial).then(|| {
        world
            .resource_mut::<Assets<PlainUiMaterial>>()
            .add(PlainUiMaterial {})
    });
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
        match extra {
            ZStackExtra::BoxShadow if i == 1 => {
                node.insert(BoxShadow::new(
                    Color::BLACK.with_alpha(0.8),
                    px(6),
                    px(6),
                    px(2),
                    px(4),
                ));
            }
            ZStackExtra::SlicedImages if i == 1 => {
                node.insert(
                    ImageNode::new(checker.clone()).with_mode(NodeImageMode::Sliced(
                        TextureSlicer {
                            border: BorderRect::all(4.0),
                            center_scale_mode: SliceScaleMode::Tile { stretch_value: 0.5 },
                            ..default()
                        },
                    )),
                );
            }
            ZStackExtra::SlicedImages if i == 2 => {
                node.insert(
                    ImageNode::new(checker.clone()).with_mode(NodeImageMode::Tiled {
                        tile_x: true,
                        tile_y: true,
                        stretch_value: 0.75,
                    }),
                );
            }
            ZStackExtra::Gradients if i == 1 => {
                node.insert((
                    Node {
                        position_type: PositionType::Absolute,
                        left: px(offset),
                        top: px(offset / 2.0),
                        width: px(60),
                        height: px(40),
                        border: UiRect::all(px(3)),
                        border_radius: BorderRadius::all(px(8)),
                        ..default()
                    },
                    BackgroundGradient(vec![
                        LinearGradient::degrees(
                            30.0,
                            vec![
                                ColorStop::percent(Color::srgb(0.9, 0.2, 0.6), 10),
                                ColorStop::auto(Color::srgb(0.95, 0.8, 0.2)).with_hint(0.3),
                                ColorStop::percent(Color::srgb(0.2, 0.6, 0.9), 90),
                            ],
                        )
                        .into(),
                        RadialGradient::new(
                            UiPosition::CENTER,
                            RadialGradientShape::ClosestSide,
                            vec![
                                ColorStop::auto(Color::WHITE.with_alpha(0.6)),
                                ColorStop::auto(Color::WHITE.with_alpha(0.0)),
                            ],
                        )
                        .in_color_space(InterpolationColorSpace::Srgba)
                        .into(),
                    ]),
                    BorderGradient::from(
                        LinearGradient::to_bottom(vec![
                            ColorStop::auto(Color::srgb(1.0, 1.0, 1.0)),
                            ColorStop::auto(Color::srgb(0.1, 0.1, 0.4)),
                        ])
                        .in_color_space(InterpolationColorSpace::Hsla),
                    ),
                ));
            }
            ZStackExtra::Gradients if i == 2 => {
                node.insert(BackgroundGradient::from(
                    ConicGradient::new(
                        UiPosition::CENTER,
                        vec![
                            AngularColorStop::auto(Color::srgb(1.0, 0.1, 0.1)),
                            AngularColorStop::new(Color::srgb(0.1, 1.0, 0.2), 2.0),
                            AngularColorStop::auto(Color::srgb(0.2, 0.2, 1.0)),
                        ],
                    )
                    .with_start(0.5)
                    .in_color_space(InterpolationColorSpace::HsvaLong),
                ));
            }
            ZStackExtra::Gradients if i == 3 => {
                node.insert(BackgroundGradient::from(
                    RadialGradient::new(
                        UiPosition::new(Vec2::new(-0.5, -0.5), px(10), px(8)),
                        RadialGradientShape::FarthestCorner,
                        vec![
                            ColorStop::px(Color::srgb(0.95, 0.9, 0.3), 0),
                            ColorStop::percent(Color::srgb(0.95, 0.4, 0.1), 40),
                            ColorStop::percent(Color::srgb(0.3, 0.1, 0.6), 40),
                            ColorStop::percent(Color::srgb(0.1, 0.3, 0.7), 100),
                        ],
                    )
                    .in_color_space(InterpolationColorSpace::Oklcha),
                ));
            }
            ZStackExtra::UiMaterial if i == 1 => {
                if let Some(material) = &material {
                    node.insert(MaterialNode(material.clone()));
                }
            }
            _ => {}
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
