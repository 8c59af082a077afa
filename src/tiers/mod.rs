//! Device tiers: which path a camera renders with on this device, and why.
//!
//! The best path the device really supports is picked from the [`DeviceProfile`], what the tile
//! path's frame asks of it ([`PlanRequirements`]), the camera's requested MSAA and the user's
//! [`TierSetting`], by rules written as data: each names its reason and, where there is one, the
//! source that documents the vendor behaviour. Known driver bugs are [`Quirks`] the backend
//! obeys. On a mobile GPU that is not a tiler (Samsung Xclipse) the tile path is correct but
//! saves nothing, so `Auto` prefers Bevy's forward path there while a forced tile tier still
//! runs. [`decide`] is the whole policy, a pure function; the tile path applies its result, a
//! component on the camera ([`TierDecision`]) that the inspector shows and the log records when
//! it changes.
//!
//! Tiers, best first: [`RenderTier::TileDeferredMsaa`] (one native pass, multisampled
//! transient G-buffer, edge-selective lighting, in-pass resolve), [`RenderTier::TileDeferred`]
//! (the same without MSAA), [`RenderTier::Forward`] (Bevy's own `Core3d` with the camera's
//! MSAA), and the debug tier [`RenderTier::Unmerged`] (a tile tier with its passes in separate
//! render passes, the G-buffer stored and sampled). A camera whose tile tier fails at run time (pipeline or render pass creation, out of
//! memory) drops to the next tier for the rest of the run.

use crate::{
    device::{DeviceProfile, GpuModel, GpuVendor, GraphicsBackend, MaliArch, SampleCounts},
    frame_graph::TileBudget,
};
use bevy::{prelude::*, render::extract_component::ExtractComponent};
use std::fmt;

/// A rendering path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum RenderTier {
    /// Tile-deferred with MSAA on tile memory at this many samples.
    TileDeferredMsaa {
        /// Samples per pixel (2, 4 or 8).
        samples: u32,
    },
    /// Tile-deferred without MSAA.
    TileDeferred,
    /// Bevy's own `Core3d` forward renderer, with the camera's MSAA.
    Forward,
    /// Debug tier: a tile tier with merging disabled. The G-buffer, lighting and tonemap passes
    /// are separate render passes; the G-buffer and the light are stored and read back as
    /// textures. For A/B comparison against the merged tiers (what the merge saves, measured) and
    /// for drivers whose subpass merging is broken. With MSAA the lighting draws run once per
    /// sample index (the stencil split needs depth attached and read in one pass).
    Unmerged {
        /// Samples per pixel (1: the unmerged `TileDeferred`, more: `TileDeferredMsaa`).
        samples: u32,
    },
}

impl RenderTier {
    /// The next tier down, used when this one fails at run time.
    pub fn fallback(self) -> Self {
        match self {
            Self::TileDeferredMsaa { .. } => Self::TileDeferred,
            Self::TileDeferred | Self::Forward | Self::Unmerged { .. } => Self::Forward,
        }
    }

    /// Whether the tile schedule renders this tier.
    pub fn is_tile(self) -> bool {
        !matches!(self, Self::Forward)
    }

    /// Samples per pixel the tile path renders with (1 for `TileDeferred`).
    pub fn tile_samples(self) -> u32 {
        match self {
            Self::TileDeferredMsaa { samples } | Self::Unmerged { samples } => samples,
            _ => 1,
        }
    }

    /// Whether this is the unmerged debug tier (separate render passes).
    pub fn is_unmerged(self) -> bool {
        matches!(self, Self::Unmerged { .. })
    }

    /// This tile tier with merging disabled (the unmerged debug tier at the same sample count);
    /// `Forward` stays `Forward`.
    pub fn unmerged(self) -> Self {
        if self.is_tile() {
            Self::Unmerged {
                samples: self.tile_samples(),
            }
        } else {
            self
        }
    }
}

impl fmt::Display for RenderTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TileDeferredMsaa { samples } => write!(f, "tile-deferred + {samples}x MSAA"),
            Self::TileDeferred => f.write_str("tile-deferred"),
            Self::Forward => f.write_str("Bevy forward (Core3d)"),
            Self::Unmerged { samples: 1 } => f.write_str("tile-deferred, unmerged (debug)"),
            Self::Unmerged { samples } => {
                write!(f, "tile-deferred + {samples}x MSAA, unmerged (debug)")
            }
        }
    }
}

/// What the user asks for on a camera.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, Default, PartialEq, Hash)]
pub enum TierSetting {
    /// The best tier the device supports.
    #[default]
    Auto,
    /// This tier if the device can run it at all (a tile tier still needs Vulkan).
    Force(RenderTier),
}

/// Known driver and GPU bugs the backends work around; each names the vendor and the bug.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Quirks(pub u32);

impl Quirks {
    /// Adreno 6xx and older: subpasses combined with MSAA are unreliable (driver resolves or
    /// splits the pass; seed 004's closing section; Godot issue 81910 saw a Quest Pro, an
    /// Adreno 650, skip an MSAA-resolving subpass and present black).
    pub const ADRENO_SUBPASS_MSAA: Quirks = Quirks(1 << 0);
    /// Early Mali-G (Bifrost G71/G72): subpass + MSAA splits or spills (seed 004; Godot issue
    /// 82175 on mixed sample counts).
    pub const EARLY_MALI_SUBPASS_MSAA: Quirks = Quirks(1 << 1);
    /// Adreno: a subpass must never get an empty-but-present attachment list, resolve list
    /// included (Filament's Vulkan backend passes null instead). The render-pass backend
    /// (`vulkan/render_pass.rs`) passes null for every empty list on every device, so this
    /// quirk is satisfied everywhere and recorded for the inspector and the log.
    pub const ADRENO_NO_EMPTY_RESOLVE_LIST: Quirks = Quirks(1 << 2);
    /// Samsung Exynos Mali drivers of the Galaxy S10/S20 generation (Mali-G76/G77) were
    /// reported not to merge subpasses (Arm community forum): the tile path still renders, but
    /// saves nothing, so Bevy's forward path is preferred.
    pub const SAMSUNG_MALI_NO_SUBPASS_MERGE: Quirks = Quirks(1 << 3);

    /// Whether all of `other` is set.
    pub fn contains(self, other: Quirks) -> bool {
        self.0 & other.0 == other.0
    }

    /// Adds `other`.
    pub fn insert(&mut self, other: Quirks) {
        self.0 |= other.0;
    }
}

/// The tier chosen for a camera, with its reasons (a component on the camera, extracted to
/// the render world).
#[derive(Component, Clone, Debug, PartialEq, Reflect, ExtractComponent)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[extract_component_filter(With<Camera>)]
#[reflect(Component, Clone, Debug, PartialEq)]
pub struct TierDecision {
    /// The tier in use.
    pub tier: RenderTier,
    /// Why, in plain words, one line per rule that applied.
    pub reasons: Vec<String>,
    /// Driver workarounds in force.
    pub quirks: Quirks,
    /// Set when the tier was lowered after a failure at run time.
    pub failure: Option<String>,
    /// Set while an `Auto` camera renders with Bevy's `Core3d` because it sees something the
    /// tile path cannot draw (see [`apply_missing`]).
    pub missing_fallback: Option<MissingFallback>,
    /// Set on `Auto` cameras of GPUs that are not tilers, which time the tile path and Bevy's
    /// `Core3d` and keep the faster (see [`measure`]).
    pub measured: Option<TierMeasurement>,
}

/// Why an `Auto` tile camera renders with `Core3d` for now, and the tile tier it goes back to.
#[derive(Clone, Debug, PartialEq, Eq, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, PartialEq)]
pub struct MissingFallback {
    /// The tile tier the camera returns to once nothing of the kind has been in view for
    /// [`MISSING_RETURN_FRAMES`] frames.
    pub tile_tier: RenderTier,
    /// What was in view, in plain words.
    pub why: String,
}

impl TierDecision {
    /// One readable line for the log and the inspector.
    pub fn summary(&self) -> String {
        format!("{} ({})", self.tier, self.reasons.join("; "))
    }
}

/// Written (a Bevy [`Message`]) when a tile camera's tier is first decided and each time it
/// changes: read it with a `MessageReader<TileTierChanged>` to react when a camera falls back to
/// Bevy's renderer, and why.
///
/// Only the tier counts: a [`TierDecision`] whose reasons change while its tier stays is not a
/// change. Removing [`TileDeferred`](crate::TileDeferred) from a camera writes nothing.
///
/// ```no_run
/// use bevy::prelude::*;
/// use bevy_tile_deferred::prelude::*;
///
/// fn watch_tiers(mut changes: MessageReader<TileTierChanged>) {
///     for change in changes.read() {
///         if !change.to.is_tile() {
///             warn!("camera {} renders with Bevy's Core3d: {}", change.camera, change.reason);
///         }
///     }
/// }
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[reflect(Clone, Debug, PartialEq)]
pub struct TileTierChanged {
    /// The main-world camera entity.
    pub camera: Entity,
    /// The tier it rendered with until now (None: its first decision).
    pub from: Option<RenderTier>,
    /// The tier it renders with from this frame.
    pub to: RenderTier,
    /// Why it changed.
    pub reason: TierChangeReason,
}

/// Why a camera's tier changed ([`TileTierChanged::reason`]).
#[derive(Clone, Debug, PartialEq, Eq, Reflect)]
#[reflect(Clone, Debug, PartialEq)]
pub enum TierChangeReason {
    /// The device's rules and the camera's settings: its first decision, a changed
    /// [`TileDeferred`](crate::TileDeferred) or `Msaa`, or a new device. The rules that applied,
    /// in plain words ([`TierDecision::reasons`]).
    Rules(Vec<String>),
    /// The tile path failed at run time (out of memory, a pipeline or render pass that could
    /// not be created): the error. The camera keeps the lower tier while the render device
    /// lives (a new device, after Bevy recovers from device loss, tries the tile tier again).
    Failure(String),
    /// Under [`TierSetting::Auto`], the camera sees what the tile path cannot draw (the kinds,
    /// in plain words; the entities are on its [`TileMissing`](crate::TileMissing)): Bevy's
    /// `Core3d` renders it meanwhile.
    Missing(String),
    /// What the tile path cannot draw has been out of view for [`MISSING_RETURN_FRAMES`] frames:
    /// the camera is back on its tile tier.
    MissingCleared,
    /// On a GPU that is not a tiler, an `Auto` camera times the tile path and Bevy's `Core3d`
    /// and keeps the faster: switched to time one, or to keep the faster (the times, in plain
    /// words).
    Measured(String),
}

impl fmt::Display for TierChangeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rules(reasons) => f.write_str(&reasons.join("; ")),
            Self::Failure(why) => write!(f, "the tile path failed: {why}"),
            Self::Missing(what) => write!(f, "in view, not drawn by the tile path: {what}"),
            Self::Measured(why) => f.write_str(why),
            Self::MissingCleared => write!(
                f,
                "nothing the tile path cannot draw in view for {MISSING_RETURN_FRAMES} frames"
            ),
        }
    }
}

impl TileTierChanged {
    /// The message for a camera whose decision goes from `previous` to `next`, where `failure`
    /// is the tile path's failure reported this frame, if any; None when the tier stays. Pure.
    pub fn between(
        camera: Entity,
        previous: Option<&TierDecision>,
        next: &TierDecision,
        failure: Option<&str>,
    ) -> Option<Self> {
        let from = previous.map(|previous| previous.tier);
        if from == Some(next.tier) {
            return None;
        }
        let fell_back = previous.is_some_and(|p| p.missing_fallback.is_some());
        let reason = match (failure, &next.missing_fallback) {
            (Some(why), _) => TierChangeReason::Failure(why.to_string()),
            (None, Some(missing)) if !fell_back => TierChangeReason::Missing(missing.why.clone()),
            (None, None) if fell_back => TierChangeReason::MissingCleared,
            (None, None) if next.measured.is_some() => {
                TierChangeReason::Measured(next.reasons.last().cloned().unwrap_or_default())
            }
            _ => TierChangeReason::Rules(next.reasons.clone()),
        };
        Some(Self {
            camera,
            from,
            to: next.tier,
            reason,
        })
    }
}

/// What the tile path's frame asks of one subpass, for the rules to check the device's limits
/// against. The tile path counts it from the passes it declares
/// (`tile_deferred::plan::requirements`), so it is stated once, by the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRequirements {
    /// The subpass writing the most colour attachments.
    pub color_pass: String,
    /// How many colour attachments it writes.
    pub color_attachments: u32,
    /// Whether it also has a depth attachment. The colour-attachment rule counts it as one more
    /// colour attachment.
    pub color_pass_depth: bool,
    /// The subpass reading the most input attachments.
    pub input_pass: String,
    /// The attachments it reads as input attachments (on tile), in declaration order.
    pub input_attachments: Vec<String>,
    /// Bits of colour per pixel the merged render pass holds on tile at 1x (its colour and
    /// input attachments), against a Mali-style tile colour budget.
    pub tile_color_bits: u32,
}

impl PlanRequirements {
    /// The colour attachments per subpass the device must allow: the colour pass's colour
    /// attachments, plus one for its depth attachment.
    fn color_slots(&self) -> u32 {
        self.color_attachments + u32::from(self.color_pass_depth)
    }

    /// The input attachments per fragment shader the device must allow.
    fn input_slots(&self) -> u32 {
        self.input_attachments.len() as u32
    }
}

/// A tier rule: when it applies, what it changes, and why.
struct Rule {
    applies: fn(&DeviceProfile, &PlanRequirements) -> bool,
    effect: Effect,
    reason: Reason,
}

/// A rule's reason: fixed text, or text naming what the plan asks.
#[derive(Clone, Copy)]
enum Reason {
    Text(&'static str),
    Plan(fn(&PlanRequirements) -> String),
}

impl Reason {
    fn describe(self, plan: &PlanRequirements) -> String {
        match self {
            Self::Text(text) => text.to_string(),
            Self::Plan(describe) => describe(plan),
        }
    }
}

#[derive(Clone, Copy)]
enum Effect {
    /// The tile path cannot run at all.
    ForwardOnly,
    /// The tile path runs, but not with MSAA.
    NoTileMsaa,
    /// The tile path runs correctly but gains nothing on this GPU: `Auto` picks Bevy's forward
    /// path; a forced tile tier is still honoured (for A/B runs).
    PreferForward,
    /// A driver workaround; the tier is unchanged.
    Quirk(Quirks),
}

/// `a, b, c and d`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [first @ .., last] => format!("{} and {last}", first.join(", ")),
    }
}

fn adreno_series(profile: &DeviceProfile) -> Option<u32> {
    (profile.vendor == GpuVendor::Qualcomm)
        .then(|| profile.model.adreno_series())
        .flatten()
}

/// The rules, in order. Data, not code paths: add a row to teach the crate about a device.
const RULES: &[Rule] = &[
    Rule {
        applies: |p, _| p.backend != GraphicsBackend::Vulkan,
        effect: Effect::ForwardOnly,
        reason: Reason::Text(
            "not Vulkan: subpasses, input attachments and memoryless attachments need the \
             Vulkan backend",
        ),
    },
    Rule {
        applies: |p, plan| {
            p.vulkan
                .as_ref()
                .is_some_and(|vk| vk.max_color_attachments < plan.color_slots())
        },
        effect: Effect::ForwardOnly,
        reason: Reason::Plan(|plan| {
            format!(
                "fewer than {} colour attachments per subpass (the {} subpass writes {}{})",
                plan.color_slots(),
                plan.color_pass,
                plan.color_attachments,
                if plan.color_pass_depth {
                    " plus depth"
                } else {
                    ""
                }
            )
        }),
    },
    Rule {
        applies: |p, plan| {
            p.vulkan
                .as_ref()
                .is_some_and(|vk| vk.max_per_stage_input_attachments < plan.input_slots())
        },
        effect: Effect::ForwardOnly,
        reason: Reason::Plan(|plan| {
            format!(
                "fewer than {} input attachments per fragment shader (the {} subpass reads {} \
                 on tile)",
                plan.input_slots(),
                plan.input_pass,
                and_list(&plan.input_attachments)
            )
        }),
    },
    Rule {
        applies: |p, _| adreno_series(p).is_some_and(|s| s <= 6),
        effect: Effect::NoTileMsaa,
        reason: Reason::Text(
            "Adreno 6xx and older: subpass + MSAA is unreliable (seed 004; Godot #81910)",
        ),
    },
    Rule {
        applies: |p, _| {
            matches!(
                p.model,
                GpuModel::Mali {
                    arch: MaliArch::Midgard,
                    ..
                } | GpuModel::Mali {
                    number: 71 | 72,
                    ..
                }
            )
        },
        effect: Effect::NoTileMsaa,
        reason: Reason::Text(
            "early Mali-G (G71/G72) and Midgard: subpass + MSAA splits the pass (seed 004; \
             Godot #82175)",
        ),
    },
    // Found by tile validation (issue 33): on these GPUs the compiler splits the merged pass
    // at the budget, the render world refuses a split plan, and the first tile frame failed
    // before the camera fell back.
    Rule {
        applies: |p, plan| {
            matches!(
                p.frame_graph_caps().tile_budget,
                TileBudget::BitsPerPixel(bits) if bits < plan.tile_color_bits
            )
        },
        effect: Effect::PreferForward,
        reason: Reason::Plan(|plan| {
            format!(
                "the merged G-buffer and lighting hold {} bits of colour per pixel on tile, over \
                 this Mali's tile colour budget (128 bits on Midgard and the first Bifrost \
                 cores, Arm's GPU best practices): the render pass would split and store the \
                 G-buffer, so Auto prefers Bevy's forward path",
                plan.tile_color_bits
            )
        }),
    },
    Rule {
        applies: |p, _| p.vendor == GpuVendor::Qualcomm,
        effect: Effect::Quirk(Quirks::ADRENO_NO_EMPTY_RESOLVE_LIST),
        reason: Reason::Text(
            "Adreno: never pass an empty resolve attachment list (Filament's quirk)",
        ),
    },
    Rule {
        applies: |p, _| {
            p.vendor == GpuVendor::Arm
                && p.driver_info.to_ascii_lowercase().contains("samsung")
                && matches!(
                    p.model,
                    GpuModel::Mali {
                        number: 76 | 77,
                        ..
                    }
                )
        },
        effect: Effect::ForwardOnly,
        reason: Reason::Text(
            "Samsung Exynos Mali-G76/G77 drivers were reported not to merge subpasses \
             (Arm community forum): the tile path would save nothing",
        ),
    },
    // PowerVR Rogue (GE8xxx, GM9xxx): Flutter found rendering artifacts on a 9000-series Rogue
    // phone (CPH1945) that went away with MSAA off (flutter/flutter#162033); Impeller's Vulkan
    // MSAA is a transient (memoryless where the device has it) multisampled attachment resolved
    // in the pass, as the tile path's is. Flutter then kept every PowerVR older than C-Series off Vulkan
    // (#161841, #165520; B-Series again in #191808). The report names a GM9xxx; the rule covers
    // the Rogue family (GE8xxx too), whose drivers Flutter treats alike. Nothing documents a
    // Rogue bug with subpasses or input attachments themselves, so the tile path stays.
    Rule {
        applies: |p, _| p.model == GpuModel::PowerVrRogue,
        effect: Effect::NoTileMsaa,
        reason: Reason::Text(
            "PowerVR Rogue (GE8xxx/GM9xxx): MSAA rendered artifacts on a GM9xxx until it was \
             turned off (flutter/flutter#162033)",
        ),
    },
    // Samsung Xclipse (AMD RDNA in Exynos): on the Vulkan drivers of the Galaxy S22 (Xclipse
    // 920) and S24 Exynos (Xclipse 940) ANGLE skips its tests of gl_SampleID
    // (SampleVariablesTest.SampleID, TextureMultisampleTest.MaskedDrawWithSampleID), of
    // per-sample shading (TextureSampleShadingTest.Basic) and of multisampled framebuffer fetch,
    // which ANGLE implements with input attachments (FramebufferFetchES31.MultiSampled):
    // google/angle src/tests/angle_end2end_tests_expectations.txt, added by commits 95294b2468,
    // 33dc1606ee ("Skip end2end failures on S22"), 8597a5fdcc and 5c58505be7 (S24). The tile
    // path's MSAA lighting is exactly that: subpassLoad of each sample at gl_SampleID with
    // sample-rate shading, and gl_SampleMask writes in its fallback.
    Rule {
        applies: |p, _| matches!(p.model, GpuModel::Xclipse(_)),
        effect: Effect::NoTileMsaa,
        reason: Reason::Text(
            "Samsung Xclipse: ANGLE skips its gl_SampleID, per-sample shading and multisampled \
             framebuffer-fetch tests on the Galaxy S22 and S24 (google/angle \
             angle_end2end_tests_expectations.txt)",
        ),
    },
    // Samsung Xclipse is not a tiler: ANGLE's vk_renderer.cpp classifies Samsung (0x144D) as
    // an immediate-mode renderer with NVIDIA, AMD and Intel, not with the tile-based Arm,
    // PowerVR, Qualcomm, Broadcom and Apple, and notes that render-to-texture MSAA emulation "is
    // only really useful on tiling hardware, but is exposed on ... Samsung's AMD-based GPU".
    // There the merged subpasses keep nothing on chip: the G-buffer is written to and read from
    // memory, which Bevy's forward path does not do. Matched by the model, so only the mobile
    // Xclipse parts (which some drivers report with AMD's vendor id); desktop AMD, NVIDIA and
    // lavapipe keep the tile path.
    Rule {
        applies: |p, _| matches!(p.model, GpuModel::Xclipse(_)),
        effect: Effect::PreferForward,
        reason: Reason::Text(
            "Samsung Xclipse is an immediate-mode GPU (AMD RDNA; ANGLE's vk_renderer.cpp), \
             not a tiler: the merged G-buffer goes through memory, so Auto prefers Bevy's \
             forward path",
        ),
    },
];

/// The MSAA sample counts the tile path can use on this device (colour and depth).
fn tile_sample_counts(profile: &DeviceProfile) -> SampleCounts {
    profile.vulkan.as_ref().map_or(SampleCounts(1), |vk| {
        SampleCounts(vk.framebuffer_color_sample_counts.0 & vk.framebuffer_depth_sample_counts.0)
    })
}

/// Picks the tier for a camera asking for `requested_samples` MSAA with `setting`, on a device
/// that must fit what the tile path's frame asks (`plan`).
pub fn choose_tier(
    profile: &DeviceProfile,
    plan: &PlanRequirements,
    requested_samples: u32,
    setting: TierSetting,
) -> TierDecision {
    let mut reasons = Vec::new();
    let mut quirks = Quirks::default();
    let mut forward_only = false;
    let mut prefer_forward = false;
    let mut no_tile_msaa = false;
    for rule in RULES.iter().filter(|rule| (rule.applies)(profile, plan)) {
        match rule.effect {
            Effect::ForwardOnly => forward_only = true,
            Effect::PreferForward => prefer_forward = true,
            Effect::NoTileMsaa => no_tile_msaa = requested_samples > 1,
            Effect::Quirk(quirk) => quirks.insert(quirk),
        }
        if !matches!(rule.effect, Effect::NoTileMsaa) || requested_samples > 1 {
            reasons.push(rule.reason.describe(plan));
        }
    }
    let best = if forward_only || prefer_forward {
        RenderTier::Forward
    } else if requested_samples <= 1 || no_tile_msaa {
        RenderTier::TileDeferred
    } else {
        let samples = tile_sample_counts(profile).highest_at_most(requested_samples);
        if samples != requested_samples {
            reasons.push(format!(
                "{requested_samples}x MSAA requested, the device supports {} for colour and \
                 depth: {samples}x",
                tile_sample_counts(profile)
            ));
        }
        if samples > 1 {
            RenderTier::TileDeferredMsaa { samples }
        } else {
            RenderTier::TileDeferred
        }
    };
    let tier = match setting {
        TierSetting::Auto => best,
        TierSetting::Force(forced) if forced.is_tile() && forward_only => {
            reasons.push(format!("{forced} was forced, but the device cannot run it"));
            RenderTier::Forward
        }
        TierSetting::Force(forced) => {
            reasons.push(format!(
                "forced by the camera's TileDeferred::tier ({forced})"
            ));
            forced
        }
    };
    if reasons.is_empty() {
        reasons.push(match tier {
            RenderTier::TileDeferredMsaa { .. } => {
                "Vulkan with subpasses, input attachments and the requested MSAA".to_string()
            }
            RenderTier::TileDeferred if requested_samples > 1 => {
                "MSAA is not available on this device's tile path".to_string()
            }
            RenderTier::TileDeferred => "Vulkan with subpasses and input attachments".to_string(),
            RenderTier::Forward | RenderTier::Unmerged { .. } => "forced".to_string(),
        });
    }
    TierDecision {
        tier,
        reasons,
        quirks,
        failure: None,
        missing_fallback: None,
        measured: None,
    }
}

/// Decides a tile camera's tier for this frame: [`choose_tier`], then what the camera and the
/// run add to it.
///
/// - `merge_subpasses` off turns a merged tile tier into the [`RenderTier::Unmerged`] debug tier
///   at the same sample count.
/// - `failure` is a failure the render world reported for this camera since the last decision:
///   the tier the camera rendered with (`previous`, else the fresh one) drops to its
///   [`fallback`](RenderTier::fallback).
/// - A failure is sticky: once `previous` records one, its tier is kept, whatever the setting or
///   the device say (the router forgets failures on a new render device).
///
/// Pure: the caller logs the fallback (when `failure` is `Some`) and the decision.
pub fn decide(
    profile: &DeviceProfile,
    plan: &PlanRequirements,
    requested_samples: u32,
    setting: TierSetting,
    merge_subpasses: bool,
    previous: Option<&TierDecision>,
    failure: Option<&str>,
) -> TierDecision {
    let mut decision = choose_tier(profile, plan, requested_samples, setting);
    if !merge_subpasses && decision.tier.is_tile() && !decision.tier.is_unmerged() {
        decision.tier = decision.tier.unmerged();
        decision.reasons.push(
            "TileDeferred::merge_subpasses is off: separate render passes (debug)".to_string(),
        );
    }
    // A failure lowers the tier for the rest of the run.
    let earlier_failure = previous.and_then(|previous| previous.failure.as_deref());
    if let Some(why) = failure.or(earlier_failure) {
        // The tier the camera renders when nothing missing is in view: a fallback for what it
        // sees is not the tier a failure lowers.
        let mut tier = previous.map_or(decision.tier, |previous| {
            previous
                .missing_fallback
                .as_ref()
                .map_or(previous.tier, |missing| missing.tile_tier)
        });
        if failure.is_some() {
            tier = tier.fallback();
        }
        decision.tier = tier;
        decision.failure = Some(why.to_string());
    }
    decision
}

/// Frames in a row with nothing missing in view before an `Auto` camera that fell back for it
/// returns to its tile tier: half a second at 60 fps, so that an object at the edge of the view
/// does not switch the renderer every frame.
pub const MISSING_RETURN_FRAMES: u32 = 30;

/// The hysteresis of the fallback for what a camera sees: whether an `Auto` camera renders with
/// `Core3d` this frame, and the frames in a row it has seen nothing missing while falling back
/// (the count to pass to the next call).
///
/// It falls back the first frame something the tile path cannot draw is in view (a frame
/// without it would be wrong), and returns only after [`MISSING_RETURN_FRAMES`] frames in a row
/// without it.
pub fn missing_hysteresis(fell_back: bool, missing_now: bool, frames_clear: u32) -> (bool, u32) {
    match (missing_now, fell_back) {
        (true, _) => (true, 0),
        (false, false) => (false, 0),
        (false, true) => {
            let clear = frames_clear + 1;
            if clear >= MISSING_RETURN_FRAMES {
                (false, 0)
            } else {
                (true, clear)
            }
        }
    }
}

/// Applies what a tile camera sees that the tile path cannot draw to its decision.
///
/// `missing` describes what is in view this frame (empty: nothing); `fall_back` is the
/// [`missing_hysteresis`] verdict. Under [`TierSetting::Auto`] a tile tier becomes
/// [`RenderTier::Forward`] with the reason (Bevy draws everything), keeping the tile tier to
/// return to; while the hysteresis still holds the fallback with nothing in view, the reason of
/// `previous` is kept. A forced tier is not changed: the caller logs and lists what is missing.
/// A decision that is not a tile tier has nothing missing. Pure.
pub fn apply_missing(
    mut decision: TierDecision,
    setting: TierSetting,
    missing: Option<&str>,
    fall_back: bool,
    previous: Option<&TierDecision>,
) -> TierDecision {
    if setting != TierSetting::Auto || !fall_back || !decision.tier.is_tile() {
        return decision;
    }
    let why = match missing {
        Some(missing) => missing.to_string(),
        None => match previous.and_then(|p| p.missing_fallback.as_ref()) {
            Some(earlier) => earlier.why.clone(),
            None => return decision,
        },
    };
    decision.reasons.push(format!(
        "in view, not drawn by the tile path: {why}; Bevy's Core3d renders the camera until it \
         has been out of view for {MISSING_RETURN_FRAMES} frames"
    ));
    decision.missing_fallback = Some(MissingFallback {
        tile_tier: decision.tier,
        why,
    });
    decision.tier = RenderTier::Forward;
    decision
}

mod measure;
pub(crate) use measure::timed_path;
pub use measure::{
    AutoTiming, MeasureOn, MeasuredPath, SceneSignature, TierMeasurement, TileAutoMeasure,
    TimedFrame, choose, measure,
};

#[cfg(test)]
mod android_devices;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{ApiVersion, DeviceKind, VulkanCaps};

    fn vulkan(vendor_id: u32, name: &str, color: u32, depth: u32) -> DeviceProfile {
        DeviceProfile {
            backend: GraphicsBackend::Vulkan,
            vendor: GpuVendor::classify(vendor_id, name),
            model: GpuModel::parse(name),
            vendor_id,
            device_id: 0,
            device_kind: DeviceKind::Integrated,
            device_name: name.into(),
            driver_name: String::new(),
            driver_info: String::new(),
            driver_version: 0,
            api_version: Some(ApiVersion {
                major: 1,
                minor: 3,
                patch: 0,
            }),
            max_color_attachments: 8,
            vulkan: Some(VulkanCaps {
                max_color_attachments: 8,
                max_per_stage_input_attachments: 8,
                framebuffer_color_sample_counts: SampleCounts(color),
                framebuffer_depth_sample_counts: SampleCounts(depth),
                sample_rate_shading: true,
                lazily_allocated_memory: true,
                depth_stencil_resolve: None,
                timestamps: None,
                create_renderpass2_supported: true,
                create_renderpass2_enabled: true,
                enabled_extensions: Vec::new(),
            }),
        }
    }

    /// What the tile path's frame asks today (`tile_deferred::plan::requirements`, whose test
    /// checks these counts against the declared passes).
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

    fn with<F: FnOnce(&mut DeviceProfile)>(mut profile: DeviceProfile, change: F) -> DeviceProfile {
        change(&mut profile);
        profile
    }

    /// Real device names and limits, each with the tier expected at 4x MSAA and a word the
    /// reason must contain.
    fn real_devices() -> Vec<(DeviceProfile, RenderTier, &'static str)> {
        let msaa_1_2_4 = 0b111;
        let msaa_1_4 = 0b101;
        let msaa_1_2_4_8 = 0b1111;
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
        vec![
            (
                vulkan(0x5143, "Adreno (TM) 540", msaa_1_2_4, msaa_1_2_4),
                RenderTier::TileDeferred,
                "Adreno 6xx and older",
            ),
            (
                vulkan(0x5143, "Adreno (TM) 618", msaa_1_2_4, msaa_1_2_4),
                RenderTier::TileDeferred,
                "Adreno 6xx and older",
            ),
            (
                vulkan(0x5143, "Adreno (TM) 650", msaa_1_2_4, msaa_1_2_4),
                RenderTier::TileDeferred,
                "#81910",
            ),
            (
                vulkan(0x5143, "Adreno (TM) 740", msaa_1_2_4_8, msaa_1_2_4_8),
                msaa4,
                "empty resolve",
            ),
            (
                vulkan(0x13B5, "Mali-G71", msaa_1_2_4_8, msaa_1_2_4_8),
                // 128 bits of tile colour per pixel, under the merged pass's 160.
                RenderTier::Forward,
                "tile colour budget",
            ),
            (
                vulkan(0x13B5, "Mali-G76", msaa_1_2_4_8, msaa_1_2_4_8),
                msaa4,
                "Vulkan",
            ),
            (
                vulkan(0x13B5, "Mali-G78", msaa_1_2_4_8, msaa_1_2_4_8),
                msaa4,
                "Vulkan",
            ),
            (
                vulkan(0x13B5, "Mali-G715", msaa_1_2_4_8, msaa_1_2_4_8),
                msaa4,
                "Vulkan",
            ),
            (
                with(
                    vulkan(0x13B5, "Mali-G77", msaa_1_2_4_8, msaa_1_2_4_8),
                    |p| p.driver_info = "Samsung Exynos 990 driver".into(),
                ),
                RenderTier::Forward,
                "Samsung",
            ),
            (
                vulkan(0x1010, "PowerVR Rogue GE8320", msaa_1_2_4, msaa_1_2_4),
                RenderTier::TileDeferred,
                "flutter/flutter#162033",
            ),
            (
                vulkan(0x1010, "PowerVR B-Series BXM-8-256", msaa_1_2_4, msaa_1_2_4),
                msaa4,
                "Vulkan",
            ),
            (
                vulkan(0x144D, "Samsung Xclipse 920", msaa_1_2_4_8, msaa_1_2_4_8),
                RenderTier::Forward,
                "immediate-mode",
            ),
            (
                vulkan(0x1010, "IMG DXT-48-1536", msaa_1_2_4, msaa_1_2_4),
                msaa4,
                "Vulkan",
            ),
            (
                with(
                    vulkan(0x106B, "Apple M2", msaa_1_2_4_8, msaa_1_2_4_8),
                    |p| {
                        p.backend = GraphicsBackend::Metal;
                        p.vulkan = None;
                    },
                ),
                RenderTier::Forward,
                "not Vulkan",
            ),
            (
                vulkan(0x10DE, "NVIDIA H200", 0b1111111, 0b1111111),
                msaa4,
                "Vulkan",
            ),
            (
                vulkan(
                    0x1002,
                    "AMD Radeon RX 7900 XTX (RADV NAVI31)",
                    0b1111,
                    0b1111,
                ),
                msaa4,
                "Vulkan",
            ),
            (
                vulkan(
                    0x8086,
                    "Intel(R) UHD Graphics 630 (CFL GT2)",
                    0b1111,
                    0b1111,
                ),
                msaa4,
                "Vulkan",
            ),
            (
                vulkan(
                    0x10005,
                    "llvmpipe (LLVM 15.0.6, 256 bits)",
                    msaa_1_4,
                    msaa_1_4,
                ),
                msaa4,
                "Vulkan",
            ),
            (
                with(
                    vulkan(0x5143, "Adreno (TM) 650", msaa_1_2_4, msaa_1_2_4),
                    |p| {
                        p.backend = GraphicsBackend::Gl;
                        p.vulkan = None;
                    },
                ),
                RenderTier::Forward,
                "not Vulkan",
            ),
            (
                with(vulkan(0x13B5, "Mali-G78", msaa_1_2_4, msaa_1_2_4), |p| {
                    p.vulkan.as_mut().unwrap().max_per_stage_input_attachments = 2;
                }),
                RenderTier::Forward,
                "input attachments",
            ),
        ]
    }

    #[test]
    fn tiers_of_real_devices() {
        let table = real_devices();
        assert!(table.len() >= 15);
        for (profile, expected, reason) in table {
            let decision = choose_tier(&profile, &plan(), 4, TierSetting::Auto);
            assert_eq!(
                decision.tier, expected,
                "{}: {:?}",
                profile.device_name, decision
            );
            assert!(
                decision.summary().contains(reason),
                "{}: reason {:?} lacks {reason:?}",
                profile.device_name,
                decision.reasons
            );
        }
    }

    #[test]
    fn quirks_are_set_for_their_vendor_only() {
        let adreno = choose_tier(
            &vulkan(0x5143, "Adreno (TM) 740", 0b111, 0b111),
            &plan(),
            1,
            TierSetting::Auto,
        );
        assert!(adreno.quirks.contains(Quirks::ADRENO_NO_EMPTY_RESOLVE_LIST));
        let mali = choose_tier(
            &vulkan(0x13B5, "Mali-G78", 0b111, 0b111),
            &plan(),
            1,
            TierSetting::Auto,
        );
        assert_eq!(mali.quirks, Quirks::default());
    }

    /// Devices no vendor rule names: their decision must not mention PowerVR Rogue or Xclipse.
    fn unnamed_devices() -> Vec<DeviceProfile> {
        vec![
            vulkan(0x5143, "Adreno (TM) 740", 0b1111, 0b1111),
            vulkan(0x13B5, "Mali-G78", 0b1111, 0b1111),
            vulkan(0x10DE, "NVIDIA H200", 0b1111111, 0b1111111),
            vulkan(
                0x1002,
                "AMD Radeon RX 7900 XTX (RADV NAVI31)",
                0b1111,
                0b1111,
            ),
            vulkan(
                0x8086,
                "Intel(R) UHD Graphics 630 (CFL GT2)",
                0b1111,
                0b1111,
            ),
            lavapipe(),
            vulkan(0x1010, "PowerVR B-Series BXM-8-256", 0b111, 0b111),
            vulkan(0x1010, "PowerVR C-Series CXT-48-1536", 0b111, 0b111),
            vulkan(0x1010, "PowerVR D-Series DXT-48-1536", 0b111, 0b111),
        ]
    }

    #[test]
    fn the_powervr_rogue_rule_drops_tile_msaa_on_rogue_only() {
        for name in [
            "PowerVR Rogue GE8320",
            "PowerVR Rogue GE8322",
            "PowerVR Rogue GM9446",
        ] {
            let rogue = vulkan(0x1010, name, 0b111, 0b111);
            let decision = choose_tier(&rogue, &plan(), 4, TierSetting::Auto);
            assert_eq!(decision.tier, RenderTier::TileDeferred, "{name}");
            assert!(decision.summary().contains("PowerVR Rogue"), "{decision:?}");
            // Without MSAA the tile path is unchanged and the rule says nothing.
            let decision = choose_tier(&rogue, &plan(), 1, TierSetting::Auto);
            assert_eq!(decision.tier, RenderTier::TileDeferred, "{name}");
            assert!(!decision.summary().contains("Rogue"), "{decision:?}");
            // A forced MSAA tier is honoured, as on every device with a NoTileMsaa rule.
            let forced = TierSetting::Force(RenderTier::TileDeferredMsaa { samples: 4 });
            assert_eq!(
                choose_tier(&rogue, &plan(), 4, forced).tier,
                RenderTier::TileDeferredMsaa { samples: 4 }
            );
        }
        for profile in unnamed_devices() {
            let decision = choose_tier(&profile, &plan(), 4, TierSetting::Auto);
            assert_eq!(
                decision.tier,
                RenderTier::TileDeferredMsaa { samples: 4 },
                "{}",
                profile.device_name
            );
            assert!(!decision.summary().contains("Rogue"), "{decision:?}");
        }
    }

    #[test]
    fn the_xclipse_rules_prefer_forward_on_xclipse_only() {
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
        for (vendor_id, name) in [
            (0x144D, "Samsung Xclipse 920"),
            (0x144D, "Samsung Xclipse 930"),
            (0x1002, "Samsung Xclipse 940"),
            (0x144D, "Samsung Xclipse 950"),
        ] {
            let xclipse = vulkan(vendor_id, name, 0b1111, 0b1111);
            // Auto: Bevy's forward path, with both reasons at 4x...
            let decision = choose_tier(&xclipse, &plan(), 4, TierSetting::Auto);
            assert_eq!(decision.tier, RenderTier::Forward, "{name}");
            assert!(
                decision.summary().contains("immediate-mode"),
                "{decision:?}"
            );
            assert!(decision.summary().contains("gl_SampleID"), "{decision:?}");
            assert_eq!(decision.quirks, Quirks::default());
            // ...and without MSAA, without the MSAA one.
            let decision = choose_tier(&xclipse, &plan(), 1, TierSetting::Auto);
            assert_eq!(decision.tier, RenderTier::Forward, "{name}");
            assert!(
                decision.summary().contains("immediate-mode"),
                "{decision:?}"
            );
            assert!(!decision.summary().contains("gl_SampleID"), "{decision:?}");
            // A forced tile tier still runs: the tile path is correct there, only not cheaper.
            for forced in [msaa4, RenderTier::TileDeferred] {
                let decision = choose_tier(&xclipse, &plan(), 4, TierSetting::Force(forced));
                assert_eq!(decision.tier, forced, "{name}");
                assert!(
                    !decision.summary().contains("cannot run it"),
                    "{decision:?}"
                );
            }
            // The unmerged debug tier has nothing to do with an Auto camera on Forward.
            let decision = decide(&xclipse, &plan(), 4, TierSetting::Auto, false, None, None);
            assert_eq!(decision.tier, RenderTier::Forward, "{name}");
        }
        // Desktop GPUs, lavapipe and the other phone GPUs keep the tile path.
        for profile in unnamed_devices() {
            let decision = choose_tier(&profile, &plan(), 4, TierSetting::Auto);
            assert_eq!(decision.tier, msaa4, "{}", profile.device_name);
            assert!(!decision.summary().contains("Xclipse"), "{decision:?}");
        }
    }

    #[test]
    fn msaa_counts_and_forcing() {
        let lavapipe = vulkan(0x10005, "llvmpipe (LLVM 15.0.6, 256 bits)", 0b101, 0b101);
        // 8x asked, 1/4 supported: 4x with the reason.
        let decision = choose_tier(&lavapipe, &plan(), 8, TierSetting::Auto);
        assert_eq!(decision.tier, RenderTier::TileDeferredMsaa { samples: 4 });
        assert!(decision.summary().contains("8x MSAA requested"));
        // 2x asked: no 2x, so no MSAA on the tile path.
        assert_eq!(
            choose_tier(&lavapipe, &plan(), 2, TierSetting::Auto).tier,
            RenderTier::TileDeferred
        );
        // No MSAA asked.
        assert_eq!(
            choose_tier(&lavapipe, &plan(), 1, TierSetting::Auto).tier,
            RenderTier::TileDeferred
        );
        // Forcing Forward always works; forcing a tile tier off Vulkan does not.
        let forced = choose_tier(
            &lavapipe,
            &plan(),
            4,
            TierSetting::Force(RenderTier::Forward),
        );
        assert_eq!(forced.tier, RenderTier::Forward);
        let mut metal = lavapipe.clone();
        metal.backend = GraphicsBackend::Metal;
        let forced = choose_tier(
            &metal,
            &plan(),
            1,
            TierSetting::Force(RenderTier::TileDeferred),
        );
        assert_eq!(forced.tier, RenderTier::Forward);
        assert!(forced.summary().contains("cannot run it"));
    }

    fn lavapipe() -> DeviceProfile {
        vulkan(0x10005, "llvmpipe (LLVM 15.0.6, 256 bits)", 0b101, 0b101)
    }

    /// `decide` for a camera with no history: merged, no failure.
    fn fresh(profile: &DeviceProfile, samples: u32, setting: TierSetting) -> TierDecision {
        decide(profile, &plan(), samples, setting, true, None, None)
    }

    #[test]
    fn decide_without_history_is_choose_tier() {
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
        for (samples, setting, expected) in [
            (4, TierSetting::Auto, msaa4),
            (1, TierSetting::Auto, RenderTier::TileDeferred),
            (4, TierSetting::Force(msaa4), msaa4),
            (
                4,
                TierSetting::Force(RenderTier::TileDeferred),
                RenderTier::TileDeferred,
            ),
            (
                4,
                TierSetting::Force(RenderTier::Forward),
                RenderTier::Forward,
            ),
            (
                1,
                TierSetting::Force(RenderTier::Unmerged { samples: 1 }),
                RenderTier::Unmerged { samples: 1 },
            ),
            (
                4,
                TierSetting::Force(RenderTier::Unmerged { samples: 4 }),
                RenderTier::Unmerged { samples: 4 },
            ),
        ] {
            let decision = fresh(&lavapipe(), samples, setting);
            assert_eq!(
                decision,
                choose_tier(&lavapipe(), &plan(), samples, setting)
            );
            assert_eq!(decision.tier, expected, "{setting:?}");
            assert_eq!(decision.failure, None);
            if let TierSetting::Force(forced) = setting {
                assert!(decision.summary().contains("forced by"), "{decision:?}");
                assert!(decision.summary().contains(&forced.to_string()));
            }
        }
        // A forced tile tier where the device cannot run the tile path: forward, and why.
        let metal = with(lavapipe(), |p| {
            p.backend = GraphicsBackend::Metal;
            p.vulkan = None;
        });
        let decision = fresh(&metal, 4, TierSetting::Force(RenderTier::TileDeferred));
        assert_eq!(decision.tier, RenderTier::Forward);
        assert!(decision.summary().contains("cannot run it"));
    }

    #[test]
    fn merging_off_renders_the_tile_tier_unmerged() {
        let unmerged =
            |samples, setting| decide(&lavapipe(), &plan(), samples, setting, false, None, None);
        // Auto, and a forced merged tier, keep their sample count, with the reason.
        for (samples, setting, expected) in [
            (4, TierSetting::Auto, RenderTier::Unmerged { samples: 4 }),
            (1, TierSetting::Auto, RenderTier::Unmerged { samples: 1 }),
            (
                4,
                TierSetting::Force(RenderTier::TileDeferred),
                RenderTier::Unmerged { samples: 1 },
            ),
        ] {
            let decision = unmerged(samples, setting);
            assert_eq!(decision.tier, expected, "{setting:?}");
            assert!(
                decision.summary().contains("merge_subpasses is off"),
                "{decision:?}"
            );
        }
        // Already unmerged: unchanged, no second reason.
        let forced = TierSetting::Force(RenderTier::Unmerged { samples: 4 });
        assert_eq!(unmerged(4, forced), fresh(&lavapipe(), 4, forced));
        // Forward has nothing to merge, forced or where the tile path cannot run.
        let forward = unmerged(4, TierSetting::Force(RenderTier::Forward));
        assert_eq!(forward.tier, RenderTier::Forward);
        assert!(!forward.summary().contains("merge_subpasses"));
        let samsung = with(vulkan(0x13B5, "Mali-G77", 0b1111, 0b1111), |p| {
            p.driver_info = "Samsung Exynos 990 driver".into();
        });
        let decision = decide(&samsung, &plan(), 4, TierSetting::Auto, false, None, None);
        assert_eq!(decision.tier, RenderTier::Forward);
        assert!(!decision.summary().contains("merge_subpasses"));
    }

    #[test]
    fn a_failure_lowers_the_tier_and_sticks() {
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
        let auto = |previous, failure| {
            decide(
                &lavapipe(),
                &plan(),
                4,
                TierSetting::Auto,
                true,
                previous,
                failure,
            )
        };
        let first = auto(None, None);
        assert_eq!(first.tier, msaa4);

        // A failure lowers the tier the camera rendered with, and records why.
        let lowered = auto(Some(&first), Some("render pass creation failed"));
        assert_eq!(lowered.tier, RenderTier::TileDeferred);
        assert_eq!(
            lowered.failure.as_deref(),
            Some("render pass creation failed")
        );
        // The device, the setting and the reasons are still those of a fresh decision.
        assert_eq!(lowered.reasons, first.reasons);
        assert_eq!(lowered.quirks, first.quirks);

        // Sticky: the next frames keep the lowered tier and the failure, though the device
        // would run the higher one...
        let next = auto(Some(&lowered), None);
        assert_eq!(next, lowered);
        // ...and whatever the camera asks for now.
        let forced = decide(
            &lavapipe(),
            &plan(),
            4,
            TierSetting::Force(msaa4),
            true,
            Some(&lowered),
            None,
        );
        assert_eq!(forced.tier, RenderTier::TileDeferred);
        assert_eq!(forced.failure, lowered.failure);

        // A second failure lowers again, from the tier in use; the newest reason is kept.
        let forward = auto(Some(&next), Some("out of device memory"));
        assert_eq!(forward.tier, RenderTier::Forward);
        assert_eq!(forward.failure.as_deref(), Some("out of device memory"));
        // Forward is the floor.
        assert_eq!(
            auto(Some(&forward), Some("again")).tier,
            RenderTier::Forward
        );

        // Without a previous decision the fresh tier is lowered.
        assert_eq!(auto(None, Some("failed")).tier, RenderTier::TileDeferred);
        // The unmerged tier falls back to forward.
        let unmerged = decide(
            &lavapipe(),
            &plan(),
            4,
            TierSetting::Auto,
            false,
            None,
            None,
        );
        let failed = decide(
            &lavapipe(),
            &plan(),
            4,
            TierSetting::Auto,
            false,
            Some(&unmerged),
            Some("failed"),
        );
        assert_eq!(failed.tier, RenderTier::Forward);
    }

    #[test]
    fn without_a_failure_the_previous_tier_is_not_kept() {
        // A previous decision without a failure pins nothing: a new setting takes effect.
        let forward = fresh(&lavapipe(), 4, TierSetting::Force(RenderTier::Forward));
        let auto = decide(
            &lavapipe(),
            &plan(),
            4,
            TierSetting::Auto,
            true,
            Some(&forward),
            None,
        );
        assert_eq!(auto, fresh(&lavapipe(), 4, TierSetting::Auto));
        assert_eq!(auto.tier, RenderTier::TileDeferredMsaa { samples: 4 });
        // Nor does a change of MSAA or of merging.
        let msaa_off = decide(
            &lavapipe(),
            &plan(),
            1,
            TierSetting::Auto,
            true,
            Some(&auto),
            None,
        );
        assert_eq!(msaa_off.tier, RenderTier::TileDeferred);
        let unmerged = decide(
            &lavapipe(),
            &plan(),
            1,
            TierSetting::Auto,
            false,
            Some(&msaa_off),
            None,
        );
        assert_eq!(unmerged.tier, RenderTier::Unmerged { samples: 1 });
    }

    #[test]
    fn the_attachment_rules_check_what_the_plan_asks() {
        // 4 colour attachments allowed; the G-buffer subpass writes 4 plus depth.
        let four_colour = with(lavapipe(), |p| {
            p.vulkan.as_mut().unwrap().max_color_attachments = 4;
        });
        let decision = choose_tier(&four_colour, &plan(), 1, TierSetting::Auto);
        assert_eq!(decision.tier, RenderTier::Forward);
        assert_eq!(
            decision.reasons,
            [
                "fewer than 5 colour attachments per subpass (the gbuffer subpass writes 4 plus \
              depth)"
            ]
        );
        let smaller = PlanRequirements {
            color_attachments: 3,
            ..plan()
        };
        let decision = choose_tier(&four_colour, &smaller, 1, TierSetting::Auto);
        assert_eq!(decision.tier, RenderTier::TileDeferred);

        // 3 input attachments allowed; lighting reads 5.
        let three_inputs = with(lavapipe(), |p| {
            p.vulkan.as_mut().unwrap().max_per_stage_input_attachments = 3;
        });
        let decision = choose_tier(&three_inputs, &plan(), 1, TierSetting::Auto);
        assert_eq!(decision.tier, RenderTier::Forward);
        assert_eq!(
            decision.reasons,
            [
                "fewer than 5 input attachments per fragment shader (the lighting subpass reads \
              albedo_occlusion, normal, material, depth and light on tile)"
            ]
        );
        let smaller = PlanRequirements {
            input_attachments: plan().input_attachments[..3].to_vec(),
            ..plan()
        };
        let decision = choose_tier(&three_inputs, &smaller, 1, TierSetting::Auto);
        assert_eq!(decision.tier, RenderTier::TileDeferred);
    }

    /// Runs [`missing_hysteresis`] over frames with (`true`) or without something missing in
    /// view, from a camera that has not fallen back; returns whether each frame falls back.
    fn hysteresis_over(frames: impl IntoIterator<Item = bool>) -> Vec<bool> {
        let (mut fell_back, mut clear) = (false, 0);
        frames
            .into_iter()
            .map(|missing| {
                (fell_back, clear) = missing_hysteresis(fell_back, missing, clear);
                fell_back
            })
            .collect()
    }

    #[test]
    fn missing_falls_back_at_once_and_returns_after_clear_frames() {
        let n = MISSING_RETURN_FRAMES as usize;
        // Nothing missing: never falls back.
        assert!(hysteresis_over([false; 100]).iter().all(|f| !f));
        // Falls back the first frame something is missing, and stays N - 1 frames after it
        // leaves; the N-th clear frame returns.
        let frames =
            hysteresis_over(std::iter::once(true).chain(std::iter::repeat_n(false, n + 5)));
        assert!(frames[..n].iter().all(|f| *f), "{frames:?}");
        assert!(frames[n..].iter().all(|f| !f), "{frames:?}");
        // An object at the edge of the view, in every other frame: no flicker, it stays.
        let alternating = hysteresis_over((0..200).map(|i| i % 2 == 0));
        assert!(alternating.iter().all(|f| *f));
        // Back in view one frame before the return: the count starts again.
        let frames = hysteresis_over(
            std::iter::once(true)
                .chain(std::iter::repeat_n(false, n - 1))
                .chain(std::iter::once(true))
                .chain(std::iter::repeat_n(false, n)),
        );
        assert!(frames[..2 * n].iter().all(|f| *f), "{frames:?}");
        assert!(!frames[2 * n], "{frames:?}");
        // Switches: the fall back and one return, nothing in between.
        let switches = frames.windows(2).filter(|w| w[0] != w[1]).count();
        assert_eq!(switches, 1);
    }

    #[test]
    fn missing_lowers_auto_tile_tiers_only() {
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
        let auto = fresh(&lavapipe(), 4, TierSetting::Auto);
        assert_eq!(auto.tier, msaa4);
        let why = "custom Material on 1 mesh (5v0 \"Water\")";
        let fell = apply_missing(auto.clone(), TierSetting::Auto, Some(why), true, None);
        assert_eq!(fell.tier, RenderTier::Forward);
        assert_eq!(
            fell.missing_fallback,
            Some(MissingFallback {
                tile_tier: msaa4,
                why: why.to_string()
            })
        );
        assert!(fell.summary().contains(why), "{}", fell.summary());
        assert!(fell.summary().contains("Core3d"));
        // Still falling back with nothing in view (hysteresis): the reason is kept, so the
        // decision does not change (nor is logged again).
        let held = apply_missing(auto.clone(), TierSetting::Auto, None, true, Some(&fell));
        assert_eq!(held, fell);
        // Returned: the tile tier again.
        assert_eq!(
            apply_missing(auto.clone(), TierSetting::Auto, None, false, Some(&fell)),
            auto
        );
        // A forced tile tier keeps rendering (the caller logs and lists what is missing).
        for forced in [
            msaa4,
            RenderTier::TileDeferred,
            RenderTier::Unmerged { samples: 1 },
        ] {
            let setting = TierSetting::Force(forced);
            let decision = fresh(&lavapipe(), 4, setting);
            assert_eq!(
                apply_missing(decision.clone(), setting, Some(why), true, None),
                decision
            );
        }
        // Forward has nothing missing (Bevy draws everything).
        let metal = with(lavapipe(), |p| {
            p.backend = GraphicsBackend::Metal;
            p.vulkan = None;
        });
        let forward = fresh(&metal, 4, TierSetting::Auto);
        assert_eq!(
            apply_missing(forward.clone(), TierSetting::Auto, Some(why), true, None),
            forward
        );
    }

    #[test]
    fn a_failure_while_falling_back_lowers_the_tile_tier() {
        // The camera fell back for what it sees from 4x MSAA; a failure reported by its last
        // tile frame lowers the tile tier it returns to, not Forward.
        let auto = fresh(&lavapipe(), 4, TierSetting::Auto);
        let fell = apply_missing(auto, TierSetting::Auto, Some("x"), true, None);
        let failed = decide(
            &lavapipe(),
            &plan(),
            4,
            TierSetting::Auto,
            true,
            Some(&fell),
            Some("render pass creation failed"),
        );
        assert_eq!(failed.tier, RenderTier::TileDeferred);
        let back = apply_missing(failed.clone(), TierSetting::Auto, None, false, Some(&fell));
        assert_eq!(back.tier, RenderTier::TileDeferred);
    }

    #[test]
    fn tier_changes_carry_their_reason() {
        let camera = Entity::from_raw_u32(7).unwrap();
        let msaa4 = RenderTier::TileDeferredMsaa { samples: 4 };
        let auto = fresh(&lavapipe(), 4, TierSetting::Auto);
        // The first decision is a change from nothing, for the device's rules.
        let first = TileTierChanged::between(camera, None, &auto, None).unwrap();
        assert_eq!((first.camera, first.from, first.to), (camera, None, msaa4));
        assert_eq!(first.reason, TierChangeReason::Rules(auto.reasons.clone()));
        // The same tier again is no change, whatever else changed.
        let mut reworded = auto.clone();
        reworded.reasons.push("another rule".into());
        assert_eq!(
            TileTierChanged::between(camera, Some(&auto), &reworded, None),
            None
        );
        // A failure this frame lowers the tier, with the error as the reason.
        let why = "render pass creation failed";
        let failed = decide(
            &lavapipe(),
            &plan(),
            4,
            TierSetting::Auto,
            true,
            Some(&auto),
            Some(why),
        );
        let change = TileTierChanged::between(camera, Some(&auto), &failed, Some(why)).unwrap();
        assert_eq!(
            (change.from, change.to),
            (Some(msaa4), RenderTier::TileDeferred)
        );
        assert_eq!(change.reason, TierChangeReason::Failure(why.into()));
        assert!(change.reason.to_string().contains(why));
        // Something the tile path cannot draw comes into view: Core3d, with what it is.
        let what = "custom Material x1";
        let fell = apply_missing(auto.clone(), TierSetting::Auto, Some(what), true, None);
        let change = TileTierChanged::between(camera, Some(&auto), &fell, None).unwrap();
        assert_eq!((change.from, change.to), (Some(msaa4), RenderTier::Forward));
        assert_eq!(change.reason, TierChangeReason::Missing(what.into()));
        // ... and has been out of view long enough: back on the tile tier.
        let change = TileTierChanged::between(camera, Some(&fell), &auto, None).unwrap();
        assert_eq!((change.from, change.to), (Some(RenderTier::Forward), msaa4));
        assert_eq!(change.reason, TierChangeReason::MissingCleared);
        // A changed setting (MSAA off) is the rules again.
        let one = decide(
            &lavapipe(),
            &plan(),
            1,
            TierSetting::Auto,
            true,
            Some(&auto),
            None,
        );
        let change = TileTierChanged::between(camera, Some(&auto), &one, None).unwrap();
        assert_eq!(change.to, RenderTier::TileDeferred);
        assert_eq!(change.reason, TierChangeReason::Rules(one.reasons.clone()));
    }

    #[test]
    fn fallback_order() {
        let msaa = RenderTier::TileDeferredMsaa { samples: 4 };
        assert_eq!(msaa.fallback(), RenderTier::TileDeferred);
        assert_eq!(RenderTier::TileDeferred.fallback(), RenderTier::Forward);
        assert_eq!(RenderTier::Forward.fallback(), RenderTier::Forward);
    }
}
