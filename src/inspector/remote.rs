//! The inspector showing another app's frame (feature `remote`): it reads that app's
//! [`TileFrameReport`] over the Bevy Remote Protocol every [`TileInspectorRemote::interval_seconds`]
//! and computes its panels from it exactly as from this app's own report. A phone's game with
//! `RemotePlugin`, `RemoteHttpPlugin` and this crate's `remote` feature, after `adb forward
//! tcp:15702 tcp:15702`, is read at `127.0.0.1:15702`.

use crate::frame_report::{TileFrameReport, TileReportParams, fetch_report};
use bevy::prelude::*;
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

/// Where a request's thread leaves its answer.
type Answer = Arc<Mutex<Option<Result<TileFrameReport, String>>>>;

/// The app whose frame the inspector shows (main world).
#[derive(Resource, Clone, Debug)]
pub struct TileInspectorRemote {
    /// `host:port` of an app serving BRP over HTTP with this crate's `remote` feature; None:
    /// this app's own frame.
    pub address: Option<String>,
    /// Seconds between two requests.
    pub interval_seconds: f64,
    /// The last report read from `address`.
    pub report: Option<TileFrameReport>,
    /// When it arrived (seconds of the app's real time).
    pub received_at: Option<f64>,
    /// Why the last request failed, if it did.
    pub last_error: Option<String>,
    /// The request in flight, answered by its thread; with the address it went to.
    pending: Option<(String, Answer)>,
    /// When the last request was sent.
    sent_at: Option<f64>,
}

impl Default for TileInspectorRemote {
    fn default() -> Self {
        Self {
            address: None,
            interval_seconds: 0.5,
            report: None,
            received_at: None,
            last_error: None,
            pending: None,
            sent_at: None,
        }
    }
}

impl TileInspectorRemote {
    /// Shows the frame of the app at `address` (`host:port`).
    pub fn connect(&mut self, address: impl Into<String>) {
        let address = address.into();
        if self.address.as_deref() != Some(address.as_str()) {
            *self = Self {
                address: Some(address),
                interval_seconds: self.interval_seconds,
                ..default()
            };
        }
    }

    /// Shows this app's own frame again.
    pub fn disconnect(&mut self) {
        *self = Self {
            interval_seconds: self.interval_seconds,
            ..default()
        };
    }

    /// The report the panels show: the remote app's last one while connected.
    pub(super) fn shown(&self) -> Option<&TileFrameReport> {
        self.address.as_ref().and(self.report.as_ref())
    }
}

/// Sends a request every interval (one at a time, from its own thread: a phone's answer takes
/// tens of milliseconds and must not hold the frame) and takes the answer when it has come.
pub(super) fn poll_remote(time: Res<Time<Real>>, mut remote: ResMut<TileInspectorRemote>) {
    let Some(address) = remote.address.clone() else {
        return;
    };
    let now = time.elapsed_secs_f64();
    if let Some((to, answer)) = &remote.pending {
        let answer = answer.lock().ok().and_then(|mut a| a.take());
        let to = to.clone();
        let Some(answer) = answer else { return };
        remote.pending = None;
        // An answer from an address since left is dropped.
        if to == address {
            match answer {
                Ok(report) => {
                    remote.report = Some(report);
                    remote.received_at = Some(now);
                    remote.last_error = None;
                }
                Err(error) => remote.last_error = Some(error),
            }
        }
    }
    if remote.pending.is_some()
        || remote
            .sent_at
            .is_some_and(|sent| now - sent < remote.interval_seconds)
    {
        return;
    }
    let answer: Answer = Arc::new(Mutex::new(None));
    let slot = answer.clone();
    let to = address.clone();
    let spawned = std::thread::Builder::new()
        .name("tile inspector remote".into())
        .spawn(move || {
            let result = fetch_report(&to, &TileReportParams::default(), Duration::from_secs(2));
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(result);
            }
        });
    match spawned {
        Ok(_) => remote.pending = Some((address, answer)),
        Err(error) => remote.last_error = Some(format!("no thread for the request: {error}")),
    }
    remote.sent_at = Some(now);
}
