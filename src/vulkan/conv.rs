//! Frame-graph enums to Vulkan, and Bevy/wgpu formats to Vulkan.

use crate::frame_graph::{AccessMask, ClearValue, Format, LoadOp, PipelineStages, StoreOp};
use ash::vk;

/// The Vulkan format of a frame-graph format.
pub(crate) fn format(format: Format) -> vk::Format {
    match format {
        Format::Rgba8Unorm => vk::Format::R8G8B8A8_UNORM,
        Format::Rgba8Srgb => vk::Format::R8G8B8A8_SRGB,
        Format::Bgra8Unorm => vk::Format::B8G8R8A8_UNORM,
        Format::Bgra8Srgb => vk::Format::B8G8R8A8_SRGB,
        Format::Rgb10a2Unorm => vk::Format::A2B10G10R10_UNORM_PACK32,
        Format::Rg11b10Float => vk::Format::B10G11R11_UFLOAT_PACK32,
        Format::Rgba16Float => vk::Format::R16G16B16A16_SFLOAT,
        Format::Rg16Float => vk::Format::R16G16_SFLOAT,
        Format::R16Float => vk::Format::R16_SFLOAT,
        Format::R16Unorm => vk::Format::R16_UNORM,
        Format::R32Float => vk::Format::R32_SFLOAT,
        Format::R32Uint => vk::Format::R32_UINT,
        Format::Rgba32Float => vk::Format::R32G32B32A32_SFLOAT,
        Format::Rgba32Uint => vk::Format::R32G32B32A32_UINT,
        Format::R8Unorm => vk::Format::R8_UNORM,
        Format::R8Uint => vk::Format::R8_UINT,
        Format::Rg8Unorm => vk::Format::R8G8_UNORM,
        Format::Depth16 => vk::Format::D16_UNORM,
        Format::Depth24Stencil8 => vk::Format::D24_UNORM_S8_UINT,
        Format::Depth32Float => vk::Format::D32_SFLOAT,
        Format::Depth32FloatStencil8 => vk::Format::D32_SFLOAT_S8_UINT,
    }
}

/// The frame-graph format of a Vulkan depth-stencil format.
pub(crate) fn depth_stencil_format(format: vk::Format) -> Option<Format> {
    match format {
        vk::Format::D24_UNORM_S8_UINT => Some(Format::Depth24Stencil8),
        vk::Format::D32_SFLOAT_S8_UINT => Some(Format::Depth32FloatStencil8),
        _ => None,
    }
}

/// The frame-graph format of a render target's wgpu format, when a raw render pass can write it.
pub(crate) fn frame_graph_format(format: wgpu::TextureFormat) -> Option<Format> {
    use wgpu::TextureFormat as T;
    Some(match format {
        T::Rgba8Unorm => Format::Rgba8Unorm,
        T::Rgba8UnormSrgb => Format::Rgba8Srgb,
        T::Bgra8Unorm => Format::Bgra8Unorm,
        T::Bgra8UnormSrgb => Format::Bgra8Srgb,
        T::Rgb10a2Unorm => Format::Rgb10a2Unorm,
        T::Rgba16Float => Format::Rgba16Float,
        _ => return None,
    })
}

/// Whether writing linear colour to this format needs the shader to encode sRGB.
/// The Vulkan format of a wgpu depth texture the tile path samples (Bevy's shadow maps), or
/// `None` for a format it does not expect there.
pub(crate) fn depth_format_of(format: wgpu::TextureFormat) -> Option<vk::Format> {
    match format {
        wgpu::TextureFormat::Depth32Float => Some(vk::Format::D32_SFLOAT),
        wgpu::TextureFormat::Depth16Unorm => Some(vk::Format::D16_UNORM),
        _ => None,
    }
}

pub(crate) fn needs_shader_srgb_encode(format: Format) -> bool {
    matches!(
        format,
        Format::Rgba8Unorm | Format::Bgra8Unorm | Format::Rgb10a2Unorm
    )
}

pub(crate) fn samples(count: u32) -> vk::SampleCountFlags {
    vk::SampleCountFlags::from_raw(count.max(1))
}

pub(crate) fn load_op(op: &LoadOp) -> vk::AttachmentLoadOp {
    match op {
        LoadOp::Load => vk::AttachmentLoadOp::LOAD,
        LoadOp::Clear(_) => vk::AttachmentLoadOp::CLEAR,
        LoadOp::DontCare => vk::AttachmentLoadOp::DONT_CARE,
    }
}

/// `STORE_OP_NONE` needs Vulkan 1.3 or an extension; the plan only emits it when the caps say
/// the device has it.
pub(crate) fn store_op(op: StoreOp) -> vk::AttachmentStoreOp {
    match op {
        StoreOp::Store => vk::AttachmentStoreOp::STORE,
        StoreOp::DontCare => vk::AttachmentStoreOp::DONT_CARE,
        StoreOp::None => vk::AttachmentStoreOp::NONE,
    }
}

pub(crate) fn clear_value(value: Option<&ClearValue>) -> vk::ClearValue {
    match value {
        Some(ClearValue::Color(rgba)) => vk::ClearValue {
            color: vk::ClearColorValue { float32: *rgba },
        },
        Some(ClearValue::ColorUint(rgba)) => vk::ClearValue {
            color: vk::ClearColorValue { uint32: *rgba },
        },
        Some(ClearValue::DepthStencil { depth, stencil }) => vk::ClearValue {
            depth_stencil: vk::ClearDepthStencilValue {
                depth: *depth,
                stencil: *stencil,
            },
        },
        None => vk::ClearValue::default(),
    }
}

/// The frame graph's masks use Vulkan's bit values.
pub(crate) fn stages(stages: PipelineStages) -> vk::PipelineStageFlags {
    vk::PipelineStageFlags::from_raw(stages.bits())
}

pub(crate) fn access(access: AccessMask) -> vk::AccessFlags {
    vk::AccessFlags::from_raw(access.bits())
}

pub(crate) fn vertex_format(format: wgpu::VertexFormat) -> Option<vk::Format> {
    use wgpu::VertexFormat as V;
    Some(match format {
        V::Float32 => vk::Format::R32_SFLOAT,
        V::Float32x2 => vk::Format::R32G32_SFLOAT,
        V::Float32x3 => vk::Format::R32G32B32_SFLOAT,
        V::Float32x4 => vk::Format::R32G32B32A32_SFLOAT,
        V::Float16x2 => vk::Format::R16G16_SFLOAT,
        V::Float16x4 => vk::Format::R16G16B16A16_SFLOAT,
        V::Unorm8x4 => vk::Format::R8G8B8A8_UNORM,
        V::Snorm8x4 => vk::Format::R8G8B8A8_SNORM,
        V::Unorm16x2 => vk::Format::R16G16_UNORM,
        V::Unorm16x4 => vk::Format::R16G16B16A16_UNORM,
        V::Snorm16x2 => vk::Format::R16G16_SNORM,
        V::Snorm16x4 => vk::Format::R16G16B16A16_SNORM,
        // Joint indices (`Mesh::ATTRIBUTE_JOINT_INDEX` is `Uint16x4`).
        V::Uint8x4 => vk::Format::R8G8B8A8_UINT,
        V::Uint16x4 => vk::Format::R16G16B16A16_UINT,
        V::Uint32x4 => vk::Format::R32G32B32A32_UINT,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame graph's stage and access bits are Vulkan's, so the casts above are exact.
    #[test]
    fn frame_graph_bits_are_vulkan_bits() {
        assert_eq!(
            stages(PipelineStages::COLOR_ATTACHMENT_OUTPUT),
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
        );
        assert_eq!(
            stages(PipelineStages::FRAGMENT_SHADER),
            vk::PipelineStageFlags::FRAGMENT_SHADER
        );
        assert_eq!(
            stages(PipelineStages::LATE_FRAGMENT_TESTS),
            vk::PipelineStageFlags::LATE_FRAGMENT_TESTS
        );
        assert_eq!(
            access(AccessMask::INPUT_ATTACHMENT_READ),
            vk::AccessFlags::INPUT_ATTACHMENT_READ
        );
        assert_eq!(
            access(AccessMask::COLOR_ATTACHMENT_WRITE),
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE
        );
        assert_eq!(
            access(AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE),
            vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE
        );
    }
}
