//! The validate stage: everything that makes a declaration inexpressible is
//! reported here, before any decision is taken.

use super::caps::{DeviceCaps, TileBudget};
use super::error::GraphError;
use super::graph::{FrameGraph, PassDecl, PassKind, ResourceDecl, Role};

fn invalid(pass: &PassDecl, detail: String) -> GraphError {
    GraphError::InvalidPass {
        pass: pass.name.clone(),
        detail,
    }
}

/// Checks that need only the pass and the attachment table (run by
/// `finish()`, so errors surface where the pass is declared).
pub(crate) fn check_pass(pass: &PassDecl, res: &[ResourceDecl]) -> Result<(), GraphError> {
    let name = |id: super::graph::ResourceId| res[id.index()].name.as_str();
    for (i, u) in pass.uses.iter().enumerate() {
        let r = &res[u.res.index()];
        if let Some(c) = u.clear {
            if !c.matches(r.desc.format) {
                return Err(invalid(
                    pass,
                    format!(
                        "clear value {c:?} does not suit `{}` ({})",
                        r.name, r.desc.format
                    ),
                ));
            }
            if !u.access.writes() {
                return Err(invalid(
                    pass,
                    format!("`{}` is bound read-only, so it cannot be cleared", r.name),
                ));
            }
        }
        if pass.uses[..i]
            .iter()
            .any(|p| p.res == u.res && p.role == u.role)
        {
            return Err(invalid(
                pass,
                format!("`{}` is bound twice in the same role", r.name),
            ));
        }
    }
    match pass.kind {
        PassKind::Raster => check_raster(pass, res, &name),
        PassKind::Compute => Ok(()),
        PassKind::Copy => {
            let src = pass.uses.iter().filter(|u| u.role == Role::CopySrc);
            for s in src {
                if pass
                    .uses
                    .iter()
                    .any(|u| u.role == Role::CopyDst && u.res == s.res)
                {
                    return Err(invalid(
                        pass,
                        format!("copies `{}` onto itself", name(s.res)),
                    ));
                }
            }
            Ok(())
        }
    }
}

fn check_raster<'a>(
    pass: &PassDecl,
    res: &'a [ResourceDecl],
    name: &dyn Fn(super::graph::ResourceId) -> &'a str,
) -> Result<(), GraphError> {
    check_bindings(pass, res)?;
    check_one_render_area(pass, res, name)?;
    check_resolves(pass, res)
}

/// Each attachment is bound in a role its format allows, with one depth attachment at most and
/// no attachment also sampled (a feedback loop).
fn check_bindings(pass: &PassDecl, res: &[ResourceDecl]) -> Result<(), GraphError> {
    let attachments = || pass.uses.iter().filter(|u| u.is_attachment());
    if !pass
        .uses
        .iter()
        .any(|u| matches!(u.role, Role::Color | Role::Depth))
    {
        return Err(invalid(
            pass,
            "a raster pass needs at least one colour or depth attachment (its render area)"
                .to_owned(),
        ));
    }
    if pass.uses.iter().filter(|u| u.role == Role::Depth).count() > 1 {
        return Err(invalid(
            pass,
            "binds more than one depth attachment".to_owned(),
        ));
    }
    for u in &pass.uses {
        let r = &res[u.res.index()];
        match u.role {
            Role::Color if r.desc.format.is_depth() => {
                return Err(invalid(
                    pass,
                    format!(
                        "`{}` has the depth format {} but is bound as colour",
                        r.name, r.desc.format
                    ),
                ));
            }
            Role::Depth if u.stencil_only && !r.desc.format.has_stencil() => {
                return Err(invalid(
                    pass,
                    format!(
                        "`{}` has no stencil aspect ({}), so it cannot be bound with stencil \
                         writes",
                        r.name, r.desc.format
                    ),
                ));
            }
            Role::Depth if !r.desc.format.is_depth() => {
                return Err(invalid(
                    pass,
                    format!(
                        "`{}` has the colour format {} but is bound as depth",
                        r.name, r.desc.format
                    ),
                ));
            }
            // Sampling a depth attachment the pass only tests against (read-only depth, no
            // stencil writes) is no feedback loop: both are reads, in
            // DEPTH_STENCIL_READ_ONLY_OPTIMAL. Anything else is.
            Role::Sampled
                if attachments()
                    .any(|a| a.res == u.res && (a.role != Role::Depth || a.writes())) =>
            {
                return Err(invalid(
                    pass,
                    format!(
                        "`{}` is both sampled as a texture and bound as an attachment \
                         (a feedback loop; read it as an input attachment instead)",
                        r.name
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// One render pass has one render area and one sample count: every attachment has the same
/// extent, and colour, depth and input attachments the same samples.
fn check_one_render_area<'a>(
    pass: &PassDecl,
    res: &'a [ResourceDecl],
    name: &dyn Fn(super::graph::ResourceId) -> &'a str,
) -> Result<(), GraphError> {
    let attachments = || pass.uses.iter().filter(|u| u.is_attachment());
    // One framebuffer: every attachment has the same extent.
    let mut extent = None;
    for u in attachments() {
        let r = &res[u.res.index()];
        let Some(e) = r.extent else { continue };
        match extent {
            None => extent = Some((e, u.res)),
            Some((e0, first)) if e0 != e => {
                return Err(invalid(
                    pass,
                    format!(
                        "attachments have different extents: `{}` is {e0}, `{}` is {e}; \
                         one render pass has one render area",
                        name(first),
                        r.name
                    ),
                ));
            }
            _ => {}
        }
    }
    // One sample count for colour, depth and input attachments.
    let mut samples = None;
    for u in attachments().filter(|u| u.role != Role::ResolveDst) {
        let r = &res[u.res.index()];
        match samples {
            None => samples = Some((r.desc.samples, u.res)),
            Some((s0, first)) if s0 != r.desc.samples => {
                return Err(invalid(
                    pass,
                    format!(
                        "attachments have different sample counts: `{}` has {s0}, `{}` has {}",
                        name(first),
                        r.name,
                        r.desc.samples
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Each resolve reads a multisampled colour or depth attachment of the pass, of the same
/// format, into a single-sampled target used for nothing else, once.
fn check_resolves(pass: &PassDecl, res: &[ResourceDecl]) -> Result<(), GraphError> {
    for u in pass.uses.iter().filter(|u| u.role == Role::ResolveDst) {
        let Some(src) = u.resolve_src else { continue };
        let (s, d) = (&res[src.index()], &res[u.res.index()]);
        let mismatch = |detail: String| GraphError::ResolveMismatch {
            pass: pass.name.clone(),
            src: s.name.clone(),
            dst: d.name.clone(),
            detail,
        };
        if !pass
            .uses
            .iter()
            .any(|a| a.res == src && matches!(a.role, Role::Color | Role::Depth))
        {
            return Err(mismatch(format!(
                "`{}` is not a colour or depth attachment of this pass",
                s.name
            )));
        }
        if s.desc.samples < 2 {
            return Err(mismatch(format!("`{}` is single-sampled", s.name)));
        }
        if d.desc.samples != 1 {
            return Err(mismatch(format!(
                "`{}` has {} samples; a resolve target has 1",
                d.name, d.desc.samples
            )));
        }
        if s.desc.format != d.desc.format {
            return Err(mismatch(format!(
                "formats differ ({} vs {})",
                s.desc.format, d.desc.format
            )));
        }
        if pass.uses.iter().filter(|a| a.res == u.res).count() > 1 {
            return Err(mismatch(format!(
                "`{}` is also used otherwise in this pass",
                d.name
            )));
        }
        if pass
            .uses
            .iter()
            .filter(|a| a.role == Role::ResolveDst && a.resolve_src == Some(src))
            .count()
            > 1
        {
            return Err(mismatch(format!("`{}` is resolved twice", s.name)));
        }
    }
    Ok(())
}

/// The validate stage: recorded declaration errors, caps sanity, per-pass
/// limits and the read-before-write / clear-on-first-use rules, in declared
/// order.
pub(crate) fn validate(graph: &FrameGraph, caps: &DeviceCaps) -> Result<(), GraphError> {
    if let Some(e) = graph.errors.first() {
        return Err(e.clone());
    }
    if caps.max_color_attachments == 0 || caps.views == 0 {
        return Err(GraphError::InvalidGraph {
            detail: "caps need max_color_attachments >= 1 and views >= 1".to_owned(),
        });
    }
    if let TileBudget::Gmem {
        align_width,
        align_height,
        ..
    } = caps.tile_budget
        && (align_width == 0 || align_height == 0)
    {
        return Err(GraphError::InvalidGraph {
            detail: "a GMEM tile budget needs non-zero bin alignments".to_owned(),
        });
    }
    let res = &graph.resources;
    let mut has_contents: Vec<bool> = res
        .iter()
        .map(|r| r.import.is_some_and(|i| i.contents_needed))
        .collect();
    let mut used = vec![false; res.len()];
    for pass in &graph.passes {
        if pass.kind == PassKind::Raster {
            let colors = pass.uses.iter().filter(|u| u.role == Role::Color).count();
            if colors > caps.max_color_attachments as usize {
                return Err(GraphError::Unsupported {
                    pass: pass.name.clone(),
                    detail: format!(
                        "{colors} colour attachments, the device allows {}",
                        caps.max_color_attachments
                    ),
                });
            }
            let inputs = pass.uses.iter().filter(|u| u.role == Role::Input).count();
            if inputs > caps.max_input_attachments as usize {
                return Err(GraphError::Unsupported {
                    pass: pass.name.clone(),
                    detail: format!(
                        "{inputs} input attachments, the device allows {}",
                        caps.max_input_attachments
                    ),
                });
            }
            if !caps.depth_stencil_resolve
                && pass.uses.iter().any(|u| {
                    u.role == Role::ResolveDst
                        && u.resolve_src
                            .is_some_and(|s| res[s.index()].desc.format.is_depth())
                })
            {
                return Err(GraphError::Unsupported {
                    pass: pass.name.clone(),
                    detail: "an MSAA depth resolve needs VK_KHR_depth_stencil_resolve".to_owned(),
                });
            }
        }
        for u in &pass.uses {
            let i = u.res.index();
            if u.reads() && u.clear.is_none() && !has_contents[i] {
                return Err(GraphError::ReadBeforeWrite {
                    pass: pass.name.clone(),
                    attachment: res[i].name.clone(),
                });
            }
            if u.clear.is_some() && used[i] {
                return Err(GraphError::ClearNotFirstUse {
                    pass: pass.name.clone(),
                    attachment: res[i].name.clone(),
                });
            }
        }
        for u in &pass.uses {
            used[u.res.index()] = true;
            if u.writes() {
                has_contents[u.res.index()] = true;
            }
        }
    }
    Ok(())
}
