//! Stage 9's input: one [`Recording`] of the frame, built in one place from what the stages
//! before it made (the render passes' pipelines, the framebuffers, the view's sets and buffers,
//! this frame's queries and draws).

use crate::tile_deferred::{
    error::{TileError, TileResult},
    frame::{
        resources::{self, BufferSlot, ViewBindings},
        state::{FrameState, SharedObjects},
        view::ViewFrame,
    },
    gpu::{
        backend::PassResources,
        indirect::IndirectDraws,
        keys::MaterialSetKey,
        material_sets::MaterialResources,
        mesh_draw::{MeshBinding, RecordedDraw},
        pipelines::PassesKey,
        queries::FrameQueries,
        record::{RecordedPass, Recording, Step, UiRecording},
        types::{GpuTonemapParams, tonemap_flags},
        upload::BufferUpload,
    },
    plan::{PlannedFrame, TransparentPass},
    report::TileMeshDrawMode,
    scene::{
        draws::{self, DrawList},
        params::TileSceneParams,
    },
};
use ash::vk;
use bevy::{light::Skybox, platform::collections::HashMap};

/// What the stages before the recording made for this frame.
pub(crate) struct RecordingParts<'a> {
    pub(crate) planned: &'a PlannedFrame,
    /// The render passes with their framebuffers (stage 4).
    pub(crate) passes: Vec<RecordedPass>,
    /// The view's sets and instance buffer (stage 6).
    pub(crate) bindings: ViewBindings,
    pub(crate) queries: &'a FrameQueries,
    pub(crate) skybox: Option<&'a Skybox>,
    /// The camera has `DistanceFog`.
    pub(crate) fog: bool,
    /// The `ui` subpass's draws, where the plan has it.
    pub(crate) ui: Option<UiRecording>,
}

/// The frame's recording: the draws resolved to the pipelines of the render passes of `key`
/// and to their material sets, with this frame's uploads (taken from the backend's queue).
pub(crate) fn build(
    state: &mut FrameState,
    scene: &TileSceneParams,
    frame: &ViewFrame,
    key: &PassesKey,
    drawn: &DrawList,
    parts: RecordingParts,
) -> TileResult<Recording> {
    let missing = |step| TileError::Missing { step };
    let mesh_bindings = draws::mesh_bindings(scene, &drawn.draws)?;
    let transparent_bindings = draws::mesh_bindings(scene, &drawn.transparent)?;
    let (opaque_draws, transparent_draws) = {
        let pass = state
            .render_passes
            .get(key)
            .ok_or(missing("finding the frame's render passes"))?;
        let materials = &state.materials.by_key;
        (
            recorded_draws(materials, pass, &drawn.draws, mesh_bindings),
            recorded_draws(materials, pass, &drawn.transparent, transparent_bindings),
        )
    };
    let indirect = indirect_draws(state, frame, &opaque_draws, &transparent_draws)?;
    let pass = state
        .render_passes
        .get(key)
        .ok_or(missing("finding the frame's render passes"))?;
    let SharedObjects {
        layouts,
        zero_buffer,
        ..
    } = state.shared;
    let desc = &parts.planned.desc;
    // An HDR camera's transparent pass blends into the light (see `pass::transparent_pass`).
    let into_light = matches!(desc.transparent, TransparentPass::BeforeTonemap { .. });
    let recording = Recording {
        passes: parts.passes,
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
        pipeline_layout: layouts.pipeline_layout(frame.desc.unmerged),
        view_set: parts.bindings.view_set,
        gbuffer_set: parts.bindings.gbuffer_set,
        tonemap_set: parts.bindings.tonemap_set,
        lighting: pass.lighting,
        tonemap: pass.tonemap,
        tonemap_params: tonemap_params(frame, into_light, parts.fog),
        zero_buffer: zero_buffer.buffer,
        fill_zero_buffer: !*state.zero_buffer_filled,
        instance_buffer: parts.bindings.instance_buffer,
        updates: std::mem::take(state.pending_updates),
        staged: None,
        draws: opaque_draws,
        indirect,
        lighting_tonemaps: desc.lighting_tonemaps(),
        transparent_pass: desc.transparent,
        transparent_draws,
        timestamps: parts.queries.timestamps,
        samples: desc.samples,
        msaa_flags: frame.msaa_flags,
        debug_view: frame.debug_view.shader_value(),
        skip_lighting: state.shared.context.faults.skips_lighting(),
        edge_query: parts.queries.edge_query,
        stencil_split: pass.stencil_split,
        edge_counter: pass.edge_counter,
        depth_export: pass.depth_export,
        light_finish: pass.light_finish,
        sky_into_light: into_light && parts.skybox.is_some_and(|skybox| skybox.image.is_some()),
        fog_into_light: into_light && parts.fog,
        steps: parts
            .planned
            .compiled
            .native_passes
            .iter()
            .flat_map(|native| &native.subpasses)
            .filter_map(|subpass| Step::of(&subpass.name))
            .collect(),
        cluster_dispatch: parts.bindings.cluster_dispatch,
        ui: parts.ui,
    };
    Ok(recording)
}

/// The tonemap's parameters: an HDR camera's tonemap reads its background from the light
/// (clear colour or skybox, and the transparent meshes over it), already fogged.
fn tonemap_params(frame: &ViewFrame, into_light: bool, fog: bool) -> GpuTonemapParams {
    let mut mode = frame.tonemap.mode;
    if into_light {
        mode[3] |= tonemap_flags::BACKGROUND_IN_LIGHT;
    }
    if into_light && fog {
        mode[3] |= tonemap_flags::FOG_IN_LIGHT;
    }
    GpuTonemapParams {
        mode,
        ..frame.tonemap
    }
}

/// The frame's mesh draws as indirect commands and calls, where the camera draws indirectly:
/// the view's indirect buffer grown to hold them and their upload queued with the frame's
/// others (the buffer is rewritten each frame: a few bytes per draw, and the draws are the
/// batches, not the instances).
fn indirect_draws(
    state: &mut FrameState,
    frame: &ViewFrame,
    opaque: &[RecordedDraw],
    transparent: &[RecordedDraw],
) -> TileResult<Option<(vk::Buffer, IndirectDraws)>> {
    let TileMeshDrawMode::Indirect { max_draws_per_call } = frame.mesh_draws else {
        return Ok(None);
    };
    if opaque.is_empty() && transparent.is_empty() {
        return Ok(None);
    }
    let draws = IndirectDraws::of(opaque, transparent, max_draws_per_call);
    let (mut device, view) = state.view_device();
    resources::ensure_buffer_capacity(&mut device, view, BufferSlot::Indirect, draws.bytes())?;
    let buffer = view.indirect_buffer.buffer;
    state.pending_updates.push(BufferUpload::whole(
        buffer,
        bytemuck::cast_slice(&draws.commands).to_vec(),
    ));
    Ok(Some((buffer, draws)))
}

/// `draws` resolved to their pipelines and material sets (a draw whose pipeline or material set
/// is missing is left out).
fn recorded_draws(
    materials: &HashMap<MaterialSetKey, MaterialResources>,
    pass: &PassResources,
    draws: &[draws::Draw],
    bindings: Vec<MeshBinding>,
) -> Vec<RecordedDraw> {
    draws
        .iter()
        .zip(bindings)
        .filter_map(|(draw, binding)| {
            Some(RecordedDraw {
                pipeline: pass.mesh_pipelines.get(&draw.pipeline_key)?.pipeline,
                material_set: materials.get(&draw.material_set_key())?.set,
                binding,
                first_instance: draw.first_instance,
                instance_count: draw.instance_count,
            })
        })
        .collect()
}
