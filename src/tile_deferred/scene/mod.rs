//! What is drawn: meshes and materials extracted from the main world (`extract`), the render
//! world's scene parameters (`params`), the instanced draws of a view (`draws`) and their
//! material sets (`materials`). It may use `lighting`, `gpu` and the layers below.

pub(crate) mod draws;
pub(super) mod extract;
pub(super) mod materials;
pub(super) mod params;
