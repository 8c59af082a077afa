//! Which GPU is this? Vendor and model from the PCI vendor id and the device name.
//!
//! Vulkan reports a PCI vendor id, but other backends (GL through EGL on Android, Metal) often
//! report 0, and the model (which Mali generation, which Adreno series) is only in the name.
//! Both are pure functions so the tier rules can be tested on tables of real devices.

use bevy::reflect::Reflect;
use std::fmt;

/// The company behind a GPU, which decides its rendering architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum GpuVendor {
    /// Qualcomm Adreno (PCI id 0x5143): tile-based, GMEM bins.
    Qualcomm,
    /// Arm Mali (0x13B5): tile-based, 16x16 tiles with a per-pixel colour budget.
    Arm,
    /// Imagination PowerVR / IMG (0x1010): tile-based deferred rendering.
    Imagination,
    /// Apple silicon (0x106B): tile-based deferred rendering.
    Apple,
    /// NVIDIA (0x10DE): immediate mode (tiled caching, but attachments live in DRAM).
    Nvidia,
    /// AMD (0x1002, 0x1022), including Samsung Xclipse which reports AMD's RDNA.
    Amd,
    /// Intel (0x8086).
    Intel,
    /// Samsung Xclipse (0x144D): AMD RDNA inside Exynos.
    Samsung,
    /// A software rasteriser: Mesa lavapipe/llvmpipe (0x10005), SwiftShader, WARP.
    Software,
    /// Anything else, with its PCI vendor id.
    Other(u32),
}

impl GpuVendor {
    /// PCI vendor id of Qualcomm.
    pub const QUALCOMM_ID: u32 = 0x5143;
    /// PCI vendor id of Arm.
    pub const ARM_ID: u32 = 0x13B5;
    /// PCI vendor id of Imagination Technologies.
    pub const IMAGINATION_ID: u32 = 0x1010;
    /// PCI vendor id of Apple.
    pub const APPLE_ID: u32 = 0x106B;
    /// PCI vendor id of NVIDIA.
    pub const NVIDIA_ID: u32 = 0x10DE;
    /// PCI vendor id of AMD (ATI).
    pub const AMD_ID: u32 = 0x1002;
    /// Second PCI vendor id used by AMD.
    pub const AMD_ALT_ID: u32 = 0x1022;
    /// PCI vendor id of Intel.
    pub const INTEL_ID: u32 = 0x8086;
    /// PCI vendor id of Samsung.
    pub const SAMSUNG_ID: u32 = 0x144D;
    /// Khronos vendor id `VK_VENDOR_ID_MESA`, reported by lavapipe.
    pub const MESA_ID: u32 = 0x10005;
    /// PCI vendor id of Google (SwiftShader).
    pub const GOOGLE_ID: u32 = 0x1AE0;

    /// Classifies a GPU from its vendor id, falling back to its name when the id is unknown
    /// (GL and Metal backends often report 0).
    pub fn classify(vendor_id: u32, device_name: &str) -> Self {
        match vendor_id {
            Self::QUALCOMM_ID => return Self::Qualcomm,
            Self::ARM_ID => return Self::Arm,
            Self::IMAGINATION_ID => return Self::Imagination,
            Self::APPLE_ID => return Self::Apple,
            Self::NVIDIA_ID => return Self::Nvidia,
            Self::AMD_ID | Self::AMD_ALT_ID => return Self::Amd,
            Self::INTEL_ID => return Self::Intel,
            Self::SAMSUNG_ID => return Self::Samsung,
            Self::MESA_ID | Self::GOOGLE_ID => return Self::Software,
            _ => {}
        }
        let name = device_name.to_ascii_lowercase();
        let has = |needle: &str| name.contains(needle);
        if has("llvmpipe") || has("lavapipe") || has("swiftshader") || has("softpipe") {
            Self::Software
        } else if has("adreno") {
            Self::Qualcomm
        } else if has("mali") {
            Self::Arm
        } else if has("powervr") || name.starts_with("img ") || has(" img ") {
            Self::Imagination
        } else if name.starts_with("apple") {
            Self::Apple
        } else if has("nvidia") || has("geforce") || has("quadro") || has("tegra") {
            Self::Nvidia
        } else if has("radeon") || has("amd") {
            Self::Amd
        } else if has("intel") {
            Self::Intel
        } else if has("xclipse") {
            Self::Samsung
        } else {
            Self::Other(vendor_id)
        }
    }

    /// Whether this vendor's GPUs render in tiles held in on-chip memory, so that attachment
    /// loads and stores are real DRAM traffic worth avoiding.
    pub fn is_tile_based(self) -> bool {
        matches!(
            self,
            Self::Qualcomm | Self::Arm | Self::Imagination | Self::Apple
        )
    }
}

impl fmt::Display for GpuVendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Qualcomm => f.write_str("Qualcomm"),
            Self::Arm => f.write_str("Arm"),
            Self::Imagination => f.write_str("Imagination"),
            Self::Apple => f.write_str("Apple"),
            Self::Nvidia => f.write_str("NVIDIA"),
            Self::Amd => f.write_str("AMD"),
            Self::Intel => f.write_str("Intel"),
            Self::Samsung => f.write_str("Samsung"),
            Self::Software => f.write_str("software (Mesa/SwiftShader)"),
            Self::Other(id) => write!(f, "vendor 0x{id:04X}"),
        }
    }
}

/// The architecture generation of a mobile GPU, parsed from its name; tier rules and tile
/// budgets depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum GpuModel {
    /// Adreno with its model number (e.g. 650); `series()` gives 6 for 6xx.
    Adreno(u32),
    /// Mali with its architecture generation and number (e.g. Valhall G78 -> `number: 78`).
    Mali {
        /// Architecture generation.
        arch: MaliArch,
        /// Model number: 71 for G71, 715 for G715, 880 for T880.
        number: u32,
    },
    /// PowerVR Rogue (GE/GM/GT/GX series).
    PowerVrRogue,
    /// PowerVR/IMG B-Series (BXE/BXM/BXS/BXT).
    ImgBSeries,
    /// IMG C-Series (CXT/CXM).
    ImgCSeries,
    /// IMG D-Series (DXT/DXS/DXD).
    ImgDSeries,
    /// Samsung Xclipse with its model number (920, 930, 940, 950): AMD RDNA in Exynos, whatever
    /// vendor id the driver reports (Samsung's or AMD's).
    Xclipse(u32),
    /// Apple M-series (Mac) with its generation.
    AppleM(u32),
    /// Apple A-series (iPhone/iPad) with its generation.
    AppleA(u32),
    /// Not a model this crate distinguishes.
    Unknown,
}

/// Mali architecture generations; the per-pixel tile budget changed between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Reflect)]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum MaliArch {
    /// Midgard: Mali-T6xx/T7xx/T8xx.
    Midgard,
    /// Bifrost: Mali-G31/G51/G52/G71/G72/G76.
    Bifrost,
    /// Valhall: Mali-G57/G68/G77/G78/G310/G510/G610/G710.
    Valhall,
    /// Fifth generation: Mali-G615/G715 and Immortalis-G715, G620/G720 and later.
    FifthGen,
}

impl GpuModel {
    /// Parses the model from a device name as Vulkan, GL or Metal reports it.
    pub fn parse(device_name: &str) -> Self {
        let lower = device_name.to_ascii_lowercase();
        if let Some(number) = lower.split("adreno").nth(1).and_then(first_number) {
            return Self::Adreno(number);
        }
        if lower.contains("mali") || lower.contains("immortalis") {
            // "Mali-G78", "Mali-G715", "Immortalis-G715", "Mali-T880".
            let after = lower
                .split(['-', ' '])
                .find(|word| {
                    (word.starts_with('g') || word.starts_with('t'))
                        && word[1..].starts_with(|c: char| c.is_ascii_digit())
                })
                .unwrap_or("");
            if let Some(number) = first_number(after) {
                let arch = if after.starts_with('t') {
                    MaliArch::Midgard
                } else {
                    mali_arch(number)
                };
                return Self::Mali { arch, number };
            }
        }
        if lower.contains("powervr") || lower.starts_with("img ") {
            if lower.contains(" dx") || lower.contains("d-series") {
                return Self::ImgDSeries;
            }
            if lower.contains(" cx") || lower.contains("c-series") {
                return Self::ImgCSeries;
            }
            if lower.contains("b-series") || lower.contains(" bx") {
                return Self::ImgBSeries;
            }
            if lower.contains("rogue") || lower.contains(" g") {
                return Self::PowerVrRogue;
            }
        }
        if let Some(number) = lower.split("xclipse").nth(1).and_then(first_number) {
            return Self::Xclipse(number);
        }
        if let Some(rest) = lower.strip_prefix("apple ") {
            if let Some(number) = rest.strip_prefix('m').and_then(first_number) {
                return Self::AppleM(number);
            }
            if let Some(number) = rest.strip_prefix('a').and_then(first_number) {
                return Self::AppleA(number);
            }
        }
        Self::Unknown
    }

    /// Adreno series digit (6 for Adreno 650), if this is an Adreno.
    pub fn adreno_series(self) -> Option<u32> {
        match self {
            Self::Adreno(number) => {
                let mut series = number;
                while series >= 10 {
                    series /= 10;
                }
                Some(series)
            }
            _ => None,
        }
    }
}

fn mali_arch(number: u32) -> MaliArch {
    match number {
        31 | 51 | 52 | 71 | 72 | 76 => MaliArch::Bifrost,
        57 | 68 | 77 | 78 | 310 | 510 | 610 | 710 => MaliArch::Valhall,
        n if n >= 615 => MaliArch::FifthGen,
        _ => MaliArch::Valhall,
    }
}

fn first_number(text: &str) -> Option<u32> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real device names as drivers report them, with the vendor id the driver reports (0 where
    /// the backend gives none).
    const DEVICES: &[(u32, &str, GpuVendor, GpuModel)] = &[
        (
            0x5143,
            "Adreno (TM) 540",
            GpuVendor::Qualcomm,
            GpuModel::Adreno(540),
        ),
        (
            0x5143,
            "Adreno (TM) 618",
            GpuVendor::Qualcomm,
            GpuModel::Adreno(618),
        ),
        (
            0x5143,
            "Adreno (TM) 650",
            GpuVendor::Qualcomm,
            GpuModel::Adreno(650),
        ),
        (
            0x5143,
            "Adreno (TM) 740",
            GpuVendor::Qualcomm,
            GpuModel::Adreno(740),
        ),
        (
            0,
            "Adreno (TM) 650",
            GpuVendor::Qualcomm,
            GpuModel::Adreno(650),
        ),
        (
            0x13B5,
            "Mali-G71",
            GpuVendor::Arm,
            GpuModel::Mali {
                arch: MaliArch::Bifrost,
                number: 71,
            },
        ),
        (
            0x13B5,
            "Mali-G76",
            GpuVendor::Arm,
            GpuModel::Mali {
                arch: MaliArch::Bifrost,
                number: 76,
            },
        ),
        (
            0x13B5,
            "Mali-G78",
            GpuVendor::Arm,
            GpuModel::Mali {
                arch: MaliArch::Valhall,
                number: 78,
            },
        ),
        (
            0x13B5,
            "Mali-G715",
            GpuVendor::Arm,
            GpuModel::Mali {
                arch: MaliArch::FifthGen,
                number: 715,
            },
        ),
        (
            0x13B5,
            "Mali-G710 MC10",
            GpuVendor::Arm,
            GpuModel::Mali {
                arch: MaliArch::Valhall,
                number: 710,
            },
        ),
        (
            0,
            "Mali-T880",
            GpuVendor::Arm,
            GpuModel::Mali {
                arch: MaliArch::Midgard,
                number: 880,
            },
        ),
        (
            0x13B5,
            "Immortalis-G715",
            GpuVendor::Arm,
            GpuModel::Mali {
                arch: MaliArch::FifthGen,
                number: 715,
            },
        ),
        (
            0x1010,
            "PowerVR B-Series BXM-8-256",
            GpuVendor::Imagination,
            GpuModel::ImgBSeries,
        ),
        (
            0x1010,
            "IMG DXT-48-1536",
            GpuVendor::Imagination,
            GpuModel::ImgDSeries,
        ),
        (
            0x1010,
            "PowerVR Rogue GE8320",
            GpuVendor::Imagination,
            GpuModel::PowerVrRogue,
        ),
        (0, "Apple M2", GpuVendor::Apple, GpuModel::AppleM(2)),
        (
            0x106B,
            "Apple A15 GPU",
            GpuVendor::Apple,
            GpuModel::AppleA(15),
        ),
        (
            0x10005,
            "llvmpipe (LLVM 15.0.6, 256 bits)",
            GpuVendor::Software,
            GpuModel::Unknown,
        ),
        (
            0,
            "llvmpipe (LLVM 15.0.6, 256 bits)",
            GpuVendor::Software,
            GpuModel::Unknown,
        ),
        (0x10DE, "NVIDIA H200", GpuVendor::Nvidia, GpuModel::Unknown),
        (
            0,
            "NVIDIA GeForce RTX 4090",
            GpuVendor::Nvidia,
            GpuModel::Unknown,
        ),
        (
            0x1002,
            "AMD Radeon RX 7900 XTX (RADV NAVI31)",
            GpuVendor::Amd,
            GpuModel::Unknown,
        ),
        (
            0x8086,
            "Intel(R) UHD Graphics 630 (CFL GT2)",
            GpuVendor::Intel,
            GpuModel::Unknown,
        ),
        (
            0x1010,
            "PowerVR Rogue GM9446",
            GpuVendor::Imagination,
            GpuModel::PowerVrRogue,
        ),
        (
            0,
            "PowerVR Rogue GE8322",
            GpuVendor::Imagination,
            GpuModel::PowerVrRogue,
        ),
        (
            0x1010,
            "PowerVR C-Series CXT-48-1536",
            GpuVendor::Imagination,
            GpuModel::ImgCSeries,
        ),
        (
            0x1010,
            "PowerVR D-Series DXT-48-1536",
            GpuVendor::Imagination,
            GpuModel::ImgDSeries,
        ),
        (
            0,
            "IMG DXT-48-1536",
            GpuVendor::Imagination,
            GpuModel::ImgDSeries,
        ),
        (
            0x144D,
            "Samsung Xclipse 920",
            GpuVendor::Samsung,
            GpuModel::Xclipse(920),
        ),
        (
            0x144D,
            "Samsung Xclipse 930",
            GpuVendor::Samsung,
            GpuModel::Xclipse(930),
        ),
        (
            0x144D,
            "Samsung Xclipse 950",
            GpuVendor::Samsung,
            GpuModel::Xclipse(950),
        ),
        // Some Xclipse drivers report AMD's vendor id: the vendor is AMD's, the model still
        // Xclipse (the tier rules go by the model).
        (
            0x1002,
            "Samsung Xclipse 940",
            GpuVendor::Amd,
            GpuModel::Xclipse(940),
        ),
        (
            0,
            "Samsung Xclipse 940",
            GpuVendor::Samsung,
            GpuModel::Xclipse(940),
        ),
        (
            0x1234,
            "Some Future GPU",
            GpuVendor::Other(0x1234),
            GpuModel::Unknown,
        ),
    ];

    #[test]
    fn classifies_real_device_names() {
        for &(id, name, vendor, model) in DEVICES {
            assert_eq!(
                GpuVendor::classify(id, name),
                vendor,
                "vendor of {name:?} (0x{id:X})"
            );
            assert_eq!(GpuModel::parse(name), model, "model of {name:?}");
        }
    }

    #[test]
    fn tile_based_vendors() {
        for &(id, name, vendor, _) in DEVICES {
            let expected = matches!(
                vendor,
                GpuVendor::Qualcomm | GpuVendor::Arm | GpuVendor::Imagination | GpuVendor::Apple
            );
            assert_eq!(
                GpuVendor::classify(id, name).is_tile_based(),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn adreno_series() {
        assert_eq!(GpuModel::Adreno(650).adreno_series(), Some(6));
        assert_eq!(GpuModel::Adreno(740).adreno_series(), Some(7));
        assert_eq!(GpuModel::Adreno(540).adreno_series(), Some(5));
        assert_eq!(GpuModel::Unknown.adreno_series(), None);
    }
}
