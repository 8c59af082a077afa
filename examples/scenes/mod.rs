//! Reference scenes shared by the examples, the GPU tests and the benchmark, so that every
//! comparison between the tile path and Bevy's own renderers draws the same thing.
#![allow(dead_code, reason = "shared by examples and tests; each uses a part")]

pub mod aliasing;
pub mod bench;
pub mod dense;
pub mod headless;
#[cfg(feature = "ui")]
pub mod hud;
pub mod soak;

use bevy::{
    camera::ClearColorConfig,
    light::{CascadeShadowConfigBuilder, DirectionalLightShadowMap, PointLightShadowMap, Skybox},
    prelude::*,
};

pub mod fidelity;

/// The clear colour of every reference scene: dark blue, far from any lit object colour.
pub const CLEAR_COLOR: Color = Color::srgb(0.1, 0.12, 0.18);

/// A scene object whose projection the tests can check.
#[derive(Clone, Copy, Debug)]
pub struct SceneObject {
    /// Human-readable name used in failure messages.
    pub name: &'static str,
    /// World-space centre.
    pub center: Vec3,
    /// Bounding radius (a sphere's radius, a cube's half-diagonal is not used).
    pub radius: f32,
    /// The dominant channel of its base colour: 0 red, 1 green, 2 blue, None for grey/mixed.
    pub dominant_channel: Option<usize>,
}

/// Three PBR spheres (red dielectric, green half-metal, blue rough) and a yellow cube on a grey
/// ground, lit by a directional light and a point light; the objects the tests look for.
pub const LIT_SPHERES_OBJECTS: [SceneObject; 4] = [
    SceneObject {
        name: "red sphere",
        center: Vec3::new(-2.2, 1.0, 0.0),
        radius: 1.0,
        dominant_channel: Some(0),
    },
    SceneObject {
        name: "green sphere",
        center: Vec3::new(0.0, 1.0, 0.0),
        radius: 1.0,
        dominant_channel: Some(1),
    },
    SceneObject {
        name: "blue sphere",
        center: Vec3::new(2.2, 1.0, 0.0),
        radius: 1.0,
        dominant_channel: Some(2),
    },
    SceneObject {
        name: "yellow cube",
        center: Vec3::new(-1.0, 0.5, 2.6),
        radius: 0.5,
        dominant_channel: None,
    },
];

/// Where the reference camera looks from.
pub fn reference_camera_transform() -> Transform {
    Transform::from_xyz(0.0, 4.0, 9.0).looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y)
}

/// The reference camera's `Camera` settings: the scene's clear colour.
pub fn reference_camera() -> Camera {
    Camera {
        clear_color: ClearColorConfig::Custom(CLEAR_COLOR),
        ..default()
    }
}

/// Spawns the lit-spheres scene (no camera) into `world`.
pub fn spawn_lit_spheres(world: &mut World) {
    let (ground, sphere, cube) = {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        (
            meshes.add(Plane3d::default().mesh().size(20.0, 20.0)),
            meshes.add(Sphere::new(1.0).mesh().uv(48, 24)),
            meshes.add(Cuboid::new(1.0, 1.0, 1.0)),
        )
    };
    let materials: Vec<Handle<StandardMaterial>> = {
        let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
        [
            StandardMaterial {
                base_color: Color::srgb(0.5, 0.5, 0.5),
                perceptual_roughness: 0.9,
                ..default()
            },
            StandardMaterial {
                base_color: Color::srgb(0.85, 0.08, 0.06),
                perceptual_roughness: 0.4,
                ..default()
            },
            StandardMaterial {
                base_color: Color::srgb(0.1, 0.8, 0.15),
                perceptual_roughness: 0.3,
                metallic: 0.5,
                ..default()
            },
            StandardMaterial {
                base_color: Color::srgb(0.08, 0.2, 0.9),
                perceptual_roughness: 0.8,
                ..default()
            },
            StandardMaterial {
                base_color: Color::srgb(0.9, 0.75, 0.1),
                perceptual_roughness: 0.5,
                ..default()
            },
        ]
        .into_iter()
        .map(|material| materials.add(material))
        .collect()
    };
    world.spawn((
        Name::new("ground"),
        Mesh3d(ground),
        MeshMaterial3d(materials[0].clone()),
        Transform::IDENTITY,
    ));
    for (object, material) in LIT_SPHERES_OBJECTS[..3].iter().zip(&materials[1..4]) {
        world.spawn((
            Name::new(object.name),
            Mesh3d(sphere.clone()),
            MeshMaterial3d(material.clone()),
            Transform::from_translation(object.center),
        ));
    }
    let cube_object = LIT_SPHERES_OBJECTS[3];
    world.spawn((
        Name::new(cube_object.name),
        Mesh3d(cube),
        MeshMaterial3d(materials[4].clone()),
        Transform::from_translation(cube_object.center).with_rotation(Quat::from_rotation_y(0.6)),
    ));
    world.spawn((
        Name::new("sun"),
        DirectionalLight {
            illuminance: 4_000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(4.0, 8.0, 6.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    world.spawn((
        Name::new("warm point light"),
        PointLight {
            intensity: 400_000.0,
            range: 20.0,
            color: Color::srgb(1.0, 0.85, 0.7),
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(-3.0, 4.0, 3.0),
    ));
}

/// The showcase's sky cube (256x256 faces, 9 mips: the sky, then prefiltered for roughness), made
/// by `scripts/make-environment-maps.py`; under `assets/`.
pub const SKY_SPECULAR_PATH: &str = "environment_maps/sky_specular_rgb9e5_zstd.ktx2";
/// The showcase's sky, cosine-averaged (32x32 faces); under `assets/`.
pub const SKY_DIFFUSE_PATH: &str = "environment_maps/sky_diffuse_rgb9e5_zstd.ktx2";
/// `Skybox::brightness` of the showcase: Bevy's examples' value for maps of this radiance.
pub const SKYBOX_BRIGHTNESS: f32 = 1_000.0;
/// `EnvironmentMapLight::intensity` of the showcase (Bevy's examples use 900 to 2000).
pub const ENVIRONMENT_INTENSITY: f32 = 1_000.0;

/// What the showcase's camera sees around the scene: the shipped sky as its `Skybox`, and the
/// same sky as its `EnvironmentMapLight` (the skybox is the specular cube's first mip, as Bevy's
/// examples draw the pisa map). The images load in the background: as in Bevy, the skybox is
/// drawn once the specular cube has loaded, the environment light once both cubes have.
pub fn showcase_sky(assets: &AssetServer) -> (Skybox, EnvironmentMapLight) {
    let specular: Handle<Image> = assets.load(SKY_SPECULAR_PATH);
    (
        Skybox {
            image: Some(specular.clone()),
            brightness: SKYBOX_BRIGHTNESS,
            ..default()
        },
        EnvironmentMapLight {
            diffuse_map: assets.load(SKY_DIFFUSE_PATH),
            specular_map: specular,
            intensity: ENVIRONMENT_INTENSITY,
            ..default()
        },
    )
}

/// Marks the coloured lights of the showcase that orbit the scene.
#[derive(Component)]
pub struct OrbitingLight {
    /// Orbit radius in metres.
    pub radius: f32,
    /// Height above the ground.
    pub height: f32,
    /// Angular speed in radians per second.
    pub speed: f32,
    /// Angle at time zero.
    pub phase: f32,
}

/// The showcase scene: the lit spheres, with the sun and the warm light casting shadows (Bevy
/// renders the maps, the tile path samples them), three transparent objects (a glass ball, a
/// tinted pane and an additive glow, lit per fragment by the transparent pass), plus
/// `light_count` coloured point lights that orbit it. The camera is the caller's; the
/// showcase's has [`showcase_sky`].
///
/// The shadow maps are sized for a phone, not Bevy's desktop defaults: two cascades of
/// 1024x1024 over the 20 m the camera sees and 512x512 cube faces. Each map is stored once a
/// frame whatever the renderer (Bevy's 4 x 2048x2048 cascades alone would store 67 MB).
pub fn spawn_showcase(world: &mut World, light_count: usize) {
    spawn_lit_spheres(world);
    world.insert_resource(DirectionalLightShadowMap { size: 1024 });
    world.insert_resource(PointLightShadowMap { size: 512 });
    let suns: Vec<Entity> = world
        .query_filtered::<Entity, With<DirectionalLight>>()
        .iter(world)
        .collect();
    for sun in suns {
        let mut sun = world.entity_mut(sun);
        if let Some(mut light) = sun.get_mut::<DirectionalLight>() {
            light.shadow_maps_enabled = true;
        }
        sun.insert(
            CascadeShadowConfigBuilder {
                num_cascades: 2,
                maximum_distance: 20.0,
                ..default()
            }
            .build(),
        );
    }
    for mut light in world.query::<&mut PointLight>().iter_mut(world) {
        light.shadow_maps_enabled = true;
    }
    spawn_showcase_glass(world);
    let small_sphere = world
        .resource_mut::<Assets<Mesh>>()
        .add(Sphere::new(0.08).mesh().ico(2).unwrap());
    for i in 0..light_count {
        let t = i as f32 / light_count.max(1) as f32;
        let color = Color::hsl(t * 360.0, 0.9, 0.55);
        let emissive = world
            .resource_mut::<Assets<StandardMaterial>>()
            .add(StandardMaterial {
                base_color: color,
                emissive: LinearRgba::from(color) * 20.0,
                unlit: false,
                ..default()
            });
        let orbit = OrbitingLight {
            radius: 3.5 + 2.0 * ((i * 7) % 5) as f32 / 4.0,
            height: 0.4 + 1.6 * ((i * 3) % 4) as f32 / 3.0,
            speed: 0.3 + 0.4 * ((i * 5) % 3) as f32 / 2.0,
            phase: t * std::f32::consts::TAU,
        };
        world.spawn((
            Name::new(format!("orbiting light {i}")),
            PointLight {
                intensity: 60_000.0,
                range: 6.0,
                radius: 0.08,
                color,
                shadow_maps_enabled: false,
                ..default()
            },
            Mesh3d(small_sphere.clone()),
            MeshMaterial3d(emissive),
            Transform::from_translation(orbit_position(&orbit, 0.0)),
            orbit,
        ));
    }
}

/// The showcase's transparent objects, one per kind of blending games use most.
fn spawn_showcase_glass(world: &mut World) {
    let glass = [
        (
            "glass ball",
            Mesh::from(Sphere::new(0.7)),
            StandardMaterial {
                base_color: Color::srgba(0.7, 0.85, 1.0, 0.3),
                alpha_mode: AlphaMode::Blend,
                perceptual_roughness: 0.08,
                reflectance: 0.8,
                ..default()
            },
            Transform::from_xyz(-2.2, 0.7, 2.4),
        ),
        (
            "tinted pane",
            Mesh::from(Cuboid::new(2.4, 1.6, 0.05)),
            StandardMaterial {
                base_color: Color::srgba(0.15, 0.4, 0.2, 0.45),
                alpha_mode: AlphaMode::Premultiplied,
                perceptual_roughness: 0.2,
                ..default()
            },
            Transform::from_xyz(1.8, 0.8, 2.8).with_rotation(Quat::from_rotation_y(-0.5)),
        ),
        (
            "glow",
            Mesh::from(Sphere::new(0.35)),
            StandardMaterial {
                base_color: Color::srgba(1.0, 0.55, 0.15, 0.6),
                alpha_mode: AlphaMode::Add,
                unlit: true,
                ..default()
            },
            Transform::from_xyz(0.0, 2.6, 0.0),
        ),
    ];
    for (name, mesh, material, transform) in glass {
        let mesh = world.resource_mut::<Assets<Mesh>>().add(mesh);
        let material = world
            .resource_mut::<Assets<StandardMaterial>>()
            .add(material);
        world.spawn((
            Name::new(name),
            Mesh3d(mesh),
            MeshMaterial3d(material),
            transform,
        ));
    }
}

fn orbit_position(orbit: &OrbitingLight, seconds: f32) -> Vec3 {
    let angle = orbit.phase + orbit.speed * seconds;
    Vec3::new(
        orbit.radius * angle.cos(),
        orbit.height,
        orbit.radius * angle.sin(),
    )
}

/// Moves the orbiting lights (a system).
pub fn move_orbiting_lights(time: Res<Time>, mut lights: Query<(&OrbitingLight, &mut Transform)>) {
    for (orbit, mut transform) in &mut lights {
        transform.translation = orbit_position(orbit, time.elapsed_secs());
    }
}

/// Orbits every 3D camera around the scene's centre (a system).
pub fn orbit_camera(time: Res<Time>, mut cameras: Query<&mut Transform, With<Camera3d>>) {
    let angle = time.elapsed_secs() * 0.25;
    for mut transform in &mut cameras {
        *transform = Transform::from_xyz(9.5 * angle.sin(), 4.0, 9.5 * angle.cos())
            .looking_at(Vec3::new(0.0, 1.0, 0.0), Vec3::Y);
    }
}
