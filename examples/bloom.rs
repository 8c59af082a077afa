//! Bloom on a tile camera, as in Bevy's `bloom_3d` example: bright emissive spheres over a dark
//! ground, an HDR camera with `Bloom::NATURAL` and 4x MSAA.
//!
//! With this crate's `bloom` feature and Bevy's `BloomPlugin` in the app, the camera stays on
//! the tile path: its one render pass stores the HDR light (not tone mapped) in the camera's
//! main texture, then Bevy's own bloom, tone mapping and blit run after it. Without the feature
//! or the plugin, the camera would be drawn by Bevy's `Core3d` instead. Press B to turn bloom
//! off and on; the log says which effects ran after the tile pass and what they move.
//!
//! ```sh
//! cargo run --release --example bloom --features bloom
//! ```

use bevy::{
    camera::Hdr,
    core_pipeline::tonemapping::{DebandDither, Tonemapping},
    prelude::*,
};
// A game with Bevy's default features reaches these as `bevy::post_process::bloom`, and has
// `BloomPlugin` in `DefaultPlugins`; this crate's examples build Bevy with fewer features.
use bevy_post_process::bloom::{Bloom, BloomPlugin};
use bevy_tile_deferred::prelude::*;

fn main() {
    App::new()
        .add_plugins((DefaultPlugins, BloomPlugin, TileDeferredPlugin))
        .add_systems(Startup, setup)
        .add_systems(Update, (toggle_bloom, log_post_processing))
        .run();
}

fn setup(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        TileDeferred::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::BLACK),
            ..default()
        },
        Hdr,
        Tonemapping::TonyMcMapface,
        Bloom::NATURAL,
        DebandDither::Enabled,
        Msaa::Sample4,
        Transform::from_xyz(-2.0, 2.5, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));

    // Emissive colours far above 1: what blooms.
    let glowing = [
        LinearRgba::rgb(13.99, 5.32, 2.0),
        LinearRgba::rgb(2.0, 13.99, 5.32),
        LinearRgba::rgb(5.32, 2.0, 13.99),
    ]
    .map(|emissive| {
        materials.add(StandardMaterial {
            emissive,
            ..default()
        })
    });
    let matte = materials.add(Color::srgb(0.9, 0.9, 0.9));
    let sphere = meshes.add(Sphere::new(0.4).mesh().ico(5).unwrap());
    for x in -5..5 {
        for z in -5..5 {
            // Every other sphere glows.
            let material = if (x + z) % 2 == 0 {
                glowing[(x + 5) as usize % glowing.len()].clone()
            } else {
                matte.clone()
            };
            commands.spawn((
                Mesh3d(sphere.clone()),
                MeshMaterial3d(material),
                Transform::from_xyz(x as f32 * 2.0, 0.0, z as f32 * 2.0),
            ));
        }
    }
    commands.spawn((
        DirectionalLight {
            illuminance: 2_000.0,
            ..default()
        },
        Transform::from_xyz(1.0, 4.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

/// B turns the camera's bloom off and on (the tile pass then tone maps the frame itself).
fn toggle_bloom(
    mut commands: Commands,
    keys: Res<ButtonInput<KeyCode>>,
    cameras: Query<(Entity, Has<Bloom>), With<TileDeferred>>,
) {
    if !keys.just_pressed(KeyCode::KeyB) {
        return;
    }
    for (camera, blooms) in &cameras {
        if blooms {
            commands.entity(camera).remove::<Bloom>();
        } else {
            commands.entity(camera).insert(Bloom::NATURAL);
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
