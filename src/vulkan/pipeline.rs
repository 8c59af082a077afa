//! Shader modules, pipeline layouts, and graphics and compute pipelines.

use super::{LiveObjects, VulkanContext};
use ash::vk;

/// The state of one graphics pipeline, whose viewport and scissor (one each) are dynamic.
pub(crate) struct GraphicsPipelineDesc<'a> {
    pub layout: vk::PipelineLayout,
    pub render_pass: vk::RenderPass,
    pub subpass: u32,
    pub stages: &'a [vk::PipelineShaderStageCreateInfo<'a>],
    pub vertex_input: &'a vk::PipelineVertexInputStateCreateInfo<'a>,
    pub input_assembly: &'a vk::PipelineInputAssemblyStateCreateInfo<'a>,
    pub rasterization: &'a vk::PipelineRasterizationStateCreateInfo<'a>,
    pub multisample: &'a vk::PipelineMultisampleStateCreateInfo<'a>,
    /// `None` where the subpass has no depth-stencil attachment.
    pub depth_stencil: Option<&'a vk::PipelineDepthStencilStateCreateInfo<'a>>,
    /// One per colour attachment of the subpass.
    pub blend_attachments: &'a [vk::PipelineColorBlendAttachmentState],
}

const DYNAMIC: [vk::DynamicState; 2] = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];

impl VulkanContext {
    /// Creates a pipeline layout.
    pub fn create_pipeline_layout(
        &self,
        set_layouts: &[vk::DescriptorSetLayout],
        push_constant_ranges: &[vk::PushConstantRange],
    ) -> Result<vk::PipelineLayout, vk::Result> {
        let info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(set_layouts)
            .push_constant_ranges(push_constant_ranges);
        self.faults
            .fail(super::faults::VulkanCall::PipelineLayout)?;
        // SAFETY: the set layouts are live objects of this device.
        let layout = unsafe { self.device.create_pipeline_layout(&info, None) }?;
        LiveObjects::created(&self.live.other);
        Ok(layout)
    }

    /// Destroys a pipeline layout. No pipeline being created or recorded may use it.
    pub fn destroy_pipeline_layout(&self, layout: vk::PipelineLayout) {
        // SAFETY: created by this device; nothing in flight uses it.
        unsafe { self.device.destroy_pipeline_layout(layout, None) };
        LiveObjects::destroyed(&self.live.other);
    }

    /// Creates a shader module from SPIR-V words.
    pub fn create_shader_module(&self, words: &[u32]) -> Result<vk::ShaderModule, vk::Result> {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        self.faults.fail(super::faults::VulkanCall::ShaderModule)?;
        // SAFETY: `words` is a whole SPIR-V module (the caller read it with `read_spv`, which
        // checks its size and magic number), compiled for the device's Vulkan version.
        let module = unsafe { self.device.create_shader_module(&info, None) }?;
        LiveObjects::created(&self.live.other);
        Ok(module)
    }

    /// Destroys a shader module.
    pub fn destroy_shader_module(&self, module: vk::ShaderModule) {
        // SAFETY: created by this device; pipelines keep their own copy of the code.
        unsafe { self.device.destroy_shader_module(module, None) };
        LiveObjects::destroyed(&self.live.other);
    }

    /// Destroys a pipeline. The GPU must be done with it.
    pub fn destroy_pipeline(&self, pipeline: vk::Pipeline) {
        // SAFETY: created by this device; no command buffer in flight uses it.
        unsafe { self.device.destroy_pipeline(pipeline, None) };
        LiveObjects::destroyed(&self.live.pipelines);
    }

    /// Creates a graphics pipeline.
    pub fn create_graphics_pipeline(
        &self,
        desc: &GraphicsPipelineDesc,
    ) -> Result<vk::Pipeline, vk::Result> {
        let viewport = vk::PipelineViewportStateCreateInfo::default()
            .viewport_count(1)
            .scissor_count(1);
        let blend =
            vk::PipelineColorBlendStateCreateInfo::default().attachments(desc.blend_attachments);
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&DYNAMIC);
        let mut info = vk::GraphicsPipelineCreateInfo::default()
            .stages(desc.stages)
            .vertex_input_state(desc.vertex_input)
            .input_assembly_state(desc.input_assembly)
            .viewport_state(&viewport)
            .rasterization_state(desc.rasterization)
            .multisample_state(desc.multisample)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(desc.layout)
            .render_pass(desc.render_pass)
            .subpass(desc.subpass);
        if let Some(depth_stencil) = desc.depth_stencil {
            info = info.depth_stencil_state(depth_stencil);
        }
        self.create_one_pipeline(|| {
            // SAFETY: the create info references live shader modules, layouts and render pass,
            // and all its state structs outlive this call. The pipeline cache is this device's
            // (or null) and internally synchronised: other threads may create pipelines with it.
            unsafe {
                self.device.create_graphics_pipelines(
                    self.pipeline_cache,
                    std::slice::from_ref(&info),
                    None,
                )
            }
        })
    }

    /// Creates a compute pipeline running `module`'s `main`.
    pub fn create_compute_pipeline(
        &self,
        layout: vk::PipelineLayout,
        module: vk::ShaderModule,
    ) -> Result<vk::Pipeline, vk::Result> {
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout);
        self.create_one_pipeline(|| {
            // SAFETY: the module and layout are live objects of this device; the create info
            // outlives the call. The pipeline cache is as in `create_graphics_pipeline`.
            unsafe {
                self.device.create_compute_pipelines(
                    self.pipeline_cache,
                    std::slice::from_ref(&info),
                    None,
                )
            }
        })
    }

    /// One pipeline from `create` (a `vkCreate*Pipelines` call for one create info), counted
    /// as live; the fault injection's `PipelineCreation` fails it first.
    fn create_one_pipeline(
        &self,
        create: impl FnOnce() -> Result<Vec<vk::Pipeline>, (Vec<vk::Pipeline>, vk::Result)>,
    ) -> Result<vk::Pipeline, vk::Result> {
        if self
            .faults
            .strike(super::faults::FaultPoint::PipelineCreation)
        {
            return Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        }
        let pipelines = create().map_err(|(_, error)| error)?;
        LiveObjects::created(&self.live.pipelines);
        Ok(pipelines[0])
    }
}
