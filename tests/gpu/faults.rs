//! Injected faults (issues 17 and 27): one Vulkan call of a tile view fails on purpose — the
//! memory of each attachment image the crate allocates, each pipeline creation, each descriptor
//! set allocation (pool exhausted: counted over the view's sets; every material pool, the one
//! the crate adds for the occasion included), each creation of an image, image view, buffer,
//! descriptor pool, render pass, framebuffer and sampler and each memory binding, a lazily
//! allocated block, the submission of the view's command buffer; on a fresh camera and on one
//! that has rendered (growth of every view buffer, skinning's and morphing's too; resizes; new
//! materials). Each time the
//! camera falls back with the reason logged, the next frame renders, nothing panics, the
//! validation layer reports nothing (the harness fails the test on any error but the logged
//! fallback), and once the camera is gone the crate holds exactly the Vulkan objects it held
//! before.

use crate::harness::assert_frames_match;
use crate::{
    animated::{HALF, morphed_sphere, skinned_cylinder, spawn_skinned},
    harness::{Frame, GpuTest, HeadlessApp},
    scenes,
};
use bevy::{
    camera::{RenderTarget, visibility::NoFrustumCulling},
    image::{ImageAddressMode, ImageFilterMode, ImageSampler, ImageSamplerDescriptor},
    mesh::{morph::MeshMorphWeights, skinning::SkinnedMeshInverseBindposes},
    prelude::*,
    render::{RenderApp, render_resource::Extent3d, view::Msaa},
};
use bevy_tile_deferred::{
    TileDeferred, TileFaultInjection, TileRenderReports,
    tiers::{RenderTier, TierDecision},
    vulkan::{FaultOutcome, TileFault, VulkanCall},
};

const WIDTH: u32 = 160;
const HEIGHT: u32 = 96;

fn tile_camera(msaa: Msaa) -> impl Bundle {
    (
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        msaa,
        TileDeferred::default(),
    )
}

/// An app whose render world holds a fault injection, unarmed. It is inserted before the first
/// update: with pipelined rendering, the render world is out of reach once frames run.
fn app_with_fault_injection() -> (HeadlessApp, TileFaultInjection) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    let injection = TileFaultInjection::default();
    headless
        .app
        .sub_app_mut(RenderApp)
        .insert_resource(injection.clone());
    (headless, injection)
}

/// Frames until views, passes and pipelines no camera uses are retired and destroyed.
fn settle(headless: &mut HeadlessApp) {
    for _ in 0..8 {
        headless.update();
    }
}

/// A lit-spheres frame, not a black or clear-only one.
fn assert_rendered(name: &str, frame: &Frame) {
    let pixels = (frame.width * frame.height) as usize;
    let lit = frame
        .rgba
        .chunks_exact(4)
        .filter(|p| u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]) > 45)
        .count();
    let red = frame.rgba.chunks_exact(4).filter(|p| p[0] > 100).count();
    let magenta = frame.rgba.chunks_exact(4).filter(|p| *p == MAGENTA).count();
    assert!(
        lit >= pixels * 9 / 10 && red > 0 && magenta == 0,
        "{name}: not a rendered frame ({lit} of {pixels} lit, {red} reddish, {magenta} not \
         written); image: {}",
        frame.save_png(name).display()
    );
}

/// Arms `fault`, spawns a fresh tile camera (so that its render passes, pipelines, attachments
/// and descriptor sets are all created) and checks what follows. Returns false when the view
/// never reached the fault's point (a counting fault past the last such call).
fn inject(
    test: &GpuTest,
    headless: &mut HeadlessApp,
    injection: &TileFaultInjection,
    fault: TileFault,
    msaa: Msaa,
) -> bool {
    let name = format!("{fault:?} {msaa:?}");
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    let baseline = reports.resource_counts();
    injection.arm(fault.clone());
    if fault == TileFault::MaterialPoolsExhausted {
        // Material sets outlive views: a changed material has its set built again, in the
        // new camera's first view.
        touch_a_material(headless);
    }
    let camera = headless.spawn_camera(tile_camera(msaa));
    // The camera's first tile view comes a frame or two after its spawn.
    for _ in 0..5 {
        headless.update();
        if injection.outcome() != FaultOutcome::Armed {
            break;
        }
    }
    let outcome = injection.outcome();
    let struck = match outcome {
        FaultOutcome::Struck(_) => true,
        FaultOutcome::Missed => false,
        other => panic!("{name}: the fault neither struck nor missed: {other:?}"),
    };
    // The next frames render: through the lower tier after a fault, the tile path otherwise.
    // The target is filled with magenta first: a frame that draws nothing shows it.
    let (target, size) = (headless.target.clone(), UVec2::new(WIDTH, HEIGHT));
    fill_target(headless, &target, size, MAGENTA);
    let frame = headless.render(1);
    assert_rendered(&name, &frame);
    let decision = headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .cloned()
        .expect("a tile camera has a decision");
    let errors = test.take_errors();
    if struck {
        let failure = decision.failure.clone().unwrap_or_default();
        assert!(
            !failure.is_empty(),
            "{name}: the camera did not fall back: {decision:?}"
        );
        assert!(
            errors.len() == 1 && errors[0].contains("falling back") && errors[0].contains(&failure),
            "{name}: one logged fallback with its reason, nothing else: {errors:#?}"
        );
        eprintln!("{name}: {}", errors[0]);
        // Clear the (sticky) failure: the camera goes back to the tile path and renders.
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .remove::<TierDecision>();
        headless.update();
        fill_target(headless, &target, size, MAGENTA);
        let frame = headless.render(1);
        assert_rendered(&format!("{name} recovered"), &frame);
        let decision = headless.app.world().get::<TierDecision>(camera).cloned();
        assert!(
            decision
                .as_ref()
                .is_some_and(|d| d.failure.is_none() && d.tier.is_tile()),
            "{name}: back on the tile path: {decision:?}"
        );
    } else {
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        assert!(decision.failure.is_none(), "{name}: {decision:?}");
    }
    assert!(
        reports.get(camera).is_some(),
        "{name}: the tile path rendered the camera"
    );
    headless.app.world_mut().despawn(camera);
    settle(headless);
    let after = reports.resource_counts();
    assert!(
        after.growth_since(&baseline).is_empty()
            && after.vulkan_objects() == baseline.vulkan_objects(),
        "{name}: leaked: {:?} (before {baseline:?}, after {after:?})",
        after.growth_since(&baseline)
    );
    struck
}

/// Changes one of the scene's materials a little (its reflectance, back and forth), so that
/// its set is rebuilt (an unchanged material keeps its set).
fn touch_a_material(headless: &mut HeadlessApp) {
    let mut materials = headless
        .app
        .world_mut()
        .resource_mut::<Assets<StandardMaterial>>();
    let id = materials.ids().next().expect("the scene has materials");
    let mut material = materials.get_mut(id).expect("the material exists");
    material.reflectance = if material.reflectance == 0.5 {
        0.52
    } else {
        0.5
    };
}

/// Every fault point, without and with MSAA, one at a time in one app.
#[test]
fn injected_faults_fall_back_render_the_next_frame_and_leak_nothing() {
    let test = GpuTest::start("injected_faults_fall_back_render_the_next_frame_and_leak_nothing");
    let (mut headless, injection) = app_with_fault_injection();
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    for msaa in [Msaa::Off, Msaa::Sample4] {
        // A first camera creates what outlives views (layouts, shaders, materials); its report
        // names the attachments the crate allocates.
        let camera = headless.spawn_camera(tile_camera(msaa));
        headless.render(2);
        let report = reports.get(camera).expect("the tile path rendered");
        let attachments: Vec<String> = report
            .attachments
            .iter()
            .filter(|a| a.image_usage.is_some())
            .map(|a| a.name.clone())
            .collect();
        assert!(attachments.len() >= 3, "{attachments:?}");
        headless.app.world_mut().despawn(camera);
        settle(&mut headless);

        let mut struck = Vec::new();
        for fault in [
            TileFault::FrameStart,
            TileFault::Submit,
            TileFault::MaterialPoolsExhausted,
        ]
        .into_iter()
        .chain(
            attachments
                .iter()
                .cloned()
                .map(TileFault::AttachmentAllocation),
        ) {
            assert!(
                inject(&test, &mut headless, &injection, fault.clone(), msaa),
                "{fault:?} {msaa:?}: never reached"
            );
            struck.push(fault);
        }
        let counting: [fn(u32) -> TileFault; 2] = [
            TileFault::PipelineCreation,
            TileFault::DescriptorPoolExhausted,
        ];
        for make in counting {
            let mut reached = 0;
            while inject(&test, &mut headless, &injection, make(reached), msaa) {
                struck.push(make(reached));
                reached += 1;
                assert!(reached < 32, "{:?}: never missed", make(reached));
            }
            assert!(reached > 0, "{:?} {msaa:?}: never reached", make(0));
        }
        // Every creation call a fresh view makes, one at a time. Samplers belong to materials,
        // which outlive cameras (the running-view test fails them); a failed lazily allocated
        // block or query pool does not fail the view (their own tests).
        for call in VulkanCall::ALL.into_iter().filter(|call| {
            !matches!(
                call,
                VulkanCall::Sampler | VulkanCall::LazyMemory | VulkanCall::QueryPool
            )
        }) {
            let mut reached = 0;
            while inject(
                &test,
                &mut headless,
                &injection,
                TileFault::Create(call, reached),
                msaa,
            ) {
                struck.push(TileFault::Create(call, reached));
                reached += 1;
                assert!(reached < 64, "{call:?}: never missed");
            }
            assert!(reached > 0, "{call:?} {msaa:?}: never reached");
        }
        eprintln!("{msaa:?}: {} faults injected: {struck:?}", struck.len());
    }
}

/// A colour the lit-spheres scene never shows: what a target holds until a frame writes it.
const MAGENTA: [u8; 4] = [255, 0, 255, 255];

/// Replaces `image`'s pixels (and size) with `rgba`: the next frame renders into a target that
/// shows `rgba` wherever nothing was written.
fn fill_target(headless: &mut HeadlessApp, image: &Handle<Image>, size: UVec2, rgba: [u8; 4]) {
    let mut images = headless.app.world_mut().resource_mut::<Assets<Image>>();
    let mut image = images.get_mut(image).expect("the target exists");
    image.resize(Extent3d {
        width: size.x,
        height: size.y,
        depth_or_array_layers: 1,
    });
    let data = image.data.as_mut().expect("targets are created with data");
    for pixel in data.chunks_exact_mut(4) {
        pixel.copy_from_slice(&rgba);
    }
}

/// A tile camera that has rendered a few frames, beside a Bevy camera on the same scene in the
/// same app (the reference picture), each into its own target.
struct RunningView {
    headless: HeadlessApp,
    injection: TileFaultInjection,
    tile: Entity,
    tile_target: Handle<Image>,
    bevy_target: Handle<Image>,
    size: UVec2,
    msaa: Msaa,
}

impl RunningView {
    fn new(msaa: Msaa) -> Self {
        let (mut headless, injection) = app_with_fault_injection();
        // Bevy's references with its CPU clustering: the same every run (see the harness).
        headless.use_cpu_light_clustering();
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let tile_target = headless.target.clone();
        let bevy_target = headless.add_target(WIDTH, HEIGHT);
        let tile = headless.spawn_camera(tile_camera(msaa));
        headless.app.world_mut().spawn((
            Camera3d::default(),
            Camera {
                order: -1,
                ..scenes::reference_camera()
            },
            scenes::reference_camera_transform(),
            msaa,
            RenderTarget::Image(bevy_target.clone().into()),
        ));
        headless.render(5);
        Self {
            headless,
            injection,
            tile,
            tile_target,
            bevy_target,
            size: UVec2::new(WIDTH, HEIGHT),
            msaa,
        }
    }

    fn decision(&self) -> TierDecision {
        self.headless
            .app
            .world()
            .get::<TierDecision>(self.tile)
            .cloned()
            .expect("a tile camera has a decision")
    }

    /// Fills the tile camera's target with magenta, renders, and compares what the camera drew
    /// with Bevy's picture of the same frame.
    fn matches_bevy(&mut self, name: &str) {
        self.matches_bevy_within(name, 36.0, 8);
    }

    /// [`RunningView::matches_bevy`] with the given PSNR and 99.5th-percentile bounds.
    fn matches_bevy_within(&mut self, name: &str, min_psnr: f64, max_p995: u8) {
        let (tile_target, bevy_target) = (self.tile_target.clone(), self.bevy_target.clone());
        fill_target(&mut self.headless, &tile_target, self.size, MAGENTA);
        let frames = self.headless.read_images(&[tile_target, bevy_target]);
        let magenta = frames[0]
            .rgba
            .chunks_exact(4)
            .filter(|pixel| *pixel == MAGENTA)
            .count();
        assert_eq!(
            magenta,
            0,
            "{name}: {magenta} pixels nobody wrote; image: {}",
            frames[0].save_png(name).display()
        );
        assert_frames_match(name, &frames[0], &frames[1], min_psnr, max_p995);
    }

    /// Resizes both targets (the tile camera's attachments and framebuffers are rebuilt).
    fn resize(&mut self, size: UVec2) {
        self.size = size;
        for target in [self.tile_target.clone(), self.bevy_target.clone()] {
            fill_target(&mut self.headless, &target, size, [0, 0, 0, 255]);
        }
    }

    /// Arms `fault`, makes the change that reaches it on the running view, and checks: the
    /// fault struck, one logged fallback with its reason and no other error (the validation
    /// layer included), Bevy's picture on a magenta-filled target after it, and the tile path's
    /// once the failure is cleared.
    fn fault(
        &mut self,
        test: &GpuTest,
        what: &str,
        fault: TileFault,
        change: impl FnOnce(&mut Self),
    ) {
        self.fault_naming(test, what, fault, "", change);
    }

    /// [`RunningView::fault`], where the logged reason must name `reason` too (which of the
    /// calls of its kind the fault struck).
    fn fault_naming(
        &mut self,
        test: &GpuTest,
        what: &str,
        fault: TileFault,
        reason: &str,
        change: impl FnOnce(&mut Self),
    ) {
        let name = format!("{what} ({fault:?}, {:?})", self.msaa);
        test.take_errors();
        // Armed until it strikes: the change reaches the render world a frame or two later.
        self.injection.arm_until_struck(fault);
        change(self);
        for _ in 0..6 {
            self.headless.update();
            if self.injection.outcome() != FaultOutcome::Armed {
                break;
            }
        }
        let outcome = self.injection.outcome();
        // Disarm before asserting: a fault left armed would strike the next test step.
        self.injection.disarm();
        assert!(
            matches!(outcome, FaultOutcome::Struck(_)),
            "{name}: the fault did not strike: {outcome:?}"
        );
        self.headless.update();
        let decision = self.decision();
        let failure = decision.failure.clone().unwrap_or_default();
        // One tier down: Bevy's renderer from 1x, the tile path at 1x from 4x.
        let expected = if self.msaa == Msaa::Off {
            RenderTier::Forward
        } else {
            RenderTier::TileDeferred
        };
        assert!(
            !failure.is_empty() && decision.tier == expected,
            "{name}: the camera did not fall back to {expected}: {decision:?}"
        );
        let errors = test.take_errors();
        assert!(
            errors.len() == 1 && errors[0].contains("falling back") && errors[0].contains(&failure),
            "{name}: one logged fallback with its reason, nothing else: {errors:#?}"
        );
        assert!(
            failure.contains(reason),
            "{name}: the fault struck elsewhere than the {reason}: {failure}"
        );
        eprintln!("{name}: {}", errors[0]);
        if expected == RenderTier::Forward {
            self.matches_bevy(&format!("{name}, fallen back"));
        } else {
            // Single-sampled beside Bevy's 4x: every pixel written, the edges aside.
            self.matches_bevy_within(&format!("{name}, fallen back"), 30.0, u8::MAX);
        }
        // Clear the (sticky) failure: the camera goes back to the tile path.
        self.headless
            .app
            .world_mut()
            .entity_mut(self.tile)
            .remove::<TierDecision>();
        self.headless.update();
        self.matches_bevy(&format!("{name}, tile path again"));
        let decision = self.decision();
        assert!(
            decision.failure.is_none() && decision.tier.is_tile(),
            "{name}: back on the tile path: {decision:?}"
        );
        assert!(test.take_errors().is_empty(), "{name}: errors after");
    }
}

/// `count` dim point lights of short range over the floor, in view: enough of them make the
/// tile view grow its light buffers (and replace its descriptor sets).
fn spawn_small_lights(headless: &mut HeadlessApp, count: usize, seed: usize) {
    let world = headless.app.world_mut();
    for i in 0..count {
        let k = (i + seed * 7919) as f32;
        let x = (k * 0.618_034).fract() * 8.0 - 4.0;
        let z = (k * 0.414_214).fract() * 5.0 - 3.0;
        world.spawn((
            PointLight {
                intensity: 2_000.0,
                range: 0.8,
                color: Color::srgb(1.0, 0.8, 0.5),
                ..default()
            },
            Transform::from_xyz(x, 0.25, z),
        ));
    }
}

/// `count` small cubes on the floor, in one of the scene's materials: more draws than the
/// view's instance buffer holds.
fn spawn_small_cubes(headless: &mut HeadlessApp, count: usize) {
    let world = headless.app.world_mut();
    let mesh = world
        .resource_mut::<Assets<Mesh>>()
        .add(Cuboid::new(0.06, 0.06, 0.06));
    // A material the view already has: the growth is the instance buffer's alone.
    let material = existing_material(world);
    for i in 0..count {
        let (x, z) = ((i % 40) as f32 * 0.15 - 3.0, (i / 40) as f32 * 0.15 - 2.5);
        world.spawn((
            Mesh3d(mesh.clone()),
            MeshMaterial3d(material.clone()),
            Transform::from_xyz(x, 0.03, z),
        ));
    }
}

/// `count` skinned cylinders of two joints each at the back of the scene, in one of the scene's
/// materials: more joint matrices than the view's animation buffer holds.
fn spawn_skinned_cylinders(headless: &mut HeadlessApp, count: usize) {
    let world = headless.app.world_mut();
    let mesh = world.resource_mut::<Assets<Mesh>>().add(skinned_cylinder());
    let bindposes = world
        .resource_mut::<Assets<SkinnedMeshInverseBindposes>>()
        .add(SkinnedMeshInverseBindposes::from(vec![
            Mat4::from_translation(Vec3::new(0.0, HALF, 0.0)),
            Mat4::IDENTITY,
        ]));
    let material = existing_material(world);
    for i in 0..count {
        let at = Vec3::new(i as f32 * 0.2 - 4.0, HALF, -3.0);
        let bend = Transform::from_rotation(Quat::from_rotation_z(0.3 + i as f32 * 0.02));
        spawn_skinned(world, &mesh, &material, &bindposes, at, bend);
    }
}

/// A sphere with two morph targets at fixed weights, in one of the scene's materials: its
/// displacements outgrow the view's displacement buffer.
fn spawn_morphed_sphere(headless: &mut HeadlessApp) {
    let world = headless.app.world_mut();
    let mesh = world.resource_mut::<Assets<Mesh>>().add(morphed_sphere());
    let material = existing_material(world);
    world.spawn((
        Mesh3d(mesh),
        MeshMaterial3d(material),
        Transform::from_xyz(2.5, 0.6, 1.0),
        MeshMorphWeights::Value {
            weights: vec![0.6, 0.4],
        },
        NoFrustumCulling,
    ));
}

/// One of the scene's materials: a mesh in it needs no new material buffer or set, so the
/// growth is the first buffer its frame creates.
fn existing_material(world: &mut World) -> Handle<StandardMaterial> {
    let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
    let id = materials.ids().next().expect("the scene has materials");
    materials
        .get_strong_handle(id)
        .expect("the material exists")
}

/// A new textured sphere: its material needs a buffer, a set and its texture's sampler.
fn spawn_textured_sphere(headless: &mut HeadlessApp, x: f32, filter: ImageFilterMode) {
    let world = headless.app.world_mut();
    let mut image = scenes::fidelity::base_color_image();
    image.sampler = ImageSampler::Descriptor(ImageSamplerDescriptor {
        mag_filter: filter,
        min_filter: filter,
        address_mode_u: ImageAddressMode::Repeat,
        address_mode_v: ImageAddressMode::MirrorRepeat,
        ..default()
    });
    let image = world.resource_mut::<Assets<Image>>().add(image);
    let mesh = world
        .resource_mut::<Assets<Mesh>>()
        .add(Sphere::new(0.5).mesh().uv(24, 12));
    let material = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial {
            base_color_texture: Some(image),
            ..default()
        });
    world.spawn((
        Mesh3d(mesh),
        MeshMaterial3d(material),
        Transform::from_xyz(x, 0.5, 2.0),
    ));
}

/// Faults on a view that has rendered (issue 27): buffer growth, a new descriptor pool and sets
/// after growth, attachment and framebuffer rebuilds on a resize, a new material's buffer and
/// sampler, each on a camera whose descriptor sets frames in flight may still use. After each,
/// the frames compare with Bevy's on a target filled with magenta first.
#[test]
fn faults_on_a_running_view_fall_back_and_render_the_next_frames() {
    let test = GpuTest::start("faults_on_a_running_view_fall_back_and_render_the_next_frames");
    for msaa in [Msaa::Off, Msaa::Sample4] {
        let mut view = RunningView::new(msaa);
        view.matches_bevy(&format!("running view {msaa:?}"));

        view.fault(
            &test,
            "lights grow the light buffers",
            TileFault::Create(VulkanCall::Buffer, 0),
            |view| spawn_small_lights(&mut view.headless, 80, 1),
        );
        view.fault(
            &test,
            "growth replaces the view's descriptor pool",
            TileFault::Create(VulkanCall::DescriptorPool, 0),
            |view| spawn_small_lights(&mut view.headless, 100, 2),
        );
        view.fault(
            &test,
            "growth allocates new view sets",
            TileFault::DescriptorPoolExhausted(0),
            |view| spawn_small_lights(&mut view.headless, 200, 3),
        );
        // The buffers a growth replaces after the first (the lights' reaches, the cluster
        // masks, the cluster extents, in the order the view grows them).
        for (second, more) in [(1, 300), (2, 600)] {
            view.fault(
                &test,
                "lights grow the next view buffer",
                TileFault::Create(VulkanCall::Buffer, second),
                |view| spawn_small_lights(&mut view.headless, more, 3 + second as usize),
            );
        }
        view.fault_naming(
            &test,
            "skinned meshes grow the animation buffer",
            TileFault::Create(VulkanCall::Buffer, 0),
            "animation buffer",
            |view| spawn_skinned_cylinders(&mut view.headless, 40),
        );
        view.fault_naming(
            &test,
            "morph targets grow the displacement buffer",
            TileFault::Create(VulkanCall::Buffer, 0),
            "morph displacement buffer",
            |view| spawn_morphed_sphere(&mut view.headless),
        );
        view.fault_naming(
            &test,
            "draws grow the instance buffer",
            TileFault::Create(VulkanCall::Buffer, 0),
            "instance buffer",
            |view| spawn_small_cubes(&mut view.headless, 1100),
        );
        view.fault(
            &test,
            "a resize rebuilds the attachments",
            TileFault::Create(VulkanCall::Image, 0),
            |view| view.resize(UVec2::new(200, 120)),
        );
        view.fault(
            &test,
            "a resize rebuilds the attachment views",
            TileFault::Create(VulkanCall::ImageView, 1),
            |view| view.resize(UVec2::new(176, 104)),
        );
        view.fault(
            &test,
            "a resize rebuilds the framebuffers",
            TileFault::Create(VulkanCall::Framebuffer, 0),
            |view| view.resize(UVec2::new(WIDTH, HEIGHT)),
        );
        view.fault(
            &test,
            "a new material's buffer",
            TileFault::Create(VulkanCall::Buffer, 0),
            |view| spawn_textured_sphere(&mut view.headless, -1.5, ImageFilterMode::Linear),
        );
        view.fault(
            &test,
            "a new material's sampler",
            TileFault::Create(VulkanCall::Sampler, 0),
            |view| spawn_textured_sphere(&mut view.headless, 1.5, ImageFilterMode::Nearest),
        );
    }
}

/// The memoryless path of a tiler (transient attachments in lazily allocated memory) and its
/// fallback, run on a device without such memory by taking ordinary device-local memory
/// through the same code: the attachments report lazily allocated memory, the frame is Bevy's,
/// and when that allocation fails the attachment takes ordinary memory with a warning, the
/// view does not fail, and nothing leaks.
#[test]
fn lazily_allocated_attachments_and_their_fallback() {
    let test = GpuTest::start("lazily_allocated_attachments_and_their_fallback");
    for msaa in [Msaa::Off, Msaa::Sample4] {
        let mut view = RunningView::new(msaa);
        let reports = view
            .headless
            .app
            .world()
            .resource::<TileRenderReports>()
            .clone();
        let lazy = |reports: &TileRenderReports, camera| {
            reports
                .get(camera)
                .expect("rendered by the tile path")
                .attachments
                .iter()
                .filter(|a| a.lazily_allocated)
                .map(|a| a.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(lazy(&reports, view.tile), Vec::<String>::new(), "lavapipe");
        view.headless.app.world_mut().despawn(view.tile);
        settle(&mut view.headless);
        let baseline = reports.resource_counts();

        view.injection.pretend_lazily_allocated_memory();
        view.tile = view.headless.spawn_camera(tile_camera(msaa));
        view.matches_bevy(&format!("lazily allocated {msaa:?}"));
        let transient = lazy(&reports, view.tile);
        assert!(
            !transient.is_empty(),
            "{msaa:?}: no lazily allocated attachment"
        );
        view.headless.app.world_mut().despawn(view.tile);
        settle(&mut view.headless);

        // The first lazily allocated block fails: that attachment takes ordinary memory.
        view.injection
            .arm(TileFault::Create(VulkanCall::LazyMemory, 0));
        view.tile = view.headless.spawn_camera(tile_camera(msaa));
        view.matches_bevy(&format!("lazy allocation failed {msaa:?}"));
        assert!(matches!(view.injection.outcome(), FaultOutcome::Struck(_)));
        let warnings = test.take_warnings();
        assert_eq!(
            warnings
                .iter()
                .filter(|w| w.contains("no lazily allocated memory"))
                .count(),
            1,
            "{warnings:#?}"
        );
        assert_eq!(lazy(&reports, view.tile).len(), transient.len() - 1);
        let decision = view.decision();
        assert!(
            decision.failure.is_none() && decision.tier.is_tile(),
            "{decision:?}"
        );
        view.headless.app.world_mut().despawn(view.tile);
        settle(&mut view.headless);
        let after = reports.resource_counts();
        assert!(
            after.growth_since(&baseline).is_empty()
                && after.vulkan_objects() == baseline.vulkan_objects(),
            "{msaa:?}: leaked: {after:?} (before {baseline:?})"
        );
    }
}

/// A tile frame that fails writes the camera's clear colour, not what the target held (magenta
/// here), in the frame it fails: the camera and the readback start in the same frame, and the
/// fault fails the camera's first tile view.
#[test]
fn a_failed_frame_shows_the_clear_colour() {
    let test = GpuTest::start("a_failed_frame_shows_the_clear_colour");
    let (mut headless, injection) = app_with_fault_injection();
    scenes::spawn_lit_spheres(headless.app.world_mut());
    headless.update();
    let clear = scenes::CLEAR_COLOR.to_srgba().to_u8_array();
    for msaa in [Msaa::Off, Msaa::Sample4] {
        let target = headless.add_target(WIDTH, HEIGHT);
        fill_target(&mut headless, &target, UVec2::new(WIDTH, HEIGHT), MAGENTA);
        injection.arm(TileFault::FrameStart);
        let camera = headless.app.world_mut().spawn((
            tile_camera(msaa),
            RenderTarget::Image(target.clone().into()),
        ));
        let camera = camera.id();
        let failed = headless.read_image(&target);
        assert!(matches!(injection.outcome(), FaultOutcome::Struck(_)));
        let not_clear = failed
            .rgba
            .chunks_exact(4)
            .filter(|pixel| pixel.iter().zip(clear).any(|(a, b)| a.abs_diff(b) > 1))
            .count();
        assert_eq!(
            not_clear,
            0,
            "{msaa:?}: the failed frame is not the clear colour {clear:?} (first pixel {:?}); \
             image: {}",
            &failed.rgba[..4],
            failed.save_png(&format!("failed frame {msaa:?}")).display()
        );
        let errors = test.take_errors();
        assert!(
            errors.len() == 1 && errors[0].contains("falling back"),
            "{errors:#?}"
        );
        headless.app.world_mut().despawn(camera);
        settle(&mut headless);
    }
}

/// The backend's start-up (layouts, shader modules, the light-assignment pipeline, the zero
/// buffer, the fixed samplers) fails at each kind of call, the first and the second of it: the
/// error is logged once, the tile cameras fall back to Bevy's renderer with the reason and draw
/// the scene (on a target filled with magenta first), and nothing the failed start-up created
/// is left alive.
#[test]
fn startup_faults_leave_cameras_on_bevys_renderer() {
    let test = GpuTest::start("startup_faults_leave_cameras_on_bevys_renderer");
    let faults = VulkanCall::STARTUP
        .into_iter()
        .chain([
            VulkanCall::Buffer,
            VulkanCall::BindMemory,
            VulkanCall::Sampler,
        ])
        .flat_map(|call| [TileFault::Create(call, 0), TileFault::Create(call, 1)])
        .chain([TileFault::PipelineCreation(0)]);
    let mut struck = Vec::new();
    for fault in faults {
        let (mut headless, injection) = app_with_fault_injection();
        // Armed before the first update: the render app starts up in it.
        injection.arm(fault.clone());
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let camera = headless.spawn_camera(tile_camera(Msaa::Off));
        for _ in 0..3 {
            headless.update();
        }
        let outcome = injection.outcome();
        if outcome == FaultOutcome::Missed {
            // Start-up makes fewer such calls: the fault was disarmed before any view.
            assert!(test.take_errors().is_empty(), "{fault:?}");
            continue;
        }
        assert!(
            matches!(outcome, FaultOutcome::Struck(_)),
            "{fault:?}: {outcome:?}"
        );
        let (target, size) = (headless.target.clone(), UVec2::new(WIDTH, HEIGHT));
        fill_target(&mut headless, &target, size, MAGENTA);
        let frame = headless.render(1);
        let name = format!("start-up {fault:?}");
        assert_rendered(&name, &frame);
        let decision = headless.app.world().get::<TierDecision>(camera).cloned();
        assert!(
            decision
                .as_ref()
                .is_some_and(|d| d.tier == RenderTier::Forward && d.failure.is_some()),
            "{name}: {decision:?}"
        );
        let errors = test.take_errors();
        let startup = errors
            .iter()
            .filter(|e| e.contains("cannot create the Vulkan objects of the tile path"))
            .count();
        let fallback = errors.iter().filter(|e| e.contains("falling back")).count();
        assert!(
            startup == 1 && fallback == 1 && errors.len() == 2,
            "{name}: the start-up error and the camera's fallback, once each: {errors:#?}"
        );
        let counts = headless
            .app
            .world()
            .resource::<TileRenderReports>()
            .resource_counts();
        assert!(
            counts.vulkan_objects() == 0 && counts.gpu_allocated_bytes == 0,
            "{name}: left alive: {counts:?}"
        );
        struck.push(fault);
    }
    eprintln!("start-up faults struck: {struck:?}");
    for call in VulkanCall::STARTUP {
        assert!(
            struck.contains(&TileFault::Create(call, 1)),
            "{call:?}: the second call never failed"
        );
    }
}

/// A view whose query pools cannot be created renders without its GPU timings, and says so.
#[test]
fn a_view_without_query_pools_renders_without_gpu_timings() {
    let test = GpuTest::start("a_view_without_query_pools_renders_without_gpu_timings");
    let mut view = RunningView::new(Msaa::Sample4);
    let reports = view
        .headless
        .app
        .world()
        .resource::<TileRenderReports>()
        .clone();
    view.headless.app.world_mut().despawn(view.tile);
    settle(&mut view.headless);
    view.injection
        .arm(TileFault::Create(VulkanCall::QueryPool, 0));
    view.tile = view.headless.spawn_camera(tile_camera(Msaa::Sample4));
    view.matches_bevy("without query pools");
    assert!(matches!(view.injection.outcome(), FaultOutcome::Struck(_)));
    let report = reports.get(view.tile).expect("the tile path rendered");
    assert!(report.gpu_times.is_none(), "{:?}", report.gpu_times);
    let warnings = test.take_warnings();
    assert_eq!(
        warnings
            .iter()
            .filter(|w| w.contains("cannot create a query pool"))
            .count(),
        1,
        "{warnings:#?}"
    );
    let decision = view.decision();
    assert!(
        decision.failure.is_none() && decision.tier.is_tile(),
        "{decision:?}"
    );
}
