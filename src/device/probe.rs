//! Reads a [`DeviceProfile`] from the device wgpu created, through the hal interop and ash.

use super::{
    ApiVersion, DepthStencilResolve, DeviceKind, DeviceProfile, GpuModel, GpuVendor,
    GraphicsBackend, ResolveModes, SampleCounts, TimestampSupport, VulkanCaps,
};
use ash::vk;
use bevy::render::renderer::RenderDevice;
use std::ffi::CStr;
use wgpu::{Backend, DeviceType, hal::api::Vulkan};

/// Builds the profile of the device behind `render_device`; `adapter` is wgpu's own report,
/// used as is off Vulkan and for the fields Vulkan does not give.
pub(crate) fn probe_render_device(
    render_device: &RenderDevice,
    adapter: &wgpu::AdapterInfo,
) -> DeviceProfile {
    let mut profile = profile_from_adapter_info(adapter, render_device.limits());
    if adapter.backend != Backend::Vulkan {
        return profile;
    }
    // SAFETY: the hal device is only read through here (properties and limits queries that
    // Vulkan allows from any thread at any time); no wgpu object is destroyed or recorded while
    // the guard lives, and the guard is dropped before this function returns.
    let Some(hal_device) = (unsafe { render_device.wgpu_device().as_hal::<Vulkan>() }) else {
        return profile;
    };
    let instance = hal_device.shared_instance();
    let caps = probe_vulkan(
        instance.raw_instance(),
        instance.instance_api_version(),
        hal_device.raw_physical_device(),
        hal_device.queue_family_index(),
        hal_device.enabled_device_extensions(),
    );
    apply_vulkan_properties(&mut profile, caps);
    profile
}

/// What wgpu knows, on any backend.
fn profile_from_adapter_info(info: &wgpu::AdapterInfo, limits: wgpu::Limits) -> DeviceProfile {
    DeviceProfile {
        backend: match info.backend {
            Backend::Vulkan => GraphicsBackend::Vulkan,
            Backend::Metal => GraphicsBackend::Metal,
            Backend::Dx12 => GraphicsBackend::Dx12,
            Backend::Gl => GraphicsBackend::Gl,
            Backend::BrowserWebGpu => GraphicsBackend::BrowserWebGpu,
            _ => GraphicsBackend::Other,
        },
        vendor: GpuVendor::classify(info.vendor, &info.name),
        model: GpuModel::parse(&info.name),
        vendor_id: info.vendor,
        device_id: info.device,
        device_kind: match info.device_type {
            DeviceType::IntegratedGpu => DeviceKind::Integrated,
            DeviceType::DiscreteGpu => DeviceKind::Discrete,
            DeviceType::VirtualGpu => DeviceKind::Virtual,
            DeviceType::Cpu => DeviceKind::Cpu,
            DeviceType::Other => DeviceKind::Other,
        },
        device_name: info.name.clone(),
        driver_name: info.driver.clone(),
        driver_info: info.driver_info.clone(),
        driver_version: 0,
        api_version: None,
        max_color_attachments: limits.max_color_attachments,
        vulkan: None,
    }
}

/// The raw Vulkan reading, before it is merged into the profile.
struct VulkanReading {
    properties: vk::PhysicalDeviceProperties,
    driver_name: Option<String>,
    driver_info: Option<String>,
    caps: VulkanCaps,
}

fn apply_vulkan_properties(profile: &mut DeviceProfile, reading: VulkanReading) {
    let name = c_chars_to_string(&reading.properties.device_name);
    profile.vendor_id = reading.properties.vendor_id;
    profile.device_id = reading.properties.device_id;
    profile.vendor = GpuVendor::classify(reading.properties.vendor_id, &name);
    profile.model = GpuModel::parse(&name);
    profile.device_name = name;
    profile.driver_version = reading.properties.driver_version;
    profile.api_version = Some(ApiVersion::from_vk(reading.properties.api_version));
    if let Some(driver_name) = reading.driver_name {
        profile.driver_name = driver_name;
    }
    if let Some(driver_info) = reading.driver_info {
        profile.driver_info = driver_info;
    }
    profile.max_color_attachments = reading.caps.max_color_attachments;
    profile.vulkan = Some(reading.caps);
}

fn probe_vulkan(
    instance: &ash::Instance,
    instance_api_version: u32,
    physical_device: vk::PhysicalDevice,
    queue_family_index: u32,
    enabled_extensions: &[&'static CStr],
) -> VulkanReading {
    // SAFETY: `physical_device` was enumerated from `instance`, which outlives this call (wgpu
    // keeps it alive as long as the device); these are pure queries.
    let properties = unsafe { instance.get_physical_device_properties(physical_device) };
    // SAFETY: as above.
    let features = unsafe { instance.get_physical_device_features(physical_device) };
    // SAFETY: as above.
    let memory = unsafe { instance.get_physical_device_memory_properties(physical_device) };
    // SAFETY: as above.
    let queue_families =
        unsafe { instance.get_physical_device_queue_family_properties(physical_device) };
    // SAFETY: as above. An error leaves the list empty, which only hides optional features.
    let supported: Vec<String> =
        unsafe { instance.enumerate_device_extension_properties(physical_device) }
            .unwrap_or_default()
            .iter()
            .map(|ext| c_chars_to_string(&ext.extension_name))
            .collect();
    let device_api = ApiVersion::from_vk(properties.api_version);
    let has_ext = |name: &CStr| supported.iter().any(|s| s.as_bytes() == name.to_bytes());
    let enabled: Vec<String> = enabled_extensions
        .iter()
        .map(|ext| ext.to_string_lossy().into_owned())
        .collect();

    // Vulkan 1.2 promoted driver properties, depth-stencil resolve and render pass 2.
    let core_1_2 = device_api.at_least(1, 2);
    let wants_driver = core_1_2 || has_ext(ash::khr::driver_properties::NAME);
    let wants_resolve = core_1_2 || has_ext(ash::khr::depth_stencil_resolve::NAME);
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut resolve = vk::PhysicalDeviceDepthStencilResolveProperties::default();
    let mut have_properties2 = false;
    if instance_api_version >= vk::API_VERSION_1_1 && device_api.at_least(1, 1) {
        let mut properties2 = vk::PhysicalDeviceProperties2::default();
        if wants_driver {
            properties2 = properties2.push_next(&mut driver);
        }
        if wants_resolve {
            properties2 = properties2.push_next(&mut resolve);
        }
        // SAFETY: the instance and device are Vulkan 1.1 (checked above), so the core entry
        // point exists, and every structure chained is known to the device (1.2 core or its
        // extension is supported).
        unsafe { instance.get_physical_device_properties2(physical_device, &mut properties2) };
        have_properties2 = true;
    }

    let timestamps = queue_families
        .get(queue_family_index as usize)
        .filter(|family| family.timestamp_valid_bits > 0)
        .map(|family| TimestampSupport {
            period_ns: properties.limits.timestamp_period,
            valid_bits: family.timestamp_valid_bits,
        });
    // The same rule that allocates transient attachments, so that a plan says "memoryless" only
    // where the allocation will be.
    let lazily_allocated_memory =
        crate::vulkan::memory::lazily_allocated_memory_type(&memory, u32::MAX).is_some();
    let renderpass2_ext = ash::khr::create_renderpass2::NAME.to_string_lossy();
    let caps = VulkanCaps {
        max_color_attachments: properties.limits.max_color_attachments,
        max_per_stage_input_attachments: properties
            .limits
            .max_per_stage_descriptor_input_attachments,
        framebuffer_color_sample_counts: SampleCounts(
            properties.limits.framebuffer_color_sample_counts.as_raw(),
        ),
        framebuffer_depth_sample_counts: SampleCounts(
            properties.limits.framebuffer_depth_sample_counts.as_raw(),
        ),
        sample_rate_shading: features.sample_rate_shading == vk::TRUE,
        lazily_allocated_memory,
        depth_stencil_resolve: (have_properties2 && wants_resolve).then(|| DepthStencilResolve {
            depth_modes: ResolveModes(resolve.supported_depth_resolve_modes.as_raw()),
            stencil_modes: ResolveModes(resolve.supported_stencil_resolve_modes.as_raw()),
            independent_resolve_none: resolve.independent_resolve_none == vk::TRUE,
            independent_resolve: resolve.independent_resolve == vk::TRUE,
        }),
        timestamps,
        create_renderpass2_supported: core_1_2 || has_ext(ash::khr::create_renderpass2::NAME),
        create_renderpass2_enabled: core_1_2 || enabled.iter().any(|e| *e == renderpass2_ext),
        enabled_extensions: enabled,
    };
    let driver_known = have_properties2 && wants_driver;
    VulkanReading {
        properties,
        driver_name: driver_known.then(|| c_chars_to_string(&driver.driver_name)),
        driver_info: driver_known.then(|| c_chars_to_string(&driver.driver_info)),
        caps,
    }
}

/// A fixed-size, NUL-terminated Vulkan string as a Rust string.
fn c_chars_to_string(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
