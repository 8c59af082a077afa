//! A scene made for measuring edge-selective MSAA lighting: opaque geometry covers the whole
//! view (a ground plane and a back wall fill the frame, no sky shows), with a dense field of
//! spheres and cubes, a fence of thin posts and a trellis of thin bars on the wall. Most pixels
//! are interior
//! (one surface under every sample) and the real geometric edges (silhouettes, creases, thin
//! posts) are a few percent of the pixels, so lighting every sample costs visibly more than
//! lighting the edges only. The MSAA benchmark uses it (`bench_msaa --scene dense`).

use bevy::prelude::*;

/// Where the dense scene's camera looks from (the aliasing scene's viewpoint, so that the
/// benchmark's point lights sit among the objects).
pub fn dense_camera_transform() -> Transform {
    Transform::from_xyz(0.4, 1.6, 6.0).looking_at(Vec3::new(0.0, 1.2, 0.0), Vec3::Y)
}

/// A deterministic value in [0, 1) from an integer (no random-number crate needed).
fn hash01(i: u32) -> f32 {
    let mut x = i.wrapping_mul(0x9E37_79B9) ^ 0x85EB_CA6B;
    x ^= x >> 15;
    x = x.wrapping_mul(0x2C1B_3C6D);
    x ^= x >> 12;
    (x & 0xFFFF) as f32 / 65536.0
}

/// Spawns the dense scene (no camera) into `world`.
pub fn spawn_dense_scene(world: &mut World) {
    let (ground, wall, ball, small_ball, block, post, rail, lath, batten) = {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        (
            meshes.add(Plane3d::default().mesh().size(40.0, 40.0)),
            meshes.add(Cuboid::new(24.0, 12.0, 0.2)),
            meshes.add(Sphere::new(0.32).mesh().uv(32, 16)),
            meshes.add(Sphere::new(0.18).mesh().uv(24, 12)),
            meshes.add(Cuboid::new(0.45, 0.45, 0.45)),
            meshes.add(Cuboid::new(0.04, 1.4, 0.04)),
            meshes.add(Cuboid::new(9.0, 0.04, 0.04)),
            meshes.add(Cuboid::new(0.03, 4.0, 0.03)),
            meshes.add(Cuboid::new(11.0, 0.03, 0.03)),
        )
    };
    let material = |world: &mut World, color: Color, roughness: f32, metallic: f32| {
        world
            .resource_mut::<Assets<StandardMaterial>>()
            .add(StandardMaterial {
                base_color: color,
                perceptual_roughness: roughness,
                metallic,
                ..default()
            })
    };
    let ground_material = material(world, Color::srgb(0.45, 0.42, 0.38), 0.85, 0.0);
    let wall_material = material(world, Color::srgb(0.6, 0.58, 0.52), 0.7, 0.0);
    let fence_material = material(world, Color::srgb(0.95, 0.95, 0.9), 0.5, 0.0);
    let trellis_material = material(world, Color::srgb(0.12, 0.3, 0.15), 0.6, 0.0);
    let palette = [
        material(world, Color::srgb(0.85, 0.1, 0.08), 0.35, 0.0),
        material(world, Color::srgb(0.1, 0.7, 0.2), 0.5, 0.2),
        material(world, Color::srgb(0.1, 0.25, 0.85), 0.6, 0.0),
        material(world, Color::srgb(0.9, 0.75, 0.15), 0.3, 0.8),
        material(world, Color::srgb(0.7, 0.7, 0.72), 0.25, 1.0),
    ];

    // The ground and a back wall: together they fill the frame from this viewpoint.
    world.spawn((
        Mesh3d(ground),
        MeshMaterial3d(ground_material),
        Transform::IDENTITY,
    ));
    world.spawn((
        Mesh3d(wall),
        MeshMaterial3d(wall_material),
        Transform::from_xyz(0.0, 6.0, -3.0),
    ));

    // A trellis of thin laths and battens on the upper wall, 10 cm in front of it.
    for i in 0..23 {
        world.spawn((
            Mesh3d(lath.clone()),
            MeshMaterial3d(trellis_material.clone()),
            Transform::from_xyz(-5.5 + i as f32 * 0.5, 3.6, -2.85)
                .with_rotation(Quat::from_rotation_z(0.04)),
        ));
    }
    for i in 0..8 {
        world.spawn((
            Mesh3d(batten.clone()),
            MeshMaterial3d(trellis_material.clone()),
            Transform::from_xyz(0.0, 1.85 + i as f32 * 0.5, -2.82)
                .with_rotation(Quat::from_rotation_z(0.02)),
        ));
    }

    // A fence of thin posts with two rails just in front of the wall.
    for i in 0..31 {
        let x = -4.5 + i as f32 * 0.3;
        world.spawn((
            Mesh3d(post.clone()),
            MeshMaterial3d(fence_material.clone()),
            Transform::from_xyz(x, 0.7, -2.2).with_rotation(Quat::from_rotation_z(0.06)),
        ));
    }
    for y in [0.45, 1.2] {
        world.spawn((
            Mesh3d(rail.clone()),
            MeshMaterial3d(fence_material.clone()),
            Transform::from_xyz(0.0, y, -2.15).with_rotation(Quat::from_rotation_z(-0.03)),
        ));
    }

    // A field of spheres and cubes on the ground between the fence and the camera, jittered
    // so that the rows do not line up; a second layer floats above the first.
    let mut index = 0u32;
    for row in 0..5 {
        for column in 0..11 {
            index += 1;
            let x = -4.0 + column as f32 * 0.8 + 0.3 * (hash01(index) - 0.5);
            let z = -1.7 + row as f32 * 0.75 + 0.3 * (hash01(index + 1000) - 0.5);
            let material = palette[(index as usize * 7) % palette.len()].clone();
            if (row + column) % 3 == 0 {
                world.spawn((
                    Mesh3d(block.clone()),
                    MeshMaterial3d(material),
                    Transform::from_xyz(x, 0.225, z)
                        .with_rotation(Quat::from_rotation_y(hash01(index + 2000) * 1.5)),
                ));
            } else {
                world.spawn((
                    Mesh3d(ball.clone()),
                    MeshMaterial3d(material),
                    Transform::from_xyz(x, 0.32, z),
                ));
            }
            if row % 2 == 1 {
                world.spawn((
                    Mesh3d(small_ball.clone()),
                    MeshMaterial3d(palette[(index as usize * 3) % palette.len()].clone()),
                    Transform::from_xyz(x + 0.35, 1.0 + 1.4 * hash01(index + 3000), z - 0.3),
                ));
            }
        }
    }

    world.spawn((
        DirectionalLight {
            illuminance: 6_000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(3.0, 6.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

/// The range of the MSAA benchmark's point lights, metres.
pub const DENSE_LIGHT_RANGE: f32 = 2.5;

/// `count` coloured point lights of `range` metres in a grid in front of the fence, so that
/// lighting dominates the lighting subpass (each pixel pays for the lights whose range covers
/// it). The MSAA benchmark uses [`DENSE_LIGHT_RANGE`], in the aliasing scene too (same
/// viewpoint).
pub fn spawn_dense_lights(world: &mut World, count: usize, range: f32) {
    let side = (count as f32).sqrt().ceil().max(1.0) as usize;
    for i in 0..count {
        let (x, y) = ((i % side) as f32, (i / side) as f32);
        let t = i as f32 / count.max(1) as f32;
        world.spawn((
            PointLight {
                intensity: 20_000.0,
                range,
                color: Color::hsl(t * 360.0, 0.8, 0.6),
                shadow_maps_enabled: false,
                ..default()
            },
            Transform::from_xyz(
                -2.5 + 5.0 * x / side as f32,
                0.2 + 2.6 * y / side as f32,
                0.8,
            ),
        ));
    }
}
