//! Stage 5, the draws: the view's visible meshes grouped into instanced draws by (mesh,
//! material), the point and spot lights packed for the lighting subpass, and the mesh buffers
//! the recording binds.

use super::{
    extract::{
        BatchKey, MorphTargets, TileMaterial, TileMeshInstance, TileMeshInstances,
        has_something_to_draw,
    },
    params::TileSceneParams,
};
use crate::tile_deferred::gpu::keys::{MaterialSetKey, MaterialTexture};
use crate::tile_deferred::{
    error::{TileError, TileResult},
    gpu::{
        mesh_draw::MeshBinding,
        pipelines::{GBUFFER_ATTRIBUTES, GbufferPipelineKey, TransparentPipeline},
        transforms::transform_axis,
        types::{GpuClusterableLight, GpuInstance, instance_flags},
    },
    lighting::shadows::ShadowLayers,
    report::TileInstanceBatches,
};
use crate::vulkan::conv;
use ash::vk;
use bevy::{
    ecs::entity::EntityHashMap,
    math::Affine3A,
    mesh::{Mesh, MeshVertexAttribute, PrimitiveTopology},
    pbr::ExtractedPointLight,
    platform::collections::HashMap,
    prelude::*,
    render::{
        mesh::{RenderMesh, RenderMeshBufferInfo},
        render_resource::Face,
        sync_world::MainEntity,
        sync_world::{MainEntityHashMap, MainEntityHashSet},
        view::{RenderVisibleEntities, RenderVisibleEntitiesClass},
    },
};
use wgpu::hal::{self, api::Vulkan};

/// One instanced draw of a mesh with a material.
#[derive(Clone)]
pub(crate) struct Draw {
    pub(crate) mesh: AssetId<Mesh>,
    pub(crate) material: AssetId<StandardMaterial>,
    /// The lightmap its instances sample (they share it: draws are split by lightmap image).
    pub(crate) lightmap: Option<MaterialTexture>,
    pub(crate) pipeline_key: GbufferPipelineKey,
    pub(crate) first_instance: u32,
    pub(crate) instance_count: u32,
}

/// What the view draws this frame.
pub(crate) struct DrawList {
    /// Opaque and alpha-masked meshes, into the G-buffer. Sorted by pipeline, then material, so
    /// the recording binds each as few times as it can.
    pub(crate) draws: Vec<Draw>,
    /// Transparent meshes, one draw per mesh, back to front as Bevy sorts `Transparent3d`: by
    /// the view-space z of the mesh's AABB centre plus the material's `depth_bias`.
    pub(crate) transparent: Vec<Draw>,
    /// How many instances the draws draw (`Draw::first_instance` counts from the first).
    pub(crate) instance_count: usize,
    /// What the view's instance buffer needs written this frame, by first instance: all of
    /// them when the batches were built, otherwise only the instances that changed and the
    /// transparent ones (sorted again each frame) after the opaque ones.
    pub(crate) instance_writes: InstanceWrites,
    /// The instances' joint matrices and morph data (`gbuffer.vert`'s `animation`).
    pub(crate) animation: AnimationData,
    /// Point and spot lights, as the lighting subpass reads them (`clusters` assigns them).
    pub(crate) lights: Vec<GpuClusterableLight>,
    /// Where Bevy put this frame's point and spot shadow maps.
    pub(crate) shadow_layers: ShadowLayers,
    /// Whether `draws` were batched this frame or kept from the last.
    pub(crate) batches: TileInstanceBatches,
}

/// Each tile view's batches as its last frame left them, by render-world view entity.
#[derive(Resource, Default)]
pub(crate) struct TileRetainedDraws {
    views: EntityHashMap<RetainedDraws>,
}

impl TileRetainedDraws {
    /// Takes `view`'s batches for its frame (put back with [`Self::put_back`]).
    pub(crate) fn take(&mut self, view: Entity) -> Option<RetainedDraws> {
        self.views.remove(&view)
    }

    /// Keeps `view`'s batches for its next frame.
    pub(crate) fn put_back(&mut self, view: Entity, draws: Option<RetainedDraws>) {
        if let Some(draws) = draws {
            self.views.insert(view, draws);
        }
    }
}

/// Forgets the batches of views that did not draw this frame: only the next consecutive frame
/// can keep them.
pub(crate) fn forget_stale_draws(
    mut retained: ResMut<TileRetainedDraws>,
    instances: Res<TileMeshInstances>,
) {
    let extraction = instances.extraction;
    retained
        .views
        .retain(|_, draws| draws.extraction == extraction);
}

/// The view's opaque batches as the last frame built them, kept so that a frame whose visible
/// meshes and batches are unchanged rewrites only the instances that changed instead of
/// batching every visible mesh again (issue 34: batching 10,000 meshes cost 1.9 ms per frame
/// on the H200's host).
#[derive(Default)]
pub(crate) struct RetainedDraws {
    /// The extraction (`TileMeshInstances::extraction`) the batches are up to date with.
    extraction: u64,
    /// The tile path's Vulkan backend they were uploaded with
    /// (`TileRenderReports::backends_created`): a new one has new, empty buffers.
    backend: u64,
    /// The extraction whose instances were last queued for upload into the view's instance
    /// buffer: a frame that failed before its uploads leaves the buffer behind `instances`,
    /// and the next frame writes them all.
    uploaded: u64,
    /// `TileMeshInstances::layout_generation` and `TileMaterials::generation` when built.
    layout_generation: u64,
    materials_generation: u64,
    samples: vk::SampleCountFlags,
    /// The view's meshes without CPU culling (`NoCpuCulling`), counted when built.
    gpu_culled: usize,
    /// The extraction the batches were built in, and the frames they are kept before
    /// scattered writes may regroup them ([`worth_regrouping`]).
    built_at: u64,
    regroup_wait: u64,
    /// Every opaque batch found a draw: none was skipped because its mesh or material was not
    /// ready (or had nothing to draw), which a later frame would have to find again (the
    /// transparent meshes are checked each frame anyway).
    complete: bool,
    /// The opaque and alpha-masked draws, `first_instance` into `instances`.
    draws: Vec<Draw>,
    /// Their instances, animation offsets as of the last frame.
    instances: Vec<GpuInstance>,
    /// Where each entity's instance is in `instances`.
    slot_of: MainEntityHashMap<u32>,
    /// The skinned and morphed instances among `instances`: their animation data is laid out
    /// again each frame.
    animated: Vec<(MainEntity, u32)>,
    /// The transparent meshes in view, sorted again each frame.
    transparent: Vec<MainEntity>,
    /// The meshes in view that Bevy draws over the tile frame instead (in entity order,
    /// `MaterialsOverTileView`), left out of `draws` and `transparent`.
    drawn_by_bevy: Vec<Entity>,
}

impl RetainedDraws {
    /// Whether this frame may patch the batches rather than build them: consecutive
    /// extractions, the same meshes in view (Bevy's lists of what became visible or hidden),
    /// and no batch, material or sample count changed.
    fn reusable(
        &self,
        scene: &TileSceneParams,
        visible: Option<&RenderVisibleEntitiesClass>,
        samples: vk::SampleCountFlags,
        drawn_by_bevy: &[Entity],
    ) -> bool {
        let instances = &scene.instances;
        let same_view = match visible {
            Some(class) => {
                class.added_entities.is_empty()
                    && class.removed_entities.is_empty()
                    && class.entities_gpu_culling.len() == self.gpu_culled
            }
            // No mesh in view, as before.
            None => self.draws.is_empty() && self.transparent.is_empty(),
        };
        self.complete
            && same_view
            && self.backend == scene.reports.backends_created()
            && self.uploaded == self.extraction
            && self.extraction + 1 == instances.extraction
            && self.layout_generation == instances.layout_generation
            && self.materials_generation == scene.materials.generation()
            && self.samples == samples
            && self.drawn_by_bevy == drawn_by_bevy
            // A mesh prepared again (a new layout) or placed elsewhere keeps its id: the
            // pipelines are checked each frame, a handful of draws.
            && self.draws.iter().all(|draw| {
                let key = &draw.pipeline_key;
                let (skinned, lightmapped) = (key.skin.is_some(), draw.lightmap.is_some());
                drawable(scene, draw.mesh, draw.material, samples, skinned, lightmapped)
                    .as_ref()
                    == Some(key)
            })
    }

    /// Batches the view's visible meshes but those Bevy draws over the tile frame
    /// (`drawn_by_bevy`, in entity order): the opaque ones by mesh, material, skinning and
    /// lightmap image; the transparent ones listed for sorting.
    fn build(
        scene: &TileSceneParams,
        visible: Option<&RenderVisibleEntitiesClass>,
        samples: vk::SampleCountFlags,
        drawn_by_bevy: &[Entity],
    ) -> Self {
        let instances = &scene.instances;
        let mut batches: HashMap<BatchKey, Vec<MainEntity>> = HashMap::default();
        let mut retained = Self {
            extraction: instances.extraction,
            backend: scene.reports.backends_created(),
            layout_generation: instances.layout_generation,
            materials_generation: scene.materials.generation(),
            samples,
            gpu_culled: visible.map_or(0, |class| class.entities_gpu_culling.len()),
            built_at: instances.extraction,
            regroup_wait: FIRST_REGROUP_WAIT,
            complete: true,
            drawn_by_bevy: drawn_by_bevy.to_vec(),
            ..default()
        };
        let visible_entities = visible.into_iter().flat_map(|class| class.iter_visible());
        for (_, main_entity) in visible_entities {
            let Some(instance) = instances.by_entity.get(main_entity) else {
                continue;
            };
            if drawn_by_bevy.binary_search(&main_entity.id()).is_ok() {
                continue;
            }
            let material = scene.materials.by_id.get(&instance.material);
            if material.is_some_and(|m| m.blend.is_some()) {
                retained.transparent.push(*main_entity);
                continue;
            }
            batches
                .entry(instance.batch_key())
                .or_default()
                .push(*main_entity);
        }
        // Sorted by pipeline, then material, so the recording binds each as few times as it
        // can.
        let mut keyed: Vec<(GbufferPipelineKey, BatchKey, Vec<MainEntity>)> = Vec::new();
        for (key, entities) in batches {
            let (mesh, material, skinned, lightmap) = key;
            match drawable(scene, mesh, material, samples, skinned, lightmap.is_some()) {
                Some(pipeline_key) => keyed.push((pipeline_key, key, entities)),
                None => retained.complete = false,
            }
        }
        keyed.sort_by(|a, b| {
            let lightmap = |key: &BatchKey| key.3.map(|l| l.image);
            (&a.0, a.1.1, lightmap(&a.1)).cmp(&(&b.0, b.1.1, lightmap(&b.1)))
        });
        // The meshes that changed this frame first in each batch: a mesh that moves tends to
        // move again, and the next frames then write a batch's moving instances as one run
        // (one copy region) instead of one run each.
        let changed_this_frame: MainEntityHashSet = instances.changed.iter().copied().collect();
        for (pipeline_key, (mesh, material, _, lightmap), mut entities) in keyed {
            if !changed_this_frame.is_empty() {
                let (mut changed, unchanged): (Vec<_>, Vec<_>) = entities
                    .into_iter()
                    .partition(|entity| changed_this_frame.contains(entity));
                changed.extend(unchanged);
                entities = changed;
            }
            retained.draws.push(Draw {
                mesh,
                material,
                lightmap,
                pipeline_key,
                first_instance: retained.instances.len() as u32,
                instance_count: entities.len() as u32,
            });
            for entity in entities {
                let slot = retained.instances.len() as u32;
                let instance = &instances.by_entity[&entity];
                if instance.skin.is_some() || instance.morph_weights.is_some() {
                    retained.animated.push((entity, slot));
                }
                retained.slot_of.insert(entity, slot);
                retained.instances.push(gpu_instance(scene, instance));
            }
        }
        retained
    }

    /// Rewrites the instances that this frame's extraction changed; returns their slots, in
    /// ascending order.
    fn patch(&mut self, scene: &TileSceneParams) -> Vec<u32> {
        let instances = &scene.instances;
        let mut rewritten = Vec::new();
        for entity in &instances.changed {
            if let (Some(&slot), Some(instance)) =
                (self.slot_of.get(entity), instances.by_entity.get(entity))
            {
                self.instances[slot as usize] = gpu_instance(scene, instance);
                rewritten.push(slot);
            }
        }
        self.extraction = instances.extraction;
        rewritten.sort_unstable();
        rewritten.dedup();
        rewritten
    }

    /// Notes that this frame's instances were queued for upload (a frame that fails after its
    /// uploads were queued drops them, and its batches with them).
    pub(crate) fn mark_uploaded(&mut self) {
        self.uploaded = self.extraction;
    }
}

impl DrawList {
    /// Batches the view's visible opaque meshes (or patches the batches `retained` kept from
    /// the last frame), sorts its transparent ones back to front (seen from
    /// `view_from_world`), and packs the scene's point and spot lights. The meshes Bevy draws
    /// over the tile frame (`drawn_by_bevy`, main-world entities in entity order) are left out.
    pub(crate) fn gather(
        scene: &TileSceneParams,
        visible: &RenderVisibleEntities,
        samples: vk::SampleCountFlags,
        view_from_world: &Mat4,
        drawn_by_bevy: &[Entity],
        retained: &mut Option<RetainedDraws>,
    ) -> Self {
        let class = visible.get::<Mesh3d>();
        // `None`: every instance is written.
        let (batches, mut dirty_slots, regrouped) = match retained.take() {
            Some(mut kept) if kept.reusable(scene, class, samples, drawn_by_bevy) => {
                let rewritten = kept.patch(scene);
                let runs = sorted_runs(&rewritten).count();
                let frames_kept = scene.instances.extraction.saturating_sub(kept.built_at);
                if worth_regrouping(runs, kept.draws.len(), frames_kept, kept.regroup_wait) {
                    let mut built = RetainedDraws::build(scene, class, samples, drawn_by_bevy);
                    built.regroup_wait = (kept.regroup_wait * 2).min(LONGEST_REGROUP_WAIT);
                    (built, None, Some(runs))
                } else {
                    (kept, Some(rewritten), None)
                }
            }
            _ => (
                RetainedDraws::build(scene, class, samples, drawn_by_bevy),
                None,
                None,
            ),
        };
        let rewritten = dirty_slots.as_ref().map(Vec::len);
        let batches = retained.insert(batches);
        let instances = &scene.instances;
        let mut animation = AnimationData::with_morph_meshes(
            scene,
            batches
                .animated
                .iter()
                .map(|(entity, _)| entity)
                .chain(&batches.transparent),
        );
        for (entity, slot) in &batches.animated {
            let (joints, morph) = animation.push_instance(scene, &instances.by_entity[entity]);
            let flags = &mut batches.instances[*slot as usize].flags;
            flags[1] = joints;
            flags[2] = morph;
            if let Some(dirty) = dirty_slots.as_mut() {
                dirty.push(*slot);
            }
        }
        let mut instance_writes = InstanceWrites::default();
        match dirty_slots {
            Some(slots) => {
                for run in changed_runs(slots) {
                    let changed = &batches.instances[run.start as usize..run.end as usize];
                    instance_writes.push(run.start, changed);
                }
            }
            None => instance_writes.push(0, &batches.instances),
        }
        let opaque_count = batches.instances.len() as u32;
        let mut gpu_instances: Vec<GpuInstance> = Vec::new();
        // (sort distance, entity, draw) of each transparent mesh: one draw per mesh, back to
        // front as Bevy sorts `Transparent3d`: by the view-space z of the mesh's AABB centre
        // plus the material's `depth_bias`.
        let view_z_row = view_from_world.row(2);
        let mut transparent: Vec<(f32, MainEntity, Draw)> = batches
            .transparent
            .iter()
            .filter_map(|entity| {
                let instance = &instances.by_entity[entity];
                let material = scene.materials.by_id.get(&instance.material)?;
                let skinned = instance.skin.is_some();
                let lightmapped = instance.lightmap.is_some();
                let pipeline_key = drawable(
                    scene,
                    instance.mesh,
                    instance.material,
                    samples,
                    skinned,
                    lightmapped,
                )?;
                let mut gpu = gpu_instance(scene, instance);
                let (joints, morph) = animation.push_instance(scene, instance);
                gpu.flags[1] = joints;
                gpu.flags[2] = morph;
                let center = scene.meshes.get(instance.mesh).map_or(Vec3::ZERO, |mesh| {
                    instance.world_from_local.transform_point3(mesh.aabb_center)
                });
                // Bevy's `ViewRangefinder3d::distance` plus the depth bias: ascending is back
                // to front.
                let distance = view_z_row.dot(center.extend(1.0)) + material.depth_bias;
                let draw = Draw {
                    mesh: instance.mesh,
                    material: instance.material,
                    lightmap: instance.lightmap.map(|map| map.texture),
                    pipeline_key,
                    first_instance: opaque_count + gpu_instances.len() as u32,
                    instance_count: 1,
                };
                gpu_instances.push(gpu);
                Some((distance, *entity, draw))
            })
            .collect();
        // Stable, with the entity as the tie-break, so equal distances draw in the same order
        // every frame.
        transparent.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let instance_count = opaque_count as usize + gpu_instances.len();
        instance_writes.push(opaque_count, &gpu_instances);
        let how = match (rewritten, regrouped) {
            (_, Some(scattered_runs)) => TileInstanceBatches::Regrouped { scattered_runs },
            (Some(rewritten), None) => TileInstanceBatches::Kept {
                rewritten,
                runs: instance_writes.runs.len(),
            },
            (None, None) => TileInstanceBatches::Built,
        };
        let draws = batches.draws.clone();
        let transparent = transparent.into_iter().map(|(_, _, draw)| draw).collect();
        let shadow_layers = scene.shadow_layers();
        let light_index = |entity: Entity| {
            let indices = scene.light_indices.as_deref()?;
            indices.entity_to_index.get(&entity).copied()
        };
        let lights = scene
            .point_lights
            .iter()
            .map(|(entity, light)| {
                let layer = light_index(entity).and_then(|i| shadow_layers.layer_of(i, light));
                clusterable_light(light, layer)
            })
            .collect();
        Self {
            draws,
            transparent,
            instance_count,
            instance_writes,
            animation,
            lights,
            shadow_layers,
            batches: how,
        }
    }
}

/// The instances a view writes into its instance buffer this frame: `instances` in order, one
/// run of slots after another (ascending, apart), copied into place in one command.
#[derive(Default)]
pub(crate) struct InstanceWrites {
    pub(crate) instances: Vec<GpuInstance>,
    pub(crate) runs: Vec<std::ops::Range<u32>>,
}

impl InstanceWrites {
    /// `instances` written from slot `first` on.
    fn push(&mut self, first: u32, instances: &[GpuInstance]) {
        if instances.is_empty() {
            return;
        }
        debug_assert!(self.runs.last().is_none_or(|run| run.end <= first));
        self.runs.push(first..first + instances.len() as u32);
        self.instances.extend_from_slice(instances);
    }
}

/// Kept batches whose rewritten instances need more copy regions than this (and than two per
/// draw) are worth batching again with the changed instances together. A copy region is not
/// free on every GPU: on the H200 and the H100, 10,000 regions of 80 bytes in one
/// `vkCmdCopyBuffer` made the frame 15 ms longer (100,000 meshes, every tenth moving: docs/measurements.md), while a few
/// dozen cost nothing measurable anywhere.
const SCATTERED_WRITE_RUNS: usize = 64;

/// Frames new batches are kept before scattered writes may batch them again: enough to see
/// which meshes keep changing.
const FIRST_REGROUP_WAIT: u64 = 4;

/// The longest wait between two regroups of a view. Each regroup doubles the wait before the
/// next: where the meshes that change are different ones every frame, regrouping cannot gather
/// them, and each regroup writes every instance once.
const LONGEST_REGROUP_WAIT: u64 = 256;

/// Whether kept batches, whose rewritten instances took `write_runs` copy regions this frame,
/// should be batched again with the changed instances first in each batch (`draws` batches,
/// kept for `frames_kept` frames of the `wait` they must be kept).
fn worth_regrouping(write_runs: usize, draws: usize, frames_kept: u64, wait: u64) -> bool {
    write_runs > SCATTERED_WRITE_RUNS.max(2 * draws) && frames_kept >= wait
}

/// The runs of consecutive slots among `slots` (in any order, repeats allowed), each written
/// as one upload.
fn changed_runs(mut slots: Vec<u32>) -> Vec<std::ops::Range<u32>> {
    slots.sort_unstable();
    slots.dedup();
    sorted_runs(&slots).collect()
}

/// The runs of consecutive slots in `slots` (ascending, no repeats), in order.
fn sorted_runs(slots: &[u32]) -> impl Iterator<Item = std::ops::Range<u32>> + '_ {
    slots
        .chunk_by(|a, b| *b == *a + 1)
        .map(|run| run[0]..run[run.len() - 1] + 1)
}

/// An instance as `gbuffer.vert` reads it, its animation offsets left at 0 (the frame's
/// animation data sets them).
fn gpu_instance(scene: &TileSceneParams, instance: &TileMeshInstance) -> GpuInstance {
    let mut flags = if instance.shadow_receiver {
        instance_flags::SHADOW_RECEIVER
    } else {
        0
    };
    let mut lightmap = [0; 4];
    if let Some(map) = &instance.lightmap {
        flags |= instance_flags::LIGHTMAPPED;
        if map.bicubic {
            flags |= instance_flags::LIGHTMAP_BICUBIC;
        }
        let material = scene.materials.by_id.get(&instance.material);
        let exposure = material.map_or(1.0, |m| m.lightmap_exposure);
        lightmap = [map.uv_rect[0], map.uv_rect[1], exposure.to_bits(), 0];
    }
    GpuInstance {
        world_from_local_rows: affine_rows(&instance.world_from_local),
        flags: [flags, 0, 0, 0],
        lightmap,
    }
}

/// The view's animation data, as `gbuffer.vert` reads it: per frame (set 0 binding 5, vec4s)
/// each skinned instance's joint matrices (4 columns each), each morphed instance's header
/// (first vertex, weight count, vertex count, where its mesh's displacements start; as bits)
/// and weights (4 to a vec4); and (binding 6) the displacements of each morphed mesh in view
/// once (Bevy's `MorphAttributes`: position, normal, tangent, each padded to a vec4), which a
/// view uploads again only when the meshes it draws change.
#[derive(Default)]
pub(crate) struct AnimationData {
    pub(crate) data: Vec<[f32; 4]>,
    /// The displacements of the morphed meshes in view, by ascending generation.
    pub(crate) morph_meshes: Vec<MorphTargets>,
    /// Where each morphed mesh's displacements start in the displacement buffer.
    displacements: HashMap<AssetId<Mesh>, u32>,
}

impl AnimationData {
    /// Lays out the displacements of the morphed meshes among `entities` (in generation order,
    /// so that the same meshes give the same buffer whatever order they are seen in).
    fn with_morph_meshes<'a>(
        scene: &TileSceneParams,
        entities: impl Iterator<Item = &'a MainEntity>,
    ) -> Self {
        let instances = &scene.instances;
        let mut meshes: Vec<(AssetId<Mesh>, &MorphTargets)> = entities
            .filter_map(|entity| instances.by_entity.get(entity))
            .filter(|instance| instance.morph_weights.is_some_and(|(_, n)| n > 0))
            .filter_map(|instance| {
                let targets = instances.morph_targets.get(&instance.mesh)?;
                Some((instance.mesh, targets))
            })
            .collect();
        meshes.sort_by_key(|(_, targets)| targets.generation);
        meshes.dedup_by_key(|(_, targets)| targets.generation);
        let mut data = Self::default();
        let mut at = 0;
        for (mesh, targets) in meshes {
            data.displacements.insert(mesh, at);
            at += 3 * targets.attributes.len() as u32;
            data.morph_meshes.push(targets.clone());
        }
        data
    }

    /// The generations of the displacements, identifying the displacement buffer's contents.
    pub(crate) fn morph_generations(&self) -> Vec<u64> {
        self.morph_meshes.iter().map(|m| m.generation).collect()
    }

    /// The displacement buffer's contents, as vec4s.
    pub(crate) fn displacement_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for mesh in &self.morph_meshes {
            bytes.extend_from_slice(bytemuck::cast_slice(&mesh.attributes));
        }
        bytes
    }

    /// Appends what `instance` needs; returns where its joints and its morph header start
    /// (`GpuInstance::flags` y and z; 0 where it has none).
    fn push_instance(
        &mut self,
        scene: &TileSceneParams,
        instance: &TileMeshInstance,
    ) -> (u32, u32) {
        let instances = &scene.instances;
        let joints = instance.skin.map_or(0, |(start, count)| {
            let at = self.data.len() as u32;
            let matrices = &instances.joints[start as usize..(start + count) as usize];
            self.data.extend(matrices.iter().flat_map(|m| {
                [m.x_axis, m.y_axis, m.z_axis, m.w_axis].map(|column| column.to_array())
            }));
            at
        });
        let Some(mesh) = scene.meshes.get(instance.mesh) else {
            return (joints, 0);
        };
        if !mesh.has_morph_targets() {
            return (joints, 0);
        }
        let first_vertex = scene
            .mesh_allocator
            .mesh_vertex_slice(&instance.mesh)
            .map_or(0, |slice| slice.range.start);
        let vertex_count = mesh.vertex_count.max(1);
        let displacements = self.displacements.get(&instance.mesh).copied();
        let available = displacements
            .and_then(|_| instances.morph_targets.get(&instance.mesh))
            .map_or(0, |targets| targets.attributes.len() as u32 / vertex_count);
        let weights = instance.morph_weights.map_or(&[][..], |(start, count)| {
            &instances.morph_weights[start as usize..(start + count) as usize]
        });
        // As many weights as Bevy reads (`weights.len()`), within the targets the mesh has.
        let weights = &weights[..weights.len().min(available as usize)];
        let header = self.data.len() as u32;
        self.data.push(
            [
                first_vertex,
                weights.len() as u32,
                vertex_count,
                displacements.unwrap_or(0),
            ]
            .map(f32::from_bits),
        );
        self.data.extend(weights.chunks(4).map(|chunk| {
            let mut vec = [0.0; 4];
            vec[..chunk.len()].copy_from_slice(chunk);
            vec
        }));
        (joints, header)
    }
}

impl Draw {
    /// The material descriptor set it binds.
    pub(crate) fn material_set_key(&self) -> MaterialSetKey {
        (self.material, self.lightmap)
    }
}

impl DrawList {
    /// Every draw: the G-buffer's, then the transparent pass's.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Draw> {
        self.draws.iter().chain(&self.transparent)
    }

    /// Sets what the pipelines are built for once the frame is planned: the sample count (the
    /// plan may lower the camera's), and whether transparent meshes blend into the light (an
    /// HDR camera) or over the tone-mapped output.
    pub(crate) fn set_target(&mut self, samples: vk::SampleCountFlags, into_light: bool) {
        for draw in self.draws.iter_mut().chain(&mut self.transparent) {
            draw.pipeline_key.samples = samples;
            if let Some(transparent) = draw.pipeline_key.transparent.as_mut() {
                transparent.into_light = into_light;
            }
        }
    }
}

/// The pipeline key of a mesh with a material, where both are ready to draw.
fn drawable(
    scene: &TileSceneParams,
    mesh_id: AssetId<Mesh>,
    material_id: AssetId<StandardMaterial>,
    samples: vk::SampleCountFlags,
    skinned: bool,
    lightmapped: bool,
) -> Option<GbufferPipelineKey> {
    let mesh = scene.meshes.get(mesh_id)?;
    // Bevy draws nothing of a mesh without vertices or with an empty index list, and the
    // allocator gives it no slice.
    if !has_something_to_draw(mesh) {
        return None;
    }
    let material = scene.materials.by_id.get(&material_id)?;
    // A mesh whose buffers the allocator has not placed yet (uploaded this frame, or after a
    // reallocation) is drawn from the next frame on, as Bevy does, instead of failing the whole
    // view in `mesh_bindings`.
    let indexed = matches!(mesh.buffer_info, RenderMeshBufferInfo::Indexed { .. });
    if scene.mesh_allocator.mesh_vertex_slice(&mesh_id).is_none()
        || (indexed && scene.mesh_allocator.mesh_index_slice(&mesh_id).is_none())
    {
        return None;
    }
    pipeline_key_for(mesh, material, samples, skinned, lightmapped)
}

/// Vertex attributes the G-buffer shader reads, in location order (Bevy's mesh pipeline reads
/// the same ones, and `StandardMaterial` nothing else but joints, [`SKIN_ATTRIBUTES`], and
/// morph targets).
const ATTRIBUTES: [MeshVertexAttribute; GBUFFER_ATTRIBUTES] = [
    Mesh::ATTRIBUTE_POSITION,
    Mesh::ATTRIBUTE_NORMAL,
    Mesh::ATTRIBUTE_UV_0,
    Mesh::ATTRIBUTE_TANGENT,
    Mesh::ATTRIBUTE_COLOR,
    Mesh::ATTRIBUTE_UV_1,
];

/// The joint attributes a skinned mesh is posed with (locations 9 and 10).
const SKIN_ATTRIBUTES: [MeshVertexAttribute; 2] =
    [Mesh::ATTRIBUTE_JOINT_INDEX, Mesh::ATTRIBUTE_JOINT_WEIGHT];

/// The G-buffer pipeline a mesh's layout and a material's state need, or `None` for a mesh
/// the G-buffer subpass cannot draw (no positions, a vertex format Vulkan has no equivalent
/// for). A `skinned` instance is skinned where its mesh has joint indices and weights (Bevy's
/// `SKINNED` asks for both, and draws it unskinned otherwise). A `lightmapped` instance puts its
/// lightmap's light into the light attachment.
fn pipeline_key_for(
    mesh: &RenderMesh,
    material: &TileMaterial,
    samples: vk::SampleCountFlags,
    skinned: bool,
    lightmapped: bool,
) -> Option<GbufferPipelineKey> {
    let layout = mesh.layout.0.layout();
    let ids = mesh.layout.0.attribute_ids();
    let find = |attribute: &MeshVertexAttribute| {
        let index = ids.iter().position(|id| *id == attribute.id)?;
        let a = &layout.attributes[index];
        Some(conv::vertex_format(a.format).map(|format| (format, a.offset as u32)))
    };
    let mut attributes = [None; GBUFFER_ATTRIBUTES];
    for (slot, attribute) in ATTRIBUTES.iter().enumerate() {
        if let Some(found) = find(attribute) {
            attributes[slot] = Some(found?);
        }
    }
    attributes[0]?;
    let skin = match SKIN_ATTRIBUTES.each_ref().map(find) {
        [Some(joints), Some(weights)] if skinned => Some([joints?, weights?]),
        _ => None,
    };
    let topology = match mesh.primitive_topology() {
        PrimitiveTopology::TriangleList => vk::PrimitiveTopology::TRIANGLE_LIST,
        PrimitiveTopology::TriangleStrip => vk::PrimitiveTopology::TRIANGLE_STRIP,
        PrimitiveTopology::LineList => vk::PrimitiveTopology::LINE_LIST,
        PrimitiveTopology::LineStrip => vk::PrimitiveTopology::LINE_STRIP,
        PrimitiveTopology::PointList => vk::PrimitiveTopology::POINT_LIST,
    };
    // Bevy gives an indexed strip its index format (`strip_index_format`), and wgpu then
    // enables primitive restart: the largest index value starts a new strip.
    let primitive_restart = mesh.primitive_topology().is_strip()
        && matches!(mesh.buffer_info, RenderMeshBufferInfo::Indexed { .. });
    Some(GbufferPipelineKey {
        stride: layout.array_stride as u32,
        attributes,
        skin,
        morph: mesh.has_morph_targets(),
        topology,
        primitive_restart,
        cull_mode: match material.cull_mode {
            Some(Face::Back) => vk::CullModeFlags::BACK,
            Some(Face::Front) => vk::CullModeFlags::FRONT,
            None => vk::CullModeFlags::NONE,
        },
        alpha_mask: material.alpha_mask,
        alpha_to_coverage: material.alpha_to_coverage,
        samples,
        transparent: material.blend.map(|blend| TransparentPipeline {
            blend,
            depth_bias: material.depth_bias as i32,
            into_light: false,
        }),
        emits_light: lightmapped || material.emits_light(),
    })
}

/// The three rows of an affine transform, as the instance buffer stores it.
fn affine_rows(affine: &Affine3A) -> [[f32; 4]; 3] {
    let m = affine.matrix3;
    let t = affine.translation;
    [
        [m.x_axis.x, m.y_axis.x, m.z_axis.x, t.x],
        [m.x_axis.y, m.y_axis.y, m.z_axis.y, t.y],
        [m.x_axis.z, m.y_axis.z, m.z_axis.z, t.z],
    ]
}

/// A point or spot light as the lighting shaders read it; `shadow_layer` is where Bevy rendered
/// its shadow map, if it did.
fn clusterable_light(
    light: &ExtractedPointLight,
    shadow_layer: Option<u32>,
) -> GpuClusterableLight {
    let color = light.color.to_f32_array();
    let (spot_scale, spot_offset, kind, tan_outer) = match light.spot_light_angles {
        Some((inner, outer)) => {
            let outer = outer.min(std::f32::consts::FRAC_PI_2 - 1e-4);
            let inner = inner.min(outer);
            let scale = 1.0 / (inner.cos() - outer.cos()).max(1e-4);
            (scale, -outer.cos() * scale, 1.0, outer.tan())
        }
        None => (0.0, 0.0, 0.0, 0.0),
    };
    GpuClusterableLight {
        position_radius: light
            .transform
            .translation()
            .extend(light.radius)
            .to_array(),
        color_inverse_square_range: [
            color[0] * light.intensity,
            color[1] * light.intensity,
            color[2] * light.intensity,
            // A zero range reaches nothing (the light is in no cluster); keep the value finite.
            1.0 / (light.range * light.range).max(f32::MIN_POSITIVE),
        ],
        spot_direction_range: spot_direction(light).extend(light.range).to_array(),
        spot_scale_offset_kind: [spot_scale, spot_offset, kind, tan_outer],
        shadow: [
            light.shadow_depth_bias,
            light.shadow_normal_bias,
            light.shadow_map_near_z,
            shadow_layer.map_or(-1.0, |layer| layer as f32),
        ],
    }
}

/// Where a light points: its transform's forward axis. Only spot lights read it; a
/// degenerate transform (a light parented to a mesh scaled to zero, as Bevy's
/// `spherical_area_lights` example does) has none, and `GlobalTransform::forward` would
/// panic on it, so such a light points down -Z, as an unrotated one does.
fn spot_direction(light: &ExtractedPointLight) -> Vec3 {
    transform_axis(&light.transform, Vec3::NEG_Z)
}

/// The vertex and index buffers of each draw's mesh, as the hal encoder binds them.
pub(crate) fn mesh_bindings(
    scene: &TileSceneParams,
    draws: &[Draw],
) -> TileResult<Vec<MeshBinding>> {
    let hal_buffer = |buffer: &wgpu::Buffer| -> TileResult<*const hal::vulkan::Buffer> {
        // SAFETY: the guard is taken alone (never inside `as_hal_mut`, never two at once: the
        // snatch lock is not re-entrant); the pointer is used only while this system runs,
        // during which Bevy neither destroys nor replaces mesh slab buffers.
        let guard = unsafe { buffer.as_hal::<Vulkan>() }.ok_or(TileError::Missing {
            step: "reading a mesh buffer",
        })?;
        Ok(&*guard as *const hal::vulkan::Buffer)
    };
    draws
        .iter()
        .map(|draw| {
            let mesh = scene.meshes.get(draw.mesh).ok_or(TileError::Missing {
                step: "finding a drawn mesh",
            })?;
            let vertex =
                scene
                    .mesh_allocator
                    .mesh_vertex_slice(&draw.mesh)
                    .ok_or(TileError::Missing {
                        step: "finding a mesh's vertices",
                    })?;
            let index = match mesh.buffer_info {
                RenderMeshBufferInfo::Indexed {
                    count,
                    index_format,
                } => {
                    let slice = scene.mesh_allocator.mesh_index_slice(&draw.mesh).ok_or(
                        TileError::Missing {
                            step: "finding a mesh's indices",
                        },
                    )?;
                    Some((
                        hal_buffer(slice.buffer)?,
                        slice.range.start,
                        count,
                        index_format,
                    ))
                }
                RenderMeshBufferInfo::NonIndexed => None,
            };
            Ok(MeshBinding {
                vertex_buffer: hal_buffer(vertex.buffer)?,
                first_vertex: vertex.range.start as i32,
                index,
                vertex_count: mesh.vertex_count,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point_light(transform: GlobalTransform, spot: Option<(f32, f32)>) -> ExtractedPointLight {
        ExtractedPointLight {
            color: LinearRgba::WHITE,
            intensity: 1000.0,
            range: 5.0,
            radius: 0.0,
            transform,
            shadow_maps_enabled: false,
            contact_shadows_enabled: false,
            shadow_depth_bias: 0.0,
            shadow_normal_bias: 0.0,
            shadow_map_near_z: 0.1,
            spot_light_angles: spot,
            volumetric: false,
            soft_shadows_enabled: false,
            affects_lightmapped_mesh_diffuse: true,
        }
    }

    #[test]
    fn changed_slots_are_written_in_runs() {
        let runs = changed_runs(vec![7, 3, 4, 9, 3, 8, 0]);
        assert_eq!(runs, [0..1, 3..5, 7..10]);
        assert_eq!(sorted_runs(&[0, 3, 4, 7, 8, 9]).count(), 3);
        assert_eq!(sorted_runs(&[5]).count(), 1);
        assert_eq!(sorted_runs(&[]).count(), 0);
    }

    #[test]
    fn scattered_writes_are_regrouped_only_when_many_and_kept_long_enough() {
        let wait = FIRST_REGROUP_WAIT;
        // Every tenth of 100,000 instances moving, in 9 batches: 10,000 runs.
        assert!(worth_regrouping(10_000, 9, wait, wait));
        // Not before the batches were kept their wait: a different set of meshes changing
        // every frame would otherwise write every instance every frame.
        assert!(!worth_regrouping(10_000, 9, wait - 1, wait));
        assert!(!worth_regrouping(10_000, 9, 100, LONGEST_REGROUP_WAIT));
        // A few dozen regions cost nothing: kept.
        assert!(!worth_regrouping(SCATTERED_WRITE_RUNS, 9, 1000, wait));
        // Two runs per batch are what regrouping leaves at best (moving ones, transparent).
        assert!(!worth_regrouping(200, 100, 1000, wait));
        assert!(worth_regrouping(201, 100, 1000, wait));
        assert!(changed_runs(Vec::new()).is_empty());
    }

    #[test]
    fn a_light_with_a_degenerate_transform_packs_finite_values() {
        // A light parented to a sphere scaled to zero (Bevy's spherical_area_lights example).
        for spot in [None, Some((0.2, 0.5))] {
            let zero_scale =
                GlobalTransform::from(Transform::from_xyz(1.0, 2.0, 3.0).with_scale(Vec3::ZERO));
            let gpu = clusterable_light(&point_light(zero_scale, spot), None);
            let values = [
                gpu.position_radius,
                gpu.color_inverse_square_range,
                gpu.spot_direction_range,
                gpu.spot_scale_offset_kind,
            ];
            assert!(
                values.iter().flatten().all(|v| v.is_finite()),
                "{spot:?}: {gpu:?}"
            );
            assert_eq!(gpu.position_radius[..3], [1.0, 2.0, 3.0]);
            assert_eq!(gpu.spot_direction_range[..3], [0.0, 0.0, -1.0]);
        }
    }

    #[test]
    fn a_spot_light_points_along_its_forward_axis() {
        let transform = GlobalTransform::from(
            Transform::from_xyz(0.0, 4.0, 0.0)
                .looking_at(Vec3::ZERO, Vec3::X)
                .with_scale(Vec3::splat(3.0)),
        );
        let gpu = clusterable_light(&point_light(transform, Some((0.1, 0.4))), None);
        let direction = Vec3::from_slice(&gpu.spot_direction_range[..3]);
        assert!(direction.abs_diff_eq(Vec3::NEG_Y, 1e-5), "{direction}");
        assert_eq!(gpu.spot_scale_offset_kind[2], 1.0);
    }
}
