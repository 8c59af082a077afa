//! Why a tile frame could not be rendered, in the shape of the compiler's `GraphError`: each
//! variant names the step that failed and keeps the cause as a value, so the fallback message
//! and the camera's `TierDecision` say what really went wrong.

use crate::frame_graph::GraphError;
use ash::vk;
use std::fmt;

/// A failed tile frame. The camera falls back to the next tier with [`TileError`]'s text as
/// the reason (see `tiers`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TileError {
    /// A Vulkan call failed.
    Vulkan {
        /// What was being done ("creating the render pass").
        step: &'static str,
        /// What Vulkan answered.
        result: vk::Result,
    },
    /// The view's frame graph could not be declared or compiled.
    Graph {
        /// Which stage refused ("declaring the frame", "compiling the frame").
        step: &'static str,
        /// The compiler's reason, naming pass and attachment.
        error: GraphError,
    },
    /// The compiled plan has a shape the recording does not know (a merge that did not
    /// happen, a pass too many).
    UnexpectedPlan {
        /// Native passes compiled.
        render_passes: usize,
        /// Native passes the recording expects for the tier.
        expected: usize,
        /// The compiler's own description of the plan.
        plan: String,
    },
    /// wgpu or Bevy did not hand over something the frame needs (a hal view, a mesh slice).
    Missing {
        /// What was being looked up ("reading the output view").
        step: &'static str,
    },
    /// The camera's target has a format the tile path cannot write (its tone mapping writes
    /// 8-bit, 10-bit and half-float colour).
    UnsupportedOutput {
        /// The target's format, as wgpu names it.
        format: String,
    },
    /// A fault injected by a test hook (`TileFaultInjection`).
    Injected {
        /// The step the fault stands in for.
        step: &'static str,
    },
}

impl TileError {
    /// A failed Vulkan call while doing `step`.
    pub(crate) fn vulkan(step: &'static str, result: vk::Result) -> Self {
        Self::Vulkan { step, result }
    }
}

impl fmt::Display for TileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Vulkan { step, result } => write!(f, "{step} failed: {result}"),
            Self::Graph { step, error } => write!(f, "{step} failed: {error}"),
            Self::UnexpectedPlan {
                render_passes,
                expected,
                plan,
            } => write!(
                f,
                "merging the frame failed: it compiled into {render_passes} render passes, \
                 {expected} expected:\n{plan}"
            ),
            Self::Missing { step } => write!(f, "{step} failed: not available from wgpu/Bevy"),
            Self::UnsupportedOutput { format } => write!(
                f,
                "writing the camera's target failed: the tile path cannot write {format}"
            ),
            Self::Injected { step } => write!(f, "{step} failed (injected fault)"),
        }
    }
}

impl std::error::Error for TileError {}

/// The result of one step of a tile frame.
pub(crate) type TileResult<T> = Result<T, TileError>;

/// Names the step of a Vulkan call's result.
pub(crate) fn step<T>(what: &'static str, result: Result<T, vk::Result>) -> TileResult<T> {
    result.map_err(|error| TileError::vulkan(what, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_step_and_the_cause() {
        let vulkan = TileError::vulkan(
            "creating the render pass",
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
        );
        // The same text as before `TileError`: the step, then Vulkan's own description.
        assert_eq!(
            vulkan.to_string(),
            format!(
                "creating the render pass failed: {}",
                vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
            )
        );
        let graph = TileError::Graph {
            step: "compiling the frame",
            error: GraphError::InvalidPass {
                pass: "lighting".into(),
                detail: "no attachments".into(),
            },
        };
        let text = graph.to_string();
        assert!(text.starts_with("compiling the frame failed: "), "{text}");
        assert!(text.contains("lighting"), "{text}");
        // The tier test matches this phrase in the camera's `TierDecision`.
        let injected = TileError::Injected {
            step: "creating the render pass",
        };
        assert!(injected.to_string().contains("injected fault"));
        let missing = TileError::Missing {
            step: "reading the output view",
        };
        assert!(!missing.to_string().contains("ERROR_UNKNOWN"));
    }
}
