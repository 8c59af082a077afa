//! The host-visible buffers a frame's uploads are copied from.
//!
//! Each recorded command buffer takes one staging buffer, written on the CPU before the
//! submission (host-coherent memory: the submission makes the writes visible to the copies),
//! and gives it back once the GPU has finished that frame: the done flag
//! `Graveyard::seal_after_submit` hands out. One `vkCmdCopyBuffer` of many regions replaces a
//! `vkCmdUpdateBuffer` per write, which drivers record as one command each with the data
//! inlined in the command buffer (10,000 moved meshes were 10,000 of them).

use super::upload::{BufferUpload, CopyPlan, plan_copies};
use crate::tile_deferred::error::{TileError, TileResult};
use crate::vulkan::{VulkanContext, memory::DeviceBuffer};
use ash::vk;
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

/// The smallest staging buffer made: a frame of view uniforms, lights and a few instances.
const MIN_STAGING_BYTES: u64 = 64 * 1024;
/// Free staging buffers kept for later frames (frame pacing keeps three frames in flight).
const KEPT_FREE: usize = 4;

/// A frame's uploads written into a staging buffer, and the copies that carry them.
pub(crate) struct StagedUploads {
    pub(crate) source: vk::Buffer,
    pub(crate) plan: CopyPlan,
}

/// Staging buffers: free, taken by command buffers recorded this frame, and in flight.
#[derive(Default)]
pub(crate) struct StagingBelt {
    free: Vec<DeviceBuffer>,
    this_frame: Vec<DeviceBuffer>,
    in_flight: Vec<(Arc<AtomicBool>, Vec<DeviceBuffer>)>,
}

impl StagingBelt {
    /// Writes `uploads` into a staging buffer the GPU is not using, made (or grown) when none
    /// is large enough, and plans the copies out of it; `None` when there is nothing to copy.
    pub(crate) fn stage(
        &mut self,
        context: &VulkanContext,
        uploads: &[BufferUpload],
    ) -> TileResult<Option<StagedUploads>> {
        let plan = plan_copies(uploads);
        if plan.waves.is_empty() {
            return Ok(None);
        }
        let mut staging = self.take(context, plan.staging_bytes)?;
        let Some(mapped) = staging.mapped_mut() else {
            self.free.push(staging);
            return Err(TileError::Missing {
                step: "mapping the staging buffer",
            });
        };
        for (upload, start) in uploads.iter().zip(&plan.starts) {
            let start = *start as usize;
            mapped[start..start + upload.bytes.len()].copy_from_slice(&upload.bytes);
        }
        let source = staging.buffer;
        self.this_frame.push(staging);
        Ok(Some(StagedUploads { source, plan }))
    }

    /// The smallest free buffer that holds `bytes`, or a new one.
    fn take(&mut self, context: &VulkanContext, bytes: u64) -> TileResult<DeviceBuffer> {
        let fitting = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, buffer)| buffer.size >= bytes)
            .min_by_key(|(_, buffer)| buffer.size)
            .map(|(index, _)| index);
        if let Some(index) = fitting {
            return Ok(self.free.swap_remove(index));
        }
        let size = bytes.max(MIN_STAGING_BYTES).next_power_of_two();
        context
            .create_upload_buffer("tile staging", size, vk::BufferUsageFlags::TRANSFER_SRC)
            .map_err(|result| TileError::Vulkan {
                step: "creating a staging buffer",
                result,
            })
    }

    /// Call after the frame's command buffers were submitted, with the flag that says the GPU
    /// has finished them.
    pub(crate) fn seal(&mut self, done: &Arc<AtomicBool>) {
        if !self.this_frame.is_empty() {
            self.in_flight
                .push((done.clone(), std::mem::take(&mut self.this_frame)));
        }
    }

    /// Frees the buffers of finished frames for reuse, keeping the largest few; destroys the
    /// rest.
    pub(crate) fn recycle(&mut self, context: &VulkanContext) {
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut self.in_flight)
            .into_iter()
            .partition(|(done, _)| done.load(Ordering::Acquire));
        self.in_flight = running;
        self.free
            .extend(done.into_iter().flat_map(|(_, buffers)| buffers));
        if self.free.len() > KEPT_FREE {
            self.free
                .sort_by_key(|buffer| std::cmp::Reverse(buffer.size));
            for buffer in self.free.drain(KEPT_FREE..) {
                context.destroy_device_buffer(buffer);
            }
        }
    }

    /// Destroys every staging buffer (device teardown, once the GPU is done).
    pub(crate) fn destroy_all(&mut self, context: &VulkanContext) {
        let in_flight = self.in_flight.drain(..).flat_map(|(_, buffers)| buffers);
        for buffer in self
            .free
            .drain(..)
            .chain(self.this_frame.drain(..))
            .chain(in_flight)
        {
            context.destroy_device_buffer(buffer);
        }
    }
}
