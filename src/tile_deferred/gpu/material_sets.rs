//! The material cache: each drawn material's uniform buffer and descriptor set (by
//! [`MaterialSetKey`], material and lightmap), and the descriptor pools the sets come from,
//! grown a pool at a time; and the `ui` subpass's image sets, from the same pools.

use super::keys::MaterialSetKey;
use crate::vulkan::{Graveyard, VulkanContext, faults::FaultPoint, memory::DeviceBuffer};
use ash::vk;
use bevy::{platform::collections::HashMap, render::render_resource::TextureView};

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
    /// The `ui` subpass's image sets, by (image view, sampler) (`ui::ui_image_set`): one
    /// combined image sampler each, from the same pools.
    pub(crate) ui_images: HashMap<(vk::ImageView, vk::Sampler), UiImageSet>,
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
        // The UI image sets go with their pools; their held views are dropped.
        self.ui_images.clear();
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
    pending_updates: &mut Vec<crate::tile_deferred::gpu::upload::BufferUpload>,
) {
    pending_updates.retain(|upload| upload.buffer != material.buffer.buffer);
    graveyard.retire(Box::new(move |context: &VulkanContext| {
        // The set came from a material pool, created with FREE_DESCRIPTOR_SET, and no command
        // buffer in flight uses it any more.
        context.free_descriptor_sets(material.pool, &[material.set]);
        context.destroy_device_buffer(material.buffer);
    }));
}

/// The descriptor set of one UI image (a font atlas, an `ImageNode`'s texture, Bevy's white
/// default image) with one sampler, kept while batches use it.
pub(crate) struct UiImageSet {
    pub set: vk::DescriptorSet,
    pub pool: vk::DescriptorPool,
    /// The wgpu view written into the set, held while the set can be used: wgpu would destroy
    /// a dropped view without knowing the set refers to it.
    pub _keep_alive: TextureView,
    pub last_used: u64,
}

/// The set binding `view` (the raw handle of `wgpu_view`) with `sampler`, from the material
/// pools: found, or allocated and written.
pub(crate) fn ui_image_set(
    sets: &mut MaterialSets,
    context: &VulkanContext,
    layout: vk::DescriptorSetLayout,
    (wgpu_view, view): (&TextureView, vk::ImageView),
    sampler: vk::Sampler,
    frame: u64,
) -> Result<vk::DescriptorSet, vk::Result> {
    if let Some(existing) = sets.ui_images.get_mut(&(view, sampler)) {
        existing.last_used = frame;
        return Ok(existing.set);
    }
    let (pool, set) = sets.allocate(context, layout)?;
    let image_info = [vk::DescriptorImageInfo {
        sampler,
        image_view: view,
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    let write = vk::WriteDescriptorSet::default()
        .dst_set(set)
        .dst_binding(0)
        .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
        .image_info(&image_info);
    // SAFETY: the set was just allocated and nothing uses it yet; the view is alive (held by
    // `wgpu_view`, kept with the set) and so is the sampler (the cache keeps samplers for the
    // backend's life).
    unsafe { context.device.update_descriptor_sets(&[write], &[]) };
    sets.ui_images.insert(
        (view, sampler),
        UiImageSet {
            set,
            pool,
            _keep_alive: wgpu_view.clone(),
            last_used: frame,
        },
    );
    Ok(set)
}

/// Retires the UI image sets unused for more than `keep` frames (a glyph atlas that grew, a
/// changed image), freeing them once the GPU is done with them.
pub(crate) fn retire_stale_ui_images(
    sets: &mut MaterialSets,
    graveyard: &mut Graveyard,
    frame: u64,
    keep: u64,
) {
    let stale: Vec<_> = sets
        .ui_images
        .iter()
        .filter(|(_, set)| frame.saturating_sub(set.last_used) > keep)
        .map(|(key, _)| *key)
        .collect();
    for key in stale {
        let Some(set) = sets.ui_images.remove(&key) else {
            continue;
        };
        graveyard.retire(Box::new(move |context: &VulkanContext| {
            // From a material pool (FREE_DESCRIPTOR_SET), and no command buffer in flight
            // uses it any more.
            context.free_descriptor_sets(set.pool, &[set.set]);
            drop(set._keep_alive);
        }));
    }
}
