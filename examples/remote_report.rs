//! The frame's report served over the Bevy Remote Protocol, to be read from another machine: the
//! showcase on a tile-deferred camera, with Bevy's `RemotePlugin` and `RemoteHttpPlugin`
//! (port 15702). With the crate's `remote` feature, the method `tile_deferred.report` answers
//! every 3D camera's tier and why, its plan with each attachment's load and store op and the
//! reason for it, the traffic, GPU times, what falls back, and its tile validation.
//!
//! ```sh
//! cargo run --release --features remote --example remote_report
//! # from another terminal (or a desktop, after `adb forward tcp:15702 tcp:15702` to a phone):
//! curl -s -X POST http://127.0.0.1:15702 \
//!     -d '{"jsonrpc": "2.0", "id": 1, "method": "tile_deferred.report"}'
//! # or shown by the inspector as it shows its own frame:
//! cargo run --release --features inspector,remote --example inspector -- --remote 127.0.0.1:15702
//! ```

#[path = "scenes/mod.rs"]
mod scenes;

use bevy::prelude::*;
// A game gets these from Bevy's `bevy_remote` feature (`bevy::remote`), or from bevy_remote.
use bevy_remote::{RemotePlugin, http::RemoteHttpPlugin};
use bevy_tile_deferred::{TileValidation, prelude::*};

fn main() {
    App::new()
        .add_plugins(DefaultPlugins)
        .add_plugins((
            TileDeferredPlugin,
            RemotePlugin::default(),
            // 127.0.0.1 only by default; `.with_address` opens it to the network.
            RemoteHttpPlugin::default(),
        ))
        .add_systems(Startup, setup)
        .add_systems(Update, (scenes::move_orbiting_lights, scenes::orbit_camera))
        .run();
}

fn setup(world: &mut World) {
    scenes::spawn_showcase(world, 16);
    world.spawn((
        Name::new("tile camera"),
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Sample4,
        TileDeferred::default(),
        // The report then also says what a Mali-G57 would do with this frame.
        TileValidation::phone("Mali-G57").expect("a phone GPU of PHONE_GPUS"),
    ));
    info!(
        "serving the frame report: POST {{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \
         \"tile_deferred.report\"}} to http://127.0.0.1:15702"
    );
}
