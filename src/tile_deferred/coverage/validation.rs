//! Tile validation on a desktop (issue 33): what a chosen phone GPU would do with a tile
//! camera's frame, found without the phone.
//!
//! A [`TileValidation`] on a tile camera names a device profile (one of
//! [`PHONE_GPUS`](crate::device::phones::PHONE_GPUS), or any other). Whenever the camera's
//! last tile frame (or its settings, what it misses, the device) changes, the frame is planned
//! again as that device would plan it, by the same rules and the same compiler the device would
//! run (`validate`, pure): the tier the device's rules give and why;
//! the render passes the frame would take there and why each merge was refused (each break
//! stores and reloads what crosses it); render passes over the device's tile budget at the
//! sample count it would render (Mali's bits per pixel, Adreno's GMEM bins), and the MSAA the
//! tile path would lower to; attachments read as textures inside the render pass that wrote
//! them (a tiler flushes its tile for those); and what the camera sees that the tile path does
//! not draw (its [`TileMissing`]). The result is the camera's [`TileValidationReport`].

use crate::{
    device::DeviceProfile,
    frame_graph::{CompiledFrame, FrameGraphCache, TileVerdict},
    tiers::{self, RenderTier, TierSetting},
    tile_deferred::{
        camera::TileDeferred,
        coverage::missing::TileMissing,
        plan::{self, ViewFrameDesc},
        report::TileRenderReports,
    },
};
use bevy::{prelude::*, render::view::Msaa};

/// On a tile camera: check its frame against `device`, as that device would run it, into a
/// [`TileValidationReport`] on the camera, again whenever the frame changes. Nothing the camera
/// renders changes.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_tile_deferred::{TileDeferred, TileValidation};
/// fn spawn(mut commands: Commands) {
///     commands.spawn((
///         Camera3d::default(),
///         TileDeferred::default(),
///         // Would this frame stay on tile on a Mali-G72?
///         TileValidation::phone("Mali-G72").expect("a listed phone GPU"),
///     ));
/// }
/// ```
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[reflect(Component, Clone, Debug, PartialEq)]
pub struct TileValidation {
    /// The device the frame is checked against.
    pub device: DeviceProfile,
}

impl TileValidation {
    /// Validation against the phone GPU named `name` in
    /// [`PHONE_GPUS`](crate::device::phones::PHONE_GPUS) (its Vulkan device name, e.g.
    /// `"Mali-G72"` or `"Adreno (TM) 610"`).
    pub fn phone(name: &str) -> Option<Self> {
        DeviceProfile::phone(name).map(|device| Self { device })
    }
}

/// What [`TileValidation`]'s device would do with the camera's last tile frame (main world, on
/// the camera, updated when the frame or the device changes).
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Component, Clone, Debug, PartialEq)]
pub struct TileValidationReport {
    /// The device's name.
    pub device: String,
    /// The tier its rules give the camera (its MSAA request and `TileDeferred` settings).
    pub tier: RenderTier,
    /// Why.
    pub tier_reasons: Vec<String>,
    /// Why the tile frame would fail there at run time, and the tier the camera would fall back
    /// to (then [`Self::tier`]), if it would: the plan the render world checks before recording
    /// cannot be built for the device (a G-buffer over its tile budget at 1x, for example).
    pub failure: Option<String>,
    /// The render passes of the tile frame there; 0 where the tier is Bevy's forward path or no
    /// tile frame was rendered yet.
    pub render_passes: usize,
    /// Each refused merge there, `"<pass> | <next pass>: <reason>"`: a render pass ends there,
    /// and what crosses the break is stored and loaded again.
    pub breaks: Vec<String>,
    /// Render passes whose per-pixel state is over the device's tile budget at the samples they
    /// would run with: the driver spills tile memory or renders to memory directly.
    pub over_tile_budget: Vec<String>,
    /// Why the tile path would render fewer MSAA samples there than the camera asks (its
    /// multisampled G-buffer does not fit the tile), if it would.
    pub msaa_lowered: Option<String>,
    /// How each render pass sits in tile memory there (`"gbuffer+lighting: 160 of 256 bits
    /// per pixel"`, Adreno's bins).
    pub tile_use: Vec<String>,
    /// Attachments a subpass samples as a texture in the render pass that binds them as
    /// attachments (not read as input attachments): a tiler must flush its tile to memory
    /// first. Empty for every frame the tile path plans; listed in case a plan ever does.
    pub texture_reads_in_pass: Vec<String>,
    /// What the camera sees that the tile path does not draw (its `TileMissing`), which would
    /// fall back there as here.
    pub falls_back: Vec<String>,
    /// The tile frame's attachment traffic there, bytes per frame (shadow maps not included).
    pub bytes_per_frame: u64,
    /// Render-world frame number of the tile frame the report was last computed from (0: none
    /// yet). It is computed again when that frame's plan, the camera's settings, what it sees
    /// that is missing or the device change.
    pub frame: u64,
}

impl TileValidationReport {
    /// Whether the device would run the frame as it should on a tiler: a tile tier that does
    /// not fail, one render pass, within the tile budget at the asked MSAA, no texture read of an attachment
    /// in its own pass, nothing falling back.
    pub fn stays_on_tile(&self) -> bool {
        self.tier.is_tile()
            && self.failure.is_none()
            && self.render_passes == 1
            && self.over_tile_budget.is_empty()
            && self.msaa_lowered.is_none()
            && self.texture_reads_in_pass.is_empty()
            && self.falls_back.is_empty()
    }
}

/// What the tile path's frame asks of a device, the tier rules' input
/// ([`tiers::choose_tier`]): so that a caller can ask the rules what a validation asked them.
pub fn tile_path_requirements() -> tiers::PlanRequirements {
    plan::requirements()
}

/// What [`validate`] checks a frame against: the device, and the camera's request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ValidationInput<'a> {
    /// The device profile.
    pub device: &'a DeviceProfile,
    /// The camera's MSAA request.
    pub requested_samples: u32,
    /// The camera's tier setting (`TileDeferred::tier`).
    pub setting: TierSetting,
    /// `TileDeferred::merge_subpasses`.
    pub merge_subpasses: bool,
    /// The tile frame as declared here (from the camera's last report); None before one.
    pub desc: Option<ViewFrameDesc>,
    /// What the camera sees that the tile path does not draw.
    pub missing: &'a [String],
}

/// Validates a frame against a device: its tier by the device's rules, then the frame planned
/// for that tier by the compiler with the device's capabilities (the same `plan_frame` the
/// render world runs, tile-budget MSAA lowering included). Pure.
pub(crate) fn validate(
    input: ValidationInput,
    cache: &mut FrameGraphCache,
) -> TileValidationReport {
    let device = input.device;
    let decision = tiers::decide(
        device,
        &plan::requirements(),
        input.requested_samples,
        input.setting,
        input.merge_subpasses,
        None,
        None,
    );
    let mut report = TileValidationReport {
        device: device.device_name.clone(),
        tier: decision.tier,
        tier_reasons: decision.reasons,
        failure: None,
        render_passes: 0,
        breaks: Vec::new(),
        over_tile_budget: Vec::new(),
        msaa_lowered: None,
        tile_use: Vec::new(),
        texture_reads_in_pass: Vec::new(),
        falls_back: input.missing.to_vec(),
        bytes_per_frame: 0,
        frame: 0,
    };
    let Some(here) = input.desc else {
        return report;
    };
    // As the router does when a tile frame fails: the next tier down, until one plans.
    let planned = loop {
        if !report.tier.is_tile() {
            return report;
        }
        match plan_for(device, report.tier, &here, cache) {
            Ok(planned) => break planned,
            Err(error) => {
                let fallback = report.tier.fallback();
                report.failure = Some(format!(
                    "{} fails on this device ({}); the camera falls back to {fallback}",
                    report.tier,
                    error_in_brief(&error.to_string())
                ));
                report.tier = fallback;
            }
        }
    };
    let compiled = &planned.compiled;
    report.render_passes = compiled.render_pass_count();
    report.breaks = compiled.breaks.iter().map(ToString::to_string).collect();
    report.msaa_lowered = planned.msaa_note.clone();
    report.over_tile_budget = over_budget(compiled);
    report.tile_use = tile_use(compiled);
    report.texture_reads_in_pass = texture_reads_in_pass(compiled);
    report.bytes_per_frame = compiled.cost.bytes();
    report
}

/// The frame `here` (declared on this device) planned for `tier` on `device`, as the render
/// world would plan it there.
fn plan_for(
    device: &DeviceProfile,
    tier: RenderTier,
    here: &ViewFrameDesc,
    cache: &mut FrameGraphCache,
) -> crate::tile_deferred::error::TileResult<plan::PlannedFrame> {
    let samples = tier.tile_samples();
    let desc = ViewFrameDesc {
        samples,
        // The edge/interior stencil split where the device shades per sample, as the render
        // world decides it (its depth-stencil format: the one here, else the usual one).
        msaa_depth_stencil: (samples > 1
            && device
                .vulkan
                .as_ref()
                .is_some_and(|vk| vk.sample_rate_shading))
        .then(|| {
            here.msaa_depth_stencil
                .unwrap_or(crate::frame_graph::Format::Depth24Stencil8)
        }),
        unmerged: tier.is_unmerged(),
        ..*here
    };
    plan::plan_frame(&desc, &device.frame_graph_caps(), cache)
}

/// A planning error in one line: its first line (what failed) and the compiler's break lines
/// (why), without the plan it prints between them.
fn error_in_brief(error: &str) -> String {
    let mut lines = error.lines();
    let first = lines.next().unwrap_or_default().trim_end_matches(':');
    let breaks: Vec<&str> = lines.filter(|line| line.starts_with("break ")).collect();
    if breaks.is_empty() {
        first.to_string()
    } else {
        format!("{first}: {}", breaks.join("; "))
    }
}

/// The render passes of `frame` whose tile state does not fit the device's budget.
fn over_budget(frame: &CompiledFrame) -> Vec<String> {
    frame
        .native_passes
        .iter()
        .filter(|pass| !pass.footprint.verdict.fits())
        .map(|pass| format!("{}: {}", pass.name, verdict_text(pass.footprint.verdict)))
        .collect()
}

/// How each render pass of `frame` sits in tile memory.
fn tile_use(frame: &CompiledFrame) -> Vec<String> {
    frame
        .native_passes
        .iter()
        .filter(|pass| !pass.subpasses.is_empty())
        .map(|pass| {
            format!(
                "{} ({}x): {}",
                pass.name,
                pass.samples,
                verdict_text(pass.footprint.verdict)
            )
        })
        .collect()
}

/// A tile verdict in words.
fn verdict_text(verdict: TileVerdict) -> String {
    match verdict {
        TileVerdict::Unlimited => "no tile budget known for this device".to_string(),
        TileVerdict::Fits {
            used_bits,
            budget_bits,
        } => format!("{used_bits} of {budget_bits} bits of tile colour per pixel"),
        TileVerdict::Spills {
            used_bits,
            budget_bits,
        } => format!(
            "{used_bits} bits of tile colour per pixel, over the {budget_bits} the tile holds: \
             the driver spills"
        ),
        TileVerdict::Bins(bins) => format!(
            "{} bins of {}x{} pixels in GMEM",
            bins.columns * bins.rows,
            bins.width,
            bins.height
        ),
        TileVerdict::GmemTooSmall { bytes_per_pixel } => format!(
            "{bytes_per_pixel} bytes per pixel: not one bin fits GMEM, the driver renders to \
             memory directly"
        ),
    }
}

/// Attachments a subpass of `frame` samples as textures while its render pass binds them as
/// attachments.
fn texture_reads_in_pass(frame: &CompiledFrame) -> Vec<String> {
    let mut reads = Vec::new();
    for pass in &frame.native_passes {
        for subpass in &pass.subpasses {
            for sampled in &subpass.sampled {
                if let Some(attachment) = pass.attachment(*sampled) {
                    reads.push(format!(
                        "{} samples {} as a texture inside {}, which binds it as an attachment",
                        subpass.name, attachment.name, pass.name
                    ));
                }
            }
        }
    }
    reads
}

/// What a validation is computed from, to skip frames where nothing changed.
#[derive(Clone, PartialEq)]
pub(crate) struct ValidationKey {
    device: DeviceProfile,
    requested_samples: u32,
    setting: TierSetting,
    merge_subpasses: bool,
    frame: Option<CompiledFrame>,
    missing: Vec<String>,
}

type ValidatedCameras<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        &'static TileValidation,
        &'static TileDeferred,
        Option<&'static Msaa>,
        Option<&'static TileMissing>,
    ),
>;

/// Validates each tile camera with a [`TileValidation`] against its device (main world,
/// after the router), and removes the report of a camera whose validation was removed.
pub(crate) fn validate_tile_cameras(
    mut commands: Commands,
    cameras: ValidatedCameras,
    unvalidated: Query<Entity, (With<TileValidationReport>, Without<TileValidation>)>,
    reports: Res<TileRenderReports>,
    mut last: Local<bevy::platform::collections::HashMap<Entity, ValidationKey>>,
    mut cache: Local<FrameGraphCache>,
) {
    for entity in &unvalidated {
        commands.entity(entity).remove::<TileValidationReport>();
    }
    last.retain(|entity, _| cameras.contains(*entity));
    for (entity, validation, settings, msaa, missing) in &cameras {
        // The report is a copy: its plan moves into the key.
        let (frame_number, compiled) = reports
            .get(entity)
            .map_or((0, None), |frame| (frame.frame, Some(frame.compiled)));
        let missing: Vec<String> = missing
            .map(|m| m.items.iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let key = ValidationKey {
            device: validation.device.clone(),
            requested_samples: msaa.map_or(1, Msaa::samples),
            setting: settings.tier,
            merge_subpasses: settings.merge_subpasses,
            frame: compiled,
            missing,
        };
        if last.get(&entity) == Some(&key) {
            continue;
        }
        let mut report = validate(
            ValidationInput {
                device: &key.device,
                requested_samples: key.requested_samples,
                setting: key.setting,
                merge_subpasses: key.merge_subpasses,
                desc: key.frame.as_ref().and_then(plan::view_desc_of),
                missing: &key.missing,
            },
            &mut cache,
        );
        report.frame = frame_number;
        commands.entity(entity).insert(report);
        last.insert(entity, key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        device::phones::PHONE_GPUS,
        frame_graph::{Extent, Format},
    };

    /// The showcase's frame at 1280x720 on a window, as the render world declares it on a
    /// desktop with `samples` (the stencil split at 4x).
    fn frame(samples: u32) -> ViewFrameDesc {
        ViewFrameDesc {
            msaa_depth_stencil: (samples > 1).then_some(Format::Depth32FloatStencil8),
            ..ViewFrameDesc::new(Extent::new(1280, 720), Format::Bgra8Srgb, samples)
        }
    }

    fn input<'a>(
        device: &'a DeviceProfile,
        samples: u32,
        missing: &'a [String],
    ) -> ValidationInput<'a> {
        ValidationInput {
            device,
            requested_samples: samples,
            setting: TierSetting::Auto,
            merge_subpasses: true,
            desc: Some(frame(samples)),
            missing,
        }
    }

    /// Each phone's report says what the tier rules and the planner decide for it: the tier
    /// and its reasons, the render passes, breaks and tile verdicts of the frame planned with
    /// the phone's capabilities at that tier's samples.
    #[test]
    fn reports_are_what_the_rules_and_the_planner_decide() {
        for samples in [1, 4] {
            for gpu in PHONE_GPUS {
                let device = gpu.profile();
                let report = validate(input(&device, samples, &[]), &mut FrameGraphCache::new());
                let decision =
                    tiers::choose_tier(&device, &plan::requirements(), samples, TierSetting::Auto);
                let name = format!("{} at {samples}x", gpu.name);
                assert_eq!(report.device, gpu.name);
                assert_eq!(report.tier_reasons, decision.reasons, "{name}");
                if !decision.tier.is_tile() {
                    assert_eq!(report.tier, decision.tier, "{name}");
                    assert_eq!(report.render_passes, 0, "{name}");
                    assert!(!report.stays_on_tile(), "{name}");
                    continue;
                }
                let tier_samples = decision.tier.tile_samples();
                let desc = ViewFrameDesc {
                    samples: tier_samples,
                    msaa_depth_stencil: (tier_samples > 1).then_some(Format::Depth32FloatStencil8),
                    ..frame(samples)
                };
                let planned = match plan::plan_frame(
                    &desc,
                    &device.frame_graph_caps(),
                    &mut FrameGraphCache::new(),
                ) {
                    Ok(planned) => planned,
                    Err(error) => {
                        // The render world would fail the frame: the router's fallback.
                        assert_eq!(report.tier, decision.tier.fallback(), "{name}");
                        let failure = report.failure.as_deref().unwrap_or_default();
                        assert!(
                            failure.contains(&error_in_brief(&error.to_string())),
                            "{name}: {failure}"
                        );
                        assert!(!report.stays_on_tile(), "{name}");
                        eprintln!("{name}: {failure}");
                        continue;
                    }
                };
                assert_eq!(report.tier, decision.tier, "{name}");
                assert_eq!(report.failure, None, "{name}");
                let compiled = &planned.compiled;
                assert_eq!(report.render_passes, compiled.render_pass_count(), "{name}");
                assert_eq!(report.breaks.len(), compiled.breaks.len(), "{name}");
                assert_eq!(report.msaa_lowered, planned.msaa_note, "{name}");
                let spilling = compiled
                    .native_passes
                    .iter()
                    .filter(|n| !n.footprint.verdict.fits())
                    .count();
                assert_eq!(report.over_tile_budget.len(), spilling, "{name}");
                assert_eq!(report.bytes_per_frame, compiled.cost.bytes(), "{name}");
                assert!(report.texture_reads_in_pass.is_empty(), "{name}");
                eprintln!(
                    "{name}: {} ({} render passes, {:.2} MB){}; {:?}; {:?}",
                    report.tier,
                    report.render_passes,
                    report.bytes_per_frame as f64 / 1e6,
                    report
                        .msaa_lowered
                        .as_deref()
                        .map_or(String::new(), |note| format!(", {note}")),
                    report.tile_use,
                    report.breaks,
                );
            }
        }
    }

    #[test]
    fn what_each_kind_of_phone_would_do() {
        let report = |name: &str, samples: u32| {
            let device = DeviceProfile::phone(name).unwrap();
            validate(input(&device, samples, &[]), &mut FrameGraphCache::new())
        };
        // Xclipse: Bevy's forward path, no tile frame.
        let xclipse = report("Samsung Xclipse 920", 4);
        assert_eq!(xclipse.tier, RenderTier::Forward);
        assert!(
            xclipse
                .tier_reasons
                .iter()
                .any(|reason| reason.contains("immediate-mode")),
            "{xclipse:?}"
        );
        // Adreno 6xx: the tile path without MSAA, one render pass binned in GMEM.
        let adreno = report("Adreno (TM) 610", 4);
        assert_eq!(adreno.tier, RenderTier::TileDeferred);
        assert_eq!(adreno.render_passes, 1);
        assert!(adreno.tile_use[0].contains("bins"), "{:?}", adreno.tile_use);
        assert!(adreno.stays_on_tile(), "{adreno:?}");
        // A Mali-G57 at 1x: one render pass within 256 bits per pixel.
        let valhall = report("Mali-G57", 1);
        assert!(valhall.stays_on_tile(), "{valhall:?}");
        assert!(
            valhall.tile_use[0].contains("of 256 bits"),
            "{:?}",
            valhall.tile_use
        );
        // Midgard's 128 bits of tile colour per pixel cannot hold the merged G-buffer and
        // lighting (160 bits at 1x): the rules give it Bevy's forward path.
        let midgard = report("Mali-T880", 1);
        assert_eq!(midgard.tier, RenderTier::Forward);
        assert_eq!(midgard.failure, None);
        assert!(
            midgard
                .tier_reasons
                .iter()
                .any(|reason| reason.contains("tile colour budget")),
            "{midgard:?}"
        );
        // Forced onto the tile path there, the frame fails and the camera falls back.
        let device = DeviceProfile::phone("Mali-T880").unwrap();
        let forced = validate(
            ValidationInput {
                setting: TierSetting::Force(RenderTier::TileDeferred),
                ..input(&device, 1, &[])
            },
            &mut FrameGraphCache::new(),
        );
        assert_eq!(forced.tier, RenderTier::Forward);
        let failure = forced.failure.as_deref().unwrap_or_default();
        assert!(failure.contains("128-bit budget"), "{failure}");
        assert!(!forced.stays_on_tile());
        // What falls back is listed whatever the device.
        let device = DeviceProfile::phone("Mali-G57").unwrap();
        let missing = ["0v1 (\"cube\"): custom Material".to_string()];
        let with_missing = validate(input(&device, 1, &missing), &mut FrameGraphCache::new());
        assert_eq!(with_missing.falls_back, missing);
        assert!(!with_missing.stays_on_tile());
    }

    #[test]
    fn a_texture_read_of_an_attachment_in_its_own_pass_is_listed() {
        let device = DeviceProfile::phone("Mali-G57").unwrap();
        let planned = plan::plan_frame(
            &frame(1),
            &device.frame_graph_caps(),
            &mut FrameGraphCache::new(),
        )
        .unwrap();
        let mut compiled = planned.compiled;
        assert_eq!(texture_reads_in_pass(&compiled), Vec::<String>::new());
        // Break it on purpose: the last subpass samples the first attachment of its own pass.
        let pass = &mut compiled.native_passes[0];
        let attachment = pass.attachments[0].resource;
        let name = pass.attachments[0].name.clone();
        pass.subpasses.last_mut().unwrap().sampled.push(attachment);
        let reads = texture_reads_in_pass(&compiled);
        assert_eq!(reads.len(), 1);
        assert!(reads[0].contains(&name), "{reads:?}");
    }

    /// With merging off the device runs the unmerged tier: its render passes, each break
    /// "merging disabled", the G-buffer stored and sampled; at 4x as at 1x.
    #[test]
    fn merging_off_is_validated_as_the_unmerged_tier() {
        let device = DeviceProfile::phone("Adreno (TM) 750").unwrap();
        for samples in [1, 4] {
            let report = validate(
                ValidationInput {
                    merge_subpasses: false,
                    desc: Some(ViewFrameDesc {
                        unmerged: true,
                        ..frame(samples)
                    }),
                    ..input(&device, samples, &[])
                },
                &mut FrameGraphCache::new(),
            );
            assert_eq!(report.tier, RenderTier::Unmerged { samples }, "{samples}x");
            assert!(report.render_passes > 1, "{report:?}");
            assert_eq!(report.breaks.len(), report.render_passes - 1, "{report:?}");
            assert!(
                report.breaks.iter().all(|b| b.contains("merging")),
                "{:?}",
                report.breaks
            );
            assert!(!report.stays_on_tile());
            let merged = validate(input(&device, samples, &[]), &mut FrameGraphCache::new());
            assert!(report.bytes_per_frame > merged.bytes_per_frame);
        }
    }

    #[test]
    fn without_a_tile_frame_only_the_tier_is_known() {
        let device = DeviceProfile::phone("Mali-G57").unwrap();
        let report = validate(
            ValidationInput {
                desc: None,
                ..input(&device, 4, &[])
            },
            &mut FrameGraphCache::new(),
        );
        assert!(report.tier.is_tile());
        assert_eq!(report.render_passes, 0);
        assert!(!report.stays_on_tile());
    }
}
