//! The module docs' worked example, end to end, and the plan's printed
//! description.

use super::*;

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
