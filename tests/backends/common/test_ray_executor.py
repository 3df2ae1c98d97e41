"""Heavy actions on Ray (``serve --ray``): the same outputs as in-process, Stop, and a killed worker.

One local Ray instance (2 CPUs) for the module: starting Ray is the slow part. ``ACTIONS`` lists the
actions checked for "same outputs on Ray as in this process" result field by result field; ``TAB_ACTIONS``
a heavy action of each other tab, checked by the files ``write_run`` writes of each result (a result may
hold what does not compare field by field), with the smallest settings that still run the real model.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from backends.common.errors import Cancelled, InputError, ModelMissingError
from backends.common.executor import InProcess, current_executor, use_executor
from backends.common.progress import CancelToken, ProgressEvent
from tests.backends.common.toy_action import TOY, local_ray_executor, run_all, toy_request

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[3] / "app" / "static" / "examples"


def counterfactual_request():
    from PIL import Image

    from backends.counterfactual.requests import CounterfactualRequest

    image = np.asarray(Image.open(EXAMPLES / "counterfactual" / "cube.png").convert("RGB").resize((32, 32)))
    mask = np.zeros((32, 32), bool)
    mask[8:24, 8:24] = True
    return CounterfactualRequest(image, mask, "sphere", num_samples=1, num_inference_steps=4, preview_every=1)


def _action(name: str):
    from backends import action_named

    return TOY if name == TOY.name else action_named(name)


# (action name, request factory): each runs on Ray and in this process, and must give the same outputs
ACTIONS = [
    (TOY.name, toy_request),
    ("counterfactual_generate", counterfactual_request),
]

IGNORED = {"seconds", "pid", "loads", "where"}  # where and how long it ran, not what it made
TIMINGS = IGNORED | {"reconstruction_s"}  # the keys of written JSON that say how long it took


def layout3d_request(out: Path):
    from backends.layout3d.requests import SceneRequest

    box = {"prompt": "a red cube", "center": [-0.2, 1.0, 0.35], "size": [0.7, 0.7, 0.7], "yaw_deg": 0}
    layout = {"scene_prompt": "a green lawn under a pale blue sky", "boxes": [box]}
    return SceneRequest(layout, model="layout3d-embedded", num_inference_steps=3)


def textedit_request(out: Path):
    from backends.textedit.requests import GenerateRequest

    return GenerateRequest(model="textedit-embedded", text="cat", num_inference_steps=4)


def avatar_request(out: Path):
    from backends.avatar.requests import ReconstructRequest

    return ReconstructRequest(subject=0, n_views=1, iterations=1, model="avatar-embedded")


def videodepth_request(out: Path):
    from backends.videodepth.examples import EXAMPLES, example_clip
    from backends.videodepth.requests import VideoDepthRequest

    return VideoDepthRequest(example_clip(next(iter(EXAMPLES))), out, model_id="videodepth-embedded",
                             max_frames=8, max_side=64, baseline_frames=0)


# (action name, request factory taking the run's output folder): a heavy action of each other tab
TAB_ACTIONS = [
    ("layout3d_scene", layout3d_request),
    ("textedit_generate", textedit_request),
    ("avatar_reconstruct", avatar_request),
    ("videodepth_estimate_depth", videodepth_request),
]
# results that travel back from a worker with far more than they write, and why (a strict note: once the
# result is light, the test says so and the entry goes)
HEAVY_RESULTS: dict[str, str] = {}  # action name → why its result is still heavy (an xfail until it is not)


@pytest.fixture(scope="module")
def machine_models() -> Path:
    """The environment's models folder, not a test's empty one: the workers' (read when they are made), where
    builds that take minutes are cached once per machine (the Avatar tab's anny body model)."""
    from backends.common.settings import get_settings

    return get_settings().models_dir


@pytest.fixture(scope="module")
def executor(machine_models):
    yield from local_ray_executor()


def assert_same(a, b, where="result", rounding=False):
    """Equal outputs: arrays element for element, floats to 1e-5, dataclasses/dicts/lists field by field.

    ``rounding``: the two ran in different processes, where torch may use another number of threads and sum
    in another order — floats then agree to 1e-4 and 8/16-bit pixels to one level on at most 1% of them."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            if f.name not in IGNORED:
                assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}", rounding)
    elif isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            if k not in IGNORED:
                assert_same(a[k], b[k], f"{where}[{k!r}]", rounding)
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]", rounding)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        if a.dtype.kind == "f":
            tol = 1e-4 if rounding else 1e-5
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol if rounding else 1e-6, err_msg=where)
        elif rounding and a.dtype.kind in "ui":
            diff = np.abs(a.astype(np.int64) - b.astype(np.int64))
            assert diff.max(initial=0) <= 1 and (diff > 0).mean() <= 0.01, (where, diff.max(), (diff > 0).mean())
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-4 if rounding else 1e-5, abs=1e-4 if rounding else 1e-6), where
    else:
        assert a == b, where


@pytest.mark.parametrize(("name", "make_request"), ACTIONS, ids=[name for name, _ in ACTIONS])
def test_a_heavy_action_gives_the_same_outputs_on_ray_as_in_process(executor, name, make_request):
    action = _action(name)
    here_events, here = run_all(InProcess().run(action, make_request(), CancelToken()))
    previous = use_executor(executor)  # through action.run, as the app and the CLI call it
    try:
        there_events, there = run_all(action.run(make_request(), CancelToken()))
    finally:
        use_executor(previous)
    assert current_executor() is previous
    assert here is not None and there is not None
    assert_same(here, there)
    assert [e.message for e in there_events] == [e.message for e in here_events]
    assert any(e.preview is not None for e in there_events)
    for a, b in zip(here_events, there_events, strict=True):
        assert (a.preview is None) == (b.preview is None)
        if a.preview is not None:
            assert_same(np.asarray(a.preview), np.asarray(b.preview), f"preview of {a.message}")


def written(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def file_contents(name: str, data: bytes):
    """A written file as what it holds: pixels, arrays, JSON (less timings), a zip's members, or its bytes."""
    suffix = Path(name).suffix
    if suffix == ".png":
        from PIL import Image

        return np.asarray(Image.open(io.BytesIO(data)))
    if suffix == ".json":
        return without_timings(json.loads(data))
    if suffix in (".npy", ".npz"):
        loaded = np.load(io.BytesIO(data))
        return {k: loaded[k] for k in loaded.files} if suffix == ".npz" else loaded
    if suffix == ".safetensors":
        from safetensors.numpy import load

        return load(data)
    if suffix == ".zip":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return {m: file_contents(m, z.read(m)) for m in sorted(z.namelist())}
    if suffix == ".ply":
        return ply_fields(data)
    if suffix == ".obj":
        words = data.decode().split()
        return {"words": [w for w in words if not _is_number(w)],
                "numbers": np.array([float(w) for w in words if _is_number(w)], np.float64)}
    return data


PLY_TYPES = {"float": "<f4", "double": "<f8", "uchar": "u1", "uint8": "u1", "char": "i1", "int": "<i4",
             "uint": "<u4", "short": "<i2", "ushort": "<u2", "int32": "<i4", "float32": "<f4"}


def ply_fields(data: bytes) -> dict:
    """A binary little-endian PLY as its header and one array per property (triangle lists as N×3)."""
    head, _, body = data.partition(b"end_header\n")
    elements: list[tuple[str, int, list]] = []
    for line in head.decode().splitlines():
        words = line.split()
        if words[:1] == ["element"]:
            elements.append((words[1], int(words[2]), []))
        elif words[:1] == ["property"] and words[1] == "list":
            elements[-1][2].extend([("count", PLY_TYPES[words[2]]), (words[4], PLY_TYPES[words[3]], (3,))])
        elif words[:1] == ["property"]:
            elements[-1][2].append((words[2], PLY_TYPES[words[1]]))
    out, offset = {"header": head.decode()}, 0
    for name, count, props in elements:
        dtype = np.dtype(props)
        rows = np.frombuffer(body, dtype, count, offset)
        offset += dtype.itemsize * count
        out.update({f"{name}.{field}": np.ascontiguousarray(rows[field]) for field in dtype.names})
    assert offset == len(body), "a PLY body of another layout than its header says"
    return out


def _is_number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False


def contents_of(path: Path):
    """A written file's contents to compare (a video: its decoded frames, not its encoder's bytes)."""
    if path.suffix == ".mp4":
        from backends.common.video import read_video

        return read_video(path, max_frames=10_000, max_side=None).frames
    return file_contents(path.name, path.read_bytes())


@pytest.mark.parametrize(("name", "make_request"), TAB_ACTIONS, ids=[name for name, _ in TAB_ACTIONS])
def test_a_tab_action_writes_the_same_files_on_ray_as_in_process(executor, machine_models, monkeypatch, tmp_path,
                                                                 name, make_request):
    from backends.common.settings import reset_settings

    monkeypatch.setenv("ICLR25_MODELS_DIR", str(machine_models))  # this process looks where the workers look
    reset_settings()
    action = _action(name)
    here_request, there_request = make_request(tmp_path / "here_out"), make_request(tmp_path / "there_out")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)  # as the CPU worker runs (earlier tests may have set another count)
    try:
        here = run_all(InProcess().run(action, here_request, CancelToken()))[1]
    finally:
        torch.set_num_threads(threads)
    there_events, there = run_all(executor.run(action, there_request, CancelToken()))
    assert there is not None and there_events
    here_paths = action.write_run(here_request, here, tmp_path / "here")
    there_paths = action.write_run(there_request, there, tmp_path / "there")
    assert set(here_paths) == set(there_paths)
    here_files, there_files = written(tmp_path / "here"), written(tmp_path / "there")
    assert set(here_files) == set(there_files) and "run.json" in here_files and len(here_files) > 2
    for rel, path in here_files.items():
        assert_same(contents_of(path), contents_of(there_files[rel]), rel, rounding=True)
    travelled = len(pickle.dumps(there))  # what came back from the worker, against what it wrote
    light = travelled <= 2 * sum(p.stat().st_size for p in there_files.values()) + 256 * 1024
    if name in HEAVY_RESULTS:
        assert not light, f"{name}'s result is light now ({travelled} bytes): drop it from HEAVY_RESULTS"
        pytest.xfail(f"{HEAVY_RESULTS[name]} (here {travelled / 1e6:.1f} MB)")
    assert light, f"{name}'s result travels back as {travelled / 1e6:.1f} MB"


def test_the_work_runs_on_a_worker_whose_model_stays_loaded(executor):
    first = run_all(executor.run(TOY, toy_request()))[1]
    second = run_all(executor.run(TOY, toy_request(seed=8)))[1]
    assert first.pid == second.pid != os.getpid()  # one worker process for the capability, not this one
    assert second.loads == 1  # its model was built once, for the first job


def test_errors_arrive_as_themselves(executor):
    with pytest.raises(InputError, match="steps must be"):
        executor.run(TOY, toy_request(steps=0))  # refused at once, as in-process
    with pytest.raises(ModelMissingError, match="toy-model") as caught:
        run_all(executor.run(TOY, toy_request(fail="missing")))
    assert caught.value.model_id == "toy-model" and caught.value.how_to_get == "it does not exist"


def test_stop_ends_the_remote_job_at_its_next_step(executor):
    from backends.common.ray_executor import BACKLOG

    token = CancelToken()
    stream = executor.run(TOY, toy_request(steps=400, step_seconds=0.05), token)
    assert isinstance(next(stream), ProgressEvent)
    token.cancel()
    after = []
    with pytest.raises(Cancelled, match="stopped by the user"):
        for item in stream:
            after.append(item)
    # what the worker had made before the Stop reached it: at most the backlog the app had fetched, the backlog
    # it ran ahead of that, and the step in flight (the same count however loaded the machine is)
    assert len(after) <= 2 * BACKLOG + 1 and all(isinstance(e, ProgressEvent) for e in after)
    assert run_all(executor.run(TOY, toy_request()))[1] is not None  # the worker takes the next job


def test_a_killed_worker_fails_its_job_quickly_and_the_next_job_runs_on_its_restart(executor):
    from backends.common.ray_executor import WorkerLost

    before = run_all(executor.run(TOY, toy_request()))[1].pid
    stream = executor.run(TOY, toy_request(steps=400, step_seconds=0.05), CancelToken())
    assert isinstance(next(stream), ProgressEvent)
    ray.kill(executor.worker("toy"), no_restart=False)
    with pytest.raises(WorkerLost, match="died"):  # seen as a death (not as a worker that stopped answering)
        run_all(stream)
    after = run_all(executor.run(TOY, toy_request()))[1]
    assert after.pid != before and after.loads == 1  # a new worker process, its model loaded again


def test_serve_takes_the_cluster_from_the_flag_or_the_environment(monkeypatch):
    from app.cli import build_parser
    from backends.common.settings import configure, get_settings, reset_settings

    assert build_parser().parse_args(["serve", "--ray", "ray://head:10001"]).ray_address == "ray://head:10001"
    assert build_parser().parse_args(["serve"]).ray_address is None
    assert get_settings().ray_address is None  # in-process unless asked
    monkeypatch.setenv("ICLR25_RAY_ADDRESS", "auto")
    reset_settings()
    assert get_settings().ray_address == "auto"
    assert configure(ray_address="head:6379").ray_address == "head:6379"  # the flag wins


def test_an_address_where_nothing_answers_is_refused_at_once():
    import socket

    from backends.common.ray_executor import _check_reachable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free once closed: nothing listens there
    with pytest.raises(InputError, match="Nothing answers at ray://127.0.0.1") as refused:
        _check_reachable(f"ray://127.0.0.1:{port}")
    assert "refused" in str(refused.value).lower()  # the address refused at once: not waited out
    with pytest.raises(InputError, match="HOST:PORT"):
        _check_reachable("nonsense")
    _check_reachable("auto")  # Ray's to find


def test_a_3d_layout_scene_goes_on_where_it_ran(executor, machine_models, monkeypatch, tmp_path):
    """The next stage of a scene made on Ray continues the worker's kept scene (only the new stage runs) while
    the result that came back is light: pictures and layouts, no model, no denoising caches."""
    from dataclasses import replace

    from backends.common.settings import reset_settings
    from backends.layout3d.service import scene_request

    monkeypatch.setenv("ICLR25_MODELS_DIR", str(machine_models))
    reset_settings()
    action = _action("layout3d_scene")
    first = replace(layout3d_request(tmp_path), scene_key="ray-scene-1")
    made = run_all(executor.run(action, first, CancelToken()))[1]
    assert made.session is not None and made.session.pipe is None and made.stages[-1].cache is None
    assert made.new == [0, 1] and made.stages[-1].image.shape[-1] == 3
    moved = json_copy(first.layout)
    moved["boxes"][0]["center"] = [0.25, 1.0, 0.35]
    from backends.layout3d.layout import Layout

    after = run_all(executor.run(action, scene_request(made.session, Layout.from_json(moved), "ray-scene-1"),
                                 CancelToken()))[1]
    assert after.new == [2] and [s.kind for s in after.stages] == ["empty", "insert", "move"]


def json_copy(value):
    import json

    return json.loads(json.dumps(value))
