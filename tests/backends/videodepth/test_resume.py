"""A stopped run continues from its saved state and ends with the same raw frames as an uninterrupted run."""

import zipfile

import numpy as np
import pytest

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent
from backends.common.video import probe_video, write_mp4
from backends.videodepth.service import VideoDepthRequest, VideoDepthResult, estimate_depth, stopped_run

from .conftest import tiny_pipeline


def clip(tmp_path, n=18):
    rng = np.random.default_rng(4)
    base = rng.integers(0, 255, (16, 24, 3), dtype=np.uint8)
    return write_mp4((np.roll(base, i, 1) for i in range(n)), tmp_path / "in.mp4", fps=10)


def finish(req, pipe, cancel=None):
    items = list(estimate_depth(req, pipe, cancel))
    assert isinstance(items[-1], VideoDepthResult)
    return items[-1]


def zipped(path):
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


@pytest.mark.parametrize("long_video", ["windows", "interpolation"])
def test_resume_gives_the_frames_of_an_uninterrupted_run(tmp_path, long_video):
    pipe = tiny_pipeline(interp=True)
    n = 18 if long_video == "windows" else 40  # interpolation segments are 18 frames long
    src = clip(tmp_path, n)
    settings = dict(max_side=24, num_inference_steps=1, window=8, stride=6, baseline_frames=3, long_video=long_video)
    whole = finish(VideoDepthRequest(src, tmp_path / "whole", **settings), pipe)

    out = tmp_path / "stopped"
    cancel = CancelToken()
    with pytest.raises(Cancelled):
        for item in estimate_depth(VideoDepthRequest(src, out, **settings), pipe, cancel):
            if isinstance(item, ProgressEvent) and item.message.startswith("window 2 "):
                cancel.cancel()
    saved = stopped_run(out)
    assert saved is not None and 0 < saved["emitted"] < n  # some windows were done, not all
    assert not (out / "disparity.npz").exists()

    resumed = finish(VideoDepthRequest(src, out, resume=True, **settings), pipe)
    assert resumed.resumed_at == saved["emitted"]
    assert np.array_equal(np.load(resumed.npz)["disparity"], np.load(whole.npz)["disparity"])
    assert zipped(resumed.png_zip) == zipped(whole.png_zip)
    assert probe_video(resumed.video).source_frames == n
    assert ("filled by the interpolation network" if long_video == "interpolation" else "windows aligned") \
        in " ".join(resumed.notes)
    assert resumed.flicker == pytest.approx(whole.flicker)
    assert stopped_run(out) is None  # a finished run leaves no resume state


def test_resume_needs_a_stopped_run_with_the_same_settings(tmp_path):
    pipe = tiny_pipeline()
    src = clip(tmp_path, 14)
    with pytest.raises(InputError, match="no stopped run"):
        finish(VideoDepthRequest(src, tmp_path / "nothing", max_side=24, resume=True), pipe)
    out = tmp_path / "o"
    cancel = CancelToken()
    with pytest.raises(Cancelled):
        for _ in estimate_depth(VideoDepthRequest(src, out, max_side=24, num_inference_steps=1, window=6,
                                                  stride=4), pipe, cancel):
            cancel.cancel()
    with pytest.raises(InputError, match="other settings"):
        finish(VideoDepthRequest(src, out, max_side=24, num_inference_steps=2, window=6, stride=4, resume=True), pipe)
