#!/usr/bin/env python3
"""Generates the showcase's sky: assets/environment_maps/sky_{specular,diffuse}_rgb9e5_zstd.ktx2.

A procedural clear sky (a blue gradient, a bright horizon, the sun where the showcase's
directional light comes from, dark ground below the horizon), written as KTX2 cube maps in the
format of Bevy's own example environment maps (rgb9e5, zstd supercompression), which Bevy's
`ktx2` and `zstd` features load (the crate's `tonemapping_luts` feature enables both):

* sky_specular: 256x256 faces, 9 mips. Mip 0 is the sky itself (the `Skybox` image); mip i is
  the sky prefiltered with the GGX lobe of perceptual roughness i / 8, which is the mip Bevy's
  environment-map shader reads for that roughness.
* sky_diffuse: 32x32 faces, 1 mip: the cosine-weighted (Lambertian) average of the sky.

Values are radiance in the units of Bevy's pisa maps (their diffuse map averages about 0.18), so
Bevy's usual `Skybox::brightness` and `EnvironmentMapLight::intensity` (1000 to 2000) apply.

Needs python3, numpy and the zstd command. Deterministic: running it again writes the same files.

    python3 scripts/make-environment-maps.py
"""
import os
import struct
import subprocess

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets", "environment_maps")
VK_FORMAT_E5B9G9R9_UFLOAT_PACK32 = 123
SUPERCOMPRESSION_ZSTD = 2
# Where the showcase's sun is: its DirectionalLight sits at (4, 8, 6) looking at the origin.
SUN = np.array([4.0, 8.0, 6.0]) / np.linalg.norm([4.0, 8.0, 6.0])
SUN_COS = np.cos(np.radians(1.5))  # a 1.5 degree disc: visible at 256x256 per face


def sky(d):
    """Radiance (linear RGB) seen in world directions d (..., 3), Bevy's axes (y up)."""
    y = d[..., 1:2]
    up = np.clip(y, 0.0, 1.0)
    zenith = np.array([0.16, 0.30, 0.70])
    horizon = np.array([0.62, 0.70, 0.80])
    t = (1.0 - up) ** 5
    above = zenith * (1.0 - t) + horizon * t
    cos_sun = np.clip((d * SUN).sum(-1, keepdims=True), -1.0, 1.0)
    glow = np.array([1.0, 0.85, 0.6]) * (0.5 * np.clip(cos_sun, 0.0, 1.0) ** 24)
    disc = np.array([1.0, 0.95, 0.85]) * 40.0 * (cos_sun > SUN_COS)
    above = above + glow + disc
    ground = np.array([0.11, 0.10, 0.09])
    haze = np.clip(-y / 0.06, 0.0, 1.0)  # the horizon's haze fades into the ground
    below = horizon * (1.0 - haze) + ground * haze
    return np.where(y >= 0.0, above, below)


def face_directions(size):
    """Unit world directions of every texel centre, faces in KTX order (+X -X +Y -Y +Z -Z),
    rows top to bottom; and each texel's solid angle."""
    c = (np.arange(size) + 0.5) / size * 2.0 - 1.0
    t, s = np.meshgrid(c, c, indexing="ij")
    one = np.ones_like(s)
    faces = [
        (one, -t, -s),
        (-one, -t, s),
        (s, one, t),
        (s, -one, -t),
        (s, -t, one),
        (-s, -t, -one),
    ]
    dirs = np.stack([np.stack(f, -1) for f in faces])  # (6, size, size, 3), cube space
    length = np.linalg.norm(dirs, axis=-1, keepdims=True)
    solid_angle = (2.0 / size) ** 2 / length[..., 0] ** 3
    dirs = dirs / length
    # Cube maps are left-handed: Bevy's shaders negate z before sampling.
    dirs[..., 2] = -dirs[..., 2]
    return dirs, solid_angle


def supersampled_sky(size, factor=4):
    """The sky averaged over each texel (factor x factor samples): no aliased sun disc."""
    dirs, _ = face_directions(size * factor)
    radiance = sky(dirs)
    return radiance.reshape(6, size, factor, size, factor, 3).mean(axis=(2, 4))


def downsample(faces):
    n = faces.shape[1] // 2
    return faces.reshape(6, n, 2, n, 2, 3).mean(axis=(2, 4))


def convolve(out_size, src, weight):
    """Out texel = sum_l L(l) w(n, l) dw(l) / sum_l w(n, l) dw(l) over the source texels."""
    src_dirs, src_sa = face_directions(src.shape[1])
    L = src.reshape(-1, 3)
    sd = src_dirs.reshape(-1, 3)
    sa = src_sa.reshape(-1)
    out_dirs, _ = face_directions(out_size)
    n = out_dirs.reshape(-1, 3)
    out = np.empty((n.shape[0], 3))
    for start in range(0, n.shape[0], 512):
        cos = np.clip(n[start : start + 512] @ sd.T, 0.0, 1.0)
        w = weight(cos) * sa
        out[start : start + 512] = (w @ L) / w.sum(-1, keepdims=True)
    return out.reshape(6, out_size, out_size, 3)


def ggx_weight(alpha):
    """GGX prefilter weight with n = v: D(h) (n.l), h halfway between n and l."""
    a2 = alpha * alpha

    def weight(cos_nl):
        cos_nh2 = (1.0 + cos_nl) / 2.0  # cos^2 of the half angle
        denom = cos_nh2 * (a2 - 1.0) + 1.0
        return a2 / (np.pi * denom * denom) * cos_nl

    return weight


def encode_rgb9e5(rgb):
    """rgb9e5 as the shared-exponent formula of the Vulkan spec."""
    n, b, emax = 9, 15, 31
    sharedexp_max = (2**n - 1) / 2**n * 2.0 ** (emax - b)
    rgb = np.clip(rgb.reshape(-1, 3), 0.0, sharedexp_max)
    maxc = rgb.max(-1)
    exp_p = np.maximum(-b - 1, np.floor(np.log2(np.maximum(maxc, 1e-30)))) + 1 + b
    maxs = np.floor(maxc / 2.0 ** (exp_p - b - n) + 0.5)
    exp_s = np.where(maxs == 2**n, exp_p + 1, exp_p)
    scale = 2.0 ** (exp_s - b - n)
    r, g, bl = (np.floor(rgb[:, i] / scale + 0.5).astype(np.uint32) for i in range(3))
    packed = r | (g << 9) | (bl << 18) | (exp_s.astype(np.uint32) << 27)
    return packed.astype("<u4").tobytes()


def basic_dfd_rgb9e5():
    """The Khronos Basic Data Format Descriptor of VK_FORMAT_E5B9G9R9_UFLOAT_PACK32: the samples
    of Bevy's pisa maps, with BT.709 primaries and bytesPlane0 = 0 (a supercompressed file)."""
    samples = []
    # Each channel's mantissa, then its share of the exponent (the exponent qualifier 0x20).
    for channel, offset in ((0, 0), (1, 9), (2, 18)):
        samples.append((offset, 8, channel, 0, 0, 0, 8448))  # 9 bits, upper 256 << 5
        samples.append((27, 4, channel | 0x20, 0, 0, 15, 31))  # 5 bits, bias 15
    body = b""
    for offset, length_minus_one, channel, pos, _, lower, upper in samples:
        body += struct.pack(
            "<HBB4BII", offset, length_minus_one, channel, 0, 0, 0, 0, lower, upper
        )
    block_size = 24 + len(body)
    header = struct.pack(
        "<HHHH4B4B8B",
        0, 0,  # vendor Khronos, descriptor type basic
        2, block_size,  # version 1.3, size
        1, 1, 1, 0,  # model RGBSDA, primaries BT709, transfer linear, flags
        0, 0, 0, 0,  # texel block 1x1x1x1
        0, 0, 0, 0, 0, 0, 0, 0,  # bytesPlane0..7: 0 for supercompressed data
    )
    block = header + body
    return struct.pack("<I", 4 + len(block)) + block


def write_ktx2(path, levels):
    """levels: list of (6, n, n, 3) arrays, largest first."""
    size = levels[0].shape[1]
    payload = []
    for level in levels:
        raw = encode_rgb9e5(level)
        packed = subprocess.run(
            ["zstd", "-19", "-q", "-c", "--no-check"], input=raw, capture_output=True, check=True
        ).stdout
        payload.append((packed, len(raw)))
    dfd = basic_dfd_rgb9e5()
    header_size = 80 + 24 * len(levels)
    dfd_offset = header_size
    data_offset = dfd_offset + len(dfd)
    # Smallest mip first in the file, as the KTX2 spec recommends.
    offsets = [0] * len(levels)
    cursor = data_offset
    for i in reversed(range(len(levels))):
        offsets[i] = cursor
        cursor += len(payload[i][0])
    out = bytearray(b"\xabKTX 20\xbb\r\n\x1a\n")
    out += struct.pack(
        "<9I", VK_FORMAT_E5B9G9R9_UFLOAT_PACK32, 1, size, size, 0, 0, 6, len(levels),
        SUPERCOMPRESSION_ZSTD,
    )
    out += struct.pack("<4I2Q", dfd_offset, len(dfd), 0, 0, 0, 0)
    for i, (packed, raw_len) in enumerate(payload):
        out += struct.pack("<3Q", offsets[i], len(packed), raw_len)
    out += dfd
    for i in reversed(range(len(levels))):
        out += payload[i][0]
    with open(path, "wb") as f:
        f.write(out)
    print(f"{os.path.relpath(path)}: {size}x{size} faces, {len(levels)} mips, {len(out)} bytes")


def main():
    os.makedirs(OUT, exist_ok=True)
    base = supersampled_sky(256)
    mips = int(np.log2(256)) + 1
    levels = [base]
    # Roughness levels: the small ones are barely wider than a texel, a box filter will do;
    # from mip 2 on, the GGX lobe over a source no finer than needed.
    half = downsample(base)
    levels.append(half)
    pyramid = {256: base, 128: half}
    while min(pyramid) > 16:
        small = min(pyramid)
        pyramid[small // 2] = downsample(pyramid[small])
    for level in range(2, mips):
        size = 256 >> level
        roughness = level / (mips - 1)
        src = pyramid[64] if size >= 16 else pyramid[32]
        levels.append(convolve(size, src, ggx_weight(roughness * roughness)))
    write_ktx2(os.path.join(OUT, "sky_specular_rgb9e5_zstd.ktx2"), levels)
    diffuse = convolve(32, pyramid[32], lambda cos: cos)
    write_ktx2(os.path.join(OUT, "sky_diffuse_rgb9e5_zstd.ktx2"), [diffuse])


if __name__ == "__main__":
    main()
