//! The GPU side of the tile path: the Vulkan objects it owns (`backend`), their caches, the
//! shaders and pipelines, the GPU mirrors of its data (`types`) and the recorder that turns a
//! frame's recording into a raw command buffer (`record`). No ECS queries: it may use the
//! camera types, errors, plan and report, and the crate's `vulkan`, `frame_graph` and `device`.

pub(super) mod backend;
pub(super) mod cluster_stats;
pub(super) mod indirect;
pub(super) mod keys;
pub(super) mod material_sets;
pub(super) mod mesh_draw;
pub(super) mod pipelines;
pub(super) mod queries;
pub(super) mod record;
pub(super) mod samplers;
pub(super) mod shaders;
pub(super) mod shadow_views;
pub(crate) mod staging;
pub(super) mod transforms;
pub(crate) mod types;
pub(crate) mod ui;
pub(crate) mod upload;

use ash::vk;
use bevy::render::render_resource::TextureView;
use wgpu::hal::api::Vulkan;

/// The Vulkan handle behind a wgpu texture view (`None` where the view is not a Vulkan one).
///
/// The handle is only as alive as `view`: whoever records or writes it into a descriptor set
/// keeps a clone of `view` until the GPU has finished with it (the graveyard, a view set's or a
/// material set's held views), because wgpu destroys a view as soon as its tracked uses are
/// done and the tile path's uses are invisible to it.
pub(crate) fn raw_view(view: &TextureView) -> Option<vk::ImageView> {
    // SAFETY: `as_hal` hands out a guard to wgpu's own view object; it is only read here (the
    // handle is copied out) and dropped at once, so wgpu's state is never changed through it,
    // and no wgpu call can run while the guard is held.
    unsafe {
        view.as_hal::<Vulkan>()
            .map(|hal_view| hal_view.raw_handle())
    }
}
