//! The benchmark scene: PBR objects in a square grid under a square grid of point lights, sized
//! by two numbers, so that every renderer under comparison draws exactly the same frame.
//!
//! Objects share two meshes and eight materials (instancing applies to every renderer alike);
//! each light's range covers a few grid cells, so a pixel pays for the lights near it, not for
//! all of them. Nothing moves: a benchmark frame is the same frame every time.
//!
//! Two options change the lighting: `range` gives every point light the same range (issue 12's
//! scene: 64 PBR objects, a sun and point lights of 6 m range), and `sun` adds a directional
//! light. `shadows` turns on the sun's shadows, with Bevy's default cascades (4: issue 34's
//! shadowed scene), and `point_shadows` those of the first [`SHADOWED_POINT_LIGHTS`] point lights
//! too (cube maps, Bevy's default size: issue 13's shadow benchmark). `layout: Dense` draws the MSAA benchmark's dense scene instead of the grid (its own
//! objects and sun, the point lights in front of its fence: see [`super::dense`]).

use bevy::prelude::*;

/// Point lights that cast shadows in the shadowed bench scene (issue 13: "1 directional with
/// cascades + 4 shadowed point lights").
pub const SHADOWED_POINT_LIGHTS: usize = 4;

/// Which objects the benchmark scene holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchLayout {
    /// `meshes` PBR objects in a square grid on a ground plane, lights in a grid above them.
    Grid,
    /// The dense scene of examples/scenes/dense.rs (`meshes` is ignored).
    Dense,
}

/// The grid's point-light radius unless `--radius` says otherwise: 5 cm, a small bulb, so the
/// sphere-light specular path is the one measured (earlier figures used it).
pub const DEFAULT_LIGHT_RADIUS: f32 = 0.05;

/// The scene's size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchScene {
    /// PBR objects (spheres and cubes) in a square grid, plus one ground plane.
    pub meshes: usize,
    /// Point lights in a square grid above the objects.
    pub lights: usize,
    /// Every point light's range, metres; None: the layout's own (for the grid, about two grid
    /// cells of the light grid around each light, so it shrinks as lights are added).
    pub range: Option<f32>,
    /// Every grid point light's radius, metres (`PointLight::radius`: 0, Bevy's default, is a
    /// point; above 0 the specular highlight is a sphere's, Karis's representative point).
    pub light_radius: f32,
    /// A directional light besides the point lights (the dense layout has its own).
    pub sun: bool,
    /// The sun casts shadows through Bevy's default cascades (grid layout only: the sun must be
    /// on too).
    pub shadows: bool,
    /// With `shadows`, the first [`SHADOWED_POINT_LIGHTS`] point lights cast cube-map shadows
    /// too.
    pub point_shadows: bool,
    /// The objects.
    pub layout: BenchLayout,
}

impl BenchScene {
    /// The grid scene with `meshes` objects and `lights` lights of the default range, no sun.
    pub fn grid(meshes: usize, lights: usize) -> Self {
        BenchScene {
            meshes,
            lights,
            range: None,
            light_radius: DEFAULT_LIGHT_RADIUS,
            sun: false,
            shadows: false,
            point_shadows: false,
            layout: BenchLayout::Grid,
        }
    }

    /// One line saying what is drawn.
    pub fn describe(&self) -> String {
        match self.layout {
            BenchLayout::Grid => format!(
                "grid scene: {} PBR objects + ground, {}",
                self.meshes,
                self.lighting()
            ),
            BenchLayout::Dense => format!(
                "dense scene (examples/scenes/dense.rs, with its sun), {}",
                self.lighting()
            ),
        }
    }

    /// The lights, in words: `a sun and point lights of 6 m range` (with shadows: `a sun with
    /// shadows (Bevy's default cascades) and point lights of 6 m range`, and `, the first 4
    /// shadowed` with point shadows).
    pub fn lighting(&self) -> String {
        let range = match (self.range, self.layout) {
            (Some(r), _) => format!("{r} m range"),
            (None, BenchLayout::Grid) => "default range (about two light-grid cells)".to_owned(),
            (None, BenchLayout::Dense) => format!("{} m range", super::dense::DENSE_LIGHT_RANGE),
        };
        // The grid's radius is said only when it is not the default, so that earlier figures'
        // descriptions still read the same.
        let range = if self.layout == BenchLayout::Grid && self.light_radius != DEFAULT_LIGHT_RADIUS
        {
            format!("{range} and {} m radius", self.light_radius)
        } else {
            range
        };
        let sun = self.sun && self.layout == BenchLayout::Grid;
        if self.casts_shadows() {
            let shadowed_points = if self.point_shadows {
                format!(", the first {} shadowed", self.shadowed_point_lights())
            } else {
                String::new()
            };
            return format!(
                "a sun with shadows (Bevy's default cascades) and point lights of \
                 {range}{shadowed_points}"
            );
        }
        format!(
            "{}point lights of {range}",
            if sun { "a sun and " } else { "" }
        )
    }

    /// Whether the scene spawns shadow-casting lights (only the grid layout's sun and lights
    /// do).
    pub fn casts_shadows(&self) -> bool {
        self.shadows && self.sun && self.layout == BenchLayout::Grid
    }

    /// How many point lights cast shadows.
    pub fn shadowed_point_lights(&self) -> usize {
        if self.casts_shadows() && self.point_shadows {
            SHADOWED_POINT_LIGHTS.min(self.lights)
        } else {
            0
        }
    }

    /// Cells along one side of the object grid.
    pub fn side(&self) -> usize {
        (self.meshes as f64).sqrt().ceil().max(1.0) as usize
    }

    /// Half the width of the object grid, in metres (objects sit 1 m apart).
    pub fn half_extent(&self) -> f32 {
        self.side() as f32 * 0.5
    }

    /// A camera transform that sees the whole grid from above and in front.
    pub fn camera_transform(&self) -> Transform {
        if self.layout == BenchLayout::Dense {
            return super::dense::dense_camera_transform();
        }
        let e = self.half_extent().max(2.0);
        Transform::from_xyz(0.0, 1.5 * e, 2.1 * e).looking_at(Vec3::new(0.0, 0.0, 0.1 * e), Vec3::Y)
    }

    /// Spawns the objects, the ground and the lights (no camera) into `world`.
    pub fn spawn(&self, world: &mut World) {
        if self.layout == BenchLayout::Dense {
            super::dense::spawn_dense_scene(world);
            super::dense::spawn_dense_lights(
                world,
                self.lights,
                self.range.unwrap_or(super::dense::DENSE_LIGHT_RANGE),
            );
            return;
        }
        let shadows = self.casts_shadows();
        let shadowed_points = self.shadowed_point_lights();
        if self.sun {
            // Bevy's default `CascadeShadowConfig` (a required component): 4 cascades.
            world.spawn((
                Name::new("bench sun"),
                DirectionalLight {
                    illuminance: 6_000.0,
                    shadow_maps_enabled: shadows,
                    ..default()
                },
                Transform::from_xyz(3.0, 6.0, 5.0).looking_at(Vec3::ZERO, Vec3::Y),
            ));
        }
        let side = self.side();
        let e = self.half_extent();
        let (sphere, cube, ground) = {
            let mut meshes = world.resource_mut::<Assets<Mesh>>();
            (
                meshes.add(Sphere::new(0.36).mesh().uv(24, 12)),
                meshes.add(Cuboid::new(0.6, 0.6, 0.6)),
                meshes.add(Plane3d::default().mesh().size(2.0 * e + 2.0, 2.0 * e + 2.0)),
            )
        };
        let (materials, ground_material) = {
            let mut materials = world.resource_mut::<Assets<StandardMaterial>>();
            let palette: Vec<Handle<StandardMaterial>> = (0..8)
                .map(|i| {
                    let t = i as f32 / 8.0;
                    materials.add(StandardMaterial {
                        base_color: Color::hsl(t * 360.0, 0.65, 0.55),
                        perceptual_roughness: 0.25 + 0.6 * ((i * 3) % 8) as f32 / 7.0,
                        metallic: if i % 3 == 0 { 0.8 } else { 0.0 },
                        reflectance: 0.5,
                        ..default()
                    })
                })
                .collect();
            let ground = materials.add(StandardMaterial {
                base_color: Color::srgb(0.45, 0.45, 0.47),
                perceptual_roughness: 0.9,
                ..default()
            });
            (palette, ground)
        };
        world.spawn((
            Name::new("bench ground"),
            Mesh3d(ground),
            MeshMaterial3d(ground_material),
            Transform::IDENTITY,
        ));
        let objects: Vec<_> = (0..self.meshes)
            .map(|i| {
                let (row, col) = (i / side, i % side);
                let x = col as f32 + 0.5 - e;
                let z = row as f32 + 0.5 - e;
                let mesh = if (row + col) % 2 == 0 { &sphere } else { &cube };
                (
                    Mesh3d(mesh.clone()),
                    MeshMaterial3d(materials[(row * 3 + col) % materials.len()].clone()),
                    Transform::from_xyz(x, 0.4, z)
                        .with_rotation(Quat::from_rotation_y(0.3 * (i % 7) as f32)),
                )
            })
            .collect();
        world.spawn_batch(objects);

        // Lights on a square grid over the same area; each reaches about two cells around it.
        let per_side = (self.lights as f64).sqrt().ceil().max(1.0) as usize;
        let cell = 2.0 * e.max(1.0) / per_side as f32;
        let height = 0.6 * cell + 0.8;
        let range = self.range.unwrap_or(2.0 * cell + 1.5);
        let lights: Vec<_> = (0..self.lights)
            .map(|i| {
                let (row, col) = (i / per_side, i % per_side);
                let t = i as f32 / self.lights.max(1) as f32;
                (
                    PointLight {
                        color: Color::hsl(t * 360.0 + 30.0, 0.5, 0.7),
                        // Proportional to the area each light covers: about the same brightness for
                        // any light count.
                        intensity: 12_000.0 * cell * cell,
                        range,
                        radius: self.light_radius,
                        shadow_maps_enabled: i < shadowed_points,
                        ..default()
                    },
                    Transform::from_xyz(
                        (col as f32 + 0.5) * cell - e.max(1.0),
                        height,
                        (row as f32 + 0.5) * cell - e.max(1.0),
                    ),
                )
            })
            .collect();
        world.spawn_batch(lights);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spawns `scene` into a bare world and returns (suns casting shadows, point lights
    /// casting shadows, point lights).
    fn shadow_casters(scene: BenchScene) -> (usize, usize, usize) {
        let mut world = World::new();
        world.init_resource::<Assets<Mesh>>();
        world.init_resource::<Assets<StandardMaterial>>();
        scene.spawn(&mut world);
        let suns = world
            .query::<&DirectionalLight>()
            .iter(&world)
            .filter(|l| l.shadow_maps_enabled)
            .count();
        let points: Vec<bool> = world
            .query::<&PointLight>()
            .iter(&world)
            .map(|l| l.shadow_maps_enabled)
            .collect();
        (suns, points.iter().filter(|&&s| s).count(), points.len())
    }

    /// Issue 13's shadowed scene: one sun with shadows and exactly four shadowed point lights
    /// (fewer when there are fewer lights); issue 34's: the sun's alone; without `shadows` or
    /// without the sun, none.
    #[test]
    fn the_shadowed_scene_has_a_shadowed_sun_and_four_shadowed_point_lights() {
        let plain = BenchScene {
            sun: true,
            range: Some(6.0),
            ..BenchScene::grid(64, 16)
        };
        let sun_only = BenchScene {
            shadows: true,
            ..plain
        };
        let shadowed = BenchScene {
            point_shadows: true,
            ..sun_only
        };
        assert!(shadowed.casts_shadows() && sun_only.casts_shadows() && !plain.casts_shadows());
        assert_eq!(shadow_casters(plain), (0, 0, 16));
        assert_eq!(shadow_casters(sun_only), (1, 0, 16));
        assert_eq!(shadow_casters(shadowed), (1, SHADOWED_POINT_LIGHTS, 16));
        assert_eq!(
            shadow_casters(BenchScene {
                lights: 2,
                ..shadowed
            }),
            (1, 2, 2)
        );
        let no_sun = BenchScene {
            sun: false,
            ..shadowed
        };
        assert!(!no_sun.casts_shadows());
        assert_eq!(shadow_casters(no_sun), (0, 0, 16));
    }

    /// `--radius` reaches every grid point light, and the scene's description names it when it
    /// is not the default.
    #[test]
    fn the_light_radius_reaches_every_point_light() {
        let radii = |scene: BenchScene| -> Vec<f32> {
            let mut world = World::new();
            world.init_resource::<Assets<Mesh>>();
            world.init_resource::<Assets<StandardMaterial>>();
            scene.spawn(&mut world);
            world
                .query::<&PointLight>()
                .iter(&world)
                .map(|l| l.radius)
                .collect()
        };
        let default = BenchScene::grid(16, 4);
        assert_eq!(radii(default), vec![DEFAULT_LIGHT_RADIUS; 4]);
        assert!(!default.lighting().contains("radius"));
        let points = BenchScene {
            light_radius: 0.0,
            ..default
        };
        assert_eq!(radii(points), vec![0.0; 4]);
        assert!(
            points.lighting().contains("and 0 m radius"),
            "{}",
            points.lighting()
        );
    }
}
