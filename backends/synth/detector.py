"""The evaluation detector of the 3D Layout world (the paper used YOLOv8 on SD images); shared because the
Unlearning tab reads its text-conditioned teacher's images with it too (weights: ``layout3d-detector``).

A small CNN names what stands in a requested box — one of the 40 shape × colour classes or
``nothing`` — from the crop of the box's image-space bounding box. The detected extent is the
largest blob of pixels that differ from the empty scene around the box; its IoU with the box's
bounding box is the paper's mIoU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy import ndimage

from backends.common.cnn import SmallClassifier

from .scene import COLORS, SHAPES

CLASSES: tuple[str, ...] = tuple(f"{c} {s}" for s in SHAPES for c in COLORS) + ("nothing",)
CROP = 24
DIFF_THRESHOLD = 0.10


def class_of(prompt: str) -> str | None:
    """'a red cube' → 'red cube' when the prompt names a known colour and shape, else None."""
    words = prompt.lower().replace(",", " ").split()
    colours = [w for w in words if w in COLORS]
    shapes = [w for w in words if w in SHAPES]
    return f"{colours[-1]} {shapes[-1]}" if colours and shapes else None


def bbox(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """(y0, x0, y1, x1), exclusive ends; None for an empty mask."""
    ys, xs = np.nonzero(mask)
    if len(ys) == 0:
        return None
    return int(ys.min()), int(xs.min()), int(ys.max()) + 1, int(xs.max()) + 1


def crop(image: np.ndarray, box: tuple[int, int, int, int], pad: int = 1, size: int = CROP) -> torch.Tensor:
    """3×size×size float crop in [0, 1] around ``box`` (padded, clipped to the image)."""
    h, w = image.shape[:2]
    y0, x0, y1, x1 = box
    y0, x0, y1, x1 = max(0, y0 - pad), max(0, x0 - pad), min(h, y1 + pad), min(w, x1 + pad)
    x = torch.from_numpy(np.ascontiguousarray(image[y0:y1, x0:x1])).permute(2, 0, 1)[None].float() / 255
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)[0]


def build_detector() -> SmallClassifier:
    return SmallClassifier(num_classes=len(CLASSES), width=32, image_size=CROP)


@dataclass
class Detection:
    label: str
    probability: float
    bbox: tuple[int, int, int, int] | None  # detected extent of the object (None when nothing changed)
    iou: float


@torch.no_grad()
def detect(detector, image: np.ndarray, box_mask: np.ndarray, empty: np.ndarray | None = None) -> Detection:
    """What stands in the box whose (unoccluded) image mask is ``box_mask``."""
    target = bbox(box_mask)
    if target is None:
        return Detection("nothing", 1.0, None, 0.0)
    probs = torch.softmax(detector(crop(image, target)[None]), -1)[0]
    k = int(probs.argmax())
    found, iou = None, 0.0
    if empty is not None:
        found = changed_extent(image, empty, box_mask)
        iou = box_iou(found, target) if found is not None else 0.0
    return Detection(CLASSES[k], float(probs[k]), found, iou)


def changed_extent(image: np.ndarray, empty: np.ndarray, box_mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """Bounding box of the largest changed blob that overlaps the box (grown by a quarter of its size)."""
    diff = np.abs(image.astype(np.float32) - empty.astype(np.float32)).max(-1) / 255 > DIFF_THRESHOLD
    y0, x0, y1, x1 = bbox(box_mask)
    grow = max(2, (y1 - y0 + x1 - x0) // 8)
    region = np.zeros_like(box_mask)
    region[max(0, y0 - grow):y1 + grow, max(0, x0 - grow):x1 + grow] = True
    labels, n = ndimage.label(diff & region)
    if n == 0:
        return None
    sizes = ndimage.sum(diff & region, labels, range(1, n + 1))
    return bbox(labels == 1 + int(np.argmax(sizes)))


def box_iou(a, b) -> float:
    if a is None or b is None:
        return 0.0
    iy = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    ix = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iy * ix
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0
