//! What the compiler needs to know about the device (filled by the device
//! probe, or by the presets below).

/// How much per-pixel state a tile can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TileBudget {
    /// No limit (desktop immediate-mode GPUs, or "don't care").
    Unlimited,
    /// Mali-style colour budget in bits per pixel, all samples included:
    /// 128 on Mali-G71-class GPUs, 256 on Mali-G72 and later (Arm's
    /// Vulkan best practices). Depth/stencil has its own tile storage on
    /// Mali and does not count. A native pass over budget spills.
    BitsPerPixel(u32),
    /// Adreno-style GMEM of `bytes` bytes shared by a bin's pixels (colour
    /// and depth, all samples, all views). Bins are `align_width` x
    /// `align_height` aligned; see [`bin_layout`](super::bin_layout) for
    /// the model.
    Gmem {
        /// GMEM size in bytes (1 MiB on Adreno 540/650).
        bytes: u64,
        /// Bin width alignment in pixels (32 on Adreno).
        align_width: u32,
        /// Bin height alignment in pixels (16 on Adreno).
        align_height: u32,
    },
}

/// Device capabilities and switches that `compile` takes into account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DeviceCaps {
    /// Most non-depth attachments (colour, input and resolve targets,
    /// counted once each) one native render pass may hold. 8 on every
    /// mobile GPU: Arm's "no more than 8 colour + input attachments",
    /// Unity's 8-attachment merge limit. Also the per-pass colour limit.
    pub max_color_attachments: u32,
    /// Most distinct input attachments one native render pass may read.
    pub max_input_attachments: u32,
    /// Whether adjacent raster passes may be merged into subpasses. `false`
    /// for drivers with subpass bugs (a quirk), or to see the unmerged plan.
    pub merge_subpasses: bool,
    /// Tile memory available per pixel or per bin.
    pub tile_budget: TileBudget,
    /// Whether `LAZILY_ALLOCATED` memory exists, so transient attachments
    /// need no backing memory at all (memoryless).
    pub lazily_allocated_memory: bool,
    /// Whether `VK_ATTACHMENT_STORE_OP_NONE` is available (Vulkan 1.3 or
    /// `VK_KHR_load_store_op_none`): attachments only read in a pass keep
    /// their memory without a write-back.
    pub store_op_none: bool,
    /// Whether MSAA depth can be resolved in the render pass
    /// (`VK_KHR_depth_stencil_resolve`).
    pub depth_stencil_resolve: bool,
    /// Views rendered at once with multiview (2 for stereo VR). Every
    /// attachment then has this many layers: they share a bin on tile and
    /// multiply the bandwidth.
    pub views: u32,
    /// Whether a subpass may use a different depth attachment than the
    /// subpasses before it in the same render pass. Vulkan allows it, and an
    /// immediate-mode GPU runs it as it runs any subpass. A tiler keeps one
    /// depth-stencil buffer per tile (Mali's ZS tile buffer, Adreno's GMEM
    /// depth), so the model assumes its driver ends the merged pass there:
    /// `false` in every preset, set by the device profile for non-tilers.
    pub depth_change_merges: bool,
}

impl DeviceCaps {
    /// Mali Bifrost, G71-class: 128 bits per pixel of tile colour.
    pub const fn mali_bifrost() -> Self {
        DeviceCaps {
            max_color_attachments: 8,
            max_input_attachments: 8,
            merge_subpasses: true,
            tile_budget: TileBudget::BitsPerPixel(128),
            lazily_allocated_memory: true,
            store_op_none: false,
            depth_stencil_resolve: true,
            views: 1,
            depth_change_merges: false,
        }
    }

    /// Mali Valhall (and Bifrost G72 and later): 256 bits per pixel of tile
    /// colour.
    pub const fn mali_valhall() -> Self {
        DeviceCaps {
            tile_budget: TileBudget::BitsPerPixel(256),
            store_op_none: true,
            ..Self::mali_bifrost()
        }
    }

    /// Adreno with `gmem_bytes` of GMEM and 32x16-aligned bins.
    pub const fn adreno(gmem_bytes: u64) -> Self {
        DeviceCaps {
            max_color_attachments: 8,
            max_input_attachments: 8,
            merge_subpasses: true,
            tile_budget: TileBudget::Gmem {
                bytes: gmem_bytes,
                align_width: 32,
                align_height: 16,
            },
            lazily_allocated_memory: true,
            store_op_none: true,
            depth_stencil_resolve: true,
            views: 1,
            depth_change_merges: false,
        }
    }

    /// A desktop immediate-mode GPU: no tile budget, no lazily allocated
    /// memory (merging still saves the stores the plan shows).
    pub const fn desktop() -> Self {
        DeviceCaps {
            max_color_attachments: 8,
            max_input_attachments: 8,
            merge_subpasses: true,
            tile_budget: TileBudget::Unlimited,
            lazily_allocated_memory: false,
            store_op_none: true,
            depth_stencil_resolve: true,
            views: 1,
            depth_change_merges: false,
        }
    }

    /// The same caps with subpass merging switched on or off (`false` gives
    /// the counterfactual unmerged plan the inspector compares against).
    pub const fn with_merging(mut self, merge: bool) -> Self {
        self.merge_subpasses = merge;
        self
    }

    /// The same caps with depth-attachment changes merged or not (see
    /// [`depth_change_merges`](Self::depth_change_merges)).
    pub const fn with_depth_change_merges(mut self, merges: bool) -> Self {
        self.depth_change_merges = merges;
        self
    }

    /// The same caps rendering `views` views at once (multiview).
    pub const fn with_views(mut self, views: u32) -> Self {
        self.views = views;
        self
    }
}

impl Default for DeviceCaps {
    fn default() -> Self {
        Self::mali_valhall()
    }
}
