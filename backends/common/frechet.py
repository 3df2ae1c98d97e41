"""A Fréchet distance on the project's shape-classifier features (Counterfactual's and Unlearning's quality number).

It is the FID formula on features of our own classifier (not Inception), so it only compares
methods on this embedded domain, never with published FIDs.
"""

from __future__ import annotations

import numpy as np
import torch


def _sqrtm_psd(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((a + a.T) / 2)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def frechet_distance(feats_a: np.ndarray, feats_b: np.ndarray) -> float:
    """‖μa − μb‖² + tr(Σa + Σb − 2 (Σa^½ Σb Σa^½)^½)."""
    if len(feats_a) < 2 or len(feats_b) < 2:
        raise ValueError("need at least two samples on each side")
    mu_a, mu_b = feats_a.mean(0), feats_b.mean(0)
    cov_a, cov_b = np.cov(feats_a, rowvar=False), np.cov(feats_b, rowvar=False)
    root_a = _sqrtm_psd(cov_a)
    cross = _sqrtm_psd(root_a @ cov_b @ root_a)
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a) + np.trace(cov_b) - 2 * np.trace(cross))


@torch.no_grad()
def classifier_features(classifier, images_uint8: np.ndarray, batch: int = 500) -> np.ndarray:
    device = next(classifier.parameters()).device
    out = []
    for i in range(0, len(images_uint8), batch):
        x = torch.tensor(images_uint8[i:i + batch]).permute(0, 3, 1, 2).float().to(device) / 255.0  # a copy: inputs may be read-only
        out.append(classifier.embed(x).cpu().numpy())
    return np.concatenate(out)
