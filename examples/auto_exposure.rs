//! Bevy's auto exposure on a tile camera, as in Bevy's `auto_exposure` example: the camera
//! turns from a sunlit yard to a dim room, and its exposure adapts as an eye would.
//!
//! With this crate's `auto_exposure` feature and Bevy's `AutoExposurePlugin` in the app, the
//! camera stays on the tile path: its one render pass stores the HDR light in the camera's main
//! texture, Bevy's own auto-exposure shader meters it, and Bevy's tone mapping applies the
//! exposure, then blits. Without the feature or the plugin, the camera would be drawn by Bevy's
//! `Core3d` instead. Press Space to turn auto exposure off and on; the log says which effects
//! ran after the tile pass and what they move.
//!
//! ```sh
//! cargo run --release --example auto_exposure --features auto_exposure
//! ```

use bevy::{camera::Hdr, core_pipeline::tonemapping::Tonemapping, prelude::*};
// A game with Bevy's default features reaches these as `bevy::post_process`; the plugin is not
// in `DefaultPlugins`.
use bevy_post_process::auto_exposure::{AutoExposure, AutoExposurePlugin};
use bevy_tile_deferred::prelude::*;

fn main() {
    App::new()
        .add_plugins((DefaultPlugins, AutoExposurePlugin, TileDeferredPlugin))
        .add_systems(Startup, setup)
        .add_systems(
            Update,
            (turn_camera, toggle_auto_exposure, log_post_processing),
        )
        .run();
}

fn setup(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        TileDeferred::default(),
        Camera3d::default(),
        Hdr,
        Tonemapping::TonyMcMapface,
        AutoExposure {
            speed_brighten: 2.0,
            speed_darken: 2.0,
            ..default()
        },
        Transform::from_xyz(0.0, 1.6, 0.0),
    ));

    // The yard: ground and boxes under the sun, towards -z.
    let cube = meshes.add(Cuboid::new(1.0, 1.0, 1.0));
    let white = materials.add(Color::srgb(0.9, 0.9, 0.9));
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(40.0, 40.0))),
        MeshMaterial3d(white.clone()),
    ));
    for (i, colour) in [
        Color::srgb(0.9, 0.3, 0.2),
        Color::srgb(0.3, 0.8, 0.3),
        Color::srgb(0.3, 0.4, 0.9),
    ]
    .into_iter()
    .enumerate()
    {
        commands.spawn((
            Mesh3d(cube.clone()),
            MeshMaterial3d(materials.add(colour)),
            Transform::from_xyz(-2.0 + 2.0 * i as f32, 0.5, -6.0),
        ));
    }
    commands.spawn((
        DirectionalLight {
            illuminance: 20_000.0,
            ..default()
        },
        Transform::from_xyz(1.0, 3.0, -2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));

    // The room, towards +z: walls that keep the sun out, lit by one dim lamp.
    let wall = materials.add(Color::srgb(0.6, 0.55, 0.5));
    for (size, position) in [
        (Vec3::new(8.0, 4.0, 0.2), Vec3::new(0.0, 2.0, 8.0)),
        (Vec3::new(0.2, 4.0, 6.0), Vec3::new(-4.0, 2.0, 5.0)),
        (Vec3::new(0.2, 4.0, 6.0), Vec3::new(4.0, 2.0, 5.0)),
        (Vec3::new(8.0, 0.2, 6.0), Vec3::new(0.0, 4.0, 5.0)),
    ] {
        commands.spawn((
            Mesh3d(meshes.add(Cuboid::from_size(size))),
            MeshMaterial3d(wall.clone()),
            Transform::from_translation(position),
        ));
    }
    commands.spawn((
        PointLight {
            intensity: 20_000.0,
            range: 10.0,
            ..default()
        },
        Transform::from_xyz(0.0, 3.0, 6.0),
    ));
}

/// Turns the camera slowly between the yard and the room.
fn turn_camera(time: Res<Time>, mut cameras: Query<&mut Transform, With<TileDeferred>>) {
    for mut transform in &mut cameras {
        transform.rotation = Quat::from_rotation_y(time.elapsed_secs() * 0.4);
    }
}

/// Space turns auto exposure off and on.
fn toggle_auto_exposure(
    mut commands: Commands,
    keys: Res<ButtonInput<KeyCode>>,
    cameras: Query<(Entity, Has<AutoExposure>), With<TileDeferred>>,
) {
    if !keys.just_pressed(KeyCode::Space) {
        return;
    }
    for (camera, exposed) in &cameras {
        if exposed {
            commands.entity(camera).remove::<AutoExposure>();
        } else {
            commands.entity(camera).insert(AutoExposure::default());
        }
    }
}

/// Logs, whenever they change, the effects Bevy ran after the tile camera's pass and the bytes
/// their passes move (the report's `post_process_pass`).
fn log_post_processing(
    reports: Res<TileRenderReports>,
    cameras: Query<Entity, With<TileDeferred>>,
    mut last: Local<Option<Vec<String>>>,
) {
    for camera in &cameras {
        let Some(report) = reports.get(camera) else {
            continue;
        };
        if last.as_ref() == Some(&report.post_processing) {
            continue;
        }
        let moved = report
            .post_process_pass
            .as_ref()
            .map_or(0.0, |pass| pass.cost.bytes() as f64 / 1e6);
        info!(
            "camera {camera}: after the tile pass Bevy ran {:?} and its blit, moving {moved:.1} MB",
            report.post_processing
        );
        *last = Some(report.post_processing);
    }
}
