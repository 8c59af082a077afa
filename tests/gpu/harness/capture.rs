//! Catches every error-level log event of the process: the Khronos validation layer's messages
//! (wgpu-hal forwards them through `log` at error level), wgpu's and Bevy's own errors.
//!
//! GPU tests run one at a time (see [`super::GpuTest`]), so the list holds exactly the errors of
//! the running test.

use bevy::log::tracing_subscriber::{
    self, EnvFilter, Layer, filter::LevelFilter, layer::SubscriberExt, util::SubscriberInitExt,
};
use std::{
    fmt::Write as _,
    sync::{Mutex, Once},
};
use tracing::{Event, Level, Subscriber, field::Field};

static ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static INIT: Once = Once::new();

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
