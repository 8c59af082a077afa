//! Phone GPUs as their Vulkan drivers name them, as profiles: what `TileValidation` checks a
//! frame against on a desktop, and what the tier rules' tests run (`tiers::android_devices`).
//!
//! Each profile is a phone's Vulkan 1.1 device as the rules see it: the vendor and model its name
//! gives, 1/2/4/8x MSAA, 8 colour and input attachments, lazily allocated memory. Real drivers
//! differ in the rest (limits, extensions); the tier rules and the frame's tile budget depend on
//! the vendor and model, which these carry.

use super::{
    ApiVersion, DeviceKind, DeviceProfile, GpuModel, GpuVendor, GraphicsBackend, SampleCounts,
    VulkanCaps,
};

/// One phone GPU: its Vulkan vendor id, device name and (where the rules read it) driver info.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhoneGpu {
    /// `VkPhysicalDeviceProperties::vendorID`.
    pub vendor_id: u32,
    /// `deviceName`, as the driver reports it.
    pub name: &'static str,
    /// `VkPhysicalDeviceDriverProperties::driverInfo` where a rule reads it (Samsung's Mali
    /// drivers), else empty.
    pub driver_info: &'static str,
}

impl PhoneGpu {
    const fn new(vendor_id: u32, name: &'static str, driver_info: &'static str) -> Self {
        Self {
            vendor_id,
            name,
            driver_info,
        }
    }

    /// Its profile: a phone's Vulkan 1.1 device with this vendor, name and driver info.
    pub fn profile(&self) -> DeviceProfile {
        phone_profile(self.vendor_id, self.name, self.driver_info)
    }
}

/// The phone GPUs of every vendor family the tier rules treat apart (Adreno, Mali, PowerVR,
/// Xclipse; see `tiers::android_devices` for why each gets its tier).
pub const PHONE_GPUS: &[PhoneGpu] = &[
    PhoneGpu::new(0x5143, "Adreno (TM) 610", ""),
    PhoneGpu::new(0x5143, "Adreno (TM) 750", ""),
    PhoneGpu::new(0x5143, "Adreno (TM) 830", ""),
    PhoneGpu::new(0x13B5, "Mali-T880", ""),
    PhoneGpu::new(0x13B5, "Mali-G72", ""),
    PhoneGpu::new(0x13B5, "Mali-G52", ""),
    PhoneGpu::new(0x13B5, "Mali-G57", ""),
    PhoneGpu::new(0x13B5, "Immortalis-G720", ""),
    PhoneGpu::new(0x13B5, "Mali-G76", "Samsung Exynos 9820"),
    PhoneGpu::new(0x1010, "PowerVR Rogue GE8320", ""),
    PhoneGpu::new(0x1010, "PowerVR Rogue GM9446", ""),
    PhoneGpu::new(0x1010, "PowerVR B-Series BXM-8-256", ""),
    PhoneGpu::new(0x1010, "PowerVR C-Series CXT-48-1536", ""),
    PhoneGpu::new(0x1010, "PowerVR D-Series DXT-48-1536", ""),
    PhoneGpu::new(0x1010, "IMG DXT-48-1536", ""),
    PhoneGpu::new(0x144D, "Samsung Xclipse 920", ""),
    PhoneGpu::new(0x144D, "Samsung Xclipse 930", ""),
    // Some Xclipse drivers report AMD's vendor id.
    PhoneGpu::new(0x1002, "Samsung Xclipse 940", ""),
    PhoneGpu::new(0x144D, "Samsung Xclipse 950", ""),
];

impl DeviceProfile {
    /// The profile of the phone GPU named `name` in [`PHONE_GPUS`] (its Vulkan device name,
    /// e.g. `"Mali-G72"`, `"Adreno (TM) 610"`), if it is there.
    pub fn phone(name: &str) -> Option<Self> {
        PHONE_GPUS
            .iter()
            .find(|gpu| gpu.name == name)
            .map(PhoneGpu::profile)
    }
}

/// A phone's Vulkan 1.1 profile: integrated, 1/2/4/8x MSAA, lazily allocated memory.
pub(crate) fn phone_profile(vendor_id: u32, name: &str, driver_info: &str) -> DeviceProfile {
    DeviceProfile {
        backend: GraphicsBackend::Vulkan,
        vendor: GpuVendor::classify(vendor_id, name),
        model: GpuModel::parse(name),
        vendor_id,
        device_id: 0,
        device_kind: DeviceKind::Integrated,
        device_name: name.into(),
        driver_name: String::new(),
        driver_info: driver_info.into(),
        driver_version: 0,
        api_version: Some(ApiVersion {
            major: 1,
            minor: 1,
            patch: 0,
        }),
        max_color_attachments: 8,
        vulkan: Some(VulkanCaps {
            max_color_attachments: 8,
            max_per_stage_input_attachments: 8,
            framebuffer_color_sample_counts: SampleCounts(0b1111),
            framebuffer_depth_sample_counts: SampleCounts(0b1111),
            sample_rate_shading: true,
            lazily_allocated_memory: true,
            depth_stencil_resolve: None,
            timestamps: None,
            create_renderpass2_supported: true,
            create_renderpass2_enabled: true,
            enabled_extensions: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phones_are_found_by_name_and_parse_to_their_vendor() {
        let mali = DeviceProfile::phone("Mali-G72").expect("listed");
        assert_eq!(mali.vendor, GpuVendor::Arm);
        assert!(mali.vendor.is_tile_based());
        assert_eq!(
            DeviceProfile::phone("Adreno (TM) 610").map(|p| p.vendor),
            Some(GpuVendor::Qualcomm)
        );
        assert_eq!(DeviceProfile::phone("GeForce RTX 4090"), None);
        // Names are unique: a name picks one profile.
        for (i, gpu) in PHONE_GPUS.iter().enumerate() {
            assert!(
                PHONE_GPUS[..i].iter().all(|other| other.name != gpu.name),
                "{}",
                gpu.name
            );
        }
    }
}
