//! Bevy's own post-processing after the tile pass (issue 32): colour grading on HDR cameras
//! (Bevy's tone mapping, always), bloom (feature `bloom`), chromatic aberration, vignette and
//! lens distortion (feature `effect_stack`, [`super::effect_stack`]), auto exposure (feature
//! `auto_exposure`, [`super::auto_exposure`]), FXAA, SMAA and contrast-adaptive sharpening
//! (feature `anti_alias`) run on the tile frame instead of sending the camera to `Core3d`.
//!
//! `Core3d` runs these effects on the camera's main texture (`ViewTarget`): bloom on the HDR
//! light before tone mapping (it adds its blurred mips back into the main texture), the effect
//! stack (one pass for chromatic aberration, vignette and lens distortion), auto exposure
//! (compute passes that meter the light and set the exposure Bevy's tone mapping applies), then
//! `tonemapping` (reads the main texture, writes the other one; on an HDR camera it also applies
//! the `ColorGrading` that Bevy's in-shader tone mapping leaves out: hue, white balance and the
//! sections), then FXAA, SMAA and CAS, each reading the current main texture and writing the
//! other one, and `upscaling` last blits the result to the camera's output. On a tile camera
//! with one of them, the tile pass writes the main texture instead of the output (the frame is
//! still one render pass that stores one image), and the tile schedule runs Bevy's own systems
//! after it, in `Core3d`'s order. With bloom, the effect stack on an HDR camera, auto exposure
//! or such a grade, the pass stores the light as Bevy's main pass would (exposed, fogged, MSAA samples
//! averaged, not tone mapped or dithered) and Bevy's own tone mapping follows; otherwise the
//! pass tone maps as before. What they load and store is priced apart from the tile frame
//! ([`price_post_processing`], `TileViewReport::post_process_pass`).
//!
//! What Bevy draws after the tile pass (bevy_ui, egui, gizmos and wireframes) is drawn after the
//! blit, over the output: Bevy too draws its UI after these effects, so bevy_ui and egui look as
//! they do under `Core3d`, but its gizmos are drawn before them, so over a tile camera with
//! bloom, FXAA or SMAA they are neither bloomed nor anti-aliased. bevy_ui and egui go after the
//! pass, not in its `ui` subpass, since the effects would otherwise filter them.
//!
//! An effect is drawn this way only where the app has its Bevy plugin (`TonemappingPlugin`,
//! which Bevy's `Core3d` always has, `BloomPlugin`, `EffectStackPlugin`, `FxaaPlugin`,
//! `SmaaPlugin`, `CasPlugin`, in Bevy's `DefaultPlugins` with its `bevy_post_process` and
//! `bevy_anti_alias` features; `AutoExposurePlugin`, which the game adds itself);
//! without this crate's feature for it, or without the plugin, the camera falls back as before
//! and `TileMissing` says why.
//!
//! The effect stack's and auto exposure's systems are private in bevy_post_process 0.19.1, so
//! the tile schedule runs their shaders with resources of its own ([`super::effect_stack`],
//! [`super::auto_exposure`]). Bevy 0.19.1 does not order auto exposure against the bloom (both
//! only before `tonemapping`); here it meters after the bloom and the effect stack, on the
//! light as the tone mapping will see it.

use super::{PostProcessingAfterTile, gizmos::ViewsDrawnOver};
use crate::frame_graph::{
    Access, AttachmentDesc, AttachmentHandle, ClearValue, CompiledFrame, DeviceCaps, Extent,
    Format, FrameGraph, ImportParams, Size, compile_stock_bevy,
};
use crate::tile_deferred::{
    camera::{
        PostProcessedAfterTile, TileCameraEffects, TileDeferred, TileDeferredGraph,
        TileDeferredSystems, TileMaterialsOverTile, is_tile_schedule,
    },
    plan::names,
    report::TileRenderReports,
};
use crate::vulkan::conv::frame_graph_format;
use bevy::{
    camera::Hdr,
    core_pipeline::{
        tonemapping::{Tonemapping, TonemappingPlugin, tonemapping},
        upscaling::upscaling,
    },
    prelude::*,
    render::{
        Extract, ExtractSchedule, RenderApp,
        camera::{CameraRenderGraph, ExtractedCamera},
        renderer::{CurrentView, ViewQuery},
        sync_world::{MainEntity, RenderEntity},
        view::{ColorGrading, ViewTarget},
    },
};
#[cfg(feature = "anti_alias")]
use bevy_anti_alias::{
    contrast_adaptive_sharpening::{CasPlugin, ContrastAdaptiveSharpening, cas},
    fxaa::{Fxaa, FxaaPlugin, fxaa},
    smaa::{Smaa, SmaaPlugin, smaa},
};
#[cfg(feature = "auto_exposure")]
use bevy_post_process::auto_exposure::{AutoExposure, AutoExposurePlugin};
#[cfg(feature = "bloom")]
use bevy_post_process::bloom::{Bloom, BloomPlugin, bloom};
#[cfg(feature = "effect_stack")]
use bevy_post_process::effect_stack::{
    ChromaticAberration, EffectStackPlugin, LensDistortion, Vignette,
};

/// The effects, by the name of their camera component, in the order `Core3d` runs them.
pub(crate) const BLOOM: &str = "Bloom";
/// Bevy's tone mapping grading an HDR camera without bloom ([`bevy_grades_hdr_camera`]).
pub(crate) const COLOR_GRADING: &str = "ColorGrading";
/// Bevy's tone mapping of an HDR camera whose tile frame Bevy draws over: meshes (custom
/// materials, the `StandardMaterial` features the G-buffer lacks: `TileMaterialsOverTile`),
/// gizmos and wireframes (`gizmos::ViewsDrawnOver`). `Core3d` draws them into the HDR light and
/// tone maps them with the scene, so they go into the main texture the tile pass stored before
/// Bevy's tone mapping, as after a bloom.
pub(crate) const TONEMAPPING: &str = "Tonemapping";
/// Bevy's transmissive pass over an LDR camera's tile frame (meshes with `StandardMaterial`
/// transmission, `TileMaterialsOverTile::transmissive`): it reads a copy of the frame, so the
/// tile pass writes (with MSAA, resolves) the frame into the main texture, Bevy draws over it
/// there, and Bevy's blit writes the output. No pass of its own (on an HDR camera [`TONEMAPPING`]
/// routes the frame through the main texture already).
pub(crate) const TRANSMISSION: &str = "Transmission";
/// Bevy's effect stack (`EffectStackPlugin`): one pass for the three effects below, after the
/// bloom and before the tone mapping ([`super::effect_stack`]). On an HDR camera it reads the
/// light, and Bevy's tone mapping follows it ([`TONEMAPPING`], unless a bloom or a grade runs
/// it already).
pub(crate) const EFFECT_STACK: &str = "EffectStack";
/// Bevy's auto exposure (`AutoExposurePlugin`) on an HDR camera: compute passes meter the light
/// after the bloom and the effect stack ([`super::auto_exposure`]), and Bevy's tone mapping,
/// which applies the exposure, follows ([`TONEMAPPING`], unless a bloom or a grade runs it).
pub(crate) const AUTO_EXPOSURE: &str = "AutoExposure";
/// The effect stack's camera components, by name: drawn where [`EFFECT_STACK`] is.
#[cfg_attr(
    not(feature = "effect_stack"),
    allow(dead_code, reason = "named only where the effect stack can be drawn")
)]
const EFFECT_STACK_COMPONENTS: [&str; 3] = ["ChromaticAberration", "Vignette", "LensDistortion"];

/// The effects Bevy's tone mapping runs for (after the bloom; for a grade; for the meshes over
/// an HDR frame): the tile pass then stores the light.
const TONE_MAPPED_AFTER: [&str; 3] = [BLOOM, COLOR_GRADING, TONEMAPPING];

/// Whether Bevy's tone mapping runs after `effects`.
fn tone_mapped_by_bevy(effects: &[&str]) -> bool {
    effects
        .iter()
        .any(|effect| TONE_MAPPED_AFTER.contains(effect))
}
pub(crate) const FXAA: &str = "Fxaa";
pub(crate) const SMAA: &str = "Smaa";
pub(crate) const CAS: &str = "ContrastAdaptiveSharpening";

/// The steps of [`TileDeferredSystems::PostProcess`], in order: `Core3d` runs bloom before tone
/// mapping, FXAA and SMAA after it, CAS after both, and the blit last.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum PostProcessSteps {
    Bloom,
    EffectStack,
    AutoExposure,
    ToneMap,
    Fxaa,
    Smaa,
    Sharpen,
    Blit,
    Price,
}

/// The effects whose Bevy plugins the app has, of those this build can run after the tile pass.
fn effects_with_plugins(app: &App) -> Vec<&'static str> {
    let tone_maps = app.is_plugin_added::<TonemappingPlugin>();
    [
        (tone_maps, COLOR_GRADING),
        (tone_maps, TONEMAPPING),
        (tone_maps, TRANSMISSION),
        #[cfg(feature = "bloom")]
        (app.is_plugin_added::<BloomPlugin>(), BLOOM),
        #[cfg(feature = "effect_stack")]
        (app.is_plugin_added::<EffectStackPlugin>(), EFFECT_STACK),
        #[cfg(feature = "auto_exposure")]
        (app.is_plugin_added::<AutoExposurePlugin>(), AUTO_EXPOSURE),
        #[cfg(feature = "anti_alias")]
        (app.is_plugin_added::<FxaaPlugin>(), FXAA),
        #[cfg(feature = "anti_alias")]
        (app.is_plugin_added::<SmaaPlugin>(), SMAA),
        #[cfg(feature = "anti_alias")]
        (app.is_plugin_added::<CasPlugin>(), CAS),
    ]
    .into_iter()
    .filter(|(added, _)| *added)
    .flat_map(|(_, effect)| {
        // The stack's components are what `TileMissing` would name.
        let components: &[&'static str] = if effect == EFFECT_STACK {
            &EFFECT_STACK_COMPONENTS
        } else {
            &[]
        };
        std::iter::once(effect).chain(components.iter().copied())
    })
    .collect()
}

/// Wires the effects whose Bevy plugins the app has: run once the app's plugins are built
/// (`Plugin::finish`), so that `is_plugin_added` sees them all.
pub(crate) fn finish(app: &mut App) {
    let drawn = effects_with_plugins(app);
    if drawn.is_empty() {
        return;
    }
    let drawn = PostProcessingAfterTile(drawn);
    app.insert_resource(drawn.clone());
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    if let Some(mut drawn_over) = render_app.world_mut().get_resource_mut::<ViewsDrawnOver>() {
        drawn_over.hdr_tone_mappable = tone_maps_draws_over_hdr(&drawn);
    }
    render_app
        .add_systems(ExtractSchedule, mark_post_processed_views)
        .configure_sets(
            TileDeferredGraph,
            (
                PostProcessSteps::Bloom,
                PostProcessSteps::EffectStack,
                PostProcessSteps::AutoExposure,
                PostProcessSteps::ToneMap,
                PostProcessSteps::Fxaa,
                PostProcessSteps::Smaa,
                PostProcessSteps::Sharpen,
                PostProcessSteps::Blit,
                PostProcessSteps::Price,
            )
                .chain()
                .in_set(TileDeferredSystems::PostProcess),
        )
        .configure_sets(
            TileDeferredGraph,
            (
                TileDeferredSystems::PostProcess.run_if(view_is_post_processed),
                // Gizmos, wireframes and custom materials go into the main texture first.
                super::gizmos::DrawsIntoMainTextureSystems.before(PostProcessSteps::Bloom),
            ),
        )
        .add_systems(
            TileDeferredGraph,
            (
                upscaling.in_set(PostProcessSteps::Blit),
                price_view_post_processing.in_set(PostProcessSteps::Price),
            ),
        );
    // Each of Bevy's systems skips a view without its effect (its `ViewQuery` does not match).
    #[cfg(feature = "bloom")]
    if drawn.0.contains(&BLOOM) {
        render_app.add_systems(TileDeferredGraph, bloom.in_set(PostProcessSteps::Bloom));
    }
    #[cfg(feature = "effect_stack")]
    let stack = drawn.0.contains(&EFFECT_STACK);
    #[cfg(feature = "auto_exposure")]
    let exposes = drawn.0.contains(&AUTO_EXPOSURE);
    if tone_mapped_by_bevy(&drawn.0) {
        render_app.add_systems(
            TileDeferredGraph,
            // Only where the tile pass stored the light: elsewhere it tone mapped already.
            tonemapping
                .in_set(PostProcessSteps::ToneMap)
                .run_if(view_is_tone_mapped_by_bevy),
        );
    }
    #[cfg(feature = "anti_alias")]
    {
        if drawn.0.contains(&FXAA) {
            render_app.add_systems(TileDeferredGraph, fxaa.in_set(PostProcessSteps::Fxaa));
        }
        if drawn.0.contains(&SMAA) {
            render_app.add_systems(TileDeferredGraph, smaa.in_set(PostProcessSteps::Smaa));
        }
        if drawn.0.contains(&CAS) {
            render_app.add_systems(TileDeferredGraph, cas.in_set(PostProcessSteps::Sharpen));
        }
    }
    render_app.insert_resource(drawn);
    #[cfg(feature = "effect_stack")]
    if stack {
        super::effect_stack::add(app, PostProcessSteps::EffectStack);
    }
    #[cfg(feature = "auto_exposure")]
    if exposes {
        super::auto_exposure::add(app, PostProcessSteps::AutoExposure);
    }
}

/// Which effects Bevy would run on a camera, each as its extraction and its system decide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CameraEffects {
    /// `Bloom` with some intensity on an HDR camera (Bevy's `bloom` skips the others).
    pub(crate) bloom: bool,
    /// Chromatic aberration, a vignette or lens distortion that Bevy's effect stack draws
    /// (`effect_stack::draws`).
    pub(crate) effect_stack: bool,
    /// The camera is HDR: its effect stack reads the light, and Bevy's tone mapping follows.
    pub(crate) hdr: bool,
    /// `AutoExposure` on the camera (metered where it is HDR: `auto_exposure::meters`).
    pub(crate) auto_exposure: bool,
    /// An HDR camera whose `ColorGrading` Bevy's tone mapping applies beyond what the tonemap
    /// subpass does ([`bevy_grades_hdr_camera`]).
    pub(crate) grading: bool,
    /// An HDR camera whose tile frame Bevy draws meshes, gizmos or wireframes over
    /// ([`TONEMAPPING`]).
    pub(crate) drawn_over_hdr: bool,
    /// Meshes Bevy draws in its transmissive pass over the tile frame ([`TRANSMISSION`]).
    pub(crate) transmission: bool,
    /// `Fxaa`, enabled.
    pub(crate) fxaa: bool,
    /// `Smaa`, whenever present.
    pub(crate) smaa: bool,
    /// `ContrastAdaptiveSharpening`, enabled with some strength.
    pub(crate) cas: bool,
}

/// The effects Bevy runs on a camera (`on`), among those the app draws after the tile pass
/// (`drawn`), in the order they run. Bevy's tone mapping is named once, by the first reason for
/// it: after a bloom, for a grade, after the effect stack or auto exposure, or for the meshes
/// Bevy draws over an HDR frame. Pure.
pub(crate) fn effects_of(on: CameraEffects, drawn: &[&'static str]) -> Vec<&'static str> {
    let blooms = on.bloom && drawn.contains(&BLOOM);
    let grades = on.grading && drawn.contains(&COLOR_GRADING);
    let stack_reads_light = on.effect_stack && on.hdr && drawn.contains(&EFFECT_STACK);
    let exposes = on.auto_exposure && on.hdr && drawn.contains(&AUTO_EXPOSURE);
    let mut effects: Vec<&'static str> = [
        (on.bloom, BLOOM),
        (on.effect_stack, EFFECT_STACK),
        (on.auto_exposure && on.hdr, AUTO_EXPOSURE),
        (on.grading && !blooms, COLOR_GRADING),
        (
            (on.drawn_over_hdr || stack_reads_light || exposes) && !blooms && !grades,
            TONEMAPPING,
        ),
        (on.fxaa, FXAA),
        (on.smaa, SMAA),
        (on.cas, CAS),
    ]
    .into_iter()
    .filter(|(on, effect)| *on && drawn.contains(effect))
    .map(|(_, effect)| effect)
    .collect();
    // Any effect routes the frame through the main texture; the transmissive pass needs it
    // there, and names it only where nothing else does.
    if on.transmission && effects.is_empty() && drawn.contains(&TRANSMISSION) {
        effects.push(TRANSMISSION);
    }
    effects
}

/// Bevy blooms a camera with these settings: with some intensity, on an HDR camera (what
/// `bloom` checks before drawing).
#[cfg(feature = "bloom")]
fn blooms(bloom: &Bloom, hdr: bool) -> bool {
    hdr && bloom.intensity != 0.0
}

/// Main world: Bevy blooms the camera after its tile pass (the app has `BloomPlugin`, in
/// `drawn`), so its tone mapping, which grades the frame, runs there too.
#[cfg(feature = "bloom")]
pub(crate) fn blooms_after_tile_pass(camera: &EntityRef, drawn: &PostProcessingAfterTile) -> bool {
    drawn.0.contains(&BLOOM)
        && camera
            .get::<Bloom>()
            .is_some_and(|bloom| blooms(bloom, camera.contains::<Hdr>()))
}

/// Main world: Bevy's own tone mapping runs after the camera's tile pass and grades its frame
/// as `Core3d` would: after its bloom, its effect stack or its auto exposure on an HDR camera,
/// or for a grade that needs it ([`bevy_grades_hdr_camera`]).
/// (It also runs for the meshes Bevy draws over an HDR camera's tile frame,
/// [`tone_maps_draws_over_hdr`], which this does not count: the main world decides those from
/// what this says.)
pub(crate) fn tone_mapped_after_tile_pass(
    camera: &EntityRef,
    drawn: &PostProcessingAfterTile,
) -> bool {
    #[cfg(feature = "bloom")]
    if blooms_after_tile_pass(camera, drawn) {
        return true;
    }
    #[cfg(feature = "effect_stack")]
    if drawn.0.contains(&EFFECT_STACK) && camera.contains::<Hdr>() && effect_stack_on(camera) {
        return true;
    }
    #[cfg(feature = "auto_exposure")]
    if drawn.0.contains(&AUTO_EXPOSURE)
        && super::auto_exposure::meters(camera.get::<AutoExposure>(), camera.contains::<Hdr>())
    {
        return true;
    }
    drawn.0.contains(&COLOR_GRADING)
        && bevy_grades_hdr_camera(camera.contains::<Hdr>(), camera.get::<ColorGrading>())
}

/// Bevy's own tone mapping can run after the tile pass of an HDR camera whose frame Bevy
/// draws meshes, gizmos or wireframes over ([`TONEMAPPING`]), so that they are drawn (read by
/// both worlds).
pub(crate) fn tone_maps_draws_over_hdr(drawn: &PostProcessingAfterTile) -> bool {
    drawn.0.contains(&TONEMAPPING)
}

/// Whether Bevy's tonemapping pass grades a camera beyond the global exposure and
/// post-saturation, which is all the tonemap subpass applies: an HDR camera (Bevy's in-shader
/// tone mapping of an LDR camera defines none of the three) with a hue rotation, a white balance
/// or a section other than the default (the three flags of its pipeline key, bevy_core_pipeline
/// 0.19.1 `prepare_view_tonemapping_pipelines`). Pure.
pub(crate) fn bevy_grades_hdr_camera(hdr: bool, grading: Option<&ColorGrading>) -> bool {
    hdr && grading.is_some_and(|grading| {
        let global = &grading.global;
        global.hue != 0.0
            || global.temperature != 0.0
            || global.tint != 0.0
            || grading.all_sections().any(|section| *section != default())
    })
}

/// Bevy's anti-aliasing effects on a camera: FXAA only while enabled, CAS only while enabled
/// with some strength (what Bevy's extraction of each keeps), SMAA whenever present.
#[cfg(feature = "anti_alias")]
fn anti_aliasing(
    fxaa: Option<&Fxaa>,
    smaa: Option<&Smaa>,
    cas: Option<&ContrastAdaptiveSharpening>,
) -> CameraEffects {
    CameraEffects {
        fxaa: fxaa.is_some_and(|fxaa| fxaa.enabled),
        smaa: smaa.is_some(),
        cas: cas.is_some_and(|cas| cas.enabled && cas.sharpening_strength != 0.0),
        ..default()
    }
}

/// The tile cameras whose render-world views [`mark_post_processed_views`] marks.
type TileCameras<'w, 's> = Query<
    'w,
    's,
    (
        Entity,
        RenderEntity,
        &'static Camera,
        &'static CameraRenderGraph,
        Has<Hdr>,
        Option<&'static ColorGrading>,
        Option<&'static TileMaterialsOverTile>,
    ),
    With<TileDeferred>,
>;

/// The anti-aliasing components of the cameras.
#[cfg(feature = "anti_alias")]
type AntiAliasing<'w, 's> = Query<
    'w,
    's,
    (
        Option<&'static Fxaa>,
        Option<&'static Smaa>,
        Option<&'static ContrastAdaptiveSharpening>,
    ),
>;

/// The effect-stack components of the cameras.
#[cfg(feature = "effect_stack")]
type EffectStacks<'w, 's> = Query<
    'w,
    's,
    (
        Option<&'static ChromaticAberration>,
        Option<&'static Vignette>,
        Option<&'static LensDistortion>,
    ),
>;

/// Main world: Bevy's effect stack draws on the camera (feature `effect_stack`).
#[cfg(feature = "effect_stack")]
fn effect_stack_on(camera: &EntityRef) -> bool {
    super::effect_stack::draws(
        camera.get::<ChromaticAberration>(),
        camera.get::<Vignette>(),
        camera.get::<LensDistortion>(),
    )
}

/// Marks, each frame, the tile views whose effects run after the tile pass
/// ([`PostProcessedAfterTile`]), before anything in `Render` reads them (the UI routes decide
/// on it in `Queue`, the tile pass writes the main texture for it).
fn mark_post_processed_views(
    mut commands: Commands,
    cameras: Extract<TileCameras>,
    #[cfg(feature = "bloom")] blooms_of: Extract<Query<&Bloom>>,
    #[cfg(feature = "anti_alias")] anti_aliasing_of: Extract<AntiAliasing>,
    #[cfg(feature = "effect_stack")] effect_stacks_of: Extract<EffectStacks>,
    #[cfg(feature = "auto_exposure")] auto_exposures: Extract<Query<(), With<AutoExposure>>>,
    drawn: Res<PostProcessingAfterTile>,
    drawn_over: Res<ViewsDrawnOver>,
) {
    for (entity, render_entity, camera, graph, hdr, grading, over_tile) in &cameras {
        let Ok(mut view) = commands.get_entity(render_entity) else {
            continue;
        };
        let mut on = CameraEffects::default();
        #[cfg(feature = "anti_alias")]
        if let Ok((fxaa, smaa, cas)) = anti_aliasing_of.get(entity) {
            on = anti_aliasing(fxaa, smaa, cas);
        }
        #[cfg(feature = "bloom")]
        {
            on.bloom = blooms_of.get(entity).is_ok_and(|bloom| blooms(bloom, hdr));
        }
        #[cfg(feature = "effect_stack")]
        {
            on.effect_stack = effect_stacks_of
                .get(entity)
                .is_ok_and(|(ca, vignette, ld)| super::effect_stack::draws(ca, vignette, ld));
        }
        #[cfg(feature = "auto_exposure")]
        {
            on.auto_exposure = auto_exposures.contains(entity);
        }
        #[cfg(not(any(
            feature = "bloom",
            feature = "anti_alias",
            feature = "effect_stack",
            feature = "auto_exposure"
        )))]
        let _ = entity;
        on.hdr = hdr;
        on.grading = bevy_grades_hdr_camera(hdr, grading);
        // The main world lists meshes over the tile frame only where they can be drawn
        // (`coverage::missing`); the render world saw gizmos or wireframes lately.
        on.transmission = over_tile.is_some_and(|over_tile| over_tile.transmissive);
        on.drawn_over_hdr = hdr
            && (over_tile.is_some_and(|over_tile| !over_tile.meshes.is_empty())
                || drawn_over.tone_maps_draws_over_hdr(render_entity));
        let effects = effects_of(on, &drawn.0);
        let tone_mapped_by_bevy = tone_mapped_by_bevy(&effects);
        if camera.is_active && !effects.is_empty() {
            view.insert(TileCameraEffects {
                tone_mapped_by_bevy,
            });
        } else {
            view.remove::<TileCameraEffects>();
        }
        if camera.is_active && is_tile_schedule(graph.0) && !effects.is_empty() {
            view.insert(PostProcessedAfterTile {
                tone_mapped_by_bevy,
                effects,
            });
        } else {
            view.remove::<PostProcessedAfterTile>();
        }
    }
}

/// Run condition of [`TileDeferredSystems::PostProcess`]: the view being rendered has effects
/// after the tile pass this frame.
fn view_is_post_processed(
    view: Res<CurrentView>,
    marked: Query<(), With<PostProcessedAfterTile>>,
) -> bool {
    marked.contains(view.0)
}

/// Run condition of Bevy's `tonemapping` in [`PostProcessSteps::ToneMap`]: the tile pass of the
/// view being rendered stored its light, for Bevy to tone map (after its bloom, or to grade it).
fn view_is_tone_mapped_by_bevy(
    view: Res<CurrentView>,
    marked: Query<&PostProcessedAfterTile>,
) -> bool {
    marked
        .get(view.0)
        .is_ok_and(|post| post.tone_mapped_by_bevy)
}

/// Prices the view's effects and blit into its frame report.
fn price_view_post_processing(
    view: ViewQuery<(
        &MainEntity,
        &ViewTarget,
        &ExtractedCamera,
        &PostProcessedAfterTile,
        Option<&Tonemapping>,
    )>,
    #[cfg(feature = "bloom")] blooms_of: Query<&Bloom>,
    current: Res<CurrentView>,
    reports: Res<TileRenderReports>,
) {
    let (main_entity, target, camera, post, tonemapping) = view.into_inner();
    let main_texture = target.main_texture();
    let (Some(main_format), Some(output_format)) = (
        frame_graph_format(target.main_texture_format()),
        target
            .out_texture_view_format()
            .and_then(frame_graph_format),
    ) else {
        return;
    };
    let extent = Extent::new(main_texture.width(), main_texture.height());
    #[cfg(feature = "bloom")]
    let bloom_mips = match (blooms_of.get(current.0), camera.physical_viewport_size) {
        (Ok(bloom), Some(viewport)) if post.effects.contains(&BLOOM) => {
            bloom_mip_extents(viewport, bloom.max_mip_dimension)
        }
        _ => Vec::new(),
    };
    #[cfg(not(feature = "bloom"))]
    let bloom_mips = {
        let _ = current;
        Vec::new()
    };
    let priced = price_post_processing(
        PostProcessedFrame {
            extent,
            main_format,
            output_format,
            first_on_target: camera.sorted_camera_index_for_target == 0,
            bloom_mips,
            tone_maps: tonemapping.is_none_or(|tonemapping| *tonemapping != Tonemapping::None),
        },
        &post.effects,
    );
    let effects: Vec<String> = post
        .effects
        .iter()
        .map(|effect| effect.to_string())
        .collect();
    reports.amend(main_entity.id(), |report| {
        report.post_process_pass = priced;
        report.post_processing = effects;
    });
}

/// The format of Bevy's bloom mips (bevy_post_process 0.19.1 `BLOOM_TEXTURE_FORMAT`).
const BLOOM_MIP_FORMAT: Format = Format::Rg11b10Float;

/// The extents of Bevy's bloom mip chain for a viewport of `viewport` pixels, as
/// `prepare_bloom_textures` makes it: the first mip is the viewport scaled to
/// `max_mip_dimension` pixels high (larger than the viewport where it is lower than that), each
/// next one half the last, `log2(max_mip_dimension) - 1` of them (at least one). Pure.
#[cfg_attr(
    not(feature = "bloom"),
    allow(
        dead_code,
        reason = "only the bloom's pricing (feature `bloom`) sizes its mips"
    )
)]
pub(crate) fn bloom_mip_extents(viewport: UVec2, max_mip_dimension: u32) -> Vec<Extent> {
    let Some(log2) = max_mip_dimension.checked_ilog2() else {
        return Vec::new();
    };
    let mip_count = log2.max(2) - 1;
    let ratio = if viewport.y != 0 {
        max_mip_dimension as f32 / viewport.y as f32
    } else {
        0.0
    };
    let first = (viewport.as_vec2() * ratio)
        .round()
        .as_uvec2()
        .max(UVec2::ONE);
    (0..mip_count)
        .map(|mip| Extent::new((first.x >> mip).max(1), (first.y >> mip).max(1)))
        .collect()
}

/// What the post-processing of one tile frame works on.
pub(crate) struct PostProcessedFrame {
    /// The main texture's extent.
    pub(crate) extent: Extent,
    /// The main texture's format (the tile frame stored it).
    pub(crate) main_format: Format,
    /// The camera's output format (the blit writes it).
    pub(crate) output_format: Format,
    /// The camera is the first on its target: its blit overwrites the output; a later camera
    /// blends over it (loaded).
    pub(crate) first_on_target: bool,
    /// Bevy's bloom mips ([`bloom_mip_extents`]), where the camera blooms.
    pub(crate) bloom_mips: Vec<Extent>,
    /// Bevy's tone mapping draws where it runs: the camera's `Tonemapping` is not `None`
    /// (bevy_core_pipeline 0.19.1 `tonemapping` returns early on `None`).
    pub(crate) tone_maps: bool,
}

/// Bevy's post-processing of a tile frame, priced with the stock-Bevy model (wgpu passes store
/// what they write), over the main texture, which the tile frame stored:
/// - bloom samples the main texture into its first mip, downsamples each mip into the next,
///   upsamples each back into the one before (blending: loaded), and blends the first into the
///   main texture; tone mapping then samples the main texture and writes the other one (as it
///   does alone for a grade, [`COLOR_GRADING`], and for the meshes over an HDR frame,
///   [`TONEMAPPING`]);
/// - auto exposure reads the light in compute passes and writes no attachment;
/// - each other effect samples the current main texture and writes the other one (SMAA in its
///   three passes: edges, blending weights, then the blend; its stencil is left out);
/// - the blit samples the last and writes the output, overwriting it where the camera is the
///   first on its target and blending over it (loaded) otherwise.
///
/// None if the graph does not compile (it always does for these formats).
pub(crate) fn price_post_processing(
    frame: PostProcessedFrame,
    effects: &[&str],
) -> Option<CompiledFrame> {
    let PostProcessedFrame {
        extent,
        main_format,
        output_format,
        first_on_target,
        bloom_mips,
        tone_maps,
    } = frame;
    let mut g = FrameGraph::new(extent);
    let written_by_tile_pass = ImportParams {
        contents_needed: true,
        needed_after_frame: false,
        clear_on_first_use: false,
        discard_on_last_use: false,
    };
    let mut main = g.import_attachment(
        "main_texture_a",
        AttachmentDesc::new(main_format),
        written_by_tile_pass,
    );
    let mut other = g.import_attachment(
        "main_texture_b",
        AttachmentDesc::new(main_format),
        ImportParams {
            contents_needed: false,
            ..written_by_tile_pass
        },
    );
    // Bevy's tone mapping runs after the effects that read the light (the bloom, the effect
    // stack, auto exposure), before the others.
    let mut tone_mapping_due = false;
    let tone_map = |g: &mut FrameGraph,
                    main: &mut AttachmentHandle,
                    other: &mut AttachmentHandle,
                    due: &mut bool|
     -> Option<()> {
        // Under `Tonemapping::None` nothing is written: the blit reads the main texture as
        // the effects before left it.
        if std::mem::take(due) && tone_maps {
            g.add_raster_pass("tonemapping")
                .sample(main)
                .color(other, Access::WriteAll, None)
                .finish()
                .ok()?;
            std::mem::swap(main, other);
        }
        Some(())
    };
    for effect in effects {
        if *effect == TRANSMISSION {
            // No pass: the frame is in the main texture for the blit.
            continue;
        }
        if TONE_MAPPED_AFTER.contains(effect) {
            if *effect == BLOOM {
                price_bloom(&mut g, &mut main, &bloom_mips)?;
            }
            tone_mapping_due = true;
            continue;
        }
        if *effect == AUTO_EXPOSURE {
            // Compute passes that read the light and write no attachment; the tone mapping
            // after them applies the exposure.
            g.add_compute_pass("auto_exposure")
                .read(&main)
                .side_effects()
                .finish()
                .ok()?;
            continue;
        }
        if *effect != EFFECT_STACK {
            tone_map(&mut g, &mut main, &mut other, &mut tone_mapping_due)?;
        }
        if *effect == SMAA {
            let mut edges =
                g.create_attachment("smaa_edges", AttachmentDesc::new(Format::Rg8Unorm));
            let mut weights =
                g.create_attachment("smaa_weights", AttachmentDesc::new(Format::Rgba8Unorm));
            g.add_raster_pass("smaa edge detection")
                .sample(&main)
                .color(&mut edges, Access::Write, Some(ClearValue::BLACK))
                .finish()
                .ok()?;
            g.add_raster_pass("smaa blending weights")
                .sample(&edges)
                .color(&mut weights, Access::Write, Some(ClearValue::BLACK))
                .finish()
                .ok()?;
            g.add_raster_pass("smaa neighborhood blending")
                .sample(&main)
                .sample(&weights)
                .color(&mut other, Access::WriteAll, None)
                .finish()
                .ok()?;
        } else {
            g.add_raster_pass(effect)
                .sample(&main)
                .color(&mut other, Access::WriteAll, None)
                .finish()
                .ok()?;
        }
        std::mem::swap(&mut main, &mut other);
    }
    tone_map(&mut g, &mut main, &mut other, &mut tone_mapping_due)?;
    let mut output = g.import_attachment(
        names::OUTPUT,
        AttachmentDesc::new(output_format),
        ImportParams {
            contents_needed: !first_on_target,
            needed_after_frame: true,
            clear_on_first_use: false,
            discard_on_last_use: false,
        },
    );
    let blit = if first_on_target {
        Access::WriteAll
    } else {
        Access::ReadWrite
    };
    g.add_raster_pass("upscaling")
        .sample(&main)
        .color(&mut output, blit, None)
        .finish()
        .ok()?;
    compile_stock_bevy(&g, &DeviceCaps::desktop()).ok()
}

/// Bevy's bloom over `main` (bevy_post_process 0.19.1 `bloom`): the first downsample samples
/// the main texture into the first mip (cleared), each next downsample the last mip into the
/// next, each upsample blends a mip into the one before it (loaded), and the final upsample
/// blends the first mip into the main texture.
fn price_bloom(
    g: &mut FrameGraph,
    main: &mut AttachmentHandle,
    mip_extents: &[Extent],
) -> Option<()> {
    let mut mips: Vec<_> = mip_extents
        .iter()
        .enumerate()
        .map(|(level, extent)| {
            g.create_attachment(
                &format!("bloom_mip_{level}"),
                AttachmentDesc::new(BLOOM_MIP_FORMAT).with_size(Size::Absolute {
                    width: extent.width,
                    height: extent.height,
                }),
            )
        })
        .collect();
    let first = mips.first_mut()?;
    g.add_raster_pass("bloom downsampling first")
        .sample(main)
        .color(first, Access::Write, Some(ClearValue::BLACK))
        .finish()
        .ok()?;
    for level in 1..mips.len() {
        let (before, from_level) = mips.split_at_mut(level);
        g.add_raster_pass(&format!("bloom downsampling {level}"))
            .sample(&before[level - 1])
            .color(&mut from_level[0], Access::Write, Some(ClearValue::BLACK))
            .finish()
            .ok()?;
    }
    for level in (1..mips.len()).rev() {
        let (before, from_level) = mips.split_at_mut(level);
        g.add_raster_pass(&format!("bloom upsampling {}", level - 1))
            .sample(&from_level[0])
            .color(&mut before[level - 1], Access::ReadWrite, None)
            .finish()
            .ok()?;
    }
    g.add_raster_pass("bloom upsampling final")
        .sample(&mips[0])
        .color(main, Access::ReadWrite, None)
        .finish()
        .ok()?;
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_run_in_core3ds_order_and_only_where_drawn() {
        let all = [
            COLOR_GRADING,
            TONEMAPPING,
            TRANSMISSION,
            BLOOM,
            EFFECT_STACK,
            FXAA,
            SMAA,
            CAS,
        ];
        let every = CameraEffects {
            bloom: true,
            effect_stack: true,
            hdr: true,
            auto_exposure: true,
            grading: true,
            drawn_over_hdr: true,
            transmission: true,
            fxaa: true,
            smaa: true,
            cas: true,
        };
        assert_eq!(
            effects_of(every, &all),
            [BLOOM, EFFECT_STACK, FXAA, SMAA, CAS]
        );
        let cas = CameraEffects {
            cas: true,
            ..default()
        };
        assert_eq!(effects_of(cas, &all), [CAS]);
        assert!(effects_of(CameraEffects::default(), &all).is_empty());
        // An effect whose plugin the app lacks is not run after the pass (it falls back).
        assert_eq!(effects_of(every, &[CAS, BLOOM]), [BLOOM, CAS]);
        // A grade is Bevy's tone mapping, named only where no bloom is followed by it.
        let graded_fxaa = CameraEffects {
            grading: true,
            fxaa: true,
            ..default()
        };
        assert_eq!(effects_of(graded_fxaa, &all), [COLOR_GRADING, FXAA]);
        assert_eq!(
            effects_of(every, &[COLOR_GRADING, CAS]),
            [COLOR_GRADING, CAS]
        );
        // Meshes over an HDR frame: Bevy's tone mapping, unless a bloom or a grade runs it.
        let meshes = CameraEffects {
            drawn_over_hdr: true,
            ..default()
        };
        assert_eq!(effects_of(meshes, &all), [TONEMAPPING]);
        assert_eq!(effects_of(every, &[TONEMAPPING, FXAA]), [TONEMAPPING, FXAA]);
        assert!(effects_of(meshes, &[COLOR_GRADING]).is_empty());
        // Transmission needs the frame in the main texture: named only where nothing else
        // routes it there.
        let glass = CameraEffects {
            transmission: true,
            ..default()
        };
        assert_eq!(effects_of(glass, &all), [TRANSMISSION]);
        let glass_fxaa = CameraEffects {
            fxaa: true,
            ..glass
        };
        assert_eq!(effects_of(glass_fxaa, &all), [FXAA]);
        let glass_hdr = CameraEffects {
            drawn_over_hdr: true,
            ..glass
        };
        assert_eq!(effects_of(glass_hdr, &all), [TONEMAPPING]);
    }

    #[test]
    fn the_effect_stack_is_tone_mapped_by_bevy_only_on_hdr_cameras() {
        let all = [COLOR_GRADING, TONEMAPPING, BLOOM, EFFECT_STACK, FXAA];
        let ldr = CameraEffects {
            effect_stack: true,
            ..default()
        };
        // An LDR camera's stack reads the tone-mapped frame: nothing follows it.
        assert_eq!(effects_of(ldr, &all), [EFFECT_STACK]);
        assert!(!tone_mapped_by_bevy(&effects_of(ldr, &all)));
        // An HDR camera's reads the light: Bevy's tone mapping follows, named once.
        let hdr = CameraEffects { hdr: true, ..ldr };
        assert_eq!(effects_of(hdr, &all), [EFFECT_STACK, TONEMAPPING]);
        assert!(tone_mapped_by_bevy(&effects_of(hdr, &all)));
        let bloomed = CameraEffects { bloom: true, ..hdr };
        assert_eq!(effects_of(bloomed, &all), [BLOOM, EFFECT_STACK]);
        let graded = CameraEffects {
            grading: true,
            ..hdr
        };
        assert_eq!(effects_of(graded, &all), [EFFECT_STACK, COLOR_GRADING]);
        // Without `EffectStackPlugin` the camera falls back: nothing is run for it.
        assert!(effects_of(hdr, &[COLOR_GRADING, TONEMAPPING]).is_empty());
    }

    #[test]
    fn auto_exposure_meters_hdr_light_before_bevys_tone_mapping() {
        let all = [
            COLOR_GRADING,
            TONEMAPPING,
            BLOOM,
            EFFECT_STACK,
            AUTO_EXPOSURE,
            FXAA,
        ];
        let hdr = CameraEffects {
            auto_exposure: true,
            hdr: true,
            ..default()
        };
        // Bevy's tone mapping applies the exposure: it follows, named once.
        assert_eq!(effects_of(hdr, &all), [AUTO_EXPOSURE, TONEMAPPING]);
        assert!(tone_mapped_by_bevy(&effects_of(hdr, &all)));
        let everything = CameraEffects {
            bloom: true,
            effect_stack: true,
            fxaa: true,
            ..hdr
        };
        assert_eq!(
            effects_of(everything, &all),
            [BLOOM, EFFECT_STACK, AUTO_EXPOSURE, FXAA]
        );
        // An LDR camera is not metered (Bevy's tone mapping does not run after its pass).
        let ldr = CameraEffects { hdr: false, ..hdr };
        assert!(effects_of(ldr, &all).is_empty());
        // Without `AutoExposurePlugin` the camera falls back: nothing is run for it.
        assert!(effects_of(hdr, &[COLOR_GRADING, TONEMAPPING]).is_empty());

        // Priced: a compute pass that reads the light, then the tone mapping and the blit.
        let frame = || PostProcessedFrame {
            extent: Extent::new(100, 100),
            main_format: Format::Rgba16Float,
            output_format: Format::Bgra8Srgb,
            first_on_target: true,
            bloom_mips: Vec::new(),
            tone_maps: true,
        };
        let priced =
            price_post_processing(frame(), &[AUTO_EXPOSURE, TONEMAPPING]).expect("compiles");
        let passes: Vec<&str> = priced
            .native_passes
            .iter()
            .map(|pass| pass.name.as_str())
            .collect();
        assert_eq!(passes, ["auto_exposure", "tonemapping", "upscaling"]);
        let without = price_post_processing(frame(), &[TONEMAPPING]).expect("compiles");
        // It loads and stores nothing more: it reads the light once (100 x 100 x 8 bytes).
        let (with, without) = (priced.cost.total, without.cost.total);
        assert_eq!(
            (with.loaded, with.stored, with.written),
            (without.loaded, without.stored, without.written)
        );
        assert_eq!(with.sampled - without.sampled, 100 * 100 * 8);
    }

    #[test]
    fn the_effect_stack_runs_before_bevys_tone_mapping() {
        let frame = PostProcessedFrame {
            extent: Extent::new(100, 100),
            main_format: Format::Rgba16Float,
            output_format: Format::Bgra8Srgb,
            first_on_target: true,
            bloom_mips: vec![Extent::new(40, 20), Extent::new(20, 10)],
            tone_maps: true,
        };
        let names = |effects: &[&str], frame: PostProcessedFrame| -> Vec<String> {
            let priced = price_post_processing(frame, effects).expect("compiles");
            priced
                .native_passes
                .iter()
                .map(|pass| pass.name.clone())
                .filter(|name| !name.starts_with("bloom"))
                .collect()
        };
        let same = || PostProcessedFrame {
            bloom_mips: frame.bloom_mips.clone(),
            ..frame
        };
        assert_eq!(
            names(&[EFFECT_STACK, TONEMAPPING, FXAA], same()),
            [EFFECT_STACK, "tonemapping", FXAA, "upscaling"]
        );
        assert_eq!(
            names(&[BLOOM, EFFECT_STACK, FXAA], same()),
            [EFFECT_STACK, "tonemapping", FXAA, "upscaling"]
        );
        assert_eq!(names(&[EFFECT_STACK], same()), [EFFECT_STACK, "upscaling"]);
        assert_eq!(
            names(&[COLOR_GRADING, FXAA], same()),
            ["tonemapping", FXAA, "upscaling"]
        );
    }

    #[test]
    fn transmission_alone_prices_only_the_blit() {
        let frame = PostProcessedFrame {
            extent: Extent::new(100, 100),
            main_format: Format::Rgba8Srgb,
            output_format: Format::Bgra8Srgb,
            first_on_target: true,
            bloom_mips: Vec::new(),
            tone_maps: true,
        };
        let priced = price_post_processing(frame, &[TRANSMISSION]).unwrap();
        assert_eq!(priced.render_pass_count(), 1, "{}", priced.describe());
    }

    #[test]
    fn bevy_grades_hdr_cameras_beyond_exposure_and_saturation() {
        let graded = |grading: &ColorGrading| bevy_grades_hdr_camera(true, Some(grading));
        assert!(!graded(&ColorGrading::default()));
        assert!(!bevy_grades_hdr_camera(true, None));
        // The tonemap subpass applies these two, as Bevy's in-shader tone mapping does.
        let mut exposed = ColorGrading::default();
        exposed.global.exposure = 0.5;
        exposed.global.post_saturation = 1.3;
        assert!(!graded(&exposed));
        // Bevy's flags compare the sections, not the midtones' range.
        let mut range = ColorGrading::default();
        range.global.midtones_range = 0.1..0.9;
        assert!(!graded(&range));
        let mut warmer = ColorGrading::default();
        warmer.global.temperature = 0.3;
        assert!(graded(&warmer));
        let mut hue = ColorGrading::default();
        hue.global.hue = 0.2;
        assert!(graded(&hue));
        let mut contrast = ColorGrading::default();
        contrast.shadows.contrast = 1.2;
        assert!(graded(&contrast));
        // An LDR camera: Bevy's in-shader tone mapping applies none of them.
        assert!(!bevy_grades_hdr_camera(false, Some(&contrast)));
    }

    #[cfg(feature = "anti_alias")]
    #[test]
    fn anti_aliasing_runs_while_enabled() {
        let fxaa = Fxaa::default();
        let cas = ContrastAdaptiveSharpening {
            enabled: true,
            ..default()
        };
        let smaa = Smaa::default();
        let on = anti_aliasing(Some(&fxaa), Some(&smaa), Some(&cas));
        assert!(on.fxaa && on.smaa && on.cas && !on.bloom);
        let off = Fxaa {
            enabled: false,
            ..default()
        };
        assert_eq!(
            anti_aliasing(Some(&off), None, None),
            CameraEffects::default()
        );
        let weak = ContrastAdaptiveSharpening {
            enabled: true,
            sharpening_strength: 0.0,
            ..default()
        };
        assert_eq!(
            anti_aliasing(None, None, Some(&weak)),
            CameraEffects::default()
        );
    }

    #[cfg(feature = "bloom")]
    #[test]
    fn bloom_runs_with_some_intensity_on_hdr_cameras() {
        assert!(blooms(&Bloom::NATURAL, true));
        // Bevy's `bloom` draws nothing on an LDR camera, or at no intensity: the tile pass
        // tone maps those itself.
        assert!(!blooms(&Bloom::NATURAL, false));
        let none = Bloom {
            intensity: 0.0,
            ..Bloom::NATURAL
        };
        assert!(!blooms(&none, true));
    }

    #[test]
    fn the_bloom_mips_are_bevys() {
        // 1080p: the first mip is 512 high, eight mips halving from there.
        let mips = bloom_mip_extents(UVec2::new(1920, 1080), 512);
        assert_eq!(mips.len(), 8);
        assert_eq!(mips[0], Extent::new(910, 512));
        assert_eq!(mips[1], Extent::new(455, 256));
        assert_eq!(mips[7], Extent::new(7, 4));
        // A viewport lower than the first mip: scaled up, as Bevy does.
        assert_eq!(
            bloom_mip_extents(UVec2::new(256, 160), 512)[0],
            Extent::new(819, 512)
        );
        // Degenerate settings do not panic.
        assert!(bloom_mip_extents(UVec2::new(100, 100), 0).is_empty());
        assert_eq!(
            bloom_mip_extents(UVec2::new(100, 0), 512)[0],
            Extent::new(1, 1)
        );
    }

    /// The bytes the post-processing of a 100x100 frame moves.
    fn bytes(effects: &[&str], first_on_target: bool, bloom_mips: Vec<Extent>) -> u64 {
        bytes_tone_mapped(effects, first_on_target, bloom_mips, true)
    }

    /// [`bytes`], with Bevy's tone mapping drawing (`tone_maps`) or not (`Tonemapping::None`).
    fn bytes_tone_mapped(
        effects: &[&str],
        first_on_target: bool,
        bloom_mips: Vec<Extent>,
        tone_maps: bool,
    ) -> u64 {
        let frame = PostProcessedFrame {
            extent: Extent::new(100, 100),
            main_format: Format::Rgba8Srgb,
            output_format: Format::Bgra8Srgb,
            first_on_target,
            bloom_mips,
            tone_maps,
        };
        price_post_processing(frame, effects)
            .expect("compiles")
            .cost
            .bytes()
    }

    #[test]
    fn each_effect_reads_and_writes_the_main_texture_and_the_blit_writes_the_output() {
        let pixels = 100 * 100;
        // The blit alone: the main texture read, the output written.
        assert_eq!(bytes(&[], true, vec![]), 2 * 4 * pixels);
        // FXAA: one more read and one more write of the main texture.
        assert_eq!(bytes(&[FXAA], true, vec![]), 4 * 4 * pixels);
        assert_eq!(bytes(&[FXAA, CAS], true, vec![]), 6 * 4 * pixels);
        // A later camera on the target blends its blit over the output: loaded too.
        assert_eq!(bytes(&[FXAA], false, vec![]), 5 * 4 * pixels);
        // SMAA: edges (2 bytes) written and read, weights (4 bytes) written and read, the main
        // texture read twice and the other written.
        assert_eq!(
            bytes(&[SMAA], true, vec![]),
            2 * 4 * pixels + (2 + 2 + 4 + 4 + 4 + 4 + 4) * pixels
        );
    }

    #[test]
    fn bloom_moves_its_mips_and_the_main_texture_then_tone_mapping_writes_the_other() {
        let pixels = 100 * 100;
        let mips = vec![Extent::new(40, 20), Extent::new(20, 10), Extent::new(10, 5)];
        let mip_bytes: Vec<u64> = mips.iter().map(|mip| 4 * mip.pixels()).collect();
        // Each mip is written (cleared) by its downsample; every mip but the last is read by
        // the next downsample, and loaded, blended and stored by the upsample into it; every
        // mip but the first is read by the upsample out of it; the final upsample reads the
        // first mip and loads, blends and stores the main texture.
        let bloom = 4 * pixels // the first downsample reads the main texture
            + mip_bytes.iter().sum::<u64>()
            + mip_bytes[0] + mip_bytes[1]
            + 2 * (mip_bytes[0] + mip_bytes[1])
            + mip_bytes[2] + mip_bytes[1]
            + mip_bytes[0] + 2 * 4 * pixels;
        let tone_mapping = 2 * 4 * pixels;
        let blit = 2 * 4 * pixels;
        assert_eq!(
            bytes(&[BLOOM], true, mips.clone()),
            bloom + tone_mapping + blit
        );
        // Bloom, then FXAA after the tone mapping.
        assert_eq!(
            bytes(&[BLOOM, FXAA], true, mips.clone()),
            bloom + tone_mapping + 2 * 4 * pixels + blit
        );
        // A grade alone: Bevy's tone mapping and the blit.
        assert_eq!(bytes(&[COLOR_GRADING], true, vec![]), tone_mapping + blit);
        // The meshes over an HDR frame: the same.
        assert_eq!(bytes(&[TONEMAPPING], true, vec![]), tone_mapping + blit);
        // Under `Tonemapping::None` Bevy's tone mapping draws nothing: the blit reads the light
        // as the tile pass (and the bloom) left it.
        assert_eq!(
            bytes_tone_mapped(&[COLOR_GRADING], true, vec![], false),
            blit
        );
        assert_eq!(
            bytes_tone_mapped(&[BLOOM, FXAA], true, mips.clone(), false),
            bloom + 2 * 4 * pixels + blit
        );
    }
}
