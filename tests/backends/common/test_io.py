import json
import subprocess

import numpy as np
import pytest
from PIL import Image

from backends.common.errors import InputError
from backends.common.imageio import (
    depth_to_colormap,
    load_depth_npy,
    load_depth_png16,
    save_depth_npy,
    save_depth_png16,
    save_png,
    to_rgb_array,
)
from backends.common.seeding import check_seed, numpy_rng, torch_generator
from backends.common.video import read_video, write_mp4


def test_image_round_trip_and_downscale(tmp_path):
    img = (np.arange(40 * 60 * 3) % 256).astype(np.uint8).reshape(40, 60, 3)
    path = save_png(img, tmp_path / "a.png")
    assert np.array_equal(to_rgb_array(path), img)
    small = to_rgb_array(path, max_side=30)
    assert small.shape == (20, 30, 3)
    assert to_rgb_array(np.zeros((10, 10))).shape == (10, 10, 3)
    assert to_rgb_array(np.ones((10, 10, 4), np.float32))[0, 0, 0] == 255


def test_bad_images_are_input_errors(tmp_path):
    (tmp_path / "x.png").write_text("not an image")
    with pytest.raises(InputError, match="not an image"):
        to_rgb_array(tmp_path / "x.png")
    with pytest.raises(InputError, match="at least 8"):
        to_rgb_array(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(InputError, match="No image"):
        to_rgb_array(None)
    with pytest.raises(InputError, match="shape"):
        to_rgb_array(np.zeros((4, 4, 4, 4)))


def test_depth_png16_round_trip_keeps_metric_values(tmp_path):
    rng = np.random.default_rng(0)
    depth = rng.uniform(0.5, 12.0, size=(31, 17))
    path = save_depth_png16(depth, tmp_path / "d.png")
    with Image.open(path) as im:
        assert im.mode.startswith("I;16") or im.mode == "I"
    back = load_depth_png16(path)
    assert back.shape == depth.shape
    assert np.abs(back - depth).max() <= (12.0 - 0.5) / 65535 + 1e-5


def test_depth_npy_round_trip_and_validation(tmp_path):
    depth = np.linspace(1, 2, 12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(load_depth_npy(save_depth_npy(depth, tmp_path / "d.npy")), depth)
    with pytest.raises(InputError, match="finite"):
        save_depth_npy(np.array([[1.0, np.nan]]), tmp_path / "bad.npy")
    with pytest.raises(InputError, match="H×W"):
        save_depth_png16(np.zeros((2, 2, 3)), tmp_path / "bad.png")


def test_colormap_puts_near_bright():
    vis = depth_to_colormap(np.array([[1.0, 5.0]]))
    assert vis[0, 0, 0] == 255 and vis[0, 1, 0] == 0


def _ffprobe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_mp4_is_h264_yuv420p_faststart_and_reads_back(tmp_path):
    frames = [np.full((33, 47, 3), 10 * i, np.uint8) for i in range(12)]
    path = write_mp4(frames, tmp_path / "v.mp4", fps=12)
    probe = _ffprobe(path)
    stream = probe["streams"][0]
    assert stream["codec_name"] == "h264" and stream["pix_fmt"] == "yuv420p"
    assert (stream["width"], stream["height"]) == (48, 34)  # padded to even for yuv420p
    assert int(stream["nb_frames"]) == 12
    head = path.read_bytes()[:200]
    assert head.find(b"moov") < head.find(b"mdat") or b"mdat" not in head  # faststart: index first
    clip = read_video(path)
    assert clip.frames.shape == (12, 34, 48, 3) and clip.fps == pytest.approx(12)
    assert not clip.truncated
    assert abs(int(clip.frames[5, 10, 10, 0]) - 50) <= 3


def test_video_reader_caps_frames_and_size(tmp_path):
    path = write_mp4((np.zeros((120, 200, 3), np.uint8) for _ in range(20)), tmp_path / "v.mp4", fps=10)
    clip = read_video(path, max_frames=7, max_side=50)
    assert clip.frames.shape[0] == 7 and clip.truncated
    assert max(clip.frames.shape[1:3]) == 50 and clip.source_size == (200, 120)


def test_video_errors_are_input_errors(tmp_path):
    (tmp_path / "x.mp4").write_bytes(b"garbage" * 100)
    with pytest.raises(InputError, match="not a video"):
        read_video(tmp_path / "x.mp4")
    with pytest.raises(InputError, match="not found"):
        read_video(tmp_path / "missing.mp4")
    with pytest.raises(InputError, match="same|expected"):
        write_mp4([np.zeros((8, 8, 3), np.uint8), np.zeros((10, 8, 3), np.uint8)], tmp_path / "y.mp4")
    with pytest.raises(InputError, match="at least one frame"):
        write_mp4([], tmp_path / "z.mp4")


def test_seeds_make_runs_repeatable():
    import torch

    assert torch.equal(torch.randn(3, generator=torch_generator(7)), torch.randn(3, generator=torch_generator(7)))
    assert numpy_rng(3).integers(1000) == numpy_rng(3).integers(1000)
    for bad in (-1, 2**32, 1.5, True):
        with pytest.raises(InputError):
            check_seed(bad)


def bomb_png(path, side=20_000):
    """A tiny PNG file whose header claims side×side pixels (a decompression bomb: PIL refuses to open it)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = zlib.compressobj(9)
    body = b"".join(rows.compress(b"\x00" * (side + 1)) for _ in range(side)) + rows.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", body) + chunk(b"IEND", b""))
    return path


def test_a_decompression_bomb_is_a_clear_input_error_before_decoding(tmp_path):
    with pytest.raises(InputError, match="bomb.png is too large: over 178 megapixels"):
        to_rgb_array(bomb_png(tmp_path / "bomb.png"))
    with pytest.raises(InputError, match="too large"):
        to_rgb_array(bomb_png(tmp_path / "bomb.png").read_bytes())
    # under PIL's limit but over ours: refused from the header, before 81 Mpx are decoded
    with pytest.raises(InputError, match="9000×9000; the limit is 16 megapixels"):
        to_rgb_array(bomb_png(tmp_path / "big.png", 9000))
