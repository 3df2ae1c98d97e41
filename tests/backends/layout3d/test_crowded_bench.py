"""The crowded-scene episodes of bench.layout3d (issue 27) meet the constraints fixed before any run."""

from __future__ import annotations

import numpy as np

from backends.layout3d.layout import Layout, box_on_floor
from backends.synth.detector import class_of
from bench.layout3d import (
    CROWDED_MIN_OVERLAP,
    crop_of,
    crowded_episodes,
    episode_ci,
    error_ratio,
    kept_parts,
    projected_overlap,
)


def test_crowded_episodes_overlap_and_distinct_prompts():
    eps = crowded_episodes(4)
    assert [seed for _, seed in eps] == list(range(3000, 3004))
    for layout, _ in eps:
        assert len(layout.boxes) == 3
        layout.validate()
        classes = [class_of(b.prompt) for b in layout.boxes]
        assert None not in classes and len(set(classes)) == 3
        masks = [layout.box_mask(j) for j in range(3)]  # what the detector crops, recomputed here
        cover = max((a & b).sum() / b.sum() for i, a in enumerate(masks) for j, b in enumerate(masks) if i != j)
        assert cover >= CROWDED_MIN_OVERLAP
        centres = np.array([b.center[:2] for b in layout.boxes])
        radius = np.array([np.hypot(*b.size[:2]) / 2 for b in layout.boxes])
        for j in range(3):
            for k in range(j):
                assert np.linalg.norm(centres[j] - centres[k]) > radius[j] + radius[k]  # no box inside another
    again = crowded_episodes(2)  # fixed seed; the quick bench's episodes are the full bench's first ones
    assert [a.to_dict() for a, _ in again] == [a.to_dict() for a, _ in eps[:2]]


def test_overlap_and_kept_pixels_of_a_box_behind_another():
    far = box_on_floor("a red cube", 0.0, 1.6, (0.6, 0.6, 0.6))
    near = box_on_floor("a blue sphere", 0.0, 0.4, (1.2, 0.6, 1.2))
    side = box_on_floor("a green cone", 1.0, 1.0, (0.5, 0.5, 0.5))
    assert projected_overlap(Layout("a dark studio with a black floor", (far, near))) == 1.0
    assert projected_overlap(Layout("a dark studio with a black floor", (far, side))) == 0.0
    kept = kept_parts(Layout("a dark studio with a black floor", (far, side)))
    assert len(kept) == 1 and crop_of(kept[0][2], kept[0][1]).all()
    assert kept_parts(Layout("a dark studio with a black floor", (far, near))) == []  # hidden: nothing to keep
    kept = kept_parts(Layout("a dark studio with a black floor", (near, far)))  # added behind: all kept
    assert len(kept) == 1 and crop_of(kept[0][2], kept[0][1]).all()


def test_error_ratio_and_episode_intervals():
    ok = np.array([[True, True, False], [True, True, True]])
    base = np.array([[False, True, False], [False, False, True]])
    assert error_ratio(ok, base) == 1 / 4
    ci = episode_ci(ok, base, resamples=200)
    assert ci["success_rate"][0] <= ok.mean() <= ci["success_rate"][1]
    assert 0 <= ci["error_ratio"][0] <= ci["error_ratio"][1] <= 1
