//! Bevy's auto exposure after the tile pass (feature `auto_exposure`, issue 32): an HDR tile
//! camera with `AutoExposure` meters its light as `Core3d` meters it, and Bevy's tone mapping
//! applies the exposure.
//!
//! `Core3d` runs bevy_post_process's `auto_exposure` on the HDR light in its main texture,
//! after the main pass and before `tonemapping`: a compute pass builds a 64-bin histogram of
//! the frame's luminance (weighted by the metering mask), a second one averages it, moves the
//! view's exposure state towards the target (at the camera's speeds, by the frame's delta time)
//! and adds it to the exposure of Bevy's view uniform, which Bevy's tone mapping then applies.
//!
//! bevy_post_process 0.19.1 keeps that system, its pipelines, its histogram, each view's state
//! and settings buffers and the compensation curve's GPU data private, so the tile schedule
//! cannot run its system as it runs Bevy's bloom. What is public is the shader (an embedded
//! asset, loaded here by its path), the camera's `AutoExposure`, the curve asset (whose fields
//! are read through its reflection), Bevy's globals and view uniforms. This module owns the
//! rest: the two compute pipelines over Bevy's shader with a layout equal to Bevy's, the
//! histogram, and per view the state and settings (filled as Bevy's `prepare_buffers` fills
//! them), and per curve the 1D lookup texture and its extents (as Bevy's
//! `GpuAutoExposureCompensationCurve` makes them). So the exposure is computed by Bevy's own
//! shader from the light the tile pass stored, and written where Bevy's tone mapping reads it.

use crate::tile_deferred::camera::{PostProcessedAfterTile, TileDeferred};
use bevy::{
    ecs::entity::EntityHashMap,
    platform::collections::HashMap,
    prelude::*,
    reflect::structs::Struct,
    render::{
        Extract, ExtractSchedule, Render, RenderApp, RenderStartup, RenderSystems,
        camera::ExtractedCamera,
        globals::{GlobalsBuffer, GlobalsUniform},
        render_asset::RenderAssets,
        render_resource::{
            BindGroupEntries, BindGroupLayoutDescriptor, BindGroupLayoutEntries, Buffer,
            BufferBinding, BufferDescriptor, BufferUsages, CachedComputePipelineId,
            ComputePassDescriptor, ComputePipelineDescriptor, Extent3d, PipelineCache,
            ShaderStages, ShaderType, StorageBuffer, TextureDescriptor, TextureDimension,
            TextureFormat, TextureSampleType, TextureUsages, TextureView, UniformBuffer,
            binding_types::{
                storage_buffer, storage_buffer_sized, texture_1d, texture_2d, uniform_buffer,
            },
        },
        renderer::{RenderContext, RenderDevice, RenderQueue, ViewQuery},
        texture::{FallbackImage, GpuImage},
        view::{ExtractedView, ViewTarget, ViewUniform, ViewUniformOffset, ViewUniforms},
    },
    shader::Shader,
};
use bevy_post_process::auto_exposure::{AutoExposure, AutoExposureCompensationCurve};
use std::num::NonZero;

/// Bevy's auto-exposure shader (bevy_post_process 0.19.1 embeds it with `embedded_asset!`).
const BEVY_AUTO_EXPOSURE_SHADER: &str =
    "embedded://bevy_post_process/auto_exposure/auto_exposure.wgsl";

/// The histogram's bins (bevy_post_process 0.19.1 `HISTOGRAM_BIN_COUNT`; the shader's array).
const HISTOGRAM_BIN_COUNT: u64 = 64;

/// The compensation curve's lookup table, in texels (bevy_post_process 0.19.1 `LUT_SIZE`).
const CURVE_LUT_SIZE: usize = 256;

/// Whether Bevy meters a camera: it has `AutoExposure` and is HDR (which `AutoExposure`
/// requires; on an LDR camera Bevy's tone mapping, which applies the exposure, does not run
/// after the main pass, so the metering changes nothing). Pure.
pub(crate) fn meters(auto_exposure: Option<&AutoExposure>, hdr: bool) -> bool {
    auto_exposure.is_some() && hdr
}

/// `auto_exposure.wgsl`'s `AutoExposure` settings.
#[derive(ShaderType, Clone, Copy, Debug, PartialEq)]
struct ExposureSettings {
    min_log_lum: f32,
    inv_log_lum_range: f32,
    log_lum_range: f32,
    low_percent: f32,
    high_percent: f32,
    speed_up: f32,
    speed_down: f32,
    exponential_transition_distance: f32,
}

impl From<&AutoExposure> for ExposureSettings {
    /// As Bevy's `prepare_buffers` fills them.
    fn from(settings: &AutoExposure) -> Self {
        let (min_log_lum, max_log_lum) = (*settings.range.start(), *settings.range.end());
        Self {
            min_log_lum,
            inv_log_lum_range: 1.0 / (max_log_lum - min_log_lum),
            log_lum_range: max_log_lum - min_log_lum,
            low_percent: *settings.filter.start(),
            high_percent: *settings.filter.end(),
            speed_up: settings.speed_brighten,
            speed_down: settings.speed_darken,
            exponential_transition_distance: settings.exponential_transition_distance,
        }
    }
}

/// A view's exposure before its first metering: Bevy's `0.0` clamped into the camera's range.
fn initial_exposure(settings: &AutoExposure) -> f32 {
    0.0f32.clamp(*settings.range.start(), *settings.range.end())
}

/// An `AutoExposureCompensationCurve`'s data, read through its reflection (bevy_post_process
/// 0.19.1 keeps the fields private).
#[derive(Clone, Debug, PartialEq)]
struct CompensationCurve {
    min_log_lum: f32,
    max_log_lum: f32,
    min_compensation: f32,
    max_compensation: f32,
    lut: [u8; CURVE_LUT_SIZE],
}

impl CompensationCurve {
    /// None where the asset no longer has these fields (another Bevy version).
    fn read(curve: &AutoExposureCompensationCurve) -> Option<Self> {
        let float = |name: &str| curve.field(name)?.try_downcast_ref::<f32>().copied();
        Some(Self {
            min_log_lum: float("min_log_lum")?,
            max_log_lum: float("max_log_lum")?,
            min_compensation: float("min_compensation")?,
            max_compensation: float("max_compensation")?,
            lut: *curve
                .field("lut")?
                .try_downcast_ref::<[u8; CURVE_LUT_SIZE]>()?,
        })
    }

    /// The shader's `CompensationCurve` uniform, as Bevy's `prepare_asset` fills it.
    fn extents(&self) -> CurveExtents {
        CurveExtents {
            min_log_lum: self.min_log_lum,
            inv_log_lum_range: 1.0 / (self.max_log_lum - self.min_log_lum),
            min_compensation: self.min_compensation,
            compensation_range: self.max_compensation - self.min_compensation,
        }
    }
}

/// `auto_exposure.wgsl`'s `CompensationCurve`.
#[derive(ShaderType, Clone, Copy, Debug, PartialEq)]
struct CurveExtents {
    min_log_lum: f32,
    inv_log_lum_range: f32,
    min_compensation: f32,
    compensation_range: f32,
}

/// Render world: Bevy's shader, until the pipelines are queued at render start-up.
#[derive(Resource)]
struct AutoExposureShader(Handle<Shader>);

/// Render world: the two pipelines over Bevy's shader, its layout, and the histogram they
/// share (the average pass clears it for the next view, as in Bevy).
#[derive(Resource)]
struct AutoExposurePipelines {
    layout: BindGroupLayoutDescriptor,
    histogram: CachedComputePipelineId,
    average: CachedComputePipelineId,
    histogram_bins: Buffer,
}

/// Render world: the compensation curves the metered cameras name this frame, read from the
/// main world.
#[derive(Resource, Default)]
struct ExtractedCurves(HashMap<AssetId<AutoExposureCompensationCurve>, CompensationCurve>);

/// A view's buffers: its exposure state (kept from frame to frame: the adaptation is an
/// animation) and its settings.
struct ViewExposure {
    state: StorageBuffer<f32>,
    settings: UniformBuffer<ExposureSettings>,
}

/// A compensation curve on the GPU.
struct GpuCurve {
    data: CompensationCurve,
    lut: TextureView,
    extents: UniformBuffer<CurveExtents>,
}

/// Render world: each metered view's buffers and each curve's GPU data.
#[derive(Resource, Default)]
struct AutoExposureBuffers {
    views: EntityHashMap<ViewExposure>,
    curves: HashMap<AssetId<AutoExposureCompensationCurve>, GpuCurve>,
}

/// Wires auto exposure into the tile schedule at `step` (after the bloom and the effect stack,
/// before Bevy's tone mapping): called once the app has `AutoExposurePlugin`.
pub(super) fn add(app: &mut App, step: impl SystemSet) {
    let shader = app
        .world()
        .resource::<AssetServer>()
        .load(BEVY_AUTO_EXPOSURE_SHADER);
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    render_app
        .insert_resource(AutoExposureShader(shader))
        .init_resource::<ExtractedCurves>()
        .init_resource::<AutoExposureBuffers>()
        .add_systems(RenderStartup, queue_auto_exposure_pipelines)
        .add_systems(ExtractSchedule, extract_compensation_curves)
        .add_systems(
            Render,
            prepare_auto_exposure_buffers.in_set(RenderSystems::Prepare),
        )
        .add_systems(
            crate::tile_deferred::camera::TileDeferredGraph,
            meter_exposure.in_set(step),
        );
}

/// Queues the histogram and average pipelines over Bevy's shader, with Bevy's layout
/// (bevy_post_process 0.19.1 `init_auto_exposure_pipeline`), and makes the histogram.
fn queue_auto_exposure_pipelines(
    mut commands: Commands,
    shader: Res<AutoExposureShader>,
    pipeline_cache: Res<PipelineCache>,
    device: Res<RenderDevice>,
) {
    let layout = BindGroupLayoutDescriptor::new(
        "tile auto exposure bind group",
        &BindGroupLayoutEntries::sequential(
            ShaderStages::COMPUTE,
            (
                uniform_buffer::<GlobalsUniform>(false),
                uniform_buffer::<ExposureSettings>(false),
                texture_2d(TextureSampleType::Float { filterable: false }),
                texture_2d(TextureSampleType::Float { filterable: false }),
                texture_1d(TextureSampleType::Float { filterable: false }),
                uniform_buffer::<CurveExtents>(false),
                storage_buffer_sized(false, NonZero::<u64>::new(HISTOGRAM_BIN_COUNT * 4)),
                storage_buffer_sized(false, NonZero::<u64>::new(4)),
                storage_buffer::<ViewUniform>(true),
            ),
        ),
    );
    let pipeline = |entry_point: &'static str| {
        pipeline_cache.queue_compute_pipeline(ComputePipelineDescriptor {
            label: Some(format!("tile auto exposure {entry_point}").into()),
            layout: vec![layout.clone()],
            shader: shader.0.clone(),
            entry_point: Some(entry_point.into()),
            ..default()
        })
    };
    let (histogram, average) = (pipeline("compute_histogram"), pipeline("compute_average"));
    commands.insert_resource(AutoExposurePipelines {
        histogram,
        average,
        // Zeroed at creation; the average pass clears it after each use.
        histogram_bins: device.create_buffer(&BufferDescriptor {
            label: Some("tile auto exposure histogram"),
            size: HISTOGRAM_BIN_COUNT * 4,
            usage: BufferUsages::STORAGE,
            mapped_at_creation: false,
        }),
        layout,
    });
}

/// Reads, each frame, the compensation curve of every tile camera with `AutoExposure` from the
/// main world's assets (a curve still loading is left out: its cameras are not metered, as in
/// Bevy). `Core3d` cameras' curves are Bevy's own business.
fn extract_compensation_curves(
    mut extracted: ResMut<ExtractedCurves>,
    cameras: Extract<Query<&AutoExposure, With<TileDeferred>>>,
    curves: Extract<Res<Assets<AutoExposureCompensationCurve>>>,
) {
    extracted.0.clear();
    for auto_exposure in &cameras {
        let id = auto_exposure.compensation_curve.id();
        if extracted.0.contains_key(&id) {
            continue;
        }
        let Some(curve) = curves.get(id) else {
            continue;
        };
        match CompensationCurve::read(curve) {
            Some(curve) => {
                extracted.0.insert(id, curve);
            }
            None => warn_once!(
                "bevy_tile_deferred: an AutoExposureCompensationCurve without the fields of \
                 bevy_post_process 0.19.1; tile cameras with it are not metered"
            ),
        }
    }
}

/// Makes or updates each metered tile view's buffers (settings rewritten where they changed,
/// the state kept: Bevy too keeps it when the settings change) and each curve's GPU data
/// (remade where the curve changed); drops those of views and curves gone.
fn prepare_auto_exposure_buffers(
    mut buffers: ResMut<AutoExposureBuffers>,
    extracted: Res<ExtractedCurves>,
    views: Query<(Entity, &AutoExposure, &ExtractedCamera), With<PostProcessedAfterTile>>,
    exposed: Query<(), With<AutoExposure>>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
) {
    let buffers = &mut *buffers;
    // A view kept out of the tile schedule for some frames (a fallback) keeps its state.
    buffers.views.retain(|view, _| exposed.contains(*view));
    for (view, auto_exposure, camera) in &views {
        if !meters(Some(auto_exposure), camera.hdr) {
            continue;
        }
        let settings = ExposureSettings::from(auto_exposure);
        let buffers = buffers.views.entry(view).or_insert_with(|| {
            let mut state = StorageBuffer::from(initial_exposure(auto_exposure));
            state.set_label(Some("tile auto exposure state"));
            state.write_buffer(&device, &queue);
            let mut settings = UniformBuffer::from(settings);
            settings.write_buffer(&device, &queue);
            ViewExposure { state, settings }
        });
        if *buffers.settings.get() != settings {
            buffers.settings.set(settings);
            buffers.settings.write_buffer(&device, &queue);
        }
    }
    buffers.curves.retain(|id, _| extracted.0.contains_key(id));
    for (id, curve) in &extracted.0 {
        if buffers.curves.get(id).is_some_and(|gpu| gpu.data == *curve) {
            continue;
        }
        let texture = device.create_texture_with_data(
            &queue,
            &TextureDescriptor {
                label: Some("tile auto exposure compensation curve"),
                size: Extent3d {
                    width: CURVE_LUT_SIZE as u32,
                    height: 1,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: TextureDimension::D1,
                format: TextureFormat::R8Unorm,
                usage: TextureUsages::COPY_DST | TextureUsages::TEXTURE_BINDING,
                view_formats: &[TextureFormat::R8Unorm],
            },
            default(),
            &curve.lut,
        );
        let mut extents = UniformBuffer::from(curve.extents());
        extents.write_buffer(&device, &queue);
        buffers.curves.insert(
            *id,
            GpuCurve {
                data: curve.clone(),
                lut: texture.create_view(&default()),
                extents,
            },
        );
    }
}

/// Meters the view's light as Bevy's `auto_exposure` does: the histogram over the viewport,
/// then the average, which moves the view's state and adds it to the exposure in Bevy's view
/// uniform for Bevy's tone mapping. Skipped, as Bevy skips it, while a pipeline or the curve
/// is not ready; a view without buffers is not metered this frame.
fn meter_exposure(
    view: ViewQuery<(
        &ViewUniformOffset,
        &ViewTarget,
        &ExtractedView,
        &AutoExposure,
    )>,
    pipeline_cache: Res<PipelineCache>,
    pipelines: Option<Res<AutoExposurePipelines>>,
    buffers: Res<AutoExposureBuffers>,
    view_uniforms: Res<ViewUniforms>,
    globals: Res<GlobalsBuffer>,
    fallback: Res<FallbackImage>,
    images: Res<RenderAssets<GpuImage>>,
    mut ctx: RenderContext,
) {
    let entity = view.entity();
    let (view_uniform_offset, target, extracted_view, auto_exposure) = view.into_inner();
    let (Some(pipelines), Some(view_buffers)) = (pipelines, buffers.views.get(&entity)) else {
        return;
    };
    let (Some(histogram_pipeline), Some(average_pipeline)) = (
        pipeline_cache.get_compute_pipeline(pipelines.histogram),
        pipeline_cache.get_compute_pipeline(pipelines.average),
    ) else {
        return;
    };
    let Some(curve) = buffers.curves.get(&auto_exposure.compensation_curve.id()) else {
        return;
    };
    let (Some(view_uniforms), Some(globals)) =
        (view_uniforms.uniforms.buffer(), globals.buffer.binding())
    else {
        return;
    };
    let mask = images
        .get(&auto_exposure.metering_mask)
        .map_or(&fallback.d2.texture_view, |mask| &mask.texture_view);
    let bind_group = ctx.render_device().create_bind_group(
        Some("tile auto exposure bind group"),
        &pipeline_cache.get_bind_group_layout(&pipelines.layout),
        &BindGroupEntries::sequential((
            globals,
            &view_buffers.settings,
            target.main_texture_view(),
            mask,
            &curve.lut,
            &curve.extents,
            pipelines.histogram_bins.as_entire_buffer_binding(),
            &view_buffers.state,
            BufferBinding {
                buffer: view_uniforms,
                offset: 0,
                size: Some(ViewUniform::min_size()),
            },
        )),
    );
    let mut pass = ctx
        .command_encoder()
        .begin_compute_pass(&ComputePassDescriptor {
            label: Some("auto_exposure"),
            timestamp_writes: None,
        });
    pass.set_bind_group(0, &bind_group, &[view_uniform_offset.offset]);
    pass.set_pipeline(histogram_pipeline);
    pass.dispatch_workgroups(
        extracted_view.viewport.z.div_ceil(16),
        extracted_view.viewport.w.div_ceil(16),
        1,
    );
    pass.set_pipeline(average_pipeline);
    pass.dispatch_workgroups(1, 1, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hdr_cameras_with_auto_exposure_are_metered() {
        assert!(meters(Some(&AutoExposure::default()), true));
        assert!(!meters(Some(&AutoExposure::default()), false));
        assert!(!meters(None, true));
    }

    #[test]
    fn settings_are_filled_as_bevy_fills_them() {
        let settings = AutoExposure {
            range: -4.0..=12.0,
            filter: 0.2..=0.95,
            speed_brighten: 5.0,
            speed_darken: 2.0,
            exponential_transition_distance: 0.5,
            ..default()
        };
        assert_eq!(
            ExposureSettings::from(&settings),
            ExposureSettings {
                min_log_lum: -4.0,
                inv_log_lum_range: 1.0 / 16.0,
                log_lum_range: 16.0,
                low_percent: 0.2,
                high_percent: 0.95,
                speed_up: 5.0,
                speed_down: 2.0,
                exponential_transition_distance: 0.5,
            }
        );
        assert_eq!(initial_exposure(&settings), 0.0);
        let bright = AutoExposure {
            range: 2.0..=8.0,
            ..default()
        };
        assert_eq!(initial_exposure(&bright), 2.0);
    }

    #[test]
    fn a_curve_is_read_through_its_reflection() {
        use bevy::math::{cubic_splines::LinearSpline, vec2};
        let curve = AutoExposureCompensationCurve::from_curve(LinearSpline::new([
            vec2(-4.0, -2.0),
            vec2(0.0, 0.0),
            vec2(4.0, 2.0),
        ]))
        .expect("a curve in range");
        let read = CompensationCurve::read(&curve).expect("bevy_post_process 0.19.1's fields");
        assert_eq!((read.min_log_lum, read.max_log_lum), (-4.0, 4.0));
        assert_eq!((read.min_compensation, read.max_compensation), (-2.0, 2.0));
        // A straight line from the lowest to the highest compensation.
        assert_eq!((read.lut[0], read.lut[CURVE_LUT_SIZE - 1]), (0, 255));
        assert!(read.lut.windows(2).all(|pair| pair[0] <= pair[1]));
        assert_eq!(
            read.extents(),
            CurveExtents {
                min_log_lum: -4.0,
                inv_log_lum_range: 0.125,
                min_compensation: -2.0,
                compensation_range: 4.0,
            }
        );
        let flat = CompensationCurve::read(&AutoExposureCompensationCurve::default())
            .expect("the default curve");
        assert_eq!(flat.lut, [0; CURVE_LUT_SIZE]);
    }

    #[test]
    fn uniforms_have_the_sizes_of_bevys() {
        assert_eq!(ExposureSettings::min_size().get(), 32);
        assert_eq!(CurveExtents::min_size().get(), 16);
    }
}
