//! Shadow maps as passes of a frame: one depth-only raster pass per shadow map (cascade, spot
//! map or cube face), each storing its depth for a later pass to sample.
//!
//! Shadow maps are the one store a frame cannot avoid besides its output: they are rendered
//! from the light's point of view, at their own size, before the camera's passes sample them
//! at arbitrary texels, so they can neither stay in tile memory nor merge with the camera's
//! render pass. Declaring them as passes lets the compiler price that store as what it is (a
//! `Store` that a later pass reads, so necessary) and lets the stock-Bevy models and the tile
//! path be compared with the same shadows.

use super::{
    Access, AttachmentDesc, AttachmentHandle, ClearValue, Format, FrameGraph, GraphError, Size,
};

/// The shadow maps a frame renders: a 2D array (directional cascades and spot lights, as
/// Bevy's `directional_light_depth_texture`) and cube maps (point lights, Bevy's
/// `point_light_depth_texture`), all square and of one depth format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ShadowMaps {
    /// Directional cascades rendered this frame.
    pub cascades: u32,
    /// Spot-light maps rendered this frame (layers of the same array).
    pub spot_maps: u32,
    /// Width and height of an array layer, pixels.
    pub array_size: u32,
    /// Point-light cube maps rendered this frame (6 faces each).
    pub cubes: u32,
    /// Width and height of a cube face, pixels.
    pub cube_size: u32,
}

/// Bevy's shadow map format (`CORE_3D_DEPTH_FORMAT`).
pub const SHADOW_MAP_FORMAT: Format = Format::Depth32Float;

impl ShadowMaps {
    /// No shadow maps.
    pub const NONE: ShadowMaps = ShadowMaps {
        cascades: 0,
        spot_maps: 0,
        array_size: 0,
        cubes: 0,
        cube_size: 0,
    };

    /// Bevy's default sizes (`DirectionalLightShadowMap` 2048, `PointLightShadowMap` 1024) with
    /// `cascades` cascades, `spot_maps` spot maps and `cubes` point-light cubes.
    pub const fn bevy_defaults(cascades: u32, spot_maps: u32, cubes: u32) -> Self {
        ShadowMaps {
            cascades,
            spot_maps,
            array_size: 2048,
            cubes,
            cube_size: 1024,
        }
    }

    /// Depth-only passes the maps take: one per layer or cube face.
    pub const fn pass_count(&self) -> u32 {
        self.cascades + self.spot_maps + 6 * self.cubes
    }

    /// Bytes one store of every map moves (the floor they add to a frame).
    pub const fn stored_bytes(&self) -> u64 {
        let bpp = SHADOW_MAP_FORMAT.bytes_per_pixel() as u64;
        let array = self.array_size as u64 * self.array_size as u64;
        let face = self.cube_size as u64 * self.cube_size as u64;
        bpp * ((self.cascades + self.spot_maps) as u64 * array + 6 * self.cubes as u64 * face)
    }
}

/// Declares one depth-only raster pass per shadow map of `maps` (cleared to the reverse-Z far
/// plane and written, as Bevy's `shadow_pass` does) and returns the maps, for the passes that
/// sample them to declare with [`RasterPassBuilder::sample`](super::RasterPassBuilder::sample).
pub fn declare_shadow_maps(
    graph: &mut FrameGraph,
    maps: &ShadowMaps,
) -> Result<Vec<AttachmentHandle>, GraphError> {
    let square = |size: u32| {
        AttachmentDesc::new(SHADOW_MAP_FORMAT).with_size(Size::Absolute {
            width: size.max(1),
            height: size.max(1),
        })
    };
    let mut names: Vec<(String, u32)> = Vec::new();
    names.extend((0..maps.cascades).map(|i| (format!("directional cascade {i}"), maps.array_size)));
    names.extend((0..maps.spot_maps).map(|i| (format!("spot light {i}"), maps.array_size)));
    for cube in 0..maps.cubes {
        names
            .extend((0..6).map(|face| (format!("point light {cube} face {face}"), maps.cube_size)));
    }
    let mut handles = Vec::with_capacity(names.len());
    for (name, size) in names {
        let mut map = graph.create_attachment(&format!("shadow map: {name}"), square(size));
        graph
            .add_raster_pass(&format!("shadow pass: {name}"))
            .depth(
                &mut map,
                Access::ReadWrite,
                Some(ClearValue::DEPTH_REVERSE_Z),
            )
            .finish()?;
        handles.push(map);
    }
    Ok(handles)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame_graph::{DeviceCaps, Extent, StoreOp, compile};

    /// A camera pass sampling every map: each map is stored once, by its own pass, and
    /// nothing else changes.
    #[test]
    fn each_map_is_stored_once_for_the_pass_that_samples_it() {
        let maps = ShadowMaps::bevy_defaults(4, 1, 2);
        let mut graph = FrameGraph::new(Extent::new(640, 360));
        let shadow_maps = declare_shadow_maps(&mut graph, &maps).unwrap();
        let mut output = graph.import_attachment(
            "output",
            AttachmentDesc::new(Format::Rgba8Srgb),
            crate::frame_graph::ImportParams {
                contents_needed: false,
                needed_after_frame: true,
                clear_on_first_use: false,
                discard_on_last_use: false,
            },
        );
        let mut camera = graph.add_raster_pass("camera");
        for map in &shadow_maps {
            camera = camera.sample(map);
        }
        camera
            .color(&mut output, Access::WriteAll, None)
            .finish()
            .unwrap();
        let frame = compile(&graph, &DeviceCaps::desktop()).unwrap();
        assert_eq!(frame.native_passes.len(), maps.pass_count() as usize + 1);
        let output_bytes = 640 * 360 * 4;
        assert_eq!(frame.cost.total.stored, maps.stored_bytes() + output_bytes);
        assert_eq!(frame.cost.total.loaded, 0, "every map starts cleared");
        for native in &frame.native_passes[..maps.pass_count() as usize] {
            let depth = native
                .attachments
                .iter()
                .find(|a| a.name.starts_with("shadow map"));
            assert_eq!(depth.map(|a| a.store), Some(StoreOp::Store), "{native:?}");
        }
        assert_eq!(
            maps.stored_bytes(),
            4 * (5 * 2048 * 2048 + 12 * 1024 * 1024)
        );
    }
}
