//! What the GPU can really do: the device probe.
//!
//! The tile path depends on capabilities that wgpu does not expose (input attachments per
//! stage, multisampled framebuffer sample counts, lazily allocated memory, depth-stencil
//! resolve, render pass 2). At render start-up [`TileDeferredPlugin`](crate::TileDeferredPlugin)
//! reads them straight from Vulkan through wgpu's hal interop and ash, and publishes a
//! [`DeviceProfile`] in both the render world and the main world (for UI and tests). On a
//! backend other than Vulkan the profile says so and carries what wgpu reports.

mod classify;
pub mod phones;
mod probe;

pub use classify::{GpuModel, GpuVendor, MaliArch};
pub(crate) use probe::probe_render_device;

use bevy::prelude::{Reflect, ReflectDefault, ReflectResource, Resource};
use std::fmt;

/// The graphics API the renderer runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum GraphicsBackend {
    /// Vulkan: the only backend the tile path can use.
    Vulkan,
    /// Metal (Apple).
    Metal,
    /// Direct3D 12.
    Dx12,
    /// OpenGL / OpenGL ES / WebGL through wgpu's GLES backend.
    Gl,
    /// WebGPU in a browser.
    BrowserWebGpu,
    /// No GPU backend (wgpu's no-op backend or an unknown one).
    Other,
}

impl fmt::Display for GraphicsBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Vulkan => "Vulkan",
            Self::Metal => "Metal",
            Self::Dx12 => "Direct3D 12",
            Self::Gl => "OpenGL ES",
            Self::BrowserWebGpu => "WebGPU",
            Self::Other => "other",
        })
    }
}

/// What kind of device wgpu reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum DeviceKind {
    /// A GPU sharing memory with the CPU: every phone GPU.
    Integrated,
    /// A GPU with its own memory.
    Discrete,
    /// A virtualised GPU.
    Virtual,
    /// A software rasteriser running on the CPU (lavapipe).
    Cpu,
    /// Unknown.
    Other,
}

/// A Vulkan API version as `vkGetPhysicalDeviceProperties` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub struct ApiVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}

impl ApiVersion {
    /// Decodes a packed `VK_MAKE_API_VERSION` value.
    pub fn from_vk(packed: u32) -> Self {
        Self {
            major: ash::vk::api_version_major(packed),
            minor: ash::vk::api_version_minor(packed),
            patch: ash::vk::api_version_patch(packed),
        }
    }

    /// Whether this version is at least `major.minor`.
    pub fn at_least(self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// A set of sample counts (bit `n` set means `2^n` samples), as Vulkan's `VkSampleCountFlags`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, Default, PartialEq, Hash)]
pub struct SampleCounts(pub u32);

impl SampleCounts {
    /// Whether `samples` (1, 2, 4, 8, 16, 32 or 64) is in the set.
    pub fn contains(self, samples: u32) -> bool {
        samples.is_power_of_two() && self.0 & samples != 0
    }

    /// The counts in the set, ascending.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        (0..7)
            .map(|bit| 1u32 << bit)
            .filter(move |&n| self.0 & n != 0)
    }

    /// The largest count in the set that is not above `samples` (1 if none).
    pub fn highest_at_most(self, samples: u32) -> u32 {
        self.iter().filter(|&n| n <= samples).max().unwrap_or(1)
    }
}

impl fmt::Display for SampleCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts: Vec<String> = self.iter().map(|n| n.to_string()).collect();
        f.write_str(&counts.join(","))
    }
}

/// Depth/stencil resolve modes as `VkResolveModeFlags` (bit 0 sample zero, 1 average, 2 min,
/// 3 max).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, Default, PartialEq, Hash)]
pub struct ResolveModes(pub u32);

impl ResolveModes {
    /// `VK_RESOLVE_MODE_SAMPLE_ZERO_BIT`.
    pub const SAMPLE_ZERO: u32 = 0x1;
    /// `VK_RESOLVE_MODE_AVERAGE_BIT`.
    pub const AVERAGE: u32 = 0x2;
    /// `VK_RESOLVE_MODE_MIN_BIT`.
    pub const MIN: u32 = 0x4;
    /// `VK_RESOLVE_MODE_MAX_BIT`.
    pub const MAX: u32 = 0x8;

    /// Whether `mode` (one of the associated constants) is supported.
    pub fn contains(self, mode: u32) -> bool {
        self.0 & mode == mode
    }
}

impl fmt::Display for ResolveModes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            (Self::SAMPLE_ZERO, "sample-zero"),
            (Self::AVERAGE, "average"),
            (Self::MIN, "min"),
            (Self::MAX, "max"),
        ]
        .into_iter()
        .filter(|&(bit, _)| self.contains(bit))
        .map(|(_, name)| name)
        .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

/// `VK_KHR_depth_stencil_resolve` (core in Vulkan 1.2) support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub struct DepthStencilResolve {
    /// Supported depth resolve modes.
    pub depth_modes: ResolveModes,
    /// Supported stencil resolve modes.
    pub stencil_modes: ResolveModes,
    /// Depth and stencil can use different modes if one of them is `NONE`.
    pub independent_resolve_none: bool,
    /// Depth and stencil can use any two different modes.
    pub independent_resolve: bool,
}

/// GPU timestamp support on the graphics queue.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Clone, Debug, PartialEq)]
pub struct TimestampSupport {
    /// Nanoseconds per timestamp tick (`timestampPeriod`).
    pub period_ns: f32,
    /// Valid bits of a timestamp on the graphics queue family.
    pub valid_bits: u32,
}

/// What the Vulkan device reports, read with ash from the device wgpu created.
#[derive(Clone, Debug, PartialEq, Reflect)]
#[reflect(Clone, Debug, PartialEq)]
pub struct VulkanCaps {
    /// `maxColorAttachments`: colour attachments one subpass can write.
    pub max_color_attachments: u32,
    /// `maxPerStageDescriptorInputAttachments`: input attachments a fragment shader can read.
    pub max_per_stage_input_attachments: u32,
    /// `framebufferColorSampleCounts`.
    pub framebuffer_color_sample_counts: SampleCounts,
    /// `framebufferDepthSampleCounts`.
    pub framebuffer_depth_sample_counts: SampleCounts,
    /// The `sampleRateShading` feature (per-sample shading), needed for per-sample lighting.
    pub sample_rate_shading: bool,
    /// Whether a memory type with `LAZILY_ALLOCATED` exists: transient attachments then cost no
    /// DRAM at all. Desktop GPUs and lavapipe have none.
    pub lazily_allocated_memory: bool,
    /// Depth/stencil resolve in a render pass, if available (extension or Vulkan 1.2).
    pub depth_stencil_resolve: Option<DepthStencilResolve>,
    /// Timestamp queries on the graphics queue, if available.
    pub timestamps: Option<TimestampSupport>,
    /// `vkCreateRenderPass2` is supported by the device (extension or Vulkan 1.2).
    pub create_renderpass2_supported: bool,
    /// `vkCreateRenderPass2` can be called on wgpu's device: core in the device's API version
    /// or the extension was enabled by wgpu.
    pub create_renderpass2_enabled: bool,
    /// Device extensions wgpu enabled.
    pub enabled_extensions: Vec<String>,
}

/// The GPU this app renders with and what it can do, probed once at render start-up.
///
/// A render-world resource, mirrored into the main world.
#[derive(Resource, Clone, Debug, PartialEq, Reflect)]
#[reflect(Resource, Clone, Debug, PartialEq)]
pub struct DeviceProfile {
    /// The graphics API in use.
    pub backend: GraphicsBackend,
    /// Who made the GPU.
    pub vendor: GpuVendor,
    /// Architecture generation parsed from the name.
    pub model: GpuModel,
    /// PCI vendor id as reported (0 on some non-Vulkan backends).
    pub vendor_id: u32,
    /// PCI device id as reported.
    pub device_id: u32,
    /// Integrated, discrete, CPU...
    pub device_kind: DeviceKind,
    /// The device name, e.g. "Adreno (TM) 740".
    pub device_name: String,
    /// The driver's name, e.g. "Qualcomm Technologies Inc. Adreno Vulkan Driver".
    pub driver_name: String,
    /// Free-form driver information (usually the version string).
    pub driver_info: String,
    /// The packed `driverVersion` (vendor-specific encoding; 0 off Vulkan).
    pub driver_version: u32,
    /// The device's Vulkan API version (None off Vulkan).
    pub api_version: Option<ApiVersion>,
    /// The most colour attachments a render pass can use, from Vulkan or wgpu.
    pub max_color_attachments: u32,
    /// Vulkan-only capabilities (None off Vulkan).
    pub vulkan: Option<VulkanCaps>,
}

impl DeviceProfile {
    /// Whether the GPU renders in tiles, so saved attachment traffic is saved DRAM bandwidth.
    pub fn is_tile_based(&self) -> bool {
        self.vendor.is_tile_based()
    }

    /// The driver version in the vendor's own notation (NVIDIA and Qualcomm do not use
    /// `VK_MAKE_VERSION`).
    pub fn driver_version_string(&self) -> String {
        let v = self.driver_version;
        match self.vendor {
            // NVIDIA: 10 bits major, 8 minor, 8 sub-minor, 6 patch.
            GpuVendor::Nvidia => format!(
                "{}.{}.{}.{}",
                v >> 22,
                (v >> 14) & 0xff,
                (v >> 6) & 0xff,
                v & 0x3f
            ),
            // Qualcomm: the top bit is set; the low bits carry the driver build.
            GpuVendor::Qualcomm if v & 0x8000_0000 != 0 => {
                format!("{}.{}.{}", (v >> 22) & 0x1ff, (v >> 12) & 0x3ff, v & 0xfff)
            }
            _ => format!(
                "{}.{}.{}",
                ash::vk::api_version_major(v),
                ash::vk::api_version_minor(v),
                ash::vk::api_version_patch(v)
            ),
        }
    }

    /// One readable line for the start-up log.
    pub fn summary(&self) -> String {
        let api = self.api_version.map_or_else(
            || self.backend.to_string(),
            |v| format!("{} {v}", self.backend),
        );
        let mut line = format!(
            "{api} | {} [{}, {:?}{}] | driver {} {}",
            self.device_name,
            self.vendor,
            self.device_kind,
            if self.is_tile_based() {
                ", tile-based"
            } else {
                ""
            },
            self.driver_name,
            self.driver_info,
        );
        match &self.vulkan {
            Some(vk) => {
                line += &format!(
                    " | {} colour / {} input attachments | MSAA colour {} depth {} | \
                     sampleRateShading {} | lazily allocated memory {} | depth-stencil resolve {} | \
                     timestamps {} | renderpass2 {}",
                    vk.max_color_attachments,
                    vk.max_per_stage_input_attachments,
                    vk.framebuffer_color_sample_counts,
                    vk.framebuffer_depth_sample_counts,
                    yes_no(vk.sample_rate_shading),
                    yes_no(vk.lazily_allocated_memory),
                    vk.depth_stencil_resolve.map_or_else(
                        || "no".to_string(),
                        |r| format!("depth {} stencil {}", r.depth_modes, r.stencil_modes)
                    ),
                    vk.timestamps
                        .map_or_else(|| "no".to_string(), |t| format!("{} ns/tick", t.period_ns)),
                    if vk.create_renderpass2_enabled {
                        "enabled"
                    } else if vk.create_renderpass2_supported {
                        "supported, not enabled"
                    } else {
                        "no"
                    },
                );
            }
            None => {
                line += &format!(
                    " | {} colour attachments | not Vulkan: the tile path is unavailable",
                    self.max_color_attachments
                );
            }
        }
        line
    }
}

impl DeviceProfile {
    /// What the frame-graph compiler needs to know about this device: attachment limits, the
    /// tile budget of its architecture, lazily allocated memory, `STORE_OP_NONE`.
    pub fn frame_graph_caps(&self) -> crate::frame_graph::DeviceCaps {
        use crate::frame_graph::DeviceCaps;
        let mut caps = match (self.vendor, self.model) {
            // Arm: 128 bits of colour per pixel on Midgard and the first Bifrost cores (G71,
            // G51, G31), 256 from G72/G76 on (Arm GPU best practices, "tile buffer").
            (GpuVendor::Arm, GpuModel::Mali { arch, number }) => {
                if arch == MaliArch::Midgard || matches!(number, 31 | 51 | 71) {
                    DeviceCaps::mali_bifrost()
                } else {
                    DeviceCaps::mali_valhall()
                }
            }
            (GpuVendor::Arm, _) => DeviceCaps::mali_bifrost(),
            // Adreno: GMEM from 512 KiB (5xx) to 1.5-3 MiB (6xx/7xx); bins follow from it.
            (GpuVendor::Qualcomm, model) => DeviceCaps::adreno(match model.adreno_series() {
                Some(s) if s >= 7 => 3 << 20,
                Some(6) => 1536 << 10,
                _ => 512 << 10,
            }),
            _ => DeviceCaps::desktop(),
        };
        if let Some(vk) = &self.vulkan {
            caps.max_color_attachments = caps.max_color_attachments.min(vk.max_color_attachments);
            caps.max_input_attachments = caps
                .max_input_attachments
                .min(vk.max_per_stage_input_attachments);
            caps.lazily_allocated_memory = vk.lazily_allocated_memory;
            caps.depth_stencil_resolve = vk.depth_stencil_resolve.is_some();
        } else {
            caps.max_color_attachments = caps.max_color_attachments.min(self.max_color_attachments);
            caps.lazily_allocated_memory = false;
        }
        // VK_ATTACHMENT_STORE_OP_NONE is core in Vulkan 1.3.
        caps.store_op_none = self.api_version.is_some_and(|v| v.at_least(1, 3));
        // An immediate-mode GPU runs a subpass with a new depth attachment like any other; a
        // tiler is assumed to end its merged pass there (unverified on phones).
        caps.depth_change_merges = !self.vendor.is_tile_based();
        caps
    }
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

#[cfg(test)]
impl DeviceProfile {
    /// Mesa lavapipe as the GPU tests see it (Vulkan 1.3, 1x and 4x MSAA), for unit tests of
    /// what the profile decides.
    pub(crate) fn lavapipe_for_tests() -> Self {
        let name = "llvmpipe (LLVM 15.0.6, 256 bits)";
        Self {
            backend: GraphicsBackend::Vulkan,
            vendor: GpuVendor::classify(0x10005, name),
            model: GpuModel::parse(name),
            vendor_id: 0x10005,
            device_id: 0,
            device_kind: DeviceKind::Cpu,
            device_name: name.into(),
            driver_name: "llvmpipe".into(),
            driver_info: String::new(),
            driver_version: 0,
            api_version: Some(ApiVersion {
                major: 1,
                minor: 3,
                patch: 0,
            }),
            max_color_attachments: 8,
            vulkan: Some(VulkanCaps {
                max_color_attachments: 8,
                max_per_stage_input_attachments: 8,
                framebuffer_color_sample_counts: SampleCounts(0b101),
                framebuffer_depth_sample_counts: SampleCounts(0b101),
                sample_rate_shading: true,
                lazily_allocated_memory: false,
                depth_stencil_resolve: None,
                timestamps: None,
                create_renderpass2_supported: true,
                create_renderpass2_enabled: true,
                enabled_extensions: Vec::new(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_counts() {
        let counts = SampleCounts(0b101); // 1 and 4, as lavapipe
        assert!(counts.contains(1) && counts.contains(4));
        assert!(!counts.contains(2) && !counts.contains(8) && !counts.contains(3));
        assert_eq!(counts.iter().collect::<Vec<_>>(), vec![1, 4]);
        assert_eq!(counts.highest_at_most(8), 4);
        assert_eq!(counts.highest_at_most(2), 1);
        assert_eq!(counts.to_string(), "1,4");
    }

    #[test]
    fn resolve_modes_display() {
        assert_eq!(ResolveModes(0).to_string(), "none");
        assert_eq!(ResolveModes(0b1101).to_string(), "sample-zero|min|max");
    }

    #[test]
    fn driver_versions_in_vendor_notation() {
        let mut profile = DeviceProfile {
            backend: GraphicsBackend::Vulkan,
            vendor: GpuVendor::Nvidia,
            model: GpuModel::Unknown,
            vendor_id: GpuVendor::NVIDIA_ID,
            device_id: 0,
            device_kind: DeviceKind::Discrete,
            device_name: "NVIDIA H200".into(),
            driver_name: "NVIDIA".into(),
            driver_info: String::new(),
            // 550.54.14.0 in NVIDIA's packing.
            driver_version: (550 << 22) | (54 << 14) | (14 << 6),
            api_version: None,
            max_color_attachments: 8,
            vulkan: None,
        };
        assert_eq!(profile.driver_version_string(), "550.54.14.0");
        profile.vendor = GpuVendor::Software;
        profile.driver_version = ash::vk::make_api_version(0, 0, 0, 1);
        assert_eq!(profile.driver_version_string(), "0.0.1");
        assert!(profile.summary().contains("not Vulkan"));
    }
}
