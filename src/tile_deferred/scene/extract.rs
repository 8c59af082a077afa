//! Main world -> render world: the meshes, materials and textures the tile path draws.
//!
//! Only entities visible to some camera are extracted, and only while a tile camera exists.
//! Materials are re-extracted when their asset changes, so run-time edits show up next frame.
//! What the tile path cannot draw is found and reported in the main world (`missing.rs`);
//! transparent `StandardMaterial`s are drawn by the transparent pass, sorted as Bevy sorts them.

use crate::tile_deferred::gpu::{
    keys::{MaterialTexture, SamplerKey},
    types::{GpuMaterial, material_flags},
};
use crate::tile_deferred::{camera::TileDeferred, gpu::pipelines::TransparentBlend};
use bevy::{
    asset::AssetEvent,
    ecs::entity::EntityHashSet,
    image::ImageSamplerDescriptor,
    light::NotShadowReceiver,
    math::Affine3A,
    mesh::{
        UvChannel,
        morph::{MeshMorphWeights, MorphAttributes, MorphWeights},
        skinning::{SkinnedMesh, SkinnedMeshInverseBindposes},
    },
    pbr::{ExtractedDirectionalLight, ExtractedPointLight, Lightmap},
    platform::collections::HashMap,
    prelude::*,
    render::{
        Extract,
        camera::ExtractedCamera,
        mesh::{RenderMesh, RenderMeshBufferInfo},
        render_resource::Face,
        render_resource::{DefaultImageSamplerDescriptor, TextureFormat},
        sync_world::{MainEntity, MainEntityHashMap, RenderEntity},
        view::{ExtractedView, RenderVisibleEntities},
    },
};
use std::sync::Arc;

/// One drawable instance: a mesh with a `StandardMaterial` at a transform.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileMeshInstance {
    pub mesh: AssetId<Mesh>,
    pub material: AssetId<StandardMaterial>,
    pub world_from_local: Affine3A,
    /// Receives shadows: the mesh has no `NotShadowReceiver` (casting is Bevy's shadow passes'
    /// business: they skip `NotShadowCaster`).
    pub shadow_receiver: bool,
    /// A `SkinnedMesh`: its joint matrices, `TileMeshInstances::joints[start..start + count]`.
    pub skin: Option<(u32, u32)>,
    /// A `MeshMorphWeights`: its weights, `TileMeshInstances::morph_weights[start..start +
    /// count]`.
    pub morph_weights: Option<(u32, u32)>,
    /// A `Lightmap`: added to the mesh's light in the G-buffer subpass.
    pub lightmap: Option<TileLightmap>,
}

/// What instances share to be drawn together: mesh, material, whether skinned (the pipeline's
/// `SKINNED`), lightmap image (the material set's binding 6).
pub(crate) type BatchKey = (
    AssetId<Mesh>,
    AssetId<StandardMaterial>,
    bool,
    Option<MaterialTexture>,
);

impl TileMeshInstance {
    /// The draw it is batched into: a change of this key moves the instance to another draw.
    pub(crate) fn batch_key(&self) -> BatchKey {
        (
            self.mesh,
            self.material,
            self.skin.is_some(),
            self.lightmap.map(|map| map.texture),
        )
    }
}

/// A mesh's `Lightmap` as the tile path samples it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileLightmap {
    /// The image and its sampler (Bevy samples a lightmap with its `GpuImage`'s sampler: the
    /// image's own descriptor or the app's default). Until the image is loaded, the fallback
    /// white texture is sampled, as Bevy's lightmap slots hold the fallback image until then.
    pub texture: MaterialTexture,
    /// `Lightmap::uv_rect`, packed as Bevy packs it (`pack_lightmap_uv_rect`).
    pub uv_rect: [u32; 2],
    pub bicubic: bool,
}

/// bevy_pbr's `pack_lightmap_uv_rect`: min and max as 16-bit unorm pairs (x low, y high), so the
/// tile path samples the same quantised rectangle as Bevy.
pub(crate) fn pack_lightmap_uv_rect(rect: Rect) -> [u32; 2] {
    let unorm = |v: f32| (v * 65535.0).round() as u32;
    [
        unorm(rect.min.x) | (unorm(rect.min.y) << 16),
        unorm(rect.max.x) | (unorm(rect.max.y) << 16),
    ]
}

/// Every visible `StandardMaterial` mesh, by main-world entity. Kept from frame to frame and
/// updated for what changed, as Bevy's own mesh extraction is (issue 34: rebuilding it cost
/// 45 ns per mesh per frame); the views read [`Self::changed`] and [`Self::layout_generation`]
/// to rewrite only the instances that moved.
#[derive(Resource, Default)]
pub(crate) struct TileMeshInstances {
    pub by_entity: MainEntityHashMap<TileMeshInstance>,
    /// The materials of `by_entity`, each once with how many instances use it: what
    /// `extract_tile_materials` looks at (a scene has few materials and many instances).
    pub materials: HashMap<AssetId<StandardMaterial>, u32>,
    /// The joint matrices of every skinned instance (`TileMeshInstance::skin`).
    pub joints: Vec<Mat4>,
    /// The morph weights of every morphed instance (`TileMeshInstance::morph_weights`).
    pub morph_weights: Vec<f32>,
    /// The morph target displacements of the meshes that have them (Bevy's layout: target-major,
    /// `vertex_count` per target), copied from the main world once per mesh (again when the mesh
    /// changes).
    pub morph_targets: HashMap<AssetId<Mesh>, MorphTargets>,
    /// The generation the next copied displacements get.
    morph_generation: u64,
    /// Counts the extractions: `changed` lists what changed since the previous one only.
    pub extraction: u64,
    /// Bumped whenever an instance is added or removed, changes what it is batched by (mesh,
    /// material, skinning, lightmap image), or a mesh asset changes: a view's batches built
    /// under another generation are rebuilt.
    pub layout_generation: u64,
    /// The instances rewritten by this extraction without a change of batch (moved, another
    /// lightmap rectangle, shadow receiving switched, the joints and weights of animated ones).
    pub changed: Vec<MainEntity>,
    /// `by_entity` holds every visible mesh: later extractions update it for what changed.
    populated: bool,
}

/// A mesh's morph target displacements, as copied from the main world.
#[derive(Clone)]
pub(crate) struct MorphTargets {
    /// Unique to this copy: a view re-uploads the displacements it holds only when the
    /// generations it draws change.
    pub generation: u64,
    pub attributes: Arc<[MorphAttributes]>,
}

/// The joint matrices of a skin, as Bevy's `extract_skins` computes them (bevy_pbr
/// render/skin.rs `add_skin`): each joint's `GlobalTransform` times its inverse bindpose;
/// the identity where the joint or its bindpose is missing.
pub(crate) fn joint_matrices<'a>(
    joints: &'a [Entity],
    inverse_bindposes: Option<&'a [Mat4]>,
    transform_of: impl Fn(Entity) -> Option<&'a GlobalTransform> + 'a,
) -> impl Iterator<Item = Mat4> + 'a {
    joints.iter().enumerate().map(move |(index, &joint)| {
        let bindpose = inverse_bindposes.and_then(|poses| poses.get(index));
        match (bindpose, transform_of(joint)) {
            (Some(bindpose), Some(transform)) => transform.affine() * *bindpose,
            _ => Mat4::IDENTITY,
        }
    })
}

/// A `StandardMaterial` as the tile path draws it.
#[derive(Clone, Debug)]
pub(crate) struct TileMaterial {
    /// The uniform data (flags include which textures are real).
    pub uniform: GpuMaterial,
    /// base colour, emissive, metallic-roughness, occlusion, normal map.
    pub textures: [Option<MaterialTexture>; 5],
    /// An image of `textures` is not loaded yet: its sampler (taken as Bevy's default) and its
    /// format are not known, so the material is converted again next frame.
    pub images_pending: bool,
    pub cull_mode: Option<Face>,
    pub alpha_mask: bool,
    /// `AlphaMode::AlphaToCoverage`: with MSAA the alpha decides how many samples the fragment
    /// covers; without, it is the mask at 0.5 (`alpha_mask`), as Bevy treats it.
    pub alpha_to_coverage: bool,
    /// Transparent (`AlphaMode::Blend`, `Premultiplied`, `Add`, `Multiply`): drawn sorted in
    /// the transparent pass with this blend, not into the G-buffer.
    pub blend: Option<TransparentBlend>,
    /// `StandardMaterial::depth_bias`: added to a transparent mesh's sort distance, and (as
    /// Bevy's pipelines do) the constant depth bias of its pipeline.
    pub depth_bias: f32,
    /// `StandardMaterial::lightmap_exposure`: scales the light of a `Lightmap` drawn with it.
    pub lightmap_exposure: f32,
    /// Bumped on every change, so descriptor sets are rebuilt.
    pub generation: u64,
}

impl TileMaterial {
    /// The G-buffer subpass writes light for the material without a lightmap: it is emissive
    /// (`gbuffer.frag` multiplies the emissive texture by the colour, so a black colour emits
    /// nothing whatever the texture) or unlit (its base colour is its light).
    pub(crate) fn emits_light(&self) -> bool {
        let [r, g, b, _] = self.uniform.emissive;
        [r, g, b].iter().any(|&channel| channel != 0.0)
            || self.uniform.flags[0] & material_flags::UNLIT != 0
    }
}

/// Extracted materials by asset id.
#[derive(Resource, Default)]
pub(crate) struct TileMaterials {
    pub by_id: HashMap<AssetId<StandardMaterial>, TileMaterial>,
    generation: u64,
}

impl TileMaterials {
    /// Bumped by every material converted again: a view's batches (which hold what they took
    /// from materials: blending, lightmap exposure) are built again under another.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
}

/// What an instance is extracted from: a mesh with a `StandardMaterial`.
type StandardMeshData = (
    Entity,
    &'static Mesh3d,
    &'static MeshMaterial3d<StandardMaterial>,
    &'static GlobalTransform,
    &'static ViewVisibility,
    Has<NotShadowReceiver>,
    Option<&'static SkinnedMesh>,
    Option<&'static MeshMorphWeights>,
    Option<&'static Lightmap>,
);

type VisibleStandardMeshes<'w, 's> = Query<'w, 's, StandardMeshData>;

/// The meshes whose instance changed since the last extraction, read in one pass rather than
/// collected and looked up again by entity (3.1 -> 1.15 ms per frame on lavapipe's host with
/// 10,000 of 100,000 meshes moving; no clear saving on an H100's host, where it stays 3.5 ms).
type ChangedStandardMeshes<'w, 's> = Query<'w, 's, StandardMeshData, InstanceChanged>;

/// One item of [`VisibleStandardMeshes`].
type StandardMeshItem<'a> = (
    Entity,
    &'a Mesh3d,
    &'a MeshMaterial3d<StandardMaterial>,
    &'a GlobalTransform,
    &'a ViewVisibility,
    bool,
    Option<&'a SkinnedMesh>,
    Option<&'a MeshMorphWeights>,
    Option<&'a Lightmap>,
);

/// The images a lightmap's sampler comes from, their changes, and the app's default sampler.
type ImageSources<'w, 's> = (
    Extract<'w, 's, Res<'static, Assets<Image>>>,
    Extract<'w, 's, MessageReader<'static, 'static, AssetEvent<Image>>>,
    Option<Res<'w, DefaultImageSamplerDescriptor>>,
);

/// What the extraction of skinned and morphed meshes reads of the main world: joint
/// transforms, `MorphWeights`, inverse bindposes, meshes (their displacements) and their changes.
type AnimationSources<'w, 's> = (
    Extract<'w, 's, Query<'static, 'static, &'static GlobalTransform>>,
    Extract<'w, 's, Query<'static, 'static, &'static MorphWeights>>,
    Extract<'w, 's, Res<'static, Assets<SkinnedMeshInverseBindposes>>>,
    Extract<'w, 's, Res<'static, Assets<Mesh>>>,
    Extract<'w, 's, MessageReader<'static, 'static, AssetEvent<Mesh>>>,
);

/// Takes a tile camera with an empty viewport (0 x 0, 0 x N) out of this frame's views, as
/// Bevy does for a camera whose target is empty: the tile pass has nothing to draw into, and
/// Bevy's own view preparation would create zero-size textures and set zero-size viewports for
/// it (a wgpu validation error, on which Bevy quits the app; stock Bevy cameras do the same).
pub(crate) fn skip_empty_viewports(
    mut commands: Commands,
    cameras: Extract<Query<(RenderEntity, &Camera), With<TileDeferred>>>,
) {
    for (render_entity, camera) in &cameras {
        if camera
            .viewport
            .as_ref()
            .is_some_and(|viewport| viewport.physical_size.cmpeq(UVec2::ZERO).any())
        {
            commands
                .entity(render_entity)
                .remove::<(ExtractedCamera, ExtractedView, RenderVisibleEntities)>();
        }
    }
}

/// Render-world marker on a point, spot or directional light the tile path does not draw: a
/// NaN or infinite value (range, intensity, radius, colour, position, direction, spot angles)
/// would put it in no cluster or in every one and write NaN into every pixel it reaches. Reported once per light when it is first skipped.
#[derive(Component)]
pub(crate) struct TileSkippedLight;

/// Why a point or spot light cannot be drawn, if it cannot.
fn unusable_point_light(light: &ExtractedPointLight) -> Option<String> {
    let (scale, _, translation) = light.transform.to_scale_rotation_translation();
    let mut bad: Vec<&str> = Vec::new();
    let mut check = |finite: bool, what| {
        if !finite {
            bad.push(what);
        }
    };
    check(light.range.is_finite(), "range");
    check(light.intensity.is_finite(), "intensity");
    check(light.radius.is_finite(), "radius");
    check(light.color.to_vec4().is_finite(), "colour");
    check(translation.is_finite(), "position");
    check(scale.is_finite(), "scale");
    if let Some((inner, outer)) = light.spot_light_angles {
        check(inner.is_finite() && outer.is_finite(), "spot angles");
    }
    (!bad.is_empty()).then(|| format!("not finite: {}", bad.join(", ")))
}

/// Why a directional light cannot be drawn, if it cannot.
fn unusable_directional_light(light: &ExtractedDirectionalLight) -> Option<String> {
    let direction = light.transform.affine().matrix3.z_axis;
    let mut bad: Vec<&str> = Vec::new();
    if !light.illuminance.is_finite() {
        bad.push("illuminance");
    }
    if !light.color.to_vec4().is_finite() {
        bad.push("colour");
    }
    if !direction.is_finite() {
        bad.push("direction");
    }
    (!bad.is_empty()).then(|| format!("not finite: {}", bad.join(", ")))
}

/// Marks the lights the tile path cannot draw ([`TileSkippedLight`]; the tile pass reads only
/// unmarked lights) and says once per light which value is wrong; unmarks a light once its
/// values are usable again. Bevy's own cameras still see every light.
pub(crate) fn skip_unusable_lights(
    mut commands: Commands,
    points: Query<(
        Entity,
        &MainEntity,
        &ExtractedPointLight,
        Has<TileSkippedLight>,
    )>,
    directionals: Query<(
        Entity,
        &MainEntity,
        &ExtractedDirectionalLight,
        Has<TileSkippedLight>,
    )>,
    mut reported: Local<EntityHashSet>,
) {
    let lights = points
        .iter()
        .map(|(entity, main, light, skipped)| {
            let kind = if light.spot_light_angles.is_some() {
                "spot"
            } else {
                "point"
            };
            (
                entity,
                main.id(),
                kind,
                unusable_point_light(light),
                skipped,
            )
        })
        .chain(directionals.iter().map(|(entity, main, light, skipped)| {
            let why = unusable_directional_light(light);
            (entity, main.id(), "directional", why, skipped)
        }));
    for (entity, main, kind, why, skipped) in lights {
        match (why, skipped) {
            (Some(why), false) => {
                if reported.insert(main) {
                    warn!(
                        "bevy_tile_deferred: {kind} light {main} is not drawn by the tile path:                          {why}"
                    );
                }
                commands.entity(entity).insert(TileSkippedLight);
            }
            (None, true) => {
                commands.entity(entity).remove::<TileSkippedLight>();
            }
            _ => {}
        }
    }
}

/// What may change a mesh's instance: any of these changed or added on an entity puts it in
/// the extraction (and the removal of any of them, [`InstanceRemovals`]).
type InstanceChanged = Or<(
    Changed<Mesh3d>,
    Changed<MeshMaterial3d<StandardMaterial>>,
    Changed<GlobalTransform>,
    Changed<ViewVisibility>,
    Changed<NotShadowReceiver>,
    Changed<SkinnedMesh>,
    Changed<MeshMorphWeights>,
    Changed<Lightmap>,
)>;

/// The removals that change an instance: its mesh or material (a despawn removes both), or
/// what made it differ from a plain instance.
type InstanceRemovals<'w, 's> = (
    Extract<'w, 's, RemovedComponents<'static, 'static, Mesh3d>>,
    Extract<'w, 's, RemovedComponents<'static, 'static, MeshMaterial3d<StandardMaterial>>>,
    Extract<'w, 's, RemovedComponents<'static, 'static, NotShadowReceiver>>,
    Extract<'w, 's, RemovedComponents<'static, 'static, SkinnedMesh>>,
    Extract<'w, 's, RemovedComponents<'static, 'static, MeshMorphWeights>>,
    Extract<'w, 's, RemovedComponents<'static, 'static, Lightmap>>,
);

/// Meshes whose instance may change while their entity does not: skinned ones (their joints
/// move), morphed ones (a referenced `MorphWeights` changes elsewhere) and lightmapped ones (the
/// lightmap's sampler is known once its image has loaded).
type AnimatedOrLightmapped<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        Has<SkinnedMesh>,
        Has<MeshMorphWeights>,
        Option<&'static Lightmap>,
    ),
    (
        With<Mesh3d>,
        Or<(With<SkinnedMesh>, With<MeshMorphWeights>, With<Lightmap>)>,
    ),
>;

/// Extracts the visible `StandardMaterial` meshes while a tile camera exists, with the joint
/// matrices of the skinned ones and the weights and displacements of the morphed ones.
///
/// The first frame with a tile camera extracts every mesh; later frames only the entities whose
/// components changed or were removed, and the animated and lightmapped ones, as Bevy's
/// `extract_meshes_for_gpu_building` does.
pub(crate) fn extract_tile_meshes(
    tile_cameras: Extract<Query<(), With<TileDeferred>>>,
    meshes: Extract<VisibleStandardMeshes>,
    changed: Extract<ChangedStandardMeshes>,
    every_frame: Extract<AnimatedOrLightmapped>,
    mut removals: InstanceRemovals,
    (transforms, morph_weights, bindposes, mesh_assets, mut mesh_events): AnimationSources,
    (images, mut image_events, default_sampler): ImageSources,
    mut instances: ResMut<TileMeshInstances>,
) {
    let instances = &mut *instances;
    instances.extraction += 1;
    // A lightmap's sampler is its image's: extracted again when an image changes.
    let images_changed = image_events.read().count() > 0;
    instances.changed.clear();
    instances.joints.clear();
    instances.morph_weights.clear();
    for event in mesh_events.read() {
        if let AssetEvent::Modified { id } | AssetEvent::Removed { id } = event {
            instances.morph_targets.remove(id);
            // Its layout, and with it the pipeline its batches draw with, may have changed.
            instances.layout_generation += 1;
        }
    }
    // The removals are read every frame, so that a frame with a tile camera never sees stale
    // ones.
    let (meshes_removed, materials_removed, receivers, skins, morphs, lightmaps) = &mut removals;
    let removed: EntityHashSet = meshes_removed
        .read()
        .chain(materials_removed.read())
        .chain(receivers.read())
        .chain(skins.read())
        .chain(morphs.read())
        .chain(lightmaps.read())
        .collect();
    if tile_cameras.is_empty() {
        if !instances.by_entity.is_empty() || !instances.morph_targets.is_empty() {
            instances.by_entity.clear();
            instances.materials.clear();
            instances.morph_targets.clear();
            instances.layout_generation += 1;
        }
        instances.populated = false;
        return;
    }
    let image_context = ImageContext {
        images: &images,
        default_sampler: default_sampler.as_deref().map(|d| &d.0),
    };
    let sources = InstanceSources {
        transforms: &transforms,
        morph_weights: &morph_weights,
        bindposes: &bindposes,
        mesh_assets: &mesh_assets,
        images: &image_context,
    };
    if !instances.populated {
        // The first frame with a tile camera: everything visible.
        for item in &meshes {
            instances.update(item.0, Some(item), &sources);
        }
        instances.populated = true;
        return;
    }
    // Skinned and morphed meshes every frame; lightmapped ones while their image loads, or when
    // an image changed.
    let animated_or_lightmapped = every_frame
        .iter()
        .filter(|(_, skinned, morphed, lightmap)| {
            *skinned
                || *morphed
                || lightmap.is_some_and(|map| images_changed || !images.contains(&map.image))
        })
        .map(|(entity, ..)| entity);
    // These are few: looked up one by one, and each extracted once (a moving skinned mesh is
    // also among the changed ones).
    let looked_up: EntityHashSet = animated_or_lightmapped.chain(removed).collect();
    for item in changed.iter().filter(|item| !looked_up.contains(&item.0)) {
        instances.update(item.0, Some(item), &sources);
    }
    for entity in looked_up {
        instances.update(entity, meshes.get(entity).ok(), &sources);
    }
}

/// What extracting one instance reads besides its entity.
struct InstanceSources<'a, 'w, 's> {
    transforms: &'a Query<'w, 's, &'static GlobalTransform>,
    morph_weights: &'a Query<'w, 's, &'static MorphWeights>,
    bindposes: &'a Assets<SkinnedMeshInverseBindposes>,
    mesh_assets: &'a Assets<Mesh>,
    images: &'a ImageContext<'a>,
}

impl TileMeshInstances {
    /// Extracts `entity` again from `item` (`None`: it is no mesh with a `StandardMaterial`
    /// any more): inserts, rewrites or removes its instance, and notes whether the views'
    /// batches or only their instance data change.
    fn update(
        &mut self,
        entity: Entity,
        item: Option<StandardMeshItem>,
        sources: &InstanceSources,
    ) {
        let main = MainEntity::from(entity);
        let extracted = item.and_then(|item| self.extract(item, sources));
        let (old, new_key) = match extracted {
            Some(instance) => {
                let key = instance.batch_key();
                (self.by_entity.insert(main, instance), Some(key))
            }
            None => (self.by_entity.remove(&main), None),
        };
        match (&old, new_key) {
            (None, None) => return,
            // The same batch (its material included): only the instance's data changed, the
            // common case of a moving mesh.
            (Some(old), Some(key)) if old.batch_key() == key => {
                self.changed.push(main);
                return;
            }
            _ => {}
        }
        if let Some((_, material, ..)) = new_key {
            self.count_material(material, 1);
        }
        if let Some(old) = &old {
            self.count_material(old.material, -1);
        }
        self.layout_generation += 1;
    }

    /// Counts an instance in (`+1`) or out (`-1`) of its material.
    fn count_material(&mut self, material: AssetId<StandardMaterial>, delta: i32) {
        let count = self.materials.entry(material).or_default();
        *count = count.saturating_add_signed(delta);
        if *count == 0 {
            self.materials.remove(&material);
        }
    }

    /// The instance of a visible mesh (`None` for a hidden one), its joints and weights
    /// appended to this frame's.
    fn extract(
        &mut self,
        (_, mesh, material, transform, visibility, not_shadow_receiver, skin, morph, lightmap): StandardMeshItem,
        sources: &InstanceSources,
    ) -> Option<TileMeshInstance> {
        if !visibility.get() {
            return None;
        }
        let skin = skin.map(|skin| {
            let start = self.joints.len() as u32;
            let bindposes = sources.bindposes.get(&skin.inverse_bindposes);
            self.joints.extend(joint_matrices(
                &skin.joints,
                bindposes.map(|poses| &poses[..]),
                |joint| sources.transforms.get(joint).ok(),
            ));
            (start, skin.joints.len() as u32)
        });
        // As Bevy's `extract_morphs`: the weights of the mesh, or of the entity it refers to
        // (none where that entity has no `MorphWeights`).
        let morph_weights = morph.and_then(|morph| {
            let weights = match morph {
                MeshMorphWeights::Reference(entity) => {
                    sources.morph_weights.get(*entity).ok()?.weights()
                }
                MeshMorphWeights::Value { weights } => weights.as_slice(),
            };
            let start = self.morph_weights.len() as u32;
            self.morph_weights.extend_from_slice(weights);
            Some((start, weights.len() as u32))
        });
        if morph_weights.is_some() && !self.morph_targets.contains_key(&mesh.id()) {
            // A mesh kept only in the render world has no displacements here any more
            // (`missing.rs` reports it); it is drawn undisplaced.
            let targets = sources.mesh_assets.get(&mesh.0).and_then(|mesh| {
                mesh.try_morph_targets()
                    .ok()
                    .map(|targets| Arc::from(&targets[..]))
            });
            if let Some(attributes) = targets {
                self.morph_generation += 1;
                let generation = self.morph_generation;
                self.morph_targets.insert(
                    mesh.id(),
                    MorphTargets {
                        generation,
                        attributes,
                    },
                );
            }
        }
        Some(TileMeshInstance {
            mesh: mesh.id(),
            material: material.id(),
            world_from_local: transform.affine(),
            shadow_receiver: !not_shadow_receiver,
            skin,
            morph_weights,
            lightmap: lightmap.and_then(|lightmap| {
                Some(TileLightmap {
                    texture: texture(&Some(lightmap.image.clone()), sources.images)?,
                    uv_rect: pack_lightmap_uv_rect(lightmap.uv_rect),
                    bicubic: lightmap.bicubic_sampling,
                })
            }),
        })
    }
}

/// Whether Bevy draws anything of `mesh`: vertices, and indices where it is indexed.
pub(crate) fn has_something_to_draw(mesh: &RenderMesh) -> bool {
    let indices = match mesh.buffer_info {
        RenderMeshBufferInfo::Indexed { count, .. } => count,
        RenderMeshBufferInfo::NonIndexed => u32::MAX,
    };
    mesh.vertex_count > 0 && indices > 0
}

/// Extracts materials used by visible instances (each once, however many instances share it)
/// that are new or changed. A material is also extracted again when one of its images changes
/// (its sampler or format may have), and each frame while one of its images is still loading
/// (until then the sampler and the normal map's format are unknown).
pub(crate) fn extract_tile_materials(
    mut events: Extract<MessageReader<AssetEvent<StandardMaterial>>>,
    mut image_events: Extract<MessageReader<AssetEvent<Image>>>,
    assets: Extract<Res<Assets<StandardMaterial>>>,
    images: Extract<Res<Assets<Image>>>,
    default_sampler: Option<Res<DefaultImageSamplerDescriptor>>,
    instances: Res<TileMeshInstances>,
    mut materials: ResMut<TileMaterials>,
) {
    for event in events.read() {
        match event {
            AssetEvent::Modified { id } | AssetEvent::Added { id } => {
                materials.by_id.remove(id);
            }
            AssetEvent::Removed { id } | AssetEvent::Unused { id } => {
                materials.by_id.remove(id);
            }
            _ => {}
        }
    }
    let changed_images: Vec<AssetId<Image>> = image_events
        .read()
        .filter_map(|event| match event {
            AssetEvent::Modified { id } | AssetEvent::Added { id } => Some(*id),
            _ => None,
        })
        .collect();
    let context = ImageContext {
        images: &images,
        default_sampler: default_sampler.as_deref().map(|d| &d.0),
    };
    for &id in instances.materials.keys() {
        let existing = materials.by_id.get(&id);
        let stale = existing.is_none_or(|m| {
            m.images_pending
                || m.textures
                    .iter()
                    .flatten()
                    .any(|t| changed_images.contains(&t.image))
        });
        if !stale {
            continue;
        }
        let Some(material) = assets.get(id) else {
            continue;
        };
        let converted = convert_material(material, &context, materials.generation + 1);
        // Unchanged (an image still loading): keep the generation, so that the descriptor
        // set is not rebuilt every frame.
        let unchanged = existing.is_some_and(|m| {
            m.uniform == converted.uniform
                && m.textures == converted.textures
                && m.images_pending == converted.images_pending
        });
        if !unchanged {
            materials.generation += 1;
            materials.by_id.insert(id, converted);
        }
    }
}

/// What converting a material reads besides the material: its images and the app's default
/// sampler.
struct ImageContext<'a> {
    images: &'a Assets<Image>,
    default_sampler: Option<&'a ImageSamplerDescriptor>,
}

fn texture(handle: &Option<Handle<Image>>, context: &ImageContext) -> Option<MaterialTexture> {
    let handle = handle.as_ref()?;
    let sampler = context
        .images
        .get(handle)
        .map_or_else(SamplerKey::bevy_default, |image| {
            SamplerKey::for_image(&image.sampler, context.default_sampler)
        });
    Some(MaterialTexture {
        image: handle.id(),
        sampler,
    })
}

/// The formats Bevy treats as two-component normal maps (z reconstructed).
fn is_two_component(format: TextureFormat) -> bool {
    matches!(
        format,
        TextureFormat::Rg8Unorm
            | TextureFormat::Rg16Unorm
            | TextureFormat::Bc5RgUnorm
            | TextureFormat::EacRg11Unorm
    )
}

fn convert_material(
    material: &StandardMaterial,
    context: &ImageContext,
    generation: u64,
) -> TileMaterial {
    let images = context.images;
    let textures = [
        texture(&material.base_color_texture, context),
        texture(&material.emissive_texture, context),
        texture(&material.metallic_roughness_texture, context),
        texture(&material.occlusion_texture, context),
        texture(&material.normal_map_texture, context),
    ];
    let images_pending = textures
        .iter()
        .flatten()
        .any(|t| images.get(t.image).is_none());
    let mut flags = 0;
    for (slot, bit) in [
        material_flags::BASE_COLOR_TEXTURE,
        material_flags::EMISSIVE_TEXTURE,
        material_flags::METALLIC_ROUGHNESS_TEXTURE,
        material_flags::OCCLUSION_TEXTURE,
        material_flags::NORMAL_MAP_TEXTURE,
    ]
    .into_iter()
    .enumerate()
    {
        if textures[slot].is_some() {
            flags |= bit;
        }
    }
    for (channel, bit) in [
        (
            &material.base_color_channel,
            material_flags::BASE_COLOR_UV_B,
        ),
        (&material.emissive_channel, material_flags::EMISSIVE_UV_B),
        (
            &material.metallic_roughness_channel,
            material_flags::METALLIC_ROUGHNESS_UV_B,
        ),
        (&material.occlusion_channel, material_flags::OCCLUSION_UV_B),
        (
            &material.normal_map_channel,
            material_flags::NORMAL_MAP_UV_B,
        ),
    ] {
        if *channel == UvChannel::Uv1 {
            flags |= bit;
        }
    }
    if material.unlit {
        flags |= material_flags::UNLIT;
    }
    if material.double_sided {
        flags |= material_flags::DOUBLE_SIDED;
    }
    if material.flip_normal_map_y {
        flags |= material_flags::FLIP_NORMAL_MAP_Y;
    }
    if !material.fog_enabled {
        flags |= material_flags::FOG_DISABLED;
    }
    let normal_map_format = material
        .normal_map_texture
        .as_ref()
        .and_then(|handle| images.get(handle))
        .map(|image| image.texture_descriptor.format);
    if normal_map_format.is_some_and(is_two_component) {
        flags |= material_flags::TWO_COMPONENT_NORMAL_MAP;
    }
    let (alpha_mask, cutoff, blend) = match material.alpha_mode {
        AlphaMode::Opaque => (false, 0.5, None),
        AlphaMode::Mask(cutoff) => (true, cutoff, None),
        // Without MSAA Bevy treats alpha-to-coverage as a mask at 0.5.
        AlphaMode::AlphaToCoverage => (true, 0.5, None),
        AlphaMode::Blend => (false, 0.5, Some(TransparentBlend::Alpha)),
        AlphaMode::Premultiplied => (false, 0.5, Some(TransparentBlend::Premultiplied)),
        AlphaMode::Add => (false, 0.5, Some(TransparentBlend::Add)),
        AlphaMode::Multiply => (false, 0.5, Some(TransparentBlend::Multiply)),
    };
    if alpha_mask {
        flags |= material_flags::ALPHA_MASK;
    }
    let base_color = LinearRgba::from(material.base_color);
    let uv = material.uv_transform;
    TileMaterial {
        uniform: GpuMaterial {
            base_color: base_color.to_f32_array(),
            emissive: [
                material.emissive.red,
                material.emissive.green,
                material.emissive.blue,
                material.emissive_exposure_weight,
            ],
            roughness_metallic_reflectance_cutoff: [
                material.perceptual_roughness,
                material.metallic,
                material.reflectance,
                cutoff,
            ],
            uv_transform_matrix: [
                uv.matrix2.x_axis.x,
                uv.matrix2.x_axis.y,
                uv.matrix2.y_axis.x,
                uv.matrix2.y_axis.y,
            ],
            uv_transform_translation: [uv.translation.x, uv.translation.y, 0.0, 0.0],
            flags: [flags, 0, 0, 0],
        },
        textures,
        images_pending,
        cull_mode: material.cull_mode,
        alpha_mask,
        alpha_to_coverage: material.alpha_mode == AlphaMode::AlphaToCoverage,
        blend,
        depth_bias: material.depth_bias,
        lightmap_exposure: material.lightmap_exposure,
        generation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bevy's skinning (bevy_pbr render/skin.rs, skinning.wgsl): joint matrix i is joint i's
    /// `GlobalTransform` (as an affine) times inverse bindpose i, and a vertex is placed by the
    /// weighted sum of its joints' matrices. A two-joint chain posed with a rotated, scaled
    /// joint: the matrices are Bevy's, a vertex at a joint's bind position follows that joint,
    /// and a joint or bindpose that is missing gives the identity, as in Bevy's `add_skin`.
    #[test]
    fn joint_matrices_are_bevys() {
        let mut world = World::new();
        let root = GlobalTransform::from(
            Transform::from_xyz(1.0, 2.0, 3.0).with_rotation(Quat::from_rotation_y(0.4)),
        );
        let bend = Transform::from_xyz(0.0, 0.8, 0.0)
            .with_rotation(Quat::from_rotation_z(0.7))
            .with_scale(Vec3::new(1.4, 1.0, 0.8));
        let base = root.mul_transform(Transform::from_xyz(0.0, -0.8, 0.0));
        let middle = base.mul_transform(bend);
        let joints = [world.spawn_empty().id(), world.spawn_empty().id()];
        let inverse_bindposes = [
            Mat4::from_translation(Vec3::new(0.0, 0.8, 0.0)),
            Mat4::IDENTITY,
        ];
        let transforms = [base, middle];
        let transform_of = |joint: Entity| {
            joints
                .iter()
                .position(|j| *j == joint)
                .map(|i| &transforms[i])
        };
        let matrices: Vec<Mat4> =
            joint_matrices(&joints, Some(&inverse_bindposes), transform_of).collect();
        // Bevy's formula, written out: the joint's world matrix times the inverse bindpose.
        for i in 0..2 {
            let bevy = transforms[i].to_matrix() * inverse_bindposes[i];
            assert!(matrices[i].abs_diff_eq(bevy, 1e-6), "joint {i}");
        }
        // A vertex at the base in bind pose (mesh space y = -0.8), fully weighted to joint 0,
        // lands where the mesh entity's transform puts it (joint 0 is not posed).
        let vertex = Vec3::new(0.0, -0.8, 0.0);
        let skinned = matrices[0].transform_point3(vertex);
        assert!(skinned.abs_diff_eq(root.transform_point(vertex), 1e-5));
        // A vertex above the middle joint, fully weighted to joint 1, is bent with it.
        let vertex = Vec3::new(0.3, 0.5, 0.0);
        let skinned = matrices[1].transform_point3(vertex);
        let expected = middle.transform_point(vertex);
        assert!(skinned.abs_diff_eq(expected, 1e-5), "{skinned} {expected}");
        // Half and half: the weighted sum of the two matrices, as skin_model sums them.
        let blended = 0.5 * matrices[0] + 0.5 * matrices[1];
        let halfway = blended.transform_point3(vertex);
        let mean = 0.5 * (matrices[0].transform_point3(vertex) + expected);
        assert!(halfway.abs_diff_eq(mean, 1e-5));
        // A missing joint or bindpose: the identity.
        let missing = world.spawn_empty().id();
        let three = [joints[0], missing, joints[1]];
        let with_missing: Vec<Mat4> =
            joint_matrices(&three, Some(&inverse_bindposes), transform_of).collect();
        assert_eq!(with_missing[1], Mat4::IDENTITY);
        assert_eq!(with_missing[2], Mat4::IDENTITY, "no third bindpose");
        let unposed: Vec<Mat4> = joint_matrices(&joints, None, transform_of).collect();
        assert_eq!(unposed, vec![Mat4::IDENTITY; 2]);
    }
}
