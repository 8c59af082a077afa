//! The camera-schedule systems of the tile path. `tile_deferred_pass` renders one tile view as
//! a recipe of stages, each in its own file with one input and one output, in the order they
//! run; `end_frame` retires what no view uses any more.
//!
//! 1. `view`: camera, target and lights -> the frame's description and GPU data
//! 2. `plan`: declare, compile, fit the tile budget, check the shape
//! 3. `render_passes`: render passes and their screen pipelines (cached by their key)
//! 4. `resources`: attachments sized to the target, framebuffers
//! 5. `draws`, `clusters` and `materials`: instanced draws, lights and their clusters, material
//!    sets
//! 6. `resources`: per-view buffers, descriptor sets, uploads
//! 7. `render_passes`: G-buffer pipelines for what is drawn
//! 8. `interop`: the wgpu side on Bevy's encoder (output init, transitions)
//! 9. `record`: the raw render pass on an encoder of its own
//! 10. `report`: what was planned, created and measured

use super::{
    interop,
    recording::{self, RecordingParts},
    render_passes,
    resources::{self, ViewBindings},
    state::FrameState,
    targets, ui,
    view::{TileViewQuery, ViewFrame},
};
use crate::tile_deferred::gpu::keys::MaterialSetKey;
use crate::tile_deferred::gpu::queries::FrameQueries;
use crate::tile_deferred::{
    camera::TileDebugView,
    error::{TileError, TileResult},
    gpu::{
        backend::{TileBackend, ViewResources},
        pipelines::{IndirectSources, LightingKey, PassesKey, SampledShadows},
        record::{RecordedPass, Recording, UiRecording, record},
        ui::{TileUiDraws, UiBuffers},
    },
    lighting::{
        clusters::LightClusters,
        environment::{
            EnvironmentSources, TileEnvironmentMap, TileIrradianceVolumes, ViewEnvironment,
        },
    },
    plan::{self, PlannedFrame, TransparentPass},
    report::{self, TileClusterStats, TileEguiInPass, TileUiInPass, TileViewReport},
    scene::{
        draws::{DrawList, RetainedDraws, TileRetainedDraws},
        materials,
        params::{self as scene, TileSceneParams},
    },
};
use crate::{
    device::DeviceProfile,
    frame_graph::{DeviceCaps, ShadowMaps},
    vulkan::{VulkanContext, conv, faults::FaultPoint, render_pass},
};
use bevy::{
    light::Skybox,
    pbr::{DistanceFog, ViewShadowBindings},
    platform::collections::HashSet,
    prelude::*,
    render::{
        render_resource::TextureView,
        renderer::{RenderContext, ViewQuery},
        texture::GpuImage,
        view::RenderVisibleEntities,
    },
};

/// Frames a view, framebuffer or render pass stays after its last use.
const KEEP_FRAMES: u64 = 3;
/// Frames a material's set stays after its last use (materials come back often).
const KEEP_MATERIAL_FRAMES: u64 = 60;
/// Frames a mesh pipeline stays after its last draw, as a material's set does: long enough that
/// an object that comes and goes (a pickup, an effect) keeps its pipeline, short enough that a
/// pass holds only the pipelines of what its scene draws now. Each is keyed by mesh layout and
/// material state, so a game that streams content would otherwise keep one for every
/// combination it ever drew. One built again is cheap: the context's pipeline cache keeps what
/// the driver compiled.
const KEEP_MESH_PIPELINE_FRAMES: u64 = 60;

/// Renders one tile-deferred camera.
pub(crate) fn tile_deferred_pass(
    view: ViewQuery<TileViewQuery>,
    backend: Option<ResMut<TileBackend>>,
    scene: TileSceneParams,
    mut retained_draws: ResMut<TileRetainedDraws>,
    mut ctx: RenderContext,
) {
    let view = view.into_inner();
    let camera = view.main_entity.id();
    // The tier this frame renders at: a failure is reported with it (`route_cameras` ignores
    // one from a tier the camera has already left).
    let tier = view.tier.map(|decision| decision.tier);
    // Without its Vulkan objects (their creation failed at start-up, logged then) the tile
    // path draws nothing: the camera falls back from the next frame on, and this frame shows
    // Bevy's clear colour.
    let Some(mut backend) = backend else {
        if view.target.out_texture().is_some() {
            interop::clear_unwritable_output(&view, &scene, &mut ctx);
            interop::clear_unwritten_main_texture(&view, &scene, &mut ctx);
            scene.reports.report_failure(
                camera,
                TileError::Missing {
                    step: "creating the tile path's Vulkan objects at start-up",
                }
                .to_string(),
                tier,
            );
        }
        return;
    };
    let Some(output_view) = view.tile_output() else {
        return;
    };
    // A target the tile path cannot write falls back to Bevy from the next frame on; this
    // frame shows Bevy's clear colour, not an image nobody wrote.
    if let Some(format) = view.tile_output_format()
        && conv::frame_graph_format(format).is_none()
    {
        interop::clear_unwritable_output(&view, &scene, &mut ctx);
        interop::clear_unwritten_main_texture(&view, &scene, &mut ctx);
        let error = TileError::UnsupportedOutput {
            format: format!("{format:?}"),
        };
        scene
            .reports
            .report_failure(camera, error.to_string(), tier);
        return;
    }
    // 1. The view: nothing to draw into (zero-size, no output yet) draws nothing.
    let Some(frame) = ViewFrame::gather(&view, &scene, &backend.context) else {
        return;
    };
    // Bevy clears a target once per frame, whatever happens to the tile pass after; where Bevy
    // post-processes the frame, its blit to the output does (and the output is no swapchain
    // image of the tile pass's).
    if !view.post_processed() {
        interop::clear_output_like_bevy(&frame, view.target, &mut ctx);
        // A wgpu pass loading a window image after the tile pass needs wgpu to see it as
        // written.
        interop::mark_window_output_written(&frame, &scene, output_view, &mut ctx);
    } else {
        interop::mark_main_texture_written(view.target);
        // Bevy's blit writes the output after the effects, but not on a frame where its
        // pipeline is still compiling (at start-up): a window's image is claimed for this frame
        // all the same, so that the frame waits on its acquire and its present follows the
        // frame, as for a tile frame that writes it (and as Bevy's `Core3d` does not: a
        // window's first frames with bloom present an image nobody waited for).
        if let Some(output) = view.target.out_texture() {
            interop::claim_output(output, &mut ctx);
        }
    }
    // The output is this frame's colour target for wgpu too: a window frame then waits on the
    // swapchain image's acquire and its present waits on the frame, whatever follows.
    interop::claim_output(output_view, &mut ctx);
    // Test hook: a fault armed by `TileFaultInjection` may strike this view's Vulkan calls.
    let faults = scene.fault.as_deref().map(|fault| fault.for_view());
    backend.context.faults.arm_for_view(faults);
    // On frames that draw gizmos after the pass, the tile depth goes into Bevy's depth texture.
    let inputs = ViewInputs {
        visible: view.visible,
        shadow_maps: view.shadow_maps,
        skybox: view.skybox,
        fog: view.fog,
        environment_map: view.environment_map,
        irradiance_volumes: view.irradiance_volumes,
        output_view,
        overlay_depth: view
            .view_depth
            .filter(|_| view.draws_gizmos)
            .map(|depth| depth.view()),
        ui: view.ui,
        drawn_by_bevy: view
            .materials_over_tile
            .map_or(&[], |over_tile| over_tile.meshes()),
    };
    // Set once the raw pass is handed to Bevy: from then on the output is written.
    let mut output_written = false;
    // Last frame's batches, kept if this frame renders.
    let mut retained = retained_draws.take(frame.entity);
    let rendered = render_view(
        &mut backend,
        &scene,
        &frame,
        &inputs,
        &mut retained,
        &mut ctx,
        &mut output_written,
    );
    backend.context.faults.view_done();
    match rendered {
        Ok(report) => {
            retained_draws.put_back(frame.entity, retained);
            scene.reports.insert(camera, report);
        }
        // The main world lowers the camera's tier and logs it (`route_cameras`); the camera
        // is drawn by the next tier from the next frame on.
        Err(error) => {
            // The output shows the camera's clear colour, not an image nobody wrote.
            if !output_written {
                interop::clear_output_of_failed_frame(&frame, output_view, &mut ctx);
            }
            scene::forget_failed_view_updates(&mut backend, frame.entity);
            scene
                .reports
                .report_failure(camera, error.to_string(), tier);
        }
    }
}

/// What Bevy hands the tile pass for one view besides the camera: what is visible, the shadow
/// maps and the environment it samples, and the textures it writes.
struct ViewInputs<'a> {
    visible: &'a RenderVisibleEntities,
    shadow_maps: Option<&'a ViewShadowBindings>,
    skybox: Option<&'a Skybox>,
    fog: Option<&'a DistanceFog>,
    environment_map: Option<&'a TileEnvironmentMap>,
    irradiance_volumes: Option<&'a TileIrradianceVolumes>,
    /// The camera's output (a window's swapchain image, or an image target).
    output_view: &'a TextureView,
    /// Bevy's depth texture, where the plan exports the tile depth for gizmos drawn after.
    overlay_depth: Option<&'a TextureView>,
    /// bevy_ui drawn in the pass (its `ui` subpass), where the view's UI goes that way.
    ui: Option<&'a TileUiDraws>,
    /// The meshes in view that Bevy draws over the tile frame, left out of the pass (in
    /// entity order; `MaterialsOverTileView`).
    drawn_by_bevy: &'a [Entity],
}

/// The recipe of one tile view's frame (stage 1, the view, is gathered by the caller), over
/// the backend borrowed by part ([`FrameState`]). Each stage takes what the ones before it
/// returned.
fn render_view(
    backend: &mut TileBackend,
    scene: &TileSceneParams,
    frame: &ViewFrame,
    inputs: &ViewInputs,
    retained: &mut Option<RetainedDraws>,
    ctx: &mut RenderContext,
    output_written: &mut bool,
) -> TileResult<TileViewReport> {
    let started = std::time::Instant::now();
    if backend.context.faults.strike(FaultPoint::FrameStart) {
        return Err(TileError::Injected {
            step: "creating the render pass",
        });
    }
    // The view's resources, created the first time it is seen, beside the caches it uses.
    let mut state = FrameState::begin(backend, frame.entity)?;

    // 2. What is drawn, and the plan the compiler made of it (cached while unchanged).
    let caps = scene
        .profile
        .as_deref()
        .map_or_else(DeviceCaps::desktop, DeviceProfile::frame_graph_caps);
    let (drawn, planned) = plan_view(&mut state, scene, frame, inputs, retained, &caps)?;

    // 3-4. The render passes with their lighting and tonemap pipelines, the view's attachments
    // and the framebuffers over them.
    let passes = prepare_passes(&mut state, frame, inputs, &planned, &drawn)?;

    // 5. The clusters the lights reach, and the materials the draws use.
    let lights = prepare_lights_and_materials(&mut state, scene, frame, &drawn)?;

    // 6. Per-view buffers and descriptor sets (with Bevy's shadow maps); this frame's data
    // queued for upload.
    let shadow_maps = inputs.shadow_maps.ok_or(TileError::Missing {
        step: "finding Bevy's shadow maps for the view",
    })?;
    let mut data = prepare_view_data(
        &mut state,
        scene,
        frame,
        inputs,
        shadow_maps,
        &planned,
        &drawn,
        &lights.clusters,
    )?;
    // The instances are queued: a later failure drops the queued writes and the batches with
    // them (the caller keeps them only for a frame that rendered).
    if let Some(retained) = retained.as_mut() {
        retained.mark_uploaded();
    }
    // bevy_ui in the pass: its quads queued for upload, its images' sets, its pipeline.
    let ui = match inputs.ui {
        Some(draws) => {
            let shape = (
                planned.desc.samples,
                Vec2::new(frame.viewport.x as f32, frame.viewport.y as f32),
            );
            let prepared = ui::prepare_ui(&mut state, scene, &passes.key, shape, draws)?;
            data.sampled.extend(prepared.images);
            Some(prepared.recording)
        }
        None => None,
    };

    // 7. Pipelines for every (mesh layout, material state) drawn.
    let shared = state.shared;
    let frame_number = state.frame;
    render_passes::ensure_mesh_pipelines(
        shared,
        state.passes(&passes.key)?,
        drawn.all(),
        frame_number,
    )?;

    // 8-9. The wgpu side on Bevy's encoder, then the raw pass on an encoder of its own.
    let to_record = FrameToRecord {
        planned: &planned,
        drawn: &drawn,
        key: &passes.key,
        targets: passes.targets,
        data,
        shadow_maps,
        ui,
    };
    let recorded = record_frame(&mut state, scene, frame, inputs, to_record, ctx)?;
    *output_written = true;

    // 10. The report: what was planned, created, drawn and measured, and the price of the
    // frame with Bevy's shadow passes.
    let measured = Measured {
        started,
        assignment_ms: lights.assignment_ms,
        draw_count: recorded.draw_count,
        draw_calls: recorded.draw_calls,
        queries: recorded.queries,
        ui: inputs
            .ui
            .filter(|draws| draws.items > 0)
            .map(|draws| TileUiInPass {
                items: draws.items,
                quads: draws.quad_vertices / 4,
                batches: draws.batches.len() - draws.egui_meshes,
            }),
        egui: inputs
            .ui
            .filter(|draws| draws.egui_meshes > 0)
            .map(|draws| TileEguiInPass {
                meshes: draws.egui_meshes,
                triangles: (draws.indices.len() - draws.quad_vertices / 4 * 6) / 3,
            }),
    };
    view_report(
        &mut state,
        frame,
        &caps,
        planned,
        &passes.descriptions,
        &drawn,
        &lights.clusters,
        shadow_maps,
        measured,
    )
}

/// Stages 3-4's result: the frame's render passes and the passes recorded over the view's
/// attachments.
struct PreparedPasses {
    descriptions: Vec<render_pass::RenderPassDescription>,
    key: PassesKey,
    targets: Vec<RecordedPass>,
}

/// Stages 3-4: the render passes and their lighting and tonemap pipelines, the lighting
/// specialised for the shadows the frame samples (what is drawn, gathered first, says which);
/// then the view's attachments (everything but the output) and the framebuffers over them.
fn prepare_passes(
    state: &mut FrameState,
    frame: &ViewFrame,
    inputs: &ViewInputs,
    planned: &PlannedFrame,
    drawn: &DrawList,
) -> TileResult<PreparedPasses> {
    let lighting = LightingKey::new(
        frame.gpu_view.counts[2],
        samples_shadows(frame, drawn),
        indirect_sources(inputs),
    );
    let descriptions =
        render_pass::describe_frame(&planned.compiled, (planned.output, frame.output_kind));
    let key =
        render_passes::ensure_render_passes(state, &descriptions, &planned.compiled, lighting)?;
    let targets = prepare_targets(state, frame, planned, &key, inputs)?;
    Ok(PreparedPasses {
        descriptions,
        key,
        targets,
    })
}

/// Stage 5's result.
struct PreparedLights {
    clusters: LightClusters,
    /// CPU time of the assignment's preparation.
    assignment_ms: f64,
}

/// Stage 5: the clusters the lights reach, and every drawn material's set and buffer.
fn prepare_lights_and_materials(
    state: &mut FrameState,
    scene: &TileSceneParams,
    frame: &ViewFrame,
    drawn: &DrawList,
) -> TileResult<PreparedLights> {
    let assigning = std::time::Instant::now();
    let clusters = assign_lights(scene, frame, drawn);
    let assignment_ms = assigning.elapsed().as_secs_f64() * 1000.0;
    let mut cache = state.material_cache();
    for draw in drawn.all() {
        materials::ensure_material(&mut cache, scene, draw.material_set_key())?;
    }
    Ok(PreparedLights {
        clusters,
        assignment_ms,
    })
}

/// Stages 8-9's result: what the recorded frame drew and the queries it wrote.
struct RecordedFrame {
    draw_count: usize,
    /// The `vkCmdDraw*` calls of those draws.
    draw_calls: usize,
    queries: FrameQueries,
}

/// What stages 2-7 made for the recording.
struct FrameToRecord<'a> {
    planned: &'a PlannedFrame,
    drawn: &'a DrawList,
    key: &'a PassesKey,
    targets: Vec<RecordedPass>,
    data: ViewData<'a>,
    shadow_maps: &'a ViewShadowBindings,
    ui: Option<UiRecording>,
}

/// Stages 8-9: the wgpu side, on Bevy's encoder (the output's first use, the transitions of
/// what the raw pass touches), then the raw pass recorded on an encoder of its own and handed
/// to Bevy.
fn record_frame(
    state: &mut FrameState,
    scene: &TileSceneParams,
    frame: &ViewFrame,
    inputs: &ViewInputs,
    to_record: FrameToRecord,
    ctx: &mut RenderContext,
) -> TileResult<RecordedFrame> {
    let FrameToRecord {
        planned,
        drawn,
        key,
        targets: passes,
        data,
        shadow_maps,
        ui,
    } = to_record;
    interop::prepare_wgpu_resources(
        state.initialized_outputs,
        state.frame,
        scene,
        frame,
        (inputs.output_view, inputs.overlay_depth),
        &drawn.all().collect::<Vec<_>>(),
        &data.sampled,
        [
            &shadow_maps.point_light_depth_texture,
            &shadow_maps.directional_light_depth_texture,
        ],
        ctx,
    );
    let queries = FrameQueries::take(
        state.view,
        state.shared.context,
        state.frame,
        planned.desc.samples,
        frame.viewport,
    );
    let parts = RecordingParts {
        planned,
        passes,
        bindings: data.bindings,
        queries: &queries,
        skybox: inputs.skybox,
        fog: inputs.fog.is_some(),
        ui,
    };
    let recording = recording::build(state, scene, frame, key, drawn, parts)?;
    let draw_count = recording.draws.len() + recording.transparent_draws.len();
    let draw_calls = recording
        .indirect
        .as_ref()
        .map_or(draw_count, |(_, indirect)| indirect.call_count());
    submit(state, recording, ctx)?;
    Ok(RecordedFrame {
        draw_count,
        draw_calls,
        queries,
    })
}

/// Stage 2: what the view draws, and the plan for it. The debug views show G-buffer and light
/// values: transparent meshes are left out of them; what is left decides whether the plan has
/// a transparent pass.
fn plan_view(
    state: &mut FrameState,
    scene: &TileSceneParams,
    frame: &ViewFrame,
    inputs: &ViewInputs,
    retained: &mut Option<RetainedDraws>,
    caps: &DeviceCaps,
) -> TileResult<(DrawList, PlannedFrame)> {
    let view_from_world = Mat4::from_cols_array_2d(&frame.gpu_view.view_from_world);
    let mut drawn = DrawList::gather(
        scene,
        inputs.visible,
        conv::samples(frame.desc.samples),
        &view_from_world,
        inputs.drawn_by_bevy,
        retained,
    );
    if frame.debug_view.shader_value() != 0 {
        drawn.transparent.clear();
    }
    let view_desc = plan::ViewFrameDesc {
        transparent: transparent_pass(frame, &drawn, inputs.skybox, inputs.fog.is_some()),
        export_depth: inputs.overlay_depth.is_some(),
        ui: inputs.ui.is_some(),
        ..frame.desc
    };
    let mut planned = plan::plan_frame(&view_desc, caps, &mut state.view.graph_cache)?;
    if frame.debug_view == TileDebugView::UndefinedPoison {
        plan::poison_undefined(&mut planned.compiled);
    }
    warn_once_if_msaa_lowered(state.reported, frame, &planned);
    drawn.set_target(
        conv::samples(planned.desc.samples),
        matches!(
            planned.desc.transparent,
            TransparentPass::BeforeTonemap { .. }
        ),
    );
    Ok((drawn, planned))
}

/// Stage 4: the view's attachments sized to the target, and the framebuffers of the render
/// passes of `key` over them and the textures Bevy gives (the output, and Bevy's depth texture
/// where the plan exports the tile depth into it).
fn prepare_targets(
    state: &mut FrameState,
    frame: &ViewFrame,
    planned: &PlannedFrame,
    key: &PassesKey,
    inputs: &ViewInputs,
) -> TileResult<Vec<RecordedPass>> {
    let render_passes = state.passes(key)?.render_passes.clone();
    let frame_number = state.frame;
    let (mut device, view_state) = state.view_device();
    targets::ensure_attachments(&mut device, view_state, frame, &planned.compiled)?;
    view_state.render_pass_key = key.clone();
    view_state.last_used = frame_number;
    let imported: Vec<_> = [(plan::names::OUTPUT, inputs.output_view)]
        .into_iter()
        .chain(
            inputs
                .overlay_depth
                .map(|depth| (plan::names::VIEW_DEPTH, depth)),
        )
        .collect();
    targets::framebuffers(
        device.context,
        device.graveyard,
        view_state,
        frame_number,
        frame,
        planned,
        &render_passes,
        &imported,
    )
}

/// Stage 5: the lights assigned to the view's clusters: on the GPU (a compute dispatch before
/// the render pass; the CPU prepares each light's reach and the grid), unless the render world
/// asks for the CPU reference. The G-buffer debug views show no lights: nothing to assign.
fn assign_lights(scene: &TileSceneParams, frame: &ViewFrame, drawn: &DrawList) -> LightClusters {
    let lights = if frame.debug_view.replaces_lighting() {
        &[][..]
    } else {
        &drawn.lights[..]
    };
    LightClusters::for_view(
        &frame.gpu_view,
        frame.viewport,
        lights,
        scene.cpu_light_assignment.is_some(),
    )
}

/// What stage 6 made: the view's sets and buffers, and the textures they sample that wgpu must
/// see as used (the LUT and the environment's).
struct ViewData<'a> {
    bindings: ViewBindings,
    sampled: Vec<&'a GpuImage>,
}

/// Stage 6: the view's buffers and descriptor sets, with the tonemapping LUT, the environment
/// and Bevy's shadow maps, and this frame's view, light, cluster and instance data queued.
fn prepare_view_data<'a>(
    state: &mut FrameState,
    scene: &'a TileSceneParams,
    frame: &ViewFrame,
    inputs: &ViewInputs,
    shadow_maps: &ViewShadowBindings,
    planned: &PlannedFrame,
    drawn: &DrawList,
    clusters: &LightClusters,
) -> TileResult<ViewData<'a>> {
    let lut = materials::lut_image(scene, frame.tonemapping);
    let shadow_map_views =
        state
            .shadow_map_views
            .update(state.shared.context, state.graveyard, shadow_maps)?;
    let sources = EnvironmentSources {
        images: &scene.images,
        fallback_cube: &scene.fallback_image.cube,
        fallback_volume: &scene.fallback_image.d3,
        samplers: &scene.environment_samplers,
    };
    let environment = ViewEnvironment::gather(
        state.sampler_cache(),
        sources,
        inputs.skybox,
        inputs.fog,
        inputs.environment_map,
        inputs.irradiance_volumes,
        frame.gpu_view.exposure[0],
    )?;
    let cluster_assign = (
        state.shared.cluster_assign,
        state.shared.layouts.cluster_assign_layout,
    );
    let (mut device, view_state) = state.view_device();
    let bindings = resources::prepare_view_data(
        &mut device,
        view_state,
        frame,
        &planned.compiled,
        drawn,
        clusters,
        cluster_assign,
        lut,
        &environment,
        shadow_map_views,
    )?;
    let sampled = [lut]
        .into_iter()
        .chain(environment.textures().map(|t| t.image))
        .collect();
    Ok(ViewData { bindings, sampled })
}

/// Stage 9's end: the recorded command buffer handed to Bevy, or, where a test makes the
/// submission fail, the frame's queued uploads put back for the next frame.
fn submit(
    state: &mut FrameState,
    mut recording: Recording,
    ctx: &mut RenderContext,
) -> TileResult<()> {
    let context = state.shared.context;
    recording.staged = match state.staging.stage(context, &recording.updates) {
        Ok(staged) => staged,
        // Nothing is recorded: the uploads wait for the next frame.
        Err(error) => {
            return Err(state.command_buffer_lost(
                recording.updates,
                recording.fill_zero_buffer,
                error,
            ));
        }
    };
    *state.zero_buffer_filled = true;
    // Test hook: a submission that fails, i.e. a recorded command buffer that never runs.
    let lost = context
        .faults
        .strike(FaultPoint::Submit)
        .then(|| (recording.updates.clone(), recording.fill_zero_buffer));
    match (record(context, ctx, recording), lost) {
        (Ok(command_buffer), None) => {
            ctx.add_command_buffer(command_buffer);
            Ok(())
        }
        (Ok(_dropped), Some((updates, filled))) => Err(state.command_buffer_lost(
            updates,
            filled,
            TileError::Injected {
                step: "submitting the view's command buffer",
            },
        )),
        // Nothing was recorded: the uploads it carried are still to be made.
        (Err(unrecorded), _) => Err(state.command_buffer_lost(
            unrecorded.updates,
            unrecorded.fill_zero_buffer,
            TileError::Missing {
                step: "recording the frame (wgpu gave no Vulkan command encoder: a lost device?)",
            },
        )),
    }
}

/// What the frame measured on the CPU, and its GPU queries.
struct Measured {
    started: std::time::Instant,
    assignment_ms: f64,
    draw_count: usize,
    draw_calls: usize,
    queries: FrameQueries,
    /// What the `ui` subpass drew of bevy_ui.
    ui: Option<TileUiInPass>,
    /// What the `ui` subpass drew of egui.
    egui: Option<TileEguiInPass>,
}

/// Stage 10: what was planned, created, drawn and measured, and the price of the frame with
/// Bevy's shadow passes. Keeps the compiled plan on the view (for the inspector and tests).
fn view_report(
    state: &mut FrameState,
    frame: &ViewFrame,
    caps: &DeviceCaps,
    planned: PlannedFrame,
    descriptions: &[render_pass::RenderPassDescription],
    drawn: &DrawList,
    clusters: &LightClusters,
    shadow_maps: &ViewShadowBindings,
    measured: Measured,
) -> TileResult<TileViewReport> {
    let PlannedFrame { compiled, desc, .. } = planned;
    let shadow_plan = shadow_maps_rendered(frame, drawn, shadow_maps);
    let view_state = &mut *state.view;
    let priced = if shadow_plan == ShadowMaps::NONE {
        compiled.clone()
    } else {
        plan::price_with_shadows(&desc, caps, &shadow_plan, &mut view_state.priced_cache)?
    };
    let report = TileViewReport {
        attachments: report::attachment_reports(&compiled, descriptions, &view_state.attachments),
        subpass_count: descriptions.iter().map(|d| d.subpasses.len()).sum(),
        render_passes_recorded: descriptions.len(),
        draws: measured.draw_count,
        mesh_draws: frame.mesh_draws.clone(),
        mesh_draw_calls: measured.draw_calls,
        instances: drawn.instance_count,
        instance_batches: drawn.batches,
        clustered_lights: drawn.lights.len(),
        clusters: cluster_stats(clusters, view_state, measured.assignment_ms),
        frame: state.frame,
        compiled: compiled.clone(),
        priced,
        shadow_maps: shadow_plan,
        gpu_times: measured.queries.gpu_times,
        cpu_ms: measured.started.elapsed().as_secs_f64() * 1000.0,
        samples: desc.samples,
        per_sample_fraction: measured.queries.per_sample_fraction,
        // Filled in by the UI's composite, after the tile pass (feature `ui`).
        ui_pass: None,
        // Filled in by the gizmo pass, after the tile pass.
        gizmo_pass: None,
        post_process_pass: None,
        post_processing: Vec::new(),
        ui_in_pass: measured.ui,
        // Filled in by the UI's composite, on frames whose UI is drawn after the tile pass.
        ui_after_pass_reason: None,
        egui_in_pass: measured.egui,
        // Filled in by the inspector's composite, on frames whose egui is drawn after the pass.
        egui_after_pass_reason: None,
    };
    view_state.compiled = Some(compiled);
    Ok(report)
}

/// What the report says about the view's clusters: a CPU assignment's own occupancy, or the
/// latest the GPU's assignment sent back (a frame or more late; none before the first).
fn cluster_stats(
    clusters: &LightClusters,
    view: &ViewResources,
    assignment_ms: f64,
) -> TileClusterStats {
    match clusters {
        LightClusters::Cpu(assignment) => assignment.stats(assignment_ms),
        LightClusters::Gpu(inputs) => {
            let (max, mean) = if inputs.words == 0 {
                (0, 0.0)
            } else {
                view.cluster_stats.latest().unwrap_or_default()
            };
            TileClusterStats {
                dimensions: inputs.grid.dims.to_array(),
                tile_size: inputs.grid.tile_size,
                max_lights_per_cluster: max,
                mean_lights_per_occupied_cluster: mean,
                assignment_ms,
                mask_bytes: clusters.mask_bytes(),
                assigned_on_gpu: true,
            }
        }
    }
}

/// Where the view's transparent meshes go, if it draws any (see [`TransparentPass`]): an HDR
/// camera blends them into the light, as Bevy blends them into its HDR main texture, where the
/// light starts as the clear colour (the camera clears its output) or the skybox, over surfaces
/// already fogged (the lighting subpass draws the skybox and the fog into the light first:
/// per sample with MSAA, which needs the stencil split's sample-rate shading); otherwise over
/// the tone-mapped output.
fn transparent_pass(
    frame: &ViewFrame,
    drawn: &DrawList,
    skybox: Option<&Skybox>,
    fog: bool,
) -> TransparentPass {
    if drawn.transparent.is_empty() {
        return TransparentPass::None;
    }
    let clear = frame.tonemap.clear_color;
    let skybox = skybox.is_some_and(|skybox| skybox.image.is_some());
    let per_sample = frame.desc.samples == 1 || frame.desc.stencil_split();
    let into_light = per_sample || !(skybox || fog);
    if frame.hdr && !frame.desc.keep_output && (clear[3] > 0.5 || skybox) && into_light {
        TransparentPass::BeforeTonemap {
            light_clear: [clear[0], clear[1], clear[2]].map(f32::to_bits),
        }
    } else {
        TransparentPass::AfterTonemap
    }
}

/// Which of the view's lights sample a shadow map this frame: a directional light with
/// cascades, a point or spot light with a shadow map. The G-buffer debug views light nothing.
fn samples_shadows(frame: &ViewFrame, drawn: &DrawList) -> SampledShadows {
    if frame.debug_view.replaces_lighting() {
        return SampledShadows::default();
    }
    SampledShadows {
        directional: directional_cascades(frame) > 0,
        clustered: drawn.lights.iter().any(|light| light.shadow[3] >= 0.0),
    }
}

/// The indirect light sources the view's surfaces may sample besides the ambient light: those
/// the camera has, as Bevy specialises on them. The view's uniform (written at stage 6, once
/// their images are known to be loaded) says whether each is sampled this frame.
fn indirect_sources(inputs: &ViewInputs) -> IndirectSources {
    IndirectSources {
        environment_map: inputs.environment_map.is_some(),
        irradiance_volumes: inputs.irradiance_volumes.is_some(),
    }
}

/// The cascades the view's directional lights sample (Bevy renders them for this view).
fn directional_cascades(frame: &ViewFrame) -> u32 {
    let view = &frame.gpu_view;
    let directional = (view.counts[0] as usize).min(view.directional_lights.len());
    view.directional_lights[..directional]
        .iter()
        .map(|light| light.shadow_cascades[0])
        .sum()
}

/// The shadow maps Bevy rendered this frame that the view samples: its own directional
/// cascades, and the spot and point maps of the frame (rendered once for every camera).
fn shadow_maps_rendered(
    frame: &ViewFrame,
    drawn: &DrawList,
    textures: &ViewShadowBindings,
) -> ShadowMaps {
    let layers = &drawn.shadow_layers;
    let maps = ShadowMaps {
        cascades: directional_cascades(frame),
        spot_maps: layers.spot_shadow_maps as u32,
        array_size: textures.directional_light_depth_texture.width(),
        cubes: layers.point_shadow_maps as u32,
        cube_size: textures.point_light_depth_texture.width(),
    };
    if maps.pass_count() == 0 {
        ShadowMaps::NONE
    } else {
        maps
    }
}

/// Says once per camera why it renders with fewer samples than its `Msaa` asks for.
fn warn_once_if_msaa_lowered(
    reported: &mut HashSet<(Entity, &'static str)>,
    frame: &ViewFrame,
    planned: &PlannedFrame,
) {
    let notes: Vec<&str> = [frame.msaa_note.as_deref(), planned.msaa_note.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if !notes.is_empty() && reported.insert((frame.entity, "msaa")) {
        warn!(
            "bevy_tile_deferred: camera {}: asked for {}x MSAA, rendering {}x: {}",
            frame.entity,
            frame.requested_samples,
            planned.desc.samples,
            notes.join("; ")
        );
    }
}

/// Retires views, framebuffers, materials and render passes no longer used, seals this frame's
/// retired objects behind its submission, and destroys what the GPU has finished with.
pub(crate) fn end_frame(
    backend: Option<ResMut<TileBackend>>,
    queue: Res<bevy::render::renderer::RenderQueue>,
    reports: Res<crate::tile_deferred::report::TileRenderReports>,
) {
    // This frame's reports are complete (the overlays after the tile pass have priced
    // themselves): the main world sees them from now on.
    reports.publish();
    let Some(mut backend) = backend else { return };
    let backend = &mut *backend;
    let frame = backend.frame;
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
    backend.retire_stale_timers(frame, KEEP_FRAMES);
    let mut stale_framebuffers = Vec::new();
    let mut stale_ui_buffers = Vec::new();
    for view in backend.views.values_mut() {
        if view
            .ui_buffers
            .as_ref()
            .is_some_and(|ui| frame.saturating_sub(ui.last_used) > KEEP_FRAMES)
        {
            stale_ui_buffers.extend(view.ui_buffers.take());
        }
        view.framebuffers.retain(|_, (framebuffer, used)| {
            let keep = frame.saturating_sub(*used) <= KEEP_FRAMES;
            if !keep {
                stale_framebuffers.push(*framebuffer);
            }
            keep
        });
    }
    if !stale_ui_buffers.is_empty() {
        // An upload a failed frame left for them goes with them.
        let retired: Vec<ash::vk::Buffer> = stale_ui_buffers
            .iter()
            .flat_map(|ui: &UiBuffers| [ui.vertices.buffer, ui.indices.buffer])
            .collect();
        backend
            .pending_updates
            .retain(|upload| !retired.contains(&upload.buffer));
        backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
            for ui in stale_ui_buffers {
                c.destroy_device_buffer(ui.vertices);
                c.destroy_device_buffer(ui.indices);
            }
        }));
    }
    if !stale_framebuffers.is_empty() {
        backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
            stale_framebuffers
                .into_iter()
                .for_each(|fb| c.destroy_framebuffer(fb));
        }));
    }
    let stale_materials: Vec<MaterialSetKey> = backend
        .materials
        .by_key
        .iter()
        .filter(|(_, m)| frame.saturating_sub(m.last_used) > KEEP_MATERIAL_FRAMES)
        .map(|(id, _)| *id)
        .collect();
    for id in stale_materials {
        let material = backend.materials.by_key.remove(&id).unwrap();
        backend.retire_material(material);
    }
    // A UI image's set goes soon after its last use: a glyph atlas that grew is a new image,
    // and the set holds the old one alive.
    crate::tile_deferred::gpu::material_sets::retire_stale_ui_images(
        &mut backend.materials,
        &mut backend.graveyard,
        frame,
        KEEP_FRAMES,
    );
    let used_keys: Vec<PassesKey> = backend
        .views
        .values()
        .map(|v| v.render_pass_key.clone())
        .collect();
    let stale_passes: Vec<PassesKey> = backend
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
    for pass in backend.render_passes.values_mut() {
        pass.retire_stale_mesh_pipelines(frame, KEEP_MESH_PIPELINE_FRAMES, &mut backend.graveyard);
    }
    backend
        .initialized_outputs
        .retain(|_, used| frame.saturating_sub(*used) <= KEEP_FRAMES);
    let done = backend.graveyard.seal_after_submit(&queue);
    backend.staging.seal(&done, frame);
    backend.staging.recycle(&backend.context, frame);
    for view in backend.views.values_mut() {
        view.cluster_stats.submitted(&done);
    }
    backend.graveyard.collect(&backend.context);
    let in_flight = pace_frames(backend, done);
    reports
        .most_frames_in_flight
        .fetch_max(in_flight, std::sync::atomic::Ordering::Relaxed);
    backend.frame += 1;
}

/// Tile frames the GPU may have queued before the render world waits for the oldest.
const MAX_FRAMES_IN_FLIGHT: usize = 3;
/// The longest the render world waits for one frame (a hung GPU must not hang the app).
const PACING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Frame pacing: at most [`MAX_FRAMES_IN_FLIGHT`] frames that drew a tile view are queued on the
/// GPU. A window's swapchain paces an app by itself; an app drawing into images that never
/// waits for the GPU (a benchmark, a server, a headless test) otherwise queues frames as fast as
/// its CPU records them, and at shutdown wgpu waits for all of them, panicking past its own
/// timeout (wgpu-core queue.rs: "We timed out while waiting on the last successful submission to
/// complete!"; the H200 did, 4K tile cameras, 300 frames queued). Frames without a tile view
/// (Bevy's own cameras only) are not paced: the crate does not change what they cost. Returns
/// how many were in flight before pacing.
fn pace_frames(
    backend: &mut TileBackend,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> usize {
    use std::sync::atomic::Ordering;
    let frame = backend.frame;
    if backend.views.values().any(|view| view.last_used == frame) {
        backend.frames_in_flight.push_back(done);
    }
    backend
        .frames_in_flight
        .retain(|done| !done.load(Ordering::Acquire));
    let in_flight = backend.frames_in_flight.len();
    while backend.frames_in_flight.len() > MAX_FRAMES_IN_FLIGHT {
        let Some(oldest) = backend.frames_in_flight.pop_front() else {
            break;
        };
        if !backend.context.poll_until(&oldest, PACING_TIMEOUT) {
            warn!(
                "bevy_tile_deferred: the GPU did not finish a frame within {PACING_TIMEOUT:?}; \
                 not waiting for it any longer"
            );
        }
    }
    in_flight
}
