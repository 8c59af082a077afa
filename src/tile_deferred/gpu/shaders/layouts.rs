//! The descriptor set layouts and pipeline layouts of the tile shaders' interface
//! (common.glsl lists the sets).
//!
//! One pipeline layout serves every pipeline of the pass: set 0 view (uniform, lights, the
//! lights' cluster masks, Bevy's two shadow textures, the instances' joint matrices and morph
//! weights, the morph displacements; and for the light assignment's compute pipeline, which
//! has a layout of its own over the same set, the lights' reaches, the cluster extents and the
//! assignment's statistics), set 1 material (uniform + 5 textures + the draw's lightmap), set 2 the G-buffer input attachments, the environment map's cubes and the irradiance volume, set 3 the
//! tonemap inputs (light, depth, LUT, skybox cube, material), and 48 bytes of fragment push constants. The unmerged debug tier
//! uses a second one whose sets 2 and 3 hold the same attachments as textures. Binding the view
//! set once per pass and switching only the material set per draw keeps the command stream short.
//! The `ui` subpass (bevy_ui inside the tile pass) has a layout of its own: one image set and
//! the UI view's matrix, as Bevy's UI pipeline reads them.

use crate::{
    tile_deferred::gpu::types::{GpuClusterAssignParams, GpuPushConstants},
    vulkan::{VulkanContext, descriptors::binding},
};
use ash::vk;

/// The descriptor set layouts and the pipeline layouts shared by all tile pipelines.
pub(crate) struct TileLayouts {
    pub view: vk::DescriptorSetLayout,
    pub material: vk::DescriptorSetLayout,
    pub gbuffer_inputs: vk::DescriptorSetLayout,
    pub tonemap_inputs: vk::DescriptorSetLayout,
    /// The unmerged tier's sets 2 and 3: the same bindings as combined image samplers (the
    /// attachments were stored by earlier render passes and are fetched as textures).
    pub gbuffer_textures: vk::DescriptorSetLayout,
    pub tonemap_textures: vk::DescriptorSetLayout,
    /// Sets view, material, G-buffer inputs, tonemap inputs (the merged tiers).
    pub pipeline_layout: vk::PipelineLayout,
    /// Sets view, material, G-buffer textures, tonemap textures (the unmerged tier).
    pub sampled_pipeline_layout: vk::PipelineLayout,
    /// The light assignment's compute pipeline: the view set and its push constants.
    pub cluster_assign_layout: vk::PipelineLayout,
    /// The `ui` subpass's set 0: the image of a batch of bevy_ui nodes or glyphs (ui.frag).
    pub ui_image: vk::DescriptorSetLayout,
    /// The `ui` subpass's pipelines: [`Self::ui_image`], and the UI view's `clip_from_world`
    /// (64 bytes of vertex push constants, ui.vert).
    pub ui_pipeline_layout: vk::PipelineLayout,
}

impl TileLayouts {
    /// Creates the shared layouts; on an error, those already made are destroyed.
    pub fn new(context: &VulkanContext) -> Result<Self, vk::Result> {
        let mut layouts = Self {
            view: vk::DescriptorSetLayout::null(),
            material: vk::DescriptorSetLayout::null(),
            gbuffer_inputs: vk::DescriptorSetLayout::null(),
            tonemap_inputs: vk::DescriptorSetLayout::null(),
            gbuffer_textures: vk::DescriptorSetLayout::null(),
            tonemap_textures: vk::DescriptorSetLayout::null(),
            pipeline_layout: vk::PipelineLayout::null(),
            sampled_pipeline_layout: vk::PipelineLayout::null(),
            cluster_assign_layout: vk::PipelineLayout::null(),
            ui_image: vk::DescriptorSetLayout::null(),
            ui_pipeline_layout: vk::PipelineLayout::null(),
        };
        match layouts.create(context) {
            Ok(()) => Ok(layouts),
            Err(error) => {
                layouts.destroy(context);
                Err(error)
            }
        }
    }

    /// Creates each layout into its (null) field, stopping at the first error.
    fn create(&mut self, context: &VulkanContext) -> Result<(), vk::Result> {
        use vk::{DescriptorType as D, ShaderStageFlags as S};
        let vertex_fragment = S::VERTEX | S::FRAGMENT;
        self.view = context.create_descriptor_set_layout(&[
            binding(0, D::UNIFORM_BUFFER, vertex_fragment),
            binding(1, D::STORAGE_BUFFER, vertex_fragment),
            // The cluster masks: written by cluster_assign.comp, read by the lighting.
            binding(2, D::STORAGE_BUFFER, vertex_fragment | S::COMPUTE),
            binding(3, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
            binding(4, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
            // Joint matrices and morph weights, and morph displacements (gbuffer.vert).
            binding(5, D::STORAGE_BUFFER, S::VERTEX),
            binding(6, D::STORAGE_BUFFER, S::VERTEX),
            // The lights' reaches, the cluster boxes' extents and the assignment's statistics
            // (cluster_assign.comp).
            binding(7, D::STORAGE_BUFFER, S::COMPUTE),
            binding(8, D::STORAGE_BUFFER, S::COMPUTE),
            binding(9, D::STORAGE_BUFFER, S::COMPUTE),
        ])?;
        self.material = context.create_descriptor_set_layout(&[
            binding(0, D::UNIFORM_BUFFER, vertex_fragment),
            binding(1, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
            binding(2, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
            binding(3, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
            binding(4, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
            binding(5, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
            // The draw's lightmap (lightmap.glsl).
            binding(6, D::COMBINED_IMAGE_SAMPLER, S::FRAGMENT),
        ])?;
        // Sets 2 and 3 are read by fragment shaders only, binding i of type types[i].
        let fragment_set = |types: &[D]| {
            let bindings: Vec<_> = (0..)
                .zip(types)
                .map(|(index, &ty)| binding(index, ty, S::FRAGMENT))
                .collect();
            context.create_descriptor_set_layout(&bindings)
        };
        let (input, sampler) = (D::INPUT_ATTACHMENT, D::COMBINED_IMAGE_SAMPLER);
        // Set 2 bindings 4 and 5: the environment map's diffuse and specular cubes, binding 6:
        // the irradiance volume's voxels (environment.glsl).
        self.gbuffer_inputs =
            fragment_set(&[input, input, input, input, sampler, sampler, sampler])?;
        // Set 3 binding 3: the skybox cube (skybox.glsl); binding 4: the G-buffer material (its
        // no-fog bit, tonemap.glsl).
        self.tonemap_inputs = fragment_set(&[input, input, sampler, sampler, input])?;
        self.gbuffer_textures = fragment_set(&[sampler; 7])?;
        self.tonemap_textures = fragment_set(&[sampler; 5])?;
        let push_constants = [vk::PushConstantRange::default()
            .stage_flags(S::FRAGMENT)
            .offset(0)
            .size(size_of::<GpuPushConstants>() as u32)];
        let create_pipeline_layout = |set_layouts: &[vk::DescriptorSetLayout]| {
            context.create_pipeline_layout(set_layouts, &push_constants)
        };
        let (view, material) = (self.view, self.material);
        self.pipeline_layout =
            create_pipeline_layout(&[view, material, self.gbuffer_inputs, self.tonemap_inputs])?;
        self.sampled_pipeline_layout = create_pipeline_layout(&[
            view,
            material,
            self.gbuffer_textures,
            self.tonemap_textures,
        ])?;
        self.cluster_assign_layout = context.create_pipeline_layout(
            &[view],
            &[vk::PushConstantRange::default()
                .stage_flags(S::COMPUTE)
                .offset(0)
                .size(size_of::<GpuClusterAssignParams>() as u32)],
        )?;
        self.ui_image = context.create_descriptor_set_layout(&[binding(
            0,
            D::COMBINED_IMAGE_SAMPLER,
            S::FRAGMENT,
        )])?;
        self.ui_pipeline_layout = context.create_pipeline_layout(
            &[self.ui_image],
            &[vk::PushConstantRange::default()
                .stage_flags(S::VERTEX)
                .offset(0)
                .size(size_of::<[f32; 16]>() as u32)],
        )?;
        Ok(())
    }

    /// The pipeline layout of the merged tiers, or of the unmerged tier (`sampled_attachments`).
    pub fn pipeline_layout(&self, sampled_attachments: bool) -> vk::PipelineLayout {
        if sampled_attachments {
            self.sampled_pipeline_layout
        } else {
            self.pipeline_layout
        }
    }

    /// Destroys the shared layouts (those created: a failed `new` leaves the rest null). No
    /// pipeline or set using them may be in use.
    pub fn destroy(self, context: &VulkanContext) {
        for layout in [
            self.pipeline_layout,
            self.sampled_pipeline_layout,
            self.cluster_assign_layout,
            self.ui_pipeline_layout,
        ] {
            if layout != vk::PipelineLayout::null() {
                context.destroy_pipeline_layout(layout);
            }
        }
        for layout in [
            self.view,
            self.material,
            self.gbuffer_inputs,
            self.tonemap_inputs,
            self.gbuffer_textures,
            self.tonemap_textures,
            self.ui_image,
        ] {
            if layout != vk::DescriptorSetLayout::null() {
                context.destroy_descriptor_set_layout(layout);
            }
        }
    }
}
