//! bevy_ui inside the tile render pass: the `ui` subpass. What a view draws there this frame
//! ([`TileUiDraws`]: Bevy's `UiVertex` quads in Bevy's batches, built from Bevy's extracted UI
//! by `overlays::ui_in_pass`) and the subpass's pipeline (`ui.vert`/`ui.frag`, ports of Bevy's
//! `ui.wgsl`). The batches' image sets are cached with the materials' (`material_sets`).
//!
//! Bevy draws UI at 1x, after tone mapping, into the camera's main texture, and blits it to the
//! output; the tile path draws the same quads with the same blending into the output inside its
//! render pass, so the output is stored once.

use super::{
    keys::SamplerKey,
    pipelines::{PipelineTarget, specialization_entries},
    shaders::{ShaderId, TileLayouts, TileShaders, Variant},
};
use crate::vulkan::{VulkanContext, pipeline::GraphicsPipelineDesc};
use ash::vk;
use bevy::prelude::*;
use bytemuck::{Pod, Zeroable};
use std::ops::Range;

/// Bevy's `UiVertex` (bevy_ui_render 0.19.1 lib.rs:1438-1456, private there), field for field,
/// the pixel bounds of its quad and three vectors more for sliced images and gradients: the
/// vertex `ui.vert` reads. Box shadows, sliced images and gradients put their own vertices'
/// fields in it (see `box_shadow.frag`, `ui_texture_slice.frag` and `ui_gradient.frag`), so
/// that the subpass has one vertex buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub(crate) struct UiVertex {
    pub position: [f32; 3],
    pub uv: [f32; 2],
    pub color: [f32; 4],
    /// Bevy's `shader_flags`.
    pub flags: u32,
    /// Top left, top right, bottom right, bottom left.
    pub radius: [f32; 4],
    /// Left, top, right, bottom.
    pub border: [f32; 4],
    pub size: [f32; 2],
    /// Position relative to the centre of the node.
    pub point: [f32; 2],
    /// With MSAA, the quad as laid out (min x, min y, max x, max y, in framebuffer pixels):
    /// `ui.frag` draws only the pixels whose centre it covers, as at 1x ([`cover_whole_pixels`]).
    /// [`NO_BOUNDS`] otherwise.
    pub bounds: [f32; 4],
    /// Sliced and tiled images: Bevy's `repeat` (`ui_texture_slice.frag`); gradients: Bevy's
    /// `g_start` and `dir` (`ui_gradient.frag`); zeros otherwise.
    pub extra: [f32; 4],
    /// Gradients: the segment's end colour in the gradient's interpolation space (its start
    /// colour is [`Self::color`]); zeros otherwise.
    pub end_color: [f32; 4],
    /// Gradients: where the segment starts and ends along the gradient, its hint, and its
    /// interpolation space (`overlays::ui_gradients::space_code`); zeros otherwise.
    pub span: [f32; 4],
}

/// [`UiVertex::bounds`] of quads drawn as rasterised.
pub(crate) const NO_BOUNDS: [f32; 4] = [f32::MIN, f32::MIN, f32::MAX, f32::MAX];

impl Default for UiVertex {
    /// Zeros, and no bounds: drawn as rasterised.
    fn default() -> Self {
        Self {
            bounds: NO_BOUNDS,
            ..Zeroable::zeroed()
        }
    }
}

/// Pixels a quad grows by on each side in [`cover_whole_pixels`]: more than the half pixel
/// between a covered pixel's centre and its farthest sample.
const GROWTH: f32 = 1.0;

/// Bevy draws UI at 1x over the resolved image: a pixel is the UI's where the quad covers its
/// centre. Drawn at N samples, a quad edge inside a pixel would cover only some samples, and the
/// resolve would blend the UI's colour into the pixel by coverage: a text glyph's tight quad
/// gains a faint edge Bevy's has not. So each axis-aligned quad is grown by [`GROWTH`] on every
/// side, its attributes extrapolated (they are affine over the quad: the pixels it covered get
/// the same values), and its laid-out bounds, moved by the render area's `origin`, go to
/// `ui.frag`, which discards the pixels whose centre is outside them: every sample of a pixel
/// whose centre is inside is covered, and none of another. Rotated quads are left as they are.
pub(crate) fn cover_whole_pixels(vertices: &[UiVertex], origin: Vec2) -> Vec<UiVertex> {
    let mut grown = vertices.to_vec();
    for quad in grown.chunks_exact_mut(4) {
        let corner = |i: usize| Vec2::from(quad[i].position[..2].try_into().unwrap_or([0.0; 2]));
        let (origin_corner, across, down) =
            (corner(0), corner(1) - corner(0), corner(3) - corner(0));
        // Axis-aligned, not degenerate: `across` along x and `down` along y.
        if across.y != 0.0 || down.x != 0.0 || across.x == 0.0 || down.y == 0.0 {
            continue;
        }
        let (min, max) = (
            origin_corner.min(corner(2)) + origin,
            origin_corner.max(corner(2)) + origin,
        );
        let (ds, dt) = (GROWTH / across.x.abs(), GROWTH / down.y.abs());
        let original: [UiVertex; 4] = [quad[0], quad[1], quad[2], quad[3]];
        // Each corner's (s, t) on the quad, pushed outwards.
        let grown_st = [
            (-ds, -dt),
            (1.0 + ds, -dt),
            (1.0 + ds, 1.0 + dt),
            (-ds, 1.0 + dt),
        ];
        for (vertex, (s, t)) in quad.iter_mut().zip(grown_st) {
            let at = |attribute: fn(&UiVertex) -> Vec2| {
                let base = attribute(&original[0]);
                base + s * (attribute(&original[1]) - base) + t * (attribute(&original[3]) - base)
            };
            let position = at(|v| Vec2::new(v.position[0], v.position[1]));
            vertex.position = [position.x, position.y, vertex.position[2]];
            vertex.uv = at(|v| Vec2::from(v.uv)).into();
            vertex.point = at(|v| Vec2::from(v.point)).into();
            vertex.bounds = [min.x, min.y, max.x, max.y];
        }
    }
    grown
}

/// Consecutive quads drawn with one pipeline and image, as Bevy batches them (`UiBatch`;
/// Bevy draws box shadows one draw each, the same quads in the same order): a range of
/// [`TileUiDraws::indices`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct UiBatch {
    pub indices: Range<u32>,
    pub kind: UiBatchKind,
}

/// What a [`UiBatch`] draws.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum UiBatchKind {
    /// Nodes, borders, images and glyphs (`ui.frag`), sampling one image (Bevy's white image
    /// where untextured).
    #[cfg_attr(
        not(feature = "ui"),
        allow(dead_code, reason = "built only by bevy_ui's route (feature `ui`)")
    )]
    Nodes {
        image: AssetId<Image>,
        /// How the image is sampled (its `ImageSampler`, or the app's default).
        sampler: SamplerKey,
    },
    /// Box shadows (`box_shadow.frag`): no image.
    #[cfg_attr(
        not(feature = "ui"),
        allow(dead_code, reason = "built only by bevy_ui's route (feature `ui`)")
    )]
    BoxShadows,
    /// Sliced and tiled images (`ui_texture_slice.frag`), sampling one image.
    #[cfg_attr(
        not(feature = "ui"),
        allow(dead_code, reason = "built only by bevy_ui's route (feature `ui`)")
    )]
    Slices {
        image: AssetId<Image>,
        sampler: SamplerKey,
    },
    /// Gradients (`ui_gradient.frag`): no image.
    #[cfg_attr(
        not(feature = "ui"),
        allow(dead_code, reason = "built only by bevy_ui's route (feature `ui`)")
    )]
    Gradients,
    /// One egui mesh (`egui.frag`, premultiplied blending), sampling one egui texture, clipped
    /// to its clip rectangle as bevy_egui's `egui_pass` clips it.
    #[cfg_attr(
        not(feature = "inspector"),
        allow(dead_code, reason = "built only by egui's route (feature `inspector`)")
    )]
    Egui {
        image: AssetId<Image>,
        sampler: SamplerKey,
        /// The scissor in framebuffer pixels: x, y, width, height (not empty).
        scissor: [u32; 4],
    },
}

impl UiBatchKind {
    /// The image the batch samples, and how.
    pub fn image(&self) -> Option<(AssetId<Image>, SamplerKey)> {
        match *self {
            Self::Nodes { image, sampler }
            | Self::Slices { image, sampler }
            | Self::Egui { image, sampler, .. } => Some((image, sampler)),
            Self::BoxShadows | Self::Gradients => None,
        }
    }
}

/// Render-world component of a tile view whose bevy_ui items are drawn in the tile render
/// pass this frame (the `ui` subpass): the quads of every item of the view's UI phase, in
/// Bevy's order. Bevy's own UI pass has nothing left to draw for the view (the items were taken
/// from its phase). Replaced every frame; absent on frames whose UI goes Bevy's way.
#[derive(Component, Clone, Debug, Default)]
pub(crate) struct TileUiDraws {
    /// The UI view's `clip_from_world`, as Bevy's UI shader computes it.
    pub clip_from_world: Mat4,
    /// `UiAntiAlias` of the camera (Bevy's `ANTI_ALIAS` shader def).
    pub anti_alias: bool,
    /// `BoxShadowSamples` of the camera (Bevy's `SHADOW_SAMPLES` shader def).
    pub shadow_samples: u32,
    /// bevy_ui's quads first, then egui's meshes.
    pub vertices: Vec<UiVertex>,
    /// Of [`Self::vertices`], the first `quad_vertices` are bevy_ui's quads (grown to whole
    /// pixels with MSAA, [`cover_whole_pixels`]); the rest are egui's triangles.
    pub quad_vertices: usize,
    /// Four vertices and six indices per quad (Bevy's `QUAD_INDICES`), then egui's indices.
    pub indices: Vec<u32>,
    /// bevy_ui's batches, then egui's (one per mesh, [`UiBatchKind::Egui`]): egui is drawn
    /// over bevy_ui, as bevy_egui draws it by default (`EguiAboveBevyUi`).
    pub batches: Vec<UiBatch>,
    /// The bevy_ui phase items the quads were built from.
    pub items: usize,
    /// egui's meshes among the batches (the inspector overlay, `inspector::in_pass`).
    pub egui_meshes: usize,
}

/// A view's buffers of in-pass UI quads: Bevy's vertices and `u32` indices, grown to the
/// frame's UI and written by the frame's uploads; released a few frames after the view last
/// drew UI in its pass (an inspector shown once, a HUD taken away).
pub(crate) struct UiBuffers {
    pub vertices: crate::vulkan::memory::DeviceBuffer,
    pub indices: crate::vulkan::memory::DeviceBuffer,
    /// The render frame that last wrote them.
    pub last_used: u64,
}

/// [`UiVertex`] as vertex attributes: binding 0, per vertex, locations 0-11 in field order.
fn vertex_layout() -> (
    [vk::VertexInputBindingDescription; 1],
    [vk::VertexInputAttributeDescription; 12],
) {
    use std::mem::offset_of;
    use vk::Format as F;
    let attribute = |location, format, offset: usize| vk::VertexInputAttributeDescription {
        location,
        binding: 0,
        format,
        offset: offset as u32,
    };
    (
        [vk::VertexInputBindingDescription {
            binding: 0,
            stride: size_of::<UiVertex>() as u32,
            input_rate: vk::VertexInputRate::VERTEX,
        }],
        [
            attribute(0, F::R32G32B32_SFLOAT, offset_of!(UiVertex, position)),
            attribute(1, F::R32G32_SFLOAT, offset_of!(UiVertex, uv)),
            attribute(2, F::R32G32B32A32_SFLOAT, offset_of!(UiVertex, color)),
            attribute(3, F::R32_UINT, offset_of!(UiVertex, flags)),
            attribute(4, F::R32G32B32A32_SFLOAT, offset_of!(UiVertex, radius)),
            attribute(5, F::R32G32B32A32_SFLOAT, offset_of!(UiVertex, border)),
            attribute(6, F::R32G32_SFLOAT, offset_of!(UiVertex, size)),
            attribute(7, F::R32G32_SFLOAT, offset_of!(UiVertex, point)),
            attribute(8, F::R32G32B32A32_SFLOAT, offset_of!(UiVertex, bounds)),
            attribute(9, F::R32G32B32A32_SFLOAT, offset_of!(UiVertex, extra)),
            attribute(10, F::R32G32B32A32_SFLOAT, offset_of!(UiVertex, end_color)),
            attribute(11, F::R32G32B32A32_SFLOAT, offset_of!(UiVertex, span)),
        ],
    )
}

/// Bevy's `BlendState::PREMULTIPLIED_ALPHA_BLENDING` (egui's): colour and alpha
/// One/OneMinusSrcAlpha.
fn premultiplied_alpha_blending() -> vk::PipelineColorBlendAttachmentState {
    vk::PipelineColorBlendAttachmentState::default()
        .blend_enable(true)
        .src_color_blend_factor(vk::BlendFactor::ONE)
        .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .color_blend_op(vk::BlendOp::ADD)
        .src_alpha_blend_factor(vk::BlendFactor::ONE)
        .dst_alpha_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .alpha_blend_op(vk::BlendOp::ADD)
        .color_write_mask(vk::ColorComponentFlags::RGBA)
}

/// Bevy's `BlendState::ALPHA_BLENDING`: colour SrcAlpha/OneMinusSrcAlpha, alpha
/// One/OneMinusSrcAlpha.
fn alpha_blending() -> vk::PipelineColorBlendAttachmentState {
    vk::PipelineColorBlendAttachmentState::default()
        .blend_enable(true)
        .src_color_blend_factor(vk::BlendFactor::SRC_ALPHA)
        .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .color_blend_op(vk::BlendOp::ADD)
        .src_alpha_blend_factor(vk::BlendFactor::ONE)
        .dst_alpha_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .alpha_blend_op(vk::BlendOp::ADD)
        .color_write_mask(vk::ColorComponentFlags::RGBA)
}

impl VulkanContext {
    /// The `ui` subpass's pipeline, as Bevy's `UiPipeline` specialises it: triangle lists, no
    /// culling, no depth, alpha blending, `ui.frag`'s `ANTI_ALIAS` set to `anti_alias`; with
    /// MSAA its `COVER_PIXELS` on ([`cover_whole_pixels`]).
    pub fn create_ui_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
        anti_alias: bool,
    ) -> Result<vk::Pipeline, vk::Result> {
        self.create_ui_subpass_pipeline(
            layouts,
            shaders,
            target,
            (ShaderId::UiFrag, vk::Bool32::from(anti_alias)),
            alpha_blending(),
        )
    }

    /// The `ui` subpass's box shadow pipeline, as Bevy's `BoxShadowPipeline` specialises it:
    /// the UI pipeline's state with `box_shadow.frag`, its `SHADOW_SAMPLES` set to `samples`.
    pub fn create_box_shadow_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
        samples: u32,
    ) -> Result<vk::Pipeline, vk::Result> {
        self.create_ui_subpass_pipeline(
            layouts,
            shaders,
            target,
            (ShaderId::BoxShadowFrag, samples),
            alpha_blending(),
        )
    }

    /// The `ui` subpass's sliced image pipeline, as Bevy's `UiTextureSlicePipeline` specialises
    /// it: the UI pipeline's state with `ui_texture_slice.frag`.
    pub fn create_ui_slice_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
    ) -> Result<vk::Pipeline, vk::Result> {
        self.create_ui_subpass_pipeline(
            layouts,
            shaders,
            target,
            (ShaderId::UiTextureSliceFrag, 0),
            alpha_blending(),
        )
    }

    /// The `ui` subpass's gradient pipeline, as Bevy's `GradientPipeline` specialises it: the
    /// UI pipeline's state with `ui_gradient.frag`, its `ANTI_ALIAS` set to `anti_alias` (the
    /// interpolation space, Bevy's other key, is per vertex).
    pub fn create_ui_gradient_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
        anti_alias: bool,
    ) -> Result<vk::Pipeline, vk::Result> {
        self.create_ui_subpass_pipeline(
            layouts,
            shaders,
            target,
            (ShaderId::UiGradientFrag, vk::Bool32::from(anti_alias)),
            alpha_blending(),
        )
    }

    /// The `ui` subpass's egui pipeline, as bevy_egui's `EguiPipeline` specialises it: the UI
    /// pipeline's state with `egui.frag` and premultiplied alpha blending. Its draws set the
    /// scissor (the pipelines' dynamic state) to their clip rectangles.
    pub fn create_egui_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
    ) -> Result<vk::Pipeline, vk::Result> {
        self.create_ui_subpass_pipeline(
            layouts,
            shaders,
            target,
            (ShaderId::EguiFrag, 0),
            premultiplied_alpha_blending(),
        )
    }

    /// A pipeline of the `ui` subpass with `ui.vert` and `fragment`, whose specialisation
    /// constant 0 is `constant` and constant 1 (`COVER_PIXELS`) is on with MSAA (a fragment
    /// shader without them ignores them), blending with `blend`.
    fn create_ui_subpass_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
        (fragment, constant): (ShaderId, u32),
        blend: vk::PipelineColorBlendAttachmentState,
    ) -> Result<vk::Pipeline, vk::Result> {
        let (bindings, attributes) = vertex_layout();
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default()
            .vertex_binding_descriptions(&bindings)
            .vertex_attribute_descriptions(&attributes);
        let input_assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let rasterization = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0);
        let multisample =
            vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(target.samples);
        let entries = specialization_entries(&[0, 1]);
        let multisampled = target.samples != vk::SampleCountFlags::TYPE_1;
        let data = [constant, vk::Bool32::from(multisampled)];
        let specialization = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(bytemuck::cast_slice(&data));
        let stages = [
            shaders.stage(ShaderId::UiVert, Variant::BASE),
            shaders
                .stage(fragment, Variant::BASE)
                .specialization_info(&specialization),
        ];
        let blend_attachments = vec![blend; target.color_attachments as usize];
        self.create_graphics_pipeline(&GraphicsPipelineDesc {
            layout: layouts.ui_pipeline_layout,
            render_pass: target.render_pass,
            subpass: target.subpass,
            stages: &stages,
            vertex_input: &vertex_input,
            input_assembly: &input_assembly,
            rasterization: &rasterization,
            multisample: &multisample,
            depth_stencil: None,
            blend_attachments: &blend_attachments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vertex_is_bevys_ui_vertex_and_its_bounds() {
        // Bevy's layout (bevy_ui_render pipeline.rs:58-78): 88 bytes, eight attributes in
        // field order, packed; then the bounds, the slices' fourth vector and the gradients'
        // end colour and span.
        assert_eq!(size_of::<UiVertex>(), 152);
        let (bindings, attributes) = vertex_layout();
        assert_eq!(bindings[0].stride, 152);
        let offsets: Vec<u32> = attributes.iter().map(|a| a.offset).collect();
        assert_eq!(offsets, [0, 12, 20, 36, 40, 56, 72, 80, 88, 104, 120, 136]);
        let locations: Vec<u32> = attributes.iter().map(|a| a.location).collect();
        assert_eq!(locations, (0..12).collect::<Vec<u32>>());
    }

    /// A quad from (10, 20) to (30, 30) with UVs 0..1 and points relative to its centre.
    fn quad() -> [UiVertex; 4] {
        let corners = [(10.0, 20.0), (30.0, 20.0), (30.0, 30.0), (10.0, 30.0)];
        let uvs = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
        std::array::from_fn(|i| UiVertex {
            position: [corners[i].0, corners[i].1, 0.0],
            uv: uvs[i],
            point: [corners[i].0 - 20.0, corners[i].1 - 25.0],
            bounds: NO_BOUNDS,
            ..default()
        })
    }

    #[test]
    fn msaa_quads_grow_a_pixel_with_their_attributes_and_keep_their_bounds() {
        let grown = cover_whole_pixels(&quad(), Vec2::new(100.0, 50.0));
        let positions: Vec<[f32; 3]> = grown.iter().map(|v| v.position).collect();
        assert_eq!(
            positions,
            [
                [9.0, 19.0, 0.0],
                [31.0, 19.0, 0.0],
                [31.0, 31.0, 0.0],
                [9.0, 31.0, 0.0]
            ]
        );
        // UVs and points extrapolated: 1 pixel is 1/20 of the width and 1/10 of the height.
        assert_eq!(grown[0].uv, [-0.05, -0.1]);
        assert_eq!(grown[2].uv, [1.05, 1.1]);
        assert_eq!(grown[0].point, [-11.0, -6.0]);
        // The laid-out quad in framebuffer pixels (the render area starts at (100, 50)).
        assert!(grown.iter().all(|v| v.bounds == [110.0, 70.0, 130.0, 80.0]));
        // A rotated quad stays as it was.
        let mut rotated = quad();
        rotated[1].position[1] = 25.0;
        assert_eq!(cover_whole_pixels(&rotated, Vec2::ZERO), rotated);
    }
}
