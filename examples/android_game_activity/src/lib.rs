//! A minimal GameActivity app: Bevy's default plugins, [`TileDeferredPlugin`], and one tile
//! camera (4x MSAA, resolved in tile memory) over a few lit meshes.
//!
//! `#[bevy_main]` exports `android_main`, which android-activity's GameActivity glue calls on
//! its own thread; the glue also exports `GameActivity_onCreate` and
//! `Java_com_google_androidgamesdk_GameActivity_initializeNativeCode`, the native method the
//! Java `GameActivity` (androidx.games:games-activity) calls first.

use bevy::prelude::*;
use bevy_tile_deferred::{TileDeferred, TileDeferredPlugin};

/// The app: as Bevy's `examples/mobile`, plus the tile path.
#[bevy_main]
pub fn main() {
    App::new()
        .add_plugins((DefaultPlugins, TileDeferredPlugin))
        .add_systems(Startup, setup)
        .add_systems(Update, spin)
        .run();
}

/// Marks the cube that turns.
#[derive(Component)]
struct Spin;

fn setup(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(8.0, 8.0))),
        MeshMaterial3d(materials.add(Color::srgb(0.5, 0.5, 0.5))),
    ));
    commands.spawn((
        Spin,
        Mesh3d(meshes.add(Cuboid::new(1.0, 1.0, 1.0))),
        MeshMaterial3d(materials.add(Color::srgb(0.8, 0.7, 0.2))),
        Transform::from_xyz(0.0, 0.5, 0.0),
    ));
    commands.spawn((
        Mesh3d(meshes.add(Sphere::new(0.5))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.8, 0.1, 0.1),
            perceptual_roughness: 0.3,
            ..default()
        })),
        Transform::from_xyz(1.5, 0.5, 0.5),
    ));
    for (i, color) in [Color::srgb(1.0, 0.3, 0.3), Color::srgb(0.3, 0.3, 1.0)]
        .into_iter()
        .enumerate()
    {
        let x = if i == 0 { -2.0 } else { 2.0 };
        commands.spawn((
            PointLight {
                color,
                intensity: 400_000.0,
                ..default()
            },
            Transform::from_xyz(x, 2.5, 2.0),
        ));
    }
    commands.spawn((
        DirectionalLight {
            shadows_enabled: true,
            ..default()
        },
        Transform::from_xyz(3.0, 6.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.spawn((
        Camera3d::default(),
        Transform::from_xyz(0.0, 3.0, 6.0).looking_at(Vec3::new(0.0, 0.5, 0.0), Vec3::Y),
        Msaa::Sample4,
        TileDeferred::default(),
    ));
}

fn spin(time: Res<Time>, mut cubes: Query<&mut Transform, With<Spin>>) {
    for mut transform in &mut cubes {
        transform.rotate_y(time.delta_secs());
    }
}
