//! GPU timestamps around the subpasses of a native pass.
//!
//! A ring of query slots (one per frame in flight) is read back without waiting, a few frames
//! late. On tile-based GPUs timestamps inside a render pass only bound the work (tiles of
//! different subpasses interleave); the whole-pass time is exact.

use super::{LiveObjects, VulkanContext};
use ash::vk;

/// Frames a slot waits before its results are read.
pub(crate) const RING: u32 = 4;

/// A ring of queries of one view: `marks` queries per frame (timestamps or occlusion).
pub(crate) struct TimestampQueries {
    pub pool: vk::QueryPool,
    marks: u32,
    written: [bool; RING as usize],
    period_ns: f64,
    valid_mask: u64,
}

impl TimestampQueries {
    /// The first query of frame `frame`'s slot.
    pub fn first_query(&self, frame: u64) -> u32 {
        (frame % u64::from(RING)) as u32 * self.marks
    }

    /// Marks `frame`'s slot as recorded.
    pub fn recorded(&mut self, frame: u64) {
        self.written[(frame % u64::from(RING)) as usize] = true;
    }

    /// Forgets that `frame`'s slot was recorded (its command buffer never ran).
    pub fn unrecorded(&mut self, frame: u64) {
        self.written[(frame % u64::from(RING)) as usize] = false;
    }

    /// The raw results of the frame that last used `frame`'s slot, if available (never waits).
    pub fn read_raw(&self, context: &VulkanContext, frame: u64) -> Option<Vec<u64>> {
        let slot = (frame % u64::from(RING)) as usize;
        if !self.written[slot] {
            return None;
        }
        let mut values = vec![0u64; self.marks as usize];
        // SAFETY: as in `read`.
        unsafe {
            context.device.get_query_pool_results(
                self.pool,
                self.first_query(frame),
                &mut values,
                vk::QueryResultFlags::TYPE_64,
            )
        }
        .ok()?;
        Some(values)
    }

    /// Milliseconds between consecutive marks of the frame that last used `frame`'s slot, if
    /// its results are available (never waits).
    pub fn read(&self, context: &VulkanContext, frame: u64) -> Option<Vec<f64>> {
        let slot = (frame % u64::from(RING)) as usize;
        if !self.written[slot] {
            return None;
        }
        let mut ticks = vec![0u64; self.marks as usize];
        // SAFETY: the queries of this slot were reset and written by a submitted command
        // buffer; without WAIT the call returns NOT_READY instead of blocking.
        unsafe {
            context.device.get_query_pool_results(
                self.pool,
                self.first_query(frame),
                &mut ticks,
                vk::QueryResultFlags::TYPE_64,
            )
        }
        .ok()?;
        Some(
            ticks
                .windows(2)
                .map(|pair| {
                    let delta = pair[1].wrapping_sub(pair[0]) & self.valid_mask;
                    delta as f64 * self.period_ns / 1.0e6
                })
                .collect(),
        )
    }
}

impl VulkanContext {
    /// A query pool, or `None` (logged: the view renders without what it measures).
    fn create_query_pool(
        &self,
        info: &vk::QueryPoolCreateInfo,
        measures: &str,
    ) -> Option<vk::QueryPool> {
        let created = self
            .faults
            .fail(super::faults::VulkanCall::QueryPool)
            .and_then(|()| {
                // SAFETY: valid create info; destroyed through `destroy_timestamp_queries`.
                unsafe { self.device.create_query_pool(info, None) }
            });
        match created {
            Ok(pool) => Some(pool),
            Err(error) => {
                bevy::log::warn!(
                    "bevy_tile_deferred: cannot create a query pool ({error}); the view \
                     renders without {measures}"
                );
                None
            }
        }
    }

    /// Timestamp queries for `marks` marks per frame, or `None` if the queue has no timestamps.
    pub fn create_timestamp_queries(&self, marks: u32) -> Option<TimestampQueries> {
        if self.timestamp_valid_bits == 0 || self.limits.timestamp_period <= 0.0 {
            return None;
        }
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(marks * RING);
        let pool = self.create_query_pool(&info, "GPU timings")?;
        LiveObjects::created(&self.live.other);
        Some(TimestampQueries {
            pool,
            marks,
            written: [false; RING as usize],
            period_ns: f64::from(self.limits.timestamp_period),
            valid_mask: if self.timestamp_valid_bits >= 64 {
                u64::MAX
            } else {
                (1u64 << self.timestamp_valid_bits) - 1
            },
        })
    }

    /// One occlusion query per frame: the MSAA lighting counts the pixels it shades per sample
    /// with it. Without `occlusionQueryPrecise` (wgpu does not enable it) Vulkan only promises a
    /// non-zero result when samples pass; lavapipe and desktop drivers count exactly.
    pub fn create_occlusion_queries(&self) -> Option<TimestampQueries> {
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::OCCLUSION)
            .query_count(RING);
        let pool = self.create_query_pool(&info, "the count of pixels lit per sample")?;
        LiveObjects::created(&self.live.other);
        Some(TimestampQueries {
            pool,
            marks: 1,
            written: [false; RING as usize],
            period_ns: 0.0,
            valid_mask: u64::MAX,
        })
    }

    /// Destroys a query pool. The GPU must be done with it.
    pub fn destroy_timestamp_queries(&self, queries: TimestampQueries) {
        // SAFETY: created by this device; no command buffer in flight uses it.
        unsafe { self.device.destroy_query_pool(queries.pool, None) };
        LiveObjects::destroyed(&self.live.other);
    }
}
