//! Bevy's effect stack on a tile camera, as in Bevy's `post_processing` example: chromatic
//! aberration, a vignette and lens distortion over lit spheres, on an HDR camera with 4x MSAA.
//!
//! With this crate's `effect_stack` feature and Bevy's `EffectStackPlugin` in the app (Bevy's
//! `PostProcessPlugin` has it), the camera stays on the tile path: its one render pass stores
//! the HDR light in the camera's main texture, then Bevy's own effect-stack pipeline, tone
//! mapping and blit run after it. Without the feature or the plugin, the camera would be drawn
//! by Bevy's `Core3d` instead. Press 1, 2 or 3 to turn chromatic aberration, the vignette or
//! lens distortion off and on; the log says which effects ran after the tile pass and what
//! they move.
//!
//! ```sh
//! cargo run --release --example post_processing --features effect_stack
//! ```

use bevy::{camera::Hdr, core_pipeline::tonemapping::Tonemapping, prelude::*};
// A game with Bevy's default features reaches these as `bevy::post_process`, and has
// `PostProcessPlugin` in `DefaultPlugins`; this crate's examples build Bevy with fewer features.
use bevy_post_process::{
    PostProcessPlugin,
    effect_stack::{ChromaticAberration, LensDistortion, Vignette},
};
use bevy_tile_deferred::prelude::*;

fn main() {
    App::new()
        .add_plugins((DefaultPlugins, PostProcessPlugin, TileDeferredPlugin))
        .add_systems(Startup, setup)
        .add_systems(Update, (toggle_effects, log_post_processing))
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
        Msaa::Sample4,
        ChromaticAberration {
            intensity: 0.04,
            ..default()
        },
        Vignette::default(),
        LensDistortion {
            intensity: 0.3,
            ..default()
        },
        Transform::from_xyz(0.0, 2.5, 7.0).looking_at(Vec3::new(0.0, 0.5, 0.0), Vec3::Y),
    ));

    let sphere = meshes.add(Sphere::new(0.6).mesh().ico(5).unwrap());
    let colours = [
        Color::srgb(0.9, 0.2, 0.1),
        Color::srgb(0.2, 0.8, 0.3),
        Color::srgb(0.2, 0.3, 0.9),
        Color::srgb(0.9, 0.8, 0.2),
    ];
    for (i, colour) in colours.into_iter().enumerate() {
        commands.spawn((
            Mesh3d(sphere.clone()),
            MeshMaterial3d(materials.add(colour)),
            Transform::from_xyz(-2.7 + 1.8 * i as f32, 0.6, 0.0),
        ));
    }
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(20.0, 20.0))),
        MeshMaterial3d(materials.add(Color::srgb(0.8, 0.8, 0.8))),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 8_000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

/// Which of the three effects a camera has.
type EffectsOn = (Has<ChromaticAberration>, Has<Vignette>, Has<LensDistortion>);

/// 1, 2 and 3 turn chromatic aberration, the vignette and lens distortion off and on.
fn toggle_effects(
    mut commands: Commands,
    keys: Res<ButtonInput<KeyCode>>,
    cameras: Query<(Entity, EffectsOn), With<TileDeferred>>,
) {
    for (camera, (aberration, vignette, distortion)) in &cameras {
        let mut camera = commands.entity(camera);
        if keys.just_pressed(KeyCode::Digit1) {
            if aberration {
                camera.remove::<ChromaticAberration>();
            } else {
                camera.insert(ChromaticAberration {
                    intensity: 0.04,
                    ..default()
                });
            }
        }
        if keys.just_pressed(KeyCode::Digit2) {
            if vignette {
                camera.remove::<Vignette>();
            } else {
                camera.insert(Vignette::default());
            }
        }
        if keys.just_pressed(KeyCode::Digit3) {
            if distortion {
                camera.remove::<LensDistortion>();
            } else {
                camera.insert(LensDistortion {
                    intensity: 0.3,
                    ..default()
                });
            }
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
