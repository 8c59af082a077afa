//! The device probe reads the same values `vulkaninfo` reports for the device wgpu picked.

use crate::harness::{GpuTest, HeadlessApp};
use bevy_tile_deferred::{DeviceProfile, GraphicsBackend, device::ApiVersion};
use std::process::Command;

/// The `vulkaninfo` section of one GPU, as `key = value` lookups.
struct VulkanInfoGpu {
    text: String,
}

impl VulkanInfoGpu {
    /// Runs `vulkaninfo` and keeps the section whose `deviceName` is `device_name`.
    ///
    /// Without a display: the device's properties need no surface, and under Xvfb a test that
    /// just destroyed a Vulkan device can leave the X server refusing connections for a moment,
    /// which made vulkaninfo's surface query fail this test (CI, stop 40).
    fn read(device_name: &str) -> Self {
        let output = Command::new("vulkaninfo")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run vulkaninfo ({e}); install it: apt-get install vulkan-tools")
            });
        assert!(output.status.success(), "vulkaninfo failed: {output:?}");
        let all = String::from_utf8_lossy(&output.stdout).into_owned();
        let devices = all
            .split_once("Device Properties and Extensions:")
            .map(|(_, rest)| rest)
            .expect("vulkaninfo prints a device section");
        let mut sections = Vec::new();
        let mut current = String::new();
        for line in devices.lines() {
            let is_gpu_header = line.starts_with("GPU")
                && line.ends_with(':')
                && line[3..line.len() - 1].chars().all(|c| c.is_ascii_digit());
            if is_gpu_header && !current.is_empty() {
                sections.push(std::mem::take(&mut current));
            }
            current.push_str(line);
            current.push('\n');
        }
        sections.push(current);
        let text = sections
            .into_iter()
            .find(|section| {
                section
                    .lines()
                    .any(|l| l.trim() == format!("deviceName        = {device_name}"))
            })
            .unwrap_or_else(|| panic!("vulkaninfo has no device named {device_name:?}"));
        Self { text }
    }

    fn value(&self, key: &str) -> &str {
        self.text
            .lines()
            .filter_map(|l| l.trim().split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim())
            .unwrap_or_else(|| panic!("vulkaninfo has no {key}"))
    }

    fn number(&self, key: &str) -> u32 {
        self.value(key)
            .parse()
            .unwrap_or_else(|e| panic!("{key} = {:?}: {e}", self.value(key)))
    }

    /// `apiVersion = 1.3.230 (4206822)`.
    fn api_version(&self) -> ApiVersion {
        let text = self.value("apiVersion");
        let dotted = text.split_whitespace().next().unwrap_or_default();
        let parts: Vec<u32> = dotted.split('.').map(|p| p.parse().unwrap()).collect();
        ApiVersion {
            major: parts[0],
            minor: parts[1],
            patch: parts[2],
        }
    }

    /// The `SAMPLE_COUNT_n_BIT` lines under `key: count = k`.
    fn sample_counts(&self, key: &str) -> Vec<u32> {
        let mut lines = self
            .text
            .lines()
            .skip_while(|l| !l.trim().starts_with(&format!("{key}:")));
        lines
            .next()
            .unwrap_or_else(|| panic!("vulkaninfo has no {key}"));
        lines
            .map(str::trim)
            .take_while(|l| l.starts_with("SAMPLE_COUNT_"))
            .map(|l| {
                l.trim_start_matches("SAMPLE_COUNT_")
                    .trim_end_matches("_BIT")
                    .parse()
                    .unwrap()
            })
            .collect()
    }
}

#[test]
fn probe_matches_vulkaninfo() {
    let test = GpuTest::start("probe_matches_vulkaninfo");
    let mut headless = HeadlessApp::new(64, 64);
    headless.update();
    headless.update();
    let profile = headless
        .app
        .world()
        .get_resource::<DeviceProfile>()
        .expect("the plugin mirrors the DeviceProfile into the main world")
        .clone();
    assert_eq!(profile.backend, GraphicsBackend::Vulkan);
    let vk = profile.vulkan.as_ref().expect("Vulkan capabilities");
    let info = VulkanInfoGpu::read(&profile.device_name);

    assert_eq!(profile.api_version, Some(info.api_version()), "apiVersion");
    assert_eq!(vk.max_color_attachments, info.number("maxColorAttachments"));
    assert_eq!(
        vk.max_per_stage_input_attachments,
        info.number("maxPerStageDescriptorInputAttachments")
    );
    assert_eq!(
        vk.framebuffer_color_sample_counts
            .iter()
            .collect::<Vec<_>>(),
        info.sample_counts("framebufferColorSampleCounts")
    );
    assert_eq!(
        vk.framebuffer_depth_sample_counts
            .iter()
            .collect::<Vec<_>>(),
        info.sample_counts("framebufferDepthSampleCounts")
    );
    assert_eq!(
        vk.sample_rate_shading,
        info.value("sampleRateShading") == "true",
        "sampleRateShading"
    );
    let vendor_id = u32::from_str_radix(info.value("vendorID").trim_start_matches("0x"), 16)
        .expect("hex vendorID");
    assert_eq!(profile.vendor_id, vendor_id, "vendorID");
    assert_eq!(profile.driver_name, info.value("driverName"), "driverName");
    if let Some(timestamps) = vk.timestamps {
        let period: f32 = info.value("timestampPeriod").parse().unwrap();
        assert_eq!(timestamps.period_ns, period, "timestampPeriod");
    }
    // The summary line names the device and its key capabilities.
    let summary = profile.summary();
    assert!(summary.contains(&profile.device_name), "{summary}");
    assert!(summary.contains("sampleRateShading"), "{summary}");
    drop(test);
}
