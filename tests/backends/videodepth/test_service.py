"""The backend entry point end to end on a tiny pipeline: streamed raw outputs, progress, bad input, Stop."""

import subprocess
import zipfile
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent
from backends.common.video import probe_video, write_mp4
from backends.videodepth.service import VideoDepthRequest, VideoDepthResult, estimate_depth, working_size

from .conftest import tiny_pipeline


def run(request, pipe, cancel=None):
    items = list(estimate_depth(request, pipe, cancel))
    assert isinstance(items[-1], VideoDepthResult)
    return items[:-1], items[-1]


def test_video_to_raw_outputs(tmp_path):
    rng = np.random.default_rng(0)
    src = write_mp4((rng.integers(0, 255, (32, 48, 3), dtype=np.uint8) for _ in range(20)), tmp_path / "in.mp4", fps=12)
    req = VideoDepthRequest(src, tmp_path / "out", max_side=24, num_inference_steps=1, window=8, stride=6)
    events, result = run(req, tiny_pipeline())
    assert result.frames == 20 and result.size == (24, 16) and result.fps == pytest.approx(12)
    assert all(isinstance(e, ProgressEvent) for e in events) and events[-1].fraction == 1.0 and len(events) >= 3
    info = probe_video(result.video)
    assert info.size == (48, 16) and info.source_frames == 20  # input | depth, side by side
    with zipfile.ZipFile(result.png_zip) as z:
        names = z.namelist()
        assert len(names) == 20
        with z.open(names[3]) as f:
            png = np.asarray(Image.open(f))
    assert png.dtype == np.uint16 and png.shape == (16, 24)
    stack = np.load(result.npz)["disparity"]
    assert stack.shape == (20, 16, 24) and stack.dtype == np.float16
    assert np.allclose(stack[3], png / 65535, atol=1e-3)


def test_image_input(tmp_path):
    Image.fromarray(np.full((40, 40, 3), 120, np.uint8)).save(tmp_path / "a.png")
    _, result = run(VideoDepthRequest(tmp_path / "a.png", tmp_path / "o", max_side=16, num_inference_steps=1),
                    tiny_pipeline())
    assert result.frames == 1 and result.size == (16, 16)


def test_bad_inputs_are_clear(tmp_path):
    pipe = tiny_pipeline()
    (tmp_path / "corrupt.mp4").write_bytes(b"\x00" * 100)
    Image.new("RGB", (100_000, 10)).save(tmp_path / "wide.png")
    import imageio_ffmpeg

    audio = tmp_path / "tone.m4a"
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i",
                    "sine=frequency=440:duration=1", str(audio)], check=True)
    for name, match in (("corrupt.mp4", "not a video"), ("wide.png", "at most"), ("tone.m4a", "video"),
                        ("missing.mp4", "not found")):
        with pytest.raises(InputError, match=match):
            run(VideoDepthRequest(tmp_path / name, tmp_path / "o"), pipe)
    with pytest.raises(InputError, match="too thin"):
        working_size(1000, 10, 64, 16)
    with pytest.raises(InputError, match="Max frames must be a whole number from 1 to 3000, got 0"):
        run(VideoDepthRequest(tmp_path / "wide.png", tmp_path / "o", max_frames=0), pipe)


def test_stop(tmp_path):
    src = write_mp4((np.full((16, 16, 3), i * 10, np.uint8) for i in range(20)), tmp_path / "in.mp4")
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        run(VideoDepthRequest(src, tmp_path / "o", max_side=16, num_inference_steps=1, window=8, stride=6),
            tiny_pipeline(), cancel)


def test_estimate_counts_the_plan_and_times_the_model(tmp_path):
    from backends.videodepth.service import _measure_call, estimate_run

    src = write_mp4((np.full((24, 40, 3), i * 5, np.uint8) for i in range(30)), tmp_path / "in.mp4", fps=15)
    pipe = tiny_pipeline()
    est = estimate_run(VideoDepthRequest(src, tmp_path / "o", max_side=24, num_inference_steps=1, window=8, stride=6,
                                         baseline_frames=5), pipe)
    assert (est.frames, est.size, est.source_size, est.windows) == (30, (24, 8), (40, 24), 5)
    assert est.key_frames == 6 and est.per_frame_ms > 0
    # the estimate is the plan priced at the measured rates (arithmetic, no clock read here): 5 windows of 8 frames
    # + 6 key frames through the network at the per-frame rate, the baseline's 5 single frames at the one-frame
    # call's measured time (cached: the same measurement the estimate used), and reading 30 frames at 10 ms each
    one_frame, _ = _measure_call(pipe, 1, est.size, 1)
    assert est.seconds == pytest.approx(46 * est.per_frame_ms / 1000 + 5 * one_frame + 30 * 0.01)
    # the memory is what one tiny call adds, not the process's whole resident memory
    assert 0 < est.resident_mb and est.peak_extra_mb < est.resident_mb / 2
    assert "30 frame(s)" in est.summary() and "5 window(s) + 6 key frames" in est.summary()
    with pytest.raises(InputError, match="Colour map must be one of"):
        estimate_run(VideoDepthRequest(src, tmp_path / "o", colormap="nope"), tiny_pipeline())


def test_zero_frames_are_a_clear_message(tmp_path):
    import imageio_ffmpeg

    zero = tmp_path / "zero.mp4"  # a video stream that holds no frame
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i",
                    "color=c=red:s=32x32:d=1", "-frames:v", "0", "-c:v", "libx264", str(zero)], check=True)
    (tmp_path / "empty").mkdir()
    for name, match in (("zero.mp4", "zero.mp4 (is not a video|contains no video frames)"),
                        ("empty", "holds no images")):
        with pytest.raises(InputError, match=match):
            run(VideoDepthRequest(tmp_path / name, tmp_path / "o", max_side=16, num_inference_steps=1), tiny_pipeline())


def test_long_video_method_follows_the_request_and_the_model(tmp_path):
    from backends.videodepth.service import AUTO_LONG_VIDEO, long_video_method

    with_interp, without = tiny_pipeline(interp=True), tiny_pipeline()
    req = VideoDepthRequest(tmp_path / "v.mp4", tmp_path / "o", window=16, stride=12)
    assert req.interp_overlap == 6  # the reference's overlap at its key-frame stride of 12
    assert long_video_method(req, without, 100) == "windows"
    assert long_video_method(req, with_interp, 100) == AUTO_LONG_VIDEO["videodepth-embedded"]
    assert long_video_method(replace(req, model_id="depth-any-video"), with_interp, 100) == "interpolation"
    assert long_video_method(replace(req, long_video="interpolation"), with_interp, 16) == "windows"  # one window
    assert long_video_method(replace(req, long_video="windows"), with_interp, 100) == "windows"
    with pytest.raises(InputError, match="no interpolation network"):
        long_video_method(replace(req, long_video="interpolation"), without, 100)
    with pytest.raises(InputError, match="Long videos must be one of"):
        list(estimate_depth(replace(req, long_video="sideways"), without))
    # the defaults (windows of 32, key-frame stride 24) leave gaps the interpolation network cannot fill:
    # auto runs the windows for any model, an explicit interpolation request is a clear message
    wide = VideoDepthRequest(tmp_path / "v.mp4", tmp_path / "o")
    assert (wide.window, wide.stride, wide.interp_fits) == (32, 24, False)
    assert long_video_method(replace(wide, model_id="depth-any-video"), with_interp, 100) == "windows"
    with pytest.raises(InputError, match="stride between 1 and 17"):
        replace(wide, long_video="interpolation").validate()


def test_a_decompression_bomb_is_a_clear_message(tmp_path):
    from tests.backends.common.test_io import bomb_png

    with pytest.raises(InputError, match="bomb.png is too large"):
        run(VideoDepthRequest(bomb_png(tmp_path / "bomb.png"), tmp_path / "o"), tiny_pipeline())
    folder = tmp_path / "frames"
    folder.mkdir()
    bomb_png(folder / "0001.png")
    with pytest.raises(InputError, match="0001.png is too large"):
        run(VideoDepthRequest(folder, tmp_path / "o"), tiny_pipeline())
