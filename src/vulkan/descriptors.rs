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
        // SAFETY: valid create info; destroyed through `destroy_descriptor_pool`.
        let pool = unsafe { self.device.create_descriptor_pool(&info, None) }?;
        LiveObjects::created(&self.live.other);
        Ok(pool)
    }

    /// Destroys a descriptor pool and every set allocated from it.
    pub fn destroy_descriptor_pool(&self, pool: vk::DescriptorPool) {
        // SAFETY: created by this device; no command buffer in flight uses its sets.
        unsafe { self.device.destroy_descriptor_pool(pool, None) };
        LiveObjects::destroyed(&self.live.other);
    }
}
