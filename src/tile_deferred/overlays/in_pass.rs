//! What decides whether a tile view's UI is drawn inside the tile render pass (its last `ui`
//! subpass) or after it: the rules bevy_ui's in-pass route (`ui_in_pass`, feature `ui`) and the
//! inspector's egui (`crate::inspector`, feature `inspector`) share. egui is drawn over bevy_ui,
//! so it goes in the pass only where bevy_ui went there whole (no [`UiAfterTilePass`]).

use super::gizmos::DrawsOverTile;
use crate::tiers::TierDecision;
use crate::tile_deferred::camera::TileDeferred;
use crate::tile_deferred::gpu::ui::TileUiDraws;
use bevy::{
    camera::CompositingSpace,
    prelude::*,
    render::{
        camera::ExtractedCamera,
        render_resource::TextureFormat,
        view::{ExtractedView, ViewTarget},
    },
};

/// Render-world component of a tile view whose bevy_ui items Bevy draws after the tile pass
/// this frame (the crate's clear, Bevy's `ui_pass`, the composite): why the `ui` subpass did
/// not draw them. Replaced every frame; absent when they were drawn in the pass or there were
/// none.
#[derive(Component, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    not(feature = "ui"),
    allow(dead_code, reason = "used by bevy_ui's route (feature `ui`)")
)]
pub(crate) struct UiAfterTilePass(pub String);

/// Each frame's `ui` subpass draws start empty ([`TileUiDraws`]): bevy_ui's route (feature
/// `ui`) builds them and egui's (feature `inspector`) adds to them, so a view left with last
/// frame's draws would add this frame's egui to last frame's and draw both, with images freed
/// since (an app with the inspector and without bevy_ui in the pass grew its egui draws every
/// frame until a freed font atlas failed the frame; a hidden overlay would have stayed drawn).
pub(crate) fn forget_last_frames_ui_draws(
    mut commands: Commands,
    views: Query<Entity, With<TileUiDraws>>,
) {
    for view in &views {
        commands.entity(view).remove::<TileUiDraws>();
    }
}

/// What decides whether a view's UI (bevy_ui's, and egui's over it) can be drawn in its `ui`
/// subpass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ViewShape {
    /// `TileDeferred::ui_in_pass`.
    pub(crate) in_pass: bool,
    pub(crate) unmerged: bool,
    pub(crate) hdr: bool,
    /// `CompositingSpace::Srgb`: Bevy blends the UI gamma-encoded, in an `Rgba8Unorm` texture.
    pub(crate) gamma_compositing: bool,
    pub(crate) output_format: Option<TextureFormat>,
    /// Gizmos (other plugins' `Transparent3d` items), wireframes or meshes of materials the
    /// tile path does not draw (`MaterialsOverTileView`) are drawn after the tile pass this
    /// frame.
    pub(crate) draws_over_tile: bool,
    /// Bevy post-processes the frame after the tile pass (FXAA, SMAA, CAS: `post_process`).
    pub(crate) post_processed: bool,
}

/// Why a view's UI cannot be drawn in its `ui` subpass, if it cannot. Pure.
pub(crate) fn in_pass_refusal(shape: &ViewShape) -> Option<&'static str> {
    if !shape.in_pass {
        return Some("TileDeferred::ui_in_pass is off");
    }
    if shape.unmerged {
        return Some("the unmerged debug tier draws UI after its render passes");
    }
    if shape.draws_over_tile {
        return Some(
            "gizmos, wireframes or meshes of materials the tile path does not draw are drawn \
             after the tile pass, and Bevy draws UI over them",
        );
    }
    if shape.post_processed {
        return Some(
            "Bevy's bloom, FXAA, SMAA or CAS runs after the tile pass, and Bevy draws UI after them",
        );
    }
    if shape.gamma_compositing {
        return Some("CompositingSpace::Srgb: Bevy blends UI gamma-encoded");
    }
    // An HDR camera's UI is blended in Bevy's floating-point main texture and blitted to the
    // output: the same picture where the output stores linear light (sRGB or float formats).
    // Without HDR, Bevy's main texture has the output's format: the same blend.
    let linear_output = shape
        .output_format
        .is_some_and(|format| format.is_srgb() || is_float(format));
    if shape.hdr && !linear_output {
        return Some("an HDR camera writing a UNORM output: Bevy blends its UI in float");
    }
    None
}

fn is_float(format: TextureFormat) -> bool {
    matches!(
        format,
        TextureFormat::Rgba16Float
            | TextureFormat::Rgba32Float
            | TextureFormat::Rg11b10Ufloat
            | TextureFormat::Rgb9e5Ufloat
    )
}

impl ViewShape {
    /// The shape of a tile view this frame, from its components and what Bevy draws over the
    /// tile frame (gizmos, wireframes; meshes where `materials_over_tile`).
    pub(crate) fn of(
        (camera, view, target): (&ExtractedCamera, &ExtractedView, &ViewTarget),
        (settings, post_processed, materials_over_tile): (&TileDeferred, bool, bool),
        tier: Option<&TierDecision>,
        draws_over_tile: &DrawsOverTile,
    ) -> Self {
        Self {
            in_pass: settings.ui_in_pass,
            unmerged: tier.is_some_and(|decision| decision.tier.is_unmerged())
                || (tier.is_none() && !settings.merge_subpasses),
            hdr: camera.hdr,
            gamma_compositing: camera.compositing_space == Some(CompositingSpace::Srgb),
            output_format: target.out_texture_view_format(),
            draws_over_tile: materials_over_tile || draws_over_tile.any(view),
            post_processed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ui_subpass_takes_merged_frames_without_gizmos() {
        let drawn = ViewShape {
            in_pass: true,
            unmerged: false,
            hdr: false,
            gamma_compositing: false,
            output_format: Some(TextureFormat::Rgba8UnormSrgb),
            draws_over_tile: false,
            post_processed: false,
        };
        assert_eq!(in_pass_refusal(&drawn), None);
        // LDR into a UNORM output: Bevy's main texture has that format too.
        let unorm = Some(TextureFormat::Rgba8Unorm);
        let ldr_unorm = ViewShape {
            output_format: unorm,
            ..drawn
        };
        assert_eq!(in_pass_refusal(&ldr_unorm), None);
        let hdr = ViewShape { hdr: true, ..drawn };
        assert_eq!(in_pass_refusal(&hdr), None);
        let refused = [
            ViewShape {
                in_pass: false,
                ..drawn
            },
            ViewShape {
                unmerged: true,
                ..drawn
            },
            ViewShape {
                draws_over_tile: true,
                ..drawn
            },
            ViewShape {
                gamma_compositing: true,
                ..drawn
            },
            ViewShape {
                post_processed: true,
                ..drawn
            },
            ViewShape {
                output_format: unorm,
                ..hdr
            },
        ];
        for shape in refused {
            assert!(in_pass_refusal(&shape).is_some(), "{shape:?}");
        }
    }
}
