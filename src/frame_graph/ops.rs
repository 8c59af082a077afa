//! Load and store operations, and the rules that pick them.

use super::caps::DeviceCaps;
use super::format::ClearValue;
use super::graph::{Role, Use};

/// What a native pass does with an attachment's memory when it begins
/// (`VkAttachmentLoadOp`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoadOp {
    /// Read the previous contents from memory into tile memory (costs one
    /// full read).
    Load,
    /// Fill the tile with a value (free on tilers).
    Clear(ClearValue),
    /// Start from undefined contents (free).
    DontCare,
}

impl LoadOp {
    /// Whether the op reads memory.
    pub const fn reads_memory(&self) -> bool {
        matches!(self, LoadOp::Load)
    }

    /// Short name ("Load", "Clear", "DontCare").
    pub const fn name(&self) -> &'static str {
        match self {
            LoadOp::Load => "Load",
            LoadOp::Clear(_) => "Clear",
            LoadOp::DontCare => "DontCare",
        }
    }
}

/// What a native pass does with an attachment's tile contents when it ends
/// (`VkAttachmentStoreOp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreOp {
    /// Write the tile contents to memory (costs one full write).
    Store,
    /// Drop the tile contents (free; memory contents become undefined).
    DontCare,
    /// Leave memory untouched (`STORE_OP_NONE`): for attachments only read
    /// in this pass whose contents are still needed later (free).
    None,
}

impl StoreOp {
    /// Whether the op writes memory.
    pub const fn writes_memory(&self) -> bool {
        matches!(self, StoreOp::Store)
    }

    /// Short name ("Store", "DontCare", "None").
    pub const fn name(&self) -> &'static str {
        match self {
            StoreOp::Store => "Store",
            StoreOp::DontCare => "DontCare",
            StoreOp::None => "None",
        }
    }
}

/// The load rule, applied to the uses an attachment has in the first
/// subpass of a native pass that touches it.
///
/// - a resolve target is overwritten by the resolve: `DontCare`;
/// - a clear value gives `Clear` (only legal on the first use in the frame);
/// - `Access::WriteAll` overwrites every pixel: `DontCare`;
/// - no previous contents (first use of a transient, an import without
///   `contents_needed`, or with `clear_on_first_use`): `DontCare`;
/// - otherwise the previous contents are read or kept: `Load`.
pub(crate) fn decide_load<'a>(
    first: impl Iterator<Item = &'a Use> + Clone,
    prior_contents: bool,
) -> LoadOp {
    if first.clone().any(|u| u.role == Role::ResolveDst) {
        return LoadOp::DontCare;
    }
    if let Some(c) = first.clone().find_map(|u| u.clear) {
        return LoadOp::Clear(c);
    }
    if prior_contents && first.clone().any(|u| u.needs_prior()) {
        return LoadOp::Load;
    }
    // WriteAll, or nothing worth keeping.
    LoadOp::DontCare
}

/// The store rule: `Store` when the contents are needed after the native
/// pass (a later pass reads them, or an import is needed after the frame)
/// and the pass changed them; `None` (or `Store` without `STORE_OP_NONE`)
/// when they are needed but were only read; `DontCare` otherwise.
pub(crate) fn decide_store(written: bool, needed_later: bool, caps: &DeviceCaps) -> StoreOp {
    match (needed_later, written) {
        (false, _) => StoreOp::DontCare,
        (true, true) => StoreOp::Store,
        (true, false) if caps.store_op_none => StoreOp::None,
        (true, false) => StoreOp::Store,
    }
}
