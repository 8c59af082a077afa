//! Headless Bevy apps on Mesa lavapipe under the Khronos validation layer.
//!
//! Every GPU test starts with [`GpuTest::start`]: it serialises GPU tests (one wgpu instance
//! at a time, and the error list belongs to the running test), and when the test ends it fails
//! the test if any error-level message was logged meanwhile: validation layer messages
//! (synchronization validation is enabled by wgpu-hal whenever the layer is present), wgpu and
//! Bevy errors.

pub mod capture;
pub mod image_compare;
pub mod presented;
pub mod window;

pub use image_compare::{Frame, assert_frames_match};

use bevy::{
    asset::RenderAssetUsages,
    camera::RenderTarget,
    log::LogPlugin,
    prelude::*,
    render::{
        RenderPlugin,
        gpu_readback::{Readback, ReadbackComplete},
        render_resource::{Extent3d, TextureDimension, TextureFormat, TextureUsages},
        settings::{Backends, WgpuSettings},
    },
    window::ExitCondition,
    winit::WinitPlugin,
};
use bevy_tile_deferred::{
    TileDeferredPlugin, TileRenderReports, TileViewReport, tiers::TierDecision,
    tile_deferred::missing::TileMissing,
};
use std::sync::{Arc, Mutex, MutexGuard};

static GPU: Mutex<()> = Mutex::new(());

/// A running GPU test; see the module docs.
pub struct GpuTest {
    name: &'static str,
    _exclusive: MutexGuard<'static, ()>,
}

impl GpuTest {
    /// Starts a GPU test: waits for the GPU, installs the log capture, clears old errors.
    pub fn start(name: &'static str) -> Self {
        let exclusive = GPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        capture::install();
        capture::take_warnings();
        let stale = capture::take_errors();
        if !stale.is_empty() {
            eprintln!(
                "{name}: ignoring {} errors logged before the test started",
                stale.len()
            );
        }
        Self {
            name,
            _exclusive: exclusive,
        }
    }

    /// Errors logged so far in this test (taken: they will not fail the test).
    pub fn take_errors(&self) -> Vec<String> {
        capture::take_errors()
    }

    /// Warnings logged so far in this test.
    pub fn take_warnings(&self) -> Vec<String> {
        capture::take_warnings()
    }
}

impl Drop for GpuTest {
    fn drop(&mut self) {
        let errors = capture::take_errors();
        if !errors.is_empty() && !std::thread::panicking() {
            panic!(
                "{}: {} error(s) logged (validation layer, wgpu or Bevy):\n{}",
                self.name,
                errors.len(),
                errors.join("\n---\n")
            );
        }
    }
}

/// Bevy's default plugins as every GPU test uses them: Vulkan only, pipelines compiled
/// synchronously (the first frames are complete), no Bevy logger (the harness installs its
/// own). Without a window winit is off; with one, winit may run on the test's thread.
pub fn test_plugins(window: Option<Window>) -> bevy::app::PluginGroupBuilder {
    test_plugins_compiling(window, true)
}

/// [`test_plugins`], with Bevy's pipelines compiled synchronously (each frame's draws all have
/// their pipelines) or, as in a game, in the background (`synchronous` false: the first frames
/// skip the draws whose pipelines are not ready).
pub fn test_plugins_compiling(
    window: Option<Window>,
    synchronous: bool,
) -> bevy::app::PluginGroupBuilder {
    let headless = window.is_none();
    let plugins = DefaultPlugins
        .set(WindowPlugin {
            primary_window: window,
            exit_condition: ExitCondition::DontExit,
            close_when_requested: false,
            ..default()
        })
        .set(RenderPlugin {
            render_creation: WgpuSettings {
                backends: Some(Backends::VULKAN),
                ..default()
            }
            .into(),
            synchronous_pipeline_compilation: synchronous,
            ..default()
        })
        .disable::<LogPlugin>();
    if headless {
        plugins.disable::<WinitPlugin>()
    } else {
        plugins.set(WinitPlugin {
            run_on_any_thread: true,
        })
    }
}

/// The viewport of the camera under test in the split-screen tests: the lower-right three
/// quarters by seven eighths of a `width` x `height` target, drawn over a camera that filled the
/// whole target first (as in Bevy's `split_screen`) or over the output the camera keeps.
pub fn lower_right_viewport(width: u32, height: u32) -> bevy::camera::Viewport {
    bevy::camera::Viewport {
        physical_position: UVec2::new(width / 4, height / 8),
        physical_size: UVec2::new(width * 3 / 4, height * 7 / 8),
        ..default()
    }
}

/// A Bevy app with no window that renders cameras into an image and reads it back.
pub struct HeadlessApp {
    /// The app; add systems, resources and entities freely before the first `render`.
    pub app: App,
    /// The image cameras render into.
    pub target: Handle<Image>,
    finished: bool,
}

impl HeadlessApp {
    /// Bevy's CPU light clustering (what Bevy does on Android) for the reference cameras: on
    /// lavapipe, Bevy's GPU clustering now and then leaves lights out of its own forward image
    /// (a spot light once, the showcase's orbiting point lights once), and a reference that is
    /// not the same every run cannot fail the tile path reliably. The tile path clusters on its
    /// own either way. `PbrPlugin` inserts the settings when the app finishes: one frame first.
    pub fn use_cpu_light_clustering(&mut self) {
        self.update();
        self.app
            .world_mut()
            .resource_mut::<bevy::light::cluster::GlobalClusterSettings>()
            .gpu_clustering = None;
    }

    /// Default plugins without winit and without Bevy's logger (the harness has its own),
    /// Vulkan only, pipelines compiled synchronously so the first frames are complete, and
    /// [`TileDeferredPlugin`].
    pub fn new(width: u32, height: u32) -> Self {
        Self::with_plugins(width, height, test_plugins(None))
    }

    /// [`HeadlessApp::new`] with the caller's plugins in place of [`test_plugins`] (which
    /// they usually are, with a setting changed), plus [`TileDeferredPlugin`].
    pub fn with_plugins(width: u32, height: u32, plugins: bevy::app::PluginGroupBuilder) -> Self {
        let mut app = App::new();
        app.add_plugins(plugins).add_plugins(TileDeferredPlugin);

        let target = add_target_image(&mut app, width, height);
        Self {
            app,
            target,
            finished: false,
        }
    }

    /// Adds another render-target image of the same kind as `target`.
    pub fn add_target(&mut self, width: u32, height: u32) -> Handle<Image> {
        add_target_image(&mut self.app, width, height)
    }

    /// The render target to put on cameras.
    pub fn render_target(&self) -> RenderTarget {
        RenderTarget::Image(self.target.clone().into())
    }

    /// Spawns a camera rendering into the target.
    pub fn spawn_camera(&mut self, camera: impl Bundle) -> Entity {
        let target = self.render_target();
        self.app.world_mut().spawn((camera, target)).id()
    }

    /// Asserts that `camera` rendered on a merged tile tier with nothing listed in `TileMissing`, and
    /// returns its last report; `name` labels the failures.
    pub fn tile_report_with_nothing_missing(&self, camera: Entity, name: &str) -> TileViewReport {
        let world = self.app.world();
        let tier = world.get::<TierDecision>(camera).expect("a decision").tier;
        // A merged tile tier: the unmerged debug tier is not what these tests render.
        assert!(tier.is_tile() && !tier.is_unmerged(), "{name}: {tier:?}");
        let listed = world
            .get::<TileMissing>(camera)
            .map(|missing| missing.items.clone())
            .unwrap_or_default();
        assert!(listed.is_empty(), "{name}: {listed:?}");
        world
            .resource::<TileRenderReports>()
            .get(camera)
            .expect("a report")
    }

    fn finish_setup(&mut self) {
        if !self.finished {
            self.app.finish();
            self.app.cleanup();
            self.finished = true;
        }
    }

    /// Runs one frame and waits until the GPU has finished it.
    pub fn update(&mut self) {
        self.finish_setup();
        crate::scenes::headless::update_and_wait(&mut self.app);
    }

    /// Runs `warmup` frames, then reads the target back.
    pub fn render(&mut self, warmup: u32) -> Frame {
        for _ in 0..warmup {
            self.update();
        }
        self.read_target()
    }

    /// Reads the target back after the next frame.
    pub fn read_target(&mut self) -> Frame {
        let target = self.target.clone();
        self.read_image(&target)
    }

    /// Reads `image` back after the next frame.
    pub fn read_image(&mut self, image: &Handle<Image>) -> Frame {
        self.read_images(std::slice::from_ref(image))
            .pop()
            .expect("one frame per image")
    }

    /// Reads every image of `images` back after the next frame (all in the same frames, so
    /// many targets cost no more frames than one).
    pub fn read_images(&mut self, images: &[Handle<Image>]) -> Vec<Frame> {
        let received: Vec<Arc<Mutex<Option<Vec<u8>>>>> =
            images.iter().map(|_| Arc::default()).collect();
        let readers: Vec<Entity> = images
            .iter()
            .zip(&received)
            .map(|(image, received)| {
                let sink = received.clone();
                self.app
                    .world_mut()
                    .spawn(Readback::texture(image.clone()))
                    .observe(move |event: On<ReadbackComplete>| {
                        *sink.lock().unwrap() = Some(event.data.clone());
                    })
                    .id()
            })
            .collect();
        for _ in 0..10 {
            self.update();
            if received.iter().all(|r| r.lock().unwrap().is_some()) {
                break;
            }
        }
        for reader in readers {
            self.app.world_mut().despawn(reader);
        }
        images
            .iter()
            .zip(&received)
            .map(|(image, received)| {
                let data = received
                    .lock()
                    .unwrap()
                    .take()
                    .expect("readback completes within 10 frames");
                let size = self
                    .app
                    .world()
                    .resource::<Assets<Image>>()
                    .get(image)
                    .map(|i| i.size())
                    .expect("the image exists");
                unpad(data, size)
            })
            .collect()
    }
}

/// wgpu copies rows padded to 256 bytes.
pub fn unpad(data: Vec<u8>, size: UVec2) -> Frame {
    let row = size.x as usize * 4;
    let padded_row = row.div_ceil(256) * 256;
    assert_eq!(
        data.len(),
        padded_row * size.y as usize,
        "readback size of a {}x{} RGBA8 image",
        size.x,
        size.y
    );
    let rgba = data
        .chunks_exact(padded_row)
        .flat_map(|r| &r[..row])
        .copied()
        .collect();
    Frame {
        width: size.x,
        height: size.y,
        rgba,
    }
}

/// An RGBA8 sRGB render target created with data (not uninitialised: wgpu then never
/// zero-fills it behind a raw Vulkan writer's back).
fn add_target_image(app: &mut App, width: u32, height: u32) -> Handle<Image> {
    let size = Extent3d {
        width,
        height,
        depth_or_array_layers: 1,
    };
    let mut image = Image::new_fill(
        size,
        TextureDimension::D2,
        &[0, 0, 0, 255],
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.texture_descriptor.usage |=
        TextureUsages::RENDER_ATTACHMENT | TextureUsages::COPY_SRC | TextureUsages::TEXTURE_BINDING;
    app.world_mut().resource_mut::<Assets<Image>>().add(image)
}

/// Runs the ignored test `name` of this binary in a child process and fails if it fails.
pub fn run_in_child_process(name: &str) {
    run_in_child_process_with_env(name, &[]);
}

/// [`run_in_child_process`] with `env` added to the child's environment.
pub fn run_in_child_process_with_env(name: &str, env: &[(&str, &str)]) {
    run_child(name, env, false);
}

/// [`run_in_child_process_with_env`] without the X display: for headless children that lose
/// their device. Under Xvfb, a process whose Vulkan device was destroyed (Bevy's renderer alone
/// does it) leaves the X server refusing new connections for a moment after it exits, and the
/// next test that connects (vulkaninfo's surface) fails; a headless child needs no display.
pub fn run_headless_child_with_env(name: &str, env: &[(&str, &str)]) {
    run_child(name, env, true);
}

fn run_child(name: &str, env: &[(&str, &str)], without_display: bool) {
    let mut command = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    if without_display {
        command.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    }
    let output = command
        .envs(env.iter().copied())
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child test {name} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

/// Runs the ignored window test `name` in a child process (winit allows one event loop per
/// process); fails with instructions when there is no X display. One window test at a time:
/// windows open at the same place, and a window covered by another one does not show what it
/// presents (window tests read it back from the X server).
pub fn run_window_test_in_child_process(name: &str) {
    run_window_test_in_child_process_with_env(name, &[]);
}

/// [`run_window_test_in_child_process`] with `env` added to the child's environment.
pub fn run_window_test_in_child_process_with_env(name: &str, env: &[(&str, &str)]) {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "window tests need an X display: run `bash scripts/test.sh` (it starts Xvfb) or \
         `xvfb-run -a cargo test`"
    );
    let _exclusive = GPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    run_in_child_process_with_env(name, env);
}

/// The environment variable through which a parent asks a window child for its error counts
/// ([`record_error_counts`]).
const ERROR_COUNTS_FILE: &str = "GPU_TEST_ERROR_COUNTS_FILE";

/// What an error is counted as: its validation message ID (`VUID-...`, `SYNC-...`) where it has
/// one, else its whole text.
pub fn error_key(error: &str) -> String {
    error
        .split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | '(' | ')' | ','))
        .find(|word| word.starts_with("VUID-") || word.starts_with("SYNC-"))
        .unwrap_or(error)
        .to_string()
}

/// `errors` counted by [`error_key`].
pub fn error_counts(errors: &[String]) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for error in errors {
        *counts.entry(error_key(error)).or_insert(0) += 1;
    }
    counts
}

/// In a child run by [`run_window_test_against_control`] or [`run_test_against_control`]: hands `errors` (all of them,
/// taken from the test) to the parent, which compares them with the control's. Returns false
/// when the child runs alone (no parent asked): the caller then asserts there are none.
pub fn record_error_counts(errors: &[String]) -> bool {
    let Some(path) = std::env::var_os(ERROR_COUNTS_FILE) else {
        return false;
    };
    let lines: String = error_counts(errors)
        .into_iter()
        .map(|(key, count)| format!("{count}\t{}\n", key.replace('\n', " ")))
        .collect();
    std::fs::write(path, lines).expect("the error counts are written");
    true
}

/// Runs the window child `control` (the same scenario with a Bevy camera), then `test` (with
/// the tile camera), and fails if `test` logged any error more often than `control` did: lavapipe's
/// swapchain gives some validation messages for stock Bevy too (a window shrunk to nothing), and
/// only what the crate adds to them is the crate's. Both children pass their own asserts.
pub fn run_window_test_against_control(control: &str, test: &str) {
    run_window_test_against_control_with_env(control, test, &[]);
}

/// [`run_window_test_against_control`] with `env` added to both children's environment.
pub fn run_window_test_against_control_with_env(control: &str, test: &str, env: &[(&str, &str)]) {
    children_against_control(
        control,
        test,
        env,
        run_window_test_in_child_process_with_env,
    );
}

/// [`run_window_test_against_control`] for headless children, run without the X display
/// ([`run_headless_child_with_env`]; the caller holds the GPU).
pub fn run_test_against_control(control: &str, test: &str) {
    children_against_control(control, test, &[], run_headless_child_with_env);
}

/// Runs `control` then `test` with `run`; fails on any error `test` logged more often than
/// `control` did.
fn children_against_control(
    control: &str,
    test: &str,
    env: &[(&str, &str)],
    run: fn(&str, &[(&str, &str)]),
) {
    let dir = std::env::temp_dir();
    let counts = |name: &str| {
        let path = dir.join(format!(
            "gpu-error-counts-{}-{}",
            std::process::id(),
            name.replace("::", "-")
        ));
        let _ = std::fs::remove_file(&path);
        let mut child_env = env.to_vec();
        child_env.push((ERROR_COUNTS_FILE, path.to_str().expect("a UTF-8 temp dir")));
        run(name, &child_env);
        let text = std::fs::read_to_string(&path).expect("the child wrote its error counts");
        let _ = std::fs::remove_file(&path);
        text.lines()
            .filter_map(|line| {
                let (count, key) = line.split_once('\t')?;
                Some((key.to_string(), count.parse::<usize>().ok()?))
            })
            .collect::<std::collections::BTreeMap<String, usize>>()
    };
    let control_counts = counts(control);
    let test_counts = counts(test);
    eprintln!("errors of {control} (control): {control_counts:?}");
    eprintln!("errors of {test}: {test_counts:?}");
    let beyond: Vec<String> = test_counts
        .iter()
        .filter(|(key, count)| **count > control_counts.get(*key).copied().unwrap_or(0))
        .map(|(key, count)| {
            format!(
                "{key}: {count} (control: {})",
                control_counts.get(key).copied().unwrap_or(0)
            )
        })
        .collect();
    assert!(
        beyond.is_empty(),
        "{test} logged errors beyond its Bevy control {control}:\n{}",
        beyond.join("\n")
    );
}

/// Serves `app`'s Bevy Remote Protocol over HTTP on a free loopback port (Bevy's `RemotePlugin`
/// and `RemoteHttpPlugin`, feature `remote`) and returns its `host:port`. The port is picked by
/// the system, since the tests of this binary may run side by side.
#[cfg(feature = "remote")]
pub fn serve_brp(app: &mut App) -> String {
    use bevy_remote::{RemotePlugin, http::RemoteHttpPlugin};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    app.add_plugins((
        RemotePlugin::default(),
        RemoteHttpPlugin::default().with_port(port),
    ));
    format!("127.0.0.1:{port}")
}
