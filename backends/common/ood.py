"""Is an input from an embedded model's synthetic world? One score for every capability.

The embedded models only ever saw procedural renders: flat-shaded surfaces, a few procedural
textures, no sensor noise, no optics. Photographs differ from those renders in their low-level
statistics much more than in what they show, and those statistics are what a small network keys
on too. So each input is described, at the size the model works at (what it actually sees), by a
few natural-image statistics — how much of it is exactly flat, the heavy tail of its gradients,
its fine-scale residual ("noise"), how many distinct colours it has, its saturation, its spectral
fall-off — and its distance from the model's training domain is the mean distance of that vector
to its nearest held-out synthetic inputs (standardized features). The threshold is a high quantile
of the distances of *other* held-out synthetic inputs (a separate calibration split), so few true
synthetic inputs are flagged by construction.

A capability can also be calibrated on real photographs (``PHOTOS``, which ship with scikit-image and
matplotlib): the photos of ``FIT_PHOTOS`` fit the direction that tells them from the synthetic inputs,
which the distance then weighs (:func:`photo_direction`), and choose the threshold beside the
synthetic calibration split (:func:`choose_threshold`); ``HELD_OUT_PHOTOS`` are never used for
either, so what they score is a fair test.

Fitted by ``training/ood_calibration.py`` from each capability's own ``backends/<name>/data.py``
(``ood_inputs``, and ``ood_view`` where it is calibrated on photos) → ``assets/ood-calibration/
<capability>.safetensors`` (with a card); nothing here names a capability. A capability checks an
upload with ``check_inputs(capability, images, masks)`` and, beyond the threshold, shows
:func:`DomainCheck.notice` naming the real model that would serve and the one command that gets it;
the run still goes ahead.
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


# --- the domain model -----------------------------------------------------------------------------

@dataclass
class DomainStats:
    """Held-out synthetic inputs of one capability, as standardized feature vectors, and the threshold.

    The distance of an input is the mean Euclidean distance of its standardized features to its
    ``k`` nearest reference inputs: the synthetic worlds are mixtures (plain rooms, striped and
    noisy textures, near and far views), so a nearest-neighbour distance follows them more closely
    than one Gaussian would, and a photo is far from every mode at once.

    ``direction`` (optional, fitted on real photographs: :func:`photo_direction`) adds one coordinate, the
    standardized features' projection on the direction that tells photographs from the synthetic inputs (scaled
    to ``weight`` standard deviations of the synthetic inputs): a photo that is near the synthetic inputs in most
    statistics but off along that direction is far from them too. ``jpeg_quality``: every input goes through that
    JPEG round trip before its features are taken (the reference went through it too).
    """

    reference: np.ndarray  # N×D standardized features of the fit split (N×(D+1) with a direction)
    mean: np.ndarray  # D
    scale: np.ndarray  # D (std, floored)
    threshold: float
    k: int = 5
    meta: dict = field(default_factory=dict)
    direction: np.ndarray | None = None  # D: the photo coordinate is standardized features · direction
    jpeg_quality: int | None = None

    def standardize(self, feats: np.ndarray) -> np.ndarray:
        return (np.atleast_2d(feats).astype(np.float64) - self.mean) / self.scale

    def embed(self, feats: np.ndarray) -> np.ndarray:
        """Standardized features, and the photo coordinate where there is a direction."""
        z = self.standardize(feats)
        return z if self.direction is None else np.concatenate([z, (z @ self.direction)[:, None]], 1)

    def distance(self, feats: np.ndarray) -> np.ndarray:
        z = self.embed(feats)
        d2 = (z**2).sum(1)[:, None] + (self.reference**2).sum(1)[None] - 2 * z @ self.reference.T
        d = np.sqrt(np.maximum(d2, 0.0))
        return np.sort(d, 1)[:, :self.k].mean(1)

    def features(self, images, masks=None) -> np.ndarray:
        """The features of inputs as the model sees them, taken as the reference's were."""
        return features(images, masks, self.jpeg_quality)

    def score(self, images, masks=None) -> np.ndarray:
        """The distance of each input (uint8 images at the model's working size)."""
        return self.distance(self.features(images, masks))

    def save(self, path: Path) -> Path:
        import json

        from safetensors.numpy import save_file

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tensors = {"reference": self.reference.astype(np.float32), "mean": self.mean, "scale": self.scale,
                   "threshold": np.array([self.threshold]), "k": np.array([self.k])}
        if self.direction is not None:
            tensors["direction"] = np.asarray(self.direction, np.float64)
        if self.jpeg_quality is not None:
            tensors["jpeg_quality"] = np.array([self.jpeg_quality])
        save_file(tensors, str(path), metadata={"features": ",".join(FEATURE_NAMES), "meta": json.dumps(self.meta)})
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
        jpeg = int(t["jpeg_quality"][0]) if "jpeg_quality" in t else None
        return cls(t["reference"].astype(np.float64), t["mean"], t["scale"], float(t["threshold"][0]), int(t["k"][0]),
                   json.loads(meta.get("meta", "{}")), t.get("direction"), jpeg)


def fit_stats(fit: np.ndarray, calib: np.ndarray, quantile: float = 0.98, k: int = 5,
              direction: np.ndarray | None = None) -> DomainStats:
    """Reference and standardization from ``fit``; the threshold: the ``quantile`` of ``calib``'s distances.
    ``direction`` (unit, in the standardized features: :func:`photo_direction`) adds the photo coordinate."""
    fit = np.asarray(fit, np.float64)
    mean = fit.mean(0)
    scale = np.sqrt(np.maximum(fit.var(0), VAR_FLOOR))
    stats = DomainStats((fit - mean) / scale, mean, scale, 0.0, k, direction=direction)
    stats.reference = stats.embed(fit)
    stats.threshold = float(np.quantile(stats.distance(calib), quantile))
    return stats


def standardizer(fit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of the fit split's features, as :func:`fit_stats` standardizes them."""
    fit = np.asarray(fit, np.float64)
    return fit.mean(0), np.sqrt(np.maximum(fit.var(0), VAR_FLOOR))


def photo_direction(fit: np.ndarray, photos: np.ndarray, weight: float, l2: float = 0.01) -> np.ndarray:
    """The direction (in ``fit``'s standardized features) that tells ``photos`` from the synthetic ``fit`` inputs:
    an L2-regularized logistic regression, the two classes weighted equally, scaled so that the synthetic inputs'
    projections have a standard deviation of ``weight``."""
    mean, scale = standardizer(fit)
    x = np.concatenate([(np.asarray(fit, np.float64) - mean) / scale, (np.asarray(photos, np.float64) - mean) / scale])
    y = np.concatenate([np.zeros(len(fit)), np.ones(len(photos))])
    x1 = np.concatenate([x, np.ones((len(x), 1))], 1)
    sample_weight = np.where(y == 1, 0.5 / len(photos), 0.5 / len(fit))
    reg = np.append(np.full(x.shape[1], l2), 0.0)
    w = np.zeros(x1.shape[1])
    for _ in range(50):  # Newton's method: the loss is convex, a few steps converge
        p = 1 / (1 + np.exp(-np.clip(x1 @ w, -30, 30)))
        grad = x1.T @ (sample_weight * (p - y)) + reg * w
        hess = (x1 * (sample_weight * p * (1 - p))[:, None]).T @ x1 + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    u = w[:-1] / np.linalg.norm(w[:-1])
    return weight * u / max(float((x[:len(fit)] @ u).std()), 1e-9)


def choose_threshold(synthetic: np.ndarray, photos: np.ndarray, quantile: float) -> float:
    """The threshold that keeps held-out synthetic inputs in the domain and flags real photographs: among the
    thresholds that flag at most ``1 − quantile`` of ``synthetic`` (at or above its ``quantile``), the one with the
    largest share of ``photos`` flagged less share of ``synthetic`` flagged (Youden's J); where several do equally
    well, the middle of them (so the margin to both sides is as wide as the calibration data allow)."""
    synthetic, photos = np.asarray(synthetic, float), np.asarray(photos, float)
    floor = float(np.quantile(synthetic, quantile))
    values = np.unique(np.concatenate([synthetic, photos]))
    values = values[values > floor]
    candidates = np.concatenate([[floor], (values[:-1] + values[1:]) / 2]) if len(values) > 1 else np.array([floor])
    j = np.array([np.mean(photos > t) - np.mean(synthetic > t) for t in candidates])
    best = np.flatnonzero(j >= j.max() - 1e-12)
    return float(candidates[best[len(best) // 2]])


def auroc(negatives: np.ndarray, positives: np.ndarray) -> float:
    """Probability that a positive scores above a negative (ties count half)."""
    neg, pos = np.asarray(negatives, float), np.asarray(positives, float)
    if not len(neg) or not len(pos):
        return float("nan")
    greater = (pos[:, None] > neg[None]).mean()
    ties = (pos[:, None] == neg[None]).mean()
    return float(greater + 0.5 * ties)


# --- real photographs: what the domain is told apart from --------------------------------------

# Photographs that ship with scikit-image (``skimage/data``) and matplotlib (``mpl-data/sample_data``), with the
# licence their documentation states (scikit-image: each ``skimage.data`` function's notes). Drawings, charts,
# test patterns, and the photos whose licence is not stated (moon, page, the Middlebury motorcycle pair) are left
# out.
PHOTOS = {
    "astronaut.png": "public domain (NASA)",
    "brick.png": "CC0 (CC0Textures)",
    "camera.png": "CC0 (Lav Varshney)",
    "cell.png": "CC0 (Paul Müller)",
    "chelsea.png": "CC0 (Stéfan van der Walt)",
    "clock_motion.png": "public domain (Stéfan van der Walt)",
    "coffee.png": "CC0 (Rachel Michetti)",
    "coins.png": "no known copyright restrictions (Brooklyn Museum)",
    "grass.png": "CC0 (linolafett)",
    "gravel.png": "CC0 (CC0Textures)",
    "hubble_deep_field.jpg": "public domain (NASA)",
    "ihc.png": "no known copyright restrictions (CMMI)",
    "microaneurysms.png": "CC0 (Andreas Maier)",
    "retina.jpg": "CC0 (Mikael Häggström)",
    "rocket.jpg": "public domain (SpaceX)",
    "text.png": "public domain (Wikipedia)",
    "grace_hopper.jpg": "public domain (U.S. Navy; matplotlib's sample data)",
}
# Held out: never used to fit or calibrate anything; the model card's AUROC and the tests are on these. One photo of
# each kind: an animal and an object close-up (colour scenes, what a person tries first), a greyscale portrait, a
# texture, a micrograph. The rest fit the photo direction and calibrate the threshold.
HELD_OUT_PHOTOS = ("chelsea.png", "coffee.png", "camera.png", "gravel.png", "ihc.png")
FIT_PHOTOS = tuple(name for name in PHOTOS if name not in HELD_OUT_PHOTOS)
PHOTO_CROPS = 12  # views of a photo besides the whole: random square crops of 30–90 % of its shorter side


def photo_path(name: str) -> Path:
    """Where an installed scikit-image or matplotlib keeps the photograph ``name``."""
    import matplotlib
    import skimage

    sk = Path(skimage.__file__).parent / "data" / name
    return sk if sk.is_file() else Path(matplotlib.__file__).parent / "mpl-data" / "sample_data" / name


def photo(name: str) -> np.ndarray:
    """The photograph ``name`` (one of ``PHOTOS``) as H×W×3 uint8."""
    from PIL import Image

    if name not in PHOTOS:
        raise KeyError(f"{name} is not one of the photographs with a known licence: {', '.join(PHOTOS)}")
    with Image.open(photo_path(name)) as im:
        return np.asarray(im.convert("RGB"))


def photo_views(image: np.ndarray, crops: int = PHOTO_CROPS, seed: int = 0) -> list[np.ndarray]:
    """The photo whole and as ``crops`` random square crops (30–90 % of its shorter side): the same photo framed
    as a person might, seen at other scales."""
    rng = np.random.default_rng(seed)
    h, w = image.shape[:2]
    out = [image]
    for _ in range(crops):
        s = int(min(h, w) * rng.uniform(0.3, 0.9))
        y, x = rng.integers(0, h - s + 1), rng.integers(0, w - s + 1)
        out.append(image[y:y + s, x:x + s])
    return out


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
    d = stats.score(images, masks)
    return DomainCheck(capability, float(np.median(d)), stats.threshold, len(d))
