//! A tile camera keeps its instanced draws from frame to frame and rewrites only the instances
//! that changed (issue 34). Each change a game makes is checked against Bevy forward in the same
//! app, on the frame it is made and once it has settled: meshes moving every frame, a mesh given
//! another material, a material edited, a mesh hidden, a mesh despawned and another spawned, a
//! mesh asset replaced by another shape, and a mesh without CPU culling (`NoCpuCulling`, which
//! Bevy culls on the GPU). The report says whether the batches were kept, and how many instances
//! were rewritten. Bevy's opaque phases, which only Bevy's cameras draw, are left out of the tile
//! camera's view.

use crate::{
    content::{MIN_PSNR, add_material, add_mesh, spawn_stage},
    harness::{
        GpuTest, HeadlessApp,
        image_compare::{self, Frame},
        test_plugins,
    },
    scenes::fidelity::{FidelityCamera, IMAGE_SIZE, stage_origin},
};
use bevy::{
    camera::{RenderTarget, visibility::NoCpuCulling},
    core_pipeline::core_3d::{AlphaMask3d, Opaque3d},
    prelude::*,
    render::{
        RenderApp, pipelined_rendering::PipelinedRenderingPlugin,
        render_phase::ViewBinnedRenderPhases, view::RetainedViewEntity,
    },
};
use bevy_tile_deferred::{TileDeferred, TileInstanceBatches, TileRenderReports};

/// Marks the cubes that move every frame of the moving step.
#[derive(Component)]
struct Mover(Vec3);

/// A tile camera and a Bevy forward camera on the same stage, each into its own image.
struct Compared {
    headless: HeadlessApp,
    tile: Entity,
    forward: Entity,
    targets: [Handle<Image>; 2],
}

impl Compared {
    fn new() -> Self {
        // Without pipelined rendering each update renders its own frame, so that the report
        // read after an update is that frame's.
        let mut headless = HeadlessApp::with_plugins(
            IMAGE_SIZE.x,
            IMAGE_SIZE.y,
            test_plugins(None).disable::<PipelinedRenderingPlugin>(),
        );
        // Bevy's CPU light clustering for the reference, as `render_scene_in` does.
        headless.use_cpu_light_clustering();
        let camera = FidelityCamera::stage(0);
        let forward_target = headless.add_target(IMAGE_SIZE.x, IMAGE_SIZE.y);
        let tile = headless.spawn_camera((camera.bundle(), TileDeferred::default()));
        let forward = headless
            .app
            .world_mut()
            .spawn((
                camera.bundle(),
                RenderTarget::Image(forward_target.clone().into()),
            ))
            .id();
        let targets = [headless.target.clone(), forward_target];
        Self {
            headless,
            tile,
            forward,
            targets,
        }
    }

    fn world(&mut self) -> &mut World {
        self.headless.app.world_mut()
    }

    /// How the tile camera's last frame made its batches.
    fn batches(&self) -> TileInstanceBatches {
        let reports = self.headless.app.world().resource::<TileRenderReports>();
        reports
            .get(self.tile)
            .expect("a report of the tile camera")
            .instance_batches
    }

    /// Whether Bevy kept an opaque and an alpha-mask phase for `camera` this frame, and
    /// whether it queued meshes into the opaque one.
    fn bevy_opaque_phases(&self, camera: Entity) -> (bool, bool, bool) {
        let view = RetainedViewEntity::new(camera.into(), None, 0);
        let render_world = self.headless.app.sub_app(RenderApp).world();
        let opaque = render_world
            .resource::<ViewBinnedRenderPhases<Opaque3d>>()
            .get(&view);
        let alpha_mask = render_world
            .resource::<ViewBinnedRenderPhases<AlphaMask3d>>()
            .contains_key(&view);
        (
            opaque.is_some(),
            alpha_mask,
            opaque.is_some_and(|phase| !phase.is_empty()),
        )
    }

    /// Reads the tile image and Bevy's (rendering frames until both are read), compares them,
    /// and returns the tile image.
    fn compare(&mut self, step: &str) -> Frame {
        let mut frames = self.headless.read_images(&self.targets);
        let psnr = image_compare::psnr(&frames[0], &frames[1]);
        let p995 = image_compare::channel_difference_percentile(&frames[0], &frames[1], 99.5);
        eprintln!("retained draws, {step}: PSNR {psnr:.2} dB, p99.5 {p995}");
        let name = format!("retained-{step}");
        image_compare::assert_frames_match(&name, &frames[0], &frames[1], MIN_PSNR, 8);
        frames.swap_remove(0)
    }
}

/// The change shows in the tile image.
fn assert_changed(before: &Frame, after: &Frame, what: &str) {
    let psnr = image_compare::psnr(before, after);
    assert!(psnr < 45.0, "{what} changed the tile image: {psnr:.2} dB");
}

#[test]
fn kept_instance_batches_follow_every_change_as_bevy_draws_it() {
    let _test = GpuTest::start("kept_instance_batches_follow_every_change_as_bevy_draws_it");
    let mut compared = Compared::new();
    let world = compared.world();
    spawn_stage(world, 0);
    let origin = stage_origin(0);
    let cube = add_mesh(world, Cuboid::new(0.5, 0.5, 0.5));
    let colours = [
        Color::srgb(0.8, 0.2, 0.2),
        Color::srgb(0.2, 0.7, 0.3),
        Color::srgb(0.2, 0.3, 0.8),
    ];
    let materials = colours.map(|colour| {
        add_material(
            world,
            StandardMaterial {
                base_color: colour,
                perceptual_roughness: 0.6,
                ..default()
            },
        )
    });
    let mut cubes = Vec::new();
    for row in 0..3 {
        for column in 0..5 {
            let at = origin + Vec3::new(-2.4 + column as f32 * 1.2, 0.25, -1.5 + row as f32);
            let mut entity = world.spawn((
                Mesh3d(cube.clone()),
                MeshMaterial3d(materials[(row + column) % 3].clone()),
                Transform::from_translation(at),
            ));
            if row == 1 && column % 2 == 0 {
                entity.insert(Mover(at));
            }
            cubes.push(entity.id());
        }
    }
    // A transparent pane in front, sorted and drawn each frame.
    let glass = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgba(0.9, 0.9, 1.0, 0.4),
            alpha_mode: AlphaMode::Blend,
            ..default()
        },
    );
    let pane = add_mesh(world, Cuboid::new(1.6, 1.0, 0.05));
    world.spawn((
        Mesh3d(pane),
        MeshMaterial3d(glass),
        Transform::from_translation(origin + Vec3::new(1.2, 0.6, 1.2)),
    ));
    // A sphere Bevy culls on the GPU, not in its CPU lists of visible meshes.
    let sphere = add_mesh(world, Sphere::new(0.5).mesh().uv(32, 16));
    world.spawn((
        Mesh3d(sphere.clone()),
        MeshMaterial3d(materials[1].clone()),
        Transform::from_translation(origin + Vec3::new(-1.4, 0.5, 1.3)),
        NoCpuCulling,
    ));

    for _ in 0..6 {
        compared.headless.update();
    }
    let settled = compared.compare("settled");
    assert_eq!(
        compared.batches(),
        TileInstanceBatches::Kept {
            rewritten: 0,
            runs: 1
        },
        "nothing changed: last frame's batches are kept as they were"
    );
    // Bevy batches and preprocesses its opaque phases for its own camera only.
    assert_eq!(
        compared.bevy_opaque_phases(compared.tile),
        (false, false, false),
        "the tile camera has no Bevy opaque phases"
    );
    assert_eq!(
        compared.bevy_opaque_phases(compared.forward),
        (true, true, true),
        "Bevy's camera has its opaque phases, with the meshes in them"
    );

    // Three cubes move every frame: kept batches, three instances rewritten each frame.
    for frame in 1..=4 {
        let world = compared.world();
        let mut movers = world.query::<(&Mover, &mut Transform)>();
        for (mover, mut transform) in movers.iter_mut(world) {
            transform.translation = mover.0 + Vec3::new(0.0, 0.15 * frame as f32, 0.0);
            transform.rotate_y(0.3);
        }
        compared.headless.update();
        assert_eq!(
            compared.batches(),
            TileInstanceBatches::Kept {
                rewritten: 3,
                runs: 4
            },
            "frame {frame} of the moving cubes"
        );
    }
    let moved = compared.compare("moved");
    assert_changed(&settled, &moved, "the moving cubes");

    // Each change below is compared on the frame it is made (the frame rendered with it) and
    // after it settled.
    let step = |compared: &mut Compared, name: &str, change: &dyn Fn(&mut World)| {
        let before = compared.compare(&format!("{name}-before"));
        change(compared.world());
        compared.headless.update();
        let batches = compared.batches();
        assert_eq!(
            batches,
            TileInstanceBatches::Built,
            "{name}: the frame with the change batches again"
        );
        let changed = compared.compare(name);
        assert_changed(&before, &changed, name);
        compared.headless.update();
        assert!(
            matches!(compared.batches(), TileInstanceBatches::Kept { .. }),
            "{name}: kept again the frame after: {:?}",
            compared.batches()
        );
    };
    let red = materials[0].clone();
    step(&mut compared, "another-material", &|world: &mut World| {
        world
            .entity_mut(cubes[1])
            .insert(MeshMaterial3d(red.clone()));
    });
    let blue = materials[2].id();
    step(&mut compared, "material-edited", &|world: &mut World| {
        let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
        let mut material = materials.get_mut(blue).expect("the blue material");
        material.base_color = Color::srgb(0.9, 0.8, 0.1);
    });
    step(&mut compared, "hidden", &|world: &mut World| {
        world.entity_mut(cubes[12]).insert(Visibility::Hidden);
    });
    let green = materials[1].clone();
    let spawned_cube = cube.clone();
    step(
        &mut compared,
        "despawned-and-spawned",
        &|world: &mut World| {
            world.entity_mut(cubes[9]).despawn();
            world.spawn((
                Mesh3d(spawned_cube.clone()),
                MeshMaterial3d(green.clone()),
                Transform::from_translation(origin + Vec3::new(0.6, 0.25, 1.6)),
            ));
        },
    );
    let cube_id = cube.id();
    step(&mut compared, "mesh-replaced", &|world: &mut World| {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        meshes
            .insert(cube_id, Sphere::new(0.35).mesh().ico(3).unwrap())
            .expect("the cube's id");
    });
    for _ in 0..4 {
        compared.headless.update();
    }
    compared.compare("after-all");
    assert_eq!(
        compared.batches(),
        TileInstanceBatches::Kept {
            rewritten: 0,
            runs: 1
        }
    );
}

/// Many meshes of one batch, every other one moving (as in a game where some of the same kind
/// of object move): kept batches would write each moving instance as its own copy region. After
/// a few frames the view batches again with the moving ones together (`Regrouped`), and from
/// then on writes them as one region, with the same picture as Bevy's.
#[test]
fn scattered_moving_instances_are_regrouped_into_one_write() {
    let _test = GpuTest::start("scattered_moving_instances_are_regrouped_into_one_write");
    let mut compared = Compared::new();
    let world = compared.world();
    spawn_stage(world, 0);
    let origin = stage_origin(0);
    let cube = add_mesh(world, Cuboid::new(0.15, 0.15, 0.15));
    let material = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.8, 0.5, 0.2),
            perceptual_roughness: 0.6,
            ..default()
        },
    );
    const SIDE: usize = 12;
    for i in 0..SIDE * SIDE {
        let (row, column) = (i / SIDE, i % SIDE);
        let at = origin + Vec3::new(-2.2 + column as f32 * 0.4, 0.1, -1.8 + row as f32 * 0.25);
        let mut entity = world.spawn((
            Mesh3d(cube.clone()),
            MeshMaterial3d(material.clone()),
            Transform::from_translation(at),
        ));
        if i % 2 == 0 {
            entity.insert(Mover(at));
        }
    }
    let movers = SIDE * SIDE / 2;
    for _ in 0..3 {
        compared.headless.update();
    }
    let mut seen = Vec::new();
    for frame in 1..=12 {
        let world = compared.world();
        let mut moving = world.query::<(&Mover, &mut Transform)>();
        for (mover, mut transform) in moving.iter_mut(world) {
            transform.translation = mover.0 + Vec3::new(0.0, 0.02 * frame as f32, 0.0);
            transform.rotate_y(0.2);
        }
        compared.headless.update();
        seen.push(compared.batches());
    }
    eprintln!("retained draws, scattered movers: {seen:?}");
    // Before the regroup each moving cube is its own run (every other slot).
    assert_eq!(
        seen[0],
        TileInstanceBatches::Kept {
            rewritten: movers,
            runs: movers
        },
        "the first moving frame writes every other instance"
    );
    let regroups: Vec<_> = seen
        .iter()
        .filter(|batches| matches!(batches, TileInstanceBatches::Regrouped { .. }))
        .collect();
    assert_eq!(
        regroups,
        [&TileInstanceBatches::Regrouped {
            scattered_runs: movers
        }],
        "one regroup, of the scattered writes"
    );
    for batches in &seen[seen.len() - 4..] {
        assert_eq!(
            *batches,
            TileInstanceBatches::Kept {
                rewritten: movers,
                runs: 1
            },
            "after the regroup the moving cubes are written as one run"
        );
    }
    compared.compare("regrouped");
}
