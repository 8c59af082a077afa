//! Bevy's own post-processing after the tile pass (feature `anti_alias`, issue 32): FXAA, SMAA
//! and contrast-adaptive sharpening run on the tile frame instead of sending the camera to
//! `Core3d`.
//!
//! `Core3d` runs these effects after tone mapping, on the camera's main texture (`ViewTarget`):
//! each reads the current main texture and writes the other one, and `upscaling` then blits the
//! result to the camera's output. On a tile camera with one of them, the tile pass writes the
//! main texture instead of the output (the frame is still one render pass that stores one image,
//! tone mapped as before), and the tile schedule runs Bevy's own systems after it, in `Core3d`'s
//! order: FXAA, SMAA, CAS, the blit. What they load and store is priced apart from the tile
//! frame ([`price_post_processing`], `TileViewReport::post_process_pass`).
//!
//! What Bevy draws after the tile pass (bevy_ui, egui, gizmos and wireframes) is drawn after the
//! blit, over the output: Bevy too draws its UI after these effects, so bevy_ui and egui look as
//! they do under `Core3d`, but its gizmos are drawn before them, so over a tile camera with FXAA
//! or SMAA they are not anti-aliased. bevy_ui and egui go after the pass, not in its `ui`
//! subpass, since the effects would otherwise filter them.
//!
//! An effect is drawn this way only where the app has its Bevy plugin (`FxaaPlugin`,
//! `SmaaPlugin`, `CasPlugin`, all in Bevy's `DefaultPlugins` with its `bevy_anti_alias`
//! feature); without this crate's `anti_alias` feature, or without the plugin, the camera falls
//! back as before and `TileMissing` says why.

use super::PostProcessingAfterTile;
use crate::frame_graph::{
    Access, AttachmentDesc, ClearValue, CompiledFrame, DeviceCaps, Extent, Format, FrameGraph,
    ImportParams, compile_stock_bevy,
};
use crate::tile_deferred::{
    camera::{
        PostProcessedAfterTile, TileDeferred, TileDeferredGraph, TileDeferredSystems,
        is_tile_schedule,
    },
    plan::names,
    report::TileRenderReports,
};
use crate::vulkan::conv::frame_graph_format;
use bevy::{
    core_pipeline::upscaling::upscaling,
    prelude::*,
    render::{
        Extract, ExtractSchedule, RenderApp,
        camera::{CameraRenderGraph, ExtractedCamera},
        renderer::{CurrentView, ViewQuery},
        sync_world::{MainEntity, RenderEntity},
        view::ViewTarget,
    },
};
use bevy_anti_alias::{
    contrast_adaptive_sharpening::{CasPlugin, ContrastAdaptiveSharpening, cas},
    fxaa::{Fxaa, FxaaPlugin, fxaa},
    smaa::{Smaa, SmaaPlugin, smaa},
};

/// The effects, by the name of their camera component, in the order `Core3d` runs them.
pub(crate) const FXAA: &str = "Fxaa";
pub(crate) const SMAA: &str = "Smaa";
pub(crate) const CAS: &str = "ContrastAdaptiveSharpening";

/// The steps of [`TileDeferredSystems::PostProcess`], in order: `Core3d` runs FXAA and SMAA
/// after tone mapping, CAS after both, and the blit last.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum PostProcessSteps {
    Fxaa,
    Smaa,
    Sharpen,
    Blit,
    Price,
}

/// Wires the effects whose Bevy plugins the app has: run once the app's plugins are built
/// (`Plugin::finish`), so that `is_plugin_added` sees them all.
pub(crate) fn finish(app: &mut App) {
    let drawn: Vec<&'static str> = [
        (app.is_plugin_added::<FxaaPlugin>(), FXAA),
        (app.is_plugin_added::<SmaaPlugin>(), SMAA),
        (app.is_plugin_added::<CasPlugin>(), CAS),
    ]
    .into_iter()
    .filter_map(|(added, effect)| added.then_some(effect))
    .collect();
    if drawn.is_empty() {
        return;
    }
    let drawn = PostProcessingAfterTile(drawn);
    app.insert_resource(drawn.clone());
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    render_app
        .add_systems(ExtractSchedule, mark_post_processed_views)
        .configure_sets(
            TileDeferredGraph,
            (
                PostProcessSteps::Fxaa,
                PostProcessSteps::Smaa,
                PostProcessSteps::Sharpen,
                PostProcessSteps::Blit,
                PostProcessSteps::Price,
            )
                .chain()
                .in_set(TileDeferredSystems::PostProcess),
        )
        .configure_sets(
            TileDeferredGraph,
            TileDeferredSystems::PostProcess.run_if(view_is_post_processed),
        )
        .add_systems(
            TileDeferredGraph,
            (
                upscaling.in_set(PostProcessSteps::Blit),
                price_view_post_processing.in_set(PostProcessSteps::Price),
            ),
        );
    // Each of Bevy's systems skips a view without its effect (its `ViewQuery` does not match).
    if drawn.0.contains(&FXAA) {
        render_app.add_systems(TileDeferredGraph, fxaa.in_set(PostProcessSteps::Fxaa));
    }
    if drawn.0.contains(&SMAA) {
        render_app.add_systems(TileDeferredGraph, smaa.in_set(PostProcessSteps::Smaa));
    }
    if drawn.0.contains(&CAS) {
        render_app.add_systems(TileDeferredGraph, cas.in_set(PostProcessSteps::Sharpen));
    }
    render_app.insert_resource(drawn);
}

/// The effects Bevy runs on a camera that has these components, among those the app draws
/// after the tile pass (`drawn`), in the order they run. Pure: FXAA only while enabled, CAS
/// only while enabled with some strength (what Bevy's extraction of each keeps), SMAA whenever
/// present.
pub(crate) fn effects_of(
    fxaa: Option<&Fxaa>,
    smaa: Option<&Smaa>,
    cas: Option<&ContrastAdaptiveSharpening>,
    drawn: &[&'static str],
) -> Vec<&'static str> {
    [
        (fxaa.is_some_and(|fxaa| fxaa.enabled), FXAA),
        (smaa.is_some(), SMAA),
        (
            cas.is_some_and(|cas| cas.enabled && cas.sharpening_strength != 0.0),
            CAS,
        ),
    ]
    .into_iter()
    .filter(|(on, effect)| *on && drawn.contains(effect))
    .map(|(_, effect)| effect)
    .collect()
}

/// The cameras whose render-world views [`mark_post_processed_views`] marks.
type EffectCameras<'w, 's> = Query<
    'w,
    's,
    (
        RenderEntity,
        &'static Camera,
        &'static CameraRenderGraph,
        Option<&'static Fxaa>,
        Option<&'static Smaa>,
        Option<&'static ContrastAdaptiveSharpening>,
    ),
    With<TileDeferred>,
>;

/// Marks, each frame, the tile views whose effects run after the tile pass
/// ([`PostProcessedAfterTile`]), before anything in `Render` reads them (the UI routes decide
/// on it in `Queue`, the tile pass writes the main texture for it).
fn mark_post_processed_views(
    mut commands: Commands,
    cameras: Extract<EffectCameras>,
    drawn: Res<PostProcessingAfterTile>,
) {
    for (render_entity, camera, graph, fxaa, smaa, cas) in &cameras {
        let Ok(mut view) = commands.get_entity(render_entity) else {
            continue;
        };
        let effects = effects_of(fxaa, smaa, cas, &drawn.0);
        if camera.is_active && is_tile_schedule(graph.0) && !effects.is_empty() {
            view.insert(PostProcessedAfterTile(effects));
        } else {
            view.remove::<PostProcessedAfterTile>();
        }
    }
}

/// Run condition of [`TileDeferredSystems::PostProcess`]: the view being rendered has effects
/// after the tile pass this frame.
fn view_is_post_processed(
    view: Res<CurrentView>,
    marked: Query<(), With<PostProcessedAfterTile>>,
) -> bool {
    marked.contains(view.0)
}

/// Prices the view's effects and blit into its frame report.
fn price_view_post_processing(
    view: ViewQuery<(
        &MainEntity,
        &ViewTarget,
        &ExtractedCamera,
        &PostProcessedAfterTile,
    )>,
    reports: Res<TileRenderReports>,
) {
    let (main_entity, target, camera, effects) = view.into_inner();
    let main_texture = target.main_texture();
    let (Some(main_format), Some(output_format)) = (
        frame_graph_format(target.main_texture_format()),
        target
            .out_texture_view_format()
            .and_then(frame_graph_format),
    ) else {
        return;
    };
    let extent = Extent::new(main_texture.width(), main_texture.height());
    let first_on_target = camera.sorted_camera_index_for_target == 0;
    let priced = price_post_processing(
        extent,
        &effects.0,
        main_format,
        output_format,
        first_on_target,
    );
    let effects: Vec<String> = effects.0.iter().map(|effect| effect.to_string()).collect();
    reports.amend(main_entity.id(), |report| {
        report.post_process_pass = priced;
        report.post_processing = effects;
    });
}

/// Bevy's post-processing of a tile frame, priced with the stock-Bevy model (wgpu passes store
/// what they write), over the main texture (`extent`, `main_format`), which the tile frame
/// stored: each effect samples the current main texture and writes the other one (SMAA in its
/// three passes: edges, blending weights, then the blend; its stencil is left out), and the blit
/// samples the last and writes the output (`output_format`), overwriting it where the camera is
/// the first on its target and blending over it (loaded) otherwise. None if the graph does not
/// compile (it always does for these formats).
pub(crate) fn price_post_processing(
    extent: Extent,
    effects: &[&str],
    main_format: Format,
    output_format: Format,
    first_on_target: bool,
) -> Option<CompiledFrame> {
    let mut g = FrameGraph::new(extent);
    let written_by_tile_pass = ImportParams {
        contents_needed: true,
        needed_after_frame: false,
        clear_on_first_use: false,
        discard_on_last_use: false,
    };
    let mut main = g.import_attachment(
        "main_texture_a",
        AttachmentDesc::new(main_format),
        written_by_tile_pass,
    );
    let mut other = g.import_attachment(
        "main_texture_b",
        AttachmentDesc::new(main_format),
        ImportParams {
            contents_needed: false,
            ..written_by_tile_pass
        },
    );
    for effect in effects {
        if *effect == SMAA {
            let mut edges =
                g.create_attachment("smaa_edges", AttachmentDesc::new(Format::Rg8Unorm));
            let mut weights =
                g.create_attachment("smaa_weights", AttachmentDesc::new(Format::Rgba8Unorm));
            g.add_raster_pass("smaa edge detection")
                .sample(&main)
                .color(&mut edges, Access::Write, Some(ClearValue::BLACK))
                .finish()
                .ok()?;
            g.add_raster_pass("smaa blending weights")
                .sample(&edges)
                .color(&mut weights, Access::Write, Some(ClearValue::BLACK))
                .finish()
                .ok()?;
            g.add_raster_pass("smaa neighborhood blending")
                .sample(&main)
                .sample(&weights)
                .color(&mut other, Access::WriteAll, None)
                .finish()
                .ok()?;
        } else {
            g.add_raster_pass(effect)
                .sample(&main)
                .color(&mut other, Access::WriteAll, None)
                .finish()
                .ok()?;
        }
        std::mem::swap(&mut main, &mut other);
    }
    let mut output = g.import_attachment(
        names::OUTPUT,
        AttachmentDesc::new(output_format),
        ImportParams {
            contents_needed: !first_on_target,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        },
    );
    let blit = if first_on_target {
        Access::WriteAll
    } else {
        Access::ReadWrite
    };
    g.add_raster_pass("upscaling")
        .sample(&main)
        .color(&mut output, blit, None)
        .finish()
        .ok()?;
    compile_stock_bevy(&g, &DeviceCaps::desktop()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_run_while_enabled_in_core3ds_order_and_only_where_drawn() {
        let all = [FXAA, SMAA, CAS];
        let fxaa = Fxaa::default();
        let cas = ContrastAdaptiveSharpening {
            enabled: true,
            ..default()
        };
        let smaa = Smaa::default();
        assert_eq!(
            effects_of(Some(&fxaa), Some(&smaa), Some(&cas), &all),
            [FXAA, SMAA, CAS]
        );
        assert_eq!(effects_of(None, None, Some(&cas), &all), [CAS]);
        let off = Fxaa {
            enabled: false,
            ..default()
        };
        assert!(effects_of(Some(&off), None, None, &all).is_empty());
        let weak = ContrastAdaptiveSharpening {
            enabled: true,
            sharpening_strength: 0.0,
            ..default()
        };
        assert!(effects_of(None, None, Some(&weak), &all).is_empty());
        // An effect whose plugin the app lacks is not run after the pass (it falls back).
        assert_eq!(effects_of(Some(&fxaa), None, Some(&cas), &[CAS]), [CAS]);
    }

    #[test]
    fn each_effect_reads_and_writes_the_main_texture_and_the_blit_writes_the_output() {
        let extent = Extent::new(100, 100);
        let pixels = 100 * 100;
        let bytes = |effects: &[&str], first| {
            price_post_processing(extent, effects, Format::Rgba8Srgb, Format::Bgra8Srgb, first)
                .expect("compiles")
                .cost
                .bytes()
        };
        // The blit alone: the main texture read, the output written.
        assert_eq!(bytes(&[], true), 2 * 4 * pixels);
        // FXAA: one more read and one more write of the main texture.
        assert_eq!(bytes(&[FXAA], true), 4 * 4 * pixels);
        assert_eq!(bytes(&[FXAA, CAS], true), 6 * 4 * pixels);
        // A later camera on the target blends its blit over the output: loaded too.
        assert_eq!(bytes(&[FXAA], false), 5 * 4 * pixels);
        // SMAA: edges (2 bytes) written and read, weights (4 bytes) written and read, the main
        // texture read twice and the other written.
        assert_eq!(
            bytes(&[SMAA], true),
            2 * 4 * pixels + (2 + 2 + 4 + 4 + 4 + 4 + 4) * pixels
        );
    }
}
