//! Stages 3 and 7, render passes: a plan's render passes with their lighting and tonemap
//! pipelines (cached by [`PassesKey`]: created the first time this shape of frame and this
//! lighting specialisation are seen), then a G-buffer pipeline for every mesh layout and
//! material state drawn.

use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{
        backend::{LightFinishPipelines, PassResources, StencilSplitPipelines, TileBackend},
        pipelines::{
            LIGHT_FINISH_FOG_ADD, LIGHT_FINISH_FOG_MULTIPLY, LIGHT_FINISH_SKY, LightingKey,
            PassesKey, PipelineTarget, SPLIT_CLASSIFY, SPLIT_EDGES, ScreenBlend, ScreenDepth,
            ScreenState, ScreenStencil, screen_variants,
        },
        shaders::{ShaderId, TileLayouts, TileShaders, Variant},
    },
    plan::{self, names},
    scene::draws::Draw,
};
use crate::{
    frame_graph::CompiledFrame,
    vulkan::{
        VulkanContext, conv,
        render_pass::{RenderPassDescription, RenderPassKey},
    },
};
use ash::vk;
use bevy::platform::collections::{HashMap, hash_map::Entry};

/// The render passes and screen pipelines of `descriptions` with `lighting`, created the first
/// time this shape of frame and specialisation are seen; returns their key.
pub(crate) fn ensure_render_passes(
    backend: &mut TileBackend,
    descriptions: &[RenderPassDescription],
    compiled: &CompiledFrame,
    lighting: LightingKey,
) -> TileResult<PassesKey> {
    let key = PassesKey {
        render_passes: RenderPassKey::new(descriptions),
        lighting,
    };
    if !backend.render_passes.contains_key(&key) {
        let pass = create_pass_resources(backend, descriptions, compiled, lighting)?;
        backend.render_passes.insert(key.clone(), pass);
    }
    let frame = backend.frame;
    if let Some(pass) = backend.render_passes.get_mut(&key) {
        pass.last_used = frame;
    }
    Ok(key)
}

/// A pipeline in `pass` for every draw's (mesh layout, material state): G-buffer pipelines
/// for opaque draws, transparent-pass pipelines for transparent ones.
pub(crate) fn ensure_mesh_pipelines<'a>(
    context: &VulkanContext,
    layouts: &TileLayouts,
    shaders: &TileShaders,
    pass: &mut PassResources,
    draws: impl IntoIterator<Item = &'a Draw>,
) -> TileResult<()> {
    for draw in draws {
        let key = &draw.pipeline_key;
        let (target, what) = match key.transparent {
            None => (pass.gbuffer_target, "creating a G-buffer pipeline"),
            Some(_) => (
                pass.transparent_target.ok_or(TileError::Missing {
                    step: "finding the transparent pass",
                })?,
                "creating a transparent pipeline",
            ),
        };
        if let Entry::Vacant(slot) = pass.mesh_pipelines.entry(key.clone()) {
            slot.insert(step(
                what,
                context.create_mesh_pipeline(layouts, shaders, target, key, pass.lighting_key),
            )?);
        }
    }
    Ok(())
}

/// Creates the render passes of a plan (one per native pass, `descriptions` in the same order)
/// and the lighting and tonemap pipelines; the G-buffer pipelines are built on demand.
fn create_pass_resources(
    backend: &mut TileBackend,
    descriptions: &[RenderPassDescription],
    compiled: &CompiledFrame,
    lighting: LightingKey,
) -> TileResult<PassResources> {
    let render_passes = create_render_passes(&backend.context, descriptions)?;
    let shape = ScreenShape::of(compiled, &render_passes);
    let mut pass = PassResources {
        render_passes: render_passes.clone(),
        gbuffer_target: shape.target(compiled, names::GBUFFER),
        transparent_target: plan::locate_pass(compiled, names::TRANSPARENT)
            .is_some()
            .then(|| shape.target(compiled, names::TRANSPARENT)),
        lighting_key: lighting,
        mesh_pipelines: HashMap::default(),
        lighting: vk::Pipeline::null(),
        tonemap: vk::Pipeline::null(),
        stencil_split: shape.stencil_split.then(StencilSplitPipelines::default),
        edge_counter: vk::Pipeline::null(),
        depth_export: vk::Pipeline::null(),
        light_finish: None,
        last_used: backend.frame,
    };
    let (Some(layouts), Some(shaders)) = (&backend.layouts, &backend.shaders) else {
        backend.retire_pass(pass);
        return Err(TileError::Missing {
            step: "finding the tile shaders",
        });
    };
    match create_screen_pipelines(
        &backend.context,
        layouts,
        shaders,
        compiled,
        &shape,
        lighting,
        &mut pass,
    ) {
        Ok(()) => Ok(pass),
        Err(error) => {
            backend.retire_pass(pass);
            Err(TileError::vulkan(
                "creating the lighting and tonemap pipelines",
                error,
            ))
        }
    }
}

/// The frame's render passes, or none of them.
fn create_render_passes(
    context: &VulkanContext,
    descriptions: &[RenderPassDescription],
) -> TileResult<Vec<vk::RenderPass>> {
    let mut render_passes = Vec::with_capacity(descriptions.len());
    for description in descriptions {
        match context.create_render_pass(description) {
            Ok(render_pass) => render_passes.push(render_pass),
            Err(error) => {
                for render_pass in render_passes {
                    context.destroy_render_pass(render_pass);
                }
                return Err(TileError::vulkan("creating the render pass", error));
            }
        }
    }
    Ok(render_passes)
}

/// What the plan's shape decides about its screen pipelines.
struct ScreenShape<'a> {
    render_passes: &'a [vk::RenderPass],
    /// The passes read earlier passes' attachments as textures (the unmerged tier).
    sampled_attachments: bool,
    /// The MSAA stencil split: the lighting subpass writes the depth-stencil attachment's
    /// stencil.
    stencil_split: bool,
    /// The lighting subpass binds the G-buffer depth-stencil attachment (for the stencil split).
    lighting_depth: bool,
}

impl<'a> ScreenShape<'a> {
    fn of(compiled: &CompiledFrame, render_passes: &'a [vk::RenderPass]) -> Self {
        let lighting_depth = plan::locate_pass(compiled, names::LIGHTING)
            .and_then(|(n, subpass)| compiled.native_passes[n].subpasses[subpass].depth);
        Self {
            render_passes,
            sampled_attachments: plan::samples_attachments(compiled),
            stencil_split: lighting_depth.is_some_and(|d| d.stencil_write),
            lighting_depth: lighting_depth.is_some(),
        }
    }

    /// Where the pipelines of logical pass `name` are built.
    fn target(&self, compiled: &CompiledFrame, name: &str) -> PipelineTarget {
        let (n, subpass) = plan::locate_pass(compiled, name).unwrap_or((0, 0));
        let native = &compiled.native_passes[n];
        PipelineTarget {
            render_pass: self.render_passes[n],
            subpass: subpass as u32,
            color_attachments: native.subpasses[subpass].color.len() as u32,
            samples: conv::samples(native.samples),
            sampled_attachments: self.sampled_attachments,
        }
    }
}

/// The lighting, tonemap and (with MSAA) edge pipelines of `pass`.
fn create_screen_pipelines(
    context: &VulkanContext,
    layouts: &TileLayouts,
    shaders: &TileShaders,
    compiled: &CompiledFrame,
    shape: &ScreenShape,
    lighting_key: LightingKey,
    pass: &mut PassResources,
) -> Result<(), vk::Result> {
    let constants = lighting_key.constants();
    let entries = [0, 1].map(|id| vk::SpecializationMapEntry {
        constant_id: id,
        offset: id * 4,
        size: 4,
    });
    let specialization = vk::SpecializationInfo::default()
        .map_entries(&entries)
        .data(bytemuck::cast_slice(&constants));
    let lighting_stage = |variant| {
        shaders
            .stage(ShaderId::Lighting, variant)
            .specialization_info(&specialization)
    };
    let lighting = shape.target(compiled, names::LIGHTING);
    let multisampled = lighting.samples != vk::SampleCountFlags::TYPE_1;
    let stencil_split = shape.stencil_split;
    let (lighting_variant, variant) =
        screen_variants(multisampled, stencil_split, shape.sampled_attachments);
    let fullscreen = shaders.stage(ShaderId::FullscreenVert, Variant::BASE);
    // Stencil 0: interior (and background) pixels, lit once; stencil 1: edges, lit per sample.
    let (interior, edges) = if stencil_split {
        (ScreenStencil::Equal(0), ScreenStencil::Equal(1))
    } else {
        (ScreenStencil::Off, ScreenStencil::Off)
    };
    // The full-screen draws never test depth; they declare the attachment where the subpass
    // has one (the stencil split's stencil).
    let untested = if shape.lighting_depth {
        ScreenDepth::Untested
    } else {
        ScreenDepth::NoAttachment
    };
    // The lighting writes the tone-mapped output where the plan has no tonemap subpass
    // (`ViewFrameDesc::lighting_tonemaps`): its shaders are the same variants with
    // TONEMAP_IN_LIGHTING, and it replaces where it otherwise adds into the light.
    let lighting_tonemaps = plan::locate_pass(compiled, names::TONEMAP).is_none();
    let tonemapping = |variant: Variant| Variant {
        tonemap: lighting_tonemaps,
        ..variant
    };
    let lit = |stencil, per_sample| ScreenState {
        blend: if lighting_tonemaps {
            ScreenBlend::Replace
        } else {
            ScreenBlend::Additive
        },
        depth: untested,
        stencil,
        per_sample,
    };
    pass.lighting = context.create_screen_pipeline(
        layouts,
        lighting,
        [fullscreen, lighting_stage(tonemapping(lighting_variant))],
        lit(interior, false),
    )?;
    if !lighting_tonemaps {
        pass.tonemap = context.create_screen_pipeline(
            layouts,
            shape.target(compiled, names::TONEMAP),
            // The fog's inscattering is shadowed (shadows.glsl): the lighting's specialisation.
            [
                fullscreen,
                shaders
                    .stage(ShaderId::Tonemap, variant)
                    .specialization_info(&specialization),
            ],
            ScreenState::plain(ScreenBlend::Replace),
        )?;
    }
    if multisampled && !stencil_split {
        pass.edge_counter = context.create_screen_pipeline(
            layouts,
            lighting,
            [fullscreen, shaders.stage(ShaderId::MsaaClassify, variant)],
            ScreenState {
                depth: untested,
                ..ScreenState::plain(ScreenBlend::NoColorWrites)
            },
        )?;
    }
    // An HDR camera's transparent pass before tonemap: the skybox and the fog go into the light
    // first (per sample with MSAA, which the stencil split's device has).
    let transparent_before_tonemap = matches!(
        (
            plan::locate_pass(compiled, names::TRANSPARENT),
            plan::locate_pass(compiled, names::TONEMAP)
        ),
        (Some(transparent), Some(tonemap)) if transparent < tonemap
    );
    if transparent_before_tonemap && (!multisampled || stencil_split) {
        let finish = |kind: u32| -> Result<vk::Pipeline, vk::Result> {
            // shadows.glsl's two constants (the fog's shadowed inscattering), then KIND.
            let entries = [0, 1, 2].map(|id| vk::SpecializationMapEntry {
                constant_id: id,
                offset: id * 4,
                size: 4,
            });
            let data = [constants[0], constants[1], kind];
            let specialization = vk::SpecializationInfo::default()
                .map_entries(&entries)
                .data(bytemuck::cast_slice(&data));
            let stage = shaders
                .stage(
                    ShaderId::LightFinish,
                    Variant {
                        msaa: multisampled,
                        sampled: shape.sampled_attachments,
                        ..Variant::BASE
                    },
                )
                .specialization_info(&specialization);
            context.create_screen_pipeline(
                layouts,
                lighting,
                [fullscreen, stage],
                ScreenState {
                    blend: match kind {
                        LIGHT_FINISH_SKY => ScreenBlend::Replace,
                        LIGHT_FINISH_FOG_MULTIPLY => ScreenBlend::Multiply,
                        _ => ScreenBlend::Additive,
                    },
                    depth: untested,
                    stencil: ScreenStencil::Off,
                    per_sample: multisampled,
                },
            )
        };
        // Stored as they are made, so that an error leaves them for `retire_pass` to destroy.
        let mut pipelines = LightFinishPipelines {
            sky: finish(LIGHT_FINISH_SKY)?,
            ..Default::default()
        };
        pass.light_finish = Some(pipelines);
        pipelines.fog_multiply = finish(LIGHT_FINISH_FOG_MULTIPLY)?;
        pass.light_finish = Some(pipelines);
        pipelines.fog_add = finish(LIGHT_FINISH_FOG_ADD)?;
        pass.light_finish = Some(pipelines);
    }
    if plan::locate_pass(compiled, names::DEPTH_EXPORT).is_some() {
        // Every sample's depth, written as read (the test always passes).
        pass.depth_export = context.create_screen_pipeline(
            layouts,
            shape.target(compiled, names::DEPTH_EXPORT),
            [
                fullscreen,
                shaders.stage(
                    ShaderId::DepthExport,
                    Variant {
                        msaa: multisampled,
                        ..Variant::BASE
                    },
                ),
            ],
            ScreenState {
                blend: ScreenBlend::NoColorWrites,
                depth: ScreenDepth::Written,
                stencil: ScreenStencil::Off,
                per_sample: multisampled,
            },
        )?;
    }
    if let Some(split) = pass.stencil_split.as_mut() {
        split.classify = context.create_screen_pipeline(
            layouts,
            lighting,
            [
                fullscreen,
                shaders.stage(ShaderId::MsaaClassify, SPLIT_CLASSIFY),
            ],
            ScreenState {
                blend: ScreenBlend::NoColorWrites,
                depth: untested,
                stencil: ScreenStencil::Mark(1),
                per_sample: false,
            },
        )?;
        split.lighting_per_sample = context.create_screen_pipeline(
            layouts,
            lighting,
            [fullscreen, lighting_stage(tonemapping(SPLIT_EDGES))],
            lit(edges, true),
        )?;
    }
    Ok(())
}
