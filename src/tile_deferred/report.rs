//! What the tile path really did for each camera last frame, readable from the main world:
//! the compiled plan and the Vulkan render pass that was created from it.

use crate::frame_graph::{CompiledFrame, ResourceId, ShadowMaps};
use crate::vulkan::{
    LiveObjects, ResourceCounts, memory::AttachmentImage, render_pass::RenderPassDescription,
};
use ash::vk;
use bevy::{platform::collections::HashMap, prelude::*};
use std::sync::{Arc, Mutex};

/// One attachment of the `VkRenderPass` the backend created.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VulkanAttachmentReport {
    /// Which of the frame's `VkRenderPass`es (in recording order) the attachment belongs to:
    /// always 0 for the merged tiers, 0..3 for the unmerged one.
    pub render_pass: usize,
    /// The frame-graph attachment's name.
    pub name: String,
    /// `VkFormat` as its raw value.
    pub format: i32,
    /// Samples per pixel.
    pub samples: u32,
    /// `VK_ATTACHMENT_LOAD_OP_*` as written in the render pass ("LOAD", "CLEAR", "DONT_CARE").
    pub load_op: String,
    /// `VK_ATTACHMENT_STORE_OP_*` ("STORE", "DONT_CARE", "NONE").
    pub store_op: String,
    /// Why the plan loads it so, naming the pass responsible ("cleared: first use, by
    /// `gbuffer`", "loaded: written by `gbuffer` in an earlier render pass, read by `lighting`
    /// (not merged: ...)").
    pub load_reason: String,
    /// Why the plan stores it so ("stored: needed after the frame (presented or read back)",
    /// "DONT_CARE: nothing reads it after this render pass").
    pub store_reason: String,
    /// Initial and final layouts as written in the render pass.
    pub layouts: (String, String),
    /// The `VkImageUsageFlags` of the image the crate created (None for the camera's output).
    pub image_usage: Option<u32>,
    /// The image lives in `LAZILY_ALLOCATED` memory.
    pub lazily_allocated: bool,
}

/// GPU time of a tile view's native pass, from the crate's own timestamp queries (a few
/// frames old: they are read without waiting).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileGpuTimes {
    /// G-buffer subpass, ms.
    pub gbuffer_ms: f64,
    /// Lighting subpass, ms. Where the lighting tone maps (single-sample frames without
    /// transparent meshes: no tonemap subpass), the tone mapping too.
    pub lighting_ms: f64,
    /// Tonemap subpass, and the transparent subpass where the frame has one (before or after
    /// tonemap: one timestamp closes both), ms. Where the lighting tone maps, only the render
    /// pass's end (and a depth export): about zero.
    pub tonemap_ms: f64,
}

impl TileGpuTimes {
    /// The whole native pass, ms.
    pub fn total_ms(&self) -> f64 {
        self.gbuffer_ms + self.lighting_ms + self.tonemap_ms
    }
}

/// A view's light clusters in one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileClusterStats {
    /// Clusters across, down and in depth (screen tiles x, y and depth slices).
    pub dimensions: [u32; 3],
    /// Screen pixels per cluster tile, along x and y.
    pub tile_size: u32,
    /// The most point and spot lights one cluster holds.
    pub max_lights_per_cluster: u32,
    /// Lights per cluster, averaged over the clusters holding at least one.
    pub mean_lights_per_occupied_cluster: f32,
    /// CPU time spent assigning the lights to clusters this frame, ms: the whole assignment
    /// on the CPU, or (`assigned_on_gpu`) the preparation of the GPU's inputs.
    pub assignment_ms: f64,
    /// Bytes of cluster light masks written this frame (uploaded, or written by the GPU).
    pub mask_bytes: u64,
    /// The lights were assigned by a compute dispatch before the render pass (the default);
    /// `max_lights_per_cluster` and `mean_lights_per_occupied_cluster` then come back from the
    /// GPU a frame or more late (zero until the first do). `false`: assigned on the CPU
    /// ([`TileCpuLightAssignment`](super::scene::params::TileCpuLightAssignment)).
    pub assigned_on_gpu: bool,
}

/// How a view's opaque instanced draws were made for a frame. Batching every visible mesh costs
/// CPU time in proportion to the meshes in view; a frame with the same meshes in view and the
/// same batches rewrites only the instances whose entities changed (moved, animated).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TileInstanceBatches {
    /// Batched from every visible mesh: the view's first frame, or meshes came into or left the
    /// view, changed mesh, material, skinning or lightmap, a material or mesh asset changed, or
    /// the sample count did.
    #[default]
    Built,
    /// Last frame's batches, with `rewritten` instances written again.
    Kept {
        /// The instances whose entities changed since the last frame.
        rewritten: usize,
        /// The copy regions they (and the transparent meshes' instances, sorted again each
        /// frame) were written with: one per run of consecutive instances.
        runs: usize,
    },
    /// Batched again from every visible mesh although last frame's batches could have been
    /// kept: the instances that changed were scattered over `scattered_runs` copy regions (more
    /// than 64 and than two per draw). The batches now hold the meshes that changed this frame
    /// first, so the next frames write them as one run per batch. Every instance is written
    /// this frame. A view's batches are kept 4 frames before their first regroup, and twice as
    /// long before each next one (up to 256 frames), so meshes that change at random cannot
    /// make every frame write everything.
    Regrouped {
        /// The copy regions the kept batches' changed instances needed.
        scattered_runs: usize,
    },
}

/// How a tile camera records its mesh draws (`TileDeferred::indirect_draws`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TileMeshDrawMode {
    /// Each draw is a command in the view's indirect buffer; consecutive draws that bind the
    /// same pipeline, material and mesh buffers share one call.
    Indirect {
        /// The most draws one call draws: the device's `maxDrawIndirectCount`, or 1 where it
        /// has no `multiDrawIndirect`.
        max_draws_per_call: u32,
    },
    /// `vkCmdDraw` and `vkCmdDrawIndexed`, one per draw.
    Direct {
        /// Why not indirectly: the camera's setting, or what the device lacks.
        why: String,
    },
}

/// A camera's last tile-deferred frame.
///
/// `compiled`, `priced`, `shadow_maps`, `ui_pass` and `gizmo_pass` hold the frame-graph
/// compiler's types, whose API is unstable; [`Self::bytes_per_frame`] and the plain fields are
/// the stable read.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileViewReport {
    /// The frame-graph compiler's plan: the passes the tile path records.
    pub compiled: CompiledFrame,
    /// The frame as it runs on the GPU, for its price: Bevy's shadow passes (one stored depth
    /// pass per map the frame renders), then the plan above, its lighting sampling every map.
    /// Without shadows it is the plan above.
    pub priced: CompiledFrame,
    /// The shadow maps Bevy rendered for the frame (shared by every camera of the frame).
    pub shadow_maps: ShadowMaps,
    /// The attachments of the `VkRenderPass`es actually created, in order (render pass by render
    /// pass).
    pub attachments: Vec<VulkanAttachmentReport>,
    /// Subpasses of all the `VkRenderPass`es.
    pub subpass_count: usize,
    /// `VkRenderPass` objects recorded for this camera in that frame.
    pub render_passes_recorded: usize,
    /// Instanced mesh draws of the G-buffer subpass and the transparent pass.
    pub draws: usize,
    /// How those draws were recorded.
    pub mesh_draws: TileMeshDrawMode,
    /// The `vkCmdDraw*` calls that recorded them: as many as `draws` when drawn directly, fewer
    /// where one indirect call draws several.
    pub mesh_draw_calls: usize,
    /// Mesh instances drawn.
    pub instances: usize,
    /// Whether the G-buffer's instanced draws were batched again this frame or last frame's
    /// were kept, with only the instances that changed rewritten.
    pub instance_batches: TileInstanceBatches,
    /// Point and spot lights in the view's light clusters.
    pub clustered_lights: usize,
    /// The view's light clusters: their grid, how full they are and what assigning cost.
    pub clusters: TileClusterStats,
    /// Render-world frame number.
    pub frame: u64,
    /// GPU time per subpass, when the device has timestamps.
    pub gpu_times: Option<TileGpuTimes>,
    /// CPU time the crate spent preparing and recording this view, ms.
    pub cpu_ms: f64,
    /// Samples per pixel the frame was rendered with (after any fallback).
    pub samples: u32,
    /// With MSAA: the fraction of the view's pixels lit once per sample (edges), measured on
    /// the GPU by an occlusion query a few frames ago.
    pub per_sample_fraction: Option<f32>,
    /// bevy_ui drawn over the camera after the tile pass (feature `ui`), priced as its own wgpu
    /// passes, apart from the tile frame above: the main texture cleared, Bevy's `ui_pass` into
    /// it, and its composite over the output (which loads and stores the output); on a window,
    /// plus the empty pass that stores the output for wgpu. None when no UI was drawn over the
    /// camera that frame.
    pub ui_pass: Option<CompiledFrame>,
    /// What Bevy's own pipelines draw over the camera after the tile pass (gizmos and other
    /// plugins' `Transparent3d` draws, wireframes, and meshes of custom materials:
    /// [`TileMaterialsOverTile`](crate::TileMaterialsOverTile)), priced as their own wgpu
    /// passes: their pass loads and stores Bevy's depth
    /// texture (which the tile frame's depth export stored), clears and draws the main texture,
    /// and the composite loads and stores the output. None on frames without them.
    pub gizmo_pass: Option<CompiledFrame>,
    /// Bevy's post-processing of the tile frame (bloom and the tone mapping after it, feature
    /// `bloom`; FXAA, SMAA, contrast-adaptive sharpening, feature `anti_alias`), priced as its
    /// own wgpu passes over the camera's main texture, which the tile frame stored instead of
    /// the output: bloom's mip chain blends back into it, and tone mapping and each other effect
    /// read it and write the other one; Bevy's blit writes the output. None on frames without
    /// them.
    pub post_process_pass: Option<CompiledFrame>,
    /// The effects Bevy ran after the tile pass that frame, in order (their camera components'
    /// names); empty on frames without them.
    pub post_processing: Vec<String>,
    /// bevy_ui drawn inside the tile render pass, in its last subpass (`ui`, part of the plan
    /// above: no pass of its own, no traffic of its own), and how much. None on frames without
    /// UI drawn that way.
    pub ui_in_pass: Option<TileUiInPass>,
    /// Why the camera's bevy_ui was drawn after the tile pass ([`Self::ui_pass`]) rather than in
    /// it, on frames where it was.
    pub ui_after_pass_reason: Option<String>,
    /// egui over the camera (the inspector overlay, feature `inspector`) drawn inside the tile
    /// render pass, in the `ui` subpass after bevy_ui: no pass and no traffic of its own. None
    /// on frames without egui drawn that way.
    pub egui_in_pass: Option<TileEguiInPass>,
    /// Why the camera's egui was drawn after the tile pass (the inspector's clear, bevy_egui's
    /// `egui_pass` and a composite, priced by the inspector) rather than in it, on frames where
    /// it was.
    pub egui_after_pass_reason: Option<String>,
}

/// What the tile render pass's `ui` subpass drew of egui: its meshes (one draw each, clipped to
/// its clip rectangle, as bevy_egui's `egui_pass` draws them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileEguiInPass {
    /// Meshes drawn (egui's clipped primitives; those clipped away entirely are not drawn).
    pub meshes: usize,
    /// Triangles drawn.
    pub triangles: usize,
}

/// What the tile render pass's `ui` subpass drew: bevy_ui's items of the camera, as quads in
/// Bevy's batches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileUiInPass {
    /// UI phase items (nodes, borders, images, text runs).
    pub items: usize,
    /// Quads drawn (a text run is a quad per glyph; culled and clipped-away quads are not drawn).
    pub quads: usize,
    /// Draws: one per run of quads with one image, as Bevy batches them.
    pub batches: usize,
}

impl TileViewReport {
    /// Attachment bytes the frame loads from and stores to memory, as it runs on the GPU (the
    /// priced frame: Bevy's shadow maps, then the tile pass; not the UI or gizmo passes drawn
    /// over it). At the traffic floor this is one store of the output (plus the shadow maps).
    pub fn bytes_per_frame(&self) -> u64 {
        self.priced.cost.bytes()
    }
}

/// Why a tile frame failed, and the tier it rendered at (where it had a decision).
pub(crate) type FailedFrame = (String, Option<crate::tiers::RenderTier>);

/// Reports of every tile camera (keyed by the main-world camera entity), shared by the render
/// world (which writes) and the main world (which reads); plus the crate's live Vulkan objects.
#[derive(Resource, Clone, Default)]
pub struct TileRenderReports {
    pub(crate) views: Arc<Mutex<HashMap<Entity, TileViewReport>>>,
    /// This frame's reports while the render world still fills them in (the overlays drawn
    /// after the tile pass add their prices): published whole into `views` at the end of the
    /// frame, so that the main world, which reads while the render world runs, never sees a
    /// report without its overlays.
    pub(crate) pending: Arc<Mutex<HashMap<Entity, TileViewReport>>>,
    pub(crate) live: Arc<Mutex<Option<Arc<LiveObjects>>>>,
    /// Cameras whose tile path failed this frame, with why (the main world lowers their tier).
    /// With the tier the failed frame rendered at, where it had one.
    pub(crate) failures: Arc<Mutex<HashMap<Entity, FailedFrame>>>,
    /// The most frames drawing a tile view the GPU had not finished at the end of a frame.
    pub(crate) most_frames_in_flight: Arc<std::sync::atomic::AtomicUsize>,
    /// How many times the tile path's Vulkan backend was created: once at start-up, again on
    /// each new render device (Bevy's recovery after device loss).
    pub(crate) backends_created: Arc<std::sync::atomic::AtomicU64>,
    /// GPU times of whole camera schedules, for `Auto` cameras choosing by measurement
    /// (`tiers::measure`), since the main world last took them.
    pub(crate) timed: Arc<Mutex<HashMap<Entity, Vec<crate::tiers::TimedFrame>>>>,
}

impl TileRenderReports {
    /// The most frames drawing a tile view that the GPU had queued and not finished at once, at
    /// the end of a frame, before the render world paced itself: at most 4 (the crate lets 3
    /// queue, and waits for the oldest once a fourth is submitted), however fast the app records
    /// frames.
    pub fn most_frames_in_flight(&self) -> usize {
        self.most_frames_in_flight
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The last report of `camera` (a main-world entity).
    pub fn get(&self, camera: Entity) -> Option<TileViewReport> {
        self.views.lock().ok()?.get(&camera).cloned()
    }

    /// Vulkan objects the crate currently owns (0 before the backend exists); descriptor sets
    /// are not counted (they are freed with their pools): see [`Self::resource_counts`].
    pub fn live_vulkan_objects(&self) -> i64 {
        self.resource_counts().vulkan_objects()
    }

    /// The Vulkan objects (by kind, with descriptor sets) and GPU memory the crate holds now
    /// (all zero before the backend exists). Objects are destroyed a frame or two after their
    /// last use, once the GPU is done with them.
    pub fn resource_counts(&self) -> ResourceCounts {
        self.live
            .lock()
            .ok()
            .and_then(|live| live.as_ref().map(|l| l.snapshot()))
            .unwrap_or_default()
    }

    /// This frame's report of `camera`, published at the end of the frame ([`Self::publish`]).
    pub(crate) fn insert(&self, camera: Entity, report: TileViewReport) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(camera, report);
        }
    }

    /// Adds to this frame's report of `camera` (the overlays' prices), if it has one.
    pub(crate) fn amend(&self, camera: Entity, amend: impl FnOnce(&mut TileViewReport)) {
        if let Ok(mut pending) = self.pending.lock()
            && let Some(report) = pending.get_mut(&camera)
        {
            amend(report);
        }
    }

    /// Makes this frame's reports the ones [`Self::get`] returns (end of the render frame).
    pub(crate) fn publish(&self) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        if let Ok(mut views) = self.views.lock() {
            views.extend(pending.drain());
        }
    }

    /// A failed tile frame of `camera`, rendered at `tier` (its decision then).
    pub(crate) fn report_failure(
        &self,
        camera: Entity,
        why: String,
        tier: Option<crate::tiers::RenderTier>,
    ) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.insert(camera, (why, tier));
        }
    }

    /// How many times the Vulkan backend was created (a new render device each time after the
    /// first): failures on an earlier device do not hold for a new one.
    pub fn backends_created(&self) -> u64 {
        self.backends_created
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Hands the main world a GPU time of `camera`'s whole schedule (`coverage::timing`).
    pub(crate) fn report_timed(&self, camera: Entity, frame: crate::tiers::TimedFrame) {
        if let Ok(mut timed) = self.timed.lock() {
            timed.entry(camera).or_default().push(frame);
        }
    }

    /// The GPU times measured since the last call, by camera.
    pub(crate) fn take_timed(&self) -> HashMap<Entity, Vec<crate::tiers::TimedFrame>> {
        self.timed
            .lock()
            .map(|mut timed| std::mem::take(&mut *timed))
            .unwrap_or_default()
    }

    pub(crate) fn take_failures(&self) -> HashMap<Entity, FailedFrame> {
        self.failures
            .lock()
            .map(|mut failures| std::mem::take(&mut *failures))
            .unwrap_or_default()
    }

    /// Drops reports of cameras not rendered since `frame - max_age`.
    pub(crate) fn forget_older_than(&self, frame: u64, max_age: u64) {
        if let Ok(mut views) = self.views.lock() {
            views.retain(|_, report| frame.saturating_sub(report.frame) <= max_age);
        }
    }
}

pub(crate) fn load_op_name(op: vk::AttachmentLoadOp) -> String {
    match op {
        vk::AttachmentLoadOp::LOAD => "LOAD".into(),
        vk::AttachmentLoadOp::CLEAR => "CLEAR".into(),
        vk::AttachmentLoadOp::DONT_CARE => "DONT_CARE".into(),
        other => format!("{other:?}"),
    }
}

pub(crate) fn store_op_name(op: vk::AttachmentStoreOp) -> String {
    match op {
        vk::AttachmentStoreOp::STORE => "STORE".into(),
        vk::AttachmentStoreOp::DONT_CARE => "DONT_CARE".into(),
        vk::AttachmentStoreOp::NONE => "NONE".into(),
        other => format!("{other:?}"),
    }
}

/// Stage 9's attachment table: each attachment of the created render passes beside what the
/// plan asked for, with the image the crate made for it.
pub(super) fn attachment_reports(
    compiled: &CompiledFrame,
    descriptions: &[RenderPassDescription],
    images: &[(ResourceId, AttachmentImage)],
) -> Vec<VulkanAttachmentReport> {
    compiled
        .native_passes
        .iter()
        .zip(descriptions)
        .enumerate()
        .flat_map(|(index, (native, description))| {
            native
                .attachments
                .iter()
                .zip(&description.attachments)
                .map(move |(planned, created)| (index, planned, created))
        })
        .map(|(index, planned, created)| {
            let image = images
                .iter()
                .find(|(id, _)| *id == planned.resource)
                .map(|(_, image)| image);
            VulkanAttachmentReport {
                render_pass: index,
                name: planned.name.clone(),
                format: created.format.as_raw(),
                samples: created.samples.as_raw(),
                load_op: load_op_name(created.load_op),
                store_op: store_op_name(created.store_op),
                load_reason: planned.load_reason.to_string(),
                store_reason: planned.store_reason.to_string(),
                layouts: (
                    format!("{:?}", created.initial_layout),
                    format!("{:?}", created.final_layout),
                ),
                image_usage: image.map(|i| i.usage.as_raw()),
                lazily_allocated: image.is_some_and(|i| i.lazily_allocated),
            }
        })
        .collect()
}
