//! The Vulkan device behind Bevy's `RenderDevice`, and the lifetime of the crate's objects.

use ash::vk;
use bevy::render::renderer::{RenderDevice, RenderQueue};
use std::sync::{
    Arc, Mutex,
    atomic::{AtomicBool, AtomicI64, Ordering},
};
use wgpu::hal::api::Vulkan;

/// How many Vulkan objects the crate has created and not yet destroyed, by kind. Tests read it
/// to prove that resizes, camera despawns and tier switches leak nothing.
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
    /// Pipeline layouts, descriptor set layouts, descriptor pools, samplers, shader modules.
    pub other: AtomicI64,
}

impl LiveObjects {
    /// Total live objects of every kind.
    pub fn total(&self) -> i64 {
        [
            &self.images,
            &self.image_views,
            &self.buffers,
            &self.allocations,
            &self.render_passes,
            &self.framebuffers,
            &self.pipelines,
            &self.other,
        ]
        .iter()
        .map(|count| count.load(Ordering::Relaxed))
        .sum()
    }

    pub(crate) fn created(counter: &AtomicI64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn destroyed(counter: &AtomicI64) {
        counter.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The raw device the crate records on, with what it needs to allocate memory.
pub(crate) struct VulkanContext {
    /// Sub-allocates buffers and non-transient images; dropped (freeing its blocks) before the
    /// device reference below.
    pub allocator: Mutex<gpu_allocator::vulkan::Allocator>,
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
        Some(Self {
            allocator: Mutex::new(allocator),
            render_device: render_device.clone(),
            device,
            memory_properties,
            limits,
            timestamp_valid_bits,
            depth_stencil_formats,
            live: Arc::default(),
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

    /// Waits until the GPU has finished everything submitted so far (through wgpu, so no queue
    /// is touched behind wgpu's back). Used only when objects must go at once (device teardown).
    pub fn wait_idle(&self) {
        let _ = self
            .render_device
            .wgpu_device()
            .poll(wgpu::PollType::wait_indefinitely());
    }

    /// The index of a memory type allowed by `type_bits` that has all of `required`, preferring
    /// one that also has all of `preferred`.
    pub fn memory_type_index(
        &self,
        type_bits: u32,
        required: vk::MemoryPropertyFlags,
        preferred: vk::MemoryPropertyFlags,
    ) -> Option<u32> {
        let types = &self.memory_properties.memory_types
            [..self.memory_properties.memory_type_count as usize];
        let allowed = |(i, ty): &(usize, &vk::MemoryType)| {
            type_bits & (1 << i) != 0 && ty.property_flags.contains(required)
        };
        types
            .iter()
            .enumerate()
            .filter(allowed)
            .find(|(_, ty)| ty.property_flags.contains(preferred))
            .or_else(|| types.iter().enumerate().find(allowed))
            .map(|(i, _)| i as u32)
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
}

impl Graveyard {
    /// Queues an object for destruction once the GPU is done with this frame.
    pub fn retire(&mut self, object: DeadObject) {
        self.unsealed.push(object);
    }

    /// Call after the frame's command buffers were submitted.
    pub fn seal_after_submit(&mut self, queue: &RenderQueue) {
        if self.unsealed.is_empty() {
            return;
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        queue.on_submitted_work_done(move || flag.store(true, Ordering::Release));
        self.sealed.push((done, std::mem::take(&mut self.unsealed)));
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

    /// Waits for the GPU and destroys everything (device teardown).
    pub fn destroy_all(&mut self, context: &VulkanContext) {
        context.wait_idle();
        for (_, objects) in self.sealed.drain(..) {
            objects.into_iter().for_each(|destroy| destroy(context));
        }
        self.unsealed.drain(..).for_each(|destroy| destroy(context));
    }
}
