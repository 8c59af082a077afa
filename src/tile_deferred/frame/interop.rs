//! Stage 8, interop: the wgpu side of the frame, on Bevy's encoder, before the raw command
//! buffer. wgpu does not see what the raw pass does, so its view of the output, the meshes'
//! buffers and the sampled textures is made to match here (Bevy's clear of the target, the
//! output's first-use initialisation, resource transitions).

use super::view::{TileViewQueryItem, ViewFrame};
use crate::tile_deferred::scene::{draws::Draw, params::TileSceneParams};
use crate::vulkan::render_pass::OutputKind;
use bevy::render::{
    render_resource::{
        CommandEncoder, LoadOp, Operations, RenderPassColorAttachment,
        RenderPassDepthStencilAttachment, RenderPassDescriptor, StoreOp, TextureView,
        TextureViewId,
    },
    renderer::RenderContext,
    texture::GpuImage,
    view::ViewTarget,
};
use bevy::{color::LinearRgba, platform::collections::HashMap};

/// Bevy clears a camera target once per frame, when the first camera writes to it (through
/// `ViewTarget::out_texture_color_attachment`, whose "first call" flag every camera on that
/// target shares), with that camera's `output_mode` clear colour, over the whole target. Do the
/// same: take the flag, so that a later `Core3d` camera on this target loads instead of clearing
/// what the tile pass drew, and where the flag asks for a clear that the raw pass cannot do
/// (its render area is the viewport) clear the target with a wgpu pass before it.
pub(crate) fn clear_output_like_bevy(
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

/// wgpu zero-fills a texture it believes was never written before the first wgpu pass that
/// loads it, and it cannot see the raw pass's writes. A window's swapchain image is a new texture
/// for wgpu every frame, so a wgpu pass that loads it after the tile pass (an overlay blended over
/// the tile frame, a later camera on the window) would find it cleared to black. Image targets
/// are made "written" once, in `init_output`; on screenshot frames the output is Bevy's capture
/// texture, an image.
///
/// When such a pass follows ([`TileOutputLoadedAfter`](crate::tile_deferred::camera::TileOutputLoadedAfter) on the view,
/// or a later camera on the same target) and no wgpu pass has written the image yet this frame,
/// record, before the raw pass, an empty wgpu pass that stores it: it loads nothing (don't care)
/// and draws nothing, and wgpu then counts the image as written (and leaves it in
/// `PRESENT_SRC_KHR`, the layout the raw pass takes it from). Frames with nothing loading the
/// output after the tile pass get no extra pass. (wgpu 29 has no call that marks a texture as
/// written without a pass; later wgpu has `Texture::mark_externally_initialized`.)
pub(crate) fn mark_window_output_written(
    frame: &ViewFrame,
    scene: &TileSceneParams,
    output_view: &TextureView,
    ctx: &mut RenderContext,
) {
    // The first camera on the window, and `clear_output_like_bevy` recorded no clear (which
    // would have written the image for wgpu).
    let untouched = matches!(frame.output_kind, OutputKind::Swapchain { .. })
        && !frame.desc.keep_output
        && (frame.covers_target || frame.output_clear.is_none());
    if !untouched || !scene.output_loaded_after(frame.entity) {
        return;
    }
    // SAFETY: the pass stores undefined contents and nothing reads them: the raw pass that
    // follows takes the image from `UNDEFINED` and writes all of its render area (everything
    // outside it is undefined after that pass anyway when no clear was asked for).
    let dont_care = unsafe { wgpu::LoadOpDontCare::enabled() };
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some("tile_deferred_output_written_for_wgpu"),
            color_attachments: &[Some(RenderPassColorAttachment {
                view: output_view,
                depth_slice: None,
                resolve_target: None,
                ops: Operations {
                    load: LoadOp::DontCare(dont_care),
                    store: StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

/// Tells wgpu, on Bevy's encoder and before anything of the tile frame can fail, that the
/// output is this frame's colour target.
///
/// For a window's swapchain image this is what synchronises the frame with the presentation
/// engine: wgpu makes a submission wait on the image's acquire semaphore, and signals the
/// semaphore the present waits on, only when one of the submission's command buffers uses the
/// image through wgpu; the raw pass is invisible to it. Without this a lone tile camera on a
/// window (nothing else drawing into it) wrote an image the presentation engine could still be
/// reading, and presented it without waiting for the writes
/// (`VUID-vkAcquireNextImageKHR-semaphore-01286` on every reuse of an acquire semaphore). The
/// transition is a barrier, not a pass: nothing is loaded or stored. wgpu then moves the image
/// to `PRESENT_SRC_KHR` after Bevy's command buffer, which is where the raw pass takes it from.
///
/// For an image wgpu tracks, it is the layout the raw pass takes it in
/// (`COLOR_ATTACHMENT_OPTIMAL`).
pub(crate) fn claim_output(output_view: &TextureView, ctx: &mut RenderContext) {
    ctx.command_encoder().transition_resources(
        std::iter::empty(),
        std::iter::once(wgpu::TextureTransition {
            texture: output_view.texture(),
            selector: None,
            state: wgpu::TextureUses::COLOR_TARGET,
        }),
    );
}

/// What a failed tile frame leaves in its output: Bevy's clear colour of the camera, where
/// nothing else wrote the output this frame. The raw pass would have cleared it (the camera is
/// the first on its target and covers it); without this the window would present an image
/// nobody wrote, and an image target would keep the previous frame. A camera that loads what
/// an earlier camera drew leaves it as it is. `ClearColorConfig::None` on a first camera clears
/// to transparent black: there is nothing defined to keep.
pub(crate) fn clear_output_of_failed_frame(
    frame: &ViewFrame,
    output_view: &TextureView,
    ctx: &mut RenderContext,
) {
    if frame.desc.keep_output {
        return;
    }
    // What Bevy's frame shows where nothing is drawn: the camera's clear colour (its main pass
    // clears to it), else what the output is cleared to.
    let [red, green, blue, alpha] = frame.tonemap.clear_color;
    let clear = if alpha > 0.5 {
        LinearRgba::new(red, green, blue, 1.0)
    } else {
        frame.output_clear.unwrap_or(LinearRgba::NONE)
    };
    clear_view(ctx, "tile_deferred_failed_frame_clear", output_view, clear);
}

/// A wgpu pass that clears `view` to `clear` and stores it.
fn clear_view(ctx: &mut RenderContext, label: &str, view: &TextureView, clear: LinearRgba) {
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some(label),
            color_attachments: &[Some(RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: Operations {
                    load: LoadOp::Clear(clear.into()),
                    store: StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

/// Bevy's clear of a target the tile path cannot write (the camera falls back from the next
/// frame on): the first camera on the target clears it to its clear colour, as Bevy's would.
pub(crate) fn clear_unwritable_output(
    view: &TileViewQueryItem,
    scene: &TileSceneParams,
    ctx: &mut RenderContext,
) {
    // What Bevy's frame would show with nothing drawn: the camera's clear colour.
    let clear = cleared_like_bevy(view, scene);
    let Some(attachment) = view.target.out_texture_color_attachment(clear) else {
        return;
    };
    if !matches!(attachment.ops.load, LoadOp::Clear(_)) {
        return;
    }
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some("tile_deferred_unwritable_output_clear"),
            color_attachments: &[Some(attachment)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

/// Tells Bevy that the camera's main texture was written this frame (by the tile pass, or by
/// its clear where the pass could not run): the first wgpu pass that takes it as a colour
/// attachment (`ViewTarget::get_color_attachment`, as Bevy's bloom does to blend into it)
/// would otherwise clear it, as if it were Bevy's main pass, and lose the tile frame.
pub(crate) fn mark_main_texture_written(target: &ViewTarget) {
    // Taking the attachment is what marks it; the attachment itself is not used.
    let _ = target.get_unsampled_color_attachment();
}

/// Where Bevy post-processes the frame after the tile pass (`overlays::post_process`) and the
/// tile pass cannot run, its effects and blit would show a main texture nobody wrote this frame:
/// clear it to the camera's clear colour, what Bevy's frame shows with nothing drawn.
pub(crate) fn clear_unwritten_main_texture(
    view: &TileViewQueryItem,
    scene: &TileSceneParams,
    ctx: &mut RenderContext,
) {
    if !view.post_processed() {
        return;
    }
    let clear = cleared_like_bevy(view, scene).unwrap_or(LinearRgba::NONE);
    clear_view(
        ctx,
        "tile_deferred_unwritten_main_texture_clear",
        view.target.main_texture_view(),
        clear,
    );
    mark_main_texture_written(view.target);
}

/// What Bevy's frame of `view` shows with nothing drawn: the camera's clear colour, else what
/// its target is cleared to.
fn cleared_like_bevy(view: &TileViewQueryItem, scene: &TileSceneParams) -> Option<LinearRgba> {
    super::view::camera_clear(view.camera, scene)
        .or_else(|| super::view::output_clear(view.camera, scene))
}

/// wgpu-side preparation on Bevy's encoder, before the raw command buffer: the output's
/// first-use initialisation, then the transitions of everything the raw pass touches.
pub(crate) fn prepare_wgpu_resources(
    initialized_outputs: &mut HashMap<TextureViewId, u64>,
    frame_number: u64,
    scene: &TileSceneParams,
    frame: &ViewFrame,
    (output_view, overlay_depth): (&TextureView, Option<&TextureView>),
    draws: &[&Draw],
    sampled: &[&GpuImage],
    shadow_maps: [&wgpu::Texture; 2],
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
    if let Some(depth) = overlay_depth {
        init_overlay_depth(initialized_outputs, frame_number, depth, encoder);
    }
    transition_resources(scene, overlay_depth, draws, sampled, shadow_maps, encoder);
}

/// The first time Bevy's depth texture of a view is exported into, a wgpu pass that clears and
/// stores it, so that wgpu counts it as written and never zero-fills it over the exported depth
/// before the gizmo pass loads it (the gizmo pass stores it, so it stays written). One clear per
/// depth texture, the first frame it is exported into.
fn init_overlay_depth(
    initialized: &mut HashMap<TextureViewId, u64>,
    frame_number: u64,
    depth: &TextureView,
    encoder: &mut CommandEncoder,
) {
    if initialized.contains_key(&depth.id()) {
        initialized.insert(depth.id(), frame_number);
        return;
    }
    encoder.begin_render_pass(&RenderPassDescriptor {
        label: Some("tile_deferred_view_depth_init"),
        color_attachments: &[],
        depth_stencil_attachment: Some(RenderPassDepthStencilAttachment {
            view: depth,
            depth_ops: Some(Operations {
                load: LoadOp::Clear(0.0),
                store: StoreOp::Store,
            }),
            stencil_ops: None,
        }),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    initialized.insert(depth.id(), frame_number);
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
/// reads) and the sampled textures (Bevy's shadow maps among them: wgpu then waits for the shadow
/// passes' depth writes and leaves them in DEPTH_STENCIL_READ_ONLY_OPTIMAL); the output was
/// claimed as a colour target before ([`claim_output`]).
fn transition_resources(
    scene: &TileSceneParams,
    overlay_depth: Option<&TextureView>,
    draws: &[&Draw],
    sampled: &[&GpuImage],
    shadow_maps: [&wgpu::Texture; 2],
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
    // The view's own sampled images (the LUT, the skybox), Bevy's shadow maps, the materials'
    // fallback, their textures, the draws' lightmaps.
    let mut textures: Vec<&wgpu::Texture> = sampled.iter().map(|image| &*image.texture).collect();
    textures.extend(shadow_maps);
    textures.push(&scene.fallback_image.d2.texture);
    for draw in draws {
        let material = scene.materials.by_id.get(&draw.material);
        let material_textures = material.map_or(&[][..], |m| &m.textures[..]);
        for texture in material_textures.iter().chain([&draw.lightmap]).flatten() {
            if let Some(image) = scene.images.get(texture.image) {
                textures.push(&image.texture);
            }
        }
    }
    textures.sort_by_key(|t| *t as *const wgpu::Texture);
    textures.dedup_by_key(|t| *t as *const wgpu::Texture);
    // Bevy's depth texture, written by the depth export: a depth target, as the gizmo pass uses
    // it after.
    let depth_transition = overlay_depth.map(|depth| wgpu::TextureTransition {
        texture: depth.texture(),
        selector: None,
        state: wgpu::TextureUses::DEPTH_STENCIL_WRITE,
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
            .chain(depth_transition),
    );
}
