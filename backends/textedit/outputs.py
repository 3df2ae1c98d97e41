"""What the Text in Image actions give a person: their files (written the same way for the tab, the API
and the CLI) and how a result is shown (enlarged images, OCR read-outs, the layer table and heat map).

Every result becomes PNG images and a ``result.json`` (numbers and OCR readings, no pixels), and per
action: the per-layer table as ``layers.csv``/``layers.json`` and each layer's patched image
(localize) or the LoRA adapter as ``adapter.safetensors`` (fine-tune). The run card ``run.json``
beside them is the Action's (``actions.py``). Torch-free: the tab's handlers import it.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np

from backends.common import files
from backends.common.imageio import save_png, upscale

ZOOM = 4  # the embedded model's 32×128 images are shown 4× enlarged
IMAGES = {  # result class → its image fields, written as <field>.png
    "GenerateResult": ("image",),
    "EditResult": ("original", "edited", "prompt_swap", "difference"),
    "ProtectResult": ("unprotected", "protected"),
    "LocalizeResult": ("original", "target"),
    "FinetuneResult": (),
}
SKIP = {"pipeline", "adapter", "patched"}


def _plain(value):
    if is_dataclass(value):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def summary(result) -> dict:
    """Everything of a result but its pixels, adapter bytes and model: JSON-ready."""
    images = set(IMAGES[type(result).__name__])
    out = {}
    for name in result.__dataclass_fields__:
        if name in images or name in SKIP:
            continue
        out[name] = _plain(getattr(result, name))
    if _is(result, "LocalizeResult"):
        out["layers"] = _plain(result.table())
    return out


def _is(result, name: str) -> bool:
    return type(result).__name__ == name


def write(result, folder: Path) -> dict[str, Path]:
    """The result's files in ``folder`` (not the run card: ``Action.write_run`` adds it); their paths by name."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: save_png(getattr(result, name), folder / f"{name}.png") for name in IMAGES[type(result).__name__]}
    paths["result"] = folder / "result.json"
    files.write_text(paths["result"], json.dumps(summary(result), indent=1, default=str))
    if _is(result, "LocalizeResult"):
        rows = result.table()
        paths["layers_csv"] = folder / "layers.csv"
        with files.atomic_path(paths["layers_csv"]) as tmp, open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        paths["layers_json"] = folder / "layers.json"
        files.write_text(paths["layers_json"], json.dumps({
            "layers": rows, "head_f1": result.head_f1, "chosen": result.chosen, "chosen_share": result.chosen_share,
            "chosen_module_share": result.chosen_module_share, "denoiser_params": result.denoiser_params}, indent=1))
        for s in result.layers:
            paths[f"layer_{s.index}"] = save_png(result.patched[s.name], folder / f"layer_{s.index:02d}.png")
    if _is(result, "FinetuneResult"):
        paths["adapter"] = folder / "adapter.safetensors"
        files.write_bytes(paths["adapter"], result.adapter)
    return paths


# --- how a result is shown -----------------------------------------------------------------------
def enlarge(image: np.ndarray) -> np.ndarray:
    """The embedded model's small images enlarged ``ZOOM`` times (a published model's are shown as they are)."""
    return upscale(image, ZOOM) if image.shape[0] <= 128 else image


def region_box(mask: np.ndarray | None, factor: int = ZOOM) -> tuple[int, int, int, int] | None:
    """The painted mask's bounding box (x0, y0, x1, y1) in model pixels, the mask being ``factor``
    times enlarged as shown (None when nothing is painted)."""
    if mask is None or not np.asarray(mask).any():
        return None
    ys, xs = np.nonzero(mask)
    return int(xs.min()) // factor, int(ys.min()) // factor, -(-(int(xs.max()) + 1) // factor), \
        -(-(int(ys.max()) + 1) // factor)


def readout(readings, label: str = "") -> str:
    head = f"**{label}** " if label else ""
    return head + " · ".join(r.line() for r in readings)


def layer_rows(result) -> list[list]:
    """The per-layer table as shown (the ★ marks the chosen layers)."""
    chosen = set(result.chosen)
    return [[s.index, s.name, round(s.f1_b, 3), round(s.f1_a, 3), round(s.levenshtein_b, 2), round(s.psnr, 1), s.params,
             round(100 * s.share, 3), "★" if s.name in chosen else "", s.read] for s in result.layers]


def layer_bars(result):
    """OCR-F1(B) per layer, chosen or not: the bar chart's frame."""
    import pandas as pd

    chosen = set(result.chosen)
    return pd.DataFrame({"layer": [f"{s.index}" for s in result.layers], "OCR-F1 (B)": [s.f1_b for s in result.layers],
                         "layer type": ["chosen" if s.name in chosen else "other" for s in result.layers]})


def heat_map(result, cell: int = 26) -> np.ndarray:
    """OCR-F1(B) per layer (rows) × head (columns), white → dark blue, chosen layers marked with a star."""
    from PIL import Image, ImageDraw

    rows, cols = len(result.head_f1), max(len(r) for r in result.head_f1)
    left, top = 40, 18
    img = Image.new("RGB", (left + cols * cell + 4, top + rows * cell + 4), "white")
    d = ImageDraw.Draw(img)
    for h in range(cols):
        d.text((left + h * cell + 8, 3), f"h{h}", fill="black")
    chosen = set(result.chosen)
    for i, (s, row) in enumerate(zip(result.layers, result.head_f1, strict=True)):
        d.text((2, top + i * cell + 7), f"{'*' if s.name in chosen else ' '}{s.index}", fill="black")
        for h, v in enumerate(row):
            box = (left + h * cell, top + i * cell, left + (h + 1) * cell - 2, top + (i + 1) * cell - 2)
            if v is None:
                d.rectangle(box, outline="#ccc")
                continue
            c = (int(255 - 215 * v), int(255 - 170 * v), int(255 - 60 * v))
            d.rectangle(box, fill=c)
            d.text((box[0] + 3, box[1] + 7), f"{v:.1f}", fill="black" if v < 0.6 else "white")
    return np.asarray(img)


def localize_text(r) -> str:
    """What a Localize run found, in a paragraph: the chosen layers and their share, the best layer."""
    best = max(r.layers, key=lambda s: s.f1_b)
    return (f"**Chosen layers: {', '.join(r.chosen)}** — their text K/V projections are "
            f"{100 * r.chosen_share:.2f}% of the denoiser's {r.denoiser_params / 1e6:.2f} M parameters "
            f"(counted as the paper counts SDXL's 0.61%; the whole attention layers, which the LoRA "
            f"trains, {100 * r.chosen_module_share:.2f}%). Best single layer: {best.index} (OCR-F1 B "
            f"{best.f1_b:.2f}). Pairs: {', '.join(f'{a}→{b}' for a, b in r.pairs)}. Model **{r.model}** on "
            f"`{r.device}`, OCR by {r.engine}, {r.seconds:.0f} s. They are offered under *Edit, Protect "
            f"and Fine-tune go through*; those actions keep the layers chosen there until you pick them.")


def edit_text(r) -> str:
    extra = f" PSNR outside the region: {r.psnr_outside_region:.1f} dB." if r.region else ""
    return (f"{readout(r.readings_original, 'Original:')}<br>{readout(r.readings_edited, 'Edited:')}<br>"
            f"{r.note}{extra} Model **{r.model}** on `{r.device}`, {r.seconds:.1f} s.")


def protect_text(r) -> str:
    return (f"{r.note}<br>{readout(r.readings_unprotected, 'Unprotected:')}<br>"
            f"{readout(r.readings_protected, 'Protected:')}<br>Model **{r.model}** on `{r.device}`.")


def finetune_text(r, rank: int) -> str:
    return (f"LoRA rank {rank} on **{r.target}** ({len(r.layers)} attention modules): "
            f"{r.trainable_params:,} trainable parameters ({100 * r.trainable_share:.2f}% of the denoiser), "
            f"{len(r.losses)} steps in {r.seconds:.0f} s.<br>Held-out words, OCR-F1 / accuracy: before "
            f"**{r.before.f1:.2f} / {r.before.accuracy:.0%}**, after **{r.after.f1:.2f} / "
            f"{r.after.accuracy:.0%}**. Model **{r.model}**.")


def loss_frame(r):
    import pandas as pd

    return pd.DataFrame({"step": range(1, len(r.losses) + 1), "loss": r.losses})
