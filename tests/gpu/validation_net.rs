//! The safety net works: a deliberate Vulkan usage error, and a deliberate synchronization
//! hazard, are caught by the harness.

use crate::harness::{GpuTest, HeadlessApp};
use ash::vk;
use bevy::render::{
    render_resource::{BufferDescriptor, BufferUsages, CommandEncoderDescriptor},
    renderer::{RenderDevice, RenderQueue},
};
use wgpu::hal::{CommandEncoder as _, api::Vulkan};

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

/// Records, through the raw command buffer of a wgpu encoder (as the tile path records its
/// frames), two `vkCmdFillBuffer` writes to one buffer with no barrier between them, and
/// submits it: a write-after-write hazard that only synchronization validation can see.
fn submit_unsynchronised_writes(render_device: &RenderDevice, queue: &RenderQueue) {
    let buffer = render_device.create_buffer(&BufferDescriptor {
        label: Some("validation_net_hazard"),
        size: 256,
        usage: BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    // SAFETY: the guard is taken alone (never inside `as_hal_mut`: the snatch lock is not
    // re-entrant) and dropped at once; the pointer is used below while `buffer`, which owns the
    // hal buffer, is alive.
    let hal_buffer: *const wgpu::hal::vulkan::Buffer = unsafe { buffer.as_hal::<Vulkan>() }
        .as_deref()
        .map(|b| b as *const _)
        .expect("the GPU tests run on Vulkan");
    let mut encoder = render_device.create_command_encoder(&CommandEncoderDescriptor {
        label: Some("validation_net_hazard"),
    });
    // SAFETY: this encoder is used only through the hal encoder; `hal_buffer` points at the
    // hal buffer of `buffer`, alive until the wait below; the clears stay inside its 256
    // bytes. The missing barrier between them is the point: a data hazard, not an invalid call.
    unsafe {
        encoder.as_hal_mut::<Vulkan, _, _>(|hal_encoder| {
            let hal_encoder = hal_encoder.expect("a recording encoder");
            hal_encoder.clear_buffer(&*hal_buffer, 0..256);
            hal_encoder.clear_buffer(&*hal_buffer, 0..256);
        });
    }
    queue.submit([encoder.finish()]);
    render_device
        .wgpu_device()
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the submission completes");
}

/// Synchronization validation is on: a write-after-write hazard recorded through the same raw
/// route as the tile path's frames is reported, and fails the test it happens in.
#[test]
fn harness_catches_synchronization_hazards() {
    let test = GpuTest::start("harness_catches_synchronization_hazards");
    let mut headless = HeadlessApp::new(64, 64);
    headless.update();
    let world = headless.app.world();
    submit_unsynchronised_writes(
        world.resource::<RenderDevice>(),
        world.resource::<RenderQueue>(),
    );
    let errors = test.take_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("SYNC-HAZARD-WRITE-AFTER-WRITE")),
        "synchronization validation did not report the hazard; captured: {errors:#?}"
    );
    headless.update();
    assert!(test.take_errors().is_empty());
}
