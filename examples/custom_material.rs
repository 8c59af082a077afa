//! Custom materials on a tile camera, as in Bevy's `shader_material` and `extended_material`
//! examples: a blended cube with its own WGSL shader and a sphere whose `ExtendedMaterial`
//! quantises the `StandardMaterial` lighting, beside meshes the tile path draws itself.
//!
//! The camera stays on the tile path: its render pass draws the `StandardMaterial` meshes, and
//! Bevy's own material pipelines then draw the custom ones over the tile frame, depth-tested
//! against it. The log says which meshes Bevy drew and what their passes move. (On a tile GPU,
//! or with point lights while Bevy clusters lights on the GPU, the camera would fall back to
//! `Core3d` instead, with the meshes listed in `TileMissing`.)
//!
//! ```sh
//! cargo run --release --example custom_material
//! ```

use bevy::{
    pbr::{ExtendedMaterial, MaterialExtension},
    prelude::*,
    render::render_resource::AsBindGroup,
    shader::ShaderRef,
};
use bevy_tile_deferred::prelude::*;

fn main() {
    App::new()
        .add_plugins((
            DefaultPlugins,
            TileDeferredPlugin,
            MaterialPlugin::<CustomMaterial>::default(),
            MaterialPlugin::<ExtendedMaterial<StandardMaterial, QuantizeExtension>>::default(),
        ))
        .add_systems(Startup, setup)
        .add_systems(Update, (rotate, log_drawn_over_tile))
        .run();
}

/// Bevy's `shader_material` example's material: a colour from its own fragment shader.
#[derive(Asset, TypePath, AsBindGroup, Clone)]
struct CustomMaterial {
    #[uniform(0)]
    color: LinearRgba,
    alpha_mode: AlphaMode,
}

impl Material for CustomMaterial {
    fn fragment_shader() -> ShaderRef {
        "shaders/custom_material.wgsl".into()
    }

    fn alpha_mode(&self) -> AlphaMode {
        self.alpha_mode
    }
}

/// Bevy's `extended_material` example's extension: the lit colour in a few steps.
#[derive(Asset, TypePath, AsBindGroup, Clone)]
struct QuantizeExtension {
    #[uniform(100)]
    quantize_steps: u32,
}

impl MaterialExtension for QuantizeExtension {
    fn fragment_shader() -> ShaderRef {
        "shaders/extended_material.wgsl".into()
    }
}

#[derive(Component)]
struct Rotating;

fn setup(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut standard: ResMut<Assets<StandardMaterial>>,
    mut custom: ResMut<Assets<CustomMaterial>>,
    mut quantized: ResMut<Assets<ExtendedMaterial<StandardMaterial, QuantizeExtension>>>,
) {
    commands.spawn((
        TileDeferred::default(),
        Camera3d::default(),
        Msaa::Sample4,
        Transform::from_xyz(-2.0, 2.5, 5.0).looking_at(Vec3::new(0.0, 0.5, 0.0), Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 8_000.0,
            ..default()
        },
        Transform::from_xyz(1.0, 4.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    // Drawn by the tile pass.
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(8.0, 8.0))),
        MeshMaterial3d(standard.add(Color::srgb(0.3, 0.5, 0.3))),
    ));
    commands.spawn((
        Mesh3d(meshes.add(Sphere::new(0.5).mesh().uv(48, 24))),
        MeshMaterial3d(standard.add(Color::srgb(0.8, 0.2, 0.1))),
        Transform::from_xyz(0.0, 0.5, -1.5),
    ));
    // Drawn by Bevy over the tile frame.
    commands.spawn((
        Name::new("custom cube"),
        Mesh3d(meshes.add(Cuboid::default())),
        MeshMaterial3d(custom.add(CustomMaterial {
            color: LinearRgba::new(0.1, 0.3, 1.0, 0.6),
            alpha_mode: AlphaMode::Blend,
        })),
        Transform::from_xyz(0.0, 0.5, 0.0),
        Rotating,
    ));
    commands.spawn((
        Name::new("quantized sphere"),
        Mesh3d(meshes.add(Sphere::new(0.6).mesh().uv(48, 24))),
        MeshMaterial3d(quantized.add(ExtendedMaterial {
            base: StandardMaterial {
                base_color: Color::srgb(0.9, 0.2, 0.1),
                ..default()
            },
            extension: QuantizeExtension { quantize_steps: 3 },
        })),
        Transform::from_xyz(1.6, 0.6, 0.5),
    ));
}

fn rotate(time: Res<Time>, mut cubes: Query<&mut Transform, With<Rotating>>) {
    for mut transform in &mut cubes {
        transform.rotate_y(time.delta_secs() * 0.8);
    }
}

/// Once a second: the camera's tier, the meshes Bevy drew over its tile frame, and what the
/// passes after the tile pass moved.
fn log_drawn_over_tile(
    time: Res<Time>,
    mut last: Local<f32>,
    cameras: Query<(Entity, &TierDecision, Option<&TileMaterialsOverTile>)>,
    names: Query<&Name>,
    reports: Res<TileRenderReports>,
) {
    if time.elapsed_secs() - *last < 1.0 {
        return;
    }
    *last = time.elapsed_secs();
    for (camera, decision, over_tile) in &cameras {
        let meshes: Vec<String> = over_tile
            .map(|over| {
                over.meshes
                    .iter()
                    .map(|&mesh| {
                        names
                            .get(mesh)
                            .map_or(mesh.to_string(), ToString::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let moved = reports
            .get(camera)
            .and_then(|report| report.gizmo_pass)
            .map_or(0.0, |pass| pass.cost.bytes() as f64 / 1e6);
        info!(
            "{:?}: Bevy drew {meshes:?} over the tile frame ({moved:.1} MB a frame)",
            decision.tier
        );
    }
}
