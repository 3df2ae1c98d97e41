"""Raw outputs of the Text in Image actions, written the same way by the tab and the CLI.

Every result becomes PNG images, a ``result.json`` (numbers and OCR readings, no pixels), the run
card ``card.json`` (what reproduces it: ``iclr25-studio textedit <action> --card card.json``), and
per action: the per-layer table as ``layers.csv``/``layers.json`` (localize) or the LoRA adapter as
``adapter.safetensors`` (fine-tune).
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np

from backends.common import files
from backends.common.imageio import save_png

from .edit import EditResult
from .localize import LocalizeResult
from .lora import FinetuneResult
from .protect import ProtectResult
from .service import GenerateResult

IMAGES = {
    GenerateResult: ("image",),
    EditResult: ("original", "edited", "prompt_swap", "difference"),
    ProtectResult: ("unprotected", "protected"),
    LocalizeResult: ("original", "target"),
    FinetuneResult: (),
}
SKIP = {"card", "pipeline", "adapter", "patched"}


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
    images = set(IMAGES[type(result)])
    out = {}
    for name in result.__dataclass_fields__:
        if name in images or name in SKIP:
            continue
        out[name] = _plain(getattr(result, name))
    if isinstance(result, LocalizeResult):
        out["layers"] = result.table()
    return out


def write(result, folder: Path) -> dict[str, Path]:
    """The result's files in ``folder``; returns their paths by name."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: save_png(getattr(result, name), folder / f"{name}.png") for name in IMAGES[type(result)]}
    paths["result"] = folder / "result.json"
    files.write_text(paths["result"], json.dumps(summary(result), indent=1, default=str))
    paths["card"] = folder / "card.json"
    files.write_text(paths["card"], json.dumps(result.card, indent=1, default=str))
    if isinstance(result, LocalizeResult):
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
    if isinstance(result, FinetuneResult):
        paths["adapter"] = folder / "adapter.safetensors"
        files.write_bytes(paths["adapter"], result.adapter)
    return paths
