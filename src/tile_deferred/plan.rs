//! The frame a tile-deferred camera declares to the frame-graph compiler.
//!
//! Three raster passes: `gbuffer` writes albedo/occlusion, normal, material and the light
//! accumulation (emissive) plus depth; `lighting` reads them as input attachments (depth bound
//! read-only), samples Bevy's shadow maps, and adds every light into the light accumulation
//! (blending, so it reads it too); `tonemap` reads the light
//! and depth as input attachments and writes the camera's output. The compiler merges them into
//! one native render pass where the device allows it, and decides every load and store.
//!
//! Single-sample frames with nothing blended after the lighting have two passes: `lighting`
//! reads the light accumulation as an input attachment too and writes the tone-mapped output
//! itself ([`ViewFrameDesc::lighting_tonemaps`]). Transparent meshes add a `transparent` pass, and
//! gizmo frames a `depth_export` pass.
//!
//! The shadow maps are Bevy's passes, not the tile path's: the recorded plan leaves them out,
//! and the priced one ([`price_with_shadows`]) declares them before the tile passes, one stored
//! depth pass per map, so the frame's cost and its floor include them.

use super::error::{TileError, TileResult};
use crate::{
    frame_graph::{
        Access, AttachmentDesc, AttachmentHandle, ClearValue, Extent, Format, FrameGraph,
        GraphError, ImportParams, RasterPassBuilder, ShadowMaps, declare_shadow_maps,
    },
    tiers::PlanRequirements,
};

/// Names of the frame's passes and attachments (the backend finds subpasses by these).
pub(crate) mod names {
    pub const GBUFFER: &str = "gbuffer";
    pub const LIGHTING: &str = "lighting";
    pub const TONEMAP: &str = "tonemap";
    pub const TRANSPARENT: &str = "transparent";
    pub const ALBEDO_OCCLUSION: &str = "albedo_occlusion";
    pub const NORMAL: &str = "normal";
    pub const MATERIAL: &str = "material";
    pub const LIGHT: &str = "light";
    pub const DEPTH: &str = "depth";
    pub const OUTPUT: &str = "output";
    /// The multisampled colour the tonemap subpass writes and resolves into the output.
    pub const OUTPUT_SAMPLES: &str = "output_samples";
    /// The pass that copies the tile depth into Bevy's depth texture for the overlays drawn
    /// after the tile pass (gizmos).
    pub const DEPTH_EXPORT: &str = "depth_export";
    /// Bevy's `ViewDepthTexture` of the camera, imported.
    pub const VIEW_DEPTH: &str = "view_depth";
    /// bevy_ui's nodes and text, blended over the output as Bevy's UI pass blends them.
    pub const UI: &str = "ui";
}

/// What shapes a view's frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ViewFrameDesc {
    /// The camera's viewport size: the render area.
    pub extent: Extent,
    /// The output image's format.
    pub output_format: Format,
    /// The output's previous contents must survive (partial viewport, `ClearColorConfig::None`,
    /// or another camera drew into the target first).
    pub keep_output: bool,
    /// Light accumulation format: `Rg11b10Float` (32 bpp) where it can be blended.
    pub light_format: Format,
    /// Depth format.
    pub depth_format: Format,
    /// Samples per pixel of every subpass (1: no MSAA). With MSAA the tonemap subpass writes a
    /// transient multisampled colour that is resolved in-pass into the output.
    pub samples: u32,
    /// With MSAA: the depth-stencil format of Lauritzen's stencil split, where the device has
    /// one it can multisample and `sampleRateShading`. The lighting subpass then marks edge
    /// pixels in stencil (depth read-only, stencil written, depth also read as an input
    /// attachment), lights the other pixels once and edge pixels per sample. `None`: every
    /// lighting draw is issued once per sample index (no stencil, no sample-rate shading).
    /// Ignored without MSAA, and by the unmerged tier.
    pub msaa_depth_stencil: Option<Format>,
    /// The unmerged debug tier: the passes read what earlier passes wrote as textures (sampled),
    /// so the compiler keeps them in separate render passes and stores the G-buffer and light.
    pub unmerged: bool,
    /// Where the view's transparent meshes are blended this frame, if it draws any.
    pub transparent: TransparentPass,
    /// The frame ends with [`names::DEPTH_EXPORT`]: a subpass that reads the tile depth as an
    /// input attachment and writes it, every sample, into Bevy's depth texture of the camera
    /// (stored), so that Bevy's gizmos, drawn after the tile pass, are depth-tested against the
    /// scene as in `Core3d`. Only on frames that draw them, and only in the merged tiers.
    pub export_depth: bool,
    /// The frame ends with [`names::UI`]: bevy_ui's nodes and text blended over the tone-mapped
    /// output in the tile render pass (frames with UI items the tile path draws; merged tiers
    /// only), where Bevy would draw them into its main texture after tone mapping. With MSAA the
    /// UI pass blends into the multisampled colour and resolves it.
    pub ui: bool,
}

/// Where a view's transparent meshes are blended: as Bevy blends them for the camera.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) enum TransparentPass {
    /// No transparent meshes in view: three passes.
    #[default]
    None,
    /// An LDR camera: Bevy tone maps each transparent fragment in its shader and blends it over
    /// the tone-mapped main texture. A pass after tonemap blends into the output (with MSAA: into
    /// the multisampled colour, resolved after it).
    AfterTonemap,
    /// An HDR camera (`Hdr`): Bevy blends linear light into its floating-point main texture, clear
    /// colour included, and tone maps the result. A pass between lighting and tonemap blends into
    /// the light accumulation, which the G-buffer pass clears to `light_clear` (the linear clear
    /// colour's bits) so that background pixels blend over it; tonemap reads them from it.
    BeforeTonemap { light_clear: [u32; 3] },
}

impl TransparentPass {
    /// The frame has a transparent pass.
    pub fn is_some(self) -> bool {
        self != Self::None
    }
}

impl ViewFrameDesc {
    /// A view of `extent` writing `output_format` at `samples`, with the tile path's light and
    /// depth formats, nothing kept from the output, no stencil split and merged passes.
    pub fn new(extent: Extent, output_format: Format, samples: u32) -> Self {
        Self {
            extent,
            output_format,
            keep_output: false,
            light_format: Format::Rg11b10Float,
            depth_format: Format::Depth32Float,
            samples,
            msaa_depth_stencil: None,
            unmerged: false,
            transparent: TransparentPass::None,
            export_depth: false,
            ui: false,
        }
    }

    /// The lighting subpass splits edge and interior pixels with the stencil.
    pub fn stencil_split(&self) -> bool {
        self.samples > 1 && self.msaa_depth_stencil.is_some() && !self.unmerged
    }

    /// The lighting subpass writes the tone-mapped output itself, and the frame has no tonemap
    /// subpass: merged, with nothing blended into the light or the output after the lighting
    /// (no transparent pass). One full-screen pass fewer, and the lighting's blend into the
    /// light attachment becomes a read of it. With MSAA only under the stencil split (its edge
    /// draw tone maps each sample and the resolve averages them) and where the output stores
    /// linear light (an sRGB or float format): a UNORM output encoded in the shader would be
    /// averaged encoded, where the tonemap subpass averages before encoding. Transparent meshes
    /// keep the tonemap subpass (an HDR camera's blend into the light before it, an LDR
    /// camera's over the tone-mapped colour), and so does the unmerged tier (a pass per render
    /// pass) and MSAA's per-sample-index fallback.
    pub fn lighting_tonemaps(&self) -> bool {
        let msaa_ok = self.samples == 1
            || (self.stencil_split()
                && !crate::vulkan::conv::needs_shader_srgb_encode(self.output_format));
        msaa_ok && !self.unmerged && self.transparent == TransparentPass::None
    }

    /// The depth attachment's format.
    pub fn depth_attachment_format(&self) -> Format {
        match self.msaa_depth_stencil {
            Some(format) if self.stencil_split() => format,
            _ => self.depth_format,
        }
    }
}

/// Where a compiled tile frame has its transparent pass: before tonemap (an HDR camera's,
/// blending into the light, cleared to the clear colour) or after it.
fn transparent_pass_of(frame: &crate::frame_graph::CompiledFrame) -> TransparentPass {
    use crate::frame_graph::{ClearValue, LoadOp};
    let Some(transparent) = locate_pass(frame, names::TRANSPARENT) else {
        return TransparentPass::None;
    };
    // (native pass, subpass): the unmerged tier has one subpass per native pass.
    if locate_pass(frame, names::TONEMAP).is_some_and(|tonemap| tonemap > transparent) {
        let light_clear = frame
            .native_passes
            .iter()
            .find_map(|n| n.attachment_named(names::LIGHT))
            .and_then(|light| match light.load {
                LoadOp::Clear(ClearValue::Color([r, g, b, _])) => Some([r, g, b]),
                _ => None,
            })
            .unwrap_or_default();
        TransparentPass::BeforeTonemap {
            light_clear: light_clear.map(f32::to_bits),
        }
    } else {
        TransparentPass::AfterTonemap
    }
}

/// The view description a compiled tile frame was declared from (the inverse of
/// `plan::declare`), so that its counterfactuals describe exactly the same view.
pub(crate) fn view_desc_of(frame: &crate::frame_graph::CompiledFrame) -> Option<ViewFrameDesc> {
    let output = frame.attachment_named(names::OUTPUT)?;
    let light = frame.attachment_named(names::LIGHT)?;
    let depth = frame.attachment_named(names::DEPTH)?;
    // From the import, not the load op: with MSAA a kept output is not loaded.
    let keep_output = output.keeps_contents;
    let stencil_split = depth.samples > 1 && depth.format.has_stencil();
    Some(ViewFrameDesc {
        extent: output.extent,
        output_format: output.format,
        keep_output,
        light_format: light.format,
        depth_format: if stencil_split {
            Format::Depth32Float
        } else {
            depth.format
        },
        samples: depth.samples,
        msaa_depth_stencil: stencil_split.then_some(depth.format),
        unmerged: samples_attachments(frame),
        transparent: transparent_pass_of(frame),
        export_depth: locate_pass(frame, names::DEPTH_EXPORT).is_some(),
        ui: locate_pass(frame, names::UI).is_some(),
    })
}

/// The poison debug view ([`TileDebugView::UndefinedPoison`](super::camera::TileDebugView)):
/// every attachment the plan loads `DONT_CARE` (transient attachments at the start of their
/// render pass, images overwritten or first used there) is cleared to a marker instead, its
/// reason kept under [`LoadReason::Poisoned`](crate::frame_graph::LoadReason). A correct frame
/// writes every pixel it reads, so the marker never reaches the output. The traffic does not
/// change (a clear loads nothing), and the render passes differ only in their load ops.
pub(crate) fn poison_undefined(frame: &mut crate::frame_graph::CompiledFrame) {
    use super::camera::{POISON_COLOR, POISON_DEPTH_STENCIL};
    use crate::frame_graph::{ClearValue, LoadOp, LoadReason};
    for attachment in frame
        .native_passes
        .iter_mut()
        .flat_map(|native| native.attachments.iter_mut())
        .filter(|attachment| attachment.load == LoadOp::DontCare)
    {
        let marker = if attachment.format.is_depth() {
            let (depth, stencil) = POISON_DEPTH_STENCIL;
            ClearValue::DepthStencil { depth, stencil }
        } else if attachment.format.is_uint() {
            ClearValue::ColorUint([POISON_DEPTH_STENCIL.1; 4])
        } else {
            ClearValue::Color(POISON_COLOR)
        };
        attachment.load = LoadOp::Clear(marker);
        attachment.load_reason = LoadReason::Poisoned {
            undefined: Box::new(attachment.load_reason.clone()),
        };
    }
}

/// Whether a compiled frame is the unmerged tier's: its passes read earlier passes' attachments
/// as textures (the merged tiers read them as input attachments, never as textures).
pub(crate) fn samples_attachments(compiled: &crate::frame_graph::CompiledFrame) -> bool {
    compiled
        .native_passes
        .iter()
        .flat_map(|native| &native.subpasses)
        .any(|subpass| !subpass.sampled.is_empty())
}

/// Where a logical pass of the frame runs: (native pass index, subpass index).
pub(crate) fn locate_pass(
    compiled: &crate::frame_graph::CompiledFrame,
    name: &str,
) -> Option<(usize, usize)> {
    compiled
        .native_passes
        .iter()
        .enumerate()
        .find_map(|(n, native)| {
            let subpass = native.subpasses.iter().position(|s| s.name == name)?;
            Some((n, subpass))
        })
}

/// The G-buffer formats (see `shaders/common.glsl`).
pub(crate) const ALBEDO_FORMAT: Format = Format::Rgba8Srgb;
pub(crate) const NORMAL_FORMAT: Format = Format::Rg16Float;
pub(crate) const MATERIAL_FORMAT: Format = Format::Rgba8Unorm;

/// How a pass reads what an earlier pass wrote at the same pixel: on tile as an input
/// attachment, or (unmerged) from memory as a texture.
fn read<'g>(
    pass: crate::frame_graph::RasterPassBuilder<'g>,
    h: &crate::frame_graph::AttachmentHandle,
    unmerged: bool,
) -> crate::frame_graph::RasterPassBuilder<'g> {
    if unmerged {
        pass.sample(h)
    } else {
        pass.input(h)
    }
}

/// Declares the view's frame: the passes the tile path records.
pub(crate) fn declare(desc: &ViewFrameDesc) -> Result<FrameGraph, GraphError> {
    declare_with_shadows(desc, &ShadowMaps::NONE)
}

/// Declares the view's frame as it runs on the GPU: Bevy's shadow passes (`maps`), then the
/// tile passes, the lighting subpass sampling every map. The tile path records only the tile
/// passes; this frame is what the frame costs ([`price_with_shadows`]).
pub(crate) fn declare_with_shadows(
    desc: &ViewFrameDesc,
    maps: &ShadowMaps,
) -> Result<FrameGraph, GraphError> {
    let mut graph = FrameGraph::new(desc.extent);
    let shadow_maps = declare_shadow_maps(&mut graph, maps)?;
    let mut tile = TileAttachments::create(&mut graph, desc);
    declare_gbuffer(&mut graph, desc, &mut tile)?;
    // With MSAA and UI, the multisampled colour the UI resolves.
    let unresolved = if desc.lighting_tonemaps() {
        // Two passes: the lighting writes the tone-mapped output.
        declare_lighting_into_output(&mut graph, desc, &mut tile, &shadow_maps)?
    } else {
        declare_lighting(&mut graph, desc, &mut tile, &shadow_maps)?;
        declare_tonemap_and_transparent(&mut graph, desc, &mut tile)?
    };
    declare_depth_export(&mut graph, desc, &tile.depth)?;
    declare_ui(&mut graph, desc, &mut tile, unresolved)?;
    Ok(graph)
}

/// The tile frame's attachments: the G-buffer, the light, the depth and the imported output.
struct TileAttachments {
    albedo: AttachmentHandle,
    normal: AttachmentHandle,
    material: AttachmentHandle,
    light: AttachmentHandle,
    depth: AttachmentHandle,
    output: AttachmentHandle,
}

impl TileAttachments {
    fn create(graph: &mut FrameGraph, desc: &ViewFrameDesc) -> Self {
        use names::*;
        let tile = |format| AttachmentDesc::new(format).with_samples(desc.samples);
        Self {
            albedo: graph.create_attachment(ALBEDO_OCCLUSION, tile(ALBEDO_FORMAT)),
            normal: graph.create_attachment(NORMAL, tile(NORMAL_FORMAT)),
            material: graph.create_attachment(MATERIAL, tile(MATERIAL_FORMAT)),
            light: graph.create_attachment(LIGHT, tile(desc.light_format)),
            depth: graph.create_attachment(DEPTH, tile(desc.depth_attachment_format())),
            output: graph.import_attachment(
                OUTPUT,
                AttachmentDesc::new(desc.output_format),
                ImportParams {
                    contents_needed: desc.keep_output,
                    needed_after_frame: true,
                    clear_on_first_use: false,
                    discard_on_last_use: false,
                },
            ),
        }
    }
}

/// The multisampled colour the frame is tone mapped into before its in-pass resolve.
fn output_samples(graph: &mut FrameGraph, desc: &ViewFrameDesc) -> AttachmentHandle {
    graph.create_attachment(
        names::OUTPUT_SAMPLES,
        AttachmentDesc::new(desc.output_format).with_samples(desc.samples),
    )
}

/// The single-sample output is written whole unless it keeps what it held.
fn output_access(desc: &ViewFrameDesc) -> Access {
    if desc.keep_output {
        Access::Write
    } else {
        Access::WriteAll
    }
}

/// The G-buffer pass. Background pixels keep undefined G-buffer contents: lighting and tonemap
/// skip pixels whose depth is the cleared far plane, so nothing needs clearing but depth.
/// Before an HDR camera's transparent pass, background pixels hold the clear colour.
fn declare_gbuffer(
    graph: &mut FrameGraph,
    desc: &ViewFrameDesc,
    tile: &mut TileAttachments,
) -> Result<(), GraphError> {
    let light_clear = match desc.transparent {
        TransparentPass::BeforeTonemap { light_clear } => {
            let [r, g, b] = light_clear.map(f32::from_bits);
            Some(ClearValue::Color([r, g, b, 0.0]))
        }
        _ => None,
    };
    graph
        .add_raster_pass(names::GBUFFER)
        .color(&mut tile.albedo, Access::Write, None)
        .color(&mut tile.normal, Access::Write, None)
        .color(&mut tile.material, Access::Write, None)
        .color(&mut tile.light, Access::Write, light_clear)
        .depth(
            &mut tile.depth,
            Access::ReadWrite,
            Some(ClearValue::DepthStencil {
                depth: 0.0,
                stencil: 0,
            }),
        )
        .finish()?;
    Ok(())
}

/// The lighting pass with its reads: the G-buffer (input attachments, or textures unmerged)
/// and every shadow map.
fn lighting_pass<'g>(
    graph: &'g mut FrameGraph,
    desc: &ViewFrameDesc,
    tile: &TileAttachments,
    shadow_maps: &[AttachmentHandle],
) -> RasterPassBuilder<'g> {
    let mut lighting = graph.add_raster_pass(names::LIGHTING);
    for h in [&tile.albedo, &tile.normal, &tile.material, &tile.depth] {
        lighting = read(lighting, h, desc.unmerged);
    }
    for map in shadow_maps {
        lighting = lighting.sample(map);
    }
    lighting
}

/// The lighting that tone maps: the light's emissive (input attachment 4: lighting.glsl) plus
/// the lights, tone mapped into the output (with MSAA: into a multisampled colour resolved
/// in-pass, by the UI pass where there is one, which it returns): the frame's only store.
fn declare_lighting_into_output(
    graph: &mut FrameGraph,
    desc: &ViewFrameDesc,
    tile: &mut TileAttachments,
    shadow_maps: &[AttachmentHandle],
) -> Result<Option<AttachmentHandle>, GraphError> {
    let mut samples = (desc.samples > 1).then(|| output_samples(graph, desc));
    let lighting = lighting_pass(graph, desc, tile, shadow_maps).input(&tile.light);
    if let Some(samples) = samples.as_mut() {
        let lighting = lighting
            .color(samples, Access::WriteAll, None)
            .depth_read_only_stencil_write(&mut tile.depth);
        if desc.ui {
            lighting.finish()?;
        } else {
            lighting.resolve(samples, &mut tile.output).finish()?;
        }
    } else {
        lighting
            .color(&mut tile.output, output_access(desc), None)
            .depth_read_only(&tile.depth)
            .finish()?;
    }
    Ok(samples.filter(|_| desc.ui))
}

/// The tonemap pass with its reads: the light and depth, and the G-buffer material for its
/// no-fog bit (input attachment indices 0, 1, 2 in this order: tonemap.glsl).
fn tonemap_pass<'g>(
    graph: &'g mut FrameGraph,
    desc: &ViewFrameDesc,
    tile: &TileAttachments,
) -> RasterPassBuilder<'g> {
    [&tile.light, &tile.depth, &tile.material]
        .into_iter()
        .fold(graph.add_raster_pass(names::TONEMAP), |pass, h| {
            read(pass, h, desc.unmerged)
        })
}

/// The lighting that adds into the light, which the tonemap reads.
fn declare_lighting(
    graph: &mut FrameGraph,
    desc: &ViewFrameDesc,
    tile: &mut TileAttachments,
    shadow_maps: &[AttachmentHandle],
) -> Result<(), GraphError> {
    let lighting = lighting_pass(graph, desc, tile, shadow_maps).color(
        &mut tile.light,
        Access::ReadWrite,
        None,
    );
    if desc.stencil_split() {
        // The first draw marks edge pixels in stencil; the lighting draws test it.
        lighting
            .depth_read_only_stencil_write(&mut tile.depth)
            .finish()?;
    } else {
        // The G-buffer depth stays bound read-only, as the light volumes needed it for their
        // depth test. The clustered lighting draw does not test depth; dropping the binding
        // changes the plan (the unmerged tier's lighting pass loads depth for it) and is left
        // for a change of its own.
        lighting.depth_read_only(&tile.depth).finish()?;
    }
    Ok(())
}

/// The tonemap, and the transparent pass where the frame has one. Transparent meshes are
/// depth-tested against the G-buffer depth, without writing it. An HDR camera's are blended
/// into the light before tonemap; an LDR camera's after it, over the tone-mapped output as Bevy
/// blends them over its LDR main texture (each fragment lit, fogged and tone mapped in the
/// shader: `TONEMAP_IN_SHADER`). With MSAA and UI, the UI pass resolves the multisampled colour
/// (returned) instead of the last of these.
fn declare_tonemap_and_transparent(
    graph: &mut FrameGraph,
    desc: &ViewFrameDesc,
    tile: &mut TileAttachments,
) -> Result<Option<AttachmentHandle>, GraphError> {
    use names::TRANSPARENT;
    if let TransparentPass::BeforeTonemap { .. } = desc.transparent {
        graph
            .add_raster_pass(TRANSPARENT)
            .color(&mut tile.light, Access::ReadWrite, None)
            .depth_read_only(&tile.depth)
            .finish()?;
    }
    let after_tonemap = desc.transparent == TransparentPass::AfterTonemap;
    if desc.samples > 1 {
        // Tonemapped per sample where samples differ, then resolved in-pass: only the resolved
        // image is stored.
        let mut samples = output_samples(graph, desc);
        let tonemap = tonemap_pass(graph, desc, tile).color(&mut samples, Access::WriteAll, None);
        let last = if after_tonemap {
            tonemap.finish()?;
            graph
                .add_raster_pass(TRANSPARENT)
                .color(&mut samples, Access::ReadWrite, None)
                .depth_read_only(&tile.depth)
        } else {
            tonemap
        };
        if desc.ui {
            last.finish()?;
            return Ok(Some(samples));
        }
        last.resolve(&samples, &mut tile.output).finish()?;
    } else {
        tonemap_pass(graph, desc, tile)
            .color(&mut tile.output, output_access(desc), None)
            .finish()?;
        if after_tonemap {
            graph
                .add_raster_pass(TRANSPARENT)
                .color(&mut tile.output, Access::ReadWrite, None)
                .depth_read_only(&tile.depth)
                .finish()?;
        }
    }
    Ok(None)
}

/// The depth export pass of gizmo frames ([`ViewFrameDesc::export_depth`]), last.
fn declare_depth_export(
    graph: &mut FrameGraph,
    desc: &ViewFrameDesc,
    depth: &crate::frame_graph::AttachmentHandle,
) -> Result<(), GraphError> {
    if !desc.export_depth {
        return Ok(());
    }
    // Bevy's depth texture has the camera's samples and `Depth32Float`; every sample is
    // written (gl_FragDepth per sample). The compiler schedules the pass where it fits
    // after the G-buffer; the recording follows its order.
    let mut view_depth = graph.import_attachment(
        names::VIEW_DEPTH,
        AttachmentDesc::new(Format::Depth32Float).with_samples(desc.samples),
        ImportParams {
            contents_needed: false,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        },
    );
    read(
        graph.add_raster_pass(names::DEPTH_EXPORT),
        depth,
        desc.unmerged,
    )
    .depth(&mut view_depth, Access::WriteAll, None)
    .finish()?;
    Ok(())
}

/// The UI pass of frames with in-pass UI ([`ViewFrameDesc::ui`]), last: it blends into the
/// output the passes before it wrote, reading nothing else of the tile (its images are
/// textures Bevy owns), so it merges into the one render pass and adds no store. With MSAA it
/// blends into the multisampled colour (`unresolved`) and resolves it: Bevy draws UI at 1x over
/// the resolved image, which is the same picture wherever a quad covers whole pixels.
fn declare_ui(
    graph: &mut FrameGraph,
    desc: &ViewFrameDesc,
    tile: &mut TileAttachments,
    unresolved: Option<AttachmentHandle>,
) -> Result<(), GraphError> {
    if !desc.ui {
        return Ok(());
    }
    let ui = graph.add_raster_pass(names::UI);
    match unresolved {
        Some(mut samples) => ui
            .color(&mut samples, Access::ReadWrite, None)
            .resolve(&samples, &mut tile.output)
            .finish()?,
        None => ui
            .color(&mut tile.output, Access::ReadWrite, None)
            .finish()?,
    };
    Ok(())
}

/// The sample count a view renders with, and why it differs from the request.
///
/// Highest count not above `requested` that the device supports for colour and depth
/// attachments; 1 when the camera draws over what its output holds inside its viewport
/// (`ClearColorConfig::None`: the multisampled colour would have to be loaded from the
/// single-sample output). An output kept only outside the render area (a viewport, another
/// camera on the target) does not lower it: the resolve writes only the render area.
pub(crate) fn sample_count(
    requested: u32,
    supported: crate::device::SampleCounts,
    draws_over_output: bool,
) -> (u32, Option<String>) {
    if requested <= 1 {
        return (1, None);
    }
    if draws_over_output {
        return (
            1,
            Some(format!(
                "{requested}x MSAA on a camera that draws over its output \
                 (ClearColorConfig::None) is not supported on the tile path; rendering without \
                 MSAA"
            )),
        );
    }
    let samples = supported.highest_at_most(requested);
    let reason = (samples != requested).then(|| {
        format!(
            "the device supports {supported} samples for colour and depth attachments; \
             {requested}x MSAA lowered to {samples}x"
        )
    });
    (samples, reason)
}

/// Stage 2's result: the compiled frame the rest of the frame is built from.
pub(crate) struct PlannedFrame {
    pub compiled: crate::frame_graph::CompiledFrame,
    /// The description it was compiled from, after the tile budget lowered its samples.
    pub desc: ViewFrameDesc,
    /// The planned output attachment.
    pub output: crate::frame_graph::ResourceId,
    /// Why the sample count was lowered below the camera's request, if it was.
    pub msaa_note: Option<String>,
}

/// Stage 2, the plan: declare the view's frame, let the compiler decide (cached while
/// unchanged), lower MSAA until the frame fits tile memory, and check the plan has the shape
/// the recording knows. The unmerged tier compiles with merging off, so every break reads
/// "merging disabled".
pub(crate) fn plan_frame(
    desc: &ViewFrameDesc,
    caps: &crate::frame_graph::DeviceCaps,
    cache: &mut crate::frame_graph::FrameGraphCache,
) -> TileResult<PlannedFrame> {
    let caps = caps.with_merging(!desc.unmerged);
    let graph = declare(desc).map_err(|error| TileError::Graph {
        step: "declaring the frame",
        error,
    })?;
    let compiled = cache
        .compile(&graph, &caps)
        .map_err(|error| TileError::Graph {
            step: "compiling the frame",
            error,
        })?
        .clone();
    let (compiled, desc, msaa_note) = fit_tile_budget(compiled, *desc, &caps)?;
    check_shape(&compiled, &desc)?;
    let output = compiled
        .attachment_named(names::OUTPUT)
        .map(|a| a.id)
        .ok_or(TileError::Missing {
            step: "finding the planned output",
        })?;
    Ok(PlannedFrame {
        compiled,
        desc,
        output,
        msaa_note,
    })
}

/// The view's frame with Bevy's shadow passes (`maps`), compiled for its price: the tile passes
/// plan as in [`plan_frame`] (sampling a shadow map does not stop a merge), plus one stored
/// depth pass per map.
pub(crate) fn price_with_shadows(
    desc: &ViewFrameDesc,
    caps: &crate::frame_graph::DeviceCaps,
    maps: &ShadowMaps,
    cache: &mut crate::frame_graph::FrameGraphCache,
) -> TileResult<crate::frame_graph::CompiledFrame> {
    let caps = caps.with_merging(!desc.unmerged);
    let graph = declare_with_shadows(desc, maps).map_err(|error| TileError::Graph {
        step: "declaring the frame with its shadow maps",
        error,
    })?;
    cache
        .compile(&graph, &caps)
        .map_err(|error| TileError::Graph {
            step: "compiling the frame with its shadow maps",
            error,
        })
        .cloned()
}

/// The recording knows two shapes: one render pass with a subpass per logical pass (merged), or
/// one render pass per logical pass (unmerged). The passes are the G-buffer and the lighting,
/// then the tonemap unless the lighting tone maps itself, the transparent pass where there are
/// transparent meshes, the depth export where something is drawn after the tile pass, and the
/// UI where bevy_ui is drawn in it: two to six.
fn check_shape(
    compiled: &crate::frame_graph::CompiledFrame,
    desc: &ViewFrameDesc,
) -> TileResult<()> {
    let passes = 3 - usize::from(desc.lighting_tonemaps())
        + usize::from(desc.transparent.is_some())
        + usize::from(desc.export_depth)
        + usize::from(desc.ui);
    let expected = if desc.unmerged { passes } else { 1 };
    let subpasses: usize = compiled
        .native_passes
        .iter()
        .map(|n| n.subpasses.len())
        .sum();
    // The recording starts with the G-buffer pass (`record::Step`).
    let gbuffer_first = compiled
        .native_passes
        .first()
        .and_then(|native| native.subpasses.first())
        .is_some_and(|subpass| subpass.name == names::GBUFFER);
    if compiled.native_passes.len() != expected || subpasses != passes || !gbuffer_first {
        return Err(TileError::UnexpectedPlan {
            render_passes: compiled.native_passes.len(),
            expected,
            plan: compiled.describe(),
        });
    }
    Ok(())
}

/// Lowers the sample count while the multisampled frame does not fit the device's tile memory
/// (a Mali spill or Adreno GMEM too small), recompiling at each step.
fn fit_tile_budget(
    mut compiled: crate::frame_graph::CompiledFrame,
    mut desc: ViewFrameDesc,
    caps: &crate::frame_graph::DeviceCaps,
) -> TileResult<(
    crate::frame_graph::CompiledFrame,
    ViewFrameDesc,
    Option<String>,
)> {
    use crate::frame_graph::{BreakReason, CompiledFrame, TileVerdict};
    let requested = desc.samples;
    // The compiler refuses to merge passes whose tile footprint exceeds the budget; a merged
    // pass can still spill on its own.
    let spills = |frame: &CompiledFrame| {
        frame
            .breaks
            .iter()
            .any(|b| matches!(b.reason, BreakReason::TileBudgetExceeded { .. }))
            || frame.native_passes.iter().any(|n| {
                matches!(
                    n.footprint.verdict,
                    TileVerdict::Spills { .. } | TileVerdict::GmemTooSmall { .. }
                )
            })
    };
    while desc.samples > 1 && spills(&compiled) {
        desc.samples /= 2;
        let graph = declare(&desc).map_err(|error| TileError::Graph {
            step: "declaring the frame",
            error,
        })?;
        compiled = crate::frame_graph::compile(&graph, caps).map_err(|error| TileError::Graph {
            step: "compiling the frame",
            error,
        })?;
    }
    let note = (desc.samples != requested).then(|| {
        format!(
            "the {requested}x multisampled G-buffer does not fit this GPU's tile memory; {}x does",
            desc.samples
        )
    });
    Ok((compiled, desc, note))
}

/// What the tile path's frame asks of one subpass, counted from the passes [`declare`] declares:
/// the tier rules check the device's limits against it.
///
/// Counted on the merged single-sample frame. The other merged frames (MSAA, the stencil split,
/// a kept output) ask no more of a subpass (tested); the unmerged tier samples instead of reading
/// input attachments, but the rules guard every tile tier alike.
pub(crate) fn requirements() -> PlanRequirements {
    let desc = ViewFrameDesc::new(Extent::new(64, 64), Format::Bgra8Srgb, 1);
    let graph = declare(&desc).expect("the tile frame declares without errors (tested)");
    let frame = crate::frame_graph::compile(&graph, &crate::frame_graph::DeviceCaps::desktop())
        .expect("the tile frame compiles (tested)");
    PlanRequirements {
        tile_color_bits: frame
            .native_passes
            .iter()
            .map(|native| native.footprint.color_bytes_per_pixel * 8)
            .max()
            .unwrap_or(0),
        ..subpass_requirements(&frame)
    }
}

/// The most colour and input attachments one subpass of `frame` uses, with the subpass.
fn subpass_requirements(frame: &crate::frame_graph::CompiledFrame) -> PlanRequirements {
    let subpasses = || {
        frame.native_passes.iter().flat_map(|native| {
            native
                .subpasses
                .iter()
                .map(move |subpass| (native, subpass))
        })
    };
    let (_, color) = subpasses()
        .max_by_key(|(_, subpass)| (subpass.color.len(), subpass.depth.is_some()))
        .expect("the tile frame has subpasses");
    let (native, input) = subpasses()
        .max_by_key(|(_, subpass)| subpass.input.len())
        .expect("the tile frame has subpasses");
    PlanRequirements {
        color_pass: color.name.clone(),
        color_attachments: color.color.len() as u32,
        color_pass_depth: color.depth.is_some(),
        input_pass: input.name.clone(),
        input_attachments: input
            .input
            .iter()
            .map(|&attachment| native.attachments[attachment].name.clone())
            .collect(),
        // The render pass's, not a subpass's: `requirements` fills it in.
        tile_color_bits: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        device::SampleCounts,
        frame_graph::{DeviceCaps, LoadOp, StoreOp, TileVerdict, compile},
    };

    fn desc(samples: u32) -> ViewFrameDesc {
        ViewFrameDesc::new(Extent::new(1920, 1080), Format::Bgra8Srgb, samples)
    }

    fn fitted(samples: u32, caps: DeviceCaps) -> (u32, usize, Option<String>) {
        let compiled = compile(&declare(&desc(samples)).unwrap(), &caps).unwrap();
        let (compiled, desc, note) = fit_tile_budget(compiled, desc(samples), &caps).unwrap();
        (desc.samples, compiled.render_pass_count(), note)
    }

    #[test]
    fn msaa_is_lowered_until_the_g_buffer_fits_tile_memory() {
        // No tile budget: 4x stays 4x in one render pass.
        assert_eq!(fitted(4, DeviceCaps::desktop()), (4, 1, None));
        // Mali Valhall (256 bits per pixel): 2x and 4x of a 128-bit G-buffer do not fit.
        let (samples, passes, note) = fitted(4, DeviceCaps::mali_valhall());
        assert_eq!((samples, passes), (1, 1));
        assert!(note.unwrap().contains("does not fit"));
        // Adreno with 3 MiB of GMEM bins the 4x G-buffer: smaller bins, still one pass.
        let (samples, passes, _) = fitted(4, DeviceCaps::adreno(3 << 20));
        assert_eq!(passes, 1);
        assert!(samples >= 1);
    }

    /// Transparent meshes add a fourth subpass after tonemap (a resolve moves to it with MSAA):
    /// still one render pass, still only the output stored; unmerged, a fourth render pass.
    #[test]
    fn transparent_subpass_stays_in_the_one_render_pass() {
        for (samples, caps) in [
            (1, DeviceCaps::mali_valhall()),
            (1, DeviceCaps::desktop()),
            (4, DeviceCaps::desktop()),
        ] {
            let transparent = ViewFrameDesc {
                transparent: TransparentPass::AfterTonemap,
                ..desc(samples)
            };
            let frame = compile(&declare(&transparent).unwrap(), &caps).unwrap();
            assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
            let native = &frame.native_passes[0];
            let names: Vec<&str> = native.subpasses.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(
                names,
                [
                    names::GBUFFER,
                    names::LIGHTING,
                    names::TONEMAP,
                    names::TRANSPARENT
                ]
            );
            for attachment in &native.attachments {
                let stored = attachment.store == StoreOp::Store;
                assert_eq!(
                    stored,
                    attachment.name == names::OUTPUT,
                    "{}",
                    frame.describe()
                );
            }
            assert_eq!(frame.cost.total.stored, 1920 * 1080 * 4);
            assert_eq!(frame.cost.total.loaded, 0);
            check_shape(&frame, &transparent).unwrap();
            // The same frame without the transparent pass is a different shape.
            assert!(check_shape(&frame, &desc(samples)).is_err());
        }
        // An HDR camera's transparent pass comes before tonemap, blending into the light, which
        // the G-buffer pass clears to the clear colour: still one pass, only the output stored.
        for samples in [1, 4] {
            let hdr = ViewFrameDesc {
                transparent: TransparentPass::BeforeTonemap {
                    light_clear: [0.25_f32, 0.5, 1.0].map(f32::to_bits),
                },
                ..desc(samples)
            };
            let frame = compile(&declare(&hdr).unwrap(), &DeviceCaps::desktop()).unwrap();
            assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
            let native = &frame.native_passes[0];
            let names: Vec<&str> = native.subpasses.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(
                names,
                [
                    names::GBUFFER,
                    names::LIGHTING,
                    names::TRANSPARENT,
                    names::TONEMAP
                ]
            );
            let light = native.attachment_named(names::LIGHT).unwrap();
            assert_eq!(
                light.load,
                LoadOp::Clear(ClearValue::Color([0.25, 0.5, 1.0, 0.0]))
            );
            assert_eq!(frame.cost.total.stored, 1920 * 1080 * 4);
            check_shape(&frame, &hdr).unwrap();
        }
        let unmerged = ViewFrameDesc {
            transparent: TransparentPass::AfterTonemap,
            unmerged: true,
            ..desc(1)
        };
        let frame = compile(
            &declare(&unmerged).unwrap(),
            &DeviceCaps::desktop().with_merging(false),
        )
        .unwrap();
        assert_eq!(frame.render_pass_count(), 4, "{}", frame.describe());
        check_shape(&frame, &unmerged).unwrap();
    }

    #[test]
    fn the_ui_pass_is_a_last_subpass_that_adds_no_traffic() {
        // Two passes (the lighting tone maps), three, and with an LDR camera's transparent pass
        // blending into the output before the UI; then the same with MSAA, where the UI pass
        // takes the resolve of the multisampled colour from the pass before it.
        let split = ViewFrameDesc {
            msaa_depth_stencil: Some(Format::Depth32FloatStencil8),
            ..desc(4)
        };
        assert!(split.lighting_tonemaps());
        let shapes = [
            split,
            desc(4),
            ViewFrameDesc {
                transparent: TransparentPass::AfterTonemap,
                ..desc(4)
            },
            desc(1),
            ViewFrameDesc {
                transparent: TransparentPass::BeforeTonemap {
                    light_clear: [0; 3],
                },
                ..desc(1)
            },
            ViewFrameDesc {
                transparent: TransparentPass::AfterTonemap,
                ..desc(1)
            },
        ];
        for without_ui in shapes {
            let with_ui = ViewFrameDesc {
                ui: true,
                ..without_ui
            };
            let caps = DeviceCaps::desktop();
            let frame = compile(&declare(&with_ui).unwrap(), &caps).unwrap();
            let plain = compile(&declare(&without_ui).unwrap(), &caps).unwrap();
            check_shape(&frame, &with_ui).unwrap();
            assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
            let native = &frame.native_passes[0];
            let last = native.subpasses.last().unwrap();
            assert_eq!(last.name, names::UI, "{}", frame.describe());
            let index = |name| native.attachments.iter().position(|a| a.name == name);
            let output = native.attachment_named(names::OUTPUT).unwrap();
            assert!(last.input.is_empty() && last.depth.is_none());
            assert_eq!(output.store, StoreOp::Store);
            if with_ui.samples > 1 {
                // The UI blends into the samples and resolves them; nothing before it does.
                assert_eq!(last.color, [index(names::OUTPUT_SAMPLES).unwrap()]);
                assert_eq!(last.resolve, [index(names::OUTPUT)]);
                let resolving = native.subpasses.iter().filter(|s| !s.resolve.is_empty());
                assert_eq!(resolving.count(), 1, "{}", frame.describe());
            } else {
                assert_eq!(last.color, [index(names::OUTPUT).unwrap()]);
            }
            assert_eq!(
                frame.cost.bytes(),
                plain.cost.bytes(),
                "{}",
                frame.describe()
            );
            assert_eq!(
                native.subpasses.len(),
                plain.native_passes[0].subpasses.len() + 1
            );
        }
    }

    #[test]
    fn depth_export_is_a_last_subpass_storing_bevys_depth_texture() {
        // Gizmo frames: the tile depth is written into Bevy's depth texture by a last subpass
        // of the same render pass, on a device that merges a new depth attachment.
        let imr = DeviceCaps::desktop().with_depth_change_merges(true);
        for (samples, transparent) in [
            (1, TransparentPass::None),
            (1, TransparentPass::AfterTonemap),
            (4, TransparentPass::None),
            (4, TransparentPass::AfterTonemap),
        ] {
            let export = ViewFrameDesc {
                export_depth: true,
                transparent,
                msaa_depth_stencil: (samples > 1).then_some(Format::Depth32FloatStencil8),
                ..desc(samples)
            };
            let frame = compile(&declare(&export).unwrap(), &imr).unwrap();
            assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
            check_shape(&frame, &export).unwrap();
            let tonemaps = export.lighting_tonemaps();
            let native = &frame.native_passes[0];
            // Wherever the compiler schedules it after the G-buffer (it reads only the depth).
            let export = native
                .subpasses
                .iter()
                .position(|s| s.name == names::DEPTH_EXPORT)
                .unwrap();
            assert!(export > 0, "{}", frame.describe());
            let view_depth = native.attachment_named(names::VIEW_DEPTH).unwrap();
            assert_eq!(
                (view_depth.load, view_depth.store),
                (LoadOp::DontCare, StoreOp::Store)
            );
            assert_eq!(view_depth.samples, samples);
            // The tile depth stays on tile: it is read as an input attachment, never stored.
            let depth = native.attachment_named(names::DEPTH).unwrap();
            assert!(
                depth.transient && depth.store != StoreOp::Store,
                "{}",
                frame.describe()
            );
            // The price: the output and one 32-bit depth per sample.
            let pixels = 1920 * 1080;
            assert_eq!(
                frame.cost.total.stored,
                pixels * 4 + pixels * 4 * u64::from(samples),
                "{}",
                frame.describe()
            );
            // The output is still written (resolved) by the subpass that tone maps: the last
            // one, or the lighting where it tone maps.
            let output = native
                .attachments
                .iter()
                .position(|a| a.name == names::OUTPUT)
                .unwrap();
            let writer = if tonemaps {
                names::LIGHTING
            } else {
                native.subpasses.last().unwrap().name.as_str()
            };
            let writer = native.subpasses.iter().find(|s| s.name == writer).unwrap();
            assert!(
                writer.color.contains(&output) || writer.resolve.contains(&Some(output)),
                "{}",
                frame.describe()
            );
        }
        // A tiler is assumed to end its pass at a new depth attachment: the export cannot read
        // the tile depth there, and the plan says so rather than storing it.
        let export = ViewFrameDesc {
            export_depth: true,
            ..desc(1)
        };
        let mut cache = crate::frame_graph::FrameGraphCache::default();
        assert!(plan_frame(&export, &DeviceCaps::mali_valhall(), &mut cache).is_err());
    }

    #[test]
    fn one_render_pass_storing_only_the_output() {
        for (samples, caps) in [
            (1, DeviceCaps::mali_valhall()),
            (1, DeviceCaps::desktop()),
            (4, DeviceCaps::desktop()),
        ] {
            let frame = compile(&declare(&desc(samples)).unwrap(), &caps).unwrap();
            assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
            let native = &frame.native_passes[0];
            // Single-sample, the lighting writes the tone-mapped output; with MSAA a tonemap
            // subpass resolves.
            let subpasses: &[&str] = if samples == 1 {
                &[names::GBUFFER, names::LIGHTING]
            } else {
                &[names::GBUFFER, names::LIGHTING, names::TONEMAP]
            };
            let names: Vec<&str> = native.subpasses.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, subpasses, "{}", frame.describe());
            assert_eq!(native.samples, samples);
            for attachment in &native.attachments {
                let stored = attachment.store == StoreOp::Store;
                assert_eq!(
                    stored,
                    attachment.name == names::OUTPUT,
                    "{}",
                    frame.describe()
                );
                assert_eq!(attachment.transient, !stored, "{}", attachment.name);
            }
            // 1080p: one store of the BGRA8 output, 8.29 MB, whatever the sample count.
            assert_eq!(frame.cost.total.stored, 1920 * 1080 * 4);
            assert_eq!(frame.cost.total.loaded, 0);
        }
    }

    /// Which frames the lighting tone maps: single-sample, merged, nothing blended after it.
    /// There the lighting subpass reads the light accumulation (emissive) as its fifth input
    /// attachment, after the G-buffer's four, and writes the output; the light never leaves the
    /// tile and is no longer a colour attachment of the lighting.
    #[test]
    fn lighting_tonemaps_single_sample_frames_without_transparent_meshes() {
        let hdr_transparent = TransparentPass::BeforeTonemap {
            light_clear: [0; 3],
        };
        for (frame_desc, tonemaps) in [
            (desc(1), true),
            (
                ViewFrameDesc {
                    keep_output: true,
                    ..desc(1)
                },
                true,
            ),
            (
                ViewFrameDesc {
                    export_depth: true,
                    ..desc(1)
                },
                true,
            ),
            (desc(4), false),
            (
                ViewFrameDesc {
                    unmerged: true,
                    ..desc(1)
                },
                false,
            ),
            (
                ViewFrameDesc {
                    transparent: TransparentPass::AfterTonemap,
                    ..desc(1)
                },
                false,
            ),
            (
                ViewFrameDesc {
                    transparent: hdr_transparent,
                    ..desc(1)
                },
                false,
            ),
        ] {
            assert_eq!(frame_desc.lighting_tonemaps(), tonemaps, "{frame_desc:?}");
            let caps = DeviceCaps::desktop()
                .with_merging(!frame_desc.unmerged)
                .with_depth_change_merges(true);
            let frame = compile(&declare(&frame_desc).unwrap(), &caps).unwrap();
            check_shape(&frame, &frame_desc).unwrap();
            assert_eq!(
                locate_pass(&frame, names::TONEMAP).is_none(),
                tonemaps,
                "{}",
                frame.describe()
            );
            if !tonemaps {
                continue;
            }
            let native = &frame.native_passes[0];
            let (_, lighting) = locate_pass(&frame, names::LIGHTING).unwrap();
            let lighting = &native.subpasses[lighting];
            let name = |index: usize| native.attachments[index].name.as_str();
            let inputs: Vec<&str> = lighting.input.iter().map(|&i| name(i)).collect();
            assert_eq!(
                inputs,
                [
                    names::ALBEDO_OCCLUSION,
                    names::NORMAL,
                    names::MATERIAL,
                    names::DEPTH,
                    names::LIGHT
                ],
                "the input indices lighting.glsl reads (TONEMAP_IN_LIGHTING)"
            );
            let colors: Vec<&str> = lighting.color.iter().map(|&i| name(i)).collect();
            assert_eq!(colors, [names::OUTPUT]);
            let output = native.attachment_named(names::OUTPUT).unwrap();
            let expected_load = if frame_desc.keep_output {
                LoadOp::Load
            } else {
                LoadOp::DontCare
            };
            assert_eq!((output.load, output.store), (expected_load, StoreOp::Store));
            let light = native.attachment_named(names::LIGHT).unwrap();
            assert!(light.transient && light.store != StoreOp::Store);
            // Still one store of the output (and, for gizmos, of Bevy's depth).
            let pixels = 1920 * 1080;
            let depth_export = if frame_desc.export_depth {
                pixels * 4
            } else {
                0
            };
            assert_eq!(frame.cost.total.stored, pixels * 4 + depth_export);
            assert_eq!(
                frame.cost.total.loaded,
                if frame_desc.keep_output {
                    pixels * 4
                } else {
                    0
                }
            );
        }
        // A frame whose sample count the tile budget lowers to 1 tone maps in the lighting too.
        let mut cache = crate::frame_graph::FrameGraphCache::default();
        let planned = plan_frame(&desc(4), &DeviceCaps::mali_valhall(), &mut cache).unwrap();
        assert_eq!(planned.desc.samples, 1);
        assert!(locate_pass(&planned.compiled, names::TONEMAP).is_none());
    }

    #[test]
    fn msaa_stencil_split_marks_edges_with_read_only_depth() {
        use crate::vulkan::render_pass;
        use ash::vk;
        // A UNORM output (encoded in the shader) keeps the tonemap subpass; an sRGB one tone
        // maps in the lighting (below).
        let split = ViewFrameDesc {
            msaa_depth_stencil: Some(Format::Depth32FloatStencil8),
            output_format: Format::Bgra8Unorm,
            ..desc(4)
        };
        assert!(split.stencil_split());
        assert!(!split.lighting_tonemaps());
        // Without MSAA the stencil format is ignored: the single-sample frame is unchanged.
        let single = ViewFrameDesc {
            msaa_depth_stencil: Some(Format::Depth32FloatStencil8),
            ..desc(1)
        };
        assert!(!single.stencil_split());
        assert_eq!(
            compile(&declare(&single).unwrap(), &DeviceCaps::desktop()).unwrap(),
            compile(&declare(&desc(1)).unwrap(), &DeviceCaps::desktop()).unwrap()
        );

        let frame = compile(&declare(&split).unwrap(), &DeviceCaps::desktop()).unwrap();
        assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
        assert_eq!(frame.cost.total.stored, 1920 * 1080 * 4);
        assert_eq!(frame.cost.total.loaded, 0);
        let native = &frame.native_passes[0];
        let depth = native
            .attachments
            .iter()
            .position(|a| a.name == names::DEPTH)
            .unwrap();
        assert_eq!(
            native.attachments[depth].format,
            Format::Depth32FloatStencil8
        );
        assert!(native.attachments[depth].transient);
        let lighting = &native.subpasses[1];
        assert!(lighting.input.contains(&depth));
        let depth_ref = lighting.depth.unwrap();
        assert_eq!(depth_ref.attachment, depth);
        assert!(depth_ref.read_only && depth_ref.stencil_write);
        // Stencil writes never alias the depth the subpass reads: no self-dependency.
        assert!(
            !native
                .dependencies
                .iter()
                .any(|d| d.src == d.dst && d.src == crate::frame_graph::SubpassIndex::Index(1)),
            "{:?}",
            native.dependencies
        );
        // The stencil marks reach the tonemap subpass's depth input (and nothing is stored).
        assert!(native.dependencies.iter().any(|d| {
            d.src == crate::frame_graph::SubpassIndex::Index(1)
                && d.dst == crate::frame_graph::SubpassIndex::Index(2)
                && d.src_access
                    .contains(crate::frame_graph::AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE)
        }));

        // Vulkan: both references of the lighting subpass in one layout, the descriptor's too.
        let description = render_pass::describe(native, None, &[], |_| None);
        let layout = vk::ImageLayout::DEPTH_READ_ONLY_STENCIL_ATTACHMENT_OPTIMAL;
        let subpass = &description.subpasses[1];
        assert_eq!(subpass.depth.unwrap().layout, layout);
        assert!(
            subpass
                .input
                .iter()
                .any(|r| r.attachment == depth as u32 && r.layout == layout)
        );
        assert_eq!(
            render_pass::layout_in_subpass(native, 2, depth),
            Some(vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL)
        );
        let attachment = &description.attachments[depth];
        assert_eq!(attachment.stencil_load_op, vk::AttachmentLoadOp::CLEAR);
        assert_eq!(
            attachment.stencil_store_op,
            vk::AttachmentStoreOp::DONT_CARE
        );

        // The lighting that tone maps (sRGB output): two subpasses; the lighting reads the light
        // too, writes the multisampled colour and resolves it into the output, with the same
        // read-only depth and stencil writes.
        let tonemaps = ViewFrameDesc {
            output_format: Format::Bgra8Srgb,
            ..split
        };
        assert!(tonemaps.lighting_tonemaps());
        let frame = compile(&declare(&tonemaps).unwrap(), &DeviceCaps::desktop()).unwrap();
        check_shape(&frame, &tonemaps).unwrap();
        assert_eq!(frame.cost.total.stored, 1920 * 1080 * 4);
        let native = &frame.native_passes[0];
        let names: Vec<&str> = native.subpasses.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [names::GBUFFER, names::LIGHTING]);
        let lighting = &native.subpasses[1];
        let index = |name| native.attachments.iter().position(|a| a.name == name);
        assert_eq!(
            lighting.input,
            [
                names::ALBEDO_OCCLUSION,
                names::NORMAL,
                names::MATERIAL,
                names::DEPTH,
                names::LIGHT
            ]
            .map(|name| index(name).unwrap())
        );
        assert_eq!(lighting.color, [index(names::OUTPUT_SAMPLES).unwrap()]);
        assert_eq!(lighting.resolve, [index(names::OUTPUT)]);
        let depth_ref = lighting.depth.unwrap();
        assert!(depth_ref.read_only && depth_ref.stencil_write);
        let samples = native.attachment_named(names::OUTPUT_SAMPLES).unwrap();
        assert!(samples.transient && samples.samples == 4);
        let description = render_pass::describe(native, None, &[], |_| None);
        assert_eq!(description.subpasses[1].depth.unwrap().layout, layout);
    }

    #[test]
    fn unmerged_stores_the_g_buffer_and_samples_it_in_later_render_passes() {
        use crate::frame_graph::{BreakReason, LoadOp};
        for samples in [1, 4] {
            let caps = DeviceCaps::desktop();
            let unmerged = ViewFrameDesc {
                unmerged: true,
                // Ignored unmerged: the stencil split needs depth attached and read in one pass.
                msaa_depth_stencil: Some(Format::Depth32FloatStencil8),
                ..desc(samples)
            };
            assert!(!unmerged.stencil_split());
            let frame = compile(&declare(&unmerged).unwrap(), &caps.with_merging(false)).unwrap();
            assert_eq!(frame.render_pass_count(), 3, "{}", frame.describe());
            assert!(
                frame
                    .breaks
                    .iter()
                    .all(|b| matches!(b.reason, BreakReason::MergingDisabled)),
                "{:?}",
                frame.breaks
            );
            let [gbuffer, lighting, tonemap] = &frame.native_passes[..] else {
                unreachable!()
            };
            for name in [
                names::ALBEDO_OCCLUSION,
                names::NORMAL,
                names::MATERIAL,
                names::LIGHT,
            ] {
                let attachment = gbuffer.attachment_named(name).unwrap();
                assert_eq!(attachment.store, StoreOp::Store, "{name}");
                assert!(!attachment.transient, "{name}");
            }
            let depth = gbuffer.attachment_named(names::DEPTH).unwrap();
            assert_eq!(depth.format, Format::Depth32Float);
            assert_eq!(depth.store, StoreOp::Store);
            // Lighting: the light loaded, blended and stored; the G-buffer and depth sampled.
            let light = lighting.attachment_named(names::LIGHT).unwrap();
            assert_eq!((light.load, light.store), (LoadOp::Load, StoreOp::Store));
            assert_eq!(lighting.subpasses[0].sampled.len(), 4);
            // ... and binds the depth read-only (the light volumes' depth test, unused since
            // clustering), kept for the tonemap's texture read (never stored again: it was not
            // written).
            let depth = lighting.attachment_named(names::DEPTH).unwrap();
            assert_eq!(depth.load, LoadOp::Load);
            assert_ne!(depth.store, StoreOp::DontCare);
            assert!(lighting.subpasses[0].depth.is_some_and(|d| d.read_only));
            assert_eq!(lighting.attachments.len(), 2);
            // Tonemap: light, depth and material (its no-fog bit) sampled, only the output (or
            // the resolve target) stored.
            assert_eq!(tonemap.subpasses[0].sampled.len(), 3);
            for attachment in &tonemap.attachments {
                assert_eq!(
                    attachment.store == StoreOp::Store,
                    attachment.name == names::OUTPUT,
                    "{}",
                    attachment.name
                );
            }
            // What merging saves: the merged frame stores only the output.
            let merged = compile(&declare(&desc(samples)).unwrap(), &caps).unwrap();
            let pixels = 1920 * 1080;
            let gbuffer_bytes = (4 + 4 + 4 + 4 + 4) * pixels * samples as u64;
            let light_bytes = 4 * pixels * samples as u64;
            assert_eq!(
                frame.cost.total.stored,
                merged.cost.total.stored + gbuffer_bytes + light_bytes
            );
            assert!(frame.cost.total.loaded + frame.cost.total.sampled > 0);
        }
    }

    #[test]
    fn stencil_writes_need_a_stencil_aspect() {
        let mut graph = FrameGraph::new(Extent::new(64, 64));
        let mut depth = graph.create_attachment("depth", AttachmentDesc::new(Format::Depth32Float));
        let error = graph
            .add_raster_pass("mark")
            .depth_read_only_stencil_write(&mut depth)
            .finish()
            .unwrap_err();
        assert!(error.to_string().contains("no stencil aspect"), "{error}");
    }

    #[test]
    fn the_g_buffer_fits_mali_tile_memory_only_without_msaa() {
        let fits = |samples, caps: DeviceCaps| {
            let frame = compile(&declare(&desc(samples)).unwrap(), &caps).unwrap();
            matches!(
                frame.native_passes[0].footprint.verdict,
                TileVerdict::Fits { .. } | TileVerdict::Unlimited
            )
        };
        // 128 bits of G-buffer + 32 of output at 1 sample fit a 256-bit Valhall budget...
        assert!(fits(1, DeviceCaps::mali_valhall()));
        // ...4 samples of it do not: the compiler refuses to merge the passes, and the
        // view lowers its sample count until the merged frame fits (`fit_tile_budget`).
        assert!(!fits(4, DeviceCaps::mali_valhall()));
    }

    /// A viewport, or another camera before this one on the target, keeps the output outside
    /// the render area: with MSAA the frame is still one render pass, and its in-pass resolve
    /// writes the whole render area, so the output is not loaded (nothing is read inside it)
    /// and is kept outside it by its layout: a swapchain image another camera drew into is
    /// taken from `PRESENT_SRC_KHR`, not from `UNDEFINED`, which would discard that drawing.
    #[test]
    fn msaa_frames_keep_an_output_they_share_with_other_viewports() {
        use crate::vulkan::render_pass::{OutputKind, describe_frame};
        use ash::vk;
        let frame_desc = ViewFrameDesc {
            keep_output: true,
            ..desc(4)
        };
        let frame = compile(&declare(&frame_desc).unwrap(), &DeviceCaps::desktop()).unwrap();
        check_shape(&frame, &frame_desc).unwrap();
        assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
        assert_eq!(frame.native_passes[0].samples, 4);
        let output = frame.attachment_named(names::OUTPUT).unwrap().id;
        let position = frame.native_passes[0]
            .attachments
            .iter()
            .position(|a| a.resource == output)
            .unwrap();
        let ops = &frame.native_passes[0].attachments[position];
        assert_eq!(
            (ops.load, ops.store),
            (LoadOp::DontCare, StoreOp::Store),
            "{}",
            frame.describe()
        );
        assert_eq!(frame.cost.total.loaded, 0);
        let initial_layout =
            |kind| describe_frame(&frame, (output, kind))[0].attachments[position].initial_layout;
        assert_eq!(
            initial_layout(OutputKind::Swapchain { kept: true }),
            vk::ImageLayout::PRESENT_SRC_KHR
        );
        // The first camera on a window keeps nothing: the image may be discarded.
        assert_eq!(
            initial_layout(OutputKind::Swapchain { kept: false }),
            vk::ImageLayout::UNDEFINED
        );
        assert_eq!(
            initial_layout(OutputKind::TrackedImage),
            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
        );
    }

    #[test]
    fn sample_count_follows_the_device() {
        let lavapipe = SampleCounts(0b101); // 1 and 4
        assert_eq!(sample_count(1, lavapipe, false), (1, None));
        assert_eq!(sample_count(4, lavapipe, false), (4, None));
        let (samples, why) = sample_count(8, lavapipe, false);
        assert_eq!(samples, 4);
        assert!(why.unwrap().contains("lowered to 4x"));
        let (samples, why) = sample_count(2, lavapipe, false);
        assert_eq!(samples, 1, "2x is not supported, 1x is the highest below");
        assert!(why.is_some());
        let (samples, why) = sample_count(4, lavapipe, true);
        assert_eq!(samples, 1);
        assert!(why.unwrap().contains("draws over its output"));
    }

    /// The poison view clears every `DONT_CARE` load to the marker (colour, depth) and keeps
    /// why it was undefined; nothing else of the plan changes.
    #[test]
    fn poisoning_clears_every_undefined_load_to_the_marker() {
        use crate::{
            frame_graph::{ClearValue, LoadOp, LoadReason},
            tile_deferred::camera::POISON_COLOR,
        };
        for frame in [
            desc(1),
            desc(4),
            ViewFrameDesc {
                unmerged: true,
                ..desc(1)
            },
        ] {
            let caps = DeviceCaps::desktop().with_merging(!frame.unmerged);
            let plain = compile(&declare(&frame).unwrap(), &caps).unwrap();
            let mut poisoned = plain.clone();
            poison_undefined(&mut poisoned);
            assert_eq!(poisoned.render_pass_count(), plain.render_pass_count());
            assert_eq!(poisoned.cost, plain.cost, "a clear loads nothing");
            let mut changed = 0;
            for (before, after) in plain
                .native_passes
                .iter()
                .flat_map(|n| &n.attachments)
                .zip(poisoned.native_passes.iter().flat_map(|n| &n.attachments))
            {
                if before.load != LoadOp::DontCare {
                    assert_eq!(before, after, "{frame:?}");
                    continue;
                }
                changed += 1;
                let expected = if before.format.is_depth() {
                    ClearValue::DepthStencil {
                        depth: 0.5,
                        stencil: 0xA5,
                    }
                } else {
                    ClearValue::Color(POISON_COLOR)
                };
                assert_eq!(after.load, LoadOp::Clear(expected), "{}", before.name);
                assert_eq!(
                    after.load_reason,
                    LoadReason::Poisoned {
                        undefined: Box::new(before.load_reason.clone())
                    }
                );
                assert!(after.load_reason.to_string().starts_with("poisoned"));
            }
            assert!(changed > 0, "{frame:?} has undefined loads to poison");
        }
    }

    #[test]
    fn the_tier_rules_get_what_the_declared_passes_use() {
        // What the tier rules stated by hand before: the G-buffer subpass writes 4 colour
        // attachments plus depth; the lighting reads 4 input attachments, and 5 where it tone
        // maps (the light too): the most any frame asks.
        let expected = PlanRequirements {
            color_pass: names::GBUFFER.into(),
            color_attachments: 4,
            color_pass_depth: true,
            input_pass: names::LIGHTING.into(),
            input_attachments: [
                names::ALBEDO_OCCLUSION,
                names::NORMAL,
                names::MATERIAL,
                names::DEPTH,
                names::LIGHT,
            ]
            .map(String::from)
            .to_vec(),
            // Albedo, normal, material, light and the output, 32 bits each, at 1x.
            tile_color_bits: 160,
        };
        assert_eq!(requirements(), expected);
        // The subpasses' share of it (the tile colour is the render pass's).
        let expected = PlanRequirements {
            tile_color_bits: 0,
            ..expected
        };
        // Every merged frame asks the same of its subpasses, or one input fewer where a tonemap
        // subpass remains.
        let split = ViewFrameDesc {
            msaa_depth_stencil: Some(Format::Depth32FloatStencil8),
            ..desc(4)
        };
        let keep = ViewFrameDesc {
            keep_output: true,
            ..desc(1)
        };
        let msaa_expected = PlanRequirements {
            input_attachments: expected.input_attachments[..4].to_vec(),
            ..expected.clone()
        };
        // (The per-sample-index fallback, without the stencil split, keeps the tonemap subpass.)
        for (frame, expected) in [
            (desc(1), &expected),
            (keep, &expected),
            (split, &expected),
            (desc(4), &msaa_expected),
        ] {
            let compiled = compile(&declare(&frame).unwrap(), &DeviceCaps::desktop()).unwrap();
            assert_eq!(compiled.render_pass_count(), 1, "{frame:?}");
            assert_eq!(&subpass_requirements(&compiled), expected, "{frame:?}");
        }
    }

    #[test]
    fn unmerged_render_passes_hand_layouts_on() {
        use crate::vulkan::render_pass::{OutputKind, describe_frame};
        use ash::vk;
        let desc = ViewFrameDesc {
            unmerged: true,
            ..ViewFrameDesc::new(Extent::new(640, 360), Format::Bgra8Srgb, 1)
        };
        let caps = DeviceCaps::desktop().with_merging(false);
        let compiled = compile(&declare(&desc).unwrap(), &caps).unwrap();
        let output = compiled.attachment_named(names::OUTPUT).unwrap().id;
        let descriptions = describe_frame(&compiled, (output, OutputKind::TrackedImage));
        assert_eq!(descriptions.len(), 3);
        let layouts = |pass: usize, name: &str| {
            let index = compiled.native_passes[pass]
                .attachments
                .iter()
                .position(|a| a.name == name)
                .unwrap();
            let a = &descriptions[pass].attachments[index];
            (a.initial_layout, a.final_layout)
        };
        use vk::ImageLayout as L;
        // The G-buffer pass leaves what later passes sample ready to be sampled.
        for name in [names::ALBEDO_OCCLUSION, names::NORMAL, names::MATERIAL] {
            assert_eq!(
                layouts(0, name),
                (L::UNDEFINED, L::SHADER_READ_ONLY_OPTIMAL)
            );
        }
        // Depth: tested read-only (and sampled) by the lighting pass, then sampled.
        assert_eq!(
            layouts(0, names::DEPTH),
            (L::UNDEFINED, L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
        );
        assert_eq!(
            layouts(1, names::DEPTH),
            (
                L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
                L::SHADER_READ_ONLY_OPTIMAL
            )
        );
        // The light is drawn into again by the lighting pass, then sampled by the tonemap.
        assert_eq!(
            layouts(0, names::LIGHT),
            (L::UNDEFINED, L::COLOR_ATTACHMENT_OPTIMAL)
        );
        assert_eq!(
            layouts(1, names::LIGHT),
            (L::COLOR_ATTACHMENT_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL)
        );
        assert_eq!(
            layouts(2, names::OUTPUT),
            (L::COLOR_ATTACHMENT_OPTIMAL, L::COLOR_ATTACHMENT_OPTIMAL)
        );
        // The next frame's G-buffer pass waits for this frame's texture reads before writing.
        let first_gbuffer_dependency = &descriptions[0].dependencies;
        assert!(
            first_gbuffer_dependency.iter().any(|d| {
                d.src_subpass == vk::SUBPASS_EXTERNAL
                    && d.src_stage_mask
                        .contains(vk::PipelineStageFlags::FRAGMENT_SHADER)
            }),
            "{first_gbuffer_dependency:?}"
        );
    }

    /// The tile plan (compiled as the backend does) at the same
    /// resolution moves one store of the (single-sampled) output and nothing else (with 4xMSAA
    /// too, where the tile holds it): 11 times less than Bevy forward 4xMSAA, more than 22 times
    /// less than Bevy deferred.
    #[test]
    fn the_tile_plan_costs_exactly_one_output_store() {
        use crate::frame_graph::{
            Traffic, compile_stock_bevy, stock_bevy_deferred, stock_bevy_forward,
        };
        const HD: Extent = Extent::new(1920, 1080);
        const P: u64 = 1920 * 1080;
        let desktop = DeviceCaps::desktop();
        let forward =
            compile_stock_bevy(&stock_bevy_forward(HD, 4, Format::Rgba8Srgb), &desktop).unwrap();
        let deferred =
            compile_stock_bevy(&stock_bevy_deferred(HD, Format::Rgba8Srgb), &desktop).unwrap();
        // (A 4xMSAA G-buffer is over a Mali tile budget: that plan splits, and is not this test's
        // subject.)
        for (caps, samples) in [
            (DeviceCaps::desktop(), 1),
            (DeviceCaps::desktop(), 4),
            (DeviceCaps::mali_valhall(), 1),
        ] {
            let desc = ViewFrameDesc::new(HD, Format::Rgba8Srgb, samples);
            let g = declare(&desc).unwrap();
            let f = compile(&g, &caps).unwrap();
            assert_eq!(f.render_pass_count(), 1, "{}", f.describe());
            assert_eq!(
                f.cost.total,
                Traffic {
                    stored: 4 * P,
                    ..Traffic::default()
                },
                "{samples} samples:\n{}",
                f.describe()
            );
            assert_eq!(forward.cost.bytes(), 11 * f.cost.bytes());
            assert!(deferred.cost.bytes() > 22 * f.cost.bytes());
        }
    }

    /// Bevy's shadow passes in the priced frame: each map stored once, by its own pass, and
    /// sampled by the lighting subpass; the tile passes still merge into one render pass that
    /// stores only the output; and stock Bevy pays the same shadow stores on top of its own.
    #[test]
    fn shadow_maps_are_stored_once_and_nothing_else_is() {
        use crate::frame_graph::{StockBevyOptions, StockBevyPath, compile_stock_bevy};
        const HD: Extent = Extent::new(1920, 1080);
        let maps = ShadowMaps::bevy_defaults(4, 1, 2);
        for (caps, samples) in [
            (DeviceCaps::desktop(), 1),
            (DeviceCaps::desktop(), 4),
            (DeviceCaps::mali_valhall(), 1),
        ] {
            let desc = ViewFrameDesc::new(HD, Format::Rgba8Srgb, samples);
            let plain = compile(&declare(&desc).unwrap(), &caps).unwrap();
            let priced = compile(&declare_with_shadows(&desc, &maps).unwrap(), &caps).unwrap();
            let shadow_passes = maps.pass_count() as usize;
            assert_eq!(
                priced.render_pass_count(),
                shadow_passes + 1,
                "{}",
                priced.describe()
            );
            for native in &priced.native_passes[..shadow_passes] {
                assert!(native.name.starts_with("shadow pass"), "{}", native.name);
                let [map] = &native.attachments[..] else {
                    panic!("one depth map per shadow pass: {native:?}");
                };
                // Necessary: the lighting subpass samples it after the pass.
                assert!(matches!(map.load, LoadOp::Clear(_)), "{map:?}");
                assert_eq!(map.store, StoreOp::Store);
            }
            let tile = &priced.native_passes[shadow_passes];
            // Single-sample: the lighting tone maps (two subpasses).
            let subpasses = if samples == 1 { 2 } else { 3 };
            assert_eq!(tile.subpasses.len(), subpasses);
            let ops = |native: &crate::frame_graph::NativePass| {
                let ops = native.attachments.iter();
                ops.map(|a| (a.name.clone(), a.load, a.store, a.transient))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ops(tile), ops(&plain.native_passes[0]));
            assert_eq!(
                priced.cost.total.stored,
                plain.cost.total.stored + maps.stored_bytes(),
                "{}",
                priced.describe()
            );
            assert_eq!(priced.cost.total.loaded, 0);
            // Reading the maps is priced as one full read each, like any sampled texture.
            assert_eq!(priced.cost.total.sampled, maps.stored_bytes());
        }
        // Stock Bevy renders the same maps: the difference between the paths is unchanged.
        let stock = |maps| {
            let path = StockBevyPath::Forward { msaa_samples: 1 };
            let options = StockBevyOptions {
                shadow_maps: maps,
                ..StockBevyOptions::default()
            };
            let graph = path.graph_with(HD, Format::Rgba8Srgb, options);
            compile_stock_bevy(&graph, &DeviceCaps::desktop()).unwrap()
        };
        let (without, with) = (stock(ShadowMaps::NONE), stock(maps));
        assert_eq!(
            with.cost.total.stored,
            without.cost.total.stored + maps.stored_bytes()
        );
    }
}
