//! The material cache: each drawn material's uniform buffer and descriptor set (by
//! [`MaterialSetKey`], material and lightmap), and the descriptor pools the sets come from,
//! grown a pool at a time.

use super::keys::MaterialSetKey;
use crate::vulkan::{Graveyard, VulkanContext, faults::FaultPoint, memory::DeviceBuffer};
use ash::vk;
use bevy::platform::collections::HashMap;

/// Sets allocated from one material pool before another is added.
const SETS_PER_POOL: u32 = 64;

/// A material's uniform buffer and descriptor set, valid for one material generation and one
/// set of texture views.
pub(crate) struct MaterialResources {
    pub generation: u64,
    /// The five material textures', then the lightmap's.
    pub texture_views: [vk::ImageView; 6],
    /// The wgpu views behind `texture_views`, held as long as the descriptor set can be used:
    /// wgpu would destroy a dropped view without knowing the set refers to it.
    pub _texture_keep_alive: Vec<bevy::render::render_resource::TextureView>,
    pub buffer: DeviceBuffer,
    pub set: vk::DescriptorSet,
    pub pool: vk::DescriptorPool,
    pub last_used: u64,
}

/// The materials' sets and the pools they are allocated from.
#[derive(Default)]
pub(crate) struct MaterialSets {
    pub(crate) by_key: HashMap<MaterialSetKey, MaterialResources>,
    pools: Vec<vk::DescriptorPool>,
}

impl MaterialSets {
    /// Allocates a set of `layout`, adding a pool when the current ones are full.
    pub fn allocate(
        &mut self,
        context: &VulkanContext,
        layout: vk::DescriptorSetLayout,
    ) -> Result<(vk::DescriptorPool, vk::DescriptorSet), vk::Result> {
        let layouts = [layout];
        let allocate = |pool| {
            // Test hook: `TileFault::MaterialPoolsExhausted` fills every pool, new ones too.
            if context.faults.strike(FaultPoint::MaterialSetAllocation) {
                return Err(vk::Result::ERROR_OUT_OF_POOL_MEMORY);
            }
            context
                .allocate_descriptor_sets(pool, &layouts)
                .map(|sets| sets[0])
        };
        for &pool in self.pools.iter().rev() {
            // A full pool answers with an error: try the next one, then a new pool.
            if let Ok(set) = allocate(pool) {
                return Ok((pool, set));
            }
        }
        let sizes = [
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::UNIFORM_BUFFER,
                descriptor_count: SETS_PER_POOL,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
                descriptor_count: SETS_PER_POOL * 6,
            },
        ];
        let pool = context.create_descriptor_pool(
            SETS_PER_POOL,
            &sizes,
            vk::DescriptorPoolCreateFlags::FREE_DESCRIPTOR_SET,
        )?;
        match allocate(pool) {
            Ok(set) => {
                self.pools.push(pool);
                Ok((pool, set))
            }
            Err(error) => {
                // A fresh pool without room for one set never will have: keeping it would
                // add an empty pool at every failed material.
                context.destroy_descriptor_pool(pool);
                Err(error)
            }
        }
    }

    /// Destroys the pools (and with them every set). The GPU must be done with them, and the
    /// materials' buffers retired first.
    pub fn destroy_pools(&mut self, context: &VulkanContext) {
        for pool in self.pools.drain(..) {
            context.destroy_descriptor_pool(pool);
        }
    }
}

/// Queues a material's set and buffer for destruction after the GPU is done, and drops an
/// upload still queued for its buffer (a view that failed kept it): it must not be recorded
/// into the buffer once it is destroyed.
pub(crate) fn retire_material(
    material: MaterialResources,
    graveyard: &mut Graveyard,
    pending_updates: &mut Vec<(vk::Buffer, Vec<u8>)>,
) {
    pending_updates.retain(|(buffer, _)| *buffer != material.buffer.buffer);
    graveyard.retire(Box::new(move |context: &VulkanContext| {
        // The set came from a material pool, created with FREE_DESCRIPTOR_SET, and no command
        // buffer in flight uses it any more.
        context.free_descriptor_sets(material.pool, &[material.set]);
        context.destroy_device_buffer(material.buffer);
    }));
}
