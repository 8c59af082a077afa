//! Stage 1, the view: the camera, its target and the scene's global lights become the frame's
//! description (what the compiler plans) and the view's GPU data (what the shaders read).

use crate::tile_deferred::{
    camera::{MsaaShading, TileDebugView, TileDeferred},
    gpu::{
        indirect,
        types::{GpuTonemapParams, GpuView, msaa_flags, tonemap_flags},
    },
    lighting::shadows,
    plan::{self, ViewFrameDesc},
    report::TileMeshDrawMode,
    scene::params::TileSceneParams,
};
use crate::{
    device::SampleCounts,
    frame_graph::{Extent, Format},
    tiers::TierDecision,
    vulkan::{VulkanContext, conv, render_pass::OutputKind},
};
use ash::vk;
use bevy::{
    camera::{CameraOutputMode, ClearColorConfig, visibility::RenderLayers},
    core_pipeline::tonemapping::{DebandDither, Tonemapping},
    ecs::query::QueryData,
    light::{AmbientLight, ShadowFilteringMethod},
    pbr::ViewShadowBindings,
    prelude::*,
    render::{
        camera::ExtractedCamera,
        render_resource::{TextureFormat, TextureView},
        sync_world::MainEntity,
        view::{ExtractedView, RenderVisibleEntities, ViewTarget},
    },
};

/// What the tile pass reads of its view entity.
#[derive(QueryData)]
pub(crate) struct TileViewQuery {
    pub(crate) entity: Entity,
    pub(crate) main_entity: &'static MainEntity,
    pub(crate) camera: &'static ExtractedCamera,
    pub(crate) view: &'static ExtractedView,
    pub(crate) target: &'static ViewTarget,
    pub(crate) settings: &'static TileDeferred,
    pub(crate) visible: &'static RenderVisibleEntities,
    pub(crate) tonemapping: Option<&'static Tonemapping>,
    pub(crate) dither: Option<&'static DebandDither>,
    pub(crate) tier: Option<&'static TierDecision>,
    pub(crate) ambient: Option<&'static AmbientLight>,
    pub(crate) render_layers: Option<&'static RenderLayers>,
    pub(crate) shadow_filter: Option<&'static ShadowFilteringMethod>,
    /// Bevy's shadow textures (`prepare_lights` gives every 3D camera view them).
    pub(crate) shadow_maps: Option<&'static ViewShadowBindings>,
    /// Synced by Bevy's `SkyboxPlugin` (`environment` draws it).
    pub(crate) skybox: Option<&'static bevy::light::Skybox>,
    /// Extracted by Bevy's `FogPlugin` (`environment` applies it).
    pub(crate) fog: Option<&'static bevy::pbr::DistanceFog>,
    /// Extracted by `environment::extract_environment`.
    pub(crate) environment_map:
        Option<&'static crate::tile_deferred::lighting::environment::TileEnvironmentMap>,
    /// Extracted by `environment::extract_environment`.
    pub(crate) irradiance_volumes:
        Option<&'static crate::tile_deferred::lighting::environment::TileIrradianceVolumes>,
    /// Bevy's depth texture of the camera (`prepare_core_3d_depth_textures` makes one for every
    /// `Camera3d`); the tile path writes it only on frames that draw gizmos.
    pub(crate) view_depth: Option<&'static bevy::render::view::ViewDepthTexture>,
    /// This frame draws Bevy's gizmos after the tile pass (`gizmos`).
    pub(crate) draws_gizmos: Has<crate::tile_deferred::camera::GizmosOverTile>,
    /// bevy_ui's quads the tile pass draws in its `ui` subpass this frame
    /// (`overlays::ui_in_pass`).
    pub(crate) ui: Option<&'static crate::tile_deferred::gpu::ui::TileUiDraws>,
    /// The meshes Bevy draws over the tile frame this frame (`scene::bevy_phases`), which the
    /// pass leaves out.
    pub(crate) materials_over_tile:
        Option<&'static crate::tile_deferred::camera::MaterialsOverTileView>,
    /// Bevy post-processes the frame after the tile pass (`overlays::post_process`): the pass
    /// writes the camera's main texture, not its output.
    pub(crate) post_processing:
        Option<&'static crate::tile_deferred::camera::PostProcessedAfterTile>,
}

impl TileViewQueryItem<'_, '_> {
    /// Bevy post-processes the frame after the tile pass: the pass writes the main texture.
    pub(crate) fn post_processed(&self) -> bool {
        self.post_processing.is_some()
    }

    /// Bevy tone maps the frame after the tile pass (after its bloom): the pass stores the
    /// camera's light, exposed, fogged and resolved, but not tone mapped or dithered.
    pub(crate) fn tone_mapped_by_bevy(&self) -> bool {
        self.post_processing
            .is_some_and(|post| post.tone_mapped_by_bevy)
    }

    /// The tonemap subpass grades and dithers the frame, as Bevy's tone mapping would: not
    /// where Bevy's own tone mapping runs after the pass ([`Self::tone_mapped_by_bevy`]), nor on
    /// an HDR camera with `Tonemapping::None`, whose tonemapping pass Bevy skips (bevy_core_pipeline
    /// 0.19.1 `tonemapping` returns before drawing): `Core3d` neither grades nor dithers it.
    pub(crate) fn graded_in_pass(&self) -> bool {
        let bevy_skips_tone_mapping =
            self.camera.hdr && self.tonemapping == Some(&Tonemapping::None);
        !(self.tone_mapped_by_bevy() || bevy_skips_tone_mapping)
    }

    /// The image the tile pass writes: the camera's output, or its main texture where Bevy's
    /// post-processing reads the frame after the pass (and its blit writes the output).
    pub(crate) fn tile_output(&self) -> Option<&TextureView> {
        if self.post_processed() {
            Some(self.target.main_texture_view())
        } else {
            self.target.out_texture()
        }
    }

    /// The format the tile pass writes [`Self::tile_output`] in.
    pub(crate) fn tile_output_format(&self) -> Option<TextureFormat> {
        if self.post_processed() {
            Some(self.target.main_texture_format())
        } else {
            self.target.out_texture_view_format()
        }
    }
}

/// Per-frame facts about the view, computed once.
pub(crate) struct ViewFrame {
    pub(crate) entity: Entity,
    pub(crate) desc: ViewFrameDesc,
    pub(crate) requested_samples: u32,
    /// Why the sample count differs from the camera's `Msaa`, if it does.
    pub(crate) msaa_note: Option<String>,
    pub(crate) msaa_flags: u32,
    pub(crate) debug_view: TileDebugView,
    /// How the mesh draws are recorded (`TileDeferred::indirect_draws` and the device).
    pub(crate) mesh_draws: TileMeshDrawMode,
    /// The camera is HDR (`Hdr`): Bevy tone maps its whole main texture, background included.
    pub(crate) hdr: bool,
    pub(crate) output_kind: OutputKind,
    pub(crate) target_extent: vk::Extent2D,
    pub(crate) viewport: UVec4,
    pub(crate) gpu_view: GpuView,
    pub(crate) tonemap: GpuTonemapParams,
    pub(crate) tonemapping: Tonemapping,
    /// Bevy's clear of the camera's final target (`Camera::output_mode`): what the first camera
    /// drawing to a target clears the whole target to, inside its viewport and out.
    pub(crate) output_clear: Option<LinearRgba>,
    /// The viewport is the whole target.
    pub(crate) covers_target: bool,
}

impl ViewFrame {
    /// The frame of `view`, or `None` while it has nothing to draw into (no output yet, a
    /// zero-size target or viewport, an output format the tile path cannot write).
    pub(crate) fn gather(
        view: &TileViewQueryItem,
        scene: &TileSceneParams,
        context: &VulkanContext,
    ) -> Option<Self> {
        let output_view = view.tile_output()?;
        let output_format = conv::frame_graph_format(view.tile_output_format()?)?;
        let texture = output_view.texture();
        let target_extent = vk::Extent2D {
            width: texture.width(),
            height: texture.height(),
        };
        let viewport = clamp_viewport(view.view.viewport, target_extent)?;
        let swapchain = is_swapchain(scene, output_view);
        let clear = camera_clear(view.camera, scene);
        let drew_before = view.camera.sorted_camera_index_for_target > 0;
        // A freshly acquired swapchain image has no contents to keep unless another camera drew
        // into it this frame; an image keeps what is outside a user viewport or under
        // `ClearColorConfig::None`. The main texture is the camera's own, and Bevy's blit reads
        // only the viewport of it: it keeps its contents only under `ClearColorConfig::None`,
        // as Bevy's main pass loads it then.
        let keep_output = if view.post_processed() {
            clear.is_none()
        } else if swapchain {
            drew_before
        } else {
            drew_before || clear.is_none() || view.camera.viewport.is_some()
        };
        let output_kind = if swapchain {
            OutputKind::Swapchain { kept: keep_output }
        } else {
            OutputKind::TrackedImage
        };
        let requested_samples = view.tier.map_or(1, |decision| decision.tier.tile_samples());
        let supported = supported_sample_counts(scene);
        // Only `ClearColorConfig::None` needs the output's pixels inside the viewport: a
        // viewport, or another camera before this one, keeps what is outside the render area,
        // which the in-pass resolve does not touch.
        let (samples, msaa_note) =
            plan::sample_count(requested_samples, supported, clear.is_none());
        let desc = ViewFrameDesc {
            extent: Extent::new(viewport.z, viewport.w),
            output_format,
            keep_output,
            light_format: Format::Rg11b10Float,
            depth_format: Format::Depth32Float,
            samples,
            msaa_depth_stencil: msaa_depth_stencil_format(scene, context, samples, supported),
            // Before the first decision (device not probed yet) the setting alone decides.
            unmerged: view
                .tier
                .map_or(!view.settings.merge_subpasses, |decision| {
                    decision.tier.is_unmerged()
                }),
            // Set by the tile pass once it knows what the view draws.
            transparent: plan::TransparentPass::None,
            export_depth: false,
            ui: false,
        };
        // Where Bevy tone maps after the pass (after its bloom), the pass stores the light as
        // it is: no operator, no dither, and no clamp of MSAA samples before they are averaged.
        // (An HDR camera with `Tonemapping::None` is not dithered either, as in `Core3d`.)
        let (tonemapping, dither) = if !view.graded_in_pass() {
            (Tonemapping::None, DebandDither::Disabled)
        } else {
            (
                view.tonemapping.copied().unwrap_or_default(),
                view.dither.copied().unwrap_or_default(),
            )
        };
        Some(Self {
            entity: view.entity,
            desc,
            requested_samples,
            msaa_note,
            msaa_flags: shader_msaa_flags(view.settings),
            debug_view: view.settings.debug_view,
            mesh_draws: indirect::mesh_draw_mode(view.settings.indirect_draws, context.indirect),
            hdr: view.camera.hdr,
            output_kind,
            target_extent,
            viewport,
            gpu_view: gpu_view(view, scene, viewport),
            tonemap: GpuTonemapParams {
                clear_color: match clear {
                    Some(c) => [c.red, c.green, c.blue, 1.0],
                    None => [0.0; 4],
                },
                mode: [
                    tonemapping_mode(tonemapping),
                    u32::from(dither == DebandDither::Enabled),
                    u32::from(conv::needs_shader_srgb_encode(output_format)),
                    if view.tone_mapped_by_bevy() {
                        tonemap_flags::HDR_BACKGROUND | tonemap_flags::STORES_LIGHT
                    } else if view.camera.hdr {
                        tonemap_flags::HDR_BACKGROUND
                    } else {
                        0
                    },
                ],
            },
            tonemapping,
            output_clear: output_clear(view.camera, scene),
            covers_target: viewport.x == 0
                && viewport.y == 0
                && viewport.z == target_extent.width
                && viewport.w == target_extent.height,
        })
    }
}

/// The viewport inside the target, or `None` when either is empty. The render area never
/// leaves the target (a window being resized can briefly report a viewport from its previous
/// size).
fn clamp_viewport(viewport: UVec4, target: vk::Extent2D) -> Option<UVec4> {
    if viewport.z == 0 || viewport.w == 0 || target.width == 0 || target.height == 0 {
        return None;
    }
    let x = viewport.x.min(target.width - 1);
    let y = viewport.y.min(target.height - 1);
    Some(UVec4::new(
        x,
        y,
        viewport.z.min(target.width - x),
        viewport.w.min(target.height - y),
    ))
}

/// The output is a window's swapchain image acquired this frame.
fn is_swapchain(
    scene: &TileSceneParams,
    output_view: &bevy::render::render_resource::TextureView,
) -> bool {
    scene.windows.windows.values().any(|window| {
        window
            .swap_chain_texture_view
            .as_ref()
            .is_some_and(|swapchain| swapchain.id() == output_view.id())
    })
}

/// Sample counts the device can render both colour and depth at (1 before the probe).
fn supported_sample_counts(scene: &TileSceneParams) -> SampleCounts {
    scene
        .profile
        .as_deref()
        .and_then(|p| p.vulkan.as_ref())
        .map_or(SampleCounts(1), |vk| {
            SampleCounts(
                vk.framebuffer_color_sample_counts.0 & vk.framebuffer_depth_sample_counts.0,
            )
        })
}

/// The depth-stencil format of the MSAA stencil split, where the device can run it: it needs
/// sample-rate shading (wgpu enables the feature where the device has it) and a depth-stencil
/// format multisampled at every supported count the tile budget may lower `samples` to.
fn msaa_depth_stencil_format(
    scene: &TileSceneParams,
    context: &VulkanContext,
    samples: u32,
    supported: SampleCounts,
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

/// The shaders' `msaa_flags` bits for the camera's settings.
fn shader_msaa_flags(settings: &TileDeferred) -> u32 {
    let mut flags = 0;
    if settings.msaa_shading == MsaaShading::EverySample {
        flags |= msaa_flags::PER_SAMPLE;
    }
    if settings.debug_view == TileDebugView::MsaaEdges {
        flags |= msaa_flags::DEBUG_EDGES;
    }
    flags
}

/// The view uniform: matrices, viewport, ambient light, exposure and the directional lights
/// (point and spot lights are counted later, when they are gathered).
fn gpu_view(view: &TileViewQueryItem, scene: &TileSceneParams, viewport: UVec4) -> GpuView {
    let extracted = view.view;
    let clip_from_view = extracted.clip_from_view;
    let world_from_view = extracted.world_from_view.to_matrix();
    let view_from_world = world_from_view.inverse();
    let clip_from_world = extracted
        .clip_from_world
        .unwrap_or(clip_from_view * view_from_world);
    let orthographic = clip_from_view.w_axis.w == 1.0;
    let ambient = match (view.ambient, scene.global_ambient.as_deref()) {
        (Some(a), _) => LinearRgba::from(a.color) * a.brightness,
        (None, Some(a)) => LinearRgba::from(a.color) * a.brightness,
        (None, None) => LinearRgba::BLACK,
    };
    let (directional_lights, directional_count) = shadows::directional_lights(
        &scene.directional_light_refs(),
        view.entity,
        &view.render_layers.cloned().unwrap_or_default(),
        scene.max_texture_array_layers(),
    );
    let frame_count = scene.frame_count.as_deref().map_or(0, |f| f.0);
    // What the tone mapping applies of the camera's grading, as Bevy's in-shader tone mapping
    // does; nothing where Bevy's own tone mapping grades the frame after the pass, or skips it.
    let (grading_exposure, grading_post_saturation) = if !view.graded_in_pass() {
        (0.0, 1.0)
    } else {
        let global = &extracted.color_grading.global;
        (global.exposure, global.post_saturation)
    };
    GpuView {
        clip_from_world: clip_from_world.to_cols_array_2d(),
        world_from_clip: clip_from_world.inverse().to_cols_array_2d(),
        view_from_world: view_from_world.to_cols_array_2d(),
        clip_from_view: clip_from_view.to_cols_array_2d(),
        world_position: extracted
            .world_from_view
            .translation()
            .extend(if orthographic { 1.0 } else { 0.0 })
            .to_array(),
        viewport: viewport.as_vec4().to_array(),
        ambient: [ambient.red, ambient.green, ambient.blue, 0.0],
        exposure: [
            view.camera.exposure,
            grading_exposure,
            grading_post_saturation,
            0.0,
        ],
        counts: [
            directional_count,
            0,
            shadows::filter_method(view.shadow_filter),
            frame_count,
        ],
        // Filled in once the lights are assigned to clusters.
        cluster_grid: [1, 1, 1, 0],
        cluster_params: [1.0, 1.0, 1.0, 1.0],
        directional_lights,
        // The skybox (and what else is appended) is written by `environment`.
        ..bytemuck::Zeroable::zeroed()
    }
}

/// The camera's clear colour (`Camera::clear_color`): what its frame shows where nothing is
/// drawn. `None` under `ClearColorConfig::None`.
pub(crate) fn camera_clear(
    camera: &ExtractedCamera,
    scene: &TileSceneParams,
) -> Option<LinearRgba> {
    match camera.clear_color {
        ClearColorConfig::Default => Some(scene.clear_color.0.to_linear()),
        ClearColorConfig::Custom(color) => Some(color.to_linear()),
        ClearColorConfig::None => None,
    }
}

/// What Bevy clears the camera's target to before the first camera draws into it.
pub(crate) fn output_clear(
    camera: &ExtractedCamera,
    scene: &TileSceneParams,
) -> Option<LinearRgba> {
    match camera.output_mode {
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
    }
}

/// The tonemap shader's operator index (see `shaders/tonemap.glsl`).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_viewport_is_clamped_to_the_target() {
        let target = vk::Extent2D {
            width: 100,
            height: 50,
        };
        assert_eq!(
            clamp_viewport(UVec4::new(0, 0, 100, 50), target),
            Some(UVec4::new(0, 0, 100, 50))
        );
        // A viewport from the window's previous, larger size.
        assert_eq!(
            clamp_viewport(UVec4::new(80, 40, 200, 100), target),
            Some(UVec4::new(80, 40, 20, 10))
        );
        assert_eq!(
            clamp_viewport(UVec4::new(500, 500, 10, 10), target),
            Some(UVec4::new(99, 49, 1, 1))
        );
        assert_eq!(clamp_viewport(UVec4::new(0, 0, 0, 10), target), None);
        let empty = vk::Extent2D {
            width: 0,
            height: 0,
        };
        assert_eq!(clamp_viewport(UVec4::new(0, 0, 10, 10), empty), None);
    }
}
