//! egui drawn inside the tile render pass (feature `inspector`): a tile view's egui meshes (the
//! inspector overlay, or any egui context on a tile camera) become draws of the tile pass's last
//! `ui` subpass, after bevy_ui's ([`TileUiDraws`], `gpu::ui`), so that the inspector's clear,
//! bevy_egui's `egui_pass` and the composite after the tile pass (`crate::inspector`) are not
//! recorded, and the output is stored once, by the tile pass.
//!
//! bevy_egui keeps the buffers it prepares in private fields, but the tessellated meshes it
//! extracted are public (`EguiRenderOutput` on the egui view), and so is the map from egui's
//! texture ids to Bevy images (`ExtractedEguiTextures`). The draws are built from those, as
//! bevy_egui's `prepare_egui_render_target_data_system` and `egui_pass` (bevy_egui 0.42
//! render/systems.rs:338-510, render/render_pass.rs:45-241) build and record them: the same
//! meshes in the same order, clipped to the same scissor rectangles, skipped where their texture
//! is not prepared, with a GLSL port of `egui.wgsl` (`egui.frag`) and egui's premultiplied
//! blending. Its vertices go to `ui.vert` as [`UiVertex`]es in the UI view's pixels.
//!
//! egui is drawn over bevy_ui, so it goes in the pass only where bevy_ui did (all of it, or
//! there was none), by the rules bevy_ui's route follows ([`in_pass_refusal`]); and not where a
//! mesh is a paint callback (custom wgpu drawing). Otherwise the view gets
//! [`EguiAfterTilePass`] with why, and [`TileOutputLoadedAfter`] for the composite.

use super::gizmos::DrawsOverTile;
use super::in_pass::{UiAfterTilePass, ViewShape, in_pass_refusal};
use crate::tiers::TierDecision;
use crate::tile_deferred::{
    camera::{TileDeferred, TileOutputLoadedAfter},
    gpu::{
        keys::SamplerKey,
        ui::{NO_BOUNDS, TileUiDraws, UiBatch, UiBatchKind, UiVertex},
    },
};
use bevy::{
    ecs::system::SystemParam,
    image::ImageSampler,
    math::URect,
    platform::collections::HashMap,
    prelude::*,
    render::{
        Extract, ExtractSchedule, Render, RenderSystems,
        camera::ExtractedCamera,
        render_asset::RenderAssets,
        render_resource::DefaultImageSamplerDescriptor,
        texture::GpuImage,
        view::{ExtractedView, ViewTarget},
    },
};
use bevy_egui::{
    EguiManagedTextures, EguiPixelsPerPoint, EguiRenderOutput, EguiUserTextures,
    egui::{self, epaint::Primitive},
    render::{
        EguiCameraView, EguiViewTarget,
        systems::{EguiTextureId, ExtractedEguiManagedTextures, ExtractedEguiTextures},
    },
};

/// Render-world component of a tile view whose egui meshes the tile pass draws this frame (or
/// that had none to draw): the inspector's passes after the tile pass are not recorded.
/// Replaced every frame.
#[derive(Component, Clone, Copy, Debug)]
pub(crate) struct EguiInTilePass;

/// Render-world component of a tile view whose egui is drawn after the tile pass this frame
/// (the inspector's clear, bevy_egui's `egui_pass`, the composite): why the `ui` subpass did not
/// draw it. Replaced every frame.
#[derive(Component, Clone, Debug, PartialEq, Eq)]
pub(crate) struct EguiAfterTilePass(pub String);

/// Render-world resource: how each egui texture is sampled (the `ImageSampler` bevy_egui gave
/// its image, from egui's `TextureOptions`, or the app's default).
#[derive(Resource, Default)]
struct EguiTextureSamplers(HashMap<AssetId<Image>, SamplerKey>);

/// Bevy's `UI_CAMERA_FAR` and `UI_CAMERA_TRANSFORM_OFFSET`, as bevy_egui's egui view and Bevy's
/// UI view use them (bevy_egui render/mod.rs:113-115).
const UI_CAMERA_FAR: f32 = 1000.0;
const UI_CAMERA_TRANSFORM_OFFSET: f32 = -0.1;

/// Installs the in-pass route for egui (from the inspector's plugin).
pub(crate) fn install(render_app: &mut SubApp) {
    render_app
        .init_resource::<EguiTextureSamplers>()
        .add_systems(ExtractSchedule, extract_egui_texture_samplers)
        // After bevy_ui's quads (`ui_in_pass::build_tile_ui`, `PrepareResources`) are on the
        // views, before the tile pass reads them.
        .add_systems(
            Render,
            build_tile_egui.in_set(RenderSystems::PrepareBindGroups),
        );
}

/// The sampler of every egui texture: egui's own (the main world's `EguiManagedTextures`,
/// this frame's) and those the app registered (`EguiUserTextures`, as last extracted).
fn extract_egui_texture_samplers(
    managed: Extract<Option<Res<EguiManagedTextures>>>,
    textures: EguiTextures,
    images: Extract<Res<Assets<Image>>>,
    default_sampler: Option<Res<DefaultImageSamplerDescriptor>>,
    mut samplers: ResMut<EguiTextureSamplers>,
) {
    samplers.0.clear();
    let default = default_sampler.as_deref().map(|d| &d.0);
    let managed = managed
        .as_deref()
        .into_iter()
        .flat_map(|managed| managed.0.values().map(|texture| texture.handle.id()));
    let registered = textures.images().into_values();
    for image in managed.chain(registered) {
        samplers.0.entry(image).or_insert_with(|| {
            let sampler = images
                .get(image)
                .map_or(&ImageSampler::Default, |image| &image.sampler);
            SamplerKey::for_image(sampler, default)
        });
    }
}

/// bevy_egui's render-world map from egui's texture ids to Bevy images (`ExtractedEguiTextures`),
/// whose resources exist only from the first extraction on.
#[derive(SystemParam)]
struct EguiTextures<'w> {
    managed: Option<Res<'w, ExtractedEguiManagedTextures>>,
    user: Option<Res<'w, EguiUserTextures>>,
}

impl EguiTextures<'_> {
    /// The image of every egui texture (none before bevy_egui's first extraction).
    fn images(&self) -> HashMap<EguiTextureId, AssetId<Image>> {
        let (Some(managed), Some(user)) = (&self.managed, &self.user) else {
            return HashMap::default();
        };
        ExtractedEguiTextures {
            egui_textures: Res::clone(managed),
            user_textures: Res::clone(user),
        }
        .handles()
        .collect()
    }
}

/// What [`build_tile_egui`] reads of a view.
type EguiTileView = (
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
    &'static EguiCameraView,
    Option<&'static mut TileUiDraws>,
    Option<&'static UiAfterTilePass>,
);

/// What [`build_tile_egui`] reads besides the views.
#[derive(SystemParam)]
struct EguiSources<'w, 's> {
    egui_views: Query<
        'w,
        's,
        (
            &'static ExtractedView,
            &'static EguiViewTarget,
            &'static EguiRenderOutput,
            &'static EguiPixelsPerPoint,
        ),
    >,
    textures: EguiTextures<'w>,
    samplers: Res<'w, EguiTextureSamplers>,
    images: Res<'w, RenderAssets<GpuImage>>,
    draws_over_tile: DrawsOverTile<'w>,
}

/// For every tile view with an egui view this frame: its meshes into [`TileUiDraws`] (after
/// bevy_ui's, or alone) and [`EguiInTilePass`], or (where the pass cannot draw them)
/// [`EguiAfterTilePass`] with why and [`TileOutputLoadedAfter`].
fn build_tile_egui(mut commands: Commands, mut views: Query<EguiTileView>, sources: EguiSources) {
    let images = sources.textures.images();
    for (
        entity,
        camera,
        view,
        target,
        (settings, post_processed, materials_over_tile),
        tier,
        egui,
        ui_draws,
        ui_after,
    ) in &mut views
    {
        let mut entity_commands = commands.entity(entity);
        entity_commands.remove::<(EguiInTilePass, EguiAfterTilePass)>();
        if !crate::tile_deferred::camera::is_tile_schedule(camera.schedule) {
            continue;
        }
        // bevy_egui leaves `EguiCameraView` on a camera whose context was removed; its egui
        // view is gone.
        let Ok((egui_view, view_target, output, pixels_per_point)) = sources.egui_views.get(egui.0)
        else {
            continue;
        };
        if view_target.0 != entity {
            continue;
        }
        let shape = ViewShape::of(
            (camera, view, target),
            (settings, post_processed, materials_over_tile),
            tier,
            &sources.draws_over_tile,
        );
        let built = match (in_pass_refusal(&shape), ui_after) {
            (Some(why), _) => Err(why.to_string()),
            (None, Some(ui_after)) => Err(format!(
                "bevy_ui is drawn after the tile pass ({}), and egui over it",
                ui_after.0
            )),
            (None, None) => EguiScreen::of(camera, pixels_per_point.pixels_per_point).map_or_else(
                || Err("the camera has no viewport yet".to_string()),
                |screen| {
                    build_meshes(&output.paint_jobs, &screen, |id| {
                        let key = match id {
                            egui::TextureId::Managed(id) => EguiTextureId::Managed(
                                egui_view.retained_view_entity.main_entity,
                                id,
                            ),
                            egui::TextureId::User(id) => EguiTextureId::User(id),
                        };
                        let image = *images.get(&key)?;
                        sources.images.get(image)?;
                        Some((image, sources.samplers.0.get(&image).copied()))
                    })
                },
            ),
        };
        let meshes = match built {
            Ok(meshes) => meshes,
            Err(why) => {
                entity_commands.insert((EguiAfterTilePass(why), TileOutputLoadedAfter));
                continue;
            }
        };
        entity_commands.insert(EguiInTilePass);
        if meshes.batches.is_empty() {
            continue;
        }
        match ui_draws {
            Some(mut draws) => meshes.append_to(&mut draws),
            None => {
                let viewport = camera.physical_viewport_size.unwrap_or_default();
                let mut draws = TileUiDraws {
                    clip_from_world: ui_clip_from_world(viewport.as_vec2()),
                    anti_alias: true,
                    shadow_samples: 0,
                    ..default()
                };
                meshes.append_to(&mut draws);
                entity_commands.insert(draws);
            }
        }
    }
}

/// Bevy's UI view projection for a viewport of `size` physical pixels (bevy_ui_render
/// lib.rs:821-846, bevy_egui render/mod.rs:117-151): pixels from the viewport's top left.
fn ui_clip_from_world(size: Vec2) -> Mat4 {
    let clip_from_view = Mat4::orthographic_rh(0.0, size.x, size.y, 0.0, 0.0, UI_CAMERA_FAR);
    let world_from_view = Mat4::from_translation(Vec3::new(
        0.0,
        0.0,
        UI_CAMERA_FAR + UI_CAMERA_TRANSFORM_OFFSET,
    ));
    clip_from_view * world_from_view.inverse()
}

/// Where egui draws on a camera's target: its points per physical pixel and the camera's
/// viewport, in the target's physical pixels (as `egui_pass` takes it).
#[derive(Clone, Copy, Debug, PartialEq)]
struct EguiScreen {
    pixels_per_point: f32,
    viewport: URect,
}

impl EguiScreen {
    /// The camera's, or None where it has no viewport of a pixel or more (bevy_egui then
    /// prepares nothing).
    fn of(camera: &ExtractedCamera, pixels_per_point: f32) -> Option<Self> {
        let size = camera
            .physical_viewport_size
            .filter(|size| size.x >= 1 && size.y >= 1)?;
        let position = camera
            .viewport
            .as_ref()
            .map_or(UVec2::ZERO, |viewport| viewport.physical_position);
        let size = camera
            .viewport
            .as_ref()
            .map_or(size, |viewport| viewport.physical_size);
        Some(Self {
            pixels_per_point,
            viewport: URect::from_corners(position, position + size),
        })
    }

    /// A clip rectangle in points as `egui_pass` makes it a scissor: rounded to physical
    /// pixels, within the viewport; None where that is empty.
    fn scissor(&self, clip: egui::Rect) -> Option<[u32; 4]> {
        let to_pixels = |x: f32| (x * self.pixels_per_point).round() as u32;
        let clip = URect {
            min: UVec2::new(to_pixels(clip.min.x), to_pixels(clip.min.y)),
            max: UVec2::new(to_pixels(clip.max.x), to_pixels(clip.max.y)),
        };
        let scissor = clip.intersect(self.viewport);
        (!scissor.is_empty()).then(|| {
            [
                scissor.min.x,
                scissor.min.y,
                scissor.width(),
                scissor.height(),
            ]
        })
    }
}

/// One view's egui meshes as `ui` subpass draws.
#[derive(Debug, Default, PartialEq)]
struct EguiMeshes {
    vertices: Vec<UiVertex>,
    /// Indices into `vertices`.
    indices: Vec<u32>,
    /// One per mesh, indices into `indices`.
    batches: Vec<UiBatch>,
}

impl EguiMeshes {
    /// Appends the meshes after what `draws` holds (bevy_ui's quads), offsetting the indices.
    fn append_to(self, draws: &mut TileUiDraws) {
        let (base_vertex, base_index) = (draws.vertices.len() as u32, draws.indices.len() as u32);
        draws.vertices.extend(self.vertices);
        draws
            .indices
            .extend(self.indices.iter().map(|index| index + base_vertex));
        draws.egui_meshes += self.batches.len();
        draws
            .batches
            .extend(self.batches.into_iter().map(|batch| UiBatch {
                indices: batch.indices.start + base_index..batch.indices.end + base_index,
                kind: batch.kind,
            }));
    }
}

/// bevy_egui's `prepare_egui_render_target_data_system` and `egui_pass` for one view: each
/// mesh clipped to its scissor (skipped where that is empty, or where its texture is not
/// prepared: `texture` gives the image and, once known, its sampler), its vertices moved from
/// points on the target to pixels of the UI view. An error where the pass cannot draw them.
fn build_meshes(
    paint_jobs: &[egui::ClippedPrimitive],
    screen: &EguiScreen,
    texture: impl Fn(egui::TextureId) -> Option<(AssetId<Image>, Option<SamplerKey>)>,
) -> Result<EguiMeshes, String> {
    let mut meshes = EguiMeshes::default();
    let origin = screen.viewport.min.as_vec2();
    for egui::ClippedPrimitive {
        clip_rect,
        primitive,
    } in paint_jobs
    {
        let mesh = match primitive {
            Primitive::Mesh(mesh) => mesh,
            Primitive::Callback(_) => {
                return Err("an egui paint callback (its own wgpu drawing)".to_string());
            }
        };
        let Some(scissor) = screen.scissor(*clip_rect) else {
            continue;
        };
        let Some((image, sampler)) = texture(mesh.texture_id) else {
            continue;
        };
        let Some(sampler) = sampler else {
            return Err(format!(
                "egui texture {:?}: its sampler is not known yet",
                mesh.texture_id
            ));
        };
        if mesh.indices.is_empty() {
            continue;
        }
        let base = meshes.vertices.len() as u32;
        meshes
            .vertices
            .extend(mesh.vertices.iter().map(|vertex| UiVertex {
                position: [
                    vertex.pos.x * screen.pixels_per_point - origin.x,
                    vertex.pos.y * screen.pixels_per_point - origin.y,
                    0.0,
                ],
                uv: [vertex.uv.x, vertex.uv.y],
                // sRGB bytes, interpolated gamma-encoded as egui.wgsl's `Unorm8x4`.
                color: vertex.color.to_array().map(|c| f32::from(c) / 255.0),
                bounds: NO_BOUNDS,
                ..default()
            }));
        let first = meshes.indices.len() as u32;
        meshes
            .indices
            .extend(mesh.indices.iter().map(|index| index + base));
        meshes.batches.push(UiBatch {
            indices: first..meshes.indices.len() as u32,
            kind: UiBatchKind::Egui {
                image,
                sampler,
                scissor,
            },
        });
    }
    Ok(meshes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::asset::uuid::Uuid;
    use bevy_egui::egui::{Color32, Pos2, Rect, epaint::Mesh};

    fn image(n: u128) -> AssetId<Image> {
        AssetId::Uuid {
            uuid: Uuid::from_u128(n),
        }
    }

    /// A quad of `mesh` from (x, y) to (x + 10, y + 10) points, in one colour.
    fn quad(texture: u64, x: f32, y: f32, color: Color32) -> egui::ClippedPrimitive {
        let mut mesh = Mesh::with_texture(egui::TextureId::Managed(texture));
        mesh.add_rect_with_uv(
            Rect::from_min_size(Pos2::new(x, y), egui::vec2(10.0, 10.0)),
            Rect::from_min_max(Pos2::ZERO, Pos2::new(1.0, 1.0)),
            color,
        );
        egui::ClippedPrimitive {
            clip_rect: Rect::from_min_max(Pos2::new(0.0, 0.0), Pos2::new(100.0, 100.0)),
            primitive: Primitive::Mesh(mesh),
        }
    }

    fn screen() -> EguiScreen {
        EguiScreen {
            pixels_per_point: 2.0,
            viewport: URect::new(20, 10, 220, 110),
        }
    }

    #[test]
    fn scissors_are_egui_pass_s_rounded_within_the_viewport() {
        let screen = screen();
        let rect = |x0, y0, x1, y1| Rect::from_min_max(Pos2::new(x0, y0), Pos2::new(x1, y1));
        // Points to pixels (x2, rounded), then within the viewport.
        assert_eq!(
            screen.scissor(rect(0.0, 0.0, 50.0, 30.0)),
            Some([20, 10, 80, 50])
        );
        assert_eq!(
            screen.scissor(rect(15.2, 10.3, 20.6, 12.0)),
            Some([30, 21, 11, 3])
        );
        // Negative points clamp to 0, as `as u32` does in bevy_egui.
        assert_eq!(
            screen.scissor(rect(-5.0, -5.0, 11.0, 6.0)),
            Some([20, 10, 2, 2])
        );
        // Outside the viewport: nothing drawn.
        assert_eq!(screen.scissor(rect(0.0, 0.0, 10.0, 5.0)), None);
        assert_eq!(screen.scissor(rect(200.0, 0.0, 300.0, 50.0)), None);
    }

    #[test]
    fn meshes_become_ui_vertices_in_the_viewport_s_pixels_one_batch_each() {
        let (font, other) = (image(1), image(2));
        let sampler = SamplerKey::bevy_default();
        let jobs = [
            quad(
                0,
                10.0,
                5.0,
                Color32::from_rgba_premultiplied(255, 128, 0, 255),
            ),
            quad(
                1,
                20.0,
                5.0,
                Color32::from_rgba_premultiplied(10, 20, 30, 40),
            ),
        ];
        let meshes = build_meshes(&jobs, &screen(), |id| match id {
            egui::TextureId::Managed(0) => Some((font, Some(sampler))),
            egui::TextureId::Managed(1) => Some((other, Some(sampler))),
            _ => None,
        })
        .unwrap();
        assert_eq!(meshes.vertices.len(), 8);
        // (10, 5) points at 2 pixels per point, less the viewport's origin (20, 10).
        assert_eq!(meshes.vertices[0].position, [0.0, 0.0, 0.0]);
        assert_eq!(meshes.vertices[4].position, [20.0, 0.0, 0.0]);
        // egui's rectangle: left top, right top, left bottom, right bottom.
        assert_eq!(meshes.vertices[3].uv, [1.0, 1.0]);
        assert_eq!(meshes.vertices[0].color, [1.0, 128.0 / 255.0, 0.0, 1.0]);
        assert!(meshes.vertices.iter().all(|v| v.bounds == NO_BOUNDS));
        // The second mesh's indices point at its own vertices.
        assert_eq!(meshes.indices.len(), 12);
        assert!(meshes.indices[6..].iter().all(|&i| (4..8).contains(&i)));
        let kinds: Vec<_> = meshes.batches.iter().map(|b| b.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                UiBatchKind::Egui {
                    image: font,
                    sampler,
                    scissor: [20, 10, 180, 100]
                },
                UiBatchKind::Egui {
                    image: other,
                    sampler,
                    scissor: [20, 10, 180, 100]
                },
            ]
        );
        assert_eq!(meshes.batches[1].indices, 6..12);

        // Appended after bevy_ui's quads: indices and batches move past them.
        let mut draws = TileUiDraws {
            vertices: vec![UiVertex::default(); 4],
            quad_vertices: 4,
            indices: vec![0, 1, 2, 0, 2, 3],
            batches: vec![UiBatch {
                indices: 0..6,
                kind: UiBatchKind::BoxShadows,
            }],
            items: 1,
            ..default()
        };
        meshes.append_to(&mut draws);
        assert_eq!((draws.vertices.len(), draws.quad_vertices), (12, 4));
        assert_eq!(draws.egui_meshes, 2);
        assert_eq!(draws.batches[1].indices, 6..12);
        assert_eq!(draws.batches[2].indices, 12..18);
        assert!(draws.indices[6..12].iter().all(|&i| (4..8).contains(&i)));
    }

    #[test]
    fn unprepared_textures_are_skipped_and_callbacks_refused() {
        let jobs = [quad(0, 10.0, 5.0, Color32::WHITE)];
        // Not prepared yet: skipped, as `egui_pass` skips a mesh without its bind group.
        let meshes = build_meshes(&jobs, &screen(), |_| None).unwrap();
        assert!(meshes.batches.is_empty());
        // Prepared, but its sampler is not known: after the pass, with the reason.
        let unknown = build_meshes(&jobs, &screen(), |_| Some((image(1), None)));
        assert!(unknown.unwrap_err().contains("sampler"));
        let callback = egui::ClippedPrimitive {
            clip_rect: Rect::EVERYTHING,
            primitive: Primitive::Callback(egui::PaintCallback {
                rect: Rect::EVERYTHING,
                callback: std::sync::Arc::new(()),
            }),
        };
        let refused = build_meshes(&[callback], &screen(), |_| None);
        assert!(refused.unwrap_err().contains("paint callback"));
    }

    #[test]
    fn the_ui_projection_is_bevy_s() {
        // Bevy's UI view for a 200 x 100 viewport: the top left pixel corner at clip (-1, 1),
        // the bottom right at (1, -1), z = 0 inside the depth range.
        let clip_from_world = ui_clip_from_world(Vec2::new(200.0, 100.0));
        let top_left = clip_from_world.project_point3(Vec3::ZERO);
        let bottom_right = clip_from_world.project_point3(Vec3::new(200.0, 100.0, 0.0));
        assert!(top_left.truncate().abs_diff_eq(Vec2::new(-1.0, 1.0), 1e-6));
        assert!(
            bottom_right
                .truncate()
                .abs_diff_eq(Vec2::new(1.0, -1.0), 1e-6)
        );
        assert!((0.0..=1.0).contains(&top_left.z));
    }
}
