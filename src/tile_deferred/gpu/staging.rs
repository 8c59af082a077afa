//! The host-visible buffers a frame's uploads are copied from.
//!
//! Each recorded command buffer takes one staging buffer, written on the CPU before the
//! submission (host-coherent memory: the submission makes the writes visible to the copies),
//! and gives it back once the GPU has finished that frame: the done flag
//! `Graveyard::seal_after_submit` hands out. One `vkCmdCopyBuffer` of many regions replaces a
//! `vkCmdUpdateBuffer` per write, which drivers record as one command each with the data
//! inlined in the command buffer (10,000 moved meshes were 10,000 of them).
//!
//! Buffers come in power-of-two size classes, and one that no frame took for [`IDLE_FRAMES`]
//! is destroyed: the belt holds what the last few frames used, so the crate's resource counts
//! return to where they were once extra cameras go away or an inspector is hidden again.

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
/// Frames a staging buffer may go untaken before it is destroyed: the belt shrinks back to
/// what the frames need once cameras go away or uploads shrink (a hidden inspector).
const IDLE_FRAMES: u64 = 3;

/// A frame's uploads written into a staging buffer, and the copies that carry them.
pub(crate) struct StagedUploads {
    pub(crate) source: vk::Buffer,
    pub(crate) plan: CopyPlan,
}

/// Staging buffers: free, taken by command buffers recorded this frame, and in flight.
#[derive(Default)]
pub(crate) struct StagingBelt {
    /// Each with the last frame that took it.
    free: Vec<(DeviceBuffer, u64)>,
    this_frame: Vec<DeviceBuffer>,
    /// The frames' done flags, buffers and numbers.
    in_flight: Vec<(Arc<AtomicBool>, Vec<DeviceBuffer>, u64)>,
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
            // Not mapped: never reused, destroyed once idle.
            self.free.push((staging, 0));
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

    /// A free buffer of the size class of `bytes`, or a new one. Only the class itself, not
    /// a larger buffer, so that buffers made for a few large frames (an inspector shown for a
    /// while) go idle and are destroyed once the uploads are small again; and the one taken
    /// last, so that buffers a busier moment made (more cameras, a GPU behind) go idle too.
    fn take(&mut self, context: &VulkanContext, bytes: u64) -> TileResult<DeviceBuffer> {
        let size = size_class(bytes);
        let latest = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, (buffer, _))| buffer.size == size)
            .max_by_key(|(_, (_, taken))| *taken)
            .map(|(index, _)| index);
        if let Some(index) = latest {
            return Ok(self.free.swap_remove(index).0);
        }
        context
            .create_upload_buffer("tile staging", size, vk::BufferUsageFlags::TRANSFER_SRC)
            .map_err(|result| TileError::Vulkan {
                step: "creating a staging buffer",
                result,
            })
    }

    /// Call after frame `frame`'s command buffers were submitted, with the flag that says the
    /// GPU has finished them.
    pub(crate) fn seal(&mut self, done: &Arc<AtomicBool>, frame: u64) {
        if !self.this_frame.is_empty() {
            self.in_flight
                .push((done.clone(), std::mem::take(&mut self.this_frame), frame));
        }
    }

    /// Call once per frame, after [`Self::seal`]: frees the buffers of finished frames for
    /// reuse, and destroys the free ones no frame took in the last [`IDLE_FRAMES`] (so the belt
    /// holds what the last few frames used, however many views they recorded).
    pub(crate) fn recycle(&mut self, context: &VulkanContext, frame: u64) {
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut self.in_flight)
            .into_iter()
            .partition(|(done, ..)| done.load(Ordering::Acquire));
        self.in_flight = running;
        self.free.extend(
            done.into_iter()
                .flat_map(|(_, buffers, taken)| buffers.into_iter().map(move |b| (b, taken))),
        );
        for buffer in take_idle(&mut self.free, frame) {
            context.destroy_device_buffer(buffer);
        }
    }

    /// Destroys every staging buffer (device teardown, once the GPU is done).
    pub(crate) fn destroy_all(&mut self, context: &VulkanContext) {
        let in_flight = self.in_flight.drain(..).flat_map(|(_, buffers, _)| buffers);
        for buffer in self
            .free
            .drain(..)
            .map(|(buffer, _)| buffer)
            .chain(self.this_frame.drain(..))
            .chain(in_flight)
        {
            context.destroy_device_buffer(buffer);
        }
    }
}

/// The size of the staging buffer made for `bytes` of uploads: a power of two, at least
/// [`MIN_STAGING_BYTES`].
fn size_class(bytes: u64) -> u64 {
    bytes.max(MIN_STAGING_BYTES).next_power_of_two()
}

/// Takes out of `free` (buffers with the last frame that took each) those no frame took in
/// the [`IDLE_FRAMES`] before `frame`.
fn take_idle<T>(free: &mut Vec<(T, u64)>, frame: u64) -> Vec<T> {
    let (kept, idle): (Vec<_>, Vec<_>) = std::mem::take(free)
        .into_iter()
        .partition(|(_, taken)| frame.saturating_sub(*taken) <= IDLE_FRAMES);
    *free = kept;
    idle.into_iter().map(|(buffer, _)| buffer).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_buffers_are_destroyed_after_a_few_frames() {
        // (buffer, last frame that took it)
        let mut free = vec![("a", 10), ("b", 10 - IDLE_FRAMES), ("c", 9 - IDLE_FRAMES)];
        assert_eq!(
            take_idle(&mut free, 10),
            vec!["c"],
            "idle one frame too long"
        );
        assert_eq!(free, vec![("a", 10), ("b", 10 - IDLE_FRAMES)]);
        // Nothing is given back for long enough: the belt empties.
        assert_eq!(take_idle(&mut free, 11 + IDLE_FRAMES), vec!["a", "b"]);
        assert!(free.is_empty());
    }

    #[test]
    fn sizes_are_powers_of_two_from_the_minimum() {
        assert_eq!(size_class(0), MIN_STAGING_BYTES);
        assert_eq!(size_class(MIN_STAGING_BYTES), MIN_STAGING_BYTES);
        assert_eq!(size_class(MIN_STAGING_BYTES + 1), 2 * MIN_STAGING_BYTES);
        assert_eq!(size_class(3 << 20), 4 << 20);
    }
}
