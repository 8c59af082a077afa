//! The Vulkan objects of a tile view, created or reused each frame: per-view buffers and
//! descriptor sets, the render pass with its pipelines, the attachments and the material sets.

use super::view::ViewFrame;
use crate::tile_deferred::gpu::raw_view;
use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{
        backend::{TileBackend, ViewResources},
        cluster_stats::ClusterStatsReadback,
        pipelines::PassesKey,
        record::{CLUSTER_ASSIGN_GROUP, ClusterDispatch, RecordedPass},
        shaders::TileLayouts,
        types::{GpuClusterAssignParams, GpuClusterableLight, GpuInstance, GpuLightReach, GpuView},
    },
    lighting::{
        clusters::LightClusters,
        environment::{ViewEnvironment, ViewTexture},
    },
    plan::{self, PlannedFrame, names},
    scene::draws::DrawList,
};
use crate::{
    frame_graph::{CompiledFrame, FrameGraphCache, ResourceId},
    vulkan::{
        Graveyard, VulkanContext, conv,
        memory::{AttachmentImageDesc, DeviceBuffer},
        render_pass::{self, OutputKind},
    },
};
use ash::vk;
use bevy::{
    ecs::entity::EntityHashMap,
    platform::collections::HashMap,
    prelude::*,
    render::{
        render_resource::{TextureView, TextureViewId},
        texture::GpuImage,
    },
};

/// What the view helpers borrow from the backend: the device, the descriptor set layouts and
/// samplers the view's sets are made with, the graveyard that retires what a frame in flight may
/// still use, and the uploads queued for the next command buffer.
pub(crate) struct ViewDevice<'a> {
    pub(crate) context: &'a VulkanContext,
    pub(crate) layouts: &'a TileLayouts,
    pub(crate) graveyard: &'a mut Graveyard,
    pub(crate) lut_sampler: vk::Sampler,
    pub(crate) attachment_sampler: vk::Sampler,
    pub(crate) shadow_sampler: vk::Sampler,
    pub(crate) pending_updates: &'a mut Vec<(vk::Buffer, Vec<u8>)>,
}

/// Splits the backend into what the view helpers borrow and the view's own resources (created
/// the first time the view is seen).
pub(crate) fn view_parts(
    backend: &mut TileBackend,
    entity: Entity,
) -> TileResult<(ViewDevice<'_>, &mut ViewResources)> {
    let layouts = backend.layouts.as_ref().ok_or(TileError::Missing {
        step: "finding the tile layouts",
    })?;
    let view = ensure_view(
        &backend.context,
        layouts,
        &mut backend.views,
        entity,
        backend.frame,
    )?;
    let device = ViewDevice {
        context: &backend.context,
        layouts,
        graveyard: &mut backend.graveyard,
        lut_sampler: backend.lut_sampler,
        attachment_sampler: backend.attachment_sampler,
        shadow_sampler: backend.shadow_sampler,
        pending_updates: &mut backend.pending_updates,
    };
    Ok((device, view))
}

/// The view's resources, created (buffers, descriptor sets, queries) the first time it is seen.
fn ensure_view<'a>(
    context: &VulkanContext,
    layouts: &TileLayouts,
    views: &'a mut EntityHashMap<ViewResources>,
    entity: Entity,
    frame_number: u64,
) -> TileResult<&'a mut ViewResources> {
    if !views.contains_key(&entity) {
        // On an error, what was created so far is destroyed (nothing has used it yet).
        let mut created: Vec<DeviceBuffer> = Vec::with_capacity(9);
        let release = |created: Vec<DeviceBuffer>| {
            created
                .into_iter()
                .for_each(|buffer| context.destroy_device_buffer(buffer));
        };
        for (name, size, usage) in [
            (
                "tile view uniform",
                size_of::<GpuView>() as u64,
                vk::BufferUsageFlags::UNIFORM_BUFFER,
            ),
            (
                "tile lights",
                64 * size_of::<GpuClusterableLight>() as u64,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
            (
                "tile light clusters",
                16 * 1024,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
            (
                "tile light reaches",
                64 * size_of::<GpuLightReach>() as u64,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
            (
                "tile cluster extents",
                4 * 1024,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
            (
                "tile instances",
                1024 * size_of::<GpuInstance>() as u64,
                vk::BufferUsageFlags::VERTEX_BUFFER,
            ),
            (
                "tile animation",
                ANIMATION_INITIAL_BYTES,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
            (
                "tile morph displacements",
                ANIMATION_INITIAL_BYTES,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
        ] {
            match context.create_device_buffer(name, size, usage) {
                Ok(buffer) => created.push(buffer),
                Err(error) => {
                    release(created);
                    return Err(TileError::vulkan("creating the view's buffers", error));
                }
            }
        }
        match context.create_readback_buffer(
            "tile cluster statistics",
            ClusterStatsReadback::BYTES,
            vk::BufferUsageFlags::STORAGE_BUFFER,
        ) {
            Ok(buffer) => created.push(buffer),
            Err(error) => {
                release(created);
                return Err(TileError::vulkan("creating the view's buffers", error));
            }
        }
        let (pool, sets) = match allocate_view_sets(context, layouts, false) {
            Ok(sets) => sets,
            Err(error) => {
                release(created);
                return Err(error);
            }
        };
        let [
            view_buffer,
            light_buffer,
            cluster_buffer,
            reach_buffer,
            extent_buffer,
            instance_buffer,
            animation_buffer,
            displacement_buffer,
            stats_buffer,
        ]: [DeviceBuffer; 9] = created
            .try_into()
            .unwrap_or_else(|_| unreachable!("nine buffers were created"));
        let view = ViewResources {
            graph_cache: FrameGraphCache::default(),
            priced_cache: FrameGraphCache::default(),
            compiled: None,
            render_pass_key: PassesKey::default(),
            attachments: Vec::new(),
            attachments_extent: vk::Extent2D::default(),
            framebuffers: HashMap::default(),
            view_buffer,
            light_buffer,
            cluster_buffer,
            reach_buffer,
            extent_buffer,
            cluster_stats: ClusterStatsReadback::new(stats_buffer),
            instance_buffer,
            animation_buffer,
            displacement_buffer,
            displacements_uploaded: None,
            pool,
            view_set: sets[0],
            gbuffer_set: sets[1],
            tonemap_set: sets[2],
            sampled_sets: false,
            input_views: Vec::new(),
            sets_outdated: false,
            lut_keep_alive: None,
            environment_keep_alive: Vec::new(),
            environment_samplers: Vec::new(),
            timestamps: context.create_timestamp_queries(4),
            edge_queries: context.create_occlusion_queries(),
            last_used: frame_number,
        };
        write_buffer_descriptors(context, &view);
        views.insert(entity, view);
    }
    view_mut(views, entity)
}

fn write_buffer_descriptors(context: &VulkanContext, view: &ViewResources) {
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

#[derive(Clone, Copy)]
pub(crate) enum BufferSlot {
    Lights,
    Clusters,
    /// The GPU assignment's inputs (`clusters::ClusterInputs`).
    Reaches,
    Extents,
    Instances,
    /// Joint matrices and morph weights (`draws::AnimationData`).
    Animation,
    /// Morph target displacements (`draws::AnimationData::morph_meshes`).
    Displacements,
}

/// The animation and displacement buffers' first size: 64 joint matrices (a storage buffer may
/// not be empty).
const ANIMATION_INITIAL_BYTES: u64 = 64 * 64;

/// Grows a per-view buffer; the old buffer and the view's descriptor pool are retired (the
/// sets may be in use by a frame in flight), and new sets are allocated and written.
pub(crate) fn ensure_buffer_capacity(
    device: &mut ViewDevice,
    view: &mut ViewResources,
    slot: BufferSlot,
    needed: u64,
) -> TileResult<()> {
    let current = match slot {
        BufferSlot::Lights => view.light_buffer.size,
        BufferSlot::Clusters => view.cluster_buffer.size,
        BufferSlot::Reaches => view.reach_buffer.size,
        BufferSlot::Extents => view.extent_buffer.size,
        BufferSlot::Instances => view.instance_buffer.size,
        BufferSlot::Animation => view.animation_buffer.size,
        BufferSlot::Displacements => view.displacement_buffer.size,
    };
    if needed <= current {
        return Ok(());
    }
    let size = needed.next_power_of_two();
    let (name, usage) = match slot {
        BufferSlot::Lights => ("tile lights", vk::BufferUsageFlags::STORAGE_BUFFER),
        BufferSlot::Clusters => ("tile light clusters", vk::BufferUsageFlags::STORAGE_BUFFER),
        BufferSlot::Reaches => ("tile light reaches", vk::BufferUsageFlags::STORAGE_BUFFER),
        BufferSlot::Extents => ("tile cluster extents", vk::BufferUsageFlags::STORAGE_BUFFER),
        BufferSlot::Instances => ("tile instances", vk::BufferUsageFlags::VERTEX_BUFFER),
        BufferSlot::Animation => ("tile animation", vk::BufferUsageFlags::STORAGE_BUFFER),
        BufferSlot::Displacements => (
            "tile morph displacements",
            vk::BufferUsageFlags::STORAGE_BUFFER,
        ),
    };
    let buffer = step(
        "growing a view buffer",
        device.context.create_device_buffer(name, size, usage),
    )?;
    let old = match slot {
        BufferSlot::Lights => std::mem::replace(&mut view.light_buffer, buffer),
        BufferSlot::Clusters => std::mem::replace(&mut view.cluster_buffer, buffer),
        BufferSlot::Reaches => std::mem::replace(&mut view.reach_buffer, buffer),
        BufferSlot::Extents => std::mem::replace(&mut view.extent_buffer, buffer),
        BufferSlot::Instances => std::mem::replace(&mut view.instance_buffer, buffer),
        BufferSlot::Animation => std::mem::replace(&mut view.animation_buffer, buffer),
        BufferSlot::Displacements => {
            // The new buffer holds nothing yet.
            view.displacements_uploaded = None;
            std::mem::replace(&mut view.displacement_buffer, buffer)
        }
    };
    device.graveyard.retire(Box::new(move |c: &VulkanContext| {
        c.destroy_device_buffer(old)
    }));
    if matches!(
        slot,
        BufferSlot::Lights
            | BufferSlot::Clusters
            | BufferSlot::Reaches
            | BufferSlot::Extents
            | BufferSlot::Animation
            | BufferSlot::Displacements
    ) {
        // The view set references the storage buffers: write a fresh set from a fresh pool.
        // Until that succeeds the old set names the retired buffer.
        view.sets_outdated = true;
        let sampled = view.sampled_sets;
        reallocate_view_sets(device, view, sampled)?;
    }
    Ok(())
}

/// A descriptor pool with the view's three sets: view (set 0), G-buffer inputs (set 2) and
/// tonemap inputs (set 3); `sampled`: sets 2 and 3 hold textures (the unmerged tier).
fn allocate_view_sets(
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
fn reallocate_view_sets(
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

/// (Re)creates the view's own attachments (every attachment of the plan but the output) when
/// the plan or the target size changed.
pub(crate) fn ensure_attachments(
    device: &mut ViewDevice,
    view: &mut ViewResources,
    frame: &ViewFrame,
    compiled: &CompiledFrame,
) -> TileResult<()> {
    let subpasses = || {
        compiled
            .native_passes
            .iter()
            .flat_map(|n| n.subpasses.iter())
    };
    let wanted: Vec<(crate::frame_graph::ResourceId, AttachmentImageDesc, String)> = compiled
        .attachments
        .iter()
        .filter(|a| !a.imported && !a.native_passes.is_empty())
        .map(|a| {
            let input = compiled.native_passes.iter().any(|n| {
                n.subpasses
                    .iter()
                    .any(|s| s.input.iter().any(|&i| n.attachments[i].resource == a.id))
            });
            let sampled = subpasses().any(|s| s.sampled.contains(&a.id));
            (
                a.id,
                AttachmentImageDesc {
                    format: conv::format(a.format),
                    extent: frame.target_extent,
                    samples: conv::samples(a.samples),
                    transient: a.transient,
                    input,
                    sampled,
                },
                a.name.clone(),
            )
        })
        .collect();
    let unchanged = view.attachments.len() == wanted.len()
        && view
            .attachments
            .iter()
            .zip(&wanted)
            .all(|((id, image), (wid, desc, _))| id == wid && image.desc == *desc);
    if unchanged {
        return Ok(());
    }
    let mut created = Vec::new();
    for (id, desc, name) in wanted {
        match device.context.create_attachment_image(&name, desc) {
            Ok(image) => created.push((id, image)),
            Err(error) => {
                for (_, image) in created {
                    device.context.destroy_attachment_image(image);
                }
                return Err(TileError::vulkan("creating attachment images", error));
            }
        }
    }
    let old_images = std::mem::replace(&mut view.attachments, created);
    view.attachments_extent = frame.target_extent;
    // The sets name the old views until fresh ones are written.
    view.sets_outdated = true;
    let old_framebuffers: Vec<vk::Framebuffer> =
        view.framebuffers.drain().map(|(_, (fb, _))| fb).collect();
    let sampled = view.sampled_sets;
    device.graveyard.retire(Box::new(move |c: &VulkanContext| {
        old_framebuffers
            .into_iter()
            .for_each(|fb| c.destroy_framebuffer(fb));
        old_images
            .into_iter()
            .for_each(|(_, image)| c.destroy_attachment_image(image));
    }));
    // The input-attachment sets point at the old views; a frame in flight may still use them.
    reallocate_view_sets(device, view, sampled)
}

/// Writes the G-buffer and tonemap sets (input attachments, or textures for the unmerged
/// tier) and the view set's shadow maps when their views or their kind changed.
fn write_view_sets(
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

/// Stage 4: the framebuffers of the frame's render passes, over the view's attachments and
/// this frame's output view, each with its clear values, ready to record.
pub(crate) fn framebuffers(
    context: &VulkanContext,
    graveyard: &mut Graveyard,
    view: &mut ViewResources,
    frame_number: u64,
    frame: &ViewFrame,
    planned: &PlannedFrame,
    render_passes: &[vk::RenderPass],
    imported_views: &[(&str, &TextureView)],
) -> TileResult<Vec<RecordedPass>> {
    let mut imported = Vec::with_capacity(imported_views.len());
    for (name, texture_view) in imported_views {
        let Some(resource) = planned.compiled.attachment_named(name).map(|a| a.id) else {
            continue;
        };
        // The view is kept alive below until the GPU has finished this frame.
        let raw = raw_view(texture_view).ok_or(TileError::Missing {
            step: "reading an imported attachment's view",
        })?;
        // wgpu destroys a view as soon as it is dropped and its *tracked* uses are done; our
        // framebuffer's use is invisible to it. Bevy makes a new view of the swapchain image
        // (and of a screenshot's capture texture) every frame and drops it after presenting,
        // so the view is held until the GPU has finished this frame.
        let keep_alive = (*texture_view).clone();
        graveyard.retire(Box::new(move |_: &VulkanContext| drop(keep_alive)));
        imported.push(ImportedView {
            resource,
            id: texture_view.id(),
            raw,
        });
    }
    planned
        .compiled
        .native_passes
        .iter()
        .zip(render_passes)
        .map(|(native, &render_pass)| {
            Ok(RecordedPass {
                render_pass,
                framebuffer: framebuffer(
                    context,
                    graveyard,
                    view,
                    frame_number,
                    frame,
                    native,
                    render_pass,
                    (planned.output, &imported),
                )?,
                clear_values: native
                    .attachments
                    .iter()
                    .map(|a| {
                        conv::clear_value(match &a.load {
                            crate::frame_graph::LoadOp::Clear(value) => Some(value),
                            _ => None,
                        })
                    })
                    .collect(),
            })
        })
        .collect()
}

/// A wgpu view the frame imports as an attachment (the output, Bevy's depth texture), with the
/// plan's resource and the raw handle.
struct ImportedView {
    resource: ResourceId,
    id: TextureViewId,
    raw: vk::ImageView,
}

/// The framebuffer of one native pass. Views that persist (image targets, Bevy's depth texture,
/// the view's own attachments) keep theirs; a pass writing a view Bevy makes anew each frame
/// (swapchain images, screenshot captures) gets one that is retired with the frame.
fn framebuffer(
    context: &VulkanContext,
    graveyard: &mut Graveyard,
    view_state: &mut ViewResources,
    frame_number: u64,
    frame: &ViewFrame,
    native: &crate::frame_graph::NativePass,
    render_pass: vk::RenderPass,
    (output, imported): (ResourceId, &[ImportedView]),
) -> TileResult<vk::Framebuffer> {
    let attached: Vec<&ImportedView> = imported
        .iter()
        .filter(|view| native.attachment(view.resource).is_some())
        .collect();
    let writes_output = native.attachment(output).is_some();
    let key = (attached.iter().map(|view| view.id).collect(), render_pass);
    if let Some((framebuffer, used)) = view_state.framebuffers.get_mut(&key) {
        *used = frame_number;
        return Ok(*framebuffer);
    }
    let views: Vec<vk::ImageView> = native
        .attachments
        .iter()
        .map(|a| {
            if let Some(view) = attached.iter().find(|view| view.resource == a.resource) {
                view.raw
            } else {
                view_state
                    .attachments
                    .iter()
                    .find(|(id, _)| *id == a.resource)
                    .map(|(_, image)| image.view)
                    .unwrap_or_default()
            }
        })
        .collect();
    let framebuffer = step(
        "creating a framebuffer",
        context.create_framebuffer(render_pass, &views, frame.target_extent),
    )?;
    if writes_output && frame.output_kind == OutputKind::Swapchain {
        graveyard.retire(Box::new(move |c: &VulkanContext| {
            c.destroy_framebuffer(framebuffer)
        }));
    } else {
        view_state
            .framebuffers
            .insert(key, (framebuffer, frame_number));
    }
    Ok(framebuffer)
}

/// The view's buffers and descriptor sets as the recording binds them.
pub(crate) struct ViewBindings {
    pub(crate) view_set: vk::DescriptorSet,
    pub(crate) gbuffer_set: vk::DescriptorSet,
    pub(crate) tonemap_set: vk::DescriptorSet,
    pub(crate) instance_buffer: vk::Buffer,
    /// The light assignment's dispatch, where the GPU assigns this frame's lights.
    pub(crate) cluster_dispatch: Option<ClusterDispatch>,
}

/// Stage 6: the per-view buffers grown to this frame's lights, clusters and instances, the
/// view's descriptor sets written (input attachments and LUT rewritten when they changed), and
/// this frame's view, light, cluster and instance data queued for upload.
pub(crate) fn prepare_view_data(
    device: &mut ViewDevice,
    view: &mut ViewResources,
    frame: &ViewFrame,
    compiled: &CompiledFrame,
    draws: &DrawList,
    clusters: &LightClusters,
    cluster_assign: (vk::Pipeline, vk::PipelineLayout),
    lut: &GpuImage,
    environment: &ViewEnvironment,
    shadow_maps: [vk::ImageView; 2],
) -> TileResult<ViewBindings> {
    // Bevy keeps the LUT's view alive while the image exists, and the view sets hold a clone.
    let lut_view = raw_view(&lut.texture_view).ok_or(TileError::Missing {
        step: "reading the LUT view",
    })?;
    ensure_buffer_capacity(
        device,
        view,
        BufferSlot::Lights,
        (draws.lights.len().max(1) * size_of::<GpuClusterableLight>()) as u64,
    )?;
    ensure_buffer_capacity(device, view, BufferSlot::Clusters, clusters.mask_bytes())?;
    if let LightClusters::Gpu(inputs) = clusters {
        ensure_buffer_capacity(
            device,
            view,
            BufferSlot::Reaches,
            (inputs.reaches.len() * size_of::<GpuLightReach>()) as u64,
        )?;
        ensure_buffer_capacity(
            device,
            view,
            BufferSlot::Extents,
            (inputs.extents.len() * size_of::<[f32; 2]>()) as u64,
        )?;
    }
    ensure_buffer_capacity(
        device,
        view,
        BufferSlot::Instances,
        (draws.instances.len().max(1) * size_of::<GpuInstance>()) as u64,
    )?;
    let animation = &draws.animation.data;
    ensure_buffer_capacity(
        device,
        view,
        BufferSlot::Animation,
        (animation.len() * size_of::<[f32; 4]>()) as u64,
    )?;
    // The displacements of the morphed meshes in view, uploaded when they change.
    let displacements = draws.animation.morph_generations();
    let displacement_bytes = (view.displacements_uploaded.as_ref() != Some(&displacements))
        .then(|| draws.animation.displacement_bytes());
    if let Some(bytes) = &displacement_bytes {
        ensure_buffer_capacity(device, view, BufferSlot::Displacements, bytes.len() as u64)?;
    }
    // After the buffers grew: growing the light buffer replaces the view's sets.
    // The view sets hold clones of these views.
    let environment_view = |texture: &ViewTexture| {
        raw_view(&texture.image.texture_view).ok_or(TileError::Missing {
            step: "reading an environment cube's view",
        })
    };
    let [skybox, diffuse, specular, voxels] = environment.textures();
    let environment_views = [
        (skybox, environment_view(skybox)?),
        (diffuse, environment_view(diffuse)?),
        (specular, environment_view(specular)?),
        (voxels, environment_view(voxels)?),
    ];
    write_view_sets(
        device,
        view,
        compiled,
        lut,
        lut_view,
        &environment_views,
        shadow_maps,
    )?;
    let mut gpu_view = frame.gpu_view;
    environment.write_uniforms(&mut gpu_view);
    gpu_view.counts[1] = draws.lights.len() as u32;
    let grid = clusters.grid();
    gpu_view.cluster_grid = [grid.dims.x, grid.dims.y, grid.dims.z, clusters.words()];
    gpu_view.cluster_params = grid.gpu_params();
    let updates = &mut *device.pending_updates;
    updates.push((
        view.view_buffer.buffer,
        bytemuck::bytes_of(&gpu_view).to_vec(),
    ));
    if !draws.lights.is_empty() {
        updates.push((
            view.light_buffer.buffer,
            bytemuck::cast_slice(&draws.lights).to_vec(),
        ));
    }
    let mut cluster_dispatch = None;
    match clusters {
        LightClusters::Cpu(assignment) if !assignment.masks.is_empty() => updates.push((
            view.cluster_buffer.buffer,
            bytemuck::cast_slice(&assignment.masks).to_vec(),
        )),
        LightClusters::Gpu(inputs) if inputs.words > 0 => {
            updates.push((
                view.reach_buffer.buffer,
                bytemuck::cast_slice(&inputs.reaches).to_vec(),
            ));
            updates.push((
                view.extent_buffer.buffer,
                bytemuck::cast_slice(&inputs.extents).to_vec(),
            ));
            let stats_slot = view.cluster_stats.begin_frame(device.context);
            let (pipeline, layout) = cluster_assign;
            cluster_dispatch = Some(ClusterDispatch {
                pipeline,
                layout,
                params: GpuClusterAssignParams {
                    grid: [
                        grid.dims.x,
                        grid.dims.y,
                        grid.dims.z,
                        inputs.reaches.len() as u32,
                    ],
                    stats: [
                        stats_slot.unwrap_or(0),
                        u32::from(stats_slot.is_some()),
                        0,
                        0,
                    ],
                },
                groups: (grid.count() as u32).div_ceil(CLUSTER_ASSIGN_GROUP),
                stats: stats_slot.map(|first| {
                    (
                        view.cluster_stats.buffer.buffer,
                        u64::from(first) * size_of::<u32>() as u64,
                    )
                }),
            });
        }
        _ => {}
    }
    if !draws.instances.is_empty() {
        updates.push((
            view.instance_buffer.buffer,
            bytemuck::cast_slice(&draws.instances).to_vec(),
        ));
    }
    if !animation.is_empty() {
        updates.push((
            view.animation_buffer.buffer,
            bytemuck::cast_slice(animation).to_vec(),
        ));
    }
    if let Some(bytes) = displacement_bytes {
        if !bytes.is_empty() {
            updates.push((view.displacement_buffer.buffer, bytes));
        }
        view.displacements_uploaded = Some(displacements);
    }
    Ok(ViewBindings {
        view_set: view.view_set,
        gbuffer_set: view.gbuffer_set,
        tonemap_set: view.tonemap_set,
        instance_buffer: view.instance_buffer.buffer,
        cluster_dispatch,
    })
}

/// The view's resources, which `ensure_view` made at the start of the frame.
pub(crate) fn view_mut(
    views: &mut EntityHashMap<ViewResources>,
    entity: Entity,
) -> TileResult<&mut ViewResources> {
    views.get_mut(&entity).ok_or(TileError::Missing {
        step: "finding the view's resources",
    })
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
