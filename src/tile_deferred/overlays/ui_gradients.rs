//! bevy_ui's gradients (`BackgroundGradient`, `BorderGradient`) for the `ui` subpass (feature
//! `ui`): what each gradient node's segments are, as Bevy computes them.
//!
//! Bevy keeps what it extracts for gradients private (bevy_ui_render 0.19.1 gradient.rs:
//! `ExtractedGradients`, `ExtractedColorStops`), so the same data is extracted again here, from
//! the same components by a port of its `extract_gradients` (gradient.rs:338-577), into
//! [`TileUiGradients`], by node. A gradient phase item names its node (`main_entity`) and its
//! index into Bevy's list, whose items of one node are consecutive, background gradients first,
//! in the order of the node's `Vec<Gradient>` (single-colour gradients become plain nodes and
//! empty ones are skipped, here as there): the item's place among its node's items is its place
//! in [`TileUiGradients::of_node`]. `overlays::ui_in_pass` lays out each segment's quad (Bevy's
//! `prepare_gradient`, gradient.rs:689-911) with [`segments`].

use bevy::{
    color::{ColorToComponents, Hsla, Hsva, LinearRgba, Oklaba, Oklcha, Srgba},
    math::{Affine2, FloatOrd, ops},
    prelude::*,
    render::{
        Extract,
        sync_world::{MainEntity, MainEntityHashMap},
    },
    sprite::BorderRect,
    ui::{
        BackgroundGradient, BorderGradient, CalculatedClip, ColorStop, ComputedNode,
        ComputedStackIndex, ComputedUiRenderTargetInfo, ComputedUiTargetCamera, ConicGradient,
        InterpolationColorSpace, LinearGradient, RadialGradient, ResolvedBorderRadius,
        UiGlobalTransform,
    },
    ui_render::{NodeType, shader_flags},
};
use std::{
    f32::consts::{FRAC_PI_2, TAU},
    ops::Range,
};

/// Render-world resource: this frame's gradients of every UI node, as Bevy extracted them.
#[derive(Resource, Default)]
pub(super) struct TileUiGradients {
    /// Each node's gradients in [`Self::gradients`]: its background's, then its border's.
    by_node: MainEntityHashMap<Range<usize>>,
    gradients: Vec<UiGradient>,
    /// Every gradient's colour stops: colour, distance along the gradient (physical pixels, or
    /// radians for conic gradients), hint (Bevy's `ExtractedColorStops`).
    stops: Vec<(LinearRgba, f32, f32)>,
}

impl TileUiGradients {
    /// `node`'s gradients, in Bevy's order.
    pub(super) fn of_node(&self, node: MainEntity) -> &[UiGradient] {
        self.by_node
            .get(&node)
            .map_or(&[], |range| &self.gradients[range.clone()])
    }

    /// A gradient's colour stops.
    pub(super) fn stops(&self, gradient: &UiGradient) -> &[(LinearRgba, f32, f32)] {
        &self.stops[gradient.stops.clone()]
    }
}

/// One gradient of a node (Bevy's `ExtractedGradient`, without what only Bevy's own batching
/// uses).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct UiGradient {
    pub(super) transform: Affine2,
    /// The node's size (its rect runs from zero to it).
    pub(super) size: Vec2,
    pub(super) clip: Option<Rect>,
    /// `Rect` for a background, `Border(BORDER_ALL)` for a border.
    pub(super) node_type: NodeType,
    pub(super) border_radius: ResolvedBorderRadius,
    pub(super) border: BorderRect,
    pub(super) resolved: ResolvedGradient,
    pub(super) color_space: InterpolationColorSpace,
    stops: Range<usize>,
}

/// A gradient's shape in physical pixels (Bevy's `ResolvedGradient`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ResolvedGradient {
    Linear { angle: f32 },
    Conic { center: Vec2, start: f32 },
    Radial { center: Vec2, size: Vec2 },
}

/// What [`extract_ui_gradients`] reads of a node: the terms of Bevy's query, so that the same
/// nodes match.
type GradientNode = (
    Entity,
    &'static ComputedNode,
    &'static ComputedUiRenderTargetInfo,
    &'static UiGlobalTransform,
    &'static InheritedVisibility,
    Option<&'static CalculatedClip>,
    AnyOf<(&'static BackgroundGradient, &'static BorderGradient)>,
);

/// The rest of Bevy's query: terms it reads only to map the camera or sort.
type GradientNodeFilter = (With<ComputedStackIndex>, With<ComputedUiTargetCamera>);

/// Bevy's `extract_gradients` into [`TileUiGradients`]: the same nodes (visible ones), the same
/// gradients skipped (empty, or a single colour, which Bevy draws as a plain node), the same
/// stops resolved.
pub(super) fn extract_ui_gradients(
    mut extracted: ResMut<TileUiGradients>,
    nodes: Extract<Query<GradientNode, GradientNodeFilter>>,
    mut scratch: Local<Vec<(LinearRgba, f32, f32)>>,
) {
    let TileUiGradients {
        by_node,
        gradients,
        stops,
    } = &mut *extracted;
    by_node.clear();
    gradients.clear();
    stops.clear();
    for (entity, node, target, transform, visibility, clip, (background, border)) in &nodes {
        if !visibility.get() {
            continue;
        }
        let first = gradients.len();
        let lists = [
            (background.map(|g| &g.0), NodeType::Rect),
            (
                border.map(|g| &g.0),
                NodeType::Border(shader_flags::BORDER_ALL),
            ),
        ];
        for (list, node_type) in lists
            .into_iter()
            .filter_map(|(list, node_type)| list.map(|list| (list, node_type)))
        {
            for gradient in list {
                if gradient.is_empty() || gradient.get_single().is_some() {
                    continue;
                }
                let start = stops.len();
                let scale_factor = target.scale_factor();
                let target_size = target.physical_size().as_vec2();
                let (resolved, color_space) = match gradient {
                    Gradient::Linear(LinearGradient {
                        color_space,
                        angle,
                        stops: color_stops,
                    }) => {
                        let length = gradient_line_length(*angle, node.size);
                        resolve_color_stops(
                            color_stops,
                            (scale_factor, length, target_size),
                            &mut scratch,
                            stops,
                        );
                        (ResolvedGradient::Linear { angle: *angle }, *color_space)
                    }
                    Gradient::Radial(RadialGradient {
                        color_space,
                        position,
                        shape,
                        stops: color_stops,
                    }) => {
                        let center = position.resolve(scale_factor, node.size, target_size);
                        let size = shape.resolve(center, scale_factor, node.size, target_size);
                        resolve_color_stops(
                            color_stops,
                            (scale_factor, size.x, target_size),
                            &mut scratch,
                            stops,
                        );
                        (ResolvedGradient::Radial { center, size }, *color_space)
                    }
                    Gradient::Conic(ConicGradient {
                        color_space,
                        start: start_angle,
                        position,
                        stops: color_stops,
                    }) => {
                        let center = position.resolve(scale_factor, node.size, target_size);
                        // The explicit angles, clamped and sorted; the others between them.
                        scratch.extend(color_stops.iter().filter_map(|stop| {
                            stop.angle.map(|angle| {
                                (stop.color.to_linear(), angle.clamp(0., TAU), stop.hint)
                            })
                        }));
                        scratch.sort_by_key(|(_, angle, _)| FloatOrd(*angle));
                        let mut sorted = scratch.drain(..);
                        stops.extend(color_stops.iter().map(|stop| match stop.angle {
                            None => (stop.color.to_linear(), f32::NAN, stop.hint),
                            Some(_) => sorted.next().unwrap_or_default(),
                        }));
                        drop(sorted);
                        interpolate_color_stops(&mut stops[start..], 0., TAU);
                        let resolved = ResolvedGradient::Conic {
                            center,
                            start: *start_angle,
                        };
                        (resolved, *color_space)
                    }
                };
                gradients.push(UiGradient {
                    transform: transform.into(),
                    size: node.size,
                    clip: clip.map(|clip| clip.clip),
                    node_type,
                    border_radius: node.border_radius,
                    border: node.border,
                    resolved,
                    color_space,
                    stops: start..stops.len(),
                });
            }
        }
        if gradients.len() > first {
            by_node.insert(entity.into(), first..gradients.len());
        }
    }
}

/// Bevy's `compute_gradient_line_length` (gradient.rs:117-135): the length of a linear
/// gradient's line at `angle` across a node of `size`.
pub(super) fn gradient_line_length(angle: f32, size: Vec2) -> f32 {
    let center = 0.5 * size;
    let v = Vec2::new(ops::sin(angle), -ops::cos(angle));
    let (pos_corner, neg_corner) = if v.x >= 0.0 && v.y <= 0.0 {
        (size.with_y(0.), size.with_x(0.))
    } else if v.x >= 0.0 && v.y > 0.0 {
        (size, Vec2::ZERO)
    } else if v.x < 0.0 && v.y <= 0.0 {
        (Vec2::ZERO, size)
    } else {
        (size.with_x(0.), size.with_y(0.))
    };
    let t_pos = (pos_corner - center).dot(v);
    let t_neg = (neg_corner - center).dot(v);
    (t_pos - t_neg).abs()
}

/// Bevy's `interpolate_color_stops` (gradient.rs:261-290): stops without a position (NaN) are
/// spread evenly between their neighbours; a first or last one without takes `min` or `max`.
pub(super) fn interpolate_color_stops(stops: &mut [(LinearRgba, f32, f32)], min: f32, max: f32) {
    let Some(last) = stops.len().checked_sub(1) else {
        return;
    };
    if stops[0].1.is_nan() {
        stops[0].1 = min;
    }
    if stops[last].1.is_nan() {
        stops[last].1 = max;
    }
    let mut i = 1;
    while i < last {
        if stops[i].1.is_nan() {
            let start = i;
            let mut end = i + 1;
            while end < last && stops[end].1.is_nan() {
                end += 1;
            }
            let start_point = stops[start - 1].1;
            let end_point = stops[end].1;
            let steps = end - start;
            let step = (end_point - start_point) / (steps + 1) as f32;
            for j in 0..steps {
                stops[i + j].1 = start_point + step * (j + 1) as f32;
            }
            i = end;
        }
        i += 1;
    }
}

/// Bevy's `compute_color_stops` (gradient.rs:292-336): the explicit stops resolved to physical
/// distances along a line of `length` and sorted, the others interpolated, appended to `out`.
fn resolve_color_stops(
    stops: &[ColorStop],
    (scale_factor, length, target_size): (f32, f32, Vec2),
    scratch: &mut Vec<(LinearRgba, f32, f32)>,
    out: &mut Vec<(LinearRgba, f32, f32)>,
) {
    scratch.extend(stops.iter().filter_map(|stop| {
        stop.point
            .resolve(scale_factor, length, target_size)
            .ok()
            .map(|point| (stop.color.to_linear(), point, stop.hint))
    }));
    scratch.sort_by_key(|(_, point, _)| FloatOrd(*point));
    let min = scratch.first().map_or(0., |(_, min, _)| *min).min(0.);
    let max = scratch
        .last()
        .map_or(length, |(_, max, _)| *max)
        .max(length);
    let mut sorted = scratch.drain(..);
    let start = out.len();
    // As Bevy, a stop whose explicit position did not resolve takes the next sorted one.
    out.extend(stops.iter().map(|stop| {
        if stop.point == Val::Auto {
            (stop.color.to_linear(), f32::NAN, stop.hint)
        } else {
            sorted
                .next()
                .unwrap_or((stop.color.to_linear(), f32::NAN, stop.hint))
        }
    }));
    drop(sorted);
    interpolate_color_stops(&mut out[start..], min, max);
}

/// The number `ui_gradient.frag` knows an interpolation space by (its `IN_*` constants).
pub(super) fn space_code(space: InterpolationColorSpace) -> f32 {
    match space {
        InterpolationColorSpace::Oklaba => 0.0,
        InterpolationColorSpace::Oklcha => 1.0,
        InterpolationColorSpace::OklchaLong => 2.0,
        InterpolationColorSpace::Srgba => 3.0,
        InterpolationColorSpace::LinearRgba => 4.0,
        InterpolationColorSpace::Hsla => 5.0,
        InterpolationColorSpace::HslaLong => 6.0,
        InterpolationColorSpace::Hsva => 7.0,
        InterpolationColorSpace::HsvaLong => 8.0,
    }
}

/// Bevy's `convert_color_to_space` (gradient.rs:655-687): a colour's components in the
/// interpolation space, hues normalised to 0..1 as the shader expects.
pub(super) fn color_in_space(color: LinearRgba, space: InterpolationColorSpace) -> [f32; 4] {
    match space {
        InterpolationColorSpace::Oklaba => {
            let oklaba: Oklaba = color.into();
            [oklaba.lightness, oklaba.a, oklaba.b, oklaba.alpha]
        }
        InterpolationColorSpace::Oklcha | InterpolationColorSpace::OklchaLong => {
            let oklcha: Oklcha = color.into();
            [
                oklcha.lightness,
                oklcha.chroma,
                oklcha.hue / 360.,
                oklcha.alpha,
            ]
        }
        InterpolationColorSpace::Srgba => {
            let srgba: Srgba = color.into();
            [srgba.red, srgba.green, srgba.blue, srgba.alpha]
        }
        InterpolationColorSpace::LinearRgba => color.to_f32_array(),
        InterpolationColorSpace::Hsla | InterpolationColorSpace::HslaLong => {
            let hsla: Hsla = color.into();
            [hsla.hue / 360., hsla.saturation, hsla.lightness, hsla.alpha]
        }
        InterpolationColorSpace::Hsva | InterpolationColorSpace::HsvaLong => {
            let hsva: Hsva = color.into();
            [hsva.hue / 360., hsva.saturation, hsva.value, hsva.alpha]
        }
    }
}

/// One segment of a gradient between two stops: one quad, whose vertices differ only in their
/// corner flags and geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Segment {
    /// Bevy's flags without the corner bits: border sides, `RADIAL`/`CONIC`, `FILL_START`,
    /// `FILL_END`.
    pub(super) flags: u32,
    /// Bevy's `g_start` and `g_dir`.
    pub(super) start_dir: [f32; 4],
    pub(super) start_color: [f32; 4],
    pub(super) end_color: [f32; 4],
    /// Start and end along the gradient, the hint, the interpolation space ([`space_code`]).
    pub(super) span: [f32; 4],
}

/// Bevy's segments of one gradient (the stop loop of `prepare_gradient`, gradient.rs:795-891):
/// one per pair of consecutive stops, except where two stops coincide (a hard edge, drawn by
/// the neighbours' fills) unless it is the last pair; the first segment fills before it and the
/// last after it. `corner_points` are the node's corners relative to its centre (Bevy's
/// `QUAD_VERTEX_POSITIONS` times the size).
pub(super) fn segments(
    gradient: &UiGradient,
    stops: &[(LinearRgba, f32, f32)],
    corner_points: [Vec2; 4],
) -> Vec<Segment> {
    let mut flags = match gradient.node_type {
        NodeType::Border(borders) => borders,
        NodeType::Rect | NodeType::Inverted => 0,
    };
    let (g_start, g_dir, g_flags) = match gradient.resolved {
        ResolvedGradient::Linear { angle } => {
            let corner_index = (angle - FRAC_PI_2).rem_euclid(TAU) / FRAC_PI_2;
            (
                corner_points[(corner_index as usize).min(3)],
                // CSS angles increase clockwise.
                Vec2::new(ops::sin(angle), -ops::cos(angle)),
                0,
            )
        }
        ResolvedGradient::Conic { center, start } => {
            (center, Vec2::new(start, 0.), shader_flags::CONIC)
        }
        ResolvedGradient::Radial { center, size } => (
            center,
            Vec2::splat(if size.y != 0. { size.x / size.y } else { 1. }),
            shader_flags::RADIAL,
        ),
    };
    flags |= g_flags;
    let space = space_code(gradient.color_space);
    let mut out = Vec::with_capacity(stops.len().saturating_sub(1));
    let last_pair = stops.len().saturating_sub(2);
    for (index, pair) in stops.windows(2).enumerate() {
        let (mut start_stop, end_stop) = (pair[0], pair[1]);
        if start_stop.1 == end_stop.1 {
            if index != last_pair {
                continue;
            }
            if !out.is_empty() {
                start_stop.0 = LinearRgba::NONE;
            }
        }
        let mut segment_flags = flags;
        if 0. < start_stop.1 && (index == 0 || out.is_empty()) {
            segment_flags |= shader_flags::FILL_START;
        }
        if index == last_pair {
            segment_flags |= shader_flags::FILL_END;
        }
        out.push(Segment {
            flags: segment_flags,
            start_dir: [g_start.x, g_start.y, g_dir.x, g_dir.y],
            start_color: color_in_space(start_stop.0, gradient.color_space),
            end_color: color_in_space(end_stop.0, gradient.color_space),
            span: [start_stop.1, end_stop.1, start_stop.2, space],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(position: f32) -> (LinearRgba, f32, f32) {
        (LinearRgba::WHITE, position, 0.5)
    }

    fn positions(stops: &[(LinearRgba, f32, f32)]) -> Vec<f32> {
        stops.iter().map(|s| s.1).collect()
    }

    #[test]
    fn stops_without_positions_are_spread_between_their_neighbours() {
        let mut stops = [
            f32::NAN,
            f32::NAN,
            30.0,
            f32::NAN,
            f32::NAN,
            f32::NAN,
            f32::NAN,
        ]
        .map(stop);
        interpolate_color_stops(&mut stops, 0.0, 100.0);
        assert_eq!(
            positions(&stops),
            [0.0, 15.0, 30.0, 47.5, 65.0, 82.5, 100.0]
        );
        // One stop: it takes `min` (and is not also the last to take `max`).
        let mut one = [stop(f32::NAN)];
        interpolate_color_stops(&mut one, 0.0, 10.0);
        assert_eq!(positions(&one), [0.0]);
        interpolate_color_stops(&mut [], 0.0, 10.0);
    }

    #[test]
    fn a_linear_gradients_line_spans_the_node_along_its_angle() {
        let size = Vec2::new(200.0, 100.0);
        // To the right: the width; down: the height; diagonal: the projection of both.
        assert!((gradient_line_length(FRAC_PI_2, size) - 200.0).abs() < 1e-3);
        assert!((gradient_line_length(std::f32::consts::PI, size) - 100.0).abs() < 1e-3);
        let diagonal = std::f32::consts::FRAC_PI_4;
        let expected = (200.0 + 100.0) * diagonal.sin();
        assert!((gradient_line_length(diagonal, size) - expected).abs() < 1e-3);
    }

    #[test]
    fn explicit_stops_resolve_to_pixels_and_sort() {
        let stops = [
            ColorStop::percent(Color::WHITE, 50.0),
            ColorStop::auto(Color::BLACK),
            ColorStop::px(Color::WHITE, 10.0),
        ];
        let (mut scratch, mut out) = (Vec::new(), Vec::new());
        resolve_color_stops(
            &stops,
            (2.0, 200.0, Vec2::splat(400.0)),
            &mut scratch,
            &mut out,
        );
        // 10 px at scale 2 is 20 physical pixels and sorts first, taking the first explicit
        // slot; the auto stop between the two; the last slot the 50% (100 px).
        assert_eq!(positions(&out), [20.0, 60.0, 100.0]);
        assert!(scratch.is_empty());
    }

    fn linear(stops: &[f32]) -> (UiGradient, Vec<(LinearRgba, f32, f32)>) {
        let gradient = UiGradient {
            transform: Affine2::IDENTITY,
            size: Vec2::new(100.0, 50.0),
            clip: None,
            node_type: NodeType::Rect,
            border_radius: ResolvedBorderRadius::ZERO,
            border: BorderRect::ZERO,
            resolved: ResolvedGradient::Linear { angle: FRAC_PI_2 },
            color_space: InterpolationColorSpace::LinearRgba,
            stops: 0..stops.len(),
        };
        (gradient, stops.iter().copied().map(stop).collect())
    }

    const CORNERS: [Vec2; 4] = [
        Vec2::new(-50.0, -25.0),
        Vec2::new(50.0, -25.0),
        Vec2::new(50.0, 25.0),
        Vec2::new(-50.0, 25.0),
    ];

    #[test]
    fn segments_fill_before_the_first_and_after_the_last_and_skip_hard_edges() {
        // Three stops: two segments, the first filling before 10, the last after 90.
        let (gradient, stops) = linear(&[10.0, 50.0, 90.0]);
        let parts = segments(&gradient, &stops, CORNERS);
        let flags: Vec<u32> = parts.iter().map(|s| s.flags).collect();
        assert_eq!(flags, [shader_flags::FILL_START, shader_flags::FILL_END]);
        // To the right: from the left corner (the top left, as Bevy picks it) along +x.
        assert_eq!(parts[0].start_dir[2..], [1.0, -ops::cos(FRAC_PI_2)]);
        assert_eq!(parts[0].start_dir[..2], [-50.0, -25.0]);
        assert_eq!(parts[1].span[..2], [50.0, 90.0]);
        // A hard edge (two stops at 50) draws no segment of its own.
        let (gradient, stops) = linear(&[0.0, 50.0, 50.0, 100.0]);
        let parts = segments(&gradient, &stops, CORNERS);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].flags, 0, "starting at 0 needs no fill before");
        // A gradient ending on a hard edge keeps its last pair, transparent at its start.
        let (gradient, stops) = linear(&[0.0, 100.0, 100.0]);
        let parts = segments(&gradient, &stops, CORNERS);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].start_color, [0.0; 4]);
        assert_eq!(parts[1].flags, shader_flags::FILL_END);
    }

    #[test]
    fn colours_are_given_to_the_shader_in_the_interpolation_space() {
        let red = LinearRgba::RED;
        let hsv = color_in_space(red, InterpolationColorSpace::Hsva);
        let expected = [0.0, 1.0, 1.0, 1.0];
        assert!(
            hsv.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-6),
            "{hsv:?}"
        );
        let oklch = color_in_space(LinearRgba::BLUE, InterpolationColorSpace::OklchaLong);
        assert!(oklch[2] > 0.0 && oklch[2] < 1.0, "{oklch:?}: hue in turns");
        assert_eq!(
            color_in_space(red, InterpolationColorSpace::LinearRgba),
            [1.0, 0.0, 0.0, 1.0]
        );
        // Every space has its own number, 0-8 in Bevy's order.
        let codes: Vec<f32> = [
            InterpolationColorSpace::Oklaba,
            InterpolationColorSpace::Oklcha,
            InterpolationColorSpace::OklchaLong,
            InterpolationColorSpace::Srgba,
            InterpolationColorSpace::LinearRgba,
            InterpolationColorSpace::Hsla,
            InterpolationColorSpace::HslaLong,
            InterpolationColorSpace::Hsva,
            InterpolationColorSpace::HsvaLong,
        ]
        .map(space_code)
        .into();
        assert_eq!(codes, (0..9).map(|c| c as f32).collect::<Vec<_>>());
    }
}
