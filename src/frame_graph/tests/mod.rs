//! Unit and scenario tests of the compiler, one file per stage (see the
//! stage list in the module docs), plus the seeds' figures. This file holds
//! the helpers they share.

use super::*;

mod cache;
mod cull;
mod deps;
mod errors;
mod example;
mod flags_and_formats;
mod merge;
mod ops;
mod order;
mod seeds;

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
