//! Main world: what a tile camera sees but cannot draw (`missing`; Bevy's light clustering
//! switched for what Bevy draws over a tile frame, `light_clustering`), and the route each camera
//! takes from it (`route`: the tile path or Bevy's; on GPUs that are not tilers `Auto` cameras time
//! both, `timing`), and what a chosen phone GPU would do with the
//! frame (`validation`). The top layer below the plugin wiring.

pub(super) mod light_clustering;
pub mod missing;
pub(super) mod route;
pub(super) mod timing;
pub mod validation;
