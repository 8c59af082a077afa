//! Errors for invalid declarations.

use std::fmt;

/// Why a graph could not be declared or compiled. Every variant names the
/// pass and/or attachment involved and says what is wrong in plain words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphError {
    /// A handle created by another graph was used.
    ForeignHandle {
        /// The pass that used the handle.
        pass: String,
        /// The handle's attachment index in its own graph.
        attachment_index: u32,
        /// Id of the graph that created the handle.
        handle_graph: u64,
        /// Id of the graph the pass belongs to.
        graph: u64,
    },
    /// A handle whose index does not exist in this graph.
    UnknownHandle {
        /// The pass that used the handle.
        pass: String,
        /// The unknown attachment index.
        attachment_index: u32,
    },
    /// A pass reads an attachment whose contents nobody wrote.
    ReadBeforeWrite {
        /// The reading pass.
        pass: String,
        /// The attachment read.
        attachment: String,
    },
    /// A resolve whose source and destination do not match.
    ResolveMismatch {
        /// The resolving pass.
        pass: String,
        /// The MSAA source.
        src: String,
        /// The single-sampled destination.
        dst: String,
        /// What does not match.
        detail: String,
    },
    /// A clear value on a use that is not the attachment's first use.
    ClearNotFirstUse {
        /// The pass with the clear value.
        pass: String,
        /// The attachment.
        attachment: String,
    },
    /// An attachment description that cannot be allocated.
    InvalidAttachment {
        /// The attachment.
        attachment: String,
        /// What is wrong.
        detail: String,
    },
    /// Contradictory import parameters.
    InvalidImport {
        /// The attachment.
        attachment: String,
        /// What is wrong.
        detail: String,
    },
    /// A pass declaration that no render pass can express.
    InvalidPass {
        /// The pass.
        pass: String,
        /// What is wrong.
        detail: String,
    },
    /// A pass needs something the device does not offer.
    Unsupported {
        /// The pass.
        pass: String,
        /// What is missing.
        detail: String,
    },
    /// Two passes or two attachments share a name.
    DuplicateName {
        /// "pass" or "attachment".
        what: &'static str,
        /// The repeated name.
        name: String,
    },
    /// A graph-wide problem (empty view, invalid caps).
    InvalidGraph {
        /// What is wrong.
        detail: String,
    },
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::ForeignHandle {
                pass,
                attachment_index,
                handle_graph,
                graph,
            } => write!(
                f,
                "pass `{pass}` uses attachment #{attachment_index} of frame graph #{handle_graph}, \
                 but the pass belongs to frame graph #{graph}; handles only work in the graph \
                 that created them"
            ),
            GraphError::UnknownHandle {
                pass,
                attachment_index,
            } => write!(
                f,
                "pass `{pass}` uses attachment #{attachment_index}, which this graph never declared"
            ),
            GraphError::ReadBeforeWrite { pass, attachment } => write!(
                f,
                "pass `{pass}` reads `{attachment}` before any pass writes it \
                 (import it with contents_needed if its previous contents are meant to be read)"
            ),
            GraphError::ResolveMismatch {
                pass,
                src,
                dst,
                detail,
            } => write!(
                f,
                "pass `{pass}` cannot resolve `{src}` into `{dst}`: {detail}"
            ),
            GraphError::ClearNotFirstUse { pass, attachment } => write!(
                f,
                "pass `{pass}` clears `{attachment}`, but an earlier pass already uses it; \
                 a clear value is only honoured on an attachment's first use \
                 (use Access::WriteAll, or a new attachment)"
            ),
            GraphError::InvalidAttachment { attachment, detail } => {
                write!(f, "attachment `{attachment}`: {detail}")
            }
            GraphError::InvalidImport { attachment, detail } => {
                write!(f, "imported attachment `{attachment}`: {detail}")
            }
            GraphError::InvalidPass { pass, detail } => write!(f, "pass `{pass}`: {detail}"),
            GraphError::Unsupported { pass, detail } => {
                write!(f, "pass `{pass}` needs what the device lacks: {detail}")
            }
            GraphError::DuplicateName { what, name } => {
                let plural = if *what == "pass" {
                    "passes"
                } else {
                    "attachments"
                };
                write!(
                    f,
                    "two {plural} are named `{name}`; names identify them in plans and break reports"
                )
            }
            GraphError::InvalidGraph { detail } => write!(f, "frame graph: {detail}"),
        }
    }
}

impl std::error::Error for GraphError {}
