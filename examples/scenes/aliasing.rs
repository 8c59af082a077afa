//! A scene made for aliasing: thin geometry, high-contrast silhouettes, a dense fence and a
//! bright emissive edge against a dark sky. MSAA tests and the MSAA benchmark use it.

use bevy::prelude::*;

/// Where the aliasing scene's camera looks from.
pub fn aliasing_camera_transform() -> Transform {
    Transform::from_xyz(0.4, 1.6, 6.0).looking_at(Vec3::new(0.0, 1.2, 0.0), Vec3::Y)
}

/// Spawns the aliasing scene (no camera) into `world`.
pub fn spawn_aliasing_scene(world: &mut World) {
    let (bar, pole, plate, ball) = {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        (
            meshes.add(Cuboid::new(0.035, 2.2, 0.035)),
            meshes.add(Cuboid::new(5.0, 0.03, 0.03)),
            meshes.add(Cuboid::new(1.2, 0.6, 0.1)),
            meshes.add(Sphere::new(0.45).mesh().uv(32, 16)),
        )
    };
    let (white, dark, glow, red) = {
        let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
        (
            materials.add(StandardMaterial {
                base_color: Color::srgb(0.95, 0.95, 0.9),
                perceptual_roughness: 0.5,
                ..default()
            }),
            materials.add(StandardMaterial {
                base_color: Color::srgb(0.05, 0.05, 0.06),
                perceptual_roughness: 0.9,
                ..default()
            }),
            materials.add(StandardMaterial {
                base_color: Color::BLACK,
                emissive: LinearRgba::rgb(40.0, 30.0, 10.0),
                ..default()
            }),
            materials.add(StandardMaterial {
                base_color: Color::srgb(0.9, 0.05, 0.05),
                perceptual_roughness: 0.3,
                ..default()
            }),
        )
    };
    // A dense fence of thin vertical bars, slightly rotated so edges are not axis-aligned.
    for i in 0..24 {
        let x = -2.3 + i as f32 * 0.2;
        world.spawn((
            Mesh3d(bar.clone()),
            MeshMaterial3d(white.clone()),
            Transform::from_xyz(x, 1.1, 0.0).with_rotation(Quat::from_rotation_z(0.08)),
        ));
    }
    // Two thin rails across it.
    for y in [0.5, 1.8] {
        world.spawn((
            Mesh3d(pole.clone()),
            MeshMaterial3d(white.clone()),
            Transform::from_xyz(0.0, y, 0.05).with_rotation(Quat::from_rotation_z(-0.05)),
        ));
    }
    // A bright emissive plate with a dark one in front: a bright edge on dark.
    world.spawn((
        Mesh3d(plate.clone()),
        MeshMaterial3d(glow),
        Transform::from_xyz(-0.8, 2.4, -1.0).with_rotation(Quat::from_rotation_z(0.3)),
    ));
    world.spawn((
        Mesh3d(plate),
        MeshMaterial3d(dark),
        Transform::from_xyz(-0.5, 2.2, -0.6).with_rotation(Quat::from_rotation_z(-0.2)),
    ));
    // A glossy red ball behind the fence.
    world.spawn((
        Mesh3d(ball),
        MeshMaterial3d(red),
        Transform::from_xyz(0.7, 1.0, -0.8),
    ));
    world.spawn((
        DirectionalLight {
            illuminance: 6_000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(3.0, 6.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}
