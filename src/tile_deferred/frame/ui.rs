//! Stage 6's UI part, on frames that draw bevy_ui or egui in the tile render pass ([`TileUiDraws`]):
//! the view's UI buffers grown to this frame's quads and the quads queued for upload, each
//! batch's image set, and the `ui` subpass's pipeline. What it returns is recorded by the `ui`
//! step of `gpu::record`.

use super::{render_passes, state::FrameState};
use crate::tile_deferred::gpu::upload::BufferUpload;
use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{
        material_sets,
        pipelines::PassesKey,
        raw_view,
        record::{UiRecordedBatch, UiRecording},
        ui::{self as gpu_ui, TileUiDraws, UiBatchKind, UiBuffers, UiVertex},
    },
    scene::params::TileSceneParams,
};
use crate::vulkan::VulkanContext;
use ash::vk;
use bevy::{math::Vec2, render::texture::GpuImage};

/// What the `ui` subpass records, and the images it samples (for the wgpu side to transition).
pub(crate) struct PreparedUi<'a> {
    pub(crate) recording: UiRecording,
    pub(crate) images: Vec<&'a GpuImage>,
}

/// The view's UI buffers, pipeline and image sets for `draws`, in the render passes of `key`,
/// whose `ui` subpass has `samples`; the render area starts at `origin`.
pub(crate) fn prepare_ui<'a>(
    state: &mut FrameState,
    scene: &'a TileSceneParams,
    key: &PassesKey,
    (samples, origin): (u32, Vec2),
    draws: &TileUiDraws,
) -> TileResult<PreparedUi<'a>> {
    let shared = state.shared;
    let mut images = Vec::with_capacity(draws.batches.len());
    let mut batches = Vec::with_capacity(draws.batches.len());
    for batch in &draws.batches {
        let passes = state.passes(key)?;
        let pipeline = match batch.kind {
            UiBatchKind::Nodes { .. } => {
                render_passes::ensure_ui_pipeline(shared, passes, draws.anti_alias)?
            }
            UiBatchKind::BoxShadows => {
                render_passes::ensure_box_shadow_pipeline(shared, passes, draws.shadow_samples)?
            }
            UiBatchKind::Slices { .. } => render_passes::ensure_ui_slice_pipeline(shared, passes)?,
            UiBatchKind::Gradients => {
                render_passes::ensure_ui_gradient_pipeline(shared, passes, draws.anti_alias)?
            }
            UiBatchKind::Egui { .. } => render_passes::ensure_egui_pipeline(shared, passes)?,
        };
        let scissor = match batch.kind {
            UiBatchKind::Egui {
                scissor: [x, y, width, height],
                ..
            } => Some(vk::Rect2D {
                offset: vk::Offset2D {
                    x: x as i32,
                    y: y as i32,
                },
                extent: vk::Extent2D { width, height },
            }),
            _ => None,
        };
        let Some((image, sampler)) = batch.kind.image() else {
            batches.push(UiRecordedBatch {
                pipeline,
                image_set: None,
                indices: batch.indices.clone(),
                scissor,
            });
            continue;
        };
        // `ui_in_pass` and `inspector::in_pass` kept only items whose image Bevy has prepared,
        // this frame.
        let image = scene.images.get(image).ok_or(TileError::Missing {
            step: "finding a UI image",
        })?;
        let view = raw_view(&image.texture_view).ok_or(TileError::Missing {
            step: "reading a UI image's view",
        })?;
        let sampler = step("creating a UI sampler", state.sampler_cache().get(&sampler))?;
        let set = step(
            "allocating a UI image set",
            material_sets::ui_image_set(
                state.materials,
                shared.context,
                shared.layouts.ui_image,
                (&image.texture_view, view),
                sampler,
                state.frame,
            ),
        )?;
        images.push(image);
        batches.push(UiRecordedBatch {
            pipeline,
            image_set: Some(set),
            indices: batch.indices.clone(),
            scissor,
        });
    }
    // With MSAA each of bevy_ui's quads covers whole pixels, as Bevy's UI at 1x does. egui's
    // triangles are drawn as rasterised: their outer edges are egui's feathering, transparent.
    let grown;
    let vertices = if samples > 1 {
        let (quads, egui) = draws.vertices.split_at(draws.quad_vertices);
        grown = [&gpu_ui::cover_whole_pixels(quads, origin)[..], egui].concat();
        &grown
    } else {
        &draws.vertices
    };
    let (vertex_buffer, index_buffer) = upload_quads(state, vertices, &draws.indices)?;
    Ok(PreparedUi {
        recording: UiRecording {
            layout: shared.layouts.ui_pipeline_layout,
            clip_from_world: draws.clip_from_world.to_cols_array(),
            vertex_buffer,
            index_buffer,
            batches,
        },
        images,
    })
}

/// The view's UI vertex and index buffers, created or grown to this frame's quads (the old
/// ones retired: a frame in flight may read them), with the quads queued for upload.
fn upload_quads(
    state: &mut FrameState,
    vertices: &[UiVertex],
    indices: &[u32],
) -> TileResult<(vk::Buffer, vk::Buffer)> {
    let vertex_bytes: &[u8] = bytemuck::cast_slice(vertices);
    let index_bytes: &[u8] = bytemuck::cast_slice(indices);
    let frame = state.frame;
    let (device, view) = state.view_device();
    let context = device.context;
    if view.ui_buffers.is_none() {
        let vertices = step(
            "creating the view's UI vertex buffer",
            context.create_device_buffer(
                "tile ui vertices",
                (vertex_bytes.len() as u64).next_power_of_two(),
                vk::BufferUsageFlags::VERTEX_BUFFER,
            ),
        )?;
        let indices = match context.create_device_buffer(
            "tile ui indices",
            (index_bytes.len() as u64).next_power_of_two(),
            vk::BufferUsageFlags::INDEX_BUFFER,
        ) {
            Ok(indices) => indices,
            Err(error) => {
                // Nothing has used it yet.
                context.destroy_device_buffer(vertices);
                return Err(TileError::vulkan(
                    "creating the view's UI index buffer",
                    error,
                ));
            }
        };
        view.ui_buffers = Some(UiBuffers {
            vertices,
            indices,
            last_used: 0,
        });
    }
    let Some(buffers) = view.ui_buffers.as_mut() else {
        unreachable!("created above");
    };
    buffers.last_used = frame;
    for (buffer, needed, name, usage, growing) in [
        (
            &mut buffers.vertices,
            vertex_bytes.len() as u64,
            "tile ui vertices",
            vk::BufferUsageFlags::VERTEX_BUFFER,
            "growing the view's UI vertex buffer",
        ),
        (
            &mut buffers.indices,
            index_bytes.len() as u64,
            "tile ui indices",
            vk::BufferUsageFlags::INDEX_BUFFER,
            "growing the view's UI index buffer",
        ),
    ] {
        if needed <= buffer.size {
            continue;
        }
        let grown = step(
            growing,
            context.create_device_buffer(name, needed.next_power_of_two(), usage),
        )?;
        let old = std::mem::replace(buffer, grown);
        // An upload a failed frame left for the old buffer goes with it.
        device
            .pending_updates
            .retain(|upload| upload.buffer != old.buffer);
        device.graveyard.retire(Box::new(move |c: &VulkanContext| {
            c.destroy_device_buffer(old)
        }));
    }
    let (vertices, indices) = (buffers.vertices.buffer, buffers.indices.buffer);
    device
        .pending_updates
        .push(BufferUpload::whole(vertices, vertex_bytes.to_vec()));
    device
        .pending_updates
        .push(BufferUpload::whole(indices, index_bytes.to_vec()));
    Ok((vertices, indices))
}
