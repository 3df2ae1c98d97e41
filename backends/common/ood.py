"""Is an input from an embedded model's synthetic world? One score for every capability.

The embedded models only ever saw procedural renders: flat-shaded surfaces, a few procedural
textures, no sensor noise, no optics. Photographs differ from those renders in their low-level
statistics much more than in what they show, and those statistics are what a small network keys
on too. So each input is described, at the size the model works at (what it actually sees), by a
few natural-image statistics — how much of it is exactly flat, the heavy tail of its gradients,
its fine-scale residual ("noise"), how many distinct colours it has, its saturation, its spectral
fall-off — and its distance from the model's training domain is the Mahalanobis distance of that
vector to the statistics of held-out synthetic inputs (mean and a shrunk covariance). The
threshold is a high quantile of the distances of *other* held-out synthetic inputs (a separate
calibration split), so few true synthetic inputs are flagged by construction.

Fitted by ``training/ood_calibration.py`` → ``assets/ood-calibration/<capability>.safetensors``
(with a card). A capability checks an upload with ``domain_check(capability, images, masks)``
and, beyond the threshold, shows :func:`DomainCheck.notice` naming the real model that would
serve and the one command that gets it; the run still goes ahead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

ASSET_FOLDER = "ood-calibration"  # under the settings' assets folder
SHRINK = 0.1  # covariance shrinkage towards its diagonal scale
VAR_FLOOR = 0.01  # least variance of a feature (they are logs, logits and fractions)
FEATURE_NAMES = (
    "flat_fraction", "small_gradient_fraction", "log_mean_gradient", "gradient_kurtosis", "laplacian_to_gradient",
    "log_residual_noise", "residual_to_gradient", "flat_block_fraction", "log_distinct_colours", "saturation_mean",
    "saturation_std", "chroma_residual", "spectral_slope", "luma_std", "edge_fraction", "planar_fraction",
    "hue_concentration", "foreground_fraction", "step_edge_fraction", "grey_fraction",
)


# --- features -----------------------------------------------------------------------------------

def _logit(p: float, eps: float = 1e-3) -> float:
    p = min(max(p, eps), 1 - eps)
    return float(np.log(p / (1 - p)))


def _median3(x: np.ndarray) -> np.ndarray:
    p = np.pad(x, 1, mode="edge")
    h, w = x.shape
    stack = np.stack([p[i:i + h, j:j + w] for i in range(3) for j in range(3)])
    return np.median(stack, axis=0)


def image_features(image: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """H×W×3 uint8 (at the model's working size) → the statistics of FEATURE_NAMES.

    ``mask`` (H×W, > 0.5 = the part the model looks at, e.g. a body's silhouette) restricts the
    statistics to that part; without it the whole image counts.
    """
    rgb = np.asarray(image, dtype=np.float64)[..., :3] / 255.0
    if rgb.ndim == 2:
        rgb = np.repeat(rgb[..., None], 3, -1)
    h, w = rgb.shape[:2]
    inside = np.ones((h, w), bool) if mask is None else np.asarray(mask) > 0.5
    fg = float(inside.mean())
    if inside.sum() < 16:
        inside = np.ones((h, w), bool)
    g = rgb @ np.array([0.299, 0.587, 0.114])
    gx, gy = np.diff(g, axis=1), np.diff(g, axis=0)
    mx, my = inside[:, 1:] & inside[:, :-1], inside[1:] & inside[:-1]
    d = np.concatenate([gx[mx], gy[my]])
    if d.size < 8:
        d = np.concatenate([gx.ravel(), gy.ravel()])
    a = np.abs(d)
    flat = float(np.mean(a < 0.5 / 255))
    small = float(np.mean(a < 3 / 255))
    mean_grad = float(a.mean()) + 1e-4
    kurt = float(np.mean(d**4) / (np.mean(d**2) ** 2 + 1e-12))
    lap = 4 * g[1:-1, 1:-1] - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:]
    lap_in = lap[inside[1:-1, 1:-1]]
    lap_ratio = float(np.abs(lap_in).mean() / mean_grad) if lap_in.size else 0.0
    resid = (g - _median3(g))[inside]
    noise = float(np.mean(np.abs(resid))) + 1 / 255
    resid_ratio = float(np.abs(resid).mean() / mean_grad)
    # 4×4 blocks that are (nearly) uniform
    bh, bw = h // 4, w // 4
    blocks = g[:bh * 4, :bw * 4].reshape(bh, 4, bw, 4).transpose(0, 2, 1, 3).reshape(bh, bw, 16)
    bin_ = inside[:bh * 4, :bw * 4].reshape(bh, 4, bw, 4).transpose(0, 2, 1, 3).reshape(bh, bw, 16).all(-1)
    bstd = blocks.std(-1)[bin_] if bin_.any() else blocks.std(-1).ravel()
    flat_blocks = float(np.mean(bstd < 1.5 / 255))
    px = rgb[inside]
    q = np.floor(px * 31.999).astype(np.int64)
    distinct = len(np.unique(q[:, 0] * 1024 + q[:, 1] * 32 + q[:, 2])) / len(px)
    mx_, mn_ = px.max(1), px.min(1)
    sat = (mx_ - mn_) / (mx_ + 1e-3)
    # chroma residual: how much the colour (not the brightness) varies at the finest scale
    chroma = rgb / (rgb.sum(-1, keepdims=True) + 1e-2)
    cres = np.abs(chroma[..., 0] - _median3(chroma[..., 0])) + np.abs(chroma[..., 1] - _median3(chroma[..., 1]))
    chroma_res = float(np.log(np.mean(cres[inside]) + 1e-4))
    # spectral slope of the (masked, mean-removed) luminance
    gz = np.where(inside, g - g[inside].mean(), 0.0)
    spec = np.abs(np.fft.fftshift(np.fft.fft2(gz))) ** 2
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot((yy - h // 2) / h, (xx - w // 2) / w)
    rings = np.linspace(0.05, 0.5, 7)
    power = [spec[(r >= lo) & (r < hi)].mean() + 1e-12 for lo, hi in zip(rings[:-1], rings[1:], strict=True)]
    centres = np.log((rings[:-1] + rings[1:]) / 2)
    slope = float(np.polyfit(centres, np.log(power), 1)[0])
    edges = float(np.mean(a > 0.08))
    planar = float(np.mean(np.abs(lap_in) < 1.5 / 255)) if lap_in.size else 1.0
    # hue concentration: rendered surfaces take a few palette hues, photographs spread over many
    strong = sat > 0.25
    if strong.sum() >= 8:
        hue = _hue(px[strong])
        counts = np.sort(np.bincount((hue * 36).astype(int) % 36, minlength=36))[::-1]
        hue_conc = float(counts[:3].sum() / counts.sum())
    else:
        hue_conc = 1.0
    # step edges: a rendered (unfiltered) edge jumps within one pixel; a photograph's spreads over two or more
    steps = []
    for grad in (gx, gy.T):
        strong_e = np.abs(grad[:, 1:-1]) > 0.06
        if strong_e.any():
            c = np.abs(grad[:, 1:-1])
            side = np.maximum(np.abs(grad[:, :-2]), np.abs(grad[:, 2:]))
            steps.append(side[strong_e] < 0.25 * c[strong_e])
    step = float(np.concatenate(steps).mean()) if steps else 0.5
    grey = float(np.mean(sat < 0.03))
    return np.array([
        _logit(flat), _logit(small), np.log(mean_grad), np.log(kurt + 1e-6), np.log(lap_ratio + 1e-3),
        np.log(noise), np.log(resid_ratio + 1e-3), _logit(flat_blocks), np.log(distinct), float(sat.mean()),
        float(sat.std()), chroma_res, slope, float(g[inside].std()), _logit(edges), _logit(planar),
        _logit(hue_conc), _logit(fg), _logit(step), _logit(grey),
    ])


def _hue(rgb: np.ndarray) -> np.ndarray:
    """N×3 in [0, 1] → hue in [0, 1)."""
    r, g, b = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    return (np.arctan2(np.sqrt(3) * (g - b), 2 * r - g - b) / (2 * np.pi)) % 1.0


def features(images, masks=None, jpeg_quality: int | None = None) -> np.ndarray:
    """N images (and optional N masks) → N×D; ``jpeg_quality``: each image through that JPEG round trip first."""
    masks = [None] * len(images) if masks is None else masks
    if jpeg_quality is not None:
        images = [jpeg_round_trip(im, jpeg_quality) for im in images]
    return np.stack([image_features(im, m) for im, m in zip(images, masks, strict=True)])


def jpeg_round_trip(image: np.ndarray, quality: int) -> np.ndarray:
    """The image after a JPEG encode/decode: a common compression history for inputs that arrive with any."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, np.uint8)).save(buf, "JPEG", quality=quality)
    return np.asarray(Image.open(buf).convert("RGB"))


# Videos arrive through lossy codecs (the tab's own examples are H.264) and their artefacts look like
# the fine detail that tells photos apart; one JPEG round trip of every frame, reference and upload
# alike, gives them all a compression history (held-out H.264 clips: 7.5% of frames flagged without
# it, 2% with it, at the same share of photos flagged).
CANONICAL_JPEG = {"videodepth": 95}


# --- the domain model -----------------------------------------------------------------------------

@dataclass
class DomainStats:
    """Held-out synthetic inputs of one capability, as standardized feature vectors, and the threshold.

    The distance of an input is the mean Euclidean distance of its standardized features to its
    ``k`` nearest reference inputs: the synthetic worlds are mixtures (plain rooms, striped and
    noisy textures, near and far views), so a nearest-neighbour distance follows them more closely
    than one Gaussian would, and a photo is far from every mode at once.
    """

    reference: np.ndarray  # N×D standardized features of the fit split
    mean: np.ndarray  # D
    scale: np.ndarray  # D (std, floored)
    threshold: float
    k: int = 5
    meta: dict = field(default_factory=dict)

    def standardize(self, feats: np.ndarray) -> np.ndarray:
        return (np.atleast_2d(feats).astype(np.float64) - self.mean) / self.scale

    def distance(self, feats: np.ndarray) -> np.ndarray:
        z = self.standardize(feats)
        d2 = (z**2).sum(1)[:, None] + (self.reference**2).sum(1)[None] - 2 * z @ self.reference.T
        d = np.sqrt(np.maximum(d2, 0.0))
        return np.sort(d, 1)[:, :self.k].mean(1)

    def save(self, path: Path) -> Path:
        import json

        from safetensors.numpy import save_file

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file({"reference": self.reference.astype(np.float32), "mean": self.mean, "scale": self.scale,
                   "threshold": np.array([self.threshold]), "k": np.array([self.k])}, str(path),
                  metadata={"features": ",".join(FEATURE_NAMES), "meta": json.dumps(self.meta)})
        return path

    @classmethod
    def load(cls, path: Path) -> DomainStats:
        import json

        from safetensors import safe_open

        with safe_open(str(path), "np") as f:
            meta = f.metadata() or {}
            t = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
        if meta.get("features") != ",".join(FEATURE_NAMES):
            raise ValueError(f"{Path(path).name} was fitted on other features; run training/ood_calibration.py again.")
        return cls(t["reference"].astype(np.float64), t["mean"], t["scale"], float(t["threshold"][0]), int(t["k"][0]),
                   json.loads(meta.get("meta", "{}")))


def fit_stats(fit: np.ndarray, calib: np.ndarray, quantile: float = 0.98, k: int = 5) -> DomainStats:
    """Reference and standardization from ``fit``; the threshold: the ``quantile`` of ``calib``'s distances."""
    fit = np.asarray(fit, np.float64)
    mean = fit.mean(0)
    scale = np.sqrt(np.maximum(fit.var(0), VAR_FLOOR))
    stats = DomainStats((fit - mean) / scale, mean, scale, 0.0, k)
    stats.threshold = float(np.quantile(stats.distance(calib), quantile))
    return stats


def auroc(negatives: np.ndarray, positives: np.ndarray) -> float:
    """Probability that a positive scores above a negative (ties count half)."""
    neg, pos = np.asarray(negatives, float), np.asarray(positives, float)
    if not len(neg) or not len(pos):
        return float("nan")
    greater = (pos[:, None] > neg[None]).mean()
    ties = (pos[:, None] == neg[None]).mean()
    return float(greater + 0.5 * ties)


# --- the check a capability runs -----------------------------------------------------------------

def domain_of(capability: str):
    """What ``capability``'s embedded model knows (its spec's ``domain``: ``backends/<capability>/spec.py``)."""
    from backends import spec

    domain = spec(capability).domain
    if domain is None:
        raise KeyError(f"{capability} has no out-of-domain check (its spec names no domain)")
    return domain


@cache
def load_domain(capability: str) -> DomainStats:
    from .settings import get_settings

    path = get_settings().assets_dir / ASSET_FOLDER / f"{capability}.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"The out-of-domain statistics {path.name} are missing from assets/ood-calibration; "
                                "run `python -m training.ood_calibration`.")
    return DomainStats.load(path)


@dataclass
class DomainCheck:
    """How far an upload is from a capability's synthetic world (median over its images or frames)."""

    capability: str
    distance: float
    threshold: float
    inputs: int  # images / frames / views scored

    @property
    def in_domain(self) -> bool:
        return self.distance <= self.threshold

    @property
    def notice(self) -> str:
        """Empty inside the domain; beyond it, what the embedded model knows and how to get the real one."""
        if self.in_domain:
            return ""
        from .registry import default_registry

        domain = domain_of(self.capability)
        ids = " ".join(domain.real_models)
        registry = default_registry()
        local = [i for i in domain.real_models if i in registry and registry.get(i).source != "hf"]
        how = (f"`iclr25-studio models download {ids}`"
               + (" (not on the Hugging Face Hub: the command says where to download and put "
                  f"{'it' if len(local) == 1 else 'them'})" if local else ""))
        return (f"This input looks unlike anything the embedded model was trained on (distance {self.distance:.1f} "
                f"from its training inputs; held-out ones stay below {self.threshold:.1f}). The embedded model only "
                f"knows {domain.knows}, so its result here says little about the input. The real model for this is "
                f"{domain.real_label} ({', '.join(f'`{i}`' for i in domain.real_models)}); get it with {how}. "
                "The run goes ahead.")

    def to_json(self) -> dict:
        return {"in_domain": self.in_domain, "distance": round(self.distance, 3), "threshold": round(self.threshold, 3),
                "inputs": self.inputs, "notice": self.notice}


def check_inputs(capability: str, images, masks=None) -> DomainCheck:
    """Score an upload as the model sees it (uint8 images at its working size; masks for masked views)."""
    stats = load_domain(capability)
    d = stats.distance(features(images, masks, CANONICAL_JPEG.get(capability)))
    return DomainCheck(capability, float(np.median(d)), stats.threshold, len(d))
