"""A server killed mid-run: the next start cleans up what it left, and the run resumes from disk by its id
(the browser session that started it is gone) to the frames of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from backends.common import files, runs
from backends.common import settings as settings_mod
from backends.common.errors import InputError
from backends.common.video import write_mp4
from backends.videodepth import runstore
from backends.videodepth.service import VideoDepthRequest, VideoDepthResult, estimate_depth

from .conftest import tiny_pipeline

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = dict(max_side=24, num_inference_steps=1, window=8, stride=6, baseline_frames=0, long_video="windows")

# The "server": starts a run as the tab does, prints its id, and runs it; each window takes at least 0.3 s
# so the test can kill it between windows whatever the machine's speed.
CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from backends.videodepth import runstore
    from backends.videodepth.service import VideoDepthRequest, estimate_depth
    from tests.backends.videodepth.conftest import tiny_pipeline
    from tests.backends.videodepth.test_restart import SETTINGS

    pipe = tiny_pipeline()
    call = type(pipe).__call__
    type(pipe).__call__ = lambda self, *a, **k: (time.sleep(0.3), call(self, *a, **k))[1]
    run_id, req = runstore.start_run(Path(sys.argv[1]), lambda src, out: VideoDepthRequest(src, out, **SETTINGS))
    print(run_id, flush=True)
    for item in estimate_depth(req, pipe):
        pass
    print("finished", flush=True)
""")


def clip(path: Path, n: int = 30) -> Path:
    base = np.random.default_rng(3).integers(0, 255, (16, 24, 3), dtype=np.uint8)
    return write_mp4((np.roll(base, i, 1) for i in range(n)), path, fps=10)


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_RUNS_DIR", str(tmp_path / "runs"))
    settings_mod.reset_settings()
    return tmp_path / "runs"


def test_a_run_killed_mid_way_is_cleaned_up_and_resumes_by_its_id(tmp_path, runs_dir):
    src = clip(tmp_path / "in.mp4")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(src)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "ICLR25_RUNS_DIR": str(runs_dir)})
    try:
        run_id = child.stdout.readline().strip()
        out = runs_dir / "videodepth" / run_id / "run"
        deadline = time.time() + 120
        while time.time() < deadline and not (out / "resume_state.npz").exists():
            time.sleep(0.02)
        assert (out / "resume_state.npz").exists(), "no window was saved"
        os.kill(child.pid, signal.SIGKILL)  # the server dies mid-run
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    saved = json.loads((out / "resume.json").read_text())
    assert 0 < saved["emitted"] < 30
    assert (out / files.LOCK_NAME).exists() and any(files.PART in p.name for p in out.iterdir())  # what it left

    removed = runs.recover()  # the next start
    assert {p.name for p in removed} >= {files.LOCK_NAME} and any(files.PART in p.name for p in removed)
    assert not (out / files.LOCK_NAME).exists() and not any(files.PART in p.name for p in out.iterdir())
    assert (out / "resume.json").exists()  # still resumable

    pipe = tiny_pipeline()
    req = runstore.stopped_request(run_id)  # a new session: only the id is known
    assert req.resume and req.input_path.name == "in.mp4"
    resumed = list(estimate_depth(req, pipe))[-1]
    assert isinstance(resumed, VideoDepthResult) and resumed.resumed_at >= saved["emitted"] > 0
    whole = list(estimate_depth(VideoDepthRequest(src, tmp_path / "whole", **SETTINGS), pipe))[-1]
    np.testing.assert_allclose(np.load(resumed.npz)["disparity"].astype(np.float32),
                               np.load(whole.npz)["disparity"].astype(np.float32), atol=2e-3)
    left = sorted(p.name for p in out.iterdir() if p.name != files.LOCK_NAME)  # the lock file stays, unheld
    assert left == ["depth_png16.zip", "depth_side_by_side.mp4", "disparity.npz"]  # nothing half-done remains
    with pytest.raises(InputError, match="has finished"):
        runstore.stopped_request(run_id)


def test_recover_removes_leftovers_and_old_runs_but_keeps_resumable_and_running_ones(tmp_path, runs_dir):
    root = runs_dir / "videodepth"
    now = time.time()

    def run(name, age, request=True):
        folder = root / name
        (folder / "run").mkdir(parents=True)
        if request:
            (folder / runs.REQUEST).write_text("{}")
        (folder / "run" / "resume.json").write_text("{}")
        for p in [*folder.rglob("*"), folder]:
            os.utime(p, (now - age, now - age))
        return folder

    kept = run("a" * 12, 60)
    (kept / "run" / f".depth{files.PART}00ff.mp4").write_bytes(b"half")
    half_made = run("b" * 12, runs.GRACE_S + 60, request=False)
    just_made = run("c" * 12, 5, request=False)  # being created right now: left alone
    old = run("d" * 12, runs.MAX_AGE_S + 60)
    running = run("e" * 12, runs.MAX_AGE_S + 60)
    lock = files.FolderLock(running / "run")
    assert lock.acquire()
    try:
        removed = runs.recover()
    finally:
        lock.release()
    assert set(removed) >= {half_made, old} and running.exists() and just_made.exists()
    assert (kept / "run" / "resume.json").exists() and not list(kept.rglob(f"*{files.PART}*"))
    with pytest.raises(InputError, match="not a run id"):
        runstore.stopped_request("../../etc")
    with pytest.raises(InputError, match="no run 0123456789ab"):
        runstore.stopped_request("0123456789ab")


def test_the_cli_resumes_a_run_the_app_started_by_its_id(tmp_path, runs_dir, capsys):
    from app.cli import main
    from backends.common.progress import CancelToken, ProgressEvent
    from backends.videodepth.loading import load_model

    base = np.random.default_rng(1).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    src = write_mp4((np.roll(base, i, 1) for i in range(40)), tmp_path / "in.mp4", fps=10)
    run_id, req = runstore.start_run(src, lambda s, o: VideoDepthRequest(s, o, num_inference_steps=1, window=16,
                                                                         stride=12, baseline_frames=0))
    cancel = CancelToken()
    with pytest.raises(Exception, match="stopped by the user"):
        for item in estimate_depth(req, load_model(), cancel):
            if isinstance(item, ProgressEvent) and item.message.startswith("window 2 "):
                cancel.cancel()
    capsys.readouterr()
    assert main(["videodepth", "--resume-run", run_id]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["input"] == "in.mp4" and line["frames"] == 40 and line["resumed_at_frame"] == 12
    assert Path(line["npz"]) == runs_dir / "videodepth" / run_id / "run" / "disparity.npz"
    assert main(["videodepth", "--resume-run", run_id]) == 2 and "has finished" in capsys.readouterr().err
    assert main(["videodepth", "--out", str(tmp_path)]) == 2
    assert "--input and --out are required" in capsys.readouterr().err
