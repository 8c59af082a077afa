//! What a tile camera sees that the tile path cannot draw, found each frame in the main world.
//!
//! [`find_missing`] lists, on each tile camera ([`TileMissing`]), the meshes in its view the tile
//! path does not draw (a custom `Material` or `ExtendedMaterial`, a transparent
//! `StandardMaterial`, skinning, morph targets, lightmaps) and the camera components whose effect
//! it does not render (post-processing, fog, sky, environment light). The router
//! ([`route_cameras`](super::route::route_cameras)) then falls an `Auto` camera back to Bevy's
//! `Core3d` while any of it is in view ([`tiers::apply_missing`](crate::tiers::apply_missing)),
//! or, with a forced tier, keeps rendering and logs each once; the inspector lists them.
//!
//! The tables below are the tile path's feature coverage: remove a row when the tile path
//! learns to draw it.

use super::TileDeferred;
use bevy::{
    camera::visibility::VisibleEntities,
    ecs::{component::Components, world::EntityRef},
    light::{
        Atmosphere, AtmosphereEnvironmentMapLight, EnvironmentMapLight,
        GeneratedEnvironmentMapLight, Skybox, VolumetricFog,
    },
    mesh::{morph::MeshMorphWeights, skinning::SkinnedMesh},
    pbr::{DistanceFog, Lightmap, ScreenSpaceAmbientOcclusion, ScreenSpaceReflections},
    prelude::*,
};
use std::{any::TypeId, fmt};

/// One thing a tile camera sees that the tile path does not draw.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Reflect)]
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
pub struct TileMissing {
    /// What is missing this frame, meshes in view first, in entity order.
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
fn typed_camera_features() -> [(TypeId, &'static str); 9] {
    [
        (
            TypeId::of::<ScreenSpaceAmbientOcclusion>(),
            "post-processing: ScreenSpaceAmbientOcclusion",
        ),
        (
            TypeId::of::<ScreenSpaceReflections>(),
            "post-processing: ScreenSpaceReflections",
        ),
        (TypeId::of::<DistanceFog>(), "fog: DistanceFog"),
        (TypeId::of::<VolumetricFog>(), "fog: VolumetricFog"),
        (TypeId::of::<Atmosphere>(), "sky: Atmosphere"),
        (TypeId::of::<Skybox>(), "sky: Skybox"),
        (
            TypeId::of::<EnvironmentMapLight>(),
            "environment light: EnvironmentMapLight",
        ),
        (
            TypeId::of::<GeneratedEnvironmentMapLight>(),
            "environment light: GeneratedEnvironmentMapLight",
        ),
        (
            TypeId::of::<AtmosphereEnvironmentMapLight>(),
            "environment light: AtmosphereEnvironmentMapLight",
        ),
    ]
}

/// Camera components of Bevy crates this crate does not compile against (`bevy_post_process`,
/// `bevy_anti_alias`), found by their type name in the app's type registry: an app with them
/// has them registered where Bevy's `reflect_auto_register` feature is on (Bevy's default).
const NAMED_CAMERA_FEATURES: &[&str] = &[
    "Bloom",
    "TemporalAntiAliasing",
    "DepthOfField",
    "MotionBlur",
    "ContrastAdaptiveSharpening",
    "Fxaa",
    "Smaa",
    "ChromaticAberration",
    "AutoExposure",
    "Dlss",
];

/// The camera components the tile path does not render: the typed ones, and those of `named`
/// (type idents) the registry knows (Bevy types only).
fn camera_features(registry: &AppTypeRegistry, named: &[&str]) -> Vec<(TypeId, String)> {
    let mut features: Vec<(TypeId, String)> = typed_camera_features()
        .into_iter()
        .map(|(id, what)| (id, what.to_string()))
        .collect();
    let registry = registry.read();
    for registration in registry.iter() {
        let table = registration.type_info().type_path_table();
        let bevy_crate = table.crate_name().is_some_and(|c| c.starts_with("bevy_"));
        if bevy_crate && named.contains(&table.ident().unwrap_or_default()) {
            features.push((
                registration.type_id(),
                format!("post-processing: {}", table.short_path()),
            ));
        }
    }
    features
}

/// Why the tile path does not draw a mesh in view, if it does not. `blended` is whether its
/// `StandardMaterial` is transparent (None: not a `StandardMaterial`).
pub(crate) fn undrawable_mesh(
    standard: Option<bool>,
    skinned: bool,
    morphed: bool,
    lightmapped: bool,
) -> Option<&'static str> {
    match standard {
        None => Some("custom Material (not a StandardMaterial)"),
        // Transparency is not on the tile path yet: the mesh would be absent.
        Some(true) => {
            Some("transparent StandardMaterial (AlphaMode Blend/Premultiplied/Add/Multiply)")
        }
        Some(false) if skinned => Some("skinned mesh (the tile path does not skin)"),
        Some(false) if morphed => Some("morph targets (the tile path does not morph)"),
        Some(false) if lightmapped => Some("lightmap (the tile path does not sample it)"),
        Some(false) => None,
    }
}

/// Whether the tile path skips a `StandardMaterial` of this alpha mode as transparent (as
/// `extract::convert_material` does): every mode but opaque, mask and alpha-to-coverage.
fn is_blended(mode: AlphaMode) -> bool {
    !matches!(
        mode,
        AlphaMode::Opaque | AlphaMode::Mask(_) | AlphaMode::AlphaToCoverage
    )
}

type TileCameras<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        EntityRef<'static>,
        &'static VisibleEntities,
        Option<&'static TileMissing>,
    ),
    With<TileDeferred>,
>;

type ViewedMeshes<'w, 's> = Query<
    'w,
    's,
    (
        Option<&'static Name>,
        Option<&'static MeshMaterial3d<StandardMaterial>>,
        Has<SkinnedMesh>,
        Has<MeshMorphWeights>,
        Has<Lightmap>,
    ),
    With<Mesh3d>,
>;

/// Lists on every tile camera what it sees this frame that the tile path cannot draw
/// ([`TileMissing`]); runs after visibility, before the router.
pub(crate) fn find_missing(
    mut commands: Commands,
    cameras: TileCameras,
    meshes: ViewedMeshes,
    materials: Res<Assets<StandardMaterial>>,
    components: &Components,
    registry: Res<AppTypeRegistry>,
    mut features: Local<Option<Vec<(TypeId, String)>>>,
) {
    // Plugins have registered their types by the first frame's `PostUpdate`.
    let features =
        features.get_or_insert_with(|| camera_features(&registry, NAMED_CAMERA_FEATURES));
    for (camera, camera_ref, visible, previous) in &cameras {
        let mut items: Vec<MissingFeature> = Vec::new();
        let mut in_view: Vec<Entity> = visible.iter(TypeId::of::<Mesh3d>()).copied().collect();
        in_view.sort_unstable();
        for entity in in_view {
            let Ok((name, standard, skinned, morphed, lightmapped)) = meshes.get(entity) else {
                continue;
            };
            let blended = standard.map(|material| {
                materials
                    .get(&material.0)
                    .is_some_and(|m| is_blended(m.alpha_mode))
            });
            if let Some(what) = undrawable_mesh(blended, skinned, morphed, lightmapped) {
                items.push(MissingFeature {
                    entity,
                    name: name.map(ToString::to_string),
                    what: what.to_string(),
                });
            }
        }
        let camera_name = camera_ref.get::<Name>().map(ToString::to_string);
        for (type_id, what) in features.iter() {
            let on_camera = components
                .get_id(*type_id)
                .is_some_and(|id| camera_ref.contains_id(id));
            if on_camera {
                items.push(MissingFeature {
                    entity: camera,
                    name: camera_name.clone(),
                    what: what.clone(),
                });
            }
        }
        if previous.is_none_or(|previous| previous.items != items) {
            let frames_clear = previous.map_or(0, |previous| previous.frames_clear);
            commands.entity(camera).insert(TileMissing {
                items,
                frames_clear,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_tile_path_does_not_draw() {
        // Opaque, masked and alpha-to-coverage StandardMaterials are drawn.
        assert_eq!(undrawable_mesh(Some(false), false, false, false), None);
        for mode in [
            AlphaMode::Opaque,
            AlphaMode::Mask(0.5),
            AlphaMode::AlphaToCoverage,
        ] {
            assert!(!is_blended(mode), "{mode:?}");
        }
        for mode in [
            AlphaMode::Blend,
            AlphaMode::Premultiplied,
            AlphaMode::Add,
            AlphaMode::Multiply,
        ] {
            assert!(is_blended(mode), "{mode:?}");
        }
        // The material is checked first: a custom material is missing whatever else it has.
        assert!(
            undrawable_mesh(None, true, true, true)
                .unwrap()
                .contains("custom Material")
        );
        assert!(
            undrawable_mesh(Some(true), false, false, false)
                .unwrap()
                .contains("transparent")
        );
        assert!(
            undrawable_mesh(Some(false), true, false, false)
                .unwrap()
                .contains("skinned")
        );
        assert!(
            undrawable_mesh(Some(false), false, true, false)
                .unwrap()
                .contains("morph")
        );
        assert!(
            undrawable_mesh(Some(false), false, false, true)
                .unwrap()
                .contains("lightmap")
        );
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
    fn camera_features_are_typed_or_found_by_name_in_the_registry() {
        // Without the post-processing crates registered: the typed features only.
        let registry = AppTypeRegistry::default();
        let typed = camera_features(&registry, NAMED_CAMERA_FEATURES);
        assert_eq!(typed.len(), typed_camera_features().len());
        // A registered Bevy type is found by its ident (here one this crate can name, as the
        // post-processing crates' types are where they are compiled in).
        registry
            .write()
            .register::<bevy::pbr::ScreenSpaceReflections>();
        registry.write().register::<Transform>();
        let found = camera_features(&registry, &["ScreenSpaceReflections", "Bloom"]);
        assert_eq!(found.len(), typed.len() + 1, "{found:?}");
        let (id, what) = found.last().unwrap();
        assert_eq!(*id, TypeId::of::<bevy::pbr::ScreenSpaceReflections>());
        assert_eq!(what, "post-processing: ScreenSpaceReflections");
        // Not by a name that is not in the list.
        assert_eq!(camera_features(&registry, &["Bloom"]).len(), typed.len());
    }
}
