"""Real photos into the embedded models: does each tab's out-of-domain score tell them from its synthetic world?

For Counterfactual, Video Depth and Avatar: the score (``backends.common.ood``, the statistics shipped in
assets/ood-calibration) of held-out synthetic inputs — seeds that neither the models' training nor the
calibration used; Video Depth's every other clip through H.264, as an uploaded video arrives — against
real photographs, each brought to what the model sees the way an upload is (Counterfactual: centre crop →
32×32; Video Depth: a one-frame clip at the 64-pixel working size; Avatar: 64×64 views
scored whole as uploaded, once as taken and once cut out on black by an upright ellipse standing in for a
person's silhouette). The photos are the ones that ship with scikit-image and matplotlib (drawings, charts,
test patterns and clip art left out), each whole and as 4 random crops. Reports per tab the AUROC, the
share of photos flagged and the share of synthetic inputs flagged, with the sample sizes.

Section 1 of issue 26 (an avatar fitted to photos of a person): ``avatar_fit_*`` come from
``bench.avatar.photo_fit`` (synthetic people of known pose and shape rendered as photos → MediaPipe → the
fit → the reconstruction; MPJPE, novel-view PSNR fitted vs true parameters, seconds per fit), which run the
user actions ``avatar_fit_photos`` and ``avatar_reconstruct`` (``bench.actions``). The out-of-domain scores
are model-level, not a user action: ``backends.common.ood`` on inputs brought to what each model sees.

    python -m bench.realinputs [--n-synthetic 400] [--fit-subjects 6]
    python -m bench.realinputs --avatar-fit-only   (only the avatar_fit_* keys, added to the last results)
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from bench.report import RESULTS, markdown_table


def _uploading_tabs() -> tuple[str, ...]:
    """The capabilities whose embedded model takes uploads and says when one is out of its domain."""
    from backends import specs

    return tuple(s.name for s in specs() if s.domain is not None)


TABS = _uploading_tabs()
SKIMAGE_PHOTOS = ("astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "clock_motion.png",
                  "coffee.png", "coins.png", "grass.png", "gravel.png", "hubble_deep_field.jpg", "ihc.png",
                  "microaneurysms.png", "moon.png", "motorcycle_left.png", "motorcycle_right.png", "page.png",
                  "retina.jpg", "rocket.jpg", "text.png")
MATPLOTLIB_PHOTOS = ("grace_hopper.jpg",)
CROPS = 4


def photo_paths() -> list[Path]:
    """The photographs that ship with scikit-image and matplotlib (the ones present in this install)."""
    import matplotlib
    import skimage

    sk = Path(skimage.__file__).parent / "data"
    mpl = Path(matplotlib.__file__).parent / "mpl-data" / "sample_data"
    paths = [sk / n for n in SKIMAGE_PHOTOS] + [mpl / n for n in MATPLOTLIB_PHOTOS]
    return [p for p in paths if p.is_file()]


def load_photo(path: Path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB"))


def photo_set(crops: int = CROPS, seed: int = 0) -> list[np.ndarray]:
    """Each photo whole and as ``crops`` random square crops of 40–80 % of its shorter side."""
    rng = np.random.default_rng(seed)
    out = []
    for path in photo_paths():
        img = load_photo(path)
        out.append(img)
        h, w = img.shape[:2]
        for _ in range(crops):
            s = int(min(h, w) * rng.uniform(0.4, 0.8))
            y, x = rng.integers(0, h - s + 1), rng.integers(0, w - s + 1)
            out.append(img[y:y + s, x:x + s])
    return out


def counterfactual_view(image: np.ndarray) -> np.ndarray:
    from backends.counterfactual.service import prepare_image

    return prepare_image(image, 32)


def embedded_size_multiple() -> int:
    """``VideoDepthPipeline.size_multiple`` of the embedded model, from its configs (without loading it)."""
    import json

    from backends.common.settings import get_settings

    folder = get_settings().assets_dir / "videodepth-embedded"
    vae, unet = (json.loads((folder / f / "config.json").read_text()) for f in ("vae", "unet"))
    factor = vae.get("patch_size") or 2 ** (len(vae["block_out_channels"]) - 1)
    return int(factor) * 2 ** (len(unet["block_out_channels"]) - 1)


def videodepth_view(image: np.ndarray, max_side: int = 64) -> np.ndarray:
    """The frame as the embedded model sees it (``service._run_depth``: working size, box filter)."""
    from PIL import Image

    from backends.videodepth.service import working_size

    w, h = working_size(image.shape[1], image.shape[0], max_side, embedded_size_multiple())
    return np.asarray(Image.fromarray(image).resize((w, h), Image.Resampling.BOX))


def avatar_view(rgb: np.ndarray, mask: np.ndarray, size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A view (float or uint8 image, mask) → what the reconstructor sees: resized like ``uploads.resize_views``,
    masked (as ``backends.avatar.data.ood_inputs`` brings a render there)."""
    import torch
    import torch.nn.functional as F

    img = np.asarray(rgb, np.float32) / (255.0 if np.asarray(rgb).dtype == np.uint8 else 1.0)
    m = (np.asarray(mask, np.float32) > 0.5).astype(np.float32)
    if img.shape[:2] != (size, size):
        t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)[None]
        img = F.interpolate(t, size=(size, size), mode="bilinear", antialias=True).clamp(0, 1)[0].permute(1, 2, 0).numpy()
        tm = torch.from_numpy(m)[None, None]
        m = (F.interpolate(tm, size=(size, size), mode="bilinear", antialias=True)[0, 0] > 0.5).float().numpy()
    return np.round(img * m[..., None] * 255).astype(np.uint8), m


def ellipse_mask(h: int, w: int) -> np.ndarray:
    yy, xx = np.mgrid[:h, :w]
    return ((((yy - h / 2) / (0.47 * h)) ** 2 + ((xx - w / 2) / (0.22 * w)) ** 2) < 1).astype(np.float32)


def real_views(tab: str, photos: list[np.ndarray]) -> tuple[list[np.ndarray], list | None]:
    if tab == "counterfactual":
        return [counterfactual_view(p) for p in photos], None
    if tab == "videodepth":
        return [videodepth_view(p) for p in photos], None
    views = [avatar_view(p, np.ones(p.shape[:2], np.float32)) for p in photos]  # photos as taken
    views += [avatar_view(p, ellipse_mask(*p.shape[:2])) for p in photos]  # photos cut out on black
    return [v for v, _ in views], None


def avatar_fit(subjects: int) -> dict:
    """Issue 26 §1's keys (bench.avatar.photo_fit on ``subjects`` synthetic people), printed as they come."""
    from bench.avatar import photo_fit_keys

    keys = photo_fit_keys(subjects)
    fit = keys["avatar_fit"]
    print(f"avatar from photos: {fit['subjects']} synthetic people × {fit['photos_per_subject']} photos: MPJPE "
          f"{keys['avatar_fit_mpjpe_mm']} mm, novel-view PSNR {keys['avatar_fit_psnr']} dB fitted vs "
          f"{keys['avatar_true_params_psnr']} dB from the true parameters, {keys['avatar_fit_seconds']} s per fit")
    return keys


def main(argv=None) -> int:
    from backends.common.ood import auroc, load_domain
    from training.ood_calibration import TEST_SEED0, data_module

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-synthetic", type=int, default=400, help="held-out synthetic inputs per tab")
    p.add_argument("--fit-subjects", type=int, default=6, help="synthetic people for the avatar photo fit")
    p.add_argument("--avatar-fit-only", action="store_true", help="only the avatar_fit_* keys, into the last results")
    p.add_argument("--quick", action="store_true",
                   help="the same measurement on fewer inputs (100 synthetic per tab, 2 people), into realinputs-quick.json")
    args = p.parse_args(argv)
    name = "realinputs-quick" if args.quick else "realinputs"
    if args.quick:
        args.n_synthetic, args.fit_subjects = min(args.n_synthetic, 100), min(args.fit_subjects, 2)
    if args.avatar_fit_only:
        last = RESULTS / f"{name}.json"
        result = json.loads(last.read_text()) if last.is_file() else {k: None for k in KEYS}
        details_file = RESULTS / f"{name}-details.json"
        details = json.loads(details_file.read_text()) if details_file.is_file() else {}
        result.update(avatar_fit(args.fit_subjects))
        save(name, result, details)
        return 0
    photos = photo_set()
    print(f"{len(photo_paths())} photographs (scikit-image, matplotlib), each whole and as {CROPS} crops: "
          f"{len(photos)} real images")
    result = {"ood_auroc": {}, "ood_real_flagged_rate": {}, "ood_synthetic_flagged_rate": {}}
    details = {"ood_samples": {}, "ood_threshold": {}, "real_photos": len(photo_paths()), "crops_per_photo": CROPS}
    rows = []
    for tab in TABS:
        start = time.perf_counter()
        stats = load_domain(tab)
        # scored exactly as the service scores an upload (Video Depth: every other clip through H.264)
        syn = stats.score(*data_module(tab).ood_inputs(TEST_SEED0, args.n_synthetic))
        real = stats.score(*real_views(tab, photos))
        result["ood_auroc"][tab] = round(auroc(syn, real), 4)
        result["ood_real_flagged_rate"][tab] = round(float(np.mean(real > stats.threshold)), 4)
        result["ood_synthetic_flagged_rate"][tab] = round(float(np.mean(syn > stats.threshold)), 4)
        details["ood_samples"][tab] = {"synthetic": len(syn), "real": len(real)}
        details["ood_threshold"][tab] = round(stats.threshold, 3)
        rows.append([tab, result["ood_auroc"][tab], result["ood_real_flagged_rate"][tab],
                     result["ood_synthetic_flagged_rate"][tab], len(real), len(syn), round(stats.threshold, 2),
                     round(float(np.median(real)), 2), round(float(np.median(syn)), 2),
                     round(time.perf_counter() - start, 1)])
    print(markdown_table(["tab", "AUROC", "real flagged", "synthetic flagged", "n real", "n synthetic", "threshold",
                          "median real", "median synthetic", "s"], rows))
    result.update(avatar_fit(args.fit_subjects))
    save(name, result, details)
    return 0


KEYS = ("ood_auroc", "ood_real_flagged_rate", "ood_synthetic_flagged_rate", "avatar_fit_mpjpe_mm", "avatar_fit_psnr",
        "avatar_true_params_psnr", "avatar_fit_seconds")


def save(name: str, result: dict, details: dict) -> None:
    """Exactly the issue's keys in ``<name>.json`` (scripts read it); sample sizes, thresholds, machine and time
    in ``<name>-details.json``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps({k: result.get(k) for k in KEYS}, indent=2) + "\n")
    details = {**details, **{k: v for k, v in result.items() if k not in KEYS}, "machine": f"{platform.machine()} · {platform.processor() or 'cpu'}",
               "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (RESULTS / f"{name}-details.json").write_text(json.dumps(details, indent=2) + "\n")
    print(f"→ {RESULTS / (name + '.json')}, {RESULTS / (name + '-details.json')}")


if __name__ == "__main__":
    raise SystemExit(main())
