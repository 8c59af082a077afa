//! The sampler cache: one `VkSampler` per distinct sampler a material or environment texture
//! asks for ([`SamplerKey`], Bevy's `ImageSamplerDescriptor` in Vulkan terms), created on first
//! use and kept for the backend's life, beside the three fixed samplers the frame binds.

use super::keys::SamplerKey;
use crate::vulkan::{LiveObjects, VulkanCall, VulkanContext};
use ash::vk;
use bevy::platform::collections::HashMap;

/// The backend's samplers.
#[derive(Default)]
pub(crate) struct Samplers {
    by_key: HashMap<SamplerKey, vk::Sampler>,
    /// Linear, clamped: the environment BRDF lookup table.
    pub(crate) lut: vk::Sampler,
    /// Nearest, clamped: the unmerged tier's attachment textures (fetched with `texelFetch`).
    pub(crate) attachment: vk::Sampler,
    /// Depth comparison (GREATER_OR_EQUAL, reverse-Z), linear, clamped: Bevy's shadow samplers.
    pub(crate) shadow: vk::Sampler,
}

/// The sampler cache with the device it creates samplers on: what a frame's helpers that
/// need a sampler borrow.
pub(crate) struct SamplerCache<'a> {
    pub(crate) context: &'a VulkanContext,
    pub(crate) samplers: &'a mut Samplers,
}

impl SamplerCache<'_> {
    /// The sampler for `key`, created on first use.
    pub fn get(&mut self, key: &SamplerKey) -> Result<vk::Sampler, vk::Result> {
        self.samplers.get(self.context, key)
    }
}

impl Samplers {
    /// Creates the fixed samplers (on an error, [`Samplers::destroy`] releases those made).
    pub fn create_fixed(&mut self, context: &VulkanContext) -> Result<(), vk::Result> {
        let clamped = |linear: bool| SamplerKey {
            address: [0; 3],
            mag_linear: linear,
            min_linear: linear,
            mip_linear: linear,
            anisotropy: 1,
            lod_clamp: [0.0f32.to_bits(), vk::LOD_CLAMP_NONE.to_bits()],
            border: 0,
        };
        self.lut = create(context, &clamped(true))?;
        self.attachment = create(context, &clamped(false))?;
        self.shadow = create_shadow(context)?;
        Ok(())
    }

    /// The sampler for `key`, created on first use.
    pub fn get(
        &mut self,
        context: &VulkanContext,
        key: &SamplerKey,
    ) -> Result<vk::Sampler, vk::Result> {
        if let Some(sampler) = self.by_key.get(key) {
            return Ok(*sampler);
        }
        let sampler = create(context, key)?;
        self.by_key.insert(*key, sampler);
        Ok(sampler)
    }

    /// Destroys every sampler. The GPU must be done with them.
    pub fn destroy(&mut self, context: &VulkanContext) {
        let fixed = [self.lut, self.attachment, self.shadow];
        for sampler in self
            .by_key
            .drain()
            .map(|(_, sampler)| sampler)
            .chain(fixed)
            .filter(|sampler| *sampler != vk::Sampler::null())
        {
            // SAFETY: created by this device; the caller waited until the GPU is done.
            unsafe { context.device.destroy_sampler(sampler, None) };
            LiveObjects::destroyed(&context.live.other);
        }
        (self.lut, self.attachment, self.shadow) = Default::default();
    }
}

fn create(context: &VulkanContext, key: &SamplerKey) -> Result<vk::Sampler, vk::Result> {
    let address = |mode: u8| match mode {
        1 => vk::SamplerAddressMode::REPEAT,
        2 => vk::SamplerAddressMode::MIRRORED_REPEAT,
        3 => vk::SamplerAddressMode::CLAMP_TO_BORDER,
        _ => vk::SamplerAddressMode::CLAMP_TO_EDGE,
    };
    let filter = |linear: bool| {
        if linear {
            vk::Filter::LINEAR
        } else {
            vk::Filter::NEAREST
        }
    };
    let anisotropy = f32::from(key.anisotropy)
        .min(context.limits.max_sampler_anisotropy)
        .max(1.0);
    let info = vk::SamplerCreateInfo::default()
        .mag_filter(filter(key.mag_linear))
        .min_filter(filter(key.min_linear))
        .mipmap_mode(if key.mip_linear {
            vk::SamplerMipmapMode::LINEAR
        } else {
            vk::SamplerMipmapMode::NEAREST
        })
        .address_mode_u(address(key.address[0]))
        .address_mode_v(address(key.address[1]))
        .address_mode_w(address(key.address[2]))
        // wgpu enables samplerAnisotropy whenever the device has it.
        .anisotropy_enable(anisotropy > 1.0)
        .max_anisotropy(anisotropy)
        .min_lod(f32::from_bits(key.lod_clamp[0]))
        .max_lod(f32::from_bits(key.lod_clamp[1]))
        .border_color(match key.border {
            1 => vk::BorderColor::FLOAT_OPAQUE_BLACK,
            2 => vk::BorderColor::FLOAT_OPAQUE_WHITE,
            _ => vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
        });
    context.faults.fail(VulkanCall::Sampler)?;
    // SAFETY: valid create info; destroyed in `Samplers::destroy`.
    let sampler = unsafe { context.device.create_sampler(&info, None) }?;
    LiveObjects::created(&context.live.other);
    Ok(sampler)
}

/// Bevy's shadow map sampler (`ShadowSamplers`, render/light.rs:234-269): compare
/// GREATER_OR_EQUAL, linear, nearest mip, clamp to edge.
fn create_shadow(context: &VulkanContext) -> Result<vk::Sampler, vk::Result> {
    let info = vk::SamplerCreateInfo::default()
        .mag_filter(vk::Filter::LINEAR)
        .min_filter(vk::Filter::LINEAR)
        .mipmap_mode(vk::SamplerMipmapMode::NEAREST)
        .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .compare_enable(true)
        .compare_op(vk::CompareOp::GREATER_OR_EQUAL)
        .min_lod(0.0)
        .max_lod(vk::LOD_CLAMP_NONE);
    // SAFETY: valid create info; destroyed in `Samplers::destroy`.
    let sampler = unsafe { context.device.create_sampler(&info, None) }?;
    LiveObjects::created(&context.live.other);
    Ok(sampler)
}
