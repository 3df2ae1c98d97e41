"""read_spans: the overlapping spans both long-video paths (windows, interpolated segments) read in one pass."""

import numpy as np
import pytest

from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken
from backends.videodepth.longvideo import read_spans


def _video(n: int) -> list[np.ndarray]:
    return [np.full((2, 3, 3), i, np.uint8) for i in range(n)]


class _Counted:
    """A frame source that counts how often it was opened and how many frames were read."""

    def __init__(self, n: int):
        self.n, self.opened, self.read = n, 0, 0

    def __call__(self):
        self.opened += 1
        for frame in _video(self.n):
            self.read += 1
            yield frame


SPANS = [(0, 4), (2, 6), (5, 10)]


def test_overlapping_spans_read_each_frame_once_and_never_ahead():
    source = _Counted(10)
    got = []
    for index, start, stop, clip in read_spans(source, SPANS, 10):
        assert (start, stop) == SPANS[index] and clip.shape == (stop - start, 2, 3, 3)
        assert clip[:, 0, 0, 0].tolist() == list(range(start, stop))
        assert source.read == stop  # nothing read ahead, nothing read twice
        got.append(index)
    assert got == [0, 1, 2] and source.opened == 1


def test_a_resume_skips_the_frames_of_the_spans_done():
    source = _Counted(10)
    spans = read_spans(source, SPANS, 10, first=2)
    index, start, stop, clip = next(spans)
    assert (index, start, stop) == (2, 5, 10) and clip[:, 0, 0, 0].tolist() == [5, 6, 7, 8, 9]
    assert source.read == 10 and next(spans, None) is None


def test_the_cancel_token_is_checked_before_each_span():
    token = CancelToken()
    spans = read_spans(_Counted(10), SPANS, 10, cancel=token)
    assert next(spans)[0] == 0
    token.cancel()
    with pytest.raises(Cancelled, match="stopped by the user"):
        next(spans)


def test_a_video_shorter_than_promised_says_how_many_frames_it_had():
    with pytest.raises(InputError, match=r"^The video ended after fewer frames than the 10 expected\.$"):
        next(read_spans(_Counted(3), SPANS, 10, first=2))
    spans = read_spans(_Counted(7), SPANS, 10)
    next(spans)
    next(spans)
    with pytest.raises(InputError, match=r"^The video ended after 7 frames, fewer than the 10 expected\.$"):
        next(spans)
