//! Property tests over random valid graphs.
//!
//! The generator reads a tape of random numbers (so proptest can shrink it)
//! and only declares uses that are valid at that point: reads of attachments
//! that have contents, clears on first uses, one framebuffer shape per pass,
//! resolves into matching single-sampled targets.

use proptest::prelude::*;

use super::graph::Role;
use super::*;

struct Tape<'a> {
    data: &'a [u32],
    at: usize,
}

impl Tape<'_> {
    fn next(&mut self, n: u32) -> u32 {
        let v = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        if n == 0 { 0 } else { v % n }
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.next(100) < percent
    }
}

const COLOR_FORMATS: [Format; 5] = [
    Format::Rgba8Unorm,
    Format::Rg11b10Float,
    Format::Rgba16Float,
    Format::R8Unorm,
    Format::Rgba8Srgb,
];
const DEPTH_FORMATS: [Format; 2] = [Format::Depth24Stencil8, Format::Depth32Float];

fn access(t: &mut Tape<'_>, has_contents: bool) -> Access {
    match (t.next(4), has_contents) {
        (0, true) => Access::ReadWrite,
        (1, _) => Access::Write,
        _ => Access::WriteAll,
    }
}

/// Builds a random valid graph from `tape`.
fn build(tape: &[u32]) -> FrameGraph {
    let mut t = Tape { data: tape, at: 0 };
    let view = Extent::new(64 + 32 * t.next(4), 64 + 16 * t.next(4));
    let mut graph = FrameGraph::new(view);
    let mut state = Generated::attachments(&mut t, &mut graph);
    let n_passes = 1 + t.next(12) as usize;
    for p in 0..n_passes {
        let name = format!("p{p}");
        match t.next(10) {
            0 => state.compute_pass(&mut t, &mut graph, &name),
            1 => state.copy_pass(&mut t, &mut graph, &name),
            _ => state.raster_pass(&mut t, &mut graph, &name),
        }
    }
    graph
}

/// The generator's view of the graph so far: the attachments, which have contents, and which
/// a pass used.
struct Generated {
    n_res: usize,
    handles: Vec<AttachmentHandle>,
    descs: Vec<AttachmentDesc>,
    has_contents: Vec<bool>,
    used: Vec<bool>,
}

impl Generated {
    /// 3 to 10 attachments of random formats, sizes and samples, some imported.
    fn attachments(t: &mut Tape<'_>, g: &mut FrameGraph) -> Self {
        let n_res = 3 + t.next(8) as usize;
        let mut handles: Vec<AttachmentHandle> = Vec::new();
        for i in 0..n_res {
            let depth = t.chance(25);
            let format = if depth {
                DEPTH_FORMATS[t.next(2) as usize]
            } else {
                COLOR_FORMATS[t.next(5) as usize]
            };
            let size = if t.chance(20) {
                Size::ViewScaled { num: 1, den: 2 }
            } else {
                Size::View
            };
            let samples = if t.chance(25) { 4 } else { 1 };
            let desc = AttachmentDesc {
                format,
                size,
                samples,
            };
            let name = format!("r{i}");
            let h = match t.next(5) {
                0 => g.import_attachment(&name, desc, ImportParams::output()),
                1 => g.import_attachment(&name, desc, ImportParams::history()),
                _ => g.create_attachment(&name, desc),
            };
            handles.push(h);
        }
        let descs: Vec<AttachmentDesc> = handles.iter().map(|h| h.desc()).collect();
        let has_contents: Vec<bool> = (0..n_res)
            .map(|i| g.resources[i].import.is_some_and(|p| p.contents_needed))
            .collect();
        Self {
            n_res,
            handles,
            descs,
            has_contents,
            used: vec![false; n_res],
        }
    }

    /// Compute: read something with contents, write something.
    fn compute_pass(&mut self, t: &mut Tape<'_>, graph: &mut FrameGraph, name: &str) {
        let mut b = graph.add_compute_pass(name);
        let mut written = Vec::new();
        if let Some(r) = pick(t, self.n_res, |i| self.has_contents[i]) {
            b = b.read(&self.handles[r]);
            written.push(r);
        }
        if let Some(w) = pick(t, self.n_res, |_| true) {
            let a = if self.has_contents[w] && t.chance(30) {
                Access::ReadWrite
            } else {
                Access::WriteAll
            };
            b = b.write(&mut self.handles[w], a);
            written.push(w);
        }
        if t.chance(10) {
            b = b.side_effects();
        }
        b.finish().expect("generated compute pass is valid");
        // (`touched`: reads keep their contents, writes give contents.)
        for w in written {
            self.has_contents[w] = true;
            self.used[w] = true;
        }
    }

    /// Copy: something with contents into another attachment.
    fn copy_pass(&mut self, t: &mut Tape<'_>, graph: &mut FrameGraph, name: &str) {
        let src = pick(t, self.n_res, |i| self.has_contents[i]);
        let dst = src.and_then(|s| pick(t, self.n_res, |i| i != s));
        if let (Some(s), Some(d)) = (src, dst) {
            let (a, b) = two(&mut self.handles, s, d);
            graph
                .add_copy_pass(name)
                .copy(a, b)
                .finish()
                .expect("generated copy pass is valid");
            self.has_contents[d] = true;
            self.used[s] = true;
            self.used[d] = true;
        }
    }

    /// Raster: one framebuffer shape (size + samples) for the pass, with colours, depth,
    /// inputs, sampled textures and a resolve as the tape says.
    fn raster_pass(&mut self, t: &mut Tape<'_>, graph: &mut FrameGraph, name: &str) {
        let anchor = t.next(self.n_res as u32) as usize;
        let shape = (self.descs[anchor].size, self.descs[anchor].samples);
        let fits = |i: usize| (self.descs[i].size, self.descs[i].samples) == shape;
        let mut colors = Vec::new();
        let mut depth = None;
        let mut inputs = Vec::new();
        let mut sampled = Vec::new();
        for i in 0..self.n_res {
            let roll = t.next(10);
            if !fits(i) {
                if roll < 2 && self.has_contents[i] {
                    sampled.push(i);
                }
                continue;
            }
            let is_depth = self.descs[i].format.is_depth();
            match roll {
                0..=2 if !is_depth && colors.len() < 4 => colors.push(i),
                0..=2 if is_depth && depth.is_none() => depth = Some(i),
                3 if self.has_contents[i] => inputs.push(i),
                4 if self.has_contents[i] => sampled.push(i),
                _ => {}
            }
        }
        if colors.is_empty() && depth.is_none() {
            return;
        }
        // A colour attachment may also be read as an input (programmable
        // blending) but not sampled.
        sampled.retain(|s| !colors.contains(s) && depth != Some(*s) && !inputs.contains(s));
        // Resolve one MSAA colour attachment into a matching 1x target.
        let mut resolve = None;
        if shape.1 > 1
            && let Some(&src) = colors.first()
        {
            let dst = pick(t, self.n_res, |i| {
                self.descs[i].samples == 1
                    && self.descs[i].format == self.descs[src].format
                    && self.descs[i].size == self.descs[src].size
                    && !sampled.contains(&i)
                    && !inputs.contains(&i)
            });
            resolve = dst.map(|d| (src, d));
        }
        let mut plan: Vec<(usize, Role, Access, Option<ClearValue>)> = Vec::new();
        for &c in &colors {
            let a = access(t, self.has_contents[c]);
            let clear = (!self.used[c] && t.chance(40)).then_some(ClearValue::BLACK);
            plan.push((c, Role::Color, a, clear));
        }
        if let Some(d) = depth {
            let a = if self.has_contents[d] && t.chance(30) {
                Access::Read
            } else {
                access(t, self.has_contents[d])
            };
            let clear = (!self.used[d] && a != Access::Read && t.chance(60))
                .then_some(ClearValue::DEPTH_ONE);
            plan.push((d, Role::Depth, a, clear));
        }
        let side = t.chance(10);
        let mut b = graph.add_raster_pass(name);
        for &(i, role, a, clear) in &plan {
            let h = &mut self.handles[i];
            b = match (role, a) {
                (Role::Depth, Access::Read) => b.depth_read_only(h),
                (Role::Depth, _) => b.depth(h, a, clear),
                _ => b.color(h, a, clear),
            };
        }
        for &i in &inputs {
            b = b.input(&self.handles[i]);
        }
        for &i in &sampled {
            b = b.sample(&self.handles[i]);
        }
        if let Some((s, d)) = resolve {
            let (src, dst) = two(&mut self.handles, s, d);
            b = b.resolve(src, dst);
        }
        if side {
            b = b.side_effects();
        }
        b.finish().expect("generated raster pass is valid");
        for &(i, _, a, _) in &plan {
            self.used[i] = true;
            if a.writes() {
                self.has_contents[i] = true;
            }
        }
        for &i in inputs.iter().chain(&sampled) {
            self.used[i] = true;
        }
        if let Some((_, d)) = resolve {
            self.used[d] = true;
            self.has_contents[d] = true;
        }
    }
}

fn pick(t: &mut Tape<'_>, n: usize, ok: impl Fn(usize) -> bool) -> Option<usize> {
    let candidates: Vec<usize> = (0..n).filter(|&i| ok(i)).collect();
    if candidates.is_empty() {
        None
    } else {
        Some(candidates[t.next(candidates.len() as u32) as usize])
    }
}

/// `&handles[a]` and `&mut handles[b]` at once (a != b).
fn two(
    handles: &mut [AttachmentHandle],
    a: usize,
    b: usize,
) -> (&AttachmentHandle, &mut AttachmentHandle) {
    assert_ne!(a, b);
    if a < b {
        let (lo, hi) = handles.split_at_mut(b);
        (&lo[a], &mut hi[0])
    } else {
        let (lo, hi) = handles.split_at_mut(a);
        (&hi[0], &mut lo[b])
    }
}

fn caps_from(pick: u32) -> DeviceCaps {
    let base = match pick % 4 {
        0 => DeviceCaps::mali_bifrost(),
        1 => DeviceCaps::mali_valhall(),
        2 => DeviceCaps::adreno(1 << 20),
        _ => DeviceCaps::desktop(),
    };
    DeviceCaps {
        max_color_attachments: 4 + (pick / 4) % 5,
        merge_subpasses: !(pick / 32).is_multiple_of(5),
        views: 1 + (pick / 256) % 2,
        ..base
    }
}

fn bytes(g: &FrameGraph, caps: &DeviceCaps, r: ResourceId) -> u64 {
    let d = &g.resources[r.index()];
    image_bytes(
        d.extent.unwrap_or_default(),
        d.desc.format,
        d.desc.samples,
        caps.views,
    )
}

/// Every check below is written against the declaration and the plan's
/// pass order, not against the compiler's internal tables.
fn check(g: &FrameGraph, caps: &DeviceCaps, f: &CompiledFrame) -> Result<(), TestCaseError> {
    // Native passes partition the execution order into contiguous runs.
    let flat: Vec<PassId> = f
        .native_passes
        .iter()
        .flat_map(|n| n.passes.clone())
        .collect();
    prop_assert_eq!(&flat, &f.order);
    for (ni, n) in f.native_passes.iter().enumerate() {
        check_attachment_ops(g, f, ni, n)?;
        // Every merged group satisfies every merge condition.
        if n.passes.len() > 1 {
            check_merged_group(g, caps, n)?;
        }
        check_dependencies(n)?;
    }
    check_pricing(g, caps, f)
}

/// Nothing stored that nobody reads after the pass, nothing loaded that nobody wrote, and
/// transient attachments confined to their native pass.
fn check_attachment_ops(
    g: &FrameGraph,
    f: &CompiledFrame,
    ni: usize,
    n: &NativePass,
) -> Result<(), TestCaseError> {
    let pos_of = |p: PassId| f.order.iter().position(|&q| q == p).unwrap_or(usize::MAX);
    let uses_of =
        |p: PassId, r: ResourceId| g.passes[p.index()].uses.iter().filter(move |u| u.res == r);
    let first = pos_of(n.passes[0]);
    let last = pos_of(*n.passes.last().unwrap_or(&n.passes[0]));
    for a in &n.attachments {
        let r = a.resource;
        let imported = g.resources[r.index()].import;
        // Nothing stored that nobody reads after the pass.
        if a.store == StoreOp::Store {
            let later_reader = f.order[last + 1..]
                .iter()
                .any(|&p| uses_of(p, r).any(|u| u.needs_prior()));
            let needed = imported.is_some_and(|i| i.needed_after_frame);
            prop_assert!(
                later_reader || needed,
                "`{}` stored by #{} but nobody reads it later",
                a.name,
                ni
            );
        }
        // Nothing loaded that nobody wrote.
        if a.load == LoadOp::Load {
            let earlier_writer = f.order[..first]
                .iter()
                .any(|&p| uses_of(p, r).any(|u| u.writes()));
            let had = imported.is_some_and(|i| i.contents_needed);
            prop_assert!(
                earlier_writer || had,
                "`{}` loaded by #{} but nobody wrote it",
                a.name,
                ni
            );
        }
        // Transient implies no load, no store, one native pass.
        if a.transient {
            prop_assert!(a.load != LoadOp::Load && a.store == StoreOp::DontCare);
            prop_assert!(imported.is_none());
            let confined = f
                .order
                .iter()
                .enumerate()
                .all(|(i, &p)| (first..=last).contains(&i) || uses_of(p, r).next().is_none());
            prop_assert!(confined, "transient `{}` used outside #{}", a.name, ni);
        }
    }
    Ok(())
}

/// A merged group: raster passes that share attachments, of one extent and sample count, with
/// a resolve in the last subpass using its source, within the device's attachment limits and
/// tile budget, and no texture read of anything bound in the pass.
fn check_merged_group(
    g: &FrameGraph,
    caps: &DeviceCaps,
    n: &NativePass,
) -> Result<(), TestCaseError> {
    prop_assert!(caps.merge_subpasses);
    prop_assert!(
        n.passes
            .iter()
            .all(|p| g.passes[p.index()].kind == PassKind::Raster)
    );
    let mut depth = None;
    let mut attached: Vec<ResourceId> = Vec::new();
    let mut non_depth: Vec<ResourceId> = Vec::new();
    let mut inputs: Vec<ResourceId> = Vec::new();
    for (k, p) in n.passes.iter().enumerate() {
        let decl = &g.passes[p.index()];
        let mine: Vec<ResourceId> = decl
            .uses
            .iter()
            .filter(|u| u.is_attachment())
            .map(|u| u.res)
            .collect();
        if k > 0 {
            prop_assert!(
                mine.iter().any(|r| attached.contains(r)),
                "subpass {} of {} shares nothing",
                k,
                n.name
            );
        }
        for u in &decl.uses {
            let r = &g.resources[u.res.index()];
            if u.is_attachment() {
                prop_assert_eq!(r.extent, Some(n.extent));
                if u.role != Role::ResolveDst {
                    prop_assert_eq!(r.desc.samples, n.samples);
                }
            }
            match u.role {
                Role::Depth => {
                    prop_assert!(depth.is_none() || depth == Some(u.res));
                    depth = Some(u.res);
                }
                Role::Color | Role::ResolveDst if !non_depth.contains(&u.res) => {
                    non_depth.push(u.res);
                }
                Role::Input => {
                    if !r.desc.format.is_depth() && !non_depth.contains(&u.res) {
                        non_depth.push(u.res);
                    }
                    if !inputs.contains(&u.res) {
                        inputs.push(u.res);
                    }
                }
                Role::Sampled => {
                    // No texture read of anything bound in the pass.
                    prop_assert!(n.attachment(u.res).is_none());
                }
                _ => {}
            }
            // A resolve sits in the last subpass using its source.
            if u.role == Role::ResolveDst
                && let Some(src) = u.resolve_src
            {
                let last_user = n.passes[k + 1..]
                    .iter()
                    .all(|q| g.passes[q.index()].uses.iter().all(|v| v.res != src));
                prop_assert!(last_user, "resolve of {:?} in an intermediate subpass", src);
            }
        }
        attached.extend(mine);
    }
    prop_assert!(non_depth.len() <= caps.max_color_attachments as usize);
    prop_assert!(inputs.len() <= caps.max_input_attachments as usize);
    prop_assert!(n.footprint.verdict.fits());
    Ok(())
}

/// Input attachments are never synchronised as sampled reads, and dependencies inside a render
/// pass are by region.
fn check_dependencies(n: &NativePass) -> Result<(), TestCaseError> {
    for d in &n.dependencies {
        if let (SubpassIndex::Index(_), SubpassIndex::Index(_)) = (d.src, d.dst) {
            prop_assert!(d.by_region);
            prop_assert!(!d.dst_access.contains(AccessMask::SHADER_READ));
        }
        if let SubpassIndex::Index(k) = d.dst
            && d.dst_access.contains(AccessMask::SHADER_READ)
        {
            prop_assert!(!n.subpasses[k as usize].sampled.is_empty());
        }
    }
    Ok(())
}

/// Pricing equals the sum over attachments (and over native passes), and each attachment's
/// loads and stores are its ops times its size.
fn check_pricing(
    g: &FrameGraph,
    caps: &DeviceCaps,
    f: &CompiledFrame,
) -> Result<(), TestCaseError> {
    let sum_att = f
        .cost
        .per_attachment
        .iter()
        .fold(Traffic::default(), |a, t| a + *t);
    let sum_pass = f
        .cost
        .per_native_pass
        .iter()
        .fold(Traffic::default(), |a, t| a + *t);
    prop_assert_eq!(sum_att, f.cost.total);
    prop_assert_eq!(sum_pass, f.cost.total);
    for (i, t) in f.cost.per_attachment.iter().enumerate() {
        let r = ResourceId(i as u32);
        let (mut loads, mut stores) = (0, 0);
        for n in &f.native_passes {
            if let Some(a) = n.attachment(r) {
                loads += u64::from(a.load == LoadOp::Load);
                stores += u64::from(a.store == StoreOp::Store);
            }
        }
        prop_assert_eq!(t.loaded, loads * bytes(g, caps, r));
        prop_assert_eq!(t.stored, stores * bytes(g, caps, r));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_valid_graphs_compile_to_sound_plans(
        tape in prop::collection::vec(any::<u32>(), 0..400),
        caps_pick in any::<u32>(),
    ) {
        let g = build(&tape);
        let caps = caps_from(caps_pick);
        let f = compile(&g, &caps);
        prop_assert!(f.is_ok(), "{:?}", f.err().map(|e| e.to_string()));
        let f = f.unwrap_or_else(|_| unreachable!());
        check(&g, &caps, &f)?;
        // Deterministic, also for a graph rebuilt from scratch.
        let again = compile(&build(&tape), &caps);
        prop_assert_eq!(Some(&f), again.as_ref().ok());
        // The cache answers the same plan.
        let mut cache = FrameGraphCache::new();
        let _ = cache.compile(&g, &caps);
        let cached = cache.compile(&build(&tape), &caps).ok().cloned();
        prop_assert_eq!(cache.hits(), 1);
        prop_assert_eq!(Some(&f), cached.as_ref());
        // The counterfactual unmerged plan is sound and never cheaper.
        let apart_caps = caps.with_merging(false);
        let apart = compile(&g, &apart_caps);
        prop_assert!(apart.is_ok());
        let apart = apart.unwrap_or_else(|_| unreachable!());
        check(&g, &apart_caps, &apart)?;
        prop_assert!(apart.native_passes.iter().all(|n| n.passes.len() == 1));
        prop_assert!(apart.cost.bytes() >= f.cost.bytes(),
            "unmerged {} < merged {}\n{}\n{}", apart.cost.bytes(), f.cost.bytes(),
            apart.describe(), f.describe());
    }

    #[test]
    fn merge_rule_footprint_matches_the_absorbed_candidate(
        tape in prop::collection::vec(any::<u32>(), 0..400),
        caps_pick in any::<u32>(),
    ) {
        let g = build(&tape);
        let caps = caps_from(caps_pick);
        let n = g.pass_count();
        for i in 1..n {
            let prev = MergeCandidate::for_pass(&g, PassId(i as u32 - 1));
            let next = MergeCandidate::for_pass(&g, PassId(i as u32));
            let lenient = DeviceCaps {
                max_color_attachments: 64,
                max_input_attachments: 64,
                tile_budget: TileBudget::Unlimited,
                ..DeviceCaps::desktop()
            };
            if let (Some(mut prev), Some(next)) = (prev, next)
                && can_merge(&prev, &next, &lenient).is_ok()
            {
                let predicted = prev.merged_footprint(&next, &caps);
                prev.absorb(&next);
                prop_assert_eq!(predicted, prev.footprint(&caps));
            }
        }
    }
}

proptest! {
    #[test]
    fn bins_fit_gmem_and_cover_the_extent(
        w in 1u32..5000, h in 1u32..5000, bpp in 1u32..256, views in 1u32..3,
        gmem in prop::sample::select(vec![256u64 << 10, 512 << 10, 1 << 20, 3 << 19]),
        aw in prop::sample::select(vec![8u32, 16, 32, 64]),
        ah in prop::sample::select(vec![4u32, 8, 16, 32]),
    ) {
        let e = Extent::new(w, h);
        if let Some(b) = bin_layout(e, bpp, views, gmem, aw, ah) {
            prop_assert!(b.bytes <= gmem);
            prop_assert_eq!(b.bytes, u64::from(b.width * b.height) * u64::from(bpp * views));
            prop_assert!(b.width % aw == 0 && b.height % ah == 0);
            let flat = b.height == h.div_ceil(ah) * ah;
            prop_assert!(flat || b.width.max(b.height) <= 2 * b.width.min(b.height));
            prop_assert!(b.columns * b.width >= w && b.rows * b.height >= h);
            prop_assert_eq!(b.count(), b.columns * b.rows);
        } else if (aw, ah) == (32, 16) && w >= 32 && h >= 16 {
            // With Adreno's alignment, only when a 32x16 bin does not fit.
            prop_assert!(512 * u64::from(bpp * views) > gmem);
        }
    }
}
