//! The Android app: the showcase scene (PBR spheres, 48 coloured lights orbiting them, a sky, an
//! orbiting camera) rendered by the tile-deferred path with 4x MSAA, and the inspector overlay,
//! in one NativeActivity library so that one APK carries both.
//!
//! A phone has no F3 key: a three-finger tap shows and hides the overlay, and the overlay's
//! close button hides it. The overlay starts hidden, as on desktop. The scene is procedural;
//! its sky (`assets/environment_maps/`) is packaged into the APK's assets by
//! `scripts/android-apk.sh`.
//!
//! It is a `cdylib` example (see `Cargo.toml`): `#[bevy_main]` exports the `android_main` that
//! NativeActivity calls. Build and package it with `scripts/android-apk.sh` (README, "Shipping
//! on Android"). On the desktop it builds as a library only; the `showcase` and `inspector`
//! examples are the desktop programs of the same scene.

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::prelude::*;
use bevy_tile_deferred::{TileDeferred, TileDeferredPlugin, TileInspectorPlugin};

/// Orbiting coloured point lights (as in the showcase).
const LIGHT_COUNT: usize = 48;

#[bevy_main]
fn main() {
    App::new()
        .add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title: "bevy_tile_deferred".into(),
                ..default()
            }),
            ..default()
        }))
        .add_plugins((TileDeferredPlugin, TileInspectorPlugin::default()))
        .add_systems(Startup, setup)
        .add_systems(Update, (scenes::move_orbiting_lights, scenes::orbit_camera))
        .run();
}

fn setup(world: &mut World) {
    scenes::spawn_showcase(world, LIGHT_COUNT);
    let sky = scenes::showcase_sky(world.resource::<AssetServer>());
    world.spawn((
        Name::new("tile camera"),
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        // MSAA on tile memory is the point of a tile GPU: resolved in the render pass, the
        // multisampled attachments never reach DRAM.
        Msaa::Sample4,
        TileDeferred::default(),
        sky,
    ));
}
