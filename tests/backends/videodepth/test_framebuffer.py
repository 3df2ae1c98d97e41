"""FrameBuffer: the overlapping spans both long-video paths (windows, interpolated segments) read from one pass."""

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.videodepth.longvideo import FrameBuffer


def _video(n: int) -> list[np.ndarray]:
    return [np.full((2, 3, 3), i, np.uint8) for i in range(n)]


class _Counted:
    """An iterator over frames that counts how many were read."""

    def __init__(self, frames):
        self.frames, self.read = iter(frames), 0

    def __iter__(self):
        return self

    def __next__(self):
        frame = next(self.frames)
        self.read += 1
        return frame


def test_overlapping_spans_read_each_frame_once_and_keep_only_the_span():
    source = _Counted(_video(10))
    buffer = FrameBuffer(source, 10)
    for start, stop in [(0, 4), (2, 6), (5, 10)]:
        clip = buffer.take(start, stop)
        assert clip.shape == (stop - start, 2, 3, 3)
        assert clip[:, 0, 0, 0].tolist() == list(range(start, stop))
        assert source.read == stop  # nothing read ahead, nothing read twice
        assert sorted(buffer._buffer) == list(range(start, stop))  # frames before the span were dropped


def test_skip_starts_at_the_first_span_still_to_do():
    source = _Counted(_video(10))
    buffer = FrameBuffer(source, 10, skip=4)
    assert source.read == 4
    assert buffer.take(4, 8)[:, 0, 0, 0].tolist() == [4, 5, 6, 7]


def test_a_video_shorter_than_promised_says_how_many_frames_it_had():
    with pytest.raises(InputError, match=r"^The video ended after fewer frames than the 10 expected\.$"):
        FrameBuffer(iter(_video(3)), 10, skip=4)
    buffer = FrameBuffer(iter(_video(6)), 10)
    buffer.take(0, 4)
    with pytest.raises(InputError, match=r"^The video ended after 6 frames, fewer than the 10 expected\.$"):
        buffer.take(2, 8)
