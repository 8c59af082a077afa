//! Images and buffers the crate allocates itself.

use super::{LiveObjects, VulkanContext, faults::VulkanCall};
use ash::vk;
use gpu_allocator::{
    MemoryLocation,
    vulkan::{Allocation, AllocationCreateDesc, AllocationScheme},
};

/// Where an object's memory came from.
pub(crate) enum Memory {
    /// A gpu-allocator sub-allocation.
    Pooled(Allocation),
    /// A dedicated `LAZILY_ALLOCATED` block of `size` bytes: memoryless on tilers, backed only
    /// while a render pass needs it.
    Lazy {
        memory: vk::DeviceMemory,
        size: vk::DeviceSize,
    },
}

/// What an attachment image is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AttachmentImageDesc {
    pub format: vk::Format,
    pub extent: vk::Extent2D,
    pub samples: vk::SampleCountFlags,
    /// Lives only inside one render pass: never loaded, never stored.
    pub transient: bool,
    /// Read as an input attachment.
    pub input: bool,
    /// Read as a sampled texture by a later pass (only when passes were not merged).
    pub sampled: bool,
}

/// An attachment image with its view and memory.
pub(crate) struct AttachmentImage {
    pub image: vk::Image,
    /// Every aspect: the framebuffer's view.
    pub view: vk::ImageView,
    /// What input-attachment descriptors read: the depth aspect alone of a depth-stencil image
    /// (a descriptor's view has one aspect), `view` otherwise.
    pub input_view: vk::ImageView,
    pub desc: AttachmentImageDesc,
    /// The usage the image was created with.
    pub usage: vk::ImageUsageFlags,
    /// True when the memory is lazily allocated (memoryless on tile-based GPUs).
    pub lazily_allocated: bool,
    memory: Memory,
}

/// A buffer from gpu-allocator: device-local ones filled by transfer commands (`vkCmdCopyBuffer`
/// from a staging buffer), host-visible staging and readback ones mapped for their whole life.
pub(crate) struct DeviceBuffer {
    pub buffer: vk::Buffer,
    pub size: vk::DeviceSize,
    memory: Allocation,
}

impl DeviceBuffer {
    /// The buffer's bytes, for a buffer made host-visible ([`VulkanContext::create_upload_buffer`]);
    /// `None` for device-local memory.
    pub(crate) fn mapped_mut(&mut self) -> Option<&mut [u8]> {
        self.memory.mapped_slice_mut()
    }
}

fn is_depth(format: vk::Format) -> bool {
    matches!(
        format,
        vk::Format::D16_UNORM
            | vk::Format::D32_SFLOAT
            | vk::Format::D24_UNORM_S8_UINT
            | vk::Format::D32_SFLOAT_S8_UINT
            | vk::Format::X8_D24_UNORM_PACK32
    )
}

pub(crate) fn aspect_of(format: vk::Format) -> vk::ImageAspectFlags {
    match format {
        vk::Format::D24_UNORM_S8_UINT | vk::Format::D32_SFLOAT_S8_UINT => {
            vk::ImageAspectFlags::DEPTH | vk::ImageAspectFlags::STENCIL
        }
        f if is_depth(f) => vk::ImageAspectFlags::DEPTH,
        _ => vk::ImageAspectFlags::COLOR,
    }
}

/// The memory type a transient attachment image is allocated from: one the image accepts
/// (`image_type_bits`, from its memory requirements) that is `LAZILY_ALLOCATED`, device-local
/// preferred, never `PROTECTED` (an unprotected image cannot be bound to protected memory).
/// `None` when the device has no such type (desktop GPUs, software rasterisers, some older
/// Adreno drivers): the image then takes ordinary device-local memory.
///
/// On tile-based GPUs (Mali, Adreno, PowerVR) such memory is backed only while a render
/// pass needs it, and a transient attachment's contents never leave tile memory: the image
/// costs no DRAM at all.
pub(crate) fn lazily_allocated_memory_type(
    properties: &vk::PhysicalDeviceMemoryProperties,
    image_type_bits: u32,
) -> Option<u32> {
    let count = (properties.memory_type_count as usize).min(vk::MAX_MEMORY_TYPES);
    let candidates = || {
        properties.memory_types[..count]
            .iter()
            .enumerate()
            .filter(move |(i, ty)| {
                image_type_bits & (1 << i) != 0
                    && ty
                        .property_flags
                        .contains(vk::MemoryPropertyFlags::LAZILY_ALLOCATED)
                    && !ty
                        .property_flags
                        .contains(vk::MemoryPropertyFlags::PROTECTED)
            })
    };
    candidates()
        .find(|(_, ty)| {
            ty.property_flags
                .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
        })
        .or_else(|| candidates().next())
        .map(|(i, _)| i as u32)
}

/// The usage of an attachment image: its role, and transient, input and sampled as declared.
fn attachment_usage(desc: &AttachmentImageDesc) -> vk::ImageUsageFlags {
    let mut usage = if is_depth(desc.format) {
        vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
    } else {
        vk::ImageUsageFlags::COLOR_ATTACHMENT
    };
    if desc.transient {
        usage |= vk::ImageUsageFlags::TRANSIENT_ATTACHMENT;
    }
    if desc.input {
        usage |= vk::ImageUsageFlags::INPUT_ATTACHMENT;
    }
    if desc.sampled {
        usage |= vk::ImageUsageFlags::SAMPLED;
    }
    usage
}

impl VulkanContext {
    /// Creates an attachment image; transient images go to lazily allocated memory when the
    /// device has it (device-local otherwise).
    pub fn create_attachment_image(
        &self,
        name: &str,
        desc: AttachmentImageDesc,
    ) -> Result<AttachmentImage, vk::Result> {
        let usage = attachment_usage(&desc);
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(desc.format)
            .extent(vk::Extent3D {
                width: desc.extent.width.max(1),
                height: desc.extent.height.max(1),
                depth: 1,
            })
            .mip_levels(1)
            .array_layers(1)
            .samples(desc.samples)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        self.faults.fail(VulkanCall::Image)?;
        // SAFETY: valid create info for this device; the image is destroyed in
        // `destroy_attachment_image`.
        let image = unsafe { self.device.create_image(&info, None) }?;
        LiveObjects::created(&self.live.images);
        // SAFETY: the image was just created on this device.
        let requirements = unsafe { self.device.get_image_memory_requirements(image) };
        if self
            .faults
            .strike(super::faults::FaultPoint::AttachmentAllocation(name))
        {
            self.destroy_raw_image(image);
            return Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        }

        let lazy = self.allocate_lazily(name, &desc, requirements);
        let memory = match lazy {
            Some(memory) => memory,
            None => {
                match self.allocate_pooled(name, requirements, MemoryLocation::GpuOnly, false) {
                    Ok(allocation) => Memory::Pooled(allocation),
                    Err(error) => {
                        self.destroy_raw_image(image);
                        return Err(error);
                    }
                }
            }
        };
        LiveObjects::created(&self.live.allocations);
        let (memory_handle, offset) = match &memory {
            // SAFETY: the allocation is alive; its block outlives the image binding.
            Memory::Pooled(allocation) => (unsafe { allocation.memory() }, allocation.offset()),
            Memory::Lazy { memory, .. } => (*memory, 0),
        };
        let lazily_allocated = matches!(memory, Memory::Lazy { .. });
        let mut attachment = AttachmentImage {
            image,
            view: vk::ImageView::null(),
            input_view: vk::ImageView::null(),
            desc,
            usage,
            lazily_allocated,
            memory,
        };
        let bound = self.faults.fail(VulkanCall::BindMemory).and_then(|()| {
            // SAFETY: the memory satisfies the image's requirements (type, size, alignment).
            unsafe { self.device.bind_image_memory(image, memory_handle, offset) }
        });
        if let Err(error) = bound {
            self.destroy_attachment_image(attachment);
            return Err(error);
        }
        if let Err(error) = self.create_attachment_views(&mut attachment) {
            self.destroy_attachment_image(attachment);
            return Err(error);
        }
        Ok(attachment)
    }

    /// Lazily allocated (memoryless) memory for a transient attachment, where the device has
    /// it and it can be allocated; `None` falls back to device-local memory.
    fn allocate_lazily(
        &self,
        name: &str,
        desc: &AttachmentImageDesc,
        requirements: vk::MemoryRequirements,
    ) -> Option<Memory> {
        let lazy_type = desc
            .transient
            .then(|| {
                lazily_allocated_memory_type(&self.memory_properties, requirements.memory_type_bits)
                    .or_else(|| self.pretended_lazy_memory_type(requirements.memory_type_bits))
            })
            .flatten();
        lazy_type.and_then(|memory_type_index| {
            let allocate = vk::MemoryAllocateInfo::default()
                .allocation_size(requirements.size)
                .memory_type_index(memory_type_index);
            let allocated = self.faults.fail(VulkanCall::LazyMemory).and_then(|()| {
                // SAFETY: the type index comes from this device's memory properties and the
                // image's requirements; freed in `destroy_attachment_image`.
                unsafe { self.device.allocate_memory(&allocate, None) }
            });
            match allocated {
                Ok(memory) => {
                    let size = requirements.size as i64;
                    LiveObjects::add(&self.live.gpu_allocated_bytes, size);
                    LiveObjects::add(&self.live.gpu_lazy_bytes, size);
                    Some(Memory::Lazy {
                        memory,
                        size: requirements.size,
                    })
                }
                Err(error) => {
                    // A lazily allocated heap is small on some drivers; ordinary device memory
                    // renders the same image, only without the memoryless saving.
                    bevy::log::warn!(
                        "bevy_tile_deferred: no lazily allocated memory for {name} ({error}); \
                         using device-local memory"
                    );
                    None
                }
            }
        })
    }

    /// Test hook (`TileFaultInjection::pretend_lazily_allocated_memory`): the first device-local
    /// type of `type_bits`, standing in for a `LAZILY_ALLOCATED` one on a device without it.
    fn pretended_lazy_memory_type(&self, type_bits: u32) -> Option<u32> {
        if !self.faults.pretends_lazy_memory() {
            return None;
        }
        let count = self.memory_properties.memory_type_count as usize;
        self.memory_properties.memory_types[..count]
            .iter()
            .enumerate()
            .find(|(index, memory_type)| {
                type_bits & (1 << index) != 0
                    && memory_type
                        .property_flags
                        .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
            })
            .map(|(index, _)| index as u32)
    }

    /// The attachment's view, and for a depth-stencil input attachment a depth-only view (input
    /// attachments read one aspect). On an error the caller destroys the attachment with the
    /// views made so far.
    fn create_attachment_views(&self, attachment: &mut AttachmentImage) -> Result<(), vk::Result> {
        let view_info = |aspect_mask| {
            vk::ImageViewCreateInfo::default()
                .image(attachment.image)
                .view_type(vk::ImageViewType::TYPE_2D)
                .format(attachment.desc.format)
                .subresource_range(vk::ImageSubresourceRange {
                    aspect_mask,
                    base_mip_level: 0,
                    level_count: 1,
                    base_array_layer: 0,
                    layer_count: 1,
                })
        };
        let aspect = aspect_of(attachment.desc.format);
        self.faults.fail(VulkanCall::ImageView)?;
        // SAFETY: the image is bound to memory and the view matches its format and usage.
        let view = unsafe { self.device.create_image_view(&view_info(aspect), None) }?;
        attachment.view = view;
        attachment.input_view = view;
        LiveObjects::created(&self.live.image_views);
        if attachment.desc.input && aspect.contains(vk::ImageAspectFlags::STENCIL) {
            let depth_only = view_info(vk::ImageAspectFlags::DEPTH);
            self.faults.fail(VulkanCall::ImageView)?;
            // SAFETY: as above; a depth-aspect view of a depth-stencil image.
            attachment.input_view = unsafe { self.device.create_image_view(&depth_only, None) }?;
            LiveObjects::created(&self.live.image_views);
        }
        Ok(())
    }

    fn destroy_raw_image(&self, image: vk::Image) {
        // SAFETY: the caller owns the image and the GPU no longer uses it.
        unsafe { self.device.destroy_image(image, None) };
        LiveObjects::destroyed(&self.live.images);
    }

    /// Destroys an attachment image, its view and memory. The GPU must be done with it.
    pub fn destroy_attachment_image(&self, attachment: AttachmentImage) {
        if attachment.input_view != attachment.view {
            // SAFETY: as below.
            unsafe { self.device.destroy_image_view(attachment.input_view, None) };
            LiveObjects::destroyed(&self.live.image_views);
        }
        if attachment.view != vk::ImageView::null() {
            // SAFETY: the view belongs to this device and is no longer used by the GPU.
            unsafe { self.device.destroy_image_view(attachment.view, None) };
            LiveObjects::destroyed(&self.live.image_views);
        }
        self.destroy_raw_image(attachment.image);
        self.free_memory(attachment.memory);
    }

    fn free_memory(&self, memory: Memory) {
        match memory {
            Memory::Pooled(allocation) => {
                let size = allocation.size() as i64;
                let mut allocator = self.allocator.lock().unwrap_or_else(|e| e.into_inner());
                match allocator.free(allocation) {
                    Ok(()) => LiveObjects::add(&self.live.gpu_allocated_bytes, -size),
                    Err(error) => {
                        bevy::log::error!("bevy_tile_deferred: freeing memory failed: {error}")
                    }
                }
                self.record_pooled_blocks(&allocator);
            }
            Memory::Lazy { memory, size } => {
                // SAFETY: the block was allocated by this device and nothing bound to it is
                // used.
                unsafe { self.device.free_memory(memory, None) };
                LiveObjects::add(&self.live.gpu_allocated_bytes, -(size as i64));
                LiveObjects::add(&self.live.gpu_lazy_bytes, -(size as i64));
            }
        }
        LiveObjects::destroyed(&self.live.allocations);
    }

    /// Publishes the bytes of the blocks gpu-allocator holds (it frees and creates blocks only
    /// inside `allocate` and `free`, under the lock the caller holds).
    fn record_pooled_blocks(&self, allocator: &gpu_allocator::vulkan::Allocator) {
        self.live.gpu_pooled_block_bytes.store(
            allocator.capacity() as i64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    fn allocate_pooled(
        &self,
        name: &str,
        requirements: vk::MemoryRequirements,
        location: MemoryLocation,
        linear: bool,
    ) -> Result<Allocation, vk::Result> {
        let mut allocator = self.allocator.lock().unwrap_or_else(|e| e.into_inner());
        let allocation = allocator
            .allocate(&AllocationCreateDesc {
                name,
                requirements,
                location,
                linear,
                allocation_scheme: AllocationScheme::GpuAllocatorManaged,
            })
            .map_err(|error| {
                bevy::log::error!("bevy_tile_deferred: cannot allocate {name}: {error}");
                vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
            })?;
        LiveObjects::add(&self.live.gpu_allocated_bytes, allocation.size() as i64);
        self.record_pooled_blocks(&allocator);
        Ok(allocation)
    }

    /// Creates a device-local buffer that command buffers fill with transfer commands.
    pub fn create_device_buffer(
        &self,
        name: &str,
        size: vk::DeviceSize,
        usage: vk::BufferUsageFlags,
    ) -> Result<DeviceBuffer, vk::Result> {
        self.create_buffer_in(name, size, usage, MemoryLocation::GpuOnly)
    }

    /// Creates a small buffer the GPU writes and the CPU reads, mapped for its whole life
    /// ([`DeviceBuffer::read_u32s`]).
    pub fn create_readback_buffer(
        &self,
        name: &str,
        size: vk::DeviceSize,
        usage: vk::BufferUsageFlags,
    ) -> Result<DeviceBuffer, vk::Result> {
        self.create_buffer_in(name, size, usage, MemoryLocation::GpuToCpu)
    }

    /// Creates a buffer the CPU writes through a mapping held for its whole life and command
    /// buffers copy from: host-visible and host-coherent (gpu-allocator's `CpuToGpu` requires
    /// coherent memory, so writes need no flush; the submission makes them visible).
    pub fn create_upload_buffer(
        &self,
        name: &str,
        size: vk::DeviceSize,
        usage: vk::BufferUsageFlags,
    ) -> Result<DeviceBuffer, vk::Result> {
        self.create_buffer_in(name, size, usage, MemoryLocation::CpuToGpu)
    }

    fn create_buffer_in(
        &self,
        name: &str,
        size: vk::DeviceSize,
        usage: vk::BufferUsageFlags,
        location: MemoryLocation,
    ) -> Result<DeviceBuffer, vk::Result> {
        let size = size.max(16).next_multiple_of(16);
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage | vk::BufferUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        self.faults.fail(VulkanCall::Buffer)?;
        // SAFETY: valid create info; destroyed in `destroy_device_buffer`.
        let buffer = unsafe { self.device.create_buffer(&info, None) }?;
        LiveObjects::created(&self.live.buffers);
        // SAFETY: the buffer was just created on this device.
        let requirements = unsafe { self.device.get_buffer_memory_requirements(buffer) };
        let memory = match self.allocate_pooled(name, requirements, location, true) {
            Ok(memory) => memory,
            Err(error) => {
                // SAFETY: never used.
                unsafe { self.device.destroy_buffer(buffer, None) };
                LiveObjects::destroyed(&self.live.buffers);
                return Err(error);
            }
        };
        LiveObjects::created(&self.live.allocations);
        let bound = self.faults.fail(VulkanCall::BindMemory).and_then(|()| {
            // SAFETY: the allocation satisfies the buffer's requirements.
            unsafe {
                self.device
                    .bind_buffer_memory(buffer, memory.memory(), memory.offset())
            }
        });
        let device_buffer = DeviceBuffer {
            buffer,
            size,
            memory,
        };
        match bound {
            Ok(()) => Ok(device_buffer),
            Err(error) => {
                self.destroy_device_buffer(device_buffer);
                Err(error)
            }
        }
    }

    /// The `u32`s of a readback buffer from `first` on (`None` for a buffer the CPU cannot see,
    /// or past its end). The GPU must be done writing them, and a barrier must have made the
    /// writes available to the host.
    pub fn read_u32s(&self, buffer: &DeviceBuffer, first: usize, count: usize) -> Option<Vec<u32>> {
        let allocation = &buffer.memory;
        let flags = allocation.memory_properties();
        if !flags.contains(vk::MemoryPropertyFlags::HOST_COHERENT) {
            let atom = self.limits.non_coherent_atom_size.max(1);
            // SAFETY: the handle is only passed to the invalidate below, while the allocation
            // (and so its block) is alive.
            let memory = unsafe { allocation.memory() };
            let range = vk::MappedMemoryRange::default()
                .memory(memory)
                .offset(allocation.offset() / atom * atom)
                .size(vk::WHOLE_SIZE);
            // SAFETY: the memory is mapped (gpu-allocator maps host-visible blocks) and the
            // range starts at an atom boundary at or before the allocation.
            unsafe { self.device.invalidate_mapped_memory_ranges(&[range]) }.ok()?;
        }
        let bytes = allocation.mapped_slice()?;
        let words = bytes.get(first * 4..(first + count) * 4)?;
        Some(
            words
                .chunks_exact(4)
                .map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
                .collect(),
        )
    }

    /// Destroys a buffer and frees its memory. The GPU must be done with it.
    pub fn destroy_device_buffer(&self, buffer: DeviceBuffer) {
        // SAFETY: the buffer belongs to this device and is no longer used.
        unsafe { self.device.destroy_buffer(buffer.buffer, None) };
        LiveObjects::destroyed(&self.live.buffers);
        self.free_memory(Memory::Pooled(buffer.memory));
    }
}

#[cfg(test)]
mod tests {
    //! The memory-type choice for transient attachments, on memory layouts modelled on what
    //! vulkan.gpuinfo.org reports for phone GPUs (types in the drivers' order).

    use super::lazily_allocated_memory_type;
    use ash::vk;

    type Flags = vk::MemoryPropertyFlags;
    const LOCAL: Flags = Flags::DEVICE_LOCAL;
    const LAZY: Flags = Flags::LAZILY_ALLOCATED;
    const HOST: Flags =
        Flags::from_raw(Flags::HOST_VISIBLE.as_raw() | Flags::HOST_COHERENT.as_raw());
    const CACHED: Flags = Flags::HOST_CACHED;
    const PROTECTED: Flags = Flags::PROTECTED;

    fn properties(types: &[Flags]) -> vk::PhysicalDeviceMemoryProperties {
        let mut properties = vk::PhysicalDeviceMemoryProperties {
            memory_type_count: types.len() as u32,
            memory_heap_count: 1,
            ..Default::default()
        };
        for (slot, flags) in properties.memory_types.iter_mut().zip(types) {
            *slot = vk::MemoryType {
                property_flags: *flags,
                heap_index: 0,
            };
        }
        properties.memory_heaps[0] = vk::MemoryHeap {
            size: 8 << 30,
            flags: vk::MemoryHeapFlags::DEVICE_LOCAL,
        };
        properties
    }

    /// Mali (Valhall, e.g. G78): one unified heap; the lazily allocated type after the
    /// host-visible ones, and protected variants after it.
    fn mali() -> vk::PhysicalDeviceMemoryProperties {
        properties(&[
            LOCAL | HOST,
            LOCAL | HOST | CACHED,
            LOCAL | Flags::HOST_VISIBLE | CACHED,
            LOCAL | LAZY,
            LOCAL | PROTECTED,
            LOCAL | LAZY | PROTECTED,
        ])
    }

    /// Adreno 6xx/7xx on a recent driver: two plain device-local types, three host-visible ones,
    /// the lazily allocated type last.
    fn adreno() -> vk::PhysicalDeviceMemoryProperties {
        properties(&[
            LOCAL,
            LOCAL,
            LOCAL | HOST,
            LOCAL | Flags::HOST_VISIBLE | CACHED,
            LOCAL | HOST | CACHED,
            LOCAL | LAZY,
        ])
    }

    /// Adreno on an older driver that exposes no lazily allocated type.
    fn adreno_without_lazy() -> vk::PhysicalDeviceMemoryProperties {
        let mut properties = adreno();
        properties.memory_type_count = 5;
        properties
    }

    /// A discrete desktop GPU (and, with one type, lavapipe): no lazily allocated memory.
    fn desktop() -> vk::PhysicalDeviceMemoryProperties {
        properties(&[Flags::empty(), LOCAL, HOST, HOST | CACHED, LOCAL | HOST])
    }

    /// What a transient attachment's `memoryTypeBits` allows: every unprotected type.
    fn unprotected_bits(properties: &vk::PhysicalDeviceMemoryProperties) -> u32 {
        (0..properties.memory_type_count)
            .filter(|i| {
                !properties.memory_types[*i as usize]
                    .property_flags
                    .contains(PROTECTED)
            })
            .fold(0, |bits, i| bits | 1 << i)
    }

    #[test]
    fn mali_transient_attachments_take_the_unprotected_lazily_allocated_type() {
        let mali = mali();
        assert_eq!(
            lazily_allocated_memory_type(&mali, unprotected_bits(&mali)),
            Some(3)
        );
        // Even if an image allowed every type, the protected lazy type is never chosen.
        assert_eq!(lazily_allocated_memory_type(&mali, u32::MAX), Some(3));
    }

    #[test]
    fn adreno_transient_attachments_take_the_lazily_allocated_type() {
        let adreno = adreno();
        assert_eq!(
            lazily_allocated_memory_type(&adreno, unprotected_bits(&adreno)),
            Some(5)
        );
    }

    #[test]
    fn without_lazily_allocated_memory_transient_attachments_fall_back() {
        for (name, properties) in [
            ("adreno, older driver", adreno_without_lazy()),
            ("desktop", desktop()),
            ("lavapipe", self::properties(&[LOCAL | HOST | CACHED])),
        ] {
            assert_eq!(
                lazily_allocated_memory_type(&properties, u32::MAX),
                None,
                "{name}"
            );
        }
    }

    #[test]
    fn a_lazy_type_the_image_does_not_accept_is_not_used() {
        // An image created without TRANSIENT_ATTACHMENT is not allowed the lazy type.
        let mali = mali();
        let without_lazy = unprotected_bits(&mali) & !(1 << 3);
        assert_eq!(lazily_allocated_memory_type(&mali, without_lazy), None);
        let adreno = adreno();
        assert_eq!(lazily_allocated_memory_type(&adreno, 0b1_1111), None);
    }

    #[test]
    fn only_protected_lazy_memory_counts_as_none() {
        let properties = properties(&[LOCAL, LOCAL | HOST, LOCAL | LAZY | PROTECTED]);
        assert_eq!(lazily_allocated_memory_type(&properties, u32::MAX), None);
    }

    #[test]
    fn device_local_lazy_memory_is_preferred() {
        let properties = properties(&[LOCAL | HOST, LAZY, LOCAL | LAZY]);
        assert_eq!(lazily_allocated_memory_type(&properties, u32::MAX), Some(2));
        // A lazily allocated type without DEVICE_LOCAL is still better than none.
        assert_eq!(lazily_allocated_memory_type(&properties, 0b011), Some(1));
    }

    #[test]
    fn types_past_the_reported_count_are_ignored() {
        let mut properties = properties(&[LOCAL, LOCAL | HOST]);
        properties.memory_types[2].property_flags = LOCAL | LAZY;
        assert_eq!(lazily_allocated_memory_type(&properties, u32::MAX), None);
        // A corrupt count larger than the array does not read past it.
        properties.memory_type_count = 1000;
        assert_eq!(lazily_allocated_memory_type(&properties, u32::MAX), Some(2));
    }
}
