//! bevy_ui drawn inside the tile render pass (feature `ui`): the view's UI items become quads
//! the tile pass draws in its last subpass ([`TileUiDraws`], `gpu::ui`), and leave Bevy's phase,
//! so that Bevy's UI pass and the crate's clear and composite around it ([`super::ui`]) have
//! nothing to draw. The output is then stored once, by the tile pass.
//!
//! Bevy keeps the buffers it prepares for UI private, so the quads are built here from what it
//! extracted (`ExtractedUiNodes`), in the order it sorted them (the view's `TransparentUi`
//! phase), by a port of its `prepare_uinodes` (bevy_ui_render 0.19.1 lib.rs:1580-1986), in
//! `RenderSystems::PrepareResources`: after the phase is sorted and before Bevy's own prepare
//! systems (`PrepareBindGroups`) read it.
//!
//! The tile pass draws what Bevy's `DrawUi` and `DrawBoxShadows` draw: backgrounds, borders and
//! outlines with their radii, images (atlas, rect, flips), text (glyphs, shadows, decorations,
//! the cursor), viewport nodes, box shadows (`push_box_shadow`, a port of Bevy's
//! `prepare_shadows`), sliced and tiled images (`push_texture_slice`, its `prepare_ui_slices`)
//! and gradients (`push_gradient`, its `prepare_gradient`, from what `super::ui_gradients`
//! extracted), at the camera's MSAA (the `ui` subpass then resolves the multisampled colour, and
//! each quad covers whole pixels, as Bevy's UI drawn at 1x over the resolved image does:
//! `gpu::ui::cover_whole_pixels`). A view whose phase holds anything else (a `UiMaterial`,
//! another plugin's UI draw) has the items below the first of those drawn in the pass, and that
//! one and everything over it
//! drawn by Bevy's UI pass after the tile pass, which keeps the order exact ("over" is
//! associative); a view the `ui` subpass cannot serve yet ([`in_pass_refusal`]) has all of its
//! UI drawn that way. The reason is on the view ([`UiAfterTilePass`]) and in its report.

use super::gizmos::DrawsOverTile;
use super::in_pass::{UiAfterTilePass, ViewShape, in_pass_refusal};
use super::ui_gradients::{self, TileUiGradients, UiGradient};
use crate::tiers::TierDecision;
use crate::tile_deferred::{
    camera::TileDeferred,
    gpu::{
        keys::SamplerKey,
        ui::{NO_BOUNDS, TileUiDraws, UiBatch, UiBatchKind, UiVertex},
    },
};
use bevy::{
    ecs::system::SystemParam,
    image::ImageSampler,
    platform::collections::HashMap,
    prelude::*,
    render::{
        Extract, ExtractSchedule, Render, RenderSystems,
        camera::ExtractedCamera,
        render_asset::RenderAssets,
        render_phase::{DrawFunctionId, DrawFunctions, PhaseItem, ViewSortedRenderPhases},
        render_resource::{DefaultImageSamplerDescriptor, PipelineCache, PipelineDescriptor},
        sync_world::{MainEntity, MainEntityHashMap},
        texture::GpuImage,
        view::{ExtractedView, ViewTarget},
    },
    sprite::{SliceScaleMode, SpriteImageMode, TextureSlicer},
    ui_render::{
        BoxShadowSamples, DrawUi, ExtractedUiItem, ExtractedUiNodes, NodeType, RenderUiSystems,
        TransparentUi, UiAntiAlias, UiCameraView,
        box_shadow::{DrawBoxShadows, ExtractedBoxShadow, ExtractedBoxShadows},
        shader_flags,
        ui_texture_slice_pipeline::{
            DrawUiTextureSlices, ExtractedUiTextureSlice, ExtractedUiTextureSlices,
        },
    },
};

/// Render-world resource: how each UI image of this frame is sampled (its `ImageSampler`, or
/// the app's default), extracted with the UI.
#[derive(Resource, Default)]
pub(super) struct UiImageSamplers(HashMap<AssetId<Image>, SamplerKey>);

/// Installs the in-pass route (from `ui::finish`, once bevy_ui_render has built).
pub(super) fn install(render_app: &mut SubApp) {
    render_app
        .init_resource::<UiImageSamplers>()
        .init_resource::<TileUiGradients>()
        .add_systems(ExtractSchedule, ui_gradients::extract_ui_gradients)
        .add_systems(
            ExtractSchedule,
            extract_ui_image_samplers
                .after(RenderUiSystems::ExtractDebug)
                .after(RenderUiSystems::ExtractTextureSlice)
                .after(RenderUiSystems::ExtractViewportNodes),
        )
        .add_systems(
            Render,
            build_tile_ui.in_set(RenderSystems::PrepareResources),
        );
}

/// The sampler of every image this frame's UI nodes use (extracted after bevy_ui_render's
/// own extraction).
fn extract_ui_image_samplers(
    nodes: Res<ExtractedUiNodes>,
    slices: Res<ExtractedUiTextureSlices>,
    images: Extract<Res<Assets<Image>>>,
    default_sampler: Option<Res<DefaultImageSamplerDescriptor>>,
    mut samplers: ResMut<UiImageSamplers>,
) {
    samplers.0.clear();
    let default = default_sampler.as_deref().map(|d| &d.0);
    let node_images = nodes.uinodes.iter().map(|node| node.image);
    let slice_images = slices.slices.iter().map(|slice| slice.image);
    for image in node_images.chain(slice_images) {
        samplers.0.entry(image).or_insert_with(|| {
            let sampler = images
                .get(image)
                .map_or(&ImageSampler::Default, |image| &image.sampler);
            SamplerKey::for_image(sampler, default)
        });
    }
}

/// What [`build_tile_ui`] reads of a view.
type UiTileView = (
    Entity,
    &'static ExtractedCamera,
    &'static ExtractedView,
    &'static ViewTarget,
    (
        &'static TileDeferred,
        Has<crate::tile_deferred::camera::PostProcessedAfterTile>,
        Has<crate::tile_deferred::camera::MaterialsOverTileView>,
    ),
    Option<&'static TierDecision>,
    Option<&'static UiCameraView>,
    Option<&'static UiAntiAlias>,
    Option<&'static BoxShadowSamples>,
);

/// What [`build_tile_ui`] reads besides the views and the phases: what Bevy extracted and
/// prepared for UI this frame, and the views' `Transparent3d` phases (gizmos).
#[derive(SystemParam)]
pub(super) struct UiSources<'w> {
    draw_functions: Res<'w, DrawFunctions<TransparentUi>>,
    nodes: Res<'w, ExtractedUiNodes>,
    box_shadows: Res<'w, ExtractedBoxShadows>,
    slices: Res<'w, ExtractedUiTextureSlices>,
    pipeline_cache: Res<'w, PipelineCache>,
    images: Res<'w, RenderAssets<GpuImage>>,
    samplers: Res<'w, UiImageSamplers>,
    gradients: Res<'w, TileUiGradients>,
    draws_over_tile: DrawsOverTile<'w>,
}

/// For every tile view with UI items this frame: their quads into [`TileUiDraws`] and the items
/// out of Bevy's phase, or (where the pass cannot draw them) [`UiAfterTilePass`] with why.
pub(super) fn build_tile_ui(
    mut commands: Commands,
    views: Query<UiTileView>,
    ui_views: Query<&ExtractedView>,
    mut phases: ResMut<ViewSortedRenderPhases<TransparentUi>>,
    sources: UiSources,
    mut gradient_draws: Local<HashMap<DrawFunctionId, bool>>,
) {
    let UiSources {
        draw_functions,
        nodes,
        box_shadows,
        slices,
        pipeline_cache,
        images,
        samplers,
        gradients,
        draws_over_tile,
    } = sources;
    let draw_ui = draw_functions.read().get_id::<DrawUi>();
    let draw_box_shadows = draw_functions.read().get_id::<DrawBoxShadows>();
    let draw_slices = draw_functions.read().get_id::<DrawUiTextureSlices>();
    // Bevy's gradient draw function is private: its items are known by their pipeline's label,
    // looked up once per draw function.
    let mut is_gradient = |item: &TransparentUi| {
        *gradient_draws
            .entry(item.draw_function)
            .or_insert_with(|| pipeline_label(item, &pipeline_cache) == Some(GRADIENT_PIPELINE))
    };
    let known = |item: &TransparentUi| {
        let draw_function = Some(item.draw_function);
        if draw_function == draw_ui {
            Some(UiItemRef::Node(item.index, item.entity()))
        } else if draw_function == draw_box_shadows {
            Some(UiItemRef::BoxShadow(item.index, item.entity()))
        } else if draw_function == draw_slices {
            Some(UiItemRef::Slice(item.index, item.entity()))
        } else {
            None
        }
    };
    for (
        entity,
        camera,
        view,
        target,
        (settings, post_processed, materials_over_tile),
        tier,
        ui_camera,
        anti_alias,
        shadow_samples,
    ) in &views
    {
        let mut entity_commands = commands.entity(entity);
        // Last frame's draws are gone (`in_pass::forget_last_frames_ui_draws`).
        entity_commands.remove::<UiAfterTilePass>();
        if !crate::tile_deferred::camera::is_tile_schedule(camera.schedule) {
            continue;
        }
        let Some(ui_view) = ui_camera.and_then(|ui| ui_views.get(ui.0).ok()) else {
            continue;
        };
        let Some(phase) = phases.get_mut(&ui_view.retained_view_entity) else {
            continue;
        };
        if phase.items.is_empty() {
            continue;
        }
        let view_shape = ViewShape::of(
            (camera, view, target),
            (settings, post_processed, materials_over_tile),
            tier,
            &draws_over_tile,
        );
        let items: Vec<&TransparentUi> = phase.items.values().collect();
        if let Some(why) = in_pass_refusal(&view_shape) {
            entity_commands.insert(UiAfterTilePass(why.to_string()));
            continue;
        }
        // A node's gradient items have consecutive indices into Bevy's list: an item's place
        // among its node's is its index less the node's first.
        let mut first_gradient: MainEntityHashMap<usize> = MainEntityHashMap::default();
        for item in items.iter().filter(|item| known(item).is_none()) {
            if is_gradient(item) {
                let first = first_gradient
                    .entry(item.main_entity())
                    .or_insert(item.index);
                *first = (*first).min(item.index);
            }
        }
        let kind_of = |item: &TransparentUi| {
            known(item).or_else(|| {
                let node = item.main_entity();
                let place = item.index - first_gradient.get(&node)?;
                // A gradient this extraction did not find goes Bevy's way.
                (place < gradients.of_node(node).len()).then_some(UiItemRef::Gradient(node, place))
            })
        };
        // The subpass draws the items up to the first it cannot; that one and every item over
        // it go after the pass, by Bevy's UI pass, which keeps Bevy's order: the composite
        // blends them over what the pass drew.
        let keys: Vec<UiItemRef> = items.iter().map_while(|item| kind_of(item)).collect();
        let drawn = keys.len();
        if let Some(first) = items.get(drawn) {
            let kind = undrawn_kind(first, &pipeline_cache);
            // The node by its main-world entity, so that the game can find it.
            entity_commands.insert(UiAfterTilePass(format!(
                "{kind} (node {}): it and the {} UI items over it are drawn by Bevy's UI pass \
                 after the tile pass",
                first.main_entity().id(),
                items.len() - drawn - 1
            )));
        }
        if drawn == 0 {
            continue;
        }
        let quads = build_quads(
            &keys,
            (&nodes, &box_shadows.box_shadows, &slices.slices, &gradients),
            |image| images.get(image).map(|gpu| gpu.size_2d().as_vec2()),
            |image| {
                samplers
                    .0
                    .get(&image)
                    .copied()
                    .unwrap_or_else(SamplerKey::bevy_default)
            },
        );
        let world_from_view = ui_view.world_from_view.to_matrix();
        let clip_from_world = ui_view
            .clip_from_world
            .unwrap_or_else(|| ui_view.clip_from_view * world_from_view.inverse());
        entity_commands.insert(TileUiDraws {
            clip_from_world,
            anti_alias: !matches!(anti_alias, Some(UiAntiAlias::Off)),
            shadow_samples: shadow_samples.copied().unwrap_or_default().0,
            quad_vertices: quads.vertices.len(),
            vertices: quads.vertices,
            indices: quads.indices,
            batches: quads.batches,
            items: drawn,
            egui_meshes: 0,
        });
        // Bevy's prepare systems and `ui_pass` see only what is left; next frame's phase starts
        // afresh (`prepare_for_new_frame`).
        phase.items.drain(..drawn);
    }
}

/// The label of Bevy's gradient pipeline (bevy_ui_render 0.19.1 gradient.rs:217).
const GRADIENT_PIPELINE: &str = "ui_gradient_pipeline";

/// The label of a phase item's pipeline.
fn pipeline_label<'a>(item: &TransparentUi, pipeline_cache: &'a PipelineCache) -> Option<&'a str> {
    pipeline_cache
        .pipelines()
        .nth(item.pipeline.id())
        .and_then(|cached| match &cached.descriptor {
            PipelineDescriptor::RenderPipelineDescriptor(descriptor) => descriptor.label.as_deref(),
            PipelineDescriptor::ComputePipelineDescriptor(_) => None,
        })
}

/// What the `ui` subpass cannot draw, named from the label of the phase item's pipeline
/// (Bevy's `ui_material_pipeline`, another plugin's, or a gradient this crate did not find).
fn undrawn_kind(item: &TransparentUi, pipeline_cache: &PipelineCache) -> String {
    match pipeline_label(item, pipeline_cache) {
        Some(GRADIENT_PIPELINE) => "a gradient not found in the extracted UI".to_string(),
        Some("ui_material_pipeline") => "a UiMaterial".to_string(),
        Some(label) => format!("a UI draw of another plugin (pipeline `{label}`)"),
        None => "a UI draw of another plugin".to_string(),
    }
}

/// A phase item the `ui` subpass draws: its index into what Bevy extracted (the UI nodes, the
/// box shadows or the sliced images) and its render entity; for a gradient, its node and its
/// place among the node's gradients ([`TileUiGradients::of_node`]).
#[derive(Clone, Copy, Debug, PartialEq)]
enum UiItemRef {
    Node(usize, Entity),
    BoxShadow(usize, Entity),
    Slice(usize, Entity),
    Gradient(MainEntity, usize),
}

/// One view's quads, in Bevy's order and batches.
#[derive(Default, Debug)]
struct UiQuads {
    vertices: Vec<UiVertex>,
    indices: Vec<u32>,
    batches: Vec<UiBatch>,
}

/// Bevy's `QUAD_VERTEX_POSITIONS` (lib.rs:1473-1478).
const QUAD_VERTEX_POSITIONS: [Vec2; 4] = [
    Vec2::new(-0.5, -0.5),
    Vec2::new(0.5, -0.5),
    Vec2::new(0.5, 0.5),
    Vec2::new(-0.5, 0.5),
];

/// Bevy's `QUAD_INDICES` (lib.rs:1480).
const QUAD_INDICES: [u32; 6] = [0, 2, 3, 0, 1, 2];

/// Bevy's `prepare_uinodes` for one view's `DrawUi` items, each its index into `nodes` and its
/// render entity (lib.rs:1635-1986), its `prepare_shadows` for the box shadows among them
/// ([`push_box_shadow`]) and its `prepare_ui_slices` for the sliced and tiled images
/// ([`push_texture_slice`]): the same batches
/// (a new one where the image changes; untextured items join any), the same items skipped (a
/// stale index, an image not prepared yet), the same clipping, culling, atlas scaling, flips
/// and flags. `image_size`: the prepared image's size, `None` while it is not prepared;
/// `sampler`: how the image is sampled.
fn build_quads(
    items: &[UiItemRef],
    (nodes, shadows, slices, gradients): (
        &ExtractedUiNodes,
        &[ExtractedBoxShadow],
        &[ExtractedUiTextureSlice],
        &TileUiGradients,
    ),
    image_size: impl Fn(AssetId<Image>) -> Option<Vec2>,
    sampler: impl Fn(AssetId<Image>) -> SamplerKey,
) -> UiQuads {
    let mut quads = UiQuads::default();
    let untextured = AssetId::<Image>::default();
    let mut batch_image: Option<AssetId<Image>> = None;
    for &item in items {
        let (index, render_entity) = match item {
            UiItemRef::Node(index, render_entity) => (index, render_entity),
            UiItemRef::BoxShadow(index, render_entity) => {
                if let Some(shadow) = shadows
                    .get(index)
                    .filter(|shadow| shadow.render_entity == render_entity)
                {
                    push_box_shadow(&mut quads, shadow);
                }
                // Bevy draws each shadow on its own: the next node starts a batch.
                batch_image = None;
                continue;
            }
            UiItemRef::Gradient(node, place) => {
                if let Some(gradient) = gradients.of_node(node).get(place) {
                    push_gradient(&mut quads, gradient, gradients.stops(gradient));
                }
                // Gradients have their own pipeline: the next node starts a batch.
                batch_image = None;
                continue;
            }
            UiItemRef::Slice(index, render_entity) => {
                if let Some(slice) = slices
                    .get(index)
                    .filter(|slice| slice.render_entity == render_entity)
                    && let Some(extent) = image_size(slice.image)
                {
                    push_texture_slice(&mut quads, slice, extent, sampler(slice.image));
                }
                // Slices have their own pipeline: the next node starts a batch.
                batch_image = None;
                continue;
            }
        };
        let Some(node) = nodes
            .uinodes
            .get(index)
            .filter(|node| node.render_entity == render_entity)
        else {
            batch_image = None;
            continue;
        };
        let new_batch = batch_image.is_none()
            || quads.batches.is_empty()
            || (batch_image != Some(untextured)
                && node.image != untextured
                && batch_image != Some(node.image));
        if new_batch {
            if image_size(node.image).is_none() {
                continue;
            }
            batch_image = Some(node.image);
            let start = quads.indices.len() as u32;
            quads.batches.push(UiBatch {
                indices: start..start,
                kind: UiBatchKind::Nodes {
                    image: node.image,
                    sampler: sampler(node.image),
                },
            });
        } else if batch_image == Some(untextured) && node.image != untextured {
            if image_size(node.image).is_none() {
                continue;
            }
            batch_image = Some(node.image);
            if let Some(batch) = quads.batches.last_mut() {
                batch.kind = UiBatchKind::Nodes {
                    image: node.image,
                    sampler: sampler(node.image),
                };
            }
        }
        match &node.item {
            ExtractedUiItem::Node {
                atlas_scaling,
                flip_x,
                flip_y,
                border_radius,
                border,
                node_type,
                rect,
                color,
            } => {
                let mut flags = if node.image != untextured {
                    shader_flags::TEXTURED
                } else {
                    shader_flags::UNTEXTURED
                };
                let mut uinode_rect = *rect;
                let rect_size = uinode_rect.size();
                let transform = node.transform;
                let positions = QUAD_VERTEX_POSITIONS
                    .map(|pos| transform.transform_point2(pos * rect_size).extend(0.));
                let points = QUAD_VERTEX_POSITIONS.map(|pos| pos * rect_size);
                let mut positions_diff = clip_diff(&positions, node.clip);
                let positions_clipped: [Vec3; 4] =
                    std::array::from_fn(|i| positions[i] + positions_diff[i].extend(0.));
                let points: [Vec2; 4] = std::array::from_fn(|i| points[i] + positions_diff[i]);
                let transformed_rect_size = transform.transform_vector2(rect_size).abs();
                // Nodes with a rotation are not culled (Bevy's test: x_axis.y == 0).
                if transform.x_axis[1] == 0.0
                    && (positions_diff[0].x - positions_diff[1].x >= transformed_rect_size.x
                        || positions_diff[1].y - positions_diff[2].y >= transformed_rect_size.y)
                {
                    continue;
                }
                let uvs = if flags == shader_flags::UNTEXTURED {
                    [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y]
                } else {
                    // Checked when the batch took the image.
                    let image_extent = image_size(node.image).unwrap_or(Vec2::ONE);
                    let atlas_extent = atlas_scaling
                        .map(|scaling| image_extent * scaling)
                        .unwrap_or(uinode_rect.max);
                    if *flip_x {
                        std::mem::swap(&mut uinode_rect.max.x, &mut uinode_rect.min.x);
                        positions_diff.iter_mut().for_each(|diff| diff.x *= -1.);
                    }
                    if *flip_y {
                        std::mem::swap(&mut uinode_rect.max.y, &mut uinode_rect.min.y);
                        positions_diff.iter_mut().for_each(|diff| diff.y *= -1.);
                    }
                    [
                        Vec2::new(uinode_rect.min.x, uinode_rect.min.y) + positions_diff[0],
                        Vec2::new(uinode_rect.max.x, uinode_rect.min.y) + positions_diff[1],
                        Vec2::new(uinode_rect.max.x, uinode_rect.max.y) + positions_diff[2],
                        Vec2::new(uinode_rect.min.x, uinode_rect.max.y) + positions_diff[3],
                    ]
                    .map(|pos| pos / atlas_extent)
                };
                match *node_type {
                    NodeType::Border(border_flags) => flags |= border_flags,
                    NodeType::Inverted => flags |= shader_flags::INVERT,
                    NodeType::Rect => {}
                }
                let color = color.to_f32_array();
                let radius: [f32; 4] = (*border_radius).into();
                let border = [
                    border.min_inset.x,
                    border.min_inset.y,
                    border.max_inset.x,
                    border.max_inset.y,
                ];
                quads.push(std::array::from_fn(|i| UiVertex {
                    position: positions_clipped[i].into(),
                    uv: uvs[i].into(),
                    color,
                    flags: flags | shader_flags::CORNERS[i],
                    radius,
                    border,
                    size: rect_size.into(),
                    point: points[i].into(),
                    bounds: NO_BOUNDS,
                    extra: [0.0; 4],
                    end_color: [0.0; 4],
                    span: [0.0; 4],
                }));
            }
            ExtractedUiItem::Glyphs { range } => {
                let atlas_extent = image_size(node.image).unwrap_or(Vec2::ONE);
                for glyph in &nodes.glyphs[range.clone()] {
                    let color = glyph.color.to_f32_array();
                    let glyph_rect = glyph.rect;
                    let rect_size = glyph_rect.size();
                    let positions = QUAD_VERTEX_POSITIONS.map(|pos| {
                        node.transform
                            .transform_point2(glyph.translation + pos * glyph_rect.size())
                            .extend(0.)
                    });
                    let positions_diff = clip_diff(&positions, node.clip);
                    let positions_clipped: [Vec3; 4] =
                        std::array::from_fn(|i| positions[i] + positions_diff[i].extend(0.));
                    let transformed_rect_size = node.transform.transform_vector2(rect_size).abs();
                    if node.transform.x_axis[1] == 0.0
                        && (positions_diff[0].x - positions_diff[1].x >= transformed_rect_size.x
                            || positions_diff[1].y - positions_diff[2].y >= transformed_rect_size.y)
                    {
                        continue;
                    }
                    let uvs = [
                        Vec2::new(glyph.rect.min.x, glyph.rect.min.y) + positions_diff[0],
                        Vec2::new(glyph.rect.max.x, glyph.rect.min.y) + positions_diff[1],
                        Vec2::new(glyph.rect.max.x, glyph.rect.max.y) + positions_diff[2],
                        Vec2::new(glyph.rect.min.x, glyph.rect.max.y) + positions_diff[3],
                    ]
                    .map(|pos| pos / atlas_extent);
                    quads.push(std::array::from_fn(|i| UiVertex {
                        position: positions_clipped[i].into(),
                        uv: uvs[i].into(),
                        color,
                        flags: shader_flags::TEXTURED | shader_flags::CORNERS[i],
                        radius: [0.0; 4],
                        border: [0.0; 4],
                        size: rect_size.into(),
                        point: [0.0; 2],
                        bounds: NO_BOUNDS,
                        extra: [0.0; 4],
                        end_color: [0.0; 4],
                        span: [0.0; 4],
                    }));
                }
            }
        }
        let end = quads.indices.len() as u32;
        if let Some(batch) = quads.batches.last_mut() {
            batch.indices.end = end;
        }
    }
    quads
}

/// Bevy's `prepare_shadows` for one box shadow (box_shadow.rs:351-500): its quad, clipped and
/// culled the same way, joining the last batch where that one is box shadows too. The vertex is
/// a [`UiVertex`] as `box_shadow.frag` reads it: Bevy's colour, size and radius, the blur in
/// `border[0]`, and Bevy's `point = (uv - 0.5) * bounds`, which its vertex stage computes.
fn push_box_shadow(quads: &mut UiQuads, shadow: &ExtractedBoxShadow) {
    let rect_size = shadow.bounds;
    let positions = QUAD_VERTEX_POSITIONS.map(|pos| {
        shadow
            .transform
            .transform_point2(pos * rect_size)
            .extend(0.)
    });
    let positions_diff = clip_diff(&positions, shadow.clip);
    let positions_clipped: [Vec3; 4] =
        std::array::from_fn(|i| positions[i] + positions_diff[i].extend(0.));
    let transformed_rect_size = shadow.transform.transform_vector2(rect_size).abs();
    if shadow.transform.x_axis[1] == 0.0
        && (positions_diff[0].x - positions_diff[1].x >= transformed_rect_size.x
            || positions_diff[1].y - positions_diff[2].y >= transformed_rect_size.y)
    {
        return;
    }
    let uvs = [
        Vec2::new(positions_diff[0].x, positions_diff[0].y),
        Vec2::new(rect_size.x + positions_diff[1].x, positions_diff[1].y),
        Vec2::new(
            rect_size.x + positions_diff[2].x,
            rect_size.y + positions_diff[2].y,
        ),
        Vec2::new(positions_diff[3].x, rect_size.y + positions_diff[3].y),
    ]
    .map(|pos| pos / rect_size);
    if quads
        .batches
        .last()
        .is_none_or(|batch| batch.kind != UiBatchKind::BoxShadows)
    {
        let start = quads.indices.len() as u32;
        quads.batches.push(UiBatch {
            indices: start..start,
            kind: UiBatchKind::BoxShadows,
        });
    }
    let color = shadow.color.to_f32_array();
    let radius: [f32; 4] = shadow.radius.into();
    quads.push(std::array::from_fn(|i| UiVertex {
        position: positions_clipped[i].into(),
        uv: uvs[i].into(),
        color,
        flags: 0,
        radius,
        border: [shadow.blur_radius, 0.0, 0.0, 0.0],
        size: shadow.size.into(),
        point: ((uvs[i] - 0.5) * rect_size).into(),
        bounds: NO_BOUNDS,
        extra: [0.0; 4],
        end_color: [0.0; 4],
        span: [0.0; 4],
    }));
    let end = quads.indices.len() as u32;
    if let Some(batch) = quads.batches.last_mut() {
        batch.indices.end = end;
    }
}

/// Bevy's `prepare_gradient` for one gradient (gradient.rs:704-898): its node's quad, clipped
/// and culled the same way, once per segment between two stops ([`ui_gradients::segments`]),
/// joining the last batch where that one is gradients too. The vertex is a [`UiVertex`] as
/// `ui_gradient.frag` reads it.
fn push_gradient(
    quads: &mut UiQuads,
    gradient: &UiGradient,
    stops: &[(bevy::color::LinearRgba, f32, f32)],
) {
    let rect_size = gradient.size;
    let positions = QUAD_VERTEX_POSITIONS.map(|pos| {
        gradient
            .transform
            .transform_point2(pos * rect_size)
            .extend(0.)
    });
    let corner_points = QUAD_VERTEX_POSITIONS.map(|pos| pos * rect_size);
    let positions_diff = clip_diff(&positions, gradient.clip);
    let positions_clipped: [Vec3; 4] =
        std::array::from_fn(|i| positions[i] + positions_diff[i].extend(0.));
    let points: [Vec2; 4] = std::array::from_fn(|i| corner_points[i] + positions_diff[i]);
    let transformed_rect_size = gradient.transform.transform_vector2(rect_size).abs();
    if gradient.transform.x_axis[1] == 0.0
        && (positions_diff[0].x - positions_diff[1].x >= transformed_rect_size.x
            || positions_diff[1].y - positions_diff[2].y >= transformed_rect_size.y)
    {
        return;
    }
    let segments = ui_gradients::segments(gradient, stops, corner_points);
    if segments.is_empty() {
        return;
    }
    if quads
        .batches
        .last()
        .is_none_or(|batch| batch.kind != UiBatchKind::Gradients)
    {
        let start = quads.indices.len() as u32;
        quads.batches.push(UiBatch {
            indices: start..start,
            kind: UiBatchKind::Gradients,
        });
    }
    let uvs = [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y];
    let radius = gradient.border_radius;
    let radius = [
        radius.top_left,
        radius.top_right,
        radius.bottom_right,
        radius.bottom_left,
    ];
    let border = [
        gradient.border.min_inset.x,
        gradient.border.min_inset.y,
        gradient.border.max_inset.x,
        gradient.border.max_inset.y,
    ];
    for segment in segments {
        quads.push(std::array::from_fn(|i| UiVertex {
            position: positions_clipped[i].into(),
            uv: uvs[i].into(),
            color: segment.start_color,
            flags: segment.flags | shader_flags::CORNERS[i],
            radius,
            border,
            size: rect_size.into(),
            point: points[i].into(),
            bounds: NO_BOUNDS,
            extra: segment.start_dir,
            end_color: segment.end_color,
            span: segment.span,
        }));
    }
    let end = quads.indices.len() as u32;
    if let Some(batch) = quads.batches.last_mut() {
        batch.indices.end = end;
    }
}

/// Bevy's `prepare_ui_slices` for one sliced or tiled image (ui_texture_slice_pipeline.rs:
/// 362-636) whose image is `image_extent` pixels: its quad, clipped and culled the same way, its
/// slices, target slices, repeats and atlas rectangle as Bevy computes them, joining the last
/// batch where that one is slices of the same image. The vertex is a [`UiVertex`] as
/// `ui_texture_slice.frag` reads it.
fn push_texture_slice(
    quads: &mut UiQuads,
    slice: &ExtractedUiTextureSlice,
    image_extent: Vec2,
    sampler: SamplerKey,
) {
    let uinode_rect = slice.rect;
    let rect_size = uinode_rect.size();
    let positions = QUAD_VERTEX_POSITIONS
        .map(|pos| slice.transform.transform_point2(pos * rect_size).extend(0.));
    let positions_diff = clip_diff(&positions, slice.clip);
    let positions_clipped: [Vec3; 4] =
        std::array::from_fn(|i| positions[i] + positions_diff[i].extend(0.));
    let transformed_rect_size = slice.transform.transform_vector2(rect_size).abs();
    if slice.transform.x_axis[1] == 0.0
        && (positions_diff[0].x - positions_diff[1].x >= transformed_rect_size.x
            || positions_diff[1].y - positions_diff[2].y >= transformed_rect_size.y)
    {
        return;
    }
    let uvs = if slice.image == AssetId::default() {
        [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y]
    } else {
        let atlas_extent = uinode_rect.max;
        [
            uinode_rect.min + positions_diff[0],
            Vec2::new(uinode_rect.max.x, uinode_rect.min.y) + positions_diff[1],
            uinode_rect.max + positions_diff[2],
            Vec2::new(uinode_rect.min.x, uinode_rect.max.y) + positions_diff[3],
        ]
        .map(|pos| pos / atlas_extent)
    };
    let (image_size, mut atlas) = match slice.atlas_rect {
        Some(atlas) => (
            atlas.size(),
            [
                atlas.min.x / image_extent.x,
                atlas.min.y / image_extent.y,
                atlas.max.x / image_extent.x,
                atlas.max.y / image_extent.y,
            ],
        ),
        None => (image_extent, [0., 0., 1., 1.]),
    };
    if slice.flip_x {
        atlas.swap(0, 2);
    }
    if slice.flip_y {
        atlas.swap(1, 3);
    }
    let [texture_slices, target_slices, repeat] = texture_slices(
        image_size,
        rect_size * slice.inverse_scale_factor,
        &slice.image_scale_mode,
    );
    let kind = UiBatchKind::Slices {
        image: slice.image,
        sampler,
    };
    if quads.batches.last().is_none_or(|batch| batch.kind != kind) {
        let start = quads.indices.len() as u32;
        quads.batches.push(UiBatch {
            indices: start..start,
            kind,
        });
    }
    let color = slice.color.to_f32_array();
    quads.push(std::array::from_fn(|i| UiVertex {
        position: positions_clipped[i].into(),
        uv: uvs[i].into(),
        color,
        flags: 0,
        radius: texture_slices,
        border: target_slices,
        size: [atlas[0], atlas[1]],
        point: [atlas[2], atlas[3]],
        bounds: NO_BOUNDS,
        extra: repeat,
        end_color: [0.0; 4],
        span: [0.0; 4],
    }));
    let end = quads.indices.len() as u32;
    if let Some(batch) = quads.batches.last_mut() {
        batch.indices.end = end;
    }
}

/// Bevy's `compute_texture_slices` (ui_texture_slice_pipeline.rs:724-799): the normalised
/// texture slices, target slices and repeats of an image of `image_size` drawn over
/// `target_size` logical pixels. Bevy extracts only sliced and tiled images; any other mode
/// (none reaches here) is drawn stretched.
fn texture_slices(
    image_size: Vec2,
    target_size: Vec2,
    image_scale_mode: &SpriteImageMode,
) -> [[f32; 4]; 3] {
    match image_scale_mode {
        SpriteImageMode::Sliced(TextureSlicer {
            border: border_rect,
            center_scale_mode,
            sides_scale_mode,
            max_corner_scale,
        }) => {
            let min_coeff = (target_size / image_size)
                .min_element()
                .min(*max_corner_scale);
            // The normalised extents of the nine-patched image slices.
            let slices = [
                border_rect.min_inset.x / image_size.x,
                border_rect.min_inset.y / image_size.y,
                1. - border_rect.max_inset.x / image_size.x,
                1. - border_rect.max_inset.y / image_size.y,
            ];
            // The normalised extents of the target slices.
            let border = [
                (border_rect.min_inset.x / target_size.x) * min_coeff,
                (border_rect.min_inset.y / target_size.y) * min_coeff,
                1. - (border_rect.max_inset.x / target_size.x) * min_coeff,
                1. - (border_rect.max_inset.y / target_size.y) * min_coeff,
            ];
            let image_side_width = image_size.x * (slices[2] - slices[0]);
            let image_side_height = image_size.y * (slices[3] - slices[1]);
            let target_side_width = target_size.x * (border[2] - border[0]);
            let target_side_height = target_size.y * (border[3] - border[1]);
            // How many times the side and centre slices repeat along each axis (1: stretched).
            let repeat_side_x =
                tiled_subaxis(image_side_width, target_side_width, sides_scale_mode);
            let repeat_side_y =
                tiled_subaxis(image_side_height, target_side_height, sides_scale_mode);
            let repeat_center_x =
                tiled_subaxis(image_side_width, target_side_width, center_scale_mode);
            let repeat_center_y =
                tiled_subaxis(image_side_height, target_side_height, center_scale_mode);
            [
                slices,
                border,
                [
                    repeat_side_x,
                    repeat_side_y,
                    repeat_center_x,
                    repeat_center_y,
                ],
            ]
        }
        SpriteImageMode::Tiled {
            tile_x,
            tile_y,
            stretch_value,
        } => {
            let rx = tiled_axis(*tile_x, image_size.x, target_size.x, *stretch_value);
            let ry = tiled_axis(*tile_y, image_size.y, target_size.y, *stretch_value);
            [[0., 0., 1., 1.], [0., 0., 1., 1.], [1., 1., rx, ry]]
        }
        SpriteImageMode::Auto | SpriteImageMode::Scale(_) => {
            [[0., 0., 1., 1.], [0., 0., 1., 1.], [1.; 4]]
        }
    }
}

/// Bevy's `compute_tiled_axis`.
fn tiled_axis(tile: bool, image_extent: f32, target_extent: f32, stretch: f32) -> f32 {
    if tile {
        target_extent / (image_extent * stretch)
    } else {
        1.
    }
}

/// Bevy's `compute_tiled_subaxis`.
fn tiled_subaxis(image_extent: f32, target_extent: f32, mode: &SliceScaleMode) -> f32 {
    match mode {
        SliceScaleMode::Stretch => 1.,
        SliceScaleMode::Tile { stretch_value } => target_extent / (image_extent * *stretch_value),
    }
}

impl UiQuads {
    /// One quad: its four vertices and Bevy's six indices.
    fn push(&mut self, vertices: [UiVertex; 4]) {
        let first = self.vertices.len() as u32;
        self.vertices.extend(vertices);
        self.indices.extend(QUAD_INDICES.map(|i| first + i));
    }
}

/// How far each corner of a quad moves to stay inside `clip` (Bevy's `positions_diff`): the
/// quad is shrunk on the CPU, its UVs with it. Corners in Bevy's order (top left, top right,
/// bottom right, bottom left).
fn clip_diff(positions: &[Vec3; 4], clip: Option<Rect>) -> [Vec2; 4] {
    let Some(clip) = clip else {
        return [Vec2::ZERO; 4];
    };
    [
        Vec2::new(
            f32::max(clip.min.x - positions[0].x, 0.),
            f32::max(clip.min.y - positions[0].y, 0.),
        ),
        Vec2::new(
            f32::min(clip.max.x - positions[1].x, 0.),
            f32::max(clip.min.y - positions[1].y, 0.),
        ),
        Vec2::new(
            f32::min(clip.max.x - positions[2].x, 0.),
            f32::min(clip.max.y - positions[2].y, 0.),
        ),
        Vec2::new(
            f32::max(clip.min.x - positions[3].x, 0.),
            f32::min(clip.max.y - positions[3].y, 0.),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::{
        asset::uuid::Uuid, math::Affine2, render::sync_world::MainEntity, ui::ResolvedBorderRadius,
        ui_render::ExtractedUiNode,
    };

    fn image(n: u128) -> AssetId<Image> {
        AssetId::Uuid {
            uuid: Uuid::from_u128(n),
        }
    }

    /// A node of `size` centred at `centre`, coloured `color`, sampling `image`.
    fn node(
        centre: Vec2,
        size: Vec2,
        image: AssetId<Image>,
        clip: Option<Rect>,
    ) -> ExtractedUiNode {
        ExtractedUiNode {
            z_order: 0.0,
            image,
            clip,
            extracted_camera_entity: Entity::PLACEHOLDER,
            item: ExtractedUiItem::Node {
                color: LinearRgba::rgb(0.5, 0.25, 1.0),
                rect: Rect::from_corners(Vec2::ZERO, size),
                atlas_scaling: None,
                flip_x: false,
                flip_y: false,
                border_radius: ResolvedBorderRadius::ZERO,
                border: bevy::sprite::BorderRect::ZERO,
                node_type: NodeType::Rect,
            },
            main_entity: MainEntity::from(Entity::PLACEHOLDER),
            render_entity: Entity::from_raw_u32(1).unwrap(),
            transform: Affine2::from_translation(centre),
        }
    }

    /// `nodes`, each drawn once in order, every image 64x64 except `missing`.
    fn quads_of(nodes: Vec<ExtractedUiNode>, missing: Option<AssetId<Image>>) -> UiQuads {
        let items: Vec<UiItemRef> = nodes
            .iter()
            .enumerate()
            .map(|(i, node)| UiItemRef::Node(i, node.render_entity))
            .collect();
        let nodes = ExtractedUiNodes {
            uinodes: nodes,
            glyphs: Vec::new(),
        };
        let default_image = AssetId::<Image>::default();
        build_quads(
            &items,
            (&nodes, &[], &[], &TileUiGradients::default()),
            |id| (Some(id) != missing || id == default_image).then_some(Vec2::splat(64.0)),
            |_| SamplerKey::bevy_default(),
        )
    }

    #[test]
    fn a_node_is_one_quad_with_bevys_corners_indices_and_flags() {
        let quads = quads_of(
            vec![node(
                Vec2::new(100.0, 50.0),
                Vec2::new(40.0, 20.0),
                AssetId::default(),
                None,
            )],
            None,
        );
        let positions: Vec<[f32; 3]> = quads.vertices.iter().map(|v| v.position).collect();
        assert_eq!(
            positions,
            [
                [80.0, 40.0, 0.0],
                [120.0, 40.0, 0.0],
                [120.0, 60.0, 0.0],
                [80.0, 60.0, 0.0]
            ]
        );
        let uvs: Vec<[f32; 2]> = quads.vertices.iter().map(|v| v.uv).collect();
        assert_eq!(uvs, [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]);
        let flags: Vec<u32> = quads.vertices.iter().map(|v| v.flags).collect();
        assert_eq!(
            flags,
            shader_flags::CORNERS.map(|c| shader_flags::UNTEXTURED | c)
        );
        let points: Vec<[f32; 2]> = quads.vertices.iter().map(|v| v.point).collect();
        assert_eq!(
            points,
            [[-20.0, -10.0], [20.0, -10.0], [20.0, 10.0], [-20.0, 10.0]]
        );
        assert_eq!(quads.indices, QUAD_INDICES);
        assert_eq!(quads.batches.len(), 1);
        assert_eq!(quads.batches[0].indices, 0..6);
        assert_eq!(quads.vertices[0].size, [40.0, 20.0]);
    }

    #[test]
    fn clipping_shrinks_the_quad_and_its_uvs_and_culls_what_it_hides() {
        // A 64x64 textured node at (32, 32) with its left quarter clipped away.
        let clip = Rect::new(16.0, -100.0, 100.0, 100.0);
        let quads = quads_of(
            vec![node(
                Vec2::splat(32.0),
                Vec2::splat(64.0),
                image(1),
                Some(clip),
            )],
            None,
        );
        let v = &quads.vertices;
        assert_eq!(v[0].position, [16.0, 0.0, 0.0]);
        assert_eq!(v[3].position, [16.0, 64.0, 0.0]);
        assert_eq!(v[1].position, [64.0, 0.0, 0.0]);
        assert_eq!(v[0].uv, [0.25, 0.0]);
        assert_eq!(v[1].uv, [1.0, 0.0]);
        assert_eq!(v[0].point, [-16.0, -32.0]);
        assert_eq!(v[0].flags & shader_flags::TEXTURED, shader_flags::TEXTURED);
        // Clipped whole: no quad, as Bevy culls it.
        let hidden = Rect::new(200.0, 200.0, 300.0, 300.0);
        let quads = quads_of(
            vec![node(
                Vec2::splat(32.0),
                Vec2::splat(64.0),
                image(1),
                Some(hidden),
            )],
            None,
        );
        assert!(quads.vertices.is_empty() && quads.indices.is_empty());
    }

    #[test]
    fn flips_mirror_the_uvs() {
        let mut flipped = node(Vec2::splat(32.0), Vec2::splat(64.0), image(1), None);
        if let ExtractedUiItem::Node { flip_x, .. } = &mut flipped.item {
            *flip_x = true;
        }
        let quads = quads_of(vec![flipped], None);
        let uvs: Vec<[f32; 2]> = quads.vertices.iter().map(|v| v.uv).collect();
        assert_eq!(uvs, [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
    }

    #[test]
    fn batches_change_with_the_image_and_untextured_nodes_join_any() {
        let at = |x: f32| Vec2::new(x, 10.0);
        let size = Vec2::splat(8.0);
        let quads = quads_of(
            vec![
                node(at(10.0), size, AssetId::default(), None),
                node(at(20.0), size, image(1), None),
                node(at(30.0), size, AssetId::default(), None),
                node(at(40.0), size, image(2), None),
            ],
            None,
        );
        let batches: Vec<(AssetId<Image>, std::ops::Range<u32>)> = quads
            .batches
            .iter()
            .map(|b| (batch_image(b), b.indices.clone()))
            .collect();
        assert_eq!(batches, [(image(1), 0..18), (image(2), 18..24)]);
        // Each quad's indices start at its own first vertex.
        assert_eq!(quads.indices[18..24], QUAD_INDICES.map(|i| 12 + i));
    }

    #[test]
    fn items_bevy_skips_are_skipped() {
        // An image Bevy has not prepared yet: the item is not drawn.
        let quads = quads_of(
            vec![node(Vec2::splat(32.0), Vec2::splat(8.0), image(7), None)],
            Some(image(7)),
        );
        assert!(quads.vertices.is_empty() && quads.batches.is_empty());
        // A phase item whose index names another entity's node (a stale index).
        let nodes = ExtractedUiNodes {
            uinodes: vec![node(
                Vec2::splat(32.0),
                Vec2::splat(8.0),
                AssetId::default(),
                None,
            )],
            glyphs: Vec::new(),
        };
        let quads = build_quads(
            &[
                UiItemRef::Node(0, Entity::from_raw_u32(2).unwrap()),
                UiItemRef::Node(5, Entity::PLACEHOLDER),
                UiItemRef::BoxShadow(0, Entity::PLACEHOLDER),
            ],
            (&nodes, &[], &[], &TileUiGradients::default()),
            |_| Some(Vec2::ONE),
            |_| SamplerKey::bevy_default(),
        );
        assert!(quads.vertices.is_empty());
    }

    #[test]
    fn glyphs_are_textured_quads_over_their_atlas() {
        let mut run = node(Vec2::new(100.0, 100.0), Vec2::splat(50.0), image(3), None);
        run.item = ExtractedUiItem::Glyphs { range: 0..2 };
        let glyph = |x: f32| bevy::ui_render::ExtractedGlyph {
            color: LinearRgba::WHITE,
            translation: Vec2::new(x, 0.0),
            rect: Rect::new(16.0, 0.0, 32.0, 32.0),
        };
        let nodes = ExtractedUiNodes {
            uinodes: vec![run],
            glyphs: vec![glyph(0.0), glyph(20.0)],
        };
        let quads = build_quads(
            &[UiItemRef::Node(0, Entity::from_raw_u32(1).unwrap())],
            (&nodes, &[], &[], &TileUiGradients::default()),
            |_| Some(Vec2::new(64.0, 32.0)),
            |_| SamplerKey::bevy_default(),
        );
        assert_eq!(quads.vertices.len(), 8);
        let v = &quads.vertices;
        assert_eq!(v[0].position, [92.0, 84.0, 0.0]);
        assert_eq!(v[4].position, [112.0, 84.0, 0.0]);
        assert_eq!(v[0].uv, [0.25, 0.0]);
        assert_eq!(v[2].uv, [0.5, 1.0]);
        assert!(v.iter().all(|v| v.flags & shader_flags::TEXTURED != 0));
        assert_eq!(quads.batches[0].indices, 0..12);
        assert_eq!(batch_image(&quads.batches[0]), image(3));
    }

    fn batch_image(batch: &UiBatch) -> AssetId<Image> {
        match batch.kind.image() {
            Some((image, _)) => image,
            None => panic!("a box shadow batch: {batch:?}"),
        }
    }

    /// A box shadow of a 40x20 node at (100, 50) with a 2-pixel blur, whose quad is the shadow
    /// grown by 6 blurs (Bevy's `bounds`), clipped by `clip`.
    fn shadow(clip: Option<Rect>) -> ExtractedBoxShadow {
        ExtractedBoxShadow {
            stack_index: 0,
            transform: Affine2::from_translation(Vec2::new(100.0, 50.0)),
            bounds: Vec2::new(52.0, 32.0),
            clip,
            extracted_camera_entity: Entity::PLACEHOLDER,
            color: LinearRgba::new(0.0, 0.0, 0.0, 0.8),
            radius: ResolvedBorderRadius {
                top_left: 1.0,
                top_right: 2.0,
                bottom_right: 3.0,
                bottom_left: 4.0,
            },
            blur_radius: 2.0,
            size: Vec2::new(40.0, 20.0),
            main_entity: MainEntity::from(Entity::PLACEHOLDER),
            render_entity: Entity::from_raw_u32(9).unwrap(),
        }
    }

    #[test]
    fn box_shadows_are_bevys_quads_in_their_own_batches_between_nodes() {
        let at = |x: f32| Vec2::new(x, 10.0);
        let nodes = ExtractedUiNodes {
            uinodes: vec![
                node(at(10.0), Vec2::splat(8.0), image(1), None),
                node(at(20.0), Vec2::splat(8.0), image(1), None),
            ],
            glyphs: Vec::new(),
        };
        let node_entity = Entity::from_raw_u32(1).unwrap();
        let shadow_entity = Entity::from_raw_u32(9).unwrap();
        let shadows = [shadow(None), shadow(None)];
        let quads = build_quads(
            &[
                UiItemRef::Node(0, node_entity),
                UiItemRef::BoxShadow(0, shadow_entity),
                UiItemRef::BoxShadow(1, shadow_entity),
                UiItemRef::Node(1, node_entity),
            ],
            (&nodes, &shadows, &[], &TileUiGradients::default()),
            |_| Some(Vec2::splat(64.0)),
            |_| SamplerKey::bevy_default(),
        );
        // The node under the shadows, the two shadows in one batch, the node over them in a
        // batch of its own though it samples the same image.
        let kinds: Vec<(bool, std::ops::Range<u32>)> = quads
            .batches
            .iter()
            .map(|b| (b.kind == UiBatchKind::BoxShadows, b.indices.clone()))
            .collect();
        assert_eq!(kinds, [(false, 0..6), (true, 6..18), (false, 18..24)]);
        let v = &quads.vertices[4..8];
        let positions: Vec<[f32; 3]> = v.iter().map(|v| v.position).collect();
        assert_eq!(
            positions,
            [
                [74.0, 34.0, 0.0],
                [126.0, 34.0, 0.0],
                [126.0, 66.0, 0.0],
                [74.0, 66.0, 0.0]
            ]
        );
        // Bevy's vertex stage: point = (uv - 0.5) * bounds.
        let points: Vec<[f32; 2]> = v.iter().map(|v| v.point).collect();
        assert_eq!(
            points,
            [[-26.0, -16.0], [26.0, -16.0], [26.0, 16.0], [-26.0, 16.0]]
        );
        assert!(v.iter().all(|v| v.size == [40.0, 20.0]
            && v.radius == [1.0, 2.0, 3.0, 4.0]
            && v.border[0] == 2.0
            && v.color == [0.0, 0.0, 0.0, 0.8]));
    }

    #[test]
    fn sliced_images_carry_bevys_slices_repeats_and_flipped_atlas() {
        // A 16x16 image with 4-pixel borders over a 60x40 node, its centre tiled at half scale.
        let slicer = TextureSlicer {
            border: BorderRect::all(4.0),
            center_scale_mode: SliceScaleMode::Tile { stretch_value: 0.5 },
            ..default()
        };
        let mode = SpriteImageMode::Sliced(slicer);
        let [slices, border, repeat] =
            texture_slices(Vec2::splat(16.0), Vec2::new(60.0, 40.0), &mode);
        assert_eq!(slices, [0.25, 0.25, 0.75, 0.75]);
        // Corners at their size (`max_corner_scale` 1).
        assert_eq!(border, [4.0 / 60.0, 0.1, 1.0 - 4.0 / 60.0, 0.9]);
        // Sides stretched; the 8-pixel centre repeats 52 / (8 x 0.5) and 32 / 4 times.
        let expected = [1.0, 1.0, 13.0, 8.0];
        assert!(
            repeat
                .iter()
                .zip(expected)
                .all(|(r, e)| (r - e).abs() < 1e-5),
            "{repeat:?}"
        );
        let tiled = SpriteImageMode::Tiled {
            tile_x: true,
            tile_y: false,
            stretch_value: 2.0,
        };
        let [_, _, tiled_repeat] = texture_slices(Vec2::splat(16.0), Vec2::new(64.0, 40.0), &tiled);
        assert_eq!(tiled_repeat, [1.0, 1.0, 2.0, 1.0]);

        let slice = ExtractedUiTextureSlice {
            stack_index: 0,
            transform: Affine2::from_translation(Vec2::new(100.0, 50.0)),
            rect: Rect::new(0.0, 0.0, 60.0, 40.0),
            atlas_rect: Some(Rect::new(16.0, 0.0, 32.0, 16.0)),
            image: image(5),
            clip: None,
            extracted_camera_entity: Entity::PLACEHOLDER,
            color: LinearRgba::WHITE,
            image_scale_mode: mode,
            flip_x: true,
            flip_y: false,
            inverse_scale_factor: 1.0,
            main_entity: MainEntity::from(Entity::PLACEHOLDER),
            render_entity: Entity::from_raw_u32(3).unwrap(),
        };
        let mut quads = UiQuads::default();
        let sampler = SamplerKey::bevy_default();
        push_texture_slice(&mut quads, &slice, Vec2::new(64.0, 16.0), sampler);
        push_texture_slice(&mut quads, &slice, Vec2::new(64.0, 16.0), sampler);
        // Two quads of one image in one batch.
        assert_eq!(quads.batches.len(), 1);
        assert_eq!(quads.batches[0].indices, 0..12);
        let v = &quads.vertices[0];
        assert_eq!(v.position, [70.0, 30.0, 0.0]);
        assert_eq!((v.radius, v.border, v.extra), (slices, border, repeat));
        // The atlas cell (16..32 of 64 wide), flipped in x: min and max swapped.
        assert_eq!((v.size, v.point), ([0.5, 0.0], [0.25, 1.0]));
        let uvs: Vec<[f32; 2]> = quads.vertices[..4].iter().map(|v| v.uv).collect();
        assert_eq!(uvs, [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]);
    }

    #[test]
    fn clipped_box_shadows_shrink_their_uvs_and_hidden_ones_are_culled() {
        // The left 26 pixels of the shadow's 52-wide quad clipped away.
        let clip = Some(Rect::new(100.0, 0.0, 200.0, 100.0));
        let mut quads = UiQuads::default();
        push_box_shadow(&mut quads, &shadow(clip));
        let v = &quads.vertices;
        assert_eq!(v[0].position, [100.0, 34.0, 0.0]);
        assert_eq!(v[0].uv, [0.5, 0.0]);
        assert_eq!(v[0].point, [0.0, -16.0]);
        let mut hidden = UiQuads::default();
        push_box_shadow(&mut hidden, &shadow(Some(Rect::new(0.0, 0.0, 10.0, 10.0))));
        assert!(hidden.vertices.is_empty() && hidden.batches.is_empty());
    }
}
