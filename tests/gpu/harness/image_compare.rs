//! Pixel comparisons for rendered frames, with PNGs of the actual, expected and difference
//! images written on failure.

use bevy::{
    asset::RenderAssetUsages,
    image::Image,
    render::render_resource::{Extent3d, TextureDimension, TextureFormat},
};
use std::path::PathBuf;

/// A rendered frame read back to the CPU: 8-bit sRGB RGBA, rows top to bottom.
#[derive(Clone)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub rgba: Vec<u8>,
}

impl Frame {
    /// The pixel at (x, y), clamped to the frame.
    pub fn pixel(&self, x: i32, y: i32) -> [u8; 4] {
        let x = x.clamp(0, self.width as i32 - 1) as usize;
        let y = y.clamp(0, self.height as i32 - 1) as usize;
        let i = (y * self.width as usize + x) * 4;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    /// Writes the frame as a PNG under the test output folder and returns its path.
    pub fn save_png(&self, name: &str) -> PathBuf {
        let path = output_dir().join(format!("{name}.png"));
        let image = Image::new(
            Extent3d {
                width: self.width,
                height: self.height,
                depth_or_array_layers: 1,
            },
            TextureDimension::D2,
            self.rgba.clone(),
            TextureFormat::Rgba8UnormSrgb,
            RenderAssetUsages::MAIN_WORLD,
        );
        let dynamic = image
            .try_into_dynamic()
            .expect("an RGBA8 image converts to a DynamicImage");
        dynamic
            .to_rgba8()
            .save(&path)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }
}

/// Where GPU tests write images: `<target>/tmp/gpu-tests/`.
pub fn output_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gpu-tests");
    std::fs::create_dir_all(&dir).expect("create the GPU test output folder");
    dir
}

/// What an effect changed in the tile frame and in Bevy's, compared: `(bevy_changed, apart)`,
/// where `bevy_changed` is how much the effect changed Bevy's frame (`bevy_before` to `bevy`)
/// and `apart` how far the tile frame's change (`tile_before` to `tile`) is from Bevy's, each
/// the mean absolute difference per channel, in 1/255. An effect that did not run on the tile
/// frame leaves `apart` at Bevy's whole change.
pub fn changes_apart(
    tile_before: &Frame,
    tile: &Frame,
    bevy_before: &Frame,
    bevy: &Frame,
) -> (f64, f64) {
    let tile_change = change(tile_before, tile);
    let bevy_change = change(bevy_before, bevy);
    let apart = mean_abs(&tile_change, &bevy_change);
    let bevy_changed = mean_abs(&bevy_change, &vec![0; bevy_change.len()]);
    (bevy_changed, apart)
}

/// How far an effect's run on the tile frame may be from its run on Bevy's
/// ([`assert_effect_as_in_bevy`]).
pub struct EffectBounds {
    /// Bevy's frame must change by more than this (per channel on average, in 1/255): less is
    /// too little to tell whether the effect ran on the tile frame.
    pub min_bevy_change: f64,
    /// The tile frame's change must be within this fraction of Bevy's whole change from it.
    pub apart_fraction: f64,
}

/// Asserts that an effect (`what`, for the log) ran on the tile frame as on Bevy's: the tile
/// frame is Bevy's (>= 40 dB, p99.5 <= 8/255), the effect changes Bevy's frame (from
/// `bevy_plain`) by more than `bounds.min_bevy_change`, and the tile frame's change (from
/// `tile_plain`) is within `bounds.apart_fraction` of Bevy's. Saves the tile frame and logs the
/// figures, with `note` after them.
pub fn assert_effect_as_in_bevy(
    name: &str,
    what: &str,
    [tile, bevy, tile_plain, bevy_plain]: [&Frame; 4],
    bounds: EffectBounds,
    note: &str,
) {
    let path = tile.save_png(name);
    let (bevy_changed, apart) = changes_apart(tile_plain, tile, bevy_plain, bevy);
    eprintln!(
        "{name}: the tile camera against Bevy's: PSNR {:.2} dB; {what} changes Bevy's frame by \
         {bevy_changed:.3}/255 per channel on average, the tile frame's change is \
         {apart:.3}/255 from Bevy's{note} ({})",
        psnr(tile, bevy),
        path.display()
    );
    assert_frames_match(name, tile, bevy, 40.0, 8);
    assert!(
        bevy_changed > bounds.min_bevy_change,
        "{name}: {what} changes too little to test"
    );
    assert!(
        apart < bounds.apart_fraction * bevy_changed,
        "{name}: the tile frame's change ({apart:.3}/255 from Bevy's) is not Bevy's \
         ({bevy_changed:.3}/255)"
    );
}

/// Per channel, `after - before`.
fn change(before: &Frame, after: &Frame) -> Vec<i16> {
    before
        .rgba
        .iter()
        .zip(&after.rgba)
        .map(|(b, a)| i16::from(*a) - i16::from(*b))
        .collect()
}

/// The mean absolute difference of two changes.
fn mean_abs(a: &[i16], b: &[i16]) -> f64 {
    let sum: f64 = a.iter().zip(b).map(|(a, b)| f64::from((a - b).abs())).sum();
    sum / a.len() as f64
}

/// Peak signal-to-noise ratio over the RGB channels, in dB (infinite when identical).
pub fn psnr(a: &Frame, b: &Frame) -> f64 {
    assert_eq!(
        (a.width, a.height),
        (b.width, b.height),
        "frame sizes differ"
    );
    let mut sum = 0.0f64;
    let mut count = 0usize;
    for (pa, pb) in a.rgba.chunks_exact(4).zip(b.rgba.chunks_exact(4)) {
        for c in 0..3 {
            let d = f64::from(pa[c]) - f64::from(pb[c]);
            sum += d * d;
            count += 1;
        }
    }
    let mse = sum / count as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0f64 * 255.0 / mse).log10()
    }
}

/// The `percentile` (0..=100) of the per-channel absolute differences over RGB.
pub fn channel_difference_percentile(a: &Frame, b: &Frame, percentile: f64) -> u8 {
    assert_eq!(
        (a.width, a.height),
        (b.width, b.height),
        "frame sizes differ"
    );
    let mut histogram = [0usize; 256];
    let mut count = 0usize;
    for (pa, pb) in a.rgba.chunks_exact(4).zip(b.rgba.chunks_exact(4)) {
        for c in 0..3 {
            histogram[pa[c].abs_diff(pb[c]) as usize] += 1;
            count += 1;
        }
    }
    let rank = ((percentile / 100.0) * count as f64).ceil() as usize;
    let mut seen = 0usize;
    for (difference, &n) in histogram.iter().enumerate() {
        seen += n;
        if seen >= rank.max(1) {
            return difference as u8;
        }
    }
    255
}

/// A difference image: black where equal, brighter where different (x4 to make small
/// differences visible).
pub fn difference_image(a: &Frame, b: &Frame) -> Frame {
    let rgba = a
        .rgba
        .chunks_exact(4)
        .zip(b.rgba.chunks_exact(4))
        .flat_map(|(pa, pb)| {
            let d = |c: usize| pa[c].abs_diff(pb[c]).saturating_mul(4);
            [d(0), d(1), d(2), 255]
        })
        .collect();
    Frame {
        width: a.width,
        height: a.height,
        rgba,
    }
}

/// Asserts two frames match to `min_psnr` dB and a 99.5th-percentile channel difference of at
/// most `max_p995`; on failure writes `<name>-actual.png`, `-expected.png`, `-diff.png` and names
/// them in the panic message.
pub fn assert_frames_match(
    name: &str,
    actual: &Frame,
    expected: &Frame,
    min_psnr: f64,
    max_p995: u8,
) {
    let psnr = psnr(actual, expected);
    let p995 = channel_difference_percentile(actual, expected, 99.5);
    if psnr >= min_psnr && p995 <= max_p995 {
        return;
    }
    let paths = [
        actual.save_png(&format!("{name}-actual")),
        expected.save_png(&format!("{name}-expected")),
        difference_image(actual, expected).save_png(&format!("{name}-diff")),
    ];
    panic!(
        "{name}: PSNR {psnr:.2} dB (need >= {min_psnr}), 99.5th percentile channel difference \
         {p995} (need <= {max_p995}); images: {}",
        paths.map(|p| p.display().to_string()).join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(width: u32, height: u32, rgb: [u8; 3]) -> Frame {
        Frame {
            width,
            height,
            rgba: (0..width * height)
                .flat_map(|_| [rgb[0], rgb[1], rgb[2], 255])
                .collect(),
        }
    }

    #[test]
    fn psnr_and_percentiles() {
        let a = flat(10, 10, [100, 100, 100]);
        assert_eq!(psnr(&a, &a), f64::INFINITY);
        let mut b = a.clone();
        b.rgba[0] = 110; // one channel of one pixel off by 10
        let expected = 10.0 * (255.0f64 * 255.0 / (100.0 / 300.0)).log10();
        assert!((psnr(&a, &b) - expected).abs() < 1e-9);
        assert_eq!(channel_difference_percentile(&a, &b, 99.5), 0);
        assert_eq!(channel_difference_percentile(&a, &b, 100.0), 10);
    }

    #[test]
    fn mismatch_writes_images_and_fails() {
        let a = flat(8, 8, [0, 0, 0]);
        let b = flat(8, 8, [255, 255, 255]);
        let result =
            std::panic::catch_unwind(|| assert_frames_match("harness-self-test", &a, &b, 30.0, 8));
        let message = *result.expect_err("must fail").downcast::<String>().unwrap();
        assert!(message.contains("harness-self-test-diff.png"), "{message}");
        assert!(output_dir().join("harness-self-test-diff.png").exists());
    }
}
