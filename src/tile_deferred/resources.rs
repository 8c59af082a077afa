//! The Vulkan objects of a tile view, created or reused each frame: per-view buffers and
//! descriptor sets, the render pass with its pipelines, the attachments and the material sets.

use super::{
    backend::{
        MaterialResources, PassResources, StencilSplitPipelines, TileBackend, ViewResources,
    },
    gpu_types::{GpuClusterableLight, GpuInstance, GpuView},
    pass::{Frame, StepResult, TileSceneParams, step},
    pipelines::{
        PipelineTarget, SPLIT_CLASSIFY, SPLIT_EDGES, ScreenBlend, ScreenDepth, ScreenState,
        ScreenStencil, screen_variants,
    },
    plan::{self, names},
    shaders::{ShaderId, Variant},
};
use crate::{
    frame_graph::{CompiledFrame, FrameGraphCache},
    vulkan::{
        VulkanContext, conv,
        memory::{AttachmentImageDesc, DeviceBuffer},
        render_pass,
    },
};
use ash::vk;
use bevy::{
    core_pipeline::tonemapping::Tonemapping, platform::collections::HashMap, prelude::*,
    render::texture::GpuImage,
};
use wgpu::hal::api::Vulkan;

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

pub(super) fn ensure_view(
    backend: &mut TileBackend,
    entity: Entity,
) -> StepResult<&mut ViewResources> {
    if !backend.views.contains_key(&entity) {
        let context = &backend.context;
        // On an error, what was created so far is destroyed (nothing has used it yet).
        let mut created: Vec<DeviceBuffer> = Vec::with_capacity(3);
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
                "tile instances",
                1024 * size_of::<GpuInstance>() as u64,
                vk::BufferUsageFlags::VERTEX_BUFFER,
            ),
        ] {
            match context.create_device_buffer(name, size, usage) {
                Ok(buffer) => created.push(buffer),
                Err(error) => {
                    release(created);
                    return Err(("creating the view's buffers", error));
                }
            }
        }
        let (pool, sets) = match allocate_view_sets(backend, false) {
            Ok(sets) => sets,
            Err(error) => {
                release(created);
                return Err(error);
            }
        };
        let [view_buffer, light_buffer, instance_buffer]: [DeviceBuffer; 3] = created
            .try_into()
            .unwrap_or_else(|_| unreachable!("three buffers were created"));
        let view = ViewResources {
            graph_cache: FrameGraphCache::default(),
            desc: None,
            compiled: None,
            render_pass_key: String::new(),
            attachments: Vec::new(),
            attachments_extent: vk::Extent2D::default(),
            framebuffers: HashMap::default(),
            view_buffer,
            light_buffer,
            instance_buffer,
            pool,
            view_set: sets[0],
            gbuffer_set: sets[1],
            tonemap_set: sets[2],
            sampled_sets: false,
            input_views: Vec::new(),
            lut_keep_alive: None,
            timestamps: backend.context.create_timestamp_queries(4),
            edge_queries: backend.context.create_occlusion_queries(),
            last_used: backend.frame,
        };
        write_buffer_descriptors(&backend.context, &view);
        backend.views.insert(entity, view);
    }
    Ok(backend.views.get_mut(&entity).unwrap())
}

fn write_buffer_descriptors(context: &VulkanContext, view: &ViewResources) {
    let uniform = [vk::DescriptorBufferInfo {
        buffer: view.view_buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let storage = [vk::DescriptorBufferInfo {
        buffer: view.light_buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let writes = [
        vk::WriteDescriptorSet::default()
            .dst_set(view.view_set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
            .buffer_info(&uniform),
        vk::WriteDescriptorSet::default()
            .dst_set(view.view_set)
            .dst_binding(1)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .buffer_info(&storage),
    ];
    // SAFETY: the set is not in use by any pending command buffer: it is written only when
    // created or right after its buffers were replaced (the old set's users retired with them).
    unsafe { context.device.update_descriptor_sets(&writes, &[]) };
}

#[derive(Clone, Copy)]
pub(super) enum BufferSlot {
    Lights,
    Instances,
}

/// Grows a per-view buffer; the old buffer and the view's descriptor pool are retired (the
/// sets may be in use by a frame in flight), and new sets are allocated and written.
pub(super) fn ensure_buffer_capacity(
    backend: &mut TileBackend,
    entity: Entity,
    slot: BufferSlot,
    needed: u64,
) -> StepResult<()> {
    let current = {
        let view = &backend.views[&entity];
        match slot {
            BufferSlot::Lights => view.light_buffer.size,
            BufferSlot::Instances => view.instance_buffer.size,
        }
    };
    if needed <= current {
        return Ok(());
    }
    let size = needed.next_power_of_two();
    let (name, usage) = match slot {
        BufferSlot::Lights => ("tile lights", vk::BufferUsageFlags::STORAGE_BUFFER),
        BufferSlot::Instances => ("tile instances", vk::BufferUsageFlags::VERTEX_BUFFER),
    };
    let buffer = step(
        "growing a view buffer",
        backend.context.create_device_buffer(name, size, usage),
    )?;
    let view = backend.views.get_mut(&entity).unwrap();
    let old = match slot {
        BufferSlot::Lights => std::mem::replace(&mut view.light_buffer, buffer),
        BufferSlot::Instances => std::mem::replace(&mut view.instance_buffer, buffer),
    };
    backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
        c.destroy_device_buffer(old)
    }));
    if matches!(slot, BufferSlot::Lights) {
        // The view set references the light buffer: write a fresh set from a fresh pool.
        let sampled = backend.views[&entity].sampled_sets;
        reallocate_view_sets(backend, entity, sampled)?;
    }
    Ok(())
}

/// A descriptor pool with the view's three sets: view (set 0), G-buffer inputs (set 2) and
/// tonemap inputs (set 3); `sampled`: sets 2 and 3 hold textures (the unmerged tier).
fn allocate_view_sets(
    backend: &TileBackend,
    sampled: bool,
) -> StepResult<(vk::DescriptorPool, [vk::DescriptorSet; 3])> {
    let (inputs, samplers) = if sampled { (0, 7) } else { (6, 1) };
    let sizes = [
        (vk::DescriptorType::UNIFORM_BUFFER, 1),
        (vk::DescriptorType::STORAGE_BUFFER, 1),
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
        backend
            .context
            .create_descriptor_pool(3, &sizes, vk::DescriptorPoolCreateFlags::empty()),
    )?;
    let layouts = backend.layouts();
    let set_layouts = if sampled {
        [
            layouts.view,
            layouts.gbuffer_textures,
            layouts.tonemap_textures,
        ]
    } else {
        [layouts.view, layouts.gbuffer_inputs, layouts.tonemap_inputs]
    };
    let info = vk::DescriptorSetAllocateInfo::default()
        .descriptor_pool(pool)
        .set_layouts(&set_layouts);
    // SAFETY: a fresh pool sized for exactly these three sets.
    match unsafe { backend.context.device.allocate_descriptor_sets(&info) } {
        Ok(sets) => Ok((pool, [sets[0], sets[1], sets[2]])),
        Err(error) => {
            backend.context.destroy_descriptor_pool(pool);
            Err(("allocating view descriptor sets", error))
        }
    }
}

fn reallocate_view_sets(
    backend: &mut TileBackend,
    entity: Entity,
    sampled: bool,
) -> StepResult<()> {
    let (pool, sets) = allocate_view_sets(backend, sampled)?;
    let view = backend.views.get_mut(&entity).unwrap();
    view.sampled_sets = sampled;
    let old_pool = std::mem::replace(&mut view.pool, pool);
    view.view_set = sets[0];
    view.gbuffer_set = sets[1];
    view.tonemap_set = sets[2];
    view.input_views.clear();
    write_buffer_descriptors(&backend.context, &backend.views[&entity]);
    backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
        c.destroy_descriptor_pool(old_pool)
    }));
    Ok(())
}

/// Where a logical pass of the frame runs: (native pass index, subpass index).
pub(super) fn locate_pass(compiled: &CompiledFrame, name: &str) -> Option<(usize, usize)> {
    compiled
        .native_passes
        .iter()
        .enumerate()
        .find_map(|(n, native)| {
            let subpass = native.subpasses.iter().position(|s| s.name == name)?;
            Some((n, subpass))
        })
}

/// Creates the render passes of a plan (one per native pass, `descriptions` in the same order)
/// and the lighting and tonemap pipelines; the G-buffer pipelines are built on demand.
pub(super) fn create_pass_resources(
    backend: &mut TileBackend,
    descriptions: &[render_pass::RenderPassDescription],
    compiled: &CompiledFrame,
) -> StepResult<PassResources> {
    let sampled_attachments = plan::samples_attachments(compiled);
    let mut render_passes = Vec::with_capacity(descriptions.len());
    for description in descriptions {
        match backend.context.create_render_pass(description) {
            Ok(render_pass) => render_passes.push(render_pass),
            Err(error) => {
                for render_pass in render_passes {
                    backend.context.destroy_render_pass(render_pass);
                }
                return Err(("creating the render pass", error));
            }
        }
    }
    let target = |name: &str| {
        let (n, subpass) = locate_pass(compiled, name).unwrap_or((0, 0));
        let native = &compiled.native_passes[n];
        PipelineTarget {
            render_pass: render_passes[n],
            subpass: subpass as u32,
            color_attachments: native.subpasses[subpass].color.len() as u32,
            samples: conv::samples(native.samples),
            sampled_attachments,
        }
    };
    let lighting = target(names::LIGHTING);
    let mut pass = PassResources {
        render_passes: render_passes.clone(),
        gbuffer_target: target(names::GBUFFER),
        gbuffer: HashMap::default(),
        global_lighting: vk::Pipeline::null(),
        light_volumes: vk::Pipeline::null(),
        tonemap: vk::Pipeline::null(),
        stencil_split: None,
        edge_counter: vk::Pipeline::null(),
        last_used: backend.frame,
    };
    let context = &backend.context;
    let shaders = backend.shaders();
    let layouts = backend.layouts();
    let multisampled = lighting.samples != vk::SampleCountFlags::TYPE_1;
    // The MSAA stencil split: the lighting subpass binds the depth-stencil attachment.
    let stencil_split = locate_pass(compiled, names::LIGHTING).is_some_and(|(n, subpass)| {
        compiled.native_passes[n].subpasses[subpass]
            .depth
            .is_some_and(|d| d.stencil_write)
    });
    pass.stencil_split = stencil_split.then(StencilSplitPipelines::default);
    let (lighting_variant, variant) =
        screen_variants(multisampled, stencil_split, sampled_attachments);
    let fullscreen = shaders.stage(ShaderId::FullscreenVert, Variant::BASE);
    let light_volume_vert = shaders.stage(ShaderId::LightVolumeVert, Variant::BASE);
    // Stencil 0: interior (and background) pixels, lit once; stencil 1: edges, lit per sample.
    let (interior, edges) = if stencil_split {
        (ScreenStencil::Equal(0), ScreenStencil::Equal(1))
    } else {
        (ScreenStencil::Off, ScreenStencil::Off)
    };
    // The lighting subpass tests light volumes against the G-buffer depth when it binds it.
    let lighting_depth = locate_pass(compiled, names::LIGHTING)
        .is_some_and(|(n, subpass)| compiled.native_passes[n].subpasses[subpass].depth.is_some());
    let (untested, culled) = if lighting_depth {
        (ScreenDepth::Untested, ScreenDepth::RejectSurfacesInFront)
    } else {
        (ScreenDepth::NoAttachment, ScreenDepth::NoAttachment)
    };
    let additive = |depth, stencil, per_sample| ScreenState {
        blend: ScreenBlend::Additive,
        depth,
        stencil,
        per_sample,
    };
    let result = (|| {
        pass.global_lighting = context.create_screen_pipeline(
            layouts,
            lighting,
            [
                fullscreen,
                shaders.stage(ShaderId::LightingGlobal, lighting_variant),
            ],
            additive(untested, interior, false),
        )?;
        pass.light_volumes = context.create_screen_pipeline(
            layouts,
            lighting,
            [
                light_volume_vert,
                shaders.stage(ShaderId::LightVolume, lighting_variant),
            ],
            additive(culled, interior, false),
        )?;
        pass.tonemap = context.create_screen_pipeline(
            layouts,
            target(names::TONEMAP),
            [fullscreen, shaders.stage(ShaderId::Tonemap, variant)],
            ScreenState::plain(ScreenBlend::Replace),
        )?;
        if multisampled && !stencil_split {
            pass.edge_counter = context.create_screen_pipeline(
                layouts,
                lighting,
                [fullscreen, shaders.stage(ShaderId::MsaaClassify, variant)],
                ScreenState {
                    depth: untested,
                    ..ScreenState::plain(ScreenBlend::NoColorWrites)
                },
            )?;
        }
        if let Some(split) = pass.stencil_split.as_mut() {
            split.classify = context.create_screen_pipeline(
                layouts,
                lighting,
                [
                    fullscreen,
                    shaders.stage(ShaderId::MsaaClassify, SPLIT_CLASSIFY),
                ],
                ScreenState {
                    blend: ScreenBlend::NoColorWrites,
                    depth: untested,
                    stencil: ScreenStencil::Mark(1),
                    per_sample: false,
                },
            )?;
            split.global_lighting_per_sample = context.create_screen_pipeline(
                layouts,
                lighting,
                [
                    fullscreen,
                    shaders.stage(ShaderId::LightingGlobal, SPLIT_EDGES),
                ],
                additive(untested, edges, true),
            )?;
            split.light_volumes_per_sample = context.create_screen_pipeline(
                layouts,
                lighting,
                [
                    light_volume_vert,
                    shaders.stage(ShaderId::LightVolume, SPLIT_EDGES),
                ],
                additive(culled, edges, true),
            )?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(pass),
        Err(error) => {
            backend.retire_pass(pass);
            Err(("creating the lighting and tonemap pipelines", error))
        }
    }
}

/// (Re)creates the view's own attachments (every attachment of the plan but the output) when
/// the plan or the target size changed.
pub(super) fn ensure_attachments(
    backend: &mut TileBackend,
    frame: &Frame,
    compiled: &CompiledFrame,
) -> StepResult<()> {
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
    let view = &backend.views[&frame.entity];
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
        match backend.context.create_attachment_image(&name, desc) {
            Ok(image) => created.push((id, image)),
            Err(error) => {
                for (_, image) in created {
                    backend.context.destroy_attachment_image(image);
                }
                return Err(("creating attachment images", error));
            }
        }
    }
    let view = backend.views.get_mut(&frame.entity).unwrap();
    let old_images = std::mem::replace(&mut view.attachments, created);
    view.attachments_extent = frame.target_extent;
    view.input_views.clear();
    let old_framebuffers: Vec<vk::Framebuffer> =
        view.framebuffers.drain().map(|(_, (fb, _))| fb).collect();
    let sampled = view.sampled_sets;
    backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
        old_framebuffers
            .into_iter()
            .for_each(|fb| c.destroy_framebuffer(fb));
        old_images
            .into_iter()
            .for_each(|(_, image)| c.destroy_attachment_image(image));
    }));
    // The input-attachment sets point at the old views; a frame in flight may still use them.
    reallocate_view_sets(backend, frame.entity, sampled)
}

/// Writes the G-buffer and tonemap sets (input attachments, or textures for the unmerged
/// tier) when their views or their kind changed.
pub(super) fn write_view_sets(
    backend: &mut TileBackend,
    entity: Entity,
    compiled: &CompiledFrame,
    lut: &GpuImage,
    lut_view: vk::ImageView,
) {
    let sampled = plan::samples_attachments(compiled);
    let view = &backend.views[&entity];
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
        let located = locate_pass(compiled, pass);
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
    let tonemap_depth_layout = input_layout(names::TONEMAP, names::DEPTH);
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
    if view.input_views == all && view.sampled_sets == sampled {
        return;
    }
    if !view.input_views.is_empty() || view.sampled_sets != sampled {
        // In use by a frame in flight, or of the other kind: write fresh sets instead.
        if reallocate_view_sets(backend, entity, sampled).is_err() {
            return;
        }
    }
    let view = &backend.views[&entity];
    let sampler = if sampled {
        backend.attachment_sampler
    } else {
        vk::Sampler::null()
    };
    let gbuffer_infos = attachment_read_infos(&gbuffer_views, 3, lighting_depth_layout, sampler);
    let tonemap_infos = attachment_read_infos(&tonemap_views, 1, tonemap_depth_layout, sampler);
    let lut_info = [vk::DescriptorImageInfo {
        sampler: backend.lut_sampler,
        image_view: lut_view,
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    let mut writes = attachment_read_writes(view.gbuffer_set, &gbuffer_infos, sampled);
    writes.extend(attachment_read_writes(
        view.tonemap_set,
        &tonemap_infos,
        sampled,
    ));
    writes.push(
        vk::WriteDescriptorSet::default()
            .dst_set(view.tonemap_set)
            .dst_binding(2)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&lut_info),
    );
    // SAFETY: the sets are fresh (never used by a submitted command buffer) and every view is
    // alive.
    unsafe { backend.context.device.update_descriptor_sets(&writes, &[]) };
    let view = backend.views.get_mut(&entity).unwrap();
    view.input_views = all;
    if let Some(old) = view.lut_keep_alive.replace(lut.texture_view.clone()) {
        backend
            .graveyard
            .retire(Box::new(move |_: &VulkanContext| drop(old)));
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

/// Makes sure `material` has a uniform buffer and a descriptor set matching its current
/// generation and texture views.
pub(super) fn ensure_material(
    backend: &mut TileBackend,
    scene: &TileSceneParams,
    id: AssetId<StandardMaterial>,
) -> StepResult<()> {
    let Some(material) = scene.materials.by_id.get(&id) else {
        return Ok(());
    };
    let fallback = &scene.fallback_image.d2;
    let images: Vec<&GpuImage> = material
        .textures
        .iter()
        .map(|t| {
            t.and_then(|t| scene.images.get(t.image))
                .unwrap_or(fallback)
        })
        .collect();
    let mut views = [vk::ImageView::null(); 5];
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
    if let Some(existing) = backend.materials.get_mut(&id)
        && existing.generation == material.generation
        && existing.texture_views == views
    {
        existing.last_used = backend.frame;
        return Ok(());
    }
    if let Some(old) = backend.materials.remove(&id) {
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
            return Err(("allocating a material descriptor set", error));
        }
    };
    let mut samplers = [vk::Sampler::null(); 5];
    for (slot, texture) in material.textures.iter().enumerate() {
        let key = texture
            .map(|t| t.sampler)
            .unwrap_or_else(super::extract::SamplerKey::bevy_default);
        samplers[slot] = step("creating a sampler", backend.sampler(&key))?;
    }
    let buffer_info = [vk::DescriptorBufferInfo {
        buffer: buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let image_infos: Vec<[vk::DescriptorImageInfo; 1]> = (0..5)
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
        id,
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
