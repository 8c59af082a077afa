//! Formats, extents, sizes, clear values and access modes: the vocabulary of
//! an attachment declaration.

use std::fmt;

/// Pixel format of an attachment.
///
/// Only what the compiler needs is modelled: the size of one sample in
/// memory, whether it is a depth format and whether it carries stencil. The
/// Vulkan backend maps each variant to its `VkFormat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Format {
    /// 8-bit RGBA, unsigned normalised.
    Rgba8Unorm,
    /// 8-bit RGBA, sRGB-encoded.
    Rgba8Srgb,
    /// 8-bit BGRA, unsigned normalised (a common swapchain format).
    Bgra8Unorm,
    /// 8-bit BGRA, sRGB-encoded (a common swapchain format).
    Bgra8Srgb,
    /// 10-bit RGB + 2-bit alpha, unsigned normalised.
    Rgb10a2Unorm,
    /// Packed 11/11/10-bit unsigned float (HDR colour at 32 bits).
    Rg11b10Float,
    /// 16-bit float RGBA (HDR colour).
    Rgba16Float,
    /// 16-bit float RG.
    Rg16Float,
    /// 16-bit float R.
    R16Float,
    /// 16-bit unsigned normalised R.
    R16Unorm,
    /// 32-bit float R.
    R32Float,
    /// 32-bit unsigned integer R.
    R32Uint,
    /// 32-bit float RGBA.
    Rgba32Float,
    /// 32-bit unsigned integer RGBA (Bevy's packed deferred G-buffer).
    Rgba32Uint,
    /// 8-bit unsigned normalised R.
    R8Unorm,
    /// 8-bit unsigned integer R (Bevy's deferred lighting id).
    R8Uint,
    /// 8-bit unsigned normalised RG (octahedral normals, FFR maps).
    Rg8Unorm,
    /// 16-bit depth.
    Depth16,
    /// 24-bit depth + 8-bit stencil.
    Depth24Stencil8,
    /// 32-bit float depth.
    Depth32Float,
    /// 32-bit float depth + 8-bit stencil (priced as a 4-byte depth plane
    /// plus a 1-byte stencil plane).
    Depth32FloatStencil8,
}

impl Format {
    /// Bytes one sample occupies in memory (and on tile).
    pub const fn bytes_per_pixel(self) -> u32 {
        match self {
            Format::R8Unorm | Format::R8Uint => 1,
            Format::Rg8Unorm | Format::R16Float | Format::R16Unorm | Format::Depth16 => 2,
            Format::Rgba8Unorm
            | Format::Rgba8Srgb
            | Format::Bgra8Unorm
            | Format::Bgra8Srgb
            | Format::Rgb10a2Unorm
            | Format::Rg11b10Float
            | Format::Rg16Float
            | Format::R32Float
            | Format::R32Uint
            | Format::Depth24Stencil8
            | Format::Depth32Float => 4,
            Format::Depth32FloatStencil8 => 5,
            Format::Rgba16Float => 8,
            Format::Rgba32Float | Format::Rgba32Uint => 16,
        }
    }

    /// Bits one sample occupies (`bytes_per_pixel() * 8`).
    pub const fn bits_per_pixel(self) -> u32 {
        self.bytes_per_pixel() * 8
    }

    /// `true` for depth (and depth-stencil) formats.
    pub const fn is_depth(self) -> bool {
        matches!(
            self,
            Format::Depth16
                | Format::Depth24Stencil8
                | Format::Depth32Float
                | Format::Depth32FloatStencil8
        )
    }

    /// `true` for formats with a stencil aspect.
    pub const fn has_stencil(self) -> bool {
        matches!(self, Format::Depth24Stencil8 | Format::Depth32FloatStencil8)
    }

    /// `true` for unsigned-integer colour formats (cleared with
    /// [`ClearValue::ColorUint`]).
    pub const fn is_uint(self) -> bool {
        matches!(self, Format::R32Uint | Format::Rgba32Uint | Format::R8Uint)
    }

    /// The variant's name, for inspectors and error messages.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Rgba8Unorm => "Rgba8Unorm",
            Format::Rgba8Srgb => "Rgba8Srgb",
            Format::Bgra8Unorm => "Bgra8Unorm",
            Format::Bgra8Srgb => "Bgra8Srgb",
            Format::Rgb10a2Unorm => "Rgb10a2Unorm",
            Format::Rg11b10Float => "Rg11b10Float",
            Format::Rgba16Float => "Rgba16Float",
            Format::Rg16Float => "Rg16Float",
            Format::R16Float => "R16Float",
            Format::R16Unorm => "R16Unorm",
            Format::R32Float => "R32Float",
            Format::R32Uint => "R32Uint",
            Format::Rgba32Float => "Rgba32Float",
            Format::Rgba32Uint => "Rgba32Uint",
            Format::R8Unorm => "R8Unorm",
            Format::R8Uint => "R8Uint",
            Format::Rg8Unorm => "Rg8Unorm",
            Format::Depth16 => "Depth16",
            Format::Depth24Stencil8 => "Depth24Stencil8",
            Format::Depth32Float => "Depth32Float",
            Format::Depth32FloatStencil8 => "Depth32FloatStencil8",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A width x height in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Extent {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Extent {
    /// An extent of `width` x `height` pixels.
    pub const fn new(width: u32, height: u32) -> Self {
        Extent { width, height }
    }

    /// Number of pixels (`width * height`).
    pub const fn pixels(self) -> u64 {
        self.width as u64 * self.height as u64
    }
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// How an attachment's extent is derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    /// The graph's view extent ([`FrameGraph::new`](super::FrameGraph::new)).
    View,
    /// The view extent scaled by `num / den` (rounded down, at least 1
    /// pixel): `ViewScaled { num: 1, den: 2 }` is a half-resolution target.
    ViewScaled {
        /// Numerator of the scale.
        num: u32,
        /// Denominator of the scale (must not be 0).
        den: u32,
    },
    /// A fixed extent (shadow maps, LUTs).
    Absolute {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
}

impl Size {
    /// The extent this size denotes for a view of `view` pixels, or `None`
    /// when it is degenerate (zero scale or zero size).
    pub fn resolve(self, view: Extent) -> Option<Extent> {
        let e = match self {
            Size::View => view,
            Size::ViewScaled { num, den } => {
                if num == 0 || den == 0 {
                    return None;
                }
                let s = |v: u32| {
                    let x = (u64::from(v) * u64::from(num) / u64::from(den)).max(1);
                    u32::try_from(x).ok()
                };
                Extent::new(s(view.width)?, s(view.height)?)
            }
            Size::Absolute { width, height } => Extent::new(width, height),
        };
        (e.width > 0 && e.height > 0).then_some(e)
    }
}

/// Description of an attachment: format, size and MSAA sample count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttachmentDesc {
    /// Pixel format.
    pub format: Format,
    /// Extent, usually relative to the view.
    pub size: Size,
    /// MSAA samples per pixel: 1, 2, 4, 8, 16, 32 or 64.
    pub samples: u32,
}

impl AttachmentDesc {
    /// A single-sampled attachment of the view's extent.
    pub const fn new(format: Format) -> Self {
        AttachmentDesc {
            format,
            size: Size::View,
            samples: 1,
        }
    }

    /// The same description with `samples` MSAA samples.
    pub const fn with_samples(mut self, samples: u32) -> Self {
        self.samples = samples;
        self
    }

    /// The same description with another size.
    pub const fn with_size(mut self, size: Size) -> Self {
        self.size = size;
        self
    }
}

/// The value an attachment is cleared to on its first use.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ClearValue {
    /// Float / normalised colour.
    Color([f32; 4]),
    /// Unsigned-integer colour (for `*Uint` formats).
    ColorUint([u32; 4]),
    /// Depth and stencil.
    DepthStencil {
        /// Depth clear value (Bevy uses reverse-Z: 0.0 is far).
        depth: f32,
        /// Stencil clear value.
        stencil: u32,
    },
}

impl ClearValue {
    /// Transparent black.
    pub const BLACK: ClearValue = ClearValue::Color([0.0, 0.0, 0.0, 0.0]);
    /// Reverse-Z far plane (depth 0.0), stencil 0.
    pub const DEPTH_REVERSE_Z: ClearValue = ClearValue::DepthStencil {
        depth: 0.0,
        stencil: 0,
    };
    /// Conventional far plane (depth 1.0), stencil 0.
    pub const DEPTH_ONE: ClearValue = ClearValue::DepthStencil {
        depth: 1.0,
        stencil: 0,
    };

    /// Whether this clear value suits `format`.
    pub const fn matches(&self, format: Format) -> bool {
        match self {
            ClearValue::Color(_) => !format.is_depth() && !format.is_uint(),
            ClearValue::ColorUint(_) => format.is_uint(),
            ClearValue::DepthStencil { .. } => format.is_depth(),
        }
    }
}

/// How a raster pass uses a colour or depth attachment, or how a compute
/// pass uses a storage image (Unity's `AccessFlags`).
///
/// The distinction between [`Access::Write`] and [`Access::WriteAll`] decides
/// `Load` versus `DontCare`: a partial write must keep the pixels it does not
/// touch, so their previous contents are loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Only read (read-only depth test, blending source without writes).
    Read,
    /// Written, possibly not every pixel: previous contents are kept (Load).
    Write,
    /// Read and written (blending, depth test + write).
    ReadWrite,
    /// Every pixel is overwritten (full-screen blit, Unity's `WriteAll` /
    /// `Discard`): previous contents are never loaded (DontCare).
    WriteAll,
}

impl Access {
    /// Whether the access modifies the attachment.
    pub const fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }
}

/// Whether `samples` is a sample count Vulkan can express.
pub(crate) const fn valid_samples(samples: u32) -> bool {
    samples.is_power_of_two() && samples <= 64
}
