//! What the tile pass reads from the render world besides the view, and the test hooks that
//! change how it runs.

use super::{
    TileOutputLoadedAfter,
    extract::{TileMaterials, TileMeshInstances},
    report::TileRenderReports,
};
use crate::DeviceProfile;
use bevy::{
    camera::CameraOutputMode,
    core_pipeline::tonemapping::TonemappingLuts,
    light::GlobalAmbientLight,
    pbr::{ExtractedDirectionalLight, ExtractedPointLight},
    prelude::*,
    render::{
        camera::SortedCameras,
        mesh::{RenderMesh, allocator::MeshAllocator},
        render_asset::RenderAssets,
        texture::{FallbackImage, GpuImage},
        view::ExtractedWindows,
    },
};

/// Test hook: when armed, the next tile frame fails as if a Vulkan object could not be
/// created. Insert it in the render world before the app runs; arm it through a clone.
#[doc(hidden)]
#[derive(Resource, Clone, Default)]
pub struct TileFaultInjection(pub std::sync::Arc<std::sync::atomic::AtomicBool>);

/// Test hook: while present in the render world, MSAA views light with per-sample-index draws
/// (the path of devices without `sampleRateShading` or a multisampled depth-stencil format)
/// instead of the stencil split.
#[doc(hidden)]
#[derive(Resource, Clone, Default)]
pub struct TileNoStencilSplit;

/// Everything the pass reads from the render world besides the view.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct TileSceneParams<'w, 's> {
    pub(super) instances: Res<'w, TileMeshInstances>,
    pub(super) materials: Res<'w, TileMaterials>,
    pub(super) meshes: Res<'w, RenderAssets<RenderMesh>>,
    pub(super) mesh_allocator: Res<'w, MeshAllocator>,
    pub(super) images: Res<'w, RenderAssets<GpuImage>>,
    pub(super) fallback_image: Res<'w, FallbackImage>,
    pub(super) luts: Option<Res<'w, TonemappingLuts>>,
    pub(super) global_ambient: Option<Res<'w, GlobalAmbientLight>>,
    pub(super) clear_color: Res<'w, bevy::camera::ClearColor>,
    pub(super) windows: Res<'w, ExtractedWindows>,
    pub(super) profile: Option<Res<'w, DeviceProfile>>,
    pub(super) reports: Res<'w, TileRenderReports>,
    pub(super) fault: Option<Res<'w, TileFaultInjection>>,
    pub(super) no_stencil_split: Option<Res<'w, TileNoStencilSplit>>,
    pub(super) point_lights: Query<'w, 's, &'static ExtractedPointLight>,
    pub(super) directional_lights: Query<'w, 's, &'static ExtractedDirectionalLight>,
    pub(super) sorted_cameras: Res<'w, SortedCameras>,
    pub(super) loaded_after: Query<'w, 's, (), With<TileOutputLoadedAfter>>,
}

impl TileSceneParams<'_, '_> {
    /// Whether a wgpu pass loads the view's output after the tile pass this frame: one marked
    /// on the view, or a later camera drawing to the same target.
    pub(super) fn output_loaded_after(&self, view: Entity) -> bool {
        if self.loaded_after.contains(view) {
            return true;
        }
        let cameras = &self.sorted_cameras.0;
        let Some(index) = cameras.iter().position(|c| c.entity == view) else {
            return false;
        };
        let target = &cameras[index].target;
        target.is_some()
            && cameras[index + 1..].iter().any(|later| {
                later.target == *target && !matches!(later.output_mode, CameraOutputMode::Skip)
            })
    }
}
