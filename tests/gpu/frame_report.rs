//! The frame's report as data (issue 33): `TileFrameReport` written to JSON files per frame and
//! on demand (feature `serde`), and read over the Bevy Remote Protocol on loopback from a
//! headless app (feature `remote`), as a desktop reads a phone's over `adb forward`.

use crate::{
    harness::{GpuTest, HeadlessApp},
    scenes,
};
use bevy::{ecs::system::RunSystemOnce, prelude::*, render::view::Msaa};
use bevy_tile_deferred::{
    TileDeferred, TileFrameReport, TileFrameReportParam, TileRenderReports, TileReportFile,
    TileValidation, TileValidationReport,
};

const WIDTH: u32 = 320;
const HEIGHT: u32 = 180;

/// The showcase seen by a tile camera with 4x MSAA validated as a Mali-G57, by a Bevy camera
/// (order 1) into a second image, and by a tile camera of the unmerged tier without MSAA (order
/// 2) into a third.
fn three_cameras() -> (HeadlessApp, Entity, Entity) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    scenes::spawn_showcase(headless.app.world_mut(), 8);
    let tile = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Sample4,
        TileDeferred::default(),
        TileValidation::phone("Mali-G57").expect("a listed phone"),
        Name::new("tile"),
    ));
    let second = headless.add_target(WIDTH, HEIGHT);
    let bevy = headless
        .app
        .world_mut()
        .spawn((
            Camera3d::default(),
            Camera {
                order: 1,
                ..scenes::reference_camera()
            },
            scenes::reference_camera_transform(),
            Msaa::Off,
            bevy::camera::RenderTarget::Image(second.into()),
            Name::new("bevy"),
        ))
        .id();
    let third = headless.add_target(WIDTH, HEIGHT);
    headless.app.world_mut().spawn((
        Camera3d::default(),
        Camera {
            order: 2,
            ..scenes::reference_camera()
        },
        scenes::reference_camera_transform(),
        Msaa::Off,
        TileDeferred {
            merge_subpasses: false,
            ..default()
        },
        bevy::camera::RenderTarget::Image(third.into()),
        Name::new("unmerged"),
    ));
    (headless, tile, bevy)
}

fn collect(headless: &mut HeadlessApp) -> TileFrameReport {
    headless
        .app
        .world_mut()
        .run_system_once(|report: TileFrameReportParam| report.collect())
        .expect("the report's system runs")
}

/// What a report says of the two cameras, checked against the app's own components and the
/// render world's report (`frame`: the tile frame it must describe).
fn assert_describes(report: &TileFrameReport, headless: &HeadlessApp, tile: Entity) {
    let world = headless.app.world();
    assert_eq!(
        report
            .cameras
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["tile", "bevy", "unmerged"],
        "every active 3D camera, by order"
    );
    let device = report.device.as_ref().expect("the device is probed");
    assert_eq!(
        device.name,
        world
            .resource::<bevy_tile_deferred::DeviceProfile>()
            .device_name
    );
    let tile_camera = report.camera_named("tile").expect("the tile camera");
    assert_eq!(tile_camera.camera, tile);
    assert!(tile_camera.on_tile_path);
    assert_eq!(tile_camera.requested_samples, 4);
    assert_eq!(tile_camera.resolution, [WIDTH, HEIGHT]);
    assert_eq!(
        tile_camera.decision.as_ref(),
        world.get::<bevy_tile_deferred::TierDecision>(tile)
    );
    assert_eq!(
        tile_camera.validation.as_ref(),
        world.get::<TileValidationReport>(tile)
    );
    assert_eq!(tile_camera.validation.as_ref().unwrap().device, "Mali-G57");
    let view = tile_camera.view.as_ref().expect("the tile frame's report");
    let recorded = world
        .resource::<TileRenderReports>()
        .get(tile)
        .expect("a tile frame");
    // The plan is the same every frame of this still scene; times are measured per frame.
    assert_eq!(view.compiled, recorded.compiled);
    assert_eq!(view.priced, recorded.priced);
    assert_eq!(view.attachments, recorded.attachments);
    assert_eq!(view.bytes_per_frame(), recorded.bytes_per_frame());
    assert_eq!(view.render_passes_recorded, 1);
    // Every attachment of the Vulkan render pass says why it is loaded and stored.
    let output = view
        .attachments
        .iter()
        .find(|a| a.store_op == "STORE")
        .expect("the output is stored");
    assert!(
        output.store_reason.contains("stored"),
        "{}",
        output.store_reason
    );
    for attachment in &view.attachments {
        assert!(!attachment.load_reason.is_empty() && !attachment.store_reason.is_empty());
    }
    let bevy_camera = report.camera_named("bevy").expect("the Bevy camera");
    assert!(!bevy_camera.on_tile_path);
    assert!(bevy_camera.settings.is_none() && bevy_camera.view.is_none());
    // The unmerged tier without MSAA: separate render passes, and the G-buffer loaded back with
    // the reason naming its writer and why the two passes were not merged.
    let unmerged = report
        .camera_named("unmerged")
        .expect("the unmerged camera");
    let view = unmerged.view.as_ref().expect("its tile frame");
    assert_eq!(view.samples, 1);
    assert!(
        view.render_passes_recorded > 1,
        "{}",
        view.compiled.describe()
    );
    assert!(
        view.attachments.iter().any(|a| a.load_op == "LOAD"
            && a.load_reason.contains("written by `gbuffer`")
            && a.load_reason.contains("not merged")),
        "{:#?}",
        view.attachments
    );
}

#[test]
fn the_frame_report_is_written_to_json_per_frame_and_on_demand() {
    let _test = GpuTest::start("the_frame_report_is_written_to_json_per_frame_and_on_demand");
    let folder = std::env::temp_dir().join(format!("tile-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let (mut headless, tile, _) = three_cameras();
    headless.app.insert_resource(TileReportFile::every_frame(
        folder.join("frames/frame-{frame}.json"),
    ));
    headless.render(3);

    // One file per frame, each a whole report that reads back.
    let mut files: Vec<_> = std::fs::read_dir(folder.join("frames"))
        .expect("the folder was created")
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let last = headless
        .app
        .world()
        .resource::<TileReportFile>()
        .last_written
        .clone()
        .expect("written");
    let json = std::fs::read_to_string(&last).unwrap();
    let read = TileFrameReport::from_json(&json).expect("the file reads back");
    assert_describes(&read, &headless, tile);
    // The JSON is the report, field for field.
    // (Floats included: serde_json's `float_roundtrip` reads back the same bits.)
    assert!(
        read.to_json() == json,
        "the JSON is not the report, field for field"
    );
    assert!(json.contains("\"load_reason\"") && json.contains("\"store_reason\""));

    // On demand: nothing until asked, then one file.
    let on_demand = folder.join("on-demand.json");
    headless
        .app
        .insert_resource(TileReportFile::on_demand(&on_demand));
    headless.update();
    assert!(!on_demand.exists());
    headless
        .app
        .world_mut()
        .resource_mut::<TileReportFile>()
        .request();
    headless.update();
    let asked = TileFrameReport::from_json(&std::fs::read_to_string(&on_demand).unwrap())
        .expect("the file reads back");
    assert_describes(&asked, &headless, tile);
    assert!(!headless.app.world().resource::<TileReportFile>().requested);

    // A path that cannot be written is an error kept on the resource, not a panic.
    let blocked = folder.join("on-demand.json/inside.json");
    let mut file = TileReportFile::on_demand(&blocked);
    file.request();
    headless.app.insert_resource(file);
    headless.update();
    let file = headless.app.world().resource::<TileReportFile>();
    assert!(file.last_error.is_some() && !file.requested, "{file:?}");
    let _ = std::fs::remove_dir_all(&folder);
}

#[cfg(feature = "remote")]
#[test]
fn the_frame_report_is_read_over_brp_on_loopback() {
    use bevy_tile_deferred::frame_report::{REPORT_METHOD, TileReportParams, fetch_report};
    use std::time::Duration;

    let _test = GpuTest::start("the_frame_report_is_read_over_brp_on_loopback");
    let (mut headless, tile, _) = three_cameras();
    let address = crate::harness::serve_brp(&mut headless.app);
    headless.render(3);

    // Requests from other threads, answered while the app runs its frames.
    let ask = |params: TileReportParams| {
        let address = address.clone();
        std::thread::spawn(move || fetch_report(&address, &params, Duration::from_secs(20)))
    };
    let answer = |headless: &mut HeadlessApp, params: TileReportParams| {
        let request = ask(params);
        for _ in 0..600 {
            if request.is_finished() {
                break;
            }
            headless.update();
        }
        request.join().expect("the request's thread")
    };

    let remote = answer(&mut headless, TileReportParams::default()).expect("the app answers");
    eprintln!(
        "{REPORT_METHOD} on {address}: {} cameras, tile frame of {} bytes",
        remote.cameras.len(),
        remote.cameras[0]
            .view
            .as_ref()
            .map_or(0, |v| v.bytes_per_frame())
    );
    assert_describes(&remote, &headless, tile);
    // What the app would report itself, up to the frame numbers and the measured times.
    let local = collect(&mut headless);
    assert_eq!(remote.device, local.device);
    for (remote, local) in remote.cameras.iter().zip(&local.cameras) {
        assert_eq!(remote.name, local.name);
        assert_eq!(remote.decision, local.decision);
        assert_eq!(remote.missing, local.missing);
        assert_eq!(remote.settings, local.settings);
        assert_eq!(
            remote.view.as_ref().map(|v| &v.compiled),
            local.view.as_ref().map(|v| &v.compiled)
        );
    }

    // One camera by name; an unknown name is the method's error, not an empty report.
    let one = answer(
        &mut headless,
        TileReportParams {
            camera: Some("bevy".into()),
        },
    )
    .expect("the app answers");
    assert_eq!(one.cameras.len(), 1);
    assert_eq!(one.cameras[0].name, "bevy");
    let unknown = answer(
        &mut headless,
        TileReportParams {
            camera: Some("nobody".into()),
        },
    );
    let error = unknown.expect_err("no camera of that name");
    assert!(error.contains("nobody"), "{error}");
}
