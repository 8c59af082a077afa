//! Buffer writes queued for the start of a frame's command buffer.

use ash::vk;

/// Bytes written into a buffer at `offset` at the start of a frame's command buffer, before
/// anything reads it.
#[derive(Clone)]
pub(crate) struct BufferUpload {
    pub(crate) buffer: vk::Buffer,
    pub(crate) offset: u64,
    pub(crate) bytes: Vec<u8>,
}

impl BufferUpload {
    /// The buffer's contents from its start.
    pub(crate) fn whole(buffer: vk::Buffer, bytes: Vec<u8>) -> Self {
        Self {
            buffer,
            offset: 0,
            bytes,
        }
    }
}
