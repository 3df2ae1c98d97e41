"""Raw and viewable outputs: 16-bit PNGs, colour maps, the ground-truth-free flicker score, point clouds."""

import io

import numpy as np
import pytest
from PIL import Image

from backends.common.errors import InputError
from backends.videodepth.outputs import (
    NEAR_FAR,
    colorize,
    flicker_score,
    ply_bytes,
    png16_bytes,
    point_cloud,
    read_ply,
)


def test_png16_round_trip():
    disp = np.linspace(0, 1, 12 * 7).reshape(7, 12)
    back = np.asarray(Image.open(io.BytesIO(png16_bytes(disp))))
    assert back.dtype == np.uint16 and back.shape == (7, 12)
    assert np.abs(back / 65535 - disp).max() <= 0.5 / 65535 + 1e-12


def test_colorize_checks_the_map():
    assert colorize(np.zeros((3, 4)), "inferno").shape == (3, 4, 3)
    with pytest.raises(InputError, match="colour map"):
        colorize(np.zeros((3, 4)), "no-such-map")


def test_flicker_counts_only_static_pixels_and_not_a_steady_video():
    rng = np.random.default_rng(0)
    rgb = np.repeat(rng.integers(0, 255, (1, 8, 8, 3)), 6, 0)
    steady = np.repeat(rng.random((1, 8, 8)), 6, 0)
    flicker = steady + rng.normal(0, 0.05, steady.shape)
    assert flicker_score(steady, rgb) == pytest.approx(0.0, abs=1e-12)
    assert flicker_score(flicker, rgb) > 0.03
    moving = rgb.copy()
    moving[1:] = 255 - moving[1:]  # every pixel changes colour: nothing is static between frames 0 and 1
    assert flicker_score(flicker[:2], moving[:2]) is None
    assert flicker_score(steady[:1], rgb[:1]) is None


def test_point_cloud_depth_range_and_ply_round_trip():
    disp = np.tile(np.linspace(0, 1, 16)[:, None], (1, 20))
    rgb = np.zeros((16, 20, 3), np.uint8)
    rgb[..., 1] = 200
    xyz, col = point_cloud(disp, rgb)
    assert xyz.shape == (320, 3) and col.shape == (320, 3)
    z = -xyz[:, 2]
    assert z.min() == pytest.approx(NEAR_FAR[0], rel=0.05) and z.max() == pytest.approx(NEAR_FAR[1], rel=0.05)
    back, colours = read_ply(ply_bytes(xyz, col))
    assert np.array_equal(back, xyz) and np.array_equal(colours, col)
    assert len(point_cloud(np.zeros((400, 400)), np.zeros((400, 400, 3), np.uint8), max_points=10_000)[0]) <= 10_000
    with pytest.raises(InputError):
        point_cloud(disp, rgb[:8])
