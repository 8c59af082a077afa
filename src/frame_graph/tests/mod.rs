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
    Chain::deferred(view).samples(samples).build()
}

/// A G-buffer -> lighting -> tonemap chain, or a variant of it, declared in
/// one expression:
///
/// - `gbuffer` writes every G-buffer target (RGBA8, `WriteAll`) and the
///   depth attachment if there is one (D24S8, `ReadWrite`, cleared);
/// - `lighting` reads all of them as input attachments and writes the HDR
///   target, or the output when the chain has none;
/// - `tonemap` (only with an HDR target) reads it as an input attachment and
///   writes the output; with MSAA it writes an `ldr` target resolved into
///   the output.
///
/// Attachments are created in that order (G-buffer, `depth`, HDR, the
/// imported RGBA8 output; `ldr` last); all but the output get `samples`.
struct Chain {
    view: Extent,
    samples: u32,
    gbuffer: Vec<String>,
    depth: Option<ClearValue>,
    hdr: Option<(String, Format)>,
    output: String,
}

impl Chain {
    /// No G-buffer target, no depth, no HDR target; the output is `out`.
    fn new(view: Extent) -> Self {
        Chain {
            view,
            samples: 1,
            gbuffer: Vec::new(),
            depth: None,
            hdr: None,
            output: "out".into(),
        }
    }

    /// The module docs' frame: `albedo`, `normal`, `material`, a reverse-Z
    /// `depth`, an `Rg11b10Float` `hdr` and the `swapchain`.
    fn deferred(view: Extent) -> Self {
        Chain::new(view)
            .gbuffer(["albedo", "normal", "material"])
            .depth(ClearValue::DEPTH_REVERSE_Z)
            .hdr("hdr", Format::Rg11b10Float)
            .output("swapchain")
    }

    /// The G-buffer targets, in binding order.
    fn gbuffer<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.gbuffer = names.into_iter().map(Into::into).collect();
        self
    }

    /// `n` G-buffer targets named `gb0`, `gb1`, ...
    fn gbuffer_count(self, n: usize) -> Self {
        self.gbuffer((0..n).map(|i| format!("gb{i}")))
    }

    /// A `depth` attachment, cleared to `clear` by the G-buffer pass.
    fn depth(mut self, clear: ClearValue) -> Self {
        self.depth = Some(clear);
        self
    }

    /// The target lighting writes and tonemap reads.
    fn hdr(mut self, name: &str, format: Format) -> Self {
        self.hdr = Some((name.into(), format));
        self
    }

    /// The name of the imported output.
    fn output(mut self, name: &str) -> Self {
        self.output = name.into();
        self
    }

    /// MSAA samples of every attachment but the output.
    fn samples(mut self, samples: u32) -> Self {
        self.samples = samples;
        self
    }

    /// The graph with its attachments and all of its passes.
    fn build(self) -> FrameGraph {
        let mut c = self.declare();
        c.gbuffer_pass();
        c.lighting_pass();
        if c.hdr.is_some() {
            c.tonemap_pass();
        }
        c.g
    }

    /// The graph with the chain's attachments but no pass yet, for a test
    /// that adds some passes of its own.
    fn declare(self) -> ChainGraph {
        assert!(
            self.samples == 1 || self.hdr.is_some(),
            "an MSAA chain resolves in tonemap, so it needs an HDR target"
        );
        let mut g = FrameGraph::new(self.view);
        let ms = |f| AttachmentDesc::new(f).with_samples(self.samples);
        let gbuffer = self
            .gbuffer
            .iter()
            .map(|n| g.create_attachment(n, ms(Format::Rgba8Unorm)))
            .collect();
        let depth = self.depth.map(|clear| {
            let h = g.create_attachment("depth", ms(Format::Depth24Stencil8));
            (h, clear)
        });
        let hdr = self
            .hdr
            .as_ref()
            .map(|(n, f)| g.create_attachment(n, ms(*f)));
        let out = g.import_attachment(&self.output, rgba8(), ImportParams::output());
        ChainGraph {
            g,
            samples: self.samples,
            gbuffer,
            depth,
            hdr,
            out,
        }
    }
}

/// A [`Chain`]'s graph and handles, with its passes to add one by one.
struct ChainGraph {
    g: FrameGraph,
    samples: u32,
    gbuffer: Vec<AttachmentHandle>,
    /// The depth attachment and the value `gbuffer_pass` clears it to.
    depth: Option<(AttachmentHandle, ClearValue)>,
    hdr: Option<AttachmentHandle>,
    out: AttachmentHandle,
}

impl ChainGraph {
    /// `gbuffer`: writes the G-buffer targets and clears depth.
    fn gbuffer_pass(&mut self) {
        let mut p = self.g.add_raster_pass("gbuffer");
        for h in &mut self.gbuffer {
            p = p.color(h, Access::WriteAll, None);
        }
        if let Some((h, clear)) = &mut self.depth {
            p = p.depth(h, Access::ReadWrite, Some(*clear));
        }
        p.finish().unwrap();
    }

    /// `lighting`: reads the G-buffer and depth as input attachments and
    /// writes the HDR target (or the output).
    fn lighting_pass(&mut self) {
        let mut p = self.g.add_raster_pass("lighting");
        for h in &self.gbuffer {
            p = p.input(h);
        }
        if let Some((h, _)) = &self.depth {
            p = p.input(h);
        }
        let target = self.hdr.as_mut().unwrap_or(&mut self.out);
        p.color(target, Access::WriteAll, None).finish().unwrap();
    }

    /// `tonemap`: reads the HDR target as an input attachment and writes the
    /// output, through an MSAA `ldr` resolved into it when `samples > 1`.
    fn tonemap_pass(&mut self) {
        let hdr = self.hdr.as_ref().expect("tonemap reads the HDR target");
        if self.samples == 1 {
            self.g
                .add_raster_pass("tonemap")
                .input(hdr)
                .color(&mut self.out, Access::WriteAll, None)
                .finish()
                .unwrap();
        } else {
            let ldr_desc = rgba8().with_samples(self.samples);
            let mut ldr = self.g.create_attachment("ldr", ldr_desc);
            self.g
                .add_raster_pass("tonemap")
                .input(hdr)
                .color(&mut ldr, Access::WriteAll, None)
                .resolve(&ldr, &mut self.out)
                .finish()
                .unwrap();
        }
    }
}
