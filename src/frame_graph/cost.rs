//! Pricing the frame: DRAM traffic per attachment and per native pass, its
//! power, and the per-pixel tile footprint against the device's budget.

use std::ops::{Add, AddAssign};

use super::caps::TileBudget;
use super::format::{Extent, Format};

/// Milliwatts drawn per GB/s of DRAM traffic: seed 001 measured a 4.9 GB/s
/// saving worth 567 mW on a phone ("about 120 mW per GB"). Pass another
/// figure to [`FrameCost::milliwatts`] for a measured device.
pub const DEFAULT_MW_PER_GBPS: f64 = 120.0;

/// Bytes one full read or write of an image moves:
/// `width x height x bytes_per_pixel x samples x views`.
pub const fn image_bytes(extent: Extent, format: Format, samples: u32, views: u32) -> u64 {
    extent.pixels() * format.bytes_per_pixel() as u64 * samples as u64 * views as u64
}

/// DRAM traffic of one frame, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Traffic {
    /// Attachment loads (`LoadOp::Load`) into tile memory.
    pub loaded: u64,
    /// Attachment stores (`StoreOp::Store`, resolve targets at 1 sample).
    pub stored: u64,
    /// Texture, storage-image and copy-source reads of earlier outputs, each
    /// priced as one full read of the image.
    pub sampled: u64,
    /// Storage-image and copy-destination writes by compute and copy
    /// passes, each priced as one full write.
    pub written: u64,
}

impl Traffic {
    /// All bytes moved.
    pub const fn total(&self) -> u64 {
        self.loaded + self.stored + self.sampled + self.written
    }
}

impl Add for Traffic {
    type Output = Traffic;
    fn add(self, o: Traffic) -> Traffic {
        Traffic {
            loaded: self.loaded + o.loaded,
            stored: self.stored + o.stored,
            sampled: self.sampled + o.sampled,
            written: self.written + o.written,
        }
    }
}

impl AddAssign for Traffic {
    fn add_assign(&mut self, o: Traffic) {
        *self = *self + o;
    }
}

/// The frame's price: traffic per attachment (indexed like
/// [`CompiledFrame::attachments`](super::CompiledFrame::attachments)), per
/// native pass (indexed like
/// [`CompiledFrame::native_passes`](super::CompiledFrame::native_passes)),
/// and in total. The three always agree: `total` is the sum of either list.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FrameCost {
    /// Traffic caused by each attachment.
    pub per_attachment: Vec<Traffic>,
    /// Traffic caused by each native pass.
    pub per_native_pass: Vec<Traffic>,
    /// The whole frame.
    pub total: Traffic,
}

impl FrameCost {
    /// Bytes moved per frame.
    pub const fn bytes(&self) -> u64 {
        self.total.total()
    }

    /// Megabytes (10^6 bytes) per frame.
    pub fn mb(&self) -> f64 {
        bytes_to_mb(self.bytes())
    }

    /// Mebibytes (2^20 bytes) per frame. The seeds' "MB" figures (7.9 MB for
    /// a 1080p RGBA8 target) are mebibytes.
    pub fn mib(&self) -> f64 {
        bytes_to_mib(self.bytes())
    }

    /// GB/s (10^9 bytes per second) at `fps` frames per second.
    pub fn gb_per_s(&self, fps: f64) -> f64 {
        self.bytes() as f64 * fps / 1e9
    }

    /// MiB/s at `fps` frames per second (the unit of the seeds' "MB/s").
    pub fn mib_per_s(&self, fps: f64) -> f64 {
        bytes_to_mib(self.bytes()) * fps
    }

    /// Estimated DRAM power in milliwatts at `fps`, at `mw_per_gbps`
    /// milliwatts per GB/s (use [`DEFAULT_MW_PER_GBPS`]).
    pub fn milliwatts(&self, fps: f64, mw_per_gbps: f64) -> f64 {
        self.gb_per_s(fps) * mw_per_gbps
    }
}

/// Bytes to megabytes (10^6).
pub fn bytes_to_mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Bytes to mebibytes (2^20).
pub fn bytes_to_mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// How an Adreno-style GMEM is cut into bins for one native pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BinLayout {
    /// Bin width in pixels (a multiple of the width alignment).
    pub width: u32,
    /// Bin height in pixels (a multiple of the height alignment).
    pub height: u32,
    /// Bins across the extent.
    pub columns: u32,
    /// Bins down the extent.
    pub rows: u32,
    /// GMEM bytes one bin uses (all views).
    pub bytes: u64,
}

impl BinLayout {
    /// Number of bins (`columns x rows`).
    pub const fn count(&self) -> u32 {
        self.columns * self.rows
    }
}

/// The bins a GMEM of `gmem_bytes` gives a pass of `extent` pixels per view
/// holding `bytes_per_pixel` bytes per pixel (all attachments and samples)
/// for `views` views at once, or `None` if not even one aligned bin fits.
///
/// The model: bins are `align_w` x `align_h` aligned, no more than 2:1 in
/// either direction (unless the extent itself is flatter), and `width x height x bytes_per_pixel x views <=
/// gmem_bytes`; among those the driver picks the fewest bins, then the
/// squarest, then the largest. It reproduces the measured trace in seed 000
/// exactly (1216x1344, 2xMSAA, 32-bit colour + D24S8 on 1 MiB: 28 bins of
/// 320x192) and, for seed 000's two-view 4xMSAA example (32 bytes per pixel
/// per view), gives 96x160 bins on Quest 2's 1440x1584 eye buffers: the
/// seed's "about 96x176" would need 1.03 MiB, which is why the seed says
/// "about 1 MB".
pub fn bin_layout(
    extent: Extent,
    bytes_per_pixel: u32,
    views: u32,
    gmem_bytes: u64,
    align_w: u32,
    align_h: u32,
) -> Option<BinLayout> {
    if align_w == 0 || align_h == 0 || extent.width == 0 || extent.height == 0 {
        return None;
    }
    let per_pixel = u64::from(bytes_per_pixel.max(1)) * u64::from(views.max(1));
    let max_pixels = gmem_bytes / per_pixel;
    let (aw, ah) = (u64::from(align_w), u64::from(align_h));
    let (ew, eh) = (u64::from(extent.width), u64::from(extent.height));
    let max_w = ew.div_ceil(aw) * aw;
    let max_h = eh.div_ceil(ah) * ah;
    // (bins, squareness, -area, width, height)
    let mut best: Option<(u64, u64, u64, u64, u64)> = None;
    // Widths are aligned and at most the aligned extent (4096 steps at most).
    for w in (1..=4096u64).map(|k| k * aw).take_while(|&w| w <= max_w) {
        // Tallest aligned height that fits GMEM, the extent and 2:1.
        let h_hi = (max_pixels / w).min(max_h).min(2 * w) / ah * ah;
        // Shortest aligned height that keeps the bin within 2:1 (or the
        // whole extent when it is flatter than that).
        let h_lo = (w.div_ceil(2).div_ceil(ah).max(1) * ah).min(max_h);
        if h_hi < h_lo {
            continue;
        }
        let cols = ew.div_ceil(w);
        let rows = eh.div_ceil(h_hi);
        // The shortest height giving the same number of rows, then the one
        // closest to square within [that, h_hi] (the taller on a tie).
        let h_rows = eh.div_ceil(rows).div_ceil(ah) * ah;
        let lo = h_rows.max(h_lo).min(h_hi);
        let mut h = (w / ah * ah).max(lo).min(h_hi);
        if h + ah <= h_hi && (h + ah).abs_diff(w) <= h.abs_diff(w) {
            h += ah;
        }
        let key = (cols * rows, h.abs_diff(w), u64::MAX - w * h, w, h);
        if best.is_none_or(|b| (key.0, key.1, key.2) < (b.0, b.1, b.2)) {
            best = Some(key);
        }
    }
    let (_, _, _, w, h) = best?;
    let (width, height) = (u32::try_from(w).ok()?, u32::try_from(h).ok()?);
    Some(BinLayout {
        width,
        height,
        columns: extent.width.div_ceil(width),
        rows: extent.height.div_ceil(height),
        bytes: w * h * per_pixel,
    })
}

/// Whether a native pass's per-pixel state fits the tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TileVerdict {
    /// The device has no tile budget.
    Unlimited,
    /// Within a Mali-style bits-per-pixel colour budget.
    Fits {
        /// Colour bits per pixel used (all samples).
        used_bits: u32,
        /// The budget.
        budget_bits: u32,
    },
    /// Over a Mali-style budget: the driver spills tile memory (or splits).
    Spills {
        /// Colour bits per pixel needed (all samples).
        used_bits: u32,
        /// The budget.
        budget_bits: u32,
    },
    /// Binned in Adreno-style GMEM.
    Bins(BinLayout),
    /// Not even one aligned bin fits GMEM: the driver falls back to
    /// rendering straight to system memory.
    GmemTooSmall {
        /// Bytes per pixel needed (all attachments, samples and views).
        bytes_per_pixel: u32,
    },
}

impl TileVerdict {
    /// Whether the pass stays on tile.
    pub const fn fits(&self) -> bool {
        matches!(
            self,
            TileVerdict::Unlimited | TileVerdict::Fits { .. } | TileVerdict::Bins(_)
        )
    }
}

/// Per-pixel tile state of one native pass and its verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileFootprint {
    /// Bytes per pixel of colour and input attachments (x samples).
    pub color_bytes_per_pixel: u32,
    /// Bytes per pixel of the depth(-stencil) attachment (x samples).
    pub depth_bytes_per_pixel: u32,
    /// Verdict against the device's tile budget.
    pub verdict: TileVerdict,
}

impl TileFootprint {
    /// All bytes per pixel held on tile (colour + input + depth, x samples;
    /// resolve targets are written on the way out and hold no tile state).
    pub const fn bytes_per_pixel(&self) -> u32 {
        self.color_bytes_per_pixel + self.depth_bytes_per_pixel
    }

    /// The footprint of `color` + `depth` bytes per pixel for a pass of
    /// `extent` under `budget` with `views` views.
    pub fn evaluate(
        color_bytes_per_pixel: u32,
        depth_bytes_per_pixel: u32,
        extent: Extent,
        budget: TileBudget,
        views: u32,
    ) -> TileFootprint {
        let verdict = match budget {
            TileBudget::Unlimited => TileVerdict::Unlimited,
            TileBudget::BitsPerPixel(budget_bits) => {
                let used_bits = color_bytes_per_pixel.saturating_mul(8);
                if used_bits <= budget_bits {
                    TileVerdict::Fits {
                        used_bits,
                        budget_bits,
                    }
                } else {
                    TileVerdict::Spills {
                        used_bits,
                        budget_bits,
                    }
                }
            }
            TileBudget::Gmem {
                bytes,
                align_width,
                align_height,
            } => {
                let bpp = color_bytes_per_pixel + depth_bytes_per_pixel;
                match bin_layout(extent, bpp, views, bytes, align_width, align_height) {
                    Some(b) => TileVerdict::Bins(b),
                    None => TileVerdict::GmemTooSmall {
                        bytes_per_pixel: bpp.saturating_mul(views),
                    },
                }
            }
        };
        TileFootprint {
            color_bytes_per_pixel,
            depth_bytes_per_pixel,
            verdict,
        }
    }
}
