//! Subpass dependencies: exact stages and access masks derived from the
//! hazards between uses.
//!
//! The two traps the seeds describe are avoided by construction: a read
//! through an input attachment is `FRAGMENT_SHADER` +
//! `INPUT_ATTACHMENT_READ` with `BY_REGION` (never `SHADER_READ`, which
//! tells the driver any pixel may be read and splits the subpasses, seed
//! 000), and a destination stage is the stage that actually touches the
//! attachment (never an earlier one such as `VERTEX_SHADER` or
//! `TOP_OF_PIPE`, which stalls the pipeline, seed 001).

use super::flags::{AccessMask, PipelineStages};
use super::graph::{Role, Use};
use super::ops::LoadOp;

/// A subpass in a dependency: `VK_SUBPASS_EXTERNAL` or an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum SubpassIndex {
    /// Commands before (as source) or after (as destination) the render
    /// pass.
    External,
    /// A subpass of the render pass.
    Index(u32),
}

/// One `VkSubpassDependency`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SubpassDependency {
    /// Source subpass.
    pub src: SubpassIndex,
    /// Destination subpass.
    pub dst: SubpassIndex,
    /// Stages of the source that must finish.
    pub src_stages: PipelineStages,
    /// Stages of the destination that wait.
    pub dst_stages: PipelineStages,
    /// Source writes made available (empty for write-after-read).
    pub src_access: AccessMask,
    /// Destination accesses the data is made visible to.
    pub dst_access: AccessMask,
    /// `VK_DEPENDENCY_BY_REGION_BIT`: the dependency is per pixel (all
    /// dependencies between subpasses, since only attachments and input
    /// attachments are exchanged; never on external dependencies).
    pub by_region: bool,
}

const CAO: PipelineStages = PipelineStages::COLOR_ATTACHMENT_OUTPUT;
const TESTS: PipelineStages =
    PipelineStages::EARLY_FRAGMENT_TESTS.union(PipelineStages::LATE_FRAGMENT_TESTS);

/// Stage and access of one use.
pub(crate) fn use_stage_access(u: &Use) -> (PipelineStages, AccessMask) {
    let rw = |read: AccessMask, write: AccessMask| {
        let mut a = AccessMask::NONE;
        if u.reads() {
            a |= read;
        }
        if u.writes() {
            a |= write;
        }
        a
    };
    match u.role {
        Role::Color => (
            CAO,
            rw(
                AccessMask::COLOR_ATTACHMENT_READ,
                AccessMask::COLOR_ATTACHMENT_WRITE,
            ),
        ),
        // The depth test always reads.
        Role::Depth => (
            TESTS,
            AccessMask::DEPTH_STENCIL_ATTACHMENT_READ
                | rw(AccessMask::NONE, AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE),
        ),
        Role::Input => (
            PipelineStages::FRAGMENT_SHADER,
            AccessMask::INPUT_ATTACHMENT_READ,
        ),
        Role::Sampled => (PipelineStages::FRAGMENT_SHADER, AccessMask::SHADER_READ),
        // Resolves run in COLOR_ATTACHMENT_OUTPUT with colour-attachment
        // access, for depth/stencil too (Vulkan spec, "Render Pass").
        Role::ResolveDst => (CAO, AccessMask::COLOR_ATTACHMENT_WRITE),
        Role::StorageRead => (PipelineStages::COMPUTE_SHADER, AccessMask::SHADER_READ),
        Role::StorageWrite => (
            PipelineStages::COMPUTE_SHADER,
            rw(AccessMask::SHADER_READ, AccessMask::SHADER_WRITE),
        ),
        Role::CopySrc => (PipelineStages::TRANSFER, AccessMask::TRANSFER_READ),
        Role::CopyDst => (PipelineStages::TRANSFER, AccessMask::TRANSFER_WRITE),
    }
}

/// Only the write bits of `a`.
pub(crate) fn write_bits(a: AccessMask) -> AccessMask {
    let w = AccessMask::SHADER_WRITE
        | AccessMask::COLOR_ATTACHMENT_WRITE
        | AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE
        | AccessMask::TRANSFER_WRITE
        | AccessMask::MEMORY_WRITE;
    a.intersection(w)
}

/// Stage and access of a load op (colour: `COLOR_ATTACHMENT_OUTPUT`,
/// depth: `EARLY_FRAGMENT_TESTS`; `Load` reads, `Clear`/`DontCare` write).
pub(crate) fn load_stage_access(load: LoadOp, depth: bool) -> (PipelineStages, AccessMask) {
    match (depth, load.reads_memory()) {
        (false, true) => (CAO, AccessMask::COLOR_ATTACHMENT_READ),
        (false, false) => (CAO, AccessMask::COLOR_ATTACHMENT_WRITE),
        (true, true) => (
            PipelineStages::EARLY_FRAGMENT_TESTS,
            AccessMask::DEPTH_STENCIL_ATTACHMENT_READ,
        ),
        (true, false) => (
            PipelineStages::EARLY_FRAGMENT_TESTS,
            AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE,
        ),
    }
}

/// Stage and access of a store op (colour: `COLOR_ATTACHMENT_OUTPUT`,
/// depth: `LATE_FRAGMENT_TESTS`).
pub(crate) fn store_stage_access(depth: bool) -> (PipelineStages, AccessMask) {
    if depth {
        (
            PipelineStages::LATE_FRAGMENT_TESTS,
            AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE,
        )
    } else {
        (CAO, AccessMask::COLOR_ATTACHMENT_WRITE)
    }
}

/// Collects dependencies, merging those with the same source and
/// destination subpass.
#[derive(Default)]
pub(crate) struct DepSet {
    pub deps: Vec<SubpassDependency>,
}

impl DepSet {
    pub fn add(
        &mut self,
        src: SubpassIndex,
        dst: SubpassIndex,
        src_stages: PipelineStages,
        src_access: AccessMask,
        dst_stages: PipelineStages,
        dst_access: AccessMask,
        by_region: bool,
    ) {
        if let Some(d) = self.deps.iter_mut().find(|d| d.src == src && d.dst == dst) {
            d.src_stages |= src_stages;
            d.src_access |= src_access;
            d.dst_stages |= dst_stages;
            d.dst_access |= dst_access;
            d.by_region &= by_region;
        } else {
            self.deps.push(SubpassDependency {
                src,
                dst,
                src_stages,
                dst_stages,
                src_access,
                dst_access,
                by_region,
            });
        }
    }

    /// The dependencies in a stable order: external-in first, then by
    /// source and destination, external-out last.
    pub fn finish(mut self) -> Vec<SubpassDependency> {
        let key = |i: SubpassIndex, out: bool| match i {
            SubpassIndex::External if out => u64::MAX,
            SubpassIndex::External => 0,
            SubpassIndex::Index(k) => u64::from(k) + 1,
        };
        self.deps
            .sort_by_key(|d| (key(d.src, false), key(d.dst, true)));
        self.deps
    }
}
