//! Choosing by measurement on GPUs that are not tilers.
//!
//! On a tiler the tile path keeps the G-buffer on chip: its saving is bandwidth and power, which
//! frame times do not show, so the rules' tile tier stands. On an immediate-mode GPU (desktop
//! NVIDIA, AMD, Intel) the merged G-buffer goes through memory like any deferred renderer's, and
//! whether the tile path or Bevy's forward `Core3d` is faster depends on the scene: many lights
//! favour the tile path, MSAA with few lights favours Bevy. There an [`Auto`](TierSetting::Auto)
//! camera times both, each for [`TileAutoMeasure::frames`] frames of GPU time, alternating in
//! blocks of three, and keeps the faster one ([`choose`]); it times them again when its view
//! changes a lot ([`SceneSignature::changed_a_lot`]).
//!
//! [`measure`] is the whole protocol, a pure function of the camera's [`AutoTiming`], this
//! frame's rules decision and the GPU times the render world reported. The render world times a
//! camera's whole schedule (the tile schedule or `Core3d`: shadow cascades, every pass, the
//! overlays) with two GPU timestamps, and marks a frame invalid while Bevy still compiles
//! pipelines (a frame that skips draws would look fast) and right after a switch (one-time
//! costs).

use super::{RenderTier, TierDecision, TierSetting};
use crate::device::{DeviceKind, DeviceProfile};
use bevy::prelude::*;

/// Valid frames a path is timed for before the other path's turn.
const BLOCK: usize = 3;

/// Which renderer a timed frame ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum MeasuredPath {
    /// The tile path's schedule.
    Tile,
    /// Bevy's `Core3d`.
    Core3d,
}

impl MeasuredPath {
    /// The other path.
    pub fn other(self) -> Self {
        match self {
            Self::Tile => Self::Core3d,
            Self::Core3d => Self::Tile,
        }
    }
}

/// Where [`Auto`](TierSetting::Auto) cameras choose between the tile path and Bevy's `Core3d` by
/// timing both (a resource; insert your own to change it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, PartialEq, Hash)]
pub enum MeasureOn {
    /// GPUs that are not tilers (desktop NVIDIA, AMD, Intel; Samsung Xclipse already prefers
    /// Bevy's path by rule). Not software rasterisers: their times say nothing of a GPU's.
    ImmediateModeGpus,
    /// Every device that is not a tiler, software rasterisers (lavapipe) included.
    AllButTilers,
    /// Nowhere: `Auto` follows the device rules alone.
    Never,
}

/// How [`Auto`](TierSetting::Auto) cameras measure the two paths (a resource; the plugin
/// inserts the default unless the app has one).
#[derive(Resource, Clone, Copy, Debug, PartialEq, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Resource, Clone, Debug, PartialEq)]
pub struct TileAutoMeasure {
    /// On which devices.
    pub on: MeasureOn,
    /// Valid frames timed on each path (after [`Self::warm_up`]); the median decides.
    pub frames: u32,
    /// Valid frames discarded first on each path (caches, the first use of new pipelines; the
    /// first frame after each switch is never counted).
    pub warm_up: u32,
    /// Bevy's path must be faster than the tile path by this fraction to be chosen: within it the
    /// tile path stays (it saves bandwidth even where it does not save time).
    pub margin: f64,
    /// Frames after which a measurement that could not collect its valid frames (Bevy kept
    /// compiling pipelines, no timestamps came back) gives up and keeps the rules' tier.
    pub give_up_after: u32,
}

impl Default for TileAutoMeasure {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl TileAutoMeasure {
    /// The default: GPUs that are not tilers, 12 frames on each path after 4, a 3% margin for
    /// the tile path, giving up after 600 frames.
    pub const DEFAULT: Self = Self {
        on: MeasureOn::ImmediateModeGpus,
        frames: 12,
        warm_up: 4,
        margin: 0.03,
        give_up_after: 600,
    };

    /// Never measure: `Auto` follows the device rules alone.
    pub const NEVER: Self = Self {
        on: MeasureOn::Never,
        ..Self::DEFAULT
    };

    /// Whether `Auto` cameras measure on this device. Pure.
    pub fn applies_to(&self, profile: &DeviceProfile) -> bool {
        let software = profile.device_kind == DeviceKind::Cpu;
        match self.on {
            MeasureOn::Never => false,
            _ if profile.is_tile_based() => false,
            MeasureOn::ImmediateModeGpus => !software,
            MeasureOn::AllButTilers => true,
        }
    }
}

/// What a camera's view looks like to the measurement: when it changes a lot, both paths are
/// timed again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, PartialEq)]
pub struct SceneSignature {
    /// The viewport, in physical pixels.
    pub viewport: UVec2,
    /// The camera's MSAA samples.
    pub samples: u32,
    /// Whether the camera renders HDR.
    pub hdr: bool,
    /// Meshes in view.
    pub meshes: u32,
    /// Point, spot and directional lights in the world.
    pub lights: u32,
    /// Lights casting shadows.
    pub shadow_casters: u32,
}

impl SceneSignature {
    /// Why the times measured with `earlier` no longer hold for `self`, if they do not: another
    /// viewport, sample count or HDR setting, lights casting shadows added or removed, or the
    /// meshes or lights in view more than doubled or halved. Pure.
    pub fn changed_a_lot(&self, earlier: &Self) -> Option<String> {
        let far = |now: u32, then: u32| {
            let (now, then) = (f64::from(now) + 1.0, f64::from(then) + 1.0);
            now > then * 2.0 || now < then * 0.5
        };
        if self.viewport != earlier.viewport {
            Some(format!(
                "the viewport changed ({}x{} -> {}x{})",
                earlier.viewport.x, earlier.viewport.y, self.viewport.x, self.viewport.y
            ))
        } else if self.samples != earlier.samples {
            Some(format!(
                "MSAA changed ({}x -> {}x)",
                earlier.samples, self.samples
            ))
        } else if self.hdr != earlier.hdr {
            Some("HDR was switched".into())
        } else if self.shadow_casters != earlier.shadow_casters {
            Some(format!(
                "lights casting shadows changed ({} -> {})",
                earlier.shadow_casters, self.shadow_casters
            ))
        } else if far(self.meshes, earlier.meshes) {
            Some(format!(
                "meshes in view changed ({} -> {})",
                earlier.meshes, self.meshes
            ))
        } else if far(self.lights, earlier.lights) {
            Some(format!(
                "lights changed ({} -> {})",
                earlier.lights, self.lights
            ))
        } else {
            None
        }
    }
}

/// A GPU time the render world measured for a camera: the whole camera schedule of one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimedFrame {
    /// Which renderer ran it.
    pub path: MeasuredPath,
    /// Milliseconds of GPU time.
    pub ms: f64,
    /// False when Bevy was still compiling pipelines that frame (its draws may have been
    /// skipped), and for the first frame after the camera switched paths.
    pub valid: bool,
}

/// What measuring decided or is doing for a camera, recorded on its [`TierDecision`].
#[derive(Clone, Debug, PartialEq, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, PartialEq)]
pub enum TierMeasurement {
    /// Timing one path: the camera renders with it for a few frames.
    Timing {
        /// The path being timed.
        path: MeasuredPath,
        /// The tile tier the rules chose, which the tile path is timed at.
        tile_tier: RenderTier,
    },
    /// Both paths timed; the faster one renders.
    Chosen {
        /// The tile tier the rules chose.
        tile_tier: RenderTier,
        /// The tile path's median GPU time per frame, ms.
        tile_ms: f64,
        /// Bevy's `Core3d`'s median GPU time per frame, ms.
        core3d_ms: f64,
        /// Whether the tile path was chosen.
        tile_chosen: bool,
    },
    /// The measurement could not collect its frames within
    /// [`TileAutoMeasure::give_up_after`]: the rules' tier stands.
    GaveUp {
        /// The tile tier the rules chose.
        tile_tier: RenderTier,
    },
}

/// A camera's measurement in progress or done (the router keeps one per `Auto` camera on a GPU
/// that is not a tiler).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutoTiming {
    phase: Phase,
    tile: Vec<f64>,
    core3d: Vec<f64>,
    /// Valid frames of each path discarded so far (up to [`TileAutoMeasure::warm_up`]).
    skipped: [u32; 2],
    /// How many times the path being timed had when its block began.
    block_start: usize,
    frames: u32,
    /// The view the measurement was made on.
    signature: Option<SceneSignature>,
    /// The tile tier the times hold for.
    tile_tier: Option<RenderTier>,
    /// Why the camera is being timed again (for the log), once.
    pub(crate) retimed_because: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
enum Phase {
    #[default]
    Start,
    Timing(MeasuredPath),
    Done(TierMeasurement),
}

/// Median of `times` (not empty).
fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    }
}

/// Whether the tile path is kept, given both median GPU times: Bevy's `Core3d` has to be faster
/// by more than `margin` (a fraction of the tile path's time). Pure.
pub fn choose(tile_ms: f64, core3d_ms: f64, margin: f64) -> bool {
    core3d_ms >= tile_ms * (1.0 - margin)
}

/// Applies measurement to a camera's rules decision for this frame.
///
/// `measure_here` says whether this camera measures at all (an `Auto` setting, a device
/// [`TileAutoMeasure::applies_to`]); `timed` are the GPU times the render world reported for the
/// camera since the last call. A decision that is not a tile tier (the rules chose Bevy's path,
/// a failure lowered it) is returned as it is, and so is every decision where `measure_here` is
/// false (the timing is reset). Otherwise the camera times the tile path and `Core3d` in turn,
/// in blocks of a few frames, then keeps the faster: the tier of the returned decision is the
/// path that renders this frame, and its [`TierDecision::measured`] says why. Pure apart from
/// `timing`.
pub fn measure(
    mut decision: TierDecision,
    setting: TierSetting,
    measure_here: bool,
    settings: &TileAutoMeasure,
    timing: &mut AutoTiming,
    signature: SceneSignature,
    timed: &[TimedFrame],
) -> TierDecision {
    if setting != TierSetting::Auto || !measure_here {
        *timing = AutoTiming::default();
        return decision;
    }
    if !decision.tier.is_tile() || decision.failure.is_some() {
        return decision;
    }
    let tile_tier = decision.tier;
    // Times measured at another tile tier, or on a view that changed a lot, no longer hold.
    let retime = match (&timing.phase, timing.signature) {
        (Phase::Start, _) => None,
        _ if timing.tile_tier != Some(tile_tier) => {
            Some(format!("the tile tier changed to {tile_tier}"))
        }
        (_, Some(earlier)) => signature.changed_a_lot(&earlier),
        (_, None) => None,
    };
    if let Some(why) = retime {
        *timing = AutoTiming {
            retimed_because: Some(why),
            ..default()
        };
    }
    if timing.phase == Phase::Start {
        timing.phase = Phase::Timing(MeasuredPath::Tile);
        timing.signature = Some(signature);
        timing.tile_tier = Some(tile_tier);
    }
    if let Phase::Timing(path) = timing.phase {
        timing.frames += 1;
        // Every valid frame counts for the path it ran, also one reported after the switch to
        // the other (times come back a few frames late).
        for frame in timed.iter().filter(|f| f.valid) {
            let index = frame.path as usize;
            if timing.skipped[index] < settings.warm_up {
                timing.skipped[index] += 1;
                continue;
            }
            match frame.path {
                MeasuredPath::Tile => timing.tile.push(frame.ms),
                MeasuredPath::Core3d => timing.core3d.push(frame.ms),
            }
        }
        let needed = settings.frames.max(1) as usize;
        let (current, other) = match path {
            MeasuredPath::Tile => (timing.tile.len(), timing.core3d.len()),
            MeasuredPath::Core3d => (timing.core3d.len(), timing.tile.len()),
        };
        let block_done = current >= timing.block_start + BLOCK || current >= needed;
        timing.phase = if timing.frames > settings.give_up_after {
            Phase::Done(TierMeasurement::GaveUp { tile_tier })
        } else if current < needed || other < needed {
            // The paths alternate in short blocks, so that both see the GPU in the same state
            // (clocks ramping up, other work): timing one after the other favoured the second.
            if block_done && other < needed {
                timing.block_start = other;
                Phase::Timing(path.other())
            } else {
                Phase::Timing(path)
            }
        } else {
            let (tile_ms, core3d_ms) = (median(&timing.tile), median(&timing.core3d));
            Phase::Done(TierMeasurement::Chosen {
                tile_tier,
                tile_ms,
                core3d_ms,
                tile_chosen: choose(tile_ms, core3d_ms, settings.margin),
            })
        };
    }
    let measured = match &timing.phase {
        Phase::Timing(path) => TierMeasurement::Timing {
            path: *path,
            tile_tier,
        },
        Phase::Done(measured) => measured.clone(),
        Phase::Start => unreachable!("started above"),
    };
    let samples = signature.samples.max(1);
    match &measured {
        TierMeasurement::Timing { path, .. } => {
            decision.reasons.push(format!(
                "not a tiler: timing the tile path and Bevy's Core3d at {samples}x MSAA to keep \
                 the faster ({} frames each)",
                settings.frames
            ));
            if *path == MeasuredPath::Core3d {
                decision.tier = RenderTier::Forward;
            }
        }
        TierMeasurement::Chosen {
            tile_ms,
            core3d_ms,
            tile_chosen,
            ..
        } => {
            decision.reasons.push(format!(
                "not a tiler, measured at {samples}x MSAA: the tile path {tile_ms:.2} ms, Bevy's \
                 Core3d {core3d_ms:.2} ms of GPU time per frame; {} is kept",
                if *tile_chosen {
                    "the tile path"
                } else {
                    "Bevy's Core3d"
                }
            ));
            if !tile_chosen {
                decision.tier = RenderTier::Forward;
            }
        }
        TierMeasurement::GaveUp { .. } => decision.reasons.push(format!(
            "not a tiler, but timing both paths gave no usable frames in {} frames: the rules' \
             tier is kept",
            settings.give_up_after
        )),
    }
    decision.measured = Some(measured);
    decision
}

/// The path a camera's render world times this frame, from its decision.
pub(crate) fn timed_path(decision: &TierDecision) -> Option<MeasuredPath> {
    match decision.measured {
        Some(TierMeasurement::Timing { path, .. }) => Some(path),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(tier: RenderTier) -> TierDecision {
        TierDecision {
            tier,
            reasons: vec!["rules".into()],
            quirks: Default::default(),
            failure: None,
            missing_fallback: None,
            measured: None,
        }
    }

    fn signature() -> SceneSignature {
        SceneSignature {
            viewport: UVec2::new(1920, 1080),
            samples: 4,
            hdr: false,
            meshes: 64,
            lights: 16,
            shadow_casters: 1,
        }
    }

    fn frames(path: MeasuredPath, ms: f64, count: usize) -> Vec<TimedFrame> {
        vec![
            TimedFrame {
                path,
                ms,
                valid: true
            };
            count
        ]
    }

    const MSAA4: RenderTier = RenderTier::TileDeferredMsaa { samples: 4 };

    /// One frame of an `Auto` camera whose rules chose 4x on tile, on a device that measures.
    fn auto(
        settings: &TileAutoMeasure,
        timing: &mut AutoTiming,
        signature: SceneSignature,
        timed: &[TimedFrame],
    ) -> TierDecision {
        measure(
            rules(MSAA4),
            TierSetting::Auto,
            true,
            settings,
            timing,
            signature,
            timed,
        )
    }

    /// Runs frames until the measurement settles: `tile_ms` and `core3d_ms` per frame, each
    /// reported on the frame it ran (the render world reports later; the order is what counts).
    fn settle(
        settings: &TileAutoMeasure,
        timing: &mut AutoTiming,
        tile_ms: f64,
        core3d_ms: f64,
    ) -> (TierDecision, Vec<RenderTier>) {
        let mut tiers = Vec::new();
        let mut last: Option<TierDecision> = None;
        for _ in 0..200 {
            let path = last
                .as_ref()
                .and_then(timed_path)
                .map(|path| match path {
                    MeasuredPath::Tile => frames(path, tile_ms, 1),
                    MeasuredPath::Core3d => frames(path, core3d_ms, 1),
                })
                .unwrap_or_default();
            let decision = auto(settings, timing, signature(), &path);
            tiers.push(decision.tier);
            let done = timed_path(&decision).is_none();
            last = Some(decision);
            if done {
                break;
            }
        }
        (last.unwrap(), tiers)
    }

    #[test]
    fn the_faster_path_is_kept_after_timing_both() {
        let settings = TileAutoMeasure::default();
        // Bevy's path faster (MSAA, few lights on a desktop GPU): Forward.
        let mut timing = AutoTiming::default();
        let (decision, tiers) = settle(&settings, &mut timing, 10.0, 7.0);
        assert_eq!(decision.tier, RenderTier::Forward);
        assert!(matches!(
            decision.measured,
            Some(TierMeasurement::Chosen {
                tile_chosen: false,
                ..
            })
        ));
        assert!(
            decision.summary().contains("10.00 ms"),
            "{}",
            decision.summary()
        );
        // The tile path was timed first, then the paths alternated in blocks.
        assert!(tiers[0].is_tile());
        let switches = tiers.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(switches >= 6, "{tiers:?}");
        // The tile path faster (many lights): kept.
        let mut timing = AutoTiming::default();
        let (decision, _) = settle(&settings, &mut timing, 5.0, 9.0);
        assert_eq!(decision.tier, MSAA4);
        // Within the margin the tile path stays.
        let mut timing = AutoTiming::default();
        let (decision, _) = settle(&settings, &mut timing, 10.0, 9.8);
        assert_eq!(decision.tier, MSAA4);
    }

    #[test]
    fn late_frames_of_the_other_path_count_for_it() {
        let settings = TileAutoMeasure {
            warm_up: 0,
            ..default()
        };
        let mut timing = AutoTiming::default();
        // The first frame times the tile path; Bevy's frames reported meanwhile count for Bevy.
        auto(
            &settings,
            &mut timing,
            signature(),
            &frames(MeasuredPath::Core3d, 7.0, 5),
        );
        assert_eq!((timing.tile.len(), timing.core3d.len()), (0, 5));
    }

    #[test]
    fn invalid_frames_do_not_count() {
        let settings = TileAutoMeasure::default();
        let mut timing = AutoTiming::default();
        let invalid = vec![
            TimedFrame {
                path: MeasuredPath::Tile,
                ms: 0.01,
                valid: false,
            };
            100
        ];
        for timed in [&invalid, &invalid] {
            let decision = auto(&settings, &mut timing, signature(), timed);
            assert_eq!(timed_path(&decision), Some(MeasuredPath::Tile));
        }
    }

    #[test]
    fn a_view_that_changes_a_lot_is_timed_again() {
        let settings = TileAutoMeasure::default();
        let mut timing = AutoTiming::default();
        settle(&settings, &mut timing, 10.0, 7.0);
        let mut bigger = signature();
        bigger.meshes = 200;
        let decision = auto(&settings, &mut timing, bigger, &[]);
        assert_eq!(timed_path(&decision), Some(MeasuredPath::Tile));
        assert_eq!(
            timing.retimed_because.as_deref(),
            Some("meshes in view changed (64 -> 200)")
        );
        // A small change keeps the choice.
        let mut timing = AutoTiming::default();
        settle(&settings, &mut timing, 10.0, 7.0);
        let mut similar = signature();
        similar.meshes = 90;
        similar.lights = 20;
        let decision = auto(&settings, &mut timing, similar, &[]);
        assert_eq!(decision.tier, RenderTier::Forward);
        assert!(signature().changed_a_lot(&signature()).is_none());
        let mut resized = signature();
        resized.viewport.x = 1280;
        assert!(resized.changed_a_lot(&signature()).is_some());
    }

    #[test]
    fn forced_tiers_failures_and_bevy_tiers_are_not_measured() {
        let settings = TileAutoMeasure::default();
        let mut timing = AutoTiming::default();
        let forced = measure(
            rules(MSAA4),
            TierSetting::Force(MSAA4),
            true,
            &settings,
            &mut timing,
            signature(),
            &[],
        );
        assert_eq!((forced.tier, forced.measured), (MSAA4, None));
        let mut failed = rules(RenderTier::TileDeferred);
        failed.failure = Some("out of memory".into());
        let kept = measure(
            failed.clone(),
            TierSetting::Auto,
            true,
            &settings,
            &mut timing,
            signature(),
            &[],
        );
        assert_eq!(kept, failed);
        let forward = rules(RenderTier::Forward);
        let kept = measure(
            forward.clone(),
            TierSetting::Auto,
            true,
            &settings,
            &mut timing,
            signature(),
            &[],
        );
        assert_eq!(kept, forward);
        let not_here = measure(
            rules(MSAA4),
            TierSetting::Auto,
            false,
            &settings,
            &mut timing,
            signature(),
            &[],
        );
        assert_eq!(not_here.measured, None);
    }

    #[test]
    fn no_usable_frames_gives_up_on_the_rules_tier() {
        let settings = TileAutoMeasure {
            give_up_after: 10,
            ..default()
        };
        let mut timing = AutoTiming::default();
        let mut decision = None;
        for _ in 0..12 {
            decision = Some(auto(&settings, &mut timing, signature(), &[]));
        }
        let decision = decision.unwrap();
        assert_eq!(decision.tier, MSAA4);
        assert!(matches!(
            decision.measured,
            Some(TierMeasurement::GaveUp { .. })
        ));
    }

    #[test]
    fn which_devices_measure() {
        use crate::device::DeviceProfile;
        let lavapipe = DeviceProfile::lavapipe_for_tests();
        let defaults = TileAutoMeasure::default();
        assert!(!defaults.applies_to(&lavapipe), "software rasteriser");
        let all = TileAutoMeasure {
            on: MeasureOn::AllButTilers,
            ..default()
        };
        assert!(all.applies_to(&lavapipe));
        assert!(!TileAutoMeasure::NEVER.applies_to(&lavapipe));
        let mut nvidia = lavapipe.clone();
        nvidia.device_kind = DeviceKind::Discrete;
        nvidia.vendor = crate::device::GpuVendor::classify(0x10DE, "NVIDIA H200");
        assert!(defaults.applies_to(&nvidia));
        let mut adreno = nvidia.clone();
        adreno.vendor = crate::device::GpuVendor::classify(0x5143, "Adreno (TM) 740");
        adreno.device_kind = DeviceKind::Integrated;
        assert!(!all.applies_to(&adreno), "tilers keep the tile path");
    }
}
