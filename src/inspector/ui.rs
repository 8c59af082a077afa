//! The egui window. It only displays [`CameraPanel`] values (computed in `model`) and writes
//! [`InspectorToggle`] messages; it decides nothing itself.

use super::{
    InspectorChange, InspectorHistory, InspectorToggle, TileInspector, TileInspectorOverlay,
    TileInspectorPanels,
    model::{CameraPanel, OpVerdict, PlanSummary, attachment_traffic, op_verdicts},
};
use crate::{
    MsaaShading, TileDebugView, TileInstanceBatches,
    frame_graph::{CompiledFrame, SubpassIndex, TileVerdict, bytes_to_mb},
    tiers::{RenderTier, TierSetting},
};
use bevy::prelude::*;
use bevy_egui::{EguiContext, egui};
use egui::{Color32, RichText};

const RED: Color32 = Color32::from_rgb(255, 110, 100);
const AMBER: Color32 = Color32::from_rgb(255, 190, 70);
const GREEN: Color32 = Color32::from_rgb(120, 210, 120);
const GREY: Color32 = Color32::from_rgb(170, 170, 170);
/// Height of a control a finger hits reliably, in egui points (dp on a phone).
const FINGER_HEIGHT: f32 = 40.0;
/// Screens narrower than this (in points) get a window as wide as the screen at most, scrolling
/// sideways: phones in portrait; the overlay's tables need about 530 points.
const NARROW_SCREEN: f32 = 640.0;

/// Which plan the tree shows.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum TreePlan {
    #[default]
    InUse,
    MergingOff,
}

/// Draws the inspector into its context (runs in the context's egui pass).
pub(super) fn inspector_ui(
    mut contexts: Query<&mut EguiContext, With<TileInspectorOverlay>>,
    mut panels: ResMut<TileInspectorPanels>,
    history: Res<InspectorHistory>,
    mut state: ResMut<TileInspector>,
    mut toggles: MessageWriter<InspectorToggle>,
    mut tree_plan: Local<TreePlan>,
    #[cfg(feature = "remote")] mut remote: ResMut<super::TileInspectorRemote>,
    #[cfg(feature = "remote")] mut address: Local<String>,
    #[cfg(feature = "remote")] time: Res<Time<Real>>,
) {
    let Ok(mut context) = contexts.single_mut() else {
        return;
    };
    let ctx = context.get_mut().clone();
    if state.touch_layout && ctx.global_style().spacing.interact_size.y < FINGER_HEIGHT {
        ctx.all_styles_mut(size_for_fingers);
    }
    let hide_hint = match state.toggle_fingers {
        0 => format!("{:?} hides this overlay", state.toggle_key),
        n => format!(
            "{:?} or a {n}-finger tap hides this overlay",
            state.toggle_key
        ),
    };
    // A phone in portrait is about 400 points wide: there the window fits the screen and its
    // wide tables scroll sideways (the window would otherwise grow to their width).
    let screen_width = ctx.content_rect().width();
    let narrow = screen_width < NARROW_SCREEN;
    let mut open = true;
    let panels_ref = &*panels;
    let shown = egui::Window::new("bevy_tile_deferred inspector")
        .open(&mut open)
        .default_pos([8.0, 8.0])
        .default_width(440.0_f32.min(screen_width - 16.0).max(200.0))
        .max_width((screen_width - 16.0).max(200.0))
        .default_height(600.0)
        .scroll([narrow, true])
        .show(&ctx, |ui| {
            ui.label(RichText::new(hide_hint).small());
            // Another app's frame (read over BRP) is shown read-only: the toggles act on this
            // app's cameras.
            #[cfg(feature = "remote")]
            let read_only = remote_app(ui, &mut remote, &mut address, time.elapsed_secs_f64());
            #[cfg(not(feature = "remote"))]
            let read_only = false;
            if panels_ref.cameras.is_empty() {
                ui.label("No active 3D camera yet.");
                return;
            }
            let selected = state
                .selected
                .filter(|e| panels_ref.get(*e).is_some())
                .or(panels_ref.host)
                .filter(|e| panels_ref.get(*e).is_some())
                .unwrap_or(panels_ref.cameras[0].camera);
            if panels_ref.cameras.len() > 1 {
                let mut choice = selected;
                egui::ComboBox::from_label("camera")
                    .selected_text(panels_ref.get(selected).map_or("", |p| p.name.as_str()))
                    .show_ui(ui, |ui| {
                        for p in &panels_ref.cameras {
                            ui.selectable_value(&mut choice, p.camera, &p.name);
                        }
                    });
                if choice != selected {
                    state.selected = Some(choice);
                }
            }
            let Some(panel) = panels_ref.get(selected) else {
                return;
            };
            summary(ui, panel);
            // Right under the summary: a short header while off, the device's verdict while on.
            validation(ui, panel, (!read_only).then_some(&mut toggles));
            plots(ui, panel, history.cameras.get(&panel.camera));
            if !read_only {
                controls(ui, panel, &mut toggles);
            }
            let frame = match *tree_plan {
                TreePlan::InUse => panel.compiled.as_ref(),
                TreePlan::MergingOff => panel.merging_off_frame.as_ref(),
            };
            ui.collapsing("Native passes", |ui| {
                ui.horizontal(|ui| {
                    ui.label("plan:");
                    ui.radio_value(&mut *tree_plan, TreePlan::InUse, "in use");
                    ui.radio_value(&mut *tree_plan, TreePlan::MergingOff, "merging off");
                });
                match frame {
                    Some(frame) => native_pass_tree(ui, frame),
                    None => {
                        ui.label("no plan");
                    }
                }
            });
            if let Some(frame) = frame {
                breaks(ui, frame);
                dependencies(ui, frame);
                footprints(ui, frame);
            }
            gpu_times(ui, panel);
            msaa(ui, panel);
            clusters(ui, panel);
            export(ui, panel);
        });
    if !open {
        state.visible = false;
    }
    let scale = ctx.pixels_per_point();
    panels.overlay_rect = shown.map(|shown| {
        let r = shown.response.rect;
        Rect::new(
            r.min.x * scale,
            r.min.y * scale,
            r.max.x * scale,
            r.max.y * scale,
        )
    });
}

/// Controls a finger can hit: Android's guideline is 48 dp, and bevy_egui already makes one egui
/// point one dp (it scales by the window's scale factor), so buttons, checkboxes and combo boxes
/// get about 40 points of height and the scroll bar is wide enough to drag.
fn size_for_fingers(style: &mut egui::Style) {
    style.spacing.interact_size.y = style.spacing.interact_size.y.max(FINGER_HEIGHT);
    style.spacing.button_padding = style.spacing.button_padding.max(egui::vec2(12.0, 8.0));
    style.spacing.item_spacing = style.spacing.item_spacing.max(egui::vec2(8.0, 8.0));
    style.spacing.icon_width = style.spacing.icon_width.max(24.0);
    style.spacing.icon_width_inner = style.spacing.icon_width_inner.max(14.0);
    style.spacing.scroll.bar_width = style.spacing.scroll.bar_width.max(16.0);
}

fn plan_row(ui: &mut egui::Ui, plan: &PlanSummary, reference: Option<&PlanSummary>) {
    ui.label(&plan.label);
    ui.label(plan.render_passes.to_string());
    ui.label(format!("{:.2}", plan.mb_per_frame));
    ui.label(format!("{:.3}", plan.gb_per_s));
    ui.label(format!("{:.0}", plan.milliwatts));
    match reference {
        Some(r) if r.bytes_per_frame > 0 && r != plan => {
            let ratio = plan.bytes_per_frame as f64 / r.bytes_per_frame as f64;
            let color = if ratio > 1.0 { RED } else { GREEN };
            ui.colored_label(color, format!("x{ratio:.1}"));
        }
        _ => {
            ui.label("");
        }
    }
    ui.end_row();
}

fn summary(ui: &mut egui::Ui, panel: &CameraPanel) {
    egui::CollapsingHeader::new("Summary")
        .default_open(true)
        .show(ui, |ui| {
            egui::Grid::new("summary").num_columns(2).show(ui, |ui| {
                ui.label("tier");
                ui.label(RichText::new(&panel.tier).strong())
                    .on_hover_text(&panel.tier_reason);
                ui.end_row();
                ui.label("device");
                ui.label(format!("{} ({})", panel.device_name, panel.device_vendor));
                ui.end_row();
                ui.label("resolution");
                ui.label(format!("{}x{}", panel.resolution.x, panel.resolution.y));
                ui.end_row();
                ui.label("samples");
                ui.label(if panel.samples == panel.requested_samples {
                    panel.samples.to_string()
                } else {
                    format!("{} (asked {})", panel.samples, panel.requested_samples)
                });
                ui.end_row();
                ui.label("frame");
                ui.label(format!("{:.2} ms ({:.0} fps)", panel.frame_ms, panel.fps));
                ui.end_row();
            });
            ui.add(egui::Label::new(RichText::new(&panel.tier_reason).small()).wrap());
            ui.separator();
            ui.label(RichText::new("attachment traffic at the current frame rate").small());
            egui::Grid::new("costs")
                .num_columns(6)
                .striped(true)
                .show(ui, |ui| {
                    for head in [
                        "plan",
                        "render passes",
                        "MB/frame",
                        "GB/s",
                        "mW",
                        "vs in use",
                    ] {
                        ui.label(RichText::new(head).strong());
                    }
                    ui.end_row();
                    let reference = panel.in_use.as_ref();
                    // On a Core3d camera the plan in use is stock Bevy's forward plan.
                    let stock = panel.stock_bevy.as_ref().filter(|_| panel.in_use_is_tile());
                    for plan in [
                        panel.in_use.as_ref(),
                        panel.merging_off.as_ref(),
                        stock,
                        panel.stock_bevy_deferred.as_ref(),
                        panel.tile_deferred_alternative.as_ref(),
                        panel.post_process_pass.as_ref(),
                        panel.gizmo_pass.as_ref(),
                        panel.ui_pass.as_ref(),
                        panel.overlay.as_ref(),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        plan_row(ui, plan, reference);
                    }
                });
            if let Some(route) = &panel.ui_route {
                ui.label(route);
            }
            for note in &panel.notes {
                ui.colored_label(AMBER, note);
            }
            if !panel.drawn_over_tile.is_empty() {
                ui.label(format!(
                    "Drawn by Bevy over the tile frame ({}):",
                    panel.drawn_over_tile.len()
                ));
                for line in &panel.drawn_over_tile {
                    ui.label(format!("  {line}"));
                }
            }
            if !panel.missing.is_empty() {
                ui.colored_label(
                    AMBER,
                    format!("Not drawn by the tile path ({}):", panel.missing.len()),
                );
                for line in &panel.missing {
                    ui.colored_label(AMBER, format!("  {line}"));
                }
            }
        });
}

fn plots(
    ui: &mut egui::Ui,
    panel: &CameraPanel,
    history: Option<&std::collections::VecDeque<[f64; 3]>>,
) {
    egui::CollapsingHeader::new("Bandwidth and GPU time")
        .default_open(true)
        .show(ui, |ui| {
            let Some(history) = history.filter(|h| !h.is_empty()) else {
                ui.label("no samples yet");
                return;
            };
            let start = history.back().map_or(0.0, |s| s[0]);
            let gbps: Vec<[f64; 2]> = history.iter().map(|s| [s[0] - start, s[1]]).collect();
            let gpu: Vec<[f64; 2]> = history
                .iter()
                .filter(|s| s[2].is_finite())
                .map(|s| [s[0] - start, s[2]])
                .collect();
            ui.columns(2, |columns| {
                history_plot(&mut columns[0], ("gbps", panel.camera), "GB/s", gbps);
                if gpu.is_empty() {
                    columns[1].label("GPU ms: not available (no timestamps)");
                } else {
                    history_plot(&mut columns[1], ("gpu_ms", panel.camera), "GPU ms", gpu);
                }
            });
        });
}

fn controls(ui: &mut egui::Ui, panel: &CameraPanel, toggles: &mut MessageWriter<InspectorToggle>) {
    egui::CollapsingHeader::new("Toggles")
        .default_open(true)
        .show(ui, |ui| {
            let camera = panel.camera;
            let mut send = |change| {
                toggles.write(InspectorToggle { camera, change });
            };
            let mut msaa = panel.msaa;
            egui::ComboBox::from_label("MSAA")
                .selected_text(msaa_name(msaa))
                .show_ui(ui, |ui| {
                    for m in [Msaa::Off, Msaa::Sample2, Msaa::Sample4, Msaa::Sample8] {
                        ui.selectable_value(&mut msaa, m, msaa_name(m));
                    }
                });
            if msaa != panel.msaa {
                send(InspectorChange::Msaa(msaa));
            }
            let Some(settings) = &panel.settings else {
                ui.label("not a tile camera: the tile toggles need TileDeferred on it");
                return;
            };
            let mut tier = settings.tier;
            let samples = panel.msaa.samples().max(2);
            let tier_choices = [
                TierSetting::Auto,
                TierSetting::Force(RenderTier::TileDeferredMsaa { samples }),
                TierSetting::Force(RenderTier::TileDeferred),
                TierSetting::Force(RenderTier::Unmerged {
                    samples: panel.msaa.samples(),
                }),
                TierSetting::Force(RenderTier::Forward),
            ];
            egui::ComboBox::from_label("tier override")
                .selected_text(tier_setting_name(tier))
                .show_ui(ui, |ui| {
                    for choice in tier_choices {
                        ui.selectable_value(&mut tier, choice, tier_setting_name(choice));
                    }
                });
            if tier != settings.tier {
                send(InspectorChange::Tier(tier));
            }
            let mut merge = settings.merge_subpasses;
            if ui
                .checkbox(&mut merge, "merge passes into subpasses")
                .on_hover_text("off: the unmerged debug tier (separate render passes)")
                .changed()
            {
                send(InspectorChange::MergeSubpasses(merge));
            }
            let mut shading = settings.msaa_shading;
            egui::ComboBox::from_label("MSAA shading")
                .selected_text(shading_name(shading))
                .show_ui(ui, |ui| {
                    for s in [MsaaShading::EdgeSelective, MsaaShading::EverySample] {
                        ui.selectable_value(&mut shading, s, shading_name(s));
                    }
                });
            if shading != settings.msaa_shading {
                send(InspectorChange::MsaaShading(shading));
            }
            let mut view = settings.debug_view;
            egui::ComboBox::from_label("debug view")
                .selected_text(view.to_string())
                .show_ui(ui, |ui| {
                    for v in TileDebugView::ALL {
                        ui.selectable_value(&mut view, v, v.to_string());
                    }
                });
            if view != settings.debug_view {
                send(InspectorChange::DebugView(view));
            }
        });
}

/// Tile validation: a phone GPU to check the camera's frame against
/// ([`TileValidation`](crate::TileValidation)), and what it would do with it. Without `toggles`
/// (another app's camera) the picker is shown but cannot be changed.
fn validation(
    ui: &mut egui::Ui,
    panel: &CameraPanel,
    toggles: Option<&mut MessageWriter<InspectorToggle>>,
) {
    if panel.settings.is_none() {
        return;
    }
    // One header state while off and another while on: it opens when a device is picked.
    egui::CollapsingHeader::new("Tile validation")
        .id_salt(("tile validation", panel.camera, panel.validation.is_some()))
        .default_open(panel.validation.is_some())
        .show(ui, |ui| {
            let current = panel.validation.as_ref().map(|r| r.device.as_str());
            let mut choice = current.and_then(|name| {
                crate::device::phones::PHONE_GPUS
                    .iter()
                    .find(|gpu| gpu.name == name)
                    .map(|gpu| gpu.name)
            });
            let listed = choice;
            ui.add_enabled_ui(toggles.is_some(), |ui| {
                egui::ComboBox::from_label("as on")
                    .selected_text(current.unwrap_or("off"))
                    .show_ui(ui, |ui| {
                        ui.selectable_value(&mut choice, None, "off");
                        for gpu in crate::device::phones::PHONE_GPUS {
                            ui.selectable_value(&mut choice, Some(gpu.name), gpu.name);
                        }
                    });
            });
            // Another device set by the game (not a listed phone) stays until one is picked.
            if let Some(toggles) = toggles
                && choice != listed
            {
                toggles.write(InspectorToggle {
                    camera: panel.camera,
                    change: InspectorChange::Validation(choice),
                });
            }
            let Some(report) = &panel.validation else {
                ui.label("what a phone GPU would do with this frame, checked here");
                return;
            };
            let (colour, verdict) = if report.stays_on_tile() {
                (GREEN, "stays on tile")
            } else {
                (AMBER, "would not stay on tile")
            };
            ui.colored_label(
                colour,
                format!(
                    "{}: {verdict}: {}, {} render pass{}, {:.2} MB per frame",
                    report.device,
                    report.tier,
                    report.render_passes,
                    if report.render_passes == 1 { "" } else { "es" },
                    report.bytes_per_frame as f64 / 1e6
                ),
            )
            .on_hover_text(report.tier_reasons.join("\n"));
            // Why the device would not run the tile path at all, in full (on hover otherwise).
            if !report.tier.is_tile() && report.failure.is_none() {
                for reason in &report.tier_reasons {
                    ui.colored_label(AMBER, reason);
                }
            }
            let lines = report
                .failure
                .iter()
                .map(|f| f.lines().next().unwrap_or_default().to_string())
                .chain(report.msaa_lowered.iter().cloned())
                .chain(report.breaks.iter().map(|b| format!("break: {b}")))
                .chain(
                    report
                        .over_tile_budget
                        .iter()
                        .map(|o| format!("over budget: {o}")),
                )
                .chain(report.texture_reads_in_pass.iter().cloned())
                .chain(report.falls_back.iter().map(|f| format!("falls back: {f}")));
            for line in lines {
                ui.colored_label(AMBER, line);
            }
            for line in &report.tile_use {
                ui.label(line);
            }
        });
}

/// Which app's frame the panels show: this one's, or another's read over BRP (feature
/// `remote`). Returns whether another app's frame is shown.
#[cfg(feature = "remote")]
fn remote_app(
    ui: &mut egui::Ui,
    remote: &mut super::TileInspectorRemote,
    address: &mut String,
    now: f64,
) -> bool {
    if address.is_empty() {
        *address = remote
            .address
            .clone()
            .unwrap_or_else(|| format!("127.0.0.1:{}", bevy_remote::http::DEFAULT_PORT));
    }
    egui::CollapsingHeader::new("Remote app (BRP)")
        .default_open(remote.address.is_some())
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.text_edit_singleline(address).on_hover_text(
                    "host:port of an app with RemoteHttpPlugin (adb forward for a phone)",
                );
                if ui.button("read").clicked() {
                    remote.connect(address.trim());
                }
                if remote.address.is_some() && ui.button("this app").clicked() {
                    remote.disconnect();
                }
            });
            match (&remote.address, &remote.report, remote.received_at) {
                (None, _, _) => {
                    ui.label("showing this app's frame");
                }
                (Some(at), Some(report), Some(received)) => {
                    ui.colored_label(
                        GREEN,
                        format!(
                            "showing {at}: frame {}, read {:.1} s ago (read-only)",
                            report.frame,
                            now - received
                        ),
                    );
                }
                (Some(at), _, _) => {
                    ui.label(format!("waiting for {at}; showing this app's frame"));
                }
            }
            if let Some(error) = &remote.last_error {
                ui.colored_label(AMBER, error);
            }
        });
    remote.shown().is_some()
}

/// A fixed plot of one value over the last seconds (x: seconds).
fn history_plot(ui: &mut egui::Ui, id: (&str, Entity), name: &str, points: Vec<[f64; 2]>) {
    use egui_plot::{Legend, Line, Plot, PlotPoints};
    Plot::new(id)
        .height(110.0)
        .include_y(0.0)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .legend(Legend::default())
        .x_axis_label("s")
        .show(ui, |plot| {
            plot.line(Line::new(name, PlotPoints::new(points)));
        });
}

fn tier_setting_name(setting: TierSetting) -> String {
    match setting {
        TierSetting::Auto => "automatic".into(),
        TierSetting::Force(tier) => tier.to_string(),
    }
}

fn msaa_name(msaa: Msaa) -> &'static str {
    match msaa {
        Msaa::Off => "Off",
        Msaa::Sample2 => "2x",
        Msaa::Sample4 => "4x",
        Msaa::Sample8 => "8x",
    }
}

fn shading_name(shading: MsaaShading) -> &'static str {
    match shading {
        MsaaShading::EdgeSelective => "edge-selective",
        MsaaShading::EverySample => "every sample (brute force)",
    }
}

fn verdict_color(verdict: OpVerdict) -> Color32 {
    match verdict {
        OpVerdict::Free => GREEN,
        OpVerdict::Needed => GREY,
        OpVerdict::Conditional => AMBER,
        OpVerdict::Avoidable => RED,
    }
}

fn native_pass_tree(ui: &mut egui::Ui, frame: &CompiledFrame) {
    ui.label(
        RichText::new(
            "red: an intermediate loaded or stored (avoidable on tile); amber: the camera's \
             image loaded (avoidable with a full clear); green: nothing moved",
        )
        .small(),
    );
    for (i, pass) in frame.native_passes.iter().enumerate() {
        let traffic = frame.cost.per_native_pass.get(i).map_or(0, |t| t.total());
        egui::CollapsingHeader::new(format!(
            "#{i} {} [{}] {}x{} x{}: {:.2} MB",
            pass.name,
            pass.kind.name(),
            pass.extent.width,
            pass.extent.height,
            pass.samples,
            bytes_to_mb(traffic)
        ))
        .id_salt(("native", i))
        .default_open(true)
        .show(ui, |ui| {
            for (j, subpass) in pass.subpasses.iter().enumerate() {
                let names = |list: &[usize]| {
                    list.iter()
                        .map(|&a| pass.attachments[a].name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let mut line = format!(
                    "subpass {j} {}: colour [{}]",
                    subpass.name,
                    names(&subpass.color)
                );
                if !subpass.input.is_empty() {
                    line += &format!(", input [{}]", names(&subpass.input));
                }
                if let Some(depth) = subpass.depth {
                    line += &format!(
                        ", depth {}{}",
                        pass.attachments[depth.attachment].name,
                        if depth.read_only { " (read-only)" } else { "" }
                    );
                }
                let resolves: Vec<usize> = subpass.resolve.iter().flatten().copied().collect();
                if !resolves.is_empty() {
                    line += &format!(", resolve into [{}]", names(&resolves));
                }
                ui.label(line);
            }
            egui::Grid::new(("attachments", i))
                .striped(true)
                .num_columns(7)
                .show(ui, |ui| {
                    for head in [
                        "attachment",
                        "format",
                        "samples",
                        "load",
                        "store",
                        "transient",
                        "bytes/frame",
                    ] {
                        ui.label(RichText::new(head).strong());
                    }
                    ui.end_row();
                    for (index, a) in pass.attachments.iter().enumerate() {
                        let (load_v, store_v) = op_verdicts(&a.name, &a.load, a.store);
                        let (load_b, store_b) = attachment_traffic(pass, index, 1);
                        ui.label(&a.name);
                        ui.label(a.format.name());
                        ui.label(a.samples.to_string());
                        // Why each op is what it is, naming the passes responsible.
                        ui.colored_label(verdict_color(load_v), a.load.name())
                            .on_hover_text(a.load_reason.to_string());
                        ui.colored_label(verdict_color(store_v), a.store.name())
                            .on_hover_text(a.store_reason.to_string());
                        ui.label(if a.transient { "transient" } else { "memory" });
                        ui.label(format!(
                            "{:.2} MB",
                            bytes_to_mb(load_b.unwrap_or(0) + store_b.unwrap_or(0))
                        ));
                        ui.end_row();
                    }
                });
            // The reasons in full, readable without hovering (a phone has no hover).
            egui::CollapsingHeader::new("why these loads and stores")
                .id_salt(("reasons", i))
                .default_open(true)
                .show(ui, |ui| {
                    for a in &pass.attachments {
                        ui.label(
                            // Each reason begins with its op ("cleared: ...", "stored: ...").
                            RichText::new(format!(
                                "{}: {}; {}",
                                a.name, a.load_reason, a.store_reason
                            ))
                            .small(),
                        );
                    }
                });
        });
    }
    if !frame.culled.is_empty() {
        ui.label(format!("culled: {}", frame.culled.join(", ")));
    }
}

fn breaks(ui: &mut egui::Ui, frame: &CompiledFrame) {
    ui.collapsing(format!("Pass breaks ({})", frame.breaks.len()), |ui| {
        if frame.breaks.is_empty() {
            ui.label("every adjacent pair of passes was merged");
        }
        for b in &frame.breaks {
            ui.label(format!(
                "`{}` | `{}`: {}",
                b.prev_pass, b.next_pass, b.reason
            ));
        }
    });
}

fn subpass_name(index: SubpassIndex) -> String {
    match index {
        SubpassIndex::External => "EXTERNAL".into(),
        SubpassIndex::Index(i) => i.to_string(),
    }
}

fn dependencies(ui: &mut egui::Ui, frame: &CompiledFrame) {
    ui.collapsing("Subpass dependencies", |ui| {
        for (i, pass) in frame.native_passes.iter().enumerate() {
            ui.label(RichText::new(format!("#{i} {}", pass.name)).strong());
            for d in &pass.dependencies {
                ui.label(format!(
                    "{} -> {}: {} / {} -> {} / {}{}",
                    subpass_name(d.src),
                    subpass_name(d.dst),
                    d.src_stages,
                    d.src_access,
                    d.dst_stages,
                    d.dst_access,
                    if d.by_region { ", BY_REGION" } else { "" }
                ));
            }
        }
    });
}

fn footprints(ui: &mut egui::Ui, frame: &CompiledFrame) {
    ui.collapsing("Tile footprint", |ui| {
        for (i, pass) in frame.native_passes.iter().enumerate() {
            let f = &pass.footprint;
            let verdict = match f.verdict {
                TileVerdict::Unlimited => "no tile budget on this device".to_owned(),
                TileVerdict::Fits {
                    used_bits,
                    budget_bits,
                } => format!("{used_bits} of {budget_bits} bits of colour per pixel: fits"),
                TileVerdict::Spills {
                    used_bits,
                    budget_bits,
                } => format!("{used_bits} bits of colour per pixel, over the {budget_bits}-bit budget: spills"),
                TileVerdict::Bins(b) => format!(
                    "{} bins of {}x{} ({}x{}), {:.0} KiB each",
                    b.count(),
                    b.width,
                    b.height,
                    b.columns,
                    b.rows,
                    b.bytes as f64 / 1024.0
                ),
                TileVerdict::GmemTooSmall { bytes_per_pixel } => {
                    format!("{bytes_per_pixel} B per pixel: not even one bin fits GMEM")
                }
            };
            let color = if f.verdict.fits() { GREEN } else { RED };
            ui.horizontal(|ui| {
                ui.label(format!(
                    "#{i} {}: {} B/px colour + {} B/px depth =",
                    pass.name, f.color_bytes_per_pixel, f.depth_bytes_per_pixel
                ));
                ui.colored_label(color, verdict);
            });
        }
    });
}

fn gpu_times(ui: &mut egui::Ui, panel: &CameraPanel) {
    ui.collapsing("GPU time", |ui| match panel.gpu_times {
        Some(t) => {
            egui::Grid::new("gpu").num_columns(2).show(ui, |ui| {
                for (name, ms) in [
                    ("gbuffer", t.gbuffer_ms),
                    ("lighting", t.lighting_ms),
                    ("tonemap", t.tonemap_ms),
                    ("whole frame", t.total_ms()),
                ] {
                    ui.label(name);
                    ui.label(format!("{ms:.3} ms"));
                    ui.end_row();
                }
            });
            if let Some(cpu) = panel.cpu_ms {
                ui.label(format!("CPU (prepare and record): {cpu:.3} ms"));
            }
        }
        None => {
            ui.label("not available (no timestamp queries on this device or camera)");
        }
    });
    if let Some(line) = panel.instances.map(instances_line) {
        ui.label(line);
    }
    if let Some(line) = &panel.mesh_draws {
        ui.label(line);
    }
}

/// "1000 instances in 9 draws, kept from the last frame (30 rewritten in 9 copies)".
fn instances_line((instances, draws, batches): (usize, usize, TileInstanceBatches)) -> String {
    let how = match batches {
        TileInstanceBatches::Built => "batched this frame".to_owned(),
        TileInstanceBatches::Kept { rewritten, runs } => {
            format!("kept from the last frame ({rewritten} rewritten in {runs} copies)")
        }
        TileInstanceBatches::Regrouped { scattered_runs } => format!(
            "batched again with the moving meshes together ({scattered_runs} scattered copies)"
        ),
    };
    format!("{instances} instances in {draws} draws, {how}")
}

fn clusters(ui: &mut egui::Ui, panel: &CameraPanel) {
    let Some((c, lights)) = panel.clusters else {
        return;
    };
    ui.collapsing("Light clusters", |ui| {
        let [x, y, z] = c.dimensions;
        ui.label(format!(
            "{lights} point and spot lights in {x} x {y} tiles of {} px x {z} depth slices",
            c.tile_size
        ));
        ui.label(format!(
            "at most {} lights in a cluster, {:.1} on average where any{}",
            c.max_lights_per_cluster,
            c.mean_lights_per_occupied_cluster,
            if c.assigned_on_gpu {
                " (from the GPU, a frame or more late)"
            } else {
                ""
            }
        ));
        ui.label(if c.assigned_on_gpu {
            format!(
                "assigned on the GPU before the render pass ({:.3} ms of CPU preparing it); \
                 {:.1} KiB of light masks written",
                c.assignment_ms,
                c.mask_bytes as f64 / 1024.0
            )
        } else {
            format!(
                "assigned on the CPU in {:.3} ms; {:.1} KiB of light masks uploaded",
                c.assignment_ms,
                c.mask_bytes as f64 / 1024.0
            )
        });
        ui.label("No cluster has a capacity: every light that reaches a cluster is in it.");
    });
}

fn msaa(ui: &mut egui::Ui, panel: &CameraPanel) {
    ui.collapsing("MSAA", |ui| {
        ui.label(format!(
            "{} sample(s) per pixel ({} asked)",
            panel.samples, panel.requested_samples
        ));
        match panel.per_sample_fraction {
            Some(f) => {
                ui.label(format!(
                    "{:.2} % of pixels lit per sample (edges)",
                    f * 100.0
                ));
            }
            None if panel.samples > 1 => {
                ui.label("per-sample fraction: not measured yet");
            }
            None => {
                ui.label("per-sample fraction: no MSAA");
            }
        }
        ui.label("the edge-mask debug view is under Toggles");
    });
}

fn export(ui: &mut egui::Ui, panel: &CameraPanel) {
    ui.collapsing("Export (ovrgpuprofiler-style surface lines)", |ui| {
        ui.horizontal(|ui| {
            if ui.button("copy").clicked() {
                ui.ctx().copy_text(panel.export.clone());
            }
            if ui.button("log").clicked() {
                info!(
                    "bevy_tile_deferred inspector, {}:\n{}",
                    panel.name, panel.export
                );
            }
        });
        let mut text = panel.export.as_str();
        ui.add(
            egui::TextEdit::multiline(&mut text)
                .font(egui::TextStyle::Monospace)
                .desired_width(f32::INFINITY),
        );
    });
}
