//! Overlays drawn over a tile camera's output after the tile pass: bevy_ui (feature `ui`) and the
//! inspector (feature `inspector`).
//!
//! Bevy's overlay passes (`ui_pass`, bevy_egui's `egui_pass`) draw into the camera's main
//! texture, which `Core3d` holds the 3D frame in and later blits to the output. A tile camera's
//! render pass writes the output directly and never uses the main texture, so an overlay is drawn
//! in three wgpu passes after the tile pass: the main texture cleared to transparent, Bevy's
//! overlay pass drawn into it (with its own pipelines and blending), and the main texture blended
//! over the output (premultiplied alpha, Bevy's blit pipeline). Bevy's overlays blend with
//! straight alpha ("over"); drawn over transparent black they leave the premultiplied colour and
//! coverage of all their layers, and "over" is associative, so blending that over the output is
//! the picture Bevy draws over its main texture, up to rounding.
//!
//! The passes are priced here with the frame-graph model ([`price_overlay`]): they load and store
//! the output, which the tile frame itself stores once. They are reported apart from the tile
//! frame, whose plan stays one render pass that stores only the output.

use crate::frame_graph::{
    Access, AttachmentDesc, ClearValue, CompiledFrame, DeviceCaps, Extent, Format, FrameGraph,
    ImportParams, compile_stock_bevy,
};
use crate::tile_deferred::plan::names;
use crate::vulkan::conv::frame_graph_format;
use bevy::camera::NormalizedRenderTarget;
use bevy::prelude::{Commands, Component, Entity, Query, Res, ResMut};
use bevy::{
    core_pipeline::blit::{BlitPipeline, BlitPipelineKey},
    render::{
        camera::ExtractedCamera,
        render_resource::{
            BlendState, CachedRenderPipelineId, LoadOp, PipelineCache, RenderPassDescriptor,
            SpecializedRenderPipelines,
        },
        renderer::RenderContext,
        view::ViewTarget,
    },
};

/// The names of an overlay's three passes in its priced plan.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OverlayPassNames {
    /// The main texture cleared to transparent.
    pub clear: &'static str,
    /// Bevy's overlay pass drawing into it.
    pub draw: &'static str,
    /// The main texture blended over the output.
    pub composite: &'static str,
}

/// What an overlay over a tile camera is drawn on, for its price.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OverlayTarget {
    /// An image, or a window whose image Bevy's blit wrote after its post-processing (FXAA,
    /// bloom, ...: `post_process`): the output is already written for wgpu.
    Image,
    /// A window: the tile pass also stores the swapchain image in an empty wgpu pass before its
    /// own, so that wgpu does not zero-fill it before the composite loads it (see
    /// [`TileOutputLoadedAfter`](crate::tile_deferred::camera::TileOutputLoadedAfter)): one more store, for the overlay.
    Window,
}

impl OverlayTarget {
    /// What an overlay is drawn on: a window's image needs the extra store for wgpu unless
    /// Bevy's blit already wrote it through wgpu (`post_processed`). Pure.
    pub(crate) fn of_output(window: bool, post_processed: bool) -> Self {
        if window && !post_processed {
            OverlayTarget::Window
        } else {
            OverlayTarget::Image
        }
    }
}

/// What an overlay's passes over a tile view are priced on: the viewport's extent, the main
/// texture's and the output's formats, and what the output is.
pub(crate) struct OverlayShape {
    pub extent: Extent,
    pub main_format: Format,
    pub output_format: Format,
    pub target: OverlayTarget,
}

impl OverlayShape {
    /// The shape of `camera`'s overlays, where Bevy post-processed the frame after the tile pass
    /// (`post_processed`: its blit wrote the output through wgpu) or not; None while its
    /// viewport or a format is unknown to the frame graph.
    pub(crate) fn of(
        target: &ViewTarget,
        camera: &ExtractedCamera,
        post_processed: bool,
    ) -> Option<Self> {
        let size = camera.physical_viewport_size?;
        Some(Self {
            extent: Extent::new(size.x.max(1), size.y.max(1)),
            main_format: frame_graph_format(target.main_texture_format())?,
            output_format: frame_graph_format(target.out_texture_view_format()?)?,
            target: OverlayTarget::of_output(
                matches!(camera.target, Some(NormalizedRenderTarget::Window(_))),
                post_processed,
            ),
        })
    }
}

/// The overlay's passes over a tile camera, priced with the stock-Bevy model (wgpu passes store
/// what they write): the main texture (`main_format`) cleared (stored), the overlay drawn into it
/// (loaded and stored), then sampled and blended over the output (loaded and stored); on a
/// window, plus the empty pass that stores the output for wgpu. None if the graph does not
/// compile (it always does for these formats).
#[cfg_attr(
    not(any(feature = "ui", feature = "inspector")),
    expect(
        dead_code,
        reason = "only the overlays of features `ui` and `inspector` use it"
    )
)]
pub(crate) fn price_overlay(
    names: OverlayPassNames,
    extent: Extent,
    main_format: Format,
    output_format: Format,
    target: OverlayTarget,
) -> Option<CompiledFrame> {
    let mut g = FrameGraph::new(extent);
    let mut main = g.import_attachment(
        "main_texture",
        AttachmentDesc::new(main_format),
        ImportParams {
            contents_needed: false,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        },
    );
    g.add_raster_pass(names.clear)
        .color(&mut main, Access::WriteAll, Some(ClearValue::BLACK))
        .finish()
        .ok()?;
    g.add_raster_pass(names.draw)
        .color(&mut main, Access::Write, None)
        .finish()
        .ok()?;
    let mut output = g.import_attachment(
        names::OUTPUT,
        AttachmentDesc::new(output_format),
        ImportParams {
            contents_needed: true,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        },
    );
    if target == OverlayTarget::Window {
        g.add_raster_pass("output written for wgpu")
            .color(&mut output, Access::WriteAll, None)
            .finish()
            .ok()?;
    }
    g.add_raster_pass(names.composite)
        .sample(&main)
        .color(&mut output, Access::Write, None)
        .finish()
        .ok()?;
    compile_stock_bevy(&g, &DeviceCaps::desktop()).ok()
}

/// The composite pipeline of a tile view (Bevy's blit into its output's format, premultiplied
/// alpha), prepared for every view on the tile schedule: the overlays drawn after the tile pass
/// (gizmos, bevy_ui) blend the main texture over the output with it.
#[derive(Component)]
pub(crate) struct OverlayCompositePipeline(pub CachedRenderPipelineId);

/// Specialises [`OverlayCompositePipeline`] for every tile view (cached: one pipeline per
/// output format).
pub(crate) fn prepare_composite_pipelines(
    mut commands: Commands,
    views: Query<(Entity, &ViewTarget, &ExtractedCamera)>,
    pipeline_cache: Res<PipelineCache>,
    blit: Option<Res<BlitPipeline>>,
    pipelines: Option<ResMut<SpecializedRenderPipelines<BlitPipeline>>>,
) {
    let (Some(blit), Some(mut pipelines)) = (blit, pipelines) else {
        return;
    };
    for (entity, target, camera) in &views {
        if !crate::tile_deferred::camera::is_tile_schedule(camera.schedule) {
            continue;
        }
        let Some(format) = target.out_texture_view_format() else {
            continue;
        };
        let id = specialize_composite(&pipeline_cache, &blit, &mut pipelines, format);
        commands.entity(entity).insert(OverlayCompositePipeline(id));
    }
}

/// The composite pipeline (Bevy's blit, premultiplied-alpha blending) for an output of `format`.
pub(crate) fn specialize_composite(
    pipeline_cache: &PipelineCache,
    blit: &BlitPipeline,
    pipelines: &mut SpecializedRenderPipelines<BlitPipeline>,
    format: wgpu::TextureFormat,
) -> CachedRenderPipelineId {
    pipelines.specialize(
        pipeline_cache,
        blit,
        BlitPipelineKey {
            target_format: format,
            blend_state: Some(BlendState::PREMULTIPLIED_ALPHA_BLENDING),
            samples: 1,
            source_space: None,
        },
    )
}

/// Clears the view's main texture to transparent, taking its first-use clear so that the
/// overlay pass that follows loads instead of clearing it to the camera's clear colour.
#[cfg_attr(
    not(any(feature = "ui", feature = "inspector")),
    expect(
        dead_code,
        reason = "only the overlays of features `ui` and `inspector` use it"
    )
)]
pub(crate) fn clear_main_texture(target: &ViewTarget, ctx: &mut RenderContext, label: &str) {
    let mut attachment = target.get_unsampled_color_attachment();
    attachment.ops.load = LoadOp::Clear(wgpu::Color::TRANSPARENT);
    ctx.command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some(label),
            color_attachments: &[Some(attachment)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
}

/// Blends the view's main texture (the overlay's drawing) over the output the tile pass wrote,
/// within the camera's viewport. Does nothing while the pipeline is compiling.
pub(crate) fn composite_main_texture(
    target: &ViewTarget,
    camera: &ExtractedCamera,
    pipeline: CachedRenderPipelineId,
    pipeline_cache: &PipelineCache,
    blit: &BlitPipeline,
    ctx: &mut RenderContext,
    label: &str,
) {
    let Some(pipeline) = pipeline_cache.get_render_pipeline(pipeline) else {
        return;
    };
    let bind_group = blit.create_bind_group(
        ctx.render_device(),
        target.main_texture_view(),
        pipeline_cache,
    );
    let Some(output) = target.out_texture_color_attachment(None) else {
        return;
    };
    let mut pass = ctx
        .command_encoder()
        .begin_render_pass(&RenderPassDescriptor {
            label: Some(label),
            color_attachments: &[Some(output)],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
    if let Some(viewport) = &camera.viewport {
        let (position, size) = (viewport.physical_position, viewport.physical_size);
        pass.set_scissor_rect(position.x, position.y, size.x, size.y);
    }
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, &bind_group, &[]);
    pass.draw(0..3, 0..1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame_graph::{StoreOp, compile};
    use crate::tile_deferred::plan::{ViewFrameDesc, declare};

    #[test]
    fn only_a_window_nothing_wrote_through_wgpu_pays_the_extra_store() {
        assert_eq!(OverlayTarget::of_output(true, false), OverlayTarget::Window);
        // Bevy's blit wrote the window's image after its post-processing.
        assert_eq!(OverlayTarget::of_output(true, true), OverlayTarget::Image);
        assert_eq!(OverlayTarget::of_output(false, false), OverlayTarget::Image);
        assert_eq!(OverlayTarget::of_output(false, true), OverlayTarget::Image);
    }

    const UI: OverlayPassNames = OverlayPassNames {
        clear: "ui clear",
        draw: "ui_pass",
        composite: "ui composite",
    };

    #[test]
    fn the_tile_frame_stays_one_pass_and_the_overlay_is_priced_apart() {
        let extent = Extent::new(100, 100);
        for samples in [1, 4] {
            // The tile frame with UI over it is the same plan: one render pass storing only
            // the output.
            let desc = ViewFrameDesc::new(extent, Format::Bgra8Srgb, samples);
            let frame = compile(&declare(&desc).unwrap(), &DeviceCaps::desktop()).unwrap();
            assert_eq!(frame.render_pass_count(), 1, "{}", frame.describe());
            let stored: Vec<&str> = frame
                .native_passes
                .iter()
                .flat_map(|pass| &pass.attachments)
                .filter(|a| a.store == StoreOp::Store)
                .map(|a| a.name.as_str())
                .collect();
            assert_eq!(stored, [names::OUTPUT], "{}", frame.describe());
        }
        let pixels = 100 * 100;
        // The UI's passes: clear store + ui_pass load/store + composite: texture read, output
        // load and store; an 8-bit main texture (HDR off) and a 16-bit float one (HDR on).
        let image = price_overlay(
            UI,
            extent,
            Format::Rgba8Srgb,
            Format::Bgra8Srgb,
            OverlayTarget::Image,
        )
        .unwrap();
        assert_eq!(image.render_pass_count(), 3, "{}", image.describe());
        assert_eq!(image.cost.bytes(), 6 * pixels * 4, "{}", image.describe());
        let hdr = price_overlay(
            UI,
            extent,
            Format::Rgba16Float,
            Format::Bgra8Srgb,
            OverlayTarget::Image,
        )
        .unwrap();
        assert_eq!(
            hdr.cost.bytes(),
            4 * pixels * 8 + 2 * pixels * 4,
            "{}",
            hdr.describe()
        );
        // On a window, plus the empty pass that stores the output for wgpu.
        let window = price_overlay(
            UI,
            extent,
            Format::Rgba8Srgb,
            Format::Bgra8Srgb,
            OverlayTarget::Window,
        )
        .unwrap();
        assert_eq!(window.render_pass_count(), 4, "{}", window.describe());
        assert_eq!(window.cost.bytes(), 7 * pixels * 4, "{}", window.describe());
    }
}
