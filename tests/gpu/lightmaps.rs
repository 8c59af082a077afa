//! Lightmaps (issue 15), tile path vs Bevy forward: meshes with Bevy's `Lightmap` (generated
//! floating-point lightmaps, two images, two `uv_rect`s of one, bilinear and bicubic sampling,
//! `lightmap_exposure` != 1, a metallic material, a lightmap image that never loads) under
//! Bevy's default ambient light, a sun and a point light; and the cases the tile path reports
//! instead of drawing (`TileMissing`).

use crate::{
    content::{
        MIN_PSNR, MIN_PSNR_MSAA, Region, RegionCheck, add_image, add_material, add_mesh,
        assert_content_matches_to, distinct_colours, headless, saturated_pixels, spawn_stage,
        spawn_sun,
    },
    harness::{Frame, GpuTest},
    scenes::fidelity::{FidelityCamera, FidelityCase, FidelityScene, stage_origin},
};
use bevy::{
    asset::RenderAssetUsages,
    light::AmbientLight,
    mesh::VertexAttributeValues,
    pbr::Lightmap,
    prelude::*,
    render::{
        render_resource::{Extent3d, TextureDimension, TextureFormat},
        view::Msaa,
    },
};
use bevy_tile_deferred::{TileDeferred, tile_deferred::missing::TileMissing};

/// `v` as IEEE half-float bits (normal values; the lightmaps hold nothing else).
fn f16_bits(v: f32) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = ((bits >> 13) & 0x3ff) as u16;
    sign | ((exponent.clamp(1, 30) as u16) << 10) | mantissa
}

/// A `size` x `size` Rgba16Float lightmap from `texel(x, y)` (rgb), with the app's default
/// sampler (linear), as a baked lightmap would be.
fn lightmap_image(size: u32, texel: impl Fn(u32, u32) -> [f32; 3]) -> Image {
    let data = (0..size)
        .flat_map(|y| (0..size).map(move |x| (x, y)))
        .flat_map(|(x, y)| {
            let [r, g, b] = texel(x, y);
            [r, g, b, 1.0]
                .into_iter()
                .flat_map(|c| f16_bits(c).to_le_bytes())
        })
        .collect();
    Image::new(
        Extent3d {
            width: size,
            height: size,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba16Float,
        RenderAssetUsages::default(),
    )
}

/// `mesh` with its UV0 copied into UV1 (Bevy's lightmaps read UV1).
fn with_uv1(mut mesh: Mesh) -> Mesh {
    let Some(VertexAttributeValues::Float32x2(uvs)) = mesh.attribute(Mesh::ATTRIBUTE_UV_0) else {
        panic!("the mesh has float2 UVs");
    };
    let uvs = uvs.clone();
    mesh.insert_attribute(Mesh::ATTRIBUTE_UV_1, uvs);
    mesh
}

const LIGHTMAPS: FidelityScene = FidelityScene {
    name: "lightmaps",
    spawn: spawn_lightmaps,
    cases: lightmap_cases,
};

fn lightmap_cases() -> Vec<FidelityCase> {
    let front = FidelityCamera::stage(0);
    let mut msaa = front.clone();
    msaa.msaa = Some(Msaa::Sample4);
    // From the side and lower, with a dimmer ambient light: the lightmaps dominate.
    let origin = stage_origin(0);
    let mut side = FidelityCamera::looking(
        origin + Vec3::new(4.5, 1.8, 5.0),
        origin + Vec3::new(-0.5, 1.0, 0.0),
    );
    side.ambient = Some(AmbientLight {
        brightness: 20.0,
        ..default()
    });
    vec![
        FidelityCase::single("lightmaps", front),
        FidelityCase::single("lightmaps_msaa", msaa),
        FidelityCase::single("lightmaps_side", side),
    ]
}

/// The left and right thirds and the centre of the front view: one lightmapped mesh each.
const LEFT: Region = Region {
    x0: 0.12,
    y0: 0.2,
    x1: 0.38,
    y1: 0.85,
};
const MIDDLE: Region = Region {
    x0: 0.38,
    y0: 0.2,
    x1: 0.62,
    y1: 0.85,
};
const RIGHT: Region = Region {
    x0: 0.62,
    y0: 0.2,
    x1: 0.88,
    y1: 0.85,
};

fn spawn_lightmaps(world: &mut World) {
    spawn_sun(world);
    spawn_stage(world, 0);
    let origin = stage_origin(0);
    // A colour gradient (blue to red across, green down) and a blue / orange checker of 8 x 8
    // texels, bright enough to outshine the sun.
    let gradient = add_image(
        world,
        lightmap_image(16, |x, y| {
            let (u, v) = (x as f32 / 15.0, y as f32 / 15.0);
            [2.2 * u, 1.6 * v, 2.2 * (1.0 - u)]
        }),
    );
    let checker = add_image(
        world,
        lightmap_image(8, |x, y| {
            if (x + y) % 2 == 0 {
                [0.1, 0.5, 2.4]
            } else {
                [2.4, 0.6, 0.05]
            }
        }),
    );
    // Never added: the lightmap image is not loaded (Bevy samples its fallback image, white).
    let unloaded = world.resource_mut::<Assets<Image>>().reserve_handle();
    let panel = add_mesh(world, with_uv1(Rectangle::new(2.0, 2.0).mesh().build()));
    let cube = add_mesh(world, with_uv1(Cuboid::new(1.5, 1.5, 1.5).mesh().build()));
    let floor_tile = add_mesh(
        world,
        with_uv1(Plane3d::default().mesh().size(1.2, 1.2).build()),
    );
    let material = |world: &mut World, base: Color, metallic: f32, exposure: f32| {
        add_material(
            world,
            StandardMaterial {
                base_color: base,
                perceptual_roughness: 0.7,
                metallic,
                lightmap_exposure: exposure,
                ..default()
            },
        )
    };
    let warm = material(world, Color::srgb(0.95, 0.9, 0.8), 0.0, 1300.0);
    let cool = material(world, Color::srgb(0.8, 0.9, 0.95), 0.0, 900.0);
    let metal = material(world, Color::srgb(0.9, 0.85, 0.9), 0.3, 1600.0);
    let pale = material(world, Color::srgb(0.7, 0.7, 0.7), 0.0, 400.0);
    let mut lightmapped = |mesh: &Handle<Mesh>,
                           material: &Handle<StandardMaterial>,
                           transform: Transform,
                           lightmap: Lightmap| {
        world.spawn((
            Mesh3d(mesh.clone()),
            MeshMaterial3d(material.clone()),
            transform,
            lightmap,
        ));
    };
    // Left: the gradient's left half, bilinear.
    lightmapped(
        &panel,
        &warm,
        Transform::from_translation(origin + Vec3::new(-2.6, 1.2, 0.0))
            .with_rotation(Quat::from_rotation_y(0.25)),
        Lightmap {
            image: gradient.clone(),
            uv_rect: Rect::new(0.0, 0.0, 0.5, 1.0),
            bicubic_sampling: false,
        },
    );
    // Middle: the gradient's right half, bicubic.
    lightmapped(
        &panel,
        &cool,
        Transform::from_translation(origin + Vec3::new(0.0, 1.2, -0.3)),
        Lightmap {
            image: gradient,
            uv_rect: Rect::new(0.5, 0.0, 1.0, 1.0),
            bicubic_sampling: true,
        },
    );
    // Right: the checker on every face of a metallic cube, bicubic.
    lightmapped(
        &cube,
        &metal,
        Transform::from_translation(origin + Vec3::new(2.6, 0.9, 0.0))
            .with_rotation(Quat::from_rotation_y(0.6)),
        Lightmap {
            image: checker,
            uv_rect: Rect::new(0.0, 0.0, 1.0, 1.0),
            bicubic_sampling: true,
        },
    );
    // On the ground in front: a lightmap that never loads.
    lightmapped(
        &floor_tile,
        &pale,
        Transform::from_translation(origin + Vec3::new(0.0, 0.01, 1.6)),
        Lightmap {
            image: unloaded,
            ..default()
        },
    );
}

/// Saturated colours only the lightmaps bring (the materials are near white, the lights white
/// and warm, the ground grey).
fn shows_lightmap(frame: &Frame) -> bool {
    distinct_colours(frame) >= 25 && saturated_pixels(frame, 45) > 150
}

/// Three lightmapped meshes (two `uv_rect`s of one gradient lightmap, bilinear and bicubic, and a
/// checker lightmap on a metallic cube) and one whose lightmap never loads, under the default
/// ambient light, a sun and a point light: the tile path draws them without falling back and
/// matches Bevy forward on the whole frame and on each mesh, without MSAA and at 4x MSAA.
#[test]
fn content_lightmaps() {
    let _test = GpuTest::start("content_lightmaps");
    let mut checks = Vec::new();
    for case in ["lightmaps", "lightmaps_msaa"] {
        for (region, shows) in [
            (LEFT, "the gradient's left half, bilinear"),
            (MIDDLE, "the gradient's right half, bicubic"),
            (RIGHT, "the checker lightmap on a metallic cube"),
        ] {
            checks.push(RegionCheck {
                case,
                region,
                shows,
                visible: shows_lightmap,
            });
        }
    }
    checks.push(RegionCheck {
        case: "lightmaps_side",
        region: Region::CENTRE,
        shows: "lightmapped meshes from the side",
        visible: shows_lightmap,
    });
    assert_content_matches_to(headless(), &LIGHTMAPS, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

/// What the tile path cannot draw of lightmapped meshes as Bevy does is reported on the mesh,
/// and `Auto` falls back: here an ambient light that does not affect lightmapped meshes (the
/// other cases: `missing.rs`'s unit test). Under Bevy's defaults the mesh is not listed and the
/// camera stays on the tile path.
#[test]
fn content_lightmaps_off_the_defaults_are_reported() {
    use bevy_tile_deferred::tiers::TierDecision;
    let _test = GpuTest::start("content_lightmaps_off_the_defaults_are_reported");
    let mut headless = headless();
    let world = headless.app.world_mut();
    spawn_sun(world);
    let image = add_image(world, lightmap_image(4, |x, _| [x as f32 * 0.3, 0.5, 0.5]));
    let material = add_material(world, StandardMaterial::default());
    let cube = add_mesh(world, with_uv1(Cuboid::new(1.0, 1.0, 1.0).mesh().build()));
    world.spawn((
        Name::new("lightmapped cube"),
        Mesh3d(cube),
        MeshMaterial3d(material),
        Transform::from_xyz(0.0, 0.5, 0.0),
        Lightmap { image, ..default() },
    ));
    let camera = headless.spawn_camera((
        Camera3d::default(),
        Transform::from_xyz(0.0, 1.5, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
        TileDeferred::default(),
    ));
    headless.render(3);
    let listed = |world: &World| -> Option<String> {
        let missing = world.get::<TileMissing>(camera)?;
        missing
            .items
            .iter()
            .find(|item| item.name.as_deref() == Some("lightmapped cube"))
            .map(|item| item.what.clone())
    };
    let decision = |world: &World| {
        world
            .get::<TierDecision>(camera)
            .cloned()
            .expect("a tier decision")
    };
    let world = headless.app.world();
    assert_eq!(listed(world), None, "drawn under Bevy's defaults");
    assert!(
        decision(world).missing_fallback.is_none(),
        "{:?}",
        decision(world)
    );
    // An ambient light that leaves lightmapped meshes out: listed, and Auto falls back.
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(AmbientLight {
            affects_lightmapped_meshes: false,
            ..default()
        });
    headless.render(3);
    let world = headless.app.world();
    let what = listed(world).expect("the lightmapped cube is listed");
    assert!(what.contains("affects_lightmapped_meshes"), "{what}");
    assert!(
        decision(world).missing_fallback.is_some(),
        "{:?}",
        decision(world)
    );
}
