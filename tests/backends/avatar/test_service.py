"""The Avatar service on a tiny untrained reconstructor: the actions' contracts, exports, uploads, bad input."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from backends.avatar import outputs, service, viewer
from backends.avatar.export import read_ply
from backends.avatar.pose import Pose, preset
from backends.avatar.uploads import parse_upload
from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent, run_to_result

STANDARD_3DGS = (["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"] + [f"f_rest_{i}" for i in range(45)]
                 + ["opacity"] + [f"scale_{i}" for i in range(3)] + [f"rot_{i}" for i in range(4)])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from backends.avatar import body
    from backends.avatar.network import ReconstructorConfig, build_reconstructor, save_reconstructor

    torch.manual_seed(0)
    coarse, rest = body.coarse_template(), body.rest_body()
    config = ReconstructorConfig(image_size=32, feat_dim=8, vertex_dim=16, point_dim=8, heads=2, vertex_layers=1,
                                 encoder_width=4)
    model = build_reconstructor(config, coarse.vertices(rest.vertices).float(), coarse.faces,
                                coarse.lbs_weights().float(), coarse=coarse)
    folder = tmp_path_factory.mktemp("ckpt")
    save_reconstructor(model, folder)
    return str(folder)


@pytest.fixture(scope="module")
def result(checkpoint):
    events = []
    out = None
    for item in service.reconstruct(service.ReconstructRequest(subject=2, n_views=2, iterations=2, model=checkpoint,
                                                               levels=1)):
        if isinstance(item, ProgressEvent):
            events.append(item)
        else:
            out = item
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert sum(e.message.startswith("feedback iteration ") for e in events) == 2
    return out


def test_reconstruct_a_synthetic_subject(result):
    assert result.source == "synthetic subject 2" and result.subject_seed == service.SUBJECT_SEED0 + 2
    assert result.n_gaussians == len(result.avatar.subdivision.faces) == 4 * len(result.avatar.subdivision.coarse_faces)
    assert len(result.inputs) == 2 and result.inputs[0].shape == (32, 32, 3) and result.inputs[0].dtype == np.uint8
    assert result.seconds > 0 and result.card()["iterations"] == 2
    # the skeleton re-poses exactly as the body model's own pose_transforms
    from backends.avatar.body import rest_body
    from backends.avatar.pose import pose_transforms

    pose = preset("waving")
    assert torch.allclose(result.skeleton.transforms(pose), pose_transforms(rest_body(result.phenotype), pose).float(),
                          atol=1e-5)


def test_stop_ends_the_reconstruction(checkpoint):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        run_to_result(service.reconstruct(service.ReconstructRequest(subject=0, model=checkpoint, levels=1), token))


def checked(request):
    """What every action does with a request before its work: its declared fields, then its own checks."""
    from backends.common.params import check_request

    check_request(request)
    request.validate()
    return request


@pytest.mark.parametrize("kwargs, words", [
    (dict(subject=None), "either"), (dict(subject=1, n_views=6), "Views must be a whole number from 1 to 5"),
    (dict(subject=1, iterations=0), "Feedback iterations"), (dict(subject=-1), r"Subject \(held out\) must be"),
    (dict(subject=1, model="no-such-model"), "Unknown avatar model"), (dict(subject=1, size=8), "Input size"),
])
def test_bad_reconstruct_requests(kwargs, words):
    with pytest.raises(InputError, match=words):
        checked(service.ReconstructRequest(**kwargs))


def test_novel_view_with_ground_truth_and_reload(result, tmp_path):
    r = service.render_novel(result, service.RenderRequest(pose=preset("walking"), azimuth_deg=30, size=64))
    assert r.image.shape == (64, 64, 3) and r.renderer.startswith("numba")
    assert r.ground_truth is not None and r.ground_truth.shape == (64, 64, 3) and math.isfinite(r.psnr)
    assert (r.alpha > 0.5).mean() > 0.03  # the person is in the frame
    paths = outputs.write_avatar(result, preset("walking"), tmp_path)
    again = outputs.load_avatar(paths["avatar"])
    r2 = service.render_novel(again, service.RenderRequest(pose=preset("walking"), azimuth_deg=30, size=64))
    assert np.array_equal(r.image, r2.image)
    with pytest.raises(InputError, match=r"Size \(px\) must be a whole number from 16 to 1024, got 4096"):
        service.render_novel(result, service.RenderRequest(size=4096))
    with pytest.raises(InputError, match="Renderer must be one of"):
        service.render_novel(result, service.RenderRequest(backend="opengl"))
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        service.render_novel(result, service.RenderRequest(size=64), token)
    (tmp_path / "junk.safetensors").write_bytes(b"not a file")
    with pytest.raises(InputError):
        outputs.load_avatar(tmp_path / "junk.safetensors")


def test_exports_use_the_standard_3dgs_layout(result, tmp_path):
    pose = preset("T-pose")
    paths = outputs.write_avatar(result, pose, tmp_path)
    raw = paths["gaussians"].read_bytes()
    header = raw[:raw.index(b"end_header\n")].decode("ascii").splitlines()
    assert header[:2] == ["ply", "format binary_little_endian 1.0"]
    assert header[2] == f"element vertex {result.n_gaussians}"
    props = [line.split()[2] for line in header if line.startswith("property")]
    assert props == STANDARD_3DGS and all(line.split()[1] == "float" for line in header if line.startswith("property"))
    g = read_ply(raw)
    posed = result.avatar.gaussians(result.skeleton.transforms(pose))
    assert torch.allclose(g.means.float(), posed.means, atol=1e-5)
    assert torch.allclose(g.colors.float(), posed.colors.clamp(0, 1), atol=1e-3) or g.colors.min() < 0  # SH dc
    obj = paths["mesh_obj"].read_text().splitlines()
    assert sum(line.startswith("v ") for line in obj) == result.avatar.subdivision.n_fine_vertices
    assert sum(line.startswith("f ") for line in obj) == result.n_gaussians
    header = next(line for line in obj if line.startswith("# pose (degrees): "))
    assert json.loads(header.split(": ", 1)[1])["arm_raise_l"] == 90  # the pose the files are in
    assert not (tmp_path / "card.json").exists() and "card" not in paths  # a run's one card is its run.json


def test_viewer_skinning_matches_the_server_pose(result):
    """The browser blends each vertex's 4 strongest bones: close to the server's full LBS."""
    payload = viewer.avatar_payload(result)
    n = payload["count"]
    import base64

    def arr(key, dtype, cols, src=payload):
        return np.frombuffer(base64.b64decode(src[key]), dtype=dtype).reshape(-1, cols)

    assert arr("splats", "<f4", 14).shape == (n, 14)
    skin = arr("bones", np.uint8, 8, payload["mesh"])
    assert (skin[:, 4:].astype(int).sum(1) == 255).all()
    rest = arr("vertices", "<f4", 3, payload["mesh"]).astype(np.float64)
    pose = preset("waving")
    bones = np.asarray(viewer.bones_payload(result, pose)["bones"])
    from backends.avatar.export import quaternion_to_matrix

    rot = quaternion_to_matrix(bones[:, [3, 0, 1, 2]])
    moved = np.einsum("bij,vj->vbi", rot, rest) + bones[None, :, 4:]  # every bone applied to every vertex
    idx, w = skin[:, :4].astype(int), skin[:, 4:] / 255.0
    browser = (moved[np.arange(len(rest))[:, None], idx] * w[..., None]).sum(1)
    server = outputs.posed_mesh(result, pose)[0]
    err = np.linalg.norm(browser - server, axis=1)
    assert np.median(err) < 0.003 and err.max() < 0.05  # metres


def test_videos(result, tmp_path):
    from backends.common.video import probe_video

    v = run_to_result(service.video(result, service.VideoRequest(kind="animation", frames=6, size=64), tmp_path))
    info = probe_video(v.path)
    assert v.path.name == "animation.mp4" and info.size == (64, 64) and v.mean_render_ms > 0
    poses = service.animation_poses(11)
    assert poses[0] == Pose() and len({p.arm_raise_r for p in poses}) > 3
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        run_to_result(service.video(result, service.VideoRequest(frames=20, size=64), tmp_path, token))
    with pytest.raises(InputError, match="Frames must be a whole number from 2 to 240"):
        checked(service.VideoRequest(frames=10_000))
    with pytest.raises(InputError, match="background"):
        checked(service.VideoRequest(background=(1.0, 2.0, 0.0)))


def _example(tmp_path):
    from backends.common.imageio import to_rgb_array

    paths = outputs.write_example(1, 2, 48, tmp_path)
    text = paths["cameras"].read_text()
    images = {f"view{i}.png": to_rgb_array(str(paths[f"view{i}"])) for i in range(2)}
    masks = {f"view{i}_mask.png": to_rgb_array(str(paths[f"view{i}_mask"])) for i in range(2)}
    return text, images, masks


def test_upload_example_reconstructs(checkpoint, tmp_path):
    text, images, masks = _example(tmp_path)
    up = parse_upload(text, images, masks)
    assert up.images.shape == (2, 48, 48, 3) and up.pose == Pose.from_dict(json.loads(text)["pose"])
    r = run_to_result(service.reconstruct(service.ReconstructRequest(subject=None, upload=up, model=checkpoint,
                                                                     levels=1, iterations=1)))
    assert r.source == "upload (2 views)" and r.subject_seed is None and r.inputs[0].shape == (32, 32, 3)


def test_upload_errors_say_what_is_wrong(tmp_path):
    text, images, masks = _example(tmp_path)
    spec = json.loads(text)

    def bad(spec_or_text, imgs=images, msks=masks):
        t = spec_or_text if isinstance(spec_or_text, str) else json.dumps(spec_or_text)
        with pytest.raises(InputError) as e:
            parse_upload(t, imgs, msks)
        return str(e.value)

    assert "not valid JSON" in bad("{views: [")
    assert "2 view(s), but 1 image(s)" in bad(spec, {"view0.png": images["view0.png"]})
    assert "1 to 5" in bad({**spec, "views": spec["views"] * 3})
    assert "must match its image's size" in bad(spec, images, {**masks, "view1_mask.png": np.zeros((40, 40, 3), np.uint8)})
    assert "'nope.png' is not among" in bad({**spec, "views": [{**spec["views"][0], "image": "nope.png"}, spec["views"][1]]})
    assert "rigid" in bad({**spec, "views": [{**spec["views"][0], "world_to_camera": np.eye(4).tolist()[:3] + [[1, 0, 0, 1]]},
                                           spec["views"][1]]})
    assert "3×3" in bad({**spec, "views": [{**spec["views"][0], "K": [1, 2]}, spec["views"][1]]})
    assert "pose slider" in bad({**spec, "pose": {"arm_raise_l": 500}})
    assert "same size" in bad(spec, {**images, "view1.png": np.zeros((40, 40, 3), np.uint8)},
                              {**masks, "view1_mask.png": np.full((40, 40, 3), 255, np.uint8)})


def test_cli_reconstructs_renders_and_measures(checkpoint, tmp_path):
    import os

    from backends.avatar.body import anny_cache_dir_loaded

    # the models folder where anny's build is cached (not this test's empty one: a build takes minutes)
    env = {**os.environ, "ICLR25_MODELS_DIR": str(anny_cache_dir_loaded().parents[1])}

    def cli(*args):
        out = subprocess.run([sys.executable, "-m", "app", "avatar", *args], capture_output=True, text=True,
                             timeout=280, env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    card = cli("reconstruct", "--subject", "4", "--views", "1", "--iterations", "1", "--model", checkpoint,
               "--out", str(tmp_path / "av"))
    assert card["views"] == 1 and "gaussians.ply" in card["files"] and "avatar.safetensors" in card["files"]
    r = cli("render", "--avatar", str(tmp_path / "av" / "avatar.safetensors"), "--preset", "walking", "--size", "64",
            "--out", str(tmp_path / "r"))
    assert r["files"] == ["ground_truth.png", "input_avatar.safetensors", "render.png", "run.json"] and r["psnr"] > 0
    assert json.loads((tmp_path / "r" / "run.json").read_text())["action"] == "avatar_render"
    fps = cli("render", "--avatar", str(tmp_path / "av" / "avatar.safetensors"), "--measure-fps", "--size", "64",
              "--seconds", "0.2")
    assert fps["fps"] > 0 and fps["frames"] >= 3
    bad = subprocess.run([sys.executable, "-m", "app", "avatar", "render", "--avatar", str(tmp_path / "nope"),
                          "--out", str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 2 and "not an avatar" in bad.stderr


def test_cli_options_are_the_requests_and_export_writes_a_replayable_run(result, tmp_path, capsys):
    import argparse

    from backends.avatar import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    outputs.save_avatar(result, tmp_path / "avatar.safetensors")
    assert cli.run(parser.parse_args(["export", "--avatar", str(tmp_path / "avatar.safetensors"), "--preset",
                                      "T-pose", "--out", str(tmp_path / "ex")])) == 0
    exported = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"gaussians.ply", "mesh.obj", "mesh.ply", "avatar.safetensors", "run.json"} <= set(exported["files"])
    assert exported["pose"]["arm_raise_l"] == 90 and exported["avatar"]["source"] == result.source
    args = parser.parse_args(["render", "--avatar", "a", "--azimuth", "45", "--renderer", "torch"])  # old spellings
    assert (args.azimuth_deg, args.backend, args.size, args.frames) == (45.0, "torch", 512, 48)  # requests' defaults
    args = parser.parse_args(["reconstruct", "--subject", "1", "--views", "2", "--input-size", "48", "--fov", "50",
                              "--out", "o"])
    assert (args.n_views, args.size, args.fov_deg, args.iterations, args.steps) == (2, 48, 50.0, 3, 150)
    with pytest.raises(SystemExit):
        parser.parse_args(["render", "--avatar", "a", "--size", "4096"])
    assert "from 16 to 1024, got 4096" in capsys.readouterr().err  # the request's range, said by the CLI
