//! Shadows: which of Bevy's shadow maps a tile view samples, and where in them each light is.
//!
//! The tile path draws no shadow map of its own. Bevy renders point and spot lights' maps
//! before any camera (their views run `Core3d` themselves), and a camera's directional cascades
//! inside the camera's schedule: [`crate::tile_deferred::camera::TileDeferredGraph`] runs Bevy's own
//! `per_view_shadow_pass` (with the mesh preprocessing its indirect draws need) before the
//! tile pass, so a tile camera's cascades are its own and this frame's, in the one cascade
//! texture all cameras share. The lighting subpass samples those textures (`shadows.glsl`, a
//! port of Bevy's `shadows.wgsl`), so the layer of each light must be the one Bevy rendered it
//! to. Bevy does not publish them; they follow from its light order (`prepare_lights`,
//! bevy_pbr 0.19.1 render/light.rs:1163-1260, 1355-1387, 1674-1752), which this file mirrors:
//! - point and spot lights are indexed point lights first, shadow casters first, then by entity
//!   (`GlobalClusterableObjectMeta::entity_to_index`); a point light's cube is its index, a spot
//!   light's layer is the frame's directional cascade count plus its index among spot lights;
//! - a view's directional lights are those sharing its render layers, ordered by (volumetric,
//!   shadows enabled, entity); each shadowed one takes its cascades' layers in that order from
//!   layer 0.

use crate::tile_deferred::gpu::types::{
    GpuDirectionalCascade, GpuDirectionalLight, MAX_CASCADES_PER_LIGHT, MAX_DIRECTIONAL_LIGHTS,
    shadow_filter,
};
use bevy::{
    camera::visibility::RenderLayers,
    light::ShadowFilteringMethod,
    pbr::{ExtractedDirectionalLight, ExtractedPointLight},
    prelude::*,
};

/// A directional light of the render world, as the shadow layout reads it.
pub(crate) struct DirectionalLightRef<'a> {
    pub(crate) entity: Entity,
    pub(crate) light: &'a ExtractedDirectionalLight,
    pub(crate) layers: RenderLayers,
    /// The tile path draws it (`extract::skip_unusable_lights` did not set it aside). An
    /// unusable light still takes its place and its layers in Bevy's order.
    pub(crate) usable: bool,
}

/// Bevy's shadow map limits and this frame's light counts: what places a point or spot light in
/// the shadow textures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ShadowLayers {
    /// Point lights (not spots) in Bevy's light list.
    pub(crate) point_lights: usize,
    /// Point lights that get a cube: the first this many of Bevy's order, if they cast shadows.
    pub(crate) point_shadow_maps: usize,
    /// Spot lights that get a layer, counted from the first spot light.
    pub(crate) spot_shadow_maps: usize,
    /// The first spot layer: the most directional cascades any camera renders this frame.
    pub(crate) first_spot_layer: usize,
}

impl ShadowLayers {
    /// The counts Bevy's `prepare_lights` derives from every extracted light and camera.
    pub(crate) fn new<'a>(
        point_lights: impl Iterator<Item = &'a ExtractedPointLight> + Clone,
        directional_lights: &[DirectionalLightRef],
        camera_layers: impl Iterator<Item = RenderLayers>,
        max_texture_array_layers: usize,
    ) -> Self {
        let max_cubes = max_texture_array_layers / 6;
        let is_point = |light: &&ExtractedPointLight| light.spot_light_angles.is_none();
        let point_count = point_lights.clone().filter(is_point).count();
        let point_shadow_maps = point_lights
            .clone()
            .filter(|l| is_point(l) && l.shadow_maps_enabled)
            .count()
            .min(max_cubes);
        let directional_shadows = directional_lights
            .iter()
            .take(MAX_DIRECTIONAL_LIGHTS)
            .filter(|d| d.light.shadow_maps_enabled)
            .count()
            .min(max_texture_array_layers / MAX_CASCADES_PER_LIGHT);
        let spot_budget =
            max_texture_array_layers.saturating_sub(directional_shadows * MAX_CASCADES_PER_LIGHT);
        let spot_shadow_maps = point_lights
            .filter(|l| !is_point(l) && l.shadow_maps_enabled)
            .count()
            .min(spot_budget);
        let first_spot_layer = camera_layers
            .map(|layers| {
                directional_lights
                    .iter()
                    .filter(|d| d.light.shadow_maps_enabled && d.layers.intersects(&layers))
                    .map(|d| {
                        d.light
                            .cascade_shadow_config
                            .bounds
                            .len()
                            .min(MAX_CASCADES_PER_LIGHT)
                    })
                    .sum::<usize>()
            })
            .max()
            .unwrap_or(0)
            .min(max_texture_array_layers);
        Self {
            point_lights: point_count,
            point_shadow_maps,
            spot_shadow_maps,
            first_spot_layer,
        }
    }

    /// The layer Bevy rendered the shadow of the light at `index` in its light list to (point
    /// lights: the cube index; spot lights: the layer of the directional/spot array), or `None`
    /// where it rendered none.
    pub(crate) fn layer_of(&self, index: usize, light: &ExtractedPointLight) -> Option<u32> {
        if !light.shadow_maps_enabled {
            return None;
        }
        let layer = if light.spot_light_angles.is_none() {
            (index < self.point_shadow_maps).then_some(index)?
        } else {
            let spot_index = index.checked_sub(self.point_lights)?;
            (spot_index < self.spot_shadow_maps).then_some(self.first_spot_layer + spot_index)?
        };
        u32::try_from(layer).ok()
    }
}

/// The view's directional lights as the lighting subpass reads them, in Bevy's order for the
/// view, with the cascades Bevy renders for it (`view` is the view's render entity, which
/// keys `ExtractedDirectionalLight::cascades`).
pub(crate) fn directional_lights(
    lights: &[DirectionalLightRef],
    view: Entity,
    view_layers: &RenderLayers,
    max_texture_array_layers: usize,
) -> ([GpuDirectionalLight; MAX_DIRECTIONAL_LIGHTS], u32) {
    let mut ordered: Vec<&DirectionalLightRef> = lights
        .iter()
        .filter(|d| d.layers.intersects(view_layers))
        .collect();
    ordered.sort_by_key(|d| (d.light.volumetric, d.light.shadow_maps_enabled, d.entity));
    let mut gpu = [GpuDirectionalLight::default(); MAX_DIRECTIONAL_LIGHTS];
    let mut cascade_layers = 0usize;
    let mut count = 0;
    for d in ordered.iter().take(MAX_DIRECTIONAL_LIGHTS) {
        let light = d.light;
        // An unusable light's cascades still take their layers below.
        let mut unused = GpuDirectionalLight::default();
        let slot = if d.usable {
            count += 1;
            &mut gpu[count - 1]
        } else {
            &mut unused
        };
        let color = light.color.to_f32_array();
        *slot = GpuDirectionalLight {
            direction_to_light: crate::tile_deferred::gpu::transforms::transform_axis(
                &light.transform,
                Vec3::Z,
            )
            .extend(0.0)
            .to_array(),
            color: [
                color[0] * light.illuminance,
                color[1] * light.illuminance,
                color[2] * light.illuminance,
                0.0,
            ],
            shadow_biases_overlap: [
                light.shadow_depth_bias,
                light.shadow_normal_bias,
                light.cascade_shadow_config.overlap_proportion,
                0.0,
            ],
            ..default()
        };
        if !light.shadow_maps_enabled {
            continue;
        }
        let configured = light
            .cascade_shadow_config
            .bounds
            .len()
            .min(MAX_CASCADES_PER_LIGHT);
        // Bevy gives the light no shadow (and no layers) once the layers run out.
        if cascade_layers + configured > max_texture_array_layers {
            continue;
        }
        let first_layer = cascade_layers;
        cascade_layers += configured;
        // Bevy renders (and the shader samples) the cascades it built for this view; none on
        // a view's first frame.
        let Some(cascades) = light.cascades.get(&view) else {
            continue;
        };
        let rendered = cascades.len().min(configured);
        for ((gpu_cascade, cascade), far_bound) in slot
            .cascades
            .iter_mut()
            .zip(cascades.iter().take(rendered))
            .zip(&light.cascade_shadow_config.bounds)
        {
            *gpu_cascade = GpuDirectionalCascade {
                clip_from_world: cascade.clip_from_world.to_cols_array_2d(),
                texel_size_far_bound: [cascade.texel_size, *far_bound, 0.0, 0.0],
            };
        }
        slot.shadow_cascades = [rendered as u32, first_layer as u32, 0, 0];
    }
    (gpu, count as u32)
}

/// `View.counts.z` for the camera's `ShadowFilteringMethod` (Bevy's default is Gaussian).
pub(crate) fn filter_method(method: Option<&ShadowFilteringMethod>) -> u32 {
    match method.copied().unwrap_or_default() {
        ShadowFilteringMethod::Hardware2x2 => shadow_filter::HARDWARE_2X2,
        ShadowFilteringMethod::Gaussian => shadow_filter::GAUSSIAN,
        ShadowFilteringMethod::Temporal => shadow_filter::TEMPORAL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::light::CascadeShadowConfigBuilder;

    fn point(shadows: bool) -> ExtractedPointLight {
        ExtractedPointLight {
            color: LinearRgba::WHITE,
            intensity: 1.0,
            range: 10.0,
            radius: 0.0,
            transform: GlobalTransform::IDENTITY,
            shadow_maps_enabled: shadows,
            contact_shadows_enabled: false,
            shadow_depth_bias: 0.0,
            shadow_normal_bias: 0.0,
            shadow_map_near_z: 0.1,
            spot_light_angles: None,
            volumetric: false,
            soft_shadows_enabled: false,
            affects_lightmapped_mesh_diffuse: true,
        }
    }

    fn spot(shadows: bool) -> ExtractedPointLight {
        ExtractedPointLight {
            spot_light_angles: Some((0.2, 0.5)),
            ..point(shadows)
        }
    }

    fn sun(shadows: bool, cascades: usize) -> ExtractedDirectionalLight {
        ExtractedDirectionalLight {
            color: LinearRgba::WHITE,
            illuminance: 1.0,
            transform: GlobalTransform::IDENTITY,
            shadow_maps_enabled: shadows,
            contact_shadows_enabled: false,
            volumetric: false,
            affects_lightmapped_mesh_diffuse: true,
            shadow_depth_bias: 0.02,
            shadow_normal_bias: 1.8,
            cascade_shadow_config: CascadeShadowConfigBuilder {
                num_cascades: cascades,
                ..default()
            }
            .build(),
            cascades: default(),
            frusta: default(),
            soft_shadow_size: None,
            occlusion_culling: false,
            sun_disk_angular_size: 0.0,
            sun_disk_intensity: 0.0,
        }
    }

    fn reference(
        entity: u32,
        light: &ExtractedDirectionalLight,
        layers: RenderLayers,
    ) -> DirectionalLightRef<'_> {
        DirectionalLightRef {
            entity: Entity::from_raw_u32(entity).unwrap(),
            light,
            layers,
            usable: true,
        }
    }

    #[test]
    fn point_and_spot_layers_follow_bevys_order() {
        // Bevy's order: points (casters first), then spots (casters first).
        let lights = [
            point(true),
            point(true),
            point(false),
            spot(true),
            spot(false),
        ];
        let suns_storage = [sun(true, 4), sun(true, 2)];
        let suns: Vec<_> = suns_storage
            .iter()
            .enumerate()
            .map(|(i, s)| reference(i as u32 + 1, s, RenderLayers::default()))
            .collect();
        let layers = ShadowLayers::new(
            lights.iter(),
            &suns,
            [RenderLayers::default()].into_iter(),
            256,
        );
        assert_eq!(layers.point_lights, 3);
        assert_eq!(
            layers.first_spot_layer, 6,
            "4 + 2 cascades before the spots"
        );
        assert_eq!(layers.layer_of(0, &lights[0]), Some(0));
        assert_eq!(layers.layer_of(1, &lights[1]), Some(1));
        assert_eq!(layers.layer_of(2, &lights[2]), None, "casts no shadow");
        assert_eq!(layers.layer_of(3, &lights[3]), Some(6));
        assert_eq!(layers.layer_of(4, &lights[4]), None);
    }

    #[test]
    fn cubes_run_out_with_the_array_layers() {
        let lights = [point(true), point(true), point(true)];
        // 12 layers hold two cubes: the third caster gets none, as in Bevy.
        let layers = ShadowLayers::new(lights.iter(), &[], std::iter::empty(), 12);
        assert_eq!(layers.layer_of(1, &lights[1]), Some(1));
        assert_eq!(layers.layer_of(2, &lights[2]), None);
    }

    #[test]
    fn cascades_take_layers_in_bevys_order_for_the_view() {
        let view = Entity::from_raw_u32(100).unwrap();
        let with_cascades = |shadows: bool, n: usize| {
            let mut light = sun(shadows, n);
            light.cascades.insert(
                view,
                (0..n)
                    .map(|i| bevy::light::cascade::Cascade {
                        world_from_cascade: Mat4::IDENTITY,
                        clip_from_cascade: Mat4::IDENTITY,
                        clip_from_world: Mat4::from_scale(Vec3::splat(i as f32 + 1.0)),
                        texel_size: 0.5 * (i as f32 + 1.0),
                    })
                    .collect(),
            );
            light
        };
        let a = with_cascades(true, 3);
        let b = with_cascades(false, 4);
        let c = with_cascades(true, 2);
        let other_layer = with_cascades(true, 4);
        let lights = vec![
            reference(3, &c, RenderLayers::default()),
            reference(1, &a, RenderLayers::default()),
            reference(2, &b, RenderLayers::default()),
            reference(4, &other_layer, RenderLayers::layer(5)),
        ];
        let (gpu, count) = directional_lights(&lights, view, &RenderLayers::default(), 256);
        assert_eq!(
            count, 3,
            "the light on another render layer is not the view's"
        );
        // (volumetric, shadows, entity): b (no shadows) first, then a and c in `Entity`'s
        // order (Bevy's, whatever it is: it is not the raw index order).
        assert_eq!(gpu[0].shadow_cascades[0], 0);
        let (a_slot, c_slot) = if lights[1].entity < lights[0].entity {
            (1, 2)
        } else {
            (2, 1)
        };
        let a_first = a_slot < c_slot;
        assert_eq!(
            gpu[a_slot].shadow_cascades,
            [3, if a_first { 0 } else { 2 }, 0, 0]
        );
        assert_eq!(
            gpu[c_slot].shadow_cascades,
            [2, if a_first { 3 } else { 0 }, 0, 0]
        );
        assert_eq!(gpu[c_slot].cascades[1].texel_size_far_bound[0], 1.0);
        assert_eq!(
            gpu[a_slot].cascades[2].texel_size_far_bound[1],
            a.cascade_shadow_config.bounds[2]
        );
        // An unusable light keeps its layers but gets no slot.
        let mut lights = lights;
        lights[1].usable = false;
        let (gpu, count) = directional_lights(&lights, view, &RenderLayers::default(), 256);
        assert_eq!(count, 2);
        assert_eq!(
            gpu[1].shadow_cascades,
            [2, if a_first { 3 } else { 0 }, 0, 0]
        );
    }

    #[test]
    fn a_view_without_cascades_yet_samples_none() {
        let light = sun(true, 4);
        let lights = vec![reference(1, &light, RenderLayers::default())];
        let view = Entity::from_raw_u32(9).unwrap();
        let (gpu, count) = directional_lights(&lights, view, &RenderLayers::default(), 256);
        assert_eq!(count, 1);
        assert_eq!(gpu[0].shadow_cascades[0], 0);
    }
}
