//! What is drawn: meshes and materials extracted from the main world (`extract`), the render
//! world's scene parameters (`params`), the instanced draws of a view (`draws`) and their
//! material sets (`materials`), and Bevy's opaque phases left out of tile views
//! (`bevy_phases`). It may use `lighting`, `gpu` and the layers below.

pub(super) mod bevy_phases;
pub(crate) mod draws;
pub(super) mod extract;
pub(super) mod materials;
pub(super) mod params;
