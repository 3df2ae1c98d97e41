"""Video frames are read and written as streams: memory does not grow with the video's length."""

import tracemalloc
import types

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.common.video import iter_video_frames, probe_video, write_mp4


def frames(n, size=32):
    for i in range(n):
        f = np.zeros((size, size, 3), np.uint8)
        f[:, : (i % size) + 1] = 200
        yield f


def test_probe_and_lazy_frame_ranges(tmp_path):
    path = write_mp4(frames(30), tmp_path / "v.mp4", fps=10)
    info = probe_video(path)
    assert info.size == (32, 32) and info.fps == pytest.approx(10) and info.source_frames == 30
    it = iter_video_frames(path, start=5, stop=9)
    assert isinstance(it, types.GeneratorType)
    got = list(it)
    assert len(got) == 4 and got[0].shape == (32, 32, 3)
    bright = [(f[16] > 100).sum() // 3 for f in got]  # the bright band grows one column per frame
    assert bright == pytest.approx([6, 7, 8, 9], abs=1)
    with pytest.raises(InputError, match="not a video"):
        probe_video(write_bad(tmp_path))


def write_bad(tmp_path):
    p = tmp_path / "bad.mp4"
    p.write_bytes(b"not a video at all")
    return p


def test_streaming_memory_is_flat(tmp_path):
    short = write_mp4(frames(20, 64), tmp_path / "short.mp4")
    long = write_mp4(frames(400, 64), tmp_path / "long.mp4")

    def peak(path):
        tracemalloc.start()
        write_mp4((255 - f for f in iter_video_frames(path)), tmp_path / f"out_{path.name}")
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    assert peak(long) < 1.5 * peak(short) + 200_000  # 20× the frames, about the same memory
    assert probe_video(tmp_path / "out_long.mp4").source_frames == 400
