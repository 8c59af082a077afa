//! Content the tile path cannot sample or write is never bound and never drawn into blindly:
//! material textures that are cubes, arrays, 3D or integer images are listed in `TileMissing`
//! (an `Auto` camera falls back, a forced one draws the mesh without them and never binds them),
//! and a camera whose target image has a format the tile path cannot write falls back to Bevy.
//!
//! Bevy itself reports wgpu validation errors for such textures in a `StandardMaterial` (its
//! bind group expects a 2D float texture): each case runs a Bevy camera first as the control,
//! and the tile run may log what the control logged, no more.

use crate::{
    harness::{GpuTest, HeadlessApp, error_counts},
    scenes,
};
use bevy::{
    asset::RenderAssetUsages,
    camera::RenderTarget,
    prelude::*,
    render::{
        render_resource::{
            Extent3d, TextureDimension, TextureFormat, TextureUsages, TextureViewDescriptor,
            TextureViewDimension,
        },
        view::Msaa,
    },
};
use bevy_tile_deferred::{
    TileDeferred, TileRenderReports,
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::TileMissing,
};
use std::collections::BTreeMap;

const WIDTH: u32 = 128;
const HEIGHT: u32 = 72;

/// A material texture a `sampler2D` cannot read.
#[derive(Clone, Copy, Debug)]
enum Unusual {
    Cube,
    Array,
    Volume,
    Integer,
}

fn unusual_image(kind: Unusual) -> Image {
    let (layers, dimension, format, pixel): (u32, _, _, &[u8]) = match kind {
        Unusual::Cube | Unusual::Array => (
            6,
            TextureDimension::D2,
            TextureFormat::Rgba8UnormSrgb,
            &[200, 40, 40, 255],
        ),
        Unusual::Volume => (
            4,
            TextureDimension::D3,
            TextureFormat::Rgba8UnormSrgb,
            &[200, 40, 40, 255],
        ),
        Unusual::Integer => (1, TextureDimension::D2, TextureFormat::R8Uint, &[7]),
    };
    let mut image = Image::new_fill(
        Extent3d {
            width: 4,
            height: 4,
            depth_or_array_layers: layers,
        },
        dimension,
        pixel,
        format,
        RenderAssetUsages::default(),
    );
    if matches!(kind, Unusual::Cube) {
        image.texture_view_descriptor = Some(TextureViewDescriptor {
            dimension: Some(TextureViewDimension::Cube),
            ..default()
        });
    }
    image
}

/// The lit spheres and a box whose material's base colour texture is `kind`, seen by a camera
/// (a tile camera with `tier` where given). Returns the app, the camera and the box.
fn textured_box_app(kind: Unusual, tier: Option<TierSetting>) -> (HeadlessApp, Entity, Entity) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    let world = headless.app.world_mut();
    scenes::spawn_lit_spheres(world);
    let texture = world
        .resource_mut::<Assets<Image>>()
        .add(unusual_image(kind));
    let mesh = world
        .resource_mut::<Assets<Mesh>>()
        .add(Cuboid::new(1.0, 1.0, 1.0));
    let material = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial {
            base_color_texture: Some(texture),
            ..default()
        });
    let textured = world
        .spawn((
            Name::new("unusually textured box"),
            Mesh3d(mesh),
            MeshMaterial3d(material),
            Transform::from_xyz(0.0, 2.0, 5.0),
        ))
        .id();
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
    ));
    if let Some(tier) = tier {
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .insert(TileDeferred { tier, ..default() });
    }
    (headless, camera, textured)
}

fn assert_within_control(
    what: &str,
    counts: &BTreeMap<String, usize>,
    control: &BTreeMap<String, usize>,
) {
    for (key, count) in counts {
        let allowed = control.get(key).copied().unwrap_or(0);
        assert!(
            *count <= allowed,
            "{what}: {key} logged {count} times, {allowed} in Bevy's control run"
        );
    }
}

#[test]
fn unusual_material_textures_are_listed_and_never_bound() {
    let test = GpuTest::start("unusual_material_textures_are_listed_and_never_bound");
    for kind in [
        Unusual::Cube,
        Unusual::Array,
        Unusual::Volume,
        Unusual::Integer,
    ] {
        // Frames only, no readback: Bevy's invalid bind group can make its submission fail.
        let (mut bevy, _, _) = textured_box_app(kind, None);
        for _ in 0..6 {
            bevy.update();
        }
        drop(bevy);
        let control = error_counts(&test.take_errors());
        eprintln!("{kind:?}: Bevy's own errors: {control:?}");

        for tier in [
            TierSetting::Force(RenderTier::TileDeferred),
            TierSetting::Auto,
        ] {
            let (mut tile, camera, textured) = textured_box_app(kind, Some(tier));
            for _ in 0..6 {
                tile.update();
            }
            let world = tile.app.world();
            let missing = world
                .get::<TileMissing>(camera)
                .expect("a tile camera has a TileMissing");
            assert!(
                missing
                    .items
                    .iter()
                    .any(|item| item.entity == textured
                        && item.what.starts_with("material texture:")),
                "{kind:?}, {tier:?}: the box is listed: {missing:?}"
            );
            let decision = world
                .get::<TierDecision>(camera)
                .expect("a tile camera has a decision");
            match tier {
                TierSetting::Auto => assert!(
                    decision.missing_fallback.is_some() && !decision.tier.is_tile(),
                    "{kind:?}: Auto falls back to Bevy: {decision:?}"
                ),
                TierSetting::Force(_) => {
                    assert!(decision.tier.is_tile(), "{kind:?}: {decision:?}");
                    assert!(
                        world.resource::<TileRenderReports>().get(camera).is_some(),
                        "{kind:?}: the forced tile camera rendered"
                    );
                }
            }
            drop(tile);
            let counts = error_counts(&test.take_errors());
            assert_within_control(&format!("{kind:?}, {tier:?}"), &counts, &control);
        }
    }
}

#[test]
fn a_target_format_the_tile_path_cannot_write_falls_back() {
    let test = GpuTest::start("a_target_format_the_tile_path_cannot_write_falls_back");
    for format in [
        TextureFormat::Rgba32Float,
        TextureFormat::R8Unorm,
        TextureFormat::Rg16Float,
    ] {
        for tier in [
            TierSetting::Auto,
            TierSetting::Force(RenderTier::TileDeferred),
        ] {
            let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
            let mut target = Image::new_target_texture(WIDTH, HEIGHT, format, None);
            target.texture_descriptor.usage |= TextureUsages::COPY_SRC;
            let target = headless
                .app
                .world_mut()
                .resource_mut::<Assets<Image>>()
                .add(target);
            scenes::spawn_lit_spheres(headless.app.world_mut());
            let camera = headless
                .app
                .world_mut()
                .spawn((
                    Camera3d::default(),
                    scenes::reference_camera(),
                    scenes::reference_camera_transform(),
                    RenderTarget::Image(target.into()),
                    Msaa::Off,
                    TileDeferred { tier, ..default() },
                ))
                .id();
            for _ in 0..6 {
                headless.update();
            }
            let world = headless.app.world();
            let decision = world
                .get::<TierDecision>(camera)
                .expect("a tile camera has a decision");
            assert!(
                !decision.tier.is_tile(),
                "{format:?}, {tier:?}: the camera falls back: {decision:?}"
            );
            match tier {
                TierSetting::Auto => {
                    let missing = world
                        .get::<TileMissing>(camera)
                        .expect("a tile camera has a TileMissing");
                    assert!(
                        missing
                            .items
                            .iter()
                            .any(|item| item.what.starts_with("camera target:")),
                        "{format:?}: the target is listed: {missing:?}"
                    );
                }
                // A forced tier renders until the render world reports the failure, with the
                // reason.
                TierSetting::Force(_) => assert!(
                    decision
                        .failure
                        .as_deref()
                        .is_some_and(|why| why.contains("cannot write")),
                    "{format:?}: {decision:?}"
                ),
            }
            drop(headless);
            // The forced camera's fallback is logged with its reason, nothing else: once per
            // tier it falls through (the next tier down may be a tile tier too, which fails
            // the same way, or the render world renders the failing tier once more before the
            // main world's decision reaches it).
            let errors = test.take_errors();
            let expected = if matches!(tier, TierSetting::Force(_)) {
                1..=2
            } else {
                0..=0
            };
            assert!(
                expected.contains(&errors.len())
                    && errors
                        .iter()
                        .all(|e| e.contains("cannot write") && e.contains("falling back")),
                "{format:?}, {tier:?}: {errors:#?}"
            );
        }
    }
}
