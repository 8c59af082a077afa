//! Render world: the GPU time of a camera's whole schedule, for `Auto` cameras that time the tile
//! path against Bevy's `Core3d` (`tiers::measure`).
//!
//! While it times a path, `route` gives the camera a [`TimedCameraSchedule`]: one exclusive
//! system that writes a GPU timestamp, runs the camera's real schedule (the tile schedule or
//! `Core3d`, whatever Bevy and other plugins put in it), and writes a second timestamp. Both paths
//! are timed the same way, shadow cascades and overlays included. The results are read a few
//! frames later without waiting and handed to the main world through the reports. A frame during
//! which Bevy still had pipelines to compile is marked invalid (its draws may have been skipped),
//! and so is the first frame after a switch or a gap (one-time costs).

use crate::tiers::{MeasuredPath, TimedFrame};
use crate::tile_deferred::{
    camera::{TileDeferredGraph, TimedCameraSchedule},
    gpu::backend::{CameraTimer, TileBackend},
    report::TileRenderReports,
};
use crate::vulkan::timing::RING;
use ash::vk;
use bevy::{
    core_pipeline::schedule::Core3d,
    ecs::schedule::Schedule,
    prelude::*,
    render::{
        RenderApp,
        render_resource::{CommandEncoderDescriptor, PipelineCache},
        renderer::{CurrentView, PendingCommandBuffers, RenderDevice},
        sync_world::MainEntity,
    },
};
use wgpu::hal::api::Vulkan;

/// Adds the two timed camera schedules to the render world.
pub(crate) fn build(app: &mut App) {
    let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
        return;
    };
    for timed in [TimedCameraSchedule::Tile, TimedCameraSchedule::Core3d] {
        let mut schedule = Schedule::new(timed);
        schedule.add_systems(move |world: &mut World| run_timed(world, timed));
        render_app.add_schedule(schedule);
    }
}

/// Runs the camera's schedule between two timestamps.
fn run_timed(world: &mut World, timed: TimedCameraSchedule) {
    let path = match timed {
        TimedCameraSchedule::Tile => MeasuredPath::Tile,
        TimedCameraSchedule::Core3d => MeasuredPath::Core3d,
    };
    let started = mark(world, path, Mark::Start);
    let ran = match timed {
        TimedCameraSchedule::Tile => world.try_run_schedule(TileDeferredGraph),
        TimedCameraSchedule::Core3d => world.try_run_schedule(Core3d),
    };
    if ran.is_err() {
        warn_once!("bevy_tile_deferred: a timed camera's schedule ({timed:?}) does not exist");
    }
    if started {
        mark(world, path, Mark::End);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Start,
    End,
}

/// Records a timestamp before or after the camera's schedule on a command buffer of its own,
/// queued where Bevy's camera schedules queue theirs (so it runs between them in order).
/// At the start, also hands the main world what the frame that last used this slot measured.
/// Whether it recorded (no Vulkan backend, no timestamps on this queue: nothing is timed).
fn mark(world: &mut World, path: MeasuredPath, mark: Mark) -> bool {
    let Some(view) = world.get_resource::<CurrentView>().map(|view| view.0) else {
        return false;
    };
    let Some(camera) = world.get::<MainEntity>(view).map(MainEntity::id) else {
        return false;
    };
    let compiling = world
        .get_resource::<PipelineCache>()
        .is_some_and(|cache| cache.waiting_pipelines().next().is_some());
    let reports = world.get_resource::<TileRenderReports>().cloned();
    let Some(render_device) = world.get_resource::<RenderDevice>().cloned() else {
        return false;
    };
    let Some(mut backend) = world.get_resource_mut::<TileBackend>() else {
        return false;
    };
    let backend = &mut *backend;
    let frame = backend.frame;
    let slot = (frame % u64::from(RING)) as usize;
    if !backend.camera_timers.contains_key(&camera) {
        let Some(queries) = backend.context.create_timestamp_queries(2) else {
            return false;
        };
        backend.camera_timers.insert(
            camera,
            CameraTimer {
                queries,
                slots: [None; RING as usize],
                last_used: frame,
                last_path: None,
            },
        );
    }
    let timer = backend.camera_timers.get_mut(&camera).unwrap();
    match mark {
        Mark::Start => {
            // The frame that used this slot last: its time, if the GPU is done with it.
            if let Some((timed_path, valid)) = timer.slots[slot].take()
                && let Some(ms) = timer.queries.read(&backend.context, frame)
                && let Some(reports) = &reports
            {
                reports.report_timed(
                    camera,
                    TimedFrame {
                        path: timed_path,
                        ms: ms[0],
                        valid,
                    },
                );
            }
            // The first frame after a switch (or a gap) pays one-time costs: it does not count.
            let continues = timer.last_path == Some(path) && timer.last_used + 1 == frame;
            timer.queries.recorded(frame);
            timer.slots[slot] = Some((path, !compiling && continues));
            timer.last_used = frame;
            timer.last_path = Some(path);
        }
        Mark::End => {
            if compiling && let Some((_, valid)) = &mut timer.slots[slot] {
                *valid = false;
            }
        }
    }
    let (pool, first) = (timer.queries.pool, timer.queries.first_query(frame));
    let device = backend.context.device.clone();
    let mut encoder = render_device.create_command_encoder(&CommandEncoderDescriptor {
        label: Some("tile_deferred_camera_timestamp"),
    });
    // SAFETY: this encoder is used only here, through its hal encoder; the query pool lives
    // until the GPU is done with every frame that wrote it (timers are retired through the
    // graveyard). The start resets both queries of this frame's slot outside any render pass
    // before writing the first; the end writes the second after everything the camera's
    // schedule queued before it.
    let recorded = unsafe {
        encoder.as_hal_mut::<Vulkan, _, _>(|hal_encoder| {
            let Some(hal_encoder) = hal_encoder else {
                return false;
            };
            let cb = hal_encoder.raw_handle();
            match mark {
                Mark::Start => {
                    device.cmd_reset_query_pool(cb, pool, first, 2);
                    device.cmd_write_timestamp(
                        cb,
                        vk::PipelineStageFlags::TOP_OF_PIPE,
                        pool,
                        first,
                    );
                }
                Mark::End => device.cmd_write_timestamp(
                    cb,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    pool,
                    first + 1,
                ),
            }
            true
        })
    };
    if !recorded {
        if let Some(timer) = backend.camera_timers.get_mut(&camera) {
            timer.queries.unrecorded(frame);
            timer.slots[slot] = None;
        }
        return false;
    }
    world
        .resource_mut::<PendingCommandBuffers>()
        .push([encoder.finish()]);
    true
}
