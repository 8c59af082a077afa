//! What the headless examples (benchmarks, the showcase without a display, the soak) and the GPU
//! tests share: the image they render into, the plugin set of a benchmark app, and a frame that
//! waits for the GPU.

use bevy::{
    app::PluginGroupBuilder,
    asset::RenderAssetUsages,
    prelude::*,
    render::{
        RenderPlugin,
        pipelined_rendering::PipelinedRenderingPlugin,
        render_resource::{Extent3d, PollType, TextureDimension, TextureFormat, TextureUsages},
        renderer::RenderDevice,
        settings::{Backends, WgpuSettings},
    },
    window::ExitCondition,
    winit::WinitPlugin,
};

/// An sRGB image a camera can render into and that can be read back.
pub fn target_image(width: u32, height: u32) -> Image {
    let mut image = Image::new_fill(
        Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        &[0, 0, 0, 255],
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.texture_descriptor.usage |= TextureUsages::RENDER_ATTACHMENT | TextureUsages::COPY_SRC;
    image
}

/// `DefaultPlugins` for a benchmark: Vulkan, no window, every pipeline compiled before the
/// first frame, and the render world run inside `app.update()` (no pipelined rendering) so that
/// a frame can be timed. The caller configures or disables the `LogPlugin`.
pub fn benchmark_plugins() -> PluginGroupBuilder {
    DefaultPlugins
        .set(WindowPlugin {
            primary_window: None,
            exit_condition: ExitCondition::DontExit,
            close_when_requested: false,
            ..default()
        })
        .set(RenderPlugin {
            render_creation: WgpuSettings {
                backends: Some(Backends::VULKAN),
                ..default()
            }
            .into(),
            synchronous_pipeline_compilation: true,
            ..default()
        })
        .disable::<WinitPlugin>()
        .disable::<PipelinedRenderingPlugin>()
}

/// Runs one frame and waits until the GPU has finished it, so that timings and memory reflect
/// that frame and a headless app never queues GPU work behind the caller's back.
pub fn update_and_wait(app: &mut App) {
    app.update();
    wait_for_gpu(app);
}

/// Waits until the GPU has finished everything submitted so far.
pub fn wait_for_gpu(app: &App) {
    app.world()
        .resource::<RenderDevice>()
        .wgpu_device()
        .poll(PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .expect("the GPU finishes the frame");
}

/// The clean-exit scenario (`examples/exit.rs`, `tests/gpu/clean_exit.rs`): the lit spheres seen
/// by a 1x and a 4x MSAA camera, each drawing into its own `width` x `height` image, both tile
/// cameras when `tile`.
pub fn spawn_exit_scene(world: &mut World, tile: bool, width: u32, height: u32) {
    super::spawn_lit_spheres(world);
    for (order, msaa) in [(0, Msaa::Off), (1, Msaa::Sample4)] {
        let image = world
            .resource_mut::<Assets<Image>>()
            .add(target_image(width, height));
        let mut camera = world.spawn((
            Camera3d::default(),
            Camera {
                order,
                ..super::reference_camera()
            },
            super::reference_camera_transform(),
            msaa,
            bevy::camera::RenderTarget::Image(image.into()),
        ));
        if tile {
            camera.insert(bevy_tile_deferred::TileDeferred::default());
        }
    }
}
