//! Buffer writes queued for the start of a frame's command buffer, and how they are copied
//! there: from one host-visible staging buffer (`staging`), with one `vkCmdCopyBuffer` per
//! destination buffer instead of a `vkCmdUpdateBuffer` per write.

use ash::vk;

/// Bytes written into a buffer at the start of a frame's command buffer, before anything reads
/// them: `bytes` in order, one piece per region.
#[derive(Clone)]
pub(crate) struct BufferUpload {
    pub(crate) buffer: vk::Buffer,
    /// Where each consecutive piece of `bytes` goes in `buffer`, at ascending offsets that do
    /// not overlap; their lengths add up to `bytes.len()`.
    pub(crate) regions: Vec<UploadRegion>,
    pub(crate) bytes: Vec<u8>,
}

/// One piece of an upload: `len` bytes written at `offset` in the destination buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UploadRegion {
    pub(crate) offset: u64,
    pub(crate) len: u64,
}

impl BufferUpload {
    /// The buffer's contents from its start.
    pub(crate) fn whole(buffer: vk::Buffer, bytes: Vec<u8>) -> Self {
        Self {
            buffer,
            regions: vec![UploadRegion {
                offset: 0,
                len: bytes.len() as u64,
            }],
            bytes,
        }
    }

    /// Pieces of `bytes` written at several places of `buffer` (a view's changed instances).
    pub(crate) fn scattered(
        buffer: vk::Buffer,
        bytes: Vec<u8>,
        regions: Vec<UploadRegion>,
    ) -> Self {
        debug_assert_eq!(
            regions.iter().map(|r| r.len).sum::<u64>(),
            bytes.len() as u64
        );
        debug_assert!(
            regions
                .windows(2)
                .all(|w| w[0].offset + w[0].len <= w[1].offset)
        );
        Self {
            buffer,
            regions,
            bytes,
        }
    }

    /// The bytes of `buffer` the upload writes somewhere in: from its first region's start to
    /// its last region's end.
    fn span(&self) -> std::ops::Range<u64> {
        let start = self.regions.first().map_or(0, |r| r.offset);
        let end = self.regions.last().map_or(0, |r| r.offset + r.len);
        start..end
    }
}

/// Where each upload's bytes sit in the staging buffer: uploads start at multiples of this.
const STAGING_ALIGNMENT: u64 = 16;

/// The copies that carry a frame's uploads from the staging buffer into their buffers.
#[derive(Debug, Default)]
pub(crate) struct CopyPlan {
    /// The staging bytes the uploads need; upload `i` starts at `starts[i]`.
    pub(crate) staging_bytes: u64,
    pub(crate) starts: Vec<u64>,
    /// Copy commands in waves: one command per destination buffer in a wave; a wave rewrites
    /// bytes an earlier wave wrote (a later upload to the same place wins, as it did when each
    /// upload was its own `vkCmdUpdateBuffer`), so a transfer barrier goes between waves.
    pub(crate) waves: Vec<Vec<(vk::Buffer, Vec<vk::BufferCopy>)>>,
}

/// Pure: lays `uploads` out in a staging buffer and groups their regions into copy commands.
/// An upload goes in the first wave after every earlier upload to the same buffer whose span
/// overlaps its own (spans, not regions: a conservative test that costs at most a barrier).
pub(crate) fn plan_copies(uploads: &[BufferUpload]) -> CopyPlan {
    let mut plan = CopyPlan::default();
    // (buffer, span, wave) of each upload placed so far.
    let mut placed: Vec<(vk::Buffer, std::ops::Range<u64>, usize)> = Vec::new();
    for upload in uploads {
        let start = plan.staging_bytes.next_multiple_of(STAGING_ALIGNMENT);
        plan.starts.push(start);
        plan.staging_bytes = start + upload.bytes.len() as u64;
        if upload.bytes.is_empty() {
            continue;
        }
        let span = upload.span();
        let wave = placed
            .iter()
            .filter(|(buffer, earlier, _)| {
                *buffer == upload.buffer && earlier.start < span.end && span.start < earlier.end
            })
            .map(|(_, _, wave)| wave + 1)
            .max()
            .unwrap_or(0);
        placed.push((upload.buffer, span, wave));
        if plan.waves.len() <= wave {
            plan.waves.resize_with(wave + 1, Vec::new);
        }
        let commands = &mut plan.waves[wave];
        let index = match commands.iter().position(|(b, _)| *b == upload.buffer) {
            Some(index) => index,
            None => {
                commands.push((upload.buffer, Vec::new()));
                commands.len() - 1
            }
        };
        let regions = &mut commands[index].1;
        let mut src_offset = start;
        for region in upload.regions.iter().filter(|r| r.len > 0) {
            regions.push(vk::BufferCopy {
                src_offset,
                dst_offset: region.offset,
                size: region.len,
            });
            src_offset += region.len;
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    fn buffer(raw: u64) -> vk::Buffer {
        vk::Buffer::from_raw(raw)
    }

    /// A copy command as (destination, (source offset, destination offset, size) per region).
    type Command = (vk::Buffer, Vec<(u64, u64, u64)>);

    fn waves(plan: &CopyPlan) -> Vec<Vec<Command>> {
        plan.waves
            .iter()
            .map(|wave| {
                wave.iter()
                    .map(|(buffer, regions)| {
                        let regions = regions
                            .iter()
                            .map(|r| (r.src_offset, r.dst_offset, r.size))
                            .collect();
                        (*buffer, regions)
                    })
                    .collect()
            })
            .collect()
    }

    fn copy(src_offset: u64, dst_offset: u64, size: u64) -> (u64, u64, u64) {
        (src_offset, dst_offset, size)
    }

    #[test]
    fn uploads_to_one_buffer_become_one_copy_of_many_regions() {
        let instances = BufferUpload::scattered(
            buffer(1),
            vec![7; 48],
            vec![
                UploadRegion { offset: 0, len: 16 },
                UploadRegion {
                    offset: 160,
                    len: 32,
                },
            ],
        );
        let view = BufferUpload::whole(buffer(2), vec![1; 20]);
        let plan = plan_copies(&[view, instances]);
        assert_eq!(plan.starts, [0, 32]);
        assert_eq!(plan.staging_bytes, 80);
        assert_eq!(
            waves(&plan),
            [vec![
                (buffer(2), vec![copy(0, 0, 20)]),
                (buffer(1), vec![copy(32, 0, 16), copy(48, 160, 32)]),
            ]]
        );
    }

    #[test]
    fn a_later_upload_over_an_earlier_one_goes_in_a_later_wave() {
        // A failed frame's uploads come back ahead of the next frame's, which rewrite the
        // same view buffer: the later bytes must land last.
        let first = BufferUpload::whole(buffer(1), vec![1; 64]);
        let elsewhere = BufferUpload::scattered(
            buffer(1),
            vec![2; 16],
            vec![UploadRegion {
                offset: 64,
                len: 16,
            }],
        );
        let again = BufferUpload::whole(buffer(1), vec![3; 64]);
        let plan = plan_copies(&[first, elsewhere, again]);
        assert_eq!(
            waves(&plan),
            [
                vec![(buffer(1), vec![copy(0, 0, 64), copy(64, 64, 16)])],
                vec![(buffer(1), vec![copy(80, 0, 64)])],
            ]
        );
    }

    #[test]
    fn empty_uploads_record_no_copy() {
        let plan = plan_copies(&[BufferUpload::whole(buffer(1), Vec::new())]);
        assert!(plan.waves.is_empty());
        assert_eq!(plan.staging_bytes, 0);
    }
}
