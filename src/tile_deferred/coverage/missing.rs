//! What a tile camera sees that the tile path cannot draw, found each frame in the main world.
//!
//! `find_missing` lists, on each tile camera ([`TileMissing`]):
//! - meshes in its view the tile path does not draw, or draws without part of what Bevy draws:
//!   a custom `Material` or `ExtendedMaterial` and material features the G-buffer has no room
//!   for (clearcoat, anisotropy, parallax, specular tint, transmission) where Bevy cannot draw
//!   those meshes over the tile frame instead ([`TileMaterialsOverTile`] lists those it draws
//!   there), morph targets whose displacements the main world no longer holds (a mesh
//!   kept only in the render world), lightmaps the tile path cannot light as Bevy does
//!   (`lightmap_missing`);
//! - clustered decals reaching its view, and reflection probes (`LightProbe` +
//!   `EnvironmentMapLight`) in it, and its irradiance volumes where Bevy would sample them from
//!   more than one texture;
//! - camera components whose effect it does not render (post-processing, fog, sky,
//!   environment light, colour grading beyond what the tonemap subpass applies);
//! - bevy_ui nodes drawn over it (Bevy's UI pass runs inside `Core3d`, which a tile camera does
//!   not run), unless the tile path draws them (feature `ui`, [`UiDrawnOverTileCameras`]);
//! - gizmos: `Transparent3d` draws another render plugin queued for it on its last rendered
//!   frame, counted in the render world (see `overlays/gizmos.rs`).
//!
//! Types of crates this crate does not compile (bevy_post_process, bevy_anti_alias, bevy_ui
//! without `ui`, bevy_egui without `inspector`) are found by type name in the World's component
//! registry, never through reflection: a game built without Bevy's `reflect_auto_register`
//! registers none of them in its type registry, and must lose nothing silently either.
//!
//! The router (`route.rs`, which imports this file) then falls an `Auto` camera back to Bevy's
//! `Core3d` while any of it is in view ([`tiers::apply_missing`](crate::tiers::apply_missing)),
//! or, with a forced tier, keeps rendering and logs each once; the inspector lists them.
//!
//! The tables below are the tile path's feature coverage: remove a row when the tile path
//! learns to draw it.

use super::light_clustering::{LightClusteringForMaterials, TileKeepGpuLightClustering};
use crate::tiers::TierDecision;
use crate::tile_deferred::{
    camera::{TileDeferred, TileMaterialsOverTile},
    overlays::gizmos::{FOREIGN_TRANSPARENT_DRAWS, ForeignTransparentDraws},
    scene::materials::{TextureShape, texture_unsampleable_as_2d},
};
use bevy::{
    camera::{Hdr, RenderTarget, visibility::VisibleEntities},
    core_pipeline::{
        oit::OrderIndependentTransparencySettings,
        prepass::{DeferredPrepass, DepthPrepass, MotionVectorPrepass, NormalPrepass},
    },
    ecs::{
        archetype::Archetypes,
        component::{ComponentId, Components},
        world::EntityRef,
    },
    light::{
        Atmosphere, AtmosphereEnvironmentMapLight, ClusteredDecal, EnvironmentMapLight,
        GeneratedEnvironmentMapLight, GlobalAmbientLight, IrradianceVolume, LightProbe,
        VolumetricFog,
        cluster::{ClusterVisibilityClass, GlobalClusterSettings},
    },
    mesh::{MeshAccessError, morph::MeshMorphWeights},
    pbr::{
        ContactShadows, Lightmap, ScreenSpaceAmbientOcclusion, ScreenSpaceReflections,
        wireframe::{NoWireframe, Wireframe, WireframeConfig},
    },
    platform::collections::{HashMap, HashSet},
    prelude::*,
    render::{renderer::RenderDevice, view::ColorGrading},
};
use std::{alloc::Layout, any::TypeId, fmt};

/// One thing a tile camera sees that the tile path does not draw.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub struct MissingFeature {
    /// The entity: a mesh in view, or the camera itself for a camera component.
    pub entity: Entity,
    /// Its `Name`, if it has one.
    pub name: Option<String>,
    /// What the tile path does not draw, e.g. "custom Material (not a StandardMaterial)".
    pub what: String,
}

impl fmt::Display for MissingFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{} (\"{name}\"): {}", self.entity, self.what),
            None => write!(f, "{}: {}", self.entity, self.what),
        }
    }
}

/// On a tile camera (main world, updated every frame after visibility): what it sees that the
/// tile path cannot draw. Empty when nothing is missing.
#[derive(Component, Clone, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Clone, Debug, Default, PartialEq)]
pub struct TileMissing {
    /// What is missing this frame: meshes in view (in entity order), lights and decals, then
    /// the camera's own components and UI (with the camera as the entity).
    pub items: Vec<MissingFeature>,
    /// Frames in a row with nothing missing since the camera fell back for it (the router's
    /// hysteresis state, [`tiers::missing_hysteresis`](crate::tiers::missing_hysteresis)).
    pub(crate) frames_clear: u32,
}

impl TileMissing {
    /// One line naming the kinds of what is missing and how many of each, for the tier reason
    /// (None when nothing is). Entities are not named: the reason stays the same while the same
    /// kinds are in view, so the decision is logged when it changes, not every frame.
    pub fn summary(&self) -> Option<String> {
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        for item in &self.items {
            match kinds.iter_mut().find(|(what, _)| *what == item.what) {
                Some((_, count)) => *count += 1,
                None => kinds.push((&item.what, 1)),
            }
        }
        (!kinds.is_empty()).then(|| {
            kinds
                .iter()
                .map(|(what, count)| format!("{what} x{count}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

/// Camera components whose effect the tile path does not render, named by type: the crates
/// this crate compiles against.
fn typed_camera_features() -> [(TypeId, &'static str); 7] {
    [
        (
            TypeId::of::<ScreenSpaceAmbientOcclusion>(),
            "post-processing: ScreenSpaceAmbientOcclusion",
        ),
        (
            TypeId::of::<ScreenSpaceReflections>(),
            "post-processing: ScreenSpaceReflections",
        ),
        (TypeId::of::<ContactShadows>(), "shadows: ContactShadows"),
        (TypeId::of::<VolumetricFog>(), "fog: VolumetricFog"),
        (TypeId::of::<Atmosphere>(), "sky: Atmosphere"),
        (
            TypeId::of::<AtmosphereEnvironmentMapLight>(),
            "environment light: AtmosphereEnvironmentMapLight",
        ),
        (
            TypeId::of::<OrderIndependentTransparencySettings>(),
            "transparency: OrderIndependentTransparencySettings",
        ),
    ]
}

/// Camera components of Bevy crates this crate does not compile against (`bevy_post_process`,
/// `bevy_anti_alias`): (crate, type ident). They are found by type name in the World's
/// component registry, which names every component type whatever Bevy features the game
/// picked (this crate turns on bevy_utils' `debug`, which keeps the names), with or without
/// reflection: an app without `reflect_auto_register` registers none of them in its type
/// registry (issue 32).
const NAMED_CAMERA_FEATURES: &[(&str, &str)] = &[
    ("bevy_post_process", "Bloom"),
    ("bevy_post_process", "DepthOfField"),
    ("bevy_post_process", "MotionBlur"),
    ("bevy_post_process", "ChromaticAberration"),
    ("bevy_post_process", "Vignette"),
    ("bevy_post_process", "LensDistortion"),
    ("bevy_post_process", "AutoExposure"),
    ("bevy_anti_alias", "TemporalAntiAliasing"),
    ("bevy_anti_alias", "ContrastAdaptiveSharpening"),
    ("bevy_anti_alias", "Fxaa"),
    ("bevy_anti_alias", "Smaa"),
    ("bevy_anti_alias", "Dlss"),
];

/// [`NAMED_CAMERA_FEATURES`] less the effects Bevy runs after the tile pass in this app
/// (`overlays::post_process`, feature `anti_alias`).
fn named_camera_features_not_drawn(
    drawn: Option<&PostProcessingAfterTile>,
) -> Vec<(&'static str, &'static str)> {
    let drawn = drawn.map_or(&[][..], |drawn| &drawn.0[..]);
    NAMED_CAMERA_FEATURES
        .iter()
        .filter(|(_, ident)| !drawn.contains(ident))
        .copied()
        .collect()
}

/// Whether `type_name` (what `core::any::type_name` says, and the component registry keeps)
/// names the type `ident` of the crate `krate`, in whichever of its modules and with whatever
/// generic parameters (`bevy_anti_alias::dlss::Dlss<..>`).
fn names_type(type_name: &str, krate: &str, ident: &str) -> bool {
    let path = type_name
        .split_once('<')
        .map_or(type_name, |(path, _)| path);
    path.strip_prefix(krate)
        .is_some_and(|rest| rest.starts_with("::"))
        && path.rsplit("::").next() == Some(ident)
}

/// The registered component named `ident` of crate `krate` ([`names_type`]), if the app has
/// registered it (a component is registered when a plugin registers it or an entity first
/// gets it).
fn component_named(components: &Components, krate: &str, ident: &str) -> Option<ComponentId> {
    components
        .iter_registered()
        .find(|info| names_type(&info.name(), krate, ident))
        .map(|info| info.id())
}

/// The camera components the tile path does not render that the app has registered, each with
/// what [`find_missing`] reports: the typed ones, and those of `named` ([`names_type`]).
fn camera_features(components: &Components, named: &[(&str, &str)]) -> Vec<(ComponentId, String)> {
    let typed = typed_camera_features()
        .into_iter()
        .filter_map(|(type_id, what)| Some((components.get_id(type_id)?, what.to_string())));
    let named = components.iter_registered().filter_map(|info| {
        let name = info.name();
        let (_, ident) = named
            .iter()
            .find(|(krate, ident)| names_type(&name, krate, ident))?;
        Some((info.id(), format!("post-processing: {ident}")))
    });
    typed.chain(named).collect()
}

/// What [`find_missing`] reports for a camera whose target image has a format the tile path
/// cannot write (the render world would fail the frame; an `Auto` camera falls back first).
pub(crate) fn unwritable_target(format: bevy::render::render_resource::TextureFormat) -> String {
    format!(
        "camera target: a {format:?} image (the tile path writes Rgba8, Bgra8, Rgb10a2 and \
         Rgba16Float targets)"
    )
}

/// What [`find_missing`] reports for an HDR camera whose `ColorGrading` Bevy applies beyond its
/// global exposure and post-saturation (`overlays::post_process::bevy_grades_hdr_camera`) in an
/// app without Bevy's `TonemappingPlugin`: the tonemap subpass applies those two only, as
/// Bevy's in-shader tone mapping of an LDR camera does, and with the plugin Bevy's own tone
/// mapping grades the frame after the tile pass.
const COLOR_GRADING: &str = "colour grading on an HDR camera (hue, white balance or the \
     shadows, midtones and highlights sections) without Bevy's TonemappingPlugin to apply it";

/// bevy_ui's per-node target camera (`bevy_ui::ComputedUiTargetCamera { camera: Entity }`, on
/// every UI node, computed by bevy_ui from `UiTargetCamera` or the default UI camera): the crate
/// and ident it is found by in the component registry, as this crate does not compile bevy_ui
/// without its `ui` feature.
const UI_TARGET_CAMERA: (&str, &str) = ("bevy_ui", "ComputedUiTargetCamera");

/// What [`find_missing`] reports for bevy_ui nodes targeting a tile camera.
pub(crate) const UI_OVER_TILE_CAMERA: &str =
    "UI: bevy_ui nodes target this camera (Bevy's UI pass runs in Core3d)";

/// bevy_ui's node target camera in the component registry, if the app has bevy_ui: the
/// component named [`UI_TARGET_CAMERA`] whose layout is an `Entity`'s, which
/// [`ui_node_camera`] reads.
fn ui_target_camera(components: &Components) -> Option<ComponentId> {
    components
        .iter_registered()
        .find(|info| {
            names_type(&info.name(), UI_TARGET_CAMERA.0, UI_TARGET_CAMERA.1)
                && info.layout() == Layout::new::<Entity>()
        })
        .map(|info| info.id())
}

/// The camera a UI node targets: the `Entity` of its `ComputedUiTargetCamera` (`component`,
/// found by [`ui_target_camera`]); none for bevy_ui's placeholder (no camera).
fn ui_node_camera(component: ComponentId, node: EntityRef) -> Option<Entity> {
    let value = node.get_by_id(component).ok()?;
    // SAFETY: `component` is bevy_ui's `ComputedUiTargetCamera` (found by its type name, and the
    // `bevy = "=0.19.1"` pin fixes bevy_ui at 0.19.1), a struct whose only field is an `Entity`.
    // `ui_target_camera` checked that the component's layout is `Entity`'s: a field as large as
    // its struct sits at offset 0 and fills it, so the pointer (to the node's component, aligned
    // for it, so for `Entity`) points at an initialised `Entity`. The reference lives no longer
    // than `node`'s borrow of the World, which keeps the component in place.
    let camera = unsafe { value.deref::<Entity>() };
    Some(*camera).filter(|camera| *camera != Entity::PLACEHOLDER)
}

pub use crate::tile_deferred::overlays::{EguiDrawnOverTileCameras, UiDrawnOverTileCameras};
use crate::tile_deferred::overlays::{
    PostProcessingAfterTile,
    post_process::{bevy_grades_hdr_camera, tone_mapped_after_tile_pass, tone_maps_draws_over_hdr},
};

/// bevy_egui's per-camera context (crate, ident), by type name where this crate does not
/// compile bevy_egui (without the `inspector` feature).
const EGUI_CONTEXT: (&str, &str) = ("bevy_egui", "EguiContext");

/// What [`find_missing`] reports for an egui context on a tile camera where the tile path does
/// not draw egui.
pub(crate) const EGUI_OVER_TILE_CAMERA: &str = "UI: an egui context draws over this camera \
     (bevy_egui's pass runs in Core3d; TileInspectorPlugin, feature `inspector`, draws egui on \
     tile cameras)";

/// The component id of bevy_egui's context, if the app has registered it.
fn egui_context_component(components: &Components) -> Option<ComponentId> {
    #[cfg(feature = "inspector")]
    if let Some(id) = components.get_id(TypeId::of::<bevy_egui::EguiContext>()) {
        return Some(id);
    }
    component_named(components, EGUI_CONTEXT.0, EGUI_CONTEXT.1)
}

/// What [`find_missing`] found in the component registry, looked up again whenever a component
/// type has been registered since (a plugin added, or an entity given a new kind of component:
/// a game may add `Bloom` to its camera long after start-up).
pub(crate) struct Lookups {
    /// How many component types were registered when these were looked up.
    registered: usize,
    camera_features: Vec<(ComponentId, String)>,
    /// bevy_ui's node target camera ([`ui_target_camera`]).
    ui_target_camera: Option<ComponentId>,
    /// bevy_egui's context.
    egui_context: Option<ComponentId>,
}

/// What of a `StandardMaterial` the tile path does not draw, if anything: the first lighting
/// feature it has no room for (the mesh would be drawn without it). Every `AlphaMode` is drawn:
/// transparent modes by the transparent pass. Bevy draws such meshes over the tile frame where
/// it can ([`standard_material_drawn_by_bevy`]).
pub(crate) fn standard_material_missing(material: &StandardMaterial) -> Option<&'static str> {
    if material.clearcoat > 0.0 {
        Some("StandardMaterial clearcoat")
    } else if material.anisotropy_strength > 0.0 {
        Some("StandardMaterial anisotropy")
    } else if has_transmission(material) {
        Some("StandardMaterial transmission")
    } else if material.depth_map.is_some() {
        Some("StandardMaterial parallax depth map")
    } else if LinearRgba::from(material.specular_tint) != LinearRgba::WHITE {
        Some("StandardMaterial specular tint")
    } else {
        None
    }
}

/// What of a `StandardMaterial` the tile path does not draw, if Bevy's own pipeline can draw its
/// meshes over the tile frame in the tile path's place (as it draws custom materials): every
/// feature of [`standard_material_missing`] (transmission in Bevy's transmissive pass, from a
/// copy of the frame in the main texture).
pub(crate) fn standard_material_drawn_by_bevy(material: &StandardMaterial) -> Option<&'static str> {
    standard_material_missing(material)
}

/// Whether Bevy draws a `StandardMaterial`'s meshes in its transmissive pass.
fn has_transmission(material: &StandardMaterial) -> bool {
    material.specular_transmission > 0.0 || material.diffuse_transmission > 0.0
}

/// Whether a `StandardMaterial` is transparent (blended by the tile path's transparent pass,
/// and by Bevy in `Transparent3d` unless it has transmission).
fn is_transparent(material: &StandardMaterial) -> bool {
    !matches!(
        material.alpha_mode,
        AlphaMode::Opaque | AlphaMode::Mask(_) | AlphaMode::AlphaToCoverage
    )
}

/// Why the tile path cannot sample one of a `StandardMaterial`'s textures that it draws (base
/// colour, emissive, metallic-roughness, normal map, occlusion), if it cannot
/// ([`texture_unsampleable_as_2d`]): the mesh would be drawn without it. Images not loaded yet
/// are not drawn by Bevy either.
pub(crate) fn material_textures_missing(
    material: &StandardMaterial,
    images: &Assets<Image>,
) -> Option<&'static str> {
    [
        &material.base_color_texture,
        &material.emissive_texture,
        &material.metallic_roughness_texture,
        &material.normal_map_texture,
        &material.occlusion_texture,
    ]
    .into_iter()
    .flatten()
    .filter_map(|handle| images.get(handle))
    .find_map(image_unsampleable_as_2d)
}

/// [`texture_unsampleable_as_2d`] of a main-world image.
fn image_unsampleable_as_2d(image: &Image) -> Option<&'static str> {
    texture_unsampleable_as_2d(TextureShape::of(
        &image.texture_descriptor,
        image.texture_view_descriptor.as_ref(),
    ))
}

/// What decides whether a lightmapped mesh is drawn as Bevy draws it ([`lightmap_missing`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LightmapContext {
    /// The mesh has `Mesh::ATTRIBUTE_UV_1` (`None`: not known here, the mesh asset is not in the
    /// main world).
    pub has_uv1: Option<bool>,
    /// Its material is transparent (drawn by the transparent pass).
    pub transparent: bool,
    /// The camera has an environment map light (`EnvironmentMapLight` or
    /// `GeneratedEnvironmentMapLight`).
    pub environment_map: bool,
    /// The camera's ambient light (its `AmbientLight`, else `GlobalAmbientLight`) has
    /// `affects_lightmapped_meshes = false`.
    pub ambient_excluded: bool,
    /// A point, spot or directional light the camera sees has
    /// `affects_lightmapped_mesh_diffuse = false`.
    pub light_excluded: bool,
}

/// Why the tile path does not draw a lightmapped mesh as Bevy does, if it does not. The G-buffer
/// subpass adds the lightmap's light (lightmap.glsl); the lighting subpass cannot tell a
/// lightmapped pixel from another (the G-buffer has no flag for it), so whatever Bevy leaves out
/// of lightmapped meshes only falls back.
pub(crate) fn lightmap_missing(context: LightmapContext) -> Option<&'static str> {
    if context.has_uv1 == Some(false) {
        // bevy_pbr's fragment shader reads `uv_b` under LIGHTMAP: without UV_1 its pipeline
        // fails to build and Bevy does not draw the mesh either.
        Some("lightmap on a mesh without Mesh::ATTRIBUTE_UV_1 (Bevy's pipeline for it fails too)")
    } else if context.transparent {
        Some("lightmap on a transparent material (the transparent pass does not sample it)")
    } else if context.environment_map {
        // pbr_functions.wgsl: a lightmap is found diffuse indirect light, and
        // environment_map.wgsl then leaves out the map's diffuse light.
        Some(
            "lightmap under the camera's environment map (Bevy leaves the map's diffuse light \
             out of lightmapped meshes; the G-buffer has no lightmapped flag)",
        )
    } else if context.ambient_excluded {
        Some(
            "lightmap with AmbientLight::affects_lightmapped_meshes = false (the G-buffer has no \
             lightmapped flag)",
        )
    } else if context.light_excluded {
        Some(
            "lightmap with a light's affects_lightmapped_mesh_diffuse = false (the G-buffer has \
             no lightmapped flag)",
        )
    } else {
        None
    }
}

/// What [`find_missing`] says of a mesh of a custom `Material` (or `ExtendedMaterial`), which
/// the tile path does not draw itself.
pub(crate) const CUSTOM_MATERIAL: &str = "custom Material (not a StandardMaterial)";

/// What [`find_missing`] says of a mesh whose material the tile path does not draw (`what`: a
/// custom material, or [`standard_material_drawn_by_bevy`]) on a camera over whose tile frame
/// Bevy cannot draw it either ([`materials_over_tile_undrawable`]: `why`).
pub(crate) fn undrawable_over_tile(what: &str, why: &str) -> String {
    format!("{what}, which Bevy cannot draw over this tile camera: {why}")
}

/// Why the tile path does not draw a mesh in view, if it does not. `standard` is what
/// [`standard_material_missing`] says of its `StandardMaterial` (None: not a `StandardMaterial`).
/// Skinned meshes and morph targets are drawn (issue 15); `morphs_unreachable`: the mesh has
/// morph weights but its displacements were moved to the render world (`asset_usage` without
/// `MAIN_WORLD`), where the tile path cannot read them (they are in Bevy's mesh slabs).
/// `lightmap`: what [`lightmap_missing`] says of its `Lightmap`, if it has one.
pub(crate) fn undrawable_mesh(
    standard: Option<Option<&'static str>>,
    morphs_unreachable: bool,
    lightmap: Option<&'static str>,
) -> Option<&'static str> {
    match standard {
        None => Some(CUSTOM_MATERIAL),
        Some(Some(what)) => Some(what),
        Some(None) if morphs_unreachable => Some(
            "morph targets of a mesh kept only in the render world (the tile path reads the \
             displacements from the main world)",
        ),
        Some(None) => lightmap,
    }
}

type TileCameras<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static VisibleEntities,
        Option<&'static TileMissing>,
        Option<&'static Camera>,
        Option<&'static TierDecision>,
    ),
    With<TileDeferred>,
>;

/// What the tile path does not draw of a clusterable object in a camera's clusters (shadows of
/// point, spot and directional lights are drawn since issue 13).
const CLUSTERED_DECAL: &str = "clustered decal";

/// What [`find_missing`] reports for a reflection probe (`LightProbe` + `EnvironmentMapLight`)
/// in a camera's view: the tile path lights with the camera's own `EnvironmentMapLight` only.
/// Bevy draws reflection probes only where texture binding arrays are usable
/// (`MULTIPLE_LIGHT_PROBES_IN_ARRAY`), and only there are they reported: elsewhere (Mesa
/// lavapipe 22 and other devices without descriptor indexing) Bevy ignores them too, and the
/// tile camera draws Bevy's picture.
pub(crate) const REFLECTION_PROBE: &str = "reflection probe (LightProbe + EnvironmentMapLight; the tile path lights with the camera's \
     own environment map only)";

/// What [`find_missing`] reports for each irradiance volume (`LightProbe` + `IrradianceVolume`)
/// in a camera's view where Bevy samples each volume from its own voxels (texture binding
/// arrays usable) and the volumes in view have more than one texture: the tile path samples
/// every volume from the nearest one's voxels, as Bevy does without binding arrays.
pub(crate) const IRRADIANCE_VOLUME: &str = "irradiance volume with voxels of its own beside other \
     volumes' (Bevy samples each from its own with binding arrays; the tile path samples one \
     texture)";

/// Whether the tile path draws the irradiance volumes in a view as Bevy does: Bevy samples
/// them all from the nearest one's voxels where binding arrays are not usable (so does the tile
/// path), and each from its own where they are: the same picture while they share one texture.
pub(crate) fn irradiance_volumes_drawn(
    binding_arrays: bool,
    voxels_in_view: &[AssetId<Image>],
) -> bool {
    !binding_arrays || voxels_in_view.iter().all(|id| *id == voxels_in_view[0])
}

/// What the tile path does not draw of a clusterable object in a camera's view: decals and
/// light probes (`decal`, `probe`, `reflection`, `irradiance`: the entity has `ClusteredDecal`,
/// `LightProbe`, `EnvironmentMapLight`, an `IrradianceVolume` the tile path does not draw as
/// Bevy does ([`irradiance_volumes_drawn`]); a probe with both is both to Bevy). Lights are
/// drawn: nothing.
pub(crate) fn undrawable_clusterable(
    decal: bool,
    probe: bool,
    reflection: bool,
    irradiance: bool,
) -> impl Iterator<Item = &'static str> {
    [
        (decal, CLUSTERED_DECAL),
        (probe && reflection, REFLECTION_PROBE),
        (probe && irradiance, IRRADIANCE_VOLUME),
    ]
    .into_iter()
    .filter_map(|(is, what)| is.then_some(what))
}

type ViewedClusterables<'w, 's> = Query<
    'w,
    's,
    (
        Option<&'static Name>,
        Has<ClusteredDecal>,
        Option<&'static PointLight>,
        Option<&'static SpotLight>,
        Has<LightProbe>,
        Has<EnvironmentMapLight>,
        Option<&'static IrradianceVolume>,
    ),
>;

/// The assets [`find_missing`] reads: materials, meshes and the images they sample.
type ViewedAssets<'w> = (
    Res<'w, Assets<StandardMaterial>>,
    Res<'w, Assets<Mesh>>,
    Res<'w, Assets<Image>>,
);

/// What decides whether lightmapped meshes are drawn as Bevy draws them, besides the camera
/// and its clusters: the directional lights and the global ambient light.
type LightmapSources<'w, 's> = (
    Query<'w, 's, &'static DirectionalLight>,
    Option<Res<'w, GlobalAmbientLight>>,
);

/// Bevy's wireframes: their settings (a resource only where `WireframePlugin` is added: without
/// it Bevy draws none either) and each mesh's markers.
type Wireframes<'w, 's> = (
    Option<Res<'w, WireframeConfig>>,
    Query<'w, 's, (Option<&'static Name>, Has<Wireframe>, Has<NoWireframe>), With<Mesh3d>>,
);

/// What [`find_missing`] reports for a mesh in view Bevy would draw a wireframe over, on a
/// camera whose draws over the tile frame the tile path cannot draw (`overlays::gizmos`).
pub(crate) const WIREFRAME: &str = "wireframe (Bevy's WireframePlugin draws its lines in its own phase, which this camera \
     cannot draw over the tile frame)";

/// The meshes of `in_view` that Bevy draws a wireframe over: those with `Wireframe`, and with
/// `WireframeConfig::global` every one without `NoWireframe`. Listed only where the render world
/// found the camera's draws over the tile frame undrawable (`undrawable`: its reason); elsewhere
/// they are drawn after the tile pass, as gizmos are.
fn wireframe_items<'a>(
    in_view: impl Iterator<Item = &'a Entity>,
    (config, meshes): &Wireframes,
    undrawable: Option<&str>,
) -> Vec<MissingFeature> {
    let (Some(config), Some(_)) = (config, undrawable) else {
        return Vec::new();
    };
    let mut items: Vec<MissingFeature> = in_view
        .filter_map(|&entity| {
            let (name, wireframe, no_wireframe) = meshes.get(entity).ok()?;
            (wireframe || (config.global && !no_wireframe)).then(|| MissingFeature {
                entity,
                name: name.map(ToString::to_string),
                what: WIREFRAME.to_string(),
            })
        })
        .collect();
    // In entity order, as the camera's list is compared with the last frame's.
    items.sort_unstable_by_key(|item| item.entity);
    items
}

type ViewedMeshes<'w, 's> = Query<
    'w,
    's,
    (
        &'static Mesh3d,
        Option<&'static Name>,
        Option<&'static MeshMaterial3d<StandardMaterial>>,
        Has<MeshMorphWeights>,
        Option<&'static Lightmap>,
    ),
    With<Mesh3d>,
>;

/// The meshes whose kind alone may make them undrawable: those without a `StandardMaterial`
/// (a custom material), and the morphed or lightmapped ones. Both queries filter by
/// archetype only, so asking whether any exist costs nothing per mesh.
type MeshKindsToCheck<'w, 's> = (
    Query<'w, 's, (), (With<Mesh3d>, Without<MeshMaterial3d<StandardMaterial>>)>,
    Query<'w, 's, (), (With<Mesh3d>, Or<(With<MeshMorphWeights>, With<Lightmap>)>)>,
);

/// Whether any mesh in the world may be one the tile path cannot draw: one of the kinds of
/// [`MeshKindsToCheck`], or one whose `StandardMaterial` is undrawable. Where none can be,
/// [`mesh_items`] would find nothing, and its walk over every mesh in view (1.6 ms a frame at
/// 100,000 meshes on lavapipe's host, the largest part of `find_missing`) is skipped. A scene
/// has far fewer materials than meshes, so the materials are what is walked here.
fn any_mesh_may_be_missing(
    (custom, morphed_or_lightmapped): &MeshKindsToCheck,
    materials: &Assets<StandardMaterial>,
    images: &Assets<Image>,
) -> bool {
    !custom.is_empty()
        || !morphed_or_lightmapped.is_empty()
        || materials
            .iter()
            .any(|(_, material)| material_missing(material, images).is_some())
}

/// What the tile path does not draw of a loaded `StandardMaterial`: a lighting feature the
/// G-buffer lacks, or a texture it cannot sample.
fn material_missing(material: &StandardMaterial, images: &Assets<Image>) -> Option<&'static str> {
    standard_material_missing(material).or_else(|| material_textures_missing(material, images))
}

/// What [`mesh_items`] finds of a loaded `StandardMaterial`, once per material per frame.
#[derive(Clone, Copy, Default)]
struct MaterialCheck {
    /// What the tile path does not draw of it ([`material_missing`]).
    missing: Option<&'static str>,
    /// What of it the tile path does not draw and Bevy's pipeline draws over the tile frame
    /// instead ([`standard_material_drawn_by_bevy`]).
    drawn_by_bevy: Option<&'static str>,
    /// Its alpha mode blends ([`is_transparent`]).
    transparent: bool,
    /// Bevy draws its meshes in its transmissive pass ([`has_transmission`]).
    transmission: bool,
}

impl MaterialCheck {
    /// Bevy draws its meshes in `Transparent3d`: blended, without transmission (which has a
    /// phase of its own).
    fn blended_by_bevy(&self) -> bool {
        self.transparent && !self.transmission
    }
}

/// What the tile path draws after its pass in this app, so [`find_missing`] does not list it:
/// bevy_ui, egui, and Bevy's post-processing effects.
type DrawnAfterTilePass<'w> = (
    Option<Res<'w, UiDrawnOverTileCameras>>,
    Option<Res<'w, EguiDrawnOverTileCameras>>,
    Option<Res<'w, PostProcessingAfterTile>>,
);

/// What decides whether Bevy can draw custom materials over a camera's tile frame, besides the
/// camera: the render world's reasons of last frame, Bevy's light clustering, and the device.
type OverTileInputs<'w> = (
    Option<Res<'w, ForeignTransparentDraws>>,
    Option<Res<'w, GlobalClusterSettings>>,
    Option<Res<'w, crate::device::DeviceProfile>>,
);

/// Lists on every tile camera what it sees this frame that the tile path cannot draw
/// ([`TileMissing`]); runs after visibility, before the router.
pub(crate) fn find_missing(
    mut commands: Commands,
    cameras: TileCameras,
    meshes: ViewedMeshes,
    mesh_kinds: MeshKindsToCheck,
    clusterables: ViewedClusterables,
    lightmap_sources: LightmapSources,
    wireframes: Wireframes,
    entities: Query<EntityRef, Without<bevy::ecs::resource::IsResource>>,
    assets: ViewedAssets,
    components: &Components,
    archetypes: &Archetypes,
    (ui_drawn, egui_drawn, post_processing): DrawnAfterTilePass,
    (foreign_draws, cluster_settings, profile): OverTileInputs,
    device: Option<Res<RenderDevice>>,
    (mut clustering, keep_gpu_clustering): (
        Option<ResMut<LightClusteringForMaterials>>,
        Option<Res<TileKeepGpuLightClustering>>,
    ),
    mut lookups: Local<Option<Lookups>>,
) {
    let binding_arrays = device
        .as_deref()
        .is_some_and(crate::tile_deferred::lighting::environment::bevy_uses_binding_arrays);
    if cameras.is_empty() {
        return;
    }
    if lookups
        .as_ref()
        .is_none_or(|lookups| lookups.registered != components.len())
    {
        *lookups = Some(Lookups {
            registered: components.len(),
            camera_features: camera_features(
                components,
                &named_camera_features_not_drawn(post_processing.as_deref()),
            ),
            ui_target_camera: ui_target_camera(components),
            egui_context: egui_context_component(components),
        });
    }
    let lookups = lookups.as_ref().expect("looked up above");
    // UI nodes and egui contexts are looked for only where the tile path does not draw them.
    let ui_target_camera = lookups.ui_target_camera.filter(|_| ui_drawn.is_none());
    let egui_context = lookups.egui_context.filter(|_| egui_drawn.is_none());
    let ui_cameras = visible_ui_nodes_by_camera(ui_target_camera, archetypes, &entities);
    // Bevy's default on desktop GPUs with compute shaders; on Android it clusters on the CPU.
    let gpu_clustering = cluster_settings.is_some_and(|settings| settings.gpu_clustering.is_some());
    let meshes_to_check = any_mesh_may_be_missing(&mesh_kinds, &assets.0, &assets.2);
    for (camera, visible, previous, camera_settings, tier) in &cameras {
        let Ok(camera_ref) = entities.get(camera) else {
            continue;
        };
        let mut clustered: Vec<Entity> = visible
            .iter(TypeId::of::<ClusterVisibilityClass>())
            .copied()
            .collect();
        clustered.sort_unstable();
        let undrawable = foreign_draws.as_ref().and_then(|d| d.undrawable(camera));
        let foreign = undrawable.map(|undrawable| undrawable.why);
        // What the render world would find of the device, the tier and MSAA, known here
        // already: so that a camera that cannot draw custom materials over its tile frame lists
        // them from their first frame in view, on whichever schedule it renders (the render
        // world sees them only on the tile schedule).
        let samples = camera_ref
            .get::<bevy::render::view::Msaa>()
            .map_or(1, |msaa| msaa.samples());
        let draws_over_output = camera_settings.is_some_and(|settings| {
            crate::tile_deferred::overlays::gizmos::draws_over_output(&settings.clear_color)
        });
        let device_or_tier = crate::tile_deferred::overlays::gizmos::undrawable_reason(
            samples,
            draws_over_output,
            tier,
            profile.as_deref(),
        );
        // Gizmos and wireframes: the custom materials are listed mesh by mesh.
        let foreign_other = undrawable
            .filter(|undrawable| undrawable.other_draws)
            .map(|undrawable| undrawable.why);
        let lights_in_clusters = meshes_to_check
            && clustered.iter().any(|&entity| {
                clusterables
                    .get(entity)
                    .is_ok_and(|(_, _, point, spot, ..)| point.is_some() || spot.is_some())
            });
        let (mut items, over_tile) = if meshes_to_check {
            // Unless the app keeps Bevy's GPU clustering, Bevy assigns them on the CPU this very
            // frame (`light_clustering` switches it after this, before Bevy assigns).
            let switched_to_cpu = clustering.is_some() && keep_gpu_clustering.is_none();
            let lights_unassigned = gpu_clustering && lights_in_clusters && !switched_to_cpu;
            mesh_items(
                &camera_ref,
                visible,
                &clustered,
                &meshes,
                &clusterables,
                &lightmap_sources,
                &assets,
                materials_over_tile_undrawable(
                    // Bevy tone maps what it draws with the scene: drawable where Bevy's tone
                    // mapping can run after them (`overlays::post_process`), which needs
                    // Bevy's `TonemappingPlugin` (bloom and grading need it too).
                    camera_ref.contains::<Hdr>()
                        && !post_processing
                            .as_deref()
                            .is_some_and(tone_maps_draws_over_hdr),
                    camera_ref.contains::<DepthPrepass>()
                        || camera_ref.contains::<NormalPrepass>()
                        || camera_ref.contains::<MotionVectorPrepass>()
                        || camera_ref.contains::<DeferredPrepass>(),
                    foreign.or(device_or_tier),
                    lights_unassigned,
                ),
            )
        } else {
            (Vec::new(), TileMaterialsOverTile::default())
        };
        // Bevy's pipelines light the meshes it draws over the frame from Bevy's clusters.
        if let Some(clustering) = clustering.as_deref_mut() {
            clustering.needed |= lights_in_clusters
                && (!over_tile.meshes.is_empty()
                    || items
                        .iter()
                        .any(|item| item.what.ends_with(GPU_CLUSTERED_LIGHTS)));
        }
        let previous_over_tile = camera_ref.get::<TileMaterialsOverTile>();
        if over_tile.meshes.is_empty() {
            if previous_over_tile.is_some() {
                commands.entity(camera).remove::<TileMaterialsOverTile>();
            }
        } else if previous_over_tile != Some(&over_tile) {
            commands.entity(camera).insert(over_tile);
        }
        items.extend(clusterable_items(&clustered, &clusterables, binding_arrays));
        let ui_over_camera = ui_cameras.contains_key(&camera);
        items.extend(wireframe_items(
            visible.iter(TypeId::of::<Mesh3d>()),
            &wireframes,
            foreign,
        ));
        let camera_items = CameraItems {
            lookups,
            images: &assets.2,
            ui_over_camera,
            egui_over_camera: egui_context.is_some_and(|id| camera_ref.contains_id(id)),
            foreign_draws: foreign_other,
            tone_mapped_by_bevy: tone_mapped_by_bevy(&camera_ref, post_processing.as_deref()),
        };
        items.extend(camera_items.of(camera, &camera_ref));
        if previous.is_none_or(|previous| previous.items != items) {
            let frames_clear = previous.map_or(0, |previous| previous.frames_clear);
            commands.entity(camera).insert(TileMissing {
                items,
                frames_clear,
            });
        }
    }
}

/// The meshes in the camera's view the tile path cannot draw as Bevy does (their material,
/// morph targets or lightmap), and those of a custom material that Bevy draws over the tile
/// frame, in entity order. `materials_over_tile`: why Bevy cannot draw custom materials over
/// this camera's tile frame, if it cannot ([`materials_over_tile_undrawable`]); their meshes
/// are then listed.
fn mesh_items(
    camera_ref: &EntityRef,
    visible: &VisibleEntities,
    clustered: &[Entity],
    meshes: &ViewedMeshes,
    clusterables: &ViewedClusterables,
    (directional_lights, global_ambient): &LightmapSources,
    (materials, mesh_assets, images): &ViewedAssets,
    materials_over_tile: Option<&'static str>,
) -> (Vec<MissingFeature>, TileMaterialsOverTile) {
    let mut items = Vec::new();
    let mut over_tile = Vec::new();
    let mut transmissive = false;
    // The blended `StandardMaterial` meshes in view, which Bevy draws too where it draws any.
    let mut blended = Vec::new();
    // What Bevy leaves out of lightmapped meshes in this view, where it differs from its
    // defaults (every directional light counts: they light every view of their layers).
    let excludes_point_or_spot = |entity: &Entity| {
        clusterables
            .get(*entity)
            .is_ok_and(|(_, _, point, spot, ..)| {
                point.is_some_and(|p| !p.affects_lightmapped_mesh_diffuse)
                    || spot.is_some_and(|s| !s.affects_lightmapped_mesh_diffuse)
            })
    };
    let lightmap_view = LightmapContext {
        environment_map: camera_ref.contains::<EnvironmentMapLight>()
            || camera_ref.contains::<GeneratedEnvironmentMapLight>(),
        ambient_excluded: camera_ref.get::<AmbientLight>().map_or_else(
            || {
                global_ambient
                    .as_ref()
                    .is_some_and(|a| !a.affects_lightmapped_meshes)
            },
            |a| !a.affects_lightmapped_meshes,
        ),
        light_excluded: directional_lights
            .iter()
            .any(|light| !light.affects_lightmapped_mesh_diffuse)
            || clustered.iter().any(excludes_point_or_spot),
        ..default()
    };
    // A scene has far fewer materials than meshes: each is checked once per frame.
    let mut material_checks: HashMap<AssetId<StandardMaterial>, MaterialCheck> = HashMap::default();
    for &entity in visible.iter(TypeId::of::<Mesh3d>()) {
        let Ok((mesh, name, standard, morphed, lightmapped)) = meshes.get(entity) else {
            continue;
        };
        let morphs_unreachable = morphed
            && mesh_assets.get(&mesh.0).is_some_and(|mesh| {
                matches!(
                    mesh.try_morph_targets(),
                    Err(MeshAccessError::ExtractedToRenderWorld)
                )
            });
        // A material not loaded yet is not drawn by Bevy either.
        let check = standard.map(|material| {
            *material_checks.entry(material.id()).or_insert_with(|| {
                materials
                    .get(&material.0)
                    .map_or_else(MaterialCheck::default, |material| MaterialCheck {
                        missing: material_missing(material, images),
                        drawn_by_bevy: standard_material_drawn_by_bevy(material),
                        transparent: is_transparent(material),
                        transmission: has_transmission(material),
                    })
            })
        });
        let standard = check.map(|check| check.missing);
        let lightmap = lightmapped.and_then(|lightmap| {
            let asset = mesh_assets.get(&mesh.0);
            let transparent = check.is_some_and(|check| check.transparent);
            lightmap_missing(LightmapContext {
                has_uv1: asset
                    .and_then(|mesh| mesh.try_contains_attribute(Mesh::ATTRIBUTE_UV_1).ok()),
                transparent,
                ..lightmap_view
            })
            .or_else(|| {
                images
                    .get(&lightmap.image)
                    .and_then(image_unsampleable_as_2d)
            })
        });
        // A custom material, or a StandardMaterial feature the G-buffer lacks: drawn by Bevy
        // over the tile frame where it can be (the whole mesh, as `Core3d` draws it).
        let drawn_by_bevy = match check {
            None => Some(CUSTOM_MATERIAL),
            Some(check) => check.drawn_by_bevy,
        };
        if let Some(what) = drawn_by_bevy {
            transmissive |=
                materials_over_tile.is_none() && check.is_some_and(|check| check.transmission);
            match materials_over_tile {
                None => over_tile.push(entity),
                Some(why) => items.push(MissingFeature {
                    entity,
                    name: name.map(ToString::to_string),
                    what: undrawable_over_tile(what, why),
                }),
            }
            continue;
        }
        if materials_over_tile.is_none() && check.is_some_and(|check| check.blended_by_bevy()) {
            blended.push(entity);
        }
        // `fog_enabled: false` is drawn: the G-buffer's no-fog bit (issue 15).
        if let Some(what) = undrawable_mesh(standard, morphs_unreachable, lightmap) {
            items.push(MissingFeature {
                entity,
                name: name.map(ToString::to_string),
                what: what.to_string(),
            });
        }
    }
    // What Bevy draws over the tile frame is drawn after the tile pass, so a blended mesh the
    // tile pass drew in front of one of those meshes would be covered by it. Where Bevy draws
    // meshes over this camera's tile frame, it draws the blended ones in view too, sorted with
    // its own, as `Core3d` orders them (and draws what the tile path would have missed of
    // them, a lightmap say).
    if !over_tile.is_empty() && !blended.is_empty() {
        let drawn_by_bevy: HashSet<Entity> = blended.iter().copied().collect();
        items.retain(|item| !drawn_by_bevy.contains(&item.entity));
        over_tile.extend(blended);
    }
    // In entity order, as the camera's list is compared with the last frame's.
    items.sort_unstable_by_key(|item| item.entity);
    over_tile.sort_unstable();
    (
        items,
        TileMaterialsOverTile {
            meshes: over_tile,
            transmissive,
        },
    )
}

/// Why Bevy cannot draw custom materials over an HDR camera's tile frame: Bevy tone maps what
/// it draws with the scene, and without its `TonemappingPlugin` it cannot after the tile pass.
const HDR_UNDRAWABLE: &str = "an HDR camera in an app without Bevy's TonemappingPlugin: Bevy \
     tone maps what it draws with the scene";

/// Why Bevy's material pipelines cannot draw a mesh the tile path does not draw (a custom
/// material, a `StandardMaterial` feature the G-buffer lacks) over a camera's tile frame, if
/// they cannot: `hdr`, the camera is HDR and Bevy's tone mapping cannot run after them (Bevy
/// tone maps what it draws with the scene, after its main pass; after the tile pass it does so
/// with its `TonemappingPlugin`, `overlays::post_process`); `prepasses`, the
/// camera has Bevy's depth, normal, motion-vector or deferred prepass, which `Core3d` renders before its main pass and the tile path does not;
/// `undrawable_over_tile`, why the render world found the camera's draws over
/// the tile frame undrawable last frame (`overlays::gizmos::undrawable_reason`: the tier, the
/// device, MSAA); `clustered_lights_unassigned`, point or spot lights are in view and Bevy
/// assigns them to clusters on the GPU, which it does only inside `Core3d`: a lit custom
/// material over a tile camera would not see them.
pub(crate) fn materials_over_tile_undrawable(
    hdr: bool,
    prepasses: bool,
    undrawable_over_tile: Option<&'static str>,
    clustered_lights_unassigned: bool,
) -> Option<&'static str> {
    if hdr {
        Some(HDR_UNDRAWABLE)
    } else if prepasses {
        Some(
            "the camera has Bevy's prepasses, which the tile path does not run and a custom \
             material may read (forward decals read the depth prepass)",
        )
    } else if let Some(why) = undrawable_over_tile {
        Some(why)
    } else {
        clustered_lights_unassigned.then_some(GPU_CLUSTERED_LIGHTS)
    }
}

/// Why Bevy cannot draw meshes over a tile camera's frame while it assigns lights to clusters
/// on the GPU: the app keeps that (`coverage::light_clustering` has Bevy assign them on the CPU
/// otherwise).
pub(crate) const GPU_CLUSTERED_LIGHTS: &str = "point or spot lights in view, which Bevy assigns \
     to clusters on the GPU only inside Core3d, and the app keeps Bevy's GPU clustering \
     (TileKeepGpuLightClustering; without it Bevy assigns them on the CPU, as on Android, and \
     they are drawn)";

/// The decals and light probes in the camera's clusters the tile path does not draw.
fn clusterable_items(
    clustered: &[Entity],
    clusterables: &ViewedClusterables,
    binding_arrays: bool,
) -> Vec<MissingFeature> {
    let mut items = Vec::new();
    // Decals and light probes in the camera's view (Bevy gathers a view's light probes
    // from the same list: `gather_light_probes`). A probe whose images are still loading is
    // listed too: Bevy skips it until they are uploaded, so an `Auto` camera may fall back
    // a few frames early, never late.
    let voxels_in_view: Vec<AssetId<Image>> = clustered
        .iter()
        .filter_map(|&entity| clusterables.get(entity).ok())
        .filter(|(_, _, _, _, probe, ..)| *probe)
        .filter_map(|(.., volume)| Some(volume?.voxels.id()))
        .collect();
    let volumes_drawn = irradiance_volumes_drawn(binding_arrays, &voxels_in_view);
    for &entity in clustered {
        let Ok((name, decal, _, _, probe, reflection, volume)) = clusterables.get(entity) else {
            continue;
        };
        let irradiance = volume.is_some() && !volumes_drawn;
        // A reflection probe changes Bevy's picture only where it samples them (binding
        // arrays usable); elsewhere Bevy ignores it, and so does the tile path.
        let reflection = reflection && binding_arrays;
        for what in undrawable_clusterable(decal, probe, reflection, irradiance) {
            items.push(MissingFeature {
                entity,
                name: name.map(ToString::to_string),
                what: what.to_string(),
            });
        }
    }
    items
}

/// What [`CameraItems::of`] reads besides the camera.
struct CameraItems<'a> {
    lookups: &'a Lookups,
    images: &'a Assets<Image>,
    /// Visible bevy_ui nodes target the camera (and the tile path does not draw them).
    ui_over_camera: bool,
    /// An egui context is on the camera (and the tile path does not draw egui).
    egui_over_camera: bool,
    /// Why another plugin's `Transparent3d` draws cannot be drawn over the tile frame.
    foreign_draws: Option<&'static str>,
    /// Bevy's own tone mapping runs on the camera's frame after the tile pass (after its bloom,
    /// or for its grade), and grades it as `Core3d` would: its `ColorGrading` is drawn.
    tone_mapped_by_bevy: bool,
}

/// Whether Bevy tone maps (and grades) the camera's frame after the tile pass: after its bloom
/// (feature `bloom`, with `BloomPlugin` in the app), or to grade an HDR camera
/// (`overlays::post_process`).
fn tone_mapped_by_bevy(camera: &EntityRef, drawn: Option<&PostProcessingAfterTile>) -> bool {
    drawn.is_some_and(|drawn| tone_mapped_after_tile_pass(camera, drawn))
}

impl CameraItems<'_> {
    /// What is on the camera itself that the tile path does not do: Bevy's camera features
    /// (post-processing and the like), colour grading, a target format it cannot write, UI
    /// and other plugins' draws over it.
    fn of(&self, camera: Entity, camera_ref: &EntityRef) -> Vec<MissingFeature> {
        let mut items = Vec::new();
        let camera_name = camera_ref.get::<Name>().map(ToString::to_string);
        let mut on_camera = |what: &str| {
            items.push(MissingFeature {
                entity: camera,
                name: camera_name.clone(),
                what: what.to_string(),
            });
        };
        for (component, what) in &self.lookups.camera_features {
            if camera_ref.contains_id(*component) {
                on_camera(what);
            }
        }
        if !self.tone_mapped_by_bevy
            && bevy_grades_hdr_camera(
                camera_ref.contains::<Hdr>(),
                camera_ref.get::<ColorGrading>(),
            )
        {
            on_camera(COLOR_GRADING);
        }
        if let Some(RenderTarget::Image(target)) = camera_ref.get::<RenderTarget>()
            && let Some(image) = self.images.get(&target.handle)
            && crate::vulkan::conv::frame_graph_format(image.texture_descriptor.format).is_none()
        {
            on_camera(&unwritable_target(image.texture_descriptor.format));
        }
        if self.ui_over_camera {
            on_camera(UI_OVER_TILE_CAMERA);
        }
        if self.egui_over_camera {
            on_camera(EGUI_OVER_TILE_CAMERA);
        }
        if let Some(why) = &self.foreign_draws {
            on_camera(&format!("{FOREIGN_TRANSPARENT_DRAWS}: {why}"));
        }
        items
    }
}

/// How many visible bevy_ui nodes target each camera (none without bevy_ui).
fn visible_ui_nodes_by_camera(
    ui_target_camera: Option<ComponentId>,
    archetypes: &Archetypes,
    entities: &Query<EntityRef, Without<bevy::ecs::resource::IsResource>>,
) -> HashMap<Entity, usize> {
    let mut by_camera = HashMap::default();
    let Some(component) = ui_target_camera else {
        return by_camera;
    };
    let nodes = archetypes
        .iter()
        .filter(|archetype| archetype.contains(component))
        .flat_map(|archetype| archetype.entities())
        .filter_map(|node| entities.get(node.id()).ok());
    for node in nodes {
        let visible = node.get::<InheritedVisibility>().is_some_and(|v| v.get());
        if let Some(camera) = ui_node_camera(component, node).filter(|_| visible) {
            *by_camera.entry(camera).or_default() += 1;
        }
    }
    by_camera
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::ecs::{
        component::{ComponentCloneBehavior, ComponentDescriptor, StorageType},
        ptr::OwningPtr,
    };

    #[test]
    fn what_the_tile_path_does_not_draw() {
        // StandardMaterials of every alpha mode are drawn (the transparent ones by the
        // transparent pass).
        assert_eq!(undrawable_mesh(Some(None), false, None), None);
        for mode in [
            AlphaMode::Opaque,
            AlphaMode::Mask(0.5),
            AlphaMode::AlphaToCoverage,
            AlphaMode::Blend,
            AlphaMode::Premultiplied,
            AlphaMode::Add,
            AlphaMode::Multiply,
        ] {
            let material = StandardMaterial {
                alpha_mode: mode,
                ..default()
            };
            assert_eq!(standard_material_missing(&material), None, "{mode:?}");
        }
        // Lighting features the G-buffer has no room for.
        for (material, what) in [
            (
                StandardMaterial {
                    clearcoat: 1.0,
                    ..default()
                },
                "clearcoat",
            ),
            (
                StandardMaterial {
                    anisotropy_strength: 0.5,
                    ..default()
                },
                "anisotropy",
            ),
            (
                StandardMaterial {
                    specular_transmission: 0.9,
                    ..default()
                },
                "transmission",
            ),
            (
                StandardMaterial {
                    diffuse_transmission: 0.5,
                    ..default()
                },
                "transmission",
            ),
            (
                StandardMaterial {
                    depth_map: Some(Handle::default()),
                    ..default()
                },
                "parallax",
            ),
            (
                StandardMaterial {
                    specular_tint: Color::srgb(1.0, 0.5, 0.5),
                    ..default()
                },
                "specular tint",
            ),
        ] {
            let missing = standard_material_missing(&material);
            assert!(missing.is_some_and(|m| m.contains(what)), "{missing:?}");
        }
        // Textures on the second UV channel are drawn (issue 15).
        let second_channel = StandardMaterial {
            base_color_texture: Some(Handle::default()),
            base_color_channel: bevy::mesh::UvChannel::Uv1,
            ..default()
        };
        assert_eq!(standard_material_missing(&second_channel), None);
        // The material is checked first: a custom material is missing whatever else it has.
        assert!(
            undrawable_mesh(None, true, Some("lightmap"))
                .unwrap()
                .contains("custom Material")
        );
        assert_eq!(
            undrawable_mesh(Some(Some("StandardMaterial clearcoat")), true, None),
            Some("StandardMaterial clearcoat")
        );
        // Skinned meshes and morph targets are drawn (issue 15), but for displacements the
        // main world no longer holds.
        assert_eq!(undrawable_mesh(Some(None), false, None), None);
        assert!(
            undrawable_mesh(Some(None), true, None)
                .unwrap()
                .contains("morph")
        );
    }

    /// Lightmaps are drawn (issue 15) under Bevy's defaults; what Bevy leaves out of
    /// lightmapped meshes beyond them, and a mesh Bevy cannot draw with its lightmap, are
    /// reported on the mesh.
    #[test]
    fn lightmaps_are_missing_only_off_bevys_defaults() {
        let drawn = LightmapContext {
            has_uv1: Some(true),
            ..default()
        };
        assert_eq!(lightmap_missing(drawn), None);
        // A mesh asset kept only in the render world: its attributes are not known here.
        assert_eq!(
            lightmap_missing(LightmapContext {
                has_uv1: None,
                ..drawn
            }),
            None
        );
        assert_eq!(
            undrawable_mesh(Some(None), false, lightmap_missing(drawn)),
            None
        );
        for (context, expected) in [
            (
                LightmapContext {
                    has_uv1: Some(false),
                    ..drawn
                },
                "ATTRIBUTE_UV_1",
            ),
            (
                LightmapContext {
                    transparent: true,
                    ..drawn
                },
                "transparent",
            ),
            (
                LightmapContext {
                    environment_map: true,
                    ..drawn
                },
                "environment map",
            ),
            (
                LightmapContext {
                    ambient_excluded: true,
                    ..drawn
                },
                "AmbientLight::affects_lightmapped_meshes",
            ),
            (
                LightmapContext {
                    light_excluded: true,
                    ..drawn
                },
                "affects_lightmapped_mesh_diffuse",
            ),
        ] {
            let what = lightmap_missing(context).unwrap();
            assert!(what.contains(expected), "{context:?}: {what}");
            assert_eq!(undrawable_mesh(Some(None), false, Some(what)), Some(what));
        }
    }

    #[test]
    fn the_summary_counts_kinds_without_naming_entities() {
        let item = |index: u32, what: &str| MissingFeature {
            entity: Entity::from_raw_u32(index).unwrap(),
            name: Some(format!("mesh {index}")),
            what: what.to_string(),
        };
        assert_eq!(TileMissing::default().summary(), None);
        let missing = TileMissing {
            items: vec![
                item(1, "custom Material (not a StandardMaterial)"),
                item(2, "transparent StandardMaterial"),
                item(3, "custom Material (not a StandardMaterial)"),
            ],
            frames_clear: 0,
        };
        let summary = missing.summary().unwrap();
        assert_eq!(
            summary,
            "custom Material (not a StandardMaterial) x2, transparent StandardMaterial x1"
        );
        assert!(!summary.contains("mesh 1"));
        // Each item names its entity and name for the log and the inspector.
        assert_eq!(
            missing.items[0].to_string(),
            format!(
                "{} (\"mesh 1\"): custom Material (not a StandardMaterial)",
                missing.items[0].entity
            )
        );
    }

    #[test]
    fn type_names_match_crate_and_ident_in_any_module() {
        assert!(names_type(
            "bevy_post_process::bloom::settings::Bloom",
            "bevy_post_process",
            "Bloom"
        ));
        assert!(names_type(
            "bevy_anti_alias::dlss::Dlss<bevy_anti_alias::dlss::DlssSuperResolutionFeature>",
            "bevy_anti_alias",
            "Dlss"
        ));
        assert!(names_type(
            "bevy_egui::EguiContext",
            "bevy_egui",
            "EguiContext"
        ));
        // Another crate's type of the same ident, a crate whose name only starts alike, a type
        // whose ident only ends alike, and a generic parameter are not it.
        assert!(!names_type("my_game::Bloom", "bevy_post_process", "Bloom"));
        assert!(!names_type(
            "bevy_post_process_extra::Bloom",
            "bevy_post_process",
            "Bloom"
        ));
        assert!(!names_type(
            "bevy_post_process::bloom::MyBloom",
            "bevy_post_process",
            "Bloom"
        ));
        assert!(!names_type(
            "my_game::Wrapper<bevy_post_process::bloom::Bloom>",
            "bevy_post_process",
            "Bloom"
        ));
    }

    /// Registers a component type as the registry sees one of a crate this crate does not
    /// compile: a type name and a layout, nothing else (no reflection).
    fn register_named(world: &mut World, name: &'static str, layout: Layout) -> ComponentId {
        // SAFETY: without a drop function nothing is ever dropped as the wrong type, and the
        // layouts given here are Rust types' (padded to their alignment).
        let descriptor = unsafe {
            ComponentDescriptor::new_with_layout(
                name,
                StorageType::Table,
                layout,
                None,
                true,
                ComponentCloneBehavior::Ignore,
                None,
            )
        };
        world.register_component_with_descriptor(descriptor)
    }

    #[test]
    fn camera_features_are_typed_or_found_by_component_name() {
        let mut world = World::new();
        // Nothing registered yet: nothing to look for.
        assert!(camera_features(world.components(), NAMED_CAMERA_FEATURES).is_empty());
        // A typed feature, once registered (an entity got it or a plugin registered it).
        let ssr = world.register_component::<ScreenSpaceReflections>();
        // Bloom as an app without reflection has it: a name in the component registry.
        let bloom = register_named(
            &mut world,
            "bevy_post_process::bloom::settings::Bloom",
            Layout::new::<[f32; 8]>(),
        );
        // A game's own `Bloom` is not Bevy's.
        register_named(&mut world, "my_game::Bloom", Layout::new::<f32>());
        let found = camera_features(world.components(), NAMED_CAMERA_FEATURES);
        assert_eq!(
            found,
            [
                (ssr, "post-processing: ScreenSpaceReflections".to_string()),
                (bloom, "post-processing: Bloom".to_string()),
            ]
        );
        // Nothing is read from the type registry: the world has none.
        assert!(world.get_resource::<AppTypeRegistry>().is_none());
    }

    /// bevy_ui's `ComputedUiTargetCamera` as the component registry sees it in an app whose
    /// bevy_ui this crate does not compile: its type name and an `Entity`'s layout.
    const BEVY_UI_TARGET_CAMERA: &str = "bevy_ui::ui_node::ComputedUiTargetCamera";

    /// A world with the assets `find_missing` reads, and no type registry.
    fn world_with_assets() -> World {
        let mut world = World::new();
        world.init_resource::<Assets<StandardMaterial>>();
        world.init_resource::<Assets<Mesh>>();
        world.init_resource::<Assets<Image>>();
        world
    }

    /// [`world_with_assets`] with bevy_ui's node target camera registered.
    fn world_with_ui() -> (World, ComponentId) {
        let mut world = world_with_assets();
        let component = register_named(&mut world, BEVY_UI_TARGET_CAMERA, Layout::new::<Entity>());
        (world, component)
    }

    /// A UI node targeting `camera`: `component` (an `Entity`) holding it.
    fn spawn_ui_node(
        world: &mut World,
        component: ComponentId,
        camera: Entity,
        visibility: InheritedVisibility,
    ) -> Entity {
        let node = world.spawn(visibility).id();
        OwningPtr::make(camera, |value| {
            // SAFETY: `component` was registered with `Entity`'s layout and `value` owns an
            // `Entity`, moved into the component.
            unsafe { world.entity_mut(node).insert_by_id(component, value) };
        });
        node
    }

    fn run(world: &mut World) {
        use bevy::ecs::system::RunSystemOnce;
        world.run_system_once(find_missing).unwrap();
    }

    fn items(world: &World, camera: Entity) -> Vec<(Entity, String)> {
        world
            .get::<TileMissing>(camera)
            .map(|m| m.items.iter().map(|i| (i.entity, i.what.clone())).collect())
            .unwrap_or_default()
    }

    #[test]
    fn meshes_in_view_camera_features_and_ui_nodes_are_found() {
        let (mut world, ui) = world_with_ui();
        // HDR: Bevy cannot draw custom materials over its tile frame, so they are listed
        // (`custom_materials_are_listed_or_drawn_over_the_tile_frame` tests LDR).
        let tile = world
            .spawn((
                Name::new("tile camera"),
                TileDeferred::default(),
                VisibleEntities::default(),
                Hdr,
            ))
            .id();
        let other = world.spawn(VisibleEntities::default()).id();
        // A custom-material mesh (no StandardMaterial) in the tile camera's view, and one out
        // of it.
        let in_view = world.spawn(Mesh3d(Handle::default())).id();
        let _out_of_view = world.spawn(Mesh3d(Handle::default())).id();
        world
            .get_mut::<VisibleEntities>(tile)
            .unwrap()
            .push(in_view, TypeId::of::<Mesh3d>());
        // Shadow-casting lights (drawn since issue 13: never listed): a directional light with
        // shadows, one without, and a hidden one with.
        let sun = world
            .spawn(DirectionalLight {
                shadow_maps_enabled: true,
                ..default()
            })
            .id();
        world.spawn(DirectionalLight::default());
        world.spawn((
            DirectionalLight {
                shadow_maps_enabled: true,
                ..default()
            },
            InheritedVisibility::HIDDEN,
        ));
        // A spot light with shadows in the camera's clusters (drawn: not listed either).
        let spot = world
            .spawn(SpotLight {
                shadow_maps_enabled: true,
                ..default()
            })
            .id();
        world
            .get_mut::<VisibleEntities>(tile)
            .unwrap()
            .push(spot, TypeId::of::<ClusterVisibilityClass>());
        // A hidden UI node on the tile camera, a visible one on the other camera.
        spawn_ui_node(&mut world, ui, tile, InheritedVisibility::HIDDEN);
        spawn_ui_node(&mut world, ui, other, InheritedVisibility::VISIBLE);
        // Required components start hidden; visibility propagation runs in the app.
        world.entity_mut(sun).insert(InheritedVisibility::VISIBLE);
        run(&mut world);
        let custom = undrawable_over_tile(CUSTOM_MATERIAL, HDR_UNDRAWABLE);
        let before_ui = [(in_view, custom.clone())];
        assert_eq!(items(&world, tile), before_ui);
        assert!(
            items(&world, tile)
                .iter()
                .all(|(entity, _)| *entity != spot && *entity != sun),
            "shadow-casting lights are drawn, not missing"
        );
        assert!(
            world.get::<TileMissing>(other).is_none(),
            "not a tile camera"
        );

        // A visible UI node on the tile camera, and SSAO on it.
        spawn_ui_node(&mut world, ui, tile, InheritedVisibility::VISIBLE);
        world
            .entity_mut(tile)
            .insert(ScreenSpaceAmbientOcclusion::default());
        run(&mut world);
        let mut expected = before_ui.to_vec();
        expected.push((
            tile,
            "post-processing: ScreenSpaceAmbientOcclusion".to_string(),
        ));
        expected.push((tile, UI_OVER_TILE_CAMERA.to_string()));
        assert_eq!(items(&world, tile), expected);
        let listed = world.get::<TileMissing>(tile).unwrap();
        assert!(
            listed
                .items
                .iter()
                .filter(|item| item.entity == tile)
                .all(|item| item.name.as_deref() == Some("tile camera"))
        );
    }

    /// On an LDR camera a custom-material mesh in view is drawn by Bevy over the tile frame:
    /// listed in `TileMaterialsOverTile`, not in `TileMissing`. It is listed as missing, with
    /// the reason, where Bevy clusters a point light in view on the GPU, or where the render
    /// world found the camera's draws over the tile frame undrawable.
    #[test]
    fn custom_materials_are_listed_or_drawn_over_the_tile_frame() {
        use crate::tile_deferred::overlays::gizmos::UndrawableOverTile;
        use bevy::light::cluster::{GlobalClusterGpuSettings, GlobalClusterSettings};
        let mut world = world_with_assets();
        let tile = world
            .spawn((TileDeferred::default(), VisibleEntities::default()))
            .id();
        let custom = world.spawn(Mesh3d(Handle::default())).id();
        world
            .get_mut::<VisibleEntities>(tile)
            .unwrap()
            .push(custom, TypeId::of::<Mesh3d>());
        let over_tile = |world: &World| {
            world
                .get::<TileMaterialsOverTile>(tile)
                .map(|over| over.meshes.clone())
        };
        run(&mut world);
        assert_eq!(items(&world, tile), []);
        assert_eq!(over_tile(&world), Some(vec![custom]));

        // A point light in the camera's clusters: drawn while Bevy clusters on the CPU...
        let point = world.spawn(PointLight::default()).id();
        world
            .get_mut::<VisibleEntities>(tile)
            .unwrap()
            .push(point, TypeId::of::<ClusterVisibilityClass>());
        run(&mut world);
        assert_eq!(over_tile(&world), Some(vec![custom]));
        // ...listed where Bevy clusters on the GPU, inside `Core3d` only.
        world.insert_resource(GlobalClusterSettings {
            supports_storage_buffers: true,
            clustered_decals_are_usable: false,
            gpu_clustering: Some(GlobalClusterGpuSettings {
                initial_z_slice_list_capacity: 1,
                initial_index_list_capacity: 1,
            }),
            max_uniform_buffer_clusterable_objects: 1,
            view_cluster_bindings_max_indices: 1,
        });
        run(&mut world);
        let why = materials_over_tile_undrawable(false, false, None, true).unwrap();
        assert!(why.contains("point or spot lights"), "{why}");
        assert_eq!(
            items(&world, tile),
            [(custom, undrawable_over_tile(CUSTOM_MATERIAL, why))]
        );
        assert_eq!(
            over_tile(&world),
            None,
            "nothing is drawn over the tile frame"
        );

        // The render world's reason comes first after HDR's.
        world.remove_resource::<GlobalClusterSettings>();
        let draws = ForeignTransparentDraws::default();
        let why = UndrawableOverTile {
            why: "a test's reason",
            other_draws: false,
        };
        draws.replace([(tile, why)].into_iter().collect());
        world.insert_resource(draws);
        run(&mut world);
        assert_eq!(
            items(&world, tile),
            [(
                custom,
                undrawable_over_tile(CUSTOM_MATERIAL, "a test's reason")
            )]
        );
        assert_eq!(
            materials_over_tile_undrawable(true, true, Some("a test's reason"), true),
            Some(HDR_UNDRAWABLE)
        );
        assert_eq!(
            materials_over_tile_undrawable(false, false, None, false),
            None
        );
        assert!(
            materials_over_tile_undrawable(false, true, None, false)
                .is_some_and(|why| why.contains("prepasses"))
        );
        // With a depth prepass (forward decals read it) the mesh is listed.
        world.remove_resource::<ForeignTransparentDraws>();
        world.entity_mut(tile).insert(DepthPrepass);
        run(&mut world);
        assert!(
            items(&world, tile)
                .iter()
                .any(|(entity, what)| *entity == custom && what.contains("prepasses")),
            "{:?}",
            items(&world, tile)
        );
        world.entity_mut(tile).remove::<DepthPrepass>();
        run(&mut world);
        assert_eq!(over_tile(&world), Some(vec![custom]));

        // On a tile GPU: listed from the first frame, without waiting for the render world
        // (which sees them only while the camera is on the tile schedule).
        use crate::device::{DeviceProfile, GpuModel, GpuVendor};
        let mut mali = DeviceProfile::lavapipe_for_tests();
        mali.vendor = GpuVendor::classify(0x13B5, "Mali-G78");
        mali.vendor_id = 0x13B5;
        mali.device_name = "Mali-G78".into();
        mali.model = GpuModel::parse("Mali-G78");
        world.insert_resource(mali);
        run(&mut world);
        assert!(
            items(&world, tile)
                .iter()
                .any(|(entity, what)| *entity == custom && what.contains("tile-based GPU")),
            "{:?}",
            items(&world, tile)
        );
        assert_eq!(over_tile(&world), None);
    }

    /// A `StandardMaterial` with a feature the G-buffer lacks is drawn by Bevy over an LDR
    /// camera's tile frame, as custom materials are, and listed as missing with the reason on an
    /// HDR one in an app without Bevy's tone mapping; transmission too (Bevy's transmissive pass
    /// over a copy of the frame), at 1x and with MSAA.
    #[test]
    fn standard_material_features_the_gbuffer_lacks_are_drawn_over_the_tile_frame() {
        let mut world = world_with_assets();
        let tile = world
            .spawn((TileDeferred::default(), VisibleEntities::default()))
            .id();
        let features = [
            StandardMaterial {
                clearcoat: 1.0,
                ..default()
            },
            StandardMaterial {
                anisotropy_strength: 0.5,
                ..default()
            },
            StandardMaterial {
                specular_tint: Color::srgb(1.0, 0.5, 0.5),
                ..default()
            },
            StandardMaterial {
                depth_map: Some(Handle::default()),
                ..default()
            },
        ];
        let transmissive = StandardMaterial {
            clearcoat: 1.0,
            specular_transmission: 0.5,
            ..default()
        };
        let spawn = |world: &mut World, material: StandardMaterial| {
            let material = world
                .resource_mut::<Assets<StandardMaterial>>()
                .add(material);
            let mesh = world
                .spawn((Mesh3d(Handle::default()), MeshMaterial3d(material)))
                .id();
            world
                .get_mut::<VisibleEntities>(tile)
                .unwrap()
                .push(mesh, TypeId::of::<Mesh3d>());
            mesh
        };
        let drawn_by_bevy: Vec<Entity> = features
            .into_iter()
            .map(|material| spawn(&mut world, material))
            .collect();
        let glass = spawn(&mut world, transmissive.clone());
        // A blended mesh the tile path draws: Bevy draws it too where it draws any, sorted with
        // its own meshes.
        let window = spawn(
            &mut world,
            StandardMaterial {
                alpha_mode: AlphaMode::Blend,
                ..default()
            },
        );
        assert_eq!(
            standard_material_drawn_by_bevy(&transmissive),
            Some("StandardMaterial clearcoat")
        );
        run(&mut world);
        assert_eq!(items(&world, tile), [], "transmission is drawn");
        let mut in_entity_order = drawn_by_bevy.clone();
        in_entity_order.extend([window, glass]);
        in_entity_order.sort_unstable();
        assert_eq!(
            world.get::<TileMaterialsOverTile>(tile),
            Some(&TileMaterialsOverTile {
                meshes: in_entity_order,
                transmissive: true,
            })
        );

        // With MSAA too: Bevy's transmissive pass draws into its multisampled texture over a
        // copy of the resolved frame, as in `Core3d`.
        let listed_at_1x = world.get::<TileMaterialsOverTile>(tile).cloned();
        world
            .entity_mut(tile)
            .insert(bevy::render::view::Msaa::Sample4);
        run(&mut world);
        assert_eq!(items(&world, tile), [], "transmission is drawn with MSAA");
        assert_eq!(
            world.get::<TileMaterialsOverTile>(tile).cloned(),
            listed_at_1x
        );
        world.entity_mut(tile).insert(bevy::render::view::Msaa::Off);

        // HDR: Bevy would tone map them with the scene; each is listed with the feature.
        world.entity_mut(tile).insert(Hdr);
        run(&mut world);
        let mut expected: Vec<(Entity, String)> = drawn_by_bevy
            .iter()
            .zip([
                "StandardMaterial clearcoat",
                "StandardMaterial anisotropy",
                "StandardMaterial specular tint",
                "StandardMaterial parallax depth map",
            ])
            .map(|(&mesh, what)| (mesh, undrawable_over_tile(what, HDR_UNDRAWABLE)))
            .collect();
        expected.push((
            glass,
            undrawable_over_tile("StandardMaterial clearcoat", HDR_UNDRAWABLE),
        ));
        expected.sort_unstable();
        assert_eq!(
            items(&world, tile),
            expected,
            "the blended mesh is the tile path's again"
        );
        assert_eq!(world.get::<TileMaterialsOverTile>(tile), None);
    }

    /// Without binding arrays (here: no render device at all) Bevy ignores reflection probes
    /// and samples every irradiance volume from one texture: the tile path draws that picture,
    /// and nothing in view is listed.
    #[test]
    fn light_probes_are_not_listed_where_bevy_ignores_them() {
        let mut world = world_with_assets();
        let tile = world
            .spawn((TileDeferred::default(), VisibleEntities::default()))
            .id();
        let reflection = world
            .spawn((
                Name::new("hall probe"),
                LightProbe::default(),
                EnvironmentMapLight::default(),
            ))
            .id();
        let irradiance = world
            .spawn((LightProbe::default(), IrradianceVolume::default()))
            .id();
        let both = world
            .spawn((
                LightProbe::default(),
                EnvironmentMapLight::default(),
                IrradianceVolume::default(),
            ))
            .id();
        let mut visible = world.get_mut::<VisibleEntities>(tile).unwrap();
        for entity in [both, irradiance, reflection] {
            visible.push(entity, TypeId::of::<ClusterVisibilityClass>());
        }
        run(&mut world);
        assert_eq!(items(&world, tile), []);
    }

    /// Meshes are walked only where one may be undrawable; where one is, it is still listed,
    /// whether by its material (here: clearcoat, set after the first frame) or by its kind
    /// (morph weights, a lightmap or no `StandardMaterial`).
    #[test]
    fn meshes_are_walked_only_where_one_may_be_missing() {
        let mut world = world_with_assets();
        // HDR, so that a custom material is listed.
        let tile = world
            .spawn((TileDeferred::default(), VisibleEntities::default(), Hdr))
            .id();
        let material = world
            .resource_mut::<Assets<StandardMaterial>>()
            .add(StandardMaterial::default());
        let meshes: Vec<Entity> = (0..3)
            .map(|_| {
                world
                    .spawn((Mesh3d(Handle::default()), MeshMaterial3d(material.clone())))
                    .id()
            })
            .collect();
        let mut visible = world.get_mut::<VisibleEntities>(tile).unwrap();
        for &mesh in &meshes {
            visible.push(mesh, TypeId::of::<Mesh3d>());
        }
        let may_be_missing = |world: &mut World| {
            use bevy::ecs::system::RunSystemOnce;
            world
                .run_system_once(
                    |kinds: MeshKindsToCheck,
                     materials: Res<Assets<StandardMaterial>>,
                     images: Res<Assets<Image>>| {
                        any_mesh_may_be_missing(&kinds, &materials, &images)
                    },
                )
                .unwrap()
        };
        assert!(!may_be_missing(&mut world));
        run(&mut world);
        assert_eq!(items(&world, tile), []);

        // The shared material gains clearcoat: every mesh in view is listed.
        world
            .resource_mut::<Assets<StandardMaterial>>()
            .get_mut(&material)
            .unwrap()
            .clearcoat = 1.0;
        assert!(may_be_missing(&mut world));
        run(&mut world);
        // On an HDR camera Bevy cannot draw them over the tile frame either.
        let clearcoat = undrawable_over_tile("StandardMaterial clearcoat", HDR_UNDRAWABLE);
        let mut expected: Vec<_> = meshes
            .iter()
            .map(|&mesh| (mesh, clearcoat.clone()))
            .collect();
        // Listed in entity order.
        expected.sort_unstable();
        assert_eq!(items(&world, tile), expected);

        // Drawable again, then each kind alone makes the meshes be walked.
        world
            .resource_mut::<Assets<StandardMaterial>>()
            .get_mut(&material)
            .unwrap()
            .clearcoat = 0.0;
        assert!(!may_be_missing(&mut world));
        world
            .entity_mut(meshes[0])
            .insert(MeshMorphWeights::Value { weights: vec![0.5] });
        assert!(may_be_missing(&mut world));
        world.entity_mut(meshes[0]).remove::<MeshMorphWeights>();
        world.entity_mut(meshes[1]).insert(Lightmap::default());
        assert!(may_be_missing(&mut world));
        world.entity_mut(meshes[1]).remove::<Lightmap>();
        assert!(!may_be_missing(&mut world));
        world
            .entity_mut(meshes[2])
            .remove::<MeshMaterial3d<StandardMaterial>>();
        assert!(may_be_missing(&mut world));
        run(&mut world);
        assert_eq!(
            items(&world, tile),
            [(
                meshes[2],
                undrawable_over_tile(CUSTOM_MATERIAL, HDR_UNDRAWABLE)
            )]
        );
    }

    /// What a clusterable object in view makes the tile path list: decals always; a reflection
    /// probe where Bevy draws it (the caller passes `reflection` only where binding arrays are
    /// usable); a probe with both an environment map and a volume is both to Bevy.
    #[test]
    fn clusterables_listed() {
        let listed = |decal, probe, reflection, irradiance| {
            undrawable_clusterable(decal, probe, reflection, irradiance).collect::<Vec<_>>()
        };
        assert_eq!(listed(true, false, false, false), [CLUSTERED_DECAL]);
        assert_eq!(listed(false, true, true, false), [REFLECTION_PROBE]);
        assert_eq!(
            listed(false, true, true, true),
            [REFLECTION_PROBE, IRRADIANCE_VOLUME]
        );
        // An environment map on an entity without a LightProbe is no probe.
        assert_eq!(listed(false, false, true, false), Vec::<&str>::new());
        // Where Bevy samples each volume from its own voxels, two textures are two pictures.
        assert_eq!(listed(false, true, false, true), [IRRADIANCE_VOLUME]);
    }

    #[test]
    fn irradiance_volumes_are_drawn_unless_bevy_samples_several_textures() {
        let (a, b) = (AssetId::<Image>::default(), AssetId::<Image>::invalid());
        assert!(irradiance_volumes_drawn(false, &[]));
        assert!(
            irradiance_volumes_drawn(false, &[a, b]),
            "one texture without arrays"
        );
        assert!(irradiance_volumes_drawn(true, &[]));
        assert!(
            irradiance_volumes_drawn(true, &[a, a]),
            "one texture for all"
        );
        assert!(!irradiance_volumes_drawn(true, &[a, b]));
    }

    #[test]
    fn ui_nodes_are_found_by_type_name_and_layout() {
        // bevy_ui's type, found by name with no type registry (reflection auto registration
        // off), and read.
        let (mut world, ui) = world_with_ui();
        let tile = world
            .spawn((TileDeferred::default(), VisibleEntities::default()))
            .id();
        spawn_ui_node(&mut world, ui, tile, InheritedVisibility::VISIBLE);
        run(&mut world);
        assert_eq!(
            items(&world, tile),
            [(tile, UI_OVER_TILE_CAMERA.to_string())]
        );
        // Look-alikes are not read: bevy_ui's name with another layout, another crate's type
        // with bevy_ui's ident and an Entity's layout.
        let mut world = world_with_assets();
        let tile = world
            .spawn((TileDeferred::default(), VisibleEntities::default()))
            .id();
        let wrong_layout =
            register_named(&mut world, BEVY_UI_TARGET_CAMERA, Layout::new::<[u64; 2]>());
        let other_crate = register_named(
            &mut world,
            "my_game::ComputedUiTargetCamera",
            Layout::new::<Entity>(),
        );
        let node = world.spawn(InheritedVisibility::VISIBLE).id();
        OwningPtr::make([u64::MAX; 2], |value| {
            // SAFETY: `wrong_layout` has `[u64; 2]`'s layout and `value` owns one.
            unsafe { world.entity_mut(node).insert_by_id(wrong_layout, value) };
        });
        spawn_ui_node(&mut world, other_crate, tile, InheritedVisibility::VISIBLE);
        run(&mut world);
        assert_eq!(items(&world, tile), []);
        assert_eq!(ui_target_camera(world.components()), None);
    }

    #[test]
    fn ui_nodes_are_not_reported_where_the_tile_path_draws_them() {
        // With the tile path drawing UI (feature `ui`), a visible node on the camera is not
        // missing; the same world without the resource reports it.
        for drawn in [false, true] {
            let (mut world, ui) = world_with_ui();
            if drawn {
                world.insert_resource(UiDrawnOverTileCameras);
            }
            let tile = world
                .spawn((TileDeferred::default(), VisibleEntities::default()))
                .id();
            spawn_ui_node(&mut world, ui, tile, InheritedVisibility::VISIBLE);
            run(&mut world);
            let expected = if drawn {
                vec![]
            } else {
                vec![(tile, UI_OVER_TILE_CAMERA.to_string())]
            };
            assert_eq!(items(&world, tile), expected);
        }
    }
}
