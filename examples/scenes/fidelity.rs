//! Fidelity scenes: every `StandardMaterial` property, light type and camera setting the tile
//! path draws, laid out so that the tile path can be compared with Bevy's forward renderer one
//! feature at a time.
//!
//! Each [`FidelityScene`] is one world. Its features sit on separate *stages* 60 m apart, each
//! with its own point lights (ranges shorter than the spacing), and each [`FidelityCase`] is a
//! set of cameras drawing one image (usually one camera looking at one stage). One app then
//! renders every case of a scene, which keeps the GPU tests fast on a software rasteriser.
//!
//! Shadows are off everywhere (`shadow_maps_enabled: false`), MSAA is off on every camera; all
//! textures are procedural (made in code) with a single mip level.

use bevy::{
    asset::RenderAssetUsages,
    camera::{ClearColorConfig, Exposure, Viewport},
    core_pipeline::tonemapping::{DebandDither, Tonemapping},
    image::{ImageAddressMode, ImageFilterMode, ImageSampler, ImageSamplerDescriptor},
    light::{
        AmbientLight, CascadeShadowConfigBuilder, GlobalAmbientLight, NotShadowCaster,
        NotShadowReceiver, ShadowFilteringMethod,
    },
    math::Affine2,
    mesh::{Indices, PrimitiveTopology},
    prelude::*,
    render::{
        render_resource::{Extent3d, TextureDimension, TextureFormat},
        view::Msaa,
    },
};
use std::f32::consts::{FRAC_PI_2, PI, TAU};

/// The size of the images the fidelity cases are drawn into (the viewport cases depend on it).
pub const IMAGE_SIZE: UVec2 = UVec2::new(256, 144);

/// Distance between stages along x; every stage's point-light range is shorter than this.
pub const STAGE_SPACING: f32 = 60.0;

/// A camera of a [`FidelityCase`], with everything the comparison varies.
#[derive(Clone)]
pub struct FidelityCamera {
    /// Order, viewport and clear colour.
    pub camera: Camera,
    /// Where it looks from.
    pub transform: Transform,
    /// Perspective or orthographic.
    pub projection: Projection,
    /// Tone mapping operator.
    pub tonemapping: Tonemapping,
    /// Deband dithering.
    pub dither: DebandDither,
    /// Exposure.
    pub exposure: Exposure,
    /// A per-camera ambient light overriding [`GlobalAmbientLight`].
    pub ambient: Option<AmbientLight>,
    /// How shadow maps are filtered (Bevy's default: Gaussian).
    pub shadow_filter: ShadowFilteringMethod,
    /// An HDR camera (`Hdr`): Bevy renders to a floating-point texture and tone maps after.
    pub hdr: bool,
    /// This camera's samples, in place of the comparison's (`None`: the comparison's).
    pub msaa: Option<Msaa>,
}

impl FidelityCamera {
    /// A perspective camera at `from` looking at `at`, with Bevy's defaults for the rest and the
    /// reference clear colour.
    pub fn looking(from: Vec3, at: Vec3) -> Self {
        Self {
            camera: Camera {
                clear_color: ClearColorConfig::Custom(super::CLEAR_COLOR),
                ..default()
            },
            transform: Transform::from_translation(from).looking_at(at, Vec3::Y),
            projection: Projection::Perspective(PerspectiveProjection::default()),
            tonemapping: Tonemapping::default(),
            // What `Camera3d` requires (`DebandDither::default()` is `Disabled`).
            dither: DebandDither::Enabled,
            exposure: Exposure::default(),
            ambient: None,
            shadow_filter: ShadowFilteringMethod::default(),
            hdr: false,
            msaa: None,
        }
    }

    /// A camera looking at stage `index` (see [`stage_origin`]) from the front and above.
    pub fn stage(index: usize) -> Self {
        let origin = stage_origin(index);
        Self::looking(
            origin + Vec3::new(0.0, 3.2, 6.5),
            origin + Vec3::new(0.0, 0.7, 0.0),
        )
    }

    /// The components to spawn (plus [`Self::ambient`] when set), without a render target.
    pub fn bundle(&self) -> impl Bundle + use<> {
        (
            Camera3d::default(),
            self.camera.clone(),
            self.transform,
            self.projection.clone(),
            self.tonemapping,
            self.dither,
            self.exposure,
            self.shadow_filter,
            Msaa::Off,
        )
    }
}

/// One compared image: the cameras that draw it, in order.
#[derive(Clone)]
pub struct FidelityCase {
    /// Test-facing name (used for image files).
    pub name: &'static str,
    /// The cameras drawing into the image.
    pub cameras: Vec<FidelityCamera>,
}

impl FidelityCase {
    /// A case drawn by a single camera.
    pub fn single(name: &'static str, camera: FidelityCamera) -> Self {
        Self {
            name,
            cameras: vec![camera],
        }
    }
}

/// A world and the images taken of it.
pub struct FidelityScene {
    /// Test-facing name.
    pub name: &'static str,
    /// Spawns everything but the cameras.
    pub spawn: fn(&mut World),
    /// The images to compare.
    pub cases: fn() -> Vec<FidelityCase>,
}

/// Where stage `index` is.
pub fn stage_origin(index: usize) -> Vec3 {
    Vec3::new(index as f32 * STAGE_SPACING, 0.0, 0.0)
}

// ------------------------------------------------------------------------------------------
// Procedural textures.

fn image(size: u32, format: TextureFormat, texel: impl Fn(f32, f32) -> [u8; 4]) -> Image {
    let mut data = Vec::with_capacity((size * size * 4) as usize);
    for y in 0..size {
        for x in 0..size {
            let u = (x as f32 + 0.5) / size as f32;
            let v = (y as f32 + 0.5) / size as f32;
            data.extend_from_slice(&texel(u, v));
        }
    }
    let mut image = Image::new(
        Extent3d {
            width: size,
            height: size,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        format,
        RenderAssetUsages::default(),
    );
    image.sampler = ImageSampler::Descriptor(ImageSamplerDescriptor {
        address_mode_u: ImageAddressMode::Repeat,
        address_mode_v: ImageAddressMode::Repeat,
        address_mode_w: ImageAddressMode::Repeat,
        mag_filter: ImageFilterMode::Linear,
        min_filter: ImageFilterMode::Linear,
        mipmap_filter: ImageFilterMode::Linear,
        ..default()
    });
    image
}

fn unorm(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// A soft two-colour checker with a hue gradient (sRGB RGBA8, repeat).
pub fn base_color_image() -> Image {
    image(64, TextureFormat::Rgba8UnormSrgb, |u, v| {
        let checker = ((u * 4.0).floor() + (v * 4.0).floor()) as i32 % 2 == 0;
        let s = 0.5 + 0.5 * (TAU * u).sin();
        let base = if checker {
            [0.9, 0.35 + 0.4 * s, 0.15]
        } else {
            [0.15, 0.45, 0.55 + 0.35 * v]
        };
        [unorm(base[0]), unorm(base[1]), unorm(base[2]), 255]
    })
}

/// glTF metallic-roughness: green = roughness (gradient along u), blue = metallic (bands along v).
pub fn metallic_roughness_image() -> Image {
    image(64, TextureFormat::Rgba8Unorm, |u, v| {
        let roughness = 0.15 + 0.8 * (0.5 + 0.5 * (TAU * u).cos());
        let metallic = if (v * 4.0).floor() as i32 % 2 == 0 {
            1.0
        } else {
            0.0
        };
        [0, unorm(roughness), unorm(metallic), 255]
    })
}

/// A tangent-space normal map of smooth bumps (linear RGBA8).
pub fn normal_map_image() -> Image {
    image(128, TextureFormat::Rgba8Unorm, |u, v| {
        let f = 3.0;
        let strength = 0.35;
        let dx = strength * (TAU * f * u).cos() * (TAU * f * v).sin();
        let dy = strength * (TAU * f * u).sin() * (TAU * f * v).cos();
        let n = Vec3::new(-dx, -dy, 1.0).normalize();
        [
            unorm(n.x * 0.5 + 0.5),
            unorm(n.y * 0.5 + 0.5),
            unorm(n.z * 0.5 + 0.5),
            255,
        ]
    })
}

/// Emissive stripes (sRGB RGBA8).
pub fn emissive_image() -> Image {
    image(64, TextureFormat::Rgba8UnormSrgb, |u, v| {
        let stripe = 0.5 + 0.5 * (TAU * 3.0 * (u + v)).sin();
        [unorm(stripe), unorm(0.6 * stripe), unorm(1.0 - stripe), 255]
    })
}

/// Ambient occlusion (red channel): dark soft blotches (linear RGBA8).
pub fn occlusion_image() -> Image {
    image(64, TextureFormat::Rgba8Unorm, |u, v| {
        let d = Vec2::new((u * 2.0).fract() - 0.5, (v * 2.0).fract() - 0.5).length();
        let ao = 0.15 + 0.85 * (d * 2.2).clamp(0.0, 1.0);
        [unorm(ao), 255, 255, 255]
    })
}

/// A base colour with round holes of alpha 0 and a soft alpha ramp around them (sRGB RGBA8).
pub fn alpha_holes_image() -> Image {
    image(64, TextureFormat::Rgba8UnormSrgb, |u, v| {
        let d = Vec2::new((u * 3.0).fract() - 0.5, (v * 3.0).fract() - 0.5).length();
        let alpha = ((d - 0.22) / 0.1).clamp(0.0, 1.0);
        [
            unorm(0.2 + 0.7 * u),
            200,
            unorm(0.3 + 0.5 * v),
            unorm(alpha),
        ]
    })
}

// ------------------------------------------------------------------------------------------
// Meshes.

/// A square pyramid with positions only (no normals, no UVs), not indexed.
pub fn positions_only_pyramid() -> Mesh {
    let apex = [0.0, 1.2, 0.0];
    let base = [
        [-0.8, 0.0, -0.8],
        [0.8, 0.0, -0.8],
        [0.8, 0.0, 0.8],
        [-0.8, 0.0, 0.8],
    ];
    let mut positions: Vec<[f32; 3]> = Vec::new();
    for i in 0..4 {
        // Counter-clockwise seen from outside.
        positions.extend([base[(i + 1) % 4], base[i], apex]);
    }
    // The base faces down.
    positions.extend([base[0], base[1], base[2], base[0], base[2], base[3]]);
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
}

/// A cube with positions and normals but no UVs (indexed).
pub fn cube_without_uvs() -> Mesh {
    let mut mesh = Mesh::from(Cuboid::new(1.2, 1.2, 1.2));
    mesh.remove_attribute(Mesh::ATTRIBUTE_UV_0);
    mesh
}

/// A quad in the XZ plane facing +Y, with UVs 0..`uv_scale` (indexed).
pub fn quad(size: f32, uv_scale: f32) -> Mesh {
    let h = size / 2.0;
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_POSITION,
        vec![[-h, 0.0, -h], [h, 0.0, -h], [h, 0.0, h], [-h, 0.0, h]],
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, vec![[0.0, 1.0, 0.0]; 4])
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_UV_0,
        vec![
            [0.0, 0.0],
            [uv_scale, 0.0],
            [uv_scale, uv_scale],
            [0.0, uv_scale],
        ],
    )
    .with_inserted_indices(Indices::U32(vec![0, 3, 2, 0, 2, 1]))
}

// ------------------------------------------------------------------------------------------
// Scene helpers.

fn add_mesh(world: &mut World, mesh: impl Into<Mesh>) -> Handle<Mesh> {
    world.resource_mut::<Assets<Mesh>>().add(mesh)
}

fn add_material(world: &mut World, material: StandardMaterial) -> Handle<StandardMaterial> {
    world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(material)
}

/// A plain PBR material: base colour, perceptual roughness and metallic.
fn add_pbr_material(
    world: &mut World,
    base_color: Color,
    perceptual_roughness: f32,
    metallic: f32,
) -> Handle<StandardMaterial> {
    add_material(
        world,
        StandardMaterial {
            base_color,
            perceptual_roughness,
            metallic,
            ..default()
        },
    )
}

fn add_image(world: &mut World, image: Image) -> Handle<Image> {
    world.resource_mut::<Assets<Image>>().add(image)
}

fn spawn_object(
    world: &mut World,
    name: String,
    mesh: &Handle<Mesh>,
    material: &Handle<StandardMaterial>,
    transform: Transform,
) {
    world.spawn((
        Name::new(name),
        Mesh3d(mesh.clone()),
        MeshMaterial3d(material.clone()),
        transform,
    ));
}

fn point_light(intensity: f32, range: f32, radius: f32, color: Color) -> PointLight {
    PointLight {
        intensity,
        range,
        radius,
        color,
        shadow_maps_enabled: false,
        ..default()
    }
}

/// A grey ground under stage `index` and a warm point light over it.
fn spawn_stage_base(world: &mut World, index: usize, ground: &Handle<Mesh>) {
    let origin = stage_origin(index);
    let ground_material = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.45, 0.45, 0.45),
            perceptual_roughness: 0.85,
            ..default()
        },
    );
    spawn_object(
        world,
        format!("stage {index} ground"),
        ground,
        &ground_material,
        Transform::from_translation(origin),
    );
    world.spawn((
        Name::new(format!("stage {index} light")),
        point_light(250_000.0, 14.0, 0.0, Color::srgb(1.0, 0.9, 0.8)),
        Transform::from_translation(origin + Vec3::new(-2.5, 3.5, 2.5)),
    ));
}

/// The sun of the material scene: 3000 lux, slightly warm, no shadows.
fn spawn_sun(world: &mut World, illuminance: f32, color: Color, from: Vec3) {
    world.spawn((
        Name::new("sun"),
        DirectionalLight {
            illuminance,
            color,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_translation(from).looking_at(Vec3::ZERO, Vec3::Y),
    ));
}

// ------------------------------------------------------------------------------------------
// Scene 1: materials. One stage per material property.

/// Stage indices of [`MATERIALS`].
pub mod material_stage {
    pub const BASE_COLOR_TEXTURE: usize = 0;
    pub const METALLIC_ROUGHNESS_TEXTURE: usize = 1;
    pub const NORMAL_MAP: usize = 2;
    pub const EMISSIVE: usize = 3;
    pub const OCCLUSION: usize = 4;
    pub const UNLIT: usize = 5;
    pub const ALPHA_MASK: usize = 6;
    pub const DOUBLE_SIDED: usize = 7;
    pub const UV_TRANSFORM: usize = 8;
    pub const REFLECTANCE: usize = 9;
    pub const MISSING_ATTRIBUTES: usize = 10;
    pub const INSTANCING: usize = 11;
}

/// Every `StandardMaterial` property on its own stage.
pub const MATERIALS: FidelityScene = FidelityScene {
    name: "materials",
    spawn: spawn_materials,
    cases: material_cases,
};

fn material_cases() -> Vec<FidelityCase> {
    use material_stage::*;
    let mut double_sided = FidelityCamera::stage(DOUBLE_SIDED);
    // Below the planes, looking up at their back faces.
    let origin = stage_origin(DOUBLE_SIDED);
    double_sided.transform = Transform::from_translation(origin + Vec3::new(0.0, -2.5, 5.0))
        .looking_at(origin + Vec3::new(0.0, 1.0, 0.0), Vec3::Y);
    // The occlusion texture darkens only the ambient term: a bright ambient shows it.
    let mut occlusion = FidelityCamera::stage(OCCLUSION);
    occlusion.ambient = Some(AmbientLight {
        brightness: 2_000.0,
        ..default()
    });
    let mut instancing = FidelityCamera::stage(INSTANCING);
    let origin = stage_origin(INSTANCING);
    instancing.transform =
        Transform::from_translation(origin + Vec3::new(0.0, 9.0, 9.0)).looking_at(origin, Vec3::Y);
    vec![
        FidelityCase::single(
            "base_color_texture",
            FidelityCamera::stage(BASE_COLOR_TEXTURE),
        ),
        FidelityCase::single(
            "metallic_roughness_texture",
            FidelityCamera::stage(METALLIC_ROUGHNESS_TEXTURE),
        ),
        FidelityCase::single("normal_map", FidelityCamera::stage(NORMAL_MAP)),
        FidelityCase::single("emissive", FidelityCamera::stage(EMISSIVE)),
        FidelityCase::single("occlusion_texture", occlusion),
        FidelityCase::single("unlit", FidelityCamera::stage(UNLIT)),
        FidelityCase::single("alpha_mask", FidelityCamera::stage(ALPHA_MASK)),
        FidelityCase::single("double_sided", double_sided),
        FidelityCase::single("uv_transform", FidelityCamera::stage(UV_TRANSFORM)),
        FidelityCase::single("reflectance", FidelityCamera::stage(REFLECTANCE)),
        FidelityCase::single(
            "missing_normals_and_uvs",
            FidelityCamera::stage(MISSING_ATTRIBUTES),
        ),
        FidelityCase::single("instancing", instancing),
    ]
}

/// Spawns the material stages (no cameras).
pub fn spawn_materials(world: &mut World) {
    use material_stage::*;
    spawn_sun(
        world,
        3_000.0,
        Color::srgb(1.0, 0.96, 0.9),
        Vec3::new(3.0, 8.0, 5.0),
    );
    let ground = add_mesh(world, Plane3d::default().mesh().size(12.0, 12.0));
    let sphere = add_mesh(world, Sphere::new(0.9).mesh().uv(48, 24));
    let cube = add_mesh(world, Cuboid::new(1.3, 1.3, 1.3));
    for stage in 0..=INSTANCING {
        spawn_stage_base(world, stage, &ground);
    }
    let at = |stage: usize, offset: Vec3| Transform::from_translation(stage_origin(stage) + offset);
    let left = Vec3::new(-1.4, 0.9, 0.0);
    let right = Vec3::new(1.4, 0.9, 0.0);

    // Base colour texture (sRGB, repeat sampler; UVs beyond 1 on the quad).
    let base_color = add_image(world, base_color_image());
    let textured = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(base_color.clone()),
            perceptual_roughness: 0.5,
            ..default()
        },
    );
    let tinted = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(1.0, 0.8, 0.6),
            base_color_texture: Some(base_color.clone()),
            perceptual_roughness: 0.35,
            ..default()
        },
    );
    let tiled_quad = add_mesh(world, quad(2.2, 3.0));
    spawn_object(
        world,
        "textured sphere".into(),
        &sphere,
        &textured,
        at(BASE_COLOR_TEXTURE, left),
    );
    spawn_object(
        world,
        "tinted textured cube".into(),
        &cube,
        &tinted,
        at(BASE_COLOR_TEXTURE, right).with_rotation(Quat::from_rotation_y(0.5)),
    );
    spawn_object(
        world,
        "repeating quad".into(),
        &tiled_quad,
        &textured,
        at(BASE_COLOR_TEXTURE, Vec3::new(0.0, 0.02, 2.0)),
    );

    // Metallic/roughness texture.
    let metallic_roughness = add_image(world, metallic_roughness_image());
    let mr = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.9, 0.7, 0.4),
            metallic: 1.0,
            perceptual_roughness: 1.0,
            metallic_roughness_texture: Some(metallic_roughness),
            ..default()
        },
    );
    spawn_object(
        world,
        "metallic-roughness sphere".into(),
        &sphere,
        &mr,
        at(METALLIC_ROUGHNESS_TEXTURE, left),
    );
    spawn_object(
        world,
        "metallic-roughness cube".into(),
        &cube,
        &mr,
        at(METALLIC_ROUGHNESS_TEXTURE, right).with_rotation(Quat::from_rotation_y(0.6)),
    );

    // Normal map, with generated tangents.
    let normal_map = add_image(world, normal_map_image());
    let bumpy = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.7, 0.75, 0.8),
            perceptual_roughness: 0.45,
            normal_map_texture: Some(normal_map.clone()),
            ..default()
        },
    );
    let bumpy_sphere = add_mesh(
        world,
        Sphere::new(0.9)
            .mesh()
            .uv(48, 24)
            .with_generated_tangents()
            .expect("a UV sphere has UVs and normals"),
    );
    let bumpy_cube = add_mesh(
        world,
        Mesh::from(Cuboid::new(1.3, 1.3, 1.3))
            .with_generated_tangents()
            .expect("a cuboid has UVs and normals"),
    );
    spawn_object(
        world,
        "normal-mapped sphere".into(),
        &bumpy_sphere,
        &bumpy,
        at(NORMAL_MAP, left),
    );
    spawn_object(
        world,
        "normal-mapped cube".into(),
        &bumpy_cube,
        &bumpy,
        at(NORMAL_MAP, right).with_rotation(Quat::from_rotation_y(-0.5)),
    );

    // Emissive colour, and emissive texture times colour weighted by the exposure.
    let emissive_texture = add_image(world, emissive_image());
    let glowing = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.1, 0.1, 0.1),
            emissive: LinearRgba::rgb(2.0, 0.6, 0.15),
            ..default()
        },
    );
    let glowing_textured = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.3, 0.3, 0.3),
            // Nits scaled by the camera exposure (about 1/1560 at Bevy's default).
            emissive: LinearRgba::rgb(1_200.0, 1_200.0, 1_200.0),
            emissive_exposure_weight: 1.0,
            emissive_texture: Some(emissive_texture),
            ..default()
        },
    );
    spawn_object(
        world,
        "emissive sphere".into(),
        &sphere,
        &glowing,
        at(EMISSIVE, left),
    );
    spawn_object(
        world,
        "emissive textured cube".into(),
        &cube,
        &glowing_textured,
        at(EMISSIVE, right).with_rotation(Quat::from_rotation_y(0.4)),
    );

    // Occlusion texture (affects the ambient term only).
    let occlusion = add_image(world, occlusion_image());
    let occluded = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.8, 0.8, 0.75),
            perceptual_roughness: 0.6,
            occlusion_texture: Some(occlusion),
            ..default()
        },
    );
    spawn_object(
        world,
        "occluded sphere".into(),
        &sphere,
        &occluded,
        at(OCCLUSION, left),
    );
    spawn_object(
        world,
        "occluded cube".into(),
        &cube,
        &occluded,
        at(OCCLUSION, right).with_rotation(Quat::from_rotation_y(0.3)),
    );

    // Unlit, plain and textured.
    let unlit = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.2, 0.7, 0.4),
            unlit: true,
            ..default()
        },
    );
    let unlit_textured = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(base_color.clone()),
            unlit: true,
            ..default()
        },
    );
    spawn_object(
        world,
        "unlit sphere".into(),
        &sphere,
        &unlit,
        at(UNLIT, left),
    );
    spawn_object(
        world,
        "unlit textured cube".into(),
        &cube,
        &unlit_textured,
        at(UNLIT, right).with_rotation(Quat::from_rotation_y(0.7)),
    );

    // Alpha mask with a cutoff: holes through a quad standing up, and a sphere behind it.
    let holes = add_image(world, alpha_holes_image());
    let masked = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(holes),
            alpha_mode: AlphaMode::Mask(0.5),
            perceptual_roughness: 0.6,
            double_sided: true,
            cull_mode: None,
            ..default()
        },
    );
    let backdrop = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.85, 0.1, 0.1),
            perceptual_roughness: 0.4,
            ..default()
        },
    );
    let standing_quad = add_mesh(world, quad(2.6, 1.0));
    spawn_object(
        world,
        "masked quad".into(),
        &standing_quad,
        &masked,
        at(ALPHA_MASK, Vec3::new(0.0, 1.4, 1.0)).with_rotation(Quat::from_rotation_x(FRAC_PI_2)),
    );
    spawn_object(
        world,
        "sphere behind the mask".into(),
        &sphere,
        &backdrop,
        at(ALPHA_MASK, Vec3::new(0.3, 0.9, -1.0)),
    );

    // Double-sided, cull mode None: planes seen from below, lit from below.
    let double_sided = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.3, 0.6, 0.9),
            perceptual_roughness: 0.4,
            double_sided: true,
            cull_mode: None,
            ..default()
        },
    );
    let double_sided_textured = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(base_color.clone()),
            normal_map_texture: Some(normal_map),
            perceptual_roughness: 0.5,
            double_sided: true,
            cull_mode: None,
            ..default()
        },
    );
    let tangent_quad = add_mesh(
        world,
        quad(2.2, 1.0)
            .with_generated_tangents()
            .expect("the quad has UVs and normals"),
    );
    let plain_quad = add_mesh(world, quad(2.2, 1.0));
    spawn_object(
        world,
        "double-sided plane".into(),
        &plain_quad,
        &double_sided,
        at(DOUBLE_SIDED, Vec3::new(-1.3, 1.6, 0.0)).with_rotation(Quat::from_rotation_x(0.3)),
    );
    spawn_object(
        world,
        "double-sided normal-mapped plane".into(),
        &tangent_quad,
        &double_sided_textured,
        at(DOUBLE_SIDED, Vec3::new(1.3, 1.6, 0.0)).with_rotation(Quat::from_rotation_x(0.3)),
    );
    world.spawn((
        Name::new("light under the double-sided planes"),
        point_light(200_000.0, 10.0, 0.0, Color::srgb(0.9, 0.95, 1.0)),
        Transform::from_translation(stage_origin(DOUBLE_SIDED) + Vec3::new(0.5, -1.5, 2.5)),
    ));

    // UV transform: scaled, rotated and offset texture coordinates.
    let uv_transformed = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(base_color.clone()),
            perceptual_roughness: 0.5,
            uv_transform: Affine2::from_scale_angle_translation(
                Vec2::new(2.0, 3.0),
                0.4,
                Vec2::new(0.25, -0.1),
            ),
            ..default()
        },
    );
    spawn_object(
        world,
        "uv-transformed sphere".into(),
        &sphere,
        &uv_transformed,
        at(UV_TRANSFORM, left),
    );
    spawn_object(
        world,
        "uv-transformed cube".into(),
        &cube,
        &uv_transformed,
        at(UV_TRANSFORM, right).with_rotation(Quat::from_rotation_y(0.5)),
    );

    // Reflectance 0, 0.5 and 1 on glossy dielectric spheres.
    let small_sphere = add_mesh(world, Sphere::new(0.6).mesh().uv(48, 24));
    for (i, reflectance) in [0.0, 0.5, 1.0].into_iter().enumerate() {
        let material = add_material(
            world,
            StandardMaterial {
                base_color: Color::srgb(0.05, 0.1, 0.35),
                perceptual_roughness: 0.25,
                reflectance,
                ..default()
            },
        );
        spawn_object(
            world,
            format!("reflectance {reflectance} sphere"),
            &small_sphere,
            &material,
            at(REFLECTANCE, Vec3::new(-1.6 + 1.6 * i as f32, 0.6, 0.0)),
        );
    }

    // A mesh without normals (and UVs), and a mesh without UVs whose material has textures.
    // The mesh without normals is unlit: lit, Bevy normalises a zero normal (undefined in WGSL;
    // lavapipe draws it nearly black) where the tile path shades the flat face normal.
    let pyramid = add_mesh(world, positions_only_pyramid());
    let no_uv_cube = add_mesh(world, cube_without_uvs());
    let pyramid_material = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.9, 0.5, 0.2),
            unlit: true,
            ..default()
        },
    );
    let textured_without_uvs = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.5, 0.8, 0.3),
            base_color_texture: Some(base_color),
            perceptual_roughness: 0.5,
            ..default()
        },
    );
    spawn_object(
        world,
        "pyramid without normals".into(),
        &pyramid,
        &pyramid_material,
        at(MISSING_ATTRIBUTES, left - Vec3::Y * 0.85).with_rotation(Quat::from_rotation_y(0.4)),
    );
    spawn_object(
        world,
        "cube without UVs".into(),
        &no_uv_cube,
        &textured_without_uvs,
        at(MISSING_ATTRIBUTES, right).with_rotation(Quat::from_rotation_y(0.5)),
    );

    // Instancing: 100 copies of one mesh with one material, and 20 with another.
    let small_cube = add_mesh(world, Cuboid::new(0.5, 0.5, 0.5));
    let orange = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.9, 0.45, 0.1),
            perceptual_roughness: 0.5,
            ..default()
        },
    );
    let teal = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.1, 0.6, 0.6),
            perceptual_roughness: 0.3,
            metallic: 0.3,
            ..default()
        },
    );
    for i in 0..120 {
        let (x, z) = ((i % 12) as f32 - 5.5, (i / 12) as f32 - 4.5);
        let material = if i % 6 == 0 { &teal } else { &orange };
        spawn_object(
            world,
            format!("instance {i}"),
            &small_cube,
            material,
            at(INSTANCING, Vec3::new(x * 0.85, 0.25, z * 0.85))
                .with_rotation(Quat::from_rotation_y(i as f32 * 0.37)),
        );
    }
}

// ------------------------------------------------------------------------------------------
// Scene 2: lights, ambient and exposure.

/// Stage indices of [`LIGHTS`].
pub mod light_stage {
    pub const POINT: usize = 0;
    pub const SPOT: usize = 1;
    pub const DIRECTIONAL: usize = 2;
}

/// Point lights (lumens, range, radius), spot lights (cone angles), coloured directional
/// lights (lux), the global ambient light and a per-camera override, and camera exposure.
pub const LIGHTS: FidelityScene = FidelityScene {
    name: "lights",
    spawn: spawn_lights,
    cases: light_cases,
};

fn light_cases() -> Vec<FidelityCase> {
    use light_stage::*;
    let mut ambient_override = FidelityCamera::stage(DIRECTIONAL);
    ambient_override.ambient = Some(AmbientLight {
        color: Color::srgb(0.4, 0.6, 1.0),
        brightness: 1_500.0,
        ..default()
    });
    let mut bright_exposure = FidelityCamera::stage(POINT);
    bright_exposure.exposure = Exposure { ev100: 8.5 };
    let mut dark_exposure = FidelityCamera::stage(DIRECTIONAL);
    dark_exposure.exposure = Exposure { ev100: 11.0 };
    vec![
        FidelityCase::single("point_lights", FidelityCamera::stage(POINT)),
        FidelityCase::single("spot_lights", FidelityCamera::stage(SPOT)),
        FidelityCase::single(
            "directional_and_global_ambient",
            FidelityCamera::stage(DIRECTIONAL),
        ),
        FidelityCase::single("ambient_override", ambient_override),
        FidelityCase::single("exposure_ev100_8_5", bright_exposure),
        FidelityCase::single("exposure_ev100_11", dark_exposure),
    ]
}

/// Spawns the light stages (no cameras).
pub fn spawn_lights(world: &mut World) {
    use light_stage::*;
    world.insert_resource(GlobalAmbientLight {
        color: Color::srgb(1.0, 0.85, 0.7),
        brightness: 300.0,
        ..default()
    });
    // Two coloured directional lights (lux) light every stage.
    spawn_sun(
        world,
        2_500.0,
        Color::srgb(1.0, 0.7, 0.5),
        Vec3::new(4.0, 6.0, 3.0),
    );
    world.spawn((
        Name::new("blue fill"),
        DirectionalLight {
            illuminance: 900.0,
            color: Color::srgb(0.4, 0.6, 1.0),
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(-5.0, 3.0, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));

    let ground = add_mesh(world, Plane3d::default().mesh().size(14.0, 14.0));
    let sphere = add_mesh(world, Sphere::new(0.7).mesh().uv(48, 24));
    let grey = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.5, 0.5, 0.5),
            perceptual_roughness: 0.8,
            ..default()
        },
    );
    let materials = [
        (Color::srgb(0.8, 0.8, 0.8), 0.15, 0.0),
        (Color::srgb(0.9, 0.6, 0.3), 0.3, 1.0),
        (Color::srgb(0.2, 0.5, 0.9), 0.6, 0.0),
    ]
    .map(|(base_color, roughness, metallic)| {
        add_pbr_material(world, base_color, roughness, metallic)
    });
    for stage in [POINT, SPOT, DIRECTIONAL] {
        let origin = stage_origin(stage);
        spawn_object(
            world,
            format!("stage {stage} ground"),
            &ground,
            &grey,
            Transform::from_translation(origin),
        );
        for (i, material) in materials.iter().enumerate() {
            spawn_object(
                world,
                format!("stage {stage} sphere {i}"),
                &sphere,
                material,
                Transform::from_translation(origin + Vec3::new(-1.8 + 1.8 * i as f32, 0.7, 0.0)),
            );
        }
    }

    // Point lights: a small-range coloured one, a sphere light (radius), a big one.
    let origin = stage_origin(POINT);
    for (name, light, position) in [
        (
            "point: sphere light, radius 0.4",
            point_light(300_000.0, 12.0, 0.4, Color::WHITE),
            Vec3::new(1.5, 2.5, 2.0),
        ),
        (
            "point: red, range 3",
            point_light(150_000.0, 3.0, 0.0, Color::srgb(1.0, 0.2, 0.1)),
            Vec3::new(-2.5, 1.0, 1.2),
        ),
        (
            "point: green, radius 0.1, range 6",
            point_light(80_000.0, 6.0, 0.1, Color::srgb(0.2, 1.0, 0.3)),
            Vec3::new(0.0, 0.4, 1.6),
        ),
    ] {
        world.spawn((
            Name::new(name),
            light,
            Transform::from_translation(origin + position),
        ));
    }

    // Spot lights: soft and narrow cones, coloured.
    let origin = stage_origin(SPOT);
    for (name, light, position, target) in [
        (
            "spot: soft white cone",
            SpotLight {
                intensity: 600_000.0,
                range: 15.0,
                inner_angle: 0.0,
                outer_angle: 0.55,
                shadow_maps_enabled: false,
                ..default()
            },
            Vec3::new(-2.0, 4.0, 1.5),
            Vec3::new(-1.6, 0.0, 0.0),
        ),
        (
            "spot: narrow orange cone",
            SpotLight {
                intensity: 400_000.0,
                range: 12.0,
                radius: 0.1,
                color: Color::srgb(1.0, 0.5, 0.1),
                inner_angle: 0.25,
                outer_angle: 0.4,
                shadow_maps_enabled: false,
                ..default()
            },
            Vec3::new(2.0, 3.5, 2.0),
            Vec3::new(1.5, 0.0, 0.5),
        ),
        (
            "spot: wide magenta cone from the side",
            SpotLight {
                intensity: 300_000.0,
                range: 8.0,
                color: Color::srgb(0.9, 0.2, 0.9),
                inner_angle: 0.5,
                outer_angle: 0.9,
                shadow_maps_enabled: false,
                ..default()
            },
            Vec3::new(0.0, 1.0, 4.0),
            Vec3::new(0.0, 0.7, 0.0),
        ),
    ] {
        world.spawn((
            Name::new(name),
            light,
            Transform::from_translation(origin + position).looking_at(origin + target, Vec3::Y),
        ));
    }
}

// ------------------------------------------------------------------------------------------
// Scene 3: camera settings (tone mapping, dithering, projection, viewports).

/// Every `Tonemapping`, `DebandDither` off, an orthographic projection, a camera viewport over
/// part of the target and a picture-in-picture second camera, on the lit-spheres scene plus an
/// emissive cube bright enough to reach the tone mappers' shoulders.
pub const CAMERA_SETTINGS: FidelityScene = FidelityScene {
    name: "camera_settings",
    spawn: spawn_camera_settings,
    cases: camera_setting_cases,
};

/// Every tone mapping operator, with the test-facing name.
pub const TONEMAPPINGS: [(&str, Tonemapping); 9] = [
    ("tonemapping_tony_mc_mapface", Tonemapping::TonyMcMapface),
    ("tonemapping_aces_fitted", Tonemapping::AcesFitted),
    ("tonemapping_reinhard", Tonemapping::Reinhard),
    (
        "tonemapping_reinhard_luminance",
        Tonemapping::ReinhardLuminance,
    ),
    ("tonemapping_agx", Tonemapping::AgX),
    ("tonemapping_none", Tonemapping::None),
    (
        "tonemapping_somewhat_boring",
        Tonemapping::SomewhatBoringDisplayTransform,
    ),
    ("tonemapping_blender_filmic", Tonemapping::BlenderFilmic),
    (
        "tonemapping_khronos_pbr_neutral",
        Tonemapping::KhronosPbrNeutral,
    ),
];

fn reference() -> FidelityCamera {
    let mut camera = FidelityCamera::looking(Vec3::ZERO, Vec3::NEG_Z);
    camera.transform = super::reference_camera_transform();
    camera
}

/// The viewport of the viewport cases: the upper right part of an [`IMAGE_SIZE`] target.
pub fn inset_viewport() -> Viewport {
    Viewport {
        physical_position: UVec2::new(IMAGE_SIZE.x / 2 + 8, IMAGE_SIZE.y / 8),
        physical_size: UVec2::new(IMAGE_SIZE.x * 5 / 12, IMAGE_SIZE.y * 5 / 9),
        ..default()
    }
}

fn camera_setting_cases() -> Vec<FidelityCase> {
    let mut cases: Vec<FidelityCase> = TONEMAPPINGS
        .iter()
        .map(|&(name, tonemapping)| {
            let mut camera = reference();
            camera.tonemapping = tonemapping;
            // Dithering is compared on its own below: here it would hide small differences.
            camera.dither = DebandDither::Disabled;
            FidelityCase::single(name, camera)
        })
        .collect();
    cases.push(FidelityCase::single("deband_dither_on", reference()));
    let mut orthographic = reference();
    orthographic.projection = Projection::Orthographic(OrthographicProjection {
        scaling_mode: bevy::camera::ScalingMode::FixedVertical {
            viewport_height: 6.0,
        },
        ..OrthographicProjection::default_3d()
    });
    cases.push(FidelityCase::single("orthographic", orthographic));
    // Picture in picture: a full-target camera, then a second one (order 1) over a viewport.
    let mut inset = FidelityCamera::looking(Vec3::new(-6.0, 2.0, 3.0), Vec3::new(0.0, 1.0, 0.0));
    inset.camera.order = 1;
    inset.camera.viewport = Some(inset_viewport());
    inset.camera.clear_color = ClearColorConfig::Custom(Color::srgb(0.25, 0.1, 0.1));
    inset.tonemapping = Tonemapping::AcesFitted;
    cases.push(FidelityCase {
        name: "viewport_picture_in_picture",
        cameras: vec![reference(), inset.clone()],
    });
    // A lone camera over part of its target.
    let mut lone = inset;
    lone.camera.order = 0;
    cases.push(FidelityCase::single("viewport_single_camera", lone));
    cases
}

/// Spawns the camera-settings scene (no cameras).
pub fn spawn_camera_settings(world: &mut World) {
    super::spawn_lit_spheres(world);
    let cube = add_mesh(world, Cuboid::new(0.8, 0.8, 0.8));
    let hot = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.2, 0.2, 0.2),
            emissive: LinearRgba::rgb(12.0, 6.0, 1.6),
            ..default()
        },
    );
    spawn_object(
        world,
        "hot emissive cube".into(),
        &cube,
        &hot,
        Transform::from_xyz(1.6, 0.4, 2.4).with_rotation(Quat::from_rotation_y(0.3)),
    );
    world.spawn((
        Name::new("bright blue point light"),
        point_light(1_500_000.0, 8.0, 0.2, Color::srgb(0.3, 0.5, 1.0)),
        Transform::from_xyz(2.5, 2.2, 1.5),
    ));
}

// ------------------------------------------------------------------------------------------
// Scene 4: many lights.

/// 256 small coloured point lights (range 1.6 m) over a field of 144 instanced cubes and a
/// ground, all in view.
pub const MANY_LIGHTS: FidelityScene = FidelityScene {
    name: "many_lights",
    spawn: spawn_many_lights,
    cases: many_light_cases,
};

/// Point lights in [`MANY_LIGHTS`].
pub const MANY_LIGHT_COUNT: usize = 256;

fn many_light_cases() -> Vec<FidelityCase> {
    vec![FidelityCase::single(
        "many_point_lights",
        FidelityCamera::looking(Vec3::new(0.0, 14.0, 12.0), Vec3::new(0.0, 0.0, 0.5)),
    )]
}

/// Spawns the many-lights scene (no cameras).
pub fn spawn_many_lights(world: &mut World) {
    world.insert_resource(GlobalAmbientLight {
        brightness: 40.0,
        ..default()
    });
    let ground = add_mesh(world, Plane3d::default().mesh().size(24.0, 24.0));
    let grey = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.6, 0.6, 0.6),
            perceptual_roughness: 0.7,
            ..default()
        },
    );
    spawn_object(world, "ground".into(), &ground, &grey, Transform::IDENTITY);
    let cube = add_mesh(world, Cuboid::new(0.45, 0.45, 0.45));
    let white = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.85, 0.85, 0.85),
            perceptual_roughness: 0.4,
            ..default()
        },
    );
    for i in 0..144 {
        let (x, z) = ((i % 12) as f32 - 5.5, (i / 12) as f32 - 5.5);
        spawn_object(
            world,
            format!("cube {i}"),
            &cube,
            &white,
            Transform::from_xyz(x * 1.3, 0.225, z * 1.3)
                .with_rotation(Quat::from_rotation_y(i as f32 * 0.61)),
        );
    }
    for i in 0..MANY_LIGHT_COUNT {
        let (x, z) = ((i % 16) as f32 - 7.5, (i / 16) as f32 - 7.5);
        let hue = (i as f32 * 47.0) % 360.0;
        let height = 0.35 + 0.3 * ((i * 7) % 5) as f32 / 4.0;
        world.spawn((
            Name::new(format!("small light {i}")),
            point_light(
                4_000.0 + 2_000.0 * (i % 3) as f32,
                1.6,
                0.0,
                Color::hsl(hue, 0.85, 0.55),
            ),
            Transform::from_xyz(
                x * 0.95 + 0.3 * (PI * i as f32 * 0.13).sin(),
                height,
                z * 0.95,
            ),
        ));
    }
}

/// Lights parented to emissive spheres scaled by the light's radius, as in Bevy's
/// `spherical_area_lights` example, whose first sphere (radius 0) gives its light a transform of
/// zero scale: a degenerate transform Bevy draws and the tile path must too.
pub const AREA_LIGHTS: FidelityScene = FidelityScene {
    name: "area_lights",
    spawn: spawn_area_lights,
    cases: area_light_cases,
};

fn area_light_cases() -> Vec<FidelityCase> {
    vec![FidelityCase::single(
        "spherical_area_lights",
        FidelityCamera::looking(Vec3::new(0.0, 3.0, 6.5), Vec3::new(0.0, 0.3, 0.0)),
    )]
}

/// Spawns the area-lights scene (no cameras).
pub fn spawn_area_lights(world: &mut World) {
    world.insert_resource(GlobalAmbientLight {
        brightness: 60.0,
        ..default()
    });
    let ground = add_mesh(world, Plane3d::default().mesh().size(12.0, 12.0));
    let grey = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.5, 0.5, 0.5),
            perceptual_roughness: 0.5,
            ..default()
        },
    );
    spawn_object(world, "ground".into(), &ground, &grey, Transform::IDENTITY);
    let sphere = add_mesh(world, Sphere::new(1.0).mesh().uv(24, 12));
    for i in 0..5 {
        let radius = i as f32 * 0.1;
        let color = Color::hsl(i as f32 * 72.0, 0.8, 0.5);
        let glow = add_material(
            world,
            StandardMaterial {
                base_color: Color::BLACK,
                emissive: LinearRgba::from(color) * 4.0,
                ..default()
            },
        );
        world.spawn((
            Name::new(format!("area light sphere {i}")),
            Mesh3d(sphere.clone()),
            MeshMaterial3d(glow),
            Transform::from_xyz(i as f32 * 1.2 - 2.4, 0.8, 0.0).with_scale(Vec3::splat(radius)),
            children![(
                Name::new(format!("area light {i}")),
                point_light(60_000.0, 4.0, radius, color),
            )],
        ));
    }
}

/// 256 point lights of varied ranges (0.4 to 5 m), scattered in front of, around and behind the
/// camera: some cross the near plane, some the frustum's sides, one contains the camera.
pub const CLUSTERED_256: FidelityScene = FidelityScene {
    name: "clustered_256",
    spawn: spawn_clustered_256,
    cases: clustered_cases,
};

/// [`CLUSTERED_256`] with 1024 lights.
pub const CLUSTERED_1024: FidelityScene = FidelityScene {
    name: "clustered_1024",
    spawn: spawn_clustered_1024,
    cases: clustered_cases,
};

/// Spot lights with narrow and wide cones, pointing into the view, out of it, and from outside
/// the frustum into it, over the same ground and objects.
pub const SPOT_CONES: FidelityScene = FidelityScene {
    name: "spot_cones",
    spawn: spawn_spot_cones,
    cases: spot_cone_cases,
};

/// Where the clustered scenes' light that contains the camera sits, and the camera in it.
const CAMERA_IN_LIGHT: Vec3 = Vec3::new(1.5, 2.2, 7.0);

fn clustered_cases() -> Vec<FidelityCase> {
    vec![
        FidelityCase::single(
            "clustered_overview",
            FidelityCamera::looking(Vec3::new(0.0, 5.5, 10.0), Vec3::new(0.0, 0.0, 0.0)),
        ),
        FidelityCase::single(
            "clustered_camera_inside_a_light",
            FidelityCamera::looking(CAMERA_IN_LIGHT, Vec3::new(-1.0, 0.3, 0.0)),
        ),
    ]
}

/// A deterministic value in [0, 1) for light `i`, channel `k` (no random crate in examples).
fn hash01(i: usize, k: usize) -> f32 {
    let x = (i as u32).wrapping_mul(0x9E37_79B9) ^ (k as u32).wrapping_mul(0x85EB_CA6B);
    let x = (x ^ (x >> 15)).wrapping_mul(0x2C1B_3C6D);
    let x = (x ^ (x >> 12)).wrapping_mul(0x297A_2D39);
    (x ^ (x >> 15)) as f32 / 4_294_967_296.0
}

/// The ground and objects the clustered and spot scenes light.
fn spawn_cluster_stage(world: &mut World, ambient: f32) {
    world.insert_resource(GlobalAmbientLight {
        brightness: ambient,
        ..default()
    });
    let ground = add_mesh(world, Plane3d::default().mesh().size(30.0, 30.0));
    let grey = add_material(
        world,
        StandardMaterial {
            base_color: Color::srgb(0.55, 0.55, 0.55),
            perceptual_roughness: 0.75,
            ..default()
        },
    );
    spawn_object(world, "ground".into(), &ground, &grey, Transform::IDENTITY);
    let sphere = add_mesh(world, Sphere::new(0.4).mesh().uv(24, 12));
    let cube = add_mesh(world, Cuboid::new(0.7, 0.7, 0.7));
    let materials = [
        (Color::srgb(0.85, 0.85, 0.85), 0.35, 0.0),
        (Color::srgb(0.9, 0.65, 0.35), 0.3, 1.0),
        (Color::srgb(0.3, 0.55, 0.9), 0.6, 0.0),
    ]
    .map(|(base_color, roughness, metallic)| {
        add_pbr_material(world, base_color, roughness, metallic)
    });
    for i in 0..64 {
        let (x, z) = ((i % 8) as f32 - 3.5, (i / 8) as f32 - 3.5);
        let (mesh, y) = if i % 2 == 0 {
            (&sphere, 0.4)
        } else {
            (&cube, 0.35)
        };
        spawn_object(
            world,
            format!("object {i}"),
            mesh,
            &materials[i % 3],
            Transform::from_xyz(x * 1.6, y, z * 1.6)
                .with_rotation(Quat::from_rotation_y(i as f32 * 0.7)),
        );
    }
}

fn spawn_clustered_256(world: &mut World) {
    spawn_clustered(world, 256);
}

fn spawn_clustered_1024(world: &mut World) {
    spawn_clustered(world, 1024);
}

/// `count` point lights over a 24 x 24 m area from the ground up to above the camera, ranges
/// 0.4-5 m, intensity scaled so the sum stays about the same at any count; plus one light
/// around [`CAMERA_IN_LIGHT`].
fn spawn_clustered(world: &mut World, count: usize) {
    spawn_cluster_stage(world, 30.0);
    let scale = 256.0 / count as f32;
    for i in 0..count {
        let position = Vec3::new(
            -12.0 + 24.0 * hash01(i, 0),
            0.2 + 6.5 * hash01(i, 1) * hash01(i, 1),
            -12.0 + 24.0 * hash01(i, 2),
        );
        let range = 0.4 + 4.6 * hash01(i, 3) * hash01(i, 3);
        world.spawn((
            Name::new(format!("clustered light {i}")),
            point_light(
                scale * 1_500.0 * range * range,
                range,
                0.05 * hash01(i, 4),
                Color::hsl(360.0 * hash01(i, 5), 0.8, 0.6),
            ),
            Transform::from_translation(position),
        ));
    }
    world.spawn((
        Name::new("light around the camera"),
        point_light(30_000.0, 4.0, 0.0, Color::srgb(1.0, 0.9, 0.8)),
        Transform::from_translation(CAMERA_IN_LIGHT + Vec3::new(0.3, -0.4, -0.5)),
    ));
}

fn spot_cone_cases() -> Vec<FidelityCase> {
    vec![FidelityCase::single(
        "spot_cones",
        FidelityCamera::looking(Vec3::new(0.0, 6.0, 11.0), Vec3::new(0.0, 0.0, 0.0)),
    )]
}

/// 96 spot lights: outer angles from 3 degrees to almost 90, pointing down into the view, away
/// from the camera, towards it, and in from beside and behind the frustum.
fn spawn_spot_cones(world: &mut World) {
    spawn_cluster_stage(world, 20.0);
    for i in 0..96 {
        let position = Vec3::new(
            -14.0 + 28.0 * hash01(i, 0),
            0.5 + 5.0 * hash01(i, 1),
            -10.0 + 26.0 * hash01(i, 2),
        );
        // Half point at a spot on the ground in view, half anywhere (many out of view).
        let target = if i % 2 == 0 {
            Vec3::new(-6.0 + 12.0 * hash01(i, 3), 0.0, -6.0 + 12.0 * hash01(i, 4))
        } else {
            position + Vec3::new(hash01(i, 3) - 0.5, hash01(i, 5) - 0.8, hash01(i, 4) - 0.5)
        };
        let outer = 0.05 + 1.5 * hash01(i, 6) * hash01(i, 6);
        let transform = if (target - position).cross(Vec3::Y).length_squared() > 1e-6 {
            Transform::from_translation(position).looking_at(target, Vec3::Y)
        } else {
            Transform::from_translation(position).looking_at(target, Vec3::X)
        };
        world.spawn((
            Name::new(format!("spot {i}")),
            SpotLight {
                intensity: 40_000.0 + 80_000.0 * hash01(i, 7),
                range: 3.0 + 9.0 * hash01(i, 8),
                color: Color::hsl(360.0 * hash01(i, 9), 0.7, 0.6),
                outer_angle: outer,
                inner_angle: outer * hash01(i, 10),
                shadow_maps_enabled: false,
                ..default()
            },
            transform,
        ));
    }
}

// ------------------------------------------------------------------------------------------
// Shadows: Bevy's own shadow maps, sampled by the tile path.

/// A sun with 4 cascades over a 300 m ground with casters from 2 m to 120 m away: cameras near
/// the ground looking down the row (every cascade and the blends between them in one image),
/// moved along it, from above, and with each filter; a caster without shadow (`NotShadowCaster`),
/// a receiver that takes none (`NotShadowReceiver`), an alpha-masked caster (holes in its
/// shadow), and biases other than the default.
pub const SHADOWS_DIRECTIONAL: FidelityScene = FidelityScene {
    name: "shadows_directional",
    spawn: spawn_shadows_directional,
    cases: shadows_directional_cases,
};

/// A room lit by a shadowed point light (cube maps) and a shadowed spot light, with casters
/// between them and the walls, seen with each filter.
pub const SHADOWS_POINT_SPOT: FidelityScene = FidelityScene {
    name: "shadows_point_spot",
    spawn: spawn_shadows_point_spot,
    cases: shadows_point_spot_cases,
};

fn with_filter(mut camera: FidelityCamera, filter: ShadowFilteringMethod) -> FidelityCamera {
    camera.shadow_filter = filter;
    camera
}

fn shadows_directional_cases() -> Vec<FidelityCase> {
    let down_the_row =
        || FidelityCamera::looking(Vec3::new(3.0, 2.2, 6.0), Vec3::new(0.0, 0.5, -30.0));
    vec![
        FidelityCase::single("sun_cascades_gaussian", down_the_row()),
        FidelityCase::single(
            "sun_cascades_hardware_2x2",
            with_filter(down_the_row(), ShadowFilteringMethod::Hardware2x2),
        ),
        FidelityCase::single(
            "sun_cascades_temporal",
            with_filter(down_the_row(), ShadowFilteringMethod::Temporal),
        ),
        // Further down the row: the near casters now fall in later cascades.
        FidelityCase::single(
            "sun_camera_moved",
            FidelityCamera::looking(Vec3::new(-2.5, 3.0, -26.0), Vec3::new(0.0, 0.5, -70.0)),
        ),
        FidelityCase::single(
            "sun_from_above",
            FidelityCamera::looking(Vec3::new(0.0, 9.0, 4.0), Vec3::new(0.0, 0.0, -3.0)),
        ),
    ]
}

fn spawn_shadows_directional(world: &mut World) {
    world.insert_resource(GlobalAmbientLight {
        brightness: 80.0,
        ..default()
    });
    world.spawn((
        Name::new("shadow sun"),
        DirectionalLight {
            illuminance: 6_000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        CascadeShadowConfigBuilder {
            num_cascades: 4,
            first_cascade_far_bound: 6.0,
            maximum_distance: 120.0,
            ..default()
        }
        .build(),
        Transform::from_xyz(8.0, 12.0, 6.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let ground = add_mesh(world, Plane3d::default().mesh().size(300.0, 300.0));
    let grey = add_pbr_material(world, Color::srgb(0.6, 0.6, 0.6), 0.8, 0.0);
    spawn_object(
        world,
        "long ground".into(),
        &ground,
        &grey,
        Transform::IDENTITY,
    );
    let cube = add_mesh(world, Cuboid::new(1.0, 2.0, 1.0));
    let sphere = add_mesh(world, Sphere::new(0.6).mesh().uv(24, 12));
    let materials = [
        add_pbr_material(world, Color::srgb(0.85, 0.4, 0.3), 0.5, 0.0),
        add_pbr_material(world, Color::srgb(0.3, 0.6, 0.85), 0.4, 0.0),
    ];
    // Casters along -z from 2 m to 120 m, alternating sides: every cascade holds some.
    for i in 0..24 {
        let z = -2.0 - 5.0 * i as f32;
        let x = if i % 2 == 0 { -1.6 } else { 1.6 };
        let (mesh, y) = if i % 3 == 0 {
            (&sphere, 0.6)
        } else {
            (&cube, 1.0)
        };
        spawn_object(
            world,
            format!("caster {i}"),
            mesh,
            &materials[i % 2],
            Transform::from_xyz(x, y, z).with_rotation(Quat::from_rotation_y(i as f32 * 0.5)),
        );
    }
    // A cube that casts no shadow, beside one that does.
    world.spawn((
        Name::new("not a shadow caster"),
        Mesh3d(cube.clone()),
        MeshMaterial3d(materials[0].clone()),
        Transform::from_xyz(4.0, 1.0, -4.0),
        NotShadowCaster,
    ));
    // A slab that receives no shadow, in the shadow of the caster beside it.
    let slab = add_mesh(world, Cuboid::new(3.0, 0.1, 3.0));
    world.spawn((
        Name::new("not a shadow receiver"),
        Mesh3d(slab),
        MeshMaterial3d(grey.clone()),
        Transform::from_xyz(-4.5, 0.05, -3.0),
        NotShadowReceiver,
    ));
    spawn_object(
        world,
        "caster over the slab".into(),
        &cube,
        &materials[1],
        Transform::from_xyz(-3.5, 1.0, -2.0),
    );
    // An alpha-masked quad: its holes let light through.
    let holes = add_image(world, alpha_holes_image());
    let masked = add_material(
        world,
        StandardMaterial {
            base_color_texture: Some(holes),
            alpha_mode: AlphaMode::Mask(0.5),
            double_sided: true,
            cull_mode: None,
            ..default()
        },
    );
    let panel = add_mesh(world, quad(2.5, 1.0));
    spawn_object(
        world,
        "alpha-masked caster".into(),
        &panel,
        &masked,
        Transform::from_xyz(1.5, 1.6, 0.5).with_rotation(Quat::from_rotation_y(0.4)),
    );
}

fn shadows_point_spot_cases() -> Vec<FidelityCase> {
    let room = || FidelityCamera::looking(Vec3::new(0.0, 3.5, 7.5), Vec3::new(0.0, 1.0, 0.0));
    vec![
        FidelityCase::single("room_gaussian", room()),
        FidelityCase::single(
            "room_hardware_2x2",
            with_filter(room(), ShadowFilteringMethod::Hardware2x2),
        ),
        FidelityCase::single(
            "room_temporal",
            with_filter(room(), ShadowFilteringMethod::Temporal),
        ),
        FidelityCase::single(
            "room_from_the_side",
            FidelityCamera::looking(Vec3::new(-5.5, 2.5, 2.0), Vec3::new(1.0, 0.8, -1.0)),
        ),
    ]
}

fn spawn_shadows_point_spot(world: &mut World) {
    world.insert_resource(GlobalAmbientLight {
        brightness: 40.0,
        ..default()
    });
    let white = add_pbr_material(world, Color::srgb(0.8, 0.8, 0.78), 0.7, 0.0);
    let floor = add_mesh(world, Plane3d::default().mesh().size(12.0, 12.0));
    spawn_object(world, "floor".into(), &floor, &white, Transform::IDENTITY);
    let wall = add_mesh(world, Cuboid::new(12.0, 5.0, 0.2));
    for (name, transform) in [
        ("back wall", Transform::from_xyz(0.0, 2.5, -6.0)),
        (
            "left wall",
            Transform::from_xyz(-6.0, 2.5, 0.0).with_rotation(Quat::from_rotation_y(FRAC_PI_2)),
        ),
        (
            "right wall",
            Transform::from_xyz(6.0, 2.5, 0.0).with_rotation(Quat::from_rotation_y(FRAC_PI_2)),
        ),
    ] {
        spawn_object(world, name.into(), &wall, &white, transform);
    }
    let cube = add_mesh(world, Cuboid::new(0.8, 0.8, 0.8));
    let sphere = add_mesh(world, Sphere::new(0.5).mesh().uv(24, 12));
    let pillar = add_mesh(world, Cuboid::new(0.4, 2.6, 0.4));
    let colors = [
        add_pbr_material(world, Color::srgb(0.9, 0.5, 0.3), 0.5, 0.0),
        add_pbr_material(world, Color::srgb(0.35, 0.7, 0.4), 0.45, 0.0),
        add_pbr_material(world, Color::srgb(0.4, 0.5, 0.9), 0.3, 0.0),
    ];
    for (i, (mesh, position)) in [
        (&cube, Vec3::new(-1.8, 0.4, -1.0)),
        (&sphere, Vec3::new(1.5, 0.5, -0.5)),
        (&pillar, Vec3::new(0.2, 1.3, -3.0)),
        (&cube, Vec3::new(2.8, 0.4, -3.5)),
        (&sphere, Vec3::new(-3.2, 1.4, -3.8)),
    ]
    .into_iter()
    .enumerate()
    {
        spawn_object(
            world,
            format!("room object {i}"),
            mesh,
            &colors[i % 3],
            Transform::from_translation(position)
                .with_rotation(Quat::from_rotation_y(i as f32 * 0.6)),
        );
    }
    world.spawn((
        Name::new("shadowed point light"),
        PointLight {
            intensity: 400_000.0,
            range: 20.0,
            color: Color::srgb(1.0, 0.92, 0.8),
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(0.3, 3.2, 0.8),
    ));
    world.spawn((
        Name::new("shadowed spot light"),
        SpotLight {
            intensity: 900_000.0,
            range: 20.0,
            color: Color::srgb(0.7, 0.8, 1.0),
            outer_angle: 0.7,
            inner_angle: 0.4,
            shadow_maps_enabled: true,
            // Not Bevy's defaults (0.02 / 1.8): the biases must reach the shader.
            shadow_depth_bias: 0.05,
            shadow_normal_bias: 1.0,
            ..default()
        },
        Transform::from_xyz(-4.5, 4.0, 3.5).looking_at(Vec3::new(-0.5, 0.0, -2.5), Vec3::Y),
    ));
}

/// Every fidelity scene.
pub const ALL: [FidelityScene; 10] = [
    MATERIALS,
    LIGHTS,
    CAMERA_SETTINGS,
    MANY_LIGHTS,
    AREA_LIGHTS,
    CLUSTERED_256,
    CLUSTERED_1024,
    SPOT_CONES,
    SHADOWS_DIRECTIONAL,
    SHADOWS_POINT_SPOT,
];
