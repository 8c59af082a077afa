//! Stage 5, the light clusters: every point and spot light assigned to the screen clusters its
//! range reaches (by a compute dispatch in the frame's command buffer, `cluster_assign.comp`;
//! on the CPU with [`TileCpuLightAssignment`](crate::TileCpuLightAssignment), the reference the
//! GPU is tested against), so that the lighting subpass shades each pixel in one draw over
//! the lights of its cluster.
//!
//! Design, and why:
//! - **The grid** is Bevy's shape: x/y tiles of the viewport and [`Z_SLICES`] depth slices, the
//!   first up to [`FIRST_SLICE_DEPTH`] (Bevy's default), then logarithmic up to the farthest
//!   point a light reaches (Bevy's `ClusterFarZ::MaxClusterableObjectRange`). Tiles are square,
//!   sized so that a view has about [`TARGET_TILES`] of them at any resolution.
//! - **In the crate.** Bevy clusters on the GPU on desktop only inside `Core3d`, which tile
//!   cameras do not run, and its cluster buffers cannot be bound as raw Vulkan buffers.
//!   Assigning here costs the non-tile cameras nothing and is the same on every platform: the
//!   grid and each light's reach are prepared on the CPU ([`ClusterInputs`]), and the same
//!   formulas run on the GPU or, for reference, on the CPU.
//! - **A bit per light per cluster**, stored word-major (`masks[word * clusters + cluster]`):
//!   a cluster has no capacity to overflow; the buffer grows with `ceil(lights / 32)`. Assigning
//!   is one OR per (light, cluster), and the shader visits a cluster's lights in index order.
//! - **The test is exact for the cluster's view-space box.** A light is in a cluster when its
//!   bounding sphere (a spot light's: of its cone's sector) reaches the box around the
//!   cluster's frustum cell, and, for a spot light, the cone does not miss the box's bounding
//!   sphere (Wronski's cone test, as Bevy does). `assign` walks only the tiles the sphere can
//!   reach; the tests compare it with a brute-force pass over every cluster, and check with
//!   points sampled inside lights that the shader's lookup ([`ClusterGrid::cluster_of`]) always
//!   finds the light.
//! - Lights without a finite, positive range light nothing and are in no cluster.

use crate::tile_deferred::{
    gpu::types::{GpuClusterableLight, GpuLightReach, GpuView},
    report::TileClusterStats,
};
use bevy::{
    math::{Mat4, UVec2, UVec3, UVec4, Vec3},
    tasks::{ComputeTaskPool, TaskPool},
};

/// Depth slices of every view (Bevy's default).
pub(crate) const Z_SLICES: u32 = 24;
/// Depth at which the logarithmic slices start; nearer points share slice 0 (Bevy's default
/// `first_slice_depth`).
pub(crate) const FIRST_SLICE_DEPTH: f32 = 5.0;
/// Screen tiles per view, about: enough that a light rarely fills a tile it barely touches,
/// few enough that assigning 1024 lights stays well under a millisecond.
pub(crate) const TARGET_TILES: u32 = 256;
/// The smallest tile side, in pixels.
const MIN_TILE_SIZE: u32 = 16;

/// The cluster grid of one view in one frame, and the shader's cluster lookup mirrored.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClusterGrid {
    /// Tiles across, tiles down, depth slices.
    pub(crate) dims: UVec3,
    /// Side of a tile, in pixels.
    pub(crate) tile_size: u32,
    /// The viewport's size, in pixels.
    pub(crate) size: UVec2,
    pub(crate) orthographic: bool,
    /// Perspective: the near plane's depth. Orthographic: the depth where slice 0 starts.
    pub(crate) near: f32,
    /// Perspective: where the logarithmic slices start.
    pub(crate) first_slice_depth: f32,
    /// The farthest depth a light reaches.
    pub(crate) far: f32,
    /// Slices per unit of `ln(depth / first_slice_depth)` (perspective) or of depth
    /// (orthographic).
    pub(crate) slice_scale: f32,
    clip_from_view: Mat4,
}

impl ClusterGrid {
    /// The grid of a viewport of `size` pixels seen through `clip_from_view`, whose lights
    /// reach depths up to `far`.
    pub(crate) fn new(size: UVec2, clip_from_view: Mat4, depth_range: (f32, f32)) -> Self {
        let size = size.max(UVec2::ONE);
        let tile_size = ((size.x as f32 * size.y as f32 / TARGET_TILES as f32)
            .sqrt()
            .ceil() as u32)
            .max(MIN_TILE_SIZE);
        let dims = UVec3::new(
            size.x.div_ceil(tile_size),
            size.y.div_ceil(tile_size),
            Z_SLICES,
        );
        let orthographic = clip_from_view.w_axis.w == 1.0;
        let (near, first_slice_depth, far, slice_scale) = if orthographic {
            let near = depth_range.0;
            let far = depth_range.1.max(near + 1e-3);
            (near, near, far, Z_SLICES as f32 / (far - near))
        } else {
            // Bevy's perspective is reverse-Z, infinite or not: near = P[3][2] / (1 + P[2][2]).
            let near = (clip_from_view.w_axis.z / (1.0 + clip_from_view.z_axis.z)).max(1e-6);
            let far = depth_range.1.max(near * 1.01);
            let first = FIRST_SLICE_DEPTH.min(0.2 * far).max(near);
            let far = far.max(first * 1.01);
            let scale = (Z_SLICES - 1) as f32 / (far / first).ln();
            (near, first, far, scale)
        };
        Self {
            dims,
            tile_size,
            size,
            orthographic,
            near,
            first_slice_depth,
            far,
            slice_scale,
            clip_from_view,
        }
    }

    /// Clusters in the grid.
    pub(crate) fn count(&self) -> usize {
        (self.dims.x * self.dims.y * self.dims.z) as usize
    }

    /// The slice a view depth falls in (lighting.glsl `cluster_slice` does the same).
    pub(crate) fn slice_of(&self, depth: f32) -> u32 {
        let k = if self.orthographic {
            ((depth - self.near) * self.slice_scale).floor()
        } else if depth < self.first_slice_depth {
            0.0
        } else {
            1.0 + ((depth / self.first_slice_depth).ln() * self.slice_scale).floor()
        };
        // `as` saturates and maps NaN to 0.
        (k.max(0.0) as u32).min(self.dims.z - 1)
    }

    /// The depth range of slice `k`, padded by a thousandth of its thickness so that a point
    /// the shader's float math puts in the slice is inside it.
    fn slice_depths(&self, k: u32) -> (f32, f32) {
        let (lo, hi) = if self.orthographic {
            let step = 1.0 / self.slice_scale;
            (
                self.near + k as f32 * step,
                self.near + (k + 1) as f32 * step,
            )
        } else if k == 0 {
            (0.0, self.first_slice_depth)
        } else {
            let at = |k: u32| self.first_slice_depth * ((k - 1) as f32 / self.slice_scale).exp();
            (at(k), at(k + 1))
        };
        // The last slice holds everything beyond `far` too, where no light reaches.
        let hi = if k + 1 == self.dims.z {
            hi.max(self.far)
        } else {
            hi
        };
        let pad = 1e-3 * (hi - lo);
        (lo - pad, hi + pad)
    }

    /// The view-space x (`axis` 0) or y (`axis` 1) of the points at `depth` that project to
    /// NDC coordinate `ndc` on that axis.
    fn view_coordinate(&self, axis: usize, ndc: f32, depth: f32) -> f32 {
        let p = &self.clip_from_view;
        let z = -depth;
        let w = p.z_axis.w * z + p.w_axis.w;
        let (scale, shear, offset) = if axis == 0 {
            (p.x_axis.x, p.z_axis.x, p.w_axis.x)
        } else {
            (p.y_axis.y, p.z_axis.y, p.w_axis.y)
        };
        (ndc * w - shear * z - offset) / scale
    }

    /// The NDC coordinate of tile boundary `index` along `axis` (NDC y points up, tiles go
    /// down).
    fn boundary_ndc(&self, axis: usize, index: u32) -> f32 {
        if axis == 0 {
            2.0 * (index * self.tile_size).min(self.size.x) as f32 / self.size.x as f32 - 1.0
        } else {
            1.0 - 2.0 * (index * self.tile_size).min(self.size.y) as f32 / self.size.y as f32
        }
    }

    /// The cluster boxes' extents along x, y (per slice, then per tile) and depth (per slice).
    fn boxes(&self) -> ClusterBoxes {
        let mut columns = Vec::with_capacity((self.dims.x * self.dims.z) as usize);
        let mut rows = Vec::with_capacity((self.dims.y * self.dims.z) as usize);
        let mut slices = Vec::with_capacity(self.dims.z as usize);
        for k in 0..self.dims.z {
            let (lo, hi) = self.slice_depths(k);
            slices.push((lo, hi));
            for (axis, tiles, out) in [(0, self.dims.x, &mut columns), (1, self.dims.y, &mut rows)]
            {
                for tile in 0..tiles {
                    let corners = [tile, tile + 1].map(|b| {
                        let ndc = self.boundary_ndc(axis, b);
                        [
                            self.view_coordinate(axis, ndc, lo.max(0.0)),
                            self.view_coordinate(axis, ndc, hi),
                        ]
                    });
                    let corners = corners.as_flattened();
                    let min = corners.iter().copied().fold(f32::INFINITY, f32::min);
                    let max = corners.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    out.push((min, max));
                }
            }
        }
        ClusterBoxes {
            column_min: columns.iter().map(|c| c.0).collect(),
            column_max: columns.iter().map(|c| c.1).collect(),
            rows,
            slices,
        }
    }

    /// The cluster of a view-space point (x, y, depth), as the shader finds it for a pixel:
    /// its tile from where it projects, its slice from its depth. `None` off screen.
    #[cfg(test)]
    pub(crate) fn cluster_of(&self, point: Vec3) -> Option<UVec3> {
        let clip = self.clip_from_view * point.with_z(-point.z).extend(1.0);
        if clip.w <= 0.0 {
            return None;
        }
        let ndc = clip.truncate() / clip.w;
        let pixel_x = (ndc.x + 1.0) * 0.5 * self.size.x as f32;
        let pixel_y = (1.0 - ndc.y) * 0.5 * self.size.y as f32;
        if !(0.0..self.size.x as f32).contains(&pixel_x)
            || !(0.0..self.size.y as f32).contains(&pixel_y)
        {
            return None;
        }
        Some(UVec3::new(
            (pixel_x as u32 / self.tile_size).min(self.dims.x - 1),
            (pixel_y as u32 / self.tile_size).min(self.dims.y - 1),
            self.slice_of(point.z),
        ))
    }

    /// The flat index of cluster (x, y, slice), as the shader computes it.
    #[cfg(test)]
    pub(crate) fn index(&self, cluster: UVec3) -> usize {
        ((cluster.z * self.dims.y + cluster.y) * self.dims.x + cluster.x) as usize
    }

    /// The shader's `View.cluster_params`: tile size, near, first slice depth, slice scale.
    pub(crate) fn gpu_params(&self) -> [f32; 4] {
        [
            self.tile_size as f32,
            self.near,
            self.first_slice_depth,
            self.slice_scale,
        ]
    }
}

/// Extents of the cluster boxes, axis by axis (a cluster's box is the product of its column's,
/// row's and slice's).
struct ClusterBoxes {
    /// `[slice * tiles_x + x]`: min and max view x (two arrays, for the assignment's
    /// vectorised loop).
    column_min: Vec<f32>,
    column_max: Vec<f32>,
    /// `[slice * tiles_y + y]`: (min, max) view y.
    rows: Vec<(f32, f32)>,
    /// `[slice]`: (min, max) depth.
    slices: Vec<(f32, f32)>,
}

/// Squared distance from `value` to the interval.
fn gap_squared(value: f32, (min, max): (f32, f32)) -> f32 {
    let gap = (min - value).max(value - max).max(0.0);
    gap * gap
}

/// What a light's reach looks like in view space (x, y, depth).
#[derive(Clone, Copy, Debug)]
struct LightReach {
    /// Centre and radius of a sphere holding everything the light reaches.
    center: Vec3,
    radius: f32,
    /// Spot lights: apex, unit direction, cos and sin of the outer angle, range.
    cone: Option<(Vec3, Vec3, f32, f32, f32)>,
}

impl LightReach {
    /// `None` for a light that reaches nothing (range not finite and positive).
    fn of(light: &GpuClusterableLight, view_from_world: &Mat4) -> Option<Self> {
        let range = light.spot_direction_range[3];
        let position = Vec3::from_slice(&light.position_radius[..3]);
        if !(range.is_finite() && range > 0.0 && position.is_finite()) {
            return None;
        }
        let to_view = |p: Vec3| {
            let v = view_from_world.transform_point3(p);
            v.with_z(-v.z)
        };
        let apex = to_view(position);
        if light.spot_scale_offset_kind[2] <= 0.5 {
            return Some(Self {
                center: apex,
                radius: range,
                cone: None,
            });
        }
        // spot_offset = -cos(outer) * spot_scale (scene/draws.rs `clusterable_light`).
        let [scale, offset, ..] = light.spot_scale_offset_kind;
        let cos = (-offset / scale).clamp(0.0, 1.0);
        let sin = (1.0 - cos * cos).sqrt();
        let direction =
            view_from_world.transform_vector3(Vec3::from_slice(&light.spot_direction_range[..3]));
        let direction = direction.with_z(-direction.z).normalize_or(Vec3::Z);
        if !(cos.is_finite() && direction.is_finite()) {
            return Some(Self {
                center: apex,
                radius: range,
                cone: None,
            });
        }
        // The smallest sphere around the cone's sector: for a wide cone, centred on the rim's
        // plane; for a narrow one, through the apex and the rim.
        let (center, radius) = if cos < std::f32::consts::FRAC_1_SQRT_2 {
            (apex + direction * (range * cos), range * sin)
        } else {
            let half = range / (2.0 * cos);
            (apex + direction * half, half)
        };
        Some(Self {
            center,
            radius,
            cone: Some((apex, direction, cos, sin, range)),
        })
    }

    /// The shader's `LightReach` (`None`: a light that reaches nothing).
    fn gpu(reach: &Option<Self>) -> GpuLightReach {
        let Some(reach) = reach else {
            return GpuLightReach::default();
        };
        let center_radius = reach.center.extend(reach.radius).to_array();
        match reach.cone {
            None => GpuLightReach {
                center_radius,
                range_kind: [reach.radius, 1.0, 0.0, 0.0],
                ..Default::default()
            },
            Some((apex, direction, cos, sin, range)) => GpuLightReach {
                center_radius,
                apex_cos: apex.extend(cos).to_array(),
                direction_sin: direction.extend(sin).to_array(),
                range_kind: [range, 2.0, 0.0, 0.0],
            },
        }
    }

    /// Whether the cone misses a sphere (Wronski, "Cull that cone"; conservative).
    fn cone_misses(&self, center: Vec3, radius: f32) -> bool {
        let Some((apex, direction, cos, sin, range)) = self.cone else {
            return false;
        };
        let v = center - apex;
        let along = v.dot(direction);
        let across = (v.length_squared() - along * along).max(0.0).sqrt();
        let closest = cos * across - along * sin;
        closest > radius || along > radius + range || along < -radius
    }

    /// Whether the light reaches the box of a cluster, given its axes' extents.
    fn reaches(&self, column: (f32, f32), row: (f32, f32), slice: (f32, f32)) -> bool {
        let distance_squared = gap_squared(self.center.x, column)
            + gap_squared(self.center.y, row)
            + gap_squared(self.center.z, slice);
        if distance_squared > self.radius * self.radius {
            return false;
        }
        if self.cone.is_none() {
            return true;
        }
        let min = Vec3::new(column.0, row.0, slice.0);
        let max = Vec3::new(column.1, row.1, slice.1);
        !self.cone_misses((min + max) * 0.5, (max - min).length() * 0.5)
    }
}

/// Every light of a view assigned to the clusters it reaches.
pub(crate) struct ClusterAssignment {
    pub(crate) grid: ClusterGrid,
    /// 32-bit words per cluster: `ceil(lights / 32)`.
    pub(crate) words: u32,
    /// Word-major: bit `l % 32` of `masks[(l / 32) * clusters + cluster]` is set when light `l`
    /// reaches the cluster.
    pub(crate) masks: Vec<u32>,
    /// Lights per cluster.
    pub(crate) counts: Vec<u32>,
}

impl ClusterAssignment {
    /// Assigns `lights` (world space) to the clusters of a viewport of `size` pixels seen from
    /// `view_from_world` through `clip_from_view`.
    pub(crate) fn assign(
        size: UVec2,
        view_from_world: &Mat4,
        clip_from_view: Mat4,
        lights: &[GpuClusterableLight],
    ) -> Self {
        let (reaches, grid) = reaches_and_grid(size, view_from_world, clip_from_view, lights);
        let clusters = grid.count();
        let words = lights.len().div_ceil(32);
        let mut masks = vec![0u32; clusters * words];
        let boxes = grid.boxes();
        // Each 32-light word is a plane of its own (`masks[word * clusters..]`): planes are
        // filled in parallel without sharing anything.
        let fill_plane = |word: usize, plane: &mut [u32]| {
            let first = word * 32;
            let group = &reaches[first..(first + 32).min(reaches.len())];
            for (bit, reach) in group.iter().enumerate() {
                if let Some(reach) = reach {
                    add_light(&grid, &boxes, plane, 1 << bit, reach);
                }
            }
        };
        // A task fills its planes, then counts their bits per cluster; the partial counts are
        // summed here.
        let fill_and_count = |first_word: usize, planes: &mut [u32]| {
            let mut counts = vec![0u32; clusters];
            for (i, plane) in planes.chunks_mut(clusters).enumerate() {
                fill_plane(first_word + i, plane);
                for (count, word) in counts.iter_mut().zip(plane.iter()) {
                    *count += word.count_ones();
                }
            }
            counts
        };
        let counts = if words > 1 && clusters > 0 {
            let pool = ComputeTaskPool::get_or_init(TaskPool::default);
            let per_task = words.div_ceil(pool.thread_num().max(1));
            let partial = pool.scope(|scope| {
                for (task, planes) in masks.chunks_mut(clusters * per_task).enumerate() {
                    let fill_and_count = &fill_and_count;
                    scope.spawn(async move { fill_and_count(task * per_task, planes) });
                }
            });
            let mut counts = vec![0u32; clusters];
            for part in partial {
                for (count, add) in counts.iter_mut().zip(part) {
                    *count += add;
                }
            }
            counts
        } else if words == 1 {
            fill_and_count(0, &mut masks)
        } else {
            vec![0; clusters]
        };
        Self {
            masks,
            counts,
            words: words as u32,
            grid,
        }
    }

    /// What the report says about the clusters.
    pub(crate) fn stats(&self, assignment_ms: f64) -> TileClusterStats {
        let (max, mean) = self.occupancy();
        TileClusterStats {
            dimensions: self.grid.dims.to_array(),
            tile_size: self.grid.tile_size,
            max_lights_per_cluster: max,
            mean_lights_per_occupied_cluster: mean,
            assignment_ms,
            mask_bytes: (self.masks.len() * size_of::<u32>()) as u64,
            assigned_on_gpu: false,
        }
    }

    /// Whether light `light` is in cluster `cluster` (flat index).
    #[cfg(test)]
    fn contains(&self, cluster: usize, light: usize) -> bool {
        let word = self.masks[(light / 32) * self.counts.len() + cluster];
        word & (1 << (light % 32)) != 0
    }

    /// The most lights one cluster holds, and the mean over the clusters holding any.
    pub(crate) fn occupancy(&self) -> (u32, f32) {
        let (max, sum, occupied) = self
            .counts
            .iter()
            .filter(|&&c| c > 0)
            .fold((0, 0u64, 0u32), |(max, sum, n), &c| {
                (max.max(c), sum + c as u64, n + 1)
            });
        (
            max,
            if occupied == 0 {
                0.0
            } else {
                sum as f32 / occupied as f32
            },
        )
    }
}

/// Each light's reach in view space, and the grid over the depths they reach.
fn reaches_and_grid(
    size: UVec2,
    view_from_world: &Mat4,
    clip_from_view: Mat4,
    lights: &[GpuClusterableLight],
) -> (Vec<Option<LightReach>>, ClusterGrid) {
    let reaches: Vec<Option<LightReach>> = lights
        .iter()
        .map(|light| LightReach::of(light, view_from_world))
        .collect();
    let depth_range = reaches
        .iter()
        .flatten()
        .fold((f32::INFINITY, 0.0f32), |(lo, hi), reach| {
            (
                lo.min(reach.center.z - reach.radius),
                hi.max(reach.center.z + reach.radius),
            )
        });
    let depth_range = if depth_range.0.is_finite() {
        depth_range
    } else {
        (0.0, 1.0)
    };
    (reaches, ClusterGrid::new(size, clip_from_view, depth_range))
}

/// What the GPU assignment (`shaders/cluster_assign.comp`) reads: the grid, every light's reach
/// and the extents of the cluster boxes. Preparing it is work per light and per grid axis; the
/// tests of every (light, cluster) pair, which [`ClusterAssignment::assign`] makes on the CPU,
/// run on the GPU with the same formulas.
pub(crate) struct ClusterInputs {
    pub(crate) grid: ClusterGrid,
    /// 32-bit words per cluster: `ceil(lights / 32)`.
    pub(crate) words: u32,
    pub(crate) reaches: Vec<GpuLightReach>,
    /// (min, max): the depth of every slice, then the view x of each slice's columns, then the
    /// view y of each slice's rows (`ClusterExtents` in the shader).
    pub(crate) extents: Vec<[f32; 2]>,
}

impl ClusterInputs {
    /// As [`ClusterAssignment::assign`], up to the pairs.
    pub(crate) fn prepare(
        size: UVec2,
        view_from_world: &Mat4,
        clip_from_view: Mat4,
        lights: &[GpuClusterableLight],
    ) -> Self {
        let (reaches, grid) = reaches_and_grid(size, view_from_world, clip_from_view, lights);
        let boxes = grid.boxes();
        let extents = boxes
            .slices
            .iter()
            .map(|&(lo, hi)| [lo, hi])
            .chain(
                boxes
                    .column_min
                    .iter()
                    .zip(&boxes.column_max)
                    .map(|(&lo, &hi)| [lo, hi]),
            )
            .chain(boxes.rows.iter().map(|&(lo, hi)| [lo, hi]))
            .collect();
        Self {
            words: lights.len().div_ceil(32) as u32,
            reaches: reaches.iter().map(LightReach::gpu).collect(),
            extents,
            grid,
        }
    }
}

/// A view's light clusters this frame: assigned on the CPU, or the inputs of the GPU's
/// assignment.
pub(crate) enum LightClusters {
    Cpu(ClusterAssignment),
    Gpu(ClusterInputs),
}

impl LightClusters {
    /// A view's clusters this frame: `view` is its uniform (matrices), `viewport` its
    /// rectangle; assigned on the CPU (`on_cpu`) or prepared for the GPU's assignment.
    pub(crate) fn for_view(
        view: &GpuView,
        viewport: UVec4,
        lights: &[GpuClusterableLight],
        on_cpu: bool,
    ) -> Self {
        let size = UVec2::new(viewport.z, viewport.w);
        let view_from_world = Mat4::from_cols_array_2d(&view.view_from_world);
        let clip_from_view = Mat4::from_cols_array_2d(&view.clip_from_view);
        if on_cpu {
            Self::Cpu(ClusterAssignment::assign(
                size,
                &view_from_world,
                clip_from_view,
                lights,
            ))
        } else {
            Self::Gpu(ClusterInputs::prepare(
                size,
                &view_from_world,
                clip_from_view,
                lights,
            ))
        }
    }

    pub(crate) fn grid(&self) -> &ClusterGrid {
        match self {
            Self::Cpu(assignment) => &assignment.grid,
            Self::Gpu(inputs) => &inputs.grid,
        }
    }

    /// 32-bit mask words per cluster.
    pub(crate) fn words(&self) -> u32 {
        match self {
            Self::Cpu(assignment) => assignment.words,
            Self::Gpu(inputs) => inputs.words,
        }
    }

    /// The masks' size in bytes (`cluster_light_masks`).
    pub(crate) fn mask_bytes(&self) -> u64 {
        (self.grid().count() * self.words() as usize * size_of::<u32>()) as u64
    }
}

/// Sets `bit` in every cluster of `plane` (one 32-light word per cluster) that `reach` touches.
fn add_light(
    grid: &ClusterGrid,
    boxes: &ClusterBoxes,
    plane: &mut [u32],
    bit: u32,
    reach: &LightReach,
) {
    let dims = grid.dims;
    let (cx, cy, cz) = (reach.center.x, reach.center.y, reach.center.z);
    let r2 = reach.radius * reach.radius;
    // Slices the sphere's depth range can touch (one more each side: the padded boxes).
    let first = grid.slice_of(cz - reach.radius).saturating_sub(1);
    let last = (grid.slice_of(cz + reach.radius) + 1).min(dims.z - 1);
    for k in first..=last {
        let slice = boxes.slices[k as usize];
        let dz2 = gap_squared(cz, slice);
        if dz2 > r2 {
            continue;
        }
        let columns = (k * dims.x) as usize..((k + 1) * dims.x) as usize;
        let (column_min, column_max) = (
            &boxes.column_min[columns.clone()],
            &boxes.column_max[columns.clone()],
        );
        let rows = &boxes.rows[(k * dims.y) as usize..((k + 1) * dims.y) as usize];
        // The columns the sphere can reach in this slice (columns are ordered left to right);
        // each of them is then tested exactly in every row, in a branch-free loop the compiler
        // vectorises (the same sum, in the same order, as `LightReach::reaches`).
        let reach_x = (r2 - dz2).sqrt() * 1.0001 + 1e-6;
        let start = column_max.partition_point(|&max| max < cx - reach_x);
        let end = column_min.partition_point(|&min| min <= cx + reach_x);
        if start >= end {
            continue;
        }
        let (column_min, column_max) = (&column_min[start..end], &column_max[start..end]);
        for (y, &row) in rows.iter().enumerate() {
            let dy2 = gap_squared(cy, row);
            if dz2 + dy2 > r2 {
                continue;
            }
            let row_base = ((k * dims.y + y as u32) * dims.x) as usize;
            let words = &mut plane[row_base + start..row_base + end];
            if reach.cone.is_none() {
                for ((word, &min), &max) in words.iter_mut().zip(column_min).zip(column_max) {
                    let reached = gap_squared(cx, (min, max)) + dy2 + dz2 <= r2;
                    *word |= bit * u32::from(reached);
                }
            } else {
                for ((word, &min), &max) in words.iter_mut().zip(column_min).zip(column_max) {
                    if reach.reaches((min, max), row, slice) {
                        *word |= bit;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::{Quat, Vec4};
    use proptest::prelude::*;

    /// Bevy's infinite reverse-Z perspective.
    fn perspective(fov: f32, aspect: f32, near: f32) -> Mat4 {
        Mat4::perspective_infinite_reverse_rh(fov, aspect, near)
    }

    fn point_light(position: Vec3, range: f32) -> GpuClusterableLight {
        GpuClusterableLight {
            position_radius: position.extend(0.0).to_array(),
            color_inverse_square_range: [1.0, 1.0, 1.0, 1.0 / (range * range)],
            spot_direction_range: [0.0, 0.0, -1.0, range],
            spot_scale_offset_kind: [0.0, 0.0, 0.0, 0.0],
            shadow: [0.0, 0.0, 0.0, -1.0],
        }
    }

    fn spot_light(position: Vec3, direction: Vec3, range: f32, outer: f32) -> GpuClusterableLight {
        let inner = outer * 0.8;
        let scale = 1.0 / (inner.cos() - outer.cos()).max(1e-4);
        GpuClusterableLight {
            spot_direction_range: direction.normalize().extend(range).to_array(),
            spot_scale_offset_kind: [scale, -outer.cos() * scale, 1.0, 0.0],
            ..point_light(position, range)
        }
    }

    /// The reference: every cluster's box tested against every light.
    fn brute_force(
        assignment: &ClusterAssignment,
        view_from_world: &Mat4,
        lights: &[GpuClusterableLight],
    ) -> Vec<Vec<bool>> {
        let grid = &assignment.grid;
        let boxes = grid.boxes();
        let d = grid.dims;
        lights
            .iter()
            .map(|light| {
                let reach = LightReach::of(light, view_from_world);
                let mut inside = vec![false; grid.count()];
                for k in 0..d.z {
                    for y in 0..d.y {
                        for x in 0..d.x {
                            let cluster = grid.index(UVec3::new(x, y, k));
                            inside[cluster] = reach.is_some_and(|reach| {
                                reach.reaches(
                                    (
                                        boxes.column_min[(k * d.x + x) as usize],
                                        boxes.column_max[(k * d.x + x) as usize],
                                    ),
                                    boxes.rows[(k * d.y + y) as usize],
                                    boxes.slices[k as usize],
                                )
                            });
                        }
                    }
                }
                inside
            })
            .collect()
    }

    /// Points inside a light's reach (and in its cone), in world space.
    fn points_inside(light: &GpuClusterableLight, seeds: &[(f32, f32, f32)]) -> Vec<Vec3> {
        let position = Vec3::from_slice(&light.position_radius[..3]);
        let range = light.spot_direction_range[3];
        let spot = light.spot_scale_offset_kind[2] > 0.5;
        let direction = Vec3::from_slice(&light.spot_direction_range[..3]);
        let cos = -light.spot_scale_offset_kind[1] / light.spot_scale_offset_kind[0];
        seeds
            .iter()
            .map(|&(a, b, c)| {
                let dir = Vec3::new(a, b, c).normalize_or(Vec3::X);
                position + dir * range * 0.999 * c.abs().max(0.05)
            })
            .filter(|p| {
                let to = *p - position;
                !spot || to.normalize_or_zero().dot(direction) >= cos
            })
            .collect()
    }

    fn camera() -> (Mat4, Mat4) {
        let world_from_view =
            Mat4::from_rotation_translation(Quat::from_rotation_x(-0.5), Vec3::new(0.0, 6.0, 8.0));
        (world_from_view.inverse(), perspective(0.8, 16.0 / 9.0, 0.1))
    }

    fn check(
        size: UVec2,
        view_from_world: Mat4,
        clip_from_view: Mat4,
        lights: &[GpuClusterableLight],
        seeds: &[(f32, f32, f32)],
    ) -> Result<(), TestCaseError> {
        let assignment = ClusterAssignment::assign(size, &view_from_world, clip_from_view, lights);
        let reference = brute_force(&assignment, &view_from_world, lights);
        for (light, inside) in reference.iter().enumerate() {
            for (cluster, &expected) in inside.iter().enumerate() {
                prop_assert_eq!(
                    assignment.contains(cluster, light),
                    expected,
                    "light {} cluster {} ({:?})",
                    light,
                    cluster,
                    lights[light]
                );
            }
            prop_assert_eq!(
                assignment.counts.iter().map(|&c| c as usize).sum::<usize>(),
                reference.iter().flatten().filter(|&&b| b).count()
            );
        }
        // The GPU's inputs, run through the shader's loop, give the same masks.
        let inputs = ClusterInputs::prepare(size, &view_from_world, clip_from_view, lights);
        prop_assert_eq!(&inputs.grid, &assignment.grid);
        prop_assert_eq!(inputs.words, assignment.words);
        prop_assert!(assign_like_the_shader(&inputs) == assignment.masks);
        // The shader's lookup finds the light at every point it reaches.
        let grid = &assignment.grid;
        for (index, light) in lights.iter().enumerate() {
            for point in points_inside(light, seeds) {
                let view = view_from_world.transform_point3(point);
                let view = view.with_z(-view.z);
                if !grid.orthographic && view.z < grid.near {
                    continue;
                }
                if let Some(cluster) = grid.cluster_of(view) {
                    prop_assert!(
                        assignment.contains(grid.index(cluster), index),
                        "light {} at {:?} misses cluster {:?} of point {:?}",
                        index,
                        lights[index].position_radius,
                        cluster,
                        view
                    );
                }
            }
        }
        Ok(())
    }

    /// cluster_assign.comp's loop over [`ClusterInputs`], line for line: one invocation per
    /// cluster, the box read from the packed extents, each light's packed reach tested.
    fn assign_like_the_shader(inputs: &ClusterInputs) -> Vec<u32> {
        let d = inputs.grid.dims;
        let clusters = inputs.grid.count();
        let lights = inputs.reaches.len();
        let mut masks = vec![0u32; clusters * inputs.words as usize];
        let extent = |i: usize| (inputs.extents[i][0], inputs.extents[i][1]);
        let (dx, dy, dz) = (d.x as usize, d.y as usize, d.z as usize);
        for cluster in 0..clusters {
            let (x, y, k) = (cluster % dx, (cluster / dx) % dy, cluster / (dx * dy));
            let slice = extent(k);
            let column = extent(dz + k * dx + x);
            let row = extent(dz + dz * dx + k * dy + y);
            for light in 0..lights {
                let gpu = &inputs.reaches[light];
                if gpu.range_kind[1] < 0.5 {
                    continue;
                }
                let reach = LightReach {
                    center: Vec3::from_slice(&gpu.center_radius[..3]),
                    radius: gpu.center_radius[3],
                    cone: (gpu.range_kind[1] > 1.5).then(|| {
                        (
                            Vec3::from_slice(&gpu.apex_cos[..3]),
                            Vec3::from_slice(&gpu.direction_sin[..3]),
                            gpu.apex_cos[3],
                            gpu.direction_sin[3],
                            gpu.range_kind[0],
                        )
                    }),
                };
                if reach.reaches(column, row, slice) {
                    masks[(light / 32) * clusters + cluster] |= 1 << (light % 32);
                }
            }
        }
        masks
    }

    fn light_strategy() -> impl Strategy<Value = GpuClusterableLight> {
        (
            (-12.0f32..12.0, -2.0f32..10.0, -20.0f32..12.0),
            0.2f32..9.0,
            prop::option::of(((-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0), 0.05f32..1.55)),
        )
            .prop_map(|((x, y, z), range, spot)| match spot {
                None => point_light(Vec3::new(x, y, z), range),
                Some(((dx, dy, dz), outer)) => spot_light(
                    Vec3::new(x, y, z),
                    Vec3::new(dx, dy, dz).normalize_or(Vec3::NEG_Y),
                    range,
                    outer,
                ),
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Each light lands in exactly the clusters whose box its reach touches (the
        /// brute-force reference), and the shader's lookup of any point it reaches finds it.
        #[test]
        fn assignment_matches_brute_force_perspective(
            lights in prop::collection::vec(light_strategy(), 1..40),
            width in 64u32..2000,
            height in 64u32..1200,
            seeds in prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0), 24),
        ) {
            let (view_from_world, _) = camera();
            let clip_from_view = perspective(0.8, width as f32 / height as f32, 0.1);
            check(UVec2::new(width, height), view_from_world, clip_from_view, &lights, &seeds)?;
        }

        #[test]
        fn assignment_matches_brute_force_orthographic(
            lights in prop::collection::vec(light_strategy(), 1..30),
            seeds in prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0), 24),
        ) {
            let (view_from_world, _) = camera();
            // Bevy's orthographic projection: reverse-Z, near 0, far 1000.
            let clip_from_view = Mat4::orthographic_rh(-10.0, 10.0, -6.0, 6.0, 1000.0, 0.0);
            check(UVec2::new(800, 480), view_from_world, clip_from_view, &lights, &seeds)?;
        }
    }

    #[test]
    fn a_light_containing_the_camera_reaches_every_near_cluster() {
        let (view_from_world, clip_from_view) = camera();
        let eye = view_from_world.inverse().transform_point3(Vec3::ZERO);
        let lights = [point_light(eye, 3.0)];
        let a = ClusterAssignment::assign(
            UVec2::new(1280, 720),
            &view_from_world,
            clip_from_view,
            &lights,
        );
        for y in 0..a.grid.dims.y {
            for x in 0..a.grid.dims.x {
                assert!(
                    a.contains(a.grid.index(UVec3::new(x, y, 0)), 0),
                    "tile {x},{y}"
                );
            }
        }
    }

    #[test]
    fn lights_without_a_finite_positive_range_are_in_no_cluster() {
        let (view_from_world, clip_from_view) = camera();
        let lights = [
            point_light(Vec3::ZERO, 0.0),
            point_light(Vec3::ZERO, f32::NAN),
            point_light(Vec3::ZERO, f32::INFINITY),
            point_light(Vec3::splat(f32::NAN), 2.0),
            point_light(Vec3::ZERO, 2.0),
        ];
        let a = ClusterAssignment::assign(
            UVec2::new(640, 360),
            &view_from_world,
            clip_from_view,
            &lights,
        );
        for light in 0..4 {
            assert!(
                (0..a.grid.count()).all(|c| !a.contains(c, light)),
                "light {light}"
            );
        }
        assert!((0..a.grid.count()).any(|c| a.contains(c, 4)));
        assert!(a.grid.far.is_finite() && a.grid.slice_scale.is_finite());
    }

    #[test]
    fn slices_are_contiguous_and_match_slice_of() {
        let (_, clip_from_view) = camera();
        let grid = ClusterGrid::new(UVec2::new(1920, 1080), clip_from_view, (0.0, 60.0));
        assert_eq!(grid.dims.z, Z_SLICES);
        for k in 0..Z_SLICES {
            let (lo, hi) = grid.slice_depths(k);
            let middle = 0.5 * (lo + hi);
            assert_eq!(grid.slice_of(middle), k, "slice {k}: {lo}..{hi}");
        }
        assert_eq!(grid.slice_of(1e9), Z_SLICES - 1);
        assert_eq!(grid.slice_of(f32::NAN), 0);
    }

    #[test]
    fn tiles_keep_about_the_target_count_at_any_resolution() {
        let (_, clip_from_view) = camera();
        for (w, h) in [
            (320, 180),
            (1280, 720),
            (1920, 1080),
            (3840, 2160),
            (1080, 2400),
        ] {
            let grid = ClusterGrid::new(UVec2::new(w, h), clip_from_view, (0.0, 50.0));
            let tiles = grid.dims.x * grid.dims.y;
            assert!(
                (TARGET_TILES / 2..=TARGET_TILES * 3 / 2).contains(&tiles),
                "{w}x{h}: {tiles} tiles of {} px",
                grid.tile_size
            );
        }
    }

    #[test]
    fn the_lookup_matches_the_projection_at_tile_corners() {
        let (_, clip_from_view) = camera();
        let grid = ClusterGrid::new(UVec2::new(1000, 500), clip_from_view, (0.0, 50.0));
        // A point projecting just inside the bottom-right pixel lands in the last tile.
        let depth = 10.0;
        let ndc = Vec4::new(0.999, -0.999, 0.0, 1.0);
        let x = grid.view_coordinate(0, ndc.x, depth);
        let y = grid.view_coordinate(1, ndc.y, depth);
        let cluster = grid.cluster_of(Vec3::new(x, y, depth)).unwrap();
        assert_eq!(cluster.truncate(), grid.dims.truncate() - UVec2::ONE);
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use bevy::math::Quat;

    /// Not a test: times the assignment of the bench scene's lights at 4K. Run with
    /// `cargo test --release --lib clusters::timing -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a test"]
    fn assignment_time_bench_scene_4k() {
        let view_from_world =
            Mat4::from_rotation_translation(Quat::from_rotation_x(-0.6), Vec3::new(0.0, 6.0, 8.4))
                .inverse();
        let clip_from_view = Mat4::perspective_infinite_reverse_rh(0.785, 16.0 / 9.0, 0.1);
        for count in [16usize, 256, 1024] {
            let per_side = (count as f64).sqrt().ceil() as usize;
            let cell = 8.0 / per_side as f32;
            let lights: Vec<_> = (0..count)
                .map(|i| {
                    let (row, col) = (i / per_side, i % per_side);
                    let range = 2.0 * cell + 1.5;
                    GpuClusterableLight {
                        position_radius: [
                            (col as f32 + 0.5) * cell - 4.0,
                            0.6 * cell + 0.8,
                            (row as f32 + 0.5) * cell - 4.0,
                            0.05,
                        ],
                        color_inverse_square_range: [1.0, 1.0, 1.0, 1.0 / (range * range)],
                        spot_direction_range: [0.0, 0.0, -1.0, range],
                        spot_scale_offset_kind: [0.0; 4],
                        shadow: [0.0, 0.0, 0.0, -1.0],
                    }
                })
                .collect();
            let started = std::time::Instant::now();
            let runs = 50;
            let mut entries = 0;
            for _ in 0..runs {
                let a = ClusterAssignment::assign(
                    UVec2::new(3840, 2160),
                    &view_from_world,
                    clip_from_view,
                    &lights,
                );
                entries = a.counts.iter().map(|&c| c as usize).sum::<usize>();
            }
            let ms = started.elapsed().as_secs_f64() * 1000.0 / runs as f64;
            println!("{count} lights: {ms:.3} ms, {entries} (light, cluster) pairs");
        }
    }
}
