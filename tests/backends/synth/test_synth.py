import json

import numpy as np
import pytest

from backends.common.seeding import numpy_rng
from backends.synth import SHAPES, Camera, Primitive, Scene, orbit_path, random_scene, render
from backends.synth.render import BACKGROUND, ROOM


def one_object(shape="cube", color="red", center=(0.0, 1.0, 0.35), size=(0.7, 0.7, 0.7)):
    return Scene(objects=(Primitive(shape, color, center, size),), camera=Camera(64, 64))


def test_random_scenes_are_deterministic_and_non_overlapping():
    a, b = random_scene(numpy_rng(5), 4), random_scene(numpy_rng(5), 4)
    assert a == b and len(a.objects) == 4
    for i, p in enumerate(a.objects):
        for q in a.objects[i + 1:]:
            d = np.hypot(p.center[0] - q.center[0], p.center[1] - q.center[1])
            assert d > p.footprint_radius() + q.footprint_radius()
    assert random_scene(numpy_rng(6), 4) != a


def test_prompt_names_every_object_and_the_room():
    scene = Scene(objects=(Primitive("cube", "orange", (0, 1, 0.3), (0.6, 0.6, 0.6)),
                           Primitive("torus", "blue", (1, 1, 0.1), (0.6, 0.6, 0.2))))
    assert scene.prompt.startswith("an orange cube, a blue torus in a room")
    assert Scene().prompt == Scene().room.prompt


def test_scene_json_round_trip():
    scene = random_scene(numpy_rng(1), 3)
    again = Scene.from_dict(json.loads(json.dumps(scene.to_dict())))
    assert again == scene


def test_render_outputs_are_consistent():
    scene = one_object()
    out = render(scene)
    assert out.rgb.shape == (64, 64, 3) and out.rgb.dtype == np.uint8
    obj = out.mask(0)
    assert 50 < obj.sum() < 64 * 64 / 2  # the cube is visible, and not everything
    assert (out.instance[~obj] == ROOM).all()  # the room fills the rest of the frame
    assert np.abs(out.rgb[obj].mean(0) - [255 * 0.85 * 0.7, 0, 0]).max() < 90  # red-ish
    # depth is z-depth: projecting a hit point gives back its pixel and depth
    v, u = np.argwhere(obj)[len(np.argwhere(obj)) // 2]
    uvz = scene.camera.project(out.points[v, u][None])[0]
    assert abs(uvz[0] - (u + 0.5)) < 1e-3 and abs(uvz[1] - (v + 0.5)) < 1e-3
    assert abs(uvz[2] - out.depth[v, u]) < 1e-4


def test_object_is_nearer_than_the_wall_behind_it_and_bright_in_box_depth():
    out = render(one_object())
    obj = out.mask(0)
    assert out.depth[obj].max() < out.depth[~obj].max()
    nb = out.near_bright_depth()
    assert nb.min() >= 0 and nb.max() <= 1 and nb[obj].mean() > nb[~obj].mean()


def test_box_render_covers_the_shape():
    scene = one_object("sphere")
    shape, box = render(scene), render(scene, as_boxes=True)
    assert box.mask(0).sum() > shape.mask(0).sum()
    assert (box.mask(0) | ~shape.mask(0)).all()  # every sphere pixel lies inside the box's pixels


def test_only_and_no_room():
    scene = random_scene(numpy_rng(2), 3)
    out = render(scene, only=(1,), room=False)
    ids = set(np.unique(out.instance).tolist())
    assert ids <= {1, BACKGROUND} and 1 in ids


def test_shadows_darken_the_floor():
    scene = one_object(center=(0.0, 0.8, 0.45), size=(0.9, 0.9, 0.9))
    lit, shadowed = render(scene, shadows=False), render(scene, shadows=True)
    floor = lit.instance == ROOM
    assert shadowed.rgb[floor].sum() < lit.rgb[floor].sum()


def test_every_shape_renders_distinctly():
    from backends.synth.scene import SHAPE_ASPECT

    masks = {s: render(one_object(s, size=tuple(0.7 * a for a in SHAPE_ASPECT[s]))).mask(0) for s in SHAPES}
    for a in SHAPES:
        for b in SHAPES:
            if a < b:
                assert (masks[a] != masks[b]).sum() > 20, (a, b)


def test_supersampling_antialiases_colour_only():
    scene = one_object()
    plain, ss = render(scene), render(scene, supersample=2)
    assert ss.rgb.shape == plain.rgb.shape and ss.depth.shape == plain.depth.shape
    assert len(np.unique(ss.rgb.reshape(-1, 3), axis=0)) > len(np.unique(plain.rgb.reshape(-1, 3), axis=0))


def test_orbit_keeps_distance_and_target():
    cam = Camera()
    path = orbit_path(cam, 9, arc_deg=80)
    dists = [np.linalg.norm(np.subtract(c.position, c.look_at)) for c in path]
    assert np.allclose(dists, dists[0]) and path[4].position == pytest.approx(cam.position)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="unknown shape"):
        Primitive("pyramid", "red", (0, 0, 0), (1, 1, 1))
    with pytest.raises(ValueError, match="positive"):
        Primitive("cube", "red", (0, 0, 0), (1, 0, 1))
    with pytest.raises(ValueError, match="place"):
        random_scene(numpy_rng(0), 40)
