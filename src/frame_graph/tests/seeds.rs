//! The seeds' figures: bytes, MiB/s, milliwatts and bin sizes as the seeds
//! quote them.

use super::*;

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
    let g = Chain::new(HD)
        .gbuffer(["a", "b", "c"])
        .depth(ClearValue::DEPTH_ONE)
        .build();
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
