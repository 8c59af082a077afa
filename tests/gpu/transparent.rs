//! Transparent `StandardMaterial`s (issue 14), tile path vs Bevy forward, on scenes modelled on
//! Bevy's `transparency_3d` example: every blended `AlphaMode` over opaque geometry, fading
//! alpha, a textured blended quad, intersecting transparent objects, transparent objects in
//! front of and behind opaque ones, and many transparent objects; without MSAA, with 4x MSAA
//! (against Bevy forward 4x), with `Hdr`, and on the unmerged tier. `AlphaToCoverage` too (an
//! opaque mode, drawn into the G-buffer), with and without MSAA.
//!
//! Each case is drawn by both renderers in one app (`content::assert_content_matches_to`): the
//! whole frame and the region of each transparent object must match, and each region must show
//! its object's colour in both images, so that objects both renderers left out cannot pass. A
//! plan test checks the frame stays one render pass storing only the output.

use crate::{
    content::{
        MIN_PSNR, MIN_PSNR_MSAA, Region, RegionCheck, add_image, add_material, add_mesh,
        assert_content_matches_to, headless, image, saturated_pixels, spawn, spawn_stage,
        spawn_sun,
    },
    harness::{GpuTest, HeadlessApp},
    scenes::fidelity::{FidelityCamera, FidelityCase, FidelityScene, stage_origin},
};
use bevy::{image::ImageSampler, prelude::*, render::view::Msaa};
use bevy_tile_deferred::{TileDeferred, TileRenderReports};

mod stage {
    pub const ALPHA_MODES: usize = 0;
    pub const FADING_TEXTURED: usize = 1;
    pub const INTERSECTING_MANY: usize = 2;
    pub const ALPHA_TO_COVERAGE: usize = 3;
}

/// Four vertical strips of the image, left to right: where the stages put their objects.
const STRIPS: [Region; 4] = [
    Region {
        x0: 0.12,
        y0: 0.25,
        x1: 0.32,
        y1: 0.8,
    },
    Region {
        x0: 0.32,
        y0: 0.25,
        x1: 0.5,
        y1: 0.8,
    },
    Region {
        x0: 0.5,
        y0: 0.25,
        x1: 0.68,
        y1: 0.8,
    },
    Region {
        x0: 0.68,
        y0: 0.25,
        x1: 0.88,
        y1: 0.8,
    },
];

/// Every blended alpha mode, each with a colour (and alpha) that shows it: a row's four objects.
const BLENDED_MODES: [(AlphaMode, Color); 4] = [
    (AlphaMode::Blend, Color::srgba(0.95, 0.1, 0.1, 0.5)),
    (
        AlphaMode::Premultiplied,
        Color::srgba(0.05, 0.45, 0.05, 0.6),
    ),
    (AlphaMode::Add, Color::srgba(0.1, 0.3, 1.0, 0.8)),
    (AlphaMode::Multiply, Color::srgba(1.0, 0.85, 0.1, 0.9)),
];

/// Where, in front of the stage camera, the four objects of a row stand.
fn row(stage: usize, slot: usize, y: f32, z: f32) -> Transform {
    let x = -2.7 + 1.8 * slot as f32;
    Transform::from_translation(stage_origin(stage) + Vec3::new(x, y, z))
}

const TRANSPARENT: FidelityScene = FidelityScene {
    name: "transparent",
    spawn: spawn_transparent,
    cases: transparent_cases,
};

fn transparent_cases() -> Vec<FidelityCase> {
    use stage::*;
    let with = |index, edit: fn(&mut FidelityCamera)| {
        let mut camera = FidelityCamera::stage(index);
        edit(&mut camera);
        camera
    };
    vec![
        FidelityCase::single("alpha_modes", FidelityCamera::stage(ALPHA_MODES)),
        FidelityCase::single(
            "alpha_modes_msaa",
            with(ALPHA_MODES, |c| c.msaa = Some(Msaa::Sample4)),
        ),
        FidelityCase::single("alpha_modes_hdr", with(ALPHA_MODES, |c| c.hdr = true)),
        FidelityCase::single(
            "alpha_modes_hdr_msaa",
            with(ALPHA_MODES, |c| {
                c.hdr = true;
                c.msaa = Some(Msaa::Sample4);
            }),
        ),
        FidelityCase::single("fading_textured", FidelityCamera::stage(FADING_TEXTURED)),
        FidelityCase::single(
            "intersecting_many",
            FidelityCamera::stage(INTERSECTING_MANY),
        ),
        FidelityCase::single(
            "intersecting_many_msaa",
            with(INTERSECTING_MANY, |c| c.msaa = Some(Msaa::Sample4)),
        ),
        FidelityCase::single(
            "alpha_to_coverage",
            FidelityCamera::stage(ALPHA_TO_COVERAGE),
        ),
        FidelityCase::single(
            "alpha_to_coverage_msaa",
            with(ALPHA_TO_COVERAGE, |c| c.msaa = Some(Msaa::Sample4)),
        ),
    ]
}

fn spawn_transparent(world: &mut World) {
    use stage::*;
    spawn_sun(world);
    for index in [
        ALPHA_MODES,
        FADING_TEXTURED,
        INTERSECTING_MANY,
        ALPHA_TO_COVERAGE,
    ] {
        spawn_stage(world, index);
    }
    let sphere = add_mesh(world, Sphere::new(0.6).mesh().uv(32, 16));
    let cube = add_mesh(world, Cuboid::new(0.9, 0.9, 0.9));
    let white = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.85, 0.85, 0.85),
            perceptual_roughness: 0.6,
            ..default()
        },
    );

    // Every blended mode over an opaque white wall (behind) and ground; an opaque pillar in
    // front of the Blend sphere, and a second Blend sphere behind the wall's edge.
    let wall = add_mesh(world, Cuboid::new(7.5, 2.2, 0.2));
    spawn(
        world,
        &wall,
        &white,
        Transform::from_translation(stage_origin(ALPHA_MODES) + Vec3::new(0.0, 1.1, -1.4)),
    );
    let modes = BLENDED_MODES;
    for (slot, (alpha_mode, base_color)) in modes.into_iter().enumerate() {
        let material = add_material(
            world,
            StandardMaterial {
                base_color,
                alpha_mode,
                perceptual_roughness: 0.3,
                ..default()
            },
        );
        let mesh = if slot % 2 == 0 { &sphere } else { &cube };
        spawn(world, mesh, &material, row(ALPHA_MODES, slot, 0.9, 0.0));
    }
    let pillar = add_mesh(world, Cuboid::new(0.2, 1.6, 0.2));
    spawn(world, &pillar, &white, row(ALPHA_MODES, 0, 0.8, 0.9));
    let hidden = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgba(0.8, 0.1, 0.9, 0.5),
            alpha_mode: AlphaMode::Blend,
            ..default()
        },
    );
    spawn(world, &sphere, &hidden, row(ALPHA_MODES, 3, 1.8, -1.9));

    // Fading alpha (Blend spheres from nearly clear to nearly opaque, the last one unlit and
    // emissive), and a textured quad whose texture's alpha is a checker of 0.2 and 0.9.
    for (slot, alpha) in [0.15, 0.4, 0.7].into_iter().enumerate() {
        let material = add_material(
            world,
            StandardMaterial {
                base_color: Color::srgba(0.1, 0.8, 0.9, alpha),
                alpha_mode: AlphaMode::Blend,
                emissive: LinearRgba::rgb(0.0, 0.05, 0.05),
                ..default()
            },
        );
        spawn(
            world,
            &sphere,
            &material,
            row(FADING_TEXTURED, slot, 0.9, 0.0),
        );
    }
    let checker = add_image(
        world,
        image(16, ImageSampler::nearest(), |x, y| {
            if (x / 4 + y / 4) % 2 == 0 {
                [255, 120, 20, 230]
            } else {
                [40, 200, 60, 51]
            }
        }),
    );
    let textured = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(checker),
            alpha_mode: AlphaMode::Blend,
            cull_mode: None,
            double_sided: true,
            ..default()
        },
    );
    let quad = add_mesh(world, Rectangle::new(1.4, 1.4));
    spawn(world, &quad, &textured, row(FADING_TEXTURED, 3, 0.9, 0.2));

    // Two transparent quads crossing each other, and many small transparent cubes at several
    // depths over an opaque sphere.
    let crossing = add_mesh(world, Rectangle::new(1.6, 1.2));
    for (angle, colour) in [
        (0.6_f32, Color::srgba(1.0, 0.2, 0.1, 0.55)),
        (-0.6, Color::srgba(0.1, 0.3, 1.0, 0.55)),
    ] {
        let material = add_material(
            world,
            StandardMaterial {
                base_color: colour,
                alpha_mode: AlphaMode::Blend,
                cull_mode: None,
                double_sided: true,
                ..default()
            },
        );
        spawn(
            world,
            &crossing,
            &material,
            row(INTERSECTING_MANY, 0, 0.9, 0.0).with_rotation(Quat::from_rotation_y(angle)),
        );
    }
    spawn(world, &sphere, &white, row(INTERSECTING_MANY, 2, 0.7, -0.6));
    // AlphaMode::AlphaToCoverage (opaque, drawn into the G-buffer): with 4x MSAA the alpha
    // covers that share of each pixel's samples; without MSAA it is a mask at 0.5.
    for (slot, alpha) in [0.3, 0.55, 0.8].into_iter().enumerate() {
        let material = add_material(
            world,
            StandardMaterial {
                base_color: Color::srgba(0.9, 0.3, 0.1, alpha),
                alpha_mode: AlphaMode::AlphaToCoverage,
                ..default()
            },
        );
        spawn(
            world,
            &sphere,
            &material,
            row(ALPHA_TO_COVERAGE, slot, 0.9, 0.0),
        );
    }
    // Not tested: an AlphaToCoverage quad whose alpha comes from a texture gradient. Bevy's
    // forward 4x on lavapipe drew it like a mask at 0.5 (half the quad opaque, half absent),
    // while its uniform-alpha spheres cover samples by alpha as here; unexplained.

    let small = add_mesh(world, Cuboid::new(0.3, 0.3, 0.3));
    for i in 0..24 {
        let hue = i as f32 * 37.0 % 360.0;
        let material = add_material(
            world,
            StandardMaterial {
                base_color: Color::hsla(hue, 0.85, 0.5, 0.35 + 0.02 * i as f32),
                alpha_mode: if i % 3 == 0 {
                    AlphaMode::Add
                } else {
                    AlphaMode::Blend
                },
                ..default()
            },
        );
        let (column, layer) = (i % 8, i / 8);
        let offset = Vec3::new(
            -0.4 + 0.55 * column as f32,
            0.4 + 0.35 * (column % 3) as f32,
            0.6 - 0.6 * layer as f32,
        );
        spawn(
            world,
            &small,
            &material,
            Transform::from_translation(stage_origin(INTERSECTING_MANY) + offset)
                .with_rotation(Quat::from_rotation_y(0.3 * i as f32)),
        );
    }
}

fn checks() -> Vec<RegionCheck> {
    let mut checks = Vec::new();
    for case in [
        "alpha_modes",
        "alpha_modes_msaa",
        "alpha_modes_hdr",
        "alpha_modes_hdr_msaa",
    ] {
        let shows = [
            "the red Blend sphere",
            "the green Premultiplied cube",
            "the blue Add sphere",
            "the yellow Multiply cube",
        ];
        for (region, shows) in STRIPS.into_iter().zip(shows) {
            checks.push(RegionCheck {
                case,
                region,
                shows,
                visible: |f| saturated_pixels(f, 40) > 60,
            });
        }
    }
    for (region, shows) in STRIPS.into_iter().zip([
        "the faint cyan sphere",
        "the cyan sphere",
        "the strong cyan sphere",
        "the checkered quad",
    ]) {
        checks.push(RegionCheck {
            case: "fading_textured",
            region,
            shows,
            visible: |f| saturated_pixels(f, 15) > 60,
        });
    }
    for case in ["intersecting_many", "intersecting_many_msaa"] {
        for (region, shows) in STRIPS[..3].iter().zip([
            "the crossing quads",
            "the small cubes",
            "the small cubes over the sphere",
        ]) {
            checks.push(RegionCheck {
                case,
                region: *region,
                shows,
                visible: |f| saturated_pixels(f, 40) > 60,
            });
        }
    }
    // Without MSAA alpha-to-coverage is a mask at 0.5, as in Bevy: the 0.3 sphere is gone.
    for (case, faint) in [
        ("alpha_to_coverage", None),
        ("alpha_to_coverage_msaa", Some("the faint orange sphere")),
    ] {
        checks.push(match faint {
            Some(shows) => RegionCheck {
                case,
                region: STRIPS[0],
                shows,
                visible: |f| saturated_pixels(f, 40) > 40,
            },
            None => RegionCheck {
                case,
                region: STRIPS[0],
                shows: "nothing orange (the 0.3 sphere masked out)",
                visible: |f| saturated_pixels(f, 40) < 10,
            },
        });
        for (region, shows) in STRIPS[1..3]
            .iter()
            .copied()
            .zip(["the orange sphere", "the strong orange sphere"])
        {
            checks.push(RegionCheck {
                case,
                region,
                shows,
                visible: |f| saturated_pixels(f, 40) > 40,
            });
        }
    }
    checks
}

/// Every blended alpha mode, fading alpha, a textured quad, intersecting and many transparent
/// objects, in front of and behind opaque ones: without MSAA and `Hdr` (>= 36 dB), at 4x MSAA
/// (>= 34 dB against Bevy forward 4x), whole frame and each object's region.
#[test]
fn transparent_objects_match_bevy() {
    let _test = GpuTest::start("transparent_objects_match_bevy");
    assert_content_matches_to(headless(), &TRANSPARENT, &checks(), |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}

/// With transparent objects in view the frame is still one render pass (G-buffer, lighting,
/// tonemap, transparent subpasses) storing only the output; the unmerged tier records the
/// transparent pass as a fourth render pass.
#[test]
fn transparent_objects_stay_in_the_one_render_pass() {
    let _test = GpuTest::start("transparent_objects_stay_in_the_one_render_pass");
    for (samples, merged) in [(Msaa::Off, true), (Msaa::Sample4, true), (Msaa::Off, false)] {
        let mut headless: HeadlessApp = headless();
        spawn_transparent(headless.app.world_mut());
        let camera = FidelityCamera::stage(stage::ALPHA_MODES);
        let entity = headless.spawn_camera((
            camera.bundle(),
            TileDeferred {
                merge_subpasses: merged,
                ..default()
            },
        ));
        headless.app.world_mut().entity_mut(entity).insert(samples);
        let frame = headless.render(4);
        assert!(
            frame.rgba.chunks_exact(4).any(|p| p[0] > 120 && p[1] < 80),
            "{samples:?} merged {merged}: the red sphere is drawn"
        );
        let reports = headless.app.world().resource::<TileRenderReports>().clone();
        let report = reports
            .get(entity)
            .unwrap_or_else(|| panic!("{samples:?} merged {merged}: a tile report"));
        let compiled = &report.compiled;
        let names: Vec<Vec<&str>> = compiled
            .native_passes
            .iter()
            .map(|n| n.subpasses.iter().map(|s| s.name.as_str()).collect())
            .collect();
        let expected: Vec<Vec<&str>> = if merged {
            vec![vec!["gbuffer", "lighting", "tonemap", "transparent"]]
        } else {
            vec![
                vec!["gbuffer"],
                vec!["lighting"],
                vec!["tonemap"],
                vec!["transparent"],
            ]
        };
        assert_eq!(names, expected, "{samples:?} merged {merged}");
        assert_eq!(report.render_passes_recorded, expected.len());
        if merged {
            // The Vulkan objects created follow the plan: only the output stored, nothing
            // loaded.
            for created in &report.attachments {
                let output = created.name == "output";
                assert_eq!(
                    created.store_op == "STORE",
                    output,
                    "{samples:?}: {} stored only if it is the output",
                    created.name
                );
                assert_ne!(
                    created.load_op, "LOAD",
                    "{samples:?}: {} loaded",
                    created.name
                );
            }
        }
        assert!(report.draws >= 6, "{samples:?}: {} draws", report.draws);
    }
}

// ------------------------------------------------------------------------------------------
// An HDR camera's transparent meshes over fog and a skybox.

mod environment_stage {
    /// Exponential fog with directional inscattering.
    pub const FOG: usize = 0;
    /// Atmospheric fog (per-channel extinction and inscattering).
    pub const ATMOSPHERIC: usize = 1;
    /// A skybox behind the transparent meshes.
    pub const SKYBOX: usize = 2;
}

const TRANSPARENT_ENVIRONMENT: FidelityScene = FidelityScene {
    name: "transparent_environment",
    spawn: spawn_transparent_environment,
    cases: transparent_environment_cases,
};

fn transparent_environment_cases() -> Vec<FidelityCase> {
    use environment_stage::*;
    let camera = |index, hdr: bool, msaa: bool| {
        let mut camera = FidelityCamera::stage(index);
        camera.hdr = hdr;
        if msaa {
            camera.msaa = Some(Msaa::Sample4);
        }
        if index == SKYBOX {
            // Looking a little up, so that the sky is behind the upper halves of the meshes.
            let origin = stage_origin(index);
            camera.transform = Transform::from_translation(origin + Vec3::new(0.0, 0.6, 6.5))
                .looking_at(origin + Vec3::new(0.0, 1.6, 0.0), Vec3::Y);
        }
        camera
    };
    [
        ("hdr_fog", FOG, true, false),
        ("hdr_fog_msaa", FOG, true, true),
        ("ldr_fog", FOG, false, false),
        ("hdr_atmospheric", ATMOSPHERIC, true, false),
        ("hdr_atmospheric_msaa", ATMOSPHERIC, true, true),
        ("ldr_atmospheric", ATMOSPHERIC, false, false),
        ("hdr_skybox", SKYBOX, true, false),
        ("hdr_skybox_msaa", SKYBOX, true, true),
        ("ldr_skybox", SKYBOX, false, false),
    ]
    .into_iter()
    .map(|(name, index, hdr, msaa)| FidelityCase::single(name, camera(index, hdr, msaa)))
    .collect()
}

/// A row of transparent meshes (every blended mode) at growing distances over an opaque wall,
/// on each stage; fog on the first two stages' cameras, a skybox on the third's.
fn spawn_transparent_environment(world: &mut World) {
    use bevy::{
        light::Skybox,
        pbr::{DistanceFog, FogFalloff},
    };
    use environment_stage::*;
    spawn_sun(world);
    let sphere = add_mesh(world, Sphere::new(0.55).mesh().uv(32, 16));
    let wall = add_mesh(world, Cuboid::new(7.5, 1.4, 0.2));
    let white = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.85, 0.85, 0.85),
            perceptual_roughness: 0.6,
            ..default()
        },
    );
    let modes = BLENDED_MODES;
    let materials: Vec<Handle<StandardMaterial>> = modes
        .into_iter()
        .map(|(alpha_mode, base_color)| {
            add_material(
                world,
                StandardMaterial {
                    base_color,
                    alpha_mode,
                    perceptual_roughness: 0.3,
                    ..default()
                },
            )
        })
        .collect();
    for index in [FOG, ATMOSPHERIC, SKYBOX] {
        spawn_stage(world, index);
        // The wall low, so that the skybox stage shows sky above it.
        spawn(
            world,
            &wall,
            &white,
            Transform::from_translation(stage_origin(index) + Vec3::new(0.0, 0.7, -3.0)),
        );
        for (slot, material) in materials.iter().enumerate() {
            // Nearer to farther, left to right: the fog thickens along the row.
            spawn(
                world,
                &sphere,
                material,
                row(index, slot, 1.0, 1.5 - 1.4 * slot as f32),
            );
        }
    }
    let cube = add_image(world, crate::content::sky_cube());
    // Every camera gets its stage's fog or skybox (cameras are spawned by the harness, after
    // this).
    world.add_observer(
        move |add: On<Add, Camera3d>, mut commands: Commands, transforms: Query<&Transform>| {
            let Ok(transform) = transforms.get(add.entity) else {
                return;
            };
            let mut camera = commands.entity(add.entity);
            match crate::content::stage_of(transform) {
                FOG => {
                    camera.insert(DistanceFog {
                        color: Color::srgba(0.55, 0.6, 0.7, 1.0),
                        directional_light_color: Color::srgba(1.0, 0.85, 0.5, 0.6),
                        directional_light_exponent: 10.0,
                        falloff: FogFalloff::Exponential { density: 0.12 },
                    });
                }
                ATMOSPHERIC => {
                    camera.insert(DistanceFog {
                        color: Color::srgba(0.55, 0.6, 0.7, 1.0),
                        directional_light_color: Color::srgba(1.0, 0.85, 0.5, 0.6),
                        directional_light_exponent: 20.0,
                        falloff: FogFalloff::from_visibility_colors(
                            12.0,
                            Color::srgb(0.35, 0.5, 0.66),
                            Color::srgb(0.8, 0.844, 1.0),
                        ),
                    });
                }
                _ => {
                    camera.insert(Skybox {
                        image: Some(cube.clone()),
                        brightness: 1_000.0,
                        rotation: Quat::IDENTITY,
                    });
                }
            }
        },
    );
}

/// An HDR camera blends its transparent meshes into the light, as Bevy blends them into its HDR
/// main texture: over surfaces already fogged (exponential fog with inscattering, atmospheric
/// fog) and over the skybox; with and without MSAA, and the LDR camera for comparison. Whole
/// frame and each object's region against Bevy forward.
#[test]
fn transparent_objects_over_fog_and_skybox_match_bevy() {
    let _test = GpuTest::start("transparent_objects_over_fog_and_skybox_match_bevy");
    let mut checks = Vec::new();
    for case in [
        "hdr_fog",
        "hdr_fog_msaa",
        "ldr_fog",
        "hdr_atmospheric",
        "hdr_atmospheric_msaa",
        "ldr_atmospheric",
        "hdr_skybox",
        "hdr_skybox_msaa",
        "ldr_skybox",
    ] {
        for (region, shows) in STRIPS.into_iter().zip([
            "the near Blend sphere",
            "the Premultiplied sphere",
            "the Add sphere",
            "the far Multiply sphere",
        ]) {
            checks.push(RegionCheck {
                case,
                region,
                shows,
                visible: |f| saturated_pixels(f, 20) > 40,
            });
        }
    }
    assert_content_matches_to(headless(), &TRANSPARENT_ENVIRONMENT, &checks, |case| {
        if case.contains("msaa") {
            MIN_PSNR_MSAA
        } else {
            MIN_PSNR
        }
    });
}
