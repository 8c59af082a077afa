//! The view's GPU queries of one frame: timestamps around the subpasses and, with MSAA, the
//! count of samples lit per sample, read back without waiting from the frame that last used
//! the same slot.

use super::backend::ViewResources;
use crate::tile_deferred::report::TileGpuTimes;
use crate::vulkan::VulkanContext;
use ash::vk;
use bevy::math::UVec4;

/// The view's queries in this frame: what the frame that last used this slot measured (read
/// without waiting), and where this frame records its own.
pub(crate) struct FrameQueries {
    pub(crate) gpu_times: Option<TileGpuTimes>,
    pub(crate) per_sample_fraction: Option<f32>,
    /// Query pool and first query of the timestamps around the subpasses.
    pub(crate) timestamps: Option<(vk::QueryPool, u32)>,
    /// With MSAA: the occlusion query counting the samples lit per sample.
    pub(crate) edge_query: Option<(vk::QueryPool, u32)>,
}

impl FrameQueries {
    /// Reads the slot of `frame` and claims it for this frame.
    pub(crate) fn take(
        view: &mut ViewResources,
        context: &VulkanContext,
        frame: u64,
        samples: u32,
        viewport: UVec4,
    ) -> Self {
        let gpu_times = view.timestamps.as_ref().and_then(|queries| {
            let ms = queries.read(context, frame)?;
            Some(TileGpuTimes {
                gbuffer_ms: ms[0],
                lighting_ms: ms[1],
                tonemap_ms: ms[2],
            })
        });
        let timestamps = view.timestamps.as_mut().map(|queries| {
            queries.recorded(frame);
            (queries.pool, queries.first_query(frame))
        });
        // The classification draw's query counts every sample of each edge pixel.
        let viewport_samples = f64::from(viewport.z) * f64::from(viewport.w) * f64::from(samples);
        let per_sample_fraction = view
            .edge_queries
            .as_ref()
            .filter(|_| samples > 1)
            .and_then(|queries| queries.read_raw(context, frame))
            .map(|counts| (counts[0] as f64 / viewport_samples) as f32);
        let edge_query = if samples > 1 {
            view.edge_queries.as_mut().map(|queries| {
                queries.recorded(frame);
                (queries.pool, queries.first_query(frame))
            })
        } else {
            None
        };
        Self {
            gpu_times,
            per_sample_fraction,
            timestamps,
            edge_query,
        }
    }
}
