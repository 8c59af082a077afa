//! What the window-lifecycle tests (surface loss, suspend and resume, a window closed and
//! reopened) share: an app with one window and the lit-spheres scene seen by a 4x MSAA camera,
//! the state its systems hand back to the test once `app.run()` returns, and how a test reads
//! whether the tile path drew and what a window showed.

use super::{Frame, test_plugins};
use crate::scenes;
use bevy::{prelude::*, render::view::Msaa, window::WindowResolution};
use bevy_tile_deferred::{TileDeferred, TileDeferredPlugin, TileRenderReports};
use std::sync::{Arc, Mutex, MutexGuard};

/// What a window test's systems record, read by the test after `app.run()` returns (the app
/// owns the world until then).
#[derive(Resource)]
pub struct Shared<T>(Arc<Mutex<T>>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<T: Default> Shared<T> {
    /// The record, for a system to update.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The record once the app has run (leaves a default one behind).
    pub fn take(&self) -> T {
        std::mem::take(&mut *self.lock())
    }
}

/// An app with one window titled `title` of `width` x `height` pixels, the tile plugin, the
/// lit spheres and the reference camera at 4x MSAA, with [`TileDeferred`] when `tile`; `shared`
/// is inserted for the test's systems. Add the driving systems, then `run` it.
pub fn lit_spheres_window_app<T: Default + Send + 'static>(
    title: &str,
    width: u32,
    height: u32,
    tile: bool,
    shared: &Shared<T>,
) -> App {
    let mut app = App::new();
    app.add_plugins(test_plugins(Some(Window {
        resolution: WindowResolution::new(width, height),
        title: title.into(),
        ..default()
    })))
    .add_plugins(TileDeferredPlugin)
    .insert_resource(shared.clone())
    .add_systems(Startup, move |world: &mut World| {
        scenes::spawn_lit_spheres(world);
        let mut camera = world.spawn((
            Camera3d::default(),
            scenes::reference_camera(),
            scenes::reference_camera_transform(),
            Msaa::Sample4,
        ));
        if tile {
            camera.insert(TileDeferred::default());
        }
    });
    app
}

/// The frame number of the latest tile report of `cameras` (None: none drawn yet, or every
/// report forgotten). It grows each frame the tile path draws one of them.
pub fn latest_report_frame(
    reports: &TileRenderReports,
    cameras: impl IntoIterator<Item = Entity>,
) -> Option<u64> {
    cameras
        .into_iter()
        .filter_map(|camera| reports.get(camera))
        .map(|report| report.frame)
        .max()
}

/// The share of `frame`'s pixels that differ from the scenes' clear colour: near 0 for a
/// window showing nothing but the clear colour, well above for the lit spheres.
pub fn drawn_fraction(frame: &Frame) -> f64 {
    let clear = scenes::CLEAR_COLOR.to_srgba().to_u8_array();
    frame
        .rgba
        .chunks_exact(4)
        .filter(|p| (0..3).any(|c| p[c].abs_diff(clear[c]) > 24))
        .count() as f64
        / (frame.width * frame.height) as f64
}
