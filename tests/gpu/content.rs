//! The scene content Bevy games use (issue 15), tile path vs Bevy forward: vertex colours and
//! the second UV set, image samplers, line and point meshes.
//!
//! As in `tile_fidelity`, each scene is spawned once into one app and every case is drawn by
//! Bevy's forward renderer and by the tile path into two images of the same app. Each case must
//! match on the whole frame and on the region where its feature is (>= 36 dB PSNR, p99.5 <=
//! 8/255 on both), and the feature must be visible in that region of both images (a check on
//! the pixels), so that a feature both renderers left out could not pass.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp, image_compare, test_plugins},
    scenes::fidelity::{self, FidelityCamera, FidelityCase, FidelityScene, stage_origin},
    tile_fidelity::{Comparison, contact_sheet, render_scene_in},
};
use bevy::{
    asset::RenderAssetUsages,
    image::{
        ImageAddressMode, ImageFilterMode, ImageSampler, ImageSamplerBorderColor,
        ImageSamplerDescriptor,
    },
    light::AmbientLight,
    light::Skybox,
    math::Affine2,
    mesh::{Indices, PrimitiveTopology, UvChannel, VertexAttributeValues},
    prelude::*,
    render::render_resource::{
        Extent3d, TextureDimension, TextureFormat, TextureViewDescriptor, TextureViewDimension,
    },
    render::view::Msaa,
};
use bevy_tile_deferred::TileDeferred;

/// The bar without MSAA; with 4x MSAA both images are compared at [`MIN_PSNR_MSAA`].
pub(crate) const MIN_PSNR: f64 = 36.0;
pub(crate) const MIN_PSNR_MSAA: f64 = 34.0;
const MAX_P995: u8 = 8;

/// A rectangle of a case's image, as fractions of its size: where the case's feature is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region {
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
}

impl Region {
    pub const CENTRE: Self = Self {
        x0: 0.25,
        y0: 0.2,
        x1: 0.75,
        y1: 0.85,
    };
    pub const LEFT: Self = Self {
        x0: 0.1,
        y0: 0.2,
        x1: 0.5,
        y1: 0.85,
    };
    pub const RIGHT: Self = Self {
        x0: 0.5,
        y0: 0.2,
        x1: 0.9,
        y1: 0.85,
    };

    pub fn crop(self, frame: &Frame) -> Frame {
        let (w, h) = (frame.width as f32, frame.height as f32);
        let (x0, x1) = ((self.x0 * w) as u32, (self.x1 * w) as u32);
        let (y0, y1) = ((self.y0 * h) as u32, (self.y1 * h) as u32);
        let row = frame.width as usize * 4;
        let rgba = (y0..y1)
            .flat_map(|y| {
                &frame.rgba[y as usize * row + x0 as usize * 4..][..(x1 - x0) as usize * 4]
            })
            .copied()
            .collect();
        Frame {
            width: x1 - x0,
            height: y1 - y0,
            rgba,
        }
    }
}

/// What one case must show in one region of both images.
pub(crate) struct RegionCheck {
    pub case: &'static str,
    pub region: Region,
    /// What the feature looks like, for failure messages.
    pub shows: &'static str,
    /// Whether the region's pixels show it.
    pub visible: fn(&Frame) -> bool,
}

/// Distinct colours (each channel quantised to 32 levels) among the frame's pixels.
pub(crate) fn distinct_colours(frame: &Frame) -> usize {
    let mut seen: Vec<[u8; 3]> = frame
        .rgba
        .chunks_exact(4)
        .map(|p| [p[0] >> 3, p[1] >> 3, p[2] >> 3])
        .collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// Pixels whose strongest channel exceeds the weakest by `by` or more: saturated colours.
pub(crate) fn saturated_pixels(frame: &Frame, by: u8) -> usize {
    frame
        .rgba
        .chunks_exact(4)
        .filter(|p| {
            let (max, min) = (p[0].max(p[1]).max(p[2]), p[0].min(p[1]).min(p[2]));
            max - min >= by
        })
        .count()
}

fn compare(name: &str, tile: &Frame, forward: &Frame, min_psnr: f64) -> (f64, u8, Option<String>) {
    let psnr = image_compare::psnr(tile, forward);
    let p995 = image_compare::channel_difference_percentile(tile, forward, 99.5);
    let failure = (psnr < min_psnr || p995 > MAX_P995).then(|| {
        let paths = [
            tile.save_png(&format!("{name}-actual")),
            forward.save_png(&format!("{name}-expected")),
            image_compare::difference_image(tile, forward).save_png(&format!("{name}-diff")),
        ];
        format!(
            "{name}: PSNR {psnr:.2} dB (need >= {min_psnr}), p99.5 {p995} (need <= {MAX_P995}); \
             images: {}",
            paths.map(|p| p.display().to_string()).join(", ")
        )
    });
    (psnr, p995, failure)
}

/// Renders `scene` in `headless` and asserts every case matches on the whole frame and on its
/// checked regions, and that each region shows its feature in both images. Prints every
/// number before failing; with `FIDELITY_SAVE` set, writes a contact sheet.
fn assert_content_matches(headless: HeadlessApp, scene: &FidelityScene, checks: &[RegionCheck]) {
    assert_content_matches_to(headless, scene, checks, |_| MIN_PSNR);
}

/// [`assert_content_matches`] with each case's PSNR bar from `min_psnr(case name)`.
pub(crate) fn assert_content_matches_to(
    headless: HeadlessApp,
    scene: &FidelityScene,
    checks: &[RegionCheck],
    min_psnr: fn(&str) -> f64,
) {
    let started = std::time::Instant::now();
    let comparisons: Vec<Comparison> = render_scene_in(headless, scene, Msaa::Off);
    let mut failures = Vec::new();
    for c in &comparisons {
        let bar = min_psnr(c.name);
        let (psnr, p995, failure) =
            compare(&format!("content-{}", c.name), &c.tile, &c.forward, bar);
        eprintln!(
            "content {}/{}: whole frame PSNR {psnr:.2} dB, p99.5 {p995}",
            scene.name, c.name
        );
        failures.extend(failure);
    }
    for check in checks {
        let c = comparisons
            .iter()
            .find(|c| c.name == check.case)
            .unwrap_or_else(|| panic!("no case {}", check.case));
        let (tile, forward) = (check.region.crop(&c.tile), check.region.crop(&c.forward));
        let name = format!("content-{}-region", c.name);
        let (psnr, p995, failure) = compare(&name, &tile, &forward, min_psnr(c.name));
        eprintln!(
            "content {}/{}: region {:?} PSNR {psnr:.2} dB, p99.5 {p995}",
            scene.name, c.name, check.region
        );
        failures.extend(failure);
        for (renderer, frame) in [("tile", &tile), ("Bevy forward", &forward)] {
            if !(check.visible)(frame) {
                let path = frame.save_png(&format!("{name}-{renderer}"));
                failures.push(format!(
                    "{}: the {renderer} image does not show {} in {:?} ({})",
                    c.name,
                    check.shows,
                    check.region,
                    path.display()
                ));
            }
        }
    }
    if std::env::var_os("FIDELITY_SAVE").is_some() {
        let path = contact_sheet(&comparisons).save_png(&format!("content-{}-sheet", scene.name));
        eprintln!("content {}: contact sheet {}", scene.name, path.display());
    }
    eprintln!(
        "content {}: {} cases in {:.1} s",
        scene.name,
        comparisons.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub(crate) fn headless() -> HeadlessApp {
    HeadlessApp::with_plugins(
        fidelity::IMAGE_SIZE.x,
        fidelity::IMAGE_SIZE.y,
        test_plugins(None),
    )
}

// ------------------------------------------------------------------------------------------
// Scene helpers.

pub(crate) fn add_mesh(world: &mut World, mesh: impl Into<Mesh>) -> Handle<Mesh> {
    world.resource_mut::<Assets<Mesh>>().add(mesh)
}

pub(crate) fn add_material(
    world: &mut World,
    material: StandardMaterial,
) -> Handle<StandardMaterial> {
    world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(material)
}

pub(crate) fn add_image(world: &mut World, image: Image) -> Handle<Image> {
    world.resource_mut::<Assets<Image>>().add(image)
}

pub(crate) fn spawn(
    world: &mut World,
    mesh: &Handle<Mesh>,
    material: &Handle<StandardMaterial>,
    transform: Transform,
) {
    world.spawn((
        Mesh3d(mesh.clone()),
        MeshMaterial3d(material.clone()),
        transform,
    ));
}

/// A grey ground, a sun and a warm point light over stage `index`.
pub(crate) fn spawn_stage(world: &mut World, index: usize) {
    let origin = stage_origin(index);
    let ground = add_mesh(world, Plane3d::default().mesh().size(12.0, 12.0));
    let grey = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.45, 0.45, 0.45),
            perceptual_roughness: 0.85,
            ..default()
        },
    );
    spawn(world, &ground, &grey, Transform::from_translation(origin));
    world.spawn((
        PointLight {
            intensity: 250_000.0,
            range: 14.0,
            color: Color::srgb(1.0, 0.9, 0.8),
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_translation(origin + Vec3::new(-2.5, 3.5, 2.5)),
    ));
}

pub(crate) fn spawn_sun(world: &mut World) {
    world.spawn((
        DirectionalLight {
            illuminance: 3_000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(3.0, 8.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

/// A hue for a position: every vertex of a mesh a different colour.
fn hue_of(position: Vec3, alpha: f32) -> [f32; 4] {
    let hue = (position.x * 97.0 + position.y * 61.0 + position.z * 23.0).rem_euclid(360.0);
    Color::hsla(hue, 0.9, 0.55, alpha)
        .to_linear()
        .to_f32_array()
}

/// `mesh` with `Mesh::ATTRIBUTE_COLOR` from each vertex's position (alpha from `alpha`).
fn with_vertex_colours(mut mesh: Mesh, alpha: impl Fn(Vec3) -> f32) -> Mesh {
    let Some(VertexAttributeValues::Float32x3(positions)) =
        mesh.attribute(Mesh::ATTRIBUTE_POSITION)
    else {
        panic!("the mesh has float3 positions");
    };
    let colours: Vec<[f32; 4]> = positions
        .iter()
        .map(|p| {
            let p = Vec3::from_array(*p);
            hue_of(p, alpha(p))
        })
        .collect();
    mesh.insert_attribute(Mesh::ATTRIBUTE_COLOR, colours);
    mesh
}

/// A `size` x `size` quad facing +z with UV0 over [0, 1] and, when given, a second UV set.
fn quad(size: f32, uv1: Option<[[f32; 2]; 4]>) -> Mesh {
    let h = size / 2.0;
    let mut mesh = Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_POSITION,
        vec![[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]],
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, vec![[0.0, 0.0, 1.0]; 4])
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_UV_0,
        vec![[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 0.0]],
    )
    .with_inserted_indices(Indices::U16(vec![0, 1, 2, 0, 2, 3]));
    if let Some(uv1) = uv1 {
        mesh.insert_attribute(Mesh::ATTRIBUTE_UV_1, uv1.to_vec());
    }
    mesh
}

/// A square image of `size` texels from `texel(x, y)`, sRGB, sampled as `sampler`.
pub(crate) fn image(
    size: u32,
    sampler: ImageSampler,
    texel: impl Fn(u32, u32) -> [u8; 4],
) -> Image {
    let data = (0..size)
        .flat_map(|y| (0..size).map(move |x| (x, y)))
        .flat_map(|(x, y)| texel(x, y))
        .collect();
    let mut image = Image::new(
        Extent3d {
            width: size,
            height: size,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.sampler = sampler;
    image
}

// ------------------------------------------------------------------------------------------
// Scene: vertex attributes (vertex colours, the second UV set).

mod attribute_stage {
    pub const VERTEX_COLOURS: usize = 0;
    pub const UV1: usize = 1;
    pub const VERTEX_ALPHA_MASK: usize = 2;
}

const VERTEX_ATTRIBUTES: FidelityScene = FidelityScene {
    name: "vertex_attributes",
    spawn: spawn_vertex_attributes,
    cases: vertex_attribute_cases,
};

fn vertex_attribute_cases() -> Vec<FidelityCase> {
    use attribute_stage::*;
    let mut side = FidelityCamera::stage(VERTEX_COLOURS);
    let origin = stage_origin(VERTEX_COLOURS);
    side.transform = Transform::from_translation(origin + Vec3::new(5.0, 2.5, 3.0))
        .looking_at(origin + Vec3::new(0.0, 0.8, 0.0), Vec3::Y);
    // The occlusion texture (second UV set) darkens only the ambient light: a bright one.
    let mut uv1 = FidelityCamera::stage(UV1);
    uv1.ambient = Some(AmbientLight {
        brightness: 2_000.0,
        ..default()
    });
    vec![
        FidelityCase::single("vertex_colours", FidelityCamera::stage(VERTEX_COLOURS)),
        FidelityCase::single("vertex_colours_side", side),
        FidelityCase::single("uv1_channels", uv1),
        FidelityCase::single(
            "vertex_alpha_mask",
            FidelityCamera::stage(VERTEX_ALPHA_MASK),
        ),
    ]
}

fn spawn_vertex_attributes(world: &mut World) {
    use attribute_stage::*;
    spawn_sun(world);
    for stage in [VERTEX_COLOURS, UV1, VERTEX_ALPHA_MASK] {
        spawn_stage(world, stage);
    }
    let at = |stage: usize, offset: Vec3| Transform::from_translation(stage_origin(stage) + offset);
    let left = Vec3::new(-1.4, 0.9, 0.0);
    let right = Vec3::new(1.4, 0.9, 0.0);

    // Vertex colours times a tinted base colour, lit; and unlit on a sphere.
    let cube = add_mesh(
        world,
        with_vertex_colours(Cuboid::new(1.3, 1.3, 1.3).mesh().build(), |_| 1.0),
    );
    let sphere = add_mesh(
        world,
        with_vertex_colours(Sphere::new(0.9).mesh().uv(32, 16), |_| 1.0),
    );
    let tinted = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(1.0, 0.9, 0.8),
            perceptual_roughness: 0.4,
            ..default()
        },
    );
    let unlit = add_material(
        world,
        StandardMaterial {
            unlit: true,
            ..default()
        },
    );
    spawn(
        world,
        &cube,
        &tinted,
        at(VERTEX_COLOURS, left).with_rotation(Quat::from_rotation_y(0.6)),
    );
    spawn(world, &sphere, &unlit, at(VERTEX_COLOURS, right));

    // The second UV set: the base colour texture read through UV0 on one quad and through UV1
    // (rotated and tiled) on the other; the occlusion texture through UV1 on both.
    let checker = add_image(world, fidelity::base_color_image());
    let occlusion = add_image(world, fidelity::occlusion_image());
    let uv1 = Some([[0.0, 0.0], [0.0, 2.0], [2.0, 2.0], [2.0, 0.0]]);
    let quad_uv1 = add_mesh(world, quad(2.2, uv1));
    let through_uv0 = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(checker.clone()),
            occlusion_texture: Some(occlusion.clone()),
            occlusion_channel: UvChannel::Uv1,
            ..default()
        },
    );
    let through_uv1 = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(checker),
            base_color_channel: UvChannel::Uv1,
            occlusion_texture: Some(occlusion),
            occlusion_channel: UvChannel::Uv1,
            ..default()
        },
    );
    spawn(
        world,
        &quad_uv1,
        &through_uv0,
        at(UV1, left + Vec3::Y * 0.3),
    );
    spawn(
        world,
        &quad_uv1,
        &through_uv1,
        at(UV1, right + Vec3::Y * 0.3),
    );

    // Vertex alpha under an alpha mask: the left half of the quad (alpha 0) is cut away.
    let masked_quad = add_mesh(
        world,
        with_vertex_colours(quad(2.4, None), |p| if p.x < 0.0 { 0.0 } else { 1.0 }),
    );
    let masked = add_material(
        world,
        StandardMaterial {
            alpha_mode: AlphaMode::Mask(0.5),
            double_sided: true,
            cull_mode: None,
            ..default()
        },
    );
    spawn(
        world,
        &masked_quad,
        &masked,
        at(VERTEX_ALPHA_MASK, Vec3::new(0.0, 1.3, 0.0)),
    );
}

/// A vertex-coloured cube (lit, tinted) and sphere (unlit), a quad textured through its second
/// UV set and a quad cut by its vertex alpha, against Bevy forward.
#[test]
fn content_vertex_attributes() {
    let _test = GpuTest::start("content_vertex_attributes");
    let many_colours = |f: &Frame| distinct_colours(f) >= 40 && saturated_pixels(f, 60) > 200;
    assert_content_matches(
        headless(),
        &VERTEX_ATTRIBUTES,
        &[
            RegionCheck {
                case: "vertex_colours",
                region: Region::LEFT,
                shows: "a cube of many saturated vertex colours",
                visible: many_colours,
            },
            RegionCheck {
                case: "vertex_colours",
                region: Region::RIGHT,
                shows: "an unlit sphere of many saturated vertex colours",
                visible: many_colours,
            },
            RegionCheck {
                case: "vertex_colours_side",
                region: Region::CENTRE,
                shows: "vertex colours",
                visible: many_colours,
            },
            RegionCheck {
                case: "uv1_channels",
                region: Region::RIGHT,
                shows: "the checker texture tiled through UV1",
                visible: |f| distinct_colours(f) >= 20,
            },
            RegionCheck {
                case: "vertex_alpha_mask",
                region: Region::CENTRE,
                shows: "the half of the quad whose vertex alpha is 1",
                visible: |f| saturated_pixels(f, 60) > 200,
            },
        ],
    );
}

// ------------------------------------------------------------------------------------------
// Scene: image samplers, in an app whose default sampler is nearest (`ImagePlugin::
// default_nearest()`, what pixel-art games set).

mod sampler_stage {
    pub const FILTERING: usize = 0;
    pub const ADDRESS_MODES: usize = 1;
}

const SAMPLERS: FidelityScene = FidelityScene {
    name: "samplers",
    spawn: spawn_samplers,
    cases: sampler_cases,
};

fn sampler_cases() -> Vec<FidelityCase> {
    use sampler_stage::*;
    // Straight on, close: the textures are magnified about 12 times.
    let straight = |stage: usize| {
        let origin = stage_origin(stage) + Vec3::new(0.0, 1.2, 0.0);
        FidelityCamera::looking(origin + Vec3::new(0.0, 0.0, 4.2), origin)
    };
    vec![
        FidelityCase::single("nearest_default_and_linear", straight(FILTERING)),
        FidelityCase::single("address_modes", straight(ADDRESS_MODES)),
    ]
}

/// 8 x 8 texels of unrelated colours: pixel art.
fn pixel_art(sampler: ImageSampler) -> Image {
    image(8, sampler, |x, y| {
        let h = 2_654_435_761u32.wrapping_mul(x * 7 + y * 13 + 1) >> 7;
        [
            (h & 0xff) as u8,
            (h >> 8 & 0xff) as u8,
            (h >> 16 & 0xff) as u8,
            255,
        ]
    })
}

fn spawn_samplers(world: &mut World) {
    use sampler_stage::*;
    spawn_sun(world);
    let at = |stage: usize, offset: Vec3| Transform::from_translation(stage_origin(stage) + offset);
    let unlit_texture = |world: &mut World, image: Image, uv_transform: Affine2| {
        let image = add_image(world, image);
        add_material(
            world,
            StandardMaterial {
                base_color_texture: Some(image),
                unlit: true,
                uv_transform,
                ..default()
            },
        )
    };

    // The same pixel art through the app's default sampler (nearest here) and through an
    // explicit linear one.
    let square = add_mesh(world, quad(1.9, None));
    let nearest = unlit_texture(world, pixel_art(ImageSampler::Default), Affine2::IDENTITY);
    let linear = unlit_texture(world, pixel_art(ImageSampler::linear()), Affine2::IDENTITY);
    spawn(
        world,
        &square,
        &nearest,
        at(FILTERING, Vec3::new(-1.0, 1.2, 0.0)),
    );
    spawn(
        world,
        &square,
        &linear,
        at(FILTERING, Vec3::new(1.0, 1.2, 0.0)),
    );

    // UVs from -1 to 2 through repeat, mirrored repeat and clamp-to-border (opaque white),
    // the first also anisotropic.
    let narrow = add_mesh(world, quad(1.25, None));
    let tiled = Affine2::from_scale_angle_translation(Vec2::splat(3.0), 0.0, Vec2::splat(-1.0));
    let address = |mode: ImageAddressMode, anisotropy_clamp: u16| {
        ImageSampler::Descriptor(ImageSamplerDescriptor {
            address_mode_u: mode,
            address_mode_v: mode,
            address_mode_w: mode,
            mag_filter: ImageFilterMode::Linear,
            min_filter: ImageFilterMode::Linear,
            mipmap_filter: ImageFilterMode::Linear,
            anisotropy_clamp,
            border_color: Some(ImageSamplerBorderColor::OpaqueWhite),
            ..default()
        })
    };
    for (i, (mode, anisotropy)) in [
        (ImageAddressMode::Repeat, 16),
        (ImageAddressMode::MirrorRepeat, 1),
        (ImageAddressMode::ClampToBorder, 1),
    ]
    .into_iter()
    .enumerate()
    {
        let material = unlit_texture(world, pixel_art(address(mode, anisotropy)), tiled);
        let x = (i as f32 - 1.0) * 1.4;
        spawn(
            world,
            &narrow,
            &material,
            at(ADDRESS_MODES, Vec3::new(x, 1.2, 0.0)),
        );
    }
}

/// Pixel art through the app's default sampler set to nearest stays sharp, as in Bevy, and
/// an explicitly linear copy is smooth; repeat, mirrored repeat and clamp-to-border (white
/// border, anisotropy 16 on one) match Bevy forward.
#[test]
fn content_samplers() {
    let _test = GpuTest::start("content_samplers");
    let app = HeadlessApp::with_plugins(
        fidelity::IMAGE_SIZE.x,
        fidelity::IMAGE_SIZE.y,
        test_plugins(None).set(ImagePlugin::default_nearest()),
    );
    assert_content_matches(
        app,
        &SAMPLERS,
        &[
            RegionCheck {
                case: "nearest_default_and_linear",
                region: Region {
                    x0: 0.2,
                    y0: 0.2,
                    x1: 0.45,
                    y1: 0.8,
                },
                shows: "sharp texels (few distinct colours, as nearest filtering gives)",
                visible: |f| distinct_colours(f) <= SHARP_MAX_COLOURS,
            },
            RegionCheck {
                case: "nearest_default_and_linear",
                region: Region {
                    x0: 0.55,
                    y0: 0.2,
                    x1: 0.8,
                    y1: 0.8,
                },
                shows: "smoothly filtered texels (many distinct colours)",
                visible: |f| distinct_colours(f) > 2 * SHARP_MAX_COLOURS,
            },
            RegionCheck {
                case: "address_modes",
                region: Region {
                    x0: 0.15,
                    y0: 0.2,
                    x1: 0.85,
                    y1: 0.8,
                },
                shows: "the textures repeated and the white border",
                visible: |f| distinct_colours(f) >= 40 && border_pixels(f) > 300,
            },
        ],
    );
}

/// At most this many distinct colours in the nearest-filtered region: its 64 texels (some
/// split in two by dithering), the clear colour and the quad's edge.
const SHARP_MAX_COLOURS: usize = 160;

/// Pixels of the white border as tone mapping leaves it: bright and grey.
fn border_pixels(frame: &Frame) -> usize {
    frame
        .rgba
        .chunks_exact(4)
        .filter(|p| p[0] >= 180 && p[0] == p[1] && p[1] == p[2])
        .count()
}

// ------------------------------------------------------------------------------------------
// Scene: line and point meshes.

mod line_stage {
    pub const LINES: usize = 0;
    pub const POINTS: usize = 1;
}

const LINES_AND_POINTS: FidelityScene = FidelityScene {
    name: "lines_and_points",
    spawn: spawn_lines_and_points,
    cases: line_cases,
};

fn line_cases() -> Vec<FidelityCase> {
    use line_stage::*;
    let mut lines_above = FidelityCamera::stage(LINES);
    let origin = stage_origin(LINES);
    lines_above.transform = Transform::from_translation(origin + Vec3::new(-3.0, 6.0, 4.0))
        .looking_at(origin + Vec3::new(0.0, 1.0, 0.0), Vec3::Y);
    vec![
        FidelityCase::single("lines", FidelityCamera::stage(LINES)),
        FidelityCase::single("lines_above", lines_above),
        FidelityCase::single("points", FidelityCamera::stage(POINTS)),
    ]
}

/// A helix around y as an indexed line strip with outward normals. (No primitive-restart
/// index: with one, `u16::MAX` in a u16 strip, Bevy forward 0.19.1 on lavapipe drew a segment
/// to a stray vertex instead of restarting, where the tile path restarts as wgpu's pipeline
/// state asks; not investigated further.)
fn lit_helix_strip() -> Mesh {
    let turns = 3.0;
    let count = 120u16;
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    for i in 0..count {
        let t = f32::from(i) / f32::from(count - 1);
        let angle = t * turns * std::f32::consts::TAU;
        let outward = Vec3::new(angle.cos(), 0.0, angle.sin());
        positions.push((outward * 0.9 + Vec3::Y * (t * 1.8 - 0.9)).to_array());
        normals.push(outward.to_array());
    }
    let indices: Vec<u16> = (0..count).collect();
    Mesh::new(PrimitiveTopology::LineStrip, RenderAssetUsages::default())
        .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
        .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, normals)
        .with_inserted_indices(Indices::U16(indices))
}

/// A `columns` x `rows` grid of points in the xy plane, vertex-coloured.
fn point_grid(columns: u32, rows: u32, spacing: f32) -> Mesh {
    let positions: Vec<[f32; 3]> = (0..rows)
        .flat_map(|y| (0..columns).map(move |x| (x, y)))
        .map(|(x, y)| {
            [
                (x as f32 - (columns - 1) as f32 / 2.0) * spacing,
                (y as f32 - (rows - 1) as f32 / 2.0) * spacing,
                0.0,
            ]
        })
        .collect();
    let mesh = Mesh::new(PrimitiveTopology::PointList, RenderAssetUsages::default())
        .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions);
    with_vertex_colours(mesh, |_| 1.0)
}

fn spawn_lines_and_points(world: &mut World) {
    use line_stage::*;
    spawn_sun(world);
    for stage in [LINES, POINTS] {
        spawn_stage(world, stage);
    }
    let at = |stage: usize, offset: Vec3| Transform::from_translation(stage_origin(stage) + offset);
    let unlit = |world: &mut World, color: Color| {
        add_material(
            world,
            StandardMaterial {
                base_color: color,
                unlit: true,
                ..default()
            },
        )
    };

    // Unlit debug lines: a fan of segments (Segment3d meshes, one entity each) and a polyline
    // zig-zag (Polyline3d: an indexed line list).
    let yellow = unlit(world, Color::srgb(1.0, 0.85, 0.1));
    let segment = add_mesh(world, Segment3d::new(Vec3::ZERO, Vec3::new(1.3, 0.0, 0.0)));
    for i in 0..12 {
        let angle = i as f32 / 12.0 * std::f32::consts::TAU;
        spawn(
            world,
            &segment,
            &yellow,
            at(LINES, Vec3::new(-1.6, 1.2, 0.0)).with_rotation(Quat::from_rotation_z(angle)),
        );
    }
    let cyan = unlit(world, Color::srgb(0.1, 0.9, 0.95));
    let zigzag = add_mesh(
        world,
        Polyline3d::new((0..16).map(|i| {
            Vec3::new(
                i as f32 * 0.18 - 1.35,
                if i % 2 == 0 { 0.0 } else { 0.6 },
                0.4,
            )
        })),
    );
    spawn(world, &zigzag, &cyan, at(LINES, Vec3::new(0.0, 2.3, 0.0)));

    // A lit line strip with normals, beside the fan.
    let helix = add_mesh(world, lit_helix_strip());
    let orange = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(1.0, 0.45, 0.1),
            perceptual_roughness: 0.4,
            ..default()
        },
    );
    spawn(world, &helix, &orange, at(LINES, Vec3::new(1.6, 1.1, 0.0)));

    // Points: a vertex-coloured unlit grid and a lit one (normals facing the camera).
    let grid = add_mesh(world, point_grid(24, 16, 0.09));
    let white_unlit = unlit(world, Color::WHITE);
    spawn(
        world,
        &grid,
        &white_unlit,
        at(POINTS, Vec3::new(-1.3, 1.2, 0.0)),
    );
    let lit_grid = {
        let mut mesh = point_grid(24, 16, 0.09);
        mesh.insert_attribute(Mesh::ATTRIBUTE_NORMAL, vec![[0.0, 0.3, 1.0]; 24 * 16]);
        add_mesh(world, mesh)
    };
    let lit_white = add_material(
        world,
        StandardMaterial {
            perceptual_roughness: 0.6,
            ..default()
        },
    );
    spawn(
        world,
        &lit_grid,
        &lit_white,
        at(POINTS, Vec3::new(1.3, 1.2, 0.0)),
    );
}

/// Segment3d and Polyline3d line lists (unlit), a lit indexed line strip, and unlit and lit
/// point lists, against Bevy forward.
#[test]
fn content_lines_and_points() {
    let _test = GpuTest::start("content_lines_and_points");
    // Thin lines and single-pixel points cover few pixels: count the coloured ones.
    let coloured = |f: &Frame| saturated_pixels(f, 80) > 150;
    assert_content_matches(
        headless(),
        &LINES_AND_POINTS,
        &[
            RegionCheck {
                case: "lines",
                region: Region::LEFT,
                shows: "the yellow segment fan",
                visible: coloured,
            },
            RegionCheck {
                case: "lines",
                region: Region::RIGHT,
                shows: "the lit orange helix strip",
                visible: coloured,
            },
            RegionCheck {
                case: "lines_above",
                region: Region::CENTRE,
                shows: "lines",
                visible: coloured,
            },
            RegionCheck {
                case: "points",
                region: Region::LEFT,
                shows: "the vertex-coloured point grid",
                visible: coloured,
            },
            RegionCheck {
                case: "points",
                region: Region::RIGHT,
                shows: "the lit point grid",
                visible: |f| distinct_colours(f) >= 3,
            },
        ],
    );
}

// ------------------------------------------------------------------------------------------
// Scene: skybox.

mod skybox_stage {
    pub const PLAIN: usize = 0;
    pub const ROTATED: usize = 1;
}

const SKYBOX: FidelityScene = FidelityScene {
    name: "skybox",
    spawn: spawn_skybox,
    cases: skybox_cases,
};

fn skybox_cases() -> Vec<FidelityCase> {
    use skybox_stage::*;
    // Looking up and sideways: most of the image is sky, with a corner of the stage.
    let up = |stage: usize, yaw: f32| {
        let origin = stage_origin(stage) + Vec3::new(0.0, 1.0, 4.0);
        let direction = Quat::from_rotation_y(yaw) * Vec3::new(0.0, 0.45, -1.0);
        FidelityCamera::looking(origin, origin + direction)
    };
    vec![
        FidelityCase::single("skybox", FidelityCamera::stage(PLAIN)),
        FidelityCase::single("skybox_up", up(PLAIN, 0.9)),
        FidelityCase::single("skybox_rotated", up(ROTATED, 0.9)),
        FidelityCase::single("skybox_rotated_behind", up(ROTATED, 3.6)),
    ]
}

/// A 16 x 16 cube map, each face its own hue with a gradient across it (so that a wrong
/// face, orientation or direction shows), linear-filtered by the app's default sampler.
pub(crate) fn sky_cube() -> Image {
    const SIZE: u32 = 16;
    let hues = [0.0, 60.0, 120.0, 180.0, 240.0, 300.0];
    let data: Vec<u8> = hues
        .iter()
        .flat_map(|&hue| {
            (0..SIZE * SIZE).flat_map(move |i| {
                let (x, y) = (
                    (i % SIZE) as f32 / SIZE as f32,
                    (i / SIZE) as f32 / SIZE as f32,
                );
                let c = Color::hsl(hue + 40.0 * x, 0.7, 0.25 + 0.5 * y).to_srgba();
                [c.red, c.green, c.blue]
                    .map(|v| (v * 255.0).round() as u8)
                    .into_iter()
                    .chain([255])
            })
        })
        .collect();
    let mut image = Image::new(
        Extent3d {
            width: SIZE,
            height: SIZE,
            depth_or_array_layers: 6,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.texture_view_descriptor = Some(TextureViewDescriptor {
        dimension: Some(TextureViewDimension::Cube),
        ..default()
    });
    image
}

/// The stage a camera looks at, from its position (the cases' cameras stay near their stage).
pub(crate) fn stage_of(transform: &Transform) -> usize {
    (transform.translation.x / fidelity::STAGE_SPACING)
        .round()
        .max(0.0) as usize
}

fn spawn_skybox(world: &mut World) {
    use skybox_stage::*;
    spawn_sun(world);
    for stage in [PLAIN, ROTATED] {
        spawn_stage(world, stage);
        let sphere = add_mesh(world, Sphere::new(0.8).mesh().uv(32, 16));
        let metal = add_material(
            world,
            StandardMaterial {
                base_color: Color::srgb(0.8, 0.3, 0.2),
                perceptual_roughness: 0.5,
                ..default()
            },
        );
        spawn(
            world,
            &sphere,
            &metal,
            Transform::from_translation(stage_origin(stage) + Vec3::Y),
        );
    }
    let cube = add_image(world, sky_cube());
    // Every camera gets the stage's skybox (cameras are spawned by the harness, after this).
    world.add_observer(
        move |add: On<Add, Camera3d>, mut commands: Commands, transforms: Query<&Transform>| {
            let Ok(transform) = transforms.get(add.entity) else {
                return;
            };
            let rotation = match stage_of(transform) {
                ROTATED => Quat::from_euler(EulerRot::YXZ, 1.1, 0.35, 0.0),
                _ => Quat::IDENTITY,
            };
            commands.entity(add.entity).insert(Skybox {
                image: Some(cube.clone()),
                brightness: 1_000.0,
                rotation,
            });
        },
    );
}

/// A skybox (a small generated cube map, brightness 1000) behind a lit stage, from below,
/// looking up, and rotated, from two directions: the tonemap subpass draws it where nothing is.
#[test]
fn content_skybox() {
    let _test = GpuTest::start("content_skybox");
    let sky = |f: &Frame| distinct_colours(f) >= 12 && saturated_pixels(f, 40) > 500;
    let top = Region {
        x0: 0.0,
        y0: 0.0,
        x1: 1.0,
        y1: 0.4,
    };
    assert_content_matches(
        headless(),
        &SKYBOX,
        &[
            RegionCheck {
                case: "skybox",
                region: top,
                shows: "the sky",
                visible: sky,
            },
            RegionCheck {
                case: "skybox_up",
                region: top,
                shows: "the sky",
                visible: sky,
            },
            RegionCheck {
                case: "skybox_rotated",
                region: top,
                shows: "the rotated sky",
                visible: sky,
            },
            RegionCheck {
                case: "skybox_rotated_behind",
                region: top,
                shows: "the rotated sky",
                visible: sky,
            },
        ],
    );
}

// ------------------------------------------------------------------------------------------
// Scene: distance fog, one stage per falloff, each seen from two camera positions.

/// The fog of each stage: linear, exponential, exponential squared (these two with
/// directional-light inscattering) and atmospheric.
fn stage_fog(stage: usize) -> DistanceFog {
    let hazy = Color::srgba(0.55, 0.6, 0.7, 1.0);
    let inscattering = Color::srgba(1.0, 0.85, 0.5, 0.6);
    match stage {
        0 => DistanceFog {
            color: hazy,
            falloff: FogFalloff::Linear {
                start: 4.0,
                end: 24.0,
            },
            ..default()
        },
        1 => DistanceFog {
            color: hazy,
            directional_light_color: inscattering,
            directional_light_exponent: 10.0,
            falloff: FogFalloff::Exponential { density: 0.09 },
        },
        2 => DistanceFog {
            color: Color::srgba(0.3, 0.35, 0.5, 0.9),
            directional_light_color: inscattering,
            directional_light_exponent: 4.0,
            falloff: FogFalloff::ExponentialSquared { density: 0.07 },
        },
        _ => DistanceFog {
            color: hazy,
            directional_light_color: inscattering,
            directional_light_exponent: 20.0,
            falloff: FogFalloff::from_visibility_colors(
                25.0,
                Color::srgb(0.35, 0.5, 0.66),
                Color::srgb(0.8, 0.844, 1.0),
            ),
        },
    }
}

const FOG_MODES: [&str; 4] = [
    "linear",
    "exponential",
    "exponential_squared",
    "atmospheric",
];

const FOG: FidelityScene = FidelityScene {
    name: "fog",
    spawn: spawn_fog,
    cases: fog_cases,
};

fn fog_cases() -> Vec<FidelityCase> {
    let names: [[&'static str; 3]; 4] = [
        ["fog_linear_near", "fog_linear_far", "fog_linear_far_msaa4"],
        [
            "fog_exponential_near",
            "fog_exponential_far",
            "fog_exponential_far_msaa4",
        ],
        [
            "fog_exponential_squared_near",
            "fog_exponential_squared_far",
            "fog_exponential_squared_far_msaa4",
        ],
        [
            "fog_atmospheric_near",
            "fog_atmospheric_far",
            "fog_atmospheric_far_msaa4",
        ],
    ];
    (0..FOG_MODES.len())
        .flat_map(|stage| {
            let origin = stage_origin(stage);
            // Down the row of objects, from its front and from further back and aside.
            let near = FidelityCamera::looking(
                origin + Vec3::new(0.0, 2.0, 6.0),
                origin + Vec3::new(0.0, 0.5, -10.0),
            );
            let far = FidelityCamera::looking(
                origin + Vec3::new(3.5, 4.0, 14.0),
                origin + Vec3::new(0.0, 0.5, -8.0),
            );
            // The far camera again with 4x MSAA (against Bevy forward 4x): the fog and its
            // shadowed inscattering per sample on edges.
            let far_msaa = FidelityCamera {
                msaa: Some(Msaa::Sample4),
                ..far.clone()
            };
            [
                FidelityCase::single(names[stage][0], near),
                FidelityCase::single(names[stage][1], far),
                FidelityCase::single(names[stage][2], far_msaa),
            ]
        })
        .collect()
}

fn spawn_fog(world: &mut World) {
    spawn_sun(world);
    // A low sun ahead of the cameras: they look into its inscattering, which the cubes' shadows
    // (cast towards the cameras) attenuate, as Bevy's apply_fog does.
    world.spawn((
        DirectionalLight {
            illuminance: 1_500.0,
            color: Color::srgb(1.0, 0.8, 0.6),
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(0.0, 3.0, -30.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let ground = add_mesh(world, Plane3d::default().mesh().size(14.0, 56.0));
    let cube = add_mesh(world, Cuboid::new(1.2, 1.2, 1.2));
    let grey = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.45, 0.45, 0.45),
            perceptual_roughness: 0.85,
            ..default()
        },
    );
    let colours = [
        Color::srgb(0.9, 0.2, 0.15),
        Color::srgb(0.2, 0.8, 0.3),
        Color::srgb(0.2, 0.35, 0.9),
    ];
    let materials: Vec<_> = colours
        .iter()
        .map(|&base_color| {
            add_material(
                world,
                StandardMaterial {
                    base_color,
                    perceptual_roughness: 0.5,
                    ..default()
                },
            )
        })
        .collect();
    // An unlit emissive-looking marker far away: Bevy fogs unlit materials too.
    let unlit = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(1.0, 0.9, 0.2),
            unlit: true,
            ..default()
        },
    );
    for stage in 0..FOG_MODES.len() {
        let origin = stage_origin(stage);
        spawn(
            world,
            &ground,
            &grey,
            Transform::from_translation(origin + Vec3::new(0.0, 0.0, -16.0)),
        );
        for i in 0..8 {
            let x = if i % 2 == 0 { -1.6 } else { 1.6 };
            let at = origin + Vec3::new(x, 0.6, -4.0 * i as f32);
            spawn(
                world,
                &cube,
                &materials[i % 3],
                Transform::from_translation(at),
            );
        }
        spawn(
            world,
            &cube,
            &unlit,
            Transform::from_translation(origin + Vec3::new(0.0, 1.5, -34.0)),
        );
    }
    world.add_observer(
        |add: On<Add, Camera3d>, mut commands: Commands, transforms: Query<&Transform>| {
            if let Ok(transform) = transforms.get(add.entity) {
                commands
                    .entity(add.entity)
                    .insert(stage_fog(stage_of(transform)));
            }
        },
    );
}

/// The far band shows the scene (ground, objects, the far marker), not an empty frame. Whether
/// it is fogged is what the comparison with Bevy forward decides: Bevy's fog veils every
/// surface beyond a few metres here (the contact sheet, `FIDELITY_SAVE=1`), so an unfogged
/// tile image could not match it.
fn far_end_is_drawn(frame: &Frame) -> bool {
    distinct_colours(frame) >= 3
}

/// Each `DistanceFog` falloff (linear, exponential and exponential squared with directional
/// inscattering, atmospheric) from two camera positions, the second also with 4x MSAA, against
/// Bevy forward, whole frames and the far end of the row.
#[test]
fn content_fog() {
    let _test = GpuTest::start("content_fog");
    let far_band = Region {
        x0: 0.3,
        y0: 0.25,
        x1: 0.7,
        y1: 0.5,
    };
    // The far band is checked without MSAA only. With 4x MSAA it matches at 40-53 dB but with a
    // p99.5 of up to 15/255 on the cubes' silhouettes (the whole frames meet the usual bar):
    // there the tile path lights and fogs each sample where it lies and forward MSAA shades the
    // pixel centre of each primitive, and this low sun's shadow acne in the inscattering turns
    // that sub-pixel offset into visible differences.
    let checks: Vec<RegionCheck> = fog_cases()
        .iter()
        .filter(|case| !case.name.contains("msaa"))
        .map(|case| RegionCheck {
            case: case.name,
            region: far_band,
            shows: "the fogged far end of the row",
            visible: far_end_is_drawn,
        })
        .collect();
    assert_content_matches_to(headless(), &FOG, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

// ------------------------------------------------------------------------------------------
// Scene: materials with `fog_enabled: false` under a camera's distance fog.

const FOG_DISABLED: FidelityScene = FidelityScene {
    name: "fog_disabled",
    spawn: spawn_fog_disabled,
    cases: fog_disabled_cases,
};

/// Stage 1 is drawn by the unmerged tier (the tonemap pass samples the stored material).
const FOG_DISABLED_UNMERGED_STAGE: usize = 1;

/// The camera of every case: down stage `stage`, the unfogged meshes 9 to 13 m away.
fn fog_disabled_camera(stage: usize) -> FidelityCamera {
    let origin = stage_origin(stage);
    FidelityCamera::looking(
        origin + Vec3::new(0.0, 1.8, 6.0),
        origin + Vec3::new(0.0, 1.1, -8.0),
    )
}

fn fog_disabled_cases() -> Vec<FidelityCase> {
    let plain = fog_disabled_camera(0);
    let mut msaa = plain.clone();
    msaa.msaa = Some(Msaa::Sample4);
    // An HDR camera with transparent meshes: they are blended into the light before tonemap,
    // over surfaces the lighting subpass fogged first (light_finish.frag).
    let mut hdr = plain.clone();
    hdr.hdr = true;
    let mut hdr_msaa = hdr.clone();
    hdr_msaa.msaa = Some(Msaa::Sample4);
    vec![
        FidelityCase::single("fog_disabled", plain),
        FidelityCase::single("fog_disabled_msaa4", msaa),
        FidelityCase::single("fog_disabled_hdr", hdr),
        FidelityCase::single("fog_disabled_hdr_msaa4", hdr_msaa),
        FidelityCase::single(
            "fog_disabled_unmerged",
            fog_disabled_camera(FOG_DISABLED_UNMERGED_STAGE),
        ),
    ]
}

/// Where the unfogged meshes are (centre relative to the stage's origin, half size): a lit
/// cube, an unlit cube, a transparent pane.
const UNFOGGED_LIT: (Vec3, Vec3) = (Vec3::new(-2.6, 1.0, -4.0), Vec3::splat(1.0));
const UNFOGGED_UNLIT: (Vec3, Vec3) = (Vec3::new(2.6, 1.0, -4.0), Vec3::splat(1.0));
const UNFOGGED_PANE: (Vec3, Vec3) = (Vec3::new(0.0, 1.2, -5.0), Vec3::new(0.9, 0.9, 0.0));

fn spawn_fog_disabled(world: &mut World) {
    spawn_sun(world);
    // A low sun ahead: the fog's inscattering towards the camera.
    world.spawn((
        DirectionalLight {
            illuminance: 1_500.0,
            color: Color::srgb(1.0, 0.8, 0.6),
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(0.0, 3.0, -30.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let ground = add_mesh(world, Plane3d::default().mesh().size(14.0, 40.0));
    let cube = add_mesh(world, Cuboid::new(2.0, 2.0, 2.0));
    let pane = add_mesh(world, Rectangle::new(1.8, 1.8));
    let material = |world: &mut World, base_color: Color, unlit: bool, fog_enabled: bool| {
        add_material(
            world,
            StandardMaterial {
                base_color,
                unlit,
                fog_enabled,
                perceptual_roughness: 0.6,
                alpha_mode: if base_color.alpha() < 1.0 {
                    AlphaMode::Blend
                } else {
                    AlphaMode::Opaque
                },
                ..default()
            },
        )
    };
    let grey = material(world, Color::srgb(0.45, 0.45, 0.45), false, true);
    // Unfogged: a lit green cube, an unlit magenta cube, an orange transparent pane.
    let green = material(world, Color::srgb(0.15, 0.85, 0.25), false, false);
    let magenta = material(world, Color::srgb(0.6, 0.08, 0.45), true, false);
    let orange = material(world, Color::srgba(1.0, 0.45, 0.05, 0.7), false, false);
    // Fogged, for contrast: a lit blue cube behind the pane, lit and unlit cubes further on,
    // a near cyan transparent pane.
    let blue = material(world, Color::srgb(0.2, 0.35, 0.9), false, true);
    let red = material(world, Color::srgb(0.9, 0.2, 0.15), false, true);
    let yellow = material(world, Color::srgb(1.0, 0.9, 0.2), true, true);
    let cyan = material(world, Color::srgba(0.1, 0.8, 0.9, 0.5), false, true);
    for stage in [0, FOG_DISABLED_UNMERGED_STAGE] {
        let at = |offset: Vec3| Transform::from_translation(stage_origin(stage) + offset);
        spawn(world, &ground, &grey, at(Vec3::new(0.0, 0.0, -12.0)));
        spawn(world, &cube, &green, at(UNFOGGED_LIT.0));
        spawn(world, &cube, &magenta, at(UNFOGGED_UNLIT.0));
        spawn(world, &pane, &orange, at(UNFOGGED_PANE.0));
        spawn(world, &cube, &blue, at(Vec3::new(0.0, 1.0, -9.0)));
        spawn(world, &cube, &red, at(Vec3::new(-3.0, 1.0, -14.0)));
        spawn(world, &cube, &yellow, at(Vec3::new(3.0, 1.0, -16.0)));
        spawn(
            world,
            &pane,
            &cyan,
            at(Vec3::new(1.4, 0.6, 2.0)).with_scale(Vec3::splat(0.6)),
        );
    }
    world.add_observer(|add: On<Add, Camera3d>, mut commands: Commands| {
        commands.entity(add.entity).insert(stage_fog(1));
    });
    world.add_observer(
        |add: On<Add, TileDeferred>, mut commands: Commands, transforms: Query<&Transform>| {
            if transforms
                .get(add.entity)
                .is_ok_and(|t| stage_of(t) == FOG_DISABLED_UNMERGED_STAGE)
            {
                commands.entity(add.entity).insert(TileDeferred {
                    merge_subpasses: false,
                    ..default()
                });
            }
        },
    );
}

/// The screen rectangle (fractions of the image) of the box `centre +- half` as
/// [`fog_disabled_camera`] of stage 0 sees it (Bevy's default perspective, the image's aspect
/// ratio; every case's camera sees its stage alike).
fn projected_region((centre, half): (Vec3, Vec3)) -> Region {
    let camera = fog_disabled_camera(0);
    let projection = PerspectiveProjection::default();
    let aspect = fidelity::IMAGE_SIZE.x as f32 / fidelity::IMAGE_SIZE.y as f32;
    let clip_from_world =
        Mat4::perspective_infinite_reverse_rh(projection.fov, aspect, projection.near)
            * camera.transform.to_matrix().inverse();
    let (mut lo, mut hi) = (Vec2::splat(1.0), Vec2::splat(0.0));
    for corner in 0..8 {
        let sign = |bit: u32| if corner & (1 << bit) == 0 { -1.0 } else { 1.0 };
        let p = centre + half * Vec3::new(sign(0), sign(1), sign(2));
        let ndc = clip_from_world.project_point3(p);
        let uv = Vec2::new((ndc.x + 1.0) / 2.0, (1.0 - ndc.y) / 2.0);
        lo = lo.min(uv);
        hi = hi.max(uv);
    }
    Region {
        x0: lo.x.max(0.0),
        y0: lo.y.max(0.0),
        x1: hi.x.min(1.0),
        y1: hi.y.min(1.0),
    }
}

/// Materials with `fog_enabled: false` (a lit and an unlit opaque cube, a transparent pane)
/// under exponential fog with directional inscattering, beside fogged ones: left unfogged, as Bevy
/// leaves them, and the tile camera stays on the tile path (nothing in `TileMissing`:
/// `render_scene_in` asserts every tile camera rendered with a tile tier, which an `Auto`
/// camera with a listed item does not). LDR at 1x and 4x MSAA (the tonemap subpass fogs, the
/// transparent pass after it) and HDR at 1x (the lighting subpass's light_finish fog draws
/// before the transparent pass), and on the unmerged tier (the tonemap pass samples the stored
/// material), against Bevy forward, whole frames and each unfogged mesh's region.
#[test]
fn content_fog_disabled_materials() {
    let _test = GpuTest::start("content_fog_disabled_materials");
    // Unfogged, each keeps its saturated colour; the fog (59-72 % here) would grey it.
    let saturated = |f: &Frame| saturated_pixels(f, 60) * 4 > f.rgba.len() / 4;
    let mut checks = Vec::new();
    for case in fog_disabled_cases() {
        for (mesh, shows) in [
            (UNFOGGED_LIT, "the unfogged lit green cube"),
            (UNFOGGED_UNLIT, "the unfogged unlit magenta cube"),
            (UNFOGGED_PANE, "the unfogged orange transparent pane"),
        ] {
            checks.push(RegionCheck {
                case: case.name,
                region: projected_region(mesh),
                shows,
                visible: saturated,
            });
        }
    }
    assert_content_matches_to(headless(), &FOG_DISABLED, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

// ------------------------------------------------------------------------------------------
// Scene: environment map light over a roughness x metallic sphere grid.

/// The light arriving from `dir`: a blue sky over a brown ground, a warm glow towards +x and a
/// bright band around the horizon towards -z, so that rotations and roughness show.
fn environment_radiance(dir: Vec3) -> Vec3 {
    let dir = dir.normalize();
    let sky = Vec3::new(0.25, 0.45, 0.85).lerp(Vec3::new(0.6, 0.75, 0.95), 1.0 - dir.y.max(0.0));
    let ground = Vec3::new(0.35, 0.25, 0.15);
    let base = if dir.y >= 0.0 { sky } else { ground };
    let glow = Vec3::new(0.9, 0.5, 0.2) * dir.x.max(0.0).powi(4);
    let band = Vec3::splat(0.9) * ((1.0 - dir.y.abs() * 6.0).max(0.0) * (-dir.z).max(0.0));
    (base + glow + band).min(Vec3::ONE)
}

/// The world direction through texel (x, y) of cube face `face` (+x, -x, +y, -y, +z, -z).
fn cube_direction(face: usize, x: u32, y: u32, size: u32) -> Vec3 {
    let u = (x as f32 + 0.5) / size as f32 * 2.0 - 1.0;
    let v = (y as f32 + 0.5) / size as f32 * 2.0 - 1.0;
    match face {
        0 => Vec3::new(1.0, -v, -u),
        1 => Vec3::new(-1.0, -v, u),
        2 => Vec3::new(u, 1.0, v),
        3 => Vec3::new(u, -1.0, -v),
        4 => Vec3::new(u, -v, 1.0),
        _ => Vec3::new(-u, -v, -1.0),
    }
}

/// A cube map of `size` texels with `mips` levels (each the 2x2 box filter of the one above),
/// sRGB, from [`environment_radiance`] blurred by `blur` (0: sharp; the diffuse map averages
/// over a wide cone).
pub(crate) fn environment_cube(size: u32, mips: u32, blur: f32) -> Image {
    let mut data = Vec::new();
    for face in 0..6 {
        let mut level: Vec<Vec3> = (0..size * size)
            .map(|i| {
                let dir = cube_direction(face, i % size, i / size, size).normalize();
                if blur == 0.0 {
                    return environment_radiance(dir);
                }
                // A few taps around the direction: a soft irradiance-like map.
                let (t, b) = dir.any_orthonormal_pair();
                let mut sum = Vec3::ZERO;
                for k in 0..16 {
                    let angle = k as f32 / 16.0 * std::f32::consts::TAU;
                    sum += environment_radiance(dir + (t * angle.cos() + b * angle.sin()) * blur);
                }
                sum / 16.0 * 0.8
            })
            .collect();
        let mut level_size = size;
        for mip in 0..mips {
            if mip > 0 {
                let half = level_size / 2;
                level = (0..half * half)
                    .map(|i| {
                        let (x, y) = (i % half * 2, i / half * 2);
                        let at =
                            |dx: u32, dy: u32| level[((y + dy) * level_size + x + dx) as usize];
                        (at(0, 0) + at(1, 0) + at(0, 1) + at(1, 1)) / 4.0
                    })
                    .collect();
                level_size = half;
            }
            for c in &level {
                let srgb = Color::linear_rgb(c.x, c.y, c.z).to_srgba();
                data.extend([srgb.red, srgb.green, srgb.blue].map(|v| (v * 255.0).round() as u8));
                data.push(255);
            }
        }
    }
    let mut image = Image::new(
        Extent3d {
            width: size,
            height: size,
            depth_or_array_layers: 6,
        },
        TextureDimension::D2,
        vec![0; (size * size * 6 * 4) as usize],
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    // Every face's mip chain, face after face (wgpu's layer-major order, Bevy's default).
    image.data = Some(data);
    image.texture_descriptor.mip_level_count = mips;
    image.texture_view_descriptor = Some(TextureViewDescriptor {
        dimension: Some(TextureViewDimension::Cube),
        ..default()
    });
    image
}

const ENVIRONMENT_MAP: FidelityScene = FidelityScene {
    name: "environment_map",
    spawn: spawn_environment_map,
    cases: environment_map_cases,
};

fn environment_map_cases() -> Vec<FidelityCase> {
    let front = |stage: usize| {
        let origin = stage_origin(stage) + Vec3::new(0.0, 1.4, 0.0);
        FidelityCamera::looking(origin + Vec3::new(0.0, 0.6, 4.6), origin)
    };
    let mut side = front(0);
    let origin = stage_origin(0) + Vec3::new(0.0, 1.4, 0.0);
    side.transform =
        Transform::from_translation(origin + Vec3::new(-3.0, 2.0, 3.4)).looking_at(origin, Vec3::Y);
    // The environment map adds to the ambient light (Bevy adds both): a bright one.
    let mut with_ambient = front(2);
    with_ambient.ambient = Some(AmbientLight {
        brightness: 600.0,
        ..default()
    });
    vec![
        FidelityCase::single("environment_map", front(0)),
        FidelityCase::single("environment_map_side", side),
        FidelityCase::single("environment_map_rotated_intense", front(1)),
        FidelityCase::single("environment_map_and_ambient", with_ambient),
    ]
}

/// A 5 x 4 grid of spheres centred on `origin`: roughness across, metallic down.
pub(crate) fn spawn_sphere_grid(world: &mut World, origin: Vec3) {
    let sphere = add_mesh(world, Sphere::new(0.33).mesh().uv(32, 16));
    for (row, metallic) in [0.0, 0.35, 0.7, 1.0].into_iter().enumerate() {
        for (column, roughness) in [0.08, 0.3, 0.5, 0.75, 1.0].into_iter().enumerate() {
            let material = add_material(
                world,
                StandardMaterial {
                    base_color: Color::srgb(0.9, 0.75, 0.55),
                    perceptual_roughness: roughness,
                    metallic,
                    ..default()
                },
            );
            let at = origin + Vec3::new(column as f32 * 0.78 - 1.56, 1.05 - row as f32 * 0.7, 0.0);
            spawn(world, &sphere, &material, Transform::from_translation(at));
        }
    }
}

fn spawn_environment_map(world: &mut World) {
    for stage in 0..3 {
        spawn_sphere_grid(world, stage_origin(stage) + Vec3::new(0.0, 1.4, 0.0));
    }
    // A sun over every stage (directional lights reach them all).
    world.spawn((
        DirectionalLight {
            illuminance: 2_000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_translation(stage_origin(2) + Vec3::new(2.0, 5.0, 4.0))
            .looking_at(stage_origin(2), Vec3::Y),
    ));
    let diffuse = add_image(world, environment_cube(8, 1, 0.9));
    let specular = add_image(world, environment_cube(32, 6, 0.0));
    world.add_observer(
        move |add: On<Add, Camera3d>, mut commands: Commands, transforms: Query<&Transform>| {
            let Ok(transform) = transforms.get(add.entity) else {
                return;
            };
            let (intensity, rotation) = match stage_of(transform) {
                1 => (2_500.0, Quat::from_euler(EulerRot::YXZ, 2.2, 0.4, 0.0)),
                _ => (1_200.0, Quat::IDENTITY),
            };
            commands.entity(add.entity).insert(EnvironmentMapLight {
                diffuse_map: diffuse.clone(),
                specular_map: specular.clone(),
                intensity,
                rotation,
                affects_lightmapped_mesh_diffuse: true,
            });
        },
    );
}

/// A 5 x 4 grid of spheres (roughness x metallic) lit by an `EnvironmentMapLight` (generated
/// diffuse and 6-mip specular cubes) and a sun: plain from two sides, rotated and brighter,
/// and beside a bright ambient light, against Bevy forward.
#[test]
fn content_environment_map() {
    let _test = GpuTest::start("content_environment_map");
    // Reflections of a coloured environment: many colours across the grid.
    let lit_grid = |f: &Frame| distinct_colours(f) >= 60 && saturated_pixels(f, 40) > 300;
    let checks: Vec<RegionCheck> = environment_map_cases()
        .iter()
        .map(|case| RegionCheck {
            case: case.name,
            region: Region::CENTRE,
            shows: "spheres lit and reflecting the environment",
            visible: lit_grid,
        })
        .collect();
    assert_content_matches(headless(), &ENVIRONMENT_MAP, &checks);
}

// ------------------------------------------------------------------------------------------
// Scene: a generated environment map (`GeneratedEnvironmentMapLight`).

const GENERATED_ENVIRONMENT_MAP: FidelityScene = FidelityScene {
    name: "generated_environment_map",
    spawn: spawn_generated_environment_map,
    cases: generated_environment_map_cases,
};

fn generated_environment_map_cases() -> Vec<FidelityCase> {
    let origin = stage_origin(0) + Vec3::new(0.0, 1.4, 0.0);
    let front = FidelityCamera::looking(origin + Vec3::new(0.0, 0.6, 4.6), origin);
    let mut msaa = front.clone();
    msaa.msaa = Some(Msaa::Sample4);
    vec![
        FidelityCase::single("generated_environment_map", front),
        FidelityCase::single("generated_environment_map_msaa", msaa),
    ]
}

fn spawn_generated_environment_map(world: &mut World) {
    spawn_sphere_grid(world, stage_origin(0) + Vec3::new(0.0, 1.4, 0.0));
    // The source cube Bevy filters on the GPU (square, a power of two, one level).
    let source = add_image(world, environment_cube(64, 1, 0.0));
    world.add_observer(move |add: On<Add, Camera3d>, mut commands: Commands| {
        commands
            .entity(add.entity)
            .insert(GeneratedEnvironmentMapLight {
                environment_map: source.clone(),
                intensity: 1_500.0,
                rotation: Quat::from_rotation_y(0.7),
                ..default()
            });
    });
}

/// A `GeneratedEnvironmentMapLight`: Bevy filters the source cube into diffuse and specular
/// cubes on the GPU (outside any camera's schedule) and gives the camera an
/// `EnvironmentMapLight` of them; the tile path lights with it as with any environment map,
/// without falling back. With and without MSAA, against Bevy forward.
#[test]
fn content_generated_environment_map() {
    let _test = GpuTest::start("content_generated_environment_map");
    let lit_grid = |f: &Frame| distinct_colours(f) >= 60 && saturated_pixels(f, 40) > 300;
    let checks: Vec<RegionCheck> = generated_environment_map_cases()
        .iter()
        .map(|case| RegionCheck {
            case: case.name,
            region: Region::CENTRE,
            shows: "spheres lit and reflecting the generated environment",
            visible: lit_grid,
        })
        .collect();
    assert_content_matches_to(headless(), &GENERATED_ENVIRONMENT_MAP, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

// ------------------------------------------------------------------------------------------
// Scene: all of it at once, at 4x MSAA and on the unmerged debug tier.

const COMBINED: FidelityScene = FidelityScene {
    name: "combined",
    spawn: spawn_combined,
    cases: combined_cases,
};

mod combined_stage {
    pub const MSAA: usize = 0;
    pub const UNMERGED: usize = 1;
}

fn combined_cases() -> Vec<FidelityCase> {
    use combined_stage::*;
    vec![
        FidelityCase::single("combined_msaa4", FidelityCamera::stage(MSAA)),
        FidelityCase::single("combined_unmerged", FidelityCamera::stage(UNMERGED)),
    ]
}

fn spawn_combined(world: &mut World) {
    use combined_stage::*;
    spawn_sun(world);
    let cube = add_mesh(
        world,
        with_vertex_colours(Cuboid::new(1.2, 1.2, 1.2).mesh().build(), |_| 1.0),
    );
    let sphere = add_mesh(world, Sphere::new(0.8).mesh().uv(32, 16));
    let segment = add_mesh(world, Segment3d::new(Vec3::ZERO, Vec3::new(1.2, 0.0, 0.0)));
    let white = add_material(world, StandardMaterial::default());
    let metal = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.95, 0.9, 0.85),
            metallic: 1.0,
            perceptual_roughness: 0.2,
            ..default()
        },
    );
    let yellow = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(1.0, 0.85, 0.1),
            unlit: true,
            ..default()
        },
    );
    for stage in [MSAA, UNMERGED] {
        spawn_stage(world, stage);
        let at = |offset: Vec3| Transform::from_translation(stage_origin(stage) + offset);
        spawn(
            world,
            &cube,
            &white,
            at(Vec3::new(-1.4, 0.7, 0.0)).with_rotation(Quat::from_rotation_y(0.5)),
        );
        spawn(world, &sphere, &metal, at(Vec3::new(1.4, 0.9, 0.0)));
        for i in 0..8 {
            let angle = i as f32 / 8.0 * std::f32::consts::TAU;
            spawn(
                world,
                &segment,
                &yellow,
                at(Vec3::new(0.0, 2.0, -1.0)).with_rotation(Quat::from_rotation_z(angle)),
            );
        }
    }
    let sky = add_image(world, sky_cube());
    let diffuse = add_image(world, environment_cube(8, 1, 0.9));
    let specular = add_image(world, environment_cube(32, 6, 0.0));
    world.add_observer(
        move |add: On<Add, Camera3d>, mut commands: Commands, transforms: Query<&Transform>| {
            let Ok(transform) = transforms.get(add.entity) else {
                return;
            };
            let mut camera = commands.entity(add.entity);
            camera.insert((
                Skybox {
                    image: Some(sky.clone()),
                    brightness: 1_000.0,
                    rotation: Quat::from_rotation_y(0.4),
                },
                EnvironmentMapLight {
                    diffuse_map: diffuse.clone(),
                    specular_map: specular.clone(),
                    intensity: 1_500.0,
                    rotation: Quat::from_rotation_y(-0.8),
                    affects_lightmapped_mesh_diffuse: true,
                },
                stage_fog(1),
            ));
            if stage_of(transform) == MSAA {
                camera.insert(Msaa::Sample4);
            }
        },
    );
    // The unmerged tier (G-buffer stored and sampled as textures) for the stage's tile camera.
    world.add_observer(
        |add: On<Add, TileDeferred>, mut commands: Commands, transforms: Query<&Transform>| {
            if transforms
                .get(add.entity)
                .is_ok_and(|t| stage_of(t) == combined_stage::UNMERGED)
            {
                commands.entity(add.entity).insert(TileDeferred {
                    merge_subpasses: false,
                    ..default()
                });
            }
        },
    );
}

/// Vertex colours, a line fan, a skybox, fog and an environment map together, at 4x MSAA
/// (against Bevy forward 4x, >= 34 dB) and on the unmerged tier (>= 36 dB).
#[test]
fn content_combined_msaa_and_unmerged() {
    let _test = GpuTest::start("content_combined_msaa_and_unmerged");
    let checks: Vec<RegionCheck> = combined_cases()
        .iter()
        .map(|case| RegionCheck {
            case: case.name,
            region: Region::CENTRE,
            shows: "the stage's objects",
            visible: |f| saturated_pixels(f, 60) > 200,
        })
        .collect();
    assert_content_matches_to(headless(), &COMBINED, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

// ------------------------------------------------------------------------------------------
// Skinned meshes are drawn by the tile path (issue 15, `animated.rs`). Light probes with an
// environment map or an irradiance volume are reported (`light_probes.rs`); a bare `LightProbe`
// lights nothing, in Bevy either.

/// A skinned cube (one joint) and a bare light probe (no environment map, no irradiance volume:
/// Bevy lights nothing with it) in a tile camera's view: the cube is drawn by the tile path and
/// nothing is listed missing (no fall back to Bevy).
#[test]
fn content_skinned_mesh_and_a_bare_light_probe_are_drawn() {
    use bevy::mesh::skinning::{SkinnedMesh, SkinnedMeshInverseBindposes};
    let _test = GpuTest::start("content_skinned_mesh_and_a_bare_light_probe_are_drawn");
    let mut headless = headless();
    let world = headless.app.world_mut();
    spawn_sun(world);
    let mut mesh = Cuboid::new(1.0, 1.0, 1.0).mesh().build();
    let vertices = mesh.count_vertices();
    mesh.insert_attribute(
        Mesh::ATTRIBUTE_JOINT_INDEX,
        VertexAttributeValues::Uint16x4(vec![[0; 4]; vertices]),
    );
    mesh.insert_attribute(
        Mesh::ATTRIBUTE_JOINT_WEIGHT,
        vec![[1.0f32, 0.0, 0.0, 0.0]; vertices],
    );
    let mesh = add_mesh(world, mesh);
    let material = add_material(world, StandardMaterial::default());
    let bindposes = world
        .resource_mut::<Assets<SkinnedMeshInverseBindposes>>()
        .add(SkinnedMeshInverseBindposes::from(vec![Mat4::IDENTITY]));
    let joint = world.spawn(Transform::from_xyz(0.0, 0.5, 0.0)).id();
    world.spawn((
        Name::new("skinned cube"),
        Mesh3d(mesh),
        MeshMaterial3d(material),
        SkinnedMesh {
            inverse_bindposes: bindposes,
            joints: vec![joint],
        },
        Transform::default(),
    ));
    world.spawn((bevy::light::LightProbe::default(), Transform::default()));
    let camera = headless.spawn_camera((
        Camera3d::default(),
        Transform::from_xyz(0.0, 1.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
        TileDeferred::default(),
    ));
    let frame = headless.render(4);
    headless.render(2);
    let world = headless.app.world();
    let listed = world.get::<bevy_tile_deferred::tile_deferred::missing::TileMissing>(camera);
    assert!(
        listed.is_none_or(|listed| listed.items.is_empty()),
        "the skinned cube and the bare probe are drawn, not listed: {:?}",
        listed.map(|listed| &listed.items)
    );
    let decision = world
        .get::<bevy_tile_deferred::tiers::TierDecision>(camera)
        .expect("a tier decision");
    assert!(
        decision.missing_fallback.is_none(),
        "Auto stays on the tile path with the skinned cube in view: {decision:?}"
    );
    // Drawn by the tile path: the cube covers the middle of the frame.
    let centre = frame.pixel(frame.width as i32 / 2, frame.height as i32 / 2);
    assert!(
        centre[..3].iter().any(|&c| c > 60),
        "the cube is drawn: {centre:?}"
    );
}
