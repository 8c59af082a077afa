//! Indirect mesh draws (issue 34): where the device can draw indirectly with a first instance,
//! each G-buffer and transparent draw becomes a command in the view's indirect buffer, and the
//! draws that bind the same pipeline, material set and mesh buffers one after the other (meshes
//! in one of Bevy's mesh-allocator slabs) are recorded as one `vkCmdDraw*Indirect` call where
//! the device has `multiDrawIndirect`. Pure: which mode a device gets, and the commands and
//! calls of a frame's draws.

use super::mesh_draw::{MeshBinding, RecordedDraw};
use crate::tile_deferred::report::TileMeshDrawMode;
use crate::vulkan::IndirectDrawSupport;
use ash::vk;

/// How a camera's mesh draws are recorded: `requested` is `TileDeferred::indirect_draws`.
pub(crate) fn mesh_draw_mode(requested: bool, support: IndirectDrawSupport) -> TileMeshDrawMode {
    if !requested {
        return TileMeshDrawMode::Direct {
            why: "TileDeferred::indirect_draws is off".into(),
        };
    }
    if !support.first_instance {
        return TileMeshDrawMode::Direct {
            why: "the device has no drawIndirectFirstInstance".into(),
        };
    }
    let max_draws_per_call = if support.multi_draw {
        support.max_draw_count.max(1)
    } else {
        1
    };
    TileMeshDrawMode::Indirect { max_draws_per_call }
}

/// Bytes from one command to the next in the indirect buffer: a `VkDrawIndexedIndirectCommand`
/// (20 bytes), or a `VkDrawIndirectCommand` (16) and an unused word, so that both kinds share
/// one stride and one buffer.
pub(crate) const COMMAND_STRIDE: u32 = 20;

/// One command of the indirect buffer, as the device reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct IndirectCommand(pub(crate) [u32; 5]);

impl IndirectCommand {
    /// The command that draws what `draw` draws directly.
    fn of(draw: &RecordedDraw) -> Self {
        let b = &draw.binding;
        Self(match b.index {
            // indexCount, instanceCount, firstIndex, vertexOffset, firstInstance
            Some((_, first_index, count, _)) => [
                count,
                draw.instance_count,
                first_index,
                b.first_vertex as u32,
                draw.first_instance,
            ],
            // vertexCount, instanceCount, firstVertex, firstInstance
            None => [
                b.vertex_count,
                draw.instance_count,
                b.first_vertex as u32,
                draw.first_instance,
                0,
            ],
        })
    }
}

/// One `vkCmdDrawIndexedIndirect` or `vkCmdDrawIndirect`: `count` commands from
/// `first_command`, bound as draw `first_draw` of the list binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IndirectCall {
    pub(crate) first_draw: usize,
    pub(crate) first_command: u32,
    pub(crate) count: u32,
}

impl IndirectCall {
    /// The call's offset into the indirect buffer.
    pub(crate) fn offset(&self) -> vk::DeviceSize {
        vk::DeviceSize::from(self.first_command) * vk::DeviceSize::from(COMMAND_STRIDE)
    }
}

/// What `b` binds that `a` does not (pipeline, material set or mesh buffers), or `None` where one
/// indirect call can draw both. The buffers are compared by the hal objects the bindings point
/// at (never dereferenced here).
pub(crate) fn binding_change(a: &RecordedDraw, b: &RecordedDraw) -> Option<&'static str> {
    if a.pipeline != b.pipeline {
        return Some("pipeline");
    }
    if a.material_set != b.material_set {
        return Some("material set");
    }
    mesh_buffer_change(&a.binding, &b.binding)
}

/// Which of `b`'s mesh buffers differs from `a`'s: its vertex buffer, or its index buffer (or
/// format, or whether it is indexed at all); `None` where they draw from the same ones.
fn mesh_buffer_change(a: &MeshBinding, b: &MeshBinding) -> Option<&'static str> {
    if !std::ptr::eq(a.vertex_buffer, b.vertex_buffer) {
        return Some("vertex buffer");
    }
    if a.index_buffer() != b.index_buffer() {
        return Some("index buffer");
    }
    None
}

/// Appends the commands of `draws` to `commands`, and returns the calls that draw them in order:
/// consecutive draws that bind the same objects share a call, up to `max_draws_per_call`.
pub(crate) fn indirect_calls(
    draws: &[RecordedDraw],
    max_draws_per_call: u32,
    commands: &mut Vec<IndirectCommand>,
) -> Vec<IndirectCall> {
    let mut calls: Vec<IndirectCall> = Vec::new();
    for (index, draw) in draws.iter().enumerate() {
        let command = commands.len() as u32;
        commands.push(IndirectCommand::of(draw));
        if let Some(call) = calls.last_mut()
            && call.count < max_draws_per_call
            && binding_change(&draws[call.first_draw], draw).is_none()
        {
            call.count += 1;
            continue;
        }
        calls.push(IndirectCall {
            first_draw: index,
            first_command: command,
            count: 1,
        });
    }
    calls
}

/// A frame's indirect draws: the commands for the indirect buffer (the G-buffer's, then the
/// transparent pass's) and the calls of each pass.
#[derive(Debug, Default)]
pub(crate) struct IndirectDraws {
    pub(crate) commands: Vec<IndirectCommand>,
    pub(crate) opaque: Vec<IndirectCall>,
    pub(crate) transparent: Vec<IndirectCall>,
}

impl IndirectDraws {
    /// The commands and calls of a frame's G-buffer and transparent draws.
    pub(crate) fn of(
        opaque: &[RecordedDraw],
        transparent: &[RecordedDraw],
        max_draws_per_call: u32,
    ) -> Self {
        let mut commands = Vec::with_capacity(opaque.len() + transparent.len());
        let opaque = indirect_calls(opaque, max_draws_per_call, &mut commands);
        let transparent = indirect_calls(transparent, max_draws_per_call, &mut commands);
        Self {
            commands,
            opaque,
            transparent,
        }
    }

    /// The calls recorded for the frame's mesh draws.
    pub(crate) fn call_count(&self) -> usize {
        self.opaque.len() + self.transparent.len()
    }

    /// The indirect buffer's size for these commands.
    pub(crate) fn bytes(&self) -> u64 {
        (self.commands.len() * size_of::<IndirectCommand>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;
    use bevy::render::render_resource::IndexFormat;
    use wgpu::hal;

    /// A hal buffer pointer told apart by its address only: the grouping compares pointers and
    /// never reads through them.
    fn buffer(id: usize) -> *const hal::vulkan::Buffer {
        std::ptr::without_provenance(id * 64)
    }

    fn draw(pipeline: u64, material: u64, vertex: usize, index: Option<usize>) -> RecordedDraw {
        RecordedDraw {
            pipeline: vk::Pipeline::from_raw(pipeline),
            material_set: vk::DescriptorSet::from_raw(material),
            binding: MeshBinding {
                vertex_buffer: buffer(vertex),
                first_vertex: 7,
                index: index.map(|index| (buffer(index), 30, 36, IndexFormat::Uint32)),
                vertex_count: 24,
            },
            first_instance: 5,
            instance_count: 3,
        }
    }

    #[test]
    fn indirect_draws_need_the_first_instance_feature_and_merge_only_with_multi_draw() {
        let full = IndirectDrawSupport {
            first_instance: true,
            multi_draw: true,
            max_draw_count: 1 << 20,
        };
        assert_eq!(
            mesh_draw_mode(true, full),
            TileMeshDrawMode::Indirect {
                max_draws_per_call: 1 << 20
            }
        );
        let single = IndirectDrawSupport {
            multi_draw: false,
            ..full
        };
        assert_eq!(
            mesh_draw_mode(true, single),
            TileMeshDrawMode::Indirect {
                max_draws_per_call: 1
            }
        );
        let no_first_instance = IndirectDrawSupport {
            first_instance: false,
            ..full
        };
        assert!(matches!(
            mesh_draw_mode(true, no_first_instance),
            TileMeshDrawMode::Direct { why } if why.contains("drawIndirectFirstInstance")
        ));
        assert!(matches!(
            mesh_draw_mode(false, full),
            TileMeshDrawMode::Direct { why } if why.contains("indirect_draws")
        ));
    }

    #[test]
    fn commands_are_the_direct_draws_arguments() {
        let mut commands = Vec::new();
        indirect_calls(
            &[draw(1, 1, 1, Some(2)), draw(1, 1, 1, None)],
            8,
            &mut commands,
        );
        // indexCount, instanceCount, firstIndex, vertexOffset, firstInstance
        assert_eq!(commands[0].0, [36, 3, 30, 7, 5]);
        // vertexCount, instanceCount, firstVertex, firstInstance
        assert_eq!(commands[1].0, [24, 3, 7, 5, 0]);
        assert_eq!(size_of::<IndirectCommand>() as u32, COMMAND_STRIDE);
    }

    #[test]
    fn consecutive_draws_of_the_binding_change_share_a_call() {
        let draws = [
            draw(1, 1, 1, Some(2)),
            draw(1, 1, 1, Some(2)),
            draw(1, 1, 1, Some(2)),
            // Another material set: a new call.
            draw(1, 2, 1, Some(2)),
            // Another vertex buffer (a mesh in another slab).
            draw(1, 2, 3, Some(2)),
            // Another index buffer.
            draw(1, 2, 3, Some(4)),
            // Not indexed.
            draw(1, 2, 3, None),
            draw(1, 2, 3, None),
            // Another pipeline.
            draw(9, 2, 3, None),
        ];
        let mut commands = Vec::new();
        let calls = indirect_calls(&draws, 64, &mut commands);
        let shape: Vec<(usize, u32, u32)> = calls
            .iter()
            .map(|c| (c.first_draw, c.first_command, c.count))
            .collect();
        assert_eq!(
            shape,
            [
                (0, 0, 3),
                (3, 3, 1),
                (4, 4, 1),
                (5, 5, 1),
                (6, 6, 2),
                (8, 8, 1)
            ]
        );
        assert_eq!(commands.len(), draws.len());
        assert_eq!(calls[4].offset(), 6 * 20);
        assert_eq!(
            binding_change(&draws[0], &draws[3]),
            Some("material set"),
            "the refusal names what differs"
        );
    }

    #[test]
    fn a_call_holds_at_most_the_devices_count() {
        let draws: Vec<RecordedDraw> = (0..5).map(|_| draw(1, 1, 1, Some(2))).collect();
        let mut commands = Vec::new();
        let counts: Vec<u32> = indirect_calls(&draws, 2, &mut commands)
            .iter()
            .map(|c| c.count)
            .collect();
        assert_eq!(counts, [2, 2, 1]);
        // Without multiDrawIndirect every draw is a call of its own.
        let one_each = IndirectDraws::of(&draws, &draws[..2], 1);
        assert_eq!(one_each.call_count(), 7);
        assert_eq!(one_each.transparent[0].first_command, 5);
        assert_eq!(one_each.bytes(), 7 * 20);
    }
}
