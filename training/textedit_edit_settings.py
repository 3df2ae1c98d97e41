"""Choose the embedded text model's edit preset (layers, start step) on TRAINING words, never the bench's.

    python -m training.textedit_edit_settings [--pairs 30] [--out training/runs/textedit/edit_settings.json]

Why: the bench's held-out pairs must not pick the setting they then measure. Each variant patches a set of
text layers with the new word's K/V from a start step; per variant it reports how often RapidOCR reads the
new word (letters in order, as the bench's ``edit_new_word_rate``), how often the old word is still read,
and PSNR outside the text boxes against the unedited image (the bench's preservation measure). The prompt
swap (prompt B from the same noise) is the baseline row.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from backends.common.imagemetrics import psnr
from backends.textedit.data import COMMON_WORDS
from backends.textedit.pipeline import to_uint8
from backends.textedit.service import load_pipeline, prompt_for
from bench.report import markdown_table
from bench.textedit import TextBoxes, rate, readings, word_pairs


def training_pairs(n: int, seed: int) -> list[tuple[str, str, str]]:
    """(A, B, template) from the training words (4+ letters, as the held-out words), templates cycling."""
    return word_pairs(n, seed, [w for w in COMMON_WORDS if len(w) >= 4])


def variants(preset_layers: list[str], all_layers: list[str]) -> dict[str, tuple[list[str], int]]:
    """The preset's layers from several start steps, the preset plus each other text layer, and all layers."""
    out = {f"preset from {s}": (preset_layers, s) for s in (0, 2, 4)}
    for extra in (name for name in all_layers if name not in preset_layers):
        out[f"preset + {extra} from 4"] = (preset_layers + [extra], 4)
    out["all from 2"] = (all_layers, 2)
    out["all from 4"] = (all_layers, 4)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=30)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, default=Path("training/runs/textedit/edit_settings.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    pipe, preset, _ = load_pipeline()
    steps, cfg = preset.num_inference_steps, preset.guidance_scale
    all_layers = [layer.name for layer in pipe.layers]
    preset_layers = [layer.name for layer in pipe.resolve_layers(preset.edit_layers)]
    runs = variants(preset_layers, all_layers)
    pairs = training_pairs(args.pairs, args.seed)
    boxes = TextBoxes()
    images = {key: [] for key in ("original", "prompt swap", *runs)}
    t0 = time.perf_counter()
    for i, (a, b, template) in enumerate(pairs):
        pa, pb = prompt_for(template, a), prompt_for(template, b)
        kw = dict(num_inference_steps=steps, guidance_scale=cfg)
        images["original"].append(to_uint8(pipe(pa, generator=torch.Generator().manual_seed(i), **kw).images)[0])
        for key, (layers, start) in runs.items():
            out = pipe(pa, patch_prompt=pb, patch_layers=layers, patch_start_step=start,
                       generator=torch.Generator().manual_seed(i), **kw)
            images[key].append(to_uint8(out.images)[0])
            if key == next(iter(runs)):
                images["prompt swap"].append(to_uint8(out.source_images)[0])
        print(f"pair {i + 1}/{len(pairs)} {a}→{b} ({time.perf_counter() - t0:.0f} s)", flush=True)
    olds, news = [a for a, _, _ in pairs], [b for _, b, _ in pairs]
    masks = [boxes.mask(images["original"][i]) | boxes.mask(images["prompt swap"][i]) for i in range(len(pairs))]
    rows, result = [], {"pairs": pairs, "steps": steps, "guidance_scale": cfg, "variants": {}}
    for key in ("prompt swap", *runs):
        reads = readings(images[key])["rapidocr"]
        outs = [~(m | boxes.mask(img)) for m, img in zip(masks, images[key], strict=True)]
        ps = [psnr(img, o, mask=m if m.any() else None) for img, o, m in zip(images[key], images["original"], outs,
                                                                            strict=True)]
        new = rate({"rapidocr": reads}, news)["rapidocr"]
        old = rate({"rapidocr": reads}, olds)["rapidocr"]
        layers, start = runs.get(key, ([], None))
        result["variants"][key] = {"layers": layers, "start_step": start, "new_word_rate": new, "old_word_rate": old,
                                   "psnr_outside_text": float(np.mean(ps)), "read": reads}
        rows.append([key, f"{round(new * len(pairs))}/{len(pairs)}", f"{old:.2f}", f"{np.mean(ps):.2f}"])
    print(markdown_table(["variant", "new word read", "old word read", "PSNR outside text"], rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
