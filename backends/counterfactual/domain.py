"""Is an image from the embedded models' world? A Mahalanobis distance on the classifier's features.

The embedded classifier only ever saw 32×32 renders of one primitive in a room; shown anything else
(a photo, noise) it still names a shape, often confidently. So the classifier's penultimate features
of held-out renders (the validation split, never the test split) are summarised by their mean and
a shrunk covariance, and an input whose distance exceeds the threshold — the 99.5th percentile of
distances of other held-out renders, times a margin — is flagged as outside the domain. The
statistics ship beside the classifier (``domain.safetensors``); a classifier without them (the
ImageNet ones) is not checked, and the tab says so.

    python -m backends.counterfactual.domain <classifier folder> [--n 1200]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

DOMAIN_FILE = "domain.safetensors"
QUANTILE = 0.995
MARGIN = 1.25
SHRINK = 0.05


@dataclass
class DomainModel:
    mean: np.ndarray  # D
    precision: np.ndarray  # D×D, inverse of the shrunk covariance
    threshold: float  # distances above it are outside the domain

    def distance(self, features: np.ndarray) -> np.ndarray:
        d = np.atleast_2d(features).astype(np.float64) - self.mean
        return np.sqrt(np.einsum("nd,de,ne->n", d, self.precision, d))

    def save(self, folder: Path) -> Path:
        from safetensors.numpy import save_file

        path = Path(folder) / DOMAIN_FILE
        save_file({"mean": self.mean.astype(np.float32), "precision": self.precision.astype(np.float32),
                   "threshold": np.array([self.threshold], np.float32)}, str(path))
        return path

    @classmethod
    def load(cls, folder: Path) -> DomainModel | None:
        path = Path(folder) / DOMAIN_FILE
        if not path.is_file():
            return None
        from safetensors.numpy import load_file

        t = load_file(str(path))
        return cls(t["mean"].astype(np.float64), t["precision"].astype(np.float64), float(t["threshold"][0]))


@dataclass
class DomainVerdict:
    distance: float
    threshold: float

    @property
    def in_domain(self) -> bool:
        return self.distance <= self.threshold

    @property
    def warning(self) -> str:
        if self.in_domain:
            return ""
        return (f"This image looks unlike anything the embedded models were trained on (feature distance "
                f"{self.distance:.0f}, held-out renders stay below {self.threshold:.0f}): they know 32×32 renders of "
                "one shape in a room, so the prediction and any counterfactual of it are not meaningful.")


def fit_domain(features: np.ndarray, seed: int = 0) -> DomainModel:
    """Mean and shrunk covariance from one half of the features, the threshold from the other half."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(features))
    fit, calib = features[idx[: len(idx) // 2]].astype(np.float64), features[idx[len(idx) // 2:]]
    mean = fit.mean(0)
    cov = np.cov(fit, rowvar=False)
    cov = (1 - SHRINK) * cov + SHRINK * np.eye(len(mean)) * np.trace(cov) / len(mean)
    model = DomainModel(mean, np.linalg.inv(cov), 0.0)
    model.threshold = float(np.quantile(model.distance(calib), QUANTILE) * MARGIN)
    return model


@torch.no_grad()
def check_domain(domain: DomainModel, classifier, images_uint8: np.ndarray) -> list[DomainVerdict]:
    from .metrics import classifier_features

    dist = domain.distance(classifier_features(classifier, images_uint8))
    return [DomainVerdict(float(d), domain.threshold) for d in dist]


def main(argv=None) -> int:
    from .data import cached_split
    from .networks import ShapeClassifier

    p = argparse.ArgumentParser(description="Write domain.safetensors beside an embedded classifier.")
    p.add_argument("folder", type=Path)
    p.add_argument("--n", type=int, default=1200, help="validation renders to use")
    p.add_argument("--data-dir", type=Path, default=Path("training/data"))
    args = p.parse_args(argv)
    from .metrics import classifier_features

    classifier = ShapeClassifier.load(args.folder).eval()
    val = cached_split("val", args.data_dir, limit=args.n)
    domain = fit_domain(classifier_features(classifier, val["images"]))
    print(f"threshold {domain.threshold:.1f} from {args.n} validation renders → {domain.save(args.folder)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
