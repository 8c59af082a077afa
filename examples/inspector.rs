//! The inspector over the showcase: a tile-deferred camera orbiting a PBR scene with coloured
//! lights, and the egui overlay showing the frame's native passes, what each attachment loads and
//! stores, the bandwidth and power next to "merging off" and "stock Bevy", break reasons, tile
//! footprints, GPU times and an ovrgpuprofiler-style export, with toggles to compare live.
//!
//! F3 shows and hides the overlay (it starts shown here; `-- --hidden` starts it hidden, to
//! compare the frame without it). `-- --validate "Mali-G57"` starts with the frame validated
//! as that phone GPU would run it (any name of `bevy_tile_deferred::device::phones::PHONE_GPUS`;
//! the overlay's "Tile validation" section picks another). With the `remote` feature,
//! `-- --remote 127.0.0.1:15702` shows the frame of another app serving its report over BRP (the
//! `remote_report` example, or a phone's game after `adb forward tcp:15702 tcp:15702`) instead of
//! this one's.
//!
//! ```sh
//! cargo run --release --features inspector --example inspector
//! ```

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::prelude::*;
use bevy_tile_deferred::{
    TileDeferred, TileDeferredPlugin, TileInspectorPlugin, TileValidation, inspector::TileInspector,
};

/// Orbiting coloured point lights.
const LIGHT_COUNT: usize = 48;

fn main() {
    App::new()
        .add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title: "bevy_tile_deferred inspector".into(),
                ..default()
            }),
            ..default()
        }))
        .add_plugins((TileDeferredPlugin, TileInspectorPlugin::default()))
        .add_systems(Startup, (setup, open_inspector))
        .add_systems(Update, (scenes::move_orbiting_lights, scenes::orbit_camera))
        .run();
}

fn setup(world: &mut World) {
    scenes::spawn_showcase(world, LIGHT_COUNT);
    let sky = scenes::showcase_sky(world.resource::<AssetServer>());
    let camera = world
        .spawn((
            Name::new("tile camera"),
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            Msaa::Off,
            TileDeferred::default(),
            sky,
        ))
        .id();
    if let Some(phone) = validate_as() {
        match TileValidation::phone(&phone) {
            Some(validation) => {
                world.entity_mut(camera).insert(validation);
            }
            None => error!("--validate {phone:?}: not a phone GPU of PHONE_GPUS"),
        }
    }
}

/// The phone GPU named after `--validate`, if any.
fn validate_as() -> Option<String> {
    arg_after("--validate")
}

/// The command-line argument after `flag`, if any.
fn arg_after(flag: &str) -> Option<String> {
    let mut args = std::env::args().skip_while(|arg| arg != flag);
    args.next()?;
    args.next()
}

fn open_inspector(
    mut inspector: ResMut<TileInspector>,
    #[cfg(feature = "remote")] mut remote: ResMut<
        bevy_tile_deferred::inspector::TileInspectorRemote,
    >,
) {
    inspector.visible = !std::env::args().any(|arg| arg == "--hidden");
    #[cfg(feature = "remote")]
    if let Some(address) = arg_after("--remote") {
        remote.connect(address);
    }
}
