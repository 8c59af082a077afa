//! What the tile pass reads from the render world besides the view, and the test hooks that
//! change how it runs.

use super::extract::{TileMaterials, TileMeshInstances, TileSkippedLight};
use crate::tile_deferred::{
    camera::TileOutputLoadedAfter,
    gpu::backend::TileBackend,
    lighting::shadows::{DirectionalLightRef, ShadowLayers},
    report::TileRenderReports,
};
use crate::{
    device::DeviceProfile,
    vulkan::{FaultOutcome, TileFault, faults::FaultState},
};
use bevy::{
    camera::CameraOutputMode,
    camera::visibility::RenderLayers,
    core_pipeline::tonemapping::TonemappingLuts,
    diagnostic::FrameCount,
    light::GlobalAmbientLight,
    pbr::{ExtractedDirectionalLight, ExtractedPointLight, GlobalClusterableObjectMeta},
    prelude::*,
    render::{
        camera::SortedCameras,
        mesh::{RenderMesh, allocator::MeshAllocator},
        render_asset::RenderAssets,
        renderer::RenderDevice,
        texture::{FallbackImage, GpuImage},
        view::ExtractedWindows,
    },
};
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

/// Test hook: injects one fault into the next tile view. Insert it in the render world before
/// the app runs; arm it through a clone. Setting the flag (`.0`) fails the next view at its
/// start, as if its render pass could not be created; [`TileFaultInjection::arm`] fails one
/// Vulkan call of the next view ([`TileFault`]) with the result a driver would return, so the
/// crate's own error path runs.
#[doc(hidden)]
#[derive(Resource, Clone, Default)]
pub struct TileFaultInjection(pub Arc<AtomicBool>, Arc<FaultState>);

impl TileFaultInjection {
    /// Arms `fault` for the next tile view (replacing any fault armed before).
    pub fn arm(&self, fault: TileFault) {
        self.1.arm(fault);
    }

    /// Arms `fault` for the tile views to come until it strikes (a change made in the main world
    /// reaches the render world a frame or two later): it never misses.
    pub fn arm_until_struck(&self, fault: TileFault) {
        self.1.arm_until_struck(fault);
    }

    /// Takes back an armed fault that has not struck (its outcome stays `Armed`).
    pub fn disarm(&self) {
        self.1.disarm();
    }

    /// What became of the last armed fault: struck, missed (the view never reached its
    /// point), or still armed.
    pub fn outcome(&self) -> FaultOutcome {
        self.1.outcome()
    }

    /// Transient attachments created from now on take ordinary device-local memory through the
    /// lazily allocated (memoryless) path, as on a tiler, where the device has no such memory
    /// type; [`TileFault::Create`] with `VulkanCall::LazyMemory` then fails that allocation.
    pub fn pretend_lazily_allocated_memory(&self) {
        self.1.pretend_lazy_memory.store(true, Ordering::Relaxed);
    }

    /// From the next tile view on (`skip`), or no longer, the lighting subpass records no draw,
    /// leaving what it should write as the render pass began it: a deliberate bug that makes the
    /// frame show undefined contents, for the poison view's test.
    pub fn skip_lighting_draws(&self, skip: bool) {
        self.1.skip_lighting.store(skip, Ordering::Relaxed);
    }

    /// At teardown (the app exits or the device is replaced), the GPU is taken to never finish
    /// the crate's last frame, as a hung GPU would: the crate leaks its objects instead of
    /// destroying them while they may be in use. Takes effect once a tile view has run since.
    pub fn expire_teardown_wait(&self) {
        self.1.teardown_wait_expires.store(true, Ordering::Relaxed);
    }

    /// The armed fault, for the view about to be rendered.
    pub(crate) fn for_view(&self) -> Arc<FaultState> {
        if self.0.swap(false, Ordering::Relaxed) {
            self.1.arm(TileFault::FrameStart);
        }
        self.1.clone()
    }
}

/// After a view failed: drops the uploads it queued into its own buffers (view data, lights,
/// instances). They are rewritten by its next frame, and left queued they would be recorded by
/// another view's command buffer, twice into one buffer without a barrier when this view comes
/// back (a write-after-write hazard), or into buffers destroyed meanwhile when it does not.
/// Material uploads stay queued: the material is ready and its data is written only once.
pub(crate) fn forget_failed_view_updates(backend: &mut TileBackend, view: Entity) {
    let Some(view) = backend.views.get_mut(&view) else {
        return;
    };
    // The displacements it queued are dropped too: upload them again next frame.
    view.displacements_uploaded = None;
    // The statistics slot it may have taken is never written.
    view.cluster_stats.unrecorded();
    let own = [
        view.view_buffer.buffer,
        view.light_buffer.buffer,
        view.cluster_buffer.buffer,
        view.reach_buffer.buffer,
        view.extent_buffer.buffer,
        view.instance_buffer.buffer,
        view.animation_buffer.buffer,
        view.displacement_buffer.buffer,
        view.indirect_buffer.buffer,
    ];
    let ui = view
        .ui_buffers
        .as_ref()
        .map(|ui| [ui.vertices.buffer, ui.indices.buffer]);
    backend.pending_updates.retain(|upload| {
        let buffer = &upload.buffer;
        !own.contains(buffer) && !ui.is_some_and(|ui| ui.contains(buffer))
    });
}

/// Test hook: while present in the render world, MSAA views light with per-sample-index draws
/// (the path of devices without `sampleRateShading` or a multisampled depth-stencil format)
/// instead of the stencil split.
#[doc(hidden)]
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(Resource, Clone, Debug, Default)]
pub struct TileNoStencilSplit;

/// While present in the render world, tile views assign their point and spot lights to the
/// clusters on the CPU (every light-cluster pair tested in the render node, spread over the
/// compute task pool) instead of by a compute dispatch before the render pass. Both give the
/// same clusters. The CPU assignment is the reference the GPU's is tested against; it costs
/// CPU time that grows with lights times clusters (about 1 ms for 1024 lights at 4K on a
/// desktop CPU) and reports its occupancy in the same frame rather than a frame or more late.
/// Insert it with `app.sub_app_mut(RenderApp).insert_resource(TileCpuLightAssignment)`.
#[derive(Resource, Clone, Debug, Default, Reflect)]
#[reflect(Resource, Clone, Debug, Default)]
pub struct TileCpuLightAssignment;

/// Everything the pass reads from the render world besides the view.
#[derive(bevy::ecs::system::SystemParam)]
pub(crate) struct TileSceneParams<'w, 's> {
    pub(crate) instances: Res<'w, TileMeshInstances>,
    pub(crate) materials: Res<'w, TileMaterials>,
    pub(crate) meshes: Res<'w, RenderAssets<RenderMesh>>,
    pub(crate) mesh_allocator: Res<'w, MeshAllocator>,
    pub(crate) images: Res<'w, RenderAssets<GpuImage>>,
    pub(crate) fallback_image: Res<'w, FallbackImage>,
    pub(crate) environment_samplers:
        Res<'w, crate::tile_deferred::lighting::environment::TileEnvironmentSamplers>,
    pub(crate) luts: Option<Res<'w, TonemappingLuts>>,
    pub(crate) global_ambient: Option<Res<'w, GlobalAmbientLight>>,
    pub(crate) clear_color: Res<'w, bevy::camera::ClearColor>,
    pub(crate) windows: Res<'w, ExtractedWindows>,
    pub(crate) profile: Option<Res<'w, DeviceProfile>>,
    pub(crate) reports: Res<'w, TileRenderReports>,
    pub(crate) fault: Option<Res<'w, TileFaultInjection>>,
    pub(crate) no_stencil_split: Option<Res<'w, TileNoStencilSplit>>,
    pub(crate) cpu_light_assignment: Option<Res<'w, TileCpuLightAssignment>>,
    /// The lights the tile path can draw (`extract::skip_unusable_lights` marks the others).
    pub(crate) point_lights:
        Query<'w, 's, (Entity, &'static ExtractedPointLight), Without<TileSkippedLight>>,
    /// Every point and spot light, usable or not: Bevy gives each a place in its shadow maps.
    pub(crate) all_point_lights: Query<'w, 's, &'static ExtractedPointLight>,
    /// Every directional light, with its render layers and whether the tile path skips it.
    pub(crate) directional_lights: Query<
        'w,
        's,
        (
            Entity,
            &'static ExtractedDirectionalLight,
            Option<&'static RenderLayers>,
            Has<TileSkippedLight>,
        ),
    >,
    /// The render layers of every 3D camera (Bevy sizes its cascade layers over all of them).
    pub(crate) camera_layers: Query<'w, 's, Option<&'static RenderLayers>, With<Camera3d>>,
    /// Bevy's index of each point and spot light (`entity_to_index`), which places its shadow.
    pub(crate) light_indices: Option<Res<'w, GlobalClusterableObjectMeta>>,
    pub(crate) frame_count: Option<Res<'w, FrameCount>>,
    pub(crate) render_device: Res<'w, RenderDevice>,
    pub(crate) sorted_cameras: Res<'w, SortedCameras>,
    pub(crate) loaded_after: Query<'w, 's, (), With<TileOutputLoadedAfter>>,
}

impl TileSceneParams<'_, '_> {
    /// Bevy's limit on texture array layers, which caps its shadow maps.
    pub(crate) fn max_texture_array_layers(&self) -> usize {
        self.render_device.limits().max_texture_array_layers as usize
    }

    /// Every directional light, as the shadow layout reads them.
    pub(crate) fn directional_light_refs(&self) -> Vec<DirectionalLightRef<'_>> {
        self.directional_lights
            .iter()
            .map(|(entity, light, layers, skipped)| DirectionalLightRef {
                entity,
                light,
                layers: layers.cloned().unwrap_or_default(),
                usable: !skipped,
            })
            .collect()
    }

    /// Where Bevy put this frame's point and spot light shadows.
    pub(crate) fn shadow_layers(&self) -> ShadowLayers {
        ShadowLayers::new(
            self.all_point_lights.iter(),
            &self.directional_light_refs(),
            self.camera_layers
                .iter()
                .map(|l| l.cloned().unwrap_or_default()),
            self.max_texture_array_layers(),
        )
    }

    /// Whether a wgpu pass loads the view's output after the tile pass this frame: one marked
    /// on the view, or a later camera drawing to the same target.
    pub(crate) fn output_loaded_after(&self, view: Entity) -> bool {
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
