//! Stage 8, interop: the wgpu side of the frame, on Bevy's encoder, before the raw command
//! buffer. wgpu does not see what the raw pass does, so its view of the output, the meshes'
//! buffers and the sampled textures is made to match here (Bevy's clear of the target, the
//! output's first-use initialisation, resource transitions).

use super::{draws::Draw, scene::TileSceneParams, view::ViewFrame};
use crate::vulkan::render_pass::OutputKind;
use bevy::platform::collections::HashMap;
use bevy::render::{
    render_resource::{
        CommandEncoder, LoadOp, Operations, RenderPassColorAttachment, RenderPassDescriptor,
        StoreOp, TextureView, TextureViewId,
    },
    renderer::RenderContext,
    texture::GpuImage,
    view::ViewTarget,
};

/// Bevy clears a camera target once per frame, when the first camera writes to it (through
/// `ViewTarget::out_texture_color_attachment`, whose "first call" flag every camera on that
/// target shares), with that camera's `output_mode` clear colour, over the whole target. Do the
/// same: take the flag, so that a later `Core3d` camera on this target loads instead of clearing
/// what the tile pass drew, and where the flag asks for a clear that the raw pass cannot do
/// (its render area is the viewport) clear the target with a wgpu pass before it.
pub(super) fn clear_output_like_bevy(
    frame: &ViewFrame,
    target: &ViewTarget,
    ctx: &mut RenderContext,
) {
    let Some(attachment) = target.out_texture_color_attachment(frame.output_clear) else {
        return;
    };
    if frame.covers_target || !matches!(attachment.ops.load, LoadOp::Clear(_)) {
        return;
    }
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some("tile_deferred_output_clear"),
            color_attachments: &[Some(attachment)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

/// wgpu-side preparation on Bevy's encoder, before the raw command buffer: the output's
/// first-use initialisation, then the transitions of everything the raw pass touches.
pub(super) fn prepare_wgpu_resources(
    initialized_outputs: &mut HashMap<TextureViewId, u64>,
    frame_number: u64,
    scene: &TileSceneParams,
    frame: &ViewFrame,
    output_view: &TextureView,
    draws: &[Draw],
    lut: &GpuImage,
    ctx: &mut RenderContext,
) {
    let encoder = ctx.command_encoder();
    init_output(
        initialized_outputs,
        frame_number,
        frame,
        output_view,
        encoder,
    );
    transition_resources(scene, frame, output_view, draws, lut, encoder);
}

/// The first time an image output's view is seen, a wgpu pass that stores it, so that wgpu
/// never zero-fills over what the raw pass drew.
fn init_output(
    initialized_outputs: &mut HashMap<TextureViewId, u64>,
    frame_number: u64,
    frame: &ViewFrame,
    output_view: &TextureView,
    encoder: &mut CommandEncoder,
) {
    if frame.output_kind == OutputKind::TrackedImage {
        // wgpu zero-fills, before its next read, a texture it believes was never written; raw
        // writes are invisible to it. The first time an output view is seen, an empty wgpu pass
        // that stores it makes wgpu consider it initialised, so later readbacks and screenshots
        // see what the raw pass drew. It clears when the frame overwrites the output anyway,
        // and loads (keeping what another camera drew) otherwise. This costs one store of the
        // output the first time a view is seen (and on screenshot frames: a new capture view).
        if !initialized_outputs.contains_key(&output_view.id()) {
            let load = if frame.desc.keep_output {
                LoadOp::Load
            } else {
                LoadOp::Clear(wgpu::Color::TRANSPARENT)
            };
            encoder.begin_render_pass(&RenderPassDescriptor {
                label: Some("tile_deferred_output_init"),
                color_attachments: &[Some(RenderPassColorAttachment {
                    view: output_view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: Operations {
                        load,
                        store: StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
        }
        initialized_outputs.insert(output_view.id(), frame_number);
    }
}

/// Tells wgpu's tracker what the raw pass does with the mesh buffers (vertex and index
/// reads), the sampled textures and an image output (a colour target).
fn transition_resources(
    scene: &TileSceneParams,
    frame: &ViewFrame,
    output_view: &TextureView,
    draws: &[Draw],
    lut: &GpuImage,
    encoder: &mut CommandEncoder,
) {
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
