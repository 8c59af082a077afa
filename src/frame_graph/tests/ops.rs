//! Stages 5 and 6, load/store/resolve and memoryless: the ops each attachment
//! gets, preserve lists and resolve slots.

use super::*;

#[test]
fn unity_write_vs_write_all_blit() {
    let plan = |access| {
        let mut g = FrameGraph::new(HD);
        let mut color = g.create_attachment("camera", rgba8());
        let mut target = g.import_attachment("target", rgba8(), ImportParams::default());
        g.add_raster_pass("draw")
            .color(&mut color, Access::WriteAll, Some(ClearValue::BLACK))
            .finish()
            .unwrap();
        g.add_raster_pass("blit")
            .sample(&color)
            .color(&mut target, access, None)
            .finish()
            .unwrap();
        compile(&g, &DeviceCaps::mali_valhall()).unwrap()
    };
    let write = plan(Access::Write);
    let write_all = plan(Access::WriteAll);
    assert_eq!(ops(&write, 1, "target"), ("Load", "Store"));
    assert_eq!(ops(&write_all, 1, "target"), ("DontCare", "Store"));
    // Why: the blit keeps the image's contents, or overwrites them; the camera is cleared by
    // its first use and stored for the blit, which samples it; the target is needed after.
    assert_eq!(
        att(&write, 1, "target").load_reason,
        LoadReason::ImportedContents {
            reader: "blit".into()
        }
    );
    assert_eq!(
        att(&write_all, 1, "target").load_reason,
        LoadReason::OverwrittenBy {
            pass: "blit".into()
        }
    );
    assert_eq!(
        att(&write, 1, "target").store_reason,
        StoreReason::NeededAfterFrame
    );
    let camera = att(&write, 0, "camera");
    assert_eq!(
        camera.load_reason,
        LoadReason::ClearedOnFirstUse {
            pass: "draw".into()
        }
    );
    assert_eq!(
        camera.store_reason,
        StoreReason::ReadLater {
            reader: "blit".into()
        }
    );
    // The difference is one 1080p RGBA8 load, about 8 MB per frame.
    assert_eq!(write.cost.bytes() - write_all.cost.bytes(), HD_RGBA8);
    assert_eq!(
        write.breaks[0].reason,
        BreakReason::SamplesAttachment {
            attachment: "camera".into()
        }
    );
}

#[test]
fn preserve_lists_attachments_skipped_by_a_subpass() {
    // Lighting reads albedo only; transparent, between it and tonemap, tests
    // depth and blends onto hdr.
    let mut c = Chain::new(HD)
        .gbuffer(["albedo"])
        .depth(ClearValue::DEPTH_ONE)
        .hdr("hdr", Format::Rgba8Unorm)
        .declare();
    c.gbuffer_pass();
    let (hdr, (depth, _)) = (c.hdr.as_mut().unwrap(), c.depth.as_ref().unwrap());
    c.g.add_raster_pass("lighting")
        .input(&c.gbuffer[0])
        .color(hdr, Access::WriteAll, None)
        .finish()
        .unwrap();
    c.g.add_raster_pass("transparent")
        .color(hdr, Access::ReadWrite, None)
        .depth_read_only(depth)
        .finish()
        .unwrap();
    c.tonemap_pass();
    let f = compile(&c.g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.native_passes.len(), 1, "{}", f.describe());
    let n = &f.native_passes[0];
    let depth_idx = n
        .attachments
        .iter()
        .position(|a| a.name == "depth")
        .unwrap();
    assert_eq!(n.subpasses[1].preserve, vec![depth_idx]);
    assert!(n.subpasses[2].preserve.is_empty());
    // 1 -> 2: hdr written as colour, blended in the next subpass.
    let d = n
        .dependencies
        .iter()
        .find(|d| d.src == SubpassIndex::Index(1) && d.dst == SubpassIndex::Index(2))
        .unwrap();
    assert_eq!(d.dst_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(
        d.dst_access,
        AccessMask::COLOR_ATTACHMENT_READ | AccessMask::COLOR_ATTACHMENT_WRITE
    );
    // 0 -> 2: depth written, then tested read-only.
    let d = n
        .dependencies
        .iter()
        .find(|d| d.src == SubpassIndex::Index(0) && d.dst == SubpassIndex::Index(2))
        .unwrap();
    assert_eq!(d.dst_access, AccessMask::DEPTH_STENCIL_ATTACHMENT_READ);
}

#[test]
fn read_only_attachment_uses_store_op_none_when_available() {
    let build = || {
        let mut g = FrameGraph::new(HD);
        let mut depth = g.import_attachment("depth", d24(), ImportParams::history());
        let mut c = g.import_attachment("c", rgba8(), ImportParams::output());
        g.add_raster_pass("decals")
            .color(&mut c, Access::WriteAll, None)
            .depth_read_only(&depth)
            .finish()
            .unwrap();
        let _ = &mut depth;
        g
    };
    let g = build();
    let valhall = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(ops(&valhall, 0, "depth"), ("Load", "None"));
    assert_eq!(
        att(&valhall, 0, "depth").store_reason,
        StoreReason::UnchangedKept { reader: None }
    );
    let bifrost = compile(&g, &DeviceCaps::mali_bifrost()).unwrap();
    assert_eq!(ops(&bifrost, 0, "depth"), ("Load", "Store"));
    assert_eq!(
        att(&bifrost, 0, "depth").store_reason,
        StoreReason::UnchangedStored { reader: None }
    );
    assert_eq!(
        att(&bifrost, 0, "depth").store_reason.to_string(),
        "stored: only read here, needed after the frame, and the device has no STORE_OP_NONE"
    );
    assert_eq!(bifrost.cost.bytes() - valhall.cost.bytes(), HD_RGBA8);
}

#[test]
fn imported_clear_on_first_use_and_discard() {
    let mut g = FrameGraph::new(HD);
    let params = ImportParams {
        contents_needed: false,
        needed_after_frame: false,
        clear_on_first_use: true,
        discard_on_last_use: true,
    };
    let mut scratch = g.import_attachment("scratch", rgba8(), params);
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("a")
        .color(&mut scratch, Access::Write, None)
        .finish()
        .unwrap();
    g.add_raster_pass("b")
        .input(&scratch)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(ops(&f, 0, "scratch"), ("DontCare", "DontCare"));
    let scratch = att(&f, 0, "scratch");
    assert_eq!(
        scratch.load_reason,
        LoadReason::NothingBefore { pass: "a".into() }
    );
    assert_eq!(scratch.store_reason, StoreReason::NotNeeded);
    // Imported images keep their memory: never transient.
    assert!(!f.attachment_named("scratch").unwrap().transient);
    // Conservative import: loaded and stored.
    let mut g = FrameGraph::new(HD);
    let mut hist = g.import_attachment("history", rgba8(), ImportParams::default());
    g.add_raster_pass("accumulate")
        .color(&mut hist, Access::ReadWrite, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(ops(&f, 0, "history"), ("Load", "Store"));
}

#[test]
fn depth_resolve_uses_the_depth_resolve_slot() {
    let mut g = FrameGraph::new(HD);
    let mut c = g.create_attachment("c", rgba8().with_samples(4));
    let mut d = g.create_attachment("d", d24().with_samples(4));
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let mut dr = g.import_attachment("depth_resolved", d24(), ImportParams::output());
    g.add_raster_pass("forward")
        .color(&mut c, Access::ReadWrite, Some(ClearValue::BLACK))
        .depth(&mut d, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .resolve(&c, &mut out)
        .resolve(&d, &mut dr)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    let sp = &f.native_passes[0].subpasses[0];
    assert_eq!(sp.depth_resolve, Some(3));
    assert_eq!(ops(&f, 0, "d"), ("Clear", "DontCare"));
    assert_eq!(ops(&f, 0, "depth_resolved"), ("DontCare", "Store"));
    let caps = DeviceCaps {
        depth_stencil_resolve: false,
        ..DeviceCaps::mali_valhall()
    };
    let e = compile(&g, &caps).unwrap_err();
    assert!(
        e.to_string().contains("VK_KHR_depth_stencil_resolve"),
        "{e}"
    );
}

/// The seeds' deferred frame, merged and unmerged: every load and store says why, naming the
/// passes; an unmerged frame's loads name the refused merge.
#[test]
fn load_and_store_reasons_name_the_passes_responsible() {
    let graph = deferred(HD, 1);
    let merged = compile(&graph, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(merged.native_passes.len(), 1, "{}", merged.describe());
    let albedo = att(&merged, 0, "albedo");
    assert_eq!(
        (&albedo.load_reason, &albedo.store_reason),
        (
            &LoadReason::NothingBefore {
                pass: "gbuffer".into()
            },
            &StoreReason::NotNeeded
        )
    );
    let depth = att(&merged, 0, "depth");
    assert_eq!(
        depth.load_reason,
        LoadReason::ClearedOnFirstUse {
            pass: "gbuffer".into()
        }
    );
    let swapchain = att(&merged, 0, "swapchain");
    assert_eq!(
        (&swapchain.load_reason, &swapchain.store_reason),
        (
            &LoadReason::NothingBefore {
                pass: "tonemap".into()
            },
            &StoreReason::NeededAfterFrame
        )
    );

    let unmerged_caps = DeviceCaps {
        merge_subpasses: false,
        ..DeviceCaps::mali_valhall()
    };
    let unmerged = compile(&graph, &unmerged_caps).unwrap();
    assert_eq!(unmerged.native_passes.len(), 3, "{}", unmerged.describe());
    assert_eq!(
        att(&unmerged, 0, "albedo").store_reason,
        StoreReason::ReadLater {
            reader: "lighting".into()
        }
    );
    let loaded = att(&unmerged, 1, "albedo");
    assert_eq!(
        loaded.load_reason,
        LoadReason::WrittenEarlier {
            writer: "gbuffer".into(),
            reader: "lighting".into(),
            not_merged: Some(BreakReason::MergingDisabled),
        }
    );
    assert_eq!(
        loaded.load_reason.to_string(),
        "loaded: written by `gbuffer` in an earlier render pass, read by `lighting` (not merged: \
         subpass merging is disabled for this device)"
    );
    // Read as an input attachment, never changed, needed by nobody after: not stored.
    assert_eq!(loaded.store_reason, StoreReason::NotNeeded);
    assert_eq!(
        att(&unmerged, 2, "hdr").load_reason,
        LoadReason::WrittenEarlier {
            writer: "lighting".into(),
            reader: "tonemap".into(),
            not_merged: Some(BreakReason::MergingDisabled),
        }
    );
}

/// With MSAA the output is written by the resolve at the end of the pass that resolves into it:
/// its contents before do not matter, and the reason names that pass. The multisampled `ldr`
/// it is resolved from lives and dies in the tile. (A device without a tile budget: a Mali's
/// 256 bits would split the 4x frame.)
#[test]
fn a_resolved_output_is_not_loaded_and_says_which_pass_resolves_it() {
    let frame = compile(&deferred(HD, 4), &DeviceCaps::desktop()).unwrap();
    assert_eq!(frame.native_passes.len(), 1, "{}", frame.describe());
    let output = att(&frame, 0, "swapchain");
    assert_eq!(
        (&output.load_reason, &output.store_reason),
        (
            &LoadReason::ResolvedBy {
                pass: "tonemap".into()
            },
            &StoreReason::NeededAfterFrame
        )
    );
    assert_eq!(
        output.load_reason.to_string(),
        "DONT_CARE: overwritten by the resolve in `tonemap`"
    );
    let ldr = att(&frame, 0, "ldr");
    assert_eq!(ldr.store_reason, StoreReason::NotNeeded);
    assert!(ldr.transient, "{}", frame.describe());
}
