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
use crate::{frame_graph::ResourceId, vulkan::memory::AttachmentImage};
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
    let contents = SetContents::of(
        compiled,
        &view.attachments,
        lut_view,
        environment,
        shadow_maps,
    );
    let (views, samplers) = (contents.views(), contents.samplers());
    let action = view_sets_action(ViewSetsState {
        outdated: view.sets_outdated,
        written: !view.input_views.is_empty(),
        same_kind: view.sampled_sets == contents.sampled,
        same_contents: view.input_views == views && view.environment_samplers == samplers,
    });
    match action {
        ViewSetsAction::Keep => return Ok(()),
        ViewSetsAction::WriteInPlace => {}
        // A failure leaves `sets_outdated` set: the frame fails, and the next one tries again.
        ViewSetsAction::Replace => reallocate_view_sets(device, view, contents.sampled)?,
    }
    let infos = SetInfos::new(device, &contents);
    let writes = infos.writes(view, contents.sampled);
    // SAFETY: the sets are fresh or were never used by a submitted command buffer (the action
    // is `WriteInPlace` only for sets no frame has bound), and every view is alive: the
    // attachments' are the view's own, the LUT's and environment's are held below, the shadow
    // maps' by `ShadowMapViews`.
    unsafe { device.context.device.update_descriptor_sets(&writes, &[]) };
    view.input_views = views;
    view.environment_samplers = samplers;
    keep_sampled_views_alive(device, view, lut, environment);
    Ok(())
}

/// What the view's sets must hold for a plan: the attachments they read (and in which layout),
/// the LUT, the environment's and the shadow maps' views, and the environment's samplers.
/// Pure: comparing it with what was written decides whether the sets are rewritten.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SetContents {
    /// The passes read earlier passes' attachments as textures (the unmerged tier).
    pub(crate) sampled: bool,
    /// Albedo, normal, material, depth: what the lighting reads.
    pub(crate) gbuffer: [vk::ImageView; 4],
    /// Light, depth: what the tonemap reads.
    pub(crate) tonemap: [vk::ImageView; 2],
    pub(crate) lighting_depth_layout: vk::ImageLayout,
    pub(crate) tonemap_depth_layout: vk::ImageLayout,
    pub(crate) lut: vk::ImageView,
    /// The skybox, the environment map's diffuse and specular cubes, the irradiance volume.
    pub(crate) environment: [(vk::ImageView, vk::Sampler); 4],
    /// Bevy's point-light cubes and directional-and-spot array.
    pub(crate) shadow_maps: [vk::ImageView; 2],
}

impl SetContents {
    pub(crate) fn of(
        compiled: &CompiledFrame,
        attachments: &[(ResourceId, AttachmentImage)],
        lut: vk::ImageView,
        environment: &[(&ViewTexture, vk::ImageView); 4],
        shadow_maps: [vk::ImageView; 2],
    ) -> Self {
        let sampled = plan::samples_attachments(compiled);
        let view_of = |name: &str| {
            compiled
                .attachment_named(name)
                .and_then(|a| attachments.iter().find(|(id, _)| *id == a.id))
                .map(|(_, image)| image.input_view)
                .unwrap_or_default()
        };
        // A descriptor's layout is the one its subpass uses the attachment in; a texture stored
        // by an earlier render pass was left in SHADER_READ_ONLY_OPTIMAL.
        let input_layout = |pass: &str, name: &str| {
            plan::locate_pass(compiled, pass)
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
        // Plans without a tonemap subpass read the tonemap set in the lighting subpass.
        let tonemap_reader = if plan::locate_pass(compiled, names::TONEMAP).is_some() {
            names::TONEMAP
        } else {
            names::LIGHTING
        };
        let gbuffer = [
            view_of(names::ALBEDO_OCCLUSION),
            view_of(names::NORMAL),
            view_of(names::MATERIAL),
            view_of(names::DEPTH),
        ];
        let tonemap = [view_of(names::LIGHT), view_of(names::DEPTH)];
        Self {
            sampled,
            gbuffer,
            tonemap,
            lighting_depth_layout: input_layout(names::LIGHTING, names::DEPTH),
            tonemap_depth_layout: input_layout(tonemap_reader, names::DEPTH),
            lut,
            environment: environment.map(|(texture, raw)| (raw, texture.sampler)),
            shadow_maps,
        }
    }

    /// Every view the sets hold, in the order the view keeps them
    /// (`ViewResources::input_views`).
    pub(crate) fn views(&self) -> Vec<vk::ImageView> {
        self.gbuffer
            .into_iter()
            .chain(self.tonemap)
            .chain([self.lut])
            .chain(self.environment.map(|(view, _)| view))
            .chain(self.shadow_maps)
            .collect()
    }

    /// The environment textures' samplers (`ViewResources::environment_samplers`).
    pub(crate) fn samplers(&self) -> Vec<vk::Sampler> {
        self.environment.map(|(_, sampler)| sampler).to_vec()
    }
}

/// The image infos of the view's sets, which the writes point into.
struct SetInfos {
    gbuffer: Vec<[vk::DescriptorImageInfo; 1]>,
    tonemap: Vec<[vk::DescriptorImageInfo; 1]>,
    lut: [vk::DescriptorImageInfo; 1],
    environment: [[vk::DescriptorImageInfo; 1]; 4],
    shadow_maps: [[vk::DescriptorImageInfo; 1]; 2],
}

impl SetInfos {
    fn new(device: &ViewDevice, contents: &SetContents) -> Self {
        let sampler = if contents.sampled {
            device.attachment_sampler
        } else {
            vk::Sampler::null()
        };
        let image = |sampler, image_view, image_layout| {
            [vk::DescriptorImageInfo {
                sampler,
                image_view,
                image_layout,
            }]
        };
        let read_only = vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL;
        Self {
            gbuffer: attachment_read_infos(
                &contents.gbuffer,
                3,
                contents.lighting_depth_layout,
                sampler,
            ),
            tonemap: attachment_read_infos(
                &contents.tonemap,
                1,
                contents.tonemap_depth_layout,
                sampler,
            ),
            lut: image(device.lut_sampler, contents.lut, read_only),
            environment: contents
                .environment
                .map(|(view, sampler)| image(sampler, view, read_only)),
            // Bevy's shadow textures, in the layout wgpu leaves a depth texture used as a
            // resource (`interop` declares them so).
            shadow_maps: contents.shadow_maps.map(|view| {
                image(
                    device.shadow_sampler,
                    view,
                    vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL,
                )
            }),
        }
    }

    /// Every write of the view's G-buffer, tonemap and view sets.
    fn writes(&self, view: &ViewResources, sampled: bool) -> Vec<vk::WriteDescriptorSet<'_>> {
        let sampler_write = |set, binding, info| {
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(binding)
                .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
                .image_info(info)
        };
        let mut writes = attachment_read_writes(view.gbuffer_set, &self.gbuffer, sampled);
        writes.extend(attachment_read_writes(
            view.tonemap_set,
            &self.tonemap,
            sampled,
        ));
        // The G-buffer material (its no-fog bit) for tonemap: set 3 binding 4.
        writes.push(
            attachment_read_writes(view.tonemap_set, &self.gbuffer[2..3], sampled)[0]
                .dst_binding(4),
        );
        writes.push(sampler_write(view.tonemap_set, 2, &self.lut));
        for (binding, info) in (3..).zip(&self.shadow_maps) {
            writes.push(sampler_write(view.view_set, binding, info));
        }
        // The skybox (set 3 binding 3), the environment map's diffuse and specular cubes (set 2
        // bindings 4 and 5), the irradiance volume's voxels (set 2 binding 6).
        for ((set, binding), info) in [
            (view.tonemap_set, 3),
            (view.gbuffer_set, 4),
            (view.gbuffer_set, 5),
            (view.gbuffer_set, 6),
        ]
        .into_iter()
        .zip(&self.environment)
        {
            writes.push(sampler_write(set, binding, info));
        }
        writes
    }
}

/// The view sets name the LUT's and the environment's views, which wgpu would destroy once its
/// own uses end: the view holds clones until the next write, then the graveyard until the GPU
/// has finished every frame that bound the old sets.
fn keep_sampled_views_alive(
    device: &mut ViewDevice,
    view: &mut ViewResources,
    lut: &GpuImage,
    environment: &[(&ViewTexture, vk::ImageView); 4],
) {
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
