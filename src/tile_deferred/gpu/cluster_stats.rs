//! The GPU light assignment's statistics (`shaders/cluster_assign.comp`), read back without
//! waiting: the most lights in one cluster, and the mean over the clusters holding any.
//!
//! Each frame's dispatch adds its counts into one of [`SLOTS`] slots of a small host-visible
//! buffer, zeroed by the same command buffer. A slot is read once the frame that wrote it is
//! known to be done (the flag `Graveyard::seal_after_submit` hands out after the submission),
//! so the figures arrive a frame or more late and never block the CPU. Frame pacing keeps at
//! most three tile frames in flight, so a slot is free again by the time it comes round.

use crate::vulkan::{VulkanContext, memory::DeviceBuffer};
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

/// Slots in the ring.
pub(crate) const SLOTS: usize = 4;
/// `u32`s per slot: max, sum, occupied clusters, unused.
pub(crate) const SLOT_WORDS: usize = 4;

/// Where a slot is in its round.
#[derive(Default)]
enum Slot {
    /// Nothing to read.
    #[default]
    Free,
    /// Recorded this frame; the submission's done flag comes later.
    Recorded,
    /// Submitted; readable once the flag is set.
    Submitted(Arc<AtomicBool>),
}

/// One view's ring of statistics slots.
pub(crate) struct ClusterStatsReadback {
    pub(crate) buffer: DeviceBuffer,
    slots: [Slot; SLOTS],
    next: usize,
    /// The latest figures read: (max lights in a cluster, mean over occupied clusters).
    latest: Option<(u32, f32)>,
}

impl ClusterStatsReadback {
    pub(crate) fn new(buffer: DeviceBuffer) -> Self {
        Self {
            buffer,
            slots: Default::default(),
            next: 0,
            latest: None,
        }
    }

    /// The buffer's size: every slot.
    pub(crate) const BYTES: u64 = (SLOTS * SLOT_WORDS * size_of::<u32>()) as u64;

    /// Reads the slots whose frames are done, then takes the next slot for this frame's
    /// dispatch: returns its first `u32` (the shader's `params.stats.x`), or `None` when the
    /// slot's frame is still running (the frame then gathers no statistics).
    pub(crate) fn begin_frame(&mut self, context: &VulkanContext) -> Option<u32> {
        self.harvest(context);
        let slot = self.next;
        if !matches!(self.slots[slot], Slot::Free) {
            return None;
        }
        self.next = (slot + 1) % SLOTS;
        self.slots[slot] = Slot::Recorded;
        Some((slot * SLOT_WORDS) as u32)
    }

    /// The slots recorded this frame were submitted; `done` is set when the GPU finished them.
    pub(crate) fn submitted(&mut self, done: &Arc<AtomicBool>) {
        for slot in &mut self.slots {
            if matches!(slot, Slot::Recorded) {
                *slot = Slot::Submitted(done.clone());
            }
        }
    }

    /// This frame's recording was dropped (its command buffer never runs): the slot is free.
    pub(crate) fn unrecorded(&mut self) {
        for slot in &mut self.slots {
            if matches!(slot, Slot::Recorded) {
                *slot = Slot::Free;
            }
        }
    }

    /// The latest figures: (max lights in one cluster, mean lights per occupied cluster).
    pub(crate) fn latest(&self) -> Option<(u32, f32)> {
        self.latest
    }

    fn harvest(&mut self, context: &VulkanContext) {
        // Oldest first, so that `latest` ends on the newest finished frame.
        for offset in 0..SLOTS {
            let index = (self.next + offset) % SLOTS;
            let Slot::Submitted(done) = &self.slots[index] else {
                continue;
            };
            if !done.load(Ordering::Acquire) {
                continue;
            }
            if let Some(words) = context.read_u32s(&self.buffer, index * SLOT_WORDS, 3) {
                let (max, sum, occupied) = (words[0], words[1], words[2]);
                let mean = if occupied == 0 {
                    0.0
                } else {
                    sum as f32 / occupied as f32
                };
                self.latest = Some((max, mean));
            }
            self.slots[index] = Slot::Free;
        }
    }
}
