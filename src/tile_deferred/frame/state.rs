//! The state one view's frame works on: the [`TileBackend`] borrowed by part. Each stage of
//! `pass::render_view` takes the frame state and hands the helpers it calls only the parts they
//! write (the view's resources, one cache, the uploads), so no helper holds the whole backend
//! and the borrow checker keeps what they write apart.

use super::resources::ensure_view;
use crate::tile_deferred::{
    error::{TileError, TileResult},
    gpu::{
        backend::{PassResources, TileBackend, ViewDevice, ViewResources},
        material_sets::MaterialSets,
        pipelines::PassesKey,
        samplers::{SamplerCache, Samplers},
        shaders::{TileLayouts, TileShaders},
        shadow_views::ShadowMapViews,
    },
    scene::materials::MaterialCache,
};
use crate::vulkan::{Graveyard, VulkanContext, memory::DeviceBuffer};
use ash::vk;
use bevy::{
    platform::collections::{HashMap, HashSet},
    prelude::*,
    render::render_resource::TextureViewId,
};

/// One view's frame over the backend.
pub(crate) struct FrameState<'a> {
    /// What every stage reads and none writes: the device and the objects all views share.
    pub(crate) shared: SharedObjects<'a>,
    /// Render passes and their pipelines, by plan shape and lighting (stages 3 and 7; read by
    /// 9).
    pub(crate) render_passes: &'a mut HashMap<PassesKey, PassResources>,
    /// Materials' sets and buffers (stage 5; read by 9).
    pub(crate) materials: &'a mut MaterialSets,
    /// Samplers by descriptor, created on first use (stages 5 and 6).
    pub(crate) samplers: &'a mut Samplers,
    /// The crate's views of Bevy's shadow maps (stage 6).
    pub(crate) shadow_map_views: &'a mut ShadowMapViews,
    /// This view's attachments, framebuffers, buffers, sets, queries and plan caches.
    pub(crate) view: &'a mut ViewResources,
    /// Buffer uploads for the frame's command buffer: stages 5 and 6 queue them, 9 takes them.
    pub(crate) pending_updates: &'a mut Vec<crate::tile_deferred::gpu::upload::BufferUpload>,
    /// The zero vertex buffer holds its zeros (the first recorded frame fills it).
    pub(crate) zero_buffer_filled: &'a mut bool,
    /// Where a replaced object waits until the GPU is done with it.
    pub(crate) graveyard: &'a mut Graveyard,
    /// The buffers the frame's uploads are copied from (stage 9).
    pub(crate) staging: &'a mut crate::tile_deferred::gpu::staging::StagingBelt,
    /// Output image views wgpu has seen initialised (stage 8).
    pub(crate) initialized_outputs: &'a mut HashMap<TextureViewId, u64>,
    /// Warnings given once per camera.
    pub(crate) reported: &'a mut HashSet<(Entity, &'static str)>,
    /// The render frame's number (what `last_used` fields are stamped with).
    pub(crate) frame: u64,
}

/// The backend's objects every view reads: the device, the shared layouts and shaders, the
/// light assignment's pipeline and the zero vertex buffer.
#[derive(Clone, Copy)]
pub(crate) struct SharedObjects<'a> {
    pub(crate) context: &'a VulkanContext,
    pub(crate) layouts: &'a TileLayouts,
    pub(crate) shaders: &'a TileShaders,
    pub(crate) cluster_assign: vk::Pipeline,
    pub(crate) zero_buffer: &'a DeviceBuffer,
}

impl<'a> FrameState<'a> {
    /// Borrows `backend` by part for a frame of `view`, whose resources are created the first
    /// time it is seen.
    pub(crate) fn begin(backend: &'a mut TileBackend, view: Entity) -> TileResult<Self> {
        let TileBackend {
            layouts,
            shaders,
            cluster_assign,
            zero_buffer,
            zero_buffer_filled,
            samplers,
            shadow_map_views,
            materials,
            render_passes,
            views,
            initialized_outputs,
            graveyard,
            staging,
            frame,
            pending_updates,
            reported,
            context,
            ..
        } = backend;
        let missing = |step| TileError::Missing { step };
        let layouts = layouts
            .as_ref()
            .ok_or(missing("finding the tile layouts"))?;
        let shaders = shaders
            .as_ref()
            .ok_or(missing("finding the tile shaders"))?;
        let zero_buffer = zero_buffer
            .as_ref()
            .ok_or(missing("finding the zero vertex buffer"))?;
        let view = ensure_view(context, layouts, views, view, *frame)?;
        Ok(Self {
            shared: SharedObjects {
                context,
                layouts,
                shaders,
                cluster_assign: *cluster_assign,
                zero_buffer,
            },
            render_passes,
            materials,
            samplers,
            shadow_map_views,
            view,
            pending_updates,
            zero_buffer_filled,
            graveyard,
            staging,
            initialized_outputs,
            reported,
            frame: *frame,
        })
    }

    /// What the view's attachments, buffers and sets are made and written with (stages 4 and
    /// 6), beside the view's resources.
    pub(crate) fn view_device(&mut self) -> (ViewDevice<'_>, &mut ViewResources) {
        let device = ViewDevice {
            context: self.shared.context,
            layouts: self.shared.layouts,
            graveyard: self.graveyard,
            lut_sampler: self.samplers.lut,
            attachment_sampler: self.samplers.attachment,
            shadow_sampler: self.samplers.shadow,
            pending_updates: self.pending_updates,
        };
        (device, self.view)
    }

    /// What making the drawn materials' sets writes (stage 5).
    pub(crate) fn material_cache(&mut self) -> MaterialCache<'_> {
        MaterialCache {
            sets: self.materials,
            samplers: SamplerCache {
                context: self.shared.context,
                samplers: self.samplers,
            },
            layout: self.shared.layouts.material,
            pending_updates: self.pending_updates,
            graveyard: self.graveyard,
            frame: self.frame,
        }
    }

    /// The samplers, created on first use (the environment's, stage 6).
    pub(crate) fn sampler_cache(&mut self) -> SamplerCache<'_> {
        SamplerCache {
            context: self.shared.context,
            samplers: self.samplers,
        }
    }

    /// The view's command buffer never runs: wgpu gave no Vulkan encoder to record it (a lost
    /// device), or a test dropped it unsubmitted (`TileFault::Submit`). What it carried for
    /// later frames goes back: the queued buffer uploads (material data written once), the
    /// zero buffer's first fill, and the query slots it claimed (never written, so never to be
    /// read). Returns `why`, the view's error.
    pub(crate) fn command_buffer_lost(
        &mut self,
        updates: Vec<crate::tile_deferred::gpu::upload::BufferUpload>,
        filled_zero_buffer: bool,
        why: TileError,
    ) -> TileError {
        self.pending_updates.splice(0..0, updates);
        if filled_zero_buffer {
            *self.zero_buffer_filled = false;
        }
        for queries in [&mut self.view.timestamps, &mut self.view.edge_queries]
            .into_iter()
            .flatten()
        {
            queries.unrecorded(self.frame);
        }
        self.view.cluster_stats.unrecorded();
        why
    }

    /// The render passes of `key` (made by stage 3).
    pub(crate) fn passes(&mut self, key: &PassesKey) -> TileResult<&mut PassResources> {
        self.render_passes.get_mut(key).ok_or(TileError::Missing {
            step: "finding the frame's render passes",
        })
    }
}
