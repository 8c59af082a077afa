//! Descriptor set layouts and descriptor pools.

use super::{LiveObjects, VulkanContext};
use ash::vk;

/// One descriptor (count 1) at `index`, visible to `stages`.
pub(crate) fn binding(
    index: u32,
    ty: vk::DescriptorType,
    stages: vk::ShaderStageFlags,
) -> vk::DescriptorSetLayoutBinding<'static> {
    vk::DescriptorSetLayoutBinding::default()
        .binding(index)
        .descriptor_type(ty)
        .descriptor_count(1)
        .stage_flags(stages)
}

impl VulkanContext {
    /// Creates a descriptor set layout.
    pub fn create_descriptor_set_layout(
        &self,
        bindings: &[vk::DescriptorSetLayoutBinding],
    ) -> Result<vk::DescriptorSetLayout, vk::Result> {
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
        self.faults
            .fail(super::faults::VulkanCall::DescriptorSetLayout)?;
        // SAFETY: valid bindings; destroyed through `destroy_descriptor_set_layout`.
        let layout = unsafe { self.device.create_descriptor_set_layout(&info, None) }?;
        LiveObjects::created(&self.live.other);
        Ok(layout)
    }

    /// Destroys a descriptor set layout. No set or pipeline layout being created may use it.
    pub fn destroy_descriptor_set_layout(&self, layout: vk::DescriptorSetLayout) {
        // SAFETY: created by this device; nothing in flight uses it.
        unsafe { self.device.destroy_descriptor_set_layout(layout, None) };
        LiveObjects::destroyed(&self.live.other);
    }

    /// Creates a descriptor pool.
    pub fn create_descriptor_pool(
        &self,
        max_sets: u32,
        sizes: &[vk::DescriptorPoolSize],
        flags: vk::DescriptorPoolCreateFlags,
    ) -> Result<vk::DescriptorPool, vk::Result> {
        let info = vk::DescriptorPoolCreateInfo::default()
            .flags(flags)
            .max_sets(max_sets)
            .pool_sizes(sizes);
        self.faults
            .fail(super::faults::VulkanCall::DescriptorPool)?;
        // SAFETY: valid create info; destroyed through `destroy_descriptor_pool`.
        let pool = unsafe { self.device.create_descriptor_pool(&info, None) }?;
        LiveObjects::created(&self.live.descriptor_pools);
        Ok(pool)
    }

    /// Destroys a descriptor pool and every set allocated from it.
    pub fn destroy_descriptor_pool(&self, pool: vk::DescriptorPool) {
        // SAFETY: created by this device; no command buffer in flight uses its sets.
        unsafe { self.device.destroy_descriptor_pool(pool, None) };
        LiveObjects::destroyed(&self.live.descriptor_pools);
        let sets = self.descriptor_set_ledger().pool_released(pool);
        LiveObjects::add(&self.live.descriptor_sets, -sets);
    }

    /// Allocates one set per layout from `pool`.
    pub fn allocate_descriptor_sets(
        &self,
        pool: vk::DescriptorPool,
        layouts: &[vk::DescriptorSetLayout],
    ) -> Result<Vec<vk::DescriptorSet>, vk::Result> {
        if self
            .faults
            .strike(super::faults::FaultPoint::DescriptorSetAllocation)
        {
            return Err(vk::Result::ERROR_OUT_OF_POOL_MEMORY);
        }
        let info = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(layouts);
        // SAFETY: the pool and layouts belong to this device; the sets are freed individually
        // (`free_descriptor_sets`) or with their pool.
        let sets = unsafe { self.device.allocate_descriptor_sets(&info) }?;
        let count = sets.len() as i64;
        self.descriptor_set_ledger().allocated(pool, count);
        LiveObjects::add(&self.live.descriptor_sets, count);
        Ok(sets)
    }

    /// Frees sets of a pool created with `FREE_DESCRIPTOR_SET`. No command buffer in flight may
    /// use them.
    pub fn free_descriptor_sets(&self, pool: vk::DescriptorPool, sets: &[vk::DescriptorSet]) {
        // SAFETY: the sets came from this pool, created with FREE_DESCRIPTOR_SET (the caller's
        // promise), and the GPU is done with them.
        if let Err(error) = unsafe { self.device.free_descriptor_sets(pool, sets) } {
            bevy::log::error!("bevy_tile_deferred: freeing descriptor sets failed: {error}");
            return;
        }
        let count = sets.len() as i64;
        self.descriptor_set_ledger().freed(pool, count);
        LiveObjects::add(&self.live.descriptor_sets, -count);
    }

    fn descriptor_set_ledger(
        &self,
    ) -> std::sync::MutexGuard<'_, super::context::DescriptorSetLedger> {
        self.descriptor_sets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
