//! The camera-schedule system that renders a tile-deferred view: it builds the view's frame
//! graph, gets the plan from the compiler, makes sure the Vulkan objects exist, and records one
//! native render pass with ash on a command encoder of its own.

use super::{
    TileDeferred,
    backend::TileBackend,
    extract::{TileMaterials, TileMeshInstances},
    gpu_types::{
        GpuClusterableLight, GpuDirectionalLight, GpuInstance, GpuTonemapParams, GpuView,
        MAX_DIRECTIONAL_LIGHTS,
    },
    plan::{self, ViewFrameDesc, names},
    record::{RecordedDraw, RecordedPass, Recording, collect_mesh_bindings, record},
    report::{self, TileGpuTimes, TileViewReport, VulkanAttachmentReport},
    resources::{
        BufferSlot, create_pass_resources, ensure_attachments, ensure_buffer_capacity,
        ensure_material, ensure_view, lut_image, write_view_sets,
    },
};
use crate::{
    DeviceProfile,
    frame_graph::{Extent, Format},
    vulkan::{
        VulkanContext, conv,
        pipeline::GbufferPipelineKey,
        render_pass::{self, OutputKind},
    },
};
use ash::vk;
use bevy::{
    camera::{CameraOutputMode, ClearColorConfig},
    core_pipeline::tonemapping::{DebandDither, Tonemapping, TonemappingLuts},
    light::{AmbientLight, GlobalAmbientLight},
    math::Affine3A,
    mesh::{Mesh, MeshVertexAttribute, PrimitiveTopology},
    pbr::{ExtractedDirectionalLight, ExtractedPointLight},
    platform::collections::HashMap,
    prelude::*,
    render::{
        camera::ExtractedCamera,
        mesh::{RenderMesh, allocator::MeshAllocator},
        render_asset::RenderAssets,
        render_resource::{
            Face, LoadOp, Operations, RenderPassColorAttachment, RenderPassDescriptor, StoreOp,
        },
        renderer::{RenderContext, ViewQuery},
        texture::{FallbackImage, GpuImage},
        view::{ExtractedView, ExtractedWindows, RenderVisibleEntities, ViewTarget},
    },
};
use wgpu::hal::api::Vulkan;

/// The Vulkan `Result` of a failed step, with what was being done.
pub(super) type StepResult<T> = Result<T, (&'static str, vk::Result)>;

pub(super) fn step<T>(what: &'static str, result: Result<T, vk::Result>) -> StepResult<T> {
    result.map_err(|error| (what, error))
}

/// Test hook: when armed, the next tile frame fails as if a Vulkan object could not be
/// created. Insert it in the render world before the app runs; arm it through a clone.
#[doc(hidden)]
#[derive(Resource, Clone, Default)]
pub struct TileFaultInjection(pub std::sync::Arc<std::sync::atomic::AtomicBool>);

/// Test hook: while present in the render world, MSAA views light with per-sample-index draws
/// (the path of devices without `sampleRateShading` or a multisampled depth-stencil format)
/// instead of the stencil split.
#[doc(hidden)]
#[derive(Resource, Clone, Default)]
pub struct TileNoStencilSplit;

/// Everything the pass reads from the render world besides the view.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct TileSceneParams<'w, 's> {
    pub(super) instances: Res<'w, TileMeshInstances>,
    pub(super) materials: Res<'w, TileMaterials>,
    pub(super) meshes: Res<'w, RenderAssets<RenderMesh>>,
    pub(super) mesh_allocator: Res<'w, MeshAllocator>,
    pub(super) images: Res<'w, RenderAssets<GpuImage>>,
    pub(super) fallback_image: Res<'w, FallbackImage>,
    pub(super) luts: Option<Res<'w, TonemappingLuts>>,
    global_ambient: Option<Res<'w, GlobalAmbientLight>>,
    clear_color: Res<'w, bevy::camera::ClearColor>,
    windows: Res<'w, ExtractedWindows>,
    profile: Option<Res<'w, DeviceProfile>>,
    reports: Res<'w, super::report::TileRenderReports>,
    fault: Option<Res<'w, TileFaultInjection>>,
    no_stencil_split: Option<Res<'w, TileNoStencilSplit>>,
    point_lights: Query<'w, 's, &'static ExtractedPointLight>,
    directional_lights: Query<'w, 's, &'static ExtractedDirectionalLight>,
    sorted_cameras: Res<'w, bevy::render::camera::SortedCameras>,
    loaded_after: Query<'w, 's, (), With<super::TileOutputLoadedAfter>>,
}

type TileViewQuery = (
    Entity,
    &'static bevy::render::sync_world::MainEntity,
    &'static ExtractedCamera,
    &'static ExtractedView,
    &'static ViewTarget,
    &'static TileDeferred,
    &'static RenderVisibleEntities,
    Option<&'static Tonemapping>,
    Option<&'static DebandDither>,
    Option<&'static crate::tiers::TierDecision>,
    Option<&'static AmbientLight>,
);

/// Renders one tile-deferred camera.
pub(crate) fn tile_deferred_pass(
    view: ViewQuery<TileViewQuery>,
    backend: Option<ResMut<TileBackend>>,
    scene: TileSceneParams,
    mut ctx: RenderContext,
) {
    let Some(mut backend) = backend else {
        return;
    };
    let backend = &mut *backend;
    let (
        entity,
        main_entity,
        camera,
        extracted_view,
        target,
        settings,
        visible,
        tonemapping,
        dither,
        tier,
        ambient,
    ) = view.into_inner();
    let Some(output_view) = target.out_texture() else {
        return;
    };
    let frame = Frame::gather(
        entity,
        camera,
        extracted_view,
        target,
        (
            tonemapping.copied().unwrap_or_default(),
            dither.copied().unwrap_or_default(),
            tier.map_or(1, |decision| decision.tier.tile_samples()),
            // Before the first decision (device not probed yet) the setting alone decides.
            tier.map_or(!settings.merge_subpasses, |decision| {
                decision.tier.is_unmerged()
            }),
            settings,
        ),
        ambient,
        (&scene, &backend.context),
    );
    let Some(frame) = frame else {
        return;
    };
    clear_output_like_bevy(&frame, target, &mut ctx);
    mark_window_output_written(&frame, &scene, output_view, &mut ctx);
    match render_view(backend, &scene, &frame, visible, output_view, &mut ctx) {
        Ok(report) => scene.reports.insert(main_entity.id(), report),
        // The main world lowers the camera's tier and logs it (`route_cameras`); the camera
        // is drawn by the next tier from the next frame on.
        Err((what, error)) => scene
            .reports
            .report_failure(main_entity.id(), format!("{what} failed: {error}")),
    }
}

/// Bevy clears a camera target once per frame, when the first camera writes to it (through
/// `ViewTarget::out_texture_color_attachment`, whose "first call" flag every camera on that
/// target shares), with that camera's `output_mode` clear colour, over the whole target. Do the
/// same: take the flag, so that a later `Core3d` camera on this target loads instead of clearing
/// what the tile pass drew, and where the flag asks for a clear that the raw pass cannot do
/// (its render area is the viewport) clear the target with a wgpu pass before it.
fn clear_output_like_bevy(frame: &Frame, target: &ViewTarget, ctx: &mut RenderContext) {
    let Some(attachment) = target.out_texture_color_attachment(frame.output_clear) else {
        return;
    };
    if frame.covers_target || !matches!(attachment.ops.load, LoadOp::Clear(_)) {
        return;
    }
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some("tile_deferred_output_clear"),
            color_attachments: &[Some(attachment)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

/// wgpu zero-fills a texture it believes was never written before the first wgpu pass that
/// loads it, and it cannot see the raw pass's writes. A window's swapchain image is a new texture
/// for wgpu every frame, so a wgpu pass that loads it after the tile pass (an overlay blended over
/// the tile frame, a later camera on the window) would find it cleared to black. Image targets
/// are made "written" once, in `prepare_wgpu_resources`; on screenshot frames the output is
/// Bevy's capture texture, an image.
///
/// When such a pass follows ([`TileOutputLoadedAfter`](super::TileOutputLoadedAfter) on the view,
/// or a later camera on the same target) and no wgpu pass has written the image yet this frame,
/// record, before the raw pass, an empty wgpu pass that stores it: it loads nothing (don't care)
/// and draws nothing, and wgpu then counts the image as written (and leaves it in
/// `PRESENT_SRC_KHR`, the layout the raw pass takes it from). Frames with nothing loading the
/// output after the tile pass get no extra pass. (wgpu 29 has no call that marks a texture as
/// written without a pass; later wgpu has `Texture::mark_externally_initialized`.)
fn mark_window_output_written(
    frame: &Frame,
    scene: &TileSceneParams,
    output_view: &bevy::render::render_resource::TextureView,
    ctx: &mut RenderContext,
) {
    // The first camera on the window, and `clear_output_like_bevy` recorded no clear (which
    // would have written the image for wgpu).
    let untouched = frame.output_kind == OutputKind::Swapchain
        && !frame.desc.keep_output
        && (frame.covers_target || frame.output_clear.is_none());
    if !untouched || !scene.output_loaded_after(frame.entity) {
        return;
    }
    // SAFETY: the pass stores undefined contents and nothing reads them: the raw pass that
    // follows takes the image from `UNDEFINED` and writes all of its render area (everything
    // outside it is undefined after that pass anyway when no clear was asked for).
    let dont_care = unsafe { wgpu::LoadOpDontCare::enabled() };
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some("tile_deferred_output_written_for_wgpu"),
            color_attachments: &[Some(RenderPassColorAttachment {
                view: output_view,
                depth_slice: None,
                resolve_target: None,
                ops: Operations {
                    load: LoadOp::DontCare(dont_care),
                    store: StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

impl TileSceneParams<'_, '_> {
    /// Whether a wgpu pass loads the view's output after the tile pass this frame: one marked
    /// on the view, or a later camera drawing to the same target.
    fn output_loaded_after(&self, view: Entity) -> bool {
        if self.loaded_after.contains(view) {
            return true;
        }
        let cameras = &self.sorted_cameras.0;
        let Some(index) = cameras.iter().position(|c| c.entity == view) else {
            return false;
        };
        let target = &cameras[index].target;
        target.is_some()
            && cameras[index + 1..].iter().any(|later| {
                later.target == *target && !matches!(later.output_mode, CameraOutputMode::Skip)
            })
    }
}

/// Per-frame facts about the view, computed once.
pub(super) struct Frame {
    pub(super) entity: Entity,
    pub(super) desc: ViewFrameDesc,
    requested_samples: u32,
    /// Why the sample count differs from the camera's `Msaa`, if it does.
    msaa_note: Option<String>,
    msaa_flags: u32,
    debug_view: super::TileDebugView,
    output_kind: OutputKind,
    pub(super) target_extent: vk::Extent2D,
    viewport: UVec4,
    gpu_view: GpuView,
    tonemap: GpuTonemapParams,
    tonemapping: Tonemapping,
    /// Bevy's clear of the camera's final target (`Camera::output_mode`): what the first camera
    /// drawing to a target clears the whole target to, inside its viewport and out.
    output_clear: Option<LinearRgba>,
    /// The viewport is the whole target.
    covers_target: bool,
}

impl Frame {
    fn gather(
        entity: Entity,
        camera: &ExtractedCamera,
        view: &ExtractedView,
        target: &ViewTarget,
        (tonemapping, dither, requested_samples, unmerged, settings): (
            Tonemapping,
            DebandDither,
            u32,
            bool,
            &TileDeferred,
        ),
        ambient_override: Option<&AmbientLight>,
        (scene, context): (&TileSceneParams, &VulkanContext),
    ) -> Option<Self> {
        let output_view = target.out_texture()?;
        let output_format = conv::frame_graph_format(target.out_texture_view_format()?)?;
        let texture = output_view.texture();
        let target_extent = vk::Extent2D {
            width: texture.width(),
            height: texture.height(),
        };
        let viewport = view.viewport;
        if viewport.z == 0 || viewport.w == 0 || target_extent.width == 0 {
            return None;
        }
        let is_swapchain = scene.windows.windows.values().any(|window| {
            window
                .swap_chain_texture_view
                .as_ref()
                .is_some_and(|swapchain| swapchain.id() == output_view.id())
        });
        let clear = match camera.clear_color {
            ClearColorConfig::Default => Some(scene.clear_color.0.to_linear()),
            ClearColorConfig::Custom(color) => Some(color.to_linear()),
            ClearColorConfig::None => None,
        };
        // The render area never leaves the target (a window being resized can briefly report a
        // viewport from its previous size).
        let viewport = UVec4::new(
            viewport.x.min(target_extent.width - 1),
            viewport.y.min(target_extent.height - 1),
            viewport
                .z
                .min(target_extent.width - viewport.x.min(target_extent.width - 1)),
            viewport
                .w
                .min(target_extent.height - viewport.y.min(target_extent.height - 1)),
        );
        let drew_before = camera.sorted_camera_index_for_target > 0;
        // A freshly acquired swapchain image has no contents to keep unless another camera drew
        // into it this frame; an image keeps what is outside a user viewport or under
        // `ClearColorConfig::None`.
        let keep_output = if is_swapchain {
            drew_before
        } else {
            drew_before || clear.is_none() || camera.viewport.is_some()
        };
        let supported = scene
            .profile
            .as_deref()
            .and_then(|p| p.vulkan.as_ref())
            .map_or(crate::device::SampleCounts(1), |vk| {
                crate::device::SampleCounts(
                    vk.framebuffer_color_sample_counts.0 & vk.framebuffer_depth_sample_counts.0,
                )
            });
        let (samples, msaa_note) = plan::sample_count(requested_samples, supported, keep_output);
        let msaa_depth_stencil = msaa_depth_stencil_format(scene, context, samples, supported);
        let desc = ViewFrameDesc {
            extent: Extent::new(viewport.z, viewport.w),
            output_format,
            keep_output,
            light_format: Format::Rg11b10Float,
            depth_format: Format::Depth32Float,
            samples,
            msaa_depth_stencil,
            unmerged,
        };
        let mut msaa_flags = 0;
        if settings.msaa_shading == super::MsaaShading::EverySample {
            msaa_flags |= super::gpu_types::msaa_flags::PER_SAMPLE;
        }
        if settings.debug_view == super::TileDebugView::MsaaEdges {
            msaa_flags |= super::gpu_types::msaa_flags::DEBUG_EDGES;
        }

        let clip_from_view = view.clip_from_view;
        let world_from_view = view.world_from_view.to_matrix();
        let view_from_world = world_from_view.inverse();
        let clip_from_world = view
            .clip_from_world
            .unwrap_or(clip_from_view * view_from_world);
        let orthographic = clip_from_view.w_axis.w == 1.0;
        let ambient = match (ambient_override, scene.global_ambient.as_deref()) {
            (Some(a), _) => LinearRgba::from(a.color) * a.brightness,
            (None, Some(a)) => LinearRgba::from(a.color) * a.brightness,
            (None, None) => LinearRgba::BLACK,
        };
        let mut directional_lights = [GpuDirectionalLight::default(); MAX_DIRECTIONAL_LIGHTS];
        let mut directional_count = 0;
        for light in scene.directional_lights.iter().take(MAX_DIRECTIONAL_LIGHTS) {
            let color = light.color.to_f32_array();
            directional_lights[directional_count] = GpuDirectionalLight {
                direction_to_light: light.transform.back().extend(0.0).to_array(),
                color: [
                    color[0] * light.illuminance,
                    color[1] * light.illuminance,
                    color[2] * light.illuminance,
                    0.0,
                ],
            };
            directional_count += 1;
        }
        let gpu_view = GpuView {
            clip_from_world: clip_from_world.to_cols_array_2d(),
            world_from_clip: clip_from_world.inverse().to_cols_array_2d(),
            view_from_world: view_from_world.to_cols_array_2d(),
            clip_from_view: clip_from_view.to_cols_array_2d(),
            world_position: view
                .world_from_view
                .translation()
                .extend(if orthographic { 1.0 } else { 0.0 })
                .to_array(),
            viewport: viewport.as_vec4().to_array(),
            ambient: [ambient.red, ambient.green, ambient.blue, 0.0],
            exposure: [camera.exposure, 0.0, 0.0, 0.0],
            counts: [directional_count as u32, 0, 0, 0],
            directional_lights,
        };
        let tonemap = GpuTonemapParams {
            clear_color: match clear {
                Some(c) => [c.red, c.green, c.blue, 1.0],
                None => [0.0; 4],
            },
            mode: [
                tonemapping_mode(tonemapping),
                u32::from(dither == DebandDither::Enabled),
                u32::from(conv::needs_shader_srgb_encode(output_format)),
                0,
            ],
        };
        Some(Self {
            entity,
            desc,
            requested_samples,
            msaa_note,
            msaa_flags,
            debug_view: settings.debug_view,
            output_kind: if is_swapchain {
                OutputKind::Swapchain
            } else {
                OutputKind::TrackedImage
            },
            target_extent,
            viewport,
            gpu_view,
            tonemap,
            tonemapping,
            output_clear: match camera.output_mode {
                CameraOutputMode::Write {
                    clear_color: ClearColorConfig::Default,
                    ..
                } => Some(scene.clear_color.0.to_linear()),
                CameraOutputMode::Write {
                    clear_color: ClearColorConfig::Custom(color),
                    ..
                } => Some(color.to_linear()),
                CameraOutputMode::Write {
                    clear_color: ClearColorConfig::None,
                    ..
                }
                | CameraOutputMode::Skip => None,
            },
            covers_target: viewport.x == 0
                && viewport.y == 0
                && viewport.z == target_extent.width
                && viewport.w == target_extent.height,
        })
    }
}

/// The depth-stencil format of the MSAA stencil split, where the device can run it: it needs
/// sample-rate shading (wgpu enables the feature where the device has it) and a depth-stencil
/// format multisampled at every supported count the tile budget may lower `samples` to.
fn msaa_depth_stencil_format(
    scene: &TileSceneParams,
    context: &VulkanContext,
    samples: u32,
    supported: crate::device::SampleCounts,
) -> Option<Format> {
    let sample_rate_shading = scene
        .profile
        .as_deref()
        .and_then(|p| p.vulkan.as_ref())
        .is_some_and(|vk| vk.sample_rate_shading);
    if samples <= 1 || !sample_rate_shading || scene.no_stencil_split.is_some() {
        return None;
    }
    let counts = (samples * 2 - 1) & !1 & supported.0;
    context
        .msaa_depth_stencil_format(counts)
        .and_then(conv::depth_stencil_format)
}

/// Lowers the sample count while the multisampled frame does not fit the device's tile memory
/// (a Mali spill or Adreno GMEM too small), recompiling at each step.
fn fit_tile_budget(
    mut compiled: crate::frame_graph::CompiledFrame,
    mut desc: ViewFrameDesc,
    caps: &crate::frame_graph::DeviceCaps,
) -> StepResult<(
    crate::frame_graph::CompiledFrame,
    ViewFrameDesc,
    Option<String>,
)> {
    use crate::frame_graph::TileVerdict;
    let requested = desc.samples;
    // The compiler refuses to merge passes whose tile footprint exceeds the budget; a merged
    // pass can still spill on its own.
    let spills = |frame: &crate::frame_graph::CompiledFrame| {
        frame.breaks.iter().any(|b| {
            matches!(
                b.reason,
                crate::frame_graph::BreakReason::TileBudgetExceeded { .. }
            )
        }) || frame.native_passes.iter().any(|n| {
            matches!(
                n.footprint.verdict,
                TileVerdict::Spills { .. } | TileVerdict::GmemTooSmall { .. }
            )
        })
    };
    while desc.samples > 1 && spills(&compiled) {
        desc.samples /= 2;
        let graph =
            plan::declare(&desc).map_err(|_| ("declaring the frame", vk::Result::ERROR_UNKNOWN))?;
        compiled = crate::frame_graph::compile(&graph, caps)
            .map_err(|_| ("compiling the frame", vk::Result::ERROR_UNKNOWN))?;
    }
    let note = (desc.samples != requested).then(|| {
        format!(
            "the {requested}x multisampled G-buffer does not fit this GPU's tile memory; {}x does",
            desc.samples
        )
    });
    Ok((compiled, desc, note))
}

/// The tonemap shader's operator index (see `shaders/tonemap.frag`).
fn tonemapping_mode(tonemapping: Tonemapping) -> u32 {
    match tonemapping {
        Tonemapping::None => 0,
        Tonemapping::Reinhard => 1,
        Tonemapping::ReinhardLuminance => 2,
        Tonemapping::AcesFitted => 3,
        Tonemapping::AgX => 4,
        Tonemapping::SomewhatBoringDisplayTransform => 5,
        Tonemapping::TonyMcMapface => 6,
        Tonemapping::BlenderFilmic => 7,
        Tonemapping::KhronosPbrNeutral => 8,
    }
}

/// One instanced draw of a mesh with a material.
pub(super) struct Draw {
    pub(super) mesh: AssetId<Mesh>,
    pub(super) material: AssetId<StandardMaterial>,
    pub(super) pipeline_key: GbufferPipelineKey,
    pub(super) first_instance: u32,
    pub(super) instance_count: u32,
}

/// Vertex attributes the G-buffer shader reads, in location order.
const ATTRIBUTES: [MeshVertexAttribute; 4] = [
    Mesh::ATTRIBUTE_POSITION,
    Mesh::ATTRIBUTE_NORMAL,
    Mesh::ATTRIBUTE_UV_0,
    Mesh::ATTRIBUTE_TANGENT,
];

fn pipeline_key_for(
    mesh: &RenderMesh,
    material: &super::extract::TileMaterial,
    samples: vk::SampleCountFlags,
) -> Option<GbufferPipelineKey> {
    let layout = mesh.layout.0.layout();
    let ids = mesh.layout.0.attribute_ids();
    let mut attributes = [None; 4];
    for (slot, attribute) in ATTRIBUTES.iter().enumerate() {
        if let Some(index) = ids.iter().position(|id| *id == attribute.id) {
            let a = &layout.attributes[index];
            attributes[slot] = Some((conv::vertex_format(a.format)?, a.offset as u32));
        }
    }
    attributes[0]?;
    let topology = match mesh.primitive_topology() {
        PrimitiveTopology::TriangleList => vk::PrimitiveTopology::TRIANGLE_LIST,
        PrimitiveTopology::TriangleStrip => vk::PrimitiveTopology::TRIANGLE_STRIP,
        _ => return None,
    };
    Some(GbufferPipelineKey {
        stride: layout.array_stride as u32,
        attributes,
        topology,
        cull_mode: match material.cull_mode {
            Some(Face::Back) => vk::CullModeFlags::BACK,
            Some(Face::Front) => vk::CullModeFlags::FRONT,
            None => vk::CullModeFlags::NONE,
        },
        alpha_mask: material.alpha_mask,
        samples,
    })
}

fn affine_rows(affine: &Affine3A) -> [[f32; 4]; 3] {
    let m = affine.matrix3;
    let t = affine.translation;
    [
        [m.x_axis.x, m.y_axis.x, m.z_axis.x, t.x],
        [m.x_axis.y, m.y_axis.y, m.z_axis.y, t.y],
        [m.x_axis.z, m.y_axis.z, m.z_axis.z, t.z],
    ]
}

fn render_view(
    backend: &mut TileBackend,
    scene: &TileSceneParams,
    frame: &Frame,
    visible: &RenderVisibleEntities,
    output_view: &bevy::render::render_resource::TextureView,
    ctx: &mut RenderContext,
) -> StepResult<TileViewReport> {
    let started = std::time::Instant::now();
    let frame_number = backend.frame;
    if let Some(fault) = scene.fault.as_deref()
        && fault.0.swap(false, std::sync::atomic::Ordering::Relaxed)
    {
        return Err((
            "creating the render pass (injected fault)",
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
        ));
    }

    // 1. The plan: declare the frame and let the compiler decide (cached while unchanged). The
    // unmerged tier compiles with merging off, so every break reads "merging disabled".
    let caps = scene
        .profile
        .as_deref()
        .map(DeviceProfile::frame_graph_caps)
        .unwrap_or_else(crate::frame_graph::DeviceCaps::desktop)
        .with_merging(!frame.desc.unmerged);
    let view_state = ensure_view(backend, frame.entity)?;
    let graph = plan::declare(&frame.desc).map_err(|e| {
        error!("bevy_tile_deferred: the view's frame graph is invalid: {e}");
        ("declaring the frame", vk::Result::ERROR_UNKNOWN)
    })?;
    let compiled = view_state
        .graph_cache
        .compile(&graph, &caps)
        .map_err(|e| {
            error!("bevy_tile_deferred: compiling the view's frame failed: {e}");
            ("compiling the frame", vk::Result::ERROR_UNKNOWN)
        })?
        .clone();
    let (compiled, frame_desc, budget_note) = fit_tile_budget(compiled, frame.desc, &caps)?;
    let notes: Vec<&str> = [frame.msaa_note.as_deref(), budget_note.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if !notes.is_empty() && backend.reported.insert((frame.entity, "msaa")) {
        warn!(
            "bevy_tile_deferred: camera {}: asked for {}x MSAA, rendering {}x: {}",
            frame.entity,
            frame.requested_samples,
            frame_desc.samples,
            notes.join("; ")
        );
    }
    // The recording knows two shapes: one render pass of three subpasses (merged) or three
    // render passes of one subpass (unmerged).
    let expected_passes = if frame_desc.unmerged { 3 } else { 1 };
    let subpass_count: usize = compiled
        .native_passes
        .iter()
        .map(|n| n.subpasses.len())
        .sum();
    if compiled.native_passes.len() != expected_passes || subpass_count != 3 {
        error!(
            "bevy_tile_deferred: the frame compiled into {} native passes, {expected_passes} \
             expected:\n{}",
            compiled.native_passes.len(),
            compiled.describe()
        );
        return Err((
            "merging the frame into one render pass",
            vk::Result::ERROR_UNKNOWN,
        ));
    }
    let output_id = compiled
        .attachment_named(names::OUTPUT)
        .map(|a| a.id)
        .expect("the plan declares an output");

    // 2. The render passes and their pipelines.
    let descriptions = render_pass::describe_frame(&compiled, (output_id, frame.output_kind));
    let key = format!("{descriptions:?}");
    if !backend.render_passes.contains_key(&key) {
        let pass = create_pass_resources(backend, &descriptions, &compiled)?;
        backend.render_passes.insert(key.clone(), pass);
    }
    let render_passes = backend.render_passes[&key].render_passes.clone();
    backend.render_passes.get_mut(&key).unwrap().last_used = frame_number;

    // 3. The view's attachments (everything but the output), sized to the target.
    ensure_attachments(backend, frame, &compiled)?;
    let view_state = backend.views.get_mut(&frame.entity).unwrap();
    view_state.render_pass_key = key.clone();
    view_state.desc = Some(frame_desc);
    view_state.last_used = frame_number;

    // 4. The framebuffers over the attachments and this frame's output view.
    // SAFETY: the guard only reads the raw handle and is dropped at once; the view itself is
    // kept alive below until the GPU has finished this frame.
    let output_raw = unsafe {
        output_view
            .as_hal::<Vulkan>()
            .map(|hal_view| hal_view.raw_handle())
    }
    .ok_or(("reading the output view", vk::Result::ERROR_UNKNOWN))?;
    // wgpu destroys a view as soon as it is dropped and its *tracked* uses are done; our
    // framebuffer's use is invisible to it. Bevy makes a new view of the swapchain image (and of
    // a screenshot's capture texture) every frame and drops it after presenting, so the view is
    // held until the GPU has finished this frame.
    let keep_alive = output_view.clone();
    backend
        .graveyard
        .retire(Box::new(move |_: &VulkanContext| drop(keep_alive)));
    let mut recorded_passes = Vec::with_capacity(render_passes.len());
    for (native, &render_pass) in compiled.native_passes.iter().zip(&render_passes) {
        let framebuffer = framebuffer(
            backend,
            frame,
            native,
            output_id,
            render_pass,
            output_view,
            output_raw,
        )?;
        recorded_passes.push(RecordedPass {
            render_pass,
            framebuffer,
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
        });
    }

    // 5. Descriptor sets of the view (inputs rewritten when the attachments changed).
    let lut = lut_image(scene, frame.tonemapping);
    // SAFETY: as for the output view above.
    let lut_view = unsafe { lut.texture_view.as_hal::<Vulkan>().map(|v| v.raw_handle()) }
        .ok_or(("reading the LUT view", vk::Result::ERROR_UNKNOWN))?;
    write_view_sets(backend, frame.entity, &compiled, lut, lut_view);

    // 6. What to draw: instances grouped by (mesh, material), and the lights.
    let samples = conv::samples(frame_desc.samples);
    let mut batches: HashMap<(AssetId<Mesh>, AssetId<StandardMaterial>), Vec<GpuInstance>> =
        HashMap::default();
    if let Some(class) = visible.get::<Mesh3d>() {
        for (_, main_entity) in &class.entities_cpu_culling {
            if let Some(instance) = scene.instances.by_entity.get(main_entity) {
                batches
                    .entry((instance.mesh, instance.material))
                    .or_default()
                    .push(GpuInstance {
                        world_from_local_rows: affine_rows(&instance.world_from_local),
                    });
            }
        }
    }
    let mut instance_data: Vec<GpuInstance> = Vec::new();
    let mut draws: Vec<Draw> = Vec::new();
    for ((mesh_id, material_id), instances) in batches {
        let (Some(mesh), Some(material)) = (
            scene.meshes.get(mesh_id),
            scene.materials.by_id.get(&material_id),
        ) else {
            continue;
        };
        if material.blended {
            continue;
        }
        let Some(pipeline_key) = pipeline_key_for(mesh, material, samples) else {
            continue;
        };
        draws.push(Draw {
            mesh: mesh_id,
            material: material_id,
            pipeline_key,
            first_instance: instance_data.len() as u32,
            instance_count: instances.len() as u32,
        });
        instance_data.extend(instances);
    }
    draws.sort_by_key(|d| (format!("{:?}", d.pipeline_key), d.material));
    let lights: Vec<GpuClusterableLight> = scene
        .point_lights
        .iter()
        .map(|light| {
            let color = light.color.to_f32_array();
            let (spot_scale, spot_offset, kind) = match light.spot_light_angles {
                Some((inner, outer)) => {
                    let outer = outer.min(std::f32::consts::FRAC_PI_2 - 1e-4);
                    let inner = inner.min(outer);
                    let scale = 1.0 / (inner.cos() - outer.cos()).max(1e-4);
                    (scale, -outer.cos() * scale, 1.0)
                }
                None => (0.0, 0.0, 0.0),
            };
            GpuClusterableLight {
                position_radius: light
                    .transform
                    .translation()
                    .extend(light.radius)
                    .to_array(),
                color_inverse_square_range: [
                    color[0] * light.intensity,
                    color[1] * light.intensity,
                    color[2] * light.intensity,
                    1.0 / (light.range * light.range),
                ],
                spot_direction_range: light.transform.forward().extend(light.range).to_array(),
                spot_scale_offset_kind: [spot_scale, spot_offset, kind, 0.0],
            }
        })
        .collect();
    let mut gpu_view = frame.gpu_view;
    gpu_view.counts[1] = lights.len() as u32;

    // 7. Material descriptor sets and buffers for the materials drawn.
    for draw in &draws {
        ensure_material(backend, scene, draw.material)?;
    }

    // 8. Per-view buffers, grown as needed, and this frame's data queued for upload.
    ensure_buffer_capacity(
        backend,
        frame.entity,
        BufferSlot::Lights,
        (lights.len().max(1) * size_of::<GpuClusterableLight>()) as u64,
    )?;
    ensure_buffer_capacity(
        backend,
        frame.entity,
        BufferSlot::Instances,
        (instance_data.len().max(1) * size_of::<GpuInstance>()) as u64,
    )?;
    // Growing the light buffer replaced the view's descriptor sets (step 5 wrote the old ones):
    // write the input-attachment and LUT sets of the new ones too (a no-op when unchanged).
    write_view_sets(backend, frame.entity, &compiled, lut, lut_view);
    let view_state = &backend.views[&frame.entity];
    let (view_buffer, light_buffer, instance_buffer) = (
        view_state.view_buffer.buffer,
        view_state.light_buffer.buffer,
        view_state.instance_buffer.buffer,
    );
    let (view_set, gbuffer_set, tonemap_set) = (
        view_state.view_set,
        view_state.gbuffer_set,
        view_state.tonemap_set,
    );
    backend
        .pending_updates
        .push((view_buffer, bytemuck::bytes_of(&gpu_view).to_vec()));
    if !lights.is_empty() {
        backend
            .pending_updates
            .push((light_buffer, bytemuck::cast_slice(&lights).to_vec()));
    }
    if !instance_data.is_empty() {
        backend.pending_updates.push((
            instance_buffer,
            bytemuck::cast_slice(&instance_data).to_vec(),
        ));
    }

    // 9. Pipelines for every (mesh layout, material state) drawn.
    let gbuffer_target = backend.render_passes[&key].gbuffer_target;
    for draw in &draws {
        if !backend.render_passes[&key]
            .gbuffer
            .contains_key(&draw.pipeline_key)
        {
            let pipeline = step(
                "creating a G-buffer pipeline",
                backend.context.create_gbuffer_pipeline(
                    backend.layouts(),
                    backend.shaders(),
                    gbuffer_target,
                    &draw.pipeline_key,
                ),
            )?;
            backend
                .render_passes
                .get_mut(&key)
                .unwrap()
                .gbuffer
                .insert(draw.pipeline_key.clone(), pipeline);
        }
    }

    // 10. wgpu side, on Bevy's encoder: make wgpu's view of the output, the meshes' buffers and
    // the sampled textures match what the raw pass does with them.
    prepare_wgpu_resources(backend, scene, frame, output_view, &draws, lut, ctx);

    // 11. The raw pass, on an encoder of its own.
    let pass = &backend.render_passes[&key];
    let mesh_bindings = collect_mesh_bindings(scene, &draws)?;
    let mut recording = Recording {
        passes: recorded_passes,
        render_area: vk::Rect2D {
            offset: vk::Offset2D {
                x: frame.viewport.x as i32,
                y: frame.viewport.y as i32,
            },
            extent: vk::Extent2D {
                width: frame.viewport.z,
                height: frame.viewport.w,
            },
        },
        pipeline_layout: backend.layouts().pipeline_layout(frame_desc.unmerged),
        view_set,
        gbuffer_set,
        tonemap_set,
        global_lighting: pass.global_lighting,
        light_volumes: pass.light_volumes,
        tonemap: pass.tonemap,
        // The G-buffer debug views replace the lighting: no light volumes.
        light_count: if frame.debug_view.replaces_lighting() {
            0
        } else {
            lights.len() as u32
        },
        tonemap_params: frame.tonemap,
        zero_buffer: backend.zero_buffer.as_ref().unwrap().buffer,
        fill_zero_buffer: !backend.zero_buffer_filled,
        instance_buffer,
        updates: std::mem::take(&mut backend.pending_updates),
        draws: draws
            .iter()
            .zip(mesh_bindings)
            .filter_map(|(draw, binding)| {
                Some(RecordedDraw {
                    pipeline: pass.gbuffer[&draw.pipeline_key],
                    material_set: backend.materials.get(&draw.material)?.set,
                    binding,
                    first_instance: draw.first_instance,
                    instance_count: draw.instance_count,
                })
            })
            .collect(),
        timestamps: None,
        samples: frame_desc.samples,
        msaa_flags: frame.msaa_flags,
        debug_view: frame.debug_view.shader_value(),
        edge_query: None,
        stencil_split: pass.stencil_split,
        edge_counter: pass.edge_counter,
    };
    let view_state = backend.views.get_mut(&frame.entity).unwrap();
    let gpu_times = view_state.timestamps.as_ref().and_then(|queries| {
        let ms = queries.read(&backend.context, frame_number)?;
        Some(TileGpuTimes {
            gbuffer_ms: ms[0],
            lighting_ms: ms[1],
            tonemap_ms: ms[2],
        })
    });
    recording.timestamps = view_state.timestamps.as_mut().map(|queries| {
        queries.recorded(frame_number);
        (queries.pool, queries.first_query(frame_number))
    });
    // The classification draw's query counts every sample of each edge pixel.
    let viewport_pixels =
        f64::from(frame.viewport.z) * f64::from(frame.viewport.w) * f64::from(frame_desc.samples);
    let per_sample_fraction = view_state
        .edge_queries
        .as_ref()
        .filter(|_| frame_desc.samples > 1)
        .and_then(|queries| queries.read_raw(&backend.context, frame_number))
        .map(|counts| (counts[0] as f64 / viewport_pixels) as f32);
    if frame_desc.samples > 1 {
        recording.edge_query = view_state.edge_queries.as_mut().map(|queries| {
            queries.recorded(frame_number);
            (queries.pool, queries.first_query(frame_number))
        });
    }
    backend.zero_buffer_filled = true;
    let draw_count = recording.draws.len();
    let command_buffer = record(&backend.context, ctx, recording);
    ctx.add_command_buffer(command_buffer);

    let view_state = backend.views.get_mut(&frame.entity).unwrap();
    let attachments = compiled
        .native_passes
        .iter()
        .zip(&descriptions)
        .enumerate()
        .flat_map(|(index, (native, description))| {
            native
                .attachments
                .iter()
                .zip(&description.attachments)
                .map(move |(planned, created)| (index, planned, created))
        })
        .map(|(index, planned, created)| {
            let image = view_state
                .attachments
                .iter()
                .find(|(id, _)| *id == planned.resource)
                .map(|(_, image)| image);
            VulkanAttachmentReport {
                render_pass: index,
                name: planned.name.clone(),
                format: created.format.as_raw(),
                samples: created.samples.as_raw(),
                load_op: report::load_op_name(created.load_op),
                store_op: report::store_op_name(created.store_op),
                layouts: (
                    format!("{:?}", created.initial_layout),
                    format!("{:?}", created.final_layout),
                ),
                image_usage: image.map(|i| i.usage.as_raw()),
                lazily_allocated: image.is_some_and(|i| i.lazily_allocated),
            }
        })
        .collect();
    let report = TileViewReport {
        attachments,
        subpass_count: descriptions.iter().map(|d| d.subpasses.len()).sum(),
        render_passes_recorded: descriptions.len(),
        draws: draw_count,
        instances: instance_data.len(),
        light_volumes: lights.len(),
        frame: frame_number,
        compiled: compiled.clone(),
        gpu_times,
        cpu_ms: started.elapsed().as_secs_f64() * 1000.0,
        samples: frame_desc.samples,
        per_sample_fraction,
    };
    view_state.compiled = Some(compiled);
    Ok(report)
}

/// The framebuffer of one native pass. Views that persist (image targets, the view's own
/// attachments) keep theirs; a pass writing a view Bevy makes anew each frame (swapchain images,
/// screenshot captures) gets one that is retired with the frame.
fn framebuffer(
    backend: &mut TileBackend,
    frame: &Frame,
    native: &crate::frame_graph::NativePass,
    output_id: crate::frame_graph::ResourceId,
    render_pass: vk::RenderPass,
    output_view: &bevy::render::render_resource::TextureView,
    output_raw: vk::ImageView,
) -> StepResult<vk::Framebuffer> {
    let frame_number = backend.frame;
    let writes_output = native.attachment(output_id).is_some();
    let key = (writes_output.then(|| output_view.id()), render_pass);
    let view_state = backend.views.get_mut(&frame.entity).unwrap();
    if let Some((framebuffer, used)) = view_state.framebuffers.get_mut(&key) {
        *used = frame_number;
        return Ok(*framebuffer);
    }
    let views: Vec<vk::ImageView> = native
        .attachments
        .iter()
        .map(|a| {
            if a.resource == output_id {
                output_raw
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
        backend
            .context
            .create_framebuffer(render_pass, &views, frame.target_extent),
    )?;
    if writes_output && frame.output_kind == OutputKind::Swapchain {
        backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
            c.destroy_framebuffer(framebuffer)
        }));
    } else {
        let view_state = backend.views.get_mut(&frame.entity).unwrap();
        view_state
            .framebuffers
            .insert(key, (framebuffer, frame_number));
    }
    Ok(framebuffer)
}

/// wgpu-side preparation on Bevy's encoder, before the raw command buffer.
fn prepare_wgpu_resources(
    backend: &mut TileBackend,
    scene: &TileSceneParams,
    frame: &Frame,
    output_view: &bevy::render::render_resource::TextureView,
    draws: &[Draw],
    lut: &GpuImage,
    ctx: &mut RenderContext,
) {
    let encoder = ctx.command_encoder();
    if frame.output_kind == OutputKind::TrackedImage {
        // wgpu zero-fills, before its next read, a texture it believes was never written; raw
        // writes are invisible to it. The first time an output view is seen, an empty wgpu pass
        // that stores it makes wgpu consider it initialised, so later readbacks and screenshots
        // see what the raw pass drew. It clears when the frame overwrites the output anyway,
        // and loads (keeping what another camera drew) otherwise. This costs one store of the
        // output the first time a view is seen (and on screenshot frames: a new capture view).
        if !backend.initialized_outputs.contains_key(&output_view.id()) {
            let load = if frame.desc.keep_output {
                LoadOp::Load
            } else {
                LoadOp::Clear(wgpu::Color::TRANSPARENT)
            };
            encoder.begin_render_pass(&RenderPassDescriptor {
                label: Some("tile_deferred_output_init"),
                color_attachments: &[Some(RenderPassColorAttachment {
                    view: output_view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: Operations {
                        load,
                        store: StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
        }
        backend
            .initialized_outputs
            .insert(output_view.id(), backend.frame);
    }
    let mut buffers: Vec<&wgpu::Buffer> = Vec::new();
    for draw in draws {
        if let Some(slice) = scene.mesh_allocator.mesh_vertex_slice(&draw.mesh) {
            buffers.push(slice.buffer);
        }
        if let Some(slice) = scene.mesh_allocator.mesh_index_slice(&draw.mesh) {
            buffers.push(slice.buffer);
        }
    }
    buffers.sort_by_key(|b| *b as *const wgpu::Buffer);
    buffers.dedup_by_key(|b| *b as *const wgpu::Buffer);
    let mut textures: Vec<&wgpu::Texture> = vec![&lut.texture, &scene.fallback_image.d2.texture];
    for draw in draws {
        if let Some(material) = scene.materials.by_id.get(&draw.material) {
            for texture in material.textures.iter().flatten() {
                if let Some(image) = scene.images.get(texture.image) {
                    textures.push(&image.texture);
                }
            }
        }
    }
    textures.sort_by_key(|t| *t as *const wgpu::Texture);
    textures.dedup_by_key(|t| *t as *const wgpu::Texture);
    let output_texture = output_view.texture();
    let output_transition =
        (frame.output_kind == OutputKind::TrackedImage).then_some(wgpu::TextureTransition {
            texture: output_texture,
            selector: None,
            state: wgpu::TextureUses::COLOR_TARGET,
        });
    encoder.transition_resources(
        buffers.iter().map(|buffer| wgpu::BufferTransition {
            buffer: *buffer,
            state: wgpu::BufferUses::VERTEX | wgpu::BufferUses::INDEX,
        }),
        textures
            .iter()
            .map(|texture| wgpu::TextureTransition {
                texture: *texture,
                selector: None,
                state: wgpu::TextureUses::RESOURCE,
            })
            .chain(output_transition),
    );
}

/// Retires views, framebuffers, materials and render passes no longer used, seals this frame's
/// retired objects behind its submission, and destroys what the GPU has finished with.
pub(crate) fn end_frame(
    backend: Option<ResMut<TileBackend>>,
    queue: Res<bevy::render::renderer::RenderQueue>,
    reports: Res<super::report::TileRenderReports>,
) {
    let Some(mut backend) = backend else { return };
    let backend = &mut *backend;
    let frame = backend.frame;
    const KEEP_FRAMES: u64 = 3;
    reports.forget_older_than(frame, KEEP_FRAMES);
    let stale_views: Vec<Entity> = backend
        .views
        .iter()
        .filter(|(_, v)| frame.saturating_sub(v.last_used) > KEEP_FRAMES)
        .map(|(e, _)| *e)
        .collect();
    for entity in stale_views {
        let view = backend.views.remove(&entity).unwrap();
        backend.retire_view(view);
    }
    let mut stale_framebuffers = Vec::new();
    for view in backend.views.values_mut() {
        view.framebuffers.retain(|_, (framebuffer, used)| {
            let keep = frame.saturating_sub(*used) <= KEEP_FRAMES;
            if !keep {
                stale_framebuffers.push(*framebuffer);
            }
            keep
        });
    }
    if !stale_framebuffers.is_empty() {
        backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
            stale_framebuffers
                .into_iter()
                .for_each(|fb| c.destroy_framebuffer(fb));
        }));
    }
    let stale_materials: Vec<AssetId<StandardMaterial>> = backend
        .materials
        .iter()
        .filter(|(_, m)| frame.saturating_sub(m.last_used) > 60)
        .map(|(id, _)| *id)
        .collect();
    for id in stale_materials {
        let material = backend.materials.remove(&id).unwrap();
        backend.retire_material(material);
    }
    let used_keys: Vec<String> = backend
        .views
        .values()
        .map(|v| v.render_pass_key.clone())
        .collect();
    let stale_passes: Vec<String> = backend
        .render_passes
        .iter()
        .filter(|(key, p)| {
            !used_keys.contains(key) && frame.saturating_sub(p.last_used) > KEEP_FRAMES
        })
        .map(|(key, _)| key.clone())
        .collect();
    for key in stale_passes {
        let pass = backend.render_passes.remove(&key).unwrap();
        backend.retire_pass(pass);
    }
    backend
        .initialized_outputs
        .retain(|_, used| frame.saturating_sub(*used) <= KEEP_FRAMES);
    backend.graveyard.seal_after_submit(&queue);
    backend.graveyard.collect(&backend.context);
    backend.frame += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame_graph::{DeviceCaps, compile};

    fn fitted(samples: u32, caps: DeviceCaps) -> (u32, usize, Option<String>) {
        let desc = ViewFrameDesc {
            extent: Extent::new(1920, 1080),
            output_format: Format::Bgra8Srgb,
            keep_output: false,
            light_format: Format::Rg11b10Float,
            depth_format: Format::Depth32Float,
            samples,
            msaa_depth_stencil: None,
            unmerged: false,
        };
        let compiled = compile(&plan::declare(&desc).unwrap(), &caps).unwrap();
        let (compiled, desc, note) = fit_tile_budget(compiled, desc, &caps).unwrap();
        (desc.samples, compiled.render_pass_count(), note)
    }

    #[test]
    fn msaa_is_lowered_until_the_g_buffer_fits_tile_memory() {
        // No tile budget: 4x stays 4x in one render pass.
        assert_eq!(fitted(4, DeviceCaps::desktop()), (4, 1, None));
        // Mali Valhall (256 bits per pixel): 2x and 4x of a 128-bit G-buffer do not fit.
        let (samples, passes, note) = fitted(4, DeviceCaps::mali_valhall());
        assert_eq!((samples, passes), (1, 1));
        assert!(note.unwrap().contains("does not fit"));
        // Adreno with 3 MiB of GMEM bins the 4x G-buffer: smaller bins, still one pass.
        let (samples, passes, _) = fitted(4, DeviceCaps::adreno(3 << 20));
        assert_eq!(passes, 1);
        assert!(samples >= 1);
    }
}
