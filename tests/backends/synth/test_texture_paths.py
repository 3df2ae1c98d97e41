"""Solid textures, lighting overrides and the video camera paths of the primitive world."""

import numpy as np
import pytest

from backends.common.seeding import numpy_rng
from backends.synth import (
    TEXTURE_KINDS,
    Camera,
    Primitive,
    Scene,
    SolidTexture,
    dolly_path,
    handheld_shake,
    pan_path,
    random_texture,
    render,
    truck_path,
)
from backends.synth.render import ROOM


def one_cube(yaw=0.0, center=(0.0, 1.0, 0.35)):
    return Scene(objects=(Primitive("cube", "red", center, (0.7, 0.7, 0.7), yaw),), camera=Camera(64, 64))


def test_textures_change_colour_not_geometry():
    scene = one_cube()
    plain = render(scene)
    tex = {0: SolidTexture("checkers", period=0.1, color2=(0.0, 0.0, 1.0), contrast=1.0),
           "floor": SolidTexture("stripes", period=0.2, color2=(1.0, 1.0, 1.0), contrast=1.0)}
    textured = render(scene, textures=tex)
    assert np.array_equal(plain.depth, textured.depth) and np.array_equal(plain.instance, textured.instance)
    cube = plain.mask(0)
    # checkers: the cube now shows two colours (red and blue cells)
    blue = textured.rgb[cube][:, 2].astype(int) - textured.rgb[cube][:, 0].astype(int)
    assert (blue > 30).mean() > 0.2 and (blue < -30).mean() > 0.2
    floor = (plain.instance == ROOM) & (np.arange(64)[:, None] > 50)
    assert textured.rgb[floor].std() > plain.rgb[floor].std() + 10


def test_object_texture_moves_with_the_object():
    tex = {0: SolidTexture("stripes", period=0.15, contrast=1.0, color2=(0, 0, 1))}
    a = render(one_cube(center=(0.0, 1.0, 0.35)), textures=tex)
    b = render(one_cube(center=(0.0, 1.0, 0.35)), textures=tex)
    assert np.array_equal(a.rgb, b.rgb)  # deterministic
    w = tex[0].weight(np.array([[0.0, 0.0, 0.0], [0.15, 0.0, 0.0], [0.30, 0.0, 0.0]]))
    assert w.tolist() == [0.0, 1.0, 0.0]  # stripes alternate every period along the axis


@pytest.mark.parametrize("kind", TEXTURE_KINDS)
def test_every_texture_kind_is_bounded(kind):
    pts = numpy_rng(0).uniform(-2, 2, (500, 3))
    w = SolidTexture(kind, period=0.3).weight(pts)
    assert w.shape == (500,) and w.min() >= 0 and w.max() <= 1
    if kind != "plain":
        assert w.std() > 0.05


def test_random_textures_and_bad_texture():
    kinds = {random_texture(numpy_rng(i)).kind for i in range(40)}
    assert len(kinds) >= 4
    with pytest.raises(ValueError, match="unknown texture"):
        SolidTexture("plaid")


def test_lighting_overrides():
    scene = one_cube()
    dark, bright = render(scene, ambient=0.1), render(scene, ambient=0.9)
    assert dark.rgb.astype(int).sum() < bright.rgb.astype(int).sum()
    other = render(scene, light_dir=np.array([0.8, -0.2, 0.5]))
    assert not np.array_equal(other.rgb, render(scene).rgb)


def test_camera_paths():
    cam = Camera()
    dolly = dolly_path(cam, 5, distance=1.0)
    fwd = np.subtract(cam.look_at, cam.position) / np.linalg.norm(np.subtract(cam.look_at, cam.position))
    assert np.allclose(np.subtract(dolly[-1].position, dolly[0].position), fwd)
    truck = truck_path(cam, 5, distance=2.0)
    assert np.allclose(np.subtract(truck[-1].position, truck[0].position), 2.0 * cam.rotation[0])
    pan = pan_path(cam, 5, arc_deg=40)
    assert all(c.position == cam.position for c in pan)
    f0, f1 = pan[0].rotation[2], pan[-1].rotation[2]
    assert np.degrees(np.arccos(np.clip(f0[:2] @ f1[:2] / np.linalg.norm(f0[:2]) / np.linalg.norm(f1[:2]), -1, 1))) \
        == pytest.approx(40, abs=0.5)
    shaky = handheld_shake(dolly, numpy_rng(0), amplitude=0.02)
    moves = [np.linalg.norm(np.subtract(a.position, b.position)) for a, b in zip(shaky, dolly, strict=True)]
    assert 0 < max(moves) < 0.2
    with pytest.raises(ValueError):
        dolly_path(cam, 0)
