//! Stage 6, the view's resources: created the first time a view is seen, its buffers grown to
//! this frame's lights, clusters, instances and animation, and this frame's data queued for
//! upload (the descriptor sets over them are `view_sets`; the attachments, `targets`).

use super::view::ViewFrame;
use super::view_sets::{
    allocate_view_sets, reallocate_view_sets, write_buffer_descriptors, write_view_sets,
};
use crate::tile_deferred::gpu::backend::ViewDevice;
use crate::tile_deferred::gpu::raw_view;
use crate::tile_deferred::gpu::upload::{BufferUpload, UploadRegion};
use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{
        backend::ViewResources,
        cluster_stats::ClusterStatsReadback,
        pipelines::PassesKey,
        record::{CLUSTER_ASSIGN_GROUP, ClusterDispatch},
        shaders::TileLayouts,
        types::{GpuClusterAssignParams, GpuClusterableLight, GpuInstance, GpuLightReach, GpuView},
    },
    lighting::{
        clusters::{ClusterInputs, LightClusters},
        environment::{ViewEnvironment, ViewTexture},
    },
    scene::draws::DrawList,
};
use crate::{
    frame_graph::{CompiledFrame, FrameGraphCache},
    vulkan::{VulkanContext, memory::DeviceBuffer},
};
use ash::vk;
use bevy::{
    ecs::entity::EntityHashMap, platform::collections::HashMap, prelude::*,
    render::texture::GpuImage,
};

/// The view's resources, created (buffers, descriptor sets, queries) the first time it is seen.
pub(super) fn ensure_view<'a>(
    context: &VulkanContext,
    layouts: &TileLayouts,
    views: &'a mut EntityHashMap<ViewResources>,
    entity: Entity,
    frame_number: u64,
) -> TileResult<&'a mut ViewResources> {
    if !views.contains_key(&entity) {
        // On an error, what was created so far is destroyed (nothing has used it yet).
        let mut created: Vec<DeviceBuffer> = Vec::with_capacity(10);
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
            (
                "tile indirect draws",
                INDIRECT_INITIAL_BYTES,
                vk::BufferUsageFlags::INDIRECT_BUFFER,
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
            indirect_buffer,
            stats_buffer,
        ]: [DeviceBuffer; 10] = created
            .try_into()
            .unwrap_or_else(|_| unreachable!("ten buffers were created"));
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
            indirect_buffer,
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
            ui_buffers: None,
            last_used: frame_number,
        };
        write_buffer_descriptors(context, &view);
        views.insert(entity, view);
    }
    view_mut(views, entity)
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
    /// Indirect draw commands (`gpu::indirect`).
    Indirect,
}

/// The animation and displacement buffers' first size: 64 joint matrices (a storage buffer may
/// not be empty).
const ANIMATION_INITIAL_BYTES: u64 = 64 * 64;

/// The indirect buffer's first size: 256 draw commands.
const INDIRECT_INITIAL_BYTES: u64 =
    256 * crate::tile_deferred::gpu::indirect::COMMAND_STRIDE as u64;

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
        BufferSlot::Indirect => view.indirect_buffer.size,
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
        BufferSlot::Indirect => ("tile indirect draws", vk::BufferUsageFlags::INDIRECT_BUFFER),
    };
    let growing = match slot {
        BufferSlot::Lights => "growing the view's light buffer",
        BufferSlot::Clusters => "growing the view's light cluster buffer",
        BufferSlot::Reaches => "growing the view's light reach buffer",
        BufferSlot::Extents => "growing the view's cluster extent buffer",
        BufferSlot::Instances => "growing the view's instance buffer",
        BufferSlot::Animation => "growing the view's animation buffer",
        BufferSlot::Displacements => "growing the view's morph displacement buffer",
        BufferSlot::Indirect => "growing the view's indirect draw buffer",
    };
    let buffer = step(
        growing,
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
        BufferSlot::Indirect => std::mem::replace(&mut view.indirect_buffer, buffer),
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
    // The displacements of the morphed meshes in view, uploaded when they change.
    let displacements = draws.animation.morph_generations();
    let displacement_bytes = (view.displacements_uploaded.as_ref() != Some(&displacements))
        .then(|| draws.animation.displacement_bytes());
    let displacement_size = displacement_bytes.as_ref().map(Vec::len);
    for (slot, bytes) in buffer_sizes(draws, clusters, displacement_size) {
        ensure_buffer_capacity(device, view, slot, bytes)?;
    }
    // After the buffers grew: growing the light buffer replaces the view's sets.
    let environment_views = environment_views(environment)?;
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
    queue_uploads(device.pending_updates, view, &gpu_view, draws, clusters);
    let cluster_dispatch = match clusters {
        LightClusters::Gpu(inputs) if inputs.words > 0 => Some(cluster_dispatch(
            device.context,
            view,
            inputs,
            cluster_assign,
        )),
        _ => None,
    };
    if let Some(bytes) = displacement_bytes {
        if !bytes.is_empty() {
            device
                .pending_updates
                .push(BufferUpload::whole(view.displacement_buffer.buffer, bytes));
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

/// The bytes each per-view buffer must hold this frame (the displacements' only where they
/// are uploaded). Pure: the buffers grow to it in `ensure_buffer_capacity`.
fn buffer_sizes(
    draws: &DrawList,
    clusters: &LightClusters,
    displacement_bytes: Option<usize>,
) -> Vec<(BufferSlot, u64)> {
    let bytes = |count: usize, size: usize| (count * size) as u64;
    let mut sizes = vec![
        (
            BufferSlot::Lights,
            bytes(draws.lights.len().max(1), size_of::<GpuClusterableLight>()),
        ),
        (BufferSlot::Clusters, clusters.mask_bytes()),
    ];
    if let LightClusters::Gpu(inputs) = clusters {
        sizes.push((
            BufferSlot::Reaches,
            bytes(inputs.reaches.len(), size_of::<GpuLightReach>()),
        ));
        sizes.push((
            BufferSlot::Extents,
            bytes(inputs.extents.len(), size_of::<[f32; 2]>()),
        ));
    }
    sizes.push((
        BufferSlot::Instances,
        bytes(draws.instance_count.max(1), size_of::<GpuInstance>()),
    ));
    sizes.push((
        BufferSlot::Animation,
        bytes(draws.animation.data.len(), size_of::<[f32; 4]>()),
    ));
    if let Some(displacements) = displacement_bytes {
        sizes.push((BufferSlot::Displacements, displacements as u64));
    }
    sizes
}

/// The raw views of the view's environment textures (the view sets hold clones of them).
fn environment_views<'e, 'a>(
    environment: &'e ViewEnvironment<'a>,
) -> TileResult<[(&'e ViewTexture<'a>, vk::ImageView); 4]> {
    let environment_view = |texture: &ViewTexture| {
        raw_view(&texture.image.texture_view).ok_or(TileError::Missing {
            step: "reading an environment cube's view",
        })
    };
    let [skybox, diffuse, specular, voxels] = environment.textures();
    Ok([
        (skybox, environment_view(skybox)?),
        (diffuse, environment_view(diffuse)?),
        (specular, environment_view(specular)?),
        (voxels, environment_view(voxels)?),
    ])
}

/// This frame's view uniforms, lights, CPU-assigned clusters or the GPU assignment's inputs,
/// instances and animation, queued for upload at the start of the frame's command buffer.
fn queue_uploads(
    updates: &mut Vec<BufferUpload>,
    view: &ViewResources,
    gpu_view: &GpuView,
    draws: &DrawList,
    clusters: &LightClusters,
) {
    updates.push(BufferUpload::whole(
        view.view_buffer.buffer,
        bytemuck::bytes_of(gpu_view).to_vec(),
    ));
    if !draws.lights.is_empty() {
        updates.push(BufferUpload::whole(
            view.light_buffer.buffer,
            bytemuck::cast_slice(&draws.lights).to_vec(),
        ));
    }
    match clusters {
        LightClusters::Cpu(assignment) if !assignment.masks.is_empty() => {
            updates.push(BufferUpload::whole(
                view.cluster_buffer.buffer,
                bytemuck::cast_slice(&assignment.masks).to_vec(),
            ))
        }
        LightClusters::Gpu(inputs) if inputs.words > 0 => {
            updates.push(BufferUpload::whole(
                view.reach_buffer.buffer,
                bytemuck::cast_slice(&inputs.reaches).to_vec(),
            ));
            updates.push(BufferUpload::whole(
                view.extent_buffer.buffer,
                bytemuck::cast_slice(&inputs.extents).to_vec(),
            ));
        }
        _ => {}
    }
    let writes = &draws.instance_writes;
    if !writes.instances.is_empty() {
        let instance_size = size_of::<GpuInstance>() as u64;
        let regions = writes
            .runs
            .iter()
            .map(|run| UploadRegion {
                offset: u64::from(run.start) * instance_size,
                len: u64::from(run.end - run.start) * instance_size,
            })
            .collect();
        updates.push(BufferUpload::scattered(
            view.instance_buffer.buffer,
            bytemuck::cast_slice(&writes.instances).to_vec(),
            regions,
        ));
    }
    let animation = &draws.animation.data;
    if !animation.is_empty() {
        updates.push(BufferUpload::whole(
            view.animation_buffer.buffer,
            bytemuck::cast_slice(animation).to_vec(),
        ));
    }
}

/// The GPU light assignment of this frame: one invocation per cluster, and where it counts the
/// clusters' lights for the report (a slot of the view's readback, when one is free).
fn cluster_dispatch(
    context: &VulkanContext,
    view: &mut ViewResources,
    inputs: &ClusterInputs,
    (pipeline, layout): (vk::Pipeline, vk::PipelineLayout),
) -> ClusterDispatch {
    let grid = &inputs.grid;
    let stats_slot = view.cluster_stats.begin_frame(context);
    ClusterDispatch {
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
    }
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
