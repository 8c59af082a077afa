//! The Vulkan device behind Bevy's `RenderDevice`, and the lifetime of the crate's objects.

use ash::vk;
use bevy::render::renderer::{RenderDevice, RenderQueue};
use std::{
    collections::HashMap,
    mem::ManuallyDrop,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicI64, Ordering},
    },
    time::Duration,
};
use wgpu::hal::api::Vulkan;

/// How many Vulkan objects the crate has created and not yet destroyed, by kind, and the GPU
/// memory they hold. Tests and the `soak` example read it (through
/// [`TileRenderReports::resource_counts`](crate::TileRenderReports::resource_counts)) to prove
/// that resizes, camera despawns, tier switches and scene churn leak nothing.
#[derive(Debug, Default)]
pub struct LiveObjects {
    /// Images (attachments).
    pub images: AtomicI64,
    /// Image views.
    pub image_views: AtomicI64,
    /// Buffers.
    pub buffers: AtomicI64,
    /// Device memory blocks (dedicated allocations and gpu-allocator allocations).
    pub allocations: AtomicI64,
    /// Render passes.
    pub render_passes: AtomicI64,
    /// Framebuffers.
    pub framebuffers: AtomicI64,
    /// Pipelines.
    pub pipelines: AtomicI64,
    /// Descriptor pools.
    pub descriptor_pools: AtomicI64,
    /// Descriptor sets allocated from the crate's pools and not yet freed (individually or
    /// with their pool). Not in [`LiveObjects::total`]: a set is freed with its pool.
    pub descriptor_sets: AtomicI64,
    /// Pipeline layouts, descriptor set layouts, samplers, shader modules, query pools.
    pub other: AtomicI64,
    /// Bytes of GPU memory bound to the crate's live images and buffers: the sizes the crate
    /// asked gpu-allocator for, plus its dedicated lazily allocated blocks.
    pub gpu_allocated_bytes: AtomicI64,
    /// Bytes of the `VkDeviceMemory` blocks gpu-allocator holds for the crate
    /// (`Allocator::capacity`, which keeps one empty block per memory type for reuse).
    pub gpu_pooled_block_bytes: AtomicI64,
    /// Bytes of the crate's dedicated lazily allocated blocks.
    pub gpu_lazy_bytes: AtomicI64,
}

impl LiveObjects {
    /// Total live objects of every kind but descriptor sets (freed with their pools).
    pub fn total(&self) -> i64 {
        self.snapshot().vulkan_objects()
    }

    /// The counts now, as plain numbers.
    pub fn snapshot(&self) -> ResourceCounts {
        let load = |count: &AtomicI64| count.load(Ordering::Relaxed);
        ResourceCounts {
            images: load(&self.images),
            image_views: load(&self.image_views),
            buffers: load(&self.buffers),
            allocations: load(&self.allocations),
            render_passes: load(&self.render_passes),
            framebuffers: load(&self.framebuffers),
            pipelines: load(&self.pipelines),
            descriptor_pools: load(&self.descriptor_pools),
            descriptor_sets: load(&self.descriptor_sets),
            other: load(&self.other),
            gpu_allocated_bytes: load(&self.gpu_allocated_bytes),
            gpu_reserved_bytes: load(&self.gpu_pooled_block_bytes) + load(&self.gpu_lazy_bytes),
        }
    }

    pub(crate) fn created(counter: &AtomicI64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn destroyed(counter: &AtomicI64) {
        counter.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn add(counter: &AtomicI64, amount: i64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }
}

/// A snapshot of the Vulkan objects and GPU memory the crate holds
/// ([`TileRenderReports::resource_counts`](crate::TileRenderReports::resource_counts)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceCounts {
    /// Images (attachments).
    pub images: i64,
    /// Image views.
    pub image_views: i64,
    /// Buffers.
    pub buffers: i64,
    /// Device memory allocations (gpu-allocator sub-allocations and dedicated blocks).
    pub allocations: i64,
    /// Render passes.
    pub render_passes: i64,
    /// Framebuffers.
    pub framebuffers: i64,
    /// Pipelines.
    pub pipelines: i64,
    /// Descriptor pools.
    pub descriptor_pools: i64,
    /// Descriptor sets allocated and not freed.
    pub descriptor_sets: i64,
    /// Pipeline layouts, descriptor set layouts, samplers, shader modules, query pools.
    pub other: i64,
    /// Bytes of GPU memory bound to the crate's live images and buffers.
    pub gpu_allocated_bytes: i64,
    /// Bytes of `VkDeviceMemory` the crate holds: gpu-allocator's blocks (sub-allocated, one
    /// empty block per memory type kept for reuse) and the dedicated lazily allocated blocks.
    pub gpu_reserved_bytes: i64,
}

impl ResourceCounts {
    /// Live Vulkan objects of every kind but descriptor sets (freed with their pools): what
    /// [`TileRenderReports::live_vulkan_objects`](crate::TileRenderReports::live_vulkan_objects)
    /// returns.
    pub fn vulkan_objects(&self) -> i64 {
        self.images
            + self.image_views
            + self.buffers
            + self.allocations
            + self.render_passes
            + self.framebuffers
            + self.pipelines
            + self.descriptor_pools
            + self.other
    }

    /// Every count with its name, objects first, then bytes.
    pub fn by_kind(&self) -> [(&'static str, i64); 12] {
        [
            ("images", self.images),
            ("image views", self.image_views),
            ("buffers", self.buffers),
            ("allocations", self.allocations),
            ("render passes", self.render_passes),
            ("framebuffers", self.framebuffers),
            ("pipelines", self.pipelines),
            ("descriptor pools", self.descriptor_pools),
            ("other", self.other),
            ("descriptor sets", self.descriptor_sets),
            ("GPU bytes", self.gpu_allocated_bytes),
            ("GPU reserved bytes", self.gpu_reserved_bytes),
        ]
    }

    /// The counts that are higher than in `baseline`, with both values: empty when nothing
    /// grew.
    pub fn growth_since(&self, baseline: &ResourceCounts) -> Vec<(&'static str, i64, i64)> {
        baseline
            .by_kind()
            .iter()
            .zip(self.by_kind())
            .filter(|((_, before), (_, now))| now > before)
            .map(|((kind, before), (_, now))| (*kind, *before, now))
            .collect()
    }
}

/// How many descriptor sets of each pool are live, so that destroying a pool can retire its
/// sets from [`LiveObjects::descriptor_sets`].
#[derive(Debug, Default)]
pub(crate) struct DescriptorSetLedger {
    by_pool: HashMap<vk::DescriptorPool, i64>,
}

impl DescriptorSetLedger {
    /// Records `count` sets allocated from `pool`.
    pub fn allocated(&mut self, pool: vk::DescriptorPool, count: i64) {
        *self.by_pool.entry(pool).or_default() += count;
    }

    /// Records `count` sets of `pool` freed individually.
    pub fn freed(&mut self, pool: vk::DescriptorPool, count: i64) {
        if let Some(live) = self.by_pool.get_mut(&pool) {
            *live -= count;
        }
    }

    /// Forgets `pool` (destroyed or reset) and returns how many of its sets were still live.
    pub fn pool_released(&mut self, pool: vk::DescriptorPool) -> i64 {
        self.by_pool.remove(&pool).unwrap_or(0)
    }
}

/// What the device offers for indirect draws, read once when the context is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IndirectDrawSupport {
    /// The `drawIndirectFirstInstance` feature is enabled (wgpu enables it with
    /// `Features::INDIRECT_FIRST_INSTANCE`, which Bevy requests where the adapter has it).
    /// Without it every indirect command's first instance must be 0, and the tile path's
    /// instanced draws start at their batch's first instance.
    pub(crate) first_instance: bool,
    /// The `multiDrawIndirect` feature (wgpu enables it wherever the device has it): one call
    /// may draw more than one command.
    pub(crate) multi_draw: bool,
    /// `maxDrawIndirectCount`: the most commands one call may draw.
    pub(crate) max_draw_count: u32,
}

/// The raw device the crate records on, with what it needs to allocate memory.
pub(crate) struct VulkanContext {
    /// Sub-allocates buffers and non-transient images; dropped (freeing its blocks) before the
    /// device reference below, unless [`VulkanContext::leak_memory`] is set.
    pub allocator: ManuallyDrop<Mutex<gpu_allocator::vulkan::Allocator>>,
    /// Set when the GPU may still use the crate's memory at teardown (it did not finish in
    /// time): the allocator's blocks are then never freed.
    pub leak_memory: bool,
    /// Keeps wgpu's device, and so the `VkDevice` below, alive as long as this context.
    render_device: RenderDevice,
    pub device: ash::Device,
    pub memory_properties: vk::PhysicalDeviceMemoryProperties,
    pub limits: vk::PhysicalDeviceLimits,
    /// Valid bits of timestamps on wgpu's queue (0: no timestamps).
    pub timestamp_valid_bits: u32,
    /// Depth-stencil formats the device can use as a transient, multisampled depth-stencil and
    /// input attachment, in order of preference, with the sample counts it supports for each.
    pub depth_stencil_formats: Vec<(vk::Format, vk::SampleCountFlags)>,
    pub live: Arc<LiveObjects>,
    /// Live descriptor sets by pool (see [`LiveObjects::descriptor_sets`]).
    pub(crate) descriptor_sets: Mutex<DescriptorSetLedger>,
    /// Test hook: the fault armed for the view being rendered (`TileFaultInjection`).
    pub(crate) faults: super::faults::FaultHook,
    /// What the driver compiled for the crate's pipelines, so that one built again (a mesh
    /// pipeline that was retired while unused, a pass rebuilt for a new size or tier) skips the
    /// compiler. Null where the driver could not create one: pipelines are then compiled each
    /// time. In memory only: nothing is written to disk.
    pub(crate) pipeline_cache: vk::PipelineCache,
    /// What the device offers for indirect draws.
    pub(crate) indirect: IndirectDrawSupport,
}

impl VulkanContext {
    /// The context of Bevy's render device, or `None` off Vulkan.
    pub fn new(render_device: &RenderDevice) -> Option<Self> {
        // SAFETY: the guard is only used to clone ash's dispatch tables and read handles; it is
        // dropped before this function returns, and the cloned handles stay valid because
        // `render_device` (kept in the context) keeps the wgpu device alive.
        let hal_device = unsafe { render_device.wgpu_device().as_hal::<Vulkan>() }?;
        let device = hal_device.raw_device().clone();
        let instance = hal_device.shared_instance().raw_instance().clone();
        let physical_device = hal_device.raw_physical_device();
        let queue_family_index = hal_device.queue_family_index();
        drop(hal_device);
        // SAFETY: the physical device belongs to this instance; these are pure queries.
        let memory_properties =
            unsafe { instance.get_physical_device_memory_properties(physical_device) };
        // SAFETY: as above.
        let limits = unsafe { instance.get_physical_device_properties(physical_device) }.limits;
        // SAFETY: as above.
        let timestamp_valid_bits =
            unsafe { instance.get_physical_device_queue_family_properties(physical_device) }
                .get(queue_family_index as usize)
                .map_or(0, |family| family.timestamp_valid_bits);
        // SAFETY: as above.
        let physical_features = unsafe { instance.get_physical_device_features(physical_device) };
        let indirect = IndirectDrawSupport {
            first_instance: render_device
                .features()
                .contains(wgpu::Features::INDIRECT_FIRST_INSTANCE),
            multi_draw: physical_features.multi_draw_indirect == vk::TRUE,
            max_draw_count: limits.max_draw_indirect_count,
        };
        // D32_SFLOAT_S8_UINT first: the same 32-bit float depth as the single-sample path.
        let depth_stencil_formats = [
            vk::Format::D32_SFLOAT_S8_UINT,
            vk::Format::D24_UNORM_S8_UINT,
        ]
        .into_iter()
        .filter_map(|format| {
            // SAFETY: as above.
            let features =
                unsafe { instance.get_physical_device_format_properties(physical_device, format) }
                    .optimal_tiling_features;
            if !features.contains(vk::FormatFeatureFlags::DEPTH_STENCIL_ATTACHMENT) {
                return None;
            }
            // SAFETY: as above.
            let properties = unsafe {
                instance.get_physical_device_image_format_properties(
                    physical_device,
                    format,
                    vk::ImageType::TYPE_2D,
                    vk::ImageTiling::OPTIMAL,
                    vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
                        | vk::ImageUsageFlags::INPUT_ATTACHMENT
                        | vk::ImageUsageFlags::TRANSIENT_ATTACHMENT,
                    vk::ImageCreateFlags::empty(),
                )
            }
            .ok()?;
            Some((format, properties.sample_counts))
        })
        .collect();
        let allocator =
            gpu_allocator::vulkan::Allocator::new(&gpu_allocator::vulkan::AllocatorCreateDesc {
                instance: instance.clone(),
                device: device.clone(),
                physical_device,
                debug_settings: Default::default(),
                buffer_device_address: false,
                allocation_sizes: Default::default(),
            })
            .inspect_err(|error| {
                bevy::log::error!("bevy_tile_deferred: cannot create a memory allocator: {error}")
            })
            .ok()?;
        let live = Arc::<LiveObjects>::default();
        // SAFETY: `device` is wgpu's live device (kept alive by `render_device`); the create
        // info has no initial data. The cache is destroyed in `drop`, before the device goes.
        let pipeline_cache = unsafe {
            device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None)
        }
        .inspect(|_| LiveObjects::created(&live.other))
        .unwrap_or_else(|error| {
            bevy::log::debug!(
                "bevy_tile_deferred: no pipeline cache ({error}): pipelines built again are \
                 compiled again"
            );
            vk::PipelineCache::null()
        });
        Some(Self {
            allocator: ManuallyDrop::new(Mutex::new(allocator)),
            leak_memory: false,
            render_device: render_device.clone(),
            device,
            memory_properties,
            limits,
            timestamp_valid_bits,
            depth_stencil_formats,
            live,
            descriptor_sets: Mutex::default(),
            faults: Default::default(),
            pipeline_cache,
            indirect,
        })
    }

    /// The preferred depth-stencil format that can be a multisampled attachment at every
    /// sample count of `sample_counts` (a `VkSampleCountFlags` mask).
    pub fn msaa_depth_stencil_format(&self, sample_counts: u32) -> Option<vk::Format> {
        let wanted = vk::SampleCountFlags::from_raw(sample_counts);
        self.depth_stencil_formats
            .iter()
            .find(|(_, counts)| counts.contains(wanted))
            .map(|(format, _)| *format)
    }

    /// Waits until `done` is set (a [`Graveyard`] flag: the GPU finished the submissions it
    /// was registered after), at most `timeout`; whether it was. It polls wgpu's device
    /// without blocking (wgpu runs the flag's callback in a poll), so it waits for that work
    /// only, not for whatever was submitted after it, and never on a queue behind wgpu's back.
    pub fn wait_for(&self, done: &AtomicBool, timeout: std::time::Duration) -> bool {
        let started = std::time::Instant::now();
        let finished = self.poll_until(done, timeout);
        // Shutdown time is measured (tests/gpu/clean_exit.rs): how much of it is the GPU
        // finishing the crate's last frame, which wgpu would wait for too.
        bevy::log::debug!(
            "bevy_tile_deferred: waited for the GPU: teardown_wait_ms={}",
            started.elapsed().as_millis()
        );
        finished
    }

    /// Polls wgpu's device without blocking until `done` is set, at most `timeout`; whether it
    /// was.
    pub fn poll_until(&self, done: &AtomicBool, timeout: std::time::Duration) -> bool {
        let started = std::time::Instant::now();
        loop {
            if done.load(Ordering::Acquire) {
                break true;
            }
            if started.elapsed() >= timeout {
                break false;
            }
            if let Err(error) = self.render_device.wgpu_device().poll(wgpu::PollType::Poll) {
                // A lost device runs nothing more: the flag says whether the work had finished.
                bevy::log::debug!("bevy_tile_deferred: polling the device: {error}");
                break done.load(Ordering::Acquire);
            }
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
    }
}

impl Drop for VulkanContext {
    fn drop(&mut self) {
        if self.pipeline_cache != vk::PipelineCache::null() {
            // SAFETY: created by this device, which is still alive (`render_device` is dropped
            // after this). `&mut self`: no pipeline is being created with it. The GPU never
            // reads a pipeline cache, so this is sound even where the crate's last frame did not
            // finish and its other objects are leaked.
            unsafe {
                self.device
                    .destroy_pipeline_cache(self.pipeline_cache, None)
            };
            LiveObjects::destroyed(&self.live.other);
        }
        if !self.leak_memory {
            // SAFETY: dropped once, here, and never used after (the context is going).
            unsafe { ManuallyDrop::drop(&mut self.allocator) };
        }
    }
}

/// Something the GPU may still be using, to destroy once it is done.
pub(crate) type DeadObject = Box<dyn FnOnce(&VulkanContext) + Send + Sync>;

/// Destroys retired objects once the GPU has finished every submission that may use them.
///
/// Objects retired during a frame are sealed after that frame's submission
/// ([`Graveyard::seal_after_submit`]) with wgpu's `on_submitted_work_done`, whose callback fires
/// during a later device poll; [`Graveyard::collect`] then destroys them.
#[derive(Default)]
pub(crate) struct Graveyard {
    unsealed: Vec<DeadObject>,
    sealed: Vec<(Arc<AtomicBool>, Vec<DeadObject>)>,
    /// Set once the GPU has finished the last frame's submissions (the crate's command
    /// buffers go with Bevy's): what teardown waits for.
    last_frame_done: Option<Arc<AtomicBool>>,
}

impl Graveyard {
    /// Queues an object for destruction once the GPU is done with this frame.
    pub fn retire(&mut self, object: DeadObject) {
        self.unsealed.push(object);
    }

    /// Call after the frame's command buffers were submitted.
    pub fn seal_after_submit(&mut self, queue: &RenderQueue) -> Arc<AtomicBool> {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        queue.on_submitted_work_done(move || flag.store(true, Ordering::Release));
        if !self.unsealed.is_empty() {
            self.sealed
                .push((done.clone(), std::mem::take(&mut self.unsealed)));
        }
        self.last_frame_done = Some(done.clone());
        done
    }

    /// Destroys everything whose submissions have completed.
    pub fn collect(&mut self, context: &VulkanContext) {
        let mut still_pending = Vec::new();
        for (done, objects) in self.sealed.drain(..) {
            if done.load(Ordering::Acquire) {
                objects.into_iter().for_each(|destroy| destroy(context));
            } else {
                still_pending.push((done, objects));
            }
        }
        self.sealed = still_pending;
    }

    /// Waits, at most `timeout`, until the GPU has finished every frame the crate recorded
    /// (device teardown); whether it has (always, when nothing was ever submitted).
    pub fn wait_for_submissions(&self, context: &VulkanContext, timeout: Duration) -> bool {
        self.last_frame_done
            .as_ref()
            .is_none_or(|done| context.wait_for(done, timeout))
    }

    /// Destroys everything (device teardown, once [`Graveyard::wait_for_submissions`] said
    /// the GPU is done).
    pub fn destroy_all(&mut self, context: &VulkanContext) {
        for (_, objects) in self.sealed.drain(..) {
            objects.into_iter().for_each(|destroy| destroy(context));
        }
        self.unsealed.drain(..).for_each(|destroy| destroy(context));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    #[test]
    fn snapshot_counts_every_kind_and_totals_objects_without_sets() {
        let live = LiveObjects::default();
        LiveObjects::created(&live.images);
        LiveObjects::created(&live.image_views);
        LiveObjects::created(&live.image_views);
        LiveObjects::created(&live.descriptor_pools);
        LiveObjects::add(&live.descriptor_sets, 3);
        LiveObjects::add(&live.gpu_allocated_bytes, 4096);
        LiveObjects::add(&live.gpu_lazy_bytes, 1024);
        live.gpu_pooled_block_bytes
            .store(1 << 20, Ordering::Relaxed);
        let counts = live.snapshot();
        assert_eq!(counts.images, 1);
        assert_eq!(counts.image_views, 2);
        assert_eq!(counts.descriptor_pools, 1);
        assert_eq!(counts.descriptor_sets, 3);
        assert_eq!(counts.gpu_allocated_bytes, 4096);
        assert_eq!(counts.gpu_reserved_bytes, (1 << 20) + 1024);
        // Sets are freed with their pool: not objects of their own in the total.
        assert_eq!(counts.vulkan_objects(), 4);
        assert_eq!(live.total(), 4);
        LiveObjects::destroyed(&live.image_views);
        assert_eq!(live.total(), 3);
    }

    #[test]
    fn growth_names_only_what_grew() {
        let before = ResourceCounts {
            images: 4,
            descriptor_sets: 6,
            gpu_allocated_bytes: 1000,
            ..Default::default()
        };
        assert!(before.growth_since(&before).is_empty());
        let shrunk = ResourceCounts {
            images: 3,
            ..before
        };
        assert!(shrunk.growth_since(&before).is_empty());
        let grown = ResourceCounts {
            descriptor_sets: 7,
            gpu_allocated_bytes: 2000,
            ..shrunk
        };
        assert_eq!(
            grown.growth_since(&before),
            vec![("descriptor sets", 6, 7), ("GPU bytes", 1000, 2000)]
        );
    }

    #[test]
    fn ledger_releases_a_pools_remaining_sets() {
        let (a, b) = (
            vk::DescriptorPool::from_raw(1),
            vk::DescriptorPool::from_raw(2),
        );
        let mut ledger = DescriptorSetLedger::default();
        ledger.allocated(a, 3);
        ledger.allocated(b, 1);
        ledger.allocated(a, 2);
        ledger.freed(a, 1);
        assert_eq!(ledger.pool_released(a), 4, "5 allocated, 1 freed");
        assert_eq!(ledger.pool_released(a), 0, "already released");
        ledger.freed(b, 1);
        assert_eq!(ledger.pool_released(b), 0);
        assert_eq!(
            ledger.pool_released(vk::DescriptorPool::from_raw(3)),
            0,
            "a pool without sets"
        );
    }
}
