"""What the text teacher's comparison reports per method, read by 3D Layout's detector on the crop of each image's
box: the forget rate (images for prompts naming the word whose reading names it — its colour or its shape half),
the retained accuracy (the reading equals the prompt's "colour shape" for prompts without the word), a Fréchet
distance on the detector's features against the real objects rendered in the same boxes (passed through the VAE,
so its blur is not counted against a method) and the seconds per image."""

from __future__ import annotations

import numpy as np
import torch

from backends.common.frechet import frechet_distance
from backends.synth.detector import CLASSES, crop
from backends.unlearn.metrics import rate

from .words import names, prompt_class


@torch.no_grad()
def read_boxes(detector, images: np.ndarray, boxes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(reading, its probability, detector features) of each image's box crop."""
    if len(images) == 0:
        return np.array([], dtype=object), np.zeros(0), np.zeros((0, 1))
    x = torch.stack([crop(im, b) for im, b in zip(images, boxes, strict=True)])
    p = torch.softmax(detector(x), -1)
    conf, k = p.max(-1)
    return np.array([CLASSES[i] for i in k.tolist()], dtype=object), conf.numpy(), detector.embed(x).numpy()


def text_metrics(readings: np.ndarray, feats: np.ndarray, prompts: list[str], forget: str, ref_feats: np.ndarray,
                 seconds: float) -> dict:
    f = np.array([names(p, forget) for p in prompts], bool)
    said = np.array([forget in str(r).split() for r in readings], bool)
    right = np.array([r == " ".join(prompt_class(p)) for r, p in zip(readings, prompts, strict=True)], bool)
    keep = ~f
    fd = frechet_distance(feats[keep], ref_feats) if keep.sum() >= 2 and len(ref_feats) >= 2 else float("nan")
    return {"forget_rate": rate(said[f]), "retained_accuracy": rate(right[keep]), "retained_fd": fd,
            "seconds_per_image": seconds / max(len(prompts), 1), "all_accuracy": rate(right)}
