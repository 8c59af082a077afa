//! One mesh draw resolved to the Vulkan objects it binds: what the recorder records directly and
//! what `indirect` turns into commands.

use ash::vk;
use bevy::render::render_resource::IndexFormat;
use wgpu::hal;

/// A mesh's buffers as the hal encoder binds them.
pub(crate) struct MeshBinding {
    pub(crate) vertex_buffer: *const hal::vulkan::Buffer,
    pub(crate) first_vertex: i32,
    pub(crate) index: Option<(*const hal::vulkan::Buffer, u32, u32, IndexFormat)>,
    pub(crate) vertex_count: u32,
}

impl MeshBinding {
    /// The index buffer and format it binds (`None`: not indexed): what tells one bound index
    /// buffer from another, for the recorder's redundant-bind check and the indirect calls.
    pub(crate) fn index_buffer(&self) -> Option<(*const hal::vulkan::Buffer, IndexFormat)> {
        self.index.map(|(buffer, _, _, format)| (buffer, format))
    }
}

/// One instanced G-buffer draw, resolved to Vulkan handles.
pub(crate) struct RecordedDraw {
    pub(crate) pipeline: vk::Pipeline,
    pub(crate) material_set: vk::DescriptorSet,
    pub(crate) binding: MeshBinding,
    pub(crate) first_instance: u32,
    pub(crate) instance_count: u32,
}
