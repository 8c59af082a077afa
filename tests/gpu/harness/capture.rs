//! Catches every error-level log event of the process: the Khronos validation layer's messages
//! (wgpu-hal forwards them through `log` at error level), wgpu's and Bevy's own errors.
//!
//! GPU tests run one at a time (see [`super::GpuTest`]), so the list holds exactly the errors of
//! the running test.

use bevy::log::tracing_subscriber::{
    self, EnvFilter, Layer,
    filter::{LevelFilter, Targets},
    layer::SubscriberExt,
    util::SubscriberInitExt,
};
use std::{
    fmt::Write as _,
    sync::{Mutex, Once},
};
use tracing::{Event, Level, Subscriber, field::Field};

static ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static SWAPCHAIN_EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static INIT: Once = Once::new();

/// Set (to anything) in a child process's environment to record wgpu's debug messages about
/// the surface ([`take_swapchain_events`]). Off by default: raising `log`'s level to debug
/// costs every test a little.
pub const WATCH_SWAPCHAIN_ENV: &str = "TILE_TEST_WATCH_SWAPCHAIN";

/// What wgpu says at debug level when a surface is (re)configured, with its size
/// (wgpu-core `configure`), and when the driver answers a present with `VK_SUBOPTIMAL_KHR`
/// (wgpu-hal's Vulkan swapchain). Nothing else of theirs logs a stale swapchain: an
/// `ERROR_OUT_OF_DATE_KHR` from `vkAcquireNextImageKHR` reaches Bevy as
/// `CurrentSurfaceTexture::Outdated`, which it answers by configuring the surface again with
/// the configuration it has, and one from `vkQueuePresentKHR` is dropped by wgpu.
const SWAPCHAIN_TARGETS: [&str; 2] = ["wgpu_core::device::resource", "wgpu_hal::vulkan::swapchain"];

/// Installs the process-wide subscriber once: readable output filtered by `RUST_LOG` (default
/// `info`), plus the unfiltered error capture.
pub fn install() {
    INIT.call_once(|| {
        let readable = EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new("info,wgpu=warn,naga=warn,offset_allocator=warn"));
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_test_writer()
                    .with_filter(readable),
            )
            .with(ErrorCapture.with_filter(LevelFilter::WARN))
            .with(std::env::var_os(WATCH_SWAPCHAIN_ENV).map(|_| {
                SwapchainWatch.with_filter(
                    SWAPCHAIN_TARGETS
                        .into_iter()
                        .fold(Targets::new(), |targets, target| {
                            targets.with_target(target, Level::DEBUG)
                        }),
                )
            }))
            // Also installs the `log` -> `tracing` bridge: the validation layer's messages come
            // through `log`.
            .init();
    });
}

/// Removes and returns the warnings captured so far (they never fail a test by themselves).
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Removes and returns the errors captured so far.
pub fn take_errors() -> Vec<String> {
    std::mem::take(&mut *ERRORS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Removes and returns the surface messages recorded so far (see [`WATCH_SWAPCHAIN_ENV`]).
pub fn take_swapchain_events() -> Vec<String> {
    std::mem::take(&mut *SWAPCHAIN_EVENTS.lock().unwrap_or_else(|e| e.into_inner()))
}

struct SwapchainWatch;

impl<S: Subscriber> Layer<S> for SwapchainWatch {
    fn on_event(&self, event: &Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = String::new();
        event.record(&mut |field: &Field, value: &dyn std::fmt::Debug| {
            if field.name() == "message" {
                let _ = write!(text, "{value:?}");
            }
        });
        if text.contains("configuring surface") || text.contains("Suboptimal present") {
            SWAPCHAIN_EVENTS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(text);
        }
    }
}

struct ErrorCapture;

impl<S: Subscriber> Layer<S> for ErrorCapture {
    fn on_event(&self, event: &Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        let level = *event.metadata().level();
        if level != Level::ERROR && level != Level::WARN {
            return;
        }
        let mut text = format!("[{}] ", event.metadata().target());
        event.record(&mut |field: &Field, value: &dyn std::fmt::Debug| {
            if field.name() == "message" {
                let _ = write!(text, "{value:?}");
            } else if !field.name().starts_with("log.") {
                let _ = write!(text, " {}={value:?}", field.name());
            }
        });
        let list = if level == Level::ERROR {
            &ERRORS
        } else {
            &WARNINGS
        };
        let mut list = list.lock().unwrap_or_else(|e| e.into_inner());
        // wgpu-hal logs a validation message's objects, queues and command buffers as separate
        // events starting with a tab: they belong to the message before.
        let continuation = text
            .split_once("] ")
            .is_some_and(|(_, message)| message.starts_with('\t'));
        match list.last_mut() {
            Some(previous) if continuation => {
                previous.push('\n');
                previous.push_str(&text);
            }
            _ => list.push(text),
        }
    }
}
