//! The vocabulary types: pipeline stage and access flags, formats and sizes.

use super::*;

#[test]
fn flags_print_vulkan_names_and_carry_vulkan_bits() {
    let s = PipelineStages::COLOR_ATTACHMENT_OUTPUT | PipelineStages::FRAGMENT_SHADER;
    assert_eq!(
        format!("{s:?}"),
        "FRAGMENT_SHADER | COLOR_ATTACHMENT_OUTPUT"
    );
    assert_eq!(s.bits(), 0x480);
    assert_eq!(AccessMask::INPUT_ATTACHMENT_READ.bits(), 0x10);
    assert_eq!(format!("{}", AccessMask::NONE), "NONE");
    assert!(AccessMask::COLOR_ATTACHMENT_WRITE.has_write());
    assert!(!AccessMask::SHADER_READ.has_write());
}

#[test]
fn formats_know_their_sizes() {
    assert_eq!(Format::Rgba32Uint.bits_per_pixel(), 128);
    assert!(Format::Depth24Stencil8.has_stencil() && Format::Depth24Stencil8.is_depth());
    assert!(!Format::Depth32Float.has_stencil());
    assert!(!Format::Rgba8Srgb.is_depth());
    assert_eq!(Format::Rg11b10Float.name(), "Rg11b10Float");
    assert_eq!(Format::Bgra8Srgb.to_string(), "Bgra8Srgb");
    assert_eq!(
        Size::ViewScaled { num: 1, den: 4 }.resolve(HD),
        Some(Extent::new(480, 270))
    );
    assert_eq!(
        Size::Absolute {
            width: 0,
            height: 4
        }
        .resolve(HD),
        None
    );
}
