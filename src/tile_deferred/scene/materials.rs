//! Stage 5, materials: a uniform buffer and a descriptor set for every `StandardMaterial`
//! drawn, one per lightmap its meshes have (rebuilt when the material or its textures change),
//! and the tonemapping LUT.

use super::params::TileSceneParams;
use crate::tile_deferred::gpu::keys::{MaterialSetKey, SamplerKey};
use crate::tile_deferred::gpu::raw_view;
use crate::tile_deferred::gpu::upload::BufferUpload;
use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{
        material_sets::{MaterialResources, MaterialSets, retire_material},
        samplers::SamplerCache,
        types::GpuMaterial,
    },
};
use crate::vulkan::Graveyard;
use ash::vk;
use bevy::{
    core_pipeline::tonemapping::Tonemapping,
    prelude::*,
    render::{
        render_resource::{
            TextureDescriptor, TextureDimension, TextureFormat, TextureSampleType,
            TextureViewDescriptor, TextureViewDimension,
        },
        texture::GpuImage,
    },
};

/// The tonemapping LUT the camera's operator samples (the fallback 3D image when it uses none).
pub(crate) fn lut_image<'a>(scene: &'a TileSceneParams, tonemapping: Tonemapping) -> &'a GpuImage {
    let handle = scene.luts.as_ref().map(|luts| match tonemapping {
        Tonemapping::TonyMcMapface => &luts.tony_mc_mapface,
        Tonemapping::BlenderFilmic => &luts.blender_filmic,
        _ => &luts.agx,
    });
    handle
        .and_then(|h| scene.images.get(h))
        .unwrap_or(&scene.fallback_image.d3)
}

/// Why the tile path's material and lightmap bindings (`sampler2D`, floating-point) cannot
/// read `image`, if they cannot: anything but a single-layer, single-sample 2D image of a
/// floating-point (or normalised) colour format, viewed as 2D.
pub(crate) fn unsampleable_as_2d(image: &GpuImage) -> Option<&'static str> {
    texture_unsampleable_as_2d(TextureShape::of(
        &image.texture_descriptor,
        image.texture_view_descriptor.as_ref(),
    ))
}

/// What decides whether a `sampler2D` can read an image: its texture and view descriptors'
/// fields (the main world's `Image` and the render world's `GpuImage` hold the same).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextureShape {
    pub dimension: TextureDimension,
    pub layers: u32,
    pub samples: u32,
    pub format: TextureFormat,
    /// The view's dimension, where the image names one.
    pub view_dimension: Option<TextureViewDimension>,
}

impl TextureShape {
    /// The shape of an image with these descriptors (an `Image`'s or a `GpuImage`'s).
    pub(crate) fn of(texture: &TextureDescriptor, view: Option<&TextureViewDescriptor>) -> Self {
        Self {
            dimension: texture.dimension,
            layers: texture.size.depth_or_array_layers,
            samples: texture.sample_count,
            format: texture.format,
            view_dimension: view.and_then(|view| view.dimension),
        }
    }
}

/// [`unsampleable_as_2d`] of an image's shape.
pub(crate) fn texture_unsampleable_as_2d(texture: TextureShape) -> Option<&'static str> {
    let float = matches!(
        texture.format.sample_type(None, None),
        Some(TextureSampleType::Float { .. })
    );
    if texture.dimension != TextureDimension::D2 {
        Some("material texture: a 1D or 3D image (the tile path samples 2D textures)")
    } else if texture.layers != 1
        || texture
            .view_dimension
            .is_some_and(|d| d != TextureViewDimension::D2)
    {
        Some("material texture: an array or cube image (the tile path samples 2D textures)")
    } else if texture.samples != 1 {
        Some(
            "material texture: a multisampled image (the tile path samples single-sample textures)",
        )
    } else if !float {
        Some(
            "material texture: an integer or depth image (the tile path samples floating-point \
             textures)",
        )
    } else {
        None
    }
}

/// What making a material's set writes: the material cache, the samplers, the uploads queued
/// for the frame's command buffer and the graveyard (a replaced set waits there).
pub(crate) struct MaterialCache<'a> {
    pub(crate) sets: &'a mut MaterialSets,
    pub(crate) samplers: SamplerCache<'a>,
    /// The material set layout.
    pub(crate) layout: vk::DescriptorSetLayout,
    pub(crate) pending_updates: &'a mut Vec<BufferUpload>,
    pub(crate) graveyard: &'a mut Graveyard,
    /// The render frame's number.
    pub(crate) frame: u64,
}

/// Makes sure the material of `key` has a uniform buffer and a descriptor set, with the
/// lightmap of `key` at binding 6, matching its current generation and texture views.
pub(crate) fn ensure_material(
    cache: &mut MaterialCache,
    scene: &TileSceneParams,
    key: MaterialSetKey,
) -> TileResult<()> {
    let (id, lightmap) = key;
    let Some(material) = scene.materials.by_id.get(&id) else {
        return Ok(());
    };
    let fallback = &scene.fallback_image.d2;
    // The material's five textures, then the lightmap (the fallback while it is not loaded, as
    // Bevy's lightmap slots hold the fallback image until the image is).
    let textures: Vec<_> = material.textures.iter().chain([&lightmap]).collect();
    // A texture the material's `sampler2D` cannot read (a cube, an array, a 3D or integer
    // image) is never bound: that is undefined behaviour on the GPU. The fallback takes its
    // place, and `find_missing` lists the material's meshes, so the picture is Bevy's or the
    // omission is reported.
    let images: Vec<&GpuImage> = textures
        .iter()
        .map(|t| {
            t.and_then(|t| scene.images.get(t.image))
                .filter(|image| unsampleable_as_2d(image).is_none())
                .unwrap_or(fallback)
        })
        .collect();
    let mut views = [vk::ImageView::null(); 6];
    for (slot, image) in images.iter().enumerate() {
        // Bevy keeps the view alive while the asset exists, and the material set holds a clone
        // of it; the set is replaced when the view changes.
        views[slot] = raw_view(&image.texture_view).unwrap_or_default();
    }
    if let Some(existing) = cache.sets.by_key.get_mut(&key)
        && existing.generation == material.generation
        && existing.texture_views == views
    {
        existing.last_used = cache.frame;
        return Ok(());
    }
    if let Some(old) = cache.sets.by_key.remove(&key) {
        retire_material(old, cache.graveyard, cache.pending_updates);
    }
    let context = cache.samplers.context;
    let buffer = step(
        "creating a material buffer",
        context.create_device_buffer(
            "tile material",
            size_of::<GpuMaterial>() as u64,
            vk::BufferUsageFlags::UNIFORM_BUFFER,
        ),
    )?;
    let (pool, set) = match cache.sets.allocate(context, cache.layout) {
        Ok(allocated) => allocated,
        Err(error) => {
            context.destroy_device_buffer(buffer);
            return Err(TileError::vulkan(
                "allocating a material descriptor set",
                error,
            ));
        }
    };
    let mut samplers = [vk::Sampler::null(); 6];
    for (slot, texture) in textures.iter().enumerate() {
        let sampler_key = texture
            .map(|t| t.sampler)
            .unwrap_or_else(SamplerKey::bevy_default);
        match cache.samplers.get(&sampler_key) {
            Ok(sampler) => samplers[slot] = sampler,
            Err(error) => {
                // Nothing has used the set or the buffer yet.
                context.free_descriptor_sets(pool, &[set]);
                context.destroy_device_buffer(buffer);
                return Err(TileError::vulkan("creating a sampler", error));
            }
        }
    }
    let buffer_info = [vk::DescriptorBufferInfo {
        buffer: buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let image_infos: Vec<[vk::DescriptorImageInfo; 1]> = (0..6)
        .map(|slot| {
            [vk::DescriptorImageInfo {
                sampler: samplers[slot],
                image_view: views[slot],
                image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            }]
        })
        .collect();
    let mut writes = vec![
        vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
            .buffer_info(&buffer_info),
    ];
    writes.extend(image_infos.iter().enumerate().map(|(slot, info)| {
        vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(slot as u32 + 1)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(info)
    }));
    // SAFETY: the set was just allocated; buffer, views and samplers are alive.
    unsafe { context.device.update_descriptor_sets(&writes, &[]) };
    // Written once, at the start of the frame's command buffer.
    cache.pending_updates.push(BufferUpload::whole(
        buffer.buffer,
        bytemuck::bytes_of(&material.uniform).to_vec(),
    ));
    cache.sets.by_key.insert(
        key,
        MaterialResources {
            generation: material.generation,
            texture_views: views,
            _texture_keep_alive: images.iter().map(|i| i.texture_view.clone()).collect(),
            buffer,
            set,
            pool,
            last_used: cache.frame,
        },
    );
    Ok(())
}
