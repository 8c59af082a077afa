//! The render-world state of the tile path: the Vulkan objects it owns and their caches.

use super::{
    cluster_stats::ClusterStatsReadback,
    material_sets::{MaterialResources, MaterialSets, retire_material},
    pipelines::{GbufferPipelineKey, LightingKey, PassesKey, PipelineTarget},
    samplers::Samplers,
    shaders::{ShaderId, TileLayouts, TileShaders, Variant},
    shadow_views::ShadowMapViews,
    staging::StagingBelt,
};
use crate::{
    frame_graph::{CompiledFrame, FrameGraphCache, ResourceId},
    vulkan::{
        Graveyard, VulkanContext,
        context::DeadObject,
        memory::{AttachmentImage, DeviceBuffer},
        timing::TimestampQueries,
    },
};
use ash::vk;
use bevy::{
    ecs::entity::EntityHashMap,
    platform::collections::{HashMap, HashSet},
    prelude::*,
    render::render_resource::TextureViewId,
};

/// The tile path's Vulkan state: created at render start-up on a Vulkan device.
#[derive(Resource)]
pub(crate) struct TileBackend {
    pub(crate) layouts: Option<TileLayouts>,
    pub(crate) shaders: Option<TileShaders>,
    /// The light assignment (`shaders/cluster_assign.comp`), dispatched before a view's render
    /// pass.
    pub(crate) cluster_assign: vk::Pipeline,
    /// A 16-byte zero buffer feeding vertex attributes a mesh lacks (stride 0).
    pub(crate) zero_buffer: Option<DeviceBuffer>,
    pub(crate) zero_buffer_filled: bool,
    pub(crate) samplers: Samplers,
    /// The crate's views of Bevy's shadow textures.
    pub(crate) shadow_map_views: ShadowMapViews,
    /// Materials' sets and buffers, by material and lightmap (`MaterialSetKey`).
    pub(crate) materials: MaterialSets,
    pub(crate) render_passes: HashMap<PassesKey, PassResources>,
    pub(crate) views: EntityHashMap<ViewResources>,
    /// Output image views wgpu has seen initialised (see `interop::prepare_wgpu_resources`).
    pub(crate) initialized_outputs: HashMap<TextureViewId, u64>,
    pub(crate) graveyard: Graveyard,
    /// The host-visible buffers each frame's uploads are copied from.
    pub(crate) staging: StagingBelt,
    pub(crate) frame: u64,
    /// Buffer updates recorded at the start of the next raw command buffer.
    pub(crate) pending_updates: Vec<crate::tile_deferred::gpu::upload::BufferUpload>,
    /// Cameras reported once (unsupported settings).
    pub(crate) reported: HashSet<(Entity, &'static str)>,
    /// How long dropping the backend waits for the GPU ([`TEARDOWN_WAIT`]; tests shorten it).
    pub(crate) teardown_wait: std::time::Duration,
    /// The done flags of the last frames that drew a tile view and that the GPU may still be
    /// running, oldest first (`pass::pace_frames`).
    pub(crate) frames_in_flight:
        std::collections::VecDeque<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// GPU timestamps around whole camera schedules, by main-world camera, for `Auto` cameras
    /// timing both paths (`coverage::timing`).
    pub(crate) camera_timers: EntityHashMap<CameraTimer>,
    // Declared last: dropped after everything above was destroyed in `Drop`.
    pub(crate) context: VulkanContext,
}

/// Two timestamps around a camera's whole schedule, a ring of frames, and what each slot timed:
/// the path, and whether the frame counts (no pipeline was still compiling).
pub(crate) struct CameraTimer {
    pub queries: TimestampQueries,
    pub slots: [Option<(crate::tiers::MeasuredPath, bool)>; crate::vulkan::timing::RING as usize],
    pub last_used: u64,
    /// The path the camera's last timed frame ran.
    pub last_path: Option<crate::tiers::MeasuredPath>,
}

impl TileBackend {
    /// Queues the timers of cameras not timed since `frame - keep` for destruction.
    pub fn retire_stale_timers(&mut self, frame: u64, keep: u64) {
        let stale = self
            .camera_timers
            .extract_if(|_, timer| frame.saturating_sub(timer.last_used) > keep);
        for (_, timer) in stale {
            retire_timer(timer, &mut self.graveyard);
        }
    }
}

/// Queues a camera timer's queries for destruction after the GPU is done.
fn retire_timer(timer: CameraTimer, graveyard: &mut Graveyard) {
    graveyard.retire(Box::new(move |c: &VulkanContext| {
        c.destroy_timestamp_queries(timer.queries)
    }));
}

/// The render passes of one plan (one for the merged tiers, one per pass unmerged) and the
/// pipelines built for them.
pub(crate) struct PassResources {
    /// In recording order; the last one writes the output.
    pub render_passes: Vec<vk::RenderPass>,
    /// Where the G-buffer pipelines go (built on demand, per mesh layout and material state).
    pub gbuffer_target: PipelineTarget,
    /// Where the transparent pipelines go, where the plan has a transparent pass.
    pub transparent_target: Option<PipelineTarget>,
    /// The lighting specialisation the transparent pipelines are built with (the pass's key).
    pub lighting_key: LightingKey,
    /// The G-buffer and transparent pipelines built and drawn with lately
    /// (`GbufferPipelineKey::transparent` tells them apart); one unused for a while goes
    /// ([`PassResources::retire_stale_mesh_pipelines`]).
    pub mesh_pipelines: HashMap<GbufferPipelineKey, MeshPipeline>,
    /// The one lighting draw (with the stencil split: of the interior pixels, once each).
    pub lighting: vk::Pipeline,
    pub tonemap: vk::Pipeline,
    /// The MSAA stencil split (`None` otherwise): edge marking, then the edge pixels' lighting
    /// per sample (`lighting` lights the other pixels once).
    pub stencil_split: Option<StencilSplitPipelines>,
    /// MSAA without the stencil split (null otherwise): the classification draw, without
    /// stencil or colour writes, that the occlusion query counts the edge pixels with.
    pub edge_counter: vk::Pipeline,
    /// Where the plan has a depth export (gizmo frames; null otherwise): the tile depth written
    /// into Bevy's depth texture.
    pub depth_export: vk::Pipeline,
    /// Where an HDR camera's transparent pass comes before tonemap (and the lighting subpass
    /// can shade per sample): the skybox and fog draws that bring them into the light first.
    pub light_finish: Option<LightFinishPipelines>,
    /// Where the plan has the `ui` subpass (bevy_ui drawn in the pass).
    pub ui_target: Option<PipelineTarget>,
    /// The `ui` subpass's pipelines without and with `UiAntiAlias` (built on demand; null
    /// until then).
    pub ui_pipelines: [vk::Pipeline; 2],
    /// The `ui` subpass's box shadow pipelines, by `BoxShadowSamples` (built on demand).
    pub box_shadow_pipelines: HashMap<u32, vk::Pipeline>,
    /// The `ui` subpass's sliced image pipeline (built on demand; null until then).
    pub ui_slice_pipeline: vk::Pipeline,
    /// The `ui` subpass's egui pipeline (built on demand; null until then).
    pub egui_pipeline: vk::Pipeline,
    /// The `ui` subpass's gradient pipelines without and with `UiAntiAlias` (built on demand;
    /// null until then).
    pub ui_gradient_pipelines: [vk::Pipeline; 2],
    pub last_used: u64,
}

/// A G-buffer or transparent pipeline, and the last frame a draw used it.
pub(crate) struct MeshPipeline {
    pub pipeline: vk::Pipeline,
    pub last_used: u64,
}

impl PassResources {
    /// Queues the mesh pipelines no draw used since `frame - keep` for destruction once the GPU
    /// is done with the frames that did.
    pub fn retire_stale_mesh_pipelines(
        &mut self,
        frame: u64,
        keep: u64,
        graveyard: &mut Graveyard,
    ) {
        let stale = take_stale_mesh_pipelines(&mut self.mesh_pipelines, frame, keep);
        if !stale.is_empty() {
            graveyard.retire(Box::new(move |c: &VulkanContext| {
                stale
                    .into_iter()
                    .for_each(|pipeline| c.destroy_pipeline(pipeline));
            }));
        }
    }
}

/// Takes out of `mesh_pipelines` the pipelines no draw used since `frame - keep`.
fn take_stale_mesh_pipelines<K: std::hash::Hash + Eq>(
    mesh_pipelines: &mut HashMap<K, MeshPipeline>,
    frame: u64,
    keep: u64,
) -> Vec<vk::Pipeline> {
    mesh_pipelines
        .extract_if(|_, mesh| frame.saturating_sub(mesh.last_used) > keep)
        .map(|(_, mesh)| mesh.pipeline)
        .collect()
}

/// The lighting subpass's last draws before an HDR camera's transparent pass
/// (`shaders/light_finish.frag`): the skybox into background samples, and the fog's extinction
/// and inscattering on surface samples.
#[derive(Clone, Copy, Default)]
pub(crate) struct LightFinishPipelines {
    pub sky: vk::Pipeline,
    pub fog_multiply: vk::Pipeline,
    pub fog_add: vk::Pipeline,
}

/// The pipelines only the MSAA stencil split uses.
#[derive(Clone, Copy, Default)]
pub(crate) struct StencilSplitPipelines {
    pub classify: vk::Pipeline,
    pub lighting_per_sample: vk::Pipeline,
}

/// Per-camera state.
pub(crate) struct ViewResources {
    pub graph_cache: FrameGraphCache,
    /// The plan with Bevy's shadow passes, compiled for its price (`plan::price_with_shadows`).
    pub priced_cache: FrameGraphCache,
    /// The compiled plan of the last frame (also mirrored for tests and the inspector).
    pub compiled: Option<CompiledFrame>,
    pub render_pass_key: PassesKey,
    /// Attachments the view owns (everything but the output), sized to the target.
    pub attachments: Vec<(ResourceId, AttachmentImage)>,
    pub attachments_extent: vk::Extent2D,
    /// Framebuffers by the imported views they hold (the output, and on gizmo frames Bevy's
    /// depth texture; none for the unmerged tier's render passes that write neither) and render
    /// pass (a framebuffer is only valid with render passes compatible with the one it was made
    /// for).
    pub framebuffers: HashMap<(Vec<TextureViewId>, vk::RenderPass), (vk::Framebuffer, u64)>,
    pub view_buffer: DeviceBuffer,
    pub light_buffer: DeviceBuffer,
    /// The light clusters' masks (`clusters::ClusterAssignment::masks`), uploaded or written
    /// by the GPU's assignment.
    pub cluster_buffer: DeviceBuffer,
    /// The GPU assignment's inputs: the lights' reaches and the cluster boxes' extents
    /// (`clusters::ClusterInputs`).
    pub reach_buffer: DeviceBuffer,
    pub extent_buffer: DeviceBuffer,
    /// The GPU assignment's statistics, read back a frame or more late.
    pub cluster_stats: ClusterStatsReadback,
    pub instance_buffer: DeviceBuffer,
    /// Joint matrices and morph weights of the view's instances (`draws::AnimationData`).
    pub animation_buffer: DeviceBuffer,
    /// The morph target displacements of the meshes the view draws.
    pub displacement_buffer: DeviceBuffer,
    /// Which displacements `displacement_buffer` holds (their generations, in order), once
    /// uploaded; `None`: nothing valid.
    pub displacements_uploaded: Option<Vec<u64>>,
    /// The frame's indirect draw commands (`gpu::indirect`), written each frame they are used.
    pub indirect_buffer: DeviceBuffer,
    pub pool: vk::DescriptorPool,
    pub view_set: vk::DescriptorSet,
    pub gbuffer_set: vk::DescriptorSet,
    pub tonemap_set: vk::DescriptorSet,
    /// The sets 2 and 3 hold textures (the unmerged tier) rather than input attachments.
    pub sampled_sets: bool,
    /// The views written into `gbuffer_set`/`tonemap_set` (rewritten when they change).
    pub input_views: Vec<vk::ImageView>,
    /// Something the sets reference was replaced (a grown buffer, rebuilt attachments) and
    /// replacing the sets failed: they must not be bound, nor written in place (a frame in
    /// flight may use them), until fresh ones are allocated.
    pub sets_outdated: bool,
    /// The wgpu view of the tonemapping LUT written into `tonemap_set`, held while the set
    /// can be used.
    pub lut_keep_alive: Option<bevy::render::render_resource::TextureView>,
    /// The skybox cube written into `tonemap_set` and the environment map's cubes written into
    /// `gbuffer_set` (Bevy's fallback cube where there is none), held like the LUT, and the
    /// samplers they were written with (`environment::ViewEnvironment::textures`).
    pub environment_keep_alive: Vec<bevy::render::render_resource::TextureView>,
    pub environment_samplers: Vec<vk::Sampler>,
    /// GPU timestamps: before the pass, after each subpass.
    pub timestamps: Option<TimestampQueries>,
    /// Occlusion query counting the pixels lit per sample (MSAA).
    pub edge_queries: Option<TimestampQueries>,
    /// The quads of bevy_ui drawn in the pass (`gpu::ui`), from the view's first frame with
    /// in-pass UI on.
    pub ui_buffers: Option<super::ui::UiBuffers>,
    pub last_used: u64,
}

impl TileBackend {
    /// Creates the backend's shared objects on `context`.
    pub fn new(context: VulkanContext) -> Result<Self, vk::Result> {
        let mut backend = Self {
            layouts: None,
            shaders: None,
            cluster_assign: vk::Pipeline::null(),
            zero_buffer: None,
            zero_buffer_filled: false,
            samplers: Samplers::default(),
            shadow_map_views: ShadowMapViews::default(),
            materials: MaterialSets::default(),
            render_passes: HashMap::default(),
            views: EntityHashMap::default(),
            initialized_outputs: HashMap::default(),
            graveyard: Graveyard::default(),
            staging: StagingBelt::default(),
            frame: 0,
            pending_updates: Vec::new(),
            reported: HashSet::default(),
            teardown_wait: TEARDOWN_WAIT,
            frames_in_flight: Default::default(),
            camera_timers: EntityHashMap::default(),
            context,
        };
        // On error, `Drop` releases whatever was created.
        backend.layouts = Some(TileLayouts::new(&backend.context)?);
        backend.shaders = Some(TileShaders::new(&backend.context)?);
        if let (Some(layouts), Some(shaders)) = (&backend.layouts, &backend.shaders) {
            backend.cluster_assign = backend.context.create_compute_pipeline(
                layouts.cluster_assign_layout,
                shaders.get(ShaderId::ClusterAssign, Variant::BASE),
            )?;
        }
        backend.zero_buffer = Some(backend.context.create_device_buffer(
            "tile zero vertex buffer",
            16,
            vk::BufferUsageFlags::VERTEX_BUFFER,
        )?);
        backend.samplers.create_fixed(&backend.context)?;
        Ok(backend)
    }

    /// Teardown when the GPU did not finish the crate's work in time: destroying objects a
    /// command buffer may still use is undefined behaviour, so every Vulkan object and memory
    /// block the crate holds is left to the driver (freed with the device or the process).
    fn leak_everything(&mut self, waited: std::time::Duration) {
        let counts = self.context.live.snapshot();
        bevy::log::error!(
            "bevy_tile_deferred: the GPU did not finish the tile path's last frame within \
             {waited:?}; leaking its {} Vulkan objects ({} bytes of GPU memory) instead of \
             destroying them while they may be in use",
            counts.vulkan_objects(),
            counts.gpu_allocated_bytes
        );
        // Forgotten rather than dropped: they hold wgpu views (kept alive for descriptor sets
        // the GPU may still read) and memory allocations; plain handles just go out of scope.
        std::mem::forget(std::mem::take(&mut self.views));
        std::mem::forget(std::mem::take(&mut self.render_passes));
        std::mem::forget(std::mem::take(&mut self.materials.by_key));
        std::mem::forget(std::mem::take(&mut self.materials.ui_images));
        std::mem::forget(std::mem::take(&mut self.graveyard));
        std::mem::forget(std::mem::take(&mut self.staging));
        std::mem::forget(std::mem::take(&mut self.shadow_map_views));
        std::mem::forget(self.zero_buffer.take());
        std::mem::forget(self.shaders.take());
        self.context.leak_memory = true;
    }

    /// Queues material resources for destruction after the GPU is done.
    pub fn retire_material(&mut self, material: MaterialResources) {
        retire_material(material, &mut self.graveyard, &mut self.pending_updates);
    }

    /// Queues a view's resources for destruction after the GPU is done.
    pub fn retire_view(&mut self, view: ViewResources) {
        let mut objects: Vec<DeadObject> = Vec::new();
        for (framebuffer, _) in view.framebuffers.into_values() {
            objects.push(Box::new(move |c: &VulkanContext| {
                c.destroy_framebuffer(framebuffer)
            }));
        }
        for (_, image) in view.attachments {
            objects.push(Box::new(move |c: &VulkanContext| {
                c.destroy_attachment_image(image)
            }));
        }
        for kept in view
            .lut_keep_alive
            .into_iter()
            .chain(view.environment_keep_alive)
        {
            objects.push(Box::new(move |_: &VulkanContext| drop(kept)));
        }
        for queries in [view.timestamps, view.edge_queries].into_iter().flatten() {
            objects.push(Box::new(move |c: &VulkanContext| {
                c.destroy_timestamp_queries(queries)
            }));
        }
        let (pool, buffers) = (
            view.pool,
            [
                view.view_buffer,
                view.light_buffer,
                view.cluster_buffer,
                view.reach_buffer,
                view.extent_buffer,
                view.cluster_stats.buffer,
                view.instance_buffer,
                view.animation_buffer,
                view.displacement_buffer,
                view.indirect_buffer,
            ],
        );
        let ui_buffers = view
            .ui_buffers
            .into_iter()
            .flat_map(|ui| [ui.vertices, ui.indices]);
        let buffers: Vec<DeviceBuffer> = buffers.into_iter().chain(ui_buffers).collect();
        objects.push(Box::new(move |c: &VulkanContext| {
            c.destroy_descriptor_pool(pool);
            buffers
                .into_iter()
                .for_each(|buffer| c.destroy_device_buffer(buffer));
        }));
        objects
            .into_iter()
            .for_each(|object| self.graveyard.retire(object));
    }

    /// Queues a render pass and its pipelines for destruction after the GPU is done.
    pub fn retire_pass(&mut self, pass: PassResources) {
        retire_pass(pass, &mut self.graveyard);
    }
}

/// Queues a render pass and its pipelines for destruction after the GPU is done.
pub(crate) fn retire_pass(pass: PassResources, graveyard: &mut Graveyard) {
    graveyard.retire(Box::new(move |c: &VulkanContext| {
        let split = pass.stencil_split.unwrap_or_default();
        let finish = pass.light_finish.unwrap_or_default();
        let box_shadows = pass.box_shadow_pipelines.into_values();
        let meshes = pass.mesh_pipelines.into_values().map(|mesh| mesh.pipeline);
        for pipeline in meshes.chain(box_shadows).chain([
            finish.sky,
            finish.fog_multiply,
            finish.fog_add,
            pass.lighting,
            pass.tonemap,
            pass.edge_counter,
            pass.depth_export,
            split.classify,
            split.lighting_per_sample,
            pass.ui_pipelines[0],
            pass.ui_pipelines[1],
            pass.ui_slice_pipeline,
            pass.egui_pipeline,
            pass.ui_gradient_pipelines[0],
            pass.ui_gradient_pipelines[1],
        ]) {
            if pipeline != vk::Pipeline::null() {
                c.destroy_pipeline(pipeline);
            }
        }
        for render_pass in pass.render_passes {
            c.destroy_render_pass(render_pass);
        }
    }));
}

/// How long teardown waits for the GPU to finish the crate's last frame before it gives up
/// and leaks the crate's objects (a hung or very slow GPU must not hold the app's exit).
const TEARDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for TileBackend {
    fn drop(&mut self) {
        let wait = self.teardown_wait;
        // Test hook (`TileFaultInjection::expire_teardown_wait`): a GPU that never finishes.
        let hung = self.context.faults.teardown_wait_expires();
        if hung || !self.graveyard.wait_for_submissions(&self.context, wait) {
            self.leak_everything(wait);
            return;
        }
        for view in self.views.drain().map(|(_, v)| v).collect::<Vec<_>>() {
            self.retire_view(view);
        }
        for (_, timer) in self.camera_timers.drain() {
            retire_timer(timer, &mut self.graveyard);
        }
        for pass in self
            .render_passes
            .drain()
            .map(|(_, p)| p)
            .collect::<Vec<_>>()
        {
            self.retire_pass(pass);
        }
        for material in self
            .materials
            .by_key
            .drain()
            .map(|(_, m)| m)
            .collect::<Vec<_>>()
        {
            self.retire_material(material);
        }
        self.graveyard.destroy_all(&self.context);
        self.staging.destroy_all(&self.context);
        self.shadow_map_views.destroy(&self.context);
        let context = &self.context;
        self.materials.destroy_pools(context);
        self.samplers.destroy(context);
        if let Some(buffer) = self.zero_buffer.take() {
            context.destroy_device_buffer(buffer);
        }
        if self.cluster_assign != vk::Pipeline::null() {
            context.destroy_pipeline(self.cluster_assign);
        }
        if let Some(shaders) = self.shaders.take() {
            shaders.destroy(context);
        }
        if let Some(layouts) = self.layouts.take() {
            layouts.destroy(context);
        }
    }
}

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
    pub(crate) pending_updates: &'a mut Vec<crate::tile_deferred::gpu::upload::BufferUpload>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    /// A mesh pipeline goes once no draw has used it for more than the keep window; one drawn
    /// within it stays.
    #[test]
    fn mesh_pipelines_unused_for_the_keep_window_are_taken() {
        let pipeline = |raw: u64, last_used: u64| MeshPipeline {
            pipeline: vk::Pipeline::from_raw(raw),
            last_used,
        };
        let (frame, keep) = (200, 60);
        let mut pipelines: HashMap<&str, MeshPipeline> = HashMap::default();
        pipelines.insert("drawn now", pipeline(1, frame));
        pipelines.insert("at the edge", pipeline(2, frame - keep));
        pipelines.insert("gone", pipeline(3, frame - keep - 1));
        pipelines.insert("long gone", pipeline(4, 0));
        let mut taken: Vec<u64> = take_stale_mesh_pipelines(&mut pipelines, frame, keep)
            .into_iter()
            .map(|p| p.as_raw())
            .collect();
        taken.sort();
        assert_eq!(taken, [3, 4]);
        let mut kept: Vec<&str> = pipelines.keys().copied().collect();
        kept.sort();
        assert_eq!(kept, ["at the edge", "drawn now"]);
        assert!(take_stale_mesh_pipelines(&mut pipelines, frame, keep).is_empty());
    }
}
