//! The crate's Vulkan layer: ash on wgpu's device, through wgpu's hal interop.
//!
//! **Unstable**: hidden from the docs and public only for the crate's tests; not part of the
//! supported API, it may change in any release.
//!
//! # Design
//!
//! wgpu cannot express subpasses, input attachments or memoryless attachments, so the crate
//! records its native render passes with ash on a command encoder of its own, obtained from wgpu
//! with `as_hal_mut` and handed back to Bevy with `RenderContext::add_command_buffer`, which
//! keeps submission order. Everything wgpu must know about goes through wgpu on Bevy's encoder
//! *before* that buffer: layout transitions of the output image, the meshes' vertex buffers and
//! the sampled textures (`transition_resources`), and a first-use clear of output images wgpu
//! believes uninitialised (it would otherwise zero-fill them before its next read, wiping what
//! the raw pass drew). The output is claimed as a colour target on Bevy's encoder too, a swapchain
//! image included: that use is what makes wgpu's submission wait on the image's acquire
//! semaphore and signal the semaphore its present waits on. wgpu moves a swapchain image to
//! `PRESENT_SRC_KHR` after each command buffer that uses it: the raw pass takes it from
//! `UNDEFINED` (or `PRESENT_SRC_KHR` when it loads) and leaves it in `PRESENT_SRC_KHR`.
//!
//! A plan of several render passes (the unmerged debug tier) is recorded in one command buffer;
//! each hands its attachments to the next through the compiler's external subpass
//! dependencies and final layouts (`SHADER_READ_ONLY_OPTIMAL` for what a later pass samples), so
//! no barrier is recorded outside a render pass.
//!
//! The objects the crate creates (attachment images, `TRANSIENT_ATTACHMENT` in lazily allocated
//! memory where the device has it; buffers, render passes, framebuffers, pipelines, descriptor
//! sets and samplers) are counted with the GPU memory they hold ([`LiveObjects`]) so leaks are
//! testable, and destroyed only once the GPU is done with them (`Graveyard`).
//!
//! Layout follows wgpu-hal's Vulkan backend: `context` (the device), `memory` (images and
//! buffers), `conv` (frame-graph enums to Vulkan), `render_pass` (native passes from the
//! compiled frame), `descriptors` (descriptor set layouts and pools), `pipeline` (shader modules,
//! pipeline layouts and graphics pipelines), `timing` (timestamp and occlusion queries). It is
//! generic: the passes, shaders and pipelines drawn with it are defined by its callers.

pub(crate) mod context;
pub(crate) mod memory;

pub(crate) use context::{Graveyard, IndirectDrawSupport, VulkanContext};
pub use context::{LiveObjects, ResourceCounts};
pub(crate) mod conv;
pub(crate) mod descriptors;
pub(crate) mod faults;
pub use faults::{FaultOutcome, TileFault, VulkanCall};
pub(crate) mod pipeline;
pub(crate) mod render_pass;
pub(crate) mod timing;
