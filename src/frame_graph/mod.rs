//! The frame-graph compiler: passes declare how they use attachments;
//! `compile()` merges adjacent raster passes into native render passes with
//! subpasses, picks every load/store/resolve op, decides which attachments
//! are memoryless, derives exact subpass dependencies, explains every merge
//! it refused, and prices the frame in bytes, GB/s and milliwatts.
//!
//! It is pure CPU code (no Bevy, Vulkan or wgpu types): the Vulkan backend
//! maps [`LoadOp`], [`StoreOp`], [`PipelineStages`] and [`AccessMask`] (same
//! names and bits as Vulkan) onto its own enums.
//!
//! **Unstable**: hidden from the docs and public only for the crate's benches, tests and tools;
//! not part of the supported API, it may change in any release. Games read its output through
//! [`TileViewReport`](crate::TileViewReport).
//!
//! # Declaring
//!
//! Attachments are created by the graph (transient: contents start
//! undefined and die with the frame) or imported with [`ImportParams`]
//! (Unity's `ImportResourceParams`). Handles are typed and not `Clone`: a
//! pass that writes an attachment takes `&mut` its handle, a reader takes
//! `&`. Each raster pass binds colour and depth attachments with an
//! [`Access`] — [`Access::Write`] keeps untouched pixels (so they are
//! loaded), [`Access::WriteAll`] overwrites every pixel (so nothing is
//! loaded) — plus input attachments (same-pixel reads), sampled textures
//! (any-pixel reads) and resolve targets.
//!
//! # Compiling
//!
//! `compile()` runs named stages, each relying on the previous ones:
//!
//! 1. **validate** — unknown or foreign handles, reads before any write,
//!    mismatched resolves, mixed extents or sample counts in one pass,
//!    clears on a non-first use, device limits: a [`GraphError`] that names
//!    the pass and attachment.
//! 2. **cull** — passes whose outputs nobody uses (and without side
//!    effects) are dropped and listed in [`CompiledFrame::culled`].
//! 3. **order** — declared order, except that a pass reading an input
//!    attachment is moved right after that attachment's writer when no pass
//!    in between conflicts with it (Granite's `reorder_passes`).
//! 4. **merge** — adjacent raster passes join one native render pass while
//!    [`can_merge`] accepts: merging enabled; both raster (a compute or copy
//!    pass breaks); same extent; same sample count; no attachment of the
//!    pass so far sampled as a texture; no resolve in an intermediate
//!    subpass; one depth attachment; something shared (else merging saves
//!    no write-out: [`BreakReason::NothingShared`]); at most
//!    `caps.max_color_attachments` colour/input/resolve attachments and
//!    `caps.max_input_attachments` inputs; the per-pixel footprint fits the
//!    tile. Every refusal becomes a [`MergeBreak`] with both pass names.
//! 5. **load/store/resolve** — per attachment and native pass. Load:
//!    `Clear` on a first use with a clear value; `DontCare` on a first use
//!    without one, on `WriteAll`, on a resolve target, or for an import with
//!    `clear_on_first_use`; `Load` otherwise. Store: `Store` when a later
//!    native pass reads the contents (attachment load, texture, compute,
//!    copy) or an import is needed after the frame; `None` instead when the
//!    pass only read them and the device has `STORE_OP_NONE`; `DontCare`
//!    otherwise. An MSAA attachment whose only later use is its resolve
//!    target is therefore `DontCare` and its resolve target `Store`; the
//!    merge rule keeps every resolve in the last subpass that touches the
//!    MSAA attachment, because a resolve in an intermediate subpass forces
//!    the samples to memory (seed 000).
//! 6. **memoryless** — an attachment is transient iff it is not imported,
//!    its load is `Clear`/`DontCare`, its store `DontCare`, and all its uses
//!    lie in one native pass; with lazily allocated memory it needs no
//!    memory at all ([`AttachmentPlan::memoryless`]).
//! 7. **dependencies** — from the hazards between uses: a colour/depth write
//!    read through an input attachment is `COLOR_ATTACHMENT_OUTPUT` (or the
//!    fragment tests) / `*_WRITE` → `FRAGMENT_SHADER` /
//!    `INPUT_ATTACHMENT_READ`, `BY_REGION`; never `SHADER_READ` for an
//!    input attachment and never a destination stage earlier than the one
//!    that touches the attachment. External dependencies at the start and
//!    end of each render pass are derived the same way from the previous
//!    and next uses (load and store ops included).
//! 8. **price** — [`FrameCost`]: bytes loaded and stored per attachment and
//!    native pass (extent x bytes per pixel x samples x views; resolve
//!    targets at 1 sample), plus one full read per sampled texture or
//!    storage/copy source and one full write per storage/copy destination;
//!    MB, GB/s and milliwatts at [`DEFAULT_MW_PER_GBPS`]. Each render pass
//!    also gets a [`TileFootprint`]: bytes per pixel on tile and a verdict
//!    against the Mali bits-per-pixel budget or the Adreno GMEM bins
//!    ([`bin_layout`]).
//!
//! [`FrameGraphCache`] returns the previous plan when the declaration and
//! caps did not change. Compiling with `caps.with_merging(false)` gives the
//! counterfactual unmerged plan (more render passes, more traffic).
//!
//! # Worked example: deferred G-buffer → lighting → tonemap
//!
//! A 1920x1080 frame on a Mali Valhall (256-bit tile budget). The G-buffer
//! pass writes three RGBA8 targets and depth; lighting reads them as input
//! attachments and writes an HDR target; tonemap reads HDR as an input
//! attachment and writes the swapchain image, imported as an output. (The
//! code is the `worked_example_from_module_docs` unit test.)
//!
//! ```ignore
//! use bevy_tile_deferred::frame_graph::*;
//!
//! let mut g = FrameGraph::new(Extent::new(1920, 1080));
//! let rgba8 = AttachmentDesc::new(Format::Rgba8Unorm);
//! let mut albedo = g.create_attachment("albedo", rgba8);
//! let mut normal = g.create_attachment("normal", rgba8);
//! let mut material = g.create_attachment("material", rgba8);
//! let mut depth = g.create_attachment("depth", AttachmentDesc::new(Format::Depth24Stencil8));
//! let mut hdr = g.create_attachment("hdr", AttachmentDesc::new(Format::Rg11b10Float));
//! let mut out = g.import_attachment("swapchain", rgba8, ImportParams::output());
//! g.add_raster_pass("gbuffer")
//!     .color(&mut albedo, Access::WriteAll, None)
//!     .color(&mut normal, Access::WriteAll, None)
//!     .color(&mut material, Access::WriteAll, None)
//!     .depth(&mut depth, Access::ReadWrite, Some(ClearValue::DEPTH_REVERSE_Z))
//!     .finish()?;
//! g.add_raster_pass("lighting")
//!     .input(&albedo).input(&normal).input(&material).input(&depth)
//!     .color(&mut hdr, Access::WriteAll, None)
//!     .finish()?;
//! g.add_raster_pass("tonemap")
//!     .input(&hdr)
//!     .color(&mut out, Access::WriteAll, None)
//!     .finish()?;
//! let frame = compile(&g, &DeviceCaps::mali_valhall())?;
//! ```
//!
//! What `compile` decides:
//!
//! ```text
//! native pass #0 "gbuffer+lighting+tonemap", 3 subpasses, 1920x1080 x1
//!   albedo, normal, material  DontCare / DontCare  transient (memoryless)
//!   depth                     Clear    / DontCare  transient (memoryless)
//!   hdr                       DontCare / DontCare  transient (memoryless)
//!   swapchain                 DontCare / Store
//! dependencies
//!   EXTERNAL -> 0..2  first uses (swapchain: COLOR_ATTACHMENT_OUTPUT, no access)
//!   0 -> 1  COLOR_ATTACHMENT_OUTPUT | EARLY/LATE_FRAGMENT_TESTS, COLOR/DEPTH_STENCIL_ATTACHMENT_WRITE
//!           -> FRAGMENT_SHADER, INPUT_ATTACHMENT_READ, BY_REGION
//!   1 -> 2  COLOR_ATTACHMENT_OUTPUT, COLOR_ATTACHMENT_WRITE
//!           -> FRAGMENT_SHADER, INPUT_ATTACHMENT_READ, BY_REGION
//!   2 -> EXTERNAL  swapchain store -> BOTTOM_OF_PIPE
//! tile footprint: 3x4 (G-buffer) + 4 (hdr) + 4 (swapchain) = 20 B colour
//!   = 160 bits <= 256: fits; + 4 B depth
//! cost: one store of the swapchain = 1920x1080x4 B = 7.9 MiB/frame,
//!   0.50 GB/s at 60 fps, about 60 mW at 120 mW per GB/s
//! ```
//!
//! With `caps.with_merging(false)` the same graph becomes three render
//! passes: the G-buffer and depth are stored and loaded back, HDR too — ten
//! more 7.9 MiB transfers, about 5 GB/s and 600 mW more at 60 fps (the
//! `merging_disabled_by_caps_is_the_counterfactual` test). On a Mali Bifrost
//! (128 bits) tonemap does not merge: with the swapchain, 160 bits of
//! colour spill, and the break says so.

mod cache;
mod caps;
mod compile;
mod cost;
mod deps;
mod error;
mod flags;
mod format;
mod graph;
mod merge;
mod ops;
mod shadows;
pub mod stock_bevy;
mod validate;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use cache::FrameGraphCache;
pub use caps::{DeviceCaps, TileBudget};
pub use compile::{
    AttachmentPlan, CompiledFrame, DepthRef, NativeAttachment, NativePass, Subpass, compile,
};
pub use cost::{
    BinLayout, DEFAULT_MW_PER_GBPS, FrameCost, TileFootprint, TileVerdict, Traffic, bin_layout,
    bytes_to_mb, bytes_to_mib, image_bytes,
};
pub use deps::{SubpassDependency, SubpassIndex};
pub use error::GraphError;
pub use flags::{AccessMask, PipelineStages};
pub use format::{Access, AttachmentDesc, ClearValue, Extent, Format, Size};
pub use graph::{
    AttachmentHandle, ComputePassBuilder, CopyPassBuilder, FrameGraph, ImportParams, PassId,
    PassKind, RasterPassBuilder, ResourceId,
};
pub use merge::{BreakReason, MergeBreak, MergeCandidate, can_merge};
pub use ops::{LoadOp, LoadReason, StoreOp, StoreReason};
pub use shadows::{SHADOW_MAP_FORMAT, ShadowMaps, declare_shadow_maps};
pub use stock_bevy::{
    StockBevyOptions, StockBevyPath, compile_stock_bevy, stock_bevy_caps, stock_bevy_deferred,
    stock_bevy_forward,
};
