//! Stage 2, cull: passes nobody needs are dropped.

use super::*;

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
