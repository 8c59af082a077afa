//! The tile path's shaders, listed once in [`VARIANTS`].
//!
//! One GLSL body per stage of a pass (the `.vert`, `.frag` and `.glsl` files beside this one),
//! compiled per [`Variant`] with `-D` defines into the SPIR-V checked in under `spirv/`. The
//! defines cannot be specialization constants: they change declarations (`subpassInput` against
//! `subpassInputMS` or `sampler2D[MS]`, attachment_read.glsl), and a static use of `gl_SampleID`
//! forces per-sample shading (gbuffer_msaa.glsl). Values that do not change declarations are
//! specialization constants (gbuffer.frag).
//!
//! The SPIR-V is checked in, not compiled at build time, so that users, docs.rs and Android cross
//! builds need no GLSL compiler. The test `spirv_matches_glsl_sources` compiles every row with
//! `glslangValidator` (Debian: `glslang-tools`) and fails on stale SPIR-V; after editing a shader,
//! rewrite what changed with
//!
//! ```text
//! BEVY_TILE_DEFERRED_WRITE_SPIRV=1 cargo test --lib spirv_matches_glsl_sources
//! ```
//!
//! To add a variant, add its row to [`VARIANTS`], create its (empty) `spirv/<name>.spv` so that
//! the crate builds, and run the command above.
//!
//! One rewrite happens when a module is created: the shadow lookups are made explicit-level
//! lookups at level 0, as Bevy's are (explicit_lod.rs says why GLSL cannot say so itself).

mod explicit_lod;
mod layouts;

pub(crate) use layouts::TileLayouts;

use crate::vulkan::VulkanContext;
use ash::vk;
use bevy::platform::collections::HashMap;
use std::ffi::CStr;

/// `row`'s SPIR-V as the device gets it: its depth-compare lookups at level of detail 0
/// (explicit_lod.rs). A module the rewrite refuses keeps glslang's implicit lookups, which sample
/// the same single-level maps, and says so in the log.
fn device_spirv(row: &ShaderVariant) -> Result<Vec<u32>, vk::Result> {
    let words = ash::util::read_spv(&mut std::io::Cursor::new(row.spirv))
        .map_err(|_| vk::Result::ERROR_INVALID_SHADER_NV)?;
    match explicit_lod::explicit_lod_depth_compares(&words) {
        Ok((rewritten, _)) => Ok(rewritten),
        Err(error) => {
            bevy::log::warn!(
                "bevy_tile_deferred: {}: {error}; its shadow lookups keep an implicit level of \
                 detail",
                row.name
            );
            Ok(words)
        }
    }
}

/// The entry point of every body.
const ENTRY: &CStr = c"main";

/// A shader body: one stage of one kind of draw, before its variant's defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum ShaderId {
    /// `gbuffer.vert`: the mesh vertex stage of the G-buffer subpass.
    GbufferVert,
    /// `gbuffer.frag`: the material, written to the G-buffer.
    GbufferFrag,
    /// `forward.frag`: a transparent mesh's material, lit, fogged and tone mapped per fragment
    /// (the transparent pass, drawn with `gbuffer.vert`).
    ForwardFrag,
    /// `fullscreen.vert`: the full-screen triangle of the lighting, edge classification and
    /// tonemap draws.
    FullscreenVert,
    /// `lighting.glsl`: ambient, directional and the cluster's point and spot lights (and, in
    /// plans without a tonemap subpass, the tone mapping).
    Lighting,
    /// `msaa_classify.glsl`: the MSAA edge classification.
    MsaaClassify,
    /// `tonemap_pass.glsl`: tone mapping into the output.
    Tonemap,
    /// `depth_export.frag`: the tile depth into Bevy's depth texture, for the gizmos.
    DepthExport,
    /// `light_finish.frag`: the skybox and the fog brought into the light before an HDR
    /// camera's transparent pass (specialised by kind).
    LightFinish,
    /// `cluster_assign.comp`: the point and spot lights assigned to the view's clusters (a
    /// compute dispatch before the render pass).
    ClusterAssign,
    /// `ui.vert`: bevy_ui's nodes and glyphs (Bevy's `UiVertex`), in the `ui` subpass.
    UiVert,
    /// `ui.frag`: bevy_ui's node shader (`ui.wgsl`), specialised for `UiAntiAlias`.
    UiFrag,
    /// `box_shadow.frag`: bevy_ui's box shadow shader (`box_shadow.wgsl`), drawn with `ui.vert`
    /// and specialised for `BoxShadowSamples`.
    BoxShadowFrag,
    /// `ui_texture_slice.frag`: bevy_ui's sliced and tiled images (`ui_texture_slice.wgsl`),
    /// drawn with `ui.vert`.
    UiTextureSliceFrag,
    /// `egui.frag`: egui's meshes (bevy_egui's `egui.wgsl`), drawn with `ui.vert` (the
    /// inspector overlay in the `ui` subpass).
    EguiFrag,
    /// `ui_gradient.frag`: bevy_ui's gradients (`gradient.wgsl`), drawn with `ui.vert` and
    /// specialised for `UiAntiAlias`.
    UiGradientFrag,
}

impl ShaderId {
    /// The GLSL source compiled for every variant, in `src/tile_deferred/gpu/shaders/`.
    #[cfg(test)]
    const fn body(self) -> &'static str {
        match self {
            Self::GbufferVert => "gbuffer.vert",
            Self::GbufferFrag => "gbuffer.frag",
            Self::ForwardFrag => "forward.frag",
            Self::FullscreenVert => "fullscreen.vert",
            Self::Lighting => "lighting.glsl",
            Self::MsaaClassify => "msaa_classify.glsl",
            Self::Tonemap => "tonemap_pass.glsl",
            Self::DepthExport => "depth_export.frag",
            Self::LightFinish => "light_finish.frag",
            Self::ClusterAssign => "cluster_assign.comp",
            Self::UiVert => "ui.vert",
            Self::UiFrag => "ui.frag",
            Self::BoxShadowFrag => "box_shadow.frag",
            Self::UiTextureSliceFrag => "ui_texture_slice.frag",
            Self::EguiFrag => "egui.frag",
            Self::UiGradientFrag => "ui_gradient.frag",
        }
    }

    /// The pipeline stage the body is written for.
    pub const fn stage(self) -> vk::ShaderStageFlags {
        match self {
            Self::GbufferVert | Self::FullscreenVert | Self::UiVert => vk::ShaderStageFlags::VERTEX,
            Self::GbufferFrag
            | Self::ForwardFrag
            | Self::Lighting
            | Self::MsaaClassify
            | Self::Tonemap
            | Self::DepthExport
            | Self::LightFinish
            | Self::UiFrag
            | Self::BoxShadowFrag
            | Self::UiTextureSliceFrag
            | Self::EguiFrag
            | Self::UiGradientFrag => vk::ShaderStageFlags::FRAGMENT,
            Self::ClusterAssign => vk::ShaderStageFlags::COMPUTE,
        }
    }
}

/// Which side of the MSAA stencil split a lighting shader draws (see gbuffer_msaa.glsl).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Split {
    /// No split: every pixel (per-sample-index draws with MSAA).
    #[default]
    Off,
    /// `MSAA_STENCIL_PIXEL`: the interior pixels (stencil 0), shaded once at the pixel centre.
    Pixel,
    /// `MSAA_STENCIL_SAMPLE`: the edge pixels (stencil 1), shaded per sample.
    Sample,
}

/// The defines a body is compiled with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Variant {
    /// `MSAA`: the subpass runs at N samples and reads the earlier attachments per sample.
    pub msaa: bool,
    /// `SAMPLED_ATTACHMENTS`: the unmerged tier; the earlier passes' attachments are textures.
    pub sampled: bool,
    /// `MSAA_STENCIL_PIXEL` or `MSAA_STENCIL_SAMPLE`.
    pub split: Split,
    /// `TONEMAP_IN_LIGHTING`: the lighting subpass writes the tone-mapped output (plans without
    /// a tonemap subpass, see `plan::ViewFrameDesc::lighting_tonemaps`).
    pub tonemap: bool,
}

impl Variant {
    /// No defines: single-sample, input attachments (and the bodies with one variant only).
    pub const BASE: Self = Self {
        msaa: false,
        sampled: false,
        split: Split::Off,
        tonemap: false,
    };

    /// The `-D` defines of this variant, in the order the bodies test them.
    #[cfg(test)]
    fn defines(self) -> Vec<&'static str> {
        let split = match self.split {
            Split::Off => None,
            Split::Pixel => Some("MSAA_STENCIL_PIXEL"),
            Split::Sample => Some("MSAA_STENCIL_SAMPLE"),
        };
        [
            self.msaa.then_some("MSAA"),
            split,
            self.sampled.then_some("SAMPLED_ATTACHMENTS"),
            self.tonemap.then_some("TONEMAP_IN_LIGHTING"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// One shader module: a body compiled with a variant's defines.
pub(crate) struct ShaderVariant {
    pub id: ShaderId,
    pub variant: Variant,
    /// The module's name; its SPIR-V is `spirv/<name>.spv`.
    pub name: &'static str,
    pub spirv: &'static [u8],
}

macro_rules! variant {
    ($id:ident, $msaa:literal, $sampled:literal, $split:ident, $name:literal) => {
        variant!($id, $msaa, $sampled, $split, false, $name)
    };
    ($id:ident, $msaa:literal, $sampled:literal, $split:ident, tonemap, $name:literal) => {
        variant!($id, $msaa, $sampled, $split, true, $name)
    };
    ($id:ident, $msaa:literal, $sampled:literal, $split:ident, $tonemap:literal, $name:literal) => {
        ShaderVariant {
            id: ShaderId::$id,
            variant: Variant {
                msaa: $msaa,
                sampled: $sampled,
                split: Split::$split,
                tonemap: $tonemap,
            },
            name: $name,
            spirv: include_bytes!(concat!("spirv/", $name, ".spv")),
        }
    };
}

/// Every shader module of the tile path. Creation, destruction, [`TileShaders::get`] and the
/// staleness test all go through this list.
#[rustfmt::skip]
pub(crate) const VARIANTS: &[ShaderVariant] = &[
    //       body             msaa   sampled split   module name
    variant!(GbufferVert,     false, false,  Off,    "gbuffer.vert"),
    variant!(GbufferFrag,     false, false,  Off,    "gbuffer.frag"),
    variant!(GbufferFrag,     true,  false,  Off,    "gbuffer_coverage_ms.frag"),
    variant!(ForwardFrag,     false, false,  Off,    "forward.frag"),
    variant!(FullscreenVert,  false, false,  Off,    "fullscreen.vert"),
    variant!(Lighting,        false, false,  Off,    "lighting.frag"),
    variant!(Lighting,        false, true,   Off,    "lighting_sampled.frag"),
    variant!(Lighting,        true,  false,  Off,    "lighting_ms.frag"),
    variant!(Lighting,        true,  true,   Off,    "lighting_ms_sampled.frag"),
    variant!(Lighting,        true,  false,  Pixel,  "lighting_pixel_ms.frag"),
    variant!(Lighting,        true,  false,  Sample, "lighting_sample_ms.frag"),
    variant!(Lighting,        false, false,  Off,    tonemap, "lighting_tonemap.frag"),
    variant!(Lighting,        true,  false,  Pixel,  tonemap, "lighting_pixel_ms_tonemap.frag"),
    variant!(Lighting,        true,  false,  Sample, tonemap, "lighting_sample_ms_tonemap.frag"),
    variant!(MsaaClassify,    true,  false,  Off,    "msaa_classify.frag"),
    variant!(MsaaClassify,    true,  true,   Off,    "msaa_classify_sampled.frag"),
    variant!(Tonemap,         false, false,  Off,    "tonemap.frag"),
    variant!(Tonemap,         false, true,   Off,    "tonemap_sampled.frag"),
    variant!(Tonemap,         true,  false,  Off,    "tonemap_ms.frag"),
    variant!(Tonemap,         true,  true,   Off,    "tonemap_ms_sampled.frag"),
    variant!(DepthExport,     false, false,  Off,    "depth_export.frag"),
    variant!(DepthExport,     true,  false,  Off,    "depth_export_ms.frag"),
    variant!(LightFinish,     false, false,  Off,    "light_finish.frag"),
    variant!(LightFinish,     false, true,   Off,    "light_finish_sampled.frag"),
    variant!(LightFinish,     true,  false,  Off,    "light_finish_ms.frag"),
    variant!(LightFinish,     true,  true,   Off,    "light_finish_ms_sampled.frag"),
    variant!(ClusterAssign,   false, false,  Off,    "cluster_assign.comp"),
    variant!(UiVert,          false, false,  Off,    "ui.vert"),
    variant!(UiFrag,          false, false,  Off,    "ui.frag"),
    variant!(BoxShadowFrag,   false, false,  Off,    "box_shadow.frag"),
    variant!(UiTextureSliceFrag, false, false, Off,  "ui_texture_slice.frag"),
    variant!(EguiFrag,        false, false,  Off,    "egui.frag"),
    variant!(UiGradientFrag,  false, false,  Off,    "ui_gradient.frag"),
];

/// The shader modules of [`VARIANTS`], created once.
pub(crate) struct TileShaders {
    modules: HashMap<(ShaderId, Variant), vk::ShaderModule>,
}

impl TileShaders {
    /// Creates a module per row of [`VARIANTS`]; on an error, destroys those created so far.
    pub fn new(context: &VulkanContext) -> Result<Self, vk::Result> {
        let mut shaders = Self {
            modules: HashMap::with_capacity(VARIANTS.len()),
        };
        for row in VARIANTS {
            match device_spirv(row).and_then(|words| context.create_shader_module(&words)) {
                Ok(module) => {
                    shaders.modules.insert((row.id, row.variant), module);
                }
                Err(error) => {
                    shaders.destroy(context);
                    return Err(error);
                }
            }
        }
        Ok(shaders)
    }

    /// The module of `id` compiled as `variant`.
    ///
    /// # Panics
    /// When [`VARIANTS`] has no such row (the selection asked for a variant nobody compiled).
    pub fn get(&self, id: ShaderId, variant: Variant) -> vk::ShaderModule {
        *self
            .modules
            .get(&(id, variant))
            .unwrap_or_else(|| panic!("no shader variant {id:?} {variant:?} in VARIANTS"))
    }

    /// The pipeline stage running `id` compiled as `variant`.
    pub fn stage(
        &self,
        id: ShaderId,
        variant: Variant,
    ) -> vk::PipelineShaderStageCreateInfo<'static> {
        vk::PipelineShaderStageCreateInfo::default()
            .stage(id.stage())
            .module(self.get(id, variant))
            .name(ENTRY)
    }

    /// Destroys the modules (pipelines keep their own copy of the code).
    pub fn destroy(self, context: &VulkanContext) {
        for module in self.modules.into_values() {
            context.destroy_shader_module(module);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{collections::BTreeSet, path::Path, process::Command};

    /// Set to `1` to rewrite stale SPIR-V instead of failing.
    const WRITE_SPIRV: &str = "BEVY_TILE_DEFERRED_WRITE_SPIRV";

    #[test]
    fn variants_are_listed_once() {
        let keys: BTreeSet<_> = VARIANTS.iter().map(|v| (v.id, v.variant)).collect();
        assert_eq!(
            keys.len(),
            VARIANTS.len(),
            "a (body, variant) is listed twice"
        );
        let names: BTreeSet<_> = VARIANTS.iter().map(|v| v.name).collect();
        assert_eq!(names.len(), VARIANTS.len(), "a module name is listed twice");
        for v in VARIANTS {
            let extension = match v.id.stage() {
                vk::ShaderStageFlags::VERTEX => ".vert",
                vk::ShaderStageFlags::COMPUTE => ".comp",
                _ => ".frag",
            };
            assert!(v.name.ends_with(extension), "{}: {:?}", v.name, v.id);
        }
    }

    /// The checked-in SPIR-V is what `glslangValidator` makes of each row's body and defines,
    /// and `spirv/` holds nothing else. With `BEVY_TILE_DEFERRED_WRITE_SPIRV=1` stale modules are
    /// rewritten (after a clean compile, and `spirv-val` where installed) instead.
    #[test]
    fn spirv_matches_glsl_sources() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tile_deferred/gpu/shaders");
        let write = std::env::var(WRITE_SPIRV).is_ok_and(|v| v == "1");
        let out = std::env::temp_dir().join(format!("btd-spirv-check-{}", std::process::id()));
        std::fs::create_dir_all(&out).unwrap();
        let mut rewritten = Vec::new();
        for row in VARIANTS {
            let name = row.name;
            let compiled = out.join(format!("{name}.spv"));
            let stage = match row.id.stage() {
                vk::ShaderStageFlags::VERTEX => "vert",
                vk::ShaderStageFlags::COMPUTE => "comp",
                _ => "frag",
            };
            let body = row.id.body();
            let output = Command::new("glslangValidator")
                .args(["-V", "--target-env", "vulkan1.1", "-g0", "-S", stage])
                .args(row.variant.defines().iter().map(|d| format!("-D{d}")))
                .arg("-o")
                .arg(&compiled)
                .arg(body)
                .current_dir(&dir)
                .output()
                .unwrap_or_else(|e| {
                    panic!("cannot run glslangValidator ({e}): apt-get install glslang-tools")
                });
            assert!(output.status.success(), "{name}: {output:?}");
            // glslangValidator prints the file name, then any message, on stdout.
            let stdout = String::from_utf8_lossy(&output.stdout);
            let messages: Vec<&str> = stdout
                .lines()
                .filter(|line| !line.is_empty() && *line != body)
                .collect();
            assert!(
                messages.is_empty(),
                "{name} compiled with warnings: {messages:?}"
            );
            let fresh = std::fs::read(&compiled).unwrap();
            let path = dir.join("spirv").join(format!("{name}.spv"));
            let checked_in = std::fs::read(&path).unwrap_or_default();
            if fresh != checked_in || fresh != row.spirv {
                assert!(
                    write,
                    "spirv/{name}.spv is stale: run {WRITE_SPIRV}=1 cargo test --lib \
                     spirv_matches_glsl_sources"
                );
                validate(&compiled, name);
                std::fs::write(&path, &fresh).unwrap();
                rewritten.push(name);
            }
        }
        let _ = std::fs::remove_dir_all(&out);
        let on_disk: BTreeSet<String> = std::fs::read_dir(dir.join("spirv"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let listed: BTreeSet<String> = VARIANTS.iter().map(|v| format!("{}.spv", v.name)).collect();
        assert_eq!(
            on_disk, listed,
            "spirv/ holds exactly the modules of VARIANTS"
        );
        if !rewritten.is_empty() {
            eprintln!("rewrote {rewritten:?}: rebuild to embed them");
        }
    }

    /// `spirv-val`, where installed, before a module is written (and on explicit_lod.rs's
    /// rewritten modules).
    pub(super) fn validate(module: &Path, name: &str) {
        match Command::new("spirv-val")
            .args(["--target-env", "vulkan1.1"])
            .arg(module)
            .output()
        {
            Ok(output) => assert!(output.status.success(), "{name}: {output:?}"),
            Err(_) => {
                eprintln!("spirv-val not found, {name} not validated (apt-get install spirv-tools)")
            }
        }
    }
}
