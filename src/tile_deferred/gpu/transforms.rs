//! Transform helpers the stages share, without the panics of Bevy's on degenerate transforms.

use bevy::prelude::*;

/// A transform's `local` axis in world space, normalized: `GlobalTransform::forward()` and
/// its siblings, without their panic on a degenerate transform (a light parented to a mesh
/// scaled to zero), which keeps the unrotated axis instead.
pub(crate) fn transform_axis(transform: &GlobalTransform, local: Vec3) -> Vec3 {
    (transform.affine().matrix3 * Vec3A::from(local))
        .try_normalize()
        .map_or(local, Vec3::from)
}
