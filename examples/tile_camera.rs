//! The smallest complete scene to copy into a game: `DefaultPlugins` and `TileDeferredPlugin`, a
//! ground plane, a few lit meshes, a sun with shadows and a point light, and one camera with
//! `TileDeferred` and 4x MSAA. The camera's G-buffer, lighting and tone mapping run as one Vulkan
//! render pass that stores only the final image.
//!
//! Where the tile path cannot run (a device without Vulkan, a known driver bug, something in view
//! it does not draw), the camera is drawn by Bevy's own renderer instead; this example logs each
//! change of tier and why, from the `TileTierChanged` message.
//!
//! ```sh
//! cargo run --release --example tile_camera
//! ```

use bevy::prelude::*;
use bevy_tile_deferred::prelude::*;

fn main() {
    App::new()
        .add_plugins((DefaultPlugins, TileDeferredPlugin))
        .add_systems(Startup, setup)
        .add_systems(Update, (spin, log_tier_changes))
        .run();
}

/// Marks the meshes that turn.
#[derive(Component)]
struct Spin;

fn setup(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    // The ground.
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(12.0, 12.0))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.35, 0.4, 0.35),
            perceptual_roughness: 0.9,
            ..default()
        })),
    ));

    // A rough cube, a metal sphere and a glowing torus.
    commands.spawn((
        Mesh3d(meshes.add(Cuboid::new(1.0, 1.0, 1.0))),
        MeshMaterial3d(materials.add(Color::srgb(0.8, 0.25, 0.2))),
        Transform::from_xyz(-1.6, 0.5, 0.0),
        Spin,
    ));
    commands.spawn((
        Mesh3d(meshes.add(Sphere::new(0.6).mesh().uv(48, 24))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.9, 0.8, 0.5),
            metallic: 1.0,
            perceptual_roughness: 0.25,
            ..default()
        })),
        Transform::from_xyz(0.0, 0.6, 0.0),
    ));
    commands.spawn((
        Mesh3d(meshes.add(Torus::new(0.3, 0.55))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.2, 0.4, 0.9),
            emissive: LinearRgba::rgb(0.2, 0.6, 2.0),
            ..default()
        })),
        Transform::from_xyz(1.6, 0.55, 0.0).with_rotation(Quat::from_rotation_x(1.2)),
        Spin,
    ));

    // A sun with shadows, and a warm point light.
    commands.spawn((
        DirectionalLight {
            illuminance: 8_000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(4.0, 8.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.spawn((
        PointLight {
            color: Color::srgb(1.0, 0.7, 0.4),
            intensity: 200_000.0,
            range: 12.0,
            ..default()
        },
        Transform::from_xyz(0.0, 2.5, 2.0),
    ));

    // The camera: `TileDeferred` brings `Camera3d` with it. Its MSAA is kept in tile memory.
    commands.spawn((
        TileDeferred::default(),
        Msaa::Sample4,
        Transform::from_xyz(0.0, 3.0, 6.5).looking_at(Vec3::new(0.0, 0.5, 0.0), Vec3::Y),
    ));
}

fn spin(time: Res<Time>, mut meshes: Query<&mut Transform, With<Spin>>) {
    for mut transform in &mut meshes {
        transform.rotate_y(0.6 * time.delta_secs());
    }
}

/// A game could lower its own settings here when a camera leaves the tile path.
fn log_tier_changes(mut changes: MessageReader<TileTierChanged>) {
    for change in changes.read() {
        info!(
            "camera {} renders with {}: {}",
            change.camera, change.to, change.reason
        );
    }
}
