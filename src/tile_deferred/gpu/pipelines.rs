//! The tile path's pipelines: the G-buffer pipelines (one per mesh layout and material state,
//! [`GbufferPipelineKey`]) and the full-screen pipelines of the lighting and tonemap subpasses
//! ([`ScreenState`]), built from the tile shaders and layouts.

use super::{
    shaders::{ShaderId, Split, TileLayouts, TileShaders, Variant},
    types::GpuInstance,
};
use crate::vulkan::{VulkanContext, pipeline::GraphicsPipelineDesc, render_pass::RenderPassKey};
use ash::vk;

/// Mesh vertex attributes the G-buffer shaders read (locations 0..6); the instance rows follow.
pub(crate) const GBUFFER_ATTRIBUTES: usize = 6;

/// What varies between G-buffer pipelines: the mesh's vertex layout and the material's
/// rasterisation state. Ordered, so that draws can be sorted by pipeline without formatting keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct GbufferPipelineKey {
    /// Stride of the mesh's interleaved vertex buffer.
    pub stride: u32,
    /// (format, offset) of position, normal, uv0, tangent, colour, uv1; `None` where the mesh
    /// lacks one.
    pub attributes: [Option<(vk::Format, u32)>; GBUFFER_ATTRIBUTES],
    /// (format, offset) of the joint indices and joint weights of a skinned instance (a
    /// `SkinnedMesh` whose mesh has both, as Bevy's `SKINNED`); `None`: not skinned.
    pub skin: Option<[(vk::Format, u32); 2]>,
    /// The mesh has morph targets (Bevy's `MORPH_TARGETS`): displaced by its instance's weights.
    pub morph: bool,
    /// Triangles, lines or points (Bevy's `PrimitiveTopology`, all five).
    pub topology: vk::PrimitiveTopology,
    /// An indexed strip: the largest index restarts the strip, as wgpu sets it up for Bevy.
    pub primitive_restart: bool,
    pub cull_mode: vk::CullModeFlags,
    pub alpha_mask: bool,
    /// `AlphaMode::AlphaToCoverage`: with MSAA (`samples` above 1) the fragment covers as many
    /// samples as its alpha says (`gbuffer.frag`); without, `alpha_mask` at 0.5 applies.
    pub alpha_to_coverage: bool,
    pub samples: vk::SampleCountFlags,
    /// `Some`: a transparent mesh, lit and blended in the transparent pass (`forward.frag`)
    /// instead of written to the G-buffer.
    pub transparent: Option<TransparentPipeline>,
    /// The mesh puts light into the light attachment in the G-buffer subpass: its material is
    /// emissive or unlit, or it has a lightmap (`gbuffer.frag`). A mesh that emits none leaves
    /// the attachment unwritten, and marks its pixels `GBUFFER_NO_LIGHT` for the lighting.
    pub emits_light: bool,
}

/// The G-buffer subpass's colour attachment that `gbuffer.frag` writes its light to (location 3,
/// after albedo, normal and material; `plan::declare_gbuffer` declares them in that order).
const GBUFFER_LIGHT_ATTACHMENT: usize = 3;

impl GbufferPipelineKey {
    /// The colour blend state of each of the pipeline's `color_attachments`: a transparent
    /// mesh's blend, else plain writes, the light's masked off for a mesh that emits none. On an
    /// immediate-mode GPU every attachment a fragment writes costs fill rate: on an H100 at
    /// 3840x2160, each of the G-buffer's colour writes took about 0.4 ms of the 1x G-buffer
    /// subpass and 1.5 ms of the 4x one. The lighting replaces what such pixels hold
    /// ([`ScreenBlend::AddOrReplace`]) rather than clearing the light first, which cost that
    /// GPU more than the write (docs/measurements.md, session 40).
    fn blend_attachments(
        &self,
        color_attachments: u32,
    ) -> Vec<vk::PipelineColorBlendAttachmentState> {
        (0..color_attachments as usize)
            .map(|attachment| match self.transparent {
                Some(transparent) => transparent.blend.attachment_state(),
                None if attachment == GBUFFER_LIGHT_ATTACHMENT && !self.emits_light => {
                    vk::PipelineColorBlendAttachmentState::default()
                        .color_write_mask(vk::ColorComponentFlags::empty())
                }
                None => vk::PipelineColorBlendAttachmentState::default()
                    .color_write_mask(vk::ColorComponentFlags::RGBA),
            })
            .collect()
    }
}

/// How a transparent material blends into the tone-mapped colour: Bevy's blend states for its
/// `AlphaMode`s (bevy_pbr render/mesh.rs), with the shader's premultiplication
/// (`premultiply_alpha` in pbr_functions.wgsl) done by `forward.frag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TransparentBlend {
    /// `AlphaMode::Blend`: src * a + dst * (1 - a).
    Alpha,
    /// `AlphaMode::Premultiplied`: src + dst * (1 - a).
    Premultiplied,
    /// `AlphaMode::Add`: src * a + dst (premultiplied blending with alpha written as 0).
    Add,
    /// `AlphaMode::Multiply`: dst * src * a + dst * (1 - a).
    Multiply,
}

impl TransparentBlend {
    /// `forward.frag`'s `BLEND_MODE` constant.
    fn shader_value(self) -> u32 {
        self as u32
    }

    /// Bevy's `BlendState` for the mode.
    fn attachment_state(self) -> vk::PipelineColorBlendAttachmentState {
        use vk::BlendFactor as F;
        let (src_color, dst_color) = match self {
            Self::Alpha => (F::SRC_ALPHA, F::ONE_MINUS_SRC_ALPHA),
            Self::Premultiplied | Self::Add => (F::ONE, F::ONE_MINUS_SRC_ALPHA),
            Self::Multiply => (F::DST_COLOR, F::ONE_MINUS_SRC_ALPHA),
        };
        // Every mode's alpha is `BlendComponent::OVER` (ONE, ONE_MINUS_SRC_ALPHA).
        vk::PipelineColorBlendAttachmentState::default()
            .blend_enable(true)
            .src_color_blend_factor(src_color)
            .dst_color_blend_factor(dst_color)
            .color_blend_op(vk::BlendOp::ADD)
            .src_alpha_blend_factor(F::ONE)
            .dst_alpha_blend_factor(F::ONE_MINUS_SRC_ALPHA)
            .alpha_blend_op(vk::BlendOp::ADD)
            .color_write_mask(vk::ColorComponentFlags::RGBA)
    }
}

/// What a transparent pipeline adds to the mesh's: the blend, Bevy's constant depth bias
/// (`StandardMaterial::depth_bias as i32`) and the lighting specialisation of the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct TransparentPipeline {
    pub blend: TransparentBlend,
    pub depth_bias: i32,
    /// An HDR camera's pass: blend linear light into the light accumulation (no tone mapping in
    /// the shader).
    pub into_light: bool,
}

/// The render pass and subpass a pipeline is built for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PipelineTarget {
    pub render_pass: vk::RenderPass,
    pub subpass: u32,
    pub color_attachments: u32,
    pub samples: vk::SampleCountFlags,
    /// The unmerged tier: the pipeline reads earlier passes' attachments as textures.
    pub sampled_attachments: bool,
}

/// How a screen pipeline writes the light or output attachment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScreenBlend {
    /// Overwrite.
    Replace,
    /// Add (ONE + ONE): light accumulation.
    Additive,
    /// The lighting's blend into the light the G-buffer subpass left: add (ONE +
    /// ONE_MINUS_SRC_ALPHA, the shader's alpha 0) to the light of a mesh that emits some, replace
    /// (alpha 1) where a mesh that emits none left the attachment unwritten (`GBUFFER_NO_LIGHT`).
    AddOrReplace,
    /// No colour writes (the stencil marking draw).
    NoColorWrites,
    /// Multiply by the source colour (ZERO + SRC_COLOR): the fog's extinction on the light.
    Multiply,
}

impl ScreenBlend {
    /// The Vulkan blend state (the alpha factors matter only where the attachment has alpha).
    fn attachment_state(self) -> vk::PipelineColorBlendAttachmentState {
        use vk::BlendFactor as F;
        let blended = |[src_color, dst_color, src_alpha, dst_alpha]: [F; 4]| {
            vk::PipelineColorBlendAttachmentState::default()
                .blend_enable(true)
                .src_color_blend_factor(src_color)
                .dst_color_blend_factor(dst_color)
                .color_blend_op(vk::BlendOp::ADD)
                .src_alpha_blend_factor(src_alpha)
                .dst_alpha_blend_factor(dst_alpha)
                .alpha_blend_op(vk::BlendOp::ADD)
                .color_write_mask(vk::ColorComponentFlags::RGBA)
        };
        match self {
            Self::Replace => vk::PipelineColorBlendAttachmentState::default()
                .color_write_mask(vk::ColorComponentFlags::RGBA),
            Self::Additive => blended([F::ONE; 4]),
            // The shader's alpha says add or replace; the attachment's alpha is kept.
            Self::AddOrReplace => blended([F::ONE, F::ONE_MINUS_SRC_ALPHA, F::ZERO, F::ONE]),
            Self::NoColorWrites => vk::PipelineColorBlendAttachmentState::default()
                .color_write_mask(vk::ColorComponentFlags::empty()),
            Self::Multiply => blended([F::ZERO, F::SRC_COLOR, F::ZERO, F::ONE]),
        }
    }
}

/// The stencil state of a screen pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScreenStencil {
    /// No stencil test.
    Off,
    /// Write this reference into the stencil of every sample of the fragments that survive.
    Mark(u32),
    /// Draw only where the stencil equals this reference.
    Equal(u32),
}

/// How a screen pipeline uses the subpass's depth attachment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScreenDepth {
    /// The subpass has no depth-stencil attachment (the stencil must be `Off`).
    NoAttachment,
    /// The attachment is there (read-only, or stencil only) but depth is not tested.
    Untested,
    /// Depth is written where the shader puts it (`gl_FragDepth`), untested: the depth export.
    Written,
}

/// The fixed-function state of a screen pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScreenState {
    pub blend: ScreenBlend,
    pub depth: ScreenDepth,
    pub stencil: ScreenStencil,
    /// Shade every sample (sample-rate shading, `minSampleShading` 1.0).
    pub per_sample: bool,
}

impl ScreenState {
    /// A per-pixel pipeline of a subpass without depth-stencil attachment.
    pub const fn plain(blend: ScreenBlend) -> Self {
        Self {
            blend,
            depth: ScreenDepth::NoAttachment,
            stencil: ScreenStencil::Off,
            per_sample: false,
        }
    }
}

/// `light_finish.frag`'s `KIND` specialisation constant: the skybox into background samples,
/// then the fog's extinction (multiplied) and inscattering (added) on surface samples.
pub(crate) const LIGHT_FINISH_SKY: u32 = 0;
pub(crate) const LIGHT_FINISH_FOG_MULTIPLY: u32 = 1;
pub(crate) const LIGHT_FINISH_FOG_ADD: u32 = 2;

/// The G-buffer module of `AlphaMode::AlphaToCoverage` with MSAA (it writes the sample mask).
pub(crate) const ALPHA_TO_COVERAGE: Variant = Variant {
    msaa: true,
    ..Variant::BASE
};

/// The MSAA stencil split's own variants: the edge classification (stencil marking) and the
/// edge pixels' lighting, per sample; both read input attachments.
pub(crate) const SPLIT_CLASSIFY: Variant = Variant {
    msaa: true,
    ..Variant::BASE
};
pub(crate) const SPLIT_EDGES: Variant = Variant {
    msaa: true,
    split: Split::Sample,
    ..Variant::BASE
};

/// The shader variants of a plan's lighting pipeline and of its
/// tonemap (and MSAA edge counter) pipelines. MSAA reads the attachments per sample, the unmerged
/// tier (`sampled`) as textures. With the MSAA stencil split, the lighting shaders light the
/// interior pixels only ([`SPLIT_EDGES`] lights the edges) and all of them read input
/// attachments.
pub(crate) fn screen_variants(
    multisampled: bool,
    stencil_split: bool,
    sampled: bool,
) -> (Variant, Variant) {
    let split = multisampled && stencil_split;
    let variant = Variant {
        msaa: multisampled,
        sampled: sampled && !split,
        ..Variant::BASE
    };
    let lighting = Variant {
        split: if split { Split::Pixel } else { Split::Off },
        ..variant
    };
    (lighting, variant)
}

/// The specialisation constants of a mesh pipeline's stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MeshConstants {
    /// gbuffer.vert's ids [`Self::VERTEX_IDS`] (gbuffer.frag takes the first six).
    pub(crate) vertex: [u32; 8],
    /// forward.frag's ids [`Self::FORWARD_IDS`].
    pub(crate) forward: [u32; 10],
    /// Alpha to coverage replaces the alpha mask's discard (with MSAA only).
    pub(crate) alpha_to_coverage: bool,
}

impl MeshConstants {
    /// Ids 0..5 of gbuffer.vert and gbuffer.frag (the optional attributes and the alpha mask),
    /// then gbuffer.vert's 6 SKINNED and 7 MORPHED.
    pub(crate) const VERTEX_IDS: [u32; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
    /// forward.frag: the lighting's ([`LightingKey::IDS`]), then the mesh's constants at
    /// 10..15, with the blend mode in place of the alpha mask, and 16 INTO_LIGHT.
    pub(crate) const FORWARD_IDS: [u32; 10] = [0, 1, 3, 10, 11, 12, 13, 14, 15, 16];

    pub(crate) fn of(key: &GbufferPipelineKey, lighting: LightingKey) -> Self {
        let alpha_to_coverage =
            key.alpha_to_coverage && key.samples != vk::SampleCountFlags::TYPE_1;
        let vertex = [
            u32::from(key.attributes[1].is_some()),
            u32::from(key.attributes[2].is_some()),
            u32::from(key.attributes[3].is_some()),
            u32::from(key.alpha_mask && !alpha_to_coverage),
            u32::from(key.attributes[4].is_some()),
            u32::from(key.attributes[5].is_some()),
            u32::from(key.skin.is_some()),
            u32::from(key.morph),
        ];
        let [shadow_filter, shadows, indirect] = lighting.constants();
        let forward = [
            shadow_filter,
            shadows,
            indirect,
            vertex[0],
            vertex[1],
            vertex[2],
            key.transparent.map_or(0, |t| t.blend.shader_value()),
            vertex[4],
            vertex[5],
            u32::from(key.transparent.is_some_and(|t| t.into_light)),
        ];
        Self {
            vertex,
            forward,
            alpha_to_coverage,
        }
    }
}

/// The vertex input of a mesh pipeline: binding 0 the mesh, 1 a zero buffer (stride 0) for the
/// attributes the mesh lacks, 2 the instances.
pub(crate) fn vertex_layout(
    key: &GbufferPipelineKey,
) -> (
    [vk::VertexInputBindingDescription; 3],
    Vec<vk::VertexInputAttributeDescription>,
) {
    let bindings = [
        vk::VertexInputBindingDescription {
            binding: 0,
            stride: key.stride,
            input_rate: vk::VertexInputRate::VERTEX,
        },
        vk::VertexInputBindingDescription {
            binding: 1,
            stride: 0,
            input_rate: vk::VertexInputRate::VERTEX,
        },
        vk::VertexInputBindingDescription {
            binding: 2,
            stride: size_of::<GpuInstance>() as u32,
            input_rate: vk::VertexInputRate::INSTANCE,
        },
    ];
    let fallback_formats = [
        vk::Format::R32G32B32_SFLOAT,
        vk::Format::R32G32B32_SFLOAT,
        vk::Format::R32G32_SFLOAT,
        vk::Format::R32G32B32A32_SFLOAT,
        vk::Format::R32G32B32A32_SFLOAT,
        vk::Format::R32G32_SFLOAT,
    ];
    let mut attributes: Vec<vk::VertexInputAttributeDescription> = key
        .attributes
        .iter()
        .zip(fallback_formats)
        .enumerate()
        .map(|(location, (attribute, fallback))| match attribute {
            Some((format, offset)) => vk::VertexInputAttributeDescription {
                location: location as u32,
                binding: 0,
                format: *format,
                offset: *offset,
            },
            None => vk::VertexInputAttributeDescription {
                location: location as u32,
                binding: 1,
                format: fallback,
                offset: 0,
            },
        })
        .collect();
    attributes.extend((0..3).map(|row| vk::VertexInputAttributeDescription {
        location: GBUFFER_ATTRIBUTES as u32 + row,
        binding: 2,
        format: vk::Format::R32G32B32A32_SFLOAT,
        offset: row * 16,
    }));
    // Locations 9 and 10: joint indices and weights, from the zero buffer when not skinned.
    let skin_fallback = [
        vk::Format::R32G32B32A32_UINT,
        vk::Format::R32G32B32A32_SFLOAT,
    ];
    attributes.extend((0..2).map(|slot| {
        let (binding, (format, offset)) = match key.skin {
            Some(skin) => (0, skin[slot]),
            None => (1, (skin_fallback[slot], 0)),
        };
        vk::VertexInputAttributeDescription {
            location: 9 + slot as u32,
            binding,
            format,
            offset,
        }
    }));
    attributes.push(vk::VertexInputAttributeDescription {
        location: 15,
        binding: 2,
        format: vk::Format::R32G32B32A32_UINT,
        offset: std::mem::offset_of!(GpuInstance, flags) as u32,
    });
    // Location 14: the instance's lightmap (uv_rect, exposure; gbuffer.vert).
    attributes.push(vk::VertexInputAttributeDescription {
        location: 14,
        binding: 2,
        format: vk::Format::R32G32B32A32_UINT,
        offset: std::mem::offset_of!(GpuInstance, lightmap) as u32,
    });
    (bindings, attributes)
}

// Methods of the context (as the call sites in frame/render_passes.rs use them), but tile-path knowledge: they
// live here, beside the shaders and layouts they build on.
impl VulkanContext {
    /// The G-buffer pipeline for one mesh layout and material state, or (`key.transparent`)
    /// the transparent pass's pipeline for it, its fragment stage specialised for `lighting`.
    pub fn create_mesh_pipeline(
        &self,
        layouts: &TileLayouts,
        shaders: &TileShaders,
        target: PipelineTarget,
        key: &GbufferPipelineKey,
        lighting: LightingKey,
    ) -> Result<vk::Pipeline, vk::Result> {
        let constants = MeshConstants::of(key, lighting);
        let vertex_entries = specialization_entries(&MeshConstants::VERTEX_IDS);
        let vertex_specialization = vk::SpecializationInfo::default()
            .map_entries(&vertex_entries)
            .data(bytemuck::cast_slice(&constants.vertex));
        let mesh_entries = specialization_entries(&MeshConstants::VERTEX_IDS[..6]);
        let mesh_specialization = vk::SpecializationInfo::default()
            .map_entries(&mesh_entries)
            .data(bytemuck::cast_slice(&constants.vertex[..6]));
        let forward_entries = specialization_entries(&MeshConstants::FORWARD_IDS);
        let forward_specialization = vk::SpecializationInfo::default()
            .map_entries(&forward_entries)
            .data(bytemuck::cast_slice(&constants.forward));
        let stages = [
            shaders
                .stage(ShaderId::GbufferVert, Variant::BASE)
                .specialization_info(&vertex_specialization),
            if key.transparent.is_some() {
                shaders
                    .stage(ShaderId::ForwardFrag, Variant::BASE)
                    .specialization_info(&forward_specialization)
            } else {
                shaders
                    .stage(
                        ShaderId::GbufferFrag,
                        if constants.alpha_to_coverage {
                            ALPHA_TO_COVERAGE
                        } else {
                            Variant::BASE
                        },
                    )
                    .specialization_info(&mesh_specialization)
            },
        ];
        let (bindings, attributes) = vertex_layout(key);
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default()
            .vertex_binding_descriptions(&bindings)
            .vertex_attribute_descriptions(&attributes);
        let input_assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(key.topology)
            .primitive_restart_enable(key.primitive_restart);
        let depth_bias = key.transparent.map_or(0, |t| t.depth_bias);
        let rasterization = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(key.cull_mode)
            // Bevy's winding with wgpu's negative viewport height, as wgpu sets it.
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0)
            .depth_bias_enable(depth_bias != 0)
            .depth_bias_constant_factor(depth_bias as f32);
        // Transparent meshes test against the opaque depth and leave it as it is.
        let depth = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(true)
            .depth_write_enable(key.transparent.is_none())
            .depth_compare_op(vk::CompareOp::GREATER_OR_EQUAL);
        let blend_attachments = key.blend_attachments(target.color_attachments);
        let multisample =
            vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(target.samples);
        self.create_graphics_pipeline(&GraphicsPipelineDesc {
            layout: layouts.pipeline_layout(target.sampled_attachments),
            render_pass: target.render_pass,
            subpass: target.subpass,
            stages: &stages,
            vertex_input: &vertex_input,
            input_assembly: &input_assembly,
            rasterization: &rasterization,
            multisample: &multisample,
            depth_stencil: Some(&depth),
            blend_attachments: &blend_attachments,
        })
    }

    /// A full-screen pipeline of the lighting or tonemap subpass.
    pub fn create_screen_pipeline(
        &self,
        layouts: &TileLayouts,
        target: PipelineTarget,
        stages: [vk::PipelineShaderStageCreateInfo; 2],
        state: ScreenState,
    ) -> Result<vk::Pipeline, vk::Result> {
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let input_assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let rasterization = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0);
        let blend = state.blend.attachment_state();
        let blend_attachments = vec![blend; target.color_attachments as usize];
        let stencil_op = |compare_op, pass_op, write_mask, reference| {
            vk::StencilOpState::default()
                .fail_op(vk::StencilOp::KEEP)
                .pass_op(pass_op)
                .depth_fail_op(vk::StencilOp::KEEP)
                .compare_op(compare_op)
                .compare_mask(0xff)
                .write_mask(write_mask)
                .reference(reference)
        };
        // Depth is written only by the depth export; the other screen draws read it as an input
        // attachment (or texture).
        let stencil = match state.stencil {
            ScreenStencil::Off => vk::StencilOpState::default(),
            ScreenStencil::Mark(reference) => stencil_op(
                vk::CompareOp::ALWAYS,
                vk::StencilOp::REPLACE,
                0xff,
                reference,
            ),
            ScreenStencil::Equal(reference) => {
                stencil_op(vk::CompareOp::EQUAL, vk::StencilOp::KEEP, 0, reference)
            }
        };
        let depth_stencil = (state.depth != ScreenDepth::NoAttachment).then(|| {
            vk::PipelineDepthStencilStateCreateInfo::default()
                .depth_test_enable(state.depth == ScreenDepth::Written)
                .depth_compare_op(vk::CompareOp::ALWAYS)
                .depth_write_enable(state.depth == ScreenDepth::Written)
                .stencil_test_enable(state.stencil != ScreenStencil::Off)
                .front(stencil)
                .back(stencil)
        });
        let mut multisample =
            vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(target.samples);
        if state.per_sample {
            // One invocation per covered sample (the sampleRateShading feature).
            multisample = multisample
                .sample_shading_enable(true)
                .min_sample_shading(1.0);
        }
        self.create_graphics_pipeline(&GraphicsPipelineDesc {
            layout: layouts.pipeline_layout(target.sampled_attachments),
            render_pass: target.render_pass,
            subpass: target.subpass,
            stages: &stages,
            vertex_input: &vertex_input,
            input_assembly: &input_assembly,
            rasterization: &rasterization,
            multisample: &multisample,
            depth_stencil: depth_stencil.as_ref(),
            blend_attachments: &blend_attachments,
        })
    }
}

/// What the lighting pipelines are specialised for (`shaders/shadows.glsl`'s and
/// `shaders/surface_lighting.glsl`'s constants): the camera's shadow filter, which kinds of
/// light sample a shadow map this frame, and which indirect light sources the view has. A frame
/// without shadows gets lighting pipelines without shadow code, one whose point and spot lights
/// cast none gets them without the point and spot shadow code, and a view without an environment
/// map or irradiance volumes gets them without that code (as Bevy specialises its mesh pipelines
/// on a view's light probes): a GPU sizes its registers for the largest path of a shader, and
/// llvmpipe runs every branch under a lane mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct LightingKey {
    /// `gpu_types::shadow_filter`; 0 without shadows.
    shadow_filter: u32,
    shadows: SampledShadows,
    indirect: IndirectSources,
}

/// The indirect light a view's surfaces get besides the ambient light.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct IndirectSources {
    /// The camera's `EnvironmentMapLight`.
    pub environment_map: bool,
    /// Irradiance volumes in the view.
    pub irradiance_volumes: bool,
}

impl IndirectSources {
    /// `INDIRECT_SOURCES`: bit 0 the environment map, bit 1 irradiance volumes.
    fn bits(self) -> u32 {
        u32::from(self.environment_map) | u32::from(self.irradiance_volumes) << 1
    }
}

/// The map entries of specialisation data laid out as one 32-bit word per constant, in the
/// order of `ids`.
pub(crate) fn specialization_entries(ids: &[u32]) -> Vec<vk::SpecializationMapEntry> {
    (0u32..)
        .zip(ids)
        .map(|(slot, &id)| {
            vk::SpecializationMapEntry::default()
                .constant_id(id)
                .offset(slot * 4)
                .size(4)
        })
        .collect()
}

/// Which lights of a frame sample shadow maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct SampledShadows {
    /// A directional light with cascades.
    pub directional: bool,
    /// A point or spot light (clustered) with a shadow map.
    pub clustered: bool,
}

impl SampledShadows {
    /// Whether any light samples a shadow map.
    pub(crate) fn any(self) -> bool {
        self.directional || self.clustered
    }

    /// `SHADOW_KINDS`: bit 0 directional, bit 1 clustered.
    fn bits(self) -> u32 {
        u32::from(self.directional) | u32::from(self.clustered) << 1
    }
}

impl LightingKey {
    /// The constant ids of [`Self::constants`]: shadows.glsl's SHADOW_FILTER (0) and
    /// SHADOW_KINDS (1), surface_lighting.glsl's INDIRECT_SOURCES (3; light_finish.frag, which
    /// shares shadows.glsl, has its own 2).
    pub(crate) const IDS: [u32; 3] = [0, 1, 3];

    /// The specialisation for `shadow_filter`, the lights that sample shadow maps and the
    /// view's indirect light.
    pub(crate) fn new(
        shadow_filter: u32,
        shadows: SampledShadows,
        indirect: IndirectSources,
    ) -> Self {
        Self {
            shadow_filter: if shadows.any() { shadow_filter } else { 0 },
            shadows,
            indirect,
        }
    }

    /// The values of constants [`Self::IDS`], as 32-bit words.
    pub(crate) fn constants(self) -> [u32; 3] {
        [
            self.shadow_filter,
            self.shadows.bits(),
            self.indirect.bits(),
        ]
    }
}

/// The cache key of a frame's render passes and their screen pipelines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct PassesKey {
    pub(crate) render_passes: RenderPassKey,
    pub(crate) lighting: LightingKey,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile_deferred::gpu::shaders::VARIANTS;

    fn module(id: ShaderId, variant: Variant) -> &'static str {
        VARIANTS
            .iter()
            .find(|row| row.id == id && row.variant == variant)
            .unwrap_or_else(|| panic!("{id:?} {variant:?} is not in VARIANTS"))
            .name
    }

    /// Which modules each plan shape draws its lighting and tonemap with; all are compiled.
    #[test]
    fn screen_variants_pick_compiled_modules() {
        let ms = |names: [&'static str; 2], edge_counter| (names, Some(edge_counter));
        // (MSAA, stencil split, sampled attachments) -> lighting, tonemap; the edge counter
        // (MSAA without the split).
        let split = (["lighting_pixel_ms", "tonemap_ms"], None);
        let single = (["lighting", "tonemap"], None);
        let sampled = (["lighting_sampled", "tonemap_sampled"], None);
        let cases = [
            ((true, true, false), split),
            ((true, true, true), split),
            (
                (true, false, false),
                ms(["lighting_ms", "tonemap_ms"], "msaa_classify"),
            ),
            (
                (true, false, true),
                ms(
                    ["lighting_ms_sampled", "tonemap_ms_sampled"],
                    "msaa_classify_sampled",
                ),
            ),
            ((false, false, false), single),
            ((false, true, false), single),
            ((false, false, true), sampled),
            ((false, true, true), sampled),
        ];
        for ((multisampled, stencil_split, attachments), (names, edge_counter)) in cases {
            let (lighting, variant) = screen_variants(multisampled, stencil_split, attachments);
            let picked = [
                module(ShaderId::Lighting, lighting),
                module(ShaderId::Tonemap, variant),
            ];
            let expected = names.map(|name| format!("{name}.frag"));
            let case = (multisampled, stencil_split, attachments);
            assert_eq!(picked, expected, "{case:?}");
            if multisampled && !stencil_split {
                let edge_counter = format!("{}.frag", edge_counter.unwrap());
                assert_eq!(
                    module(ShaderId::MsaaClassify, variant),
                    edge_counter,
                    "{case:?}"
                );
            }
        }
        assert_eq!(
            [
                module(ShaderId::MsaaClassify, SPLIT_CLASSIFY),
                module(ShaderId::Lighting, SPLIT_EDGES),
            ],
            ["msaa_classify.frag", "lighting_sample_ms.frag"]
        );
    }

    fn mesh_key() -> GbufferPipelineKey {
        GbufferPipelineKey {
            stride: 32,
            attributes: [
                Some((vk::Format::R32G32B32_SFLOAT, 0)),
                Some((vk::Format::R32G32B32_SFLOAT, 12)),
                Some((vk::Format::R32G32_SFLOAT, 24)),
                None,
                None,
                None,
            ],
            skin: None,
            morph: false,
            topology: vk::PrimitiveTopology::TRIANGLE_LIST,
            primitive_restart: false,
            cull_mode: vk::CullModeFlags::BACK,
            alpha_mask: true,
            alpha_to_coverage: true,
            samples: vk::SampleCountFlags::TYPE_1,
            transparent: None,
            emits_light: false,
        }
    }

    /// A G-buffer pipeline masks off the light only for a mesh that emits none; transparent
    /// pipelines keep their blend on every attachment.
    #[test]
    fn the_light_is_written_only_by_meshes_that_emit_it() {
        let writes = |key: &GbufferPipelineKey| {
            key.blend_attachments(5)
                .iter()
                .map(|a| !a.color_write_mask.is_empty())
                .collect::<Vec<_>>()
        };
        let dark = mesh_key();
        assert_eq!(writes(&dark), [true, true, true, false, true]);
        let emissive = GbufferPipelineKey {
            emits_light: true,
            ..mesh_key()
        };
        assert_eq!(writes(&emissive), [true; 5]);
        let transparent = GbufferPipelineKey {
            transparent: Some(TransparentPipeline {
                blend: TransparentBlend::Alpha,
                depth_bias: 0,
                into_light: false,
            }),
            ..mesh_key()
        };
        assert!(transparent.blend_attachments(1)[0].blend_enable != 0);
    }

    /// Every location is fed once: the mesh's attributes from binding 0, the ones it lacks
    /// (and the joints of an unskinned mesh) from the zero buffer, the instance from binding 2.
    #[test]
    fn a_mesh_pipeline_feeds_every_shader_input_once() {
        let (bindings, attributes) = vertex_layout(&mesh_key());
        assert_eq!(
            bindings.map(|b| b.stride),
            [32, 0, size_of::<GpuInstance>() as u32]
        );
        let mut locations: Vec<u32> = attributes.iter().map(|a| a.location).collect();
        locations.sort_unstable();
        assert_eq!(locations, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 15]);
        let binding_of = |location| {
            attributes
                .iter()
                .find(|a| a.location == location)
                .unwrap()
                .binding
        };
        assert_eq!([0, 1, 2, 3, 9, 10].map(binding_of), [0, 0, 0, 1, 1, 1]);
        assert_eq!([6, 7, 8, 14, 15].map(binding_of), [2; 5]);
        let skinned = GbufferPipelineKey {
            skin: Some([
                (vk::Format::R16G16B16A16_UINT, 32),
                (vk::Format::R32G32B32A32_SFLOAT, 40),
            ]),
            ..mesh_key()
        };
        let (_, attributes) = vertex_layout(&skinned);
        let joints = attributes.iter().find(|a| a.location == 9).unwrap();
        assert_eq!((joints.binding, joints.offset), (0, 32));
    }

    /// Alpha to coverage needs samples to cover: without MSAA the alpha mask applies.
    #[test]
    fn alpha_to_coverage_replaces_the_mask_only_with_msaa() {
        let lighting = LightingKey::new(0, SampledShadows::default(), IndirectSources::default());
        let single = MeshConstants::of(&mesh_key(), lighting);
        assert!(!single.alpha_to_coverage);
        assert_eq!(single.vertex[3], 1, "alpha mask at 0.5 without MSAA");
        let msaa = MeshConstants::of(
            &GbufferPipelineKey {
                samples: vk::SampleCountFlags::TYPE_4,
                ..mesh_key()
            },
            lighting,
        );
        assert!(msaa.alpha_to_coverage);
        assert_eq!(msaa.vertex[3], 0);
        assert_eq!(single.vertex[..3], [1, 1, 0], "normal and uv0, no tangent");
        assert_eq!(single.forward[3..6], single.vertex[..3]);
    }

    /// A frame's shadow code is specialised on which lights sample maps (shadows.glsl's
    /// SHADOW_KINDS bits), and the filter only matters where some light does.
    #[test]
    fn lighting_constants_name_the_kinds_of_shadowed_light() {
        let kinds = |directional, clustered| {
            LightingKey::new(
                2,
                SampledShadows {
                    directional,
                    clustered,
                },
                IndirectSources::default(),
            )
            .constants()
        };
        assert_eq!(kinds(false, false), [0, 0, 0], "no shadow code, no filter");
        assert_eq!(kinds(true, false), [2, 1, 0], "a sun's cascades alone");
        assert_eq!(kinds(false, true), [2, 2, 0], "point or spot maps alone");
        assert_eq!(kinds(true, true), [2, 3, 0]);
        assert_ne!(
            LightingKey::new(
                2,
                SampledShadows {
                    directional: true,
                    clustered: false
                },
                IndirectSources::default(),
            ),
            LightingKey::new(
                2,
                SampledShadows {
                    directional: true,
                    clustered: true
                },
                IndirectSources::default(),
            ),
            "pipelines are cached per kind"
        );
    }

    /// The environment map's and the irradiance volumes' code is specialised on whether the
    /// view has them (surface_lighting.glsl's INDIRECT_SOURCES bits), whatever the shadows.
    #[test]
    fn lighting_constants_name_the_indirect_sources() {
        let indirect = |environment_map, irradiance_volumes| {
            LightingKey::new(
                0,
                SampledShadows::default(),
                IndirectSources {
                    environment_map,
                    irradiance_volumes,
                },
            )
            .constants()[2]
        };
        assert_eq!(indirect(false, false), 0, "ambient light alone");
        assert_eq!(indirect(true, false), 1, "an environment map");
        assert_eq!(indirect(false, true), 2, "irradiance volumes");
        assert_eq!(indirect(true, true), 3);
        let forward = MeshConstants::of(
            &mesh_key(),
            LightingKey::new(
                0,
                SampledShadows::default(),
                IndirectSources {
                    environment_map: true,
                    irradiance_volumes: false,
                },
            ),
        )
        .forward;
        let slot = MeshConstants::FORWARD_IDS.iter().position(|&id| id == 3);
        assert_eq!(
            slot.map(|slot| forward[slot]),
            Some(1),
            "transparent surfaces too"
        );
    }
}
