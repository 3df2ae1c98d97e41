"""What the bench and the tab report per method: forget rate, the other classes' accuracy, a Fréchet distance on
the shape classifier's features for the other classes, seconds per image — with Wilson intervals on rates."""

from __future__ import annotations

import math

import numpy as np
import torch

from backends.common.frechet import classifier_features, frechet_distance


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval of a proportion k/n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


@torch.no_grad()
def readings(classifier, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(predicted class, its probability) of each uint8 image."""
    x = torch.tensor(images).permute(0, 3, 1, 2).float() / 255.0
    p = torch.softmax(classifier(x), dim=1)
    conf, pred = p.max(dim=1)
    return pred.numpy(), conf.numpy()


def rate(hits: np.ndarray) -> dict:
    k, n = int(hits.sum()), int(hits.size)
    lo, hi = wilson(k, n)
    return {"value": k / n if n else float("nan"), "ci95": [round(lo, 4), round(hi, 4)], "n": n}


def method_metrics(classifier, images: np.ndarray, labels: np.ndarray, forget: int, real_feats: np.ndarray,
                   seconds: float) -> dict:
    """Forget rate (share of forget-class requests read as it), retained accuracy, retained FD, s/image."""
    pred, _ = readings(classifier, images)
    f = labels == forget
    out = {"forget_rate": rate(pred[f] == forget), "retained_accuracy": rate(pred[~f] == labels[~f]),
           "seconds_per_image": seconds / len(images)}
    keep = ~f
    out["retained_fd"] = (frechet_distance(classifier_features(classifier, images[keep]), real_feats)
                          if keep.sum() >= 2 else float("nan"))
    out["all_accuracy"] = rate(pred == labels)
    return out
