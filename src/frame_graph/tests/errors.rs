//! Stage 1, validate: malformed declarations are errors that name the pass
//! and attachment; near misses are not.

use super::*;

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
    // Testing against it read-only while sampling it is two reads (a draw culled by the depth
    // test that also fetches the depth it shades).
    g.add_raster_pass("lights")
        .depth_read_only(&depth)
        .sample(&depth)
        .color(&mut color, Access::WriteAll, None)
        .side_effects()
        .finish()
        .unwrap();
}
