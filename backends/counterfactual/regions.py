"""Automatic editable regions from the classifier's attribution, as RCSB's explainer does.

Integrated Gradients inside a SmoothGrad noise tunnel (captum), |sum over channels|, normalised by
its 98th percentile, summed into c×c cells; the highest cells are kept up to an area budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from backends.common.errors import InputError


@dataclass
class AutoRegion:
    mask: np.ndarray  # H×W bool, the editable region
    heatmap: np.ndarray  # H×W float in [0, 1], per-pixel attribution
    cell_scores: np.ndarray  # (H/c)×(W/c) summed attribution per cell
    target: int  # the class whose evidence was attributed


def attribution_map(classifier: torch.nn.Module, image: torch.Tensor, target: int, samples: int = 8,
                    stdev: float = 0.05, steps: int = 16, seed: int = 0) -> np.ndarray:
    """Per-pixel |IG| (SmoothGrad) for a 1×3×H×W image in [0, 1], normalised to [0, 1]."""
    from captum.attr import IntegratedGradients, NoiseTunnel

    torch.manual_seed(seed)
    tunnel = NoiseTunnel(IntegratedGradients(classifier))
    attr = tunnel.attribute(image, nt_type="smoothgrad", nt_samples=samples, stdevs=stdev, target=int(target),
                            baselines=torch.zeros_like(image), n_steps=steps, internal_batch_size=64)
    a = attr[0].sum(0).abs().detach().cpu().numpy()
    scale = np.percentile(a, 98)
    return np.clip(a / scale, 0, 1) if scale > 0 else np.zeros_like(a)


def cells_to_mask(heat: np.ndarray, cell: int, area: float) -> tuple[np.ndarray, np.ndarray]:
    """Keep the highest-scoring c×c cells whose total area stays within ``area`` (fraction of the image)."""
    h, w = heat.shape
    if cell < 1 or h % cell or w % cell:
        raise InputError(f"Cell size {cell} must divide the image size {w}×{h}.")
    if not 0 < area <= 1:
        raise InputError(f"Area budget must be in (0, 1], got {area}.")
    scores = heat.reshape(h // cell, cell, w // cell, cell).sum((1, 3))
    keep = max(1, int(np.floor(area * scores.size + 1e-9)))
    order = np.argsort(scores, axis=None)[::-1][:keep]
    chosen = np.zeros(scores.size, bool)
    chosen[order] = True
    chosen = chosen.reshape(scores.shape)
    mask = np.kron(chosen, np.ones((cell, cell), bool))
    return mask, scores


def auto_region(classifier: torch.nn.Module, image: torch.Tensor, target: int, cell: int = 4,
                area: float = 0.3, samples: int = 8, seed: int = 0) -> AutoRegion:
    heat = attribution_map(classifier, image, target, samples=samples, seed=seed)
    mask, scores = cells_to_mask(heat, cell, area)
    return AutoRegion(mask, heat, scores, int(target))
