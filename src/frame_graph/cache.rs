//! Reusing the compiled frame while the declaration does not change.

use super::caps::DeviceCaps;
use super::compile::{CompiledFrame, compile};
use super::error::GraphError;
use super::graph::FrameGraph;

/// Caches the last [`CompiledFrame`]: when the next frame declares the same
/// graph (same view, attachments, passes and uses; graph identity does not
/// matter, so a graph rebuilt every frame still hits) for the same caps, the
/// cached plan is returned without compiling or allocating.
///
/// A hit costs one comparison of the declaration; a miss compiles and
/// copies the declaration into buffers the cache keeps.
#[derive(Debug)]
pub struct FrameGraphCache {
    graph: FrameGraph,
    caps: Option<DeviceCaps>,
    frame: Option<CompiledFrame>,
    hits: u64,
    misses: u64,
}

impl Default for FrameGraphCache {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameGraphCache {
    /// An empty cache.
    pub fn new() -> Self {
        FrameGraphCache {
            graph: FrameGraph::empty_like(),
            caps: None,
            frame: None,
            hits: 0,
            misses: 0,
        }
    }

    /// The compiled plan for `graph` on `caps`: the cached one if neither
    /// changed since the last call, a fresh compile otherwise. Errors are
    /// not cached.
    pub fn compile(
        &mut self,
        graph: &FrameGraph,
        caps: &DeviceCaps,
    ) -> Result<&CompiledFrame, GraphError> {
        let hit = self.frame.is_some()
            && self.caps.as_ref() == Some(caps)
            && self.graph.same_declaration(graph);
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
            self.frame = None;
            let frame = compile(graph, caps)?;
            self.graph.copy_declaration_from(graph);
            self.caps = Some(*caps);
            self.frame = Some(frame);
        }
        self.frame.as_ref().ok_or_else(|| GraphError::InvalidGraph {
            detail: "the frame cache lost its plan".to_owned(),
        })
    }

    /// The cached plan, if any.
    pub fn cached(&self) -> Option<&CompiledFrame> {
        self.frame.as_ref()
    }

    /// Forgets the cached plan (the next call compiles).
    pub fn invalidate(&mut self) {
        self.frame = None;
    }

    /// Calls answered from the cache.
    pub const fn hits(&self) -> u64 {
        self.hits
    }

    /// Calls that compiled.
    pub const fn misses(&self) -> u64 {
        self.misses
    }
}
