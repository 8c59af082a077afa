//! What Bevy draws over a tile camera after the tile pass, with wgpu: the shared composite
//! (`composite`, also used by the inspector), Bevy's tone mapping of graded HDR cameras, bloom, FXAA, SMAA and CAS (`post_process`), Bevy's effect stack (`effect_stack`) and auto exposure (`auto_exposure`), other
//! plugins' gizmos (`gizmos`) and bevy_ui (`ui`); and bevy_ui and egui drawn inside the tile pass instead (`ui_in_pass`, its gradients
//! `ui_gradients`, `egui_in_pass`), by the rules they share (`in_pass`). It may use the camera types, `plan`
//! and `report`, never `frame` or `scene`.

#[cfg(feature = "auto_exposure")]
mod auto_exposure;
pub(crate) mod composite;
#[cfg(feature = "effect_stack")]
mod effect_stack;
#[cfg(feature = "inspector")]
pub(crate) mod egui_in_pass;
pub(super) mod gizmos;
#[cfg(any(feature = "ui", feature = "inspector"))]
pub(crate) mod in_pass;
pub(super) mod post_process;
#[cfg(feature = "ui")]
pub(super) mod ui;
#[cfg(feature = "ui")]
mod ui_gradients;
#[cfg(feature = "ui")]
pub(super) mod ui_in_pass;

use bevy::prelude::*;

/// Main-world resource: the tile path draws bevy_ui over tile cameras (feature `ui`, with
/// bevy_ui_render's plugin in the app), so `find_missing` (in `coverage`) does not report UI nodes.
#[derive(Resource, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Resource, Clone, Debug, Default)]
pub struct UiDrawnOverTileCameras;

/// Main-world resource: the tile path draws egui over tile cameras (the inspector's plugin
/// installed its route: in the tile pass, or after it), so `find_missing` does not report
/// egui contexts on tile cameras.
#[derive(Resource, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Resource, Clone, Debug, Default)]
pub struct EguiDrawnOverTileCameras;

/// Main-world and render-world resource: the camera effects (by component name: `ColorGrading`,
/// `Bloom`, `ChromaticAberration`, `Vignette`, `LensDistortion`, `Fxaa`, `Smaa`,
/// `ContrastAdaptiveSharpening`, `AutoExposure`; and `EffectStack` for the pass of the three
/// before it) that Bevy runs after the tile pass (colour grading with Bevy's
/// `TonemappingPlugin`; the others with features `bloom`, `effect_stack`, `auto_exposure` and
/// `anti_alias` and the effect's Bevy plugin in the app), so `find_missing` (in `coverage`) does not report them. Absent when there are none.
#[derive(Resource, Clone, Debug, Default)]
pub(crate) struct PostProcessingAfterTile(pub Vec<&'static str>);
