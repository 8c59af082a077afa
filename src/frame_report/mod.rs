//! The frame as one document: what each 3D camera rendered with and why, its plan (render
//! passes, subpasses, every attachment's load and store op with the reason), its traffic, GPU
//! and CPU times, what it does not draw and its tile validation.
//!
//! [`TileFrameReport`] is built from what the crate already publishes in the main world (the
//! render world's [`TileRenderReports`], each camera's [`TierDecision`], [`TileMissing`] and
//! [`TileValidationReport`]): nothing here touches the GPU. The inspector draws its panels from
//! it, its own app's or (feature `remote`) another's. With feature `serde` it is plain serde
//! data: [`TileReportFile`] writes it to JSON files, per frame or on demand, for CI to diff;
//! with feature `remote` it is served over the Bevy Remote Protocol (`tile_deferred.report`), so
//! that a desktop reads a phone's frame over `adb forward`.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_tile_deferred::prelude::*;
//!
//! fn log_traffic(report: TileFrameReportParam) {
//!     for camera in report.collect().cameras {
//!         if let Some(view) = &camera.view {
//!             info!("{}: {} bytes per frame", camera.name, view.bytes_per_frame());
//!         }
//!     }
//! }
//! # App::new().add_systems(Update, log_traffic);
//! ```

#[cfg(feature = "serde")]
pub(crate) mod json;
#[cfg(feature = "remote")]
pub(crate) mod remote;

#[cfg(feature = "serde")]
pub use json::TileReportFile;
#[cfg(feature = "remote")]
pub use remote::{REPORT_METHOD, TileReportParams, fetch_report};

use crate::{
    DeviceProfile, TileDeferred, TileMissing, TileRenderReports, TileValidationReport,
    TileViewReport,
    frame_graph::{DeviceCaps, Format},
    tiers::TierDecision,
};
use bevy::{
    camera::RenderTarget, diagnostic::FrameCount, ecs::system::SystemParam, prelude::*,
    render::camera::CameraRenderGraph,
};

/// Every active 3D camera's last frame, by camera order (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileFrameReport {
    /// The app's frame count (Bevy's `FrameCount`) when the report was collected. Each camera's
    /// tile frame ([`TileViewReport::frame`]) is the render world's, a frame or two older.
    pub frame: u32,
    /// How long the app's last frame took, ms of real time (what its GB/s and mW are priced at).
    pub frame_ms: f64,
    /// The GPU the frame ran on (None until the device is probed).
    pub device: Option<TileReportDevice>,
    /// One entry per active 3D camera, by camera order.
    pub cameras: Vec<TileCameraReport>,
}

/// The GPU a [`TileFrameReport`] comes from.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileReportDevice {
    /// Its Vulkan device name.
    pub name: String,
    /// Its vendor.
    pub vendor: String,
    /// What the frame-graph compiler planned for: tile memory, lazily allocated memory, sample
    /// counts.
    pub caps: DeviceCaps,
    /// One line: name, driver, tier-relevant capabilities ([`DeviceProfile::summary`]).
    pub summary: String,
}

/// One camera of a [`TileFrameReport`].
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileCameraReport {
    /// The main-world camera (of the app the report comes from).
    #[cfg_attr(feature = "serde", serde(with = "entity_bits"))]
    pub camera: Entity,
    /// Its `Name`, or its entity.
    pub name: String,
    /// Its `Camera::order`.
    pub order: isize,
    /// Its viewport (or target) in physical pixels.
    pub resolution: [u32; 2],
    /// The format of what it writes (a window's: the usual sRGB BGRA swapchain).
    pub output_format: Format,
    /// It renders into a window (not an image).
    pub window_target: bool,
    /// Samples its `Msaa` asks for.
    pub requested_samples: u32,
    /// Its render graph is the tile path's ([`TileDeferredGraph`](crate::TileDeferredGraph), timed
    /// or not) this frame; false for Bevy's `Core3d` (no [`TileDeferred`], a device without the
    /// tile path, or an `Auto` fallback).
    pub on_tile_path: bool,
    /// Its tile settings (None: not a tile camera).
    pub settings: Option<TileDeferred>,
    /// The tier it renders with, and why.
    pub decision: Option<TierDecision>,
    /// What the tile path recorded for it last: the plan with every attachment's ops and their
    /// reasons, the traffic, the Vulkan render passes created, GPU and CPU times (None: not a
    /// tile camera, or no tile frame yet).
    pub view: Option<TileViewReport>,
    /// What it sees that the tile path does not draw, one line per entity and kind (a tile
    /// camera's [`TileMissing`]).
    pub missing: Vec<String>,
    /// The meshes in its view of materials the tile path does not draw that Bevy's own
    /// pipelines draw over its tile frame, one line per mesh ("entity (\"name\")"; a tile
    /// camera's [`TileMaterialsOverTile`](crate::TileMaterialsOverTile)).
    #[cfg_attr(feature = "serde", serde(default))]
    pub drawn_over_tile: Vec<String>,
    /// What its [`TileValidation`](crate::TileValidation) device would do with its frame.
    pub validation: Option<TileValidationReport>,
}

impl TileFrameReport {
    /// The camera named `name`.
    pub fn camera_named(&self, name: &str) -> Option<&TileCameraReport> {
        self.cameras.iter().find(|c| c.name == name)
    }
}

type CameraItem = (
    Entity,
    &'static Camera,
    &'static RenderTarget,
    &'static CameraRenderGraph,
    Option<&'static TileDeferred>,
    &'static Msaa,
    Option<&'static Name>,
    Option<&'static TierDecision>,
    Option<&'static TileMissing>,
    Option<&'static TileValidationReport>,
    Option<&'static crate::TileMaterialsOverTile>,
);

/// Collects a [`TileFrameReport`] in a system: `fn my_system(report: TileFrameReportParam)`,
/// then `report.collect()`.
#[derive(SystemParam)]
pub struct TileFrameReportParam<'w, 's> {
    frame: Option<Res<'w, FrameCount>>,
    time: Option<Res<'w, Time<Real>>>,
    reports: Option<Res<'w, TileRenderReports>>,
    profile: Option<Res<'w, DeviceProfile>>,
    images: Option<Res<'w, Assets<Image>>>,
    cameras: Query<'w, 's, CameraItem, With<Camera3d>>,
    names: Query<'w, 's, &'static Name>,
}

impl TileFrameReportParam<'_, '_> {
    /// The report of the cameras' last frames.
    pub fn collect(&self) -> TileFrameReport {
        let mut sorted: Vec<_> = self.cameras.iter().filter(|c| c.1.is_active).collect();
        sorted.sort_by_key(|c| (c.1.order, c.0));
        let mut cameras = Vec::with_capacity(sorted.len());
        for (
            entity,
            camera,
            target,
            graph,
            tile,
            msaa,
            name,
            decision,
            missing,
            validation,
            over_tile,
        ) in sorted
        {
            // What the camera sees that is missing, and what a phone would do with its frame,
            // are a tile camera's only (the components may stay behind).
            let tile = tile.cloned();
            cameras.push(TileCameraReport {
                camera: entity,
                name: name.map_or_else(|| format!("camera {entity}"), |n| n.to_string()),
                order: camera.order,
                resolution: camera.physical_viewport_size().unwrap_or_default().into(),
                output_format: target_format(target, self.images.as_deref()),
                window_target: matches!(target, RenderTarget::Window(_)),
                requested_samples: msaa.samples(),
                on_tile_path: crate::tile_deferred::is_tile_schedule(graph.0),
                view: tile
                    .as_ref()
                    .and(self.reports.as_deref())
                    .and_then(|r| r.get(entity)),
                missing: missing
                    .filter(|_| tile.is_some())
                    .map(|m| m.items.iter().map(ToString::to_string).collect())
                    .unwrap_or_default(),
                drawn_over_tile: over_tile
                    .filter(|_| tile.is_some())
                    .map(|over| {
                        over.meshes
                            .iter()
                            .map(|&mesh| match self.names.get(mesh) {
                                Ok(name) => format!("{mesh} (\"{name}\")"),
                                Err(_) => mesh.to_string(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                validation: validation.filter(|_| tile.is_some()).cloned(),
                decision: decision.cloned(),
                settings: tile,
            });
        }
        TileFrameReport {
            frame: self.frame.as_deref().map_or(0, |f| f.0),
            frame_ms: self
                .time
                .as_deref()
                .map_or(0.0, |t| t.delta_secs_f64() * 1000.0),
            device: self.profile.as_deref().map(|p| TileReportDevice {
                name: p.device_name.clone(),
                vendor: p.vendor.to_string(),
                caps: p.frame_graph_caps(),
                summary: p.summary(),
            }),
            cameras,
        }
    }
}

/// The format of what a camera writes (windows: the usual sRGB BGRA swapchain).
fn target_format(target: &RenderTarget, images: Option<&Assets<Image>>) -> Format {
    let format = match (target, images) {
        (RenderTarget::Image(image), Some(images)) => images
            .get(&image.handle)
            .and_then(|i| crate::vulkan::conv::frame_graph_format(i.texture_descriptor.format)),
        _ => None,
    };
    format.unwrap_or(Format::Bgra8Srgb)
}

/// An [`Entity`] as its bits: the report names the cameras of the app it comes from, and never
/// needs Bevy's own serde support (`bevy_ecs/serialize`) for that.
#[cfg(feature = "serde")]
mod entity_bits {
    use bevy::prelude::Entity;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(entity: &Entity, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(entity.to_bits())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Entity, D::Error> {
        let bits = u64::deserialize(deserializer)?;
        Entity::try_from_bits(bits)
            .ok_or_else(|| serde::de::Error::custom(format!("{bits} is not an entity's bits")))
    }
}
