//! Load and store operations, and the rules that pick them.

use super::caps::DeviceCaps;
use super::format::ClearValue;
use super::graph::{Role, Use};
use super::merge::BreakReason;

/// What a native pass does with an attachment's memory when it begins
/// (`VkAttachmentLoadOp`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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

/// Why an attachment's contents exist before a native pass, as the load rule sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Prior {
    /// Nothing defined: a first use, or an import whose contents are not needed.
    None,
    /// The image's contents from before the frame (an import with `contents_needed`).
    Imported,
    /// Written by this pass, in an earlier native pass; `not_merged` is why that pass and
    /// this one are not one render pass, when they are adjacent.
    WrittenBy {
        pass: String,
        not_merged: Option<BreakReason>,
    },
}

/// Who needs an attachment's contents after a native pass, as the store rule sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Later {
    /// Nobody.
    None,
    /// This pass, in a later native pass.
    ReadBy(String),
    /// The app, after the frame (a presented or read-back import).
    AfterFrame,
}

/// Why an attachment's load op is what it is, naming the passes responsible.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum LoadReason {
    /// `DontCare`: the resolve in `pass` overwrites it.
    ResolvedBy { pass: String },
    /// `Clear`: its first use in the frame, by `pass`, clears it.
    ClearedOnFirstUse { pass: String },
    /// `Load`: `writer` wrote it in an earlier render pass and `reader` reads or keeps it;
    /// `not_merged` says why the two are not one render pass, when they are adjacent.
    WrittenEarlier {
        writer: String,
        reader: String,
        not_merged: Option<BreakReason>,
    },
    /// `Load`: `reader` reads or keeps the image's contents from before the frame.
    ImportedContents { reader: String },
    /// `DontCare`: `pass` writes every pixel, so what was there does not matter.
    OverwrittenBy { pass: String },
    /// `DontCare`: nothing was written before `pass` (a first use) and the image's earlier
    /// contents are not needed.
    NothingBefore { pass: String },
    /// `Clear` to a marker by the poison debug view, where `undefined` made it `DontCare`: what
    /// the frame wrongly reads of its undefined contents shows as the marker.
    Poisoned { undefined: Box<LoadReason> },
}

impl std::fmt::Display for LoadReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ResolvedBy { pass } => {
                write!(f, "DONT_CARE: overwritten by the resolve in `{pass}`")
            }
            Self::ClearedOnFirstUse { pass } => write!(f, "cleared: first use, by `{pass}`"),
            Self::WrittenEarlier {
                writer,
                reader,
                not_merged,
            } => {
                write!(
                    f,
                    "loaded: written by `{writer}` in an earlier render pass, read by `{reader}`"
                )?;
                match not_merged {
                    Some(reason) => write!(f, " (not merged: {reason})"),
                    None => Ok(()),
                }
            }
            Self::ImportedContents { reader } => {
                write!(
                    f,
                    "loaded: the image's contents from before the frame, read by `{reader}`"
                )
            }
            Self::OverwrittenBy { pass } => write!(f, "DONT_CARE: `{pass}` writes every pixel"),
            Self::NothingBefore { pass } => {
                write!(
                    f,
                    "DONT_CARE: first use, by `{pass}`; nothing before it to keep"
                )
            }
            Self::Poisoned { undefined } => {
                write!(
                    f,
                    "poisoned (debug view: cleared to the marker); {undefined}"
                )
            }
        }
    }
}

/// Why an attachment's store op is what it is, naming the passes responsible.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum StoreReason {
    /// `DontCare`: nothing reads it after this render pass (transient, or discarded).
    NotNeeded,
    /// `Store`: changed here and read by `reader` in a later render pass.
    ReadLater { reader: String },
    /// `Store`: changed here and needed after the frame (presented, or read by the app).
    NeededAfterFrame,
    /// `None`: only read here; the contents in memory stay valid for `reader` (or the app,
    /// when `reader` is `None`).
    UnchangedKept { reader: Option<String> },
    /// `Store`: only read here, but the device has no `STORE_OP_NONE` to keep memory as it is.
    UnchangedStored { reader: Option<String> },
}

impl std::fmt::Display for StoreReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let later = |reader: &Option<String>| match reader {
            Some(reader) => format!("`{reader}` reads it later"),
            None => "needed after the frame".to_string(),
        };
        match self {
            Self::NotNeeded => write!(f, "DONT_CARE: nothing reads it after this render pass"),
            Self::ReadLater { reader } => {
                write!(f, "stored: read by `{reader}` in a later render pass")
            }
            Self::NeededAfterFrame => {
                write!(f, "stored: needed after the frame (presented or read back)")
            }
            Self::UnchangedKept { reader } => {
                write!(f, "NONE: only read here, {}", later(reader))
            }
            Self::UnchangedStored { reader } => write!(
                f,
                "stored: only read here, {}, and the device has no STORE_OP_NONE",
                later(reader)
            ),
        }
    }
}

/// The load rule, applied to the uses an attachment has in the first subpass of a native pass
/// that touches it (`first`, by `pass`), with its reason.
///
/// - a resolve target is overwritten by the resolve: `DontCare`;
/// - a clear value gives `Clear` (only legal on the first use in the frame);
/// - `Access::WriteAll` overwrites every pixel: `DontCare`;
/// - no previous contents (first use of a transient, an import without
///   `contents_needed`, or with `clear_on_first_use`): `DontCare`;
/// - otherwise the previous contents are read or kept: `Load`.
pub(crate) fn decide_load<'a>(
    first: impl Iterator<Item = &'a Use> + Clone,
    prior: Prior,
    pass: &str,
) -> (LoadOp, LoadReason) {
    let pass = pass.to_string();
    if first.clone().any(|u| u.role == Role::ResolveDst) {
        return (LoadOp::DontCare, LoadReason::ResolvedBy { pass });
    }
    if let Some(c) = first.clone().find_map(|u| u.clear) {
        return (LoadOp::Clear(c), LoadReason::ClearedOnFirstUse { pass });
    }
    let needs_prior = first.clone().any(|u| u.needs_prior());
    match prior {
        Prior::WrittenBy {
            pass: writer,
            not_merged,
        } if needs_prior => (
            LoadOp::Load,
            LoadReason::WrittenEarlier {
                writer,
                reader: pass,
                not_merged,
            },
        ),
        Prior::Imported if needs_prior => {
            (LoadOp::Load, LoadReason::ImportedContents { reader: pass })
        }
        // WriteAll, or nothing worth keeping.
        Prior::None => (LoadOp::DontCare, LoadReason::NothingBefore { pass }),
        _ => (LoadOp::DontCare, LoadReason::OverwrittenBy { pass }),
    }
}

/// The store rule, with its reason: `Store` when the contents are needed after the native
/// pass (a later pass reads them, or an import is needed after the frame) and the pass changed
/// them; `None` (or `Store` without `STORE_OP_NONE`) when they are needed but were only read;
/// `DontCare` otherwise.
pub(crate) fn decide_store(
    written: bool,
    later: Later,
    caps: &DeviceCaps,
) -> (StoreOp, StoreReason) {
    let reader = match &later {
        Later::None => return (StoreOp::DontCare, StoreReason::NotNeeded),
        Later::ReadBy(reader) => Some(reader.clone()),
        Later::AfterFrame => None,
    };
    match (written, reader) {
        (true, Some(reader)) => (StoreOp::Store, StoreReason::ReadLater { reader }),
        (true, None) => (StoreOp::Store, StoreReason::NeededAfterFrame),
        (false, reader) if caps.store_op_none => {
            (StoreOp::None, StoreReason::UnchangedKept { reader })
        }
        (false, reader) => (StoreOp::Store, StoreReason::UnchangedStored { reader }),
    }
}
