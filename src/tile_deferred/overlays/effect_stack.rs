//! Bevy's effect stack after the tile pass (feature `effect_stack`, issue 32): chromatic
//! aberration, vignette and lens distortion, which bevy_post_process's `EffectStackPlugin`
//! draws in one full-screen pass (`postprocessing`) after the bloom and before the tone
//! mapping.
//!
//! bevy_post_process 0.19.1 keeps that pass's system (`post_processing`) and its resources
//! private, so the tile schedule cannot run it as it runs Bevy's bloom and FXAA. It can run
//! the pipeline: Bevy specialises it for every camera (`PostProcessingPipelineId`, public), and
//! the pipeline carries its bind group layout. What this module owns is only what Bevy keeps
//! private around it: the three settings uniforms (the same fields, filled by the same clamps
//! as Bevy's `prepare_post_processing_uniforms`), the bilinear sampler and the default colour
//! gradient of chromatic aberration (Bevy's 3x1 red, green, blue). The shader is Bevy's own,
//! so a tile camera's frame gets exactly `Core3d`'s effects, on the main texture the tile pass
//! wrote: the HDR light on an HDR camera (Bevy's tone mapping then follows, as in `Core3d`),
//! the tone-mapped frame on an LDR one.

use crate::tile_deferred::camera::PostProcessedAfterTile;
use bevy::{
    asset::RenderAssetUsages,
    prelude::*,
    render::{
        Render, RenderApp, RenderSystems,
        render_asset::RenderAssets,
        render_resource::{
            BindGroupEntries, DynamicUniformBuffer, Extent3d, FilterMode, MipmapFilterMode,
            Operations, PipelineCache, RenderPassColorAttachment, RenderPassDescriptor, Sampler,
            SamplerDescriptor, ShaderType, TextureDimension, TextureFormat,
        },
        renderer::{RenderContext, RenderDevice, RenderQueue, ViewQuery},
        texture::GpuImage,
        view::ViewTarget,
    },
};
use bevy_post_process::effect_stack::{
    ChromaticAberration, LensDistortion, PostProcessingPipelineId, Vignette,
};

/// Bevy's default chromatic-aberration gradient (bevy_post_process 0.19.1
/// `DEFAULT_CHROMATIC_ABERRATION_LUT_DATA`, crate-private there): one red, one green and one
/// blue pixel.
const DEFAULT_CHROMATIC_ABERRATION_LUT: [u8; 12] = [255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255];

/// Whether Bevy's effect stack draws on a camera with these components: Bevy extracts each only
/// above a negligible intensity (their `ExtractComponent`s), and its pass runs where any one was
/// extracted. Pure.
pub(crate) fn draws(
    chromatic_aberration: Option<&ChromaticAberration>,
    vignette: Option<&Vignette>,
    lens_distortion: Option<&LensDistortion>,
) -> bool {
    chromatic_aberration.is_some_and(|effect| effect.intensity > 1e-4)
        || vignette.is_some_and(|effect| effect.intensity > 1e-4)
        || lens_distortion.is_some_and(|effect| effect.intensity.abs() > 1e-4)
}

/// `chromatic_aberration.wgsl`'s `ChromaticAberrationSettings`.
#[derive(ShaderType, Clone, Copy, Debug, Default, PartialEq)]
struct ChromaticAberrationSettings {
    intensity: f32,
    max_samples: u32,
    unused_1: u32,
    unused_2: u32,
}

impl From<&ChromaticAberration> for ChromaticAberrationSettings {
    fn from(effect: &ChromaticAberration) -> Self {
        Self {
            intensity: effect.intensity,
            max_samples: effect.max_samples,
            ..default()
        }
    }
}

/// `vignette.wgsl`'s `VignetteSettings`.
#[derive(ShaderType, Clone, Copy, Debug, Default, PartialEq)]
struct VignetteSettings {
    intensity: f32,
    radius: f32,
    smoothness: f32,
    roundness: f32,
    center: Vec2,
    edge_compensation: f32,
    unused: u32,
    color: Vec4,
}

impl From<&Vignette> for VignetteSettings {
    /// With the clamps of Bevy's `prepare_post_processing_uniforms`.
    fn from(effect: &Vignette) -> Self {
        Self {
            intensity: effect.intensity.min(1.0),
            radius: effect.radius.max(1e-6),
            smoothness: effect.smoothness.max(0.0),
            roundness: effect.roundness.clamp(1e-6, 2.0 - 1e-6),
            center: effect.center,
            edge_compensation: effect.edge_compensation,
            unused: 0,
            color: effect.color.to_srgba().to_vec4(),
        }
    }
}

/// `lens_distortion.wgsl`'s `LensDistortionSettings`.
#[derive(ShaderType, Clone, Copy, Debug, Default, PartialEq)]
struct LensDistortionSettings {
    intensity: f32,
    scale: f32,
    multiplier: Vec2,
    center: Vec2,
    edge_curvature: f32,
    unused: u32,
}

impl From<&LensDistortion> for LensDistortionSettings {
    /// With the clamp of Bevy's `prepare_post_processing_uniforms`.
    fn from(effect: &LensDistortion) -> Self {
        Self {
            intensity: effect.intensity,
            scale: effect.scale.max(1e-6),
            multiplier: effect.multiplier,
            center: effect.center,
            edge_curvature: effect.edge_curvature,
            unused: 0,
        }
    }
}

/// Render world: the settings of every tile view that draws the effect stack this frame, one
/// entry per view in each buffer (an effect a view lacks gets the default, intensity 0, which
/// Bevy's shader skips).
#[derive(Resource, Default)]
struct EffectStackUniforms {
    chromatic_aberration: DynamicUniformBuffer<ChromaticAberrationSettings>,
    vignette: DynamicUniformBuffer<VignetteSettings>,
    lens_distortion: DynamicUniformBuffer<LensDistortionSettings>,
}

/// Render world, on a tile view: where its settings are in [`EffectStackUniforms`].
#[derive(Component, Clone, Copy, Debug)]
struct EffectStackOffsets {
    chromatic_aberration: u32,
    vignette: u32,
    lens_distortion: u32,
}

/// Render world: the sampler and default gradient the effect stack's bind group takes besides
/// the frame and the settings.
#[derive(Resource)]
struct EffectStackBindings {
    /// Bilinear, as Bevy's `common_sampler` (the frame and the gradient are both filtered).
    sampler: Sampler,
    /// Chromatic aberration's gradient where the camera names none.
    default_lut: Handle<Image>,
}

/// Wires the effect stack into the tile schedule at `step` (after the bloom, before Bevy's tone
/// mapping): called once the app has `EffectStackPlugin`.
pub(super) fn add(app: &mut App, step: impl SystemSet) {
    let default_lut = app
        .world_mut()
        .resource_mut::<Assets<Image>>()
        .add(Image::new(
            Extent3d {
                width: 3,
                height: 1,
                depth_or_array_layers: 1,
            },
            TextureDimension::D2,
            DEFAULT_CHROMATIC_ABERRATION_LUT.to_vec(),
            TextureFormat::Rgba8UnormSrgb,
            RenderAssetUsages::RENDER_WORLD,
        ));
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    let sampler = render_app
        .world()
        .resource::<RenderDevice>()
        .create_sampler(&SamplerDescriptor {
            mipmap_filter: MipmapFilterMode::Linear,
            min_filter: FilterMode::Linear,
            mag_filter: FilterMode::Linear,
            ..default()
        });
    render_app
        .insert_resource(EffectStackBindings {
            sampler,
            default_lut,
        })
        .init_resource::<EffectStackUniforms>()
        .add_systems(
            Render,
            prepare_effect_stack_uniforms.in_set(RenderSystems::Prepare),
        )
        .add_systems(
            crate::tile_deferred::camera::TileDeferredGraph,
            draw_effect_stack.in_set(step),
        );
}

/// The tile views whose effects run after their tile pass this frame, with the effect stack's
/// components (Bevy extracts each only where it draws: [`draws`]). Where one is present, the
/// stack is among the view's effects (`post_process::EFFECT_STACK`): the app has
/// `EffectStackPlugin`, or these systems would not run.
type EffectStackViews<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        Option<&'static ChromaticAberration>,
        Option<&'static Vignette>,
        Option<&'static LensDistortion>,
    ),
    With<PostProcessedAfterTile>,
>;

/// Writes each such view's settings, as Bevy's `prepare_post_processing_uniforms` writes them
/// for its own pass.
fn prepare_effect_stack_uniforms(
    mut commands: Commands,
    mut uniforms: ResMut<EffectStackUniforms>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
    views: EffectStackViews,
) {
    let uniforms = &mut *uniforms;
    uniforms.chromatic_aberration.clear();
    uniforms.vignette.clear();
    uniforms.lens_distortion.clear();
    for (view, chromatic_aberration, vignette, lens_distortion) in &views {
        if !draws(chromatic_aberration, vignette, lens_distortion) {
            commands.entity(view).remove::<EffectStackOffsets>();
            continue;
        }
        let offsets = EffectStackOffsets {
            chromatic_aberration: uniforms
                .chromatic_aberration
                .push(&chromatic_aberration.map(Into::into).unwrap_or_default()),
            vignette: uniforms
                .vignette
                .push(&vignette.map(Into::into).unwrap_or_default()),
            lens_distortion: uniforms
                .lens_distortion
                .push(&lens_distortion.map(Into::into).unwrap_or_default()),
        };
        commands.entity(view).insert(offsets);
    }
    uniforms.chromatic_aberration.write_buffer(&device, &queue);
    uniforms.vignette.write_buffer(&device, &queue);
    uniforms.lens_distortion.write_buffer(&device, &queue);
}

/// Draws Bevy's effect-stack pipeline over the view's main texture, as Bevy's `post_processing`
/// does: it reads the current main texture and writes the other one. A view without the stack
/// this frame has no [`EffectStackOffsets`], so its `ViewQuery` does not match and this does not
/// run; nor does it draw while Bevy's pipeline or the gradient is still loading (as Bevy's pass).
fn draw_effect_stack(
    view: ViewQuery<(
        &ViewTarget,
        &PostProcessingPipelineId,
        &EffectStackOffsets,
        Option<&ChromaticAberration>,
    )>,
    pipeline_cache: Res<PipelineCache>,
    uniforms: Res<EffectStackUniforms>,
    bindings: Res<EffectStackBindings>,
    images: Res<RenderAssets<GpuImage>>,
    mut ctx: RenderContext,
) {
    let (target, pipeline_id, offsets, chromatic_aberration) = view.into_inner();
    let Some(pipeline) = pipeline_cache.get_render_pipeline(**pipeline_id) else {
        return;
    };
    let lut = chromatic_aberration
        .and_then(|effect| effect.color_lut.as_ref())
        .unwrap_or(&bindings.default_lut);
    let Some(lut) = images.get(lut) else {
        return;
    };
    let (Some(chromatic_aberration), Some(vignette), Some(lens_distortion)) = (
        uniforms.chromatic_aberration.binding(),
        uniforms.vignette.binding(),
        uniforms.lens_distortion.binding(),
    ) else {
        return;
    };
    // Bevy's pipeline was made with Bevy's (private) layout; a bind group of that same layout
    // is the one it accepts.
    let layout = pipeline.get_bind_group_layout(0).into();
    let post_process = target.post_process_write();
    let bind_group = ctx.render_device().create_bind_group(
        Some("tile effect stack bind group"),
        &layout,
        &BindGroupEntries::sequential((
            post_process.source,
            &bindings.sampler,
            &lut.texture_view,
            chromatic_aberration,
            vignette,
            lens_distortion,
        )),
    );
    let mut pass = ctx.begin_tracked_render_pass(RenderPassDescriptor {
        label: Some("postprocessing"),
        color_attachments: &[Some(RenderPassColorAttachment {
            view: post_process.destination,
            depth_slice: None,
            resolve_target: None,
            ops: Operations::default(),
        })],
        depth_stencil_attachment: None,
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    });
    pass.set_render_pipeline(pipeline);
    pass.set_bind_group(
        0,
        &bind_group,
        &[
            offsets.chromatic_aberration,
            offsets.vignette,
            offsets.lens_distortion,
        ],
    );
    pass.draw(0..3, 0..1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_draws_above_bevys_negligible_intensities() {
        assert!(!draws(None, None, None));
        let faint = ChromaticAberration {
            intensity: 1e-5,
            ..default()
        };
        assert!(!draws(Some(&faint), None, None));
        assert!(draws(Some(&ChromaticAberration::default()), None, None));
        assert!(draws(None, Some(&Vignette::default()), None));
        // Lens distortion bends either way: a negative intensity draws.
        let pincushion = LensDistortion {
            intensity: -0.3,
            ..default()
        };
        assert!(draws(None, None, Some(&pincushion)));
        let flat = Vignette {
            intensity: 0.0,
            ..default()
        };
        assert!(!draws(Some(&faint), Some(&flat), None));
    }

    #[test]
    fn settings_are_clamped_as_bevy_clamps_them() {
        let wild = Vignette {
            intensity: 3.0,
            radius: -1.0,
            smoothness: -2.0,
            roundness: 5.0,
            color: Color::srgb(0.5, 0.25, 0.0),
            ..default()
        };
        let settings = VignetteSettings::from(&wild);
        assert_eq!(settings.intensity, 1.0);
        assert_eq!(settings.radius, 1e-6);
        assert_eq!(settings.smoothness, 0.0);
        assert_eq!(settings.roundness, 2.0 - 1e-6);
        // The colour in sRGB, as Bevy uploads it.
        assert_eq!(settings.color, Vec4::new(0.5, 0.25, 0.0, 1.0));
        let squeezed = LensDistortion {
            scale: 0.0,
            ..default()
        };
        assert_eq!(LensDistortionSettings::from(&squeezed).scale, 1e-6);
        let fringes = ChromaticAberration {
            intensity: 0.08,
            max_samples: 12,
            ..default()
        };
        assert_eq!(
            ChromaticAberrationSettings::from(&fringes),
            ChromaticAberrationSettings {
                intensity: 0.08,
                max_samples: 12,
                ..default()
            }
        );
    }

    #[test]
    fn settings_have_the_sizes_of_bevys_uniforms() {
        // The shader's structs: 16, 48 and 32 bytes (WGSL uniform layout).
        assert_eq!(ChromaticAberrationSettings::min_size().get(), 16);
        assert_eq!(VignetteSettings::min_size().get(), 48);
        assert_eq!(LensDistortionSettings::min_size().get(), 32);
    }
}
