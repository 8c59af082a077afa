//! Tile path vs Bevy forward on every material property and light type.
//!
//! Each fidelity scene (`examples/scenes/fidelity.rs`) is spawned once into one app; every case
//! of the scene is drawn twice in that app, by Bevy's forward renderer (`Core3d`, `Msaa::Off`)
//! into one image and by the tile path into another, with the same cameras otherwise. Both
//! images are read back after the warm-up frames and must match to 36 dB PSNR and a
//! 99.5th-percentile channel difference of at most 8/255 (difference images are written on
//! failure). Drawing both renderers in one app also proves they coexist.

use crate::{
    harness::{Frame, GpuTest, HeadlessApp, assert_frames_match, image_compare},
    scenes::fidelity::{self, FidelityScene},
};
use bevy::{
    asset::RenderAssetUsages,
    camera::RenderTarget,
    prelude::*,
    render::{
        gpu_readback::{Readback, ReadbackComplete},
        render_resource::{Extent3d, TextureDimension, TextureFormat, TextureUsages},
    },
};
use bevy_tile_deferred::TileDeferred;
use std::sync::{Arc, Mutex};

const WIDTH: u32 = 384;
const HEIGHT: u32 = 216;
const WARMUP_FRAMES: u32 = 3;

/// One case of a scene as both renderers drew it.
struct Comparison {
    name: &'static str,
    tile: Frame,
    forward: Frame,
}

/// A render target like the harness's own: RGBA8 sRGB, created with data so that wgpu never
/// zero-fills it behind the raw Vulkan writer's back.
fn new_target(app: &mut App) -> Handle<Image> {
    let mut image = Image::new_fill(
        Extent3d {
            width: WIDTH,
            height: HEIGHT,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        &[0, 0, 0, 255],
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.texture_descriptor.usage |= TextureUsages::RENDER_ATTACHMENT
        | TextureUsages::COPY_SRC
        | TextureUsages::TEXTURE_BINDING;
    app.world_mut().resource_mut::<Assets<Image>>().add(image)
}

fn unpad(data: &[u8]) -> Frame {
    let row = WIDTH as usize * 4;
    let padded_row = row.div_ceil(256) * 256;
    assert_eq!(data.len(), padded_row * HEIGHT as usize, "readback size");
    Frame {
        width: WIDTH,
        height: HEIGHT,
        rgba: data
            .chunks_exact(padded_row)
            .flat_map(|r| &r[..row])
            .copied()
            .collect(),
    }
}

/// Renders every case of `scene` with both renderers in one app and reads all images back.
fn render_scene(scene: &FidelityScene) -> Vec<Comparison> {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    (scene.spawn)(headless.app.world_mut());
    let cases = (scene.cases)();
    let mut targets = Vec::new();
    for case in &cases {
        let mut pair = [Handle::default(), Handle::default()];
        for (slot, tile) in [false, true].into_iter().enumerate() {
            let target = new_target(&mut headless.app);
            for camera in &case.cameras {
                let mut entity = headless.app.world_mut().spawn((
                    camera.bundle(),
                    RenderTarget::Image(target.clone().into()),
                ));
                if let Some(ambient) = &camera.ambient {
                    entity.insert(ambient.clone());
                }
                if tile {
                    entity.insert(TileDeferred::default());
                }
            }
            pair[slot] = target;
        }
        targets.push(pair);
    }
    for _ in 0..WARMUP_FRAMES {
        headless.update();
    }
    let received: Arc<Mutex<Vec<Option<Vec<u8>>>>> =
        Arc::new(Mutex::new(vec![None; targets.len() * 2]));
    let mut readers = Vec::new();
    for (i, target) in targets.iter().flatten().enumerate() {
        let sink = received.clone();
        readers.push(
            headless
                .app
                .world_mut()
                .spawn(Readback::texture(target.clone()))
                .observe(move |event: On<ReadbackComplete>| {
                    sink.lock().unwrap()[i] = Some(event.data.clone());
                })
                .id(),
        );
    }
    for _ in 0..10 {
        headless.update();
        if received.lock().unwrap().iter().all(Option::is_some) {
            break;
        }
    }
    for reader in readers {
        headless.app.world_mut().despawn(reader);
    }
    let frames: Vec<Frame> = received
        .lock()
        .unwrap()
        .iter()
        .map(|data| unpad(data.as_ref().expect("readback completes within 10 frames")))
        .collect();
    cases
        .iter()
        .zip(frames.chunks_exact(2))
        .map(|(case, pair)| Comparison {
            name: case.name,
            forward: pair[0].clone(),
            tile: pair[1].clone(),
        })
        .collect()
}

/// Renders `scene` and asserts every case matches; prints every case's numbers first so that
/// one failure does not hide the others.
fn assert_scene_matches(scene: &FidelityScene) {
    let started = std::time::Instant::now();
    let comparisons = render_scene(scene);
    let mut failures = Vec::new();
    for c in &comparisons {
        let psnr = image_compare::psnr(&c.tile, &c.forward);
        let p995 = image_compare::channel_difference_percentile(&c.tile, &c.forward, 99.5);
        eprintln!(
            "fidelity {}/{}: PSNR {psnr:.2} dB, p99.5 {p995}",
            scene.name, c.name
        );
        if std::env::var_os("FIDELITY_SAVE").is_some() {
            c.tile.save_png(&format!("fidelity-{}-tile", c.name));
            c.forward.save_png(&format!("fidelity-{}-forward", c.name));
        }
        let name = format!("fidelity-{}", c.name);
        if let Err(panic) = std::panic::catch_unwind(|| {
            assert_frames_match(&name, &c.tile, &c.forward, 36.0, 8);
        }) {
            failures.push(
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| name.clone()),
            );
        }
    }
    eprintln!(
        "fidelity {}: {} cases in {:.1} s",
        scene.name,
        comparisons.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tile_fidelity_materials() {
    let _test = GpuTest::start("tile_fidelity_materials");
    assert_scene_matches(&fidelity::MATERIALS);
}

#[test]
fn tile_fidelity_lights() {
    let _test = GpuTest::start("tile_fidelity_lights");
    assert_scene_matches(&fidelity::LIGHTS);
}

#[test]
fn tile_fidelity_camera_settings() {
    let _test = GpuTest::start("tile_fidelity_camera_settings");
    assert_scene_matches(&fidelity::CAMERA_SETTINGS);
}

#[test]
fn tile_fidelity_many_lights() {
    let _test = GpuTest::start("tile_fidelity_many_lights");
    assert_scene_matches(&fidelity::MANY_LIGHTS);
}
