//! Skinned meshes and morph targets (issue 15), tile path vs Bevy forward, on scenes built as
//! Bevy's `custom_skinned_mesh` and `morph_targets` examples build theirs, posed at fixed
//! values (what an animation leaves at a fixed time):
//! - two instances of one skinned cylinder (one batch, each with its own joints), bent by a
//!   rotated and non-uniformly scaled joint, so that positions and normals both depend on the
//!   skinning;
//! - two instances of one sphere with two morph targets at different non-trivial weights (one
//!   through `MeshMorphWeights::Value`, one through a referenced `MorphWeights`);
//! - a transparent (`AlphaMode::Blend`) skinned cylinder in front of an opaque wall;
//! - a skinned cylinder with a morph target too, beside a skinned one, under a shadow-casting
//!   spot light: Bevy's shadow pass skins and morphs the casters, the tile lighting samples
//!   the map on the skinned surfaces and the ground.
//!
//! Each at 1x (>= 36 dB) and at 4x MSAA (>= 34 dB against Bevy forward 4x), whole frame and each
//! mesh's region (`content::assert_content_matches_to`); and the tile cameras draw them on a
//! tile tier: nothing is listed missing, nothing falls back.

use crate::{
    content::{
        MIN_PSNR, MIN_PSNR_MSAA, Region, RegionCheck, add_material, add_mesh,
        assert_content_matches_to, headless, saturated_pixels, spawn, spawn_stage, spawn_sun,
    },
    harness::{GpuTest, image_compare},
    scenes::fidelity::{FidelityCamera, FidelityCase, FidelityScene, stage_origin},
};
use bevy::{
    camera::{RenderTarget, visibility::NoFrustumCulling},
    mesh::{
        VertexAttributeValues,
        morph::{MeshMorphWeights, MorphAttributes, MorphWeights},
        skinning::{SkinnedMesh, SkinnedMeshInverseBindposes},
    },
    prelude::*,
    render::view::Msaa,
};
use bevy_tile_deferred::{
    TileDeferred,
    tiers::{RenderTier, TierDecision},
    tile_deferred::missing::TileMissing,
};

mod stage {
    pub const SKINNED: usize = 0;
    pub const MORPHED: usize = 1;
    pub const TRANSPARENT: usize = 2;
    pub const SHADOWED: usize = 3;
}

/// The halves of a stage camera's image where the two meshes of a stage stand.
const LEFT: Region = Region {
    x0: 0.15,
    y0: 0.15,
    x1: 0.5,
    y1: 0.8,
};
const RIGHT: Region = Region {
    x0: 0.5,
    y0: 0.15,
    x1: 0.85,
    y1: 0.8,
};

const ANIMATED: FidelityScene = FidelityScene {
    name: "animated",
    spawn: spawn_animated,
    cases: animated_cases,
};

fn animated_cases() -> Vec<FidelityCase> {
    use stage::*;
    let msaa = |index| {
        let mut camera = FidelityCamera::stage(index);
        camera.msaa = Some(Msaa::Sample4);
        camera
    };
    vec![
        FidelityCase::single("skinned", FidelityCamera::stage(SKINNED)),
        FidelityCase::single("skinned_msaa", msaa(SKINNED)),
        FidelityCase::single("morphed", FidelityCamera::stage(MORPHED)),
        FidelityCase::single("morphed_msaa", msaa(MORPHED)),
        FidelityCase::single("skinned_transparent", FidelityCamera::stage(TRANSPARENT)),
        FidelityCase::single("skinned_transparent_msaa", msaa(TRANSPARENT)),
        FidelityCase::single("skinned_morphed_shadowed", FidelityCamera::stage(SHADOWED)),
        FidelityCase::single("skinned_morphed_shadowed_msaa", msaa(SHADOWED)),
    ]
}

/// Half the cylinder's height: its local y runs from -HALF to HALF.
pub(crate) const HALF: f32 = 0.8;

/// A cylinder standing on local y, weighted to joint 0 (its base) below y = -0.3 and to joint 1
/// (its middle) above y = 0.3, blended in between (as `custom_skinned_mesh` weights its strip).
pub(crate) fn skinned_cylinder() -> Mesh {
    let mut mesh = Cylinder::new(0.3, 2.0 * HALF)
        .mesh()
        .resolution(24)
        .segments(12)
        .build();
    let Some(VertexAttributeValues::Float32x3(positions)) =
        mesh.attribute(Mesh::ATTRIBUTE_POSITION)
    else {
        panic!("the cylinder has float3 positions");
    };
    let weights: Vec<[f32; 4]> = positions
        .iter()
        .map(|p| {
            let upper = ((p[1] + 0.3) / 0.6).clamp(0.0, 1.0);
            [1.0 - upper, upper, 0.0, 0.0]
        })
        .collect();
    let vertices = positions.len();
    mesh.insert_attribute(
        Mesh::ATTRIBUTE_JOINT_INDEX,
        VertexAttributeValues::Uint16x4(vec![[0, 1, 0, 0]; vertices]),
    );
    mesh.insert_attribute(Mesh::ATTRIBUTE_JOINT_WEIGHT, weights);
    mesh
}

/// Spawns a skinned cylinder at `at` (its centre) whose middle joint is `bend`: joint 0 at the
/// base (a child of the mesh entity), joint 1 at the middle (a child of joint 0), as glTF
/// skins are spawned. The inverse bindposes undo each joint's bind position in mesh space.
pub(crate) fn spawn_skinned(
    world: &mut World,
    mesh: &Handle<Mesh>,
    material: &Handle<StandardMaterial>,
    bindposes: &Handle<SkinnedMeshInverseBindposes>,
    at: Vec3,
    bend: Transform,
) {
    let entity = world
        .spawn((
            Mesh3d(mesh.clone()),
            MeshMaterial3d(material.clone()),
            Transform::from_translation(at).with_rotation(Quat::from_rotation_y(0.4)),
            // The pose moves vertices out of the bind pose's bounds.
            NoFrustumCulling,
        ))
        .id();
    let base = world
        .spawn((Transform::from_xyz(0.0, -HALF, 0.0), ChildOf(entity)))
        .id();
    let middle = world
        .spawn((
            bend.with_translation(Vec3::new(0.0, HALF, 0.0)),
            ChildOf(base),
        ))
        .id();
    world.entity_mut(entity).insert(SkinnedMesh {
        inverse_bindposes: bindposes.clone(),
        joints: vec![base, middle],
    });
}

/// A UV sphere with two morph targets, as `morph_targets` loads them: 0 swells its upper half
/// along its normals (with a normal change), 1 stretches it along x.
pub(crate) fn morphed_sphere() -> Mesh {
    let mut mesh = Sphere::new(0.55).mesh().uv(32, 16);
    let Some(VertexAttributeValues::Float32x3(positions)) =
        mesh.attribute(Mesh::ATTRIBUTE_POSITION)
    else {
        panic!("the sphere has float3 positions");
    };
    let positions: Vec<Vec3> = positions.iter().map(|p| Vec3::from_array(*p)).collect();
    let swell = positions.iter().map(|&p| {
        let n = p.normalize_or_zero();
        let up = (p.y / 0.55).max(0.0);
        MorphAttributes::from([n * 0.35 * up, Vec3::new(0.0, 0.6 * up, 0.0), Vec3::ZERO])
    });
    let stretch = positions.iter().map(|&p| {
        MorphAttributes::from([
            Vec3::new(p.x * 0.7, 0.0, 0.0),
            Vec3::new(-0.3 * p.x, 0.0, 0.0),
            Vec3::ZERO,
        ])
    });
    // Target-major: every vertex of target 0, then of target 1.
    mesh.set_morph_targets(swell.chain(stretch).collect());
    mesh
}

/// [`skinned_cylinder`] with one morph target: a bulge around its middle (position along the
/// outward normal, and the normal tilted up).
fn skinned_morphed_cylinder() -> Mesh {
    let mut mesh = skinned_cylinder();
    let Some(VertexAttributeValues::Float32x3(positions)) =
        mesh.attribute(Mesh::ATTRIBUTE_POSITION)
    else {
        panic!("the cylinder has float3 positions");
    };
    let bulge = positions
        .iter()
        .map(|p| {
            let p = Vec3::from_array(*p);
            let around = Vec3::new(p.x, 0.0, p.z).normalize_or_zero();
            let amount = (1.0 - (p.y / 0.5).abs()).max(0.0);
            MorphAttributes::from([
                around * 0.2 * amount,
                Vec3::new(0.0, 0.4 * amount, 0.0),
                Vec3::ZERO,
            ])
        })
        .collect();
    mesh.set_morph_targets(bulge);
    mesh
}

fn spawn_animated(world: &mut World) {
    use stage::*;
    spawn_sun(world);
    for index in [SKINNED, MORPHED, TRANSPARENT, SHADOWED] {
        spawn_stage(world, index);
    }
    let cylinder = add_mesh(world, skinned_cylinder());
    let bindposes = world
        .resource_mut::<Assets<SkinnedMeshInverseBindposes>>()
        .add(SkinnedMeshInverseBindposes::from(vec![
            Mat4::from_translation(Vec3::new(0.0, HALF, 0.0)),
            Mat4::IDENTITY,
        ]));
    let orange = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.95, 0.45, 0.1),
            perceptual_roughness: 0.35,
            ..default()
        },
    );
    // Two instances of one mesh and material (one instanced draw), bent differently: one by a
    // joint rotated about z and scaled unevenly (normals need the inverse transpose), one
    // rotated about x.
    let origin = stage_origin(SKINNED);
    spawn_skinned(
        world,
        &cylinder,
        &orange,
        &bindposes,
        origin + Vec3::new(-1.1, HALF + 0.05, 0.0),
        Transform::from_rotation(Quat::from_rotation_z(0.7)).with_scale(Vec3::new(1.4, 1.0, 0.8)),
    );
    spawn_skinned(
        world,
        &cylinder,
        &orange,
        &bindposes,
        origin + Vec3::new(1.1, HALF + 0.05, 0.0),
        Transform::from_rotation(Quat::from_rotation_x(-0.6) * Quat::from_rotation_z(-0.4)),
    );

    // Two instances of one morphed sphere at different weights, one through its own weights,
    // one through a `MorphWeights` entity it refers to.
    let sphere = add_mesh(world, morphed_sphere());
    let teal = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.1, 0.7, 0.65),
            perceptual_roughness: 0.4,
            ..default()
        },
    );
    let origin = stage_origin(MORPHED);
    let weights = world
        .spawn(MorphWeights::new(vec![0.25, 0.9], None).unwrap())
        .id();
    for (x, weights) in [
        (
            -1.1,
            MeshMorphWeights::Value {
                weights: vec![0.7, 0.45],
            },
        ),
        (1.1, MeshMorphWeights::Reference(weights)),
    ] {
        world.spawn((
            Mesh3d(sphere.clone()),
            MeshMaterial3d(teal.clone()),
            Transform::from_translation(origin + Vec3::new(x, 0.8, 0.0)),
            weights,
            NoFrustumCulling,
        ));
    }

    // A transparent skinned cylinder over an opaque wall and beside an opaque one.
    let origin = stage_origin(TRANSPARENT);
    let white = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.85, 0.85, 0.85),
            perceptual_roughness: 0.6,
            ..default()
        },
    );
    let wall = add_mesh(world, Cuboid::new(6.0, 2.2, 0.2));
    spawn(
        world,
        &wall,
        &white,
        Transform::from_translation(origin + Vec3::new(0.0, 1.1, -1.2)),
    );
    let red = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgba(0.95, 0.1, 0.15, 0.55),
            alpha_mode: AlphaMode::Blend,
            perceptual_roughness: 0.3,
            ..default()
        },
    );
    spawn_skinned(
        world,
        &cylinder,
        &red,
        &bindposes,
        origin + Vec3::new(-1.1, HALF + 0.05, 0.0),
        Transform::from_rotation(Quat::from_rotation_z(-0.8)).with_scale(Vec3::new(0.8, 1.0, 1.3)),
    );
    spawn_skinned(
        world,
        &cylinder,
        &orange,
        &bindposes,
        origin + Vec3::new(1.1, HALF + 0.05, 0.0),
        Transform::from_rotation(Quat::from_rotation_z(0.5)),
    );

    // Skinned and morphed together, beside a skinned cylinder, under a shadow-casting spot
    // light from the front left: both cast onto the ground and the right one.
    let origin = stage_origin(SHADOWED);
    world.spawn((
        SpotLight {
            intensity: 600_000.0,
            range: 14.0,
            outer_angle: 0.9,
            inner_angle: 0.6,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_translation(origin + Vec3::new(-2.5, 4.0, 2.5))
            .looking_at(origin + Vec3::new(0.3, 0.4, -0.3), Vec3::Y),
    ));
    let both = add_mesh(world, skinned_morphed_cylinder());
    let bulge = world
        .spawn(MorphWeights::new(vec![0.8], None).unwrap())
        .id();
    spawn_skinned(
        world,
        &both,
        &orange,
        &bindposes,
        origin + Vec3::new(-0.9, HALF + 0.05, 0.0),
        Transform::from_rotation(Quat::from_rotation_z(-0.6)).with_scale(Vec3::new(1.2, 1.0, 0.9)),
    );
    let morphed = world
        .query_filtered::<Entity, With<SkinnedMesh>>()
        .iter(world)
        .find(|entity| {
            world
                .get::<Mesh3d>(*entity)
                .is_some_and(|mesh| mesh.0 == both)
        })
        .expect("the skinned and morphed cylinder");
    world
        .entity_mut(morphed)
        .insert(MeshMorphWeights::Reference(bulge));
    spawn_skinned(
        world,
        &cylinder,
        &teal,
        &bindposes,
        origin + Vec3::new(1.0, HALF + 0.05, -0.4),
        Transform::from_rotation(Quat::from_rotation_x(0.5)),
    );
}

fn checks() -> Vec<RegionCheck> {
    let mut checks = Vec::new();
    for (case, shows) in [
        (
            "skinned",
            ["the bent orange cylinder", "the other bent cylinder"],
        ),
        (
            "skinned_msaa",
            ["the bent orange cylinder", "the other bent cylinder"],
        ),
        (
            "morphed",
            ["the swollen teal sphere", "the stretched teal sphere"],
        ),
        (
            "morphed_msaa",
            ["the swollen teal sphere", "the stretched teal sphere"],
        ),
        (
            "skinned_transparent",
            [
                "the red transparent cylinder",
                "the opaque skinned cylinder",
            ],
        ),
        (
            "skinned_transparent_msaa",
            [
                "the red transparent cylinder",
                "the opaque skinned cylinder",
            ],
        ),
        (
            "skinned_morphed_shadowed",
            ["the bulging skinned cylinder", "the shadowed teal cylinder"],
        ),
        (
            "skinned_morphed_shadowed_msaa",
            ["the bulging skinned cylinder", "the shadowed teal cylinder"],
        ),
    ] {
        for (region, shows) in [LEFT, RIGHT].into_iter().zip(shows) {
            checks.push(RegionCheck {
                case,
                region,
                shows,
                visible: |f| saturated_pixels(f, 40) > 200,
            });
        }
    }
    checks
}

/// Skinned, morphed, transparent skinned and shadowed skinned and morphed meshes: tile path vs
/// Bevy forward, without MSAA
/// (>= 36 dB) and at 4x (>= 34 dB against Bevy forward 4x), whole frame and each mesh's region.
#[test]
fn animated_meshes_match_bevy() {
    let _test = GpuTest::start("animated_meshes_match_bevy");
    assert_content_matches_to(headless(), &ANIMATED, &checks(), |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

/// The tile cameras that see the skinned and morphed meshes stay on their tile tier: nothing
/// is listed missing, nothing falls back to `Core3d`, and the meshes are drawn by the tile path.
#[test]
fn animated_meshes_do_not_fall_back() {
    let _test = GpuTest::start("animated_meshes_do_not_fall_back");
    let mut headless = headless();
    spawn_animated(headless.app.world_mut());
    let mut cameras = Vec::new();
    for index in [
        stage::SKINNED,
        stage::MORPHED,
        stage::TRANSPARENT,
        stage::SHADOWED,
    ] {
        for msaa in [Msaa::Off, Msaa::Sample4] {
            let mut camera = FidelityCamera::stage(index);
            // One target, cameras one after the other.
            camera.camera.order = cameras.len() as isize;
            let entity = headless.spawn_camera((camera.bundle(), TileDeferred::default()));
            headless.app.world_mut().entity_mut(entity).insert(msaa);
            cameras.push((index, msaa, entity));
        }
    }
    headless.render(6);
    let world = headless.app.world();
    let reports = world
        .resource::<bevy_tile_deferred::TileRenderReports>()
        .clone();
    for (index, msaa, camera) in cameras {
        let decision = world.get::<TierDecision>(camera).expect("a tier decision");
        let expected = match msaa {
            Msaa::Off => RenderTier::TileDeferred,
            _ => RenderTier::TileDeferredMsaa { samples: 4 },
        };
        assert_eq!(
            decision.tier, expected,
            "stage {index} {msaa:?}: {decision:?}"
        );
        assert!(
            decision.missing_fallback.is_none(),
            "stage {index} {msaa:?}: {decision:?}"
        );
        let missing = world.get::<TileMissing>(camera);
        assert!(
            missing.is_none_or(|m| m.items.is_empty()),
            "stage {index} {msaa:?}: nothing missing: {:?}",
            missing.map(|m| &m.items)
        );
        let report = reports
            .get(camera)
            .unwrap_or_else(|| panic!("stage {index} {msaa:?}: a tile report"));
        assert!(
            report.draws >= 2,
            "stage {index} {msaa:?}: {} draws",
            report.draws
        );
    }
}

/// Morph targets edited at run time (`Assets<Mesh>::get_mut`, as a tool or a loader might):
/// the tile path copies the new displacements and uploads them again, so its image follows
/// Bevy forward's; the same weights now give another shape.
#[test]
fn edited_morph_targets_are_uploaded_again() {
    let _test = GpuTest::start("edited_morph_targets_are_uploaded_again");
    let mut headless = headless();
    // Bevy's CPU light clustering for the reference, as `render_scene_in` does.
    headless.use_cpu_light_clustering();
    spawn_animated(headless.app.world_mut());
    let camera = FidelityCamera::stage(stage::MORPHED);
    let size = crate::scenes::fidelity::IMAGE_SIZE;
    let forward_target = headless.add_target(size.x, size.y);
    headless.spawn_camera((camera.bundle(), TileDeferred::default()));
    headless.app.world_mut().spawn((
        camera.bundle(),
        RenderTarget::Image(forward_target.clone().into()),
    ));
    let targets = [headless.target.clone(), forward_target];
    let compare = |headless: &mut crate::harness::HeadlessApp, when: &str| {
        for _ in 0..6 {
            headless.update();
        }
        let mut frames = headless.read_images(&targets);
        let psnr = image_compare::psnr(&frames[0], &frames[1]);
        let p995 = image_compare::channel_difference_percentile(&frames[0], &frames[1], 99.5);
        eprintln!("animated edited morph targets, {when}: PSNR {psnr:.2} dB, p99.5 {p995}");
        let name = format!("animated-edited-{when}");
        image_compare::assert_frames_match(&name, &frames[0], &frames[1], MIN_PSNR, 8);
        frames.swap_remove(0)
    };
    let before = compare(&mut headless, "before");
    // Target 1 (the stretch) now squashes the sphere along y instead.
    {
        let world = headless.app.world_mut();
        let sphere = world
            .query_filtered::<&Mesh3d, With<MeshMorphWeights>>()
            .iter(world)
            .map(|mesh| mesh.0.clone())
            .find(|mesh| {
                world
                    .resource::<Assets<Mesh>>()
                    .get(mesh)
                    .is_some_and(|mesh| mesh.attribute(Mesh::ATTRIBUTE_JOINT_INDEX).is_none())
            })
            .expect("the morphed sphere");
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        let mut mesh = meshes.get_mut(&sphere).expect("the sphere");
        let mut targets = mesh.morph_targets().expect("morph targets").clone();
        let vertices = targets.len() / 2;
        for target in &mut targets[vertices..] {
            target.position = Vec3::new(0.0, -0.6 * target.position.x.abs(), 0.0);
        }
        mesh.set_morph_targets(targets);
    }
    let after = compare(&mut headless, "after");
    // The right sphere weighs the edited target 0.9: its region changes.
    let changed = image_compare::psnr(&RIGHT.crop(&before), &RIGHT.crop(&after));
    assert!(
        changed < 30.0,
        "the edit changes the tile image: {changed:.2} dB between before and after"
    );
}

/// What [`pose_of_frame`] animates: every skinned mesh's middle joint and every `MorphWeights`.
#[derive(Resource, Default)]
struct AnimatedFrame(u32);

/// Poses every skinned cylinder and weighs every morph target by the frame number, as an
/// `AnimationPlayer` would each frame in `PostUpdate` before transforms propagate: the middle
/// joint swings about z and x, the weights swing between 0 and 1. Each frame's pose is new.
fn pose_of_frame(
    mut frame: ResMut<AnimatedFrame>,
    skinned: Query<&SkinnedMesh>,
    mut joints: Query<&mut Transform>,
    mut weights: Query<&mut MorphWeights>,
    mut own_weights: Query<&mut MeshMorphWeights>,
) {
    frame.0 += 1;
    let t = frame.0 as f32 * 0.37;
    for skin in &skinned {
        if let Ok(mut middle) = joints.get_mut(skin.joints[1]) {
            middle.rotation =
                Quat::from_rotation_z(0.8 * t.sin()) * Quat::from_rotation_x(0.5 * t.cos());
        }
    }
    for mut weights in &mut weights {
        for (i, weight) in weights.weights_mut().iter_mut().enumerate() {
            *weight = 0.5 + 0.5 * (t + i as f32).sin();
        }
    }
    for mut weights in &mut own_weights {
        if let MeshMorphWeights::Value { weights } = &mut *weights {
            for (i, weight) in weights.iter_mut().enumerate() {
                *weight = 0.5 + 0.5 * (t * 1.3 + i as f32).cos();
            }
        }
    }
}

/// A pose that changes every frame, seen by four cameras with viewports on one target (Bevy's
/// `split_screen`): the tile cameras draw the skinned and morphed meshes in the pose Bevy's
/// cameras draw the same frame (Bevy's `Core3d` cameras, the same viewports, another target),
/// at 1x and 4x MSAA (Bevy's default), each viewport with the camera's samples. A pose a frame
/// late, or kept from an earlier frame while the meshes in view stay the same, would differ in
/// every viewport; so would edges drawn without MSAA (35.6 dB at 4x, as the tile path drew
/// viewports before session 35).
#[test]
fn poses_changing_every_frame_match_bevy_in_split_screen_viewports() {
    let _test = GpuTest::start("poses_changing_every_frame_match_bevy_in_split_screen_viewports");
    for msaa in [Msaa::Off, Msaa::Sample4] {
        let mut headless = headless();
        headless.use_cpu_light_clustering();
        spawn_animated(headless.app.world_mut());
        headless.app.init_resource::<AnimatedFrame>().add_systems(
            PostUpdate,
            pose_of_frame.before(bevy::transform::TransformSystems::Propagate),
        );
        let size = crate::scenes::fidelity::IMAGE_SIZE;
        let targets = [
            headless.add_target(size.x * 2, size.y * 2),
            headless.add_target(size.x * 2, size.y * 2),
        ];
        let stages = [
            stage::SKINNED,
            stage::MORPHED,
            stage::TRANSPARENT,
            stage::SHADOWED,
        ];
        let mut tile_cameras = Vec::new();
        for (tile, target) in [true, false].into_iter().zip(&targets) {
            for (order, index) in stages.into_iter().enumerate() {
                let mut camera = FidelityCamera::stage(index);
                camera.camera.order = order as isize;
                camera.camera.viewport = Some(bevy::camera::Viewport {
                    physical_position: UVec2::new(
                        (order as u32 % 2) * size.x,
                        (order as u32 / 2) * size.y,
                    ),
                    physical_size: size,
                    ..default()
                });
                let mut entity = headless
                    .app
                    .world_mut()
                    .spawn((camera.bundle(), RenderTarget::Image(target.clone().into())));
                entity.insert(msaa);
                if tile {
                    entity.insert(TileDeferred::default());
                    tile_cameras.push(entity.id());
                }
            }
        }
        // Frames apart, so that the meshes in view stay the same while the pose moves (the
        // tile path keeps a view's instanced draws from frame to frame then).
        for round in 0..3 {
            for _ in 0..4 {
                headless.update();
            }
            let frames = headless.read_images(&targets);
            let name = format!("animated-split-screen-{}x-round-{round}", msaa.samples());
            eprintln!(
                "{name}: PSNR {:.2} dB, p99.5 {} (frame {})",
                image_compare::psnr(&frames[0], &frames[1]),
                image_compare::channel_difference_percentile(&frames[0], &frames[1], 99.5),
                headless.app.world().resource::<AnimatedFrame>().0
            );
            frames[0].save_png(&name);
            image_compare::assert_frames_match(&name, &frames[0], &frames[1], 40.0, 8);
        }
        let world = headless.app.world();
        let reports = world.resource::<bevy_tile_deferred::TileRenderReports>();
        for camera in tile_cameras {
            let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
            assert!(tier.is_tile() && !tier.is_unmerged(), "{msaa:?}: {tier:?}");
            // Each viewport keeps the camera's MSAA: what is outside it is kept by the render
            // area, not by rendering without samples.
            let report = reports.get(camera).expect("a report");
            let depth = report
                .compiled
                .attachment_named("depth")
                .expect("the tile depth");
            assert_eq!(depth.samples, msaa.samples(), "{msaa:?}");
        }
    }
}
