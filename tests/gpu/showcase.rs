//! The showcase's scene with its sky (issue 15): the `Skybox` and `EnvironmentMapLight` loaded
//! through the asset server from the files shipped in `assets/environment_maps/`, on a tile
//! camera and a Bevy forward camera side by side. The tile camera stays on the tile path with
//! nothing missing, its frame matches Bevy's (>= 36 dB PSNR, p99.5 <= 8/255), the sky shows
//! where the scene does not, and the environment map visibly lights the scene.

use crate::{
    content::MIN_PSNR,
    harness::{Frame, GpuTest, HeadlessApp, image_compare},
    scenes,
};
use bevy::{light::Skybox, prelude::*, render::view::Msaa};
use bevy_tile_deferred::{
    TileDeferred, TileRenderReports, tiers::TierDecision, tile_deferred::missing::TileMissing,
};
use std::time::{Duration, Instant};

const WIDTH: u32 = 480;
const HEIGHT: u32 = 270;
const MAX_P995: u8 = 8;
/// Orbiting lights of the scene (the showcase has 48; fewer keep lavapipe quick).
const LIGHTS: usize = 12;

/// Updates `headless` until the showcase sky's images are loaded (or fails after 60 s).
fn wait_for_sky(headless: &mut HeadlessApp, sky: &EnvironmentMapLight) {
    let start = Instant::now();
    loop {
        headless.update();
        let assets = headless.app.world().resource::<AssetServer>();
        for handle in [&sky.diffuse_map, &sky.specular_map] {
            if let Some(bevy::asset::LoadState::Failed(error)) = assets.get_load_state(handle) {
                panic!("{:?} failed to load: {error}", handle.path());
            }
        }
        if assets.is_loaded_with_dependencies(&sky.diffuse_map)
            && assets.is_loaded_with_dependencies(&sky.specular_map)
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the sky did not load within 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The showcase's sky loaded from `assets/`: the tile camera stays on the tile path (one render
/// pass, nothing missing), matches Bevy forward, draws the skybox above the scene and lights it
/// with the environment map.
#[test]
fn showcase_sky_from_assets_matches_bevy() {
    let test = GpuTest::start("showcase_sky_from_assets_matches_bevy");
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    // Bevy's GPU clustering on lavapipe once left some of the 48 lights out of Bevy's image
    // (32.4 dB in a CI run; 53.5 dB otherwise).
    headless.use_cpu_light_clustering();
    let bevy_target = headless.add_target(WIDTH, HEIGHT);
    let world = headless.app.world_mut();
    scenes::spawn_showcase(world, LIGHTS);
    let (skybox, environment) = scenes::showcase_sky(world.resource::<AssetServer>());
    let camera = |target: &Handle<Image>, order: isize| {
        (
            Camera3d::default(),
            Camera {
                order,
                ..scenes::reference_camera()
            },
            scenes::reference_camera_transform(),
            Msaa::Off,
            skybox.clone(),
            environment.clone(),
            bevy::camera::RenderTarget::Image(target.clone().into()),
        )
    };
    let tile_target = headless.target.clone();
    let tile_camera = world
        .spawn((camera(&tile_target, 0), TileDeferred::default()))
        .id();
    let bevy_camera = world.spawn(camera(&bevy_target, 1)).id();
    wait_for_sky(&mut headless, &environment);
    for _ in 0..3 {
        headless.update();
    }
    let frames = headless.read_images(&[tile_target.clone(), bevy_target.clone()]);
    let (tile, bevy) = (&frames[0], &frames[1]);
    let sky_errors = test.take_errors();
    assert!(sky_errors.is_empty(), "errors: {sky_errors:#?}");

    // On the tile path: its tier, nothing missing, one render pass storing only the output.
    let world = headless.app.world();
    let decision = world.get::<TierDecision>(tile_camera).expect("decided");
    assert!(decision.tier.is_tile(), "{}", decision.summary());
    assert!(
        decision.missing_fallback.is_none(),
        "no fallback: {}",
        decision.summary()
    );
    let missing = world
        .get::<TileMissing>(tile_camera)
        .map(|m| m.items.clone())
        .unwrap_or_default();
    assert!(missing.is_empty(), "reported missing: {missing:?}");
    let report = world
        .resource::<TileRenderReports>()
        .get(tile_camera)
        .expect("the tile camera's report");
    assert_eq!(report.render_passes_recorded, 1);
    assert!(world.get::<TileDeferred>(bevy_camera).is_none());
    assert!(world.get::<Skybox>(tile_camera).is_some());

    // The same frame as Bevy's.
    let psnr = image_compare::psnr(tile, bevy);
    let p995 = image_compare::channel_difference_percentile(tile, bevy, 99.5);
    println!("showcase sky, tile vs Bevy forward: PSNR {psnr:.2} dB, p99.5 {p995}/255");
    tile.save_png("showcase-sky-tile");
    bevy.save_png("showcase-sky-bevy");
    image_compare::assert_frames_match("showcase-sky", tile, bevy, MIN_PSNR, MAX_P995);

    // The skybox, not the clear colour, above the scene: the top rows are sky blue in both.
    for (renderer, frame) in [("tile", tile), ("Bevy", bevy)] {
        let sky = mean_rgb(frame, 0..frame.height / 10);
        assert!(
            sky[2] > sky[0] + 20.0 && sky[2] > 120.0,
            "{renderer}: the top of the frame is the sky, not the clear colour: {sky:?}"
        );
    }

    // The environment map lights the scene: without it the lower half (ground, spheres) is
    // clearly darker.
    headless
        .app
        .world_mut()
        .entity_mut(tile_camera)
        .remove::<EnvironmentMapLight>();
    let unlit = headless.render(2);
    let lower = HEIGHT / 2..HEIGHT;
    let (with_map, without_map) = (mean_rgb(tile, lower.clone()), mean_rgb(&unlit, lower));
    println!(
        "lower half, mean sRGB: {with_map:?} with the environment map, {without_map:?} without"
    );
    assert!(
        with_map.iter().sum::<f64>() > without_map.iter().sum::<f64>() + 15.0,
        "the environment map lights the scene: {with_map:?} with it, {without_map:?} without"
    );
    let errors = test.take_errors();
    assert!(errors.is_empty(), "errors: {errors:#?}");
}

/// The mean sRGB colour of rows `rows` of `frame`.
fn mean_rgb(frame: &Frame, rows: std::ops::Range<u32>) -> [f64; 3] {
    let mut sum = [0.0; 3];
    let mut count = 0.0;
    for y in rows {
        for x in 0..frame.width {
            let pixel = frame.pixel(x as i32, y as i32);
            for c in 0..3 {
                sum[c] += f64::from(pixel[c]);
            }
            count += 1.0;
        }
    }
    sum.map(|s| s / count)
}
