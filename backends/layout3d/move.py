"""Consistent 3D move/resize of one object (``build-a-scene: eval/evaluate_consistency.py``).

1. **Segment** the object: its cross-attention map (min-max, threshold 75/255, 5×5 dilation,
   largest blob) inside its old box; the reference then prompts SAM with the blob's box — here the
   blob's box is refined with the pixels that changed when the object was inserted (the stage
   before it is known), which plays SAM's part without a segmentation model.
2. **Match** the old and new box renders through their 3D points: every new box pixel's point is
   mapped into the old box's frame (undoing the move, resize and rotation) and matched to the
   nearest old point (KD-tree, distance < 0.05).
3. **Shift and scale**: the ratio of the matched pixels' extents gives the depth-aware scale; the
   object's crop is resized by it and pasted where its matched pixels land, onto the background.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import ndimage
from scipy.spatial import cKDTree

from .layout import Box

ATTN_THRESHOLD = 75 / 255
DILATE = 5
MATCH_DISTANCE = 0.05
CHANGE_THRESHOLD = 0.08


def changed(a: np.ndarray, b: np.ndarray, threshold: float = CHANGE_THRESHOLD) -> np.ndarray:
    """Pixels where two uint8 images differ by more than ``threshold`` in some channel."""
    return np.abs(a.astype(np.float32) - b.astype(np.float32)).max(-1) / 255.0 > threshold


def largest_blob(mask: np.ndarray) -> np.ndarray:
    labels, n = ndimage.label(mask)
    if n == 0:
        return np.zeros_like(mask, dtype=bool)
    sizes = ndimage.sum(mask, labels, range(1, n + 1))
    return labels == (1 + int(np.argmax(sizes)))


def segment_object(attn_map: np.ndarray, box_mask: np.ndarray, image: np.ndarray | None = None,
                   before: np.ndarray | None = None, threshold: float = ATTN_THRESHOLD, dilate: int = DILATE) -> np.ndarray:
    """The object's pixels (bool H×W) from its cross-attention map, inside (a dilation of) its box."""
    region = ndimage.binary_dilation(box_mask, np.ones((3, 3), bool))
    m = (attn_map >= threshold) & region
    m = ndimage.binary_dilation(m, np.ones((dilate, dilate), bool)) & region
    blob = largest_blob(m)
    if image is None or before is None:
        return blob if blob.any() else box_mask.copy()
    diff = changed(image, before)
    area = blob if blob.any() else region
    ys, xs = np.nonzero(area)
    pad = 2
    win = np.zeros_like(area)
    win[max(0, ys.min() - pad):ys.max() + pad + 1, max(0, xs.min() - pad):xs.max() + pad + 1] = True
    obj = largest_blob(ndimage.binary_closing(diff & win & region, np.ones((3, 3), bool)))
    return obj if obj.sum() >= 4 else (blob if blob.any() else box_mask.copy())


def to_box_frame(points: np.ndarray, box: Box) -> np.ndarray:
    """World points → the box's unit frame ([-0.5, 0.5]³ inside the box)."""
    from backends.synth.scene import yaw_matrix

    local = (points - np.asarray(box.center)) @ yaw_matrix(box.yaw_deg)
    return local / np.asarray(box.size)


@dataclass
class Correspondence:
    old_px: np.ndarray  # K×2 (row, col)
    new_px: np.ndarray  # K×2

    @property
    def scale(self) -> tuple[float, float]:
        """(sy, sx): the matched pixels' extents, new over old."""
        def ext(p):
            return np.ptp(p, 0) + 1.0
        s = ext(self.new_px) / ext(self.old_px)
        return float(s[0]), float(s[1])

    @property
    def shift(self) -> tuple[float, float]:
        """(dy, dx) between the matched pixels' top-left corners."""
        d = self.new_px.min(0) - self.old_px.min(0)
        return float(d[0]), float(d[1])


def match_boxes(old_box: Box, old_mask: np.ndarray, old_points: np.ndarray, new_box: Box, new_mask: np.ndarray,
                new_points: np.ndarray, keep: np.ndarray | None = None, max_distance: float = MATCH_DISTANCE) -> Correspondence:
    """Pixel pairs seeing the same point of the box before and after the move (old pixels within ``keep``)."""
    sel_old = old_mask & (keep if keep is not None else True)
    if not sel_old.any() or not new_mask.any():
        raise ValueError("the box is not visible before or after the move")
    old_px = np.argwhere(sel_old)
    new_px_all = np.argwhere(new_mask)
    a = to_box_frame(old_points[sel_old], old_box) * np.asarray(old_box.size)
    b = to_box_frame(new_points[new_mask], new_box) * np.asarray(old_box.size)
    dist, idx = cKDTree(a).query(b, k=1)
    ok = dist < max_distance
    if ok.sum() < 2:
        raise ValueError("too few 3D correspondences between the old and new box (is the object hidden?)")
    return Correspondence(old_px[idx[ok]], new_px_all[ok])


def warp_object(image: np.ndarray, object_mask: np.ndarray, background: np.ndarray,
                corr: Correspondence) -> tuple[np.ndarray, np.ndarray]:
    """Cut the object, scale it by the correspondence and paste it onto ``background``.

    Returns the composite image and the warped object mask. The crop's top-left moves with the
    matched pixels: new = new_min + (crop_min − old_min)·scale.
    """
    h, w = object_mask.shape
    ys, xs = np.nonzero(object_mask)
    if len(ys) == 0:
        raise ValueError("the object mask is empty")
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    sy, sx = corr.scale
    old_min = corr.old_px.min(0)
    new_min = corr.new_px.min(0)
    ny0 = int(round(new_min[0] + (y0 - old_min[0]) * sy))
    nx0 = int(round(new_min[1] + (x0 - old_min[1]) * sx))
    nh, nw = max(1, int(round((y1 - y0) * sy))), max(1, int(round((x1 - x0) * sx)))
    crop = Image.fromarray(image[y0:y1, x0:x1]).resize((nw, nh), Image.BILINEAR)
    cmask = Image.fromarray((object_mask[y0:y1, x0:x1] * 255).astype(np.uint8)).resize((nw, nh), Image.BILINEAR)
    crop, cmask = np.asarray(crop), np.asarray(cmask) > 127
    out = background.copy()
    warped = np.zeros((h, w), bool)
    ty0, tx0 = max(0, ny0), max(0, nx0)
    ty1, tx1 = min(h, ny0 + nh), min(w, nx0 + nw)
    if ty1 <= ty0 or tx1 <= tx0:
        raise ValueError("the moved object falls outside the image")
    sub_m = cmask[ty0 - ny0:ty1 - ny0, tx0 - nx0:tx1 - nx0]
    sub_c = crop[ty0 - ny0:ty1 - ny0, tx0 - nx0:tx1 - nx0]
    region = out[ty0:ty1, tx0:tx1]
    region[sub_m] = sub_c[sub_m]
    warped[ty0:ty1, tx0:tx1] = sub_m
    return out, warped
