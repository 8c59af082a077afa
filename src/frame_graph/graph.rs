//! Declaring a frame: the graph, its attachments (typed handles) and its
//! passes (builders).

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::GraphError;
use super::format::{Access, AttachmentDesc, ClearValue, Extent, valid_samples};

static NEXT_GRAPH_ID: AtomicU64 = AtomicU64::new(1);

/// Index of an attachment in its graph (declaration order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ResourceId(pub u32);

impl ResourceId {
    /// The index as `usize`.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a pass in its graph (declaration order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PassId(pub u32);

impl PassId {
    /// The index as `usize`.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// What kind of GPU work a pass records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PassKind {
    /// Draws into colour/depth attachments; the only kind that merges.
    Raster,
    /// Compute dispatches on storage images / sampled textures.
    Compute,
    /// Transfer (copy / blit) commands.
    Copy,
}

impl PassKind {
    /// Lower-case name ("raster", "compute", "copy").
    pub const fn name(self) -> &'static str {
        match self {
            PassKind::Raster => "raster",
            PassKind::Compute => "compute",
            PassKind::Copy => "copy",
        }
    }
}

/// How an imported attachment relates to the world outside the frame
/// (Unity's `ImportResourceParams`).
///
/// `Default` is the conservative choice Unity makes: previous contents are
/// loaded and the result is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImportParams {
    /// The previous contents are read (history buffers): the first use
    /// loads them unless it overwrites every pixel or clears.
    pub contents_needed: bool,
    /// The contents are used after the frame (swapchain image, history):
    /// the last writer stores them.
    pub needed_after_frame: bool,
    /// Previous contents are discarded at the first use (Unity's
    /// `clearOnFirstUse`): the first use gets `Clear` when it carries a clear
    /// value and `DontCare` otherwise. Contradicts `contents_needed`.
    pub clear_on_first_use: bool,
    /// Contents may be dropped after the last use in the frame (Unity's
    /// `discardOnLastUse`). Contradicts `needed_after_frame`.
    pub discard_on_last_use: bool,
}

impl Default for ImportParams {
    fn default() -> Self {
        ImportParams {
            contents_needed: true,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        }
    }
}

impl ImportParams {
    /// A render target whose old contents do not matter and whose new
    /// contents are presented / used after the frame (the swapchain image).
    pub const fn output() -> Self {
        ImportParams {
            contents_needed: false,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        }
    }

    /// A history buffer: read at first use, stored for the next frame.
    pub const fn history() -> Self {
        ImportParams {
            contents_needed: true,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        }
    }
}

/// A typed handle to an attachment of one [`FrameGraph`].
///
/// Not `Copy` or `Clone` (kajiya-style): a pass that writes the attachment
/// takes `&mut AttachmentHandle`, a pass that reads it takes
/// `&AttachmentHandle`, so the borrow checker sees the write/read structure.
/// The handle remembers its graph, so using it in another graph is reported
/// as [`GraphError::ForeignHandle`].
#[derive(Debug)]
pub struct AttachmentHandle {
    graph: u64,
    id: ResourceId,
    desc: AttachmentDesc,
}

impl AttachmentHandle {
    /// The attachment's index in its graph.
    pub const fn id(&self) -> ResourceId {
        self.id
    }

    /// The attachment's description.
    pub const fn desc(&self) -> AttachmentDesc {
        self.desc
    }
}

/// Role of one use of an attachment inside a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    Color,
    Depth,
    Input,
    Sampled,
    ResolveDst,
    StorageRead,
    StorageWrite,
    CopySrc,
    CopyDst,
}

/// One declared use of an attachment by a pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Use {
    pub res: ResourceId,
    pub role: Role,
    pub access: Access,
    pub clear: Option<ClearValue>,
    /// For `ResolveDst`: the MSAA attachment resolved into `res`.
    pub resolve_src: Option<ResourceId>,
    /// For a `Depth` use that writes: only the stencil aspect is written, the depth aspect is
    /// only tested (`DEPTH_READ_ONLY_STENCIL_ATTACHMENT_OPTIMAL`), so the pass may read depth
    /// as an input attachment while it writes stencil.
    pub stencil_only: bool,
}

impl Use {
    /// Whether the use modifies the resource.
    pub fn writes(&self) -> bool {
        match self.role {
            Role::Color | Role::Depth | Role::StorageWrite => self.access.writes(),
            Role::ResolveDst | Role::CopyDst => true,
            Role::Input | Role::Sampled | Role::StorageRead | Role::CopySrc => false,
        }
    }

    /// Whether the use depends on the resource's previous contents.
    pub fn needs_prior(&self) -> bool {
        match self.role {
            Role::Color | Role::Depth => {
                self.clear.is_none() && !matches!(self.access, Access::WriteAll)
            }
            Role::StorageWrite => !matches!(self.access, Access::WriteAll),
            Role::Input | Role::Sampled | Role::StorageRead | Role::CopySrc => true,
            Role::ResolveDst | Role::CopyDst => false,
        }
    }

    /// Whether the use reads previous contents outright (as opposed to a
    /// partial write that merely keeps untouched pixels).
    pub fn reads(&self) -> bool {
        match self.role {
            Role::Color | Role::Depth | Role::StorageWrite => {
                matches!(self.access, Access::Read | Access::ReadWrite)
            }
            Role::Input | Role::Sampled | Role::StorageRead | Role::CopySrc => true,
            Role::ResolveDst | Role::CopyDst => false,
        }
    }

    /// Whether the use binds the resource as a framebuffer attachment.
    pub fn is_attachment(&self) -> bool {
        matches!(
            self.role,
            Role::Color | Role::Depth | Role::Input | Role::ResolveDst
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ResourceDecl {
    pub name: String,
    pub desc: AttachmentDesc,
    pub import: Option<ImportParams>,
    /// `None` when the size is degenerate (an error is recorded).
    pub extent: Option<Extent>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PassDecl {
    pub name: String,
    pub kind: PassKind,
    pub side_effects: bool,
    pub uses: Vec<Use>,
}

/// The declaration of one frame: attachments and passes in submission
/// order. Compile it with `compile()` or through a
/// [`FrameGraphCache`](super::FrameGraphCache).
#[derive(Debug)]
pub struct FrameGraph {
    id: u64,
    pub(crate) view: Extent,
    pub(crate) resources: Vec<ResourceDecl>,
    pub(crate) passes: Vec<PassDecl>,
    pub(crate) errors: Vec<GraphError>,
}

impl FrameGraph {
    /// An empty graph for a view of `view_extent` pixels (per view when the
    /// device renders several views with multiview).
    pub fn new(view_extent: Extent) -> Self {
        let mut g = FrameGraph {
            id: NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed),
            view: view_extent,
            resources: Vec::new(),
            passes: Vec::new(),
            errors: Vec::new(),
        };
        if view_extent.width == 0 || view_extent.height == 0 {
            g.errors.push(GraphError::InvalidGraph {
                detail: format!("the view extent {view_extent} is empty"),
            });
        }
        g
    }

    /// The view extent given to [`FrameGraph::new`].
    pub const fn view_extent(&self) -> Extent {
        self.view
    }

    /// Number of declared attachments.
    pub fn attachment_count(&self) -> usize {
        self.resources.len()
    }

    /// Number of declared passes.
    pub fn pass_count(&self) -> usize {
        self.passes.len()
    }

    /// Name of an attachment, if `id` belongs to this graph.
    pub fn attachment_name(&self, id: ResourceId) -> Option<&str> {
        self.resources.get(id.index()).map(|r| r.name.as_str())
    }

    /// Name of a pass, if `id` belongs to this graph.
    pub fn pass_name(&self, id: PassId) -> Option<&str> {
        self.passes.get(id.index()).map(|p| p.name.as_str())
    }

    /// Errors recorded while declaring (bad descriptions, foreign handles,
    /// invalid passes); [`compile`](super::compile) reports the first one.
    pub fn errors(&self) -> &[GraphError] {
        &self.errors
    }

    /// A transient attachment owned by the graph: its contents start
    /// undefined and die with the frame.
    pub fn create_attachment(&mut self, name: &str, desc: AttachmentDesc) -> AttachmentHandle {
        self.push_resource(name, desc, None)
    }

    /// An attachment owned outside the graph (swapchain image, history
    /// buffer); `params` says whether its previous contents are read and
    /// whether its contents are needed after the frame.
    pub fn import_attachment(
        &mut self,
        name: &str,
        desc: AttachmentDesc,
        params: ImportParams,
    ) -> AttachmentHandle {
        if params.contents_needed && params.clear_on_first_use {
            self.errors.push(GraphError::InvalidImport {
                attachment: name.to_owned(),
                detail: "contents_needed and clear_on_first_use contradict each other: \
                         the previous contents cannot be both read and cleared"
                    .to_owned(),
            });
        }
        if params.needed_after_frame && params.discard_on_last_use {
            self.errors.push(GraphError::InvalidImport {
                attachment: name.to_owned(),
                detail: "needed_after_frame and discard_on_last_use contradict each other"
                    .to_owned(),
            });
        }
        self.push_resource(name, desc, Some(params))
    }

    fn push_resource(
        &mut self,
        name: &str,
        desc: AttachmentDesc,
        import: Option<ImportParams>,
    ) -> AttachmentHandle {
        let id = ResourceId(u32::try_from(self.resources.len()).unwrap_or(u32::MAX));
        let extent = desc.size.resolve(self.view);
        if extent.is_none() {
            self.errors.push(GraphError::InvalidAttachment {
                attachment: name.to_owned(),
                detail: format!(
                    "size {:?} gives an empty extent for the view {}",
                    desc.size, self.view
                ),
            });
        }
        if !valid_samples(desc.samples) {
            self.errors.push(GraphError::InvalidAttachment {
                attachment: name.to_owned(),
                detail: format!(
                    "{} samples per pixel; MSAA sample counts are 1, 2, 4, 8, 16, 32 or 64",
                    desc.samples
                ),
            });
        }
        if self.resources.iter().any(|r| r.name == name) {
            self.errors.push(GraphError::DuplicateName {
                what: "attachment",
                name: name.to_owned(),
            });
        }
        self.resources.push(ResourceDecl {
            name: name.to_owned(),
            desc,
            import,
            extent,
        });
        AttachmentHandle {
            graph: self.id,
            id,
            desc,
        }
    }

    /// Starts a raster pass (draws into attachments; may merge with its
    /// neighbours into one native render pass).
    pub fn add_raster_pass(&mut self, name: &str) -> RasterPassBuilder<'_> {
        RasterPassBuilder {
            inner: Builder::new(self, name, PassKind::Raster),
        }
    }

    /// Starts a compute pass (never merges; a later reader for store
    /// decisions).
    pub fn add_compute_pass(&mut self, name: &str) -> ComputePassBuilder<'_> {
        ComputePassBuilder {
            inner: Builder::new(self, name, PassKind::Compute),
        }
    }

    /// Starts a copy pass (never merges; a later reader for store
    /// decisions).
    pub fn add_copy_pass(&mut self, name: &str) -> CopyPassBuilder<'_> {
        CopyPassBuilder {
            inner: Builder::new(self, name, PassKind::Copy),
        }
    }

    /// Whether two graphs declare the same frame (ignoring graph identity).
    pub(crate) fn same_declaration(&self, other: &FrameGraph) -> bool {
        self.view == other.view
            && self.resources == other.resources
            && self.passes == other.passes
            && self.errors.is_empty()
            && other.errors.is_empty()
    }

    /// Copies `other`'s declaration into `self`, reusing allocations.
    pub(crate) fn copy_declaration_from(&mut self, other: &FrameGraph) {
        self.id = other.id;
        self.view = other.view;
        self.resources.clone_from(&other.resources);
        self.passes.clone_from(&other.passes);
        self.errors.clone_from(&other.errors);
    }

    pub(crate) fn empty_like() -> FrameGraph {
        FrameGraph {
            id: 0,
            view: Extent::default(),
            resources: Vec::new(),
            passes: Vec::new(),
            errors: Vec::new(),
        }
    }
}

struct Builder<'g> {
    graph: &'g mut FrameGraph,
    decl: PassDecl,
    error: Option<GraphError>,
}

impl<'g> Builder<'g> {
    fn new(graph: &'g mut FrameGraph, name: &str, kind: PassKind) -> Self {
        Builder {
            graph,
            decl: PassDecl {
                name: name.to_owned(),
                kind,
                side_effects: false,
                uses: Vec::new(),
            },
            error: None,
        }
    }

    fn fail(&mut self, e: GraphError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn check(&mut self, h: &AttachmentHandle) -> bool {
        if h.graph != self.graph.id {
            self.fail(GraphError::ForeignHandle {
                pass: self.decl.name.clone(),
                attachment_index: h.id.0,
                handle_graph: h.graph,
                graph: self.graph.id,
            });
            return false;
        }
        if h.id.index() >= self.graph.resources.len() {
            self.fail(GraphError::UnknownHandle {
                pass: self.decl.name.clone(),
                attachment_index: h.id.0,
            });
            return false;
        }
        true
    }

    fn push(
        &mut self,
        h: &AttachmentHandle,
        role: Role,
        access: Access,
        clear: Option<ClearValue>,
        resolve_src: Option<ResourceId>,
    ) {
        if self.check(h) {
            self.decl.uses.push(Use {
                res: h.id,
                role,
                access,
                clear,
                resolve_src,
                stencil_only: false,
            });
        }
    }

    fn finish(mut self) -> Result<PassId, GraphError> {
        if self.error.is_none() {
            if let Err(e) = super::validate::check_pass(&self.decl, &self.graph.resources) {
                self.error = Some(e);
            } else if self.graph.passes.iter().any(|p| p.name == self.decl.name) {
                self.error = Some(GraphError::DuplicateName {
                    what: "pass",
                    name: self.decl.name.clone(),
                });
            }
        }
        if let Some(e) = self.error {
            self.graph.errors.push(e.clone());
            return Err(e);
        }
        let id = PassId(u32::try_from(self.graph.passes.len()).unwrap_or(u32::MAX));
        self.graph.passes.push(self.decl);
        Ok(id)
    }
}

/// Declares a raster pass; finish with [`RasterPassBuilder::finish`].
///
/// Colour attachments are bound in the order of the `color` calls (that
/// order is the shader's output location).
#[must_use = "a pass is only added by `finish()`"]
pub struct RasterPassBuilder<'g> {
    inner: Builder<'g>,
}

impl RasterPassBuilder<'_> {
    /// Binds `h` as the next colour attachment. `clear` is only allowed on
    /// the attachment's first use in the frame.
    pub fn color(
        mut self,
        h: &mut AttachmentHandle,
        access: Access,
        clear: Option<ClearValue>,
    ) -> Self {
        self.inner.push(h, Role::Color, access, clear, None);
        self
    }

    /// Binds `h` as the depth(-stencil) attachment.
    pub fn depth(
        mut self,
        h: &mut AttachmentHandle,
        access: Access,
        clear: Option<ClearValue>,
    ) -> Self {
        self.inner.push(h, Role::Depth, access, clear, None);
        self
    }

    /// Binds `h` as a read-only depth(-stencil) attachment (depth test
    /// without writes).
    pub fn depth_read_only(mut self, h: &AttachmentHandle) -> Self {
        self.inner.push(h, Role::Depth, Access::Read, None, None);
        self
    }

    /// Binds `h` (a depth-stencil format) as the depth-stencil attachment with the depth aspect
    /// read-only (depth test without writes) and the stencil aspect written: the pass may also
    /// read `h`'s depth as an input attachment (Lauritzen's deferred MSAA marks edge pixels in
    /// stencil while reading depth). Previous contents are kept (`Load` where needed).
    pub fn depth_read_only_stencil_write(mut self, h: &mut AttachmentHandle) -> Self {
        self.inner
            .push(h, Role::Depth, Access::ReadWrite, None, None);
        if let Some(u) = self.inner.decl.uses.last_mut()
            && u.res == h.id
            && u.role == Role::Depth
        {
            u.stencil_only = true;
        }
        self
    }

    /// Reads `h` as an input attachment: a same-pixel read (`subpassLoad`,
    /// framebuffer fetch) that lets this pass merge with `h`'s writer.
    pub fn input(mut self, h: &AttachmentHandle) -> Self {
        self.inner.push(h, Role::Input, Access::Read, None, None);
        self
    }

    /// Samples `h` as a texture (any-pixel read): `h` must be stored to
    /// memory first, so this pass cannot merge with `h`'s writer.
    pub fn sample(mut self, h: &AttachmentHandle) -> Self {
        self.inner.push(h, Role::Sampled, Access::Read, None, None);
        self
    }

    /// Resolves the MSAA colour or depth attachment `src` (bound in this
    /// pass) into the single-sampled `dst` at the end of this pass.
    pub fn resolve(mut self, src: &AttachmentHandle, dst: &mut AttachmentHandle) -> Self {
        if self.inner.check(src) {
            self.inner
                .push(dst, Role::ResolveDst, Access::WriteAll, None, Some(src.id));
        }
        self
    }

    /// Marks the pass as having side effects outside the graph (readback,
    /// queries): it is never culled.
    pub fn side_effects(mut self) -> Self {
        self.inner.decl.side_effects = true;
        self
    }

    /// Adds the pass to the graph, or returns (and records) the first error.
    pub fn finish(self) -> Result<PassId, GraphError> {
        self.inner.finish()
    }
}

/// Declares a compute pass; finish with [`ComputePassBuilder::finish`].
#[must_use = "a pass is only added by `finish()`"]
pub struct ComputePassBuilder<'g> {
    inner: Builder<'g>,
}

impl ComputePassBuilder<'_> {
    /// Reads `h` (sampled texture or storage image load).
    pub fn read(mut self, h: &AttachmentHandle) -> Self {
        self.inner
            .push(h, Role::StorageRead, Access::Read, None, None);
        self
    }

    /// Writes `h` as a storage image; `Access::WriteAll` when every pixel is
    /// written, `Access::Write`/`ReadWrite` when previous contents survive.
    pub fn write(mut self, h: &mut AttachmentHandle, access: Access) -> Self {
        let access = if access == Access::Read {
            Access::ReadWrite
        } else {
            access
        };
        self.inner.push(h, Role::StorageWrite, access, None, None);
        self
    }

    /// Marks the pass as having side effects outside the graph: it is never
    /// culled.
    pub fn side_effects(mut self) -> Self {
        self.inner.decl.side_effects = true;
        self
    }

    /// Adds the pass to the graph, or returns (and records) the first error.
    pub fn finish(self) -> Result<PassId, GraphError> {
        self.inner.finish()
    }
}

/// Declares a copy pass; finish with [`CopyPassBuilder::finish`].
#[must_use = "a pass is only added by `finish()`"]
pub struct CopyPassBuilder<'g> {
    inner: Builder<'g>,
}

impl CopyPassBuilder<'_> {
    /// Copies all of `src` into `dst` (every pixel of `dst` is overwritten).
    pub fn copy(mut self, src: &AttachmentHandle, dst: &mut AttachmentHandle) -> Self {
        self.inner
            .push(src, Role::CopySrc, Access::Read, None, None);
        self.inner
            .push(dst, Role::CopyDst, Access::WriteAll, None, None);
        self
    }

    /// Marks the pass as having side effects outside the graph (a readback
    /// copy): it is never culled.
    pub fn side_effects(mut self) -> Self {
        self.inner.decl.side_effects = true;
        self
    }

    /// Adds the pass to the graph, or returns (and records) the first error.
    pub fn finish(self) -> Result<PassId, GraphError> {
        self.inner.finish()
    }
}
