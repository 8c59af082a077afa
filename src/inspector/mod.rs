//! The inspector: a live egui overlay of what every camera's frame loads, stores and keeps on
//! tile, what it costs in bandwidth and power, why passes were not merged, next to what the same
//! camera would cost with merging off and with stock Bevy; with toggles to compare live.
//!
//! Behind the crate feature `inspector` (bevy_egui 0.42). Add [`TileInspectorPlugin`] after
//! [`TileDeferredPlugin`](crate::TileDeferredPlugin); F3 (configurable) shows and hides it, and
//! on a touch screen (a phone has no F3) a three-finger tap does; its close button hides it.
//! Once a touch was seen, its controls are sized for fingers.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_tile_deferred::{TileDeferredPlugin, TileInspectorPlugin};
//!
//! App::new()
//!     .add_plugins((DefaultPlugins, TileDeferredPlugin, TileInspectorPlugin::default()))
//!     .run();
//! ```
//!
//! # Costs
//! Hidden, the inspector owns no egui context: bevy_egui extracts no egui view, so no egui pass
//! is recorded and nothing extra is rendered; the panels are not computed either.
//!
//! Shown, it draws into one camera (the host: the highest-order active 3D camera on the primary
//! window). On a `Core3d` host bevy_egui's own `egui_pass` draws it before upscaling. On a
//! tile-deferred host (whose image the tile render pass writes straight to the output) the tile
//! render pass draws egui's meshes itself, in its last `ui` subpass after bevy_ui: the overlay
//! adds no pass and no attachment traffic, and the frame is the one measured with it hidden
//! ([`TileViewReport::egui_in_pass`](crate::TileViewReport::egui_in_pass) says what it drew).
//! Where the pass cannot draw it (bevy_ui drawn after the tile pass, gizmos, the unmerged tier,
//! `TileDeferred::ui_in_pass` off, an egui paint callback; the reason is in
//! [`TileViewReport::egui_after_pass_reason`](crate::TileViewReport::egui_after_pass_reason)),
//! three wgpu passes run after the tile pass, in [`TileInspectorSystems`]: the camera's main
//! texture is cleared to transparent, bevy_egui's `egui_pass` draws into it, and it is blended
//! over the output. On a window the tile pass also stores the swapchain image in an empty pass
//! before its own, so that wgpu (which cannot see the raw pass's writes) keeps it for the
//! composite instead of zero-filling it
//! ([`TileOutputLoadedAfter`](crate::TileOutputLoadedAfter)). Either way the overlay's own
//! traffic is priced with the same cost model and shown as its own line in the summary (zero in
//! the pass). The same holds for any egui context the app puts on a tile camera while this
//! plugin is added.
//!
//! # Another app's frame
//! With feature `remote` the panels can show another app's frame instead of this one's: its
//! "Remote app (BRP)" section (or [`TileInspectorRemote::connect`]) takes the `host:port` of an
//! app serving the Bevy Remote Protocol with this crate's `remote` feature, such as a phone's
//! game after `adb forward tcp:15702 tcp:15702`. The inspector reads that app's
//! [`TileFrameReport`](crate::TileFrameReport) twice a second and computes its panels from it
//! exactly as from this app's own report; they are read-only (the toggles act on this app's
//! cameras).

mod model;
#[cfg(feature = "remote")]
mod remote;
mod render;
mod ui;

pub use model::{CameraPanel, PlanSummary, surface_lines};
#[cfg(feature = "remote")]
pub use remote::TileInspectorRemote;

use crate::{MsaaShading, TileDebugView, TileDeferred, TileRenderReports, tiers::TierSetting};
use bevy::{camera::RenderTarget, ecs::schedule::ScheduleLabel, prelude::*};
use bevy_egui::{EguiContext, EguiGlobalSettings, EguiPlugin, EguiSchedule};
use bevy_window::{PrimaryWindow, WindowRef};
use std::collections::VecDeque;

/// Shows and hides the inspector overlay with a key or a multi-finger tap; see the
/// [module docs](self).
pub struct TileInspectorPlugin {
    /// The key that shows and hides the overlay.
    pub toggle_key: KeyCode,
    /// How many fingers touching the screen together show and hide the overlay (0: no touch
    /// toggle). Three by default: one finger drives the app, two pinch and pan.
    pub toggle_fingers: usize,
}

impl Default for TileInspectorPlugin {
    fn default() -> Self {
        Self {
            toggle_key: KeyCode::F3,
            toggle_fingers: 3,
        }
    }
}

/// The inspector's state (main world). Set `visible` to show or hide it from code.
#[derive(Resource, Clone, Debug, Reflect)]
#[reflect(Resource, Clone, Debug)]
pub struct TileInspector {
    /// The overlay is shown.
    pub visible: bool,
    /// The key that toggles `visible`.
    pub toggle_key: KeyCode,
    /// Fingers on the screen together that toggle `visible` (0: none).
    pub toggle_fingers: usize,
    /// A touch was seen: the overlay sizes its controls for fingers.
    pub touch_layout: bool,
    /// The camera whose panels are shown (None: the host camera).
    pub selected: Option<Entity>,
    /// Seconds of history in the plots.
    pub history_seconds: f64,
}

/// What the inspector computed for every 3D camera in its last visible frame: the values its
/// panels display (tests read them to check them against the renderer's reports).
#[derive(Resource, Clone, Debug, Default)]
pub struct TileInspectorPanels {
    /// One entry per active 3D camera, by camera order.
    pub cameras: Vec<CameraPanel>,
    /// The camera the overlay draws into.
    pub host: Option<Entity>,
    /// Frames the panels were computed in.
    pub updates: u64,
    /// Where the overlay's window was last drawn, in physical pixels of the host's target.
    pub overlay_rect: Option<Rect>,
}

impl TileInspectorPanels {
    /// The panel of `camera`.
    pub fn get(&self, camera: Entity) -> Option<&CameraPanel> {
        self.cameras.iter().find(|p| p.camera == camera)
    }
}

/// A change the inspector's controls make to a camera. The UI writes these messages; tests may
/// write them too, to exercise the same path as a click.
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct InspectorToggle {
    /// The camera to change.
    pub camera: Entity,
    /// The change.
    pub change: InspectorChange,
}

/// The changes [`InspectorToggle`] carries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InspectorChange {
    /// [`TileDeferred::merge_subpasses`].
    MergeSubpasses(bool),
    /// [`TileDeferred::msaa_shading`].
    MsaaShading(MsaaShading),
    /// [`TileDeferred::debug_view`] (albedo, normal, ..., the MSAA edge mask).
    DebugView(TileDebugView),
    /// [`TileDeferred::tier`]: automatic or a forced tier.
    Tier(TierSetting),
    /// The camera's `Msaa`.
    Msaa(Msaa),
    /// The camera's [`TileValidation`](crate::TileValidation): the phone GPU named so in
    /// [`PHONE_GPUS`](crate::device::phones::PHONE_GPUS), or none.
    Validation(Option<&'static str>),
}

/// Render-world system set, in the [`TileDeferredGraph`](crate::TileDeferredGraph) schedule, of
/// the systems that draw the overlay over a tile camera after the tile pass (clear, bevy_egui's
/// `prepare_egui_pass` and `egui_pass`, composite). It runs only for a view with an egui context
/// whose egui the tile pass did not draw itself, after every system the schedule had when the
/// plugin finished (the tile pass).
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileInspectorSystems;

/// The egui pass schedule of the inspector's own context (so that it does not take the
/// application's primary egui context).
#[derive(ScheduleLabel, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileInspectorContextPass;

/// Marks the camera that carries the inspector's egui context while it is shown.
#[derive(Component, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Component, Clone, Debug, Default)]
pub struct TileInspectorOverlay;

/// Per-camera plot history: (seconds since start, GB/s, GPU ms).
#[derive(Resource, Default)]
pub(crate) struct InspectorHistory {
    pub(crate) cameras: bevy::platform::collections::HashMap<Entity, VecDeque<[f64; 3]>>,
}

/// The context kept while hidden, so that showing again reuses its fonts and textures.
#[derive(Resource, Default)]
struct ParkedContext(Option<EguiContext>);

impl Plugin for TileInspectorPlugin {
    fn build(&self, app: &mut App) {
        if !app.is_plugin_added::<EguiPlugin>() {
            app.add_plugins(EguiPlugin::default());
            // Only the inspector's context, and only while it is shown: no egui pass otherwise.
            app.world_mut()
                .resource_mut::<EguiGlobalSettings>()
                .auto_create_primary_context = false;
        }
        app.insert_resource(TileInspector {
            visible: false,
            toggle_key: self.toggle_key,
            toggle_fingers: self.toggle_fingers,
            touch_layout: false,
            selected: None,
            history_seconds: 10.0,
        })
        .init_resource::<TileInspectorPanels>()
        .init_resource::<InspectorHistory>()
        .init_resource::<ParkedContext>()
        .init_resource::<model::FrameClock>()
        .init_resource::<model::CounterfactualCache>()
        .add_message::<InspectorToggle>()
        .register_type::<TileInspector>()
        .register_type::<TileInspectorOverlay>()
        .add_systems(
            PreUpdate,
            (toggle_visibility, attach_overlay_context)
                .chain()
                // This frame's keys and touches.
                .after(bevy::input::InputSystems)
                .before(bevy_egui::EguiPreUpdateSet::InitContexts),
        )
        .add_systems(
            Update,
            (
                apply_toggles,
                model::update_panels.run_if(|s: Res<TileInspector>| s.visible),
            )
                .chain(),
        )
        .add_systems(TileInspectorContextPass, ui::inspector_ui);
        #[cfg(feature = "remote")]
        app.init_resource::<TileInspectorRemote>().add_systems(
            Update,
            remote::poll_remote
                .before(model::update_panels)
                .run_if(|s: Res<TileInspector>| s.visible),
        );
    }

    fn finish(&self, app: &mut App) {
        if !app.world().contains_resource::<TileRenderReports>() {
            warn!(
                "bevy_tile_deferred: add TileDeferredPlugin before TileInspectorPlugin; the \
                 inspector shows nothing of the tile path without it"
            );
        }
        render::build(app);
    }
}

fn toggle_visibility(
    keys: Option<Res<ButtonInput<KeyCode>>>,
    touches: Option<Res<Touches>>,
    mut tap: Local<MultiFingerTap>,
    mut state: ResMut<TileInspector>,
) {
    let key = keys.is_some_and(|k| k.just_pressed(state.toggle_key));
    let fingers = touches.map_or(0, |t| t.iter().count());
    if fingers > 0 && !state.touch_layout {
        state.touch_layout = true;
    }
    let tapped = tap.update(fingers, state.toggle_fingers);
    if key || tapped {
        state.visible = !state.visible;
    }
}

/// Recognises a tap of `n` fingers: it fires once when `n` fingers are down together, and again
/// only after every finger was lifted (so that holding, or a fourth finger, does not toggle
/// twice).
#[derive(Default, Debug)]
struct MultiFingerTap {
    /// Fired since the screen was last free of fingers.
    fired: bool,
}

impl MultiFingerTap {
    /// Feeds this frame's number of fingers down; true when the tap fires.
    fn update(&mut self, fingers_down: usize, fingers_needed: usize) -> bool {
        if fingers_down == 0 {
            self.fired = false;
            return false;
        }
        let fire = fingers_needed > 0 && fingers_down >= fingers_needed && !self.fired;
        self.fired |= fire;
        fire
    }
}

/// The camera the overlay draws into: the highest-order active 3D camera on the primary
/// window, else the highest-order active 3D camera.
fn pick_host(
    cameras: &Query<(Entity, &Camera, &RenderTarget), With<Camera3d>>,
    primary: Option<Entity>,
) -> Option<Entity> {
    let on_primary = |target: &RenderTarget| match target {
        RenderTarget::Window(WindowRef::Primary) => true,
        RenderTarget::Window(WindowRef::Entity(e)) => Some(*e) == primary,
        _ => false,
    };
    let best = |primary_only: bool| {
        cameras
            .iter()
            .filter(|(_, c, t)| c.is_active && (!primary_only || on_primary(t)))
            .max_by_key(|(e, c, _)| (c.order, std::cmp::Reverse(*e)))
            .map(|(e, _, _)| e)
    };
    best(true).or_else(|| best(false))
}

/// Puts the inspector's egui context on the host camera while shown, takes it off (and parks
/// it) while hidden.
fn attach_overlay_context(
    mut commands: Commands,
    state: Res<TileInspector>,
    cameras: Query<(Entity, &Camera, &RenderTarget), With<Camera3d>>,
    hosts: Query<(Entity, &EguiContext), With<TileInspectorOverlay>>,
    foreign: Query<(), (With<EguiContext>, Without<TileInspectorOverlay>)>,
    primary: Query<Entity, With<PrimaryWindow>>,
    mut parked: ResMut<ParkedContext>,
    mut panels: ResMut<TileInspectorPanels>,
) {
    let wanted = if state.visible {
        pick_host(&cameras, primary.single().ok())
    } else {
        None
    };
    for (entity, context) in &hosts {
        if Some(entity) != wanted {
            parked.0 = Some(context.clone());
            commands
                .entity(entity)
                .remove::<(TileInspectorOverlay, EguiSchedule)>()
                .remove_with_requires::<EguiContext>();
        }
    }
    panels.host = wanted;
    let Some(host) = wanted else { return };
    if hosts.contains(host) {
        return;
    }
    if foreign.contains(host) {
        warn_once!(
            "bevy_tile_deferred: camera {host} already has an egui context; the inspector \
             does not replace it and is not shown"
        );
        panels.host = None;
        return;
    }
    commands.entity(host).insert((
        parked.0.take().unwrap_or_default(),
        EguiSchedule::new(TileInspectorContextPass),
        TileInspectorOverlay,
    ));
}

/// Applies the controls' changes to the cameras.
fn apply_toggles(
    mut commands: Commands,
    mut toggles: MessageReader<InspectorToggle>,
    mut cameras: Query<(Option<&mut TileDeferred>, &mut Msaa)>,
) {
    for toggle in toggles.read() {
        let Ok((tile, mut msaa)) = cameras.get_mut(toggle.camera) else {
            continue;
        };
        match (toggle.change, tile) {
            (InspectorChange::Validation(phone), Some(_)) => {
                let mut camera = commands.entity(toggle.camera);
                match phone.and_then(crate::TileValidation::phone) {
                    Some(validation) => camera.insert(validation),
                    None => camera.remove::<crate::TileValidation>(),
                };
            }
            (InspectorChange::Msaa(samples), _) => {
                msaa.set_if_neq(samples);
            }
            (InspectorChange::MergeSubpasses(on), Some(mut tile)) => {
                if tile.merge_subpasses != on {
                    tile.merge_subpasses = on;
                }
            }
            (InspectorChange::MsaaShading(shading), Some(mut tile)) => {
                if tile.msaa_shading != shading {
                    tile.msaa_shading = shading;
                }
            }
            (InspectorChange::DebugView(view), Some(mut tile)) => {
                if tile.debug_view != view {
                    tile.debug_view = view;
                }
            }
            (InspectorChange::Tier(setting), Some(mut tile)) => {
                if tile.tier != setting {
                    tile.tier = setting;
                }
            }
            (_, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MultiFingerTap;

    /// Feeds frames of fingers-down counts; returns the frames where the tap fired.
    fn fired(frames: &[usize], needed: usize) -> Vec<usize> {
        let mut tap = MultiFingerTap::default();
        frames
            .iter()
            .enumerate()
            .filter(|(_, fingers)| tap.update(**fingers, needed))
            .map(|(frame, _)| frame)
            .collect()
    }

    #[test]
    fn three_fingers_down_together_toggle_once() {
        // Fingers land over a few frames, stay, and lift.
        assert_eq!(fired(&[0, 1, 2, 3, 3, 3, 2, 0], 3), vec![3]);
        // All three in one frame.
        assert_eq!(fired(&[0, 3, 3, 0], 3), vec![1]);
    }

    #[test]
    fn one_or_two_fingers_never_toggle() {
        assert!(fired(&[1, 2, 2, 1, 0, 2, 0, 1], 3).is_empty());
    }

    #[test]
    fn a_fourth_finger_or_a_finger_lifted_and_put_back_does_not_toggle_again() {
        assert_eq!(fired(&[3, 4, 3, 2, 3, 4, 1], 3), vec![0]);
    }

    #[test]
    fn a_second_tap_after_lifting_every_finger_toggles_again() {
        assert_eq!(fired(&[3, 3, 0, 0, 2, 3, 0], 3), vec![0, 5]);
    }

    #[test]
    fn zero_fingers_needed_turns_the_gesture_off() {
        assert!(fired(&[1, 3, 5, 0, 3], 0).is_empty());
    }
}
