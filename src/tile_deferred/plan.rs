//! The frame a tile-deferred camera declares to the frame-graph compiler.
//!
//! Three raster passes: `gbuffer` writes albedo/occlusion, normal, material and the light
//! accumulation (emissive) plus depth; `lighting` reads them as input attachments and adds every
//! light into the light accumulation (blending, so it reads it too); `tonemap` reads the light
//! and depth as input attachments and writes the camera's output. The compiler merges them into
//! one native render pass where the device allows it, and decides every load and store.

use crate::frame_graph::{
    Access, AttachmentDesc, ClearValue, Extent, Format, FrameGraph, GraphError, ImportParams,
};

/// Names of the frame's passes and attachments (the backend finds subpasses by these).
pub(crate) mod names {
    pub const GBUFFER: &str = "gbuffer";
    pub const LIGHTING: &str = "lighting";
    pub const TONEMAP: &str = "tonemap";
    pub const ALBEDO_OCCLUSION: &str = "albedo_occlusion";
    pub const NORMAL: &str = "normal";
    pub const MATERIAL: &str = "material";
    pub const LIGHT: &str = "light";
    pub const DEPTH: &str = "depth";
    pub const OUTPUT: &str = "output";
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
}

/// The G-buffer formats (see `shaders/common.glsl`).
pub(crate) const ALBEDO_FORMAT: Format = Format::Rgba8Srgb;
pub(crate) const NORMAL_FORMAT: Format = Format::Rg16Float;
pub(crate) const MATERIAL_FORMAT: Format = Format::Rgba8Unorm;

/// Declares the view's frame.
pub(crate) fn declare(desc: &ViewFrameDesc) -> Result<FrameGraph, GraphError> {
    use names::*;
    let mut graph = FrameGraph::new(desc.extent);
    let mut albedo = graph.create_attachment(ALBEDO_OCCLUSION, AttachmentDesc::new(ALBEDO_FORMAT));
    let mut normal = graph.create_attachment(NORMAL, AttachmentDesc::new(NORMAL_FORMAT));
    let mut material = graph.create_attachment(MATERIAL, AttachmentDesc::new(MATERIAL_FORMAT));
    let mut light = graph.create_attachment(LIGHT, AttachmentDesc::new(desc.light_format));
    let mut depth = graph.create_attachment(DEPTH, AttachmentDesc::new(desc.depth_format));
    let mut output = graph.import_attachment(
        OUTPUT,
        AttachmentDesc::new(desc.output_format),
        ImportParams {
            contents_needed: desc.keep_output,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        },
    );
    // Background pixels keep undefined G-buffer contents: lighting and tonemap skip pixels whose
    // depth is the cleared far plane, so nothing needs clearing but depth.
    graph
        .add_raster_pass(GBUFFER)
        .color(&mut albedo, Access::Write, None)
        .color(&mut normal, Access::Write, None)
        .color(&mut material, Access::Write, None)
        .color(&mut light, Access::Write, None)
        .depth(
            &mut depth,
            Access::ReadWrite,
            Some(ClearValue::DepthStencil {
                depth: 0.0,
                stencil: 0,
            }),
        )
        .finish()?;
    graph
        .add_raster_pass(LIGHTING)
        .input(&albedo)
        .input(&normal)
        .input(&material)
        .input(&depth)
        .color(&mut light, Access::ReadWrite, None)
        .finish()?;
    graph
        .add_raster_pass(TONEMAP)
        .input(&light)
        .input(&depth)
        .color(
            &mut output,
            if desc.keep_output {
                Access::Write
            } else {
                Access::WriteAll
            },
            None,
        )
        .finish()?;
    Ok(graph)
}
