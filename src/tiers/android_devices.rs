//! The tier rules on the GPUs Android phones ship (issue 16): every vendor family with a rule or
//! a known gap, named as the Vulkan driver names it, so that a change to a rule shows here.
//! Complements `tests::tiers_of_real_devices`, which holds the rules' own cases.
//!
//! What the rules know, by vendor:
//! - Adreno (Qualcomm): 6xx and older render MSAA without subpasses; every Adreno gets the
//!   empty-resolve-list quirk. 7xx and 8xx render tile MSAA.
//! - Mali (Arm): Midgard and G71/G72 render MSAA without subpasses; Midgard and the first Bifrost
//!   cores (G71, G51, G31) hold 128 bits of tile colour per pixel, less than the merged pass's
//!   160, and prefer forward; Samsung's Exynos drivers for G76/G77 fall back to forward. Later Bifrost (G52), Valhall and fifth-generation GPUs
//!   (Immortalis) render tile MSAA.
//! - PowerVR / IMG: Rogue (GE8xxx, GM9xxx) renders the tile path without MSAA: Flutter saw
//!   rendering artifacts on a 9000-series Rogue go away with MSAA off (flutter/flutter#162033),
//!   and keeps every PowerVR before the C-Series off Vulkan (#161841, #165520, #191808).
//!   B-, C- and D-Series have no rule and render tile MSAA: what is documented against them is
//!   not about the tile path's features. Flutter's B-Series reports (#191808: glyph atlas
//!   corruption, slow frames, GPU memory) are about Vulkan as a whole, which Bevy's forward path
//!   would use too; ANGLE's PowerVR workarounds (src/libANGLE/renderer/vulkan/vk_renderer.cpp)
//!   turn off dynamic rendering, imageless framebuffers, vertex-input and primitive-topology
//!   dynamic state and graphics pipeline libraries, none of which the tile path uses; Impeller's
//!   `input_attachment_self_dependency_broken` (every PowerVR) is a subpass reading its own
//!   colour attachment, which the tile path never does (its lighting subpass writes only the
//!   stencil of the depth it reads); ANGLE records that IMG hardware is not coherent when a
//!   fragment reads other samples of its pixel in the same pass, which the tile path only does
//!   across a subpass dependency. Nothing found documents a PowerVR bug with several subpasses,
//!   input attachments, transient attachments, `VK_KHR_create_renderpass2` or depth/stencil
//!   resolve, and no Imagination document on them was found.
//! - Xclipse (Samsung, AMD RDNA): `Auto` picks Bevy's forward path. ANGLE counts Samsung's GPU
//!   as an immediate-mode renderer with NVIDIA, AMD and Intel (vk_renderer.cpp), so the merged
//!   subpasses keep nothing on chip there; and ANGLE skips its gl_SampleID, per-sample shading
//!   and multisampled framebuffer-fetch tests on the Galaxy S22 and S24 Exynos
//!   (src/tests/angle_end2end_tests_expectations.txt), the features of the tile MSAA lighting.
//!   A forced tile tier still runs. Whether Xclipse drivers expose `LAZILY_ALLOCATED` memory was
//!   not found documented (the tile path falls back to ordinary memory where they do not).
//!   Flutter also keeps the first Xclipse drivers (Vulkan 1.1) off Vulkan altogether
//!   (flutter/flutter#161334, #161981), which a tier cannot fix: Bevy's forward path uses Vulkan
//!   too. The rules match the Xclipse model, not the vendor id, so AMD desktop GPUs, NVIDIA and
//!   lavapipe keep the tile path.

use super::{PlanRequirements, RenderTier, TierSetting, choose_tier};
use crate::device::{DeviceProfile, GpuModel, GpuVendor, MaliArch};

fn phone(vendor_id: u32, name: &str, driver_info: &str) -> DeviceProfile {
    crate::device::phones::phone_profile(vendor_id, name, driver_info)
}

fn plan() -> PlanRequirements {
    PlanRequirements {
        color_pass: "gbuffer".into(),
        color_attachments: 4,
        color_pass_depth: true,
        input_pass: "lighting".into(),
        input_attachments: ["albedo_occlusion", "normal", "material", "depth", "light"]
            .map(String::from)
            .to_vec(),
        tile_color_bits: 160,
    }
}

const MSAA4: RenderTier = RenderTier::TileDeferredMsaa { samples: 4 };

/// Android GPUs and what the vendor rules give them: (vendor id, device name, driver info,
/// vendor, tile-based, tier at 4x MSAA, a word of the reason).
#[allow(
    clippy::type_complexity,
    reason = "a test table: one row per GPU reads better than a struct per row"
)]
const ANDROID_GPUS: &[(u32, &str, &str, GpuVendor, bool, RenderTier, &str)] = &[
    (
        0x5143,
        "Adreno (TM) 610",
        "",
        GpuVendor::Qualcomm,
        true,
        RenderTier::TileDeferred,
        "Adreno 6xx",
    ),
    (
        0x5143,
        "Adreno (TM) 750",
        "",
        GpuVendor::Qualcomm,
        true,
        MSAA4,
        "empty resolve",
    ),
    (
        0x5143,
        "Adreno (TM) 830",
        "",
        GpuVendor::Qualcomm,
        true,
        MSAA4,
        "empty resolve",
    ),
    (
        0x13B5,
        "Mali-T880",
        "",
        GpuVendor::Arm,
        true,
        // 128 bits of tile colour per pixel: the merged pass (160) would split.
        RenderTier::Forward,
        "tile colour budget",
    ),
    (
        0x13B5,
        "Mali-G72",
        "",
        GpuVendor::Arm,
        true,
        RenderTier::TileDeferred,
        "G71/G72",
    ),
    (
        0x13B5,
        "Mali-G52",
        "",
        GpuVendor::Arm,
        true,
        MSAA4,
        "Vulkan",
    ),
    (
        0x13B5,
        "Mali-G57",
        "",
        GpuVendor::Arm,
        true,
        MSAA4,
        "Vulkan",
    ),
    (
        0x13B5,
        "Immortalis-G720",
        "",
        GpuVendor::Arm,
        true,
        MSAA4,
        "Vulkan",
    ),
    (
        0x13B5,
        "Mali-G76",
        "Samsung Exynos 9820",
        GpuVendor::Arm,
        true,
        RenderTier::Forward,
        "Samsung",
    ),
    (
        0x1010,
        "PowerVR Rogue GE8320",
        "",
        GpuVendor::Imagination,
        true,
        RenderTier::TileDeferred,
        "PowerVR Rogue",
    ),
    (
        0x1010,
        "PowerVR Rogue GM9446",
        "",
        GpuVendor::Imagination,
        true,
        RenderTier::TileDeferred,
        "flutter/flutter#162033",
    ),
    (
        0x1010,
        "PowerVR B-Series BXM-8-256",
        "",
        GpuVendor::Imagination,
        true,
        MSAA4,
        "Vulkan",
    ),
    (
        0x1010,
        "PowerVR C-Series CXT-48-1536",
        "",
        GpuVendor::Imagination,
        true,
        MSAA4,
        "Vulkan",
    ),
    (
        0x1010,
        "PowerVR D-Series DXT-48-1536",
        "",
        GpuVendor::Imagination,
        true,
        MSAA4,
        "Vulkan",
    ),
    (
        0x1010,
        "IMG DXT-48-1536",
        "",
        GpuVendor::Imagination,
        true,
        MSAA4,
        "Vulkan",
    ),
    (
        0x144D,
        "Samsung Xclipse 920",
        "",
        GpuVendor::Samsung,
        false,
        RenderTier::Forward,
        "immediate-mode",
    ),
    (
        0x144D,
        "Samsung Xclipse 930",
        "",
        GpuVendor::Samsung,
        false,
        RenderTier::Forward,
        "immediate-mode",
    ),
    // Some Xclipse drivers report AMD's vendor id: the same decision, by the model.
    (
        0x1002,
        "Samsung Xclipse 940",
        "",
        GpuVendor::Amd,
        false,
        RenderTier::Forward,
        "immediate-mode",
    ),
    (
        0x144D,
        "Samsung Xclipse 950",
        "",
        GpuVendor::Samsung,
        false,
        RenderTier::Forward,
        "gl_SampleID",
    ),
];

#[test]
fn android_gpus_get_the_tier_their_vendor_rules_give() {
    for &(vendor_id, name, driver_info, vendor, tile_based, tier, reason) in ANDROID_GPUS {
        let profile = phone(vendor_id, name, driver_info);
        assert_eq!(profile.vendor, vendor, "{name}");
        assert_eq!(profile.vendor.is_tile_based(), tile_based, "{name}");
        let decision = choose_tier(&profile, &plan(), 4, TierSetting::Auto);
        assert_eq!(decision.tier, tier, "{name}: {decision:?}");
        assert!(
            decision.summary().contains(reason),
            "{name}: the reason {:?} names {reason:?}",
            decision.reasons
        );
    }
}

#[test]
fn android_gpu_names_parse_to_their_models() {
    assert_eq!(GpuModel::parse("Adreno (TM) 830"), GpuModel::Adreno(830));
    assert_eq!(GpuModel::Adreno(830).adreno_series(), Some(8));
    assert_eq!(
        GpuModel::parse("Immortalis-G720"),
        GpuModel::Mali {
            arch: MaliArch::FifthGen,
            number: 720
        }
    );
    assert_eq!(
        GpuModel::parse("Mali-G52"),
        GpuModel::Mali {
            arch: MaliArch::Bifrost,
            number: 52
        }
    );
    assert_eq!(
        GpuModel::parse("PowerVR Rogue GE8320"),
        GpuModel::PowerVrRogue
    );
    assert_eq!(
        GpuModel::parse("PowerVR Rogue GM9446"),
        GpuModel::PowerVrRogue
    );
    assert_eq!(
        GpuModel::parse("PowerVR C-Series CXT-48-1536"),
        GpuModel::ImgCSeries
    );
    assert_eq!(
        GpuModel::parse("PowerVR D-Series DXT-48-1536"),
        GpuModel::ImgDSeries
    );
    assert_eq!(GpuModel::parse("IMG DXT-48-1536"), GpuModel::ImgDSeries);
    assert_eq!(
        GpuModel::parse("Samsung Xclipse 920"),
        GpuModel::Xclipse(920)
    );
    assert_eq!(
        GpuModel::parse("Samsung Xclipse 950"),
        GpuModel::Xclipse(950)
    );
}

/// The phone profiles `TileValidation` offers are the GPUs this table checks.
#[test]
fn the_public_phone_list_is_this_table() {
    let table: Vec<(u32, &str, &str)> = ANDROID_GPUS
        .iter()
        .map(|&(vendor_id, name, driver_info, ..)| (vendor_id, name, driver_info))
        .collect();
    let public: Vec<(u32, &str, &str)> = crate::device::phones::PHONE_GPUS
        .iter()
        .map(|gpu| (gpu.vendor_id, gpu.name, gpu.driver_info))
        .collect();
    assert_eq!(table, public);
}
