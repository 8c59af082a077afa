//! Unit and scenario tests: the seeds' figures and the plans issue 3 lists.

use super::*;

const HD: Extent = Extent::new(1920, 1080);
const HD_RGBA8: u64 = 1920 * 1080 * 4;

fn rgba8() -> AttachmentDesc {
    AttachmentDesc::new(Format::Rgba8Unorm)
}

fn d24() -> AttachmentDesc {
    AttachmentDesc::new(Format::Depth24Stencil8)
}

fn near(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= tolerance
}

fn att<'a>(frame: &'a CompiledFrame, native: usize, name: &str) -> &'a NativeAttachment {
    frame.native_passes[native]
        .attachment_named(name)
        .unwrap_or_else(|| {
            panic!(
                "native pass #{native} has no `{name}`:\n{}",
                frame.describe()
            )
        })
}

fn ops(frame: &CompiledFrame, native: usize, name: &str) -> (&'static str, &'static str) {
    let a = att(frame, native, name);
    (a.load.name(), a.store.name())
}

fn cost_of(bytes: u64) -> FrameCost {
    FrameCost {
        per_attachment: Vec::new(),
        per_native_pass: Vec::new(),
        total: Traffic {
            stored: bytes,
            ..Traffic::default()
        },
    }
}

/// The deferred frame of the module docs: G-buffer -> lighting (input
/// attachments) -> tonemap (input attachment) -> swapchain.
fn deferred(view: Extent, samples: u32) -> FrameGraph {
    let mut g = FrameGraph::new(view);
    let ms = |f| AttachmentDesc::new(f).with_samples(samples);
    let mut albedo = g.create_attachment("albedo", ms(Format::Rgba8Unorm));
    let mut normal = g.create_attachment("normal", ms(Format::Rgba8Unorm));
    let mut material = g.create_attachment("material", ms(Format::Rgba8Unorm));
    let mut depth = g.create_attachment("depth", ms(Format::Depth24Stencil8));
    let mut hdr = g.create_attachment("hdr", ms(Format::Rg11b10Float));
    let mut out = g.import_attachment("swapchain", rgba8(), ImportParams::output());
    g.add_raster_pass("gbuffer")
        .color(&mut albedo, Access::WriteAll, None)
        .color(&mut normal, Access::WriteAll, None)
        .color(&mut material, Access::WriteAll, None)
        .depth(
            &mut depth,
            Access::ReadWrite,
            Some(ClearValue::DEPTH_REVERSE_Z),
        )
        .finish()
        .unwrap();
    g.add_raster_pass("lighting")
        .input(&albedo)
        .input(&normal)
        .input(&material)
        .input(&depth)
        .color(&mut hdr, Access::WriteAll, None)
        .finish()
        .unwrap();
    if samples == 1 {
        g.add_raster_pass("tonemap")
            .input(&hdr)
            .color(&mut out, Access::WriteAll, None)
            .finish()
            .unwrap();
    } else {
        let mut ldr = g.create_attachment("ldr", ms(Format::Rgba8Unorm));
        g.add_raster_pass("tonemap")
            .input(&hdr)
            .color(&mut ldr, Access::WriteAll, None)
            .resolve(&ldr, &mut out)
            .finish()
            .unwrap();
    }
    g
}

// ---------------------------------------------------------------------------
// The seeds' figures.

#[test]
fn seed_002_rgba8_1080p_is_7_9_mib_and_475_mib_per_s() {
    let b = image_bytes(HD, Format::Rgba8Unorm, 1, 1);
    assert_eq!(b, HD_RGBA8);
    let c = cost_of(b);
    assert!(near(c.mib(), 7.9, 0.05), "{}", c.mib());
    assert!(near(c.mib_per_s(60.0), 475.0, 1.0), "{}", c.mib_per_s(60.0));
    // B10G11R11 and D24S8 / D32 cost the same.
    for f in [
        Format::Rg11b10Float,
        Format::Depth24Stencil8,
        Format::Depth32Float,
    ] {
        assert_eq!(image_bytes(HD, f, 1, 1), b);
    }
    // And a compiled one-pass frame storing one 1080p RGBA8 target.
    let mut g = FrameGraph::new(HD);
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("blit")
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.cost.bytes(), HD_RGBA8);
    assert!(near(f.cost.mib_per_s(60.0), 475.0, 1.0));
}

#[test]
fn seed_002_rgba16f_is_15_9_mb_and_950_mb_per_s() {
    let c = cost_of(image_bytes(HD, Format::Rgba16Float, 1, 1));
    // 15.82 MiB: the seed rounds 2 x 7.9 up.
    assert!(near(c.mib(), 15.9, 0.1), "{}", c.mib());
    assert!(near(c.mib_per_s(60.0), 950.0, 2.0), "{}", c.mib_per_s(60.0));
    // A store + load round trip of camera colour: about 16 MB, 950 MB/s.
    let round_trip = cost_of(2 * HD_RGBA8);
    assert!(near(round_trip.mib_per_s(60.0), 950.0, 2.0));
}

#[test]
fn seed_002_gbuffer_plus_depth_memoryless_saves_31_7_mib() {
    // Three RGBA8 G-buffers + depth, lighting writes the output directly.
    let mut g = FrameGraph::new(HD);
    let mut gb: Vec<AttachmentHandle> = ["a", "b", "c"]
        .iter()
        .map(|n| g.create_attachment(n, rgba8()))
        .collect();
    let mut depth = g.create_attachment("depth", d24());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let mut p = g.add_raster_pass("gbuffer");
    for h in &mut gb {
        p = p.color(h, Access::WriteAll, None);
    }
    p.depth(&mut depth, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    let mut p = g.add_raster_pass("lighting");
    for h in &gb {
        p = p.input(h);
    }
    p.input(&depth)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    let saved: u64 = f
        .attachments
        .iter()
        .filter(|a| a.memoryless)
        .map(|a| image_bytes(a.extent, a.format, a.samples, 1))
        .sum();
    assert!(
        near(bytes_to_mib(saved), 31.7, 0.1),
        "{}",
        bytes_to_mib(saved)
    );
    assert_eq!(f.cost.bytes(), HD_RGBA8);
}

#[test]
fn seed_002_4x_msaa_rgba8_is_31_7_mib_and_resolves_memoryless() {
    assert!(near(
        bytes_to_mib(image_bytes(HD, Format::Rgba8Unorm, 4, 1)),
        31.7,
        0.1
    ));
    let mut g = FrameGraph::new(HD);
    let mut msaa = g.create_attachment("msaa", rgba8().with_samples(4));
    let mut depth = g.create_attachment("depth", d24().with_samples(4));
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("forward")
        .color(&mut msaa, Access::ReadWrite, Some(ClearValue::BLACK))
        .depth(&mut depth, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .resolve(&msaa, &mut out)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(ops(&f, 0, "msaa"), ("Clear", "DontCare"));
    assert_eq!(ops(&f, 0, "out"), ("DontCare", "Store"));
    assert!(f.attachment_named("msaa").unwrap().memoryless);
    // Only the 1-sample resolve target reaches memory.
    assert_eq!(f.cost.bytes(), HD_RGBA8);
    assert_eq!(f.native_passes[0].subpasses[0].resolve, vec![Some(2)]);
}

#[test]
fn seed_000_profiler_bins_1216x1344_2xmsaa_are_28_of_320x192() {
    // "color 32bit, depth 24bit, stencil 8 bit, MSAA 2 | 28 320x192 bins"
    let b = bin_layout(Extent::new(1216, 1344), (4 + 4) * 2, 1, 1 << 20, 32, 16).unwrap();
    assert_eq!((b.width, b.height, b.count()), (320, 192, 28));
    assert!(b.bytes <= 1 << 20);
}

#[test]
fn seed_000_two_view_4xmsaa_bins_are_about_96x176() {
    // 1 MB GMEM, 4xMSAA, 32-bit colour + D24S8, two views: "96x176 bins,
    // 96x176x2x32 = about 1 MB". 96x176 would need 1,081,344 bytes, 3% over
    // 1 MiB, so the model's bin is 96 wide and a little shorter.
    let mut g = FrameGraph::new(Extent::new(1440, 1584));
    let mut c = g.create_attachment("color", rgba8().with_samples(4));
    let mut d = g.create_attachment("depth", d24().with_samples(4));
    let mut out = g.import_attachment("eye", rgba8(), ImportParams::output());
    g.add_raster_pass("forward")
        .color(&mut c, Access::ReadWrite, Some(ClearValue::BLACK))
        .depth(&mut d, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .resolve(&c, &mut out)
        .finish()
        .unwrap();
    let caps = DeviceCaps::adreno(1 << 20).with_views(2);
    let f = compile(&g, &caps).unwrap();
    let fp = f.native_passes[0].footprint;
    assert_eq!(fp.bytes_per_pixel(), 32);
    let TileVerdict::Bins(b) = fp.verdict else {
        panic!("{fp:?}")
    };
    assert_eq!(b.width, 96);
    assert!(b.height.abs_diff(176) <= 16, "{b:?}");
    let area = f64::from(b.width * b.height);
    assert!((area / (96.0 * 176.0) - 1.0).abs() < 0.1, "{b:?}");
    assert!(b.bytes <= 1 << 20 && b.bytes * 10 >= 9 << 20, "{b:?}");
    assert_eq!(b.count(), b.columns * b.rows);
    assert_eq!(b.columns, 1440u32.div_ceil(96));
    // Multiview doubles the traffic: two 1-sample eye layers are stored.
    assert_eq!(f.cost.bytes(), 2 * 1440 * 1584 * 4);
}

#[test]
fn seed_001_five_gb_per_s_costs_about_600_mw() {
    let c = cost_of(5_000_000_000 / 60);
    assert!(near(c.gb_per_s(60.0), 5.0, 0.01));
    assert!(near(c.milliwatts(60.0, DEFAULT_MW_PER_GBPS), 600.0, 1.0));
    // The measurement itself: 4.9 GB/s saved, 567 mW measured.
    let m = cost_of(4_900_000_000 / 60).milliwatts(60.0, DEFAULT_MW_PER_GBPS);
    assert!((m / 567.0 - 1.0).abs() < 0.05, "{m}");
}

#[test]
fn bin_layout_edge_cases() {
    // Nothing fits: not even one aligned bin.
    assert_eq!(bin_layout(HD, 4096, 1, 1 << 20, 32, 16), None);
    assert_eq!(bin_layout(HD, 4, 1, 1 << 20, 0, 16), None);
    // A tiny target is one bin.
    let b = bin_layout(Extent::new(64, 64), 4, 1, 1 << 20, 32, 16).unwrap();
    assert_eq!(b.count(), 1);
    // Bins never exceed GMEM and cover the extent.
    for bpp in [4, 8, 16, 24, 32, 64, 128] {
        let b = bin_layout(HD, bpp, 1, 1 << 20, 32, 16).unwrap();
        assert!(b.bytes <= 1 << 20);
        assert!(b.columns * b.width >= 1920 && b.rows * b.height >= 1080);
        assert!(b.width.max(b.height) <= 2 * b.width.min(b.height));
    }
}

// ---------------------------------------------------------------------------
// Scenarios from issue 3.

#[test]
fn worked_example_from_module_docs() {
    let g = deferred(HD, 1);
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.native_passes.len(), 1, "{}", f.describe());
    let n = &f.native_passes[0];
    assert_eq!(n.name, "gbuffer+lighting+tonemap");
    assert_eq!(n.subpasses.len(), 3);
    assert!(f.breaks.is_empty());
    for name in ["albedo", "normal", "material", "hdr"] {
        assert_eq!(ops(&f, 0, name), ("DontCare", "DontCare"), "{name}");
        assert!(att(&f, 0, name).transient);
        assert!(f.attachment_named(name).unwrap().memoryless);
    }
    assert_eq!(ops(&f, 0, "depth"), ("Clear", "DontCare"));
    assert!(att(&f, 0, "depth").transient);
    assert_eq!(ops(&f, 0, "swapchain"), ("DontCare", "Store"));
    assert!(!att(&f, 0, "swapchain").transient);
    // Only the output is stored.
    assert_eq!(f.cost.bytes(), HD_RGBA8);
    assert_eq!(f.cost.total.stored, HD_RGBA8);
    // Subpass layout.
    let s = &n.subpasses;
    assert_eq!(s[0].color, vec![0, 1, 2]);
    assert_eq!(
        s[0].depth,
        Some(DepthRef {
            attachment: 3,
            read_only: false,
            stencil_write: false,
        })
    );
    assert_eq!(s[1].input, vec![0, 1, 2, 3]);
    assert_eq!(s[1].color, vec![4]);
    assert_eq!(s[2].input, vec![4]);
    assert_eq!(s[2].color, vec![5]);
    // G-buffer stays alive across subpass 1 for nobody: nothing to preserve.
    assert!(s.iter().all(|sp| sp.preserve.is_empty()));
    // Footprint: 3x4 + 4 + 4 bytes of colour, 4 of depth.
    assert_eq!(n.footprint.color_bytes_per_pixel, 20);
    assert_eq!(n.footprint.depth_bytes_per_pixel, 4);
    assert!(matches!(
        n.footprint.verdict,
        TileVerdict::Fits {
            used_bits: 160,
            budget_bits: 256
        }
    ));
    assert!(near(
        f.cost.milliwatts(60.0, DEFAULT_MW_PER_GBPS),
        59.7,
        0.1
    ));
}

#[test]
fn deferred_dependencies_are_exact() {
    let f = compile(&deferred(HD, 1), &DeviceCaps::mali_valhall()).unwrap();
    let deps = &f.native_passes[0].dependencies;
    let find = |src, dst| {
        deps.iter()
            .find(|d| d.src == src && d.dst == dst)
            .unwrap_or_else(|| panic!("no {src:?} -> {dst:?} in {deps:#?}"))
    };
    use SubpassIndex::{External, Index};
    let tests = PipelineStages::EARLY_FRAGMENT_TESTS | PipelineStages::LATE_FRAGMENT_TESTS;
    let d01 = find(Index(0), Index(1));
    assert_eq!(
        d01.src_stages,
        PipelineStages::COLOR_ATTACHMENT_OUTPUT | tests
    );
    assert_eq!(
        d01.src_access,
        AccessMask::COLOR_ATTACHMENT_WRITE | AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE
    );
    assert_eq!(d01.dst_stages, PipelineStages::FRAGMENT_SHADER);
    assert_eq!(d01.dst_access, AccessMask::INPUT_ATTACHMENT_READ);
    assert!(d01.by_region);
    let d12 = find(Index(1), Index(2));
    assert_eq!(d12.src_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(d12.src_access, AccessMask::COLOR_ATTACHMENT_WRITE);
    assert_eq!(d12.dst_stages, PipelineStages::FRAGMENT_SHADER);
    assert_eq!(d12.dst_access, AccessMask::INPUT_ATTACHMENT_READ);
    assert!(d12.by_region);
    // Nobody reads an input attachment through SHADER_READ.
    assert!(
        deps.iter()
            .all(|d| !d.dst_access.contains(AccessMask::SHADER_READ))
    );
    // Swapchain: wait where the acquire semaphore waits, write it, then
    // hand the stored image on.
    let ext2 = find(External, Index(2));
    assert_eq!(ext2.src_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(ext2.src_access, AccessMask::NONE);
    assert_eq!(ext2.dst_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(ext2.dst_access, AccessMask::COLOR_ATTACHMENT_WRITE);
    assert!(!ext2.by_region);
    let out = find(Index(2), External);
    assert_eq!(out.src_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(out.src_access, AccessMask::COLOR_ATTACHMENT_WRITE);
    assert_eq!(out.dst_stages, PipelineStages::BOTTOM_OF_PIPE);
    // Depth: cleared in the early tests of subpass 0.
    let ext0 = find(External, Index(0));
    assert!(
        ext0.dst_stages
            .contains(PipelineStages::EARLY_FRAGMENT_TESTS)
    );
    assert!(
        ext0.dst_access
            .contains(AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE)
    );
    // Destination stages are never earlier than the fragment stage.
    for d in deps {
        assert!(
            !d.dst_stages
                .intersects(PipelineStages::TOP_OF_PIPE | PipelineStages::VERTEX_SHADER)
        );
    }
    // Stable order: external-in first, external-out last.
    assert_eq!(deps.first().unwrap().src, External);
    assert_eq!(deps.last().unwrap().dst, External);
}

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
    // The difference is one 1080p RGBA8 load, about 8 MB per frame.
    assert_eq!(write.cost.bytes() - write_all.cost.bytes(), HD_RGBA8);
    assert_eq!(
        write.breaks[0].reason,
        BreakReason::SamplesAttachment {
            attachment: "camera".into()
        }
    );
}

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
fn order_hoists_an_input_reader_past_an_independent_compute_pass() {
    let mut g = FrameGraph::new(HD);
    let mut albedo = g.create_attachment("albedo", rgba8());
    let mut particles = g.create_attachment("particles", AttachmentDesc::new(Format::R32Float));
    let mut hdr = g.create_attachment("hdr", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let gbuffer = g
        .add_raster_pass("gbuffer")
        .color(&mut albedo, Access::WriteAll, None)
        .finish()
        .unwrap();
    let sim = g
        .add_compute_pass("simulate")
        .write(&mut particles, Access::WriteAll)
        .finish()
        .unwrap();
    let lighting = g
        .add_raster_pass("lighting")
        .input(&albedo)
        .color(&mut hdr, Access::WriteAll, None)
        .finish()
        .unwrap();
    let draw = g
        .add_raster_pass("particles")
        .sample(&particles)
        .input(&hdr)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.order, vec![gbuffer, lighting, sim, draw]);
    assert_eq!(f.native_passes[0].name, "gbuffer+lighting");
    assert_eq!(ops(&f, 0, "albedo"), ("DontCare", "DontCare"));
    assert_eq!(ops(&f, 0, "hdr"), ("DontCare", "Store"));
}

#[test]
fn more_than_eight_attachments_break() {
    let mut g = FrameGraph::new(HD);
    let mut gb: Vec<AttachmentHandle> = (0..7)
        .map(|i| g.create_attachment(&format!("gb{i}"), rgba8()))
        .collect();
    let mut hdr = g.create_attachment("hdr", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let mut p = g.add_raster_pass("gbuffer");
    for h in &mut gb {
        p = p.color(h, Access::WriteAll, None);
    }
    p.finish().unwrap();
    let mut p = g.add_raster_pass("lighting");
    for h in &gb {
        p = p.input(h);
    }
    p.color(&mut hdr, Access::WriteAll, None).finish().unwrap();
    g.add_raster_pass("tonemap")
        .input(&hdr)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
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
    let mut g = FrameGraph::new(HD);
    let mut gb: Vec<AttachmentHandle> = (0..3)
        .map(|i| g.create_attachment(&format!("gb{i}"), rgba8()))
        .collect();
    let mut hdr = g.create_attachment("hdr", AttachmentDesc::new(Format::Rgba16Float));
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let mut p = g.add_raster_pass("gbuffer");
    for h in &mut gb {
        p = p.color(h, Access::WriteAll, None);
    }
    p.finish().unwrap();
    let mut p = g.add_raster_pass("lighting");
    for h in &gb {
        p = p.input(h);
    }
    p.color(&mut hdr, Access::WriteAll, None).finish().unwrap();
    g.add_raster_pass("tonemap")
        .input(&hdr)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
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

#[test]
fn culling_drops_unused_passes_but_keeps_side_effects() {
    let mut g = FrameGraph::new(HD);
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    let mut debug = g.create_attachment("debug", rgba8());
    let mut probe = g.create_attachment("probe", rgba8());
    g.add_raster_pass("debug_view")
        .color(&mut debug, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("readback")
        .color(&mut probe, Access::WriteAll, None)
        .side_effects()
        .finish()
        .unwrap();
    g.add_raster_pass("main")
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.culled, vec!["debug_view".to_string()]);
    assert!(
        f.attachment_named("debug")
            .unwrap()
            .native_passes
            .is_empty()
    );
    assert!(!f.attachment_named("debug").unwrap().transient);
    assert_eq!(f.native_passes.len(), 2);
    // Writers of a version overwritten before anyone reads it are culled.
    let mut g = FrameGraph::new(HD);
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("first")
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("second")
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    assert_eq!(f.culled, vec!["first".to_string()]);
}

#[test]
fn preserve_lists_attachments_skipped_by_a_subpass() {
    let mut g = FrameGraph::new(HD);
    let mut albedo = g.create_attachment("albedo", rgba8());
    let mut depth = g.create_attachment("depth", d24());
    let mut hdr = g.create_attachment("hdr", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("gbuffer")
        .color(&mut albedo, Access::WriteAll, None)
        .depth(&mut depth, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    g.add_raster_pass("lighting")
        .input(&albedo)
        .color(&mut hdr, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("transparent")
        .color(&mut hdr, Access::ReadWrite, None)
        .depth_read_only(&depth)
        .finish()
        .unwrap();
    g.add_raster_pass("tonemap")
        .input(&hdr)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
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
    let bifrost = compile(&g, &DeviceCaps::mali_bifrost()).unwrap();
    assert_eq!(ops(&bifrost, 0, "depth"), ("Load", "Store"));
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

#[test]
fn programmable_blending_gets_a_self_dependency() {
    let mut g = FrameGraph::new(HD);
    let mut c = g.import_attachment("c", rgba8(), ImportParams::history());
    g.add_raster_pass("blend")
        .input(&c)
        .color(&mut c, Access::ReadWrite, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    let d = f.native_passes[0]
        .dependencies
        .iter()
        .find(|d| d.src == SubpassIndex::Index(0) && d.dst == SubpassIndex::Index(0))
        .unwrap();
    assert!(d.by_region);
    assert_eq!(d.dst_access, AccessMask::INPUT_ATTACHMENT_READ);
}

#[test]
fn cache_hits_for_a_rebuilt_identical_graph() {
    let caps = DeviceCaps::mali_valhall();
    let mut cache = FrameGraphCache::new();
    let first = cache.compile(&deferred(HD, 1), &caps).unwrap().clone();
    let second = cache.compile(&deferred(HD, 1), &caps).unwrap().clone();
    assert_eq!(first, second);
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    // A different graph, then different caps, recompile.
    let _ = cache
        .compile(&deferred(Extent::new(1280, 720), 1), &caps)
        .unwrap();
    assert_eq!(cache.misses(), 2);
    let apart = cache
        .compile(
            &deferred(Extent::new(1280, 720), 1),
            &caps.with_merging(false),
        )
        .unwrap();
    assert_eq!(apart.native_passes.len(), 3);
    assert_eq!(cache.misses(), 3);
    cache.invalidate();
    assert!(cache.cached().is_none());
    // Errors are returned, not cached.
    let mut bad = FrameGraph::new(HD);
    let h = bad.create_attachment("h", rgba8());
    let _ = bad.add_raster_pass("p").input(&h).finish();
    assert!(cache.compile(&bad, &caps).is_err());
    assert!(cache.cached().is_none());
}

#[test]
fn describe_mentions_passes_ops_and_breaks() {
    let f = compile(&deferred(HD, 1), &DeviceCaps::mali_bifrost()).unwrap();
    let text = f.describe();
    assert!(text.contains("gbuffer+lighting"), "{text}");
    assert!(
        text.contains("swapchain Rgba8Unorm x1: DontCare / Store"),
        "{text}"
    );
    assert!(text.contains("break `lighting` | `tonemap`"), "{text}");
}

// ---------------------------------------------------------------------------
// Errors.

#[test]
fn foreign_handle_is_a_descriptive_error() {
    let mut a = FrameGraph::new(HD);
    let mut b = FrameGraph::new(HD);
    let mut ha = a.create_attachment("from_a", rgba8());
    let _hb = b.create_attachment("from_b", rgba8());
    let e = b
        .add_raster_pass("uses_a")
        .color(&mut ha, Access::WriteAll, None)
        .finish()
        .unwrap_err();
    assert!(matches!(e, GraphError::ForeignHandle { .. }));
    let text = e.to_string();
    assert!(
        text.contains("uses_a") && text.contains("only work in the graph"),
        "{text}"
    );
    // The error is recorded, so compile reports it too.
    assert_eq!(compile(&b, &DeviceCaps::desktop()).unwrap_err(), e);
    // An index the other graph does not have at all is just as foreign.
    let mut c = FrameGraph::new(HD);
    let e = c.add_raster_pass("x").input(&ha).finish().unwrap_err();
    assert!(matches!(e, GraphError::ForeignHandle { .. }));
}

#[test]
fn read_before_write_is_an_error() {
    let mut g = FrameGraph::new(HD);
    let h = g.create_attachment("gbuffer", rgba8());
    let mut out = g.import_attachment("out", rgba8(), ImportParams::output());
    g.add_raster_pass("lighting")
        .input(&h)
        .color(&mut out, Access::WriteAll, None)
        .finish()
        .unwrap();
    let e = compile(&g, &DeviceCaps::desktop()).unwrap_err();
    assert_eq!(
        e,
        GraphError::ReadBeforeWrite {
            pass: "lighting".into(),
            attachment: "gbuffer".into()
        }
    );
    assert!(
        e.to_string()
            .contains("reads `gbuffer` before any pass writes it")
    );
    // Blending onto a never-written transient is a read too.
    let mut g = FrameGraph::new(HD);
    let mut h = g.create_attachment("c", rgba8());
    g.add_raster_pass("blend")
        .color(&mut h, Access::ReadWrite, None)
        .side_effects()
        .finish()
        .unwrap();
    assert!(matches!(
        compile(&g, &DeviceCaps::desktop()),
        Err(GraphError::ReadBeforeWrite { .. })
    ));
}

#[test]
fn resolve_mismatches_are_errors() {
    let mut g = FrameGraph::new(HD);
    let mut ms = g.create_attachment("ms", rgba8().with_samples(4));
    let mut wrong_format =
        g.create_attachment("wrong_format", AttachmentDesc::new(Format::Rgba16Float));
    let mut wrong_samples = g.create_attachment("wrong_samples", rgba8().with_samples(4));
    let mut single = g.create_attachment("single", rgba8());
    let mut ok = g.create_attachment("ok", rgba8());
    let e = g
        .add_raster_pass("a")
        .color(&mut ms, Access::WriteAll, None)
        .resolve(&ms, &mut wrong_format)
        .finish()
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::ResolveMismatch { detail, .. } if detail.contains("formats differ"))
    );
    assert!(
        e.to_string()
            .contains("cannot resolve `ms` into `wrong_format`")
    );
    let e = g
        .add_raster_pass("b")
        .color(&mut ms, Access::WriteAll, None)
        .resolve(&ms, &mut wrong_samples)
        .finish()
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::ResolveMismatch { detail, .. } if detail.contains("4 samples"))
    );
    let e = g
        .add_raster_pass("c")
        .color(&mut single, Access::WriteAll, None)
        .resolve(&single, &mut ok)
        .finish()
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::ResolveMismatch { detail, .. } if detail.contains("single-sampled"))
    );
    let e = g
        .add_raster_pass("d")
        .color(&mut wrong_samples, Access::WriteAll, None)
        .resolve(&ms, &mut ok)
        .finish()
        .unwrap_err();
    assert!(
        matches!(&e, GraphError::ResolveMismatch { detail, .. } if detail.contains("not a colour or depth attachment"))
    );
}

#[test]
fn malformed_passes_and_attachments_are_errors() {
    let mut g = FrameGraph::new(HD);
    let mut c = g.create_attachment("c", rgba8());
    let mut d = g.create_attachment("d", d24());
    let mut half = g.create_attachment(
        "half",
        rgba8().with_size(Size::ViewScaled { num: 1, den: 2 }),
    );
    let mut ms = g.create_attachment("ms", rgba8().with_samples(4));
    let e = g
        .add_raster_pass("depth_as_colour")
        .color(&mut d, Access::WriteAll, None)
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("depth format"), "{e}");
    let e = g
        .add_raster_pass("colour_as_depth")
        .depth(&mut c, Access::WriteAll, None)
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("colour format"), "{e}");
    let e = g
        .add_raster_pass("mixed_extent")
        .color(&mut c, Access::WriteAll, None)
        .color(&mut half, Access::WriteAll, None)
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("different extents"), "{e}");
    let e = g
        .add_raster_pass("mixed_samples")
        .color(&mut c, Access::WriteAll, None)
        .color(&mut ms, Access::WriteAll, None)
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("different sample counts"), "{e}");
    let e = g
        .add_raster_pass("wrong_clear")
        .color(&mut c, Access::WriteAll, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("does not suit"), "{e}");
    let e = g.add_raster_pass("empty").finish().unwrap_err();
    assert!(e.to_string().contains("render area"), "{e}");
    let e = g
        .add_raster_pass("feedback")
        .color(&mut c, Access::WriteAll, None)
        .sample(&c)
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("feedback loop"), "{e}");
    g.add_raster_pass("ok")
        .color(&mut c, Access::WriteAll, None)
        .finish()
        .unwrap();
    let e = g
        .add_raster_pass("ok")
        .color(&mut c, Access::WriteAll, None)
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("two passes are named `ok`"), "{e}");
    // Bad descriptions are recorded when created and reported by compile.
    let mut g = FrameGraph::new(HD);
    let _ = g.create_attachment("three", rgba8().with_samples(3));
    let e = compile(&g, &DeviceCaps::desktop()).unwrap_err();
    assert!(e.to_string().contains("3 samples per pixel"), "{e}");
    let mut g = FrameGraph::new(HD);
    let _ = g.create_attachment(
        "zero",
        rgba8().with_size(Size::ViewScaled { num: 1, den: 0 }),
    );
    assert!(matches!(
        compile(&g, &DeviceCaps::desktop()),
        Err(GraphError::InvalidAttachment { .. })
    ));
    let mut g = FrameGraph::new(HD);
    let _ = g.create_attachment("dup", rgba8());
    let _ = g.create_attachment("dup", rgba8());
    assert!(
        compile(&g, &DeviceCaps::desktop())
            .unwrap_err()
            .to_string()
            .contains("two attachments are named `dup`")
    );
    let mut g = FrameGraph::new(HD);
    let _ = g.import_attachment(
        "contradiction",
        rgba8(),
        ImportParams {
            clear_on_first_use: true,
            ..ImportParams::default()
        },
    );
    assert!(matches!(
        compile(&g, &DeviceCaps::desktop()),
        Err(GraphError::InvalidImport { .. })
    ));
    assert!(matches!(
        compile(&FrameGraph::new(Extent::new(0, 10)), &DeviceCaps::desktop()),
        Err(GraphError::InvalidGraph { .. })
    ));
}

#[test]
fn clear_after_first_use_and_device_limits_are_errors() {
    let mut g = FrameGraph::new(HD);
    let mut c = g.import_attachment("c", rgba8(), ImportParams::output());
    g.add_raster_pass("first")
        .color(&mut c, Access::WriteAll, None)
        .finish()
        .unwrap();
    g.add_raster_pass("second")
        .color(&mut c, Access::Write, Some(ClearValue::BLACK))
        .finish()
        .unwrap();
    let e = compile(&g, &DeviceCaps::desktop()).unwrap_err();
    assert_eq!(
        e,
        GraphError::ClearNotFirstUse {
            pass: "second".into(),
            attachment: "c".into()
        }
    );
    let mut g = FrameGraph::new(HD);
    let mut hs: Vec<AttachmentHandle> = (0..5)
        .map(|i| g.create_attachment(&format!("c{i}"), rgba8()))
        .collect();
    let mut p = g.add_raster_pass("wide").side_effects();
    for h in &mut hs {
        p = p.color(h, Access::WriteAll, None);
    }
    p.finish().unwrap();
    let caps = DeviceCaps {
        max_color_attachments: 4,
        ..DeviceCaps::desktop()
    };
    let e = compile(&g, &caps).unwrap_err();
    assert!(
        e.to_string()
            .contains("5 colour attachments, the device allows 4"),
        "{e}"
    );
    let caps = DeviceCaps {
        views: 0,
        ..DeviceCaps::desktop()
    };
    assert!(matches!(
        compile(&g, &caps),
        Err(GraphError::InvalidGraph { .. })
    ));
}

#[test]
fn flags_print_vulkan_names_and_carry_vulkan_bits() {
    let s = PipelineStages::COLOR_ATTACHMENT_OUTPUT | PipelineStages::FRAGMENT_SHADER;
    assert_eq!(
        format!("{s:?}"),
        "FRAGMENT_SHADER | COLOR_ATTACHMENT_OUTPUT"
    );
    assert_eq!(s.bits(), 0x480);
    assert_eq!(AccessMask::INPUT_ATTACHMENT_READ.bits(), 0x10);
    assert_eq!(format!("{}", AccessMask::NONE), "NONE");
    assert!(AccessMask::COLOR_ATTACHMENT_WRITE.has_write());
    assert!(!AccessMask::SHADER_READ.has_write());
}

#[test]
fn formats_know_their_sizes() {
    assert_eq!(Format::Rgba32Uint.bits_per_pixel(), 128);
    assert!(Format::Depth24Stencil8.has_stencil() && Format::Depth24Stencil8.is_depth());
    assert!(!Format::Depth32Float.has_stencil());
    assert!(!Format::Rgba8Srgb.is_depth());
    assert_eq!(Format::Rg11b10Float.name(), "Rg11b10Float");
    assert_eq!(Format::Bgra8Srgb.to_string(), "Bgra8Srgb");
    assert_eq!(
        Size::ViewScaled { num: 1, den: 4 }.resolve(HD),
        Some(Extent::new(480, 270))
    );
    assert_eq!(
        Size::Absolute {
            width: 0,
            height: 4
        }
        .resolve(HD),
        None
    );
}

#[test]
fn a_read_only_depth_attachment_may_also_be_sampled() {
    let mut g = FrameGraph::new(Extent::new(64, 64));
    let mut depth = g.create_attachment("depth", AttachmentDesc::new(Format::Depth32Float));
    let mut color = g.create_attachment("color", AttachmentDesc::new(Format::Rgba8Unorm));
    g.add_raster_pass("prepass")
        .depth(&mut depth, Access::WriteAll, Some(ClearValue::DEPTH_ONE))
        .finish()
        .unwrap();
    // Writing depth while sampling it is a feedback loop.
    let e = g
        .add_raster_pass("feedback")
        .depth(&mut depth, Access::ReadWrite, None)
        .sample(&depth)
        .color(&mut color, Access::WriteAll, None)
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("feedback loop"), "{e}");
    // Testing against it read-only while sampling it is two reads (light volumes culled by the
    // depth test that also fetch the depth they shade).
    g.add_raster_pass("lights")
        .depth_read_only(&depth)
        .sample(&depth)
        .color(&mut color, Access::WriteAll, None)
        .side_effects()
        .finish()
        .unwrap();
}
