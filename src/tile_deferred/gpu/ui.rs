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
    pipelines::PipelineTarget,
    shaders::{ShaderId, TileLayouts, TileShaders, Variant},
};
use crate::vulkan::{VulkanContext, pipeline::GraphicsPipelineDesc};
use ash::vk;
use bevy::prelude::*;
use bytemuck::{Pod, Zeroable};
use std::ops::Range;

/// Bevy's `UiVertex` (bevy_ui_render 0.19.1 lib.rs:1438-1456, private there), field for field:
/// the vertex `ui.vert` reads.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
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
}

/// Consecutive quads drawn with one image, as Bevy batches them (`UiBatch`): a range of
/// [`TileUiDraws::indices`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct UiBatch {
    pub indices: Range<u32>,
    pub image: AssetId<Image>,
    /// How the image is sampled (its `ImageSampler`, or the app's default).
    pub sampler: SamplerKey,
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
    pub vertices: Vec<UiVertex>,
    /// Four vertices and six indices per quad (Bevy's `QUAD_INDICES`).
    pub indices: Vec<u32>,
    pub batches: Vec<UiBatch>,
    /// The phase items they were built from.
    pub items: usize,
}

/// A view's buffers of in-pass UI quads: Bevy's vertices and `u32` indices, grown to the
/// frame's UI and written by the frame's uploads.
pub(crate) struct UiBuffers {
    pub vertices: crate::vulkan::memory::DeviceBuffer,
    pub indices: crate::vulkan::memory::DeviceBuffer,
}

/// Bevy's `UiVertex` as vertex attributes: binding 0, per vertex, locations 0-7 in field order.
fn vertex_layout() -> (
    [vk::VertexInputBindingDescription; 1],
    [vk::VertexInputAttributeDescription; 8],
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
        ],
    )
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
    /// culling, no depth, alpha blending, `ui.frag`'s `ANTI_ALIAS` set to `anti_alias`.
    pub fn create_ui_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
        anti_alias: bool,
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
        let entries = [vk::SpecializationMapEntry::default()
            .constant_id(0)
            .offset(0)
            .size(4)];
        let data = [vk::Bool32::from(anti_alias)];
        let specialization = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(bytemuck::cast_slice(&data));
        let stages = [
            shaders.stage(ShaderId::UiVert, Variant::BASE),
            shaders
                .stage(ShaderId::UiFrag, Variant::BASE)
                .specialization_info(&specialization),
        ];
        let blend_attachments = vec![alpha_blending(); target.color_attachments as usize];
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
    fn the_vertex_is_bevys_ui_vertex() {
        // Bevy's layout (bevy_ui_render pipeline.rs:58-78): 88 bytes, eight attributes in
        // field order, packed.
        assert_eq!(size_of::<UiVertex>(), 88);
        let (bindings, attributes) = vertex_layout();
        assert_eq!(bindings[0].stride, 88);
        let offsets: Vec<u32> = attributes.iter().map(|a| a.offset).collect();
        assert_eq!(offsets, [0, 12, 20, 36, 40, 56, 72, 80]);
        let locations: Vec<u32> = attributes.iter().map(|a| a.location).collect();
        assert_eq!(locations, [0, 1, 2, 3, 4, 5, 6, 7]);
    }
}
