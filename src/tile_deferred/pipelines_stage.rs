//! Stage 3 and 7, pipelines: the plan's render passes with their lighting and tonemap
//! pipelines (cached by the render passes' key), and a G-buffer pipeline for every mesh
//! layout and material state drawn (built on demand).

use super::{
    backend::TileBackend,
    draws::Draw,
    error::{TileError, TileResult, step},
    resources::create_pass_resources,
};
use crate::{
    frame_graph::CompiledFrame,
    vulkan::render_pass::{RenderPassDescription, RenderPassKey},
};
use bevy::platform::collections::hash_map::Entry;

/// The render passes and screen pipelines of `descriptions`, created the first time this
/// shape of frame is seen; returns their key.
pub(super) fn ensure_render_passes(
    backend: &mut TileBackend,
    descriptions: &[RenderPassDescription],
    compiled: &CompiledFrame,
) -> TileResult<RenderPassKey> {
    let key = RenderPassKey::new(descriptions);
    if !backend.render_passes.contains_key(&key) {
        let pass = create_pass_resources(backend, descriptions, compiled)?;
        backend.render_passes.insert(key.clone(), pass);
    }
    let frame = backend.frame;
    if let Some(pass) = backend.render_passes.get_mut(&key) {
        pass.last_used = frame;
    }
    Ok(key)
}

/// A G-buffer pipeline for every draw's (mesh layout, material state) in the render passes of
/// `key`.
pub(super) fn ensure_gbuffer_pipelines(
    backend: &mut TileBackend,
    key: &RenderPassKey,
    draws: &[Draw],
) -> TileResult<()> {
    let (Some(layouts), Some(shaders)) = (&backend.layouts, &backend.shaders) else {
        return Err(TileError::Missing {
            step: "finding the tile shaders",
        });
    };
    let pass = backend
        .render_passes
        .get_mut(key)
        .ok_or(TileError::Missing {
            step: "finding the frame's render passes",
        })?;
    for draw in draws {
        if let Entry::Vacant(slot) = pass.gbuffer.entry(draw.pipeline_key.clone()) {
            slot.insert(step(
                "creating a G-buffer pipeline",
                backend.context.create_gbuffer_pipeline(
                    layouts,
                    shaders,
                    pass.gbuffer_target,
                    &draw.pipeline_key,
                ),
            )?);
        }
    }
    Ok(())
}
