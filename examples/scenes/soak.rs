//! The soak: a tile camera rendering into an image for thousands of frames while the scene
//! churns (moving lights; meshes, materials and lights spawned and despawned every few frames),
//! the target is resized and the camera's tier switched, with the crate's Vulkan objects, GPU
//! memory and the process's resident memory sampled at three checkpoints. Shared by the `soak`
//! example (full length) and the GPU test (a short run CI can afford).
//!
//! Before each checkpoint the driver restores the same state (first size, first tier, no
//! spawned batches) and lets it settle for [`SoakPlan::settle`] frames, so the checkpoints
//! compare like with like: any difference is something kept from the frames in between.

use bevy::{
    app::PluginsState,
    camera::RenderTarget,
    prelude::*,
    render::{render_resource::Extent3d, view::Msaa},
};
use bevy_tile_deferred::{
    DeviceProfile, TileDeferred, TileRenderReports, TileResourceCounts,
    tiers::{RenderTier, TierDecision, TierSetting},
};
use std::{
    alloc::{GlobalAlloc, Layout, System},
    collections::VecDeque,
    sync::atomic::{AtomicUsize, Ordering},
};

/// Resident memory may grow this much (a fraction of the first checkpoint's) before the soak
/// fails. The crate's own objects and GPU bytes are compared exactly; RSS also holds what the
/// allocator (glibc's malloc arenas), Bevy, wgpu and the driver keep and reuse (lavapipe's
/// JIT-compiled shaders, vectors grown by doubling), which varies by a few MiB from run to run
/// without leaking. A leak of about 3 KiB per frame would exceed it over 10,000 frames.
pub const RSS_TOLERANCE: f64 = 0.10;

/// The Rust heap (see [`RustHeap`]) may grow this many bytes from the first checkpoint before
/// the soak fails: an absolute bound, because the heap at the start holds whatever the process
/// did before (in the GPU test binary, the tests that ran earlier: 49 MiB alone, 176 MiB after
/// the suite). The unchanged 360-frame GPU test grows it by 10 to 50 KiB; a leak of 2 KiB per
/// frame would exceed it there, and one of 40 bytes per frame over the example's 10,000.
pub const HEAP_TOLERANCE_BYTES: u64 = 384 * 1024;

/// The Rust heap's live blocks may grow this many: a leak of small objects, one every other
/// frame, fails the 360-frame GPU test where its bytes would not. The unchanged test grows them
/// by 10 to 25.
pub const HEAP_TOLERANCE_BLOCKS: u64 = 100;

/// Target sizes, as fractions of the plan's size, visited in turn (one per resize).
pub const SIZES: [(u32, u32); 3] = [(2, 2), (3, 2), (1, 2)];

/// The tiers visited in turn (one per switch), with the camera's MSAA for each; the first is
/// the tier of every checkpoint.
pub const TIERS: [(RenderTier, Msaa); 5] = [
    (RenderTier::TileDeferred, Msaa::Off),
    (RenderTier::TileDeferredMsaa { samples: 4 }, Msaa::Sample4),
    (RenderTier::Unmerged { samples: 1 }, Msaa::Off),
    (RenderTier::Unmerged { samples: 4 }, Msaa::Sample4),
    (RenderTier::Forward, Msaa::Sample4),
];

/// How long and how hard the soak runs.
#[derive(Clone, Debug)]
pub struct SoakPlan {
    /// Frames in all (the last is the end checkpoint).
    pub frames: u32,
    /// Target size at the first entry of [`SIZES`].
    pub width: u32,
    /// Target height at the first entry of [`SIZES`].
    pub height: u32,
    /// Frames before the start checkpoint's settling: they visit every tier at every size once
    /// (with the churn running), so the working set the checkpoints compare against includes
    /// every state the soak goes through.
    pub warmup: u32,
    /// Frames the restored state runs before a checkpoint: longer than the crate keeps an unused
    /// material (60 frames), view, render pass or framebuffer (3 frames), plus the frame its
    /// graveyard waits for the GPU.
    pub settle: u32,
    /// A batch (mesh, material, a light) is spawned every this many frames.
    pub churn_every: u32,
    /// Batches alive at most: the oldest is despawned (its assets dropped) beyond this.
    pub max_batches: usize,
    /// The target is resized every this many frames.
    pub resize_every: u32,
    /// The camera's tier is switched every this many frames.
    pub tier_every: u32,
}

impl SoakPlan {
    /// The full soak of issue 17: resize every 500 frames, tier switch every 1,000.
    pub fn full(frames: u32, width: u32, height: u32) -> Self {
        Self {
            frames,
            width,
            height,
            warmup: 100,
            settle: 70,
            churn_every: 4,
            max_batches: 8,
            resize_every: 500,
            tier_every: 1000,
        }
    }

    /// The start, middle and end checkpoints: the frame after which each is sampled.
    pub fn checkpoints(&self) -> [(&'static str, u32); 3] {
        let start = self.warmup + self.settle;
        let end = self.frames;
        [
            ("start", start),
            ("middle", (start + end) / 2),
            ("end", end),
        ]
    }

    /// Whether the plan's checkpoints are far enough apart for their settling windows.
    pub fn validate(&self) -> Result<(), String> {
        let [(_, start), (_, middle), (_, end)] = self.checkpoints();
        if middle < start + self.settle || end < middle + self.settle {
            return Err(format!(
                "{} frames are too few: the checkpoints ({start}, {middle}, {end}) need {} \
                 frames of settling each",
                self.frames, self.settle
            ));
        }
        Ok(())
    }

    /// Whether `frame` belongs to a checkpoint's settling window (the state is restored).
    fn settling(&self, frame: u32) -> bool {
        self.checkpoints()
            .iter()
            .any(|&(_, at)| frame < at && frame + self.settle >= at)
    }

    /// The (size, tier) indices of `frame`.
    fn state(&self, frame: u32) -> (usize, usize) {
        if self.settling(frame) {
            return (0, 0);
        }
        if frame < self.warmup {
            // Every tier at every size, in equal slices of the warm-up.
            let combos = (SIZES.len() * TIERS.len()) as u32;
            let combo = (frame * combos / self.warmup) as usize;
            return (combo % SIZES.len(), combo / SIZES.len());
        }
        (
            (frame / self.resize_every) as usize % SIZES.len(),
            (frame / self.tier_every) as usize % TIERS.len(),
        )
    }

    fn size(&self, index: usize) -> UVec2 {
        let (num, den) = SIZES[index];
        UVec2::new(
            (self.width * num / den).max(1),
            (self.height * num / den).max(1),
        )
    }
}

/// What a checkpoint saw.
#[derive(Clone, Debug)]
pub struct SoakSample {
    /// "start", "middle" or "end".
    pub label: &'static str,
    /// Frames rendered so far.
    pub frame: u32,
    /// The process's resident memory (VmRSS), KiB; `None` where `/proc` has none.
    pub rss_kib: Option<u64>,
    /// The Rust heap; `None` where the binary did not install [`CountingAllocator`].
    pub heap: Option<RustHeap>,
    /// The crate's Vulkan objects and GPU memory.
    pub counts: TileResourceCounts,
    /// The camera's tier (always the first of [`TIERS`] at a checkpoint unless it fell back).
    pub tier: Option<RenderTier>,
    /// The tile path reported the camera's last frame.
    pub tile_rendered: bool,
}

impl SoakSample {
    /// One line for the log.
    pub fn line(&self) -> String {
        let c = &self.counts;
        format!(
            "{:>6} (frame {:>5}): RSS {}, Rust heap {}, GPU {} allocated / {} reserved, {} Vulkan objects \
             ({} images, {} views, {} buffers, {} allocations, {} render passes, {} framebuffers, \
             {} pipelines, {} descriptor pools, {} other), {} descriptor sets; tier {}",
            self.label,
            self.frame,
            self.rss_kib.map_or("n/a".into(), |kib| format!(
                "{:.1} MiB",
                kib as f64 / 1024.0
            )),
            self.heap.map_or("n/a".into(), |h| format!(
                "{} in {} blocks",
                mib(h.bytes as i64),
                h.blocks
            )),
            mib(c.gpu_allocated_bytes),
            mib(c.gpu_reserved_bytes),
            c.vulkan_objects(),
            c.images,
            c.image_views,
            c.buffers,
            c.allocations,
            c.render_passes,
            c.framebuffers,
            c.pipelines,
            c.descriptor_pools,
            c.other,
            c.descriptor_sets,
            self.tier.map_or("none".into(), |t| t.to_string()),
        )
    }
}

fn mib(bytes: i64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// What grew between the first checkpoint and the later ones, and anything else wrong (a
/// checkpoint not rendered by the tile path): empty when the soak is flat. Resident memory is
/// compared unless `rss_exempt` (see [`rss_grows_in_driver`]); the Rust heap always, where it
/// was counted.
pub fn problems(samples: &[SoakSample], rss_exempt: bool) -> Vec<String> {
    let Some(start) = samples.first() else {
        return vec!["no checkpoint was reached".into()];
    };
    let mut problems = Vec::new();
    for sample in samples {
        if sample.tier != Some(TIERS[0].0) || !sample.tile_rendered {
            problems.push(format!(
                "{}: the camera was not rendered by the tile path at {} (tier {:?})",
                sample.label, TIERS[0].0, sample.tier
            ));
        }
    }
    for later in &samples[1..] {
        for (kind, before, now) in later.counts.growth_since(&start.counts) {
            problems.push(format!(
                "{}: {kind} grew from {before} to {now} since {}",
                later.label, start.label
            ));
        }
        if let (Some(before), Some(now)) = (start.rss_kib, later.rss_kib)
            && !rss_exempt
        {
            let limit = before as f64 * (1.0 + RSS_TOLERANCE);
            if now as f64 > limit {
                problems.push(format!(
                    "{}: RSS grew from {before} KiB to {now} KiB (more than {:.0}%)",
                    later.label,
                    RSS_TOLERANCE * 100.0
                ));
            }
        }
        if let (Some(before), Some(now)) = (start.heap, later.heap) {
            if now.bytes > before.bytes + HEAP_TOLERANCE_BYTES {
                problems.push(format!(
                    "{}: the Rust heap grew from {} to {} bytes (more than {} KiB)",
                    later.label,
                    before.bytes,
                    now.bytes,
                    HEAP_TOLERANCE_BYTES / 1024
                ));
            }
            if now.blocks > before.blocks + HEAP_TOLERANCE_BLOCKS {
                problems.push(format!(
                    "{}: the Rust heap grew from {} to {} blocks (more than {HEAP_TOLERANCE_BLOCKS})",
                    later.label, before.blocks, now.blocks,
                ));
            }
        }
    }
    problems
}

/// The process's resident memory in KiB (`VmRSS` of `/proc/self/status`).
pub fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Mesa's lavapipe before 23.0 grows the process by a few MiB per tile-path frame without any
/// leak of ours. In Mesa 22.3, a pipeline stage whose `if` conditions or loop bounds read push
/// constants or uniforms (`lvp_find_inlinable_uniforms`, run on shaders of more than 100 SSA
/// values) is marked inlinable; every bind of the pipeline then makes the queue thread clone
/// the stage's NIR, inline the current push-constant and uniform values and JIT-compile it with
/// LLVM at the next draw (`update_inline_shader_state` in lvp_execute.c), with no cache of
/// variants, binding the new shader state without ever deleting it (later Mesa looks each
/// variant up in a set first). The tile path's large fragment shaders branch on push constants
/// (the debug view, the MSAA sample count, the tonemapping mode) and on view and material
/// uniforms. Lavapipe has no setting that turns the inlining off, and avoiding the pattern would
/// mean hiding uniform values from every driver's compiler. On such a driver the soak asserts
/// the Rust heap (see [`RustHeap`]) instead of resident memory; this returns the reason, for
/// the log, or `None` on other drivers.
pub fn rss_grows_in_driver(profile: &DeviceProfile) -> Option<String> {
    let lavapipe =
        profile.driver_name.contains("llvmpipe") || profile.device_name.contains("llvmpipe");
    let mesa_major: u32 = profile
        .driver_info
        .strip_prefix("Mesa ")?
        .split('.')
        .next()?
        .parse()
        .ok()?;
    (lavapipe && mesa_major < 23).then(|| {
        format!(
            "{} ({}) JIT-compiles a new variant of each shader stage it inlines uniforms into \
             on every pipeline bind and never frees it; resident memory is not asserted, the \
             Rust heap is",
            profile.driver_name, profile.driver_info
        )
    })
}

/// The Rust heap, as [`CountingAllocator`] counts it: what the process's Rust code (the crate,
/// Bevy, wgpu) has allocated and not freed. The Vulkan driver, the validation layer and LLVM
/// are C and C++ and allocate through libc, outside it; what the crate makes them hold is its
/// Vulkan objects, which the soak counts exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RustHeap {
    /// Bytes allocated and not freed.
    pub bytes: u64,
    /// Allocations not freed.
    pub blocks: u64,
}

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static LIVE_BLOCKS: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live bytes and blocks for [`rust_heap`]. A binary installs
/// it with `#[global_allocator]` (the GPU tests and the `soak` example do); it is installed
/// before the first allocation, so every free matches a counted allocation.
pub struct CountingAllocator;

// SAFETY: every method forwards its arguments to `System` unchanged and returns what `System`
// returned, so the contract `GlobalAlloc` asks for is `System`'s; the counters are plain
// atomics updated after the call and never touch the memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `layout`, as `GlobalAlloc::alloc` requires of it.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
            LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
            LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`, as the
        // caller guarantees.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        LIVE_BLOCKS.fetch_sub(1, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's block, layout and size, as `GlobalAlloc::realloc` requires.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        new
    }
}

/// The Rust heap now, or `None` where the binary did not install [`CountingAllocator`].
pub fn rust_heap() -> Option<RustHeap> {
    let blocks = LIVE_BLOCKS.load(Ordering::Relaxed);
    (blocks > 0).then(|| RustHeap {
        bytes: LIVE_BYTES.load(Ordering::Relaxed) as u64,
        blocks: blocks as u64,
    })
}

/// Spawns the soak's scene and camera into `app` (rendering into `target`), runs the plan frame
/// by frame (each waited for), and returns the three checkpoints; `on_sample` sees each as it
/// is taken.
pub fn run(
    app: &mut App,
    plan: &SoakPlan,
    target: Handle<Image>,
    mut on_sample: impl FnMut(&SoakSample),
) -> Vec<SoakSample> {
    if app.plugins_state() != PluginsState::Cleaned {
        // As Bevy's runners do: wait for the renderer, then finish the plugins.
        while app.plugins_state() == PluginsState::Adding {
            bevy::tasks::tick_global_task_pools_on_main_thread();
        }
        app.finish();
        app.cleanup();
    }
    let mut scene = SoakScene::spawn(app.world_mut(), plan, target);
    let checkpoints = plan.checkpoints();
    let mut samples = Vec::new();
    for frame in 0..plan.frames {
        scene.drive(app.world_mut(), plan, frame);
        super::headless::update_and_wait(app);
        if let Some(&(label, at)) = checkpoints.iter().find(|(_, at)| *at == frame + 1) {
            let world = app.world();
            let reports = world.resource::<TileRenderReports>();
            let sample = SoakSample {
                label,
                frame: at,
                rss_kib: resident_kib(),
                heap: rust_heap(),
                counts: reports.resource_counts(),
                tier: world.get::<TierDecision>(scene.camera).map(|d| d.tier),
                tile_rendered: reports.get(scene.camera).is_some(),
            };
            on_sample(&sample);
            samples.push(sample);
        }
    }
    samples
}

/// Marks the lights that move every frame.
#[derive(Component)]
struct SoakMover {
    phase: f32,
}

/// One spawned batch: a mesh with its own material, and a light; dropping it drops the assets.
struct Batch {
    entities: [Entity; 2],
    _mesh: Handle<Mesh>,
    _material: Handle<StandardMaterial>,
}

/// The soak's state between frames.
struct SoakScene {
    camera: Entity,
    target: Handle<Image>,
    batches: VecDeque<Batch>,
    spawned: u32,
    size: usize,
    tier: usize,
}

impl SoakScene {
    fn spawn(world: &mut World, plan: &SoakPlan, target: Handle<Image>) -> Self {
        super::spawn_lit_spheres(world);
        for i in 0..4 {
            let color = Color::hsl(i as f32 * 90.0, 0.9, 0.6);
            world.spawn((
                Name::new(format!("moving light {i}")),
                PointLight {
                    intensity: 80_000.0,
                    range: 6.0,
                    color,
                    shadow_maps_enabled: false,
                    ..default()
                },
                Transform::default(),
                SoakMover {
                    phase: i as f32 * std::f32::consts::FRAC_PI_2,
                },
            ));
        }
        let (tier, msaa) = TIERS[0];
        let camera = world
            .spawn((
                Name::new("soak camera"),
                Camera3d::default(),
                super::reference_camera(),
                super::reference_camera_transform(),
                msaa,
                TileDeferred {
                    tier: TierSetting::Force(tier),
                    ..default()
                },
                RenderTarget::Image(target.clone().into()),
            ))
            .id();
        let mut scene = Self {
            camera,
            target,
            batches: VecDeque::new(),
            spawned: 0,
            size: usize::MAX,
            tier: 0,
        };
        scene.resize(world, plan, 0);
        scene
    }

    /// Applies the plan's state for `frame` before it is rendered.
    fn drive(&mut self, world: &mut World, plan: &SoakPlan, frame: u32) {
        // Moving lights: a function of the frame, not of time, so runs are repeatable.
        let t = frame as f32 * 0.05;
        let mut movers = world.query::<(&SoakMover, &mut Transform)>();
        for (mover, mut transform) in movers.iter_mut(world) {
            let angle = t + mover.phase;
            transform.translation = Vec3::new(
                4.0 * angle.cos(),
                1.0 + 0.8 * (2.0 * angle).sin(),
                4.0 * angle.sin(),
            );
        }

        let (size, tier) = plan.state(frame);
        if size != self.size {
            self.resize(world, plan, size);
        }
        if tier != self.tier {
            let (render_tier, msaa) = TIERS[tier];
            let mut camera = world.entity_mut(self.camera);
            camera.insert(msaa);
            camera
                .get_mut::<TileDeferred>()
                .expect("the soak camera")
                .tier = TierSetting::Force(render_tier);
            self.tier = tier;
        }

        if plan.settling(frame) {
            while let Some(batch) = self.batches.pop_front() {
                despawn(world, batch);
            }
        } else if frame.is_multiple_of(plan.churn_every) {
            let batch = self.spawn_batch(world);
            self.batches.push_back(batch);
            while self.batches.len() > plan.max_batches {
                let oldest = self.batches.pop_front().expect("not empty");
                despawn(world, oldest);
            }
        }
    }

    fn resize(&mut self, world: &mut World, plan: &SoakPlan, index: usize) {
        let size = plan.size(index);
        let mut images = world.resource_mut::<Assets<Image>>();
        let mut image = images.get_mut(&self.target).expect("the soak's target");
        image.resize(Extent3d {
            width: size.x,
            height: size.y,
            depth_or_array_layers: 1,
        });
        self.size = index;
    }

    /// A new mesh (one of four shapes), a new material and a light (point or spot, in turn).
    fn spawn_batch(&mut self, world: &mut World) -> Batch {
        let n = self.spawned;
        self.spawned += 1;
        let mesh: Mesh = match n % 4 {
            0 => Sphere::new(0.3).mesh().ico(2).expect("a small icosphere"),
            1 => Cuboid::new(0.5, 0.4, 0.3).into(),
            2 => Torus::new(0.15, 0.35).into(),
            _ => Capsule3d::new(0.2, 0.4).into(),
        };
        let hue = (n * 47 % 360) as f32;
        let material = StandardMaterial {
            base_color: Color::hsl(hue, 0.7, 0.5),
            perceptual_roughness: 0.2 + 0.6 * (n % 3) as f32 / 2.0,
            metallic: (n % 2) as f32,
            emissive: if n.is_multiple_of(5) {
                LinearRgba::rgb(0.5, 0.2, 0.0)
            } else {
                LinearRgba::BLACK
            },
            ..default()
        };
        let mesh = world.resource_mut::<Assets<Mesh>>().add(mesh);
        let material = world
            .resource_mut::<Assets<StandardMaterial>>()
            .add(material);
        let angle = n as f32 * 0.9;
        let at = Vec3::new(3.0 * angle.cos(), 0.5, 3.0 * angle.sin());
        let object = world
            .spawn((
                Mesh3d(mesh.clone()),
                MeshMaterial3d(material.clone()),
                Transform::from_translation(at),
            ))
            .id();
        let light_at = Transform::from_translation(at + Vec3::Y * 1.5);
        let color = Color::hsl(hue, 0.8, 0.6);
        let light = if n.is_multiple_of(2) {
            world
                .spawn((
                    PointLight {
                        intensity: 30_000.0,
                        range: 4.0,
                        color,
                        shadow_maps_enabled: false,
                        ..default()
                    },
                    light_at,
                ))
                .id()
        } else {
            world
                .spawn((
                    SpotLight {
                        intensity: 60_000.0,
                        range: 5.0,
                        color,
                        shadow_maps_enabled: false,
                        outer_angle: 0.6,
                        inner_angle: 0.4,
                        ..default()
                    },
                    light_at.looking_at(at, Vec3::X),
                ))
                .id()
        };
        Batch {
            entities: [object, light],
            _mesh: mesh,
            _material: material,
        }
    }
}

fn despawn(world: &mut World, batch: Batch) {
    for entity in batch.entities {
        world.despawn(entity);
    }
}
