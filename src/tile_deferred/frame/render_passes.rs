//! Stages 3 and 7, render passes: a plan's render passes with their lighting and tonemap
//! pipelines (cached by [`PassesKey`]: created the first time this shape of frame and this
//! lighting specialisation are seen), then a G-buffer pipeline for every mesh layout and
//! material state drawn.

use super::state::{FrameState, SharedObjects};
use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{
        backend::{MeshPipeline, PassResources, StencilSplitPipelines, retire_pass},
        pipelines::{
            LIGHT_FINISH_FOG_ADD, LIGHT_FINISH_FOG_MULTIPLY, LIGHT_FINISH_SKY, LightingKey,
            PassesKey, PipelineTarget, SPLIT_CLASSIFY, SPLIT_EDGES, ScreenBlend, ScreenDepth,
            ScreenState, ScreenStencil, screen_variants, specialization_entries,
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
    state: &mut FrameState,
    descriptions: &[RenderPassDescription],
    compiled: &CompiledFrame,
    lighting: LightingKey,
) -> TileResult<PassesKey> {
    let key = PassesKey {
        render_passes: RenderPassKey::new(descriptions),
        lighting,
    };
    if !state.render_passes.contains_key(&key) {
        let pass = create_pass_resources(state, descriptions, compiled, lighting)?;
        state.render_passes.insert(key.clone(), pass);
    }
    let frame = state.frame;
    state.passes(&key)?.last_used = frame;
    Ok(key)
}

/// A pipeline in `pass` for every draw's (mesh layout, material state): G-buffer pipelines
/// for opaque draws, transparent-pass pipelines for transparent ones; each marked used in
/// `frame`.
pub(crate) fn ensure_mesh_pipelines<'a>(
    shared: SharedObjects,
    pass: &mut PassResources,
    draws: impl IntoIterator<Item = &'a Draw>,
    frame: u64,
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
        match pass.mesh_pipelines.entry(key.clone()) {
            Entry::Occupied(mut built) => built.get_mut().last_used = frame,
            Entry::Vacant(slot) => {
                let pipeline = step(
                    what,
                    shared.context.create_mesh_pipeline(
                        shared.layouts,
                        shared.shaders,
                        target,
                        key,
                        pass.lighting_key,
                    ),
                )?;
                slot.insert(MeshPipeline {
                    pipeline,
                    last_used: frame,
                });
            }
        }
    }
    Ok(())
}

/// The `ui` subpass's pipeline in `pass`, with or without `UiAntiAlias`, created on first use.
pub(crate) fn ensure_ui_pipeline(
    shared: SharedObjects,
    pass: &mut PassResources,
    anti_alias: bool,
) -> TileResult<vk::Pipeline> {
    let target = pass.ui_target.ok_or(TileError::Missing {
        step: "finding the UI subpass",
    })?;
    let slot = &mut pass.ui_pipelines[usize::from(anti_alias)];
    if *slot == vk::Pipeline::null() {
        *slot = step(
            "creating the UI pipeline",
            shared
                .context
                .create_ui_pipeline(shared.layouts, shared.shaders, target, anti_alias),
        )?;
    }
    Ok(*slot)
}

/// The `ui` subpass's box shadow pipeline for `BoxShadowSamples` `samples`, created on first
/// use.
pub(crate) fn ensure_box_shadow_pipeline(
    shared: SharedObjects,
    pass: &mut PassResources,
    samples: u32,
) -> TileResult<vk::Pipeline> {
    let target = pass.ui_target.ok_or(TileError::Missing {
        step: "finding the UI subpass",
    })?;
    if let Some(&pipeline) = pass.box_shadow_pipelines.get(&samples) {
        return Ok(pipeline);
    }
    let pipeline = step(
        "creating the UI box shadow pipeline",
        shared
            .context
            .create_box_shadow_pipeline(shared.layouts, shared.shaders, target, samples),
    )?;
    pass.box_shadow_pipelines.insert(samples, pipeline);
    Ok(pipeline)
}

/// The `ui` subpass's sliced image pipeline, created on first use.
pub(crate) fn ensure_ui_slice_pipeline(
    shared: SharedObjects,
    pass: &mut PassResources,
) -> TileResult<vk::Pipeline> {
    let target = pass.ui_target.ok_or(TileError::Missing {
        step: "finding the UI subpass",
    })?;
    if pass.ui_slice_pipeline == vk::Pipeline::null() {
        pass.ui_slice_pipeline = step(
            "creating the UI sliced image pipeline",
            shared
                .context
                .create_ui_slice_pipeline(shared.layouts, shared.shaders, target),
        )?;
    }
    Ok(pass.ui_slice_pipeline)
}

/// The `ui` subpass's gradient pipeline, with or without `UiAntiAlias`, created on first use.
pub(crate) fn ensure_ui_gradient_pipeline(
    shared: SharedObjects,
    pass: &mut PassResources,
    anti_alias: bool,
) -> TileResult<vk::Pipeline> {
    let target = pass.ui_target.ok_or(TileError::Missing {
        step: "finding the UI subpass",
    })?;
    let slot = &mut pass.ui_gradient_pipelines[usize::from(anti_alias)];
    if *slot == vk::Pipeline::null() {
        *slot = step(
            "creating the UI gradient pipeline",
            shared.context.create_ui_gradient_pipeline(
                shared.layouts,
                shared.shaders,
                target,
                anti_alias,
            ),
        )?;
    }
    Ok(*slot)
}

/// The `ui` subpass's egui pipeline, created on first use.
pub(crate) fn ensure_egui_pipeline(
    shared: SharedObjects,
    pass: &mut PassResources,
) -> TileResult<vk::Pipeline> {
    let target = pass.ui_target.ok_or(TileError::Missing {
        step: "finding the UI subpass",
    })?;
    if pass.egui_pipeline == vk::Pipeline::null() {
        pass.egui_pipeline = step(
            "creating the egui pipeline",
            shared
                .context
                .create_egui_pipeline(shared.layouts, shared.shaders, target),
        )?;
    }
    Ok(pass.egui_pipeline)
}

/// Creates the render passes of a plan (one per native pass, `descriptions` in the same order)
/// and the lighting and tonemap pipelines; the G-buffer pipelines are built on demand.
fn create_pass_resources(
    state: &mut FrameState,
    descriptions: &[RenderPassDescription],
    compiled: &CompiledFrame,
    lighting: LightingKey,
) -> TileResult<PassResources> {
    let shared = state.shared;
    let render_passes = create_render_passes(shared.context, descriptions)?;
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
        ui_target: plan::locate_pass(compiled, names::UI)
            .is_some()
            .then(|| shape.target(compiled, names::UI)),
        ui_pipelines: [vk::Pipeline::null(); 2],
        box_shadow_pipelines: HashMap::default(),
        ui_slice_pipeline: vk::Pipeline::null(),
        egui_pipeline: vk::Pipeline::null(),
        ui_gradient_pipelines: [vk::Pipeline::null(); 2],
        last_used: state.frame,
    };
    match create_screen_pipelines(
        shared.context,
        shared.layouts,
        shared.shaders,
        compiled,
        &shape,
        lighting,
        &mut pass,
    ) {
        Ok(()) => Ok(pass),
        Err(error) => {
            retire_pass(pass, state.graveyard);
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

/// Where a screen pipeline goes in the pass's resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScreenSlot {
    Lighting,
    Tonemap,
    /// With MSAA and per-sample-index draws: the classification that counts edge samples.
    EdgeCounter,
    /// Before an HDR camera's transparent pass: `LIGHT_FINISH_SKY`, `_FOG_MULTIPLY`, `_FOG_ADD`.
    LightFinish(u32),
    DepthExport,
    /// The stencil split's edge marking, and its per-sample lighting of the edges.
    SplitClassify,
    SplitLightingPerSample,
}

impl ScreenSlot {
    /// Stores `pipeline` in its slot of `pass` (as it is made, so that an error leaves the
    /// pipelines made before it for `retire_pass` to destroy).
    fn store(self, pass: &mut PassResources, pipeline: vk::Pipeline) {
        match self {
            Self::Lighting => pass.lighting = pipeline,
            Self::Tonemap => pass.tonemap = pipeline,
            Self::EdgeCounter => pass.edge_counter = pipeline,
            Self::DepthExport => pass.depth_export = pipeline,
            Self::LightFinish(kind) => {
                let finish = pass.light_finish.get_or_insert_default();
                match kind {
                    LIGHT_FINISH_SKY => finish.sky = pipeline,
                    LIGHT_FINISH_FOG_MULTIPLY => finish.fog_multiply = pipeline,
                    _ => finish.fog_add = pipeline,
                }
            }
            Self::SplitClassify => pass.stencil_split.get_or_insert_default().classify = pipeline,
            Self::SplitLightingPerSample => {
                pass.stencil_split
                    .get_or_insert_default()
                    .lighting_per_sample = pipeline;
            }
        }
    }
}

/// The specialisation constants of a screen pipeline's fragment stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScreenConstants {
    None,
    /// The lighting's (`LightingKey::constants`: the shadow filter, which kinds of light
    /// sample shadow maps, and the view's indirect light sources; the tonemap's fog
    /// inscattering is shadowed too).
    Lighting,
    /// The lighting's, then the light finish's KIND.
    LightFinish(u32),
}

/// One screen pipeline of a plan: where it goes, the logical pass it is built for, its fragment
/// shader and state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScreenSpec {
    slot: ScreenSlot,
    pass: &'static str,
    shader: ShaderId,
    variant: Variant,
    constants: ScreenConstants,
    state: ScreenState,
}

/// The screen pipelines a plan of this shape needs, in the order they are made: the lighting,
/// the tonemap (unless the lighting tone maps), the MSAA edge pipelines, the light finish before
/// an HDR transparent pass, and the depth export. Pure: decided from the compiled plan only.
fn screen_pipeline_specs(compiled: &CompiledFrame, shape: &ScreenShape) -> Vec<ScreenSpec> {
    let multisampled =
        shape.target(compiled, names::LIGHTING).samples != vk::SampleCountFlags::TYPE_1;
    let stencil_split = shape.stencil_split;
    let (lighting_variant, variant) =
        screen_variants(multisampled, stencil_split, shape.sampled_attachments);
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
            ScreenBlend::AddOrReplace
        },
        depth: untested,
        stencil,
        per_sample,
    };
    let lighting = |slot, variant, state| ScreenSpec {
        slot,
        pass: names::LIGHTING,
        shader: ShaderId::Lighting,
        variant: tonemapping(variant),
        constants: ScreenConstants::Lighting,
        state,
    };
    let mut specs = vec![lighting(
        ScreenSlot::Lighting,
        lighting_variant,
        lit(interior, false),
    )];
    if !lighting_tonemaps {
        specs.push(ScreenSpec {
            slot: ScreenSlot::Tonemap,
            pass: names::TONEMAP,
            shader: ShaderId::Tonemap,
            variant,
            constants: ScreenConstants::Lighting,
            state: ScreenState::plain(ScreenBlend::Replace),
        });
    }
    if multisampled && !stencil_split {
        specs.push(ScreenSpec {
            slot: ScreenSlot::EdgeCounter,
            pass: names::LIGHTING,
            shader: ShaderId::MsaaClassify,
            variant,
            constants: ScreenConstants::None,
            state: ScreenState {
                depth: untested,
                ..ScreenState::plain(ScreenBlend::NoColorWrites)
            },
        });
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
        let variant = Variant {
            msaa: multisampled,
            sampled: shape.sampled_attachments,
            ..Variant::BASE
        };
        specs.extend(
            [
                LIGHT_FINISH_SKY,
                LIGHT_FINISH_FOG_MULTIPLY,
                LIGHT_FINISH_FOG_ADD,
            ]
            .map(|kind| light_finish_spec(kind, variant, untested)),
        );
    }
    if plan::locate_pass(compiled, names::DEPTH_EXPORT).is_some() {
        // Every sample's depth, written as read (the test always passes).
        specs.push(ScreenSpec {
            slot: ScreenSlot::DepthExport,
            pass: names::DEPTH_EXPORT,
            shader: ShaderId::DepthExport,
            variant: Variant {
                msaa: multisampled,
                ..Variant::BASE
            },
            constants: ScreenConstants::None,
            state: ScreenState {
                blend: ScreenBlend::NoColorWrites,
                depth: ScreenDepth::Written,
                stencil: ScreenStencil::Off,
                per_sample: multisampled,
            },
        });
    }
    if stencil_split {
        specs.push(ScreenSpec {
            slot: ScreenSlot::SplitClassify,
            pass: names::LIGHTING,
            shader: ShaderId::MsaaClassify,
            variant: SPLIT_CLASSIFY,
            constants: ScreenConstants::None,
            state: ScreenState {
                blend: ScreenBlend::NoColorWrites,
                depth: untested,
                stencil: ScreenStencil::Mark(1),
                per_sample: false,
            },
        });
        specs.push(lighting(
            ScreenSlot::SplitLightingPerSample,
            SPLIT_EDGES,
            lit(edges, true),
        ));
    }
    specs
}

/// A light finish before an HDR camera's transparent pass: the skybox replaces the light, the
/// fog multiplies it, then adds its inscattering (per sample with MSAA).
fn light_finish_spec(kind: u32, variant: Variant, depth: ScreenDepth) -> ScreenSpec {
    ScreenSpec {
        slot: ScreenSlot::LightFinish(kind),
        pass: names::LIGHTING,
        shader: ShaderId::LightFinish,
        variant,
        constants: ScreenConstants::LightFinish(kind),
        state: ScreenState {
            blend: match kind {
                LIGHT_FINISH_SKY => ScreenBlend::Replace,
                LIGHT_FINISH_FOG_MULTIPLY => ScreenBlend::Multiply,
                _ => ScreenBlend::Additive,
            },
            depth,
            stencil: ScreenStencil::Off,
            per_sample: variant.msaa,
        },
    }
}

/// The lighting, tonemap and (with MSAA) edge pipelines of `pass`: each of
/// [`screen_pipeline_specs`] created into its slot.
fn create_screen_pipelines(
    context: &VulkanContext,
    layouts: &TileLayouts,
    shaders: &TileShaders,
    compiled: &CompiledFrame,
    shape: &ScreenShape,
    lighting_key: LightingKey,
    pass: &mut PassResources,
) -> Result<(), vk::Result> {
    let lighting = lighting_key.constants();
    let [shadow_filter, shadows, _] = lighting;
    let fullscreen = shaders.stage(ShaderId::FullscreenVert, Variant::BASE);
    for spec in screen_pipeline_specs(compiled, shape) {
        let light_finish;
        let (ids, constants): (&[u32], &[u32]) = match spec.constants {
            ScreenConstants::None => (&[], &[]),
            ScreenConstants::Lighting => (&LightingKey::IDS, &lighting),
            ScreenConstants::LightFinish(kind) => {
                light_finish = [shadow_filter, shadows, kind];
                (&[0, 1, 2], &light_finish)
            }
        };
        let entries = specialization_entries(ids);
        let specialization = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(bytemuck::cast_slice(constants));
        let mut stage = shaders.stage(spec.shader, spec.variant);
        if !constants.is_empty() {
            stage = stage.specialization_info(&specialization);
        }
        let target = shape.target(compiled, spec.pass);
        let pipeline =
            context.create_screen_pipeline(layouts, target, [fullscreen, stage], spec.state)?;
        spec.slot.store(pass, pipeline);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        frame_graph::{DeviceCaps, Extent, Format, compile},
        tile_deferred::plan::{TransparentPass, ViewFrameDesc, declare},
    };

    /// The specs of the plan of `desc` on a desktop device.
    fn specs(desc: ViewFrameDesc) -> Vec<ScreenSpec> {
        let compiled = compile(&declare(&desc).unwrap(), &DeviceCaps::desktop()).unwrap();
        let render_passes = vec![vk::RenderPass::null(); compiled.native_passes.len()];
        screen_pipeline_specs(&compiled, &ScreenShape::of(&compiled, &render_passes))
    }

    fn slots(specs: &[ScreenSpec]) -> Vec<ScreenSlot> {
        specs.iter().map(|spec| spec.slot).collect()
    }

    fn desc(samples: u32) -> ViewFrameDesc {
        ViewFrameDesc::new(Extent::new(640, 360), Format::Bgra8Srgb, samples)
    }

    const SPLIT: Option<Format> = Some(Format::Depth32FloatStencil8);

    #[test]
    fn a_single_sample_frame_lights_and_tone_maps_in_one_pipeline() {
        let specs = specs(desc(1));
        assert_eq!(slots(&specs), [ScreenSlot::Lighting]);
        let lighting = specs[0];
        assert!(lighting.variant.tonemap, "{lighting:?}");
        assert_eq!(lighting.state.blend, ScreenBlend::Replace);
        assert_eq!(lighting.constants, ScreenConstants::Lighting);
        assert_eq!(lighting.state.stencil, ScreenStencil::Off);
    }

    #[test]
    fn transparent_meshes_add_a_tonemap_pipeline_and_the_lighting_accumulates() {
        let specs = specs(ViewFrameDesc {
            transparent: TransparentPass::AfterTonemap,
            ..desc(1)
        });
        assert_eq!(slots(&specs), [ScreenSlot::Lighting, ScreenSlot::Tonemap]);
        assert!(!specs[0].variant.tonemap);
        assert_eq!(specs[0].state.blend, ScreenBlend::AddOrReplace);
        assert_eq!(specs[1].pass, names::TONEMAP);
    }

    #[test]
    fn an_hdr_transparent_pass_finishes_the_light_with_sky_and_fog_first() {
        let specs = specs(ViewFrameDesc {
            transparent: TransparentPass::BeforeTonemap {
                light_clear: [0; 3],
            },
            ..desc(1)
        });
        assert_eq!(
            slots(&specs),
            [
                ScreenSlot::Lighting,
                ScreenSlot::Tonemap,
                ScreenSlot::LightFinish(LIGHT_FINISH_SKY),
                ScreenSlot::LightFinish(LIGHT_FINISH_FOG_MULTIPLY),
                ScreenSlot::LightFinish(LIGHT_FINISH_FOG_ADD),
            ]
        );
        let blends: Vec<_> = specs[2..].iter().map(|s| s.state.blend).collect();
        assert_eq!(
            blends,
            [
                ScreenBlend::Replace,
                ScreenBlend::Multiply,
                ScreenBlend::Additive
            ]
        );
        assert_eq!(
            specs[3].constants,
            ScreenConstants::LightFinish(LIGHT_FINISH_FOG_MULTIPLY)
        );
    }

    #[test]
    fn msaa_without_the_stencil_split_counts_edges_with_a_classification() {
        let specs = specs(desc(4));
        assert_eq!(
            slots(&specs),
            [
                ScreenSlot::Lighting,
                ScreenSlot::Tonemap,
                ScreenSlot::EdgeCounter
            ]
        );
        assert!(specs.iter().all(|s| s.state.stencil == ScreenStencil::Off));
        assert_eq!(specs[2].constants, ScreenConstants::None);
    }

    #[test]
    fn the_stencil_split_lights_interiors_once_and_edges_per_sample() {
        let specs = specs(ViewFrameDesc {
            msaa_depth_stencil: SPLIT,
            ..desc(4)
        });
        let slots = slots(&specs);
        assert_eq!(slots[0], ScreenSlot::Lighting);
        assert_eq!(
            slots[slots.len() - 2..],
            [
                ScreenSlot::SplitClassify,
                ScreenSlot::SplitLightingPerSample
            ]
        );
        assert!(!slots.contains(&ScreenSlot::EdgeCounter));
        let [interior, classify, edges] = [0, slots.len() - 2, slots.len() - 1].map(|i| specs[i]);
        assert_eq!(
            (interior.state.stencil, interior.state.per_sample),
            (ScreenStencil::Equal(0), false)
        );
        assert_eq!(classify.state.stencil, ScreenStencil::Mark(1));
        assert_eq!(
            (edges.state.stencil, edges.state.per_sample),
            (ScreenStencil::Equal(1), true)
        );
        assert_eq!(interior.state.depth, ScreenDepth::Untested);
        assert_eq!(edges.variant.tonemap, interior.variant.tonemap);
    }

    #[test]
    fn a_frame_with_gizmos_after_it_exports_its_depth_last_of_its_own_pipelines() {
        let specs = specs(ViewFrameDesc {
            export_depth: true,
            ..desc(4)
        });
        let export = specs
            .iter()
            .find(|s| s.slot == ScreenSlot::DepthExport)
            .expect("a depth export");
        assert_eq!(export.pass, names::DEPTH_EXPORT);
        assert_eq!(export.state.depth, ScreenDepth::Written);
        assert!(export.variant.msaa && export.state.per_sample);
    }

    #[test]
    fn the_unmerged_tier_samples_its_attachments() {
        let specs = specs(ViewFrameDesc {
            unmerged: true,
            ..desc(1)
        });
        assert_eq!(slots(&specs), [ScreenSlot::Lighting, ScreenSlot::Tonemap]);
        assert!(specs.iter().all(|s| s.variant.sampled), "{specs:?}");
    }
}
