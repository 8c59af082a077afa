//! Never silently missing: what a tile camera sees that the tile path cannot draw (a custom
//! `Material`, a transparent `StandardMaterial`, a post-processing component) makes an `Auto`
//! camera fall back to Bevy's `Core3d` while it is in view, with the reason, and come back after
//! it leaves; a forced tier keeps rendering, logs it once and lists it.

use crate::{
    harness::{
        Frame, GpuTest, HeadlessApp, assert_frames_match, image_compare::psnr, lower_right_viewport,
    },
    scenes,
};
use bevy::{
    asset::uuid_handle,
    pbr::{Material, MaterialPlugin, ScreenSpaceAmbientOcclusion},
    prelude::*,
    render::{render_resource::AsBindGroup, view::Msaa},
    shader::ShaderRef,
};
use bevy_tile_deferred::{
    TileDeferred, TileKeepGpuLightClustering, TileRenderReports,
    tiers::{MISSING_RETURN_FRAMES, RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::{MissingFeature, TileMissing},
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 144;

const FLAT_COLOR_SHADER: Handle<Shader> = uuid_handle!("5b0f4f47-3d0e-4c55-9d0a-0c5e3f1b7a21");

/// A custom material: one flat colour, from its own WGSL shader.
#[derive(Asset, TypePath, AsBindGroup, Clone)]
struct FlatColorMaterial {
    #[uniform(0)]
    color: LinearRgba,
}

impl Material for FlatColorMaterial {
    fn fragment_shader() -> ShaderRef {
        ShaderRef::Handle(FLAT_COLOR_SHADER)
    }
}

const FLAT_COLOR_WGSL: &str = "
#import bevy_pbr::forward_io::VertexOutput

@group(#{MATERIAL_BIND_GROUP}) @binding(0) var<uniform> color: vec4<f32>;

@fragment
fn fragment(in: VertexOutput) -> @location(0) vec4<f32> {
    return color;
}
";

/// Where the custom-material cube is in view: between the camera and the spheres.
const IN_VIEW: Vec3 = Vec3::new(0.0, 2.0, 5.0);
/// Where it is out of every view (frustum-culled).
const OUT_OF_VIEW: Vec3 = Vec3::new(200.0, 0.0, 0.0);

const CUBE_NAME: &str = "flat magenta cube";

/// What `TileMissing` says of the cube: Bevy would draw it over the tile frame, but the scene's
/// point light is in view, on lavapipe Bevy assigns lights to clusters on the GPU, only inside
/// `Core3d`, and the app keeps Bevy's GPU clustering (`TileKeepGpuLightClustering`; without it
/// the crate has Bevy cluster on the CPU and the cube is drawn, as `custom_materials` tests).
const CUBE_MISSING: &str = "custom Material (not a StandardMaterial), which Bevy cannot draw over this tile \
     camera: point or spot lights in view, which Bevy assigns to clusters on the GPU only inside \
     Core3d, and the app keeps Bevy's GPU clustering (TileKeepGpuLightClustering; without it \
     Bevy assigns them on the CPU, as on Android, and they are drawn)";

/// What `TileMissing` says of a clearcoat mesh in the same view: Bevy would draw it over the
/// tile frame as the cube, for the same reason it cannot.
const CLEARCOAT_MISSING: &str = "StandardMaterial clearcoat, which Bevy cannot draw over this \
     tile camera: point or spot lights in view, which Bevy assigns to clusters on the GPU only \
     inside Core3d, and the app keeps Bevy's GPU clustering (TileKeepGpuLightClustering; without \
     it Bevy assigns them on the CPU, as on Android, and they are drawn)";

/// The lit spheres with a custom-material cube at `cube_at`, and a camera (a tile camera with
/// `tier` where given). Returns the app, the camera and the cube.
fn app(tier: Option<TierSetting>, cube_at: Vec3) -> (HeadlessApp, Entity, Entity) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless
        .app
        .add_plugins(MaterialPlugin::<FlatColorMaterial>::default())
        // The cube stays undrawable over the tile frame while the point light is in view (see
        // `CUBE_MISSING`): these tests follow `Auto` falling back and returning.
        .insert_resource(TileKeepGpuLightClustering);
    let world = headless.app.world_mut();
    world
        .resource_mut::<Assets<Shader>>()
        .insert(
            &FLAT_COLOR_SHADER,
            Shader::from_wgsl(FLAT_COLOR_WGSL, "tests/gpu/missing/flat_color.wgsl"),
        )
        .expect("the shader handle is free");
    scenes::spawn_lit_spheres(world);
    let mesh = world
        .resource_mut::<Assets<Mesh>>()
        .add(Cuboid::new(1.2, 1.2, 1.2));
    let material = world
        .resource_mut::<Assets<FlatColorMaterial>>()
        .add(FlatColorMaterial {
            color: LinearRgba::new(0.9, 0.05, 0.8, 1.0),
        });
    let cube = world
        .spawn((
            Name::new(CUBE_NAME),
            Mesh3d(mesh),
            MeshMaterial3d(material),
            Transform::from_translation(cube_at),
        ))
        .id();
    let camera = headless.spawn_camera((
        Camera3d::default(),
        scenes::reference_camera(),
        scenes::reference_camera_transform(),
        Msaa::Off,
    ));
    if let Some(tier) = tier {
        headless
            .app
            .world_mut()
            .entity_mut(camera)
            .insert(TileDeferred { tier, ..default() });
    }
    (headless, camera, cube)
}

fn decision(headless: &HeadlessApp, camera: Entity) -> TierDecision {
    headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .expect("a tile camera has a decision")
        .clone()
}

fn missing(headless: &HeadlessApp, camera: Entity) -> Vec<MissingFeature> {
    headless
        .app
        .world()
        .get::<TileMissing>(camera)
        .map(|m| m.items.clone())
        .unwrap_or_default()
}

fn move_cube(headless: &mut HeadlessApp, cube: Entity, to: Vec3) {
    headless
        .app
        .world_mut()
        .get_mut::<Transform>(cube)
        .unwrap()
        .translation = to;
}

fn tile_frame_number(headless: &HeadlessApp, camera: Entity) -> Option<u64> {
    let reports = headless.app.world().resource::<TileRenderReports>();
    reports.get(camera).map(|report| report.frame)
}

/// Pixels whose channels differ by more than 24/255 somewhere.
fn differing_pixels(a: &Frame, b: &Frame) -> usize {
    a.rgba
        .chunks_exact(4)
        .zip(b.rgba.chunks_exact(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(x, y)| x.abs_diff(*y) > 24))
        .count()
}

#[test]
fn a_custom_material_in_view_makes_auto_fall_back_until_it_leaves() {
    let test = GpuTest::start("a_custom_material_in_view_makes_auto_fall_back_until_it_leaves");
    // Bevy's own frames of the scene, with and without the cube.
    let (mut bevy_with, ..) = app(None, IN_VIEW);
    let bevy_with_cube = bevy_with.render(4);
    let (mut bevy_without, ..) = app(None, OUT_OF_VIEW);
    let bevy_without_cube = bevy_without.render(4);
    assert!(
        differing_pixels(&bevy_with_cube, &bevy_without_cube) > 500,
        "the cube covers part of the frame"
    );

    // Out of view: the tile path renders, nothing is missing.
    let (mut headless, camera, cube) = app(Some(TierSetting::Auto), OUT_OF_VIEW);
    let tile_before = headless.render(4);
    assert_eq!(decision(&headless, camera).tier, RenderTier::TileDeferred);
    assert!(missing(&headless, camera).is_empty());
    assert!(tile_frame_number(&headless, camera).is_some());
    assert_frames_match(
        "missing-tile-before",
        &tile_before,
        &bevy_without_cube,
        36.0,
        8,
    );

    // In view: the same frame falls back to Core3d, with the reason.
    move_cube(&mut headless, cube, IN_VIEW);
    headless.update();
    let fell = decision(&headless, camera);
    assert_eq!(fell.tier, RenderTier::Forward, "{fell:?}");
    let fallback = fell.missing_fallback.as_ref().expect("why it fell back");
    assert_eq!(fallback.tile_tier, RenderTier::TileDeferred);
    assert!(fallback.why.contains("custom Material"), "{fallback:?}");
    assert!(
        fell.summary().contains("custom Material"),
        "{}",
        fell.summary()
    );
    assert_eq!(
        missing(&headless, camera),
        [MissingFeature {
            entity: cube,
            name: Some(CUBE_NAME.into()),
            what: CUBE_MISSING.into(),
        }]
    );
    let warnings = test.take_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("falling back to Bevy forward") && w.contains("custom Material")),
        "the fallback is logged with its reason: {warnings:#?}"
    );
    let naming_the_cube = warnings
        .iter()
        .filter(|w| w.contains(&format!("{cube} (\"{CUBE_NAME}\")")))
        .count();
    assert_eq!(naming_the_cube, 1, "the cube is named once: {warnings:#?}");
    // Bevy draws the camera, cube included: its frame is Bevy's.
    let fallen_back = headless.read_target();
    assert_eq!(decision(&headless, camera).tier, RenderTier::Forward);
    assert_frames_match("missing-fallback", &fallen_back, &bevy_with_cube, 60.0, 2);

    // Out of view again: Core3d for MISSING_RETURN_FRAMES - 1 more frames (no flicker)...
    move_cube(&mut headless, cube, OUT_OF_VIEW);
    let last_tile_frame = tile_frame_number(&headless, camera);
    for frame in 1..MISSING_RETURN_FRAMES {
        headless.update();
        let held = decision(&headless, camera);
        assert_eq!(
            held.tier,
            RenderTier::Forward,
            "frame {frame} after it left"
        );
        assert_eq!(held, fell, "the decision does not change while it holds");
        assert!(missing(&headless, camera).is_empty());
    }
    // (Its report is dropped after a few frames without a tile frame, or is the last one.)
    assert!(
        tile_frame_number(&headless, camera) <= last_tile_frame,
        "no tile frame while falling back"
    );
    // ...then back to the tile path.
    headless.update();
    let back = decision(&headless, camera);
    assert_eq!(back.tier, RenderTier::TileDeferred, "{back:?}");
    assert_eq!(back.missing_fallback, None);
    let tile_after = headless.read_target();
    assert!(
        tile_frame_number(&headless, camera) > last_tile_frame,
        "the tile path renders again"
    );
    let db = psnr(&tile_after, &tile_before);
    assert!(db >= 60.0, "the same tile frame as before: {db:.1} dB");
}

#[test]
fn a_forced_tier_keeps_rendering_logs_once_and_lists_what_is_missing() {
    let test = GpuTest::start("a_forced_tier_keeps_rendering_logs_once_and_lists_what_is_missing");
    let (mut headless, camera, cube) =
        app(Some(TierSetting::Force(RenderTier::TileDeferred)), IN_VIEW);
    // A StandardMaterial with a feature the tile path does not draw (clearcoat) in view too.
    let world = headless.app.world_mut();
    let mesh = world
        .resource_mut::<Assets<Mesh>>()
        .add(Sphere::new(0.5).mesh().uv(24, 12));
    let clearcoat = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial {
            base_color: Color::srgb(0.2, 0.4, 1.0),
            clearcoat: 1.0,
            ..default()
        });
    let clearcoat_ball = world
        .spawn((
            Name::new("clearcoat ball"),
            Mesh3d(mesh),
            MeshMaterial3d(clearcoat),
            Transform::from_xyz(-1.5, 2.0, 4.0),
        ))
        .id();
    #[cfg(feature = "inspector")]
    {
        headless
            .app
            .add_plugins(bevy_tile_deferred::TileInspectorPlugin::default());
        headless
            .app
            .world_mut()
            .resource_mut::<bevy_tile_deferred::inspector::TileInspector>()
            .visible = true;
    }
    for _ in 0..12 {
        headless.update();
    }
    // Still the forced tile tier, rendering.
    let forced = decision(&headless, camera);
    assert_eq!(forced.tier, RenderTier::TileDeferred, "{forced:?}");
    assert_eq!(forced.missing_fallback, None);
    assert!(tile_frame_number(&headless, camera).is_some());
    // Listed by entity and name, in entity order.
    let mut expected = vec![
        MissingFeature {
            entity: cube,
            name: Some(CUBE_NAME.into()),
            what: CUBE_MISSING.into(),
        },
        MissingFeature {
            entity: clearcoat_ball,
            name: Some("clearcoat ball".into()),
            what: CLEARCOAT_MISSING.into(),
        },
    ];
    expected.sort_by_key(|m| m.entity);
    assert_eq!(missing(&headless, camera), expected);
    // Logged once each, over 12 frames.
    let warnings = test.take_warnings();
    for item in &expected {
        let name = item.name.as_deref().unwrap();
        let lines = warnings
            .iter()
            .filter(|w| w.contains(&item.entity.to_string()) && w.contains(name))
            .count();
        assert_eq!(lines, 1, "{name} is logged once: {warnings:#?}");
    }
    // The inspector lists them.
    #[cfg(feature = "inspector")]
    {
        let panels = headless
            .app
            .world()
            .resource::<bevy_tile_deferred::inspector::TileInspectorPanels>();
        let panel = panels.get(camera).expect("the camera's panel");
        assert_eq!(
            panel.missing,
            expected.iter().map(ToString::to_string).collect::<Vec<_>>()
        );
        assert!(panel.missing[0].contains(&format!("{}", expected[0].entity)));
    }
}

#[test]
fn post_processing_makes_auto_fall_back() {
    let test = GpuTest::start("post_processing_makes_auto_fall_back");
    let (mut headless, camera, _) = app(Some(TierSetting::Auto), OUT_OF_VIEW);
    headless.render(3);
    assert_eq!(decision(&headless, camera).tier, RenderTier::TileDeferred);
    // Bevy's SSAO runs inside Core3d: a tile camera would silently lose it.
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(ScreenSpaceAmbientOcclusion::default());
    let frame = headless.render(2);
    let fell = decision(&headless, camera);
    assert_eq!(fell.tier, RenderTier::Forward, "{fell:?}");
    assert!(
        fell.summary().contains("ScreenSpaceAmbientOcclusion"),
        "{}",
        fell.summary()
    );
    assert!(
        test.take_warnings()
            .iter()
            .any(|w| w.contains("ScreenSpaceAmbientOcclusion")),
        "logged"
    );
    let clear = scenes::CLEAR_COLOR.to_srgba();
    let clear = [clear.red, clear.green, clear.blue].map(|c| (c * 255.0).round() as u8);
    let drawn = frame
        .rgba
        .chunks_exact(4)
        .filter(|p| p[..3].iter().zip(clear).any(|(a, b)| a.abs_diff(b) > 8))
        .count();
    assert!(
        drawn * 4 > frame.rgba.len() / 4,
        "Bevy draws the scene ({drawn} pixels)"
    );
    // Removed: back after the hysteresis.
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .remove::<ScreenSpaceAmbientOcclusion>();
    for _ in 0..MISSING_RETURN_FRAMES {
        headless.update();
    }
    assert_eq!(decision(&headless, camera).tier, RenderTier::TileDeferred);
}

/// How a wireframe test marks the scene's meshes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wireframes {
    /// `Wireframe` on every mesh.
    EachMesh,
    /// `WireframeConfig::global`.
    Global,
    /// `WireframeConfig::global`, and `NoWireframe` on every mesh: none drawn.
    GlobalExceptEach,
}

/// The UI tests' scene with Bevy's `WireframePlugin`, wireframes as `wireframes` says, under a
/// tile camera (`tier`) or Bevy's; its frame after `frames` frames.
fn wireframe_frame(
    wireframes: Wireframes,
    (tier, hdr, msaa): (Option<TierSetting>, bool, Msaa),
    split_screen: bool,
    frames: u32,
) -> (HeadlessApp, Entity, Frame) {
    use bevy::pbr::wireframe::{NoWireframe, Wireframe, WireframeConfig, WireframePlugin};
    let (mut headless, camera, _) = app(tier, OUT_OF_VIEW);
    headless.app.add_plugins(WireframePlugin::default());
    if split_screen {
        // Bevy's camera draws the whole target first (with the wireframes too); the camera
        // under test draws its viewport, the lower right part, over it.
        headless.spawn_camera((
            Camera3d::default(),
            Camera {
                order: -1,
                ..default()
            },
            Transform::from_xyz(0.0, 6.0, 6.0).looking_at(Vec3::ZERO, Vec3::Y),
            msaa,
        ));
    }
    let world = headless.app.world_mut();
    world.entity_mut(camera).insert(msaa);
    if split_screen {
        world
            .get_mut::<Camera>(camera)
            .expect("the camera under test")
            .viewport = Some(lower_right_viewport(WIDTH, HEIGHT));
    }
    if hdr {
        world.entity_mut(camera).insert(bevy::camera::Hdr);
    }
    world.resource_mut::<WireframeConfig>().global = wireframes != Wireframes::EachMesh;
    let meshes: Vec<Entity> = world
        .query_filtered::<Entity, With<Mesh3d>>()
        .iter(world)
        .collect();
    for mesh in meshes {
        match wireframes {
            Wireframes::EachMesh => world.entity_mut(mesh).insert(Wireframe),
            Wireframes::Global => continue,
            Wireframes::GlobalExceptEach => world.entity_mut(mesh).insert(NoWireframe),
        };
    }
    let frame = headless.render(frames);
    (headless, camera, frame)
}

/// Bevy's wireframes (`WireframePlugin`: `Wireframe`, `WireframeConfig::global`, `NoWireframe`)
/// are drawn over an LDR tile camera after the tile pass, by Bevy's own wireframe pipelines over
/// the tile depth (as the gizmos are): the camera stays on the tile path, nothing is listed, the
/// gizmo pass is priced, and the frame is Bevy's (>= 36 dB, p99.5 <= 8/255), at 1x and 4x
/// MSAA (from the second frame with wireframes on: see `overlays::gizmos`), and over an HDR
/// camera, whose wireframes Bevy tone maps with the scene (the tile pass stores its light and
/// Bevy's tone mapping runs after them, from their second frame; with MSAA over the light
/// written into every sample of Bevy's multisampled texture), and with MSAA in a viewport over
/// another camera's frame (Bevy's `split_screen`). Where that route cannot draw (the unmerged debug tier,
/// which has no depth export), each mesh they would cover is listed; where `NoWireframe` leaves
/// none, the camera stays on the tile path with nothing listed.
#[test]
fn wireframes_are_drawn_over_the_tile_frame_or_fall_back() {
    let _test = GpuTest::start("wireframes_are_drawn_over_the_tile_frame_or_fall_back");
    // (wireframes, HDR, MSAA, a viewport over another camera's frame: Bevy's split screen)
    let cases = [
        (Wireframes::EachMesh, false, Msaa::Off, false),
        (Wireframes::EachMesh, true, Msaa::Off, false),
        (Wireframes::Global, false, Msaa::Off, false),
        (Wireframes::Global, false, Msaa::Sample4, false),
        (Wireframes::Global, true, Msaa::Off, false),
        (Wireframes::EachMesh, true, Msaa::Sample4, false),
        (Wireframes::Global, false, Msaa::Sample4, true),
        (Wireframes::EachMesh, true, Msaa::Sample4, true),
    ];
    for (wireframes, hdr, msaa, split) in cases {
        let split_name = if split { "-split-screen" } else { "" };
        let name = format!(
            "wireframes-{wireframes:?}-hdr-{hdr}-{}x{split_name}",
            msaa.samples()
        );
        let (headless, camera, tile) =
            wireframe_frame(wireframes, (Some(TierSetting::Auto), hdr, msaa), split, 4);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        let tier = decision(&headless, camera).tier;
        assert!(
            report.gizmo_pass.is_some(),
            "{name}: the pass after the tile pass"
        );
        // Bevy tone maps an HDR frame after its wireframes, as `Core3d` does.
        let tone_mapped: &[&str] = if hdr { &["Tonemapping"] } else { &[] };
        assert_eq!(report.post_processing, tone_mapped, "{name}");
        let (_, _, bevy) = wireframe_frame(wireframes, (None, hdr, msaa), split, 4);
        let path = tile.save_png(&name);
        eprintln!(
            "{name}: the tile camera ({tier:?}) against Bevy's: PSNR {:.2} dB ({})",
            psnr(&tile, &bevy),
            path.display()
        );
        assert_frames_match(&name, &tile, &bevy, 36.0, 8);
    }
    let (headless, camera, _) = wireframe_frame(
        Wireframes::GlobalExceptEach,
        (Some(TierSetting::Auto), false, Msaa::Off),
        false,
        4,
    );
    assert_eq!(decision(&headless, camera).tier, RenderTier::TileDeferred);
    assert!(missing(&headless, camera).is_empty());
    // The unmerged debug tier has no depth export: each mesh with a wireframe is listed, and
    // the forced tier keeps rendering.
    let unmerged = RenderTier::Unmerged { samples: 1 };
    let (headless, camera, _) = wireframe_frame(
        Wireframes::Global,
        (Some(TierSetting::Force(unmerged)), false, Msaa::Off),
        false,
        4,
    );
    assert_eq!(decision(&headless, camera).tier, unmerged);
    let listed = missing(&headless, camera);
    let wireframed = listed
        .iter()
        .filter(|item| item.what.starts_with("wireframe"))
        .count();
    assert!(wireframed >= 4, "{listed:?}");
}

/// Inserts `T` on the camera, runs a frame, and returns what `TileMissing` lists after it;
/// removes `T` again.
fn missing_with<T: Component + Default>(headless: &mut HeadlessApp, camera: Entity) -> Vec<String> {
    headless
        .app
        .world_mut()
        .entity_mut(camera)
        .insert(T::default());
    headless.update();
    let listed = missing(headless, camera)
        .into_iter()
        .filter(|item| item.entity == camera)
        .map(|item| item.what)
        .collect();
    headless.app.world_mut().entity_mut(camera).remove::<T>();
    listed
}

/// Whether the app's type registry knows `T` (it does not where Bevy's
/// `reflect_auto_register` is off and no plugin registered it).
fn reflected<T: 'static>(headless: &HeadlessApp) -> bool {
    headless
        .app
        .world()
        .resource::<AppTypeRegistry>()
        .read()
        .contains(std::any::TypeId::of::<T>())
}

/// What `TileMissing` detects is detected whatever Bevy features the game turned on (issue 32):
/// these tests build Bevy without `reflect_auto_register`, as the crate does and as mobile games
/// often do, so the post-processing and anti-aliasing types are in no type registry; the
/// crate finds them in the World's component registry, by type or by name. Each camera effect
/// of the README's "falls back" rows is put on a camera with a forced tier (which keeps
/// rendering the tile path, so Bevy's `Core3d` never runs these effects, whose plugins the
/// test app does not add), listed on it and logged.
#[test]
fn every_camera_effect_is_detected_without_reflection() {
    use bevy::{
        core_pipeline::oit::OrderIndependentTransparencySettings, light::VolumetricFog, pbr::*,
    };
    use bevy_anti_alias::{
        contrast_adaptive_sharpening::ContrastAdaptiveSharpening, fxaa::Fxaa, smaa::Smaa,
        taa::TemporalAntiAliasing,
    };
    use bevy_post_process::{
        auto_exposure::AutoExposure,
        bloom::Bloom,
        dof::DepthOfField,
        effect_stack::{ChromaticAberration, LensDistortion, Vignette},
        motion_blur::MotionBlur,
    };
    let test = GpuTest::start("every_camera_effect_is_detected_without_reflection");
    let (mut headless, camera, _) = app(
        Some(TierSetting::Force(RenderTier::TileDeferred)),
        OUT_OF_VIEW,
    );
    headless.render(2);
    assert!(missing(&headless, camera).is_empty());
    assert!(
        !reflected::<Bloom>(&headless) && !reflected::<Fxaa>(&headless),
        "the test app registers no reflection for the effects' types"
    );
    let listed = [
        (
            "post-processing: Bloom",
            missing_with::<Bloom>(&mut headless, camera),
        ),
        (
            "post-processing: DepthOfField",
            missing_with::<DepthOfField>(&mut headless, camera),
        ),
        (
            "post-processing: MotionBlur",
            missing_with::<MotionBlur>(&mut headless, camera),
        ),
        (
            "post-processing: ChromaticAberration",
            missing_with::<ChromaticAberration>(&mut headless, camera),
        ),
        (
            "post-processing: Vignette",
            missing_with::<Vignette>(&mut headless, camera),
        ),
        (
            "post-processing: LensDistortion",
            missing_with::<LensDistortion>(&mut headless, camera),
        ),
        (
            "post-processing: AutoExposure",
            missing_with::<AutoExposure>(&mut headless, camera),
        ),
        (
            "post-processing: TemporalAntiAliasing",
            missing_with::<TemporalAntiAliasing>(&mut headless, camera),
        ),
        (
            "post-processing: ContrastAdaptiveSharpening",
            missing_with::<ContrastAdaptiveSharpening>(&mut headless, camera),
        ),
        (
            "post-processing: Fxaa",
            missing_with::<Fxaa>(&mut headless, camera),
        ),
        (
            "post-processing: Smaa",
            missing_with::<Smaa>(&mut headless, camera),
        ),
        (
            "post-processing: ScreenSpaceAmbientOcclusion",
            missing_with::<ScreenSpaceAmbientOcclusion>(&mut headless, camera),
        ),
        (
            "post-processing: ScreenSpaceReflections",
            missing_with::<ScreenSpaceReflections>(&mut headless, camera),
        ),
        (
            "shadows: ContactShadows",
            missing_with::<ContactShadows>(&mut headless, camera),
        ),
        (
            "fog: VolumetricFog",
            missing_with::<VolumetricFog>(&mut headless, camera),
        ),
        (
            "transparency: OrderIndependentTransparencySettings",
            missing_with::<OrderIndependentTransparencySettings>(&mut headless, camera),
        ),
    ];
    let warnings = test.take_warnings();
    for (what, listed) in listed {
        assert_eq!(listed, [what], "{what}");
        assert!(
            warnings.iter().any(|warning| warning.contains(what)),
            "{what} is logged: {warnings:?}"
        );
    }
    assert!(
        !reflected::<Bloom>(&headless) && !reflected::<Fxaa>(&headless),
        "still no reflection for them"
    );
}

/// bevy_ui nodes over a tile camera where the tile path does not draw them (an app built
/// without the crate's `ui` feature, which here the missing resource stands for) are found
/// without reflection: by bevy_ui's node target camera's type name, and read by its layout.
/// Hidden nodes are not listed.
#[test]
fn bevy_ui_over_a_tile_camera_is_detected_without_reflection() {
    use bevy_tile_deferred::tile_deferred::missing::UiDrawnOverTileCameras;
    let _test = GpuTest::start("bevy_ui_over_a_tile_camera_is_detected_without_reflection");
    let (mut headless, camera, _) = app(
        Some(TierSetting::Force(RenderTier::TileDeferred)),
        OUT_OF_VIEW,
    );
    // The plugin's `finish` (the first frame) inserts it.
    headless.update();
    headless
        .app
        .world_mut()
        .remove_resource::<UiDrawnOverTileCameras>()
        .expect("the `ui` feature's resource");
    let node = headless
        .app
        .world_mut()
        .spawn((
            Node {
                width: px(40),
                height: px(20),
                ..default()
            },
            BackgroundColor(Color::WHITE),
            UiTargetCamera(camera),
        ))
        .id();
    headless.render(3);
    let ui_listed = |headless: &HeadlessApp| {
        missing(headless, camera)
            .iter()
            .any(|item| item.entity == camera && item.what.starts_with("UI: bevy_ui nodes"))
    };
    assert!(ui_listed(&headless), "{:?}", missing(&headless, camera));
    assert!(
        !reflected::<bevy::ui::ComputedUiTargetCamera>(&headless),
        "found without bevy_ui's reflection"
    );
    headless
        .app
        .world_mut()
        .entity_mut(node)
        .insert(Visibility::Hidden);
    headless.render(2);
    assert!(!ui_listed(&headless), "{:?}", missing(&headless, camera));
}
