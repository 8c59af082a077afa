//! Pipeline-stage and access masks mirroring Vulkan's names and bit values,
//! so the backend maps them with `from_raw(bits())`.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

macro_rules! vk_flags {
    (
        $(#[$meta:meta])*
        $name:ident { $( $(#[$fdoc:meta])* $flag:ident = $value:expr, )* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(transparent))]
        pub struct $name(u32);

        impl $name {
            /// No bits.
            pub const NONE: $name = $name(0);
            $( $(#[$fdoc])* pub const $flag: $name = $name($value); )*

            const NAMES: &'static [(&'static str, u32)] = &[$((stringify!($flag), $value)),*];

            /// The raw Vulkan bits.
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// Whether no bit is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// Whether every bit of `other` is set in `self`.
            pub const fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether `self` and `other` share a bit.
            pub const fn intersects(self, other: $name) -> bool {
                self.0 & other.0 != 0
            }

            /// The bits set in both masks.
            pub const fn intersection(self, other: $name) -> $name {
                $name(self.0 & other.0)
            }

            /// The union of both masks.
            pub const fn union(self, other: $name) -> $name {
                $name(self.0 | other.0)
            }
        }

        impl BitOr for $name {
            type Output = $name;
            fn bitor(self, rhs: $name) -> $name {
                $name(self.0 | rhs.0)
            }
        }

        impl BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: $name) {
                self.0 |= rhs.0;
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                if self.0 == 0 {
                    return f.write_str("NONE");
                }
                let mut first = true;
                for (n, v) in Self::NAMES {
                    if self.0 & v != 0 {
                        if !first {
                            f.write_str(" | ")?;
                        }
                        f.write_str(n)?;
                        first = false;
                    }
                }
                Ok(())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }
    };
}

vk_flags! {
    /// `VkPipelineStageFlags`, same names and bits.
    PipelineStages {
        /// `VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT`
        TOP_OF_PIPE = 0x1,
        /// `VK_PIPELINE_STAGE_VERTEX_SHADER_BIT`
        VERTEX_SHADER = 0x8,
        /// `VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT`
        FRAGMENT_SHADER = 0x80,
        /// `VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT`
        EARLY_FRAGMENT_TESTS = 0x100,
        /// `VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT`
        LATE_FRAGMENT_TESTS = 0x200,
        /// `VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT`
        COLOR_ATTACHMENT_OUTPUT = 0x400,
        /// `VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT`
        COMPUTE_SHADER = 0x800,
        /// `VK_PIPELINE_STAGE_TRANSFER_BIT`
        TRANSFER = 0x1000,
        /// `VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT`
        BOTTOM_OF_PIPE = 0x2000,
    }
}

vk_flags! {
    /// `VkAccessFlags`, same names and bits.
    AccessMask {
        /// `VK_ACCESS_INPUT_ATTACHMENT_READ_BIT`
        INPUT_ATTACHMENT_READ = 0x10,
        /// `VK_ACCESS_SHADER_READ_BIT`
        SHADER_READ = 0x20,
        /// `VK_ACCESS_SHADER_WRITE_BIT`
        SHADER_WRITE = 0x40,
        /// `VK_ACCESS_COLOR_ATTACHMENT_READ_BIT`
        COLOR_ATTACHMENT_READ = 0x80,
        /// `VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT`
        COLOR_ATTACHMENT_WRITE = 0x100,
        /// `VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT`
        DEPTH_STENCIL_ATTACHMENT_READ = 0x200,
        /// `VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT`
        DEPTH_STENCIL_ATTACHMENT_WRITE = 0x400,
        /// `VK_ACCESS_TRANSFER_READ_BIT`
        TRANSFER_READ = 0x800,
        /// `VK_ACCESS_TRANSFER_WRITE_BIT`
        TRANSFER_WRITE = 0x1000,
        /// `VK_ACCESS_MEMORY_READ_BIT`
        MEMORY_READ = 0x8000,
        /// `VK_ACCESS_MEMORY_WRITE_BIT`
        MEMORY_WRITE = 0x10000,
    }
}

impl AccessMask {
    /// Whether the mask contains a write.
    pub const fn has_write(self) -> bool {
        self.intersects(AccessMask(0x40 | 0x100 | 0x400 | 0x1000 | 0x10000))
    }
}
