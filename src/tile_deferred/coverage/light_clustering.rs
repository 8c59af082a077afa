//! Main world: Bevy's light clustering for the meshes Bevy draws over a tile camera's frame.
//!
//! A custom material (or a `StandardMaterial` feature the G-buffer lacks) drawn by Bevy's own
//! pipeline over a tile frame reads its point and spot lights from Bevy's clusters. On desktop
//! GPUs Bevy 0.19.1 assigns lights to clusters on the GPU, in a private system that runs only
//! inside `Core3d` (`cluster_on_gpu`): a tile camera's clusters stay empty, and such a mesh would
//! be lit without them. Bevy's other mode, assigning them on the CPU in the main world
//! (`GlobalClusterSettings::gpu_clustering` set to `None`, what it does on Android), fills every
//! camera's clusters.
//!
//! So while a tile camera draws meshes over its frame with point or spot lights in its
//! clusters, the crate has Bevy assign them on the CPU (logged), and gives Bevy its GPU
//! clustering back a second after the last frame that needed it. The switch runs after
//! `find_missing` and before Bevy assigns lights to clusters, in the frame that first needs it,
//! so no frame lacks the lights. An app that wants Bevy's GPU clustering kept inserts
//! [`TileKeepGpuLightClustering`]: the meshes are then listed, with the reason, and `Auto`
//! falls back.
//!
//! The crate's own tile lighting does not use Bevy's clusters (it assigns its lights itself), so
//! the switch changes only what Bevy's pipelines see, for every camera of the app, and where
//! Bevy spends the assignment's time: the main world's CPU instead of `Core3d`'s GPU passes.

use bevy::{light::cluster::GlobalClusterGpuSettings, prelude::*};

/// Main-world resource: keeps Bevy's GPU light clustering on. Meshes Bevy would draw over a tile
/// camera's frame with point or spot lights in view are then listed in `TileMissing`, and an
/// `Auto` camera falls back, instead of the crate having Bevy cluster lights on the CPU while
/// they are drawn (see the crate's `coverage::light_clustering`).
#[derive(Resource, Clone, Copy, Debug, Default, Reflect)]
#[reflect(Resource, Clone, Debug, Default)]
pub struct TileKeepGpuLightClustering;

/// Frames without the need before Bevy gets its GPU clustering back: about a second, so that
/// lights or meshes that come and go do not switch it every frame.
const RESTORE_AFTER_FRAMES: u32 = 60;

/// Main-world resource: whether tile cameras need Bevy's clusters filled, and Bevy's GPU
/// clustering settings while the crate has them switched off.
#[derive(Resource, Debug, Default)]
pub(crate) struct LightClusteringForMaterials {
    /// Set by `find_missing` this frame: a tile camera draws meshes over its frame (or would,
    /// but for Bevy's GPU clustering kept) with point or spot lights in its clusters.
    pub(crate) needed: bool,
    /// Bevy's GPU clustering settings, taken out of `GlobalClusterSettings` while switched.
    saved: Option<GlobalClusterGpuSettings>,
    /// Frames since it was last needed, while switched.
    frames_unneeded: u32,
}

/// What the switch does this frame, given whether it is switched (`saved`), whether it was
/// needed last frame, for how many frames it has not been, and whether the app keeps Bevy's GPU
/// clustering. Pure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Switch {
    /// Take Bevy's GPU clustering out (if Bevy has it on).
    ToCpu,
    /// Give it back.
    ToGpu,
    /// Leave it as it is.
    Keep,
}

fn switch(switched: bool, needed: bool, frames_unneeded: u32, keep_gpu: bool) -> Switch {
    match (switched, needed) {
        _ if keep_gpu => {
            if switched {
                Switch::ToGpu
            } else {
                Switch::Keep
            }
        }
        (false, true) => Switch::ToCpu,
        (true, false) if frames_unneeded >= RESTORE_AFTER_FRAMES => Switch::ToGpu,
        _ => Switch::Keep,
    }
}

/// Switches Bevy's light clustering for the meshes Bevy draws over tile frames, from what
/// `find_missing` found this frame; runs before Bevy assigns lights to clusters.
pub(crate) fn switch_light_clustering(
    mut state: ResMut<LightClusteringForMaterials>,
    settings: Option<ResMut<bevy::light::cluster::GlobalClusterSettings>>,
    keep_gpu: Option<Res<TileKeepGpuLightClustering>>,
) {
    let Some(mut settings) = settings else {
        return;
    };
    let state = &mut *state;
    if state.needed {
        state.frames_unneeded = 0;
    } else if state.saved.is_some() {
        state.frames_unneeded = state.frames_unneeded.saturating_add(1);
    }
    match switch(
        state.saved.is_some(),
        state.needed,
        state.frames_unneeded,
        keep_gpu.is_some(),
    ) {
        Switch::ToCpu if settings.gpu_clustering.is_some() => {
            state.saved = settings.gpu_clustering.take();
            info!(
                "bevy_tile_deferred: Bevy now assigns lights to clusters on the CPU \
                 (GlobalClusterSettings::gpu_clustering = None), as on Android: a tile camera \
                 has Bevy draw meshes over its frame with point or spot lights in view, and Bevy \
                 assigns them on the GPU only inside Core3d (TileKeepGpuLightClustering keeps \
                 the GPU's, and those cameras fall back)"
            );
        }
        Switch::ToGpu => {
            settings.gpu_clustering = state.saved.take();
            state.frames_unneeded = 0;
            info!(
                "bevy_tile_deferred: Bevy assigns lights to clusters on the GPU again (no tile \
                 camera needs them on the CPU)"
            );
        }
        Switch::ToCpu | Switch::Keep => {}
    }
    state.needed = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clustering_goes_to_the_cpu_while_needed_and_back_a_second_after() {
        assert_eq!(switch(false, false, 0, false), Switch::Keep);
        assert_eq!(switch(false, true, 0, false), Switch::ToCpu);
        assert_eq!(switch(true, true, 0, false), Switch::Keep);
        // Not needed for a while: back to the GPU only after RESTORE_AFTER_FRAMES.
        assert_eq!(
            switch(true, false, RESTORE_AFTER_FRAMES - 1, false),
            Switch::Keep
        );
        assert_eq!(
            switch(true, false, RESTORE_AFTER_FRAMES, false),
            Switch::ToGpu
        );
    }

    #[test]
    fn an_app_that_keeps_gpu_clustering_is_never_switched() {
        assert_eq!(switch(false, true, 0, true), Switch::Keep);
        // Inserted while switched: given back at once.
        assert_eq!(switch(true, true, 0, true), Switch::ToGpu);
    }

    #[test]
    fn the_switch_takes_and_restores_bevys_settings() {
        use bevy::light::cluster::GlobalClusterSettings;
        let mut app = App::new();
        app.init_resource::<LightClusteringForMaterials>()
            .insert_resource(GlobalClusterSettings {
                supports_storage_buffers: true,
                clustered_decals_are_usable: false,
                gpu_clustering: Some(GlobalClusterGpuSettings {
                    initial_z_slice_list_capacity: 1024,
                    initial_index_list_capacity: 2048,
                }),
                max_uniform_buffer_clusterable_objects: 256,
                view_cluster_bindings_max_indices: 16384,
            })
            .add_systems(Update, switch_light_clustering);
        let gpu = |app: &App| {
            app.world()
                .resource::<GlobalClusterSettings>()
                .gpu_clustering
                .map(|gpu| gpu.initial_z_slice_list_capacity)
        };
        app.world_mut()
            .resource_mut::<LightClusteringForMaterials>()
            .needed = true;
        app.update();
        assert_eq!(gpu(&app), None, "switched to the CPU");
        for _ in 1..RESTORE_AFTER_FRAMES {
            app.update();
            assert_eq!(gpu(&app), None, "kept on the CPU for a while");
        }
        app.update();
        assert_eq!(gpu(&app), Some(1024), "Bevy's own settings back");
    }
}
