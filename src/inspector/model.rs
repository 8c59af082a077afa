//! What the panels show, computed from the renderer's reports and the same view description the
//! renderer declared (the counterfactuals recompile it; nothing here touches the GPU).

use super::{InspectorHistory, TileInspector, TileInspectorPanels};
use crate::{
    TileClusterStats, TileDeferred, TileFrameReportParam, TileGpuTimes, TileInstanceBatches,
    TileMeshDrawMode,
    frame_graph::{
        Access, AttachmentDesc, CompiledFrame, DEFAULT_MW_PER_GBPS, DeviceCaps, Extent, Format,
        FrameGraph, ImportParams, LoadOp, NativePass, ShadowMaps, StockBevyOptions, StockBevyPath,
        StoreOp, TileVerdict, bytes_to_mb, compile, compile_stock_bevy, image_bytes,
    },
    tile_deferred::{
        overlays::composite::OverlayTarget,
        plan::{self, ViewFrameDesc, names},
    },
};
use bevy::{platform::collections::HashMap, prelude::*};
use std::fmt::Write as _;

/// The price of one plan at the current frame rate.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanSummary {
    /// What the plan is ("tile-deferred", "merging off", "Bevy forward 4xMSAA"...).
    pub label: String,
    /// Native passes (render passes plus compute/copy passes).
    pub native_passes: usize,
    /// Render passes.
    pub render_passes: usize,
    /// Attachment traffic per frame, bytes.
    pub bytes_per_frame: u64,
    /// Attachment traffic per frame, MB (10^6 bytes): `cost.mb()`.
    pub mb_per_frame: f64,
    /// GB/s at the panel's frame rate: `cost.gb_per_s(fps)`.
    pub gb_per_s: f64,
    /// Estimated DRAM power, mW: `cost.milliwatts(fps, DEFAULT_MW_PER_GBPS)`.
    pub milliwatts: f64,
}

impl PlanSummary {
    /// What adds no pass and no traffic (drawn inside a render pass that stores anyway).
    pub fn nothing(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            native_passes: 0,
            render_passes: 0,
            bytes_per_frame: 0,
            mb_per_frame: 0.0,
            gb_per_s: 0.0,
            milliwatts: 0.0,
        }
    }

    /// Prices `frame` at `fps`.
    pub fn of(label: impl Into<String>, frame: &CompiledFrame, fps: f64) -> Self {
        Self {
            label: label.into(),
            native_passes: frame.native_passes.len(),
            render_passes: frame.render_pass_count(),
            bytes_per_frame: frame.cost.bytes(),
            mb_per_frame: frame.cost.mb(),
            gb_per_s: frame.cost.gb_per_s(fps),
            milliwatts: frame.cost.milliwatts(fps, DEFAULT_MW_PER_GBPS),
        }
    }
}

/// Everything the inspector shows for one camera.
#[derive(Clone, Debug)]
pub struct CameraPanel {
    /// The main-world camera.
    pub camera: Entity,
    /// Its `Name`, or its entity.
    pub name: String,
    /// The renderer in use: "tile-deferred", "tile-deferred MSAA 4x" or "Bevy Core3d".
    pub tier: String,
    /// Why that renderer (and sample count) was chosen.
    pub tier_reason: String,
    /// The GPU's name.
    pub device_name: String,
    /// The GPU's vendor.
    pub device_vendor: String,
    /// The render area in pixels.
    pub resolution: UVec2,
    /// Samples the camera's `Msaa` asks for.
    pub requested_samples: u32,
    /// Samples the frame was rendered with.
    pub samples: u32,
    /// Smoothed frame time, ms.
    pub frame_ms: f64,
    /// Frames per second (`1000 / frame_ms`): the rate GB/s and mW are given at.
    pub fps: f64,
    /// The plan in use: the compiled tile frame, or stock Bevy's plan for a `Core3d` camera.
    pub in_use: Option<PlanSummary>,
    /// The same view description compiled with merging off.
    pub merging_off: Option<PlanSummary>,
    /// Stock Bevy's forward path for this camera (with its MSAA).
    pub stock_bevy: Option<PlanSummary>,
    /// Stock Bevy's deferred path for this camera.
    pub stock_bevy_deferred: Option<PlanSummary>,
    /// For a `Core3d` camera: the tile-deferred plan it would get.
    pub tile_deferred_alternative: Option<PlanSummary>,
    /// The inspector's own drawing, when this camera hosts it.
    pub overlay: Option<PlanSummary>,
    /// bevy_ui drawn over a tile camera after the tile pass (feature `ui`): its own passes, from
    /// the camera's report ([`TileViewReport::ui_pass`](crate::TileViewReport::ui_pass)).
    pub ui_pass: Option<PlanSummary>,
    /// Where the camera's bevy_ui and egui (this overlay) were drawn: in the tile pass (what it
    /// drew), or after it and why ([`TileViewReport::ui_in_pass`](crate::TileViewReport::ui_in_pass),
    /// [`TileViewReport::egui_in_pass`](crate::TileViewReport::egui_in_pass)).
    pub ui_route: Option<String>,
    /// Bevy's gizmos drawn over a tile camera after the tile pass: their own passes, from the
    /// camera's report ([`TileViewReport::gizmo_pass`](crate::TileViewReport::gizmo_pass)).
    pub gizmo_pass: Option<PlanSummary>,
    /// Bevy's post-processing (bloom and its tone mapping, feature `bloom`; FXAA, SMAA, CAS,
    /// feature `anti_alias`) and blit after the tile pass: their own passes, from the camera's
    /// report
    /// ([`TileViewReport::post_process_pass`](crate::TileViewReport::post_process_pass)).
    pub post_process_pass: Option<PlanSummary>,
    /// The compiled plan in use (tile frame, or stock Bevy's for a `Core3d` camera).
    pub compiled: Option<CompiledFrame>,
    /// The merging-off plan (for its tree).
    pub merging_off_frame: Option<CompiledFrame>,
    /// GPU times of the tile pass's subpasses.
    pub gpu_times: Option<TileGpuTimes>,
    /// CPU time the crate spent on the view, ms.
    pub cpu_ms: Option<f64>,
    /// Instances and instanced draws of the last frame, and whether their batches were kept
    /// from the frame before.
    pub instances: Option<(usize, usize, TileInstanceBatches)>,
    /// How those draws were recorded: "12 mesh draws in 3 indirect calls".
    pub mesh_draws: Option<String>,
    /// Fraction of pixels lit per sample (MSAA edges).
    pub per_sample_fraction: Option<f32>,
    /// The light clusters of the last frame, with the lights in them.
    pub clusters: Option<(TileClusterStats, usize)>,
    /// The camera's tile settings (None: not a tile camera).
    pub settings: Option<TileDeferred>,
    /// The camera's `Msaa`.
    pub msaa: Msaa,
    /// Vulkan render passes recorded for the camera in its last frame.
    pub render_passes_recorded: Option<usize>,
    /// One line per native pass, ovrgpuprofiler style ([`surface_lines`]).
    pub export: String,
    /// Remarks (fallbacks, unmerged requests...).
    pub notes: Vec<String>,
    /// What the camera sees that the tile path does not draw, one line per entity and kind
    /// ("entity (\"name\"): what"); a tile camera only. Under `TierSetting::Auto` the camera
    /// renders with `Core3d` while any is in view; with a forced tile tier it is absent.
    pub missing: Vec<String>,
    /// The meshes Bevy's own pipelines draw over the tile frame (custom materials), one line
    /// per mesh ([`TileCameraReport::drawn_over_tile`](crate::TileCameraReport::drawn_over_tile)).
    pub drawn_over_tile: Vec<String>,
    /// What the camera's `TileValidation` device would do with its frame (a tile camera with
    /// one only).
    pub validation: Option<crate::tile_deferred::validation::TileValidationReport>,
}

/// Smoothed frame time.
#[derive(Resource, Default)]
pub(crate) struct FrameClock {
    ms: Option<f64>,
}

impl FrameClock {
    fn tick(&mut self, delta_ms: f64) -> f64 {
        let ms = match self.ms {
            Some(ms) if delta_ms > 0.0 => ms + 0.1 * (delta_ms - ms),
            Some(ms) => ms,
            None => delta_ms.max(0.001),
        };
        self.ms = Some(ms);
        ms
    }
}

type CounterfactualKey = (ViewFrameDesc, DeviceCaps, u32, ShadowMaps);

/// The counterfactual plans of a view description, compiled once.
#[derive(Resource, Default)]
pub(crate) struct CounterfactualCache {
    plans: HashMap<CounterfactualKey, Counterfactuals>,
}

#[derive(Clone, Default)]
struct Counterfactuals {
    merged: Option<CompiledFrame>,
    merging_off: Option<CompiledFrame>,
    stock_forward: Option<CompiledFrame>,
    stock_deferred: Option<CompiledFrame>,
}

impl CounterfactualCache {
    /// The plans of `desc` at `msaa` samples, each with the frame's shadow maps (`shadows`:
    /// Bevy renders them whatever the path, so every plan pays their stores).
    fn get(
        &mut self,
        desc: ViewFrameDesc,
        caps: DeviceCaps,
        msaa: u32,
        shadows: ShadowMaps,
    ) -> Counterfactuals {
        if self.plans.len() > 64 {
            self.plans.clear();
        }
        self.plans
            .entry((desc, caps, msaa, shadows))
            .or_insert_with(|| {
                let stock = |path: StockBevyPath| {
                    let options = StockBevyOptions {
                        shadow_maps: shadows,
                        ..StockBevyOptions::default()
                    };
                    let graph = path.graph_with(desc.extent, desc.output_format, options);
                    compile_stock_bevy(&graph, &caps).ok()
                };
                let tile = plan::declare_with_shadows(
                    &ViewFrameDesc {
                        unmerged: false,
                        ..desc
                    },
                    &shadows,
                )
                .ok();
                Counterfactuals {
                    merged: tile.as_ref().and_then(|g| compile(g, &caps).ok()),
                    // The unmerged tier's own plan: the passes sample what earlier passes stored.
                    merging_off: plan::declare_with_shadows(
                        &ViewFrameDesc {
                            unmerged: true,
                            ..desc
                        },
                        &shadows,
                    )
                    .ok()
                    .and_then(|g| compile(&g, &caps.with_merging(false)).ok()),
                    stock_forward: stock(StockBevyPath::Forward {
                        msaa_samples: msaa.max(1),
                    }),
                    stock_deferred: stock(StockBevyPath::Deferred),
                }
            })
            .clone()
    }
}

/// What the overlay is drawn over.
#[derive(Clone, Copy, Debug, PartialEq)]
enum OverlayHost {
    /// A `Core3d` camera: bevy_egui's `egui_pass` draws into its main texture.
    Core3d,
    /// A tile camera whose render pass draws egui in its `ui` subpass: no pass of its own.
    TileInPass,
    /// A tile camera writing an image.
    TileImage,
    /// A tile camera writing a window.
    TileWindow,
}

/// The inspector's own passes, priced with the same model. Over a tile camera, the passes every
/// overlay takes there (`tile_deferred::overlays::composite::price_overlay`): the main texture cleared
/// (stored), egui drawn into it (loaded and stored), then sampled and blended over the output
/// (loaded and stored); on a window, plus the empty pass that stores the output for wgpu. Over a
/// `Core3d` camera only the egui pass is its own.
fn overlay_cost(extent: Extent, output_format: Format, host: OverlayHost) -> Option<CompiledFrame> {
    use crate::tile_deferred::overlays::composite::{
        OverlayPassNames, OverlayTarget, price_overlay,
    };
    let main_format = Format::Rgba8Srgb;
    let names = OverlayPassNames {
        clear: "inspector clear",
        draw: "egui_pass",
        composite: "inspector composite",
    };
    let target = match host {
        OverlayHost::TileInPass => return None,
        OverlayHost::TileImage => OverlayTarget::Image,
        OverlayHost::TileWindow => OverlayTarget::Window,
        OverlayHost::Core3d => {
            let mut g = FrameGraph::new(extent);
            let stored = ImportParams {
                contents_needed: true,
                needed_after_frame: true,
                clear_on_first_use: false,
                discard_on_last_use: false,
            };
            let mut main =
                g.import_attachment("main_texture", AttachmentDesc::new(main_format), stored);
            g.add_raster_pass(names.draw)
                .color(&mut main, Access::Write, None)
                .finish()
                .ok()?;
            return compile_stock_bevy(&g, &DeviceCaps::desktop()).ok();
        }
    };
    price_overlay(names, extent, main_format, output_format, target)
}

/// Computes every camera's panel (runs while the inspector is shown) from the frame's report:
/// this app's own, or (feature `remote`) the remote app's the inspector is connected to.
pub(crate) fn update_panels(
    time: Res<Time<Real>>,
    mut clock: ResMut<super::model::FrameClock>,
    mut cache: ResMut<CounterfactualCache>,
    mut panels: ResMut<TileInspectorPanels>,
    mut history: ResMut<InspectorHistory>,
    state: Res<TileInspector>,
    frame_report: TileFrameReportParam,
    #[cfg(feature = "remote")] remote: Res<super::remote::TileInspectorRemote>,
) {
    #[cfg(feature = "remote")]
    let remote_report = remote.shown();
    #[cfg(not(feature = "remote"))]
    let remote_report: Option<&crate::TileFrameReport> = None;
    let local;
    let report = match remote_report {
        Some(report) => report,
        None => {
            local = frame_report.collect();
            &local
        }
    };
    // The frame rate of the app the report comes from: its traffic is priced at it.
    let frame_ms = clock.tick(report.frame_ms);
    let fps = 1000.0 / frame_ms;
    let caps = report
        .device
        .as_ref()
        .map_or_else(DeviceCaps::desktop, |d| d.caps);
    let (device_name, device_vendor) = report.device.as_ref().map_or_else(
        || ("unknown (no device profile yet)".to_owned(), String::new()),
        |d| (d.name.clone(), d.vendor.clone()),
    );
    let now = time.elapsed_secs_f64();
    // The overlay is drawn into this app's host camera, never into a remote app's.
    let host = panels.host.filter(|_| remote_report.is_none());
    let mut list = Vec::new();
    for camera in &report.cameras {
        let entity = camera.camera;
        let view = camera.view.as_ref();
        let tile = camera.settings.is_some();
        let decision = camera.decision.as_ref();
        let requested = camera.requested_samples;
        let mut notes = Vec::new();
        let mut panel = CameraPanel {
            camera: entity,
            name: camera.name.clone(),
            tier: "Bevy Core3d".into(),
            tier_reason: String::new(),
            device_name: device_name.clone(),
            device_vendor: device_vendor.clone(),
            resolution: UVec2::from(camera.resolution),
            requested_samples: requested,
            samples: requested,
            frame_ms,
            fps,
            in_use: None,
            merging_off: None,
            stock_bevy: None,
            stock_bevy_deferred: None,
            tile_deferred_alternative: None,
            overlay: None,
            ui_pass: None,
            ui_route: None,
            gizmo_pass: None,
            post_process_pass: None,
            compiled: None,
            merging_off_frame: None,
            gpu_times: None,
            cpu_ms: None,
            instances: None,
            mesh_draws: None,
            per_sample_fraction: None,
            clusters: None,
            settings: camera.settings.clone(),
            msaa: Msaa::from_samples(requested),
            render_passes_recorded: None,
            export: String::new(),
            notes: Vec::new(),
            missing: camera.missing.clone(),
            drawn_over_tile: camera.drawn_over_tile.clone(),
            validation: camera.validation.clone(),
        };
        let context = PanelContext {
            caps: &caps,
            fps,
            requested,
        };
        let output_format = match (view, tile && camera.on_tile_path) {
            // The tile frame's own output attachment: a window's real swapchain format.
            (Some(view), true) => {
                tile_panel(&mut panel, &mut notes, view, decision, &mut cache, &context)
            }
            // Falling back for what it sees, or Bevy's path timed or kept as the faster.
            _ if tile
                && decision
                    .is_some_and(|d| d.missing_fallback.is_some() || d.measured.is_some()) =>
            {
                let decision = decision.expect("checked by the guard");
                let output_format = camera.output_format;
                fallback_panel(&mut panel, decision, output_format, &mut cache, &context);
                output_format
            }
            _ => {
                let why = match (tile, camera.on_tile_path) {
                    (true, false) => {
                        "TileDeferred on the camera, but the device cannot run the \
                                      tile path (not Vulkan): Bevy's Core3d draws it"
                    }
                    (true, true) => {
                        "tile camera without a report yet (first frames, or its \
                                     frame failed: see the log)"
                    }
                    _ => "no TileDeferred component: Bevy's Core3d draws it",
                };
                core3d_panel(&mut panel, why, camera.output_format, &mut cache, &context);
                camera.output_format
            }
        };
        if host == Some(entity) {
            let extent = Extent::new(panel.resolution.x.max(1), panel.resolution.y.max(1));
            // The tile pass draws the overlay unless its report says why it did not.
            let drawn_after = view.is_some_and(|r| r.egui_after_pass_reason.is_some());
            // A window whose image Bevy's blit wrote after post-processing is written for wgpu
            // already, as an image is.
            let post_processed = view.is_some_and(|r| !r.post_processing.is_empty());
            let window_target = OverlayTarget::of_output(camera.window_target, post_processed)
                == OverlayTarget::Window;
            let overlay_host = match (panel.in_use_is_tile(), drawn_after, window_target) {
                (false, _, _) => OverlayHost::Core3d,
                (true, false, _) => OverlayHost::TileInPass,
                (true, true, true) => OverlayHost::TileWindow,
                (true, true, false) => OverlayHost::TileImage,
            };
            panel.overlay = if overlay_host == OverlayHost::TileInPass {
                Some(PlanSummary::nothing("inspector overlay (in the tile pass)"))
            } else {
                overlay_cost(extent, output_format, overlay_host)
                    .map(|f| PlanSummary::of("inspector overlay (its own passes)", &f, fps))
            };
        }
        panel.notes = notes;
        let samples = history.cameras.entry(entity).or_default();
        samples.push_back([
            now,
            panel.in_use.as_ref().map_or(0.0, |p| p.gb_per_s),
            panel.gpu_times.map_or(f64::NAN, |t| t.total_ms()),
        ]);
        while samples
            .front()
            .is_some_and(|s| now - s[0] > state.history_seconds)
        {
            samples.pop_front();
        }
        list.push(panel);
    }
    history
        .cameras
        .retain(|e, _| list.iter().any(|p| p.camera == *e));
    panels.cameras = list;
    panels.updates += 1;
}

/// What every panel's plans are priced with.
struct PanelContext<'a> {
    caps: &'a DeviceCaps,
    fps: f64,
    /// The camera's `Msaa` samples.
    requested: u32,
}

/// A camera the tile path draws: its tier, what it measured, and the plans it is compared
/// with. Returns the output's format.
fn tile_panel(
    panel: &mut CameraPanel,
    notes: &mut Vec<String>,
    report: &crate::TileViewReport,
    decision: Option<&crate::tiers::TierDecision>,
    cache: &mut CounterfactualCache,
    context: &PanelContext,
) -> Format {
    let PanelContext {
        caps,
        fps,
        requested,
    } = *context;
    let caps = *caps;
    let desc = plan::view_desc_of(&report.compiled);
    panel.samples = report.samples;
    let unmerged = plan::samples_attachments(&report.compiled);
    match decision {
        Some(decision) => {
            panel.tier = decision.tier.to_string();
            panel.tier_reason = decision.reasons.join("; ");
            if let Some(failure) = &decision.failure {
                notes.push(format!("lowered after a failure: {failure}"));
            }
        }
        None => {
            panel.tier = match (report.samples, unmerged) {
                (1, false) => "tile-deferred".into(),
                (n, false) => format!("tile-deferred + {n}x MSAA"),
                (1, true) => "tile-deferred, unmerged (debug)".into(),
                (n, true) => format!("tile-deferred + {n}x MSAA, unmerged (debug)"),
            };
            panel.tier_reason = "device not probed yet".into();
        }
    }
    if report.samples != requested {
        notes.push(format!(
            "asked for {requested}x MSAA, rendering {}x (device sample counts or \
                 tile memory; see the log)",
            report.samples
        ));
    }
    if let Some(desc) = desc {
        panel.resolution = UVec2::new(desc.extent.width, desc.extent.height);
    }
    // The frame with Bevy's shadow passes: what it costs, and the passes the tree
    // lists (each shadow map with its size and store).
    panel.in_use = Some(PlanSummary::of(&panel.tier, &report.priced, fps));
    panel.gpu_times = report.gpu_times;
    panel.cpu_ms = Some(report.cpu_ms);
    panel.instances = Some((report.instances, report.draws, report.instance_batches));
    panel.mesh_draws = Some(mesh_draws_line(
        &report.mesh_draws,
        report.draws,
        report.mesh_draw_calls,
    ));
    panel.per_sample_fraction = report.per_sample_fraction;
    panel.clusters = Some((report.clusters, report.clustered_lights));
    panel.render_passes_recorded = Some(report.render_passes_recorded);
    panel.ui_pass = report
        .ui_pass
        .as_ref()
        .map(|f| PlanSummary::of("bevy_ui (its own passes)", f, fps));
    panel.ui_route = ui_route(report);
    panel.gizmo_pass = report
        .gizmo_pass
        .as_ref()
        .map(|f| PlanSummary::of("gizmos (their own passes)", f, fps));
    panel.post_process_pass = report.post_process_pass.as_ref().map(|f| {
        let label = format!(
            "{} and blit (Bevy's passes)",
            report.post_processing.join(", ")
        );
        PlanSummary::of(label, f, fps)
    });
    panel.export = surface_lines(&report.compiled, report.gpu_times.as_ref(), &caps);
    if let Some(desc) = desc {
        let plans = cache.get(desc, caps, requested, report.shadow_maps);
        panel.merging_off = plans
            .merging_off
            .as_ref()
            .map(|f| PlanSummary::of("merging off", f, fps));
        panel.merging_off_frame = plans.merging_off;
        panel.stock_bevy = plans
            .stock_forward
            .as_ref()
            .map(|f| PlanSummary::of(stock_label(requested), f, fps));
        panel.stock_bevy_deferred = plans
            .stock_deferred
            .as_ref()
            .map(|f| PlanSummary::of("Bevy deferred", f, fps));
    }
    panel.compiled = Some(report.priced.clone());
    report
        .compiled
        .attachment_named(names::OUTPUT)
        .map_or(Format::Bgra8Srgb, |a| a.format)
}

/// A tile camera that falls back while something is missing, or whose device measured Bevy's
/// path faster: Bevy's plans, and the tile path's as the alternative.
fn fallback_panel(
    panel: &mut CameraPanel,
    decision: &crate::tiers::TierDecision,
    output_format: Format,
    cache: &mut CounterfactualCache,
    context: &PanelContext,
) {
    panel.tier = decision.tier.to_string();
    panel.tier_reason = decision.reasons.join("; ");
    let extent = Extent::new(panel.resolution.x.max(1), panel.resolution.y.max(1));
    let desc = ViewFrameDesc::new(extent, output_format, context.requested);
    let plans = cache.get(desc, *context.caps, context.requested, ShadowMaps::NONE);
    let alternative = if decision.missing_fallback.is_some() {
        "tile-deferred (once nothing is missing)"
    } else if matches!(
        decision.measured,
        Some(crate::tiers::TierMeasurement::Timing { .. })
    ) {
        "tile-deferred (being timed against Bevy's Core3d)"
    } else {
        "tile-deferred (measured slower on this GPU)"
    };
    show_core3d_plans(
        panel,
        plans,
        alternative,
        context.requested,
        context.fps,
        context.caps,
    );
}

/// A camera Bevy's `Core3d` draws, and why.
fn core3d_panel(
    panel: &mut CameraPanel,
    why: &str,
    output_format: Format,
    cache: &mut CounterfactualCache,
    context: &PanelContext,
) {
    let PanelContext {
        caps,
        fps,
        requested,
    } = *context;
    panel.tier_reason = why.into();
    let extent = Extent::new(panel.resolution.x.max(1), panel.resolution.y.max(1));
    let desc = ViewFrameDesc::new(extent, output_format, requested);
    let mut plans = cache.get(desc, *caps, requested, ShadowMaps::NONE);
    panel.stock_bevy_deferred = plans
        .stock_deferred
        .as_ref()
        .map(|f| PlanSummary::of("Bevy deferred", f, fps));
    panel.merging_off = plans
        .merging_off
        .as_ref()
        .map(|f| PlanSummary::of("tile-deferred, merging off", f, fps));
    panel.merging_off_frame = plans.merging_off.take();
    show_core3d_plans(
        panel,
        plans,
        "tile-deferred (if enabled)",
        requested,
        fps,
        caps,
    );
}

/// A camera Bevy's `Core3d` draws: stock Bevy's forward plan is the one in use (and what the
/// tree and export show), the tile plan the alternative, labelled `alternative`.
fn show_core3d_plans(
    panel: &mut CameraPanel,
    plans: Counterfactuals,
    alternative: &str,
    requested: u32,
    fps: f64,
    caps: &DeviceCaps,
) {
    panel.in_use = plans
        .stock_forward
        .as_ref()
        .map(|f| PlanSummary::of(stock_label(requested), f, fps));
    panel.stock_bevy = panel.in_use.clone();
    panel.tile_deferred_alternative = plans
        .merged
        .as_ref()
        .map(|f| PlanSummary::of(alternative, f, fps));
    if let Some(frame) = &plans.stock_forward {
        panel.export = surface_lines(frame, None, caps);
    }
    panel.compiled = plans.stock_forward;
}

fn stock_label(samples: u32) -> String {
    StockBevyPath::Forward {
        msaa_samples: samples.max(1),
    }
    .label()
}

impl CameraPanel {
    /// Whether the tile path draws this camera.
    pub fn in_use_is_tile(&self) -> bool {
        self.tier.starts_with("tile-deferred")
    }
}

/// Bytes an attachment of `pass` loads and stores.
pub(crate) fn attachment_traffic(
    pass: &NativePass,
    index: usize,
    views: u32,
) -> (Option<u64>, Option<u64>) {
    let a = &pass.attachments[index];
    let bytes = image_bytes(pass.extent, a.format, a.samples, views.max(1));
    (
        a.load.reads_memory().then_some(bytes),
        a.store.writes_memory().then_some(bytes),
    )
}

fn mb(bytes: u64) -> String {
    if bytes == 0 {
        "0 B".into()
    } else {
        format!("{:.2} MB", bytes_to_mb(bytes))
    }
}

fn depth_stencil_bits(format: Format) -> (u32, u32) {
    match format {
        Format::Depth16 => (16, 0),
        Format::Depth24Stencil8 => (24, 8),
        Format::Depth32Float => (32, 0),
        Format::Depth32FloatStencil8 => (32, 8),
        _ => (0, 0),
    }
}

/// One line per native pass in the style of ovrgpuprofiler's surface lines (seed 000):
/// `Surface 1 | 1280x720 | color 160bit, depth 32bit, stencil 0 bit, MSAA 1 | 1 1280x720 bins |
/// 0.84 ms | 3 subpasses : gbuffer 0.31ms lighting 0.42ms tonemap 0.11ms | LoadColor 0 B
/// StoreColor 3.69 MB LoadDepthStencil 0 B StoreDepthStencil 0 B`. "bins" is the Adreno GMEM
/// model's bin layout; on a Mali budget it reads `tile 160/256 bits` (or `spills`), without a
/// tile budget `no tile budget`.
pub fn surface_lines(
    frame: &CompiledFrame,
    gpu: Option<&TileGpuTimes>,
    caps: &DeviceCaps,
) -> String {
    let mut out = String::new();
    for (i, pass) in frame.native_passes.iter().enumerate() {
        let samples = pass.samples.max(1);
        let color_bits = pass.footprint.color_bytes_per_pixel * 8 / samples;
        let (depth_bits, stencil_bits) = pass
            .attachments
            .iter()
            .find(|a| a.format.is_depth())
            .map_or((0, 0), |a| depth_stencil_bits(a.format));
        let bins = match pass.footprint.verdict {
            TileVerdict::Bins(b) => format!("{} {}x{} bins", b.count(), b.width, b.height),
            TileVerdict::Fits {
                used_bits,
                budget_bits,
            } => format!("tile {used_bits}/{budget_bits} bits"),
            TileVerdict::Spills {
                used_bits,
                budget_bits,
            } => format!("spills {used_bits}/{budget_bits} bits"),
            TileVerdict::GmemTooSmall { bytes_per_pixel } => {
                format!("GMEM too small ({bytes_per_pixel} B/px)")
            }
            TileVerdict::Unlimited => "no tile budget".into(),
        };
        // The crate's timestamps mark the end of each logical pass (G-buffer, lighting,
        // tonemap): a native pass takes the sum of its subpasses' times, merged or not. (Where
        // the lighting tone maps, there is no tonemap subpass and its time is the lighting's.)
        let time_of = |name: &str| {
            gpu.and_then(|t| match name {
                names::GBUFFER => Some(t.gbuffer_ms),
                names::LIGHTING => Some(t.lighting_ms),
                names::TONEMAP => Some(t.tonemap_ms),
                _ => None,
            })
        };
        let times: Option<Vec<f64>> = pass.subpasses.iter().map(|s| time_of(&s.name)).collect();
        let ms = times.as_ref().map_or_else(
            || "n/a ms".into(),
            |t| format!("{:.3} ms", t.iter().sum::<f64>()),
        );
        let mut stages = format!("{} subpasses :", pass.subpasses.len());
        for subpass in &pass.subpasses {
            match time_of(&subpass.name) {
                Some(t) => {
                    let _ = write!(stages, " {} {t:.3}ms", subpass.name);
                }
                None => {
                    let _ = write!(stages, " {}", subpass.name);
                }
            }
        }
        let (mut load_c, mut store_c, mut load_d, mut store_d) = (0, 0, 0, 0);
        for (index, a) in pass.attachments.iter().enumerate() {
            let (load, store) = attachment_traffic(pass, index, caps.views);
            if a.format.is_depth() {
                load_d += load.unwrap_or(0);
                store_d += store.unwrap_or(0);
            } else {
                load_c += load.unwrap_or(0);
                store_c += store.unwrap_or(0);
            }
        }
        let _ = writeln!(
            out,
            "Surface {} | {}x{} | color {color_bits}bit, depth {depth_bits}bit, stencil \
             {stencil_bits} bit, MSAA {samples} | {bins} | {ms} | {stages} | LoadColor {} \
             StoreColor {} LoadDepthStencil {} StoreDepthStencil {}",
            i + 1,
            pass.extent.width,
            pass.extent.height,
            mb(load_c),
            mb(store_c),
            mb(load_d),
            mb(store_d),
        );
    }
    out
}

/// How an attachment's op reads in the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpVerdict {
    /// Moves nothing.
    Free,
    /// Moves memory that the frame needs (the camera's image).
    Needed,
    /// Loads the camera's image: avoidable when the camera clears the whole target.
    Conditional,
    /// Moves an intermediate to or from memory: keeping it on tile would avoid it.
    Avoidable,
}

/// Verdicts of an attachment's load and store ops.
pub(crate) fn op_verdicts(name: &str, load: &LoadOp, store: StoreOp) -> (OpVerdict, OpVerdict) {
    let output = name == names::OUTPUT;
    let load = match (load.reads_memory(), output) {
        (false, _) => OpVerdict::Free,
        (true, true) => OpVerdict::Conditional,
        (true, false) => OpVerdict::Avoidable,
    };
    let store = match (store.writes_memory(), output) {
        (false, _) => OpVerdict::Free,
        (true, true) => OpVerdict::Needed,
        (true, false) => OpVerdict::Avoidable,
    };
    (load, store)
}

/// Where a tile camera's bevy_ui and egui (this overlay) were drawn this frame, in a line: in
/// the tile render pass (what it drew), after it (why), or both.
fn ui_route(report: &crate::TileViewReport) -> Option<String> {
    let ui_in_pass = report.ui_in_pass.map(|drawn| {
        format!(
            "bevy_ui in the tile pass: {} items, {} quads, {} draws",
            drawn.items, drawn.quads, drawn.batches
        )
    });
    let ui_after = report
        .ui_after_pass_reason
        .as_ref()
        .map(|why| format!("bevy_ui after the tile pass: {why}"));
    let egui_in_pass = report.egui_in_pass.map(|drawn| {
        format!(
            "egui in the tile pass: {} meshes, {} triangles",
            drawn.meshes, drawn.triangles
        )
    });
    let egui_after = report
        .egui_after_pass_reason
        .as_ref()
        .map(|why| format!("egui after the tile pass: {why}"));
    let parts: Vec<String> = [ui_in_pass, ui_after, egui_in_pass, egui_after]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// "12 mesh draws in 3 indirect calls", or "12 mesh draws, each a call of its own: the device
/// has no drawIndirectFirstInstance".
pub(crate) fn mesh_draws_line(mode: &TileMeshDrawMode, draws: usize, calls: usize) -> String {
    match mode {
        TileMeshDrawMode::Indirect { .. } => {
            format!("{draws} mesh draws in {calls} indirect calls")
        }
        TileMeshDrawMode::Direct { why } => {
            format!("{draws} mesh draws, each a call of its own: {why}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mesh_draws_line_says_how_many_calls_and_why_direct() {
        let indirect = TileMeshDrawMode::Indirect {
            max_draws_per_call: 1 << 16,
        };
        assert_eq!(
            mesh_draws_line(&indirect, 12, 3),
            "12 mesh draws in 3 indirect calls"
        );
        let direct = TileMeshDrawMode::Direct {
            why: "the device has no drawIndirectFirstInstance".into(),
        };
        assert_eq!(
            mesh_draws_line(&direct, 12, 12),
            "12 mesh draws, each a call of its own: the device has no drawIndirectFirstInstance"
        );
    }

    fn desc(samples: u32) -> ViewFrameDesc {
        ViewFrameDesc::new(Extent::new(1280, 720), Format::Bgra8Srgb, samples)
    }

    #[test]
    fn the_view_description_is_recovered_from_its_plan() {
        for samples in [1, 4] {
            for caps in [DeviceCaps::desktop(), DeviceCaps::adreno(3 << 20)] {
                let frame = compile(&plan::declare(&desc(samples)).unwrap(), &caps).unwrap();
                assert_eq!(plan::view_desc_of(&frame), Some(desc(samples)));
            }
        }
        // A kept output: loaded at 1x; with MSAA the resolve writes only the render area, so
        // it is not loaded and the description must not be read from its load op.
        for samples in [1, 4] {
            let mut keep = desc(samples);
            keep.keep_output = true;
            let frame = compile(&plan::declare(&keep).unwrap(), &DeviceCaps::desktop()).unwrap();
            assert_eq!(plan::view_desc_of(&frame), Some(keep), "{samples}x");
        }
    }

    #[test]
    fn merging_off_costs_more_than_the_merged_plan() {
        let caps = DeviceCaps::mali_valhall();
        let merged = compile(&plan::declare(&desc(1)).unwrap(), &caps).unwrap();
        let unmerged = ViewFrameDesc {
            unmerged: true,
            ..desc(1)
        };
        let off = compile(
            &plan::declare(&unmerged).unwrap(),
            &caps.with_merging(false),
        )
        .unwrap();
        assert!(off.native_passes.len() > merged.native_passes.len());
        assert!(off.cost.bytes() > merged.cost.bytes());
    }

    #[test]
    fn surface_lines_follow_the_plan() {
        let caps = DeviceCaps::adreno(3 << 20);
        let frame = compile(&plan::declare(&desc(1)).unwrap(), &caps).unwrap();
        let times = TileGpuTimes {
            gbuffer_ms: 0.5,
            lighting_ms: 0.25,
            tonemap_ms: 0.125,
        };
        let text = surface_lines(&frame, Some(&times), &caps);
        assert_eq!(text.lines().count(), frame.native_passes.len());
        let line = text.lines().next().unwrap();
        assert!(line.starts_with("Surface 1 | 1280x720 | color "), "{line}");
        assert!(
            line.contains("depth 32bit, stencil 0 bit, MSAA 1"),
            "{line}"
        );
        assert!(
            line.contains(" bins | 0.750 ms | 2 subpasses : gbuffer 0.500ms lighting 0.250ms"),
            "{line}"
        );
        // Only the 1280x720 BGRA8 output is stored: 3.69 MB.
        assert!(
            line.ends_with(
                "LoadColor 0 B StoreColor 3.69 MB LoadDepthStencil 0 B StoreDepthStencil 0 B"
            ),
            "{line}"
        );
        // The unmerged tier: one line per render pass, each with its own pass's time.
        let unmerged = ViewFrameDesc {
            unmerged: true,
            ..desc(1)
        };
        let off = compile(
            &plan::declare(&unmerged).unwrap(),
            &caps.with_merging(false),
        )
        .unwrap();
        let text = surface_lines(&off, Some(&times), &caps);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].contains(" | 0.500 ms | 1 subpasses : gbuffer 0.500ms"),
            "{text}"
        );
        assert!(
            lines[1].contains(" | 0.250 ms | 1 subpasses : lighting 0.250ms"),
            "{text}"
        );
        assert!(
            lines[2].contains(" | 0.125 ms | 1 subpasses : tonemap 0.125ms"),
            "{text}"
        );
        // Without timestamps: "n/a".
        assert!(surface_lines(&off, None, &caps).contains("n/a ms"));
    }

    #[test]
    fn overlay_cost_is_priced() {
        let extent = Extent::new(100, 100);
        let tile = overlay_cost(extent, Format::Bgra8Srgb, OverlayHost::TileImage).unwrap();
        // clear store + egui load/store + composite: texture read, output load and store.
        assert_eq!(tile.cost.bytes(), 6 * 100 * 100 * 4, "{}", tile.describe());
        // On a window, plus the empty pass that stores the output for wgpu.
        let window = overlay_cost(extent, Format::Bgra8Srgb, OverlayHost::TileWindow).unwrap();
        assert_eq!(
            window.cost.bytes(),
            7 * 100 * 100 * 4,
            "{}",
            window.describe()
        );
        assert_eq!(window.render_pass_count(), tile.render_pass_count() + 1);
        let core = overlay_cost(extent, Format::Bgra8Srgb, OverlayHost::Core3d).unwrap();
        assert_eq!(core.cost.bytes(), 2 * 100 * 100 * 4, "{}", core.describe());
        // In the tile pass: nothing of its own to price.
        assert!(overlay_cost(extent, Format::Bgra8Srgb, OverlayHost::TileInPass).is_none());
    }

    #[test]
    fn intermediate_traffic_is_flagged() {
        let caps = DeviceCaps::desktop();
        let off = compile(&plan::declare(&desc(1)).unwrap(), &caps.with_merging(false)).unwrap();
        let avoidable = off
            .native_passes
            .iter()
            .flat_map(|n| &n.attachments)
            .filter(|a| {
                let (l, s) = op_verdicts(&a.name, &a.load, a.store);
                l == OpVerdict::Avoidable || s == OpVerdict::Avoidable
            })
            .count();
        assert!(avoidable > 0);
        let (_, store) = op_verdicts(names::OUTPUT, &LoadOp::DontCare, StoreOp::Store);
        assert_eq!(store, OpVerdict::Needed);
    }
}
