"""What the Unlearning actions write (PNG grids, the trained network as safetensors, numbers as JSON) and what
the tab shows (one side-by-side panel per class — per prompt on the text teacher —, a metrics table, loss curves)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np

from backends.common.files import write_text
from backends.common.imageio import save_png
from backends.synth.shape_images import CLASSES

from .distil import DistilResult, grid
from .evaluate import EvaluateResult
from .panels import class_panel
from .sampling import METHOD_TITLES

SHOWN_PER_CLASS = 4


def class_panels(result: EvaluateResult, k: int = SHOWN_PER_CLASS) -> list[tuple[np.ndarray, str]]:
    """(panel, caption) per class: a column per method, the classifier's reading under each image (red where the
    forgotten class is still read as itself, or another class is misread)."""
    f = CLASSES.index(result.forget)
    out = []
    for c, name in enumerate(CLASSES):
        idx = np.flatnonzero(result.labels == c)[:k]
        cols, caps, bad = {}, {}, {}
        for m in result.methods:
            cols[m] = result.images[m][idx]
            caps[m] = [f"{CLASSES[p]} {q:.2f}" for p, q in zip(result.predictions[m][idx], result.confidences[m][idx], strict=True)]
            bad[m] = [(p == f) if c == f else (p != c) for p in result.predictions[m][idx]]
        role = " — forgotten (asked for it; should not come out)" if c == f else (
            " — the class it is mapped to" if name == result.safe else "")
        out.append((class_panel(cols, caps, METHOD_TITLES, bad), f"asked for: {name}{role}"))
    return out


def is_text(result) -> bool:
    return getattr(result, "teacher", "shapes") == "text"


def text_panels(result, k: int = SHOWN_PER_CLASS) -> list[tuple[np.ndarray, str]]:
    """(panel, caption) per asked prompt of the text teacher: a column per method, the detector's reading of the box
    under each image (red where a prompt naming the forgotten word still gave it, or another prompt was misread)."""
    from .text.evaluate import TEXT_METHOD_TITLES
    from .text.words import names, prompt_class

    prompts = np.array(result.prompts, dtype=object)
    out = []
    for p in result.asked:
        idx = np.flatnonzero(prompts == p)[:k]
        forgotten, want = names(p, result.forget), " ".join(prompt_class(p))
        cols, caps, bad = {}, {}, {}
        for m in result.methods:
            cols[m] = result.images[m][idx]
            caps[m] = [f"{r} {q:.2f}" for r, q in zip(result.predictions[m][idx], result.confidences[m][idx], strict=True)]
            bad[m] = [(result.forget in str(r).split()) if forgotten else (r != want) for r in result.predictions[m][idx]]
        role = f" — names the forgotten word {result.forget!r} (what comes out instead?)" if forgotten else ""
        out.append((class_panel(cols, caps, TEXT_METHOD_TITLES, bad), f"prompt: {p}{role}"))
    return out


def panels(result) -> list[tuple[np.ndarray, str]]:
    return text_panels(result) if is_text(result) else class_panels(result)


def metrics_rows(result: EvaluateResult) -> list[list]:
    """[method, forget rate, retained accuracy, retained FD, s/image] per method."""
    from .text.evaluate import TEXT_METHOD_TITLES

    titles = TEXT_METHOD_TITLES if is_text(result) else METHOD_TITLES
    rows = []
    for m in result.methods:
        x = result.metrics.get(m)
        if not x:
            rows.append([titles[m], None, None, None, round(result.seconds[m], 5)])
            continue
        fr, ra = x["forget_rate"], x["retained_accuracy"]
        rows.append([titles[m], f"{fr['value']:.3f} [{fr['ci95'][0]:.2f}, {fr['ci95'][1]:.2f}] (n={fr['n']})",
                     f"{ra['value']:.3f} [{ra['ci95'][0]:.2f}, {ra['ci95'][1]:.2f}] (n={ra['n']})",
                     round(x["retained_fd"], 3), round(result.seconds[m], 5)])
    return rows


METRIC_HEADERS = ["method", "forget rate (goal ≤ 0.05) [95% CI]", "other classes' accuracy [95% CI]",
                  "Fréchet distance, other classes (classifier features)", "seconds / image"]


def write_evaluation(result: EvaluateResult, folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    if is_text(result):
        return _write_text_evaluation(result, folder)
    for (panel, _), name in zip(class_panels(result), CLASSES, strict=True):
        paths[f"panel_{name}"] = save_png(panel, folder / f"panel_{name}.png")
    for m in result.methods:
        paths[f"grid_{m}"] = save_png(grid(result.images[m], len(CLASSES)), folder / f"grid_{m}.png")
    np.savez_compressed(folder / "samples.npz", labels=result.labels,
                        **{f"{m}_images": result.images[m] for m in result.methods},
                        **{f"{m}_predictions": result.predictions[m] for m in result.methods})
    paths["samples"] = folder / "samples.npz"
    paths["metrics"] = write_text(folder / "metrics.json", json.dumps(result.to_json(), indent=2))
    return paths


def _write_text_evaluation(result, folder: Path) -> dict[str, Path]:
    """One panel per prompt (panel_<n>_<prompt>.png), a grid per method (a row per prompt), the images with the
    detector's readings (samples.npz) and the numbers (metrics.json)."""
    paths = {}
    for i, ((panel, _), p) in enumerate(zip(text_panels(result), result.asked, strict=True)):
        slug = re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-")[:40]
        paths[f"panel_{i}"] = save_png(panel, folder / f"panel_{i + 1}_{slug}.png")
    for m in result.methods:
        paths[f"grid_{m}"] = save_png(grid(result.images[m], len(result.asked)), folder / f"grid_{m}.png")
    np.savez_compressed(folder / "samples.npz", prompts=np.array(result.prompts, dtype=str),
                        **{f"{m}_images": result.images[m] for m in result.methods},
                        **{f"{m}_readings": np.array(result.predictions[m], dtype=str) for m in result.methods})
    paths["samples"] = folder / "samples.npz"
    paths["metrics"] = write_text(folder / "metrics.json", json.dumps(result.to_json(), indent=2))
    return paths


def write_distil(result: DistilResult, folder: Path) -> dict[str, Path]:
    """The trained network (safetensors + config, loads back with the tab's Load), the losses and the last preview."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"preview": save_png(result.preview, folder / "preview.png")}
    target = folder / f"{result.method}-{result.forget}-to-{result.safe}"
    if Path(result.network_dir).resolve() != target.resolve():
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(result.network_dir, target)
    paths["weights"] = next((target / w for w in ("model.safetensors", "diffusion_pytorch_model.safetensors")
                             if (target / w).exists()), target / "model.safetensors")
    paths["config"] = target / "config.json"
    paths["losses"] = write_text(folder / "losses.json", json.dumps(result.losses))
    return paths


def loss_plot(losses: dict[str, list[float]]):
    """A matplotlib figure of the loss curves (one axis per loss: their scales differ by orders of magnitude)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(losses) or ["(no steps yet)"]
    fig, axes = plt.subplots(1, len(keys), figsize=(3 * len(keys), 2.4), squeeze=False)
    for ax, k in zip(axes[0], keys, strict=True):
        v = losses.get(k, [])
        ax.plot(np.arange(1, len(v) + 1), v, lw=1)
        ax.set_title(k, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return fig
