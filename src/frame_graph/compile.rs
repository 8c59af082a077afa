//! `compile()`: the stages that turn a declaration into native render
//! passes, and the plan they produce.

use std::fmt::{self, Write as _};

use super::caps::DeviceCaps;
use super::cost::{FrameCost, TileFootprint, TileVerdict, Traffic, image_bytes};
use super::deps::{
    DepSet, SubpassDependency, SubpassIndex, load_stage_access, store_stage_access,
    use_stage_access, write_bits,
};
use super::error::GraphError;
use super::flags::{AccessMask, PipelineStages};
use super::format::{Extent, Format};
use super::graph::{FrameGraph, PassId, PassKind, ResourceId, Role, Use};
use super::merge::{MergeBreak, MergeCandidate, can_merge};
use super::ops::{
    Later, LoadOp, LoadReason, Prior, StoreOp, StoreReason, decide_load, decide_store,
};
use super::validate::validate;

/// How a subpass binds the depth attachment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DepthRef {
    /// Index into [`NativePass::attachments`].
    pub attachment: usize,
    /// Depth test without depth writes (read-only layout).
    pub read_only: bool,
    /// The stencil aspect is written while the depth aspect is read-only
    /// (`DEPTH_READ_ONLY_STENCIL_ATTACHMENT_OPTIMAL`).
    pub stencil_write: bool,
}

/// One subpass of a native render pass: one declared raster pass.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Subpass {
    /// The declared pass.
    pub pass: PassId,
    /// Its name.
    pub name: String,
    /// Colour attachments in output-location order (indices into
    /// [`NativePass::attachments`]).
    pub color: Vec<usize>,
    /// Input attachments in declaration order.
    pub input: Vec<usize>,
    /// The depth attachment.
    pub depth: Option<DepthRef>,
    /// Resolve targets, parallel to `color` (`pResolveAttachments`).
    pub resolve: Vec<Option<usize>>,
    /// Resolve target of the depth attachment
    /// (`VK_KHR_depth_stencil_resolve`).
    pub depth_resolve: Option<usize>,
    /// Attachments used before and after this subpass but not by it.
    pub preserve: Vec<usize>,
    /// Attachments sampled as textures (written by earlier native passes).
    pub sampled: Vec<ResourceId>,
}

/// One attachment of a native render pass.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NativeAttachment {
    /// The graph attachment.
    pub resource: ResourceId,
    /// Its name.
    pub name: String,
    /// Its format.
    pub format: Format,
    /// Its sample count.
    pub samples: u32,
    /// What the pass does with memory when it begins.
    pub load: LoadOp,
    /// What the pass does with the tile contents when it ends.
    pub store: StoreOp,
    /// Why `load` is what it is, naming the passes responsible.
    pub load_reason: LoadReason,
    /// Why `store` is what it is, naming the passes responsible.
    pub store_reason: StoreReason,
    /// Never loaded, never stored, used only in this pass: allocate with
    /// `TRANSIENT_ATTACHMENT` (and lazily allocated memory if available).
    pub transient: bool,
    /// For an MSAA attachment: the attachment it is resolved into.
    pub resolve: Option<usize>,
}

/// One native pass: a Vulkan render pass (one subpass per merged raster
/// pass) or a single compute/copy pass.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NativePass {
    /// The pass names joined with `+`.
    pub name: String,
    /// Raster (a render pass) or a compute/copy pass.
    pub kind: PassKind,
    /// The declared passes it runs, in order.
    pub passes: Vec<PassId>,
    /// Render area (zero for compute/copy).
    pub extent: Extent,
    /// Sample count of the subpasses (1 for compute/copy).
    pub samples: u32,
    /// Render-pass attachments with their ops (empty for compute/copy).
    pub attachments: Vec<NativeAttachment>,
    /// Subpasses (empty for compute/copy).
    pub subpasses: Vec<Subpass>,
    /// Subpass dependencies, external ones included (empty for
    /// compute/copy).
    pub dependencies: Vec<SubpassDependency>,
    /// Per-pixel tile state and its verdict.
    pub footprint: TileFootprint,
    /// Attachments read outside the framebuffer (sampled, storage, copy
    /// source).
    pub reads: Vec<ResourceId>,
    /// Attachments written outside the framebuffer (storage, copy
    /// destination).
    pub writes: Vec<ResourceId>,
}

impl NativePass {
    /// The attachment entry for `resource`, if the pass binds it.
    pub fn attachment(&self, resource: ResourceId) -> Option<&NativeAttachment> {
        self.attachments.iter().find(|a| a.resource == resource)
    }

    /// The attachment entry named `name`, if the pass binds it.
    pub fn attachment_named(&self, name: &str) -> Option<&NativeAttachment> {
        self.attachments.iter().find(|a| a.name == name)
    }
}

/// The frame-wide plan for one attachment.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct AttachmentPlan {
    /// The graph attachment.
    pub id: ResourceId,
    /// Its name.
    pub name: String,
    /// Its format.
    pub format: Format,
    /// Its extent.
    pub extent: Extent,
    /// Its sample count.
    pub samples: u32,
    /// Imported (owned outside the graph).
    pub imported: bool,
    /// Imported with its contents from before the frame needed
    /// ([`ImportParams::contents_needed`](super::ImportParams)): what the frame does not
    /// overwrite survives it. Not always a load: a multisampled frame's resolve writes only
    /// the render area, and loads nothing.
    #[cfg_attr(feature = "serde", serde(default))]
    pub keeps_contents: bool,
    /// Native passes that use it, in order (empty: unused after culling,
    /// needs no image at all).
    pub native_passes: Vec<usize>,
    /// Never loaded or stored and used in one render pass: create with
    /// `TRANSIENT_ATTACHMENT` usage.
    pub transient: bool,
    /// Transient and the device has lazily allocated memory: no backing
    /// memory at all (memoryless).
    pub memoryless: bool,
}

/// The compiled plan of a frame.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CompiledFrame {
    /// Passes that survived culling, in execution order.
    pub order: Vec<PassId>,
    /// Native passes in execution order.
    pub native_passes: Vec<NativePass>,
    /// Every refused merge between adjacent passes, with its reason.
    pub breaks: Vec<MergeBreak>,
    /// Names of the passes culled because nobody uses their outputs.
    pub culled: Vec<String>,
    /// Per-attachment plans, indexed by [`ResourceId`].
    pub attachments: Vec<AttachmentPlan>,
    /// Bandwidth per attachment, per native pass and in total.
    pub cost: FrameCost,
}

impl CompiledFrame {
    /// Index of the native pass that runs `pass`, if it was not culled.
    pub fn native_pass_of(&self, pass: PassId) -> Option<usize> {
        self.native_passes
            .iter()
            .position(|n| n.passes.contains(&pass))
    }

    /// Number of render passes (raster native passes).
    pub fn render_pass_count(&self) -> usize {
        self.native_passes
            .iter()
            .filter(|n| n.kind == PassKind::Raster)
            .count()
    }

    /// The plan of the attachment named `name`.
    pub fn attachment_named(&self, name: &str) -> Option<&AttachmentPlan> {
        self.attachments.iter().find(|a| a.name == name)
    }

    /// A multi-line, human-readable summary (native passes, subpasses,
    /// load/store ops, breaks and cost) for logs and tests.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = self.write_description(&mut s);
        s
    }

    fn write_description(&self, s: &mut String) -> fmt::Result {
        for (i, n) in self.native_passes.iter().enumerate() {
            writeln!(
                s,
                "#{i} {} [{}] {} x{} — {:.2} MiB",
                n.name,
                n.kind.name(),
                n.extent,
                n.samples,
                super::cost::bytes_to_mib(self.cost.per_native_pass[i].total())
            )?;
            for a in &n.attachments {
                writeln!(
                    s,
                    "    {} {} x{}: {} / {}{}",
                    a.name,
                    a.format,
                    a.samples,
                    a.load.name(),
                    a.store.name(),
                    if a.transient { " (transient)" } else { "" }
                )?;
            }
        }
        for b in &self.breaks {
            writeln!(s, "break {b}")?;
        }
        for c in &self.culled {
            writeln!(s, "culled `{c}`")?;
        }
        writeln!(
            s,
            "total {:.2} MiB/frame, {:.2} GB/s at 60 fps",
            self.cost.mib(),
            self.cost.gb_per_s(60.0)
        )
    }
}

/// Compiles `graph` for a device with `caps`.
///
/// The stages run in this order; each takes decisions the next relies on.
pub fn compile(graph: &FrameGraph, caps: &DeviceCaps) -> Result<CompiledFrame, GraphError> {
    // Validate: reject what no render pass can express before deciding anything.
    validate(graph, caps)?;
    // Cull: a pass whose outputs nobody uses costs bandwidth for nothing.
    let live = cull(graph);
    // Order: declared order, but an input-attachment reader moves next to its writer so they can merge.
    let order = order_passes(graph, &live);
    // Merge: greedy runs of adjacent raster passes accepted by `can_merge` become one render pass.
    let (groups, breaks) = merge_passes(graph, &order, caps);
    // Load/store/resolve: from each attachment's first use in a native pass and its next reader
    // after it, each op with the reason, naming the writer or reader (or the refused merge).
    let timeline = Timeline::new(graph, &order, &groups);
    let mut native_passes: Vec<NativePass> = groups
        .iter()
        .enumerate()
        .map(|(g, grp)| build_native_pass(graph, caps, &order, g, grp, &timeline, &breaks))
        .collect();
    // Memoryless: transient iff never loaded, never stored, and all uses in one render pass.
    let attachments = plan_attachments(graph, caps, &native_passes, &timeline);
    for n in &mut native_passes {
        for a in &mut n.attachments {
            a.transient = attachments[a.resource.index()].transient;
        }
    }
    // Dependencies: exact stages and access from the hazards inside and around each render pass.
    for (g, n) in native_passes.iter_mut().enumerate() {
        if n.kind == PassKind::Raster {
            n.dependencies = dependencies(graph, &groups[g], g, n, &timeline);
        }
    }
    // Price: bytes loaded, stored, sampled and written, per attachment and per native pass.
    let cost = price(graph, caps, &order, &groups, &native_passes);
    let culled = graph
        .passes
        .iter()
        .zip(&live)
        .filter(|(_, l)| !**l)
        .map(|(p, _)| p.name.clone())
        .collect();
    Ok(CompiledFrame {
        order,
        native_passes,
        breaks,
        culled,
        attachments,
        cost,
    })
}

/// Backward liveness: a pass lives if it has side effects or writes a
/// version of an attachment that a live later pass needs (or that an
/// import needs after the frame).
fn cull(graph: &FrameGraph) -> Vec<bool> {
    let mut needed: Vec<bool> = graph
        .resources
        .iter()
        .map(|r| r.import.is_some_and(|i| i.needed_after_frame))
        .collect();
    let mut live = vec![false; graph.passes.len()];
    for (i, p) in graph.passes.iter().enumerate().rev() {
        let alive = p.side_effects || p.uses.iter().any(|u| u.writes() && needed[u.res.index()]);
        if !alive {
            continue;
        }
        live[i] = true;
        // Versions before this pass are needed if the pass reads or keeps them.
        for u in &p.uses {
            let r = u.res.index();
            let uses_of_r = || p.uses.iter().filter(|v| v.res == u.res);
            if uses_of_r().any(|v| v.writes()) {
                needed[r] = uses_of_r().any(|v| v.needs_prior());
            } else {
                needed[r] = true;
            }
        }
    }
    live
}

fn conflicts(graph: &FrameGraph, a: PassId, b: PassId) -> bool {
    let (pa, pb) = (&graph.passes[a.index()], &graph.passes[b.index()]);
    pa.uses.iter().any(|ua| {
        pb.uses
            .iter()
            .any(|ub| ua.res == ub.res && (ua.writes() || ub.writes()))
    })
}

/// Declared order of the live passes, except that a raster pass reading an
/// input attachment is hoisted to right after that attachment's writer when
/// no pass in between conflicts with it (Granite's `reorder_passes`).
fn order_passes(graph: &FrameGraph, live: &[bool]) -> Vec<PassId> {
    let mut order: Vec<PassId> = (0..graph.passes.len())
        .filter(|&i| live[i])
        .map(|i| PassId(i as u32))
        .collect();
    for p in 0..order.len() {
        let pass = &graph.passes[order[p].index()];
        if pass.kind != PassKind::Raster || !pass.uses.iter().any(|u| u.role == Role::Input) {
            continue;
        }
        let Some(q) = (0..p).rev().find(|&q| conflicts(graph, order[q], order[p])) else {
            continue;
        };
        if q + 1 == p {
            continue;
        }
        let writer = &graph.passes[order[q].index()];
        let feeds_input = pass.uses.iter().any(|u| {
            u.role == Role::Input && writer.uses.iter().any(|w| w.res == u.res && w.writes())
        });
        if feeds_input && writer.kind == PassKind::Raster {
            let id = order.remove(p);
            order.insert(q + 1, id);
        }
    }
    order
}

/// A run of adjacent passes (positions `start..end` of the order) that
/// forms one native pass.
pub(crate) struct Group {
    pub start: usize,
    pub end: usize,
    pub kind: PassKind,
    pub extent: Extent,
    pub samples: u32,
    pub footprint: TileFootprint,
}

fn merge_passes(
    graph: &FrameGraph,
    order: &[PassId],
    caps: &DeviceCaps,
) -> (Vec<Group>, Vec<MergeBreak>) {
    let mut groups = Vec::new();
    let mut breaks = Vec::new();
    let Some(&first) = order.first() else {
        return (groups, breaks);
    };
    let close = |c: &MergeCandidate<'_>, start: usize, end: usize| Group {
        start,
        end,
        kind: c.kind,
        extent: c.extent,
        samples: c.samples,
        footprint: if c.kind == PassKind::Raster {
            c.footprint(caps)
        } else {
            TileFootprint {
                color_bytes_per_pixel: 0,
                depth_bytes_per_pixel: 0,
                verdict: TileVerdict::Unlimited,
            }
        },
    };
    // `for_pass` cannot fail: every id in `order` comes from the graph.
    let mut cur = MergeCandidate::for_pass(graph, first);
    let mut start = 0;
    for (pos, &id) in order.iter().enumerate().skip(1) {
        let (Some(c), Some(next)) = (cur.as_mut(), MergeCandidate::for_pass(graph, id)) else {
            continue;
        };
        match can_merge(c, &next, caps) {
            Ok(()) => c.absorb(&next),
            Err(reason) => {
                breaks.push(MergeBreak {
                    prev_pass: c.last_pass_name().to_owned(),
                    next_pass: next.first_pass_name().to_owned(),
                    reason,
                });
                groups.push(close(c, start, pos));
                cur = Some(next);
                start = pos;
            }
        }
    }
    if let Some(c) = &cur {
        groups.push(close(c, start, order.len()));
    }
    (groups, breaks)
}

/// One live use of an attachment: position in the order, native pass and
/// the use itself.
#[derive(Clone, Copy)]
pub(crate) struct Touch {
    pub pos: usize,
    pub group: usize,
    pub use_: Use,
}

/// Every live use of every attachment, in execution order.
pub(crate) struct Timeline {
    pub per_resource: Vec<Vec<Touch>>,
}

impl Timeline {
    fn new(graph: &FrameGraph, order: &[PassId], groups: &[Group]) -> Self {
        let mut per_resource = vec![Vec::new(); graph.resources.len()];
        for (g, grp) in groups.iter().enumerate() {
            for (pos, id) in order.iter().enumerate().take(grp.end).skip(grp.start) {
                for u in &graph.passes[id.index()].uses {
                    per_resource[u.res.index()].push(Touch {
                        pos,
                        group: g,
                        use_: *u,
                    });
                }
            }
        }
        Timeline { per_resource }
    }

    fn touches(&self, r: ResourceId) -> &[Touch] {
        &self.per_resource[r.index()]
    }
}

fn is_imported_with(
    graph: &FrameGraph,
    r: ResourceId,
    f: impl Fn(&super::ImportParams) -> bool,
) -> bool {
    graph.resources[r.index()].import.as_ref().is_some_and(f)
}

/// Where `r`'s contents before native pass `g` (starting at position `start`) come from: the
/// last pass that wrote it before (with the reason it is not in the same render pass, when it
/// is in the one just before), the image's contents from before the frame, or nothing.
fn prior_contents(
    graph: &FrameGraph,
    order: &[PassId],
    tl: &Timeline,
    breaks: &[MergeBreak],
    r: ResourceId,
    (g, start): (usize, usize),
) -> Prior {
    let writer = tl
        .touches(r)
        .iter()
        .rev()
        .find(|t| t.pos < start && t.use_.writes());
    match writer {
        Some(t) => {
            let pass_name = |pos: usize| graph.passes[order[pos].index()].name.as_str();
            let not_merged = (t.group + 1 == g)
                .then(|| {
                    breaks
                        .iter()
                        .find(|b| {
                            b.next_pass == pass_name(start) && b.prev_pass == pass_name(start - 1)
                        })
                        .map(|b| b.reason.clone())
                })
                .flatten();
            Prior::WrittenBy {
                pass: pass_name(t.pos).to_string(),
                not_merged,
            }
        }
        None if is_imported_with(graph, r, |i| i.contents_needed) => Prior::Imported,
        None => Prior::None,
    }
}

/// Who needs the contents `r` has at position `end` afterwards: the next pass that touches it,
/// if it reads them, or the app after the frame.
fn needed_after(
    graph: &FrameGraph,
    order: &[PassId],
    tl: &Timeline,
    r: ResourceId,
    end: usize,
) -> Later {
    let touches = tl.touches(r);
    match touches.iter().find(|t| t.pos >= end) {
        Some(first) => {
            let reads = touches
                .iter()
                .filter(|t| t.pos == first.pos)
                .any(|t| t.use_.needs_prior());
            if reads {
                Later::ReadBy(graph.passes[order[first.pos].index()].name.clone())
            } else {
                Later::None
            }
        }
        None if is_imported_with(graph, r, |i| i.needed_after_frame && !i.discard_on_last_use) => {
            Later::AfterFrame
        }
        None => Later::None,
    }
}

/// The load and store ops of native pass `g`'s attachments, each with its reason.
fn decide_ops(
    graph: &FrameGraph,
    caps: &DeviceCaps,
    order: &[PassId],
    (g, grp): (usize, &Group),
    tl: &Timeline,
    breaks: &[MergeBreak],
    attachments: &mut [NativeAttachment],
) {
    for att in attachments {
        let touches = tl.touches(att.resource);
        let in_group = || touches.iter().filter(|t| t.group == g);
        let first_pos = in_group().map(|t| t.pos).next().unwrap_or(grp.start);
        let first_uses = in_group().filter(|t| t.pos == first_pos).map(|t| &t.use_);
        let first_pass = &graph.passes[order[first_pos].index()].name;
        let prior = prior_contents(graph, order, tl, breaks, att.resource, (g, grp.start));
        (att.load, att.load_reason) = decide_load(first_uses, prior, first_pass);
        let written = in_group().any(|t| t.use_.writes());
        let later = needed_after(graph, order, tl, att.resource, grp.end);
        (att.store, att.store_reason) = decide_store(written, later, caps);
    }
}

fn build_native_pass(
    graph: &FrameGraph,
    caps: &DeviceCaps,
    order: &[PassId],
    g: usize,
    grp: &Group,
    tl: &Timeline,
    breaks: &[MergeBreak],
) -> NativePass {
    let ids = &order[grp.start..grp.end];
    let mut name = String::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            name.push('+');
        }
        name.push_str(&graph.passes[id.index()].name);
    }
    let mut n = NativePass {
        name,
        kind: grp.kind,
        passes: ids.to_vec(),
        extent: grp.extent,
        samples: grp.samples,
        attachments: Vec::new(),
        subpasses: Vec::new(),
        dependencies: Vec::new(),
        footprint: grp.footprint,
        reads: Vec::new(),
        writes: Vec::new(),
    };
    let res = &graph.resources;
    for id in ids {
        for u in &graph.passes[id.index()].uses {
            if u.is_attachment() && grp.kind == PassKind::Raster {
                if n.attachment(u.res).is_none() {
                    let r = &res[u.res.index()];
                    n.attachments.push(NativeAttachment {
                        resource: u.res,
                        name: r.name.clone(),
                        format: r.desc.format,
                        samples: r.desc.samples,
                        // Decided with the reasons below, once every subpass is known.
                        load: LoadOp::DontCare,
                        store: StoreOp::DontCare,
                        load_reason: LoadReason::NothingBefore {
                            pass: String::new(),
                        },
                        store_reason: StoreReason::NotNeeded,
                        transient: false,
                        resolve: None,
                    });
                }
            } else if u.reads() && !n.reads.contains(&u.res) {
                n.reads.push(u.res);
            }
            if !u.is_attachment() && u.writes() && !n.writes.contains(&u.res) {
                n.writes.push(u.res);
            }
        }
    }
    if grp.kind != PassKind::Raster {
        return n;
    }
    let index_of = |n: &NativePass, r: ResourceId| {
        n.attachments
            .iter()
            .position(|a| a.resource == r)
            .unwrap_or(usize::MAX)
    };
    for id in ids {
        let p = &graph.passes[id.index()];
        let mut sp = Subpass {
            pass: *id,
            name: p.name.clone(),
            color: Vec::new(),
            input: Vec::new(),
            depth: None,
            resolve: Vec::new(),
            depth_resolve: None,
            preserve: Vec::new(),
            sampled: Vec::new(),
        };
        for u in &p.uses {
            let a = index_of(&n, u.res);
            match u.role {
                Role::Color => {
                    sp.color.push(a);
                    sp.resolve.push(None);
                }
                Role::Depth => {
                    sp.depth = Some(DepthRef {
                        attachment: a,
                        read_only: !u.writes() || u.stencil_only,
                        stencil_write: u.writes() && u.stencil_only,
                    })
                }
                Role::Input => sp.input.push(a),
                Role::Sampled => sp.sampled.push(u.res),
                _ => {}
            }
        }
        for u in p.uses.iter().filter(|u| u.role == Role::ResolveDst) {
            let (Some(src), dst) = (u.resolve_src, index_of(&n, u.res)) else {
                continue;
            };
            let src_a = index_of(&n, src);
            if let Some(slot) = sp.color.iter().position(|&c| c == src_a) {
                sp.resolve[slot] = Some(dst);
            } else if sp.depth.is_some_and(|d| d.attachment == src_a) {
                sp.depth_resolve = Some(dst);
            }
            if let Some(att) = n.attachments.get_mut(src_a) {
                att.resolve = Some(dst);
            }
        }
        if sp.resolve.iter().all(Option::is_none) {
            sp.resolve.clear();
        }
        n.subpasses.push(sp);
    }
    // Preserve: attachments used before and after a subpass that skips them.
    let subpass_uses = |k: usize, a: usize| {
        let r = n.attachments[a].resource;
        graph.passes[ids[k].index()]
            .uses
            .iter()
            .any(|u| u.res == r && u.is_attachment())
    };
    let mut preserves = vec![Vec::new(); ids.len()];
    for a in 0..n.attachments.len() {
        for (k, pres) in preserves.iter_mut().enumerate() {
            if !subpass_uses(k, a)
                && (0..k).any(|j| subpass_uses(j, a))
                && (k + 1..ids.len()).any(|j| subpass_uses(j, a))
            {
                pres.push(a);
            }
        }
    }
    for (sp, pres) in n.subpasses.iter_mut().zip(preserves) {
        sp.preserve = pres;
    }
    // Load and store ops, each with its reason.
    decide_ops(graph, caps, order, (g, grp), tl, breaks, &mut n.attachments);
    n
}

fn plan_attachments(
    graph: &FrameGraph,
    caps: &DeviceCaps,
    native: &[NativePass],
    tl: &Timeline,
) -> Vec<AttachmentPlan> {
    graph
        .resources
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let id = ResourceId(i as u32);
            let touches = tl.touches(id);
            let mut native_passes: Vec<usize> = Vec::new();
            for t in touches {
                if native_passes.last() != Some(&t.group) {
                    native_passes.push(t.group);
                }
            }
            let transient = r.import.is_none()
                && native_passes.len() == 1
                && touches.iter().all(|t| t.use_.is_attachment())
                && native[native_passes[0]]
                    .attachment(id)
                    .is_some_and(|a| !a.load.reads_memory() && a.store == StoreOp::DontCare);
            AttachmentPlan {
                id,
                name: r.name.clone(),
                format: r.desc.format,
                extent: r.extent.unwrap_or_default(),
                samples: r.desc.samples,
                imported: r.import.is_some(),
                keeps_contents: r.import.as_ref().is_some_and(|i| i.contents_needed),
                native_passes,
                transient,
                memoryless: transient && caps.lazily_allocated_memory,
            }
        })
        .collect()
}

/// Stages, write access and read stages of the uses of `r` at position
/// `pos`.
struct UseSet {
    stages: PipelineStages,
    access: AccessMask,
    write_stages: PipelineStages,
    write_access: AccessMask,
    read_stages: PipelineStages,
    writes: bool,
    /// Writes what an input attachment of the same subpass may read (a stencil-only write
    /// does not: inputs read the depth aspect).
    writes_input_aspect: bool,
    has_input: bool,
}

fn use_set<'a>(uses: impl Iterator<Item = &'a Use>) -> UseSet {
    let mut s = UseSet {
        stages: PipelineStages::NONE,
        access: AccessMask::NONE,
        write_stages: PipelineStages::NONE,
        write_access: AccessMask::NONE,
        read_stages: PipelineStages::NONE,
        writes: false,
        writes_input_aspect: false,
        has_input: false,
    };
    for u in uses {
        let (st, ac) = use_stage_access(u);
        s.stages |= st;
        s.access |= ac;
        if u.writes() {
            s.writes = true;
            s.writes_input_aspect |= !u.stencil_only;
            s.write_stages |= st;
            s.write_access |= write_bits(ac);
        }
        if u.reads() || !u.writes() {
            s.read_stages |= st;
        }
        s.has_input |= u.role == Role::Input;
    }
    s
}

fn dependencies(
    graph: &FrameGraph,
    grp: &Group,
    g: usize,
    n: &NativePass,
    tl: &Timeline,
) -> Vec<SubpassDependency> {
    let mut deps = DepSet::default();
    for att in &n.attachments {
        attachment_dependencies(&mut deps, graph, grp, g, att, tl);
    }
    sampled_texture_dependencies(&mut deps, graph, grp, n, tl);
    deps.finish()
}

/// The dependencies one attachment of native pass `g` needs: from outside into its first
/// subpass, between the subpasses that use it, a by-region self-dependency where a subpass
/// reads and writes it, before its store, and from its last subpass out.
fn attachment_dependencies(
    deps: &mut DepSet,
    graph: &FrameGraph,
    grp: &Group,
    g: usize,
    att: &NativeAttachment,
    tl: &Timeline,
) {
    let sub = |pos: usize| SubpassIndex::Index((pos - grp.start) as u32);
    let r = att.resource;
    let depth = att.format.is_depth();
    let touches = tl.touches(r);
    let in_group: Vec<usize> = {
        let mut v: Vec<usize> = touches
            .iter()
            .filter(|t| t.group == g)
            .map(|t| t.pos)
            .collect();
        v.dedup();
        v
    };
    let at = |pos: usize| use_set(touches.iter().filter(|t| t.pos == pos).map(|t| &t.use_));
    let Some(&first) = in_group.first() else {
        return;
    };
    // External -> first subpass using the attachment.
    {
        let s = at(first);
        let (ls, la) = load_stage_access(att.load, depth);
        let (src_s, src_a) = external_source(graph, tl, r, grp.start, depth, att.load);
        deps.add(
            SubpassIndex::External,
            sub(first),
            src_s,
            src_a,
            s.stages | ls,
            s.access | la,
            false,
        );
    }
    // Between subpasses.
    let mut last_write: Option<(usize, PipelineStages, AccessMask)> = None;
    let mut reads: Vec<(usize, PipelineStages)> = Vec::new();
    for &pos in &in_group {
        let s = at(pos);
        if pos != first {
            if let Some((w, ws, wa)) = last_write {
                deps.add(sub(w), sub(pos), ws, wa, s.stages, s.access, true);
            }
            if s.writes {
                for &(rp, rs) in &reads {
                    deps.add(
                        sub(rp),
                        sub(pos),
                        rs,
                        AccessMask::NONE,
                        s.stages,
                        s.access,
                        true,
                    );
                }
            }
        }
        if s.writes_input_aspect && s.has_input {
            // Reading and writing the same attachment in one subpass
            // (programmable blending) needs a by-region self-dependency.
            // Writing only the stencil of a depth read as input is no
            // feedback loop (disjoint aspects) and needs none.
            deps.add(
                sub(pos),
                sub(pos),
                s.write_stages,
                s.write_access,
                PipelineStages::FRAGMENT_SHADER,
                AccessMask::INPUT_ATTACHMENT_READ,
                true,
            );
        }
        if s.writes {
            last_write = Some((pos, s.write_stages, s.write_access));
            reads.clear();
        } else {
            reads.push((pos, s.read_stages));
        }
    }
    let last = *in_group.last().unwrap_or(&first);
    // The store op writes the attachment at the end of its last subpass (a don't-care store
    // too), ordered after that subpass's own accesses only: readers in earlier subpasses
    // since the last write that no later subpass depends on (a pass that only reads the
    // attachment, such as a depth export) are ordered before it here.
    if att.store != StoreOp::None {
        let (ss, sa) = store_stage_access(depth);
        for &(rp, rs) in reads.iter().filter(|(rp, _)| *rp != last) {
            deps.add(sub(rp), sub(last), rs, AccessMask::NONE, ss, sa, true);
        }
    }
    // Last subpass using the attachment -> external.
    let next_pos = touches.iter().find(|t| t.pos >= grp.end).map(|t| t.pos);
    let dst = match next_pos {
        Some(np) => {
            let s = at(np);
            Some((s.stages, s.access))
        }
        None if att.store == StoreOp::Store => {
            Some((PipelineStages::BOTTOM_OF_PIPE, AccessMask::NONE))
        }
        None => None,
    };
    if let Some((ds, da)) = dst {
        let s = at(last);
        let (ss, sa) = store_stage_access(depth);
        let store_access = if att.store == StoreOp::None {
            AccessMask::NONE
        } else {
            sa
        };
        deps.add(
            sub(last),
            SubpassIndex::External,
            s.stages | ss,
            s.write_access | store_access,
            ds,
            da,
            false,
        );
    }
}

/// Textures sampled in a subpass, written by an earlier native pass: from that write (and its
/// store) into the subpass.
fn sampled_texture_dependencies(
    deps: &mut DepSet,
    graph: &FrameGraph,
    grp: &Group,
    n: &NativePass,
    tl: &Timeline,
) {
    let sub = |pos: usize| SubpassIndex::Index((pos - grp.start) as u32);
    for sp_pos in grp.start..grp.end {
        let k = sp_pos - grp.start;
        for r in &n.subpasses[k].sampled {
            let touches = tl.touches(*r);
            if let Some(w) = touches
                .iter()
                .rfind(|t| t.pos < grp.start && t.use_.writes())
            {
                let (mut ws, wa) = use_stage_access(&w.use_);
                let mut wa = write_bits(wa);
                if w.use_.is_attachment() {
                    let (ss, sa) =
                        store_stage_access(graph.resources[r.index()].desc.format.is_depth());
                    ws |= ss;
                    wa |= sa;
                }
                deps.add(
                    SubpassIndex::External,
                    sub(sp_pos),
                    ws,
                    wa,
                    PipelineStages::FRAGMENT_SHADER,
                    AccessMask::SHADER_READ,
                    false,
                );
            }
        }
    }
}

/// Source scope of the external dependency into a render pass for
/// attachment `r`: the last write before the pass (with its store op) and
/// the reads since (layout transitions are writes); at the first use in the
/// frame, the same attachment stage of the previous frame.
fn external_source(
    graph: &FrameGraph,
    tl: &Timeline,
    r: ResourceId,
    start: usize,
    depth: bool,
    load: LoadOp,
) -> (PipelineStages, AccessMask) {
    let before: Vec<&Touch> = tl.touches(r).iter().filter(|t| t.pos < start).collect();
    if before.is_empty() {
        let tests = PipelineStages::EARLY_FRAGMENT_TESTS | PipelineStages::LATE_FRAGMENT_TESTS;
        let (stages, access) = if depth {
            (tests, AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE)
        } else if load.reads_memory() || is_imported_with(graph, r, |i| i.contents_needed) {
            (
                PipelineStages::COLOR_ATTACHMENT_OUTPUT,
                AccessMask::COLOR_ATTACHMENT_WRITE,
            )
        } else {
            // The swapchain pattern: wait where the acquire semaphore waits.
            (PipelineStages::COLOR_ATTACHMENT_OUTPUT, AccessMask::NONE)
        };
        // An attachment the graph owns is reused by the next frame: its first write here must
        // also wait for the previous frame's reads outside the framebuffer (a later pass
        // sampling it) before the layout transition.
        if graph.resources[r.index()].import.is_none() {
            let sampled_stages = tl
                .touches(r)
                .iter()
                .filter(|t| t.use_.reads() && !t.use_.is_attachment())
                .fold(PipelineStages::NONE, |acc, t| {
                    acc | use_stage_access(&t.use_).0
                });
            return (stages | sampled_stages, access);
        }
        return (stages, access);
    }
    let mut stages = PipelineStages::NONE;
    let mut access = AccessMask::NONE;
    let last_write = before.iter().rposition(|t| t.use_.writes());
    if let Some(w) = last_write {
        let wt = before[w];
        let (s, a) = use_stage_access(&wt.use_);
        stages |= s;
        access |= write_bits(a);
        if wt.use_.is_attachment() && wt.use_.role != Role::ResolveDst {
            let (ss, sa) = store_stage_access(depth);
            stages |= ss;
            access |= sa;
        }
    }
    let reads_from = last_write.map_or(0, |w| w + 1);
    for t in &before[reads_from..] {
        stages |= use_stage_access(&t.use_).0;
    }
    (stages, access)
}

fn price(
    graph: &FrameGraph,
    caps: &DeviceCaps,
    order: &[PassId],
    groups: &[Group],
    native: &[NativePass],
) -> FrameCost {
    let res = &graph.resources;
    let bytes = |r: ResourceId| {
        let d = &res[r.index()];
        image_bytes(
            d.extent.unwrap_or_default(),
            d.desc.format,
            d.desc.samples,
            caps.views,
        )
    };
    let mut per_attachment = vec![Traffic::default(); res.len()];
    let mut per_native_pass = vec![Traffic::default(); native.len()];
    for (g, n) in native.iter().enumerate() {
        let mut add = |r: ResourceId, t: Traffic| {
            per_attachment[r.index()] += t;
            per_native_pass[g] += t;
        };
        for a in &n.attachments {
            let b = bytes(a.resource);
            add(
                a.resource,
                Traffic {
                    loaded: if a.load.reads_memory() { b } else { 0 },
                    stored: if a.store.writes_memory() { b } else { 0 },
                    ..Traffic::default()
                },
            );
        }
        // Reads and writes outside the framebuffer: one full image each,
        // once per pass and attachment.
        for id in &order[groups[g].start..groups[g].end] {
            let uses = &graph.passes[id.index()].uses;
            for (i, u) in uses.iter().enumerate() {
                if u.is_attachment() || uses[..i].iter().any(|v| v.res == u.res) {
                    continue;
                }
                let all = || uses.iter().filter(|v| v.res == u.res);
                let b = bytes(u.res);
                add(
                    u.res,
                    Traffic {
                        sampled: if all().any(|v| v.reads()) { b } else { 0 },
                        written: if all().any(|v| v.writes()) { b } else { 0 },
                        ..Traffic::default()
                    },
                );
            }
        }
    }
    let total = per_native_pass
        .iter()
        .fold(Traffic::default(), |acc, t| acc + *t);
    FrameCost {
        per_attachment,
        per_native_pass,
        total,
    }
}
