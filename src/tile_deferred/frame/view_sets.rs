//! Stage 6, the view's descriptor sets: allocated from a pool of their own, written with the
//! G-buffer and tonemap reads (input attachments, or textures for the unmerged tier), the LUT,
//! the environment and Bevy's shadow maps, and replaced rather than rewritten while a frame in
//! flight may use them ([`view_sets_action`]).

use crate::tile_deferred::gpu::backend::ViewDevice;
use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{backend::ViewResources, shaders::TileLayouts},
    lighting::environment::ViewTexture,
    plan::{self, names},
};
use crate::{
    frame_graph::CompiledFrame,
    vulkan::{
        VulkanContext,
        memory::DeviceBuffer,
        render_pass::{self},
    },
};
use ash::vk;
use bevy::{prelude::*, render::texture::GpuImage};

pub(crate) fn write_buffer_descriptors(context: &VulkanContext, view: &ViewResources) {
    let uniform = [vk::DescriptorBufferInfo {
        buffer: view.view_buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let storage = |buffer: &DeviceBuffer| {
        [vk::DescriptorBufferInfo {
            buffer: buffer.buffer,
            offset: 0,
            range: vk::WHOLE_SIZE,
        }]
    };
    let (lights, clusters) = (storage(&view.light_buffer), storage(&view.cluster_buffer));
    let (reaches, extents) = (storage(&view.reach_buffer), storage(&view.extent_buffer));
    let stats = storage(&view.cluster_stats.buffer);
    let animation = storage(&view.animation_buffer);
    let displacements = storage(&view.displacement_buffer);
    let write = |binding, descriptor_type, info| {
        vk::WriteDescriptorSet::default()
            .dst_set(view.view_set)
            .dst_binding(binding)
            .descriptor_type(descriptor_type)
            .buffer_info(info)
    };
    let storage_buffer = vk::DescriptorType::STORAGE_BUFFER;
    let writes = [
        write(0, vk::DescriptorType::UNIFORM_BUFFER, &uniform),
        write(1, storage_buffer, &lights),
        write(2, storage_buffer, &clusters),
        write(5, storage_buffer, &animation),
        write(6, storage_buffer, &displacements),
        write(7, storage_buffer, &reaches),
        write(8, storage_buffer, &extents),
        write(9, storage_buffer, &stats),
    ];
    // SAFETY: the set is not in use by any pending command buffer: it is written only when
    // created or right after its buffers were replaced (the old set's users retired with them).
    unsafe { context.device.update_descriptor_sets(&writes, &[]) };
}

/// A descriptor pool with the view's three sets: view (set 0), G-buffer inputs (set 2) and
/// tonemap inputs (set 3); `sampled`: sets 2 and 3 hold textures (the unmerged tier).
pub(crate) fn allocate_view_sets(
    context: &VulkanContext,
    layouts: &TileLayouts,
    sampled: bool,
) -> TileResult<(vk::DescriptorPool, [vk::DescriptorSet; 3])> {
    // Samplers: Bevy's two shadow textures (set 0), the LUT, the skybox cube, the environment
    // map's two cubes and the irradiance volume, and the unmerged tier's 7 attachment reads (the
    // G-buffer's 4; light, depth and material in the tonemap set).
    let (inputs, samplers) = if sampled { (0, 2 + 12) } else { (7, 2 + 5) };
    let sizes = [
        (vk::DescriptorType::UNIFORM_BUFFER, 1),
        (vk::DescriptorType::STORAGE_BUFFER, 7),
        (vk::DescriptorType::INPUT_ATTACHMENT, inputs),
        (vk::DescriptorType::COMBINED_IMAGE_SAMPLER, samplers),
    ]
    .into_iter()
    .filter(|(_, count)| *count > 0)
    .map(|(ty, descriptor_count)| vk::DescriptorPoolSize {
        ty,
        descriptor_count,
    })
    .collect::<Vec<_>>();
    let pool = step(
        "creating the view descriptor pool",
        context.create_descriptor_pool(3, &sizes, vk::DescriptorPoolCreateFlags::empty()),
    )?;
    let set_layouts = if sampled {
        [
            layouts.view,
            layouts.gbuffer_textures,
            layouts.tonemap_textures,
        ]
    } else {
        [layouts.view, layouts.gbuffer_inputs, layouts.tonemap_inputs]
    };
    // A fresh pool sized for exactly these three sets.
    match context.allocate_descriptor_sets(pool, &set_layouts) {
        Ok(sets) => Ok((pool, [sets[0], sets[1], sets[2]])),
        Err(error) => {
            context.destroy_descriptor_pool(pool);
            Err(TileError::vulkan("allocating view descriptor sets", error))
        }
    }
}

/// Fresh descriptor sets for the view (the old pool is retired: a frame in flight may use it).
pub(crate) fn reallocate_view_sets(
    device: &mut ViewDevice,
    view: &mut ViewResources,
    sampled: bool,
) -> TileResult<()> {
    let (pool, sets) = allocate_view_sets(device.context, device.layouts, sampled)?;
    view.sampled_sets = sampled;
    let old_pool = std::mem::replace(&mut view.pool, pool);
    view.view_set = sets[0];
    view.gbuffer_set = sets[1];
    view.tonemap_set = sets[2];
    view.input_views.clear();
    view.sets_outdated = false;
    write_buffer_descriptors(device.context, view);
    device.graveyard.retire(Box::new(move |c: &VulkanContext| {
        c.destroy_descriptor_pool(old_pool)
    }));
    Ok(())
}

/// Writes the G-buffer and tonemap sets (input attachments, or textures for the unmerged
/// tier) and the view set's shadow maps when their views or their kind changed.
pub(crate) fn write_view_sets(
    device: &mut ViewDevice,
    view: &mut ViewResources,
    compiled: &CompiledFrame,
    lut: &GpuImage,
    lut_view: vk::ImageView,
    environment: &[(&ViewTexture, vk::ImageView); 4],
    shadow_maps: [vk::ImageView; 2],
) -> TileResult<()> {
    let sampled = plan::samples_attachments(compiled);
    let view_of = |name: &str| {
        compiled
            .attachment_named(name)
            .and_then(|a| view.attachments.iter().find(|(id, _)| *id == a.id))
            .map(|(_, image)| image.input_view)
            .unwrap_or_default()
    };
    // A descriptor's layout is the one its subpass uses the attachment in; a texture stored by
    // an earlier render pass was left in SHADER_READ_ONLY_OPTIMAL.
    let input_layout = |pass: &str, name: &str| {
        let located = plan::locate_pass(compiled, pass);
        located
            .and_then(|(n, s)| {
                let native = &compiled.native_passes[n];
                let attachment = native.attachments.iter().position(|a| a.name == name)?;
                render_pass::layout_in_subpass(native, s, attachment)
            })
            .unwrap_or(if sampled {
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
            } else {
                vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL
            })
    };
    let lighting_depth_layout = input_layout(names::LIGHTING, names::DEPTH);
    // Plans without a tonemap subpass read the tonemap set in the lighting subpass.
    let tonemap_reader = if plan::locate_pass(compiled, names::TONEMAP).is_some() {
        names::TONEMAP
    } else {
        names::LIGHTING
    };
    let tonemap_depth_layout = input_layout(tonemap_reader, names::DEPTH);
    let gbuffer_views = [
        view_of(names::ALBEDO_OCCLUSION),
        view_of(names::NORMAL),
        view_of(names::MATERIAL),
        view_of(names::DEPTH),
    ];
    let tonemap_views = [view_of(names::LIGHT), view_of(names::DEPTH)];
    let mut all: Vec<vk::ImageView> = gbuffer_views.to_vec();
    all.extend(tonemap_views);
    all.push(lut_view);
    all.extend(environment.iter().map(|(_, raw)| *raw));
    all.extend(shadow_maps);
    let samplers: Vec<vk::Sampler> = environment.iter().map(|(t, _)| t.sampler).collect();
    let action = view_sets_action(ViewSetsState {
        outdated: view.sets_outdated,
        written: !view.input_views.is_empty(),
        same_kind: view.sampled_sets == sampled,
        same_contents: view.input_views == all && view.environment_samplers == samplers,
    });
    match action {
        ViewSetsAction::Keep => return Ok(()),
        ViewSetsAction::WriteInPlace => {}
        // A failure leaves `sets_outdated` set: the frame fails, and the next one tries again.
        ViewSetsAction::Replace => reallocate_view_sets(device, view, sampled)?,
    }
    let sampler = if sampled {
        device.attachment_sampler
    } else {
        vk::Sampler::null()
    };
    let gbuffer_infos = attachment_read_infos(&gbuffer_views, 3, lighting_depth_layout, sampler);
    let tonemap_infos = attachment_read_infos(&tonemap_views, 1, tonemap_depth_layout, sampler);
    let lut_info = [vk::DescriptorImageInfo {
        sampler: device.lut_sampler,
        image_view: lut_view,
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    // The skybox (set 3 binding 3), the environment map's diffuse and specular cubes (set 2
    // bindings 4 and 5), the irradiance volume's voxels (set 2 binding 6).
    let environment_infos: Vec<[vk::DescriptorImageInfo; 1]> = environment
        .iter()
        .map(|(texture, raw)| {
            [vk::DescriptorImageInfo {
                sampler: texture.sampler,
                image_view: *raw,
                image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            }]
        })
        .collect();
    let mut writes = attachment_read_writes(view.gbuffer_set, &gbuffer_infos, sampled);
    writes.extend(attachment_read_writes(
        view.tonemap_set,
        &tonemap_infos,
        sampled,
    ));
    // The G-buffer material (its no-fog bit) for tonemap: set 3 binding 4.
    let material_info = &gbuffer_infos[2];
    writes.push(
        attachment_read_writes(
            view.tonemap_set,
            std::slice::from_ref(material_info),
            sampled,
        )[0]
        .dst_binding(4),
    );
    writes.push(
        vk::WriteDescriptorSet::default()
            .dst_set(view.tonemap_set)
            .dst_binding(2)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&lut_info),
    );
    // Bevy's shadow textures, in the layout wgpu leaves a depth texture used as a resource
    // (`interop` declares them so).
    let shadow_infos = shadow_maps.map(|image_view| {
        [vk::DescriptorImageInfo {
            sampler: device.shadow_sampler,
            image_view,
            image_layout: vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL,
        }]
    });
    for (binding, info) in (3..).zip(&shadow_infos) {
        writes.push(
            vk::WriteDescriptorSet::default()
                .dst_set(view.view_set)
                .dst_binding(binding)
                .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                .image_info(info),
        );
    }
    for ((set, binding), info) in [
        (view.tonemap_set, 3),
        (view.gbuffer_set, 4),
        (view.gbuffer_set, 5),
        (view.gbuffer_set, 6),
    ]
    .into_iter()
    .zip(&environment_infos)
    {
        writes.push(
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(binding)
                .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                .image_info(info),
        );
    }
    // SAFETY: the sets are fresh (never used by a submitted command buffer) and every view is
    // alive.
    unsafe { device.context.device.update_descriptor_sets(&writes, &[]) };
    view.input_views = all;
    view.environment_samplers = samplers;
    let kept = environment
        .iter()
        .map(|(texture, _)| texture.image.texture_view.clone())
        .collect();
    let old = std::mem::replace(&mut view.environment_keep_alive, kept);
    device
        .graveyard
        .retire(Box::new(move |_: &VulkanContext| drop(old)));
    if let Some(old) = view.lut_keep_alive.replace(lut.texture_view.clone()) {
        device
            .graveyard
            .retire(Box::new(move |_: &VulkanContext| drop(old)));
    }
    Ok(())
}

/// What [`view_sets_action`] decides from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ViewSetsState {
    /// Something the sets reference was replaced and replacing them failed.
    pub outdated: bool,
    /// The sets were written for a frame (a frame in flight may use them).
    pub written: bool,
    /// The sets hold the kind of reads the plan wants (input attachments or textures).
    pub same_kind: bool,
    /// The views and samplers written are those the frame wants.
    pub same_contents: bool,
}

/// What to do with a view's G-buffer and tonemap sets before a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ViewSetsAction {
    /// Bind them as they are.
    Keep,
    /// Write the frame's views into them: they are fresh (never used by a frame).
    WriteInPlace,
    /// Allocate fresh sets and write those: the old ones may be in use by a frame in flight
    /// (updating them would be undefined behaviour), are of the other kind, or are outdated.
    Replace,
}

/// Whether the view's sets are kept, written in place or replaced: sets a submitted frame may
/// use are never written, and outdated sets are never kept.
pub(crate) fn view_sets_action(state: ViewSetsState) -> ViewSetsAction {
    if state.outdated || !state.same_kind {
        ViewSetsAction::Replace
    } else if state.same_contents && state.written {
        ViewSetsAction::Keep
    } else if state.written {
        ViewSetsAction::Replace
    } else {
        ViewSetsAction::WriteInPlace
    }
}

/// Descriptor infos of attachments read by a later (sub)pass: colour views in
/// `SHADER_READ_ONLY_OPTIMAL`, the depth view (at `depth_index`) in `depth_layout`; `sampler`
/// is null for input attachments.
fn attachment_read_infos(
    views: &[vk::ImageView],
    depth_index: usize,
    depth_layout: vk::ImageLayout,
    sampler: vk::Sampler,
) -> Vec<[vk::DescriptorImageInfo; 1]> {
    views
        .iter()
        .enumerate()
        .map(|(i, &image_view)| {
            [vk::DescriptorImageInfo {
                sampler,
                image_view,
                image_layout: if i == depth_index {
                    depth_layout
                } else {
                    vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
                },
            }]
        })
        .collect()
}

/// One write per info, at bindings 0, 1, ... of `set`: input attachments, or combined image
/// samplers (`sampled`).
fn attachment_read_writes(
    set: vk::DescriptorSet,
    infos: &[[vk::DescriptorImageInfo; 1]],
    sampled: bool,
) -> Vec<vk::WriteDescriptorSet<'_>> {
    infos
        .iter()
        .enumerate()
        .map(|(binding, info)| {
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(binding as u32)
                .descriptor_type(if sampled {
                    vk::DescriptorType::COMBINED_IMAGE_SAMPLER
                } else {
                    vk::DescriptorType::INPUT_ATTACHMENT
                })
                .image_info(info)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{ViewSetsAction, ViewSetsState, view_sets_action};

    fn state(outdated: bool, written: bool, same_kind: bool, same_contents: bool) -> ViewSetsState {
        ViewSetsState {
            outdated,
            written,
            same_kind,
            same_contents,
        }
    }

    #[test]
    fn sets_a_frame_may_use_are_never_written_in_place() {
        // Fresh sets (just allocated) are written; written ones are kept while nothing
        // changed, and replaced when anything did.
        assert_eq!(
            view_sets_action(state(false, false, true, false)),
            ViewSetsAction::WriteInPlace
        );
        assert_eq!(
            view_sets_action(state(false, true, true, true)),
            ViewSetsAction::Keep
        );
        assert_eq!(
            view_sets_action(state(false, true, true, false)),
            ViewSetsAction::Replace
        );
        // The other kind of reads (input attachments against textures) needs other layouts.
        assert_eq!(
            view_sets_action(state(false, false, false, false)),
            ViewSetsAction::Replace
        );
    }

    #[test]
    fn outdated_sets_are_replaced_whatever_they_hold() {
        // A buffer grew or attachments were rebuilt and the replacement failed: the sets name
        // destroyed objects even where the views written look the same.
        for written in [false, true] {
            for same_contents in [false, true] {
                assert_eq!(
                    view_sets_action(state(true, written, true, same_contents)),
                    ViewSetsAction::Replace
                );
            }
        }
    }
}
