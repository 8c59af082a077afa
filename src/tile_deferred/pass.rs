//! The camera-schedule system that renders a tile-deferred view: it builds the view's frame
//! graph, gets the plan from the compiler, makes sure the Vulkan objects exist, and records one
//! native render pass with ash on a command encoder of its own.

use super::{
    TileDeferred,
    backend::{MaterialResources, PassResources, TileBackend, ViewResources},
    extract::{TileMaterials, TileMeshInstances},
    gpu_types::{
        GpuClusterableLight, GpuDirectionalLight, GpuInstance, GpuTonemapParams, GpuView,
        MAX_DIRECTIONAL_LIGHTS,
    },
    plan::{self, ViewFrameDesc, names},
    report::{self, TileViewReport, VulkanAttachmentReport},
};
use crate::{
    DeviceProfile,
    frame_graph::{Extent, Format, FrameGraphCache, NativePass},
    vulkan::{
        VulkanContext, conv,
        memory::AttachmentImageDesc,
        pipeline::{GbufferPipelineKey, PipelineTarget},
        render_pass::{self, OutputKind},
    },
};
use ash::vk;
use bevy::{
    camera::ClearColorConfig,
    core_pipeline::tonemapping::{DebandDither, Tonemapping, TonemappingLuts},
    light::{AmbientLight, GlobalAmbientLight},
    math::Affine3A,
    mesh::{Mesh, MeshVertexAttribute, PrimitiveTopology},
    pbr::{ExtractedDirectionalLight, ExtractedPointLight},
    platform::collections::HashMap,
    prelude::*,
    render::{
        camera::ExtractedCamera,
        mesh::{RenderMesh, RenderMeshBufferInfo, allocator::MeshAllocator},
        render_asset::RenderAssets,
        render_resource::{
            CommandEncoderDescriptor, Face, IndexFormat, LoadOp, Operations,
            RenderPassColorAttachment, RenderPassDescriptor, StoreOp,
        },
        renderer::{RenderContext, ViewQuery},
        texture::{FallbackImage, GpuImage},
        view::{ExtractedView, ExtractedWindows, Msaa, RenderVisibleEntities, ViewTarget},
    },
};
use wgpu::hal::{self, api::Vulkan};

/// The Vulkan `Result` of a failed step, with what was being done.
type StepResult<T> = Result<T, (&'static str, vk::Result)>;

fn step<T>(what: &'static str, result: Result<T, vk::Result>) -> StepResult<T> {
    result.map_err(|error| (what, error))
}

/// Everything the pass reads from the render world besides the view.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct TileSceneParams<'w, 's> {
    instances: Res<'w, TileMeshInstances>,
    materials: Res<'w, TileMaterials>,
    meshes: Res<'w, RenderAssets<RenderMesh>>,
    mesh_allocator: Res<'w, MeshAllocator>,
    images: Res<'w, RenderAssets<GpuImage>>,
    fallback_image: Res<'w, FallbackImage>,
    luts: Option<Res<'w, TonemappingLuts>>,
    global_ambient: Option<Res<'w, GlobalAmbientLight>>,
    clear_color: Res<'w, bevy::camera::ClearColor>,
    windows: Res<'w, ExtractedWindows>,
    profile: Option<Res<'w, DeviceProfile>>,
    reports: Res<'w, super::report::TileRenderReports>,
    point_lights: Query<'w, 's, &'static ExtractedPointLight>,
    directional_lights: Query<'w, 's, &'static ExtractedDirectionalLight>,
}

type TileViewQuery = (
    Entity,
    &'static bevy::render::sync_world::MainEntity,
    &'static ExtractedCamera,
    &'static ExtractedView,
    &'static ViewTarget,
    &'static TileDeferred,
    &'static RenderVisibleEntities,
    Option<&'static Tonemapping>,
    Option<&'static DebandDither>,
    Option<&'static Msaa>,
    Option<&'static AmbientLight>,
);

/// Renders one tile-deferred camera.
pub(crate) fn tile_deferred_pass(
    view: ViewQuery<TileViewQuery>,
    backend: Option<ResMut<TileBackend>>,
    scene: TileSceneParams,
    mut ctx: RenderContext,
) {
    let Some(mut backend) = backend else {
        return;
    };
    let backend = &mut *backend;
    let (
        entity,
        main_entity,
        camera,
        extracted_view,
        target,
        _settings,
        visible,
        tonemapping,
        dither,
        msaa,
        ambient,
    ) = view.into_inner();
    let Some(output_view) = target.out_texture() else {
        return;
    };
    if msaa.is_some_and(|m| *m != Msaa::Off) && backend.reported.insert((entity, "msaa")) {
        warn!(
            "bevy_tile_deferred: camera {entity} asks for {:?}; MSAA on the tile path is not \
             supported yet, rendering without it",
            msaa.copied().unwrap_or_default()
        );
    }
    let frame = Frame::gather(
        entity,
        camera,
        extracted_view,
        target,
        tonemapping.copied().unwrap_or_default(),
        dither.copied().unwrap_or_default(),
        ambient,
        &scene,
    );
    let Some(frame) = frame else {
        return;
    };
    match render_view(backend, &scene, &frame, visible, output_view, &mut ctx) {
        Ok(report) => scene.reports.insert(main_entity.id(), report),
        Err((what, error)) => {
            if backend.reported.insert((entity, what)) {
                error!(
                    "bevy_tile_deferred: camera {entity}: {what} failed: {error}; camera not drawn"
                );
            }
        }
    }
}

/// Per-frame facts about the view, computed once.
struct Frame {
    entity: Entity,
    desc: ViewFrameDesc,
    output_kind: OutputKind,
    target_extent: vk::Extent2D,
    viewport: UVec4,
    gpu_view: GpuView,
    tonemap: GpuTonemapParams,
    tonemapping: Tonemapping,
}

impl Frame {
    #[expect(clippy::too_many_arguments, reason = "the view's extracted components")]
    fn gather(
        entity: Entity,
        camera: &ExtractedCamera,
        view: &ExtractedView,
        target: &ViewTarget,
        tonemapping: Tonemapping,
        dither: DebandDither,
        ambient_override: Option<&AmbientLight>,
        scene: &TileSceneParams,
    ) -> Option<Self> {
        let output_view = target.out_texture()?;
        let output_format = conv::frame_graph_format(target.out_texture_view_format()?)?;
        let texture = output_view.texture();
        let target_extent = vk::Extent2D {
            width: texture.width(),
            height: texture.height(),
        };
        let viewport = view.viewport;
        if viewport.z == 0 || viewport.w == 0 || target_extent.width == 0 {
            return None;
        }
        let is_swapchain = scene.windows.windows.values().any(|window| {
            window
                .swap_chain_texture_view
                .as_ref()
                .is_some_and(|swapchain| swapchain.id() == output_view.id())
        });
        let clear = match camera.clear_color {
            ClearColorConfig::Default => Some(scene.clear_color.0.to_linear()),
            ClearColorConfig::Custom(color) => Some(color.to_linear()),
            ClearColorConfig::None => None,
        };
        let covers_target = viewport.x == 0
            && viewport.y == 0
            && viewport.z == target_extent.width
            && viewport.w == target_extent.height;
        let keep_output =
            clear.is_none() || !covers_target || camera.sorted_camera_index_for_target > 0;
        let desc = ViewFrameDesc {
            extent: Extent::new(viewport.z, viewport.w),
            output_format,
            keep_output,
            light_format: Format::Rg11b10Float,
            depth_format: Format::Depth32Float,
        };

        let clip_from_view = view.clip_from_view;
        let world_from_view = view.world_from_view.to_matrix();
        let view_from_world = world_from_view.inverse();
        let clip_from_world = view
            .clip_from_world
            .unwrap_or(clip_from_view * view_from_world);
        let orthographic = clip_from_view.w_axis.w == 1.0;
        let ambient = match (ambient_override, scene.global_ambient.as_deref()) {
            (Some(a), _) => LinearRgba::from(a.color) * a.brightness,
            (None, Some(a)) => LinearRgba::from(a.color) * a.brightness,
            (None, None) => LinearRgba::BLACK,
        };
        let mut directional_lights = [GpuDirectionalLight::default(); MAX_DIRECTIONAL_LIGHTS];
        let mut directional_count = 0;
        for light in scene.directional_lights.iter().take(MAX_DIRECTIONAL_LIGHTS) {
            let color = light.color.to_f32_array();
            directional_lights[directional_count] = GpuDirectionalLight {
                direction_to_light: light.transform.back().extend(0.0).to_array(),
                color: [
                    color[0] * light.illuminance,
                    color[1] * light.illuminance,
                    color[2] * light.illuminance,
                    0.0,
                ],
            };
            directional_count += 1;
        }
        let gpu_view = GpuView {
            clip_from_world: clip_from_world.to_cols_array_2d(),
            world_from_clip: clip_from_world.inverse().to_cols_array_2d(),
            view_from_world: view_from_world.to_cols_array_2d(),
            clip_from_view: clip_from_view.to_cols_array_2d(),
            world_position: view
                .world_from_view
                .translation()
                .extend(if orthographic { 1.0 } else { 0.0 })
                .to_array(),
            viewport: viewport.as_vec4().to_array(),
            ambient: [ambient.red, ambient.green, ambient.blue, 0.0],
            exposure: [camera.exposure, 0.0, 0.0, 0.0],
            counts: [directional_count as u32, 0, 0, 0],
            directional_lights,
        };
        let tonemap = GpuTonemapParams {
            clear_color: match clear {
                Some(c) => [c.red, c.green, c.blue, 1.0],
                None => [0.0; 4],
            },
            mode: [
                tonemapping_mode(tonemapping),
                u32::from(dither == DebandDither::Enabled),
                u32::from(conv::needs_shader_srgb_encode(output_format)),
                0,
            ],
        };
        Some(Self {
            entity,
            desc,
            output_kind: if is_swapchain {
                OutputKind::Swapchain
            } else {
                OutputKind::TrackedImage
            },
            target_extent,
            viewport,
            gpu_view,
            tonemap,
            tonemapping,
        })
    }
}

/// The tonemap shader's operator index (see `shaders/tonemap.frag`).
fn tonemapping_mode(tonemapping: Tonemapping) -> u32 {
    match tonemapping {
        Tonemapping::None => 0,
        Tonemapping::Reinhard => 1,
        Tonemapping::ReinhardLuminance => 2,
        Tonemapping::AcesFitted => 3,
        Tonemapping::AgX => 4,
        Tonemapping::SomewhatBoringDisplayTransform => 5,
        Tonemapping::TonyMcMapface => 6,
        Tonemapping::BlenderFilmic => 7,
        Tonemapping::KhronosPbrNeutral => 8,
    }
}

/// One instanced draw of a mesh with a material.
struct Draw {
    mesh: AssetId<Mesh>,
    material: AssetId<StandardMaterial>,
    pipeline_key: GbufferPipelineKey,
    first_instance: u32,
    instance_count: u32,
}

/// Vertex attributes the G-buffer shader reads, in location order.
const ATTRIBUTES: [MeshVertexAttribute; 4] = [
    Mesh::ATTRIBUTE_POSITION,
    Mesh::ATTRIBUTE_NORMAL,
    Mesh::ATTRIBUTE_UV_0,
    Mesh::ATTRIBUTE_TANGENT,
];

fn pipeline_key_for(
    mesh: &RenderMesh,
    material: &super::extract::TileMaterial,
    samples: vk::SampleCountFlags,
) -> Option<GbufferPipelineKey> {
    let layout = mesh.layout.0.layout();
    let ids = mesh.layout.0.attribute_ids();
    let mut attributes = [None; 4];
    for (slot, attribute) in ATTRIBUTES.iter().enumerate() {
        if let Some(index) = ids.iter().position(|id| *id == attribute.id) {
            let a = &layout.attributes[index];
            attributes[slot] = Some((conv::vertex_format(a.format)?, a.offset as u32));
        }
    }
    attributes[0]?;
    let topology = match mesh.primitive_topology() {
        PrimitiveTopology::TriangleList => vk::PrimitiveTopology::TRIANGLE_LIST,
        PrimitiveTopology::TriangleStrip => vk::PrimitiveTopology::TRIANGLE_STRIP,
        _ => return None,
    };
    Some(GbufferPipelineKey {
        stride: layout.array_stride as u32,
        attributes,
        topology,
        cull_mode: match material.cull_mode {
            Some(Face::Back) => vk::CullModeFlags::BACK,
            Some(Face::Front) => vk::CullModeFlags::FRONT,
            None => vk::CullModeFlags::NONE,
        },
        alpha_mask: material.alpha_mask,
        samples,
    })
}

fn affine_rows(affine: &Affine3A) -> [[f32; 4]; 3] {
    let m = affine.matrix3;
    let t = affine.translation;
    [
        [m.x_axis.x, m.y_axis.x, m.z_axis.x, t.x],
        [m.x_axis.y, m.y_axis.y, m.z_axis.y, t.y],
        [m.x_axis.z, m.y_axis.z, m.z_axis.z, t.z],
    ]
}

fn render_view(
    backend: &mut TileBackend,
    scene: &TileSceneParams,
    frame: &Frame,
    visible: &RenderVisibleEntities,
    output_view: &bevy::render::render_resource::TextureView,
    ctx: &mut RenderContext,
) -> StepResult<TileViewReport> {
    let frame_number = backend.frame;

    // 1. The plan: declare the frame and let the compiler decide (cached while unchanged).
    let caps = scene
        .profile
        .as_deref()
        .map(DeviceProfile::frame_graph_caps)
        .unwrap_or_else(crate::frame_graph::DeviceCaps::desktop);
    let view_state = ensure_view(backend, frame.entity)?;
    let graph = plan::declare(&frame.desc).map_err(|e| {
        error!("bevy_tile_deferred: the view's frame graph is invalid: {e}");
        ("declaring the frame", vk::Result::ERROR_UNKNOWN)
    })?;
    let compiled = view_state
        .graph_cache
        .compile(&graph, &caps)
        .map_err(|e| {
            error!("bevy_tile_deferred: compiling the view's frame failed: {e}");
            ("compiling the frame", vk::Result::ERROR_UNKNOWN)
        })?
        .clone();
    if compiled.native_passes.len() != 1 || compiled.native_passes[0].subpasses.len() != 3 {
        error!(
            "bevy_tile_deferred: the frame did not merge into one render pass:\n{}",
            compiled.describe()
        );
        return Err((
            "merging the frame into one render pass",
            vk::Result::ERROR_UNKNOWN,
        ));
    }
    let native = &compiled.native_passes[0];
    let output_id = compiled
        .attachment_named(names::OUTPUT)
        .map(|a| a.id)
        .expect("the plan declares an output");

    // 2. The render pass and its pipelines.
    let description =
        render_pass::describe(native, Some((output_id, frame.output_kind)), &[], |_| None);
    let key = format!("{description:?}");
    if !backend.render_passes.contains_key(&key) {
        let pass = create_pass_resources(backend, &description, native)?;
        backend.render_passes.insert(key.clone(), pass);
    }
    let render_pass = backend.render_passes[&key].render_pass;
    backend.render_passes.get_mut(&key).unwrap().last_used = frame_number;

    // 3. The view's attachments (everything but the output), sized to the target.
    ensure_attachments(backend, frame, native, output_id)?;
    let view_state = backend.views.get_mut(&frame.entity).unwrap();
    view_state.render_pass_key = key.clone();
    view_state.desc = Some(frame.desc);
    view_state.last_used = frame_number;

    // 4. The framebuffer over the attachments and this frame's output view.
    // SAFETY: the guard only reads the raw handle; the view lives until the frame is submitted
    // (ViewTarget holds it), and the guard is dropped at once.
    let output_raw = unsafe {
        output_view
            .as_hal::<Vulkan>()
            .map(|hal_view| hal_view.raw_handle())
    }
    .ok_or(("reading the output view", vk::Result::ERROR_UNKNOWN))?;
    let framebuffer = {
        let view_state = backend.views.get_mut(&frame.entity).unwrap();
        match view_state.framebuffers.get_mut(&output_view.id()) {
            Some((framebuffer, used)) => {
                *used = frame_number;
                *framebuffer
            }
            None => {
                let views: Vec<vk::ImageView> = native
                    .attachments
                    .iter()
                    .map(|a| {
                        if a.resource == output_id {
                            output_raw
                        } else {
                            view_state
                                .attachments
                                .iter()
                                .find(|(id, _)| *id == a.resource)
                                .map(|(_, image)| image.view)
                                .unwrap_or_default()
                        }
                    })
                    .collect();
                let framebuffer = step(
                    "creating a framebuffer",
                    backend
                        .context
                        .create_framebuffer(render_pass, &views, frame.target_extent),
                )?;
                let view_state = backend.views.get_mut(&frame.entity).unwrap();
                view_state
                    .framebuffers
                    .insert(output_view.id(), (framebuffer, frame_number));
                framebuffer
            }
        }
    };

    // 5. Descriptor sets of the view (inputs rewritten when the attachments changed).
    let lut = lut_image(scene, frame.tonemapping);
    // SAFETY: as for the output view above.
    let lut_view = unsafe { lut.texture_view.as_hal::<Vulkan>().map(|v| v.raw_handle()) }
        .ok_or(("reading the LUT view", vk::Result::ERROR_UNKNOWN))?;
    write_view_sets(backend, frame.entity, native, lut_view);

    // 6. What to draw: instances grouped by (mesh, material), and the lights.
    let samples = vk::SampleCountFlags::TYPE_1;
    let mut batches: HashMap<(AssetId<Mesh>, AssetId<StandardMaterial>), Vec<GpuInstance>> =
        HashMap::default();
    if let Some(class) = visible.get::<Mesh3d>() {
        for (_, main_entity) in &class.entities_cpu_culling {
            if let Some(instance) = scene.instances.by_entity.get(main_entity) {
                batches
                    .entry((instance.mesh, instance.material))
                    .or_default()
                    .push(GpuInstance {
                        world_from_local_rows: affine_rows(&instance.world_from_local),
                    });
            }
        }
    }
    let mut instance_data: Vec<GpuInstance> = Vec::new();
    let mut draws: Vec<Draw> = Vec::new();
    for ((mesh_id, material_id), instances) in batches {
        let (Some(mesh), Some(material)) = (
            scene.meshes.get(mesh_id),
            scene.materials.by_id.get(&material_id),
        ) else {
            continue;
        };
        if material.blended {
            continue;
        }
        let Some(pipeline_key) = pipeline_key_for(mesh, material, samples) else {
            continue;
        };
        draws.push(Draw {
            mesh: mesh_id,
            material: material_id,
            pipeline_key,
            first_instance: instance_data.len() as u32,
            instance_count: instances.len() as u32,
        });
        instance_data.extend(instances);
    }
    draws.sort_by_key(|d| (format!("{:?}", d.pipeline_key), d.material));
    let lights: Vec<GpuClusterableLight> = scene
        .point_lights
        .iter()
        .map(|light| {
            let color = light.color.to_f32_array();
            let (spot_scale, spot_offset, kind) = match light.spot_light_angles {
                Some((inner, outer)) => {
                    let outer = outer.min(std::f32::consts::FRAC_PI_2 - 1e-4);
                    let inner = inner.min(outer);
                    let scale = 1.0 / (inner.cos() - outer.cos()).max(1e-4);
                    (scale, -outer.cos() * scale, 1.0)
                }
                None => (0.0, 0.0, 0.0),
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
                    1.0 / (light.range * light.range),
                ],
                spot_direction_range: light.transform.forward().extend(light.range).to_array(),
                spot_scale_offset_kind: [spot_scale, spot_offset, kind, 0.0],
            }
        })
        .collect();
    let mut gpu_view = frame.gpu_view;
    gpu_view.counts[1] = lights.len() as u32;

    // 7. Material descriptor sets and buffers for the materials drawn.
    for draw in &draws {
        ensure_material(backend, scene, draw.material)?;
    }

    // 8. Per-view buffers, grown as needed, and this frame's data queued for upload.
    ensure_buffer_capacity(
        backend,
        frame.entity,
        BufferSlot::Lights,
        (lights.len().max(1) * size_of::<GpuClusterableLight>()) as u64,
    )?;
    ensure_buffer_capacity(
        backend,
        frame.entity,
        BufferSlot::Instances,
        (instance_data.len().max(1) * size_of::<GpuInstance>()) as u64,
    )?;
    let view_state = &backend.views[&frame.entity];
    let (view_buffer, light_buffer, instance_buffer) = (
        view_state.view_buffer.buffer,
        view_state.light_buffer.buffer,
        view_state.instance_buffer.buffer,
    );
    let (view_set, gbuffer_set, tonemap_set) = (
        view_state.view_set,
        view_state.gbuffer_set,
        view_state.tonemap_set,
    );
    backend
        .pending_updates
        .push((view_buffer, bytemuck::bytes_of(&gpu_view).to_vec()));
    if !lights.is_empty() {
        backend
            .pending_updates
            .push((light_buffer, bytemuck::cast_slice(&lights).to_vec()));
    }
    if !instance_data.is_empty() {
        backend.pending_updates.push((
            instance_buffer,
            bytemuck::cast_slice(&instance_data).to_vec(),
        ));
    }

    // 9. Pipelines for every (mesh layout, material state) drawn.
    let subpass_of = |name: &str| {
        native
            .subpasses
            .iter()
            .position(|s| s.name == name)
            .unwrap_or(0) as u32
    };
    let gbuffer_subpass = subpass_of(names::GBUFFER);
    let gbuffer_colors = native.subpasses[gbuffer_subpass as usize].color.len() as u32;
    for draw in &draws {
        if !backend.render_passes[&key]
            .gbuffer
            .contains_key(&draw.pipeline_key)
        {
            let target = PipelineTarget {
                render_pass,
                subpass: gbuffer_subpass,
                color_attachments: gbuffer_colors,
                samples,
            };
            let pipeline = step(
                "creating a G-buffer pipeline",
                backend.context.create_gbuffer_pipeline(
                    backend.layouts(),
                    backend.shaders(),
                    target,
                    &draw.pipeline_key,
                ),
            )?;
            backend
                .render_passes
                .get_mut(&key)
                .unwrap()
                .gbuffer
                .insert(draw.pipeline_key.clone(), pipeline);
        }
    }

    // 10. wgpu side, on Bevy's encoder: make wgpu's view of the output, the meshes' buffers and
    // the sampled textures match what the raw pass does with them.
    prepare_wgpu_resources(backend, scene, frame, output_view, &draws, lut, ctx);

    // 11. The raw pass, on an encoder of its own.
    let pass = &backend.render_passes[&key];
    let mesh_bindings = collect_mesh_bindings(scene, &draws)?;
    let recording = Recording {
        render_pass,
        framebuffer,
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
        clear_values: native
            .attachments
            .iter()
            .map(|a| {
                conv::clear_value(match &a.load {
                    crate::frame_graph::LoadOp::Clear(value) => Some(value),
                    _ => None,
                })
            })
            .collect(),
        pipeline_layout: backend.layouts().pipeline_layout,
        view_set,
        gbuffer_set,
        tonemap_set,
        global_lighting: pass.global_lighting,
        light_volumes: pass.light_volumes,
        tonemap: pass.tonemap,
        light_count: lights.len() as u32,
        tonemap_params: frame.tonemap,
        zero_buffer: backend.zero_buffer.as_ref().unwrap().buffer,
        fill_zero_buffer: !backend.zero_buffer_filled,
        instance_buffer,
        updates: std::mem::take(&mut backend.pending_updates),
        draws: draws
            .iter()
            .zip(mesh_bindings)
            .filter_map(|(draw, binding)| {
                Some(RecordedDraw {
                    pipeline: pass.gbuffer[&draw.pipeline_key],
                    material_set: backend.materials.get(&draw.material)?.set,
                    binding,
                    first_instance: draw.first_instance,
                    instance_count: draw.instance_count,
                })
            })
            .collect(),
    };
    backend.zero_buffer_filled = true;
    let draw_count = recording.draws.len();
    let command_buffer = record(&backend.context, ctx, recording);
    ctx.add_command_buffer(command_buffer);

    let view_state = backend.views.get_mut(&frame.entity).unwrap();
    let attachments = native
        .attachments
        .iter()
        .zip(&description.attachments)
        .map(|(planned, created)| {
            let image = view_state
                .attachments
                .iter()
                .find(|(id, _)| *id == planned.resource)
                .map(|(_, image)| image);
            VulkanAttachmentReport {
                name: planned.name.clone(),
                format: created.format.as_raw(),
                samples: created.samples.as_raw(),
                load_op: report::load_op_name(created.load_op),
                store_op: report::store_op_name(created.store_op),
                layouts: (
                    format!("{:?}", created.initial_layout),
                    format!("{:?}", created.final_layout),
                ),
                image_usage: image.map(|i| i.usage.as_raw()),
                lazily_allocated: image.is_some_and(|i| i.lazily_allocated),
            }
        })
        .collect();
    let report = TileViewReport {
        attachments,
        subpass_count: description.subpasses.len(),
        render_passes_recorded: 1,
        draws: draw_count,
        instances: instance_data.len(),
        light_volumes: lights.len(),
        frame: frame_number,
        compiled: compiled.clone(),
    };
    view_state.compiled = Some(compiled);
    Ok(report)
}

fn lut_image<'a>(scene: &'a TileSceneParams, tonemapping: Tonemapping) -> &'a GpuImage {
    let handle = scene.luts.as_ref().map(|luts| match tonemapping {
        Tonemapping::TonyMcMapface => &luts.tony_mc_mapface,
        Tonemapping::BlenderFilmic => &luts.blender_filmic,
        _ => &luts.agx,
    });
    handle
        .and_then(|h| scene.images.get(h))
        .unwrap_or(&scene.fallback_image.d3)
}

fn ensure_view(backend: &mut TileBackend, entity: Entity) -> StepResult<&mut ViewResources> {
    if !backend.views.contains_key(&entity) {
        let context = &backend.context;
        let view_buffer = step(
            "creating the view buffer",
            context.create_device_buffer(
                "tile view uniform",
                size_of::<GpuView>() as u64,
                vk::BufferUsageFlags::UNIFORM_BUFFER,
            ),
        )?;
        let light_buffer = step(
            "creating the light buffer",
            context.create_device_buffer(
                "tile lights",
                64 * size_of::<GpuClusterableLight>() as u64,
                vk::BufferUsageFlags::STORAGE_BUFFER,
            ),
        )?;
        let instance_buffer = step(
            "creating the instance buffer",
            context.create_device_buffer(
                "tile instances",
                1024 * size_of::<GpuInstance>() as u64,
                vk::BufferUsageFlags::VERTEX_BUFFER,
            ),
        )?;
        let sizes = [
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::UNIFORM_BUFFER,
                descriptor_count: 1,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: 1,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::INPUT_ATTACHMENT,
                descriptor_count: 6,
            },
            vk::DescriptorPoolSize {
                ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
                descriptor_count: 1,
            },
        ];
        let pool = step(
            "creating the view descriptor pool",
            context.create_descriptor_pool(3, &sizes, vk::DescriptorPoolCreateFlags::empty()),
        )?;
        let layouts = backend.layouts();
        let set_layouts = [layouts.view, layouts.gbuffer_inputs, layouts.tonemap_inputs];
        let info = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(&set_layouts);
        // SAFETY: a fresh pool sized for exactly these three sets.
        let sets = step("allocating view descriptor sets", unsafe {
            context.device.allocate_descriptor_sets(&info)
        })?;
        let view = ViewResources {
            graph_cache: FrameGraphCache::default(),
            desc: None,
            compiled: None,
            render_pass_key: String::new(),
            attachments: Vec::new(),
            attachments_extent: vk::Extent2D::default(),
            framebuffers: HashMap::default(),
            view_buffer,
            light_buffer,
            instance_buffer,
            pool,
            view_set: sets[0],
            gbuffer_set: sets[1],
            tonemap_set: sets[2],
            input_views: Vec::new(),
            last_used: backend.frame,
        };
        write_buffer_descriptors(&backend.context, &view);
        backend.views.insert(entity, view);
    }
    Ok(backend.views.get_mut(&entity).unwrap())
}

fn write_buffer_descriptors(context: &VulkanContext, view: &ViewResources) {
    let uniform = [vk::DescriptorBufferInfo {
        buffer: view.view_buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let storage = [vk::DescriptorBufferInfo {
        buffer: view.light_buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let writes = [
        vk::WriteDescriptorSet::default()
            .dst_set(view.view_set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
            .buffer_info(&uniform),
        vk::WriteDescriptorSet::default()
            .dst_set(view.view_set)
            .dst_binding(1)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .buffer_info(&storage),
    ];
    // SAFETY: the set is not in use by any pending command buffer: it is written only when
    // created or right after its buffers were replaced (the old set's users retired with them).
    unsafe { context.device.update_descriptor_sets(&writes, &[]) };
}

#[derive(Clone, Copy)]
enum BufferSlot {
    Lights,
    Instances,
}

/// Grows a per-view buffer; the old buffer and the view's descriptor pool are retired (the
/// sets may be in use by a frame in flight), and new sets are allocated and written.
fn ensure_buffer_capacity(
    backend: &mut TileBackend,
    entity: Entity,
    slot: BufferSlot,
    needed: u64,
) -> StepResult<()> {
    let current = {
        let view = &backend.views[&entity];
        match slot {
            BufferSlot::Lights => view.light_buffer.size,
            BufferSlot::Instances => view.instance_buffer.size,
        }
    };
    if needed <= current {
        return Ok(());
    }
    let size = needed.next_power_of_two();
    let (name, usage) = match slot {
        BufferSlot::Lights => ("tile lights", vk::BufferUsageFlags::STORAGE_BUFFER),
        BufferSlot::Instances => ("tile instances", vk::BufferUsageFlags::VERTEX_BUFFER),
    };
    let buffer = step(
        "growing a view buffer",
        backend.context.create_device_buffer(name, size, usage),
    )?;
    let view = backend.views.get_mut(&entity).unwrap();
    let old = match slot {
        BufferSlot::Lights => std::mem::replace(&mut view.light_buffer, buffer),
        BufferSlot::Instances => std::mem::replace(&mut view.instance_buffer, buffer),
    };
    backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
        c.destroy_device_buffer(old)
    }));
    if matches!(slot, BufferSlot::Lights) {
        // The view set references the light buffer: write a fresh set from a fresh pool.
        reallocate_view_sets(backend, entity)?;
    }
    Ok(())
}

fn reallocate_view_sets(backend: &mut TileBackend, entity: Entity) -> StepResult<()> {
    let sizes = [
        vk::DescriptorPoolSize {
            ty: vk::DescriptorType::UNIFORM_BUFFER,
            descriptor_count: 1,
        },
        vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: 1,
        },
        vk::DescriptorPoolSize {
            ty: vk::DescriptorType::INPUT_ATTACHMENT,
            descriptor_count: 6,
        },
        vk::DescriptorPoolSize {
            ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
            descriptor_count: 1,
        },
    ];
    let pool = step(
        "creating the view descriptor pool",
        backend
            .context
            .create_descriptor_pool(3, &sizes, vk::DescriptorPoolCreateFlags::empty()),
    )?;
    let layouts = backend.layouts();
    let set_layouts = [layouts.view, layouts.gbuffer_inputs, layouts.tonemap_inputs];
    let info = vk::DescriptorSetAllocateInfo::default()
        .descriptor_pool(pool)
        .set_layouts(&set_layouts);
    // SAFETY: a fresh pool sized for exactly these three sets.
    let sets = step("allocating view descriptor sets", unsafe {
        backend.context.device.allocate_descriptor_sets(&info)
    })?;
    let view = backend.views.get_mut(&entity).unwrap();
    let old_pool = std::mem::replace(&mut view.pool, pool);
    view.view_set = sets[0];
    view.gbuffer_set = sets[1];
    view.tonemap_set = sets[2];
    view.input_views.clear();
    write_buffer_descriptors(&backend.context, &backend.views[&entity]);
    backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
        c.destroy_descriptor_pool(old_pool)
    }));
    Ok(())
}

fn create_pass_resources(
    backend: &mut TileBackend,
    description: &render_pass::RenderPassDescription,
    native: &NativePass,
) -> StepResult<PassResources> {
    let context = &backend.context;
    let render_pass = step(
        "creating the render pass",
        context.create_render_pass(description),
    )?;
    let subpass_of = |name: &str| {
        native
            .subpasses
            .iter()
            .position(|s| s.name == name)
            .unwrap_or(0) as u32
    };
    let target = |name: &str| {
        let subpass = subpass_of(name);
        PipelineTarget {
            render_pass,
            subpass,
            color_attachments: native.subpasses[subpass as usize].color.len() as u32,
            samples: conv::samples(native.samples),
        }
    };
    let shaders = backend.shaders();
    let layouts = backend.layouts();
    let mut pass = PassResources {
        render_pass,
        gbuffer: HashMap::default(),
        global_lighting: vk::Pipeline::null(),
        light_volumes: vk::Pipeline::null(),
        tonemap: vk::Pipeline::null(),
        last_used: backend.frame,
    };
    let result = (|| {
        pass.global_lighting = context.create_screen_pipeline(
            layouts,
            target(names::LIGHTING),
            shaders.fullscreen_vert,
            shaders.lighting_global_frag,
            true,
        )?;
        pass.light_volumes = context.create_screen_pipeline(
            layouts,
            target(names::LIGHTING),
            shaders.light_volume_vert,
            shaders.light_volume_frag,
            true,
        )?;
        pass.tonemap = context.create_screen_pipeline(
            layouts,
            target(names::TONEMAP),
            shaders.fullscreen_vert,
            shaders.tonemap_frag,
            false,
        )?;
        Ok(())
    })();
    match result {
        Ok(()) => Ok(pass),
        Err(error) => {
            backend.retire_pass(pass);
            Err(("creating the lighting and tonemap pipelines", error))
        }
    }
}

/// (Re)creates the view's own attachments when the plan or the target size changed.
fn ensure_attachments(
    backend: &mut TileBackend,
    frame: &Frame,
    native: &NativePass,
    output_id: crate::frame_graph::ResourceId,
) -> StepResult<()> {
    let wanted: Vec<(crate::frame_graph::ResourceId, AttachmentImageDesc, String)> = native
        .attachments
        .iter()
        .filter(|a| a.resource != output_id)
        .map(|a| {
            let input = native.subpasses.iter().any(|s| {
                s.input
                    .iter()
                    .any(|&i| native.attachments[i].resource == a.resource)
            });
            (
                a.resource,
                AttachmentImageDesc {
                    format: conv::format(a.format),
                    extent: frame.target_extent,
                    samples: conv::samples(a.samples),
                    transient: a.transient,
                    input,
                    sampled: false,
                },
                a.name.clone(),
            )
        })
        .collect();
    let view = &backend.views[&frame.entity];
    let unchanged = view.attachments.len() == wanted.len()
        && view
            .attachments
            .iter()
            .zip(&wanted)
            .all(|((id, image), (wid, desc, _))| id == wid && image.desc == *desc);
    if unchanged {
        return Ok(());
    }
    let mut created = Vec::new();
    for (id, desc, name) in wanted {
        match backend.context.create_attachment_image(&name, desc) {
            Ok(image) => created.push((id, image)),
            Err(error) => {
                for (_, image) in created {
                    backend.context.destroy_attachment_image(image);
                }
                return Err(("creating attachment images", error));
            }
        }
    }
    let view = backend.views.get_mut(&frame.entity).unwrap();
    let old_images = std::mem::replace(&mut view.attachments, created);
    view.attachments_extent = frame.target_extent;
    view.input_views.clear();
    let old_framebuffers: Vec<vk::Framebuffer> =
        view.framebuffers.drain().map(|(_, (fb, _))| fb).collect();
    backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
        old_framebuffers
            .into_iter()
            .for_each(|fb| c.destroy_framebuffer(fb));
        old_images
            .into_iter()
            .for_each(|(_, image)| c.destroy_attachment_image(image));
    }));
    // The input-attachment sets point at the old views; a frame in flight may still use them.
    reallocate_view_sets(backend, frame.entity)
}

/// Writes the G-buffer and tonemap input sets when their views changed.
fn write_view_sets(
    backend: &mut TileBackend,
    entity: Entity,
    native: &NativePass,
    lut_view: vk::ImageView,
) {
    let view = &backend.views[&entity];
    let view_of = |name: &str| {
        native
            .attachment_named(name)
            .and_then(|a| view.attachments.iter().find(|(id, _)| *id == a.resource))
            .map(|(_, image)| image.view)
            .unwrap_or_default()
    };
    let gbuffer_views = [
        view_of(names::ALBEDO_OCCLUSION),
        view_of(names::NORMAL),
        view_of(names::MATERIAL),
        view_of(names::DEPTH),
    ];
    let tonemap_views = [view_of(names::LIGHT), view_of(names::DEPTH)];
    let mut all: Vec<vk::ImageView> = gbuffer_views.to_vec();
    all.extend(tonemap_views);
    all.push(lut_view);
    if view.input_views == all {
        return;
    }
    if !view.input_views.is_empty() {
        // In use by a frame in flight: write fresh sets instead.
        if reallocate_view_sets(backend, entity).is_err() {
            return;
        }
    }
    let view = &backend.views[&entity];
    let depth_layout = vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL;
    let gbuffer_infos: Vec<[vk::DescriptorImageInfo; 1]> = gbuffer_views
        .iter()
        .enumerate()
        .map(|(i, &image_view)| {
            [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view,
                image_layout: if i == 3 {
                    depth_layout
                } else {
                    vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
                },
            }]
        })
        .collect();
    let tonemap_infos: Vec<[vk::DescriptorImageInfo; 1]> = tonemap_views
        .iter()
        .enumerate()
        .map(|(i, &image_view)| {
            [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view,
                image_layout: if i == 1 {
                    depth_layout
                } else {
                    vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
                },
            }]
        })
        .collect();
    let lut_info = [vk::DescriptorImageInfo {
        sampler: backend.lut_sampler,
        image_view: lut_view,
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    let mut writes: Vec<vk::WriteDescriptorSet> = gbuffer_infos
        .iter()
        .enumerate()
        .map(|(binding, info)| {
            vk::WriteDescriptorSet::default()
                .dst_set(view.gbuffer_set)
                .dst_binding(binding as u32)
                .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
                .image_info(info)
        })
        .collect();
    writes.extend(tonemap_infos.iter().enumerate().map(|(binding, info)| {
        vk::WriteDescriptorSet::default()
            .dst_set(view.tonemap_set)
            .dst_binding(binding as u32)
            .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
            .image_info(info)
    }));
    writes.push(
        vk::WriteDescriptorSet::default()
            .dst_set(view.tonemap_set)
            .dst_binding(2)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&lut_info),
    );
    // SAFETY: the sets are fresh (never used by a submitted command buffer) and every view is
    // alive.
    unsafe { backend.context.device.update_descriptor_sets(&writes, &[]) };
    backend.views.get_mut(&entity).unwrap().input_views = all;
}

/// Makes sure `material` has a uniform buffer and a descriptor set matching its current
/// generation and texture views.
fn ensure_material(
    backend: &mut TileBackend,
    scene: &TileSceneParams,
    id: AssetId<StandardMaterial>,
) -> StepResult<()> {
    let Some(material) = scene.materials.by_id.get(&id) else {
        return Ok(());
    };
    let fallback = &scene.fallback_image.d2;
    let images: Vec<&GpuImage> = material
        .textures
        .iter()
        .map(|t| {
            t.and_then(|t| scene.images.get(t.image))
                .unwrap_or(fallback)
        })
        .collect();
    let mut views = [vk::ImageView::null(); 5];
    for (slot, image) in images.iter().enumerate() {
        // SAFETY: reads the raw handle of a view Bevy keeps alive while the asset exists; the
        // descriptor set is replaced when the view changes.
        views[slot] = unsafe {
            image
                .texture_view
                .as_hal::<Vulkan>()
                .map(|v| v.raw_handle())
        }
        .unwrap_or_default();
    }
    if let Some(existing) = backend.materials.get_mut(&id)
        && existing.generation == material.generation
        && existing.texture_views == views
    {
        existing.last_used = backend.frame;
        return Ok(());
    }
    if let Some(old) = backend.materials.remove(&id) {
        backend.retire_material(old);
    }
    let buffer = step(
        "creating a material buffer",
        backend.context.create_device_buffer(
            "tile material",
            size_of::<super::gpu_types::GpuMaterial>() as u64,
            vk::BufferUsageFlags::UNIFORM_BUFFER,
        ),
    )?;
    let (pool, set) = match backend.allocate_material_set() {
        Ok(allocated) => allocated,
        Err(error) => {
            backend.context.destroy_device_buffer(buffer);
            return Err(("allocating a material descriptor set", error));
        }
    };
    let mut samplers = [vk::Sampler::null(); 5];
    for (slot, texture) in material.textures.iter().enumerate() {
        let key = texture
            .map(|t| t.sampler)
            .unwrap_or_else(super::extract::SamplerKey::bevy_default);
        samplers[slot] = step("creating a sampler", backend.sampler(&key))?;
    }
    let buffer_info = [vk::DescriptorBufferInfo {
        buffer: buffer.buffer,
        offset: 0,
        range: vk::WHOLE_SIZE,
    }];
    let image_infos: Vec<[vk::DescriptorImageInfo; 1]> = (0..5)
        .map(|slot| {
            [vk::DescriptorImageInfo {
                sampler: samplers[slot],
                image_view: views[slot],
                image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            }]
        })
        .collect();
    let mut writes = vec![
        vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
            .buffer_info(&buffer_info),
    ];
    writes.extend(image_infos.iter().enumerate().map(|(slot, info)| {
        vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(slot as u32 + 1)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(info)
    }));
    // SAFETY: the set was just allocated; buffer, views and samplers are alive.
    unsafe { backend.context.device.update_descriptor_sets(&writes, &[]) };
    backend.queue_material_update(buffer.buffer, material);
    backend.materials.insert(
        id,
        MaterialResources {
            generation: material.generation,
            texture_views: views,
            buffer,
            set,
            pool,
            last_used: backend.frame,
        },
    );
    Ok(())
}

/// wgpu-side preparation on Bevy's encoder, before the raw command buffer.
fn prepare_wgpu_resources(
    backend: &mut TileBackend,
    scene: &TileSceneParams,
    frame: &Frame,
    output_view: &bevy::render::render_resource::TextureView,
    draws: &[Draw],
    lut: &GpuImage,
    ctx: &mut RenderContext,
) {
    let encoder = ctx.command_encoder();
    if frame.output_kind == OutputKind::TrackedImage {
        // wgpu zero-fills, before its next read, a texture it believes was never written; raw
        // writes are invisible to it. The first time an output view is seen, an empty wgpu pass
        // that loads and stores it makes wgpu consider it initialised (it clears it once if it
        // really was not), so later readbacks and screenshots see what the raw pass drew.
        if !backend.initialized_outputs.contains_key(&output_view.id()) {
            encoder.begin_render_pass(&RenderPassDescriptor {
                label: Some("tile_deferred_output_init"),
                color_attachments: &[Some(RenderPassColorAttachment {
                    view: output_view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: Operations {
                        load: LoadOp::Load,
                        store: StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
        }
        backend
            .initialized_outputs
            .insert(output_view.id(), backend.frame);
    }
    let mut buffers: Vec<&wgpu::Buffer> = Vec::new();
    for draw in draws {
        if let Some(slice) = scene.mesh_allocator.mesh_vertex_slice(&draw.mesh) {
            buffers.push(slice.buffer);
        }
        if let Some(slice) = scene.mesh_allocator.mesh_index_slice(&draw.mesh) {
            buffers.push(slice.buffer);
        }
    }
    buffers.sort_by_key(|b| *b as *const wgpu::Buffer);
    buffers.dedup_by_key(|b| *b as *const wgpu::Buffer);
    let mut textures: Vec<&wgpu::Texture> = vec![&lut.texture, &scene.fallback_image.d2.texture];
    for draw in draws {
        if let Some(material) = scene.materials.by_id.get(&draw.material) {
            for texture in material.textures.iter().flatten() {
                if let Some(image) = scene.images.get(texture.image) {
                    textures.push(&image.texture);
                }
            }
        }
    }
    textures.sort_by_key(|t| *t as *const wgpu::Texture);
    textures.dedup_by_key(|t| *t as *const wgpu::Texture);
    let output_texture = output_view.texture();
    let output_transition =
        (frame.output_kind == OutputKind::TrackedImage).then_some(wgpu::TextureTransition {
            texture: output_texture,
            selector: None,
            state: wgpu::TextureUses::COLOR_TARGET,
        });
    encoder.transition_resources(
        buffers.iter().map(|buffer| wgpu::BufferTransition {
            buffer: *buffer,
            state: wgpu::BufferUses::VERTEX | wgpu::BufferUses::INDEX,
        }),
        textures
            .iter()
            .map(|texture| wgpu::TextureTransition {
                texture: *texture,
                selector: None,
                state: wgpu::TextureUses::RESOURCE,
            })
            .chain(output_transition),
    );
}

/// A mesh's buffers as the hal encoder binds them.
struct MeshBinding {
    vertex_buffer: *const hal::vulkan::Buffer,
    first_vertex: i32,
    index: Option<(*const hal::vulkan::Buffer, u32, u32, IndexFormat)>,
    vertex_count: u32,
}

fn collect_mesh_bindings(scene: &TileSceneParams, draws: &[Draw]) -> StepResult<Vec<MeshBinding>> {
    let hal_buffer = |buffer: &wgpu::Buffer| -> StepResult<*const hal::vulkan::Buffer> {
        // SAFETY: the guard is taken alone (never inside `as_hal_mut`, never two at once: the
        // snatch lock is not re-entrant); the pointer is used only while this system runs,
        // during which Bevy neither destroys nor replaces mesh slab buffers.
        let guard = unsafe { buffer.as_hal::<Vulkan>() }
            .ok_or(("reading a mesh buffer", vk::Result::ERROR_UNKNOWN))?;
        Ok(&*guard as *const hal::vulkan::Buffer)
    };
    draws
        .iter()
        .map(|draw| {
            let mesh = scene.meshes.get(draw.mesh).unwrap();
            let vertex = scene
                .mesh_allocator
                .mesh_vertex_slice(&draw.mesh)
                .ok_or(("finding a mesh's vertices", vk::Result::ERROR_UNKNOWN))?;
            let index = match mesh.buffer_info {
                RenderMeshBufferInfo::Indexed {
                    count,
                    index_format,
                } => {
                    let slice = scene
                        .mesh_allocator
                        .mesh_index_slice(&draw.mesh)
                        .ok_or(("finding a mesh's indices", vk::Result::ERROR_UNKNOWN))?;
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

struct RecordedDraw {
    pipeline: vk::Pipeline,
    material_set: vk::DescriptorSet,
    binding: MeshBinding,
    first_instance: u32,
    instance_count: u32,
}

/// Everything the raw recording needs, gathered beforehand.
struct Recording {
    render_pass: vk::RenderPass,
    framebuffer: vk::Framebuffer,
    render_area: vk::Rect2D,
    clear_values: Vec<vk::ClearValue>,
    pipeline_layout: vk::PipelineLayout,
    view_set: vk::DescriptorSet,
    gbuffer_set: vk::DescriptorSet,
    tonemap_set: vk::DescriptorSet,
    global_lighting: vk::Pipeline,
    light_volumes: vk::Pipeline,
    tonemap: vk::Pipeline,
    light_count: u32,
    tonemap_params: GpuTonemapParams,
    zero_buffer: vk::Buffer,
    fill_zero_buffer: bool,
    instance_buffer: vk::Buffer,
    updates: Vec<(vk::Buffer, Vec<u8>)>,
    draws: Vec<RecordedDraw>,
}

/// Records the frame on a new encoder used only through `as_hal_mut`, and returns its command
/// buffer (wgpu panics if one encoder mixes wgpu commands and raw recording).
fn record(
    context: &VulkanContext,
    ctx: &mut RenderContext,
    recording: Recording,
) -> wgpu::CommandBuffer {
    let mut encoder = ctx
        .render_device()
        .create_command_encoder(&CommandEncoderDescriptor {
            label: Some("tile_deferred"),
        });
    let device = &context.device;
    // SAFETY: this encoder is used only here, through the hal encoder handed to the closure;
    // everything recorded refers to objects that outlive the command buffer's execution (the
    // crate retires its objects through the graveyard after the GPU is done).
    unsafe {
        encoder.as_hal_mut::<Vulkan, _, _>(|hal_encoder| {
            let Some(hal_encoder) = hal_encoder else {
                return;
            };
            let cb = hal_encoder.raw_handle();
            record_into(device, hal_encoder, cb, &recording);
        });
    }
    encoder.finish()
}

/// # Safety
/// `cb` must be the recording command buffer of `hal_encoder`, and every handle in `recording`
/// must be alive until the command buffer has executed.
unsafe fn record_into(
    device: &ash::Device,
    hal_encoder: &mut hal::vulkan::CommandEncoder,
    cb: vk::CommandBuffer,
    r: &Recording,
) {
    use hal::CommandEncoder as _;
    // SAFETY (whole function): the caller guarantees `cb` is recording and the handles live;
    // every command below is valid in the state this sequence leaves the command buffer in.
    unsafe {
        // Uploads: wait for earlier readers of these buffers (previous frames), write, then make
        // the writes visible to this frame's vertex, uniform and storage reads.
        if !r.updates.is_empty() || r.fill_zero_buffer {
            let before = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::empty())
                .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::VERTEX_INPUT
                    | vk::PipelineStageFlags::VERTEX_SHADER
                    | vk::PipelineStageFlags::FRAGMENT_SHADER,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &[before],
                &[],
                &[],
            );
            if r.fill_zero_buffer {
                device.cmd_fill_buffer(cb, r.zero_buffer, 0, vk::WHOLE_SIZE, 0);
            }
            for (buffer, bytes) in &r.updates {
                for (i, chunk) in bytes.chunks(65536).enumerate() {
                    device.cmd_update_buffer(cb, *buffer, (i * 65536) as u64, chunk);
                }
            }
            let after = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(
                    vk::AccessFlags::VERTEX_ATTRIBUTE_READ
                        | vk::AccessFlags::UNIFORM_READ
                        | vk::AccessFlags::SHADER_READ,
                );
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::VERTEX_INPUT
                    | vk::PipelineStageFlags::VERTEX_SHADER
                    | vk::PipelineStageFlags::FRAGMENT_SHADER,
                vk::DependencyFlags::empty(),
                &[after],
                &[],
                &[],
            );
        }

        let begin = vk::RenderPassBeginInfo::default()
            .render_pass(r.render_pass)
            .framebuffer(r.framebuffer)
            .render_area(r.render_area)
            .clear_values(&r.clear_values);
        device.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
        // wgpu's convention: a negative viewport height flips Y, so Bevy's matrices work as is.
        let area = r.render_area;
        let viewport = vk::Viewport {
            x: area.offset.x as f32,
            y: (area.offset.y + area.extent.height as i32) as f32,
            width: area.extent.width as f32,
            height: -(area.extent.height as f32),
            min_depth: 0.0,
            max_depth: 1.0,
        };
        device.cmd_set_viewport(cb, 0, &[viewport]);
        device.cmd_set_scissor(cb, 0, &[area]);
        device.cmd_bind_descriptor_sets(
            cb,
            vk::PipelineBindPoint::GRAPHICS,
            r.pipeline_layout,
            0,
            &[r.view_set],
            &[],
        );

        // Subpass 0: the G-buffer.
        device.cmd_bind_vertex_buffers(cb, 1, &[r.zero_buffer, r.instance_buffer], &[0, 0]);
        let mut bound_pipeline = vk::Pipeline::null();
        let mut bound_material = vk::DescriptorSet::null();
        for draw in &r.draws {
            if draw.pipeline != bound_pipeline {
                device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, draw.pipeline);
                bound_pipeline = draw.pipeline;
            }
            if draw.material_set != bound_material {
                device.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::GRAPHICS,
                    r.pipeline_layout,
                    1,
                    &[draw.material_set],
                    &[],
                );
                bound_material = draw.material_set;
            }
            let b = &draw.binding;
            hal_encoder.set_vertex_buffer(
                0,
                hal::BufferBinding::new_unchecked(&*b.vertex_buffer, 0, None),
            );
            match b.index {
                Some((buffer, first_index, count, format)) => {
                    hal_encoder.set_index_buffer(
                        hal::BufferBinding::new_unchecked(&*buffer, 0, None),
                        format,
                    );
                    device.cmd_draw_indexed(
                        cb,
                        count,
                        draw.instance_count,
                        first_index,
                        b.first_vertex,
                        draw.first_instance,
                    );
                }
                None => device.cmd_draw(
                    cb,
                    b.vertex_count,
                    draw.instance_count,
                    b.first_vertex as u32,
                    draw.first_instance,
                ),
            }
        }

        // Subpass 1: lighting from the G-buffer, read on tile.
        device.cmd_next_subpass(cb, vk::SubpassContents::INLINE);
        device.cmd_bind_descriptor_sets(
            cb,
            vk::PipelineBindPoint::GRAPHICS,
            r.pipeline_layout,
            2,
            &[r.gbuffer_set],
            &[],
        );
        device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, r.global_lighting);
        device.cmd_draw(cb, 3, 1, 0, 0);
        if r.light_count > 0 {
            device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, r.light_volumes);
            device.cmd_draw(cb, 6, r.light_count, 0, 0);
        }

        // Subpass 2: tonemap into the output.
        device.cmd_next_subpass(cb, vk::SubpassContents::INLINE);
        device.cmd_bind_descriptor_sets(
            cb,
            vk::PipelineBindPoint::GRAPHICS,
            r.pipeline_layout,
            3,
            &[r.tonemap_set],
            &[],
        );
        device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, r.tonemap);
        device.cmd_push_constants(
            cb,
            r.pipeline_layout,
            vk::ShaderStageFlags::FRAGMENT,
            0,
            bytemuck::bytes_of(&r.tonemap_params),
        );
        device.cmd_draw(cb, 3, 1, 0, 0);
        device.cmd_end_render_pass(cb);
    }
}

/// Retires views, framebuffers, materials and render passes no longer used, seals this frame's
/// retired objects behind its submission, and destroys what the GPU has finished with.
pub(crate) fn end_frame(
    backend: Option<ResMut<TileBackend>>,
    queue: Res<bevy::render::renderer::RenderQueue>,
    reports: Res<super::report::TileRenderReports>,
) {
    let Some(mut backend) = backend else { return };
    let backend = &mut *backend;
    let frame = backend.frame;
    const KEEP_FRAMES: u64 = 3;
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
    let mut stale_framebuffers = Vec::new();
    for view in backend.views.values_mut() {
        view.framebuffers.retain(|_, (framebuffer, used)| {
            let keep = frame.saturating_sub(*used) <= KEEP_FRAMES;
            if !keep {
                stale_framebuffers.push(*framebuffer);
            }
            keep
        });
    }
    if !stale_framebuffers.is_empty() {
        backend.graveyard.retire(Box::new(move |c: &VulkanContext| {
            stale_framebuffers
                .into_iter()
                .for_each(|fb| c.destroy_framebuffer(fb));
        }));
    }
    let stale_materials: Vec<AssetId<StandardMaterial>> = backend
        .materials
        .iter()
        .filter(|(_, m)| frame.saturating_sub(m.last_used) > 60)
        .map(|(id, _)| *id)
        .collect();
    for id in stale_materials {
        let material = backend.materials.remove(&id).unwrap();
        backend.retire_material(material);
    }
    let used_keys: Vec<String> = backend
        .views
        .values()
        .map(|v| v.render_pass_key.clone())
        .collect();
    let stale_passes: Vec<String> = backend
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
    backend
        .initialized_outputs
        .retain(|_, used| frame.saturating_sub(*used) <= KEEP_FRAMES);
    backend.graveyard.seal_after_submit(&queue);
    backend.graveyard.collect(&backend.context);
    backend.frame += 1;
}
