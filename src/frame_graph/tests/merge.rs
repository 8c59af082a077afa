//! Stage 4, merge: which adjacent passes share a native render pass, and why
//! the others break; then the merge rule, `can_merge`, on its own.

use super::*;

fn forward(copy_depth: bool) -> CompiledFrame {
    let mut g = FrameGraph::new(HD);
    let shadow_desc = AttachmentDesc::new(Format::Depth32Float).with_size(Size::Absolute {
        width: 2048,
        height: 2048,
    });
    let mut shadow = g.create_attachment("shadow", shadow_desc);
    let mut color = g.create_attachment("camera_color", rgba8());
    let mut depth = g.create_attachment("camera_depth", d24());
    let mut depth_copy = g.create_attachment("depth_texture", d24());
    let mut out = g.import_attachment("backbuffer", rgba8(), ImportParams::output());
    g.add_raster_pass("MainLightShadow")
        .depth(&mut shadow, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    g.add_raster_pass("DrawOpaqueObjects")
        .sample(&shadow)
        .color(&mut color, Access::ReadWrite, Some(ClearValue::BLACK))
        .depth(&mut depth, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    // A builder dropped without `finish()` adds nothing.
    let _ = g.add_raster_pass("never_finished");
    if copy_depth {
        g.add_copy_pass("CopyDepth")
            .copy(&depth, &mut depth_copy)
            .finish()
            .unwrap();
    }
    let mut t = g
        .add_raster_pass("DrawTransparentObjects")
        .color(&mut color, Access::ReadWrite, None)
        .depth_read_only(&depth);
    if copy_depth {
        t = t.sample(&depth_copy);
    }
    t.finish().unwrap();
    g.add_raster_pass("FinalBlit")
        .sample(&color)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    compile(&g, &DeviceCaps::mali_valhall()).unwrap()
}

#[test]
fn forward_opaque_and_transparent_merge() {
    let f = forward(false);
    let names: Vec<&str> = f.native_passes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "MainLightShadow",
            "DrawOpaqueObjects+DrawTransparentObjects",
            "FinalBlit"
        ]
    );
    // Seed 002's table.
    assert_eq!(ops(&f, 0, "shadow"), ("Clear", "Store"));
    assert_eq!(ops(&f, 1, "camera_color"), ("Clear", "Store"));
    assert_eq!(ops(&f, 1, "camera_depth"), ("Clear", "DontCare"));
    assert!(f.attachment_named("camera_depth").unwrap().memoryless);
    assert_eq!(ops(&f, 2, "backbuffer"), ("DontCare", "Store"));
    assert_eq!(
        f.breaks[0].reason,
        BreakReason::ExtentMismatch {
            prev: Extent::new(2048, 2048),
            next: HD
        }
    );
    assert_eq!(f.breaks[1].prev_pass, "DrawTransparentObjects");
    assert_eq!(f.breaks[1].next_pass, "FinalBlit");
    assert!(matches!(
        f.breaks[1].reason,
        BreakReason::SamplesAttachment { .. }
    ));
    // The transparent subpass reads depth without writing it.
    let sp = &f.native_passes[1].subpasses[1];
    assert!(sp.depth.unwrap().read_only);
    // The culled name list is empty: the unfinished builder added nothing.
    assert!(f.culled.is_empty());
}

#[test]
fn forward_copy_depth_breaks_the_merge() {
    let f = forward(true);
    let names: Vec<&str> = f.native_passes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "MainLightShadow",
            "DrawOpaqueObjects",
            "CopyDepth",
            "DrawTransparentObjects",
            "FinalBlit"
        ]
    );
    assert_eq!(
        f.breaks[1],
        MergeBreak {
            prev_pass: "DrawOpaqueObjects".into(),
            next_pass: "CopyDepth".into(),
            reason: BreakReason::NotRaster {
                pass: "CopyDepth".into(),
                kind: PassKind::Copy
            }
        }
    );
    assert!(f.breaks[1].to_string().contains("copy pass"));
    // Opaque now stores colour and depth; transparent loads them back.
    assert_eq!(ops(&f, 1, "camera_color"), ("Clear", "Store"));
    assert_eq!(ops(&f, 1, "camera_depth"), ("Clear", "Store"));
    assert_eq!(ops(&f, 3, "camera_color"), ("Load", "Store"));
    // Depth only read by transparent: STORE_OP_NONE would keep it, but
    // nobody needs it afterwards.
    assert_eq!(ops(&f, 3, "camera_depth"), ("Load", "DontCare"));
    assert!(!f.attachment_named("camera_depth").unwrap().transient);
    let merged = forward(false);
    // Depth store, copy read and write, depth load, depth-texture sample,
    // colour store and load: seven more full-screen transfers.
    assert_eq!(f.cost.bytes() - merged.cost.bytes(), 7 * HD_RGBA8);
}

#[test]
fn deferred_with_bloom_that_samples_neighbours_breaks() {
    let mut g = FrameGraph::new(HD);
    let mut albedo = g.create_attachment("albedo", rgba8());
    let mut depth = g.create_attachment("depth", d24());
    let mut hdr = g.create_attachment("hdr", AttachmentDesc::new(Format::Rgba16Float));
    let mut bloom = g.create_attachment("bloom", AttachmentDesc::new(Format::Rgba16Float));
    let mut out = g.import_attachment("swapchain", rgba8(), ImportParams::output());
    g.add_raster_pass("gbuffer")
        .color(&mut albedo, Access::WriteAll, None)
        .depth(&mut depth, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    g.add_raster_pass("lighting")
        .input(&albedo)
        .input(&depth)
        .color(&mut hdr, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("bloom")
        .sample(&hdr)
        .color(&mut bloom, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("tonemap")
        .input(&hdr)
        .sample(&bloom)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.native_passes.len(), 3, "{}", f.describe());
    assert_eq!(f.native_passes[0].name, "gbuffer+lighting");
    assert_eq!(
        f.breaks[0],
        MergeBreak {
            prev_pass: "lighting".into(),
            next_pass: "bloom".into(),
            reason: BreakReason::SamplesAttachment {
                attachment: "hdr".into()
            }
        }
    );
    let text = f.breaks[0].to_string();
    assert!(text.contains("samples `hdr` as a texture"), "{text}");
    assert_eq!(
        f.breaks[1].reason,
        BreakReason::SamplesAttachment {
            attachment: "bloom".into()
        }
    );
    // hdr must reach memory now; tonemap loads it for its input attachment.
    assert_eq!(ops(&f, 0, "hdr"), ("DontCare", "Store"));
    assert_eq!(ops(&f, 2, "hdr"), ("Load", "DontCare"));
    assert_eq!(ops(&f, 0, "albedo"), ("DontCare", "DontCare"));
    // The texture reads are priced as one full read each.
    let hdr_bytes = image_bytes(HD, Format::Rgba16Float, 1, 1);
    assert_eq!(f.cost.per_native_pass[1].sampled, hdr_bytes);
    assert_eq!(f.cost.per_native_pass[2].sampled, hdr_bytes);
    // The external dependency for a sampled texture is SHADER_READ in the
    // fragment shader; the loaded input attachment is INPUT_ATTACHMENT_READ.
    let deps = &f.native_passes[2].dependencies;
    let into_tonemap = deps
        .iter()
        .find(|d| d.src == SubpassIndex::External && d.dst == SubpassIndex::Index(0))
        .unwrap();
    assert!(
        into_tonemap
            .dst_stages
            .contains(PipelineStages::FRAGMENT_SHADER)
    );
    assert!(
        into_tonemap
            .dst_access
            .contains(AccessMask::SHADER_READ | AccessMask::INPUT_ATTACHMENT_READ)
    );
}

#[test]
fn msaa_gbuffer_resolved_only_at_the_end() {
    let g = deferred(HD, 4);
    let f = compile(&g, &DeviceCaps::adreno(1 << 20)).unwrap();
    assert_eq!(f.native_passes.len(), 1, "{}", f.describe());
    let n = &f.native_passes[0];
    for name in ["albedo", "normal", "material", "depth", "hdr", "ldr"] {
        let a = att(&f, 0, name);
        assert_eq!(a.samples, 4);
        assert_eq!(a.store, StoreOp::DontCare, "{name}");
        assert!(a.transient && f.attachment_named(name).unwrap().memoryless);
    }
    assert_eq!(ops(&f, 0, "swapchain"), ("DontCare", "Store"));
    let ldr = n.attachments.iter().position(|a| a.name == "ldr").unwrap();
    let out = n
        .attachments
        .iter()
        .position(|a| a.name == "swapchain")
        .unwrap();
    // The resolve sits in the last subpass only.
    assert_eq!(n.subpasses[2].resolve, vec![Some(out)]);
    assert!(n.subpasses[..2].iter().all(|s| s.resolve.is_empty()));
    assert_eq!(n.attachments[ldr].resolve, Some(out));
    // Only the single-sampled resolve target is written to memory.
    assert_eq!(f.cost.bytes(), HD_RGBA8);
    // GMEM: (3x4 + 4 + 4) x 4 colour + 4 x 4 depth = 96 bytes per pixel.
    assert_eq!(n.footprint.bytes_per_pixel(), 96);
    assert!(matches!(n.footprint.verdict, TileVerdict::Bins(_)));
}

#[test]
fn msaa_resolve_in_an_intermediate_subpass_breaks() {
    let mut g = FrameGraph::new(HD);
    let ms = |f| AttachmentDesc::new(f).with_samples(4);
    let mut color = g.create_attachment("color", ms(Format::Rgba8Unorm));
    let mut resolved = g.create_attachment("resolved", rgba8());
    let mut ldr = g.create_attachment("ldr", ms(Format::Rgba8Unorm));
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let mut copy = g.import_attachment("copy", rgba8(), ImportParams::output());
    g.add_raster_pass("opaque")
        .color(&mut color, Access::ReadWrite, Some(ClearValue::BLACK))
        .resolve(&color, &mut resolved)
        .finish()
        .unwrap();
    g.add_raster_pass("post")
        .input(&color)
        .color(&mut ldr, Access::WriteAll, None)
        .resolve(&ldr, &mut out)
        .finish()
        .unwrap();
    g.add_copy_pass("keep")
        .copy(&resolved, &mut copy)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::desktop()).unwrap();
    assert_eq!(
        f.breaks[0].reason,
        BreakReason::IntermediateResolve {
            attachment: "color".into()
        }
    );
    // So the MSAA samples are stored, as seed 000 warns.
    assert_eq!(ops(&f, 0, "color"), ("Clear", "Store"));
    assert_eq!(ops(&f, 1, "color"), ("Load", "DontCare"));
}

#[test]
fn resolution_change_breaks() {
    let mut g = FrameGraph::new(HD);
    let mut color = g.create_attachment("color", rgba8());
    let half = rgba8().with_size(Size::ViewScaled { num: 1, den: 2 });
    let mut small = g.create_attachment("half", half);
    let mut out = g.import_attachment("out", half, ImportParams::output());
    g.add_raster_pass("full")
        .color(&mut color, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("downsample")
        .sample(&color)
        .color(&mut small, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("composite")
        .input(&small)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(
        f.breaks[0].reason,
        BreakReason::ExtentMismatch {
            prev: HD,
            next: Extent::new(960, 540)
        }
    );
    assert!(f.breaks[0].to_string().contains("1920x1080 to 960x540"));
    assert_eq!(f.native_passes[1].name, "downsample+composite");
    assert_eq!(f.native_passes[1].extent, Extent::new(960, 540));
    assert_eq!(f.cost.bytes(), 2 * HD_RGBA8 + HD_RGBA8 / 4);
}

#[test]
fn compute_pass_in_the_middle_breaks_and_forces_stores() {
    let mut g = FrameGraph::new(HD);
    let mut albedo = g.create_attachment("albedo", rgba8());
    let mut depth = g.create_attachment("depth", d24());
    let mut ao = g.create_attachment("ao", AttachmentDesc::new(Format::R8Unorm));
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("gbuffer")
        .color(&mut albedo, Access::WriteAll, None)
        .depth(&mut depth, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    g.add_compute_pass("ssao")
        .read(&depth)
        .write(&mut ao, Access::WriteAll)
        .finish()
        .unwrap();
    g.add_raster_pass("lighting")
        .input(&albedo)
        .sample(&ao)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.native_passes.len(), 3);
    assert_eq!(f.native_passes[1].kind, PassKind::Compute);
    assert!(matches!(
        &f.breaks[0].reason,
        BreakReason::NotRaster { pass, kind: PassKind::Compute } if pass == "ssao"
    ));
    assert!(matches!(&f.breaks[1].reason, BreakReason::NotRaster { .. }));
    assert_eq!(ops(&f, 0, "albedo"), ("DontCare", "Store"));
    assert_eq!(ops(&f, 0, "depth"), ("Clear", "Store"));
    assert_eq!(ops(&f, 2, "albedo"), ("Load", "DontCare"));
    let ao_bytes = image_bytes(HD, Format::R8Unorm, 1, 1);
    assert_eq!(f.cost.per_native_pass[1].written, ao_bytes);
    assert_eq!(f.cost.per_native_pass[1].sampled, HD_RGBA8);
    // gbuffer -> EXTERNAL: depth goes to the compute shader, albedo to the
    // next render pass.
    let out_dep = f.native_passes[0]
        .dependencies
        .iter()
        .find(|d| d.dst == SubpassIndex::External)
        .unwrap();
    assert!(out_dep.dst_stages.contains(PipelineStages::COMPUTE_SHADER));
    assert!(out_dep.dst_access.contains(AccessMask::SHADER_READ));
}

#[test]
fn more_than_eight_attachments_break() {
    let g = Chain::new(HD)
        .gbuffer_count(7)
        .hdr("hdr", Format::Rgba8Unorm)
        .build();
    let f = compile(&g, &DeviceCaps::desktop()).unwrap();
    assert_eq!(f.native_passes[0].name, "gbuffer+lighting");
    assert_eq!(
        f.breaks[0].reason,
        BreakReason::TooManyAttachments { needed: 9, max: 8 }
    );
    assert!(
        f.breaks[0]
            .to_string()
            .contains("9 colour/input attachments")
    );
    assert_eq!(ops(&f, 0, "hdr"), ("DontCare", "Store"));
    // With a 4-input limit, 7 inputs are refused outright.
    let caps = DeviceCaps {
        max_input_attachments: 4,
        ..DeviceCaps::desktop()
    };
    assert!(matches!(
        compile(&g, &caps),
        Err(GraphError::Unsupported { pass, .. }) if pass == "lighting"
    ));
}

#[test]
fn too_many_input_attachments_across_subpasses_break() {
    let mut g = FrameGraph::new(HD);
    let mut gb: Vec<AttachmentHandle> = (0..5)
        .map(|i| g.create_attachment(&format!("gb{i}"), rgba8()))
        .collect();
    let mut a = g.create_attachment("a", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let mut p = g.add_raster_pass("gbuffer");
    for h in &mut gb {
        p = p.color(h, Access::WriteAll, None);
    }
    p.finish().unwrap();
    g.add_raster_pass("light_a")
        .input(&gb[0])
        .input(&gb[1])
        .input(&gb[2])
        .color(&mut a, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("light_b")
        .input(&gb[3])
        .input(&gb[4])
        .input(&a)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let caps = DeviceCaps {
        max_input_attachments: 4,
        ..DeviceCaps::desktop()
    };
    let f = compile(&g, &caps).unwrap();
    assert_eq!(
        f.breaks[0].reason,
        BreakReason::TooManyInputAttachments { needed: 6, max: 4 }
    );
}

#[test]
fn tile_budget_overflow_breaks_on_bifrost_but_merges_on_valhall() {
    let g = Chain::new(HD)
        .gbuffer_count(3)
        .hdr("hdr", Format::Rgba16Float)
        .build();
    let bifrost = compile(&g, &DeviceCaps::mali_bifrost()).unwrap();
    assert_eq!(
        bifrost.breaks[0].reason,
        BreakReason::TileBudgetExceeded {
            bytes_per_pixel: 20,
            verdict: TileVerdict::Spills {
                used_bits: 160,
                budget_bits: 128
            }
        }
    );
    assert!(bifrost.breaks[0].to_string().contains("160 bits"));
    assert_eq!(bifrost.native_passes[0].name, "gbuffer");
    assert!(bifrost.native_passes[0].footprint.verdict.fits());
    let valhall = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(valhall.native_passes.len(), 1, "{}", valhall.describe());
    assert!(valhall.cost.bytes() < bifrost.cost.bytes());
    // A lone pass over budget is reported, not broken.
    let mut g = FrameGraph::new(HD);
    let mut fat: Vec<AttachmentHandle> = (0..3)
        .map(|i| g.create_attachment(&format!("f{i}"), AttachmentDesc::new(Format::Rgba16Float)))
        .collect();
    let mut p = g.add_raster_pass("fat").side_effects();
    for h in &mut fat {
        p = p.color(h, Access::WriteAll, None);
    }
    p.finish().unwrap();
    let f = compile(&g, &DeviceCaps::mali_bifrost()).unwrap();
    assert!(matches!(
        f.native_passes[0].footprint.verdict,
        TileVerdict::Spills {
            used_bits: 192,
            budget_bits: 128
        }
    ));
    // 4xMSAA G-buffer: 3 x 32 bits x 4 = 384 bits spills even on Valhall
    // (seed 004).
    let f = compile(&deferred(HD, 4), &DeviceCaps::mali_valhall()).unwrap();
    assert!(matches!(
        f.breaks[0].reason,
        BreakReason::TileBudgetExceeded { .. }
    ));
}

#[test]
fn merging_disabled_by_caps_is_the_counterfactual() {
    let g = deferred(HD, 1);
    let merged = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    let caps = DeviceCaps::mali_valhall().with_merging(false);
    let apart = compile(&g, &caps).unwrap();
    assert_eq!(apart.native_passes.len(), 3);
    assert_eq!(apart.breaks.len(), 2);
    assert!(
        apart
            .breaks
            .iter()
            .all(|b| b.reason == BreakReason::MergingDisabled)
    );
    assert_eq!(
        apart.breaks[0].to_string(),
        "`gbuffer` | `lighting`: subpass merging is disabled for this device"
    );
    // G-buffer + depth stored and loaded, hdr stored and loaded.
    assert_eq!(ops(&apart, 0, "albedo"), ("DontCare", "Store"));
    assert_eq!(ops(&apart, 1, "albedo"), ("Load", "DontCare"));
    assert_eq!(ops(&apart, 0, "depth"), ("Clear", "Store"));
    assert_eq!(apart.cost.bytes(), merged.cost.bytes() + 10 * HD_RGBA8);
    assert!(apart.attachments.iter().all(|a| !a.transient));
    // Seed 001: the saving is worth about 10 x 475 MiB/s x 120 mW.
    let saved = apart.cost.milliwatts(60.0, DEFAULT_MW_PER_GBPS)
        - merged.cost.milliwatts(60.0, DEFAULT_MW_PER_GBPS);
    assert!(near(saved, 597.2, 0.5), "{saved}");
}

#[test]
fn independent_passes_share_nothing_and_stay_apart() {
    let mut g = FrameGraph::new(HD);
    let mut a = g.import_attachment("a", rgba8(), ImportParams::output());
    let mut b = g.import_attachment("b", rgba8(), ImportParams::output());
    g.add_raster_pass("pa")
        .color(&mut a, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("pb")
        .color(&mut b, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.breaks[0].reason, BreakReason::NothingShared);
}

#[test]
fn different_depth_attachments_break() {
    let mut g = FrameGraph::new(HD);
    let mut c = g.import_attachment("c", rgba8(), ImportParams::output());
    let mut d1 = g.create_attachment("d1", d24());
    let mut d2 = g.create_attachment("d2", d24());
    g.add_raster_pass("one")
        .color(&mut c, Access::Write, Some(ClearValue::BLACK))
        .depth(&mut d1, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    g.add_raster_pass("two")
        .color(&mut c, Access::ReadWrite, None)
        .depth(&mut d2, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(
        f.breaks[0].reason,
        BreakReason::DifferentDepth {
            prev: "d1".into(),
            next: "d2".into()
        }
    );
}

// ---------------------------------------------------------------------------
// `can_merge` itself: one test per `BreakReason`, each the smallest
// situation it refuses for exactly that reason.

/// The candidate for the pass named `name`.
fn candidate<'g>(g: &'g FrameGraph, name: &str) -> MergeCandidate<'g> {
    let i = g
        .passes
        .iter()
        .position(|p| p.name == name)
        .unwrap_or_else(|| panic!("no pass `{name}`"));
    MergeCandidate::for_pass(g, PassId(i as u32)).unwrap()
}

/// Whether `can_merge` accepts `next` after the native pass made of `prev`
/// (merged in order, each step accepted under `caps` as compile would).
fn merge_into(
    g: &FrameGraph,
    caps: &DeviceCaps,
    prev: &[&str],
    next: &str,
) -> Result<(), BreakReason> {
    let mut native = candidate(g, prev[0]);
    for name in &prev[1..] {
        let c = candidate(g, name);
        assert_eq!(can_merge(&native, &c, caps), Ok(()), "{name}");
        native.absorb(&c);
    }
    can_merge(&native, &candidate(g, next), caps)
}

#[test]
fn can_merge_accepts_passes_that_share_attachments_on_tile() {
    let g = deferred(HD, 1);
    let caps = DeviceCaps::mali_valhall();
    assert_eq!(merge_into(&g, &caps, &["gbuffer"], "lighting"), Ok(()));
    assert_eq!(
        merge_into(&g, &caps, &["gbuffer", "lighting"], "tonemap"),
        Ok(())
    );
}

#[test]
fn can_merge_refuses_when_merging_is_disabled() {
    let g = deferred(HD, 1);
    let caps = DeviceCaps::mali_valhall().with_merging(false);
    assert_eq!(
        merge_into(&g, &caps, &["gbuffer"], "lighting"),
        Err(BreakReason::MergingDisabled)
    );
}

#[test]
fn can_merge_refuses_compute_and_copy_passes_on_either_side() {
    // draw -> copy -> blur (compute) -> show.
    let mut g = FrameGraph::new(HD);
    let mut drawn = g.create_attachment("drawn", rgba8());
    let mut copied = g.create_attachment("copied", rgba8());
    let mut blurred = g.create_attachment("blurred", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("draw")
        .color(&mut drawn, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_copy_pass("copy")
        .copy(&drawn, &mut copied)
        .finish()
        .unwrap();
    g.add_compute_pass("blur")
        .read(&copied)
        .write(&mut blurred, Access::WriteAll)
        .finish()
        .unwrap();
    g.add_raster_pass("show")
        .sample(&blurred)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let caps = DeviceCaps::desktop();
    let not_raster = |pass: &str, kind| {
        Err(BreakReason::NotRaster {
            pass: pass.into(),
            kind,
        })
    };
    assert_eq!(
        merge_into(&g, &caps, &["draw"], "copy"),
        not_raster("copy", PassKind::Copy)
    );
    assert_eq!(
        merge_into(&g, &caps, &["copy"], "blur"),
        not_raster("copy", PassKind::Copy)
    );
    assert_eq!(
        merge_into(&g, &caps, &["blur"], "show"),
        not_raster("blur", PassKind::Compute)
    );
}

#[test]
fn can_merge_refuses_a_change_of_extent() {
    let mut g = FrameGraph::new(HD);
    let mut full = g.create_attachment("full", rgba8());
    let half = rgba8().with_size(Size::ViewScaled { num: 1, den: 2 });
    let mut small = g.create_attachment("half", half);
    g.add_raster_pass("draw")
        .color(&mut full, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("downsample")
        .sample(&full)
        .color(&mut small, Access::WriteAll, None)
        .finish()
        .unwrap();
    assert_eq!(
        merge_into(&g, &DeviceCaps::desktop(), &["draw"], "downsample"),
        Err(BreakReason::ExtentMismatch {
            prev: HD,
            next: Extent::new(960, 540)
        })
    );
}

#[test]
fn can_merge_refuses_a_change_of_sample_count() {
    // The 4x pass resolves `resolved`, which the 1x pass reads on tile.
    let mut g = FrameGraph::new(HD);
    let mut ms = g.create_attachment("ms", rgba8().with_samples(4));
    let mut resolved = g.create_attachment("resolved", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("msaa")
        .color(&mut ms, Access::ReadWrite, Some(ClearValue::BLACK))
        .resolve(&ms, &mut resolved)
        .finish()
        .unwrap();
    g.add_raster_pass("post")
        .input(&resolved)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    assert_eq!(
        merge_into(&g, &DeviceCaps::desktop(), &["msaa"], "post"),
        Err(BreakReason::SampleCountMismatch { prev: 4, next: 1 })
    );
}

#[test]
fn can_merge_refuses_a_pass_that_samples_an_attachment() {
    let mut g = FrameGraph::new(HD);
    let mut color = g.create_attachment("color", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("draw")
        .color(&mut color, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("blit")
        .sample(&color)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    assert_eq!(
        merge_into(&g, &DeviceCaps::desktop(), &["draw"], "blit"),
        Err(BreakReason::SamplesAttachment {
            attachment: "color".into()
        })
    );
}

#[test]
fn can_merge_refuses_a_pass_that_attaches_a_sampled_texture() {
    // `read` samples `texture` and writes `color`; `reuse` reads `color` on
    // tile but renders into `texture` again.
    let mut g = FrameGraph::new(HD);
    let mut texture = g.create_attachment("texture", rgba8());
    let mut color = g.create_attachment("color", rgba8());
    g.add_raster_pass("make")
        .color(&mut texture, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("read")
        .sample(&texture)
        .color(&mut color, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("reuse")
        .input(&color)
        .color(&mut texture, Access::WriteAll, None)
        .finish()
        .unwrap();
    assert_eq!(
        merge_into(&g, &DeviceCaps::desktop(), &["read"], "reuse"),
        Err(BreakReason::AttachesSampledTexture {
            attachment: "texture".into()
        })
    );
}

#[test]
fn can_merge_refuses_a_resolve_in_an_intermediate_subpass() {
    let mut g = FrameGraph::new(HD);
    let mut color = g.create_attachment("color", rgba8().with_samples(4));
    let mut resolved = g.create_attachment("resolved", rgba8());
    let mut ldr = g.create_attachment("ldr", rgba8().with_samples(4));
    g.add_raster_pass("opaque")
        .color(&mut color, Access::ReadWrite, Some(ClearValue::BLACK))
        .resolve(&color, &mut resolved)
        .finish()
        .unwrap();
    g.add_raster_pass("post")
        .input(&color)
        .color(&mut ldr, Access::WriteAll, None)
        .finish()
        .unwrap();
    assert_eq!(
        merge_into(&g, &DeviceCaps::desktop(), &["opaque"], "post"),
        Err(BreakReason::IntermediateResolve {
            attachment: "color".into()
        })
    );
}

#[test]
fn can_merge_refuses_a_second_depth_attachment() {
    let mut g = FrameGraph::new(HD);
    let mut c = g.create_attachment("c", rgba8());
    let mut d1 = g.create_attachment("d1", d24());
    let mut d2 = g.create_attachment("d2", d24());
    g.add_raster_pass("one")
        .color(&mut c, Access::WriteAll, None)
        .depth(&mut d1, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    g.add_raster_pass("two")
        .color(&mut c, Access::ReadWrite, None)
        .depth(&mut d2, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    assert_eq!(
        merge_into(&g, &DeviceCaps::desktop(), &["one"], "two"),
        Err(BreakReason::DifferentDepth {
            prev: "d1".into(),
            next: "d2".into()
        })
    );
}

#[test]
fn a_new_depth_attachment_merges_where_the_device_allows_it() {
    // A pass that reads the depth as an input attachment and writes a second depth attachment
    // (the tile path's depth export for Bevy's overlays): merged on an immediate-mode GPU,
    // refused, with the reason, on a tiler.
    let mut g = FrameGraph::new(HD);
    let mut c = g.import_attachment("c", rgba8(), ImportParams::output());
    let mut d1 = g.create_attachment("d1", d24());
    let mut d2 = g.import_attachment("d2", d24(), ImportParams::output());
    g.add_raster_pass("one")
        .color(&mut c, Access::WriteAll, None)
        .depth(&mut d1, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    g.add_raster_pass("two")
        .input(&d1)
        .depth(&mut d2, Access::WriteAll, None)
        .finish()
        .unwrap();
    let imr = compile(&g, &DeviceCaps::desktop().with_depth_change_merges(true)).unwrap();
    assert_eq!(imr.render_pass_count(), 1, "{}", imr.describe());
    assert_eq!(
        merge_into(&g, &DeviceCaps::mali_valhall(), &["one"], "two"),
        Err(BreakReason::DifferentDepth {
            prev: "d1".into(),
            next: "d2".into()
        })
    );
}

#[test]
fn can_merge_refuses_passes_that_share_nothing() {
    let mut g = FrameGraph::new(HD);
    let mut a = g.create_attachment("a", rgba8());
    let mut b = g.create_attachment("b", rgba8());
    g.add_raster_pass("pa")
        .color(&mut a, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("pb")
        .color(&mut b, Access::WriteAll, None)
        .finish()
        .unwrap();
    assert_eq!(
        merge_into(&g, &DeviceCaps::desktop(), &["pa"], "pb"),
        Err(BreakReason::NothingShared)
    );
}

#[test]
fn can_merge_refuses_more_attachments_than_the_device_allows() {
    // gb0..gb2 and hdr: four colour/input attachments, one over the limit.
    let g = Chain::new(HD)
        .gbuffer_count(3)
        .hdr("hdr", Format::Rgba8Unorm)
        .build();
    let caps = DeviceCaps {
        max_color_attachments: 3,
        ..DeviceCaps::desktop()
    };
    assert_eq!(
        merge_into(&g, &caps, &["gbuffer"], "lighting"),
        Err(BreakReason::TooManyAttachments { needed: 4, max: 3 })
    );
}

#[test]
fn can_merge_refuses_more_input_attachments_than_the_device_allows() {
    // Lighting reads gb0, tonemap reads hdr: one input each, two merged.
    let g = Chain::new(HD)
        .gbuffer_count(1)
        .hdr("hdr", Format::Rgba8Unorm)
        .build();
    let caps = DeviceCaps {
        max_input_attachments: 1,
        ..DeviceCaps::desktop()
    };
    assert_eq!(
        merge_into(&g, &caps, &["gbuffer", "lighting"], "tonemap"),
        Err(BreakReason::TooManyInputAttachments { needed: 2, max: 1 })
    );
}

#[test]
fn can_merge_refuses_a_footprint_over_the_tile_budget() {
    // 3 x RGBA8 + RGBA16F: 160 bits of colour per pixel, 20 bytes.
    let g = Chain::new(HD)
        .gbuffer_count(3)
        .hdr("hdr", Format::Rgba16Float)
        .build();
    assert_eq!(
        merge_into(&g, &DeviceCaps::mali_bifrost(), &["gbuffer"], "lighting"),
        Err(BreakReason::TileBudgetExceeded {
            bytes_per_pixel: 20,
            verdict: TileVerdict::Spills {
                used_bits: 160,
                budget_bits: 128
            }
        })
    );
    // GMEM of 8 KiB holds one 32x16 bin of the 12-byte G-buffer (6 KiB),
    // not of the merged 20 bytes (10 KiB).
    let adreno = DeviceCaps::adreno(8 << 10);
    assert!(candidate(&g, "gbuffer").footprint(&adreno).verdict.fits());
    assert_eq!(
        merge_into(&g, &adreno, &["gbuffer"], "lighting"),
        Err(BreakReason::TileBudgetExceeded {
            bytes_per_pixel: 20,
            verdict: TileVerdict::GmemTooSmall {
                bytes_per_pixel: 20
            }
        })
    );
}
