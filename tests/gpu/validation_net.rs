//! The safety net works: a deliberate Vulkan usage error is caught by the harness.

use crate::harness::{GpuTest, HeadlessApp};
use ash::vk;
use bevy::render::renderer::RenderDevice;
use wgpu::hal::api::Vulkan;

/// Creates a zero-sized buffer through the raw device, which the validation layer must report
/// as `VUID-VkBufferCreateInfo-size-00912`.
fn make_invalid_buffer(render_device: &RenderDevice) {
    // SAFETY: only used to reach the raw `ash::Device`; nothing wgpu owns is touched and the
    // guard is dropped at the end of this function.
    let hal_device = unsafe { render_device.wgpu_device().as_hal::<Vulkan>() }
        .expect("the GPU tests run on Vulkan");
    let device = hal_device.raw_device();
    let info = vk::BufferCreateInfo::default()
        .size(0)
        .usage(vk::BufferUsageFlags::VERTEX_BUFFER)
        .sharing_mode(vk::SharingMode::EXCLUSIVE);
    // SAFETY: deliberately invalid (size 0): the validation layer reports the error and skips
    // the call, returning an error; should a driver create a buffer anyway it is destroyed at
    // once, unused.
    if let Ok(buffer) = unsafe { device.create_buffer(&info, None) } {
        // SAFETY: the buffer was just created on this device and was never used.
        unsafe { device.destroy_buffer(buffer, None) };
    }
}

#[test]
fn harness_catches_validation_errors() {
    let test = GpuTest::start("harness_catches_validation_errors");
    let mut headless = HeadlessApp::new(64, 64);
    headless.update();
    make_invalid_buffer(headless.app.world().resource::<RenderDevice>());
    let errors = test.take_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("VUID-VkBufferCreateInfo-size-00912")),
        "the validation layer's error was not captured; captured: {errors:#?}"
    );
    // A clean frame afterwards logs nothing: the net does not fire on its own.
    headless.update();
    assert!(test.take_errors().is_empty());
}
