//! The per-frame recipe: `pass::tile_deferred_pass` renders one tile view as a list of stages,
//! one per file, in the order they run (see `pass`). It may use `scene`, `lighting`, `gpu` and
//! the layers below; nothing below imports it.

pub(super) mod interop;
pub(super) mod pass;
pub(super) mod recording;
pub(super) mod render_passes;
pub(super) mod resources;
pub(super) mod state;
pub(super) mod targets;
pub(super) mod ui;
pub(super) mod view;
pub(super) mod view_sets;
