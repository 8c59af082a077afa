//! The inspector overlay (feature `inspector`): drawn over a tile camera in a real window, showing
//! the values of the compiled frame; its toggles change the frame; hidden, it changes nothing.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp,
        presented::{self, PresentedAndScreenshot},
        run_window_test_in_child_process, test_plugins,
    },
    scenes,
};
use bevy::{
    diagnostic::FrameCount,
    prelude::*,
    render::{Render, RenderApp, RenderSystems, view::Msaa},
    window::WindowResolution,
};
use bevy_egui::{EguiContext, egui, render::EguiViewTarget};
use bevy_tile_deferred::{
    DeviceProfile, MsaaShading, TileDebugView, TileDeferred, TileDeferredPlugin,
    TileInspectorPlugin, TileRenderReports, TileResourceCounts, TileViewReport,
    frame_graph::{DEFAULT_MW_PER_GBPS, StockBevyPath},
    inspector::{
        CameraPanel, InspectorChange, InspectorToggle, TileInspector, TileInspectorPanels,
    },
    tiers::{RenderTier, TierDecision, TierSetting},
};

const WIDTH: u32 = 800;
const HEIGHT: u32 = 450;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The panel's numbers are the priced frame's (the compiled tile frame with Bevy's shadow passes,
/// which the showcase's shadows add).
fn assert_panel_matches_report(
    panel: &CameraPanel,
    report: &TileViewReport,
    profile: Option<&DeviceProfile>,
) {
    let in_use = panel.in_use.as_ref().expect("the plan in use is shown");
    let cost = &report.priced.cost;
    assert_eq!(in_use.bytes_per_frame, cost.bytes());
    assert!(close(in_use.mb_per_frame, cost.mb()), "{in_use:?}");
    assert!(
        close(in_use.gb_per_s, cost.gb_per_s(panel.fps)),
        "{in_use:?}"
    );
    assert!(
        close(
            in_use.milliwatts,
            cost.milliwatts(panel.fps, DEFAULT_MW_PER_GBPS)
        ),
        "{in_use:?}"
    );
    assert!(close(panel.fps, 1000.0 / panel.frame_ms));
    assert_eq!(in_use.render_passes, report.priced.render_pass_count());
    assert_eq!(in_use.native_passes, report.priced.native_passes.len());
    // Every shadow map Bevy rendered is a pass of the priced frame, listed in the tree.
    assert_eq!(
        report.priced.native_passes.len(),
        report.compiled.native_passes.len() + report.shadow_maps.pass_count() as usize
    );
    assert_eq!(panel.samples, report.samples);
    assert_eq!(
        panel.compiled.as_ref(),
        Some(&report.priced),
        "the tree shows the priced frame"
    );
    // GPU times and the per-sample fraction are measured a few frames late and move from frame
    // to frame: the panel shows the values of the report it was computed from.
    let native = &report.compiled.native_passes[0];
    assert_eq!(
        (panel.resolution.x, panel.resolution.y),
        (native.extent.width, native.extent.height)
    );
    let tier = match (report.compiled.render_pass_count(), report.samples) {
        (1, 1) => RenderTier::TileDeferred,
        (1, samples) => RenderTier::TileDeferredMsaa { samples },
        (_, samples) => RenderTier::Unmerged { samples },
    };
    assert_eq!(panel.tier, tier.to_string());
    if let Some(profile) = profile {
        assert_eq!(panel.device_name, profile.device_name);
        assert_eq!(panel.device_vendor, profile.vendor.to_string());
    }
    // Counterfactuals from the same view description.
    let off = panel
        .merging_off
        .as_ref()
        .expect("merging-off counterfactual");
    if tier.is_unmerged() {
        assert_eq!(
            (off.native_passes, off.bytes_per_frame),
            (in_use.native_passes, in_use.bytes_per_frame),
            "the unmerged tier renders the merging-off plan"
        );
    } else {
        assert!(
            off.native_passes > in_use.native_passes
                && off.bytes_per_frame > in_use.bytes_per_frame,
            "merging off: more native passes and more traffic ({off:?} vs {in_use:?})"
        );
    }
    let caps = profile
        .map(DeviceProfile::frame_graph_caps)
        .unwrap_or_default();
    let output = report.compiled.attachment_named("output").unwrap();
    // Bevy's forward path with the same shadow maps.
    let options = bevy_tile_deferred::frame_graph::StockBevyOptions {
        shadow_maps: report.shadow_maps,
        ..Default::default()
    };
    let stock = bevy_tile_deferred::frame_graph::compile_stock_bevy(
        &StockBevyPath::Forward {
            msaa_samples: panel.requested_samples,
        }
        .graph_with(output.extent, output.format, options),
        &caps,
    )
    .unwrap();
    let shown = panel
        .stock_bevy
        .as_ref()
        .expect("stock Bevy counterfactual");
    assert_eq!(shown.bytes_per_frame, stock.cost.bytes());
    assert_eq!(shown.render_passes, stock.render_pass_count());
    if !tier.is_unmerged() {
        // (Unmerged, the stored G-buffer costs more than Bevy's forward path: the debug tier
        // shows what merging saves.)
        assert!(shown.bytes_per_frame > in_use.bytes_per_frame);
    }
    // The export has one surface line per native pass.
    assert_eq!(
        panel.export.lines().count(),
        report.compiled.native_passes.len()
    );
    assert!(
        panel.export.starts_with(&format!(
            "Surface 1 | {}x{} | ",
            native.extent.width, native.extent.height
        )),
        "{}",
        panel.export
    );
}

// ---------------------------------------------------------------------------------------------
// 1. In a window, over the tile camera: what is presented (the X server's copy of the window) is
// what Bevy's screenshot shows, with the overlay hidden, shown, and shown after a resize.

const RESIZED: (u32, u32) = (640, 400);

#[test]
fn inspector_over_a_tile_camera_in_a_window() {
    run_window_test_in_child_process("inspector::child_inspector_over_a_tile_camera_in_a_window");
}

#[test]
fn inspector_over_an_msaa_tile_camera_in_a_window() {
    run_window_test_in_child_process(
        "inspector::child_inspector_over_an_msaa_tile_camera_in_a_window",
    );
}

#[derive(Resource, Clone, Default)]
struct SharedRun(std::sync::Arc<std::sync::Mutex<WindowRun>>);

/// The states the window run captures, in order.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Hidden,
    Shown,
    ShownResized,
}

const STEPS: [Step; 3] = [Step::Hidden, Step::Shown, Step::ShownResized];

/// One captured state: the presented window, Bevy's screenshot, where the overlay was.
struct Checkpoint {
    step: Step,
    presented: Frame,
    screenshot: Frame,
    overlay_rect: Option<Rect>,
}

#[derive(Default)]
struct WindowRun {
    /// The window's title.
    title: &'static str,
    step: usize,
    /// The frame from which the current step's state is settled.
    settled_at: Option<u32>,
    capture: PresentedAndScreenshot,
    checkpoints: Vec<Checkpoint>,
    panel: Option<CameraPanel>,
    report: Option<TileViewReport>,
    profile: Option<DeviceProfile>,
    camera: Option<Entity>,
}

/// Pixels of `rect` (clamped to the frame) that differ between `a` and `b` by more than a
/// little, and the pixels in it.
fn differing(a: &Frame, b: &Frame, x0: u32, y0: u32, x1: u32, y1: u32) -> (usize, usize) {
    let (x1, y1) = (x1.min(a.width), y1.min(a.height));
    let mut differ = 0;
    let mut total = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            let i = ((y * a.width + x) * 4) as usize;
            let d = (0..3)
                .map(|c| a.rgba[i + c].abs_diff(b.rgba[i + c]))
                .max()
                .unwrap();
            total += 1;
            if d > 8 {
                differ += 1;
            }
        }
    }
    (differ, total)
}

#[test]
#[ignore = "run in a child process by inspector_over_a_tile_camera_in_a_window (one winit event loop per process)"]
fn child_inspector_over_a_tile_camera_in_a_window() {
    inspector_window_run(
        "child_inspector_over_a_tile_camera_in_a_window",
        "inspector",
        Msaa::Off,
    );
}

#[test]
#[ignore = "run in a child process by inspector_over_an_msaa_tile_camera_in_a_window (one winit \
            event loop per process)"]
fn child_inspector_over_an_msaa_tile_camera_in_a_window() {
    inspector_window_run(
        "child_inspector_over_an_msaa_tile_camera_in_a_window",
        "inspector-msaa",
        Msaa::Sample4,
    );
}

/// Runs the still showcase in a window under a tile camera with `msaa`, captures the presented
/// window and a screenshot with the overlay hidden, shown, and shown after a resize, and checks
/// them (images written as `<images>-<step>-presented.png` and `-screenshot.png`).
fn inspector_window_run(name: &'static str, images: &str, msaa: Msaa) {
    let test = GpuTest::start(name);
    let shared = SharedRun::default();
    let mut app = App::new();
    app.add_plugins(test_plugins(Some(Window {
        resolution: WindowResolution::new(WIDTH, HEIGHT),
        // Window tests find their window by its title.
        title: name.into(),
        ..default()
    })))
    .add_plugins((TileDeferredPlugin, TileInspectorPlugin::default()))
    .insert_resource(shared.clone())
    .add_systems(Startup, move |world: &mut World| {
        // A still scene: the images differ only where the overlay is.
        scenes::spawn_showcase(world, 12);
        let camera = world
            .spawn((
                Name::new("tile camera"),
                Camera3d::default(),
                scenes::reference_camera(),
                scenes::reference_camera_transform(),
                msaa,
                TileDeferred::default(),
            ))
            .id();
        world.resource::<SharedRun>().0.lock().unwrap().camera = Some(camera);
    })
    .add_systems(Update, drive_window_run);
    shared.0.lock().unwrap().title = name;
    app.run();

    let run = std::mem::take(&mut *shared.0.lock().unwrap());
    let errors = test.take_errors();
    assert!(errors.is_empty(), "errors in the window run: {errors:#?}");
    assert_eq!(
        run.checkpoints.iter().map(|c| c.step).collect::<Vec<_>>(),
        STEPS,
        "every state was captured"
    );

    for checkpoint in &run.checkpoints {
        let step = format!("{images}-{:?}", checkpoint.step).to_lowercase();
        checkpoint.presented.save_png(&format!("{step}-presented"));
        checkpoint
            .screenshot
            .save_png(&format!("{step}-screenshot"));
        let size = if checkpoint.step == Step::ShownResized {
            RESIZED
        } else {
            (WIDTH, HEIGHT)
        };
        assert_eq!(
            (checkpoint.presented.width, checkpoint.presented.height),
            size,
            "{step}: the window's size"
        );
        // The overlay's numbers and plots change from frame to frame: inside its window the
        // two may differ a little.
        let live = checkpoint.overlay_rect;
        assert_eq!(live.is_some(), checkpoint.step != Step::Hidden, "{step}");
        presented::assert_presented_matches_screenshot(
            &step,
            &checkpoint.presented,
            &checkpoint.screenshot,
            live,
        );
        // Under the overlay's window the tile frame, not wgpu's zero fill.
        let (black, total) = presented::black_outside(&checkpoint.presented, live);
        assert!(
            black * 100 < total,
            "{step}: {black} of {total} presented pixels outside the overlay are black"
        );
    }

    let hidden = &run.checkpoints[0].presented;
    let shown = &run.checkpoints[1].presented;
    // Written under <target>/tmp/gpu-tests/; assets/inspector.png is a copy of the presented
    // image of one such run (1x).
    shown.save_png(images);

    // The overlay is drawn over the scene where egui says its window is, and nowhere else.
    let rect = run.checkpoints[1]
        .overlay_rect
        .expect("the overlay reports its window");
    assert!(rect.width() > 200.0 && rect.height() > 100.0, "{rect:?}");
    let (x0, y0) = (rect.min.x.max(0.0) as u32, rect.min.y.max(0.0) as u32);
    let (x1, y1) = (rect.max.x as u32, rect.max.y as u32);
    let (differ, total) = differing(hidden, shown, x0, y0, x1, y1);
    assert!(
        differ * 2 > total,
        "the overlay covers its window: {differ} of {total} pixels differ"
    );
    // Right of the window and its shadow.
    if x1 + 64 < WIDTH {
        let (outside, total) = differing(hidden, shown, x1 + 48, 0, WIDTH, HEIGHT);
        assert!(
            outside * 100 < total,
            "the scene outside the overlay is unchanged: {outside} of {total} pixels differ"
        );
    }

    // The values the panel shows are those of the compiled frame.
    let panel = run.panel.expect("the panel was computed");
    let report = run.report.expect("the tile camera was reported");
    assert_eq!(Some(panel.camera), run.camera);
    assert_panel_matches_report(&panel, &report, run.profile.as_ref());
    assert_eq!(panel.resolution, UVec2::new(WIDTH, HEIGHT));
    let overlay = panel
        .overlay
        .as_ref()
        .expect("the overlay's own cost is shown");
    // Drawn by the tile pass's `ui` subpass: no pass and no traffic of its own, where the
    // route after the pass (clear, egui and composite, and on a window the store of the output
    // that makes wgpu keep it) moved seven full-screen RGBA8 images.
    assert_eq!(overlay.bytes_per_frame, 0, "{overlay:?}");
    assert_eq!(overlay.render_passes, 0, "{overlay:?}");
    let drawn = report.egui_in_pass.expect("egui drawn in the tile pass");
    assert!(drawn.meshes > 3, "{drawn:?}");
    assert_eq!(report.egui_after_pass_reason, None);
    assert_eq!(report.render_passes_recorded, 1);
}

fn drive_window_run(
    mut commands: Commands,
    frames: Res<FrameCount>,
    shared: Res<SharedRun>,
    mut inspector: ResMut<TileInspector>,
    mut windows: Query<&mut Window>,
    panels: Res<TileInspectorPanels>,
    reports: Res<TileRenderReports>,
    profile: Option<Res<DeviceProfile>>,
    mut exit: MessageWriter<AppExit>,
) {
    let mut run = shared.0.lock().unwrap();
    let run = &mut *run;
    if frames.0 > 1200 {
        exit.write(AppExit::Success);
        return;
    }
    let Some(&step) = STEPS.get(run.step) else {
        exit.write(AppExit::Success);
        return;
    };
    // Set the step's state, then give it frames to settle (pipelines, egui's layout, the
    // swapchain after a resize).
    let Some(settled_at) = run.settled_at else {
        let wait = match step {
            Step::Hidden => 20,
            Step::Shown => {
                inspector.visible = true;
                30
            }
            Step::ShownResized => {
                if let Ok(mut window) = windows.single_mut() {
                    window.resolution.set(RESIZED.0 as f32, RESIZED.1 as f32);
                }
                20
            }
        };
        run.settled_at = Some(frames.0 + wait);
        return;
    };
    if frames.0 < settled_at {
        return;
    }
    let overlay_rect = panels.overlay_rect.filter(|_| inspector.visible);
    if step == Step::Shown && run.panel.is_none() {
        let camera = run.camera.unwrap();
        run.panel = panels.get(camera).cloned();
        run.report = reports.get(camera);
        run.profile = profile.as_deref().cloned();
    }
    if let Some((presented, screenshot)) = run.capture.step(&mut commands, run.title) {
        run.checkpoints.push(Checkpoint {
            step,
            presented,
            screenshot,
            overlay_rect,
        });
        run.step += 1;
        run.settled_at = None;
    }
}

/// Over a tile camera on an image, at 1x and 4x MSAA, frame after frame: the overlay is drawn
/// over the tile frame (outside the overlay's window the image is the frame without it).
#[test]
fn inspector_over_a_tile_camera_on_an_image() {
    let _test = GpuTest::start("inspector_over_a_tile_camera_on_an_image");
    for msaa in [Msaa::Off, Msaa::Sample4] {
        let name = format!("inspector-image-{}x", msaa.samples());
        let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
        headless.app.add_plugins(TileInspectorPlugin::default());
        scenes::spawn_showcase(headless.app.world_mut(), 12);
        let camera = headless.spawn_camera((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            msaa,
            TileDeferred::default(),
        ));
        let hidden = headless.render(4);
        let hidden_report = headless
            .app
            .world()
            .resource::<TileRenderReports>()
            .get(camera)
            .expect("the camera's report");
        headless
            .app
            .world_mut()
            .resource_mut::<TileInspector>()
            .visible = true;
        let shown = [headless.render(6), headless.read_target()];
        let report = headless
            .app
            .world()
            .resource::<TileRenderReports>()
            .get(camera)
            .expect("the camera's report");
        assert_eq!(report.samples, msaa.samples(), "{name}");
        // Opening the inspector adds nothing to the frame's traffic: the tile pass draws it, and
        // stores the output once as before.
        let drawn = report.egui_in_pass.expect("egui drawn in the tile pass");
        assert!(drawn.meshes > 3, "{name}: {drawn:?}");
        assert_eq!(report.egui_after_pass_reason, None, "{name}");
        // Each frame draws that frame's egui meshes only (they were once added to the last
        // frame's, growing every frame).
        headless.update();
        headless.update();
        let later = headless
            .app
            .world()
            .resource::<TileRenderReports>()
            .get(camera)
            .and_then(|r| r.egui_in_pass)
            .expect("egui drawn in the tile pass");
        // (The window's content is the same: a plot's line may add or drop a mesh.)
        assert!(
            later.meshes.abs_diff(drawn.meshes) <= 3,
            "{name}: {drawn:?} then {later:?}"
        );
        assert_eq!(report.render_passes_recorded, 1, "{name}");
        assert_eq!(
            report.bytes_per_frame(),
            hidden_report.bytes_per_frame(),
            "{name}: the frame's traffic with the inspector open"
        );
        let panel = headless
            .app
            .world()
            .resource::<TileInspectorPanels>()
            .get(camera)
            .cloned()
            .expect("the camera's panel");
        let overlay = panel.overlay.expect("the overlay's own cost is shown");
        assert_eq!(overlay.bytes_per_frame, 0, "{name}: {overlay:?}");
        let rect = headless
            .app
            .world()
            .resource::<TileInspectorPanels>()
            .overlay_rect
            .expect("the overlay reports its window");
        // The window and its shadow.
        let covered = Rect::from_corners(rect.min, rect.max + Vec2::splat(48.0));
        for (index, shown) in shown.iter().enumerate() {
            let ((inside, inside_total), _) =
                presented::differing_inside_and_out(&hidden, shown, Some(rect));
            let (_, (outside, outside_total)) =
                presented::differing_inside_and_out(&hidden, shown, Some(covered));
            if inside * 2 <= inside_total || outside * 100 >= outside_total {
                hidden.save_png(&format!("{name}-hidden"));
                shown.save_png(&format!("{name}-shown-{index}"));
            }
            assert!(
                inside * 2 > inside_total,
                "{name}, frame {index}: the overlay covers its window ({inside} of \
                 {inside_total} pixels differ)"
            );
            assert!(
                outside * 100 < outside_total,
                "{name}, frame {index}: outside the overlay the image is the tile frame \
                 ({outside} of {outside_total} pixels differ)"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Toggles change the compiled frame.

const HEADLESS_WIDTH: u32 = 320;
const HEADLESS_HEIGHT: u32 = 192;

fn headless_with_inspector(visible: bool) -> (HeadlessApp, Entity) {
    let mut headless = HeadlessApp::new(HEADLESS_WIDTH, HEADLESS_HEIGHT);
    headless.app.add_plugins(TileInspectorPlugin::default());
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspector>()
        .visible = visible;
    // Pipelined rendering moves the render world to its thread: share the counter.
    let count = EguiViewCount::default();
    headless.app.insert_resource(count.clone());
    headless
        .app
        .sub_app_mut(RenderApp)
        .insert_resource(count)
        .add_systems(Render, count_egui_views.in_set(RenderSystems::Prepare));
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
        TileDeferred::default(),
    ));
    (headless, camera)
}

fn toggle(headless: &mut HeadlessApp, camera: Entity, change: InspectorChange) {
    headless
        .app
        .world_mut()
        .write_message(InspectorToggle { camera, change });
    // Applied next frame; rendered (and reported) the frame after; occlusion results later.
    for _ in 0..6 {
        headless.update();
    }
}

/// The target without the overlay (which covers most of a small image target).
fn read_without_overlay(headless: &mut HeadlessApp) -> Frame {
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspector>()
        .visible = false;
    headless.update();
    let frame = headless.read_target();
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspector>()
        .visible = true;
    // Shown again, the tile pass draws the overlay in its `ui` subpass: the plan changes, and
    // the panel (computed from the report of a frame or two before) catches up.
    for _ in 0..4 {
        headless.update();
    }
    frame
}

fn state(headless: &HeadlessApp, camera: Entity) -> (CameraPanel, TileViewReport) {
    let world = headless.app.world();
    let panel = world
        .resource::<TileInspectorPanels>()
        .get(camera)
        .cloned()
        .expect("the panel of the camera");
    let report = world
        .resource::<TileRenderReports>()
        .get(camera)
        .expect("the camera's report");
    (panel, report)
}

#[test]
fn inspector_toggles_change_the_frame() {
    let _test = GpuTest::start("inspector_toggles_change_the_frame");
    let (mut headless, camera) = headless_with_inspector(true);
    for _ in 0..4 {
        headless.update();
    }
    let before = read_without_overlay(&mut headless);
    let profile = headless
        .app
        .world()
        .get_resource::<DeviceProfile>()
        .cloned();
    let (panel, report) = state(&headless, camera);
    assert_panel_matches_report(&panel, &report, profile.as_ref());
    assert_eq!(report.compiled.render_pass_count(), 1);

    // Merging off: the camera renders the unmerged debug tier, three render passes storing the
    // G-buffer; the image stays the same.
    toggle(
        &mut headless,
        camera,
        InspectorChange::MergeSubpasses(false),
    );
    let tile = headless.app.world().get::<TileDeferred>(camera).unwrap();
    assert!(!tile.merge_subpasses);
    let (panel, report) = state(&headless, camera);
    assert_eq!(
        panel.settings.as_ref().map(|s| s.merge_subpasses),
        Some(false)
    );
    assert_eq!(report.compiled.render_pass_count(), 3);
    assert_eq!(report.render_passes_recorded, 3);
    assert_panel_matches_report(&panel, &report, profile.as_ref());
    assert_eq!(panel.tier, "tile-deferred, unmerged (debug)");
    let off = panel.merging_off.as_ref().unwrap();
    assert_eq!(off.render_passes, 3, "{off:?}");
    assert_eq!(off.bytes_per_frame, report.compiled.cost.bytes());
    let unmerged = read_without_overlay(&mut headless);
    let (differ, total) = differing(&before, &unmerged, 0, 0, HEADLESS_WIDTH, HEADLESS_HEIGHT);
    assert!(
        differ * 100 < total,
        "unmerged renders the same frame ({differ} of {total} pixels differ)"
    );
    toggle(&mut headless, camera, InspectorChange::MergeSubpasses(true));
    let (panel, report) = state(&headless, camera);
    assert_eq!(report.compiled.render_pass_count(), 1);
    assert!(panel.merging_off.as_ref().unwrap().bytes_per_frame > report.compiled.cost.bytes());

    // Tier override: forced to Bevy's forward renderer, the camera leaves the tile schedule
    // (no more tile reports); back to automatic, it returns.
    toggle(
        &mut headless,
        camera,
        InspectorChange::Tier(TierSetting::Force(RenderTier::Forward)),
    );
    assert_eq!(
        headless
            .app
            .world()
            .get::<TierDecision>(camera)
            .unwrap()
            .tier,
        RenderTier::Forward
    );
    let reports = headless.app.world().resource::<TileRenderReports>().clone();
    for _ in 0..6 {
        headless.update();
    }
    assert!(reports.get(camera).is_none(), "forward: no tile frame");
    toggle(
        &mut headless,
        camera,
        InspectorChange::Tier(TierSetting::Auto),
    );
    let (panel, report) = state(&headless, camera);
    assert_eq!(panel.tier, "tile-deferred");
    assert_eq!(report.compiled.render_pass_count(), 1);

    // Each debug view changes the image; the plan stays the same.
    // (The poison view changes the plan's load ops and, in a correct frame, not the image:
    // `debug_views::the_poison_view_changes_a_correct_frame_by_nothing_and_shows_a_broken_one`.)
    for view in TileDebugView::ALL {
        if matches!(
            view,
            TileDebugView::None | TileDebugView::MsaaEdges | TileDebugView::UndefinedPoison
        ) {
            continue;
        }
        toggle(&mut headless, camera, InspectorChange::DebugView(view));
        let (_, debug_report) = state(&headless, camera);
        assert_eq!(debug_report.compiled, report.compiled, "{view}");
        let shown = read_without_overlay(&mut headless);
        let (differ, total) = differing(&before, &shown, 0, 0, HEADLESS_WIDTH, HEADLESS_HEIGHT);
        assert!(
            differ * 20 > total,
            "debug view {view} shows something else ({differ} of {total} pixels differ)"
        );
    }
    toggle(
        &mut headless,
        camera,
        InspectorChange::DebugView(TileDebugView::None),
    );

    // MSAA 4x: the frame is rendered with 4 samples (lavapipe has 1 and 4).
    toggle(&mut headless, camera, InspectorChange::Msaa(Msaa::Sample4));
    assert_eq!(
        *headless.app.world().get::<Msaa>(camera).unwrap(),
        Msaa::Sample4
    );
    let (panel, report) = state(&headless, camera);
    assert_eq!(report.samples, 4);
    assert_eq!(report.compiled.native_passes[0].samples, 4);
    assert_panel_matches_report(&panel, &report, profile.as_ref());
    assert_eq!(panel.tier, "tile-deferred + 4x MSAA");
    assert_eq!(
        panel.stock_bevy.as_ref().unwrap().label,
        "Bevy forward 4xMSAA"
    );
    let edge_selective = report.per_sample_fraction.expect("measured with MSAA");

    // Every sample shaded: more pixels lit per sample.
    toggle(
        &mut headless,
        camera,
        InspectorChange::MsaaShading(MsaaShading::EverySample),
    );
    let tile = headless.app.world().get::<TileDeferred>(camera).unwrap();
    assert_eq!(tile.msaa_shading, MsaaShading::EverySample);
    let (_, report) = state(&headless, camera);
    let every_sample = report.per_sample_fraction.expect("measured with MSAA");
    assert!(
        every_sample > edge_selective,
        "every-sample shading lights more pixels per sample ({every_sample} vs {edge_selective})"
    );
    toggle(
        &mut headless,
        camera,
        InspectorChange::MsaaShading(MsaaShading::EdgeSelective),
    );

    // The edge mask tints the per-sample pixels: the image changes.
    let plain = read_without_overlay(&mut headless);
    toggle(
        &mut headless,
        camera,
        InspectorChange::DebugView(TileDebugView::MsaaEdges),
    );
    assert_eq!(
        headless
            .app
            .world()
            .get::<TileDeferred>(camera)
            .unwrap()
            .debug_view,
        TileDebugView::MsaaEdges
    );
    let masked = read_without_overlay(&mut headless);
    let (differ, _) = differing(&plain, &masked, 0, 0, HEADLESS_WIDTH, HEADLESS_HEIGHT);
    assert!(differ > 20, "the edge mask shows ({differ} pixels changed)");
    toggle(
        &mut headless,
        camera,
        InspectorChange::DebugView(TileDebugView::None),
    );

    // Back to no MSAA.
    toggle(&mut headless, camera, InspectorChange::Msaa(Msaa::Off));
    let (panel, report) = state(&headless, camera);
    assert_eq!(report.samples, 1);
    assert_eq!(panel.tier, "tile-deferred");
    let after = read_without_overlay(&mut headless);
    let (differ, total) = differing(&before, &after, 0, 0, HEADLESS_WIDTH, HEADLESS_HEIGHT);
    assert!(
        differ * 100 < total,
        "toggling back restores the frame ({differ} of {total} pixels differ)"
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Hidden, the inspector changes nothing.

fn render_plain(with_plugin: bool) -> (Frame, TileViewReport, HeadlessApp, Entity) {
    let (mut headless, camera) = if with_plugin {
        headless_with_inspector(false)
    } else {
        let mut headless = HeadlessApp::new(HEADLESS_WIDTH, HEADLESS_HEIGHT);
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let camera = headless.spawn_camera((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            Msaa::Off,
            TileDeferred::default(),
        ));
        (headless, camera)
    };
    let frame = headless.render(4);
    let report = headless
        .app
        .world()
        .resource::<TileRenderReports>()
        .get(camera)
        .expect("the camera's report");
    (frame, report, headless, camera)
}

/// Egui views the render world extracted in the last frame (bevy_egui records an egui pass
/// only for those; they are temporary entities, so count them during the frame).
#[derive(Resource, Clone, Default)]
struct EguiViewCount(std::sync::Arc<std::sync::atomic::AtomicUsize>);

fn count_egui_views(count: Res<EguiViewCount>, views: Query<(), With<EguiViewTarget>>) {
    count
        .0
        .store(views.iter().count(), std::sync::atomic::Ordering::SeqCst);
}

fn egui_views(headless: &mut HeadlessApp) -> usize {
    headless
        .app
        .world()
        .resource::<EguiViewCount>()
        .0
        .load(std::sync::atomic::Ordering::SeqCst)
}

fn egui_contexts(headless: &mut HeadlessApp) -> usize {
    let world = headless.app.world_mut();
    world
        .query_filtered::<(), With<EguiContext>>()
        .iter(world)
        .count()
}

#[test]
fn hidden_inspector_changes_nothing() {
    let _test = GpuTest::start("hidden_inspector_changes_nothing");
    let (plain_frame, plain, plain_app, _) = render_plain(false);
    drop(plain_app);
    let (frame, report, mut headless, camera) = render_plain(true);

    let same_pass = |a: &TileViewReport, b: &TileViewReport| {
        assert_eq!(a.compiled, b.compiled, "the same plan");
        assert_eq!(
            a.attachments, b.attachments,
            "the same VkRenderPass attachments"
        );
        assert_eq!(a.subpass_count, b.subpass_count);
        assert_eq!(a.render_passes_recorded, b.render_passes_recorded);
        assert_eq!(a.draws, b.draws);
    };
    same_pass(&plain, &report);
    assert_eq!(plain_frame.rgba, frame.rgba, "the same image");
    assert_eq!(
        egui_contexts(&mut headless),
        0,
        "no egui context while hidden"
    );
    assert_eq!(
        egui_views(&mut headless),
        0,
        "no egui view extracted, so no egui pass"
    );
    assert_eq!(
        headless
            .app
            .world()
            .resource::<TileInspectorPanels>()
            .updates,
        0,
        "nothing computed while hidden"
    );

    // Shown, then hidden again: back to the same frame, without leaking Vulkan objects.
    let live = headless
        .app
        .world()
        .resource::<TileRenderReports>()
        .resource_counts();
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspector>()
        .visible = true;
    let shown = headless.render(4);
    assert_eq!(egui_contexts(&mut headless), 1);
    assert_eq!(egui_views(&mut headless), 1);
    let (differ, _) = differing(&frame, &shown, 0, 0, HEADLESS_WIDTH, HEADLESS_HEIGHT);
    assert!(
        differ > 1000,
        "the overlay shows on the image target ({differ} pixels)"
    );
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspector>()
        .visible = false;
    // Frames enough for the overlay's render pass variant (with the `ui` subpass), its UI
    // buffers and image sets to go unused and be released.
    let hidden_again = headless.render(8);
    assert_eq!(egui_contexts(&mut headless), 0);
    assert_eq!(egui_views(&mut headless), 0);
    assert_eq!(
        hidden_again.rgba, frame.rgba,
        "hidden again: the same image"
    );
    let report = headless
        .app
        .world()
        .resource::<TileRenderReports>()
        .get(camera)
        .unwrap();
    same_pass(&plain, &report);
    // Everything the tile pass made to draw the overlay is gone, but the sampler of egui's
    // font texture: the sampler cache keeps a sampler per kind for the backend's life.
    let after = headless
        .app
        .world()
        .resource::<TileRenderReports>()
        .resource_counts();
    assert!(
        (0..=1).contains(&(after.other - live.other)),
        "{live:?} -> {after:?}"
    );
    let without_other = |counts: TileResourceCounts| TileResourceCounts { other: 0, ..counts };
    assert_eq!(without_other(after), without_other(live));
}

// ---------------------------------------------------------------------------------------------
// 4. Over Bevy's own Core3d camera (bevy_egui's egui_pass in Core3d draws it).

#[test]
fn inspector_over_a_core3d_camera() {
    let _test = GpuTest::start("inspector_over_a_core3d_camera");
    let mut headless = HeadlessApp::new(HEADLESS_WIDTH, HEADLESS_HEIGHT);
    headless.app.add_plugins(TileInspectorPlugin::default());
    scenes::spawn_lit_spheres(headless.app.world_mut());
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
    ));
    let hidden = headless.render(4);
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspector>()
        .visible = true;
    let shown = headless.render(4);
    let (differ, _) = differing(&hidden, &shown, 0, 0, HEADLESS_WIDTH, HEADLESS_HEIGHT);
    assert!(differ > 1000, "the overlay shows ({differ} pixels)");
    let panels = headless.app.world().resource::<TileInspectorPanels>();
    let panel = panels.get(camera).expect("the Core3d camera's panel");
    assert_eq!(panel.tier, "Bevy Core3d");
    assert!(panel.settings.is_none());
    assert_eq!(
        (panel.resolution.x, panel.resolution.y),
        (HEADLESS_WIDTH, HEADLESS_HEIGHT)
    );
    let in_use = panel.in_use.as_ref().expect("stock Bevy's plan");
    let alternative = panel
        .tile_deferred_alternative
        .as_ref()
        .expect("the tile-deferred alternative");
    assert!(alternative.bytes_per_frame < in_use.bytes_per_frame);
    let overlay = panel.overlay.as_ref().expect("the overlay's own pass");
    assert_eq!(
        overlay.bytes_per_frame,
        2 * u64::from(HEADLESS_WIDTH) * u64::from(HEADLESS_HEIGHT) * 4,
        "egui_pass loads and stores Bevy's main texture"
    );
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspector>()
        .visible = false;
    let hidden_again = headless.render(4);
    let (differ, total) = differing(
        &hidden,
        &hidden_again,
        0,
        0,
        HEADLESS_WIDTH,
        HEADLESS_HEIGHT,
    );
    assert!(
        differ * 100 < total,
        "hidden again ({differ} pixels differ)"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. On a phone: a three-finger tap shows and hides the overlay, which then fits the screen and
//    sizes its controls for fingers.

/// Writes this frame's touch messages: `phase` for each finger id in `fingers`.
fn touch(headless: &mut HeadlessApp, phase: bevy::input::touch::TouchPhase, fingers: &[u64]) {
    for &id in fingers {
        headless
            .app
            .world_mut()
            .write_message(bevy::input::touch::TouchInput {
                phase,
                position: Vec2::new(100.0 + 30.0 * id as f32, 100.0),
                window: Entity::PLACEHOLDER,
                force: None,
                id,
            });
    }
}

#[test]
fn a_three_finger_tap_shows_and_hides_the_inspector() {
    use bevy::input::touch::TouchPhase;
    let _test = GpuTest::start("a_three_finger_tap_shows_and_hides_the_inspector");
    let (mut headless, _camera) = headless_with_inspector(false);
    let hidden = headless.render(4);
    let visible = |headless: &HeadlessApp| headless.app.world().resource::<TileInspector>().visible;

    // Two fingers (a pinch) do nothing.
    touch(&mut headless, TouchPhase::Started, &[0, 1]);
    headless.update();
    touch(&mut headless, TouchPhase::Ended, &[0, 1]);
    headless.update();
    assert!(!visible(&headless), "two fingers do not toggle");
    assert_eq!(egui_contexts(&mut headless), 0);

    // Three fingers land (over two frames), stay a frame and lift: shown once.
    touch(&mut headless, TouchPhase::Started, &[0, 1]);
    headless.update();
    touch(&mut headless, TouchPhase::Started, &[2]);
    headless.update();
    assert!(visible(&headless), "three fingers show the overlay");
    headless.update();
    touch(&mut headless, TouchPhase::Ended, &[0, 1, 2]);
    let shown = headless.render(4);
    assert!(
        visible(&headless),
        "holding and lifting does not toggle again"
    );
    let (differ, _) = differing(&hidden, &shown, 0, 0, HEADLESS_WIDTH, HEADLESS_HEIGHT);
    assert!(differ > 1000, "the overlay is drawn ({differ} pixels)");

    // Sized for a phone: the window fits the (narrow) target and the controls are finger-sized.
    let rect = headless
        .app
        .world()
        .resource::<TileInspectorPanels>()
        .overlay_rect
        .expect("the overlay reports its window");
    assert!(
        rect.max.x <= HEADLESS_WIDTH as f32 + 1.0,
        "the overlay fits the {HEADLESS_WIDTH}-pixel-wide target: {rect:?}"
    );
    let world = headless.app.world_mut();
    let mut contexts = world.query::<&mut EguiContext>();
    let mut context = contexts.single_mut(world).expect("the inspector's context");
    let height = context.get_mut().global_style().spacing.interact_size.y;
    assert!(
        height >= 40.0,
        "finger-sized controls after a touch: {height}"
    );

    // Another three-finger tap hides it: the frame is the tile frame alone again.
    touch(&mut headless, TouchPhase::Started, &[3, 4, 5]);
    headless.update();
    touch(&mut headless, TouchPhase::Ended, &[3, 4, 5]);
    let hidden_again = headless.render(4);
    assert!(!visible(&headless), "a second tap hides the overlay");
    assert_eq!(egui_contexts(&mut headless), 0);
    assert_eq!(
        hidden_again.rgba, hidden.rgba,
        "hidden again: the same image"
    );
}

// ---------------------------------------------------------------------------------------------
// 6. egui inside the tile render pass: the same egui drawn by the tile pass's `ui` subpass and
// by bevy_egui's `egui_pass` after it (the route the overlay took before, kept where the pass
// cannot draw it) are the same picture, and only the first is one render pass at the floor.

/// The schedule of the static egui context on test camera `0`.
#[derive(bevy::ecs::schedule::ScheduleLabel, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct StaticEguiPass(usize);

/// The camera whose egui context [`StaticEguiPass`] `0` draws.
#[derive(Component, Clone, Copy)]
struct StaticEguiCamera(usize);

/// Where the static window was last drawn, in points (= pixels on an image target), by camera.
#[derive(Resource, Default)]
struct StaticEguiRects(bevy::platform::collections::HashMap<usize, egui::Rect>);

/// egui content that is the same every frame, shaped like a game's debug window: a window with
/// its shadow, labels in two sizes and colours, a button, a progress bar, a separator, a
/// scrolled list clipped by its scroll area (scissors inside the window), and a translucent
/// shape outside any window.
fn draw_static_egui(ctx: &egui::Context) -> Option<egui::Rect> {
    egui::Area::new(egui::Id::new("translucent disc"))
        .fixed_pos([230.0, 150.0])
        .show(ctx, |ui| {
            let (rect, _) = ui.allocate_exact_size(egui::vec2(60.0, 60.0), egui::Sense::hover());
            ui.painter().circle_filled(
                rect.center(),
                28.0,
                egui::Color32::from_rgba_unmultiplied(40, 160, 255, 140),
            );
        });
    egui::Window::new("Stats")
        .fixed_pos([12.0, 12.0])
        .fixed_size([170.0, 150.0])
        .show(ctx, |ui| {
            ui.label("tile-deferred, in the pass");
            ui.colored_label(egui::Color32::from_rgb(255, 180, 0), "3.69 MB / frame");
            ui.label(egui::RichText::new("1.00x").size(22.0).strong());
            let _ = ui.button("Merge subpasses");
            ui.add(egui::ProgressBar::new(0.6).text("60%"));
            ui.separator();
            egui::ScrollArea::vertical()
                .max_height(36.0)
                .show(ui, |ui| {
                    for line in 0..8 {
                        ui.label(format!("subpass {line}: lighting"));
                    }
                });
        })
        .map(|window| window.response.rect)
}

/// A tile camera over the UI tests' scene into a new image target, with an egui context whose
/// pass draws [`draw_static_egui`] (test camera `index`), egui in the tile pass or not.
fn spawn_static_egui_camera(
    headless: &mut HeadlessApp,
    index: usize,
    (hdr, msaa): (bool, Msaa),
    in_pass: bool,
) -> (Entity, Handle<Image>) {
    use crate::ui_overlay;
    use bevy::camera::{Hdr, RenderTarget};
    use bevy_egui::EguiSchedule;
    let target = headless.add_target(ui_overlay::WIDTH, ui_overlay::HEIGHT);
    let world = headless.app.world_mut();
    let mut camera = world.spawn((
        Camera3d::default(),
        Transform::from_xyz(-2.5, 3.0, 5.0).looking_at(Vec3::new(0.0, 0.4, 0.0), Vec3::Y),
        RenderTarget::Image(target.clone().into()),
        msaa,
        TileDeferred {
            ui_in_pass: in_pass,
            ..default()
        },
        EguiSchedule::new(StaticEguiPass(index)),
        StaticEguiCamera(index),
    ));
    if hdr {
        camera.insert(Hdr);
    }
    let camera = camera.id();
    headless.app.add_systems(
        StaticEguiPass(index),
        move |mut contexts: Query<(&mut EguiContext, &StaticEguiCamera)>,
              mut rects: ResMut<StaticEguiRects>| {
            for (mut context, camera) in &mut contexts {
                if camera.0 == index
                    && let Some(rect) = draw_static_egui(context.get_mut())
                {
                    rects.0.insert(index, rect);
                }
            }
        },
    );
    (camera, target)
}

/// The region of `frame` under `rect` (points = pixels), clamped to the frame.
fn crop_egui(frame: &Frame, rect: egui::Rect) -> Frame {
    let rect = URect::new(
        rect.min.x.max(0.0) as u32,
        rect.min.y.max(0.0) as u32,
        (rect.max.x as u32).min(frame.width),
        (rect.max.y as u32).min(frame.height),
    );
    crate::ui_overlay::crop(frame, rect)
}

#[test]
fn egui_drawn_in_the_tile_pass_matches_egui_drawn_after_it() {
    use crate::ui_overlay;
    let _test = GpuTest::start("egui_drawn_in_the_tile_pass_matches_egui_drawn_after_it");
    let (width, height) = (ui_overlay::WIDTH, ui_overlay::HEIGHT);
    let mut headless = HeadlessApp::new(width, height);
    headless
        .app
        .add_plugins(TileInspectorPlugin::default())
        .init_resource::<StaticEguiRects>();
    headless.update();
    ui_overlay::spawn_scene(headless.app.world_mut());
    let cases = [
        (false, Msaa::Off),
        (true, Msaa::Off),
        (false, Msaa::Sample4),
        (true, Msaa::Sample4),
    ];
    // Per case: the camera drawing egui in the pass, then the one drawing it after the pass.
    let mut cameras = Vec::new();
    for (case, &(hdr, msaa)) in cases.iter().enumerate() {
        for in_pass in [true, false] {
            let index = case * 2 + usize::from(!in_pass);
            cameras.push(spawn_static_egui_camera(
                &mut headless,
                index,
                (hdr, msaa),
                in_pass,
            ));
        }
    }
    // egui lays a window out over its first frames, and fills its font atlas.
    for _ in 0..10 {
        headless.update();
    }
    let images: Vec<Handle<Image>> = cameras.iter().map(|(_, target)| target.clone()).collect();
    let frames = headless.read_images(&images);
    let world = headless.app.world();
    let rects = &world.resource::<StaticEguiRects>().0;
    let reports = world.resource::<TileRenderReports>();
    let floor = u64::from(width * height) * 4;
    let mut failures = Vec::new();
    for (case, &(hdr, msaa)) in cases.iter().enumerate() {
        let name = format!(
            "egui-hdr-{}-{}x",
            if hdr { "on" } else { "off" },
            msaa.samples()
        );
        let (in_pass, after_pass) = (&frames[case * 2], &frames[case * 2 + 1]);
        in_pass.save_png(&format!("{name}-in-pass"));
        // At 4x a pixel on the edge between two of egui's triangles (its anti-aliasing feather
        // against the fill) takes each triangle's colour by the samples it covers, where
        // `egui_pass` at 1x takes the one over the pixel's centre: a few levels there.
        let max_p995 = if msaa.samples() > 1 { 8 } else { 4 };
        let window = rects[&(case * 2)];
        assert_eq!(window, rects[&(case * 2 + 1)], "{name}: the same layout");
        // The window and its shadow, and the disc.
        let regions = [
            ("window", window.expand(12.0)),
            (
                "disc",
                egui::Rect::from_min_size(egui::pos2(228.0, 148.0), egui::vec2(64.0, 64.0)),
            ),
        ];
        for (label, rect) in regions {
            let (a, b) = (crop_egui(in_pass, rect), crop_egui(after_pass, rect));
            let region = format!("{name}-{label}");
            let psnr = crate::harness::image_compare::psnr(&a, &b);
            let p995 = crate::harness::image_compare::channel_difference_percentile(&a, &b, 99.5);
            eprintln!("{region}: in the pass against after it: PSNR {psnr:.2} dB, p99.5 {p995}");
            if psnr < 40.0 || p995 > max_p995 {
                let paths = [
                    a.save_png(&format!("{region}-in-pass")),
                    b.save_png(&format!("{region}-after-pass")),
                ];
                failures.push(format!(
                    "{region}: PSNR {psnr:.2} dB (need >= 40), p99.5 {p995} (need <= \
                     {max_p995}): {}",
                    paths.map(|p| p.display().to_string()).join(", ")
                ));
            }
        }
        // The window shows: it is not the scene.
        let (differ, total) = {
            let plain = &frames[case * 2];
            let (x0, y0) = (window.min.x as u32 + 4, window.min.y as u32 + 24);
            let region = URect::new(x0, y0, x0 + 100, y0 + 60);
            let text = ui_overlay::crop(plain, region);
            let first = &text.rgba[..4];
            let differ = text
                .rgba
                .chunks_exact(4)
                .filter(|p| (0..3).any(|c| p[c].abs_diff(first[c]) > 40))
                .count();
            (differ, text.rgba.len() / 4)
        };
        assert!(
            differ > 100 && differ < total,
            "{name}: text in the window ({differ} of {total} pixels differ from the first)"
        );

        let in_report = reports.get(cameras[case * 2].0).expect("a report");
        let after_report = reports.get(cameras[case * 2 + 1].0).expect("a report");
        let drawn = in_report
            .egui_in_pass
            .expect("egui was drawn in the tile pass");
        assert!(
            drawn.meshes >= 3 && drawn.triangles > 100,
            "{name}: {drawn:?}"
        );
        assert_eq!(in_report.egui_after_pass_reason, None, "{name}");
        assert_eq!(in_report.ui_in_pass, None, "{name}: no bevy_ui");
        assert_eq!(in_report.render_passes_recorded, 1, "{name}");
        let last = in_report.compiled.native_passes[0].subpasses.last();
        assert_eq!(last.map(|s| s.name.as_str()), Some("ui"), "{name}");
        assert_eq!(in_report.compiled.cost.bytes(), floor, "{name}");
        assert_eq!(after_report.egui_in_pass, None, "{name}");
        assert_eq!(
            after_report.egui_after_pass_reason.as_deref(),
            Some("TileDeferred::ui_in_pass is off"),
            "{name}"
        );
        eprintln!("{name}: in the pass {drawn:?}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// egui over a bevy_ui HUD (`scenes/hud.rs`) on one camera at 4x MSAA: the `ui` subpass draws
/// bevy_ui's quads (grown to whole pixels) and then egui's triangles (as rasterised), the same
/// picture as both drawn after the pass, in one render pass at the floor. With a `UiMaterial`
/// in the HUD, bevy_ui is drawn partly after the pass, and so egui goes after it too (it is
/// drawn over bevy_ui), with the reason in the report.
#[test]
fn egui_over_a_hud_is_drawn_in_the_tile_pass_after_bevy_ui() {
    use crate::scenes::hud::{
        PlainUiMaterial, ZStackExtra, checker_image, count_frames, spawn_hud,
    };
    use crate::ui_overlay;
    let _test = GpuTest::start("egui_over_a_hud_is_drawn_in_the_tile_pass_after_bevy_ui");
    let (width, height) = (ui_overlay::WIDTH, ui_overlay::HEIGHT);
    let mut headless = HeadlessApp::new(width, height);
    headless
        .app
        .add_plugins(TileInspectorPlugin::default())
        .add_plugins(bevy::ui_render::prelude::UiMaterialPlugin::<PlainUiMaterial>::default())
        .init_resource::<StaticEguiRects>()
        .add_systems(Update, count_frames);
    headless.update();
    ui_overlay::spawn_scene(headless.app.world_mut());
    let checker = checker_image(headless.app.world_mut());
    // In the pass; after it; in the pass but for a UI material in the HUD.
    let cases = [
        (true, ZStackExtra::None),
        (false, ZStackExtra::None),
        (true, ZStackExtra::UiMaterial),
    ];
    let mut cameras = Vec::new();
    for (index, &(in_pass, extra)) in cases.iter().enumerate() {
        let (camera, target) =
            spawn_static_egui_camera(&mut headless, index, (false, Msaa::Sample4), in_pass);
        spawn_hud(headless.app.world_mut(), camera, checker.clone(), extra);
        cameras.push((camera, target));
    }
    for _ in 0..10 {
        headless.update();
    }
    let images: Vec<Handle<Image>> = cameras.iter().map(|(_, target)| target.clone()).collect();
    let frames = headless.read_images(&images);
    let world = headless.app.world();
    let window = world.resource::<StaticEguiRects>().0[&0];
    let reports = world.resource::<TileRenderReports>();
    let report = |case: usize| reports.get(cameras[case].0).expect("a report");

    let both = report(0);
    let ui = both.ui_in_pass.expect("bevy_ui in the tile pass");
    let egui = both.egui_in_pass.expect("egui in the tile pass");
    eprintln!("in the pass: {ui:?}, {egui:?}");
    assert!(ui.items >= 20 && egui.meshes >= 3, "{ui:?} {egui:?}");
    assert_eq!(
        (&both.ui_after_pass_reason, &both.egui_after_pass_reason),
        (&None, &None)
    );
    assert_eq!(both.render_passes_recorded, 1);
    assert_eq!(both.compiled.cost.bytes(), u64::from(width * height) * 4);
    assert!(both.ui_pass.is_none());

    let after = report(1);
    assert_eq!((after.ui_in_pass, after.egui_in_pass), (None, None));
    let off = Some("TileDeferred::ui_in_pass is off");
    assert_eq!(after.egui_after_pass_reason.as_deref(), off);

    let material = report(2);
    assert!(material.ui_in_pass.is_some(), "the HUD under the material");
    assert!(
        material
            .ui_after_pass_reason
            .as_deref()
            .is_some_and(|why| why.starts_with("a UiMaterial")),
        "{:?}",
        material.ui_after_pass_reason
    );
    assert_eq!(material.egui_in_pass, None);
    let why = material.egui_after_pass_reason.as_deref().unwrap_or("");
    assert!(
        why.starts_with("bevy_ui is drawn after the tile pass (a UiMaterial"),
        "{why}"
    );

    // The same picture: the whole frame, and egui's window with its shadow over the HUD; with
    // the UI material, inside the window (opaque: what is under it does not show).
    let mut failures = Vec::new();
    let regions = [
        ("whole frame", frames[0].clone(), frames[1].clone()),
        (
            "window",
            crop_egui(&frames[0], window.expand(12.0)),
            crop_egui(&frames[1], window.expand(12.0)),
        ),
        (
            "window, UI material in the HUD",
            crop_egui(&frames[0], window.shrink(8.0)),
            crop_egui(&frames[2], window.shrink(8.0)),
        ),
    ];
    for (label, a, b) in regions {
        let psnr = crate::harness::image_compare::psnr(&a, &b);
        let p995 = crate::harness::image_compare::channel_difference_percentile(&a, &b, 99.5);
        eprintln!("egui over a HUD, {label}: PSNR {psnr:.2} dB, p99.5 {p995}");
        if psnr < 40.0 || p995 > 8 {
            let name = format!("egui-over-hud-{}", label.replace([' ', ','], "-"));
            let paths = [
                a.save_png(&format!("{name}-a")),
                b.save_png(&format!("{name}-b")),
            ];
            failures.push(format!(
                "{label}: PSNR {psnr:.2} dB (need >= 40), p99.5 {p995} (need <= 8): {}",
                paths.map(|p| p.display().to_string()).join(", ")
            ));
        }
    }
    frames[0].save_png("egui-over-hud-in-pass");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// 7. An app's own egui on a tile camera without the inspector's plugin: nothing installs the
// tile path's egui route, so the camera lists it in `TileMissing` and `Auto` hands the camera
// to Bevy's `Core3d`, whose egui pass draws it. With the plugin it is drawn on the tile path.

#[test]
fn egui_on_a_tile_camera_without_the_inspector_makes_auto_fall_back() {
    use bevy_egui::{EguiGlobalSettings, EguiPlugin, EguiSchedule};
    use bevy_tile_deferred::{
        tiers::{RenderTier, TierDecision},
        tile_deferred::missing::TileMissing,
    };
    let _test = GpuTest::start("egui_on_a_tile_camera_without_the_inspector_makes_auto_fall_back");
    for with_inspector in [false, true] {
        let name = if with_inspector {
            "with TileInspectorPlugin"
        } else {
            "without TileInspectorPlugin"
        };
        let mut headless = HeadlessApp::new(HEADLESS_WIDTH, HEADLESS_HEIGHT);
        if with_inspector {
            headless.app.add_plugins(TileInspectorPlugin::default());
        } else {
            headless.app.add_plugins(EguiPlugin::default());
            headless
                .app
                .world_mut()
                .resource_mut::<EguiGlobalSettings>()
                .auto_create_primary_context = false;
        }
        headless.app.init_resource::<StaticEguiRects>();
        scenes::spawn_lit_spheres(headless.app.world_mut());
        let camera = headless.spawn_camera((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            Msaa::Off,
            TileDeferred::default(),
            EguiSchedule::new(StaticEguiPass(0)),
            StaticEguiCamera(0),
        ));
        headless.app.add_systems(
            StaticEguiPass(0),
            |mut contexts: Query<&mut EguiContext>, mut rects: ResMut<StaticEguiRects>| {
                for mut context in &mut contexts {
                    if let Some(rect) = draw_static_egui(context.get_mut()) {
                        rects.0.insert(0, rect);
                    }
                }
            },
        );
        // Enough frames for `Auto` to hand the camera over and Bevy to draw it.
        let frame = headless.render(8);
        let world = headless.app.world();
        let listed: Vec<String> = world
            .get::<TileMissing>(camera)
            .map(|missing| missing.items.iter().map(|i| i.what.clone()).collect())
            .unwrap_or_default();
        let egui_listed = listed
            .iter()
            .any(|what| what.starts_with("UI: an egui context"));
        let tier = world.get::<TierDecision>(camera).map(|d| d.tier);
        assert_eq!(egui_listed, !with_inspector, "{name}: {listed:?}");
        if with_inspector {
            assert_eq!(tier, Some(RenderTier::TileDeferred), "{name}");
            let report = world.resource::<TileRenderReports>().get(camera);
            assert!(
                report.is_some_and(|r| r.egui_in_pass.is_some()),
                "{name}: egui drawn in the tile pass"
            );
        } else {
            assert_eq!(
                tier,
                Some(RenderTier::Forward),
                "{name}: Bevy's Core3d draws it"
            );
        }
        // Either way the window shows: text inside it differs from its background.
        let window = world.resource::<StaticEguiRects>().0[&0];
        let text = crop_egui(&frame, window.shrink(12.0));
        let first = &text.rgba[..4];
        let differ = text
            .rgba
            .chunks_exact(4)
            .filter(|p| (0..3).any(|c| p[c].abs_diff(first[c]) > 40))
            .count();
        assert!(
            differ > 100,
            "{name}: the egui window is drawn ({differ} pixels)"
        );
    }
}

/// The inspector's tile validation (issue 33): picking a phone GPU puts `TileValidation` on the
/// camera and the panel shows that device's report (a 128-bit Mali: Bevy's forward path, its
/// tile colour budget too small; an Adreno 750: one render pass on tile); the camera's own frame
/// does not change; "off" removes it.
#[test]
fn the_inspector_validates_the_frame_as_a_chosen_phone() {
    use bevy_tile_deferred::{TileValidation, TileValidationReport};
    let _test = GpuTest::start("the_inspector_validates_the_frame_as_a_chosen_phone");
    let (mut headless, camera) = headless_with_inspector(true);
    for _ in 0..4 {
        headless.update();
    }
    let (panel, report) = state(&headless, camera);
    assert!(panel.validation.is_none());
    let tier = panel.tier.clone();
    for (phone, stays_on_tile) in [("Mali-T880", false), ("Adreno (TM) 750", true)] {
        toggle(
            &mut headless,
            camera,
            InspectorChange::Validation(Some(phone)),
        );
        let world = headless.app.world();
        assert_eq!(
            world.get::<TileValidation>(camera),
            TileValidation::phone(phone).as_ref()
        );
        let (panel, after) = state(&headless, camera);
        let shown = panel.validation.expect("the panel shows the validation");
        assert_eq!(Some(&shown), world.get::<TileValidationReport>(camera));
        assert_eq!(shown.device, phone);
        assert_eq!(shown.stays_on_tile(), stays_on_tile, "{shown:#?}");
        assert_eq!(shown.tier.is_tile(), stays_on_tile, "{shown:#?}");
        // The camera renders as before.
        assert_eq!(panel.tier, tier);
        assert_eq!(after.compiled, report.compiled);
    }
    toggle(&mut headless, camera, InspectorChange::Validation(None));
    assert!(headless.app.world().get::<TileValidation>(camera).is_none());
    let (panel, _) = state(&headless, camera);
    assert!(panel.validation.is_none());
}

// ---------------------------------------------------------------------------------------------
// 7. Another app's frame (feature `remote`): read over BRP, shown as this app's own.

/// The inspector connected to an app's BRP port (here its own, on loopback: the same frame both
/// ways) computes the same panels from the remote report as from the local one, read-only, and
/// goes back to the local frame when disconnected.
#[cfg(feature = "remote")]
#[test]
fn the_inspector_shows_a_remote_apps_frame_as_its_own() {
    use bevy_tile_deferred::{TileValidation, inspector::TileInspectorRemote};
    let _test = GpuTest::start("the_inspector_shows_a_remote_apps_frame_as_its_own");
    let (mut headless, camera) = headless_with_inspector(true);
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(TileValidation::phone("Adreno (TM) 610").expect("a listed phone"));
    let address = crate::harness::serve_brp(&mut headless.app);
    // Until the validation describes a tile frame with the overlay drawn in it.
    for _ in 0..8 {
        headless.update();
    }
    let local = headless
        .app
        .world()
        .resource::<TileInspectorPanels>()
        .clone();
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspectorRemote>()
        .connect(address.clone());
    let mut frames = 0;
    while headless
        .app
        .world()
        .resource::<TileInspectorRemote>()
        .received_at
        .is_none()
    {
        headless.update();
        frames += 1;
        let remote = headless.app.world().resource::<TileInspectorRemote>();
        assert!(
            frames < 600,
            "no answer from {address}: {:?}",
            remote.last_error
        );
    }
    let remote = headless.app.world().resource::<TileInspectorRemote>();
    assert_eq!(remote.last_error, None);
    let shown = headless.app.world().resource::<TileInspectorPanels>();
    assert_eq!(shown.cameras.len(), local.cameras.len());
    let (local, shown) = (
        local.get(camera).expect("the local panel"),
        shown.get(camera).expect("the remote panel"),
    );
    // The same frame computed the same way: everything but what the frame clock and the GPU
    // timestamps move between frames, and the overlay's own cost (priced for this app only).
    assert_eq!(shown.name, local.name);
    assert_eq!(
        (&shown.tier, &shown.tier_reason),
        (&local.tier, &local.tier_reason)
    );
    assert_eq!(shown.device_name, local.device_name);
    assert_eq!(shown.resolution, local.resolution);
    assert_eq!(shown.samples, local.samples);
    assert_eq!(shown.compiled, local.compiled);
    assert_eq!(shown.merging_off_frame, local.merging_off_frame);
    for (shown, local) in [
        (&shown.in_use, &local.in_use),
        (&shown.merging_off, &local.merging_off),
        (&shown.stock_bevy, &local.stock_bevy),
        (&shown.stock_bevy_deferred, &local.stock_bevy_deferred),
    ] {
        let (shown, local) = (shown.as_ref().unwrap(), local.as_ref().unwrap());
        assert_eq!(
            (&shown.label, shown.bytes_per_frame, shown.render_passes),
            (&local.label, local.bytes_per_frame, local.render_passes)
        );
    }
    assert_eq!(shown.settings, local.settings);
    assert_eq!(shown.missing, local.missing);
    assert_eq!(shown.render_passes_recorded, local.render_passes_recorded);
    let validation = shown.validation.as_ref().expect("the validation is shown");
    assert_eq!(Some(validation), local.validation.as_ref());
    assert_eq!(
        Some(validation),
        headless
            .app
            .world()
            .get::<bevy_tile_deferred::TileValidationReport>(camera)
    );
    assert_eq!(validation.device, "Adreno (TM) 610");
    assert!(validation.frame > 0, "{validation:?}");
    assert!(
        shown.overlay.is_none(),
        "a remote app's overlay is not priced here"
    );

    // Disconnected: this app's frame again.
    headless
        .app
        .world_mut()
        .resource_mut::<TileInspectorRemote>()
        .disconnect();
    headless.update();
    let panels = headless.app.world().resource::<TileInspectorPanels>();
    assert_eq!(
        panels.get(camera).map(|p| p.overlay.is_some()),
        Some(local.overlay.is_some())
    );
}
