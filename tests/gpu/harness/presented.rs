//! What a window shows: the X server's copy of it, read with `xwd` (x11-apps), i.e. the image
//! that was presented. Bevy's `Screenshot` is not that image: on a screenshot frame the tile
//! path writes Bevy's capture texture instead of the swapchain image, so a screenshot can look
//! right while every presented frame is wrong. Window tests compare the two.

use super::Frame;
use bevy::{
    math::Rect,
    prelude::*,
    render::view::screenshot::{Screenshot, ScreenshotCaptured},
};
use std::sync::{
    Arc, Mutex,
    mpsc::{Receiver, TryRecvError, channel},
};

/// A read of a window's pixels from the X server, running on a thread so that the app keeps
/// rendering and presenting meanwhile.
pub struct PresentedCapture(Receiver<Result<Frame, String>>);

impl PresentedCapture {
    /// Starts reading the window titled `title` (the app must be presenting frames without a
    /// screenshot pending, so that what the server shows came through the ordinary path).
    pub fn start(title: &str) -> Self {
        let (sender, receiver) = channel();
        let title = title.to_owned();
        std::thread::spawn(move || {
            let _ = sender.send(read_window(&title));
        });
        Self(receiver)
    }

    /// The window's pixels once read; panics when `xwd` failed.
    pub fn poll(&self) -> Option<Frame> {
        match self.0.try_recv() {
            Ok(result) => Some(result.unwrap_or_else(|e| panic!("{e}"))),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => panic!("the xwd thread ended without a result"),
        }
    }
}

/// The presented image and Bevy's screenshot of one settled state, taken one after the other:
/// the presented one first, while no screenshot is pending (a screenshot frame takes another
/// route for the tile output). Drive it once per frame until it returns both.
#[derive(Default)]
pub struct PresentedAndScreenshot {
    capture: Option<PresentedCapture>,
    presented: Option<Frame>,
    screenshot: Arc<Mutex<Option<Image>>>,
    requested: bool,
}

impl PresentedAndScreenshot {
    /// Advances the capture of the primary window titled `title`: `(presented, screenshot)`
    /// once both are in.
    pub fn step(&mut self, commands: &mut Commands, title: &str) -> Option<(Frame, Frame)> {
        if self.presented.is_none() {
            let capture = self
                .capture
                .get_or_insert_with(|| PresentedCapture::start(title));
            self.presented = capture.poll();
            return None;
        }
        if !self.requested {
            self.requested = true;
            let slot = self.screenshot.clone();
            commands.spawn(Screenshot::primary_window()).observe(
                move |captured: On<ScreenshotCaptured>| {
                    *slot.lock().unwrap() = Some(captured.image.clone());
                },
            );
            return None;
        }
        let image = self.screenshot.lock().unwrap().take()?;
        let presented = self.presented.take().unwrap();
        *self = Self::default();
        Some((presented, image_to_frame(image)))
    }
}

/// An RGBA8 image (a screenshot) as a frame.
pub fn image_to_frame(image: Image) -> Frame {
    let rgba = image
        .try_into_dynamic()
        .expect("the screenshot converts to an image")
        .to_rgba8();
    Frame {
        width: rgba.width(),
        height: rgba.height(),
        rgba: rgba.into_raw(),
    }
}

fn read_window(title: &str) -> Result<Frame, String> {
    let output = std::process::Command::new("xwd")
        .args(["-silent", "-name", title])
        .output()
        .map_err(|e| {
            format!(
                "cannot run xwd ({e}): window tests read the presented image with it; install \
                 x11-apps (scripts/test.sh does)"
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "xwd -name {title:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    parse_xwd(&output.stdout)
}

/// Decodes an XWD dump of a 24/32-bit TrueColor window (what Xvfb `-screen 0 WxHx24` gives).
pub fn parse_xwd(data: &[u8]) -> Result<Frame, String> {
    let field = |index: usize| -> Result<u32, String> {
        data.get(index * 4..index * 4 + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| "XWD header truncated".to_owned())
    };
    let (header_size, format, width, height) = (field(0)?, field(2)?, field(4)?, field(5)?);
    let (byte_order, bits_per_pixel, bytes_per_line) = (field(7)?, field(11)?, field(12)?);
    let masks = [field(14)?, field(15)?, field(16)?];
    let colors = field(19)?;
    if format != 2 || !(bits_per_pixel == 24 || bits_per_pixel == 32) {
        return Err(format!(
            "XWD: expected a 24/32-bit ZPixmap, got format {format} at {bits_per_pixel} bits"
        ));
    }
    let start = header_size as usize + colors as usize * 12;
    let pixel_bytes = bits_per_pixel as usize / 8;
    let needed = start + bytes_per_line as usize * height as usize;
    if data.len() < needed {
        return Err(format!("XWD: {} bytes, {needed} needed", data.len()));
    }
    let mut rgba = Vec::with_capacity(width as usize * height as usize * 4);
    for y in 0..height as usize {
        for x in 0..width as usize {
            let i = start + y * bytes_per_line as usize + x * pixel_bytes;
            let bytes = &data[i..i + pixel_bytes];
            let value = if byte_order == 0 {
                bytes.iter().rev().fold(0u32, |v, &b| v << 8 | u32::from(b))
            } else {
                bytes.iter().fold(0u32, |v, &b| v << 8 | u32::from(b))
            };
            for mask in masks {
                rgba.push(((value & mask) >> mask.trailing_zeros()) as u8);
            }
            rgba.push(255);
        }
    }
    Ok(Frame {
        width,
        height,
        rgba,
    })
}

/// Pixels whose RGB differs by more than 8 between `a` and `b`, inside `rect` (pixels, clamped
/// to the frames) and outside it: `((inside_differ, inside), (outside_differ, outside))`.
pub fn differing_inside_and_out(
    a: &Frame,
    b: &Frame,
    rect: Option<Rect>,
) -> ((usize, usize), (usize, usize)) {
    let (mut inside, mut outside) = ((0, 0), (0, 0));
    for y in 0..a.height {
        for x in 0..a.width {
            let i = ((y * a.width + x) * 4) as usize;
            let differs = (0..3).any(|c| a.rgba[i + c].abs_diff(b.rgba[i + c]) > 8);
            let centre = bevy::math::Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
            let counts = if rect.is_some_and(|r| r.contains(centre)) {
                &mut inside
            } else {
                &mut outside
            };
            counts.0 += usize::from(differs);
            counts.1 += 1;
        }
    }
    (inside, outside)
}

/// Asserts that the presented image (`xwd`) is Bevy's screenshot of the same state: outside
/// `live` at most 0.2% of the pixels differ; inside `live` (an area whose contents change from
/// frame to frame, like the inspector's numbers and plots) at most 10%. On failure writes
/// `<name>-presented.png`, `-screenshot.png` and `-diff.png` and names them.
pub fn assert_presented_matches_screenshot(
    name: &str,
    presented: &Frame,
    screenshot: &Frame,
    live: Option<Rect>,
) {
    assert_eq!(
        (presented.width, presented.height),
        (screenshot.width, screenshot.height),
        "{name}: the presented window and the screenshot have different sizes"
    );
    let ((live_differ, live_total), (differ, total)) =
        differing_inside_and_out(presented, screenshot, live);
    if differ * 500 <= total && live_differ * 10 <= live_total {
        return;
    }
    let paths = [
        presented.save_png(&format!("{name}-presented")),
        screenshot.save_png(&format!("{name}-screenshot")),
        super::image_compare::difference_image(presented, screenshot)
            .save_png(&format!("{name}-diff")),
    ];
    panic!(
        "{name}: the presented image is not the screenshot: {differ} of {total} pixels differ \
         outside the live area, {live_differ} of {live_total} inside it; images: {}",
        paths.map(|p| p.display().to_string()).join(", ")
    );
}

/// Pure black pixels (what wgpu's zero fill leaves) outside `rect`, and the pixels there.
pub fn black_outside(frame: &Frame, rect: Option<Rect>) -> (usize, usize) {
    let (mut black, mut total) = (0, 0);
    for y in 0..frame.height {
        for x in 0..frame.width {
            let centre = bevy::math::Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
            if rect.is_some_and(|r| r.contains(centre)) {
                continue;
            }
            let i = ((y * frame.width + x) * 4) as usize;
            black += usize::from(frame.rgba[i..i + 3] == [0, 0, 0]);
            total += 1;
        }
    }
    (black, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2x1 XWD dump as Xvfb writes it (LSB first, 32 bits per pixel, 8-bit masks).
    fn dump(pixels: [u32; 2], byte_order: u32) -> Vec<u8> {
        let name = b"w\0\0\0";
        let mut header = [0u32; 25];
        header[0] = 100 + name.len() as u32;
        header[1] = 7;
        header[2] = 2;
        header[3] = 24;
        header[4] = 2;
        header[5] = 1;
        header[7] = byte_order;
        header[11] = 32;
        header[12] = 8;
        header[14] = 0xff0000;
        header[15] = 0x00ff00;
        header[16] = 0x0000ff;
        let mut data: Vec<u8> = header.iter().flat_map(|v| v.to_be_bytes()).collect();
        data.extend_from_slice(name);
        for pixel in pixels {
            if byte_order == 0 {
                data.extend_from_slice(&pixel.to_le_bytes());
            } else {
                data.extend_from_slice(&pixel.to_be_bytes());
            }
        }
        data
    }

    #[test]
    fn xwd_dumps_decode_to_rgba() {
        for byte_order in [0, 1] {
            let frame = parse_xwd(&dump([0x00_11_22_33, 0x00_ff_80_01], byte_order)).unwrap();
            assert_eq!((frame.width, frame.height), (2, 1));
            assert_eq!(frame.rgba, [0x11, 0x22, 0x33, 255, 0xff, 0x80, 0x01, 255]);
        }
        assert!(parse_xwd(&dump([0, 0], 0)[..110]).is_err(), "truncated");
    }

    #[test]
    fn comparisons_count_inside_and_outside() {
        let grey = Frame {
            width: 4,
            height: 4,
            rgba: vec![100; 64],
        };
        let mut other = grey.clone();
        other.rgba[0] = 0; // (0, 0): inside the rect below
        other.rgba[(3 * 4 + 3) * 4] = 0; // (3, 3): outside
        let rect = Some(Rect::new(0.0, 0.0, 2.0, 2.0));
        assert_eq!(
            differing_inside_and_out(&grey, &other, rect),
            ((1, 4), (1, 12))
        );
        let mut black = grey.clone();
        black.rgba[(3 * 4 + 3) * 4..(3 * 4 + 3) * 4 + 3].fill(0);
        assert_eq!(black_outside(&black, rect), (1, 12));
    }
}
