//! Compiling a 64-pass frame graph, uncached and through the cache.
//!
//! `cargo bench --bench frame_graph`
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::hint::black_box;

use bevy_tile_deferred::frame_graph::{
    Access, AttachmentDesc, ClearValue, DeviceCaps, Extent, Format, FrameGraph, FrameGraphCache,
    ImportParams, Size, compile,
};
use criterion::{Criterion, criterion_group, criterion_main};

/// 64 passes: 4 shadow cascades, then 10 deferred views of 6 passes each
/// (G-buffer, lighting through input attachments, transparent, a bloom
/// that samples, a compute histogram, tonemap), each view writing its own
/// output.
fn build() -> FrameGraph {
    let mut g = FrameGraph::new(Extent::new(1920, 1080));
    let rgba8 = AttachmentDesc::new(Format::Rgba8Unorm);
    let shadow_desc = AttachmentDesc::new(Format::Depth32Float).with_size(Size::Absolute {
        width: 2048,
        height: 2048,
    });
    let mut shadows = Vec::new();
    for c in 0..4 {
        let mut s = g.create_attachment(&format!("shadow{c}"), shadow_desc);
        g.add_raster_pass(&format!("shadow_pass{c}"))
            .depth(&mut s, Access::ReadWrite, Some(ClearValue::DEPTH_ONE))
            .finish()
            .expect("valid");
        shadows.push(s);
    }
    for v in 0..10 {
        let mut albedo = g.create_attachment(&format!("albedo{v}"), rgba8);
        let mut normal = g.create_attachment(&format!("normal{v}"), rgba8);
        let mut depth = g.create_attachment(
            &format!("depth{v}"),
            AttachmentDesc::new(Format::Depth24Stencil8),
        );
        let hdr_desc = AttachmentDesc::new(Format::Rg11b10Float);
        let mut hdr = g.create_attachment(&format!("hdr{v}"), hdr_desc);
        let mut bloom = g.create_attachment(&format!("bloom{v}"), hdr_desc);
        let mut hist = g.create_attachment(
            &format!("histogram{v}"),
            AttachmentDesc::new(Format::R32Uint).with_size(Size::Absolute {
                width: 256,
                height: 1,
            }),
        );
        let mut out = g.import_attachment(&format!("out{v}"), rgba8, ImportParams::output());
        let mut p = g
            .add_raster_pass(&format!("gbuffer{v}"))
            .color(&mut albedo, Access::WriteAll, None)
            .color(&mut normal, Access::WriteAll, None)
            .depth(
                &mut depth,
                Access::ReadWrite,
                Some(ClearValue::DEPTH_REVERSE_Z),
            );
        for s in &shadows {
            p = p.sample(s);
        }
        p.finish().expect("valid");
        g.add_raster_pass(&format!("lighting{v}"))
            .input(&albedo)
            .input(&normal)
            .input(&depth)
            .color(&mut hdr, Access::WriteAll, None)
            .finish()
            .expect("valid");
        g.add_raster_pass(&format!("transparent{v}"))
            .color(&mut hdr, Access::ReadWrite, None)
            .depth_read_only(&depth)
            .finish()
            .expect("valid");
        g.add_raster_pass(&format!("bloom{v}"))
            .sample(&hdr)
            .color(&mut bloom, Access::WriteAll, None)
            .finish()
            .expect("valid");
        g.add_compute_pass(&format!("histogram{v}"))
            .read(&hdr)
            .write(&mut hist, Access::WriteAll)
            .finish()
            .expect("valid");
        g.add_raster_pass(&format!("tonemap{v}"))
            .input(&hdr)
            .sample(&bloom)
            .sample(&hist)
            .color(&mut out, Access::WriteAll, None)
            .finish()
            .expect("valid");
    }
    assert_eq!(g.pass_count(), 64);
    g
}

fn bench(c: &mut Criterion) {
    let caps = DeviceCaps::mali_valhall();
    let graph = build();
    let frame = compile(&graph, &caps).expect("valid graph");
    assert_eq!(frame.order.len(), 64);

    let mut group = c.benchmark_group("frame_graph_64_passes");
    group.bench_function("declare", |b| b.iter(|| black_box(build())));
    group.bench_function("compile_uncached", |b| {
        b.iter(|| black_box(compile(black_box(&graph), &caps).expect("valid")))
    });
    let mut cache = FrameGraphCache::new();
    let _ = cache.compile(&graph, &caps).expect("valid");
    // The per-frame path: a graph re-declared every frame hits the cache.
    let rebuilt = build();
    group.bench_function("compile_cached", |b| {
        b.iter(|| {
            black_box(
                cache
                    .compile(black_box(&rebuilt), &caps)
                    .expect("valid")
                    .native_passes
                    .len(),
            )
        })
    });
    let adreno = DeviceCaps::adreno(1 << 20);
    group.bench_function("compile_uncached_adreno_bins", |b| {
        b.iter(|| black_box(compile(black_box(&graph), &adreno).expect("valid")))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
