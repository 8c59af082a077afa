//! Stage 3, order: a pass is moved next to the writer of the input attachment
//! it reads.

use super::*;

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
