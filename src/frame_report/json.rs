//! The frame's report as JSON: [`TileReportFile`] writes it at the end of frames.

use super::{TileFrameReport, TileFrameReportParam};
use bevy::prelude::*;
use std::path::{Path, PathBuf};

impl TileFrameReport {
    /// The report as indented JSON.
    pub fn to_json(&self) -> String {
        // Every field is plain data (strings, numbers, enums, vectors): serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|error| {
            format!("{{\"error\": \"the report did not serialise: {error}\"}}")
        })
    }

    /// A report read back from [`Self::to_json`]'s JSON (a file, or a remote app's answer).
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// Writes the frame's [`TileFrameReport`] as JSON at the end of a frame (in `Last`), every frame
/// or once when asked. Insert it as a resource; a `{frame}` in the path is replaced by the
/// frame count, giving one file per frame, and without it the one file is rewritten. Missing
/// folders are created; a file that cannot be written is logged (once per distinct error) and
/// kept in [`Self::last_error`], never a panic.
///
/// ```no_run
/// use bevy::prelude::*;
/// use bevy_tile_deferred::prelude::*;
///
/// App::new()
///     .add_plugins((DefaultPlugins, TileDeferredPlugin))
///     // One file per frame, for CI to diff.
///     .insert_resource(TileReportFile::every_frame("reports/frame-{frame}.json"))
///     .run();
/// ```
///
/// On demand: insert [`TileReportFile::on_demand`], then call [`TileReportFile::request`] (from a
/// key press, a test, a debug menu); the next frame's end writes it.
#[derive(Resource, Clone, Debug, PartialEq)]
pub struct TileReportFile {
    /// Where to write; `{frame}` is replaced by the frame count.
    pub path: PathBuf,
    /// Write at the end of every frame; false: only after [`Self::request`].
    pub every_frame: bool,
    /// Set by [`Self::request`], cleared once written.
    pub requested: bool,
    /// The last file written.
    pub last_written: Option<PathBuf>,
    /// Why the last write failed, if it did (cleared by the next success).
    pub last_error: Option<String>,
}

impl TileReportFile {
    /// Writes the report at the end of every frame.
    pub fn every_frame(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            every_frame: true,
            requested: false,
            last_written: None,
            last_error: None,
        }
    }

    /// Writes the report only at the end of a frame in which [`Self::request`] was called.
    pub fn on_demand(path: impl Into<PathBuf>) -> Self {
        Self {
            every_frame: false,
            ..Self::every_frame(path)
        }
    }

    /// Asks for the report to be written at the end of this frame.
    pub fn request(&mut self) {
        self.requested = true;
    }

    /// The file the report of `frame` goes to.
    pub fn path_for(&self, frame: u32) -> PathBuf {
        let path = self.path.to_string_lossy();
        if path.contains("{frame}") {
            PathBuf::from(path.replace("{frame}", &frame.to_string()))
        } else {
            self.path.clone()
        }
    }
}

fn write(path: &Path, json: &str) -> std::io::Result<()> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)?;
    }
    std::fs::write(path, json)
}

/// Writes the report where [`TileReportFile`] says, when it says.
pub(crate) fn write_report_file(
    file: Option<ResMut<TileReportFile>>,
    report: TileFrameReportParam,
) {
    let Some(mut file) = file else { return };
    if !file.every_frame && !file.requested {
        return;
    }
    let report = report.collect();
    let path = file.path_for(report.frame);
    match write(&path, &report.to_json()) {
        Ok(()) => {
            file.requested = false;
            file.last_error = None;
            file.last_written = Some(path);
        }
        Err(error) => {
            let why = format!("{}: {error}", path.display());
            if file.last_error.as_deref() != Some(why.as_str()) {
                warn!("bevy_tile_deferred: the frame report was not written to {why}");
            }
            // An on-demand request is answered, written or not: retrying every frame would
            // log nothing new and may never succeed.
            file.requested = false;
            file.last_error = Some(why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_back_bit_for_bit() {
        // GPU and CPU times, fractions, clear colours: serde_json's default float parser may land
        // a bit off; a report read back must equal the report written. Any bit pattern of a
        // finite f64 and f32 (a linear congruential walk over them).
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state
        };
        for _ in 0..200_000 {
            let wide = f64::from_bits(next());
            if wide.is_finite() {
                let read: f64 =
                    serde_json::from_str(&serde_json::to_string(&wide).unwrap()).expect("a number");
                assert_eq!(read.to_bits(), wide.to_bits(), "{wide:e}");
            }
            let narrow = f32::from_bits((next() >> 32) as u32);
            if narrow.is_finite() {
                let read: f32 = serde_json::from_str(&serde_json::to_string(&narrow).unwrap())
                    .expect("a number");
                assert_eq!(read.to_bits(), narrow.to_bits(), "{narrow:e}");
            }
        }
        let report = TileFrameReport {
            frame: 7,
            frame_ms: 16.600_142_857_142_857,
            device: None,
            cameras: Vec::new(),
        };
        assert_eq!(
            TileFrameReport::from_json(&report.to_json()).unwrap(),
            report
        );
    }

    #[test]
    fn a_frame_placeholder_gives_one_file_per_frame() {
        let every = TileReportFile::every_frame("out/frame-{frame}.json");
        assert_eq!(every.path_for(7), PathBuf::from("out/frame-7.json"));
        let one = TileReportFile::on_demand("out/report.json");
        assert_eq!(one.path_for(7), PathBuf::from("out/report.json"));
        assert!(!one.every_frame && !one.requested);
    }
}
