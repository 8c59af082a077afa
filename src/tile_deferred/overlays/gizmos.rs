//! Draws that other render plugins queue for a tile camera in Bevy's `Transparent3d` phase
//! (Bevy's 3D gizmos above all), meshes of custom materials, and Bevy's wireframes (bevy_pbr's `Wireframe3d` phase, which
//! `Core3d` draws after its main pass: [`has_wireframes`]). The tile path draws them after its
//! pass where it can, and reports them where it cannot.
//!
//! bevy_gizmos_render 0.19.1 (`pipeline_3d.rs`, `queue_line_gizmos_3d` and
//! `queue_line_joint_gizmos_3d`) queues every gizmo group with lines this frame, and every
//! retained `Gizmo`, as `Transparent3d` items of each 3D view whose render layers they
//! intersect (sort distance 0: after every transparent mesh in front of the camera), and
//! `Core3d`'s main transparent pass draws them into the camera's main texture, depth-tested
//! (and depth-writing) against the view's depth texture. A tile camera keeps `Camera3d`, so
//! Bevy prepares its `Transparent3d` phase and the gizmo plugin fills it. The crate does not
//! need to compile bevy_gizmos to see this: an item of a tile camera's phase whose draw function
//! is not bevy_pbr's `DrawMaterial` (the meshes, which the tile path draws itself or
//! `find_missing` (`missing.rs`) reports mesh by mesh) is something another plugin draws there.
//! Only actual content is found: bevy_gizmos_render queues nothing for a group without lines, a
//! disabled group, or a view outside the gizmo's render layers.
//!
//! **Drawn.** On a frame with such items, the tile pass ends with a depth export subpass
//! (`plan::names::DEPTH_EXPORT`) that writes the tile depth into Bevy's depth texture of the
//! camera, and [`draw_foreign_transparent`] then runs Bevy's own draw functions for those items
//! (their pipelines, bind groups and blending) in a wgpu pass into the camera's main texture,
//! cleared to transparent, over that depth; the main texture is blended over the output as the
//! other overlays are ([`overlay`](super::composite)). Their traffic is priced apart
//! ([`TileViewReport::gizmo_pass`](crate::tile_deferred::report::TileViewReport::gizmo_pass)); the depth
//! export's store is in the tile frame's own plan.
//!
//! **Custom materials.** Meshes whose material the tile path does not draw (a custom
//! `Material`, an `ExtendedMaterial`, a `StandardMaterial` with a feature the G-buffer lacks)
//! are drawn in the same pass, by Bevy's own material
//! pipelines: the main world lists them ([`TileMaterialsOverTile`](crate::TileMaterialsOverTile)),
//! the camera keeps Bevy's opaque phases with only them in it (`scene::bevy_phases`), and the
//! pass renders the opaque and alpha-mask phases first, then the `Transparent3d` items that are
//! not the tile path's own meshes ([`MaterialsOverTileView::drawn_by_tile_path`]), as `Core3d` orders its passes.
//!
//! **Transmission.** Meshes with `StandardMaterial` transmission are Bevy's too, drawn into the
//! main texture: where `Core3d` runs its transmissive pass, between the opaque and the
//! transparent draws, the pass over the tile frame ends, the main texture is copied into Bevy's
//! transmission texture and the `Transmissive3d` items are drawn over it, as
//! `main_transmissive_pass_3d` does ([`draw_transmissive`]); the transparent draws follow in a
//! pass of their own. With MSAA the main texture copied is the resolve of the pass before, as in
//! `Core3d`, and Bevy's multisampled texture is stored between these passes.
//!
//! **Into the main texture.** Where Bevy post-processes the frame (bloom, tone mapping, FXAA,
//! SMAA, CAS: the tile pass wrote the main texture), all of this is drawn into the main texture
//! as the tile pass left it, before the effects ([`draw_foreign_into_main_texture`]), as
//! `Core3d` draws it: anti-aliased, and on a bloomed HDR camera bloomed and tone mapped by Bevy
//! with the scene. No composite, one pass ([`price_draws_into_main_texture`]); with MSAA, where
//! the tile pass resolved the frame, the pass first writes it into every sample of Bevy's
//! multisampled texture, and resolves into Bevy's other main texture.
//!
//! **HDR.** Bevy tone maps an HDR camera's gizmos and wireframes with the scene. The tile pass
//! then stores its light and Bevy's own tone mapping runs after the draws, from the frame after
//! they first appear ([`ViewsDrawnOver`]).
//!
//! **Reported.** Where the tile path cannot draw them as Bevy does ([`undrawable_reason`]: an
//! HDR camera in an app without Bevy's `TonemappingPlugin`; the unmerged debug tier; MSAA without
//! sample-rate shading; MSAA under `ClearColorConfig::None`; a tiler, which is assumed to end its merged pass at a new depth
//! attachment), the render world counts them per camera each frame ([`count_foreign_draws`])
//! into [`ForeignTransparentDraws`], shared with the main world, where `find_missing` reports
//! them on the camera on the next frame it runs: an `Auto` camera falls back to `Core3d` (which
//! draws them) from the frame after they first appear, a forced tier logs them once.

use super::composite::{self as overlay, OverlayCompositePipeline, OverlayShape, OverlayTarget};
use crate::tile_deferred::{
    camera::{
        DrawsIntoMainTexture, GizmosOverTile, MaterialsOverTileView, PostProcessedAfterTile,
        TileCameraEffects, TileDeferred, TileOutputLoadedAfter,
    },
    report::TileRenderReports,
};
use crate::{
    device::DeviceProfile,
    frame_graph::{
        Access, AttachmentDesc, AttachmentHandle, ClearValue, CompiledFrame, DeviceCaps, Extent,
        Format, FrameGraph, ImportParams, compile_stock_bevy,
    },
    tiers::TierDecision,
};
use bevy::{
    camera::ClearColorConfig,
    core_pipeline::{
        blit::{BlitPipeline, BlitPipelineKey},
        core_3d::{AlphaMask3d, CORE_3D_DEPTH_FORMAT, Opaque3d, Transparent3d},
    },
    ecs::system::SystemParam,
    pbr::{
        DrawMaterial, RenderMaterialInstances, ScreenSpaceTransmission, Transmissive3d,
        ViewTransmissionTexture, check_views_need_specialization,
        wireframe::{Wireframe3d, specialize_wireframes},
    },
    platform::collections::HashMap,
    prelude::*,
    render::{
        Render, RenderApp, RenderSystems,
        camera::{DirtySpecializations, DirtyWireframeSpecializations, ExtractedCamera},
        render_phase::{
            BinnedRenderPhase, DrawFunctions, PhaseItem, SortedRenderPhase, TrackedRenderPass,
            ViewBinnedRenderPhases, ViewSortedRenderPhases,
        },
        render_resource::{
            CachedRenderPipelineId, CompareFunction, DepthBiasState, DepthStencilState, LoadOp,
            Operations, PipelineCache, RenderPassColorAttachment, RenderPassDepthStencilAttachment,
            RenderPassDescriptor, SpecializedRenderPipeline, StencilState, StoreOp,
        },
        renderer::{CurrentView, RenderContext, ViewQuery},
        sync_world::MainEntity,
        view::{ExtractedView, Msaa, ViewDepthTexture, ViewTarget},
    },
};
use std::sync::{Arc, Mutex};

/// What `find_missing` reports on a tile camera whose `Transparent3d` phase holds draws of
/// another render plugin that the tile path cannot draw for it.
pub(crate) const FOREIGN_TRANSPARENT_DRAWS: &str = "draws of Bevy's pipelines over the tile frame (gizmos, wireframes) that the tile path \
     cannot draw";

/// The names of the passes over the tile frame in their priced plan.
pub(crate) const GIZMO_PASS: &str =
    "Bevy's main passes over the tile frame (gizmos, wireframes, custom materials)";
const GIZMO_COMPOSITE: &str = "their composite (over the output)";
const TRANSMISSIVE_PASS: &str = "Bevy's transmissive pass over the tile frame";
const GIZMO_PASS_AFTER_TRANSMISSION: &str = "Bevy's transparent draws after its transmissive pass";

/// Shared by the main and render worlds: per tile camera (main-world entity) whose last rendered
/// frame had draws of Bevy's pipelines over the tile frame that the tile path cannot draw, why
/// it cannot (only such cameras are listed).
#[derive(Resource, Clone, Default)]
pub(crate) struct ForeignTransparentDraws(Arc<Mutex<HashMap<Entity, UndrawableOverTile>>>);

/// Why a camera's draws over the tile frame cannot be drawn, and which it had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UndrawableOverTile {
    pub(crate) why: &'static str,
    /// Gizmos or wireframes (other plugins' draws), not only custom materials, which
    /// `find_missing` lists mesh by mesh.
    pub(crate) other_draws: bool,
}

impl ForeignTransparentDraws {
    /// Why the tile path cannot draw what Bevy would draw over `camera`'s last tile frame, if
    /// it had anything.
    pub(crate) fn undrawable(&self, camera: Entity) -> Option<UndrawableOverTile> {
        self.0
            .lock()
            .ok()
            .and_then(|counts| counts.get(&camera).copied())
    }

    pub(crate) fn replace(&self, counts: HashMap<Entity, UndrawableOverTile>) {
        if let Ok(mut shared) = self.0.lock() {
            *shared = counts;
        }
    }
}

/// Frames a tile view keeps what its draws over the tile frame need (Bevy's MSAA, Bevy's tone
/// mapping of an HDR frame) after its last frame with them, so that gizmos drawn on some frames
/// only do not switch the view's route, reallocate its textures and respecialise its pipelines
/// each time, nor miss the first frame of each return.
const KEEP_ROUTE_FRAMES: u64 = 60;

/// Render world: the tile views that had draws over the tile frame lately (render-world view
/// entity -> the frame they last did), for what their route needs from the next frame on.
///
/// **MSAA.** The tile path owns a tile camera's MSAA: Bevy's view preparation sees `Msaa::Off`
/// (`route::take_over_msaa`) and allocates no multisampled textures. Gizmos, though, are drawn by
/// Bevy's pipelines into Bevy's textures, specialised with the view's `Msaa`, as `Core3d` draws
/// them: so a view with gizmos keeps the tile tier's sample count in Bevy's `Msaa`, and its main
/// and depth textures are multisampled like the tile pass. The first frame with gizmos was
/// queued with `Msaa::Off`; from the next one on they are drawn.
///
/// **HDR.** On an HDR camera Bevy tone maps its gizmos and wireframes with the scene. The tile
/// pass can store its light instead of tone mapping it, for Bevy's own tone mapping to run
/// after the draws (effect `Tonemapping`, `post_process::effects_of`), but extraction chose the
/// frame's route before the render world saw the draws. So an HDR view with gizmos or
/// wireframes takes that route from the next frame on; its first frame with them is drawn
/// without them, as the first on an MSAA camera.
#[derive(Resource, Default)]
pub(crate) struct ViewsDrawnOver {
    /// Bevy's tone mapping can run after an HDR camera's tile pass (set by
    /// `post_process::finish` once the app's plugins are known).
    pub(crate) hdr_tone_mappable: bool,
    frame: u64,
    last_drawn: HashMap<Entity, u64>,
    last_hdr_draws: HashMap<Entity, u64>,
}

impl ViewsDrawnOver {
    fn lately(last: &HashMap<Entity, u64>, view: Entity, frame: u64) -> bool {
        last.get(&view)
            .is_some_and(|&last| frame.saturating_sub(last) <= KEEP_ROUTE_FRAMES)
    }

    /// Whether `view` keeps Bevy's MSAA this frame.
    pub(crate) fn keeps_msaa(&self, view: Entity) -> bool {
        Self::lately(&self.last_drawn, view, self.frame)
    }

    /// Whether `view`, an HDR camera, has Bevy tone map its frame after the tile pass this
    /// frame for its gizmos or wireframes (read in extraction, before the frame's draws are
    /// known).
    pub(crate) fn tone_maps_draws_over_hdr(&self, view: Entity) -> bool {
        Self::lately(&self.last_hdr_draws, view, self.frame)
    }
}

/// Render-world system set, in [`TileDeferredGraph`](crate::TileDeferredGraph), of the system
/// that draws other plugins' `Transparent3d` items (gizmos) over a tile camera, after the tile
/// pass and before the UI and the inspector. It runs only for a view with `GizmosOverTile`.
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileGizmoSystems;

/// Shares the counts between the worlds and counts them each frame in the render world.
pub(crate) fn build(app: &mut App) {
    let counts = ForeignTransparentDraws::default();
    app.insert_resource(counts.clone());
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    render_app
        .insert_resource(counts)
        .init_resource::<ViewsDrawnOver>()
        .add_systems(
            Render,
            (
                // Items are queued in `Queue` and sorted in `PhaseSort`, both before `Prepare`.
                count_foreign_draws.in_set(RenderSystems::Prepare),
                prepare_sample_expand_pipelines.in_set(RenderSystems::Prepare),
                forget_gizmo_views.in_set(RenderSystems::Cleanup),
                respecialize_wireframes_of_changed_views
                    .after(check_views_need_specialization)
                    .before(specialize_wireframes),
            ),
        );
}

/// Has Bevy respecialise a view's wireframes when the view's pipeline key changes, as it does
/// its materials: bevy_pbr 0.19.1 marks such a view in `DirtySpecializations` only, so
/// `specialize_wireframes` keeps pipelines of the old key, and a view whose MSAA changed draws
/// its wireframes with pipelines of the old sample count (a wgpu validation error that ends the
/// app). The tile path changes a view's MSAA as Bevy sees it whenever the camera moves between
/// the tile path and `Core3d` (`route::take_over_msaa`); a game can too, on any camera.
fn respecialize_wireframes_of_changed_views(
    changed: Res<DirtySpecializations>,
    mut wireframes: ResMut<DirtyWireframeSpecializations>,
) {
    wireframes.views.extend(changed.views.iter().copied());
}

/// [`GizmosOverTile`] lasts one frame; views gone are forgotten.
fn forget_gizmo_views(
    mut commands: Commands,
    views: Query<Entity, With<GizmosOverTile>>,
    mut drawn_over: ResMut<ViewsDrawnOver>,
) {
    for view in &views {
        commands
            .entity(view)
            .remove::<(GizmosOverTile, DrawsIntoMainTexture)>();
    }
    let frame = drawn_over.frame;
    let recent = |_: &Entity, last: &mut u64| frame.saturating_sub(*last) <= KEEP_ROUTE_FRAMES;
    drawn_over.last_drawn.retain(recent);
    drawn_over.last_hdr_draws.retain(recent);
    drawn_over.frame += 1;
}

/// Run condition of [`TileGizmoSystems`]: the view being rendered draws gizmos this frame, over
/// its output.
pub(crate) fn view_draws_gizmos(
    view: Res<CurrentView>,
    marked: Query<(), (With<GizmosOverTile>, Without<DrawsIntoMainTexture>)>,
) -> bool {
    marked.contains(view.0)
}

/// Run condition of [`DrawsIntoMainTextureSystems`]: the view being rendered draws gizmos this
/// frame into its main texture, before Bevy's effects.
pub(crate) fn view_draws_into_main_texture(
    view: Res<CurrentView>,
    marked: Query<(), (With<GizmosOverTile>, With<DrawsIntoMainTexture>)>,
) -> bool {
    marked.contains(view.0)
}

/// Render-world system set, in `TileDeferredSystems::PostProcess` before Bevy's effects, of the
/// system that draws Bevy's draws over the tile frame into the main texture of a view whose
/// frame Bevy post-processes (see [`DrawsIntoMainTexture`]).
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DrawsIntoMainTextureSystems;

/// Why the tile path cannot draw Bevy's draws over an HDR camera's tile frame where Bevy's tone
/// mapping does not run after them: Bevy draws them into the HDR main texture and tone maps
/// them with the scene, and the composite would blend them over the tone-mapped output. (With
/// Bevy's tone mapping the tile pass stores the light for it instead, `ViewsDrawnOver`.)
const HDR_UNTONEMAPPED: &str = "an HDR camera in an app without Bevy's TonemappingPlugin: Bevy \
     tone maps its gizmos with the scene";

/// Whether the camera draws over what its output held (`ClearColorConfig::None`): the tile pass
/// then renders without MSAA (`plan::sample_count`), while Bevy's textures keep the camera's
/// samples. (A viewport, or another camera before it on the target, keeps what is outside the
/// render area, and the tile pass keeps its samples: its resolve, Bevy's draws and the
/// composite all stay inside the viewport.) The render world and the main world both ask it of
/// the camera, so they agree on what can be drawn over the frame ([`undrawable_reason`]). Pure.
pub(crate) fn draws_over_output(clear_color: &ClearColorConfig) -> bool {
    matches!(clear_color, ClearColorConfig::None)
}

/// Why the tile path cannot draw other plugins' `Transparent3d` items for a camera, if it
/// cannot, whatever its HDR: what the depth export and the composite need of the device, the
/// tier and the samples.
pub(crate) fn undrawable_reason(
    samples: u32,
    draws_over_output: bool,
    tier: Option<&TierDecision>,
    profile: Option<&DeviceProfile>,
) -> Option<&'static str> {
    if tier.is_some_and(|decision| decision.tier.is_unmerged()) {
        return Some("the unmerged debug tier has no depth export");
    }
    if samples > 1 && draws_over_output {
        // The tile pass renders this camera without MSAA; Bevy's multisampled textures, which
        // its draws over the frame use, would not match the exported depth.
        return Some(
            "MSAA on a camera that draws over its output (ClearColorConfig::None), which the \
             tile pass renders without MSAA",
        );
    }
    let profile = profile?;
    if !profile.frame_graph_caps().depth_change_merges {
        return Some(
            "a tile-based GPU: the depth export's new depth attachment is assumed to end the \
             merged pass",
        );
    }
    let per_sample = profile
        .vulkan
        .as_ref()
        .is_some_and(|vk| vk.sample_rate_shading);
    (samples > 1 && !per_sample)
        .then_some("MSAA without sample-rate shading: the depth export writes every sample")
}

/// Whether `view`'s `Transparent3d` phase holds items that are not bevy_pbr's mesh draws
/// (gizmos): the tile path draws them after its pass, or the camera falls back.
pub(crate) fn has_foreign_transparent_draws(
    view: &ExtractedView,
    phases: Option<&ViewSortedRenderPhases<Transparent3d>>,
    draw_functions: Option<&DrawFunctions<Transparent3d>>,
) -> bool {
    let (Some(phases), Some(draw_functions)) = (phases, draw_functions) else {
        return false;
    };
    let mesh_draw = draw_functions.read().get_id::<DrawMaterial>();
    phases.get(&view.retained_view_entity).is_some_and(|phase| {
        phase
            .items
            .values()
            .any(|item| Some(item.draw_function) != mesh_draw)
    })
}

/// Whether `view` has wireframes this frame: bevy_pbr's `WireframePlugin` prepares a
/// `Wireframe3d` phase for every 3D camera, tile cameras included, and queues into it the meshes
/// in view with `Wireframe` (or every one without `NoWireframe` under
/// `WireframeConfig::global`). `Core3d` draws the phase after its main pass (`wireframe_3d`); on
/// a tile camera [`draw_foreign_transparent`] draws it after the gizmos, over the tile depth.
pub(crate) fn has_wireframes(
    view: &ExtractedView,
    phases: Option<&ViewBinnedRenderPhases<Wireframe3d>>,
) -> bool {
    phases
        .and_then(|phases| phases.get(&view.retained_view_entity))
        .is_some_and(|phase| !phase.is_empty())
}

/// What the render world reads to know whether a view has draws of Bevy's own pipelines over
/// the tile frame this frame: other plugins' `Transparent3d` items (gizmos) and wireframes.
#[derive(SystemParam)]
pub(crate) struct DrawsOverTile<'w> {
    transparent_phases: Option<Res<'w, ViewSortedRenderPhases<Transparent3d>>>,
    transparent_draws: Option<Res<'w, DrawFunctions<Transparent3d>>>,
    wireframe_phases: Option<Res<'w, ViewBinnedRenderPhases<Wireframe3d>>>,
}

impl DrawsOverTile<'_> {
    /// Whether `view` has gizmos or wireframes this frame.
    pub(crate) fn any(&self, view: &ExtractedView) -> bool {
        has_foreign_transparent_draws(
            view,
            self.transparent_phases.as_deref(),
            self.transparent_draws.as_deref(),
        ) || has_wireframes(view, self.wireframe_phases.as_deref())
    }
}

/// The `Transparent3d` items of the view that the tile path does not draw (gizmos, other
/// plugins' draws, the meshes Bevy draws over the tile frame), then its wireframes, as `Core3d`
/// draws them after its opaque and transmissive passes.
fn draw_transparent<'w>(
    world: &'w World,
    pass: &mut TrackedRenderPass<'w>,
    (view_entity, phase, wireframes): (
        Entity,
        &SortedRenderPhase<Transparent3d>,
        Option<&BinnedRenderPhase<Wireframe3d>>,
    ),
    materials_over_tile: Option<&MaterialsOverTileView>,
) {
    let instances = world.get_resource::<RenderMaterialInstances>();
    let draw_functions = world.resource::<DrawFunctions<Transparent3d>>();
    let mut draw_functions = draw_functions.write();
    draw_functions.prepare(world);
    let mesh_draw = draw_functions.get_id::<DrawMaterial>();
    for item in phase.items.values() {
        // Bevy's mesh draws: those of the meshes the tile path draws itself are skipped.
        let drawn_by_tile = Some(item.draw_function) == mesh_draw
            && materials_over_tile.is_none_or(|over_tile| {
                instances.is_some_and(|i| over_tile.drawn_by_tile_path(i, item.main_entity()))
            });
        if drawn_by_tile || item.batch_range().is_empty() {
            continue;
        }
        let Some(draw) = draw_functions.get_mut(item.draw_function) else {
            continue;
        };
        if let Err(error) = draw.draw(world, pass, view_entity, item) {
            error!("bevy_tile_deferred: drawing a gizmo over a tile camera failed: {error:?}");
        }
    }
    drop(draw_functions);
    // Then the wireframes, as `Core3d` draws them after its main pass (bevy_pbr 0.19.1
    // wireframe.rs `wireframe_3d`: the same attachments, depth-tested against the scene).
    if let Some(wireframes) = wireframes
        && let Err(error) = wireframes.render(pass, world, view_entity)
    {
        error!("bevy_tile_deferred: drawing wireframes over a tile camera failed: {error:?}");
    }
}

/// What Bevy's transmissive pass draws over a view's tile frame: its `Transmissive3d` items,
/// the texture they read a copy of the frame from (none with 0 steps), and the steps.
struct TransmissiveDraws<'w> {
    phase: &'w SortedRenderPhase<Transmissive3d>,
    texture: Option<&'w ViewTransmissionTexture>,
    steps: usize,
}

impl TransmissiveDraws<'_> {
    /// The groups the items are drawn in, one per step (one without steps).
    fn groups(&self) -> usize {
        match self.texture {
            Some(_) if self.steps > 0 => self.steps.min(self.phase.items.len()),
            _ => 1,
        }
    }

    /// The copies of the main texture into the transmission texture: one per group, none
    /// without steps.
    fn copies(&self) -> u32 {
        if self.texture.is_some() && self.steps > 0 {
            u32::try_from(self.groups()).unwrap_or(u32::MAX)
        } else {
            0
        }
    }
}

/// The view's transmissive draws, if it has any.
fn transmissive_draws<'w>(
    world: &'w World,
    view_entity: Entity,
    extracted: &ExtractedView,
) -> Option<TransmissiveDraws<'w>> {
    let phase = world
        .get_resource::<ViewSortedRenderPhases<Transmissive3d>>()?
        .get(&extracted.retained_view_entity)
        .filter(|phase| !phase.items.is_empty())?;
    let steps = world.get::<ScreenSpaceTransmission>(view_entity)?.steps;
    Some(TransmissiveDraws {
        phase,
        texture: world.get::<ViewTransmissionTexture>(view_entity),
        steps,
    })
}

/// Bevy's transmissive pass over the main texture the tile pass wrote (bevy_pbr 0.19.1
/// `main_transmissive_pass_3d`): its items back to front in `steps` groups, each after a copy of
/// the main texture into the transmission texture they sample, in passes loading `color` (the
/// main texture, or with MSAA Bevy's multisampled texture resolving into it) and the depth. Only
/// the meshes Bevy draws over the tile frame are drawn.
fn draw_transmissive(
    world: &World,
    ctx: &mut RenderContext,
    (view_entity, target, camera): (Entity, &ViewTarget, &ExtractedCamera),
    draws: &TransmissiveDraws,
    over_tile: &MaterialsOverTileView,
    (color, depth): (
        &RenderPassColorAttachment,
        &RenderPassDepthStencilAttachment,
    ),
    last: Option<&RenderPassColorAttachment>,
) {
    let Some(size) = camera.physical_target_size else {
        return;
    };
    let items = &draws.phase.items;
    let groups = draws.groups();
    let draw_functions = world.resource::<DrawFunctions<Transmissive3d>>();
    for group in 0..groups {
        let range = items.len() * group / groups..items.len() * (group + 1) / groups;
        if let Some(texture) = draws.texture.filter(|_| draws.steps > 0) {
            ctx.command_encoder().copy_texture_to_texture(
                target.main_texture().as_image_copy(),
                texture.texture.as_image_copy(),
                wgpu::Extent3d {
                    width: size.x,
                    height: size.y,
                    depth_or_array_layers: 1,
                },
            );
        }
        // With MSAA each group's samples resolve into the main texture for the next group's
        // copy; the last group's only where no transparent draws follow to resolve them
        // (`last`, the attachment of the frame's last pass).
        let mut color = color.clone();
        if group + 1 == groups {
            match last {
                Some(last) => color = last.clone(),
                None => color.resolve_target = None,
            }
        }
        let mut pass = ctx.begin_tracked_render_pass(RenderPassDescriptor {
            label: Some("tile_deferred_transmissive"),
            color_attachments: &[Some(color)],
            depth_stencil_attachment: Some(depth.clone()),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        if let Some(viewport) = &camera.viewport {
            pass.set_camera_viewport(viewport);
        }
        let mut draw_functions = draw_functions.write();
        draw_functions.prepare(world);
        for item in items.values().skip(range.start).take(range.len()) {
            if !over_tile.draws(item.main_entity().id()) || item.batch_range().is_empty() {
                continue;
            }
            let Some(draw) = draw_functions.get_mut(item.draw_function()) else {
                continue;
            };
            if let Err(error) = draw.draw(world, &mut pass, view_entity, item) {
                error!(
                    "bevy_tile_deferred: drawing a transmissive mesh over a tile camera failed: \
                     {error:?}"
                );
            }
        }
    }
}

/// Render world, on a tile view with Bevy's MSAA: the pipeline that writes the main texture into
/// every sample of Bevy's multisampled texture (Bevy's blit at the view's sample count, in a
/// pass with Bevy's depth texture, which it leaves alone), for the draws over a post-processed
/// frame ([`draw_foreign_into_main_texture`]).
#[derive(Component)]
pub(crate) struct SampleExpandPipeline(CachedRenderPipelineId);

/// Prepares [`SampleExpandPipeline`] for the tile views with Bevy's MSAA whose frame Bevy
/// post-processes (one pipeline per main-texture format and sample count, cached here).
fn prepare_sample_expand_pipelines(
    mut commands: Commands,
    views: Query<(Entity, &ViewTarget), With<TileCameraEffects>>,
    pipeline_cache: Res<PipelineCache>,
    blit: Option<Res<BlitPipeline>>,
    mut cached: Local<HashMap<(wgpu::TextureFormat, u32), CachedRenderPipelineId>>,
) {
    let Some(blit) = blit else {
        return;
    };
    for (entity, target) in &views {
        let Some(samples) = target.sampled_main_texture() else {
            commands.entity(entity).remove::<SampleExpandPipeline>();
            continue;
        };
        let key = (target.main_texture_format(), samples.sample_count());
        let id = *cached.entry(key).or_insert_with(|| {
            let mut descriptor = blit.specialize(BlitPipelineKey {
                target_format: key.0,
                blend_state: None,
                samples: key.1,
                source_space: None,
            });
            descriptor.label = Some("tile_deferred_sample_expand".into());
            descriptor.depth_stencil = Some(DepthStencilState {
                format: CORE_3D_DEPTH_FORMAT,
                depth_write_enabled: Some(false),
                depth_compare: Some(CompareFunction::Always),
                stencil: StencilState::default(),
                bias: DepthBiasState::default(),
            });
            pipeline_cache.queue_render_pipeline(descriptor)
        });
        commands.entity(entity).insert(SampleExpandPipeline(id));
    }
}

/// What [`count_foreign_draws`] reads of a view.
type ForeignDrawsView = (
    Entity,
    &'static MainEntity,
    &'static ExtractedView,
    &'static ExtractedCamera,
    Option<&'static Msaa>,
    Option<&'static TierDecision>,
    Has<MaterialsOverTileView>,
    Option<&'static TileCameraEffects>,
);

/// What [`draw_foreign_transparent`] reads of its view.
type GizmoView = (
    &'static ExtractedView,
    &'static ExtractedCamera,
    &'static ViewTarget,
    &'static ViewDepthTexture,
    &'static MainEntity,
    (
        Option<&'static OverlayCompositePipeline>,
        Option<&'static SampleExpandPipeline>,
    ),
    Option<&'static MaterialsOverTileView>,
);

/// For every camera with [`TileDeferred`] (on the tile schedule or fallen back to `Core3d`, so
/// that a fallback lasts while the gizmos do): the `Transparent3d` items of its view that are not
/// bevy_pbr's mesh draws. A view on the tile schedule that can draw them gets
/// [`GizmosOverTile`] (and [`TileOutputLoadedAfter`]: the composite loads the output); the
/// others' counts go to the main world.
fn count_foreign_draws(
    mut commands: Commands,
    views: Query<ForeignDrawsView, With<TileDeferred>>,
    draws: DrawsOverTile,
    profile: Option<Res<DeviceProfile>>,
    shared: Res<ForeignTransparentDraws>,
    mut drawn_over: ResMut<ViewsDrawnOver>,
) {
    let frame = drawn_over.frame;
    let hdr_tone_mappable = drawn_over.hdr_tone_mappable;
    let mut counts = HashMap::default();
    for (entity, main_entity, view, camera, msaa, tier, materials_over_tile, effects) in &views {
        let other_draws = draws.any(view);
        if !materials_over_tile && !other_draws {
            continue;
        }
        // The samples the tile pass renders with; the same as the camera's MSAA for a view
        // that keeps Bevy's MSAA (see `ViewsDrawnOver`). A camera fallen back to `Core3d` keeps
        // its own MSAA there, and returns to the tile path with it.
        let samples = match tier {
            Some(decision) if decision.tier.is_tile() => decision.tier.tile_samples(),
            Some(_) => msaa.map_or(1, Msaa::samples),
            None => 1,
        };
        let device_reason = undrawable_reason(
            samples,
            draws_over_output(&camera.clear_color),
            tier,
            profile.as_deref(),
        );
        let drawable_but_for_hdr = device_reason.is_none();
        // Gizmos and wireframes on an HDR camera: Bevy tone maps the frame after them from the
        // next frame on, as long as they last (see `ViewsDrawnOver`).
        let hdr_route = camera.hdr && other_draws && hdr_tone_mappable;
        if hdr_route && drawable_but_for_hdr {
            drawn_over.last_hdr_draws.insert(entity, frame);
        }
        // Where Bevy post-processes the frame, they go into the main texture before the
        // effects, as in `Core3d` (with MSAA: over its samples, see `draw_over_tile`).
        let into_main_texture = effects.is_some();
        // An HDR camera's are tone mapped by Bevy with the scene: drawn where Bevy tone maps
        // the main texture after them.
        let hdr_unmapped = camera.hdr
            && !(into_main_texture && effects.is_some_and(|effects| effects.tone_mapped_by_bevy));
        if hdr_unmapped && hdr_route && drawable_but_for_hdr {
            // Their first frame: extraction chose to tone map in the tile pass before they
            // were seen. Drawn from the next frame on (with Bevy's MSAA kept for them), neither
            // drawn nor reported now.
            drawn_over.last_drawn.insert(entity, frame);
            continue;
        }
        if let Some(why) = hdr_unmapped.then_some(HDR_UNTONEMAPPED).or(device_reason) {
            counts.insert(main_entity.id(), UndrawableOverTile { why, other_draws });
            continue;
        }
        drawn_over.last_drawn.insert(entity, frame);
        // Drawn once Bevy's textures and the gizmo pipelines have the tile pass's samples (the
        // frame after the gizmos appear on an MSAA camera).
        if crate::tile_deferred::camera::is_tile_schedule(camera.schedule)
            && msaa.map_or(1, Msaa::samples) == samples
        {
            let mut view = commands.entity(entity);
            view.insert(GizmosOverTile);
            if into_main_texture {
                view.insert(DrawsIntoMainTexture);
            } else {
                view.insert(TileOutputLoadedAfter);
            }
        }
    }
    shared.replace(counts);
}

/// Draws the view's `Transparent3d` items that are not meshes (gizmos) with their own draw
/// functions, as `main_transparent_pass_3d` does, into the camera's main texture cleared to
/// transparent (with MSAA: its multisampled texture, resolved), depth-tested against Bevy's
/// depth texture, which the tile pass exported its depth into; then blends the main texture over
/// the output and prices the passes.
pub(crate) fn draw_foreign_transparent(
    world: &World,
    view: ViewQuery<GizmoView>,
    phases: Res<ViewSortedRenderPhases<Transparent3d>>,
    wireframe_phases: Option<Res<ViewBinnedRenderPhases<Wireframe3d>>>,
    reports: Res<TileRenderReports>,
    ctx: RenderContext,
) {
    draw_over_tile(
        world,
        view,
        (&phases, wireframe_phases.as_deref()),
        &reports,
        ctx,
        false,
    );
}

/// [`draw_foreign_transparent`] for a view whose frame Bevy post-processes
/// ([`DrawsIntoMainTexture`]): the same draws, into the main texture the tile pass wrote
/// (loaded; with MSAA written into Bevy's multisampled texture first), before Bevy's effects, as
/// `Core3d` draws them.
pub(crate) fn draw_foreign_into_main_texture(
    world: &World,
    view: ViewQuery<GizmoView>,
    phases: Res<ViewSortedRenderPhases<Transparent3d>>,
    wireframe_phases: Option<Res<ViewBinnedRenderPhases<Wireframe3d>>>,
    reports: Res<TileRenderReports>,
    ctx: RenderContext,
) {
    draw_over_tile(
        world,
        view,
        (&phases, wireframe_phases.as_deref()),
        &reports,
        ctx,
        true,
    );
}

/// The colour attachment of each pass that draws over the tile frame into Bevy's texture
/// (with MSAA, Bevy's multisampled texture, resolved into the main texture).
struct PassColors<'a> {
    /// The first pass's: it clears Bevy's texture, or loads the main texture the tile pass
    /// wrote (1x, post-processed).
    first: RenderPassColorAttachment<'a>,
    /// The passes between (the transmissive groups): they load what the pass before drew and
    /// store it for the next.
    between: RenderPassColorAttachment<'a>,
    /// The frame's last pass (the transparent draws after the transmissive ones): it loads what
    /// the pass before drew and keeps it only at 1x.
    last: RenderPassColorAttachment<'a>,
}

impl<'a> PassColors<'a> {
    /// From the first pass's attachment (its ops aside), whether the first pass loads the main
    /// texture, and whether a later pass loads what it draws.
    fn new(
        first: RenderPassColorAttachment<'a>,
        loads_main_texture: bool,
        loaded_later: bool,
    ) -> Self {
        // With MSAA the passes resolve Bevy's multisampled texture into the main texture, which
        // is all that is read after them: the samples are stored only where a later pass loads
        // them (a RenderDoc capture of `custom_material` at 4x showed them stored, 14.75 MB a
        // 720p frame the price did not count).
        let resolves = first.resolve_target.is_some();
        let samples_store = |loaded_later: bool| {
            if resolves && !loaded_later {
                StoreOp::Discard
            } else {
                StoreOp::Store
            }
        };
        let loaded = |store| Operations {
            load: LoadOp::Load,
            store,
        };
        let between = RenderPassColorAttachment {
            ops: loaded(StoreOp::Store),
            ..first.clone()
        };
        let last = RenderPassColorAttachment {
            ops: loaded(samples_store(false)),
            ..first.clone()
        };
        let first = RenderPassColorAttachment {
            ops: Operations {
                load: if loads_main_texture {
                    LoadOp::Load
                } else {
                    LoadOp::Clear(wgpu::Color::TRANSPARENT)
                },
                store: samples_store(loaded_later),
            },
            ..first
        };
        Self {
            first,
            between,
            last,
        }
    }
}

/// The draws over the tile frame of one view: into the main texture cleared to transparent,
/// then composited over the output, or (`into_main_texture`) into the main texture as the tile
/// pass left it.
fn draw_over_tile(
    world: &World,
    view: ViewQuery<GizmoView>,
    (phases, wireframe_phases): (
        &ViewSortedRenderPhases<Transparent3d>,
        Option<&ViewBinnedRenderPhases<Wireframe3d>>,
    ),
    reports: &TileRenderReports,
    mut ctx: RenderContext,
    into_main_texture: bool,
) {
    let view_entity = view.entity();
    let (extracted, camera, target, depth, main_entity, (composite, expand), materials_over_tile) =
        view.into_inner();
    let Some(phase) = phases.get(&extracted.retained_view_entity) else {
        return;
    };
    let wireframes = wireframe_phases
        .and_then(|phases| phases.get(&extracted.retained_view_entity))
        .filter(|phase| !phase.is_empty());
    // Into the main texture with MSAA: the tile pass resolved the frame, which Bevy's
    // multisampled pipelines cannot draw into. So the pass writes the frame into every sample
    // of Bevy's multisampled texture first, Bevy's draws go over those samples as in `Core3d`
    // (opaque draws replace them whatever alpha they write, blended ones blend per sample), and
    // the samples resolve into Bevy's other main texture, which becomes the main texture.
    let expand = match (into_main_texture, target.sampled_main_texture_view()) {
        (true, Some(samples)) => {
            let pipeline_cache = world.resource::<PipelineCache>();
            // Not before the pipeline is ready: the frame would be lost.
            let Some(pipeline) =
                expand.and_then(|expand| pipeline_cache.get_render_pipeline(expand.0))
            else {
                return;
            };
            let write = target.post_process_write();
            let bind_group = world
                .resource::<bevy::core_pipeline::blit::BlitPipeline>()
                .create_bind_group(ctx.render_device(), write.source, pipeline_cache);
            Some((samples, write.destination, pipeline, bind_group))
        }
        _ => None,
    };
    let color = match &expand {
        Some((samples, destination, ..)) => RenderPassColorAttachment {
            view: samples,
            depth_slice: None,
            resolve_target: Some(destination),
            ops: Operations::default(),
        },
        None if into_main_texture => target.get_unsampled_color_attachment(),
        None => target.get_color_attachment(),
    };
    let loads_main_texture = into_main_texture && expand.is_none();
    // Meshes with `StandardMaterial` transmission, into the main texture: Bevy's transmissive
    // pass runs between the opaque and the transparent draws, as in `Core3d`, and copies the
    // main texture (with MSAA, the resolve the pass below writes, as `Core3d`'s opaque pass
    // resolves into it).
    let transmissive = transmissive_draws(world, view_entity, extracted)
        .filter(|_| into_main_texture && materials_over_tile.is_some_and(|m| m.transmissive()));
    let color = PassColors::new(color, loads_main_texture, transmissive.is_some());
    // Stored, as Bevy's transparent pass stores it: a discarded texture would be zero-filled by
    // wgpu before the next frame's gizmo pass loads it (the depth export's write is invisible to
    // wgpu).
    let depth_attachment = RenderPassDepthStencilAttachment {
        view: depth.view(),
        depth_ops: Some(Operations {
            load: LoadOp::Load,
            store: StoreOp::Store,
        }),
        stencil_ops: None,
    };
    {
        let mut pass = ctx.begin_tracked_render_pass(RenderPassDescriptor {
            label: Some("tile_deferred_gizmos"),
            color_attachments: &[Some(color.first)],
            depth_stencil_attachment: Some(depth_attachment.clone()),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        if let Some((_, _, pipeline, bind_group)) = &expand {
            // Over the whole texture, texel for texel, before the camera's viewport is set.
            pass.set_render_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.draw(0..3, 0..1);
        }
        if let Some(viewport) = &camera.viewport {
            pass.set_camera_viewport(viewport);
        }
        // The meshes the tile path does not draw, first, as `Core3d` draws its opaque and
        // alpha-masked phases before the transparent one: Bevy's phases of this view hold only
        // them (`scene::bevy_phases`).
        if materials_over_tile.is_some() {
            render_binned::<Opaque3d>(world, &mut pass, view_entity, extracted);
            render_binned::<AlphaMask3d>(world, &mut pass, view_entity, extracted);
        }
        if transmissive.is_none() {
            draw_transparent(
                world,
                &mut pass,
                (view_entity, phase, wireframes),
                materials_over_tile,
            );
        }
    }
    // (Only with meshes over the tile frame, `transmissive` above.) The transparent draws after
    // them run where there are any, as `Core3d` skips an empty transparent phase (a RenderDoc
    // capture at 4x showed 47.9 MB a 720p frame moved by the empty pass).
    let transparent_after = wireframes.is_some() || !phase.items.is_empty();
    if let (Some(transmissive), Some(over_tile)) = (&transmissive, materials_over_tile) {
        draw_transmissive(
            world,
            &mut ctx,
            (view_entity, target, camera),
            transmissive,
            over_tile,
            (&color.between, &depth_attachment),
            (!transparent_after).then_some(&color.last),
        );
        if transparent_after {
            let mut pass = ctx.begin_tracked_render_pass(RenderPassDescriptor {
                label: Some("tile_deferred_gizmos_after_transmission"),
                color_attachments: &[Some(color.last)],
                depth_stencil_attachment: Some(depth_attachment),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            if let Some(viewport) = &camera.viewport {
                pass.set_camera_viewport(viewport);
            }
            draw_transparent(
                world,
                &mut pass,
                (view_entity, phase, wireframes),
                materials_over_tile,
            );
        }
    }
    if into_main_texture {
        let post_processed = world.get::<PostProcessedAfterTile>(view_entity).is_some();
        let Some(shape) = OverlayShape::of(target, camera, post_processed) else {
            return;
        };
        let samples = target
            .sampled_main_texture()
            .map_or(1, |texture| texture.sample_count());
        let transmission = transmissive.as_ref().map(|draws| TransmissionPasses {
            copies: draws.copies(),
            transparent_after,
        });
        let priced =
            price_draws_into_main_texture(shape.extent, samples, shape.main_format, transmission);
        reports.amend(main_entity.id(), |report| report.gizmo_pass = priced);
        return;
    }
    let Some(composite) = composite else {
        return;
    };
    overlay::composite_main_texture(
        target,
        camera,
        composite.0,
        world.resource::<PipelineCache>(),
        world.resource::<BlitPipeline>(),
        &mut ctx,
        "tile_deferred_gizmo_composite",
    );
    let post_processed = world.get::<PostProcessedAfterTile>(view_entity).is_some();
    let Some(shape) = OverlayShape::of(target, camera, post_processed) else {
        return;
    };
    let priced = price_gizmos(
        shape.extent,
        // The gizmos' samples: the multisampled main texture's, where the view has one.
        target
            .sampled_main_texture()
            .map_or(1, |texture| texture.sample_count()),
        shape.main_format,
        shape.output_format,
        shape.target,
    );
    reports.amend(main_entity.id(), |report| report.gizmo_pass = priced);
}

/// Draws the view's `P` phase (Bevy's opaque or alpha-masked meshes), if it has one.
fn render_binned<'w, P: bevy::render::render_phase::BinnedPhaseItem>(
    world: &'w World,
    pass: &mut bevy::render::render_phase::TrackedRenderPass<'w>,
    view_entity: Entity,
    view: &ExtractedView,
) {
    let Some(phase) = world
        .get_resource::<ViewBinnedRenderPhases<P>>()
        .and_then(|phases| phases.get(&view.retained_view_entity))
        .filter(|phase| !phase.is_empty())
    else {
        return;
    };
    if let Err(error) = phase.render(pass, world, view_entity) {
        error!("bevy_tile_deferred: drawing Bevy's materials over a tile camera failed: {error:?}");
    }
}

/// The gizmo passes over a tile camera, priced with the stock-Bevy model (wgpu passes store what
/// they write): Bevy's depth texture (`samples`, written by the tile pass's depth export) loaded
/// and stored by the gizmo pass, which clears the main texture (`main_format`; with MSAA its
/// multisampled texture, resolved into it) and draws into it; the main texture then sampled and
/// blended over the output (loaded and stored); on a window, plus the empty pass that stores the
/// output for wgpu. None if the graph does not compile (it always does for these formats).
pub(crate) fn price_gizmos(
    extent: Extent,
    samples: u32,
    main_format: Format,
    output_format: Format,
    target: OverlayTarget,
) -> Option<CompiledFrame> {
    let mut g = FrameGraph::new(extent);
    let kept = ImportParams {
        contents_needed: true,
        needed_after_frame: true,
        clear_on_first_use: false,
        discard_on_last_use: false,
    };
    let mut depth = g.import_attachment(
        crate::tile_deferred::plan::names::VIEW_DEPTH,
        AttachmentDesc::new(Format::Depth32Float).with_samples(samples),
        kept,
    );
    let mut main = g.import_attachment(
        "main_texture",
        AttachmentDesc::new(main_format),
        ImportParams {
            contents_needed: false,
            ..kept
        },
    );
    let transparent = Some(ClearValue::BLACK);
    if samples > 1 {
        let mut sampled = g.create_attachment(
            "main_texture_samples",
            AttachmentDesc::new(main_format).with_samples(samples),
        );
        g.add_raster_pass(GIZMO_PASS)
            .color(&mut sampled, Access::Write, transparent)
            .depth(&mut depth, Access::ReadWrite, None)
            .resolve(&sampled, &mut main)
            .finish()
            .ok()?;
    } else {
        g.add_raster_pass(GIZMO_PASS)
            .color(&mut main, Access::Write, transparent)
            .depth(&mut depth, Access::ReadWrite, None)
            .finish()
            .ok()?;
    }
    let mut output = g.import_attachment(
        crate::tile_deferred::plan::names::OUTPUT,
        AttachmentDesc::new(output_format),
        kept,
    );
    if target == OverlayTarget::Window {
        g.add_raster_pass("output written for wgpu")
            .color(&mut output, Access::WriteAll, None)
            .finish()
            .ok()?;
    }
    g.add_raster_pass(GIZMO_COMPOSITE)
        .sample(&main)
        .color(&mut output, Access::Write, None)
        .finish()
        .ok()?;
    compile_stock_bevy(&g, &DeviceCaps::desktop()).ok()
}

/// The passes that draw over the tile frame into the main texture before Bevy's effects
/// ([`DrawsIntoMainTexture`]), priced with the stock-Bevy model: Bevy's depth texture (written
/// by the tile pass's depth export, `samples` per pixel) loaded and stored; at 1x the main
/// texture (`main_format`, written by the tile pass) loaded and stored; with MSAA the main
/// texture sampled into Bevy's multisampled texture, which resolves on tile into the other main
/// texture (stored); then, with `transmission_copies`, Bevy's transmissive pass
/// ([`price_transmission`]). None if the graph does not compile (it always does for these
/// formats).
pub(crate) fn price_draws_into_main_texture(
    extent: Extent,
    samples: u32,
    main_format: Format,
    transmission: Option<TransmissionPasses>,
) -> Option<CompiledFrame> {
    let mut g = FrameGraph::new(extent);
    let kept = ImportParams {
        contents_needed: true,
        needed_after_frame: true,
        clear_on_first_use: false,
        discard_on_last_use: false,
    };
    let mut depth = g.import_attachment(
        crate::tile_deferred::plan::names::VIEW_DEPTH,
        AttachmentDesc::new(Format::Depth32Float).with_samples(samples),
        kept,
    );
    let mut main = g.import_attachment("main_texture", AttachmentDesc::new(main_format), kept);
    if samples == 1 {
        g.add_raster_pass(GIZMO_PASS)
            .color(&mut main, Access::ReadWrite, None)
            .depth(&mut depth, Access::ReadWrite, None)
            .finish()
            .ok()?;
        price_transmission(
            &mut g,
            (&mut main, main_format),
            None,
            &mut depth,
            transmission,
        )?;
    } else {
        let mut sampled = g.create_attachment(
            "main_texture_samples",
            AttachmentDesc::new(main_format).with_samples(samples),
        );
        // Bevy's other main texture: the main texture from then on.
        let mut other = g.import_attachment(
            "main_texture_other",
            AttachmentDesc::new(main_format),
            ImportParams {
                contents_needed: false,
                ..kept
            },
        );
        g.add_raster_pass(GIZMO_PASS)
            .sample(&main)
            .color(&mut sampled, Access::Write, Some(ClearValue::BLACK))
            .depth(&mut depth, Access::ReadWrite, None)
            .resolve(&sampled, &mut other)
            .finish()
            .ok()?;
        price_transmission(
            &mut g,
            (&mut other, main_format),
            Some(&mut sampled),
            &mut depth,
            transmission,
        )?;
    }
    compile_stock_bevy(&g, &DeviceCaps::desktop()).ok()
}

/// Bevy's transmissive pass over a tile frame, as priced by [`price_draws_into_main_texture`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct TransmissionPasses {
    /// Its copies of the frame into the transmission texture, one per step (none with
    /// `ScreenSpaceTransmission::steps` 0).
    pub(crate) copies: u32,
    /// Transparent draws (or wireframes) follow it, in a pass of their own.
    pub(crate) transparent_after: bool,
}

/// Bevy's transmissive pass in [`price_draws_into_main_texture`], where it runs: per copy,
/// `main` copied into the transmission texture, then a pass over both (without copies, one
/// pass); then, where there are any, the transparent draws in a pass of their own. With MSAA
/// (`samples`) these passes draw into Bevy's multisampled texture, loaded (so stored by the
/// pass before) and resolved into `main`.
fn price_transmission(
    g: &mut FrameGraph,
    (main, main_format): (&mut AttachmentHandle, Format),
    mut samples: Option<&mut AttachmentHandle>,
    depth: &mut AttachmentHandle,
    transmission: Option<TransmissionPasses>,
) -> Option<()> {
    let Some(TransmissionPasses {
        copies,
        transparent_after,
    }) = transmission
    else {
        return Some(());
    };
    // Bevy's transmission texture, where the frame is copied into it.
    let mut copy = (copies > 0).then(|| {
        g.import_attachment(
            "transmission_texture",
            AttachmentDesc::new(main_format),
            ImportParams {
                contents_needed: false,
                needed_after_frame: false,
                clear_on_first_use: false,
                discard_on_last_use: false,
            },
        )
    });
    // Pass names are unique in a graph: numbered where there are several steps.
    let step = |name: &str, step: u32| match copies {
        0 | 1 => name.to_string(),
        _ => format!("{name} (step {} of {copies})", step + 1),
    };
    let passes = (0..copies.max(1))
        .map(Some)
        .chain(transparent_after.then_some(None));
    for transmissive in passes {
        let mut pass = match (transmissive, copy.as_mut()) {
            (Some(n), Some(copy)) => {
                g.add_raster_pass(&step("copy into the transmission texture", n))
                    .sample(main)
                    .color(copy, Access::WriteAll, None)
                    .finish()
                    .ok()?;
                g.add_raster_pass(&step(TRANSMISSIVE_PASS, n)).sample(copy)
            }
            (Some(_), None) => g.add_raster_pass(TRANSMISSIVE_PASS),
            (None, _) => g.add_raster_pass(GIZMO_PASS_AFTER_TRANSMISSION),
        };
        pass = match samples.as_deref_mut() {
            Some(sampled) => pass
                .color(sampled, Access::ReadWrite, None)
                .resolve(sampled, main),
            None => pass.color(main, Access::ReadWrite, None),
        };
        pass.depth(depth, Access::ReadWrite, None).finish().ok()?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bevy's transmissive pass in `copies` steps, with transparent draws after it.
    fn with_glass(copies: u32) -> Option<TransmissionPasses> {
        Some(TransmissionPasses {
            copies,
            transparent_after: true,
        })
    }

    #[test]
    fn draws_into_the_main_texture_are_priced_at_their_samples() {
        let extent = Extent::new(100, 100);
        let pixels = 100 * 100;
        // 1x, an HDR main texture: the depth (4 bytes) and the main texture (8 bytes) loaded
        // and stored by one pass.
        let one = price_draws_into_main_texture(extent, 1, Format::Rgba16Float, None).unwrap();
        assert_eq!(one.render_pass_count(), 1, "{}", one.describe());
        assert_eq!(
            one.cost.bytes(),
            (2 * 4 + 2 * 8) * pixels,
            "{}",
            one.describe()
        );
        // 1x with one transmission step, an LDR main texture: the pass over the frame (depth
        // and main texture loaded and stored), the copy into the transmission texture (read and
        // written), the transmissive pass (the copy sampled, depth and main texture loaded and
        // stored), and the transparent draws after it (the same).
        let glass =
            price_draws_into_main_texture(extent, 1, Format::Rgba8Srgb, with_glass(1)).unwrap();
        assert_eq!(glass.render_pass_count(), 4, "{}", glass.describe());
        assert_eq!(
            glass.cost.bytes(),
            (16 + 8 + 20 + 16) * pixels,
            "{}",
            glass.describe()
        );
        // 4x, one pass: four depth samples loaded and stored, the main texture sampled into
        // the samples, which resolve on tile into the other main texture (stored).
        let four = price_draws_into_main_texture(extent, 4, Format::Rgba16Float, None).unwrap();
        assert_eq!(four.render_pass_count(), 1, "{}", four.describe());
        assert_eq!(
            four.cost.bytes(),
            (2 * 4 * 4 + 8 + 8) * pixels,
            "{}",
            four.describe()
        );
        // 4x with one transmission step, an LDR main texture: the first pass as above, its
        // samples stored (16) for the transmissive pass; the copy (the resolve read, the copy
        // written); the transmissive pass (the copy sampled, depth and samples loaded and
        // stored, no resolve: the next pass's replaces it); the transparent draws (depth and
        // samples loaded, depth stored, the resolve stored, the samples discarded).
        let glass_four =
            price_draws_into_main_texture(extent, 4, Format::Rgba8Srgb, with_glass(1)).unwrap();
        assert_eq!(
            glass_four.render_pass_count(),
            4,
            "{}",
            glass_four.describe()
        );
        assert_eq!(
            glass_four.cost.bytes(),
            ((2 * 16 + 4 + 4 + 16) + 8 + (4 + 2 * 16 + 2 * 16) + (2 * 16 + 16 + 4)) * pixels,
            "{}",
            glass_four.describe()
        );
        // Nothing transparent after it: no pass for the transparent draws; the transmissive
        // pass resolves its samples (the resolve stored) and discards them.
        let alone = TransmissionPasses {
            copies: 1,
            transparent_after: false,
        };
        let alone = price_draws_into_main_texture(extent, 4, Format::Rgba8Srgb, Some(alone));
        let alone = alone.unwrap();
        assert_eq!(alone.render_pass_count(), 3, "{}", alone.describe());
        assert_eq!(
            alone.cost.bytes(),
            ((2 * 16 + 4 + 4 + 16) + 8 + (4 + 16 + 2 * 16 + 4)) * pixels,
            "{}",
            alone.describe()
        );
        // No steps: one transmissive pass, no copy.
        for samples in [1, 4] {
            let none =
                price_draws_into_main_texture(extent, samples, Format::Rgba8Srgb, with_glass(0));
            assert_eq!(
                none.map(|none| none.render_pass_count()),
                Some(3),
                "{samples}x"
            );
        }
        // Two steps: a copy and a transmissive pass each; at 4x the first step's samples
        // resolve for the second's copy.
        for samples in [1, 4] {
            let two =
                price_draws_into_main_texture(extent, samples, Format::Rgba8Srgb, with_glass(2));
            assert_eq!(
                two.map(|two| two.render_pass_count()),
                Some(6),
                "{samples}x"
            );
        }
        // At 4x: as with one step, plus a copy and a transmissive pass whose resolve is stored
        // (4) for the second copy.
        let two =
            price_draws_into_main_texture(extent, 4, Format::Rgba8Srgb, with_glass(2)).unwrap();
        assert_eq!(
            two.cost.bytes(),
            glass_four.cost.bytes() + (8 + 72) * pixels,
            "{}",
            two.describe()
        );
    }

    #[test]
    fn gizmo_passes_load_and_store_the_depth_and_the_output() {
        let extent = Extent::new(100, 100);
        let pixels = 100 * 100;
        // 1x on an image: depth loaded and stored, the main texture cleared and stored, then
        // read, the output loaded and stored.
        let image = price_gizmos(
            extent,
            1,
            Format::Rgba8Srgb,
            Format::Bgra8Srgb,
            OverlayTarget::Image,
        )
        .unwrap();
        assert_eq!(image.render_pass_count(), 2, "{}", image.describe());
        assert_eq!(image.cost.bytes(), 6 * pixels * 4, "{}", image.describe());
        // 4x: four depth samples loaded and stored, the multisampled colour resolved on tile.
        let msaa = price_gizmos(
            extent,
            4,
            Format::Rgba8Srgb,
            Format::Bgra8Srgb,
            OverlayTarget::Image,
        )
        .unwrap();
        assert_eq!(
            msaa.cost.bytes(),
            2 * 4 * pixels * 4 + 4 * pixels * 4,
            "{}",
            msaa.describe()
        );
        // On a window, plus the empty pass that stores the output for wgpu.
        let window = price_gizmos(
            extent,
            1,
            Format::Rgba8Srgb,
            Format::Bgra8Srgb,
            OverlayTarget::Window,
        )
        .unwrap();
        assert_eq!(window.cost.bytes(), 7 * pixels * 4, "{}", window.describe());
    }

    #[test]
    fn gizmos_are_drawn_where_the_depth_export_can_run() {
        use crate::device::{
            DeviceKind, GpuModel, GpuVendor, GraphicsBackend, SampleCounts, VulkanCaps,
        };
        let profile = |vendor_id: u32, name: &str, per_sample: bool| DeviceProfile {
            backend: GraphicsBackend::Vulkan,
            vendor: GpuVendor::classify(vendor_id, name),
            model: GpuModel::parse(name),
            vendor_id,
            device_id: 0,
            device_kind: DeviceKind::Discrete,
            device_name: name.into(),
            driver_name: String::new(),
            driver_info: String::new(),
            driver_version: 0,
            api_version: None,
            max_color_attachments: 8,
            vulkan: Some(VulkanCaps {
                max_color_attachments: 8,
                max_per_stage_input_attachments: 8,
                framebuffer_color_sample_counts: SampleCounts(0b101),
                framebuffer_depth_sample_counts: SampleCounts(0b101),
                sample_rate_shading: per_sample,
                lazily_allocated_memory: false,
                depth_stencil_resolve: None,
                timestamps: None,
                create_renderpass2_supported: true,
                create_renderpass2_enabled: true,
                enabled_extensions: Vec::new(),
            }),
        };
        let lavapipe = profile(0x10005, "llvmpipe (LLVM 15.0.6, 256 bits)", true);
        let nvidia = profile(0x10DE, "NVIDIA H200", true);
        let mali = profile(0x13B5, "Mali-G78", true);
        for device in [&lavapipe, &nvidia] {
            for samples in [1, 4] {
                assert_eq!(undrawable_reason(samples, false, None, Some(device)), None);
            }
        }
        assert!(
            undrawable_reason(1, false, None, Some(&mali))
                .is_some_and(|r| r.contains("tile-based"))
        );
        let no_sample_shading = profile(0x10DE, "NVIDIA H200", false);
        assert_eq!(
            undrawable_reason(1, false, None, Some(&no_sample_shading)),
            None
        );
        assert!(undrawable_reason(4, false, None, Some(&no_sample_shading)).is_some());
        // `ClearColorConfig::None`: at 4x the gizmos are not drawn over the frame (the tile
        // pass renders it at 1x), at 1x they are. A viewport or another camera before it on
        // the target keeps MSAA (`draws_over_output` is false for them).
        assert!(undrawable_reason(4, true, None, Some(&nvidia)).is_some());
        assert_eq!(undrawable_reason(1, true, None, Some(&nvidia)), None);
        assert!(draws_over_output(&ClearColorConfig::None));
        assert!(!draws_over_output(&ClearColorConfig::Default));
        assert!(!draws_over_output(&ClearColorConfig::Custom(
            bevy::color::Color::BLACK
        )));
    }
}
