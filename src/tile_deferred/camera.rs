//! The public camera API of the tile path: the component that opts a camera in, its settings,
//! and the camera schedule that replaces `Core3d` for it. The bottom layer: it imports nothing
//! else of `tile_deferred`.

use crate::tiers::TierSetting;
use bevy::{ecs::schedule::ScheduleLabel, prelude::*, render::extract_component::ExtractComponent};

/// Put this on a camera to render it with the tile-deferred path.
///
/// It requires `Camera3d` (inserted with its defaults if the camera has none): Bevy still
/// prepares the view, lights and visibility of a tile camera. Cameras without `TileDeferred` keep Bevy's `Core3d` renderer; cameras
/// with it fall back to `Core3d` (with a logged reason) where the device cannot run the tile
/// path, and, under [`TierSetting::Auto`], while they see something the tile path cannot draw
/// (listed on the camera as a [`TileMissing`](crate::TileMissing); with a forced tier it is
/// logged and left out of the frame).
#[derive(Component, Clone, Debug, PartialEq, Reflect, ExtractComponent)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[extract_component_filter(With<Camera>)]
#[reflect(Component, Clone, Debug, Default, PartialEq)]
#[require(Camera3d)]
pub struct TileDeferred {
    /// Merge the frame's passes into subpasses of one render pass (the point of this crate).
    /// Off renders the tile tier as the [`RenderTier::Unmerged`](crate::tiers::RenderTier)
    /// debug tier: separate render passes, the G-buffer stored and sampled, for A/B comparison.
    pub merge_subpasses: bool,
    /// With `Msaa` above `Off`: which samples the lighting shades.
    pub msaa_shading: MsaaShading,
    /// What the camera shows: the lit frame, or one of the debug views.
    pub debug_view: TileDebugView,
    /// Which tier to render with: the best the device supports, or a forced one.
    pub tier: TierSetting,
    /// Draw bevy_ui (feature `ui`) and egui (the inspector overlay, feature `inspector`) inside
    /// the tile render pass, as its last subpass, where it can: the output is then stored once,
    /// as on frames without UI. Off: Bevy's UI pass and bevy_egui's pass draw them after the
    /// tile pass, which loads and stores the output again (A/B comparison).
    pub ui_in_pass: bool,
    /// Record the G-buffer's and transparent pass's mesh draws as indirect draws where the
    /// device can (`drawIndirectFirstInstance`): the draws that bind the same pipeline,
    /// material and mesh buffers one after the other are then one call where the device has
    /// `multiDrawIndirect`. Off: one `vkCmdDraw*` per draw (A/B comparison).
    /// [`TileViewReport::mesh_draws`](crate::TileViewReport::mesh_draws) says which was used.
    pub indirect_draws: bool,
}

impl Default for TileDeferred {
    fn default() -> Self {
        Self {
            merge_subpasses: true,
            msaa_shading: MsaaShading::EdgeSelective,
            debug_view: TileDebugView::None,
            tier: TierSetting::Auto,
            ui_in_pass: true,
            indirect_draws: true,
        }
    }
}

/// How a multisampled tile camera shades its samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, Default, PartialEq, Hash)]
pub enum MsaaShading {
    /// Interior pixels are lit once, geometric edges once per sample (Lauritzen's test on the
    /// G-buffer samples): MSAA quality for about the cost of no MSAA.
    #[default]
    EdgeSelective,
    /// Every sample of every pixel is lit: the brute-force reference to compare against.
    EverySample,
}

/// What a tile camera shows instead of the lit frame, for debugging. Every view renders the same
/// passes with the same plan; only what the shaders write changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[reflect(Clone, Debug, Default, PartialEq, Hash)]
pub enum TileDebugView {
    /// The lit, tone-mapped frame.
    #[default]
    None,
    /// Base colour (linear albedo) from the G-buffer.
    Albedo,
    /// World-space normal, mapped from [-1, 1] to [0, 1] per channel.
    Normal,
    /// Perceptual roughness (red), metallic (green) and reflectance (blue).
    RoughnessMetallic,
    /// Distance to the camera: white at the camera, half grey at 10 units, darker beyond.
    Depth,
    /// The light accumulation (emissive, ambient and every light) without tone mapping.
    LightAccumulation,
    /// How many point and spot lights the pixel's light cluster holds (the lights the lighting
    /// pass loops over there): dark blue for none, then blue, cyan, green, yellow, red at 16 or
    /// more.
    LightCount,
    /// The lit frame with the pixels lit per sample (MSAA edges) tinted red.
    MsaaEdges,
    /// The lit frame with every attachment's undefined contents (what a `DONT_CARE` load or a
    /// transient attachment starts with) filled with a marker, magenta for colour
    /// ([`POISON_COLOR`](crate::tile_deferred::POISON_COLOR)): in a correct frame the marker never reaches the output, so any
    /// magenta shows a pass reading what nothing wrote, which a tiler would show as garbage.
    UndefinedPoison,
}

/// The marker [`TileDebugView::UndefinedPoison`] fills undefined colour contents with (linear
/// RGBA).
pub const POISON_COLOR: [f32; 4] = [1.0, 0.0, 1.0, 1.0];

/// The marker depth and stencil of [`TileDebugView::UndefinedPoison`]: between Bevy's near
/// (1.0) and far (0.0), so that a depth test against undefined depth passes and fails by
/// halves.
pub const POISON_DEPTH_STENCIL: (f32, u32) = (0.5, 0xA5);

impl TileDebugView {
    /// Every view, in menu order.
    pub const ALL: [Self; 9] = [
        Self::None,
        Self::Albedo,
        Self::Normal,
        Self::RoughnessMetallic,
        Self::Depth,
        Self::LightAccumulation,
        Self::LightCount,
        Self::MsaaEdges,
        Self::UndefinedPoison,
    ];

    /// The shaders' `DEBUG_VIEW_*` value (`shaders/common.glsl`); `MsaaEdges` is a flag instead.
    pub(crate) fn shader_value(self) -> u32 {
        match self {
            Self::None | Self::MsaaEdges | Self::UndefinedPoison => 0,
            Self::Albedo => 1,
            Self::Normal => 2,
            Self::RoughnessMetallic => 3,
            Self::Depth => 4,
            Self::LightAccumulation => 5,
            Self::LightCount => 6,
        }
    }

    /// The view replaces the lighting with a G-buffer value (no light is evaluated or
    /// assigned to clusters).
    pub(crate) fn replaces_lighting(self) -> bool {
        (1..=4).contains(&self.shader_value())
    }
}

impl std::fmt::Display for TileDebugView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "lit frame",
            Self::Albedo => "albedo",
            Self::Normal => "normal",
            Self::RoughnessMetallic => "roughness / metallic",
            Self::Depth => "depth",
            Self::LightAccumulation => "light accumulation",
            Self::LightCount => "light count heat map",
            Self::MsaaEdges => "MSAA edge mask",
            Self::UndefinedPoison => "undefined contents poisoned (magenta)",
        })
    }
}

/// The camera schedule of tile-deferred cameras (the crate's replacement for `Core3d`).
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TileDeferredGraph;

/// The camera schedules of a camera whose GPU time is being measured (an `Auto` camera on a GPU
/// that is not a tiler, timing both paths: `tiers::measure`): the tile schedule or `Core3d`
/// between two GPU timestamps.
#[derive(ScheduleLabel, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TimedCameraSchedule {
    /// [`TileDeferredGraph`], timed.
    Tile,
    /// Bevy's `Core3d`, timed.
    Core3d,
}

/// Whether a camera with this schedule renders with the tile path (timed or not).
pub(crate) fn is_tile_schedule(schedule: bevy::ecs::intern::Interned<dyn ScheduleLabel>) -> bool {
    schedule == TileDeferredGraph.intern() || schedule == TimedCameraSchedule::Tile.intern()
}

/// Render-world marker on a tile camera's view: a wgpu pass drawn after the tile pass loads the
/// camera's output this frame (an overlay blended over the tile frame, like the inspector's,
/// recorded in [`TileDeferredGraph`] after the tile pass).
///
/// The tile pass writes a window's swapchain image with raw Vulkan, which wgpu cannot see: for
/// wgpu the image acquired this frame was never written, and it zero-fills it before the first
/// wgpu pass that loads it, leaving that pass's drawing over black. Where this marker is on the
/// view (or a later camera draws to the same window), the tile pass records an empty wgpu pass
/// before its own that stores the image (loading nothing, drawing nothing), so that wgpu counts
/// it as written. Without the marker nothing is added. Image targets and screenshot frames
/// need nothing.
///
/// Insert it in the render world each frame such a pass will run (e.g. in
/// `RenderSystems::Prepare`): it lasts one frame (the crate takes it off every view in
/// `RenderSystems::Cleanup`), so that several overlays (bevy_ui with feature `ui`, the inspector)
/// can each ask for it without taking it from one another.
#[derive(Component, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Component, Clone, Debug, Default)]
pub struct TileOutputLoadedAfter;

/// On a tile camera (main world, set each frame after visibility): the meshes in its view whose
/// material the tile path does not draw itself (a custom `Material`, an `ExtendedMaterial`, or
/// a `StandardMaterial` with a feature the G-buffer has no room for: clearcoat, anisotropy,
/// a parallax depth map, a specular tint, transmission) and that Bevy's own material pipelines
/// draw over the tile frame after the tile pass, over the tile depth, as `Core3d` would draw
/// them (see `overlays::gizmos`; transmission in Bevy's transmissive pass). The tile path
/// leaves them out of its own passes. In entity order; absent when there are none. Where they cannot be drawn that way (on a tile GPU, for one),
/// they are listed in [`TileMissing`](crate::TileMissing) instead.
#[derive(Component, Clone, Debug, Default, PartialEq, Eq, Reflect)]
#[reflect(Component, Clone, Debug, Default, PartialEq)]
pub struct TileMaterialsOverTile {
    /// The meshes, in entity order.
    pub meshes: Vec<Entity>,
    /// Some of them have `StandardMaterial` transmission: Bevy draws those in its transmissive
    /// pass, which reads a copy of the frame, so Bevy draws them all into the camera's main
    /// texture, which the tile pass then writes (with MSAA, resolves).
    pub transmissive: bool,
}

/// Render world, on the view of a camera on the tile schedule with [`TileMaterialsOverTile`]
/// (set at extraction by `scene::bevy_phases`): Bevy keeps the view's opaque phases, holding
/// only those meshes, `overlays::gizmos` draws them after the tile pass, and the tile pass
/// leaves them out (`scene::draws`).
#[derive(Component, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MaterialsOverTileView {
    /// The main-world meshes, in entity order ([`TileMaterialsOverTile::meshes`]).
    meshes: Vec<Entity>,
    /// [`TileMaterialsOverTile::transmissive`].
    transmissive: bool,
}

impl MaterialsOverTileView {
    /// The view of a camera whose [`TileMaterialsOverTile`] lists `meshes` (in entity order),
    /// some drawn by Bevy's transmissive pass where `transmissive`.
    pub(crate) fn new(meshes: Vec<Entity>, transmissive: bool) -> Self {
        debug_assert!(meshes.is_sorted(), "in entity order");
        Self {
            meshes,
            transmissive,
        }
    }

    /// Whether some of the meshes are drawn by Bevy's transmissive pass.
    pub(crate) fn transmissive(&self) -> bool {
        self.transmissive
    }

    /// Whether Bevy draws `mesh` over the tile frame: the tile path does not.
    pub(crate) fn draws(&self, mesh: Entity) -> bool {
        self.meshes.binary_search(&mesh).is_ok()
    }

    /// The meshes, in entity order.
    pub(crate) fn meshes(&self) -> &[Entity] {
        &self.meshes
    }

    /// Whether the tile path draws a main-world mesh of this view itself: a `StandardMaterial`
    /// (by Bevy's `instances`) that the view does not list for Bevy to draw over the tile
    /// frame. The others in the view's phases are Bevy's to draw over the tile frame.
    pub(crate) fn drawn_by_tile_path(
        &self,
        instances: &bevy::pbr::RenderMaterialInstances,
        mesh: bevy::render::sync_world::MainEntity,
    ) -> bool {
        !self.draws(mesh.id())
            && instances.instances.get(&mesh).is_some_and(|instance| {
                instance.asset_id.type_id() == std::any::TypeId::of::<StandardMaterial>()
            })
    }
}

/// Render world, on a tile view (set by `overlays::gizmos`, read by the tile pass): this frame's `Transparent3d` phase holds draws of another
/// plugin that the tile path draws after its pass (the pass exports its depth for them). Taken
/// off every view at the end of the frame.
#[derive(Component)]
pub(crate) struct GizmosOverTile;

/// Render world, on a tile view (set each frame at extraction by `overlays::post_process`,
/// read by the tile pass): Bevy's post-processing runs after the tile pass this frame, so the
/// pass writes the camera's main texture, which Bevy's effects read and its upscaling blits to
/// the output.
#[derive(Component, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PostProcessedAfterTile {
    /// The effects, in the order they run.
    pub(crate) effects: Vec<&'static str>,
    /// Bevy's own tone mapping runs after the pass, as in `Core3d`: after an effect that reads
    /// the HDR light (bloom), or to grade an HDR camera beyond what the tonemap subpass applies.
    /// The tile pass then stores the camera's light as it is.
    pub(crate) tone_mapped_by_bevy: bool,
}

/// Render world, on the view of an active tile camera with effects Bevy runs after the tile
/// pass, on whichever schedule it renders this frame (set each frame at extraction by
/// `overlays::post_process`, read by `overlays::gizmos`): what a view on the tile schedule
/// would get as [`PostProcessedAfterTile`], so that whether Bevy's draws over the tile frame
/// can be drawn is decided alike on a camera that fell back.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TileCameraEffects {
    /// As [`PostProcessedAfterTile::tone_mapped_by_bevy`].
    pub(crate) tone_mapped_by_bevy: bool,
}

/// Render world, on a tile view with [`GizmosOverTile`] whose frame Bevy post-processes (set by
/// `overlays::gizmos`): Bevy's draws over the tile frame go into the camera's main texture,
/// before the effects, as `Core3d` draws them, instead of over the output after the blit.
#[derive(Component)]
pub(crate) struct DrawsIntoMainTexture;

/// The stages of [`TileDeferredGraph`], in order: order a system of your own that draws over a
/// tile camera `.after(TileDeferredSystems::TilePass)`.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileDeferredSystems {
    /// Bevy's directional shadow cascades of the camera (and the GPU mesh preprocessing they
    /// draw from), before the tile pass samples them.
    Shadows,
    /// The tile pass: the whole tile frame, in one Vulkan render pass.
    TilePass,
    /// Bevy's own post-processing of the tile frame (bloom and the tone mapping after it,
    /// feature `bloom`; FXAA, SMAA, contrast-adaptive sharpening, feature `anti_alias`) and its
    /// blit to the camera's output, on cameras that have them: the tile pass then writes the
    /// camera's main texture instead of its output.
    PostProcess,
    /// What Bevy draws over the tile frame with wgpu: gizmos, bevy_ui, the inspector.
    Overlays,
}
