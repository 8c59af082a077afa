//! The keys of the backend's caches of samplers and material sets: what makes two of them the
//! same Vulkan object. Pure values, made from Bevy's asset types.

use bevy::{
    image::{
        ImageAddressMode, ImageFilterMode, ImageSampler, ImageSamplerBorderColor,
        ImageSamplerDescriptor,
    },
    prelude::*,
};

/// What a material descriptor set is made for: the material, and the lightmap its draws sample
/// (set 1 binding 6; `None`: the white texture).
pub(crate) type MaterialSetKey = (AssetId<StandardMaterial>, Option<MaterialTexture>);

/// Sampler settings of a texture, hashable, for the backend's sampler cache: every field of
/// Bevy's `ImageSamplerDescriptor` that wgpu passes on to `vkCreateSampler` (but `compare`,
/// which a material texture cannot use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SamplerKey {
    /// Address modes u, v, w: 0 clamp to edge, 1 repeat, 2 mirrored repeat, 3 clamp to border.
    pub address: [u8; 3],
    pub mag_linear: bool,
    pub min_linear: bool,
    pub mip_linear: bool,
    pub anisotropy: u16,
    /// Bits of the minimum and maximum level of detail (`f32::to_bits`).
    pub lod_clamp: [u32; 2],
    /// Border colour of clamp-to-border: 0 transparent black (wgpu's default), 1 opaque black,
    /// 2 opaque white.
    pub border: u8,
}

impl SamplerKey {
    pub(crate) fn from_descriptor(descriptor: &ImageSamplerDescriptor) -> Self {
        Self {
            address: [
                descriptor.address_mode_u,
                descriptor.address_mode_v,
                descriptor.address_mode_w,
            ]
            .map(|mode| match mode {
                ImageAddressMode::ClampToEdge => 0,
                ImageAddressMode::Repeat => 1,
                ImageAddressMode::MirrorRepeat => 2,
                ImageAddressMode::ClampToBorder => 3,
            }),
            mag_linear: descriptor.mag_filter == ImageFilterMode::Linear,
            min_linear: descriptor.min_filter == ImageFilterMode::Linear,
            mip_linear: descriptor.mipmap_filter == ImageFilterMode::Linear,
            anisotropy: descriptor.anisotropy_clamp,
            lod_clamp: [
                descriptor.lod_min_clamp.to_bits(),
                descriptor.lod_max_clamp.to_bits(),
            ],
            border: match descriptor.border_color {
                Some(ImageSamplerBorderColor::OpaqueBlack) => 1,
                Some(ImageSamplerBorderColor::OpaqueWhite) => 2,
                _ => 0,
            },
        }
    }

    /// Bevy's default sampler when the app does not change it (`ImagePlugin::default()`):
    /// linear, clamp to edge.
    pub fn bevy_default() -> Self {
        Self::from_descriptor(&ImageSamplerDescriptor::linear())
    }

    /// The sampler of a texture made with `sampler`: its own descriptor, or the app's default
    /// (`ImagePlugin::default_sampler`, which Bevy keeps in the render world as
    /// `DefaultImageSamplerDescriptor`).
    pub fn for_image(sampler: &ImageSampler, default: Option<&ImageSamplerDescriptor>) -> Self {
        match sampler {
            ImageSampler::Descriptor(descriptor) => Self::from_descriptor(descriptor),
            ImageSampler::Default => default.map_or_else(Self::bevy_default, Self::from_descriptor),
        }
    }
}

/// A material's texture slot: the image and how to sample it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct MaterialTexture {
    pub image: AssetId<Image>,
    pub sampler: SamplerKey,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_image_sampler_is_the_apps_default() {
        let nearest = ImageSamplerDescriptor::nearest();
        let key = SamplerKey::for_image(&ImageSampler::Default, Some(&nearest));
        assert!(
            !key.mag_linear && !key.min_linear && !key.mip_linear,
            "{key:?}"
        );
        // Without the render world's default (no ImagePlugin), Bevy's own default: linear.
        let key = SamplerKey::for_image(&ImageSampler::Default, None);
        assert!(key.mag_linear && key.min_linear, "{key:?}");
        // An image's own descriptor wins over the app's default.
        let own = ImageSampler::Descriptor(ImageSamplerDescriptor {
            address_mode_u: ImageAddressMode::MirrorRepeat,
            anisotropy_clamp: 8,
            lod_max_clamp: 4.0,
            border_color: Some(ImageSamplerBorderColor::OpaqueWhite),
            ..ImageSamplerDescriptor::linear()
        });
        let key = SamplerKey::for_image(&own, Some(&nearest));
        assert_eq!(key.address, [2, 0, 0]);
        assert_eq!((key.anisotropy, key.border), (8, 2));
        assert_eq!(f32::from_bits(key.lod_clamp[1]), 4.0);
    }
}
