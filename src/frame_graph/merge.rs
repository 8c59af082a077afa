//! The merge rule: when may a raster pass become the next subpass of the
//! native render pass built so far?

use std::fmt;

use super::caps::DeviceCaps;
use super::cost::{TileFootprint, TileVerdict};
use super::format::Extent;
use super::graph::{FrameGraph, PassId, PassKind, ResourceId, Role};

/// Why two adjacent passes were not merged into one native render pass
/// (Unity's "Pass Break Reasoning"). `Display` says it in plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum BreakReason {
    /// `caps.merge_subpasses` is off (driver quirk or user toggle).
    MergingDisabled,
    /// One side is a compute or copy pass; only raster passes merge.
    NotRaster {
        /// The non-raster pass.
        pass: String,
        /// Its kind.
        kind: PassKind,
    },
    /// The render areas differ (a resolution change).
    ExtentMismatch {
        /// Extent of the native pass so far.
        prev: Extent,
        /// Extent of the next pass.
        next: Extent,
    },
    /// The MSAA sample counts differ (Mali splits such passes; Godot
    /// issue 82175).
    SampleCountMismatch {
        /// Samples of the native pass so far.
        prev: u32,
        /// Samples of the next pass.
        next: u32,
    },
    /// The next pass samples an attachment of the native pass as a texture.
    SamplesAttachment {
        /// The attachment sampled.
        attachment: String,
    },
    /// The next pass binds as an attachment something the native pass
    /// samples as a texture.
    AttachesSampledTexture {
        /// The attachment.
        attachment: String,
    },
    /// The native pass resolves an MSAA attachment that the next pass uses
    /// again: the resolve would sit in an intermediate subpass, which forces
    /// the samples out to memory on tilers (seed 000).
    IntermediateResolve {
        /// The MSAA attachment.
        attachment: String,
    },
    /// The two sides use different depth attachments, on a device whose
    /// driver is assumed to end the merged pass there
    /// ([`DeviceCaps::depth_change_merges`]).
    DifferentDepth {
        /// Depth attachment of the native pass so far.
        prev: String,
        /// Depth attachment of the next pass.
        next: String,
    },
    /// Nothing would stay on tile: the next pass shares no attachment with
    /// the native pass, so merging saves no write-out (Arm) and only grows
    /// the tile footprint (Granite merges only when something is shared).
    NothingShared,
    /// The merged pass would hold more colour/input/resolve attachments
    /// than the device allows.
    TooManyAttachments {
        /// Attachments the merged pass would hold.
        needed: u32,
        /// The limit (`caps.max_color_attachments`).
        max: u32,
    },
    /// The merged pass would read more input attachments than allowed.
    TooManyInputAttachments {
        /// Input attachments the merged pass would read.
        needed: u32,
        /// The limit (`caps.max_input_attachments`).
        max: u32,
    },
    /// The merged pass's per-pixel state would not fit the tile.
    TileBudgetExceeded {
        /// Bytes per pixel the merged pass would hold on tile.
        bytes_per_pixel: u32,
        /// The verdict against the budget.
        verdict: TileVerdict,
    },
}

impl fmt::Display for BreakReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakReason::MergingDisabled => {
                f.write_str("subpass merging is disabled for this device")
            }
            BreakReason::NotRaster { pass, kind } => write!(
                f,
                "`{pass}` is a {} pass; only raster passes can share a render pass",
                kind.name()
            ),
            BreakReason::ExtentMismatch { prev, next } => write!(
                f,
                "the resolution changes from {prev} to {next}; a render pass has one render area"
            ),
            BreakReason::SampleCountMismatch { prev, next } => write!(
                f,
                "the MSAA sample count changes from {prev} to {next}; \
                 subpasses must share one sample count"
            ),
            BreakReason::SamplesAttachment { attachment } => write!(
                f,
                "the next pass samples `{attachment}` as a texture; texture reads may touch \
                 any pixel, so `{attachment}` must be stored to memory first \
                 (read it as an input attachment to keep it on tile)"
            ),
            BreakReason::AttachesSampledTexture { attachment } => write!(
                f,
                "the next pass renders to `{attachment}`, which an earlier subpass samples \
                 as a texture"
            ),
            BreakReason::IntermediateResolve { attachment } => write!(
                f,
                "`{attachment}` is resolved before the next pass uses it again; a resolve in an \
                 intermediate subpass forces the MSAA samples to memory, so declare the \
                 resolve in the last pass that uses `{attachment}`"
            ),
            BreakReason::DifferentDepth { prev, next } => {
                write!(f, "the depth attachment changes from `{prev}` to `{next}`")
            }
            BreakReason::NothingShared => f.write_str(
                "the next pass shares no attachment with the render pass so far; \
                 merging would save no memory traffic",
            ),
            BreakReason::TooManyAttachments { needed, max } => write!(
                f,
                "the merged render pass would need {needed} colour/input attachments, \
                 more than the {max} allowed"
            ),
            BreakReason::TooManyInputAttachments { needed, max } => write!(
                f,
                "the merged render pass would read {needed} input attachments, \
                 more than the {max} allowed"
            ),
            BreakReason::TileBudgetExceeded {
                bytes_per_pixel,
                verdict,
            } => match verdict {
                TileVerdict::Spills {
                    used_bits,
                    budget_bits,
                } => write!(
                    f,
                    "the merged render pass would hold {used_bits} bits of colour per pixel on \
                     tile, over the {budget_bits}-bit budget"
                ),
                _ => write!(
                    f,
                    "the merged render pass would hold {bytes_per_pixel} bytes per pixel, \
                     more than tile memory can bin"
                ),
            },
        }
    }
}

/// A merge that was refused: the last pass of the native pass so far, the
/// pass that starts the next one, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MergeBreak {
    /// Name of the last pass of the earlier native pass.
    pub prev_pass: String,
    /// Name of the first pass of the next native pass.
    pub next_pass: String,
    /// Why they were kept apart.
    pub reason: BreakReason,
}

impl fmt::Display for MergeBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` | `{}`: {}",
            self.prev_pass, self.next_pass, self.reason
        )
    }
}

/// What the merge rule needs to know about a pass, or about a native pass
/// built so far (the union of its subpasses).
#[derive(Clone, Debug)]
pub struct MergeCandidate<'g> {
    graph: &'g FrameGraph,
    pub(crate) first: PassId,
    pub(crate) last: PassId,
    pub(crate) kind: PassKind,
    pub(crate) extent: Extent,
    pub(crate) samples: u32,
    /// Distinct non-depth attachments (colour, input, resolve targets).
    pub(crate) color_like: Vec<ResourceId>,
    /// Distinct non-depth attachments that hold tile state (colour, input).
    pub(crate) on_tile: Vec<ResourceId>,
    pub(crate) depth: Option<ResourceId>,
    pub(crate) inputs: Vec<ResourceId>,
    /// Every attachment bound (any role).
    pub(crate) attached: Vec<ResourceId>,
    pub(crate) sampled: Vec<ResourceId>,
    pub(crate) resolved: Vec<ResourceId>,
    pub(crate) color_bytes: u32,
    pub(crate) depth_bytes: u32,
}

fn insert(v: &mut Vec<ResourceId>, r: ResourceId) -> bool {
    if v.contains(&r) {
        false
    } else {
        v.push(r);
        true
    }
}

fn count_union(a: &[ResourceId], b: &[ResourceId]) -> usize {
    a.len() + b.iter().filter(|r| !a.contains(r)).count()
}

impl<'g> MergeCandidate<'g> {
    /// The candidate for one declared pass of `graph`, or `None` if `pass`
    /// is not a pass of `graph`.
    pub fn for_pass(graph: &'g FrameGraph, pass: PassId) -> Option<Self> {
        let decl = graph.passes.get(pass.index())?;
        let res = &graph.resources;
        let mut c = MergeCandidate {
            graph,
            first: pass,
            last: pass,
            kind: decl.kind,
            extent: Extent::default(),
            samples: 1,
            color_like: Vec::new(),
            on_tile: Vec::new(),
            depth: None,
            inputs: Vec::new(),
            attached: Vec::new(),
            sampled: Vec::new(),
            resolved: Vec::new(),
            color_bytes: 0,
            depth_bytes: 0,
        };
        for u in &decl.uses {
            let r = &res[u.res.index()];
            if u.is_attachment() {
                if let Some(e) = r.extent {
                    c.extent = e;
                }
                if u.role != Role::ResolveDst {
                    c.samples = r.desc.samples;
                }
                insert(&mut c.attached, u.res);
            }
            match u.role {
                Role::Depth => c.depth = Some(u.res),
                Role::Input if r.desc.format.is_depth() => {
                    insert(&mut c.inputs, u.res);
                }
                Role::Color | Role::Input => {
                    insert(&mut c.color_like, u.res);
                    insert(&mut c.on_tile, u.res);
                    if u.role == Role::Input {
                        insert(&mut c.inputs, u.res);
                    }
                }
                Role::ResolveDst => {
                    insert(&mut c.color_like, u.res);
                    if let Some(s) = u.resolve_src {
                        insert(&mut c.resolved, s);
                    }
                }
                Role::Sampled | Role::StorageRead | Role::CopySrc => {
                    insert(&mut c.sampled, u.res);
                }
                Role::StorageWrite | Role::CopyDst => {}
            }
        }
        c.recount();
        Some(c)
    }

    fn recount(&mut self) {
        let res = &self.graph.resources;
        let bytes = |r: &ResourceId| {
            let d = res[r.index()].desc;
            d.format.bytes_per_pixel() * d.samples
        };
        self.color_bytes = self.on_tile.iter().map(bytes).sum();
        // Depth read as an input attachment is the depth attachment itself
        // when bound as such; otherwise it still occupies depth storage.
        let mut depth = self.depth.map(|d| bytes(&d)).unwrap_or(0);
        for i in &self.inputs {
            if res[i.index()].desc.format.is_depth() && Some(*i) != self.depth {
                depth += bytes(i);
            }
        }
        self.depth_bytes = depth;
    }

    /// Name of the last pass in the candidate.
    pub fn last_pass_name(&self) -> &str {
        &self.graph.passes[self.last.index()].name
    }

    /// Name of the first pass in the candidate.
    pub fn first_pass_name(&self) -> &str {
        &self.graph.passes[self.first.index()].name
    }

    /// The per-pixel tile footprint of this candidate under `caps`.
    pub fn footprint(&self, caps: &DeviceCaps) -> TileFootprint {
        TileFootprint::evaluate(
            self.color_bytes,
            self.depth_bytes,
            self.extent,
            caps.tile_budget,
            caps.views,
        )
    }

    /// Makes `self` the native pass `self` + `next` (call after
    /// [`can_merge`] accepted them).
    pub fn absorb(&mut self, next: &MergeCandidate<'_>) {
        self.last = next.last;
        for r in &next.color_like {
            insert(&mut self.color_like, *r);
        }
        for r in &next.on_tile {
            insert(&mut self.on_tile, *r);
        }
        for r in &next.inputs {
            insert(&mut self.inputs, *r);
        }
        for r in &next.attached {
            insert(&mut self.attached, *r);
        }
        for r in &next.sampled {
            insert(&mut self.sampled, *r);
        }
        for r in &next.resolved {
            insert(&mut self.resolved, *r);
        }
        if self.depth.is_none() {
            self.depth = next.depth;
        }
        self.recount();
    }

    fn bytes_of(&self, r: ResourceId) -> u32 {
        let d = self.graph.resources[r.index()].desc;
        d.format.bytes_per_pixel() * d.samples
    }

    fn holds_depth(&self, r: ResourceId) -> bool {
        self.depth == Some(r) || self.inputs.contains(&r)
    }

    /// The footprint `self` + `next` would have, without building it.
    pub fn merged_footprint(&self, next: &MergeCandidate<'_>, caps: &DeviceCaps) -> TileFootprint {
        let color = self.color_bytes
            + next
                .on_tile
                .iter()
                .filter(|r| !self.on_tile.contains(r))
                .map(|r| self.bytes_of(*r))
                .sum::<u32>();
        let res = &self.graph.resources;
        let next_depths = next.depth.iter().chain(
            next.inputs
                .iter()
                .filter(|i| res[i.index()].desc.format.is_depth()),
        );
        let mut depth = self.depth_bytes;
        for (k, r) in next_depths.enumerate() {
            // `next.depth` may also be one of its depth inputs: count once.
            let dup = k > 0 && next.depth == Some(*r);
            if !dup && !self.holds_depth(*r) {
                depth += self.bytes_of(*r);
            }
        }
        TileFootprint::evaluate(color, depth, self.extent, caps.tile_budget, caps.views)
    }

    fn name(&self, r: ResourceId) -> String {
        self.graph.resources[r.index()].name.clone()
    }
}

/// The merge rule, a pure function: may `next` become the next subpass of
/// the native pass `prev` (adjacent after ordering)? The conditions, in the
/// order they are checked:
///
/// 1. merging is enabled in `caps`;
/// 2. both are raster passes (a compute or copy pass in between breaks);
/// 3. same extent; 4. same sample count;
/// 5. `next` samples no attachment of `prev` as a texture, and binds no
///    texture `prev` samples (input attachments are fine);
/// 6. `prev` resolves no MSAA attachment that `next` uses again;
/// 7. at most one depth attachment;
/// 8. something stays on tile: `next` binds an attachment of `prev`;
/// 9. the merged pass stays within `caps.max_color_attachments` non-depth
///    attachments and `caps.max_input_attachments` inputs;
/// 10. the merged per-pixel footprint fits the tile budget.
pub fn can_merge(
    prev: &MergeCandidate<'_>,
    next: &MergeCandidate<'_>,
    caps: &DeviceCaps,
) -> Result<(), BreakReason> {
    if !caps.merge_subpasses {
        return Err(BreakReason::MergingDisabled);
    }
    if prev.kind != PassKind::Raster {
        return Err(BreakReason::NotRaster {
            pass: prev.last_pass_name().to_owned(),
            kind: prev.kind,
        });
    }
    if next.kind != PassKind::Raster {
        return Err(BreakReason::NotRaster {
            pass: next.first_pass_name().to_owned(),
            kind: next.kind,
        });
    }
    if prev.extent != next.extent {
        return Err(BreakReason::ExtentMismatch {
            prev: prev.extent,
            next: next.extent,
        });
    }
    if prev.samples != next.samples {
        return Err(BreakReason::SampleCountMismatch {
            prev: prev.samples,
            next: next.samples,
        });
    }
    if let Some(r) = next.sampled.iter().find(|r| prev.attached.contains(r)) {
        return Err(BreakReason::SamplesAttachment {
            attachment: prev.name(*r),
        });
    }
    if let Some(r) = next.attached.iter().find(|r| prev.sampled.contains(r)) {
        return Err(BreakReason::AttachesSampledTexture {
            attachment: prev.name(*r),
        });
    }
    if let Some(r) = prev.resolved.iter().find(|r| next.attached.contains(r)) {
        return Err(BreakReason::IntermediateResolve {
            attachment: prev.name(*r),
        });
    }
    if let (Some(a), Some(b)) = (prev.depth, next.depth)
        && a != b
        && !caps.depth_change_merges
    {
        return Err(BreakReason::DifferentDepth {
            prev: prev.name(a),
            next: prev.name(b),
        });
    }
    if !next.attached.iter().any(|r| prev.attached.contains(r)) {
        return Err(BreakReason::NothingShared);
    }
    let needed = count_union(&prev.color_like, &next.color_like);
    if needed > caps.max_color_attachments as usize {
        return Err(BreakReason::TooManyAttachments {
            needed: needed as u32,
            max: caps.max_color_attachments,
        });
    }
    let needed = count_union(&prev.inputs, &next.inputs);
    if needed > caps.max_input_attachments as usize {
        return Err(BreakReason::TooManyInputAttachments {
            needed: needed as u32,
            max: caps.max_input_attachments,
        });
    }
    let fp = prev.merged_footprint(next, caps);
    if !fp.verdict.fits() {
        return Err(BreakReason::TileBudgetExceeded {
            bytes_per_pixel: fp.bytes_per_pixel(),
            verdict: fp.verdict,
        });
    }
    Ok(())
}
