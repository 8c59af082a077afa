//! Custom materials over the tile frame: meshes of a custom `Material` (shaped like Bevy's
//! `shader_material` example: its own WGSL fragment shader, opaque and blended) and of an
//! `ExtendedMaterial` (Bevy's `extended_material`: a `StandardMaterial` with a fragment shader
//! that quantises its lighting) are drawn by Bevy's own pipelines after the tile pass, over the
//! tile depth: the camera stays on the tile path, the meshes are listed in
//! `TileMaterialsOverTile`, the pass is priced, and the frame is Bevy's; on an HDR camera at 1x,
//! into the light the tile pass stores, tone mapped with it by Bevy. Where Bevy cannot draw them
//! there (a camera after another on its target with MSAA; point lights Bevy clusters on the GPU
//! in an app that keeps that, `TileKeepGpuLightClustering`), each mesh is listed in
//! `TileMissing` and `Auto` falls back.

use crate::harness::{
    GpuTest, HeadlessApp, assert_frames_match, image_compare::psnr, lower_right_viewport,
};
use bevy::{
    asset::uuid_handle,
    pbr::{ExtendedMaterial, MaterialExtension, MaterialPlugin},
    prelude::*,
    render::{
        render_resource::AsBindGroup,
        view::{ColorGrading, Msaa},
    },
    shader::ShaderRef,
};
use bevy_tile_deferred::{
    TileDeferred, TileFrameReportParam, TileKeepGpuLightClustering, TileMaterialsOverTile,
    frame_graph::{DeviceCaps, Extent, Format, compile_stock_bevy, stock_bevy_forward},
    tiers::{RenderTier, TierDecision, TierSetting},
    tile_deferred::missing::{MissingFeature, TileMissing},
};

const WIDTH: u32 = 256;
const HEIGHT: u32 = 160;

const FLAT_COLOR_SHADER: Handle<Shader> = uuid_handle!("0c6f2f5e-8a1d-4b7e-9f43-6b2d1c9a8e10");
const QUANTIZE_SHADER: Handle<Shader> = uuid_handle!("7e3a9c41-25d8-4f0b-8c6e-1a4b5d2e9f37");

/// Bevy's `shader_material` example's material: a colour from its own WGSL shader, with an
/// alpha mode.
#[derive(Asset, TypePath, AsBindGroup, Clone)]
struct FlatColorMaterial {
    #[uniform(0)]
    color: LinearRgba,
    alpha_mode: AlphaMode,
}

impl Material for FlatColorMaterial {
    fn fragment_shader() -> ShaderRef {
        ShaderRef::Handle(FLAT_COLOR_SHADER)
    }

    fn alpha_mode(&self) -> AlphaMode {
        self.alpha_mode
    }
}

const FLAT_COLOR_WGSL: &str = "
#import bevy_pbr::forward_io::VertexOutput

@group(#{MATERIAL_BIND_GROUP}) @binding(0) var<uniform> color: vec4<f32>;

@fragment
fn fragment(in: VertexOutput) -> @location(0) vec4<f32> {
    // A gradient over the mesh's UVs, so that a misplaced or late mesh changes pixels.
    return vec4<f32>(color.rgb * (0.5 + 0.5 * in.uv.x), color.a);
}
";

/// Bevy's `extended_material` example's extension: the lit colour quantised to a few steps.
#[derive(Asset, TypePath, AsBindGroup, Clone)]
struct QuantizeExtension {
    #[uniform(100)]
    quantize_steps: u32,
}

impl MaterialExtension for QuantizeExtension {
    fn fragment_shader() -> ShaderRef {
        ShaderRef::Handle(QUANTIZE_SHADER)
    }
}

/// Bevy's `extended_material.wgsl`, forward path (the scene has no deferred prepass): the
/// shader the `custom_material` example loads, so that the test draws what the example shows.
const QUANTIZE_WGSL: &str = include_str!("../../assets/shaders/extended_material.wgsl");

type QuantizedMaterial = ExtendedMaterial<StandardMaterial, QuantizeExtension>;

/// What a case varies.
#[derive(Clone, Copy, Debug)]
struct Case {
    msaa: Msaa,
    hdr: bool,
    /// A point light in view as well as the sun.
    point_light: bool,
    /// Bevy clusters lights on the CPU (as on Android) instead of the GPU (desktop).
    cpu_clustering: bool,
    /// Bevy's bloom after the tile pass (`Bloom::NATURAL`, feature `bloom`; with `hdr`).
    bloom: bool,
    /// Bevy's FXAA after the tile pass (feature `anti_alias`).
    fxaa: bool,
    /// A hue rotation in the camera's `ColorGrading`, which Bevy's tone mapping applies after
    /// the tile pass on an HDR camera.
    graded: bool,
    /// The camera's output keeps what is outside its frame: `Keep::Viewport`, a viewport (the
    /// lower right part of the target); `Keep::CameraBefore`, the same viewport over a Bevy
    /// camera that drew the whole target before it (split screen, picture in picture).
    keeps: Keep,
}

/// What a camera's output keeps besides its own frame.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Keep {
    Nothing,
    Viewport,
    CameraBefore,
}

impl Case {
    const LDR_1X: Case = Case {
        msaa: Msaa::Off,
        hdr: false,
        point_light: false,
        cpu_clustering: false,
        bloom: false,
        fxaa: false,
        graded: false,
        keeps: Keep::Nothing,
    };

    fn name(self) -> String {
        let effects = match (self.bloom, self.fxaa) {
            (true, true) => "-bloom-fxaa",
            (true, false) => "-bloom",
            (false, true) => "-fxaa",
            (false, false) => "",
        };
        let graded = if self.graded { "-graded" } else { "" };
        let keeps = match self.keeps {
            Keep::Nothing => "",
            Keep::Viewport => "-viewport",
            Keep::CameraBefore => "-camera-before",
        };
        format!(
            "custom-materials-{}x-hdr-{}-point-{}-cpu-clusters-{}{effects}{graded}{keeps}",
            self.msaa.samples(),
            self.hdr,
            self.point_light,
            self.cpu_clustering
        )
    }
}

/// The scene's meshes of custom materials, by name.
const CUSTOM_MESHES: [&str; 3] = ["flat cube", "blended quad", "quantized sphere"];

/// A ground and a sphere of `StandardMaterial` under a sun, with a flat-coloured cube, a
/// blended quad in front of the sphere and a quantized sphere beside it; a camera (a tile
/// camera when `tile`). Returns the app, the camera, and the custom-material meshes.
fn app(tile: bool, case: Case) -> (HeadlessApp, Entity, Vec<Entity>) {
    let mut headless = HeadlessApp::new(WIDTH, HEIGHT);
    headless.app.add_plugins((
        MaterialPlugin::<FlatColorMaterial>::default(),
        MaterialPlugin::<QuantizedMaterial>::default(),
    ));
    #[cfg(feature = "bloom")]
    if case.bloom {
        headless
            .app
            .add_plugins(bevy_post_process::bloom::BloomPlugin);
    }
    #[cfg(feature = "anti_alias")]
    if case.fxaa {
        headless.app.add_plugins(bevy_anti_alias::fxaa::FxaaPlugin);
    }
    if case.cpu_clustering {
        headless.use_cpu_light_clustering();
    }
    let world = headless.app.world_mut();
    let mut shaders = world.resource_mut::<Assets<Shader>>();
    for (handle, source, path) in [
        (FLAT_COLOR_SHADER, FLAT_COLOR_WGSL, "flat_color.wgsl"),
        (QUANTIZE_SHADER, QUANTIZE_WGSL, "quantize.wgsl"),
    ] {
        shaders
            .insert(&handle, Shader::from_wgsl(source, path))
            .expect("the shader handle is free");
    }
    let (ground, sphere, cube, quad) = {
        let mut meshes = world.resource_mut::<Assets<Mesh>>();
        (
            meshes.add(Plane3d::default().mesh().size(12.0, 12.0)),
            meshes.add(Sphere::new(0.9).mesh().uv(48, 24)),
            meshes.add(Cuboid::new(1.2, 1.2, 1.2)),
            meshes.add(Rectangle::new(1.6, 1.6)),
        )
    };
    let (grey, red) = {
        let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
        (
            materials.add(StandardMaterial {
                base_color: Color::srgb(0.5, 0.5, 0.5),
                perceptual_roughness: 0.9,
                ..default()
            }),
            materials.add(StandardMaterial {
                base_color: Color::srgb(0.85, 0.1, 0.08),
                perceptual_roughness: 0.4,
                ..default()
            }),
        )
    };
    let (flat, blended) = {
        let mut materials = world.resource_mut::<Assets<FlatColorMaterial>>();
        (
            materials.add(FlatColorMaterial {
                color: LinearRgba::new(0.9, 0.05, 0.8, 1.0),
                alpha_mode: AlphaMode::Opaque,
            }),
            materials.add(FlatColorMaterial {
                color: LinearRgba::new(0.05, 0.6, 0.9, 0.5),
                alpha_mode: AlphaMode::Blend,
            }),
        )
    };
    let quantized = world
        .resource_mut::<Assets<QuantizedMaterial>>()
        .add(ExtendedMaterial {
            base: StandardMaterial {
                base_color: Color::srgb(0.9, 0.6, 0.2),
                perceptual_roughness: 0.5,
                ..default()
            },
            extension: QuantizeExtension { quantize_steps: 3 },
        });
    world.spawn((Name::new("ground"), Mesh3d(ground), MeshMaterial3d(grey)));
    world.spawn((
        Name::new("red sphere"),
        Mesh3d(sphere.clone()),
        MeshMaterial3d(red),
        Transform::from_xyz(0.0, 0.9, 0.0),
    ));
    let custom = vec![
        world
            .spawn((
                Name::new(CUSTOM_MESHES[0]),
                Mesh3d(cube),
                MeshMaterial3d(flat),
                Transform::from_xyz(-2.2, 0.6, 0.5).with_rotation(Quat::from_rotation_y(0.5)),
            ))
            .id(),
        // In front of the red sphere, facing the camera: blended over the tile frame.
        world
            .spawn((
                Name::new(CUSTOM_MESHES[1]),
                Mesh3d(quad),
                MeshMaterial3d(blended),
                Transform::from_xyz(0.4, 1.0, 2.2).looking_to(Vec3::new(0.0, -0.3, -1.0), Vec3::Y),
            ))
            .id(),
        world
            .spawn((
                Name::new(CUSTOM_MESHES[2]),
                Mesh3d(sphere),
                MeshMaterial3d(quantized),
                Transform::from_xyz(2.3, 0.9, -0.3),
            ))
            .id(),
    ];
    world.spawn((
        DirectionalLight {
            illuminance: 6_000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(3.0, 8.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    if case.point_light {
        world.spawn((
            PointLight {
                intensity: 300_000.0,
                range: 12.0,
                color: Color::srgb(1.0, 0.8, 0.6),
                shadow_maps_enabled: false,
                ..default()
            },
            Transform::from_xyz(1.5, 3.0, 2.5),
        ));
    }
    if case.keeps == Keep::CameraBefore {
        headless.spawn_camera((
            Camera3d::default(),
            Camera {
                order: -1,
                clear_color: ClearColorConfig::Custom(Color::srgb(0.3, 0.1, 0.1)),
                ..default()
            },
            Transform::from_xyz(0.0, 6.0, 6.0).looking_at(Vec3::ZERO, Vec3::Y),
            Msaa::Sample4,
        ));
    }
    let viewport = (case.keeps != Keep::Nothing).then(|| lower_right_viewport(WIDTH, HEIGHT));
    let camera = headless.spawn_camera((
        Camera3d::default(),
        Camera {
            clear_color: ClearColorConfig::Custom(Color::srgb(0.1, 0.12, 0.16)),
            viewport,
            ..default()
        },
        Transform::from_xyz(0.0, 3.2, 7.0).looking_at(Vec3::new(0.0, 0.7, 0.0), Vec3::Y),
        case.msaa,
    ));
    // In entity order, as the crate lists them.
    let mut custom = custom;
    custom.sort_unstable();
    let world = headless.app.world_mut();
    if case.hdr {
        world.entity_mut(camera).insert(bevy::camera::Hdr);
    }
    if case.graded {
        let mut grading = ColorGrading::default();
        grading.global.hue = 1.0;
        world.entity_mut(camera).insert(grading);
    }
    #[cfg(feature = "bloom")]
    if case.bloom {
        world
            .entity_mut(camera)
            .insert(bevy_post_process::bloom::Bloom::NATURAL);
    }
    #[cfg(feature = "anti_alias")]
    if case.fxaa {
        world
            .entity_mut(camera)
            .insert(bevy_anti_alias::fxaa::Fxaa::default());
    }
    if tile {
        world.entity_mut(camera).insert(TileDeferred {
            tier: TierSetting::Auto,
            ..default()
        });
    }
    (headless, camera, custom)
}

fn tier(headless: &HeadlessApp, camera: Entity) -> RenderTier {
    headless
        .app
        .world()
        .get::<TierDecision>(camera)
        .expect("a tile camera has a decision")
        .tier
}

fn missing(headless: &HeadlessApp, camera: Entity) -> Vec<MissingFeature> {
    headless
        .app
        .world()
        .get::<TileMissing>(camera)
        .map(|m| m.items.clone())
        .unwrap_or_default()
}

fn over_tile(headless: &HeadlessApp, camera: Entity) -> Vec<Entity> {
    headless
        .app
        .world()
        .get::<TileMaterialsOverTile>(camera)
        .map(|m| m.meshes.clone())
        .unwrap_or_default()
}

/// Frames rendered before a frame is compared: the first frame with the meshes specialises
/// Bevy's pipelines for the tile pass's samples (see `overlays::gizmos`).
const FRAMES: u32 = 5;

/// On an LDR tile camera, at 1x and 4x MSAA, and with a point light where Bevy clusters on the
/// CPU (as on Android): the custom materials are drawn over the tile frame by Bevy's
/// pipelines, nothing is listed as missing, the pass after the tile pass is priced, and the
/// frame is Bevy's (>= 36 dB, p99.5 <= 8/255). The frame without them differs from Bevy's with
/// them, so the comparison can fail.
#[test]
fn custom_materials_are_drawn_over_the_tile_frame() {
    let _test = GpuTest::start("custom_materials_are_drawn_over_the_tile_frame");
    let cases = [
        Case::LDR_1X,
        Case {
            msaa: Msaa::Sample4,
            ..Case::LDR_1X
        },
        Case {
            point_light: true,
            cpu_clustering: true,
            ..Case::LDR_1X
        },
        // Where Bevy clusters on the GPU (lavapipe, desktops): the crate has it cluster on the
        // CPU while the meshes are drawn over the tile frame.
        Case {
            point_light: true,
            ..Case::LDR_1X
        },
        // Into the main texture before Bevy's effects, as `Core3d` draws them: tone mapped
        // by Bevy with the scene on an HDR camera, bloomed or graded too where it has those,
        // and anti-aliased by FXAA.
        Case {
            hdr: true,
            ..Case::LDR_1X
        },
        Case {
            hdr: true,
            graded: true,
            ..Case::LDR_1X
        },
        #[cfg(feature = "bloom")]
        Case {
            hdr: true,
            bloom: true,
            ..Case::LDR_1X
        },
        // With MSAA the tile pass resolves its light: it is written into every sample of
        // Bevy's multisampled texture, which Bevy's pipelines draw over before the effects.
        Case {
            hdr: true,
            msaa: Msaa::Sample4,
            ..Case::LDR_1X
        },
        #[cfg(feature = "bloom")]
        Case {
            hdr: true,
            bloom: true,
            msaa: Msaa::Sample4,
            ..Case::LDR_1X
        },
        #[cfg(feature = "anti_alias")]
        Case {
            fxaa: true,
            ..Case::LDR_1X
        },
        #[cfg(feature = "anti_alias")]
        Case {
            fxaa: true,
            msaa: Msaa::Sample4,
            ..Case::LDR_1X
        },
        // With MSAA where the output keeps what is outside the camera's frame (a viewport,
        // another camera before it: Bevy's `split_screen`): the tile pass resolves into its
        // render area, Bevy draws over it in the same viewport.
        Case {
            msaa: Msaa::Sample4,
            keeps: Keep::Viewport,
            ..Case::LDR_1X
        },
        Case {
            msaa: Msaa::Sample4,
            keeps: Keep::CameraBefore,
            ..Case::LDR_1X
        },
        Case {
            hdr: true,
            msaa: Msaa::Sample4,
            keeps: Keep::Viewport,
            ..Case::LDR_1X
        },
        // Into the main texture before Bevy's effects, in a viewport with MSAA.
        #[cfg(feature = "bloom")]
        Case {
            hdr: true,
            bloom: true,
            msaa: Msaa::Sample4,
            keeps: Keep::CameraBefore,
            ..Case::LDR_1X
        },
        #[cfg(feature = "anti_alias")]
        Case {
            fxaa: true,
            msaa: Msaa::Sample4,
            keeps: Keep::Viewport,
            ..Case::LDR_1X
        },
    ];
    for case in cases {
        let name = case.name();
        let (mut headless, camera, custom) = app(true, case);
        let tile = headless.render(FRAMES);
        let report = headless.tile_report_with_nothing_missing(camera, &name);
        let tier = tier(&headless, camera);
        assert_eq!(over_tile(&headless, camera), custom, "{name}");
        // An HDR camera without bloom or grade: Bevy's tone mapping runs for the meshes alone.
        if case.hdr && !case.bloom && !case.graded {
            assert_eq!(report.post_processing, ["Tonemapping"], "{name}");
        }
        let over_tile_bytes = report
            .gizmo_pass
            .as_ref()
            .expect("the pass after the tile pass is priced")
            .cost
            .bytes();
        // The frame's traffic against `Core3d`'s (which the fallback renders), per pixel.
        let stock = compile_stock_bevy(
            &stock_bevy_forward(
                Extent::new(WIDTH, HEIGHT),
                case.msaa.samples(),
                Format::Rgba8Srgb,
            ),
            &DeviceCaps::desktop(),
        )
        .expect("Bevy's forward frame compiles")
        .cost
        .bytes();
        let per_pixel = |bytes: u64| bytes as f64 / f64::from(WIDTH * HEIGHT);
        let tile_bytes = report.bytes_per_frame();
        // (With effects, both frames add the effects' passes; the tile frame's main texture
        // is then HDR where bloom reads it.)
        eprintln!(
            "{name}: traffic per pixel: tile frame {:.1} B + Bevy's passes over it {:.1} B = \
             {:.1} B; Core3d's forward frame (the fallback, LDR, without effects) {:.1} B",
            per_pixel(tile_bytes),
            per_pixel(over_tile_bytes),
            per_pixel(tile_bytes + over_tile_bytes),
            per_pixel(stock)
        );
        // The frame report (and the inspector from it) names them.
        let frame_report = {
            use bevy::ecs::system::RunSystemOnce;
            headless
                .app
                .world_mut()
                .run_system_once(|report: TileFrameReportParam| report.collect())
                .expect("the report system runs")
        };
        let camera_report = frame_report
            .cameras
            .iter()
            .find(|report| report.camera == camera)
            .expect("the camera's report");
        let expected_lines: Vec<String> = custom
            .iter()
            .map(|&mesh| {
                let name = headless.app.world().get::<Name>(mesh).unwrap();
                format!("{mesh} (\"{name}\")")
            })
            .collect();
        assert_eq!(camera_report.drawn_over_tile, expected_lines, "{name}");
        if case.point_light {
            let gpu_clustering = headless
                .app
                .world()
                .resource::<bevy::light::cluster::GlobalClusterSettings>()
                .gpu_clustering
                .is_some();
            assert!(
                !gpu_clustering,
                "{name}: Bevy clusters the lights on the CPU"
            );
        }
        // Bevy's frame with its lights clustered on the CPU: its GPU clustering now and then
        // leaves a light out of its frame on lavapipe.
        let (mut bevy_app, ..) = app(
            false,
            Case {
                cpu_clustering: case.cpu_clustering || case.point_light,
                ..case
            },
        );
        let bevy = bevy_app.render(FRAMES);
        // Bevy's frame without the custom meshes: what a tile frame that lost them would be.
        let world = bevy_app.app.world_mut();
        for (entity, name) in world
            .query::<(Entity, &Name)>()
            .iter(world)
            .map(|(entity, name)| (entity, name.to_string()))
            .collect::<Vec<_>>()
        {
            if CUSTOM_MESHES.contains(&name.as_str()) {
                world.entity_mut(entity).insert(Visibility::Hidden);
            }
        }
        let bevy_without = bevy_app.render(2);
        let apart = psnr(&bevy, &bevy_without);
        assert!(
            apart < 30.0,
            "{name}: the custom meshes matter ({apart:.1} dB)"
        );
        let path = tile.save_png(&name);
        eprintln!(
            "{name}: the tile camera ({tier:?}) against Bevy's: PSNR {:.2} dB, without the \
             custom meshes {apart:.2} dB ({})",
            psnr(&tile, &bevy),
            path.display()
        );
        assert_frames_match(&name, &tile, &bevy, 36.0, 8);
    }
}

/// Where Bevy cannot draw custom materials over the tile frame, each of their meshes is listed
/// with the reason, and `Auto` hands the camera to Bevy, whose frame is then Bevy's own: point
/// lights that Bevy clusters on the GPU (lavapipe), which it does only inside `Core3d`, in an
/// app that keeps Bevy's GPU clustering.
#[test]
fn custom_materials_fall_back_where_bevy_cannot_draw_them_over_the_tile_frame() {
    let _test = GpuTest::start(
        "custom_materials_fall_back_where_bevy_cannot_draw_them_over_the_tile_frame",
    );
    let cases = [(
        Case {
            point_light: true,
            ..Case::LDR_1X
        },
        "point or spot lights in view",
    )];
    for (case, why) in cases {
        let name = case.name();
        let (mut headless, camera, custom) = app(true, case);
        // The app keeps Bevy's GPU clustering, which Bevy runs only inside `Core3d`.
        headless.app.insert_resource(TileKeepGpuLightClustering);
        let tile = headless.render(FRAMES);
        assert_eq!(tier(&headless, camera), RenderTier::Forward, "{name}");
        let listed = missing(&headless, camera);
        let listed_custom: Vec<Entity> = listed
            .iter()
            .filter(|item| item.what.starts_with("custom Material"))
            .map(|item| item.entity)
            .collect();
        assert_eq!(listed_custom, custom, "{name}: {listed:#?}");
        assert!(
            listed
                .iter()
                .filter(|item| custom.contains(&item.entity))
                .all(|item| item.what.contains(why)
                    && item
                        .name
                        .as_deref()
                        .is_some_and(|name| CUSTOM_MESHES.contains(&name))),
            "{name}: {listed:#?}"
        );
        assert!(over_tile(&headless, camera).is_empty(), "{name}");
        // Bevy's own frame (compared where Bevy's GPU clustering, which now and then leaves
        // a light out of its frame on lavapipe, is not in play).
        if !case.point_light {
            let (mut bevy_app, ..) = app(false, case);
            let bevy = bevy_app.render(FRAMES);
            eprintln!(
                "{name}: fallen back to Bevy: PSNR {:.2} dB",
                psnr(&tile, &bevy)
            );
            assert_frames_match(&name, &tile, &bevy, 36.0, 8);
        }
    }
}

/// With MSAA, a tile camera in a viewport after another camera on its target (Bevy's
/// `split_screen`) has Bevy draw its custom meshes over the tile frame from its first frame, as
/// alone on its target; the main world and the render world agree. Under
/// `ClearColorConfig::None` the tile pass renders without MSAA, which the route over the frame
/// does not match: the meshes are listed with that reason from the first frame, and `Auto`
/// falls back.
#[test]
fn custom_materials_with_msaa_over_a_kept_output_are_drawn_or_listed_from_the_first_frame() {
    let _test = GpuTest::start(
        "custom_materials_with_msaa_over_a_kept_output_are_drawn_or_listed_from_the_first_frame",
    );
    for draws_over_output in [false, true] {
        let case = Case {
            msaa: Msaa::Sample4,
            keeps: Keep::CameraBefore,
            ..Case::LDR_1X
        };
        let name = format!("{}-clear-none-{draws_over_output}", case.name());
        let (mut headless, camera, custom) = app(true, case);
        if draws_over_output {
            headless
                .app
                .world_mut()
                .get_mut::<Camera>(camera)
                .expect("the tile camera")
                .clear_color = ClearColorConfig::None;
        }
        headless.update();
        let listed = missing(&headless, camera);
        if !draws_over_output {
            assert!(listed.is_empty(), "{name}: {listed:#?}");
            assert_eq!(over_tile(&headless, camera), custom, "{name}");
            headless.render(FRAMES);
            assert!(tier(&headless, camera).is_tile(), "{name}");
            assert_eq!(over_tile(&headless, camera), custom, "{name}");
            continue;
        }
        let listed_custom: Vec<Entity> = listed
            .iter()
            .filter(|item| {
                item.what.starts_with("custom Material")
                    && item.what.contains("draws over its output")
            })
            .map(|item| item.entity)
            .collect();
        assert_eq!(listed_custom, custom, "{name}: {listed:#?}");
        assert!(over_tile(&headless, camera).is_empty(), "{name}");
        headless.render(FRAMES);
        assert_eq!(tier(&headless, camera), RenderTier::Forward, "{name}");
    }
}
