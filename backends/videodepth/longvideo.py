"""Depth of videos of any length at the memory of one window, streamed frame by frame.

Depth Any Video infers key frames spread over the whole video jointly, then fills each segment
between two key frames with a second, interpolation UNet (``interpolation.py``). This module is the
other way, with the main model only — the service's ``long_video="windows"``, and what a model without
an interpolation network runs:

1. **Key frames** (up to ``max_keys``, evenly spread, one at every window start) are read in a first
   streaming pass and denoised jointly with their true, sparse frame indices (RoPE): one globally
   consistent disparity scale for the whole video.
2. **Windows** of ``window`` frames overlapping by ``overlap`` are read in a second streaming pass
   and denoised with their true indices. Each window's relative disparity is fitted by least squares
   (scale and shift) to the key-frame disparities it contains — or, when it contains none, to the
   previous window's overlap — so windows share the key frames' scale instead of drifting.
3. **Overlaps** are cross-faded linearly, and finished frames are yielded at once.

Only the key frames (small) and one window are ever held, so memory does not grow with length.
After every window ``on_state`` receives a :class:`StreamState` (key-frame disparities, the aligned
overlap tail, the next window); passing it back as ``resume`` continues a stopped run exactly where
it stopped, giving the same frames as an uninterrupted run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from backends.common.errors import InputError
from backends.common.interrupt import stoppable_call
from backends.common.progress import CancelToken

from .metrics import fit_scale_shift


@dataclass(frozen=True)
class WindowPlan:
    n_frames: int
    window: int = 16
    overlap: int = 4
    max_keys: int = 32

    def __post_init__(self):
        if self.n_frames < 1:
            raise InputError("The video has no frames.")
        if self.window < 2 or not 0 < self.overlap < self.window:
            raise InputError(f"Window {self.window} and overlap {self.overlap}: need 0 < overlap < window, window ≥ 2.")

    @property
    def windows(self) -> list[tuple[int, int]]:
        """[start, stop) of each window; consecutive windows share ``overlap`` frames; the last ends at n."""
        if self.n_frames <= self.window:
            return [(0, self.n_frames)]
        step = self.window - self.overlap
        starts = list(range(0, self.n_frames - self.window, step)) + [self.n_frames - self.window]
        return [(s, s + self.window) for s in sorted(set(starts))]

    @property
    def key_frames(self) -> list[int]:
        """Window starts and the last frame, thinned evenly to at most ``max_keys``."""
        keys = sorted({s for s, _ in self.windows} | {self.n_frames - 1})
        if len(keys) > self.max_keys:
            keys = sorted({keys[i] for i in np.linspace(0, len(keys) - 1, self.max_keys).round().astype(int)})
        return keys


@dataclass
class StreamState:
    """Everything a stopped stream needs to continue: frames < ``emitted`` were already yielded."""

    next_window: int
    emitted: int
    key_disp: dict[int, np.ndarray]
    tail: dict[int, np.ndarray]

    def to_arrays(self) -> dict[str, np.ndarray]:
        keys, tail = sorted(self.key_disp), sorted(self.tail)
        return {"next_window": np.array(self.next_window), "emitted": np.array(self.emitted),
                "key_idx": np.array(keys, np.int64), "key_disp": np.stack([self.key_disp[k] for k in keys]),
                "tail_idx": np.array(tail, np.int64),
                "tail": np.stack([self.tail[i] for i in tail]) if tail else np.zeros((0, 1, 1))}

    @classmethod
    def from_arrays(cls, a) -> StreamState:
        return cls(int(a["next_window"]), int(a["emitted"]), dict(zip(a["key_idx"].tolist(), a["key_disp"], strict=True)),
                   dict(zip(a["tail_idx"].tolist(), a["tail"], strict=True)))


def _window_seed(seed: int, index: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 100_003 + index)


def read_key_frames(open_frames: Callable[[], Iterable[np.ndarray]], keys: list[int], n_frames: int) -> np.ndarray:
    """The frames at ``keys`` (sorted indices), read in one streaming pass: K×H×W×3."""
    wanted = set(keys)
    frames = [f for i, f in zip(range(n_frames), open_frames(), strict=False) if i in wanted]
    if len(frames) != len(keys):
        raise InputError(f"The video ended after fewer frames than the {n_frames} expected.")
    return np.stack(frames)


def read_spans(open_frames: Callable[[], Iterable[np.ndarray]], spans: list[tuple[int, int]], n_frames: int,
               first: int = 0, cancel: CancelToken | None = None
               ) -> Iterator[tuple[int, int, int, np.ndarray]]:
    """Yield ``(index, start, stop, frames[start:stop])`` for ``spans[first:]`` (windows or segments), in one pass.

    The frames before ``spans[first]`` (done before a resume) are skipped, only the current span's frames are
    held (spans overlap; none starts before the previous one), and ``cancel`` is checked before each span
    (→ its ``Cancelled``). A video shorter than ``n_frames`` raises ``InputError``.
    """
    source = iter(open_frames())
    buffer: dict[int, np.ndarray] = {}
    if first:  # skip the frames before the first span still to do
        skip = spans[first][0]
        if sum(1 for _ in zip(range(skip), source, strict=False)) != skip:
            raise InputError(f"The video ended after fewer frames than the {n_frames} expected.")
    for index in range(first, len(spans)):
        if cancel is not None:
            cancel.raise_if_cancelled()
        start, stop = spans[index]
        for i in range(max(buffer, default=start - 1) + 1, stop):
            try:
                buffer[i] = next(source)
            except StopIteration:
                raise InputError(f"The video ended after {i} frames, fewer than the {n_frames} expected.") from None
        for i in [i for i in buffer if i < start]:
            del buffer[i]
        yield index, start, stop, np.stack([buffer[i] for i in range(start, stop)])


def stream_depth(pipe, open_frames: Callable[[], Iterable[np.ndarray]], n_frames: int, window: int = 16,
                 overlap: int = 4, max_keys: int = 32, num_inference_steps: int = 3, seed: int = 0,
                 on_window: Callable[[int, int], None] | None = None,
                 cancel: CancelToken | None = None, resume: StreamState | None = None,
                 on_state: Callable[[StreamState], None] | None = None,
                 initial_noise: str = "zero") -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(frame_index, disparity H×W in [0, 1])`` for every frame, in order.

    ``open_frames()`` returns a fresh iterator over the video's frames (called twice: key frames,
    then windows). ``on_window(done, total)`` reports progress; a cancelled ``cancel`` → its ``Cancelled``.
    ``on_state`` is called after each window, once its frames were consumed; ``resume`` (such a
    state) skips the key frames and the windows already done and yields frames from ``emitted`` on.
    """
    plan = WindowPlan(n_frames, window, overlap, max_keys)
    windows = plan.windows
    if len(windows) == 1:
        frames = [f for _, f in zip(range(n_frames), open_frames(), strict=False)]
        disp = stoppable_call(pipe, cancel, np.stack(frames), position_ids=np.arange(len(frames)),
                              num_inference_steps=num_inference_steps, generator=_window_seed(seed, 0),
                              initial_noise=initial_noise).disparity
        if on_window:
            on_window(1, 1)
        yield from enumerate(disp)
        return

    keys = plan.key_frames
    total = len(windows) + 1
    if resume is None:
        key_frames = read_key_frames(open_frames, keys, n_frames)
        key_disp = dict(zip(keys, stoppable_call(pipe, cancel, key_frames, position_ids=np.asarray(keys),
                                                 num_inference_steps=num_inference_steps,
                                                 generator=_window_seed(seed, -1),
                                                 initial_noise=initial_noise).disparity, strict=True))
        del key_frames
        tail: dict[int, np.ndarray] = {}  # aligned disparity of the previous window's overlap frames
        emitted, first = 0, 0
    else:
        if sorted(resume.key_disp) != keys or not 0 < resume.next_window <= len(windows):
            raise InputError("The saved state belongs to a different video or settings; start a new run.")
        key_disp, tail, emitted, first = resume.key_disp, resume.tail, resume.emitted, resume.next_window
    if on_window:
        on_window(1 + first, total)

    for w, start, stop, clip in read_spans(open_frames, windows, n_frames, first, cancel):
        pred = stoppable_call(pipe, cancel, clip, position_ids=np.arange(start, stop),
                              num_inference_steps=num_inference_steps, generator=_window_seed(seed, w),
                              initial_noise=initial_noise).disparity.astype(np.float64)
        refs = [(i, key_disp[i]) for i in range(start, stop) if i in key_disp] or list(tail.items())
        idx = np.array([i - start for i, _ in refs])
        ref = np.stack([r for _, r in refs])
        s, t = fit_scale_shift(pred[idx], ref, np.ones(ref.shape, bool))
        aligned = np.clip(s * pred + t, 0.0, 1.0)
        shared = sorted(i for i in tail if start <= i < stop)
        for j, i in enumerate(shared):  # cross-fade: the previous window fades out over the overlap
            r = (j + 1) / (len(shared) + 1)
            aligned[i - start] = (1 - r) * tail[i] + r * aligned[i - start]
        last = w == len(windows) - 1
        keep_from = stop if last else windows[w + 1][0]
        for i in range(emitted, keep_from):
            yield i, aligned[i - start].astype(np.float32)
        emitted = keep_from
        tail = {i: aligned[i - start] for i in range(keep_from, stop)}
        if on_state and not last:
            on_state(StreamState(w + 1, emitted, key_disp, tail))
        if on_window:
            on_window(w + 2, total)
