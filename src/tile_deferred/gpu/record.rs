//! Recording a tile view's frame with ash, on a command encoder used only through wgpu's
//! `as_hal_mut` (wgpu panics if one encoder mixes wgpu commands and raw recording).

use super::{
    backend::{LightFinishPipelines, StencilSplitPipelines},
    indirect::{COMMAND_STRIDE, IndirectCall, IndirectDraws},
    mesh_draw::RecordedDraw,
    types::{GpuClusterAssignParams, GpuPushConstants, GpuTonemapParams},
};
use crate::tile_deferred::plan::TransparentPass;
use crate::vulkan::VulkanContext;
use ash::vk;
use bevy::render::{
    render_resource::{CommandEncoderDescriptor, IndexFormat},
    renderer::RenderContext,
};
use wgpu::hal::{self, api::Vulkan};

/// What the mesh draws last bound (null and none before the first).
struct BoundMesh {
    pipeline: vk::Pipeline,
    material_set: vk::DescriptorSet,
    vertex_buffer: *const hal::vulkan::Buffer,
    index: Option<(*const hal::vulkan::Buffer, IndexFormat)>,
}

impl Default for BoundMesh {
    fn default() -> Self {
        Self {
            pipeline: vk::Pipeline::null(),
            material_set: vk::DescriptorSet::null(),
            vertex_buffer: std::ptr::null(),
            index: None,
        }
    }
}

/// A logical pass of the frame, in the order the compiled plan runs them (each a subpass of the
/// one render pass, or (unmerged) a render pass of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Gbuffer,
    Lighting,
    Transparent,
    Tonemap,
    DepthExport,
    Ui,
}

impl Step {
    /// The step of the plan's logical pass `name` (see `plan::names`).
    pub(crate) fn of(name: &str) -> Option<Self> {
        use crate::tile_deferred::plan::names;
        Some(match name {
            names::GBUFFER => Self::Gbuffer,
            names::LIGHTING => Self::Lighting,
            names::TRANSPARENT => Self::Transparent,
            names::TONEMAP => Self::Tonemap,
            names::DEPTH_EXPORT => Self::DepthExport,
            names::UI => Self::Ui,
            _ => return None,
        })
    }
}

/// One `VkRenderPass` of the frame with its framebuffer.
pub(crate) struct RecordedPass {
    pub(crate) render_pass: vk::RenderPass,
    pub(crate) framebuffer: vk::Framebuffer,
    pub(crate) clear_values: Vec<vk::ClearValue>,
}

/// Invocations per workgroup of `cluster_assign.comp` (its `local_size_x`).
pub(crate) const CLUSTER_ASSIGN_GROUP: u32 = 64;

/// The light assignment's compute dispatch (`shaders/cluster_assign.comp`), recorded after the
/// uploads and before the render pass.
pub(crate) struct ClusterDispatch {
    pub(crate) pipeline: vk::Pipeline,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) params: GpuClusterAssignParams,
    /// Workgroups: one invocation per cluster.
    pub(crate) groups: u32,
    /// The statistics buffer and the byte offset of this frame's slot (zeroed before the
    /// dispatch), where the frame gathers them.
    pub(crate) stats: Option<(vk::Buffer, u64)>,
}

/// The `ui` subpass's draws: bevy_ui's quads, batch by batch in Bevy's order (`gpu::ui`), then
/// egui's meshes, each with its scissor.
pub(crate) struct UiRecording {
    pub(crate) layout: vk::PipelineLayout,
    /// The UI view's `clip_from_world`, column-major (ui.vert's push constant).
    pub(crate) clip_from_world: [f32; 16],
    pub(crate) vertex_buffer: vk::Buffer,
    pub(crate) index_buffer: vk::Buffer,
    pub(crate) batches: Vec<UiRecordedBatch>,
}

/// One batch of the `ui` subpass: its pipeline (nodes, box shadows, sliced images or egui, all
/// with the UI pipeline layout), its image set (`None` for box shadows), its range of indices,
/// and its scissor (egui's clip rectangle; `None`: the render area's, as set for the pass).
/// Batches with a scissor come after those without.
pub(crate) struct UiRecordedBatch {
    pub(crate) pipeline: vk::Pipeline,
    pub(crate) image_set: Option<vk::DescriptorSet>,
    pub(crate) indices: std::ops::Range<u32>,
    pub(crate) scissor: Option<vk::Rect2D>,
}

/// Everything the raw recording needs, gathered beforehand.
pub(crate) struct Recording {
    /// One render pass whose subpasses are G-buffer, lighting and tonemap (the merged tiers;
    /// single-sample frames without transparent meshes: G-buffer and lighting), or one render
    /// pass for each (the unmerged tier).
    pub(crate) passes: Vec<RecordedPass>,
    pub(crate) render_area: vk::Rect2D,
    pub(crate) pipeline_layout: vk::PipelineLayout,
    pub(crate) view_set: vk::DescriptorSet,
    pub(crate) gbuffer_set: vk::DescriptorSet,
    pub(crate) tonemap_set: vk::DescriptorSet,
    /// The one lighting draw (with the stencil split: of the interior pixels).
    pub(crate) lighting: vk::Pipeline,
    /// The lighting draw writes the tone-mapped output (no tonemap subpass): it reads the
    /// tonemap set too.
    pub(crate) lighting_tonemaps: bool,
    pub(crate) tonemap: vk::Pipeline,
    pub(crate) tonemap_params: GpuTonemapParams,
    pub(crate) zero_buffer: vk::Buffer,
    pub(crate) fill_zero_buffer: bool,
    pub(crate) instance_buffer: vk::Buffer,
    /// The buffer uploads the frame carries (what goes back to the queue if it never runs)...
    pub(crate) updates: Vec<super::upload::BufferUpload>,
    /// ...and the staging buffer holding them with the copies out of it (`None` until staged
    /// just before recording, and when there is nothing to copy).
    pub(crate) staged: Option<super::staging::StagedUploads>,
    pub(crate) draws: Vec<RecordedDraw>,
    /// Where the draws are recorded indirectly: the view's indirect buffer (which this frame's
    /// uploads fill with the commands) and the calls of the G-buffer and transparent draws.
    pub(crate) indirect: Option<(vk::Buffer, IndirectDraws)>,
    /// Where the plan has its transparent pass, if it has one.
    pub(crate) transparent_pass: TransparentPass,
    /// The transparent pass's draws, back to front.
    pub(crate) transparent_draws: Vec<RecordedDraw>,
    /// Query pool and first query: marks before the pass and after each subpass.
    pub(crate) timestamps: Option<(vk::QueryPool, u32)>,
    /// Samples per pixel of the pass.
    pub(crate) samples: u32,
    /// `msaa_flags` bits.
    pub(crate) msaa_flags: u32,
    /// The shaders' `DEBUG_VIEW_*` value.
    pub(crate) debug_view: u32,
    /// Test hook (`TileFaultInjection::skip_lighting_draws`): the lighting subpass records no
    /// draw.
    pub(crate) skip_lighting: bool,
    /// Occlusion query counting the pixels lit per sample (with MSAA).
    pub(crate) edge_query: Option<(vk::QueryPool, u32)>,
    /// With MSAA: the stencil split's pipelines (`None`: per-sample-index draws).
    pub(crate) stencil_split: Option<StencilSplitPipelines>,
    /// With MSAA and per-sample-index draws: the edge-counting classification pipeline.
    pub(crate) edge_counter: vk::Pipeline,
    /// Where the plan has the depth export (gizmo frames; null otherwise).
    pub(crate) depth_export: vk::Pipeline,
    /// Before an HDR camera's transparent pass: the lighting subpass draws the skybox
    /// (`sky_into_light`) and the fog (`fog_into_light`) into the light with these.
    pub(crate) light_finish: Option<LightFinishPipelines>,
    pub(crate) sky_into_light: bool,
    pub(crate) fog_into_light: bool,
    /// The plan's logical passes in the order it runs them (the G-buffer first).
    pub(crate) steps: Vec<Step>,
    /// Where the GPU assigns the lights to the clusters this frame.
    pub(crate) cluster_dispatch: Option<ClusterDispatch>,
    /// Where the plan has the `ui` subpass: what it draws.
    pub(crate) ui: Option<UiRecording>,
}

/// What a recording that never reached a command buffer still owes later frames.
pub(crate) struct Unrecorded {
    /// The buffer uploads it carried.
    pub(crate) updates: Vec<super::upload::BufferUpload>,
    /// Whether it was to fill the zero buffer.
    pub(crate) fill_zero_buffer: bool,
}

/// Records the frame on a new encoder used only through `as_hal_mut`, and returns its command
/// buffer (wgpu panics if one encoder mixes wgpu commands and raw recording); what it carried,
/// unrecorded, where wgpu has no Vulkan encoder to give (a lost or destroyed device).
pub(crate) fn record(
    context: &VulkanContext,
    ctx: &mut RenderContext,
    recording: Recording,
) -> Result<wgpu::CommandBuffer, Unrecorded> {
    let mut encoder = ctx
        .render_device()
        .create_command_encoder(&CommandEncoderDescriptor {
            label: Some("tile_deferred"),
        });
    let device = &context.device;
    // SAFETY: this encoder is used only here, through the hal encoder handed to the closure;
    // everything recorded refers to objects that outlive the command buffer's execution (the
    // crate retires its objects through the graveyard after the GPU is done).
    let recorded = unsafe {
        encoder.as_hal_mut::<Vulkan, _, _>(|hal_encoder| {
            let Some(hal_encoder) = hal_encoder else {
                return false;
            };
            let cb = hal_encoder.raw_handle();
            record_into(device, hal_encoder, cb, &recording);
            true
        })
    };
    if recorded {
        Ok(encoder.finish())
    } else {
        Err(Unrecorded {
            updates: recording.updates,
            fill_zero_buffer: recording.fill_zero_buffer,
        })
    }
}

/// # Safety
/// `cb` must be the recording command buffer of `hal_encoder`, and every handle in `recording`
/// must be alive until the command buffer has executed.
unsafe fn record_into(
    device: &ash::Device,
    hal_encoder: &mut hal::vulkan::CommandEncoder,
    cb: vk::CommandBuffer,
    r: &Recording,
) {
    let recorder = Recorder { device, cb, r };
    // SAFETY: the caller guarantees `cb` is recording and the handles live (every call below);
    // each step leaves the command buffer in the state the next one records in.
    unsafe {
        recorder.uploads();
        recorder.assign_lights();
        recorder.begin_frame();
        let mut push = recorder.gbuffer(hal_encoder);
        // `plan::check_shape` made sure the G-buffer pass comes first.
        for (index, step) in r.steps.iter().enumerate().skip(1) {
            match step {
                Step::Gbuffer => {}
                Step::Lighting => recorder.lighting(&mut push, index),
                Step::Transparent => recorder.transparent(hal_encoder, index),
                Step::Tonemap => recorder.tonemap(&mut push, index),
                Step::DepthExport => recorder.depth_export(index),
                Step::Ui => recorder.ui(index),
            }
        }
        recorder.end_frame();
    }
}

/// The command buffer being recorded and what goes into it.
struct Recorder<'a> {
    device: &'a ash::Device,
    cb: vk::CommandBuffer,
    r: &'a Recording,
}

impl Recorder<'_> {
    /// Uploads: wait for earlier readers of these buffers (previous frames), write, then make
    /// the writes visible to this frame's vertex, uniform and storage reads.
    unsafe fn uploads(&self) {
        let (device, cb, r) = (self.device, self.cb, self.r);
        let stats_slot = r.cluster_dispatch.as_ref().and_then(|d| d.stats);
        if r.staged.is_none() && !r.fill_zero_buffer && stats_slot.is_none() {
            return;
        }
        // The light assignment reads its inputs in the compute stage, and an earlier frame's
        // assignment wrote the statistics slot this frame zeroes.
        let readers = vk::PipelineStageFlags::DRAW_INDIRECT
            | vk::PipelineStageFlags::VERTEX_INPUT
            | vk::PipelineStageFlags::VERTEX_SHADER
            | vk::PipelineStageFlags::FRAGMENT_SHADER
            | vk::PipelineStageFlags::COMPUTE_SHADER;
        let before = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
        let after = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(
                vk::AccessFlags::INDIRECT_COMMAND_READ
                    | vk::AccessFlags::VERTEX_ATTRIBUTE_READ
                    | vk::AccessFlags::INDEX_READ
                    | vk::AccessFlags::UNIFORM_READ
                    | vk::AccessFlags::SHADER_READ
                    | vk::AccessFlags::SHADER_WRITE,
            );
        // A later wave rewrites bytes an earlier one wrote.
        let between_waves = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
        // SAFETY: see `record_into`; the staging buffer stays out of the belt's free list until
        // the GPU has finished this frame (`StagingBelt::seal`).
        unsafe {
            device.cmd_pipeline_barrier(
                cb,
                readers,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &[before],
                &[],
                &[],
            );
            if r.fill_zero_buffer {
                device.cmd_fill_buffer(cb, r.zero_buffer, 0, vk::WHOLE_SIZE, 0);
            }
            if let Some((buffer, offset)) = stats_slot {
                let size = (super::cluster_stats::SLOT_WORDS * 4) as u64;
                device.cmd_fill_buffer(cb, buffer, offset, size, 0);
            }
            if let Some(staged) = &r.staged {
                for (index, wave) in staged.plan.waves.iter().enumerate() {
                    if index > 0 {
                        device.cmd_pipeline_barrier(
                            cb,
                            vk::PipelineStageFlags::TRANSFER,
                            vk::PipelineStageFlags::TRANSFER,
                            vk::DependencyFlags::empty(),
                            &[between_waves],
                            &[],
                            &[],
                        );
                    }
                    for (destination, regions) in wave {
                        device.cmd_copy_buffer(cb, staged.source, *destination, regions);
                    }
                }
            }
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER,
                readers,
                vk::DependencyFlags::empty(),
                &[after],
                &[],
                &[],
            );
        }
    }

    /// The light assignment: every cluster's light masks written by a compute dispatch, made
    /// visible to the fragment shaders that read them and to the CPU that reads the
    /// statistics. Earlier frames' lighting read the masks this overwrites: the uploads'
    /// barrier (from every reader stage) orders them first.
    unsafe fn assign_lights(&self) {
        let (device, cb) = (self.device, self.cb);
        let Some(dispatch) = &self.r.cluster_dispatch else {
            return;
        };
        let before = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_WRITE);
        let after = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::HOST_READ);
        // SAFETY: see `record_into`; the view set holds the dispatch's buffers, and its layout
        // is compatible with the compute pipeline's for set 0.
        unsafe {
            // Earlier frames' lighting reads of the masks (write-after-read), and an earlier
            // assignment's writes (write-after-write; the uploads' barrier covers the frames
            // that uploaded).
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::FRAGMENT_SHADER | vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &[before],
                &[],
                &[],
            );
            device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, dispatch.pipeline);
            device.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                dispatch.layout,
                0,
                &[self.r.view_set],
                &[],
            );
            device.cmd_push_constants(
                cb,
                dispatch.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::bytes_of(&dispatch.params),
            );
            device.cmd_dispatch(cb, dispatch.groups, 1, 1);
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::FRAGMENT_SHADER | vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[after],
                &[],
                &[],
            );
        }
    }

    /// Writes timestamp `index` of the frame, when the view has timestamps.
    unsafe fn mark(&self, index: u32, stage: vk::PipelineStageFlags) {
        if let Some((pool, first)) = self.r.timestamps {
            // SAFETY: see `record_into`; the query was reset by `begin_frame`.
            unsafe {
                self.device
                    .cmd_write_timestamp(self.cb, stage, pool, first + index)
            };
        }
    }

    unsafe fn begin(&self, pass: &RecordedPass) {
        let info = vk::RenderPassBeginInfo::default()
            .render_pass(pass.render_pass)
            .framebuffer(pass.framebuffer)
            .render_area(self.r.render_area)
            .clear_values(&pass.clear_values);
        // SAFETY: see `record_into`.
        unsafe {
            self.device
                .cmd_begin_render_pass(self.cb, &info, vk::SubpassContents::INLINE)
        };
    }

    /// The next logical pass: the next subpass of the one render pass, or (unmerged) the next
    /// render pass. Viewport, scissor, bound sets and push constants persist across both.
    unsafe fn next_pass(&self, index: usize) {
        // SAFETY: see `record_into`.
        unsafe {
            match self.r.passes.get(index) {
                Some(pass) if self.r.passes.len() > 1 => {
                    self.device.cmd_end_render_pass(self.cb);
                    self.begin(pass);
                }
                _ => self
                    .device
                    .cmd_next_subpass(self.cb, vk::SubpassContents::INLINE),
            }
        }
    }

    /// Every fragment stage reads the same 48 bytes (see `GpuPushConstants`).
    unsafe fn push_constants(&self, push: &GpuPushConstants) {
        // SAFETY: see `record_into`.
        unsafe {
            self.device.cmd_push_constants(
                self.cb,
                self.r.pipeline_layout,
                vk::ShaderStageFlags::FRAGMENT,
                0,
                bytemuck::bytes_of(push),
            )
        };
    }

    unsafe fn bind_set(&self, index: u32, set: vk::DescriptorSet) {
        // SAFETY: see `record_into`.
        unsafe {
            self.device.cmd_bind_descriptor_sets(
                self.cb,
                vk::PipelineBindPoint::GRAPHICS,
                self.r.pipeline_layout,
                index,
                &[set],
                &[],
            )
        };
    }

    unsafe fn draw_fullscreen(&self, pipeline: vk::Pipeline) {
        // SAFETY: see `record_into`.
        unsafe {
            self.device
                .cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            self.device.cmd_draw(self.cb, 3, 1, 0, 0);
        }
    }

    /// Resets the frame's queries, marks its start and begins the first render pass with the
    /// viewport, scissor and view set every subpass uses.
    unsafe fn begin_frame(&self) {
        let (device, cb, r) = (self.device, self.cb, self.r);
        // SAFETY: see `record_into`.
        unsafe {
            if let Some((pool, first)) = r.timestamps {
                device.cmd_reset_query_pool(cb, pool, first, 4);
            }
            if let Some((pool, query)) = r.edge_query {
                device.cmd_reset_query_pool(cb, pool, query, 1);
            }
            self.mark(0, vk::PipelineStageFlags::TOP_OF_PIPE);
            self.begin(&r.passes[0]);
            // wgpu's convention: a negative viewport height flips Y, so Bevy's matrices work
            // as is.
            let area = r.render_area;
            let viewport = vk::Viewport {
                x: area.offset.x as f32,
                y: (area.offset.y + area.extent.height as i32) as f32,
                width: area.extent.width as f32,
                height: -(area.extent.height as f32),
                min_depth: 0.0,
                max_depth: 1.0,
            };
            device.cmd_set_viewport(cb, 0, &[viewport]);
            device.cmd_set_scissor(cb, 0, &[area]);
            self.bind_set(0, r.view_set);
        }
    }

    /// Subpass 0: the G-buffer. Returns the push constants the later subpasses start from.
    unsafe fn gbuffer(&self, hal_encoder: &mut hal::vulkan::CommandEncoder) -> GpuPushConstants {
        let (device, cb, r) = (self.device, self.cb, self.r);
        let push = GpuPushConstants {
            tonemap: r.tonemap_params,
            msaa: [0, r.samples, r.msaa_flags, r.debug_view],
        };
        // SAFETY: see `record_into`; the mesh buffers behind the bindings' pointers are alive
        // while the render system runs (see `draws::mesh_bindings`).
        unsafe {
            // The G-buffer shader reads the debug view (debug views write no emissive).
            self.push_constants(&push);
            device.cmd_bind_vertex_buffers(cb, 1, &[r.zero_buffer, r.instance_buffer], &[0, 0]);
            let calls = r
                .indirect
                .as_ref()
                .map(|(buffer, d)| (*buffer, &d.opaque[..]));
            self.mesh_draws(hal_encoder, &r.draws, calls);
            self.mark(1, vk::PipelineStageFlags::BOTTOM_OF_PIPE);
        }
        push
    }

    /// Instanced mesh draws, binding each pipeline, material set and mesh buffer only when it
    /// changes: one `vkCmdDraw*` per draw, or, with `indirect` (the view's indirect buffer and
    /// the calls of `draws`), one `vkCmdDraw*Indirect` per call.
    unsafe fn mesh_draws(
        &self,
        hal_encoder: &mut hal::vulkan::CommandEncoder,
        draws: &[RecordedDraw],
        indirect: Option<(vk::Buffer, &[IndirectCall])>,
    ) {
        let mut bound = BoundMesh::default();
        // SAFETY: see `record_into`; the mesh buffers behind the bindings' pointers are alive
        // while the render system runs (see `draws::mesh_bindings`), and the indirect buffer's
        // commands were copied in by this command buffer's uploads, before the render pass.
        unsafe {
            match indirect {
                Some((buffer, calls)) => {
                    for call in calls {
                        let draw = &draws[call.first_draw];
                        self.bind_mesh(hal_encoder, &mut bound, draw);
                        if draw.binding.index.is_some() {
                            self.device.cmd_draw_indexed_indirect(
                                self.cb,
                                buffer,
                                call.offset(),
                                call.count,
                                COMMAND_STRIDE,
                            );
                        } else {
                            self.device.cmd_draw_indirect(
                                self.cb,
                                buffer,
                                call.offset(),
                                call.count,
                                COMMAND_STRIDE,
                            );
                        }
                    }
                }
                None => {
                    for draw in draws {
                        self.bind_mesh(hal_encoder, &mut bound, draw);
                        let b = &draw.binding;
                        match b.index {
                            Some((_, first_index, count, _)) => self.device.cmd_draw_indexed(
                                self.cb,
                                count,
                                draw.instance_count,
                                first_index,
                                b.first_vertex,
                                draw.first_instance,
                            ),
                            None => self.device.cmd_draw(
                                self.cb,
                                b.vertex_count,
                                draw.instance_count,
                                b.first_vertex as u32,
                                draw.first_instance,
                            ),
                        }
                    }
                }
            }
        }
    }

    /// Binds what `draw` draws with, where it differs from what `bound` says is bound.
    ///
    /// # Safety
    /// As `mesh_draws`: the command buffer is recording inside a subpass, and the buffers behind
    /// the binding's pointers are alive.
    unsafe fn bind_mesh(
        &self,
        hal_encoder: &mut hal::vulkan::CommandEncoder,
        bound: &mut BoundMesh,
        draw: &RecordedDraw,
    ) {
        use hal::CommandEncoder as _;
        // SAFETY: the caller's guarantees; the pointers are only read.
        unsafe {
            if draw.pipeline != bound.pipeline {
                self.device.cmd_bind_pipeline(
                    self.cb,
                    vk::PipelineBindPoint::GRAPHICS,
                    draw.pipeline,
                );
                bound.pipeline = draw.pipeline;
            }
            if draw.material_set != bound.material_set {
                self.bind_set(1, draw.material_set);
                bound.material_set = draw.material_set;
            }
            let b = &draw.binding;
            if !std::ptr::eq(b.vertex_buffer, bound.vertex_buffer) {
                hal_encoder.set_vertex_buffer(
                    0,
                    hal::BufferBinding::new_unchecked(&*b.vertex_buffer, 0, None),
                );
                bound.vertex_buffer = b.vertex_buffer;
            }
            if let Some((buffer, format)) = b.index_buffer()
                && bound.index != Some((buffer, format))
            {
                hal_encoder
                    .set_index_buffer(hal::BufferBinding::new_unchecked(&*buffer, 0, None), format);
                bound.index = Some((buffer, format));
            }
        }
    }

    /// Logical pass `index` (1): lighting from the G-buffer, read on tile (unmerged: from
    /// memory).
    unsafe fn lighting(&self, push: &mut GpuPushConstants, index: usize) {
        let (device, cb, r) = (self.device, self.cb, self.r);
        // SAFETY: see `record_into`.
        unsafe {
            self.next_pass(index);
            if r.skip_lighting {
                return;
            }
            self.bind_set(2, r.gbuffer_set);
            if r.lighting_tonemaps {
                self.bind_set(3, r.tonemap_set);
            }
            // The MSAA stencil split (Lauritzen): one draw classifies each pixel and marks edge
            // pixels with stencil 1 on all samples (the occlusion query around it counts N
            // samples per edge pixel); the lighting draw then runs once with stencil == 0, per
            // pixel, and once with stencil == 1, per sample.
            let per_sample_index_draws = if let Some(split) = &r.stencil_split {
                self.push_constants(push);
                device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, split.classify);
                if let Some((pool, query)) = r.edge_query {
                    device.cmd_begin_query(cb, pool, query, vk::QueryControlFlags::empty());
                }
                device.cmd_draw(cb, 3, 1, 0, 0);
                if let Some((pool, query)) = r.edge_query {
                    device.cmd_end_query(cb, pool, query);
                }
                self.draw_fullscreen(r.lighting);
                self.draw_fullscreen(split.lighting_per_sample);
                0
            } else {
                r.samples
            };
            // Otherwise (and without MSAA, once) the lighting draw runs once per sample index: interior pixels are lit by the sample-0 draw for all their samples, edge
            // pixels by each draw for its sample. The classification draw (no stencil, no
            // colour writes) counts the edge pixels, N samples each, as the stencil split's
            // does.
            if per_sample_index_draws > 1
                && r.edge_counter != vk::Pipeline::null()
                && let Some((pool, query)) = r.edge_query
            {
                self.push_constants(push);
                device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, r.edge_counter);
                device.cmd_begin_query(cb, pool, query, vk::QueryControlFlags::empty());
                device.cmd_draw(cb, 3, 1, 0, 0);
                device.cmd_end_query(cb, pool, query);
            }
            for sample in 0..per_sample_index_draws {
                push.msaa[0] = sample;
                self.push_constants(push);
                self.draw_fullscreen(r.lighting);
            }
            // An HDR camera's transparent pass comes next: Bevy blends it over the skybox and
            // over fogged surfaces, so they go into the light now (the skybox cube is in the
            // tonemap set).
            if let Some(finish) = &r.light_finish
                && (r.sky_into_light || r.fog_into_light)
            {
                // One shader module for the three draws: each statically uses the cube.
                self.bind_set(3, r.tonemap_set);
                if r.sky_into_light {
                    self.draw_fullscreen(finish.sky);
                }
                if r.fog_into_light {
                    self.draw_fullscreen(finish.fog_multiply);
                    self.draw_fullscreen(finish.fog_add);
                }
            }
            self.mark(2, vk::PipelineStageFlags::BOTTOM_OF_PIPE);
        }
    }

    /// Logical pass `index` (2, or 3 after an HDR camera's transparent pass): tonemap into the
    /// output.
    unsafe fn tonemap(&self, push: &mut GpuPushConstants, index: usize) {
        // SAFETY: see `record_into`.
        unsafe {
            self.next_pass(index);
            self.bind_set(3, self.r.tonemap_set);
            self.device
                .cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::GRAPHICS, self.r.tonemap);
            push.msaa[0] = 0;
            self.push_constants(push);
            self.device.cmd_draw(self.cb, 3, 1, 0, 0);
        }
    }

    /// Logical pass `index`: the transparent meshes, back to front, blended into the light (2,
    /// an HDR camera) or over the tone-mapped colour (3). The view set, the G-buffer set (the
    /// environment cubes), the push constants and, after tonemap, the tonemap set (the LUT the
    /// shader reads for an LDR camera) stay bound; an HDR camera's pass comes before tonemap and
    /// binds the tonemap set itself (its pipelines' layout has it).
    unsafe fn transparent(&self, hal_encoder: &mut hal::vulkan::CommandEncoder, index: usize) {
        // SAFETY: see `record_into`; the hal encoder is only used to bind mesh buffers.
        unsafe {
            self.next_pass(index);
            if matches!(
                self.r.transparent_pass,
                TransparentPass::BeforeTonemap { .. }
            ) {
                self.bind_set(3, self.r.tonemap_set);
            }
            self.device.cmd_bind_vertex_buffers(
                self.cb,
                1,
                &[self.r.zero_buffer, self.r.instance_buffer],
                &[0, 0],
            );
            let calls = (self.r.indirect.as_ref()).map(|(buffer, d)| (*buffer, &d.transparent[..]));
            self.mesh_draws(hal_encoder, &self.r.transparent_draws, calls);
        }
    }

    /// Logical pass `index`: the tile depth, read as an input attachment through the tonemap
    /// set, written into Bevy's depth texture for the gizmos drawn after the pass. The next
    /// pass rebinds what it needs (the tonemap and transparent passes bind their pipelines).
    unsafe fn depth_export(&self, index: usize) {
        // SAFETY: see `record_into`.
        unsafe {
            self.next_pass(index);
            self.bind_set(3, self.r.tonemap_set);
            self.draw_fullscreen(self.r.depth_export);
        }
    }

    /// Logical pass `index`, last: bevy_ui's quads blended over the output, batch by batch,
    /// then egui's meshes, with the UI pipeline layout (its set 0 replaces the view set:
    /// nothing is drawn after). The viewport is the render area's, as Bevy's UI pass sets the
    /// camera's viewport; egui's draws narrow the scissor to their clip rectangles (the last
    /// draws of the pass: nothing after them needs the render area's scissor back).
    unsafe fn ui(&self, index: usize) {
        let (device, cb) = (self.device, self.cb);
        // SAFETY: see `record_into`; the UI buffers and image sets are the view's, alive until
        // the command buffer has executed.
        unsafe {
            self.next_pass(index);
            let Some(ui) = &self.r.ui else {
                return;
            };
            // The pipelines share the layout: the push constant stays across pipeline changes,
            // and the box shadow pipeline uses no set.
            device.cmd_push_constants(
                cb,
                ui.layout,
                vk::ShaderStageFlags::VERTEX,
                0,
                bytemuck::cast_slice(&ui.clip_from_world),
            );
            device.cmd_bind_vertex_buffers(cb, 0, &[ui.vertex_buffer], &[0]);
            device.cmd_bind_index_buffer(cb, ui.index_buffer, 0, vk::IndexType::UINT32);
            let mut bound = vk::Pipeline::null();
            for batch in &ui.batches {
                if batch.pipeline != bound {
                    device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, batch.pipeline);
                    bound = batch.pipeline;
                }
                let indices = &batch.indices;
                if let Some(scissor) = batch.scissor {
                    device.cmd_set_scissor(cb, 0, &[scissor]);
                }
                if let Some(set) = &batch.image_set {
                    device.cmd_bind_descriptor_sets(
                        cb,
                        vk::PipelineBindPoint::GRAPHICS,
                        ui.layout,
                        0,
                        &[*set],
                        &[],
                    );
                }
                device.cmd_draw_indexed(cb, indices.end - indices.start, 1, indices.start, 0, 0);
            }
        }
    }

    /// Ends the frame's last render pass and marks its end (the last timestamp covers the
    /// tonemap, transparent and depth export subpasses).
    unsafe fn end_frame(&self) {
        // SAFETY: see `record_into`.
        unsafe {
            self.device.cmd_end_render_pass(self.cb);
            self.mark(3, vk::PipelineStageFlags::BOTTOM_OF_PIPE);
        }
    }
}
