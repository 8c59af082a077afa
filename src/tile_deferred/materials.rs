//! Stage 5, materials: a uniform buffer and a descriptor set for every `StandardMaterial`
//! drawn, one per lightmap its meshes have (rebuilt when the material or its textures change),
//! and the tonemapping LUT.

use super::{
    backend::{MaterialResources, TileBackend},
    error::{TileError, TileResult, step},
    extract::{MaterialSetKey, SamplerKey},
    scene::TileSceneParams,
};
use ash::vk;
use bevy::{core_pipeline::tonemapping::Tonemapping, prelude::*, render::texture::GpuImage};
use wgpu::hal::api::Vulkan;

/// The tonemapping LUT the camera's operator samples (the fallback 3D image when it uses none).
pub(super) fn lut_image<'a>(scene: &'a TileSceneParams, tonemapping: Tonemapping) -> &'a GpuImage {
    let handle = scene.luts.as_ref().map(|luts| match tonemapping {
        Tonemapping::TonyMcMapface => &luts.tony_mc_mapface,
        Tonemapping::BlenderFilmic => &luts.blender_filmic,
        _ => &luts.agx,
    });
    handle
        .and_then(|h| scene.images.get(h))
        .unwrap_or(&scene.fallback_image.d3)
}

/// Makes sure the material of `key` has a uniform buffer and a descriptor set, with the
/// lightmap of `key` at binding 6, matching its current generation and texture views.
pub(super) fn ensure_material(
    backend: &mut TileBackend,
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
    let images: Vec<&GpuImage> = textures
        .iter()
        .map(|t| {
            t.and_then(|t| scene.images.get(t.image))
                .unwrap_or(fallback)
        })
        .collect();
    let mut views = [vk::ImageView::null(); 6];
    for (slot, image) in images.iter().enumerate() {
        // SAFETY: reads the raw handle of a view Bevy keeps alive while the asset exists; the
        // descriptor set is replaced when the view changes.
        views[slot] = unsafe {
            image
                .texture_view
                .as_hal::<Vulkan>()
                .map(|v| v.raw_handle())
        }
        .unwrap_or_default();
    }
    if let Some(existing) = backend.materials.get_mut(&key)
        && existing.generation == material.generation
        && existing.texture_views == views
    {
        existing.last_used = backend.frame;
        return Ok(());
    }
    if let Some(old) = backend.materials.remove(&key) {
        backend.retire_material(old);
    }
    let buffer = step(
        "creating a material buffer",
        backend.context.create_device_buffer(
            "tile material",
            size_of::<super::gpu_types::GpuMaterial>() as u64,
            vk::BufferUsageFlags::UNIFORM_BUFFER,
        ),
    )?;
    let (pool, set) = match backend.allocate_material_set() {
        Ok(allocated) => allocated,
        Err(error) => {
            backend.context.destroy_device_buffer(buffer);
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
        match backend.sampler(&sampler_key) {
            Ok(sampler) => samplers[slot] = sampler,
            Err(error) => {
                // Nothing has used the set or the buffer yet.
                backend.context.free_descriptor_sets(pool, &[set]);
                backend.context.destroy_device_buffer(buffer);
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
    unsafe { backend.context.device.update_descriptor_sets(&writes, &[]) };
    backend.queue_material_update(buffer.buffer, material);
    backend.materials.insert(
        key,
        MaterialResources {
            generation: material.generation,
            texture_views: views,
            _texture_keep_alive: images.iter().map(|i| i.texture_view.clone()).collect(),
            buffer,
            set,
            pool,
            last_used: backend.frame,
        },
    );
    Ok(())
}
