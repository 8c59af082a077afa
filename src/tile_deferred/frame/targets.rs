//! Stage 4, the targets: the view's attachments sized to the target (everything but the
//! output), and the framebuffers of the frame's render passes over them and the textures Bevy
//! gives (the output, and Bevy's depth texture where the plan exports the tile depth).

use super::view::ViewFrame;
use super::view_sets::reallocate_view_sets;
use crate::tile_deferred::gpu::backend::ViewDevice;
use crate::tile_deferred::gpu::raw_view;
use crate::tile_deferred::{
    error::{TileError, TileResult, step},
    gpu::{backend::ViewResources, record::RecordedPass},
    plan::PlannedFrame,
};
use crate::{
    frame_graph::{CompiledFrame, ResourceId},
    vulkan::{
        Graveyard, VulkanContext, conv, memory::AttachmentImageDesc, render_pass::OutputKind,
    },
};
use ash::vk;
use bevy::{
    prelude::*,
    render::render_resource::{TextureView, TextureViewId},
};

/// (Re)creates the view's own attachments (every attachment of the plan but the output) when
/// the plan or the target size changed.
pub(crate) fn ensure_attachments(
    device: &mut ViewDevice,
    view: &mut ViewResources,
    frame: &ViewFrame,
    compiled: &CompiledFrame,
) -> TileResult<()> {
    let subpasses = || {
        compiled
            .native_passes
            .iter()
            .flat_map(|n| n.subpasses.iter())
    };
    let wanted: Vec<(crate::frame_graph::ResourceId, AttachmentImageDesc, String)> = compiled
        .attachments
        .iter()
        .filter(|a| !a.imported && !a.native_passes.is_empty())
        .map(|a| {
            let input = compiled.native_passes.iter().any(|n| {
                n.subpasses
                    .iter()
                    .any(|s| s.input.iter().any(|&i| n.attachments[i].resource == a.id))
            });
            let sampled = subpasses().any(|s| s.sampled.contains(&a.id));
            (
                a.id,
                AttachmentImageDesc {
                    format: conv::format(a.format),
                    extent: frame.target_extent,
                    samples: conv::samples(a.samples),
                    transient: a.transient,
                    input,
                    sampled,
                },
                a.name.clone(),
            )
        })
        .collect();
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
        match device.context.create_attachment_image(&name, desc) {
            Ok(image) => created.push((id, image)),
            Err(error) => {
                for (_, image) in created {
                    device.context.destroy_attachment_image(image);
                }
                return Err(TileError::vulkan("creating attachment images", error));
            }
        }
    }
    let old_images = std::mem::replace(&mut view.attachments, created);
    view.attachments_extent = frame.target_extent;
    // The sets name the old views until fresh ones are written.
    view.sets_outdated = true;
    let old_framebuffers: Vec<vk::Framebuffer> =
        view.framebuffers.drain().map(|(_, (fb, _))| fb).collect();
    let sampled = view.sampled_sets;
    device.graveyard.retire(Box::new(move |c: &VulkanContext| {
        old_framebuffers
            .into_iter()
            .for_each(|fb| c.destroy_framebuffer(fb));
        old_images
            .into_iter()
            .for_each(|(_, image)| c.destroy_attachment_image(image));
    }));
    // The input-attachment sets point at the old views; a frame in flight may still use them.
    reallocate_view_sets(device, view, sampled)
}

/// Stage 4: the framebuffers of the frame's render passes, over the view's attachments and
/// this frame's output view, each with its clear values, ready to record.
pub(crate) fn framebuffers(
    context: &VulkanContext,
    graveyard: &mut Graveyard,
    view: &mut ViewResources,
    frame_number: u64,
    frame: &ViewFrame,
    planned: &PlannedFrame,
    render_passes: &[vk::RenderPass],
    imported_views: &[(&str, &TextureView)],
) -> TileResult<Vec<RecordedPass>> {
    let mut imported = Vec::with_capacity(imported_views.len());
    for (name, texture_view) in imported_views {
        let Some(resource) = planned.compiled.attachment_named(name).map(|a| a.id) else {
            continue;
        };
        // The view is kept alive below until the GPU has finished this frame.
        let raw = raw_view(texture_view).ok_or(TileError::Missing {
            step: "reading an imported attachment's view",
        })?;
        // wgpu destroys a view as soon as it is dropped and its *tracked* uses are done; our
        // framebuffer's use is invisible to it. Bevy makes a new view of the swapchain image
        // (and of a screenshot's capture texture) every frame and drops it after presenting,
        // so the view is held until the GPU has finished this frame.
        let keep_alive = (*texture_view).clone();
        graveyard.retire(Box::new(move |_: &VulkanContext| drop(keep_alive)));
        imported.push(ImportedView {
            resource,
            id: texture_view.id(),
            raw,
        });
    }
    planned
        .compiled
        .native_passes
        .iter()
        .zip(render_passes)
        .map(|(native, &render_pass)| {
            Ok(RecordedPass {
                render_pass,
                framebuffer: framebuffer(
                    context,
                    graveyard,
                    view,
                    frame_number,
                    frame,
                    native,
                    render_pass,
                    (planned.output, &imported),
                )?,
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
            })
        })
        .collect()
}

/// A wgpu view the frame imports as an attachment (the output, Bevy's depth texture), with the
/// plan's resource and the raw handle.
struct ImportedView {
    resource: ResourceId,
    id: TextureViewId,
    raw: vk::ImageView,
}

/// The framebuffer of one native pass. Views that persist (image targets, Bevy's depth texture,
/// the view's own attachments) keep theirs; a pass writing a view Bevy makes anew each frame
/// (swapchain images, screenshot captures) gets one that is retired with the frame.
fn framebuffer(
    context: &VulkanContext,
    graveyard: &mut Graveyard,
    view_state: &mut ViewResources,
    frame_number: u64,
    frame: &ViewFrame,
    native: &crate::frame_graph::NativePass,
    render_pass: vk::RenderPass,
    (output, imported): (ResourceId, &[ImportedView]),
) -> TileResult<vk::Framebuffer> {
    let attached: Vec<&ImportedView> = imported
        .iter()
        .filter(|view| native.attachment(view.resource).is_some())
        .collect();
    let writes_output = native.attachment(output).is_some();
    let key = (attached.iter().map(|view| view.id).collect(), render_pass);
    if let Some((framebuffer, used)) = view_state.framebuffers.get_mut(&key) {
        *used = frame_number;
        return Ok(*framebuffer);
    }
    let views: Vec<vk::ImageView> = native
        .attachments
        .iter()
        .map(|a| {
            if let Some(view) = attached.iter().find(|view| view.resource == a.resource) {
                view.raw
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
        context.create_framebuffer(render_pass, &views, frame.target_extent),
    )?;
    if writes_output && matches!(frame.output_kind, OutputKind::Swapchain { .. }) {
        graveyard.retire(Box::new(move |c: &VulkanContext| {
            c.destroy_framebuffer(framebuffer)
        }));
    } else {
        view_state
            .framebuffers
            .insert(key, (framebuffer, frame_number));
    }
    Ok(framebuffer)
}
