//! Stage 5, the draws: the view's visible meshes grouped into instanced draws by (mesh,
//! material), the point and spot lights packed for the lighting subpass, and the mesh buffers
//! the recording binds.

use super::{
    extract::{MorphTargets, TileMaterial, TileMeshInstance},
    params::TileSceneParams,
};
use crate::tile_deferred::gpu::keys::{MaterialSetKey, MaterialTexture};
use crate::tile_deferred::{
    error::{TileError, TileResult},
    gpu::{
        pipelines::{GBUFFER_ATTRIBUTES, GbufferPipelineKey, TransparentPipeline},
        record::MeshBinding,
        transforms::transform_axis,
        types::{GpuClusterableLight, GpuInstance, instance_flags},
    },
    lighting::shadows::ShadowLayers,
};
use crate::vulkan::conv;
use ash::vk;
use bevy::{
    math::Affine3A,
    mesh::{Mesh, MeshVertexAttribute, PrimitiveTopology},
    pbr::ExtractedPointLight,
    platform::collections::HashMap,
    prelude::*,
    render::{
        mesh::{RenderMesh, RenderMeshBufferInfo},
        render_resource::Face,
        sync_world::MainEntity,
        view::RenderVisibleEntities,
    },
};
use wgpu::hal::{self, api::Vulkan};

/// What instances share to be drawn together: mesh, material, whether skinned, lightmap.
type BatchKey = (
    AssetId<Mesh>,
    AssetId<StandardMaterial>,
    bool,
    Option<MaterialTexture>,
);

/// One instanced draw of a mesh with a material.
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
    /// Every draw's instances, `Draw::first_instance` indexes into it.
    pub(crate) instances: Vec<GpuInstance>,
    /// The instances' joint matrices and morph data (`gbuffer.vert`'s `animation`).
    pub(crate) animation: AnimationData,
    /// Point and spot lights, as the lighting subpass reads them (`clusters` assigns them).
    pub(crate) lights: Vec<GpuClusterableLight>,
    /// Where Bevy put this frame's point and spot shadow maps.
    pub(crate) shadow_layers: ShadowLayers,
}

impl DrawList {
    /// Batches the view's visible opaque meshes, sorts its transparent ones back to front
    /// (seen from `view_from_world`), and packs the scene's point and spot lights.
    pub(crate) fn gather(
        scene: &TileSceneParams,
        visible: &RenderVisibleEntities,
        samples: vk::SampleCountFlags,
        view_from_world: &Mat4,
    ) -> Self {
        // By mesh, material, whether the instance is skinned (its pipeline's `SKINNED`), and
        // its lightmap image (the material set's binding 6).
        let mut batches: HashMap<BatchKey, Vec<GpuInstance>> = HashMap::default();
        let mut animation = visible
            .get::<Mesh3d>()
            .map_or_else(AnimationData::default, |class| {
                AnimationData::with_morph_meshes(
                    scene,
                    class.entities_cpu_culling.iter().map(|(_, main)| main),
                )
            });
        // (sort distance, entity, mesh, material, instance) of each transparent mesh.
        let mut transparent = Vec::new();
        let view_z_row = view_from_world.row(2);
        if let Some(class) = visible.get::<Mesh3d>() {
            for (_, main_entity) in &class.entities_cpu_culling {
                let Some(instance) = scene.instances.by_entity.get(main_entity) else {
                    continue;
                };
                let (joints, morph) = animation.push_instance(scene, instance);
                let material = scene.materials.by_id.get(&instance.material);
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
                    let exposure = material.map_or(1.0, |m| m.lightmap_exposure);
                    lightmap = [map.uv_rect[0], map.uv_rect[1], exposure.to_bits(), 0];
                }
                let gpu_instance = GpuInstance {
                    world_from_local_rows: affine_rows(&instance.world_from_local),
                    flags: [flags, joints, morph, 0],
                    lightmap,
                };
                let skinned = instance.skin.is_some();
                let lightmap_texture = instance.lightmap.map(|map| map.texture);
                match material.filter(|m| m.blend.is_some()) {
                    Some(material) => {
                        let center = scene.meshes.get(instance.mesh).map_or(Vec3::ZERO, |mesh| {
                            instance.world_from_local.transform_point3(mesh.aabb_center)
                        });
                        // Bevy's `ViewRangefinder3d::distance` plus the depth bias: ascending
                        // is back to front.
                        let distance = view_z_row.dot(center.extend(1.0)) + material.depth_bias;
                        transparent.push((
                            distance,
                            *main_entity,
                            (instance.mesh, instance.material, skinned, lightmap_texture),
                            gpu_instance,
                        ));
                    }
                    None => batches
                        .entry((instance.mesh, instance.material, skinned, lightmap_texture))
                        .or_default()
                        .push(gpu_instance),
                }
            }
        }
        let mut instances: Vec<GpuInstance> = Vec::new();
        let mut draws: Vec<Draw> = Vec::new();
        for ((mesh_id, material_id, skinned, lightmap), batch) in batches {
            let Some(pipeline_key) = drawable(scene, mesh_id, material_id, samples, skinned) else {
                continue;
            };
            draws.push(Draw {
                mesh: mesh_id,
                material: material_id,
                lightmap,
                pipeline_key,
                first_instance: instances.len() as u32,
                instance_count: batch.len() as u32,
            });
            instances.extend(batch);
        }
        draws.sort_by(|a, b| {
            let lightmap = |d: &Draw| d.lightmap.map(|l| l.image);
            (&a.pipeline_key, a.material, lightmap(a)).cmp(&(
                &b.pipeline_key,
                b.material,
                lightmap(b),
            ))
        });
        // Stable, with the entity as the tie-break, so equal distances draw in the same order
        // every frame.
        transparent.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let transparent = transparent
            .into_iter()
            .filter_map(
                |(_, _, (mesh_id, material_id, skinned, lightmap), gpu_instance)| {
                    let pipeline_key = drawable(scene, mesh_id, material_id, samples, skinned)?;
                    instances.push(gpu_instance);
                    Some(Draw {
                        mesh: mesh_id,
                        material: material_id,
                        lightmap,
                        pipeline_key,
                        first_instance: instances.len() as u32 - 1,
                        instance_count: 1,
                    })
                },
            )
            .collect();
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
            instances,
            animation,
            lights,
            shadow_layers,
        }
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
) -> Option<GbufferPipelineKey> {
    let mesh = scene.meshes.get(mesh_id)?;
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
    pipeline_key_for(mesh, material, samples, skinned)
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
/// `SKINNED` asks for both, and draws it unskinned otherwise).
fn pipeline_key_for(
    mesh: &RenderMesh,
    material: &TileMaterial,
    samples: vk::SampleCountFlags,
    skinned: bool,
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
