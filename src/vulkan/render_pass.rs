//! Native Vulkan render passes built from the frame graph's compiled plan.
//!
//! The backend decides nothing the compiler decided: attachments, load/store ops, subpass
//! references, preserve lists and dependencies come from the [`NativePass`] as they are. What
//! is left to the backend is Vulkan-specific: image layouts (from how each subpass uses an
//! attachment) and how the imported output is handed over (a swapchain image ends in
//! `PRESENT_SRC_KHR`; an image wgpu tracks stays in `COLOR_ATTACHMENT_OPTIMAL`).

use super::{LiveObjects, VulkanContext, conv};
use crate::frame_graph::{CompiledFrame, NativePass, ResourceId, SubpassIndex};
use ash::vk;

/// How the imported output image is handed over at the start and end of the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum OutputKind {
    /// A swapchain image: wgpu leaves it in `PRESENT_SRC_KHR` after every command buffer that
    /// uses it (Bevy's, which claims it before the raw pass).
    Swapchain {
        /// Another camera drew into it before this frame's pass: the pass takes it from
        /// `PRESENT_SRC_KHR` even where it does not load it (an MSAA frame's resolve writes
        /// only its render area), so that what lies outside the render area is kept.
        kept: bool,
    },
    /// An image wgpu tracks, transitioned by wgpu to `COLOR_ATTACHMENT_OPTIMAL` beforehand.
    TrackedImage,
}

/// The plain-data description of a render pass (what `vkCreateRenderPass` receives). Its
/// [`RenderPassKey`] is the cache key: equal keys give compatible, identical render passes.
#[derive(Clone, Debug)]
pub(crate) struct RenderPassDescription {
    pub attachments: Vec<vk::AttachmentDescription>,
    pub subpasses: Vec<SubpassDescription>,
    pub dependencies: Vec<vk::SubpassDependency>,
}

/// One subpass's attachment references.
#[derive(Clone, Debug)]
pub(crate) struct SubpassDescription {
    pub color: Vec<vk::AttachmentReference>,
    pub input: Vec<vk::AttachmentReference>,
    pub resolve: Vec<vk::AttachmentReference>,
    pub depth: Option<vk::AttachmentReference>,
    pub preserve: Vec<u32>,
}

/// A cache key for the render passes of a frame: every value `vkCreateRenderPass` reads from
/// their descriptions, typed and hashable (the `vk` structs themselves are neither).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct RenderPassKey(Vec<PassKey>);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PassKey {
    attachments: Vec<AttachmentKey>,
    subpasses: Vec<SubpassKey>,
    dependencies: Vec<DependencyKey>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct AttachmentKey {
    flags: vk::AttachmentDescriptionFlags,
    format: vk::Format,
    samples: vk::SampleCountFlags,
    ops: [vk::AttachmentLoadOp; 2],
    store_ops: [vk::AttachmentStoreOp; 2],
    layouts: [vk::ImageLayout; 2],
}

type ReferenceKey = (u32, vk::ImageLayout);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SubpassKey {
    color: Vec<ReferenceKey>,
    input: Vec<ReferenceKey>,
    resolve: Vec<ReferenceKey>,
    depth: Option<ReferenceKey>,
    preserve: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct DependencyKey {
    subpasses: [u32; 2],
    stages: [vk::PipelineStageFlags; 2],
    access: [vk::AccessFlags; 2],
    flags: vk::DependencyFlags,
}

impl RenderPassKey {
    /// The key of a frame's render passes, in recording order.
    pub(crate) fn new(descriptions: &[RenderPassDescription]) -> Self {
        let reference = |r: &vk::AttachmentReference| (r.attachment, r.layout);
        let references = |refs: &[vk::AttachmentReference]| refs.iter().map(reference).collect();
        Self(
            descriptions
                .iter()
                .map(|d| PassKey {
                    attachments: d
                        .attachments
                        .iter()
                        .map(|a| AttachmentKey {
                            flags: a.flags,
                            format: a.format,
                            samples: a.samples,
                            ops: [a.load_op, a.stencil_load_op],
                            store_ops: [a.store_op, a.stencil_store_op],
                            layouts: [a.initial_layout, a.final_layout],
                        })
                        .collect(),
                    subpasses: d
                        .subpasses
                        .iter()
                        .map(|s| SubpassKey {
                            color: references(&s.color),
                            input: references(&s.input),
                            resolve: references(&s.resolve),
                            depth: s.depth.as_ref().map(reference),
                            preserve: s.preserve.clone(),
                        })
                        .collect(),
                    dependencies: d
                        .dependencies
                        .iter()
                        .map(|dep| DependencyKey {
                            subpasses: [dep.src_subpass, dep.dst_subpass],
                            stages: [dep.src_stage_mask, dep.dst_stage_mask],
                            access: [dep.src_access_mask, dep.dst_access_mask],
                            flags: dep.dependency_flags,
                        })
                        .collect(),
                })
                .collect(),
        )
    }
}

fn is_depth_format(format: vk::Format) -> bool {
    super::memory::aspect_of(format).contains(vk::ImageAspectFlags::DEPTH)
}

/// The layout a subpass needs an attachment in (its attachment references, and the descriptors
/// of its input attachments, use it).
pub(crate) fn layout_in_subpass(
    native: &NativePass,
    subpass: usize,
    attachment: usize,
) -> Option<vk::ImageLayout> {
    let s = &native.subpasses[subpass];
    let as_color = s.color.contains(&attachment) || s.resolve.contains(&Some(attachment));
    let as_input = s.input.contains(&attachment);
    let as_depth = s.depth.as_ref().filter(|d| d.attachment == attachment);
    let depth_format = is_depth_format(conv::format(native.attachments[attachment].format));
    Some(match (as_color, as_input, as_depth) {
        (false, false, None) if s.depth_resolve == Some(attachment) => {
            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
        }
        (false, false, None) => return None,
        (true, false, None) => vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        // Read and written in one subpass (programmable blending): only GENERAL allows both.
        (true, true, _) => vk::ImageLayout::GENERAL,
        (false, true, None) if depth_format => vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL,
        (false, true, None) => vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
        // Depth tested (and read as input) but not written, stencil written: one layout for
        // both references, as Vulkan requires of an attachment referenced twice in a subpass.
        (_, _, Some(depth)) if depth.stencil_write => {
            vk::ImageLayout::DEPTH_READ_ONLY_STENCIL_ATTACHMENT_OPTIMAL
        }
        (_, true, Some(depth)) if depth.read_only => {
            vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL
        }
        (_, true, Some(_)) => vk::ImageLayout::GENERAL,
        (_, false, Some(depth)) if depth.read_only => {
            vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL
        }
        (_, false, Some(_)) => vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
    })
}

/// Describes the render pass of `native`. `output` names the imported output attachment and
/// how it is handed over; `sampled_later` lists resources a later native pass samples (they
/// end in `SHADER_READ_ONLY_OPTIMAL`); `layout_before` gives the layout a loaded attachment is
/// in when the pass starts (from an earlier native pass).
pub(crate) fn describe(
    native: &NativePass,
    output: Option<(ResourceId, OutputKind)>,
    sampled_later: &[ResourceId],
    layout_before: impl Fn(ResourceId) -> Option<vk::ImageLayout>,
) -> RenderPassDescription {
    let attachment_count = native.attachments.len();
    let mut first_layout = vec![None; attachment_count];
    let mut last_layout = vec![None; attachment_count];
    for subpass in 0..native.subpasses.len() {
        for attachment in 0..attachment_count {
            if let Some(layout) = layout_in_subpass(native, subpass, attachment) {
                first_layout[attachment].get_or_insert(layout);
                last_layout[attachment] = Some(layout);
            }
        }
    }

    let attachments = native
        .attachments
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let format = conv::format(a.format);
            let loads = matches!(a.load, crate::frame_graph::LoadOp::Load);
            let used = last_layout[i].unwrap_or(vk::ImageLayout::GENERAL);
            let output_kind = output.filter(|(id, _)| *id == a.resource).map(|(_, k)| k);
            let (initial, final_layout) = match output_kind {
                Some(OutputKind::Swapchain { kept }) => (
                    if loads || kept {
                        vk::ImageLayout::PRESENT_SRC_KHR
                    } else {
                        vk::ImageLayout::UNDEFINED
                    },
                    vk::ImageLayout::PRESENT_SRC_KHR,
                ),
                Some(OutputKind::TrackedImage) => (
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                ),
                None => (
                    if loads {
                        layout_before(a.resource)
                            .unwrap_or(first_layout[i].unwrap_or(vk::ImageLayout::GENERAL))
                    } else {
                        vk::ImageLayout::UNDEFINED
                    },
                    if sampled_later.contains(&a.resource) {
                        vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
                    } else {
                        used
                    },
                ),
            };
            let depth = is_depth_format(format);
            let (load, store) = (conv::load_op(&a.load), conv::store_op(a.store));
            let has_stencil = a.format.has_stencil();
            vk::AttachmentDescription::default()
                .format(format)
                .samples(conv::samples(a.samples))
                .load_op(load)
                .store_op(store)
                .stencil_load_op(if depth && has_stencil {
                    load
                } else {
                    vk::AttachmentLoadOp::DONT_CARE
                })
                .stencil_store_op(if depth && has_stencil {
                    store
                } else {
                    vk::AttachmentStoreOp::DONT_CARE
                })
                .initial_layout(initial)
                .final_layout(final_layout)
        })
        .collect();

    let reference = |subpass: usize, attachment: usize| vk::AttachmentReference {
        attachment: attachment as u32,
        layout: layout_in_subpass(native, subpass, attachment).unwrap_or(vk::ImageLayout::GENERAL),
    };
    let subpasses = native
        .subpasses
        .iter()
        .enumerate()
        .map(|(i, s)| SubpassDescription {
            color: s.color.iter().map(|&a| reference(i, a)).collect(),
            input: s.input.iter().map(|&a| reference(i, a)).collect(),
            resolve: if s.resolve.iter().any(Option::is_some) {
                s.resolve
                    .iter()
                    .map(|r| match r {
                        Some(a) => reference(i, *a),
                        None => vk::AttachmentReference {
                            attachment: vk::ATTACHMENT_UNUSED,
                            layout: vk::ImageLayout::UNDEFINED,
                        },
                    })
                    .collect()
            } else {
                Vec::new()
            },
            depth: s.depth.as_ref().map(|d| reference(i, d.attachment)),
            preserve: s.preserve.iter().map(|&a| a as u32).collect(),
        })
        .collect();

    let index = |s: SubpassIndex| match s {
        SubpassIndex::External => vk::SUBPASS_EXTERNAL,
        SubpassIndex::Index(i) => i,
    };
    let dependencies = native
        .dependencies
        .iter()
        .map(|d| {
            vk::SubpassDependency::default()
                .src_subpass(index(d.src))
                .dst_subpass(index(d.dst))
                .src_stage_mask(conv::stages(d.src_stages))
                .dst_stage_mask(conv::stages(d.dst_stages))
                .src_access_mask(conv::access(d.src_access))
                .dst_access_mask(conv::access(d.dst_access))
                .dependency_flags(if d.by_region {
                    vk::DependencyFlags::BY_REGION
                } else {
                    vk::DependencyFlags::empty()
                })
        })
        .collect();

    RenderPassDescription {
        attachments,
        subpasses,
        dependencies,
    }
}

/// The `VkSubpassDescription`s of a description. An empty attachment list is passed as a null
/// pointer with a zero count, never as a non-null pointer to nothing: Adreno drivers mishandle
/// the latter ([`Quirks::ADRENO_NO_EMPTY_RESOLVE_LIST`](crate::tiers::Quirks), Filament's
/// workaround). Null is what the specification's own examples pass, so every device gets it.
fn subpass_descriptions(description: &RenderPassDescription) -> Vec<vk::SubpassDescription<'_>> {
    description
        .subpasses
        .iter()
        .map(|s| {
            let mut desc = vk::SubpassDescription::default()
                .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS);
            if !s.color.is_empty() {
                desc = desc.color_attachments(&s.color);
            }
            if !s.input.is_empty() {
                desc = desc.input_attachments(&s.input);
            }
            if !s.preserve.is_empty() {
                desc = desc.preserve_attachments(&s.preserve);
            }
            if !s.resolve.is_empty() {
                desc = desc.resolve_attachments(&s.resolve);
            }
            if let Some(depth) = &s.depth {
                desc = desc.depth_stencil_attachment(depth);
            }
            desc
        })
        .collect()
}

/// The Vulkan description of each native pass of the plan, in order: the last one writes the
/// output; an attachment a later pass samples ends in `SHADER_READ_ONLY_OPTIMAL`, and one a
/// later pass loads starts in the layout the earlier pass left it in.
pub(crate) fn describe_frame(
    compiled: &CompiledFrame,
    output: (ResourceId, OutputKind),
) -> Vec<RenderPassDescription> {
    let mut descriptions: Vec<RenderPassDescription> = Vec::new();
    for (index, native) in compiled.native_passes.iter().enumerate() {
        // Attachments whose next use, in a later native pass, is as a texture.
        let sampled_later: Vec<ResourceId> = native
            .attachments
            .iter()
            .map(|a| a.resource)
            .filter(|&resource| {
                compiled.native_passes[index + 1..]
                    .iter()
                    .find(|later| {
                        later.attachment(resource).is_some()
                            || later
                                .subpasses
                                .iter()
                                .any(|s| s.sampled.contains(&resource))
                    })
                    .is_some_and(|later| later.attachment(resource).is_none())
            })
            .collect();
        let earlier = &descriptions;
        let layout_before = |resource| {
            compiled.native_passes[..index]
                .iter()
                .zip(earlier)
                .rev()
                .find_map(|(native, description)| {
                    let position = native
                        .attachments
                        .iter()
                        .position(|a| a.resource == resource)?;
                    Some(description.attachments[position].final_layout)
                })
        };
        let description = describe(native, Some(output), &sampled_later, layout_before);
        descriptions.push(description);
    }
    descriptions
}

impl VulkanContext {
    /// Creates the `VkRenderPass` of a description.
    pub fn create_render_pass(
        &self,
        description: &RenderPassDescription,
    ) -> Result<vk::RenderPass, vk::Result> {
        let subpasses = subpass_descriptions(description);
        let info = vk::RenderPassCreateInfo::default()
            .attachments(&description.attachments)
            .subpasses(&subpasses)
            .dependencies(&description.dependencies);
        self.faults.fail(super::faults::VulkanCall::RenderPass)?;
        // SAFETY: the description references only its own attachments and subpasses (built by
        // `describe` from a validated plan); destroyed through `destroy_render_pass`.
        let render_pass = unsafe { self.device.create_render_pass(&info, None) }?;
        LiveObjects::created(&self.live.render_passes);
        Ok(render_pass)
    }

    /// Destroys a render pass. The GPU must be done with it.
    pub fn destroy_render_pass(&self, render_pass: vk::RenderPass) {
        // SAFETY: created by this device; no command buffer in flight uses it.
        unsafe { self.device.destroy_render_pass(render_pass, None) };
        LiveObjects::destroyed(&self.live.render_passes);
    }

    /// Creates a framebuffer over `views` for `render_pass`.
    pub fn create_framebuffer(
        &self,
        render_pass: vk::RenderPass,
        views: &[vk::ImageView],
        extent: vk::Extent2D,
    ) -> Result<vk::Framebuffer, vk::Result> {
        let info = vk::FramebufferCreateInfo::default()
            .render_pass(render_pass)
            .attachments(views)
            .width(extent.width)
            .height(extent.height)
            .layers(1);
        self.faults.fail(super::faults::VulkanCall::Framebuffer)?;
        // SAFETY: the views match the render pass's attachments in count, format and samples,
        // and are at least `extent` large.
        let framebuffer = unsafe { self.device.create_framebuffer(&info, None) }?;
        LiveObjects::created(&self.live.framebuffers);
        Ok(framebuffer)
    }

    /// Destroys a framebuffer. The GPU must be done with it.
    pub fn destroy_framebuffer(&self, framebuffer: vk::Framebuffer) {
        // SAFETY: created by this device; no command buffer in flight uses it.
        unsafe { self.device.destroy_framebuffer(framebuffer, None) };
        LiveObjects::destroyed(&self.live.framebuffers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_attachment_lists_are_null() {
        let reference = vk::AttachmentReference {
            attachment: 0,
            layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        };
        let description = RenderPassDescription {
            attachments: Vec::new(),
            subpasses: vec![SubpassDescription {
                color: vec![reference],
                input: Vec::new(),
                resolve: Vec::new(),
                depth: None,
                preserve: Vec::new(),
            }],
            dependencies: Vec::new(),
        };
        let subpasses = subpass_descriptions(&description);
        let subpass = &subpasses[0];
        assert_eq!(subpass.color_attachment_count, 1);
        assert!(!subpass.p_color_attachments.is_null());
        // The Adreno quirk: no non-null pointer to an empty list.
        assert!(subpass.p_input_attachments.is_null() && subpass.input_attachment_count == 0);
        assert!(subpass.p_resolve_attachments.is_null());
        assert!(subpass.p_preserve_attachments.is_null() && subpass.preserve_attachment_count == 0);
        assert!(subpass.p_depth_stencil_attachment.is_null());
    }

    #[test]
    fn render_pass_keys_tell_every_field_apart() {
        let description =
            |store_op: vk::AttachmentStoreOp, layout: vk::ImageLayout| RenderPassDescription {
                attachments: vec![vk::AttachmentDescription {
                    format: vk::Format::B8G8R8A8_SRGB,
                    samples: vk::SampleCountFlags::TYPE_1,
                    load_op: vk::AttachmentLoadOp::CLEAR,
                    store_op,
                    final_layout: vk::ImageLayout::PRESENT_SRC_KHR,
                    ..Default::default()
                }],
                subpasses: vec![SubpassDescription {
                    color: vec![vk::AttachmentReference {
                        attachment: 0,
                        layout,
                    }],
                    input: Vec::new(),
                    resolve: Vec::new(),
                    depth: None,
                    preserve: Vec::new(),
                }],
                dependencies: Vec::new(),
            };
        let key = |store, layout| RenderPassKey::new(&[description(store, layout)]);
        let color = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
        assert_eq!(
            key(vk::AttachmentStoreOp::STORE, color),
            key(vk::AttachmentStoreOp::STORE, color)
        );
        assert_ne!(
            key(vk::AttachmentStoreOp::STORE, color),
            key(vk::AttachmentStoreOp::DONT_CARE, color)
        );
        assert_ne!(
            key(vk::AttachmentStoreOp::STORE, color),
            key(vk::AttachmentStoreOp::STORE, vk::ImageLayout::GENERAL)
        );
        // One render pass is not the same frame as the same pass recorded twice.
        let one = description(vk::AttachmentStoreOp::STORE, color);
        assert_ne!(
            RenderPassKey::new(std::slice::from_ref(&one)),
            RenderPassKey::new(&[one.clone(), one])
        );
    }
}
