"""Localized text layers on the embedded model: localization, editing, toxic-text prevention and LoRA, one run.

Held-out words (never in training), on the training templates and two phrasings the model never saw
("a banner that says", "a sticker that says"); every image is read by RapidOCR (the numbers at the
top level) and by tesseract (the second opinion, under ``details``), scored character-level as the
paper's ``get_p_r_acc`` (F1 of mean precision and recall).

1. Localization: OCR-F1(B) when patching each text layer alone (A→B pairs, patching from step 0),
   the chosen layers together, a random other layer, and all layers (the upper bound), with their
   share of the denoiser's parameters: their text K/V projections, as the paper counts its 0.61% /
   0.23%, and their whole attention modules.
2. Editing A→B: the rate at which the new word is read (``edit_new_word_rate``: its letters in order in
   what RapidOCR reads), OCR-F1 of the new text, the rate at which the old text is still read, PSNR/SSIM
   outside the text region (RapidOCR's detector boxes in either image, padded) vs the original —
   patching the localized layers (from the model's start step) vs plain prompt-swap regeneration
   (prompt B from the same noise) vs patching all text layers.
3. Toxic text: the rate at which a blocked word is still readable — ours (the localized layers take a
   benign word's K/V) vs the prompt swap (the benign prompt itself) vs a negative prompt naming the
   word — and the largest pixel change the protection makes on clean prompts (must be 0).
4. LoRA at equal steps on the localized layer(s) the scan chose (the top-level numbers), on the
   edit preset's layers, on all attention layers and on as many random text layers as the scan chose:
   OCR-F1 of held-out words before and after training, trainable parameters (and their ratio to
   all-layer LoRA's), seconds.

Localize, Edit, Protect and the LoRA runs are the tab's actions (``textedit_localize`` / ``_edit`` /
``_protect`` / ``_finetune`` through ``bench.actions.run_action``); the per-layer-group patching in 1, the
prompt-swap and negative-prompt baselines of 3 are pipeline calls (not user actions).

    python -m bench.textedit [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from backends.common.imagemetrics import psnr, ssim
from backends.textedit.attention import parameter_shares
from backends.textedit.data import HELD_OUT_WORDS, TEMPLATES
from backends.textedit.edit import EditRequest
from backends.textedit.localize import LocalizeRequest
from backends.textedit.lora import FinetuneRequest
from backends.textedit.metrics import ocr_scores
from backends.textedit.ocr import ENGINES, read, upscaled
from backends.textedit.pipeline import to_uint8
from backends.textedit.protect import DEFAULT_BLOCK_LIST, ProtectRequest
from backends.textedit.service import load_pipeline, prompt_for
from bench.actions import run_action
from bench.report import markdown_table, write_results

HELD_OUT_TEMPLATES = ("a banner that says", "a sticker that says")
ALL_TEMPLATES = tuple(TEMPLATES.values()) + HELD_OUT_TEMPLATES


def word_pairs(n: int, seed: int, words=HELD_OUT_WORDS) -> list[tuple[str, str, str]]:
    """(A, B, template): distinct ``words`` (the held-out ones by default), templates cycling (training
    phrasings and unseen ones)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a, b = rng.choice(len(words), 2, replace=False)
        out.append((words[a], words[b], ALL_TEMPLATES[i % len(ALL_TEMPLATES)]))
    return out


class TextBoxes:
    """RapidOCR's DB text detector: the text region of an image (the reference removes text boxes likewise)."""

    def __init__(self):
        from rapidocr import RapidOCR

        self.engine = RapidOCR(params={"Global.log_level": "error"})

    def mask(self, image: np.ndarray, pad: int = 2) -> np.ndarray:
        big = np.asarray(upscaled(image))
        f = big.shape[1] / image.shape[1]
        out = self.engine(np.ascontiguousarray(big[:, :, ::-1]), use_det=True, use_cls=False, use_rec=False)
        m = np.zeros(image.shape[:2], bool)
        for box in (out.boxes if out.boxes is not None else []):
            box = np.asarray(box) / f
            x0, y0 = np.floor(box.min(0)).astype(int) - pad
            x1, y1 = np.ceil(box.max(0)).astype(int) + pad
            m[max(0, y0):y1, max(0, x0):x1] = True
        return m


def readings(images: list[np.ndarray], detect: bool = False) -> dict[str, list[str]]:
    return {e: [read(img, e, detect=detect).text for img in images] for e in ENGINES}


def f1s(reads: dict[str, list[str]], truth: list[str]) -> dict[str, float]:
    return {e: ocr_scores(r, truth).f1 for e, r in reads.items()}


def readable(read_text: str, word: str) -> bool:
    """The word can be read in the image: its letters appear in order in what OCR read (case, spaces ignored)."""
    return word.lower() in "".join(ch for ch in read_text.lower() if ch.isalnum())


def rate(reads: dict[str, list[str]], words: list[str]) -> dict[str, float]:
    return {e: float(np.mean([readable(r, w) for r, w in zip(rs, words, strict=True)])) for e, rs in reads.items()}


def run_localization(pipe, n_pairs: int, steps: int, seed: int) -> dict:
    a, b, _ = word_pairs(1, seed)[0]
    res = run_action("textedit_localize", LocalizeRequest(text=a, new_text=b, extra_pairs=n_pairs - 1, per_head=False,
                                                          num_inference_steps=steps, seed=seed))
    total = res.denoiser_params
    by_name = {layer.name: layer for layer in pipe.layers}
    chosen = res.chosen
    rng = np.random.default_rng(seed)
    others = [s for s in res.layers if s.name not in chosen] or res.layers
    random_layer = others[rng.integers(len(others))]
    groups = {"chosen together": chosen, "all text layers": [layer.name for layer in pipe.layers]}
    together = {}
    for label, names in groups.items():
        imgs, b_texts = [], []
        for a_text, b_text in res.pairs:
            out = pipe(prompt_for("a sign that says", a_text), patch_prompt=prompt_for("a sign that says", b_text),
                       patch_layers=names, num_inference_steps=steps, generator=torch.Generator().manual_seed(seed))
            imgs.append(to_uint8(out.images)[0])
            b_texts.append(b_text)
        kv_share, module_share = parameter_shares((by_name[n] for n in names), total)
        together[label] = {"f1_b": f1s(readings(imgs), b_texts), "share": kv_share, "module_share": module_share}
    return {"pairs": res.pairs, "layers": res.table(), "chosen": chosen, "chosen_share": res.chosen_share,
            "chosen_module_share": res.chosen_module_share, "denoiser_params": total,
            "random_layer": {"name": random_layer.name, "f1_b": random_layer.f1_b, "share": random_layer.share,
                             "module_share": random_layer.module_share},
            "together": together, "engine_per_layer": res.engine, "seconds": res.seconds}


def run_editing(pipe, layers: list[str], n: int, steps: int, seed: int, boxes: TextBoxes) -> dict:
    rows = {k: {"images": [], "psnr": [], "ssim": []} for k in ("localized", "prompt swap", "all layers")}
    originals, olds, news = [], [], []
    all_layers = [layer.name for layer in pipe.layers]
    for i, (a, b, template) in enumerate(word_pairs(n, seed + 1)):
        r = run_action("textedit_edit", EditRequest(text=a, new_text=b, template=template, layers=layers,
                                                    num_inference_steps=steps, seed=seed + i))
        full = run_action("textedit_edit", EditRequest(text=a, new_text=b, template=template, layers=all_layers,
                                                       start_step=r.start_step, num_inference_steps=steps, seed=seed + i))
        outside = ~(boxes.mask(r.original) | boxes.mask(r.edited) | boxes.mask(r.prompt_swap) | boxes.mask(full.edited))
        if not outside.any():
            outside = np.ones(outside.shape, bool)
        for key, img in (("localized", r.edited), ("prompt swap", r.prompt_swap), ("all layers", full.edited)):
            rows[key]["images"].append(img)
            rows[key]["psnr"].append(psnr(img, r.original, mask=outside))
            rows[key]["ssim"].append(ssim(np.where(outside[..., None], img, 0), np.where(outside[..., None], r.original, 0)))
        originals.append(r.original)
        olds.append(a)
        news.append(b)
    out = {"pairs": n, "start_step": r.start_step, "layers": layers}
    for key, row in rows.items():
        reads = readings(row["images"])
        out[key] = {"ocr_f1_new": f1s(reads, news), "old_text_read_rate": rate(reads, olds),
                    "new_text_read_rate": rate(reads, news), "psnr_outside_text": float(np.mean(row["psnr"])),
                    "ssim_outside_text": float(np.mean(row["ssim"]))}
    return out


def run_toxic(pipe, layers: list[str], steps: int, seed: int, n_clean: int, start_step: int) -> dict:
    words = list(DEFAULT_BLOCK_LIST)
    imgs = {k: [] for k in ("unprotected", "ours", "prompt swap", "negative prompt")}
    benign = []
    for i, w in enumerate(words):
        template = ALL_TEMPLATES[i % len(ALL_TEMPLATES)]
        r = run_action("textedit_protect", ProtectRequest(text=w, template=template, layers=layers, start_step=start_step,
                                                          num_inference_steps=steps, seed=seed + i))
        g = torch.Generator().manual_seed(seed + i)
        swap = pipe(prompt_for(template, r.benign_text), num_inference_steps=steps, generator=g).images
        g = torch.Generator().manual_seed(seed + i)
        neg = pipe(prompt_for(template, w), negative_prompt=prompt_for(template, w), num_inference_steps=steps,
                   generator=g).images
        imgs["unprotected"].append(r.unprotected)
        imgs["ours"].append(r.protected)
        imgs["prompt swap"].append(to_uint8(swap)[0])
        imgs["negative prompt"].append(to_uint8(neg)[0])
        benign.append(r.benign_text)
    out = {"words": len(words), "layers": layers, "start_step": start_step}
    for key, images in imgs.items():
        reads = readings(images)
        out[key] = {"blocked_readable_rate": rate(reads, words),
                    "psnr_vs_unprotected": float(np.mean([psnr(a, b) for a, b in
                                                          zip(images, imgs["unprotected"], strict=True)]))}
    changes = []
    for i, (a, _, template) in enumerate(word_pairs(n_clean, seed + 2)):
        r = run_action("textedit_protect", ProtectRequest(text=a, template=template, layers=layers, num_inference_steps=steps,
                                                          seed=seed + i))
        assert not r.blocked
        changes.append(int(np.abs(r.protected.astype(int) - r.unprotected.astype(int)).max()))
    out["clean_prompts"] = n_clean
    out["clean_prompt_max_change"] = max(changes)
    return out


def run_lora(layers: list[str], scan_layers: list[str], train_steps: int, eval_words: int, steps: int,
             seed: int) -> dict:
    """Equal steps for every target: the scan's localized layer(s), the edit preset, all attention, random."""
    runs = {"localized": ("localized", scan_layers), "edit layers": ("localized", layers), "all": ("all", None),
            "random": ("random", scan_layers)}
    out = {}
    for key, (target, names) in runs.items():
        r = run_action("textedit_finetune", FinetuneRequest(target=target, layers=names, train_steps=train_steps,
                                                            eval_words=eval_words, num_inference_steps=steps, seed=seed))
        out[key] = {"layers": r.layers, "ocr_f1_before": r.before.f1, "ocr_f1_after": r.after.f1,
                    "accuracy_before": r.before.accuracy, "accuracy_after": r.after.accuracy,
                    "trainable_params": r.trainable_params, "trainable_share": r.trainable_share,
                    "modules": len(r.layers), "final_loss": float(np.mean(r.losses[-10:])), "seconds": r.seconds}
    for key in runs:
        out[key]["params_vs_all"] = out[key]["trainable_params"] / out["all"]["trainable_params"]
    out["train_steps"], out["eval_words"], out["engine"] = train_steps, eval_words, "rapidocr"
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer pairs, words and LoRA steps")
    p.add_argument("--steps", type=int, default=None, help="sampling steps (default: the model's)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    pipe, preset, _ = load_pipeline()
    steps = args.steps or preset.num_inference_steps
    q = args.quick
    n_loc, n_edit, n_clean = (4, 12, 6) if q else (12, 40, 20)
    lora_steps, lora_words = (30, 12) if q else (200, 40)
    boxes = TextBoxes()

    loc = run_localization(pipe, n_loc, steps, args.seed)
    layers = list(preset.edit_layers) or loc["chosen"]
    toxic_layers = list(preset.toxic_layers) or loc["chosen"]
    ed = run_editing(pipe, layers, n_edit, steps, args.seed, boxes)
    tox = run_toxic(pipe, toxic_layers, steps, args.seed, n_clean, preset.toxic_start_step)
    lo = run_lora(layers, loc["chosen"], lora_steps, lora_words, steps, args.seed)

    print(f"\nLocalization ({len(loc['pairs'])} held-out pairs, {steps} steps, model {pipe.name}; RapidOCR):")
    rows = [[s["index"], s["name"], s["f1_b"], s["f1_a"], 100 * s["share"], 100 * s["module_share"],
             "★" if s["chosen"] else ""] for s in loc["layers"]]
    rnd = loc["random_layer"]
    rows.append(["—", "random layer " + rnd["name"], rnd["f1_b"], "", 100 * rnd["share"], 100 * rnd["module_share"], ""])
    for label, t in loc["together"].items():
        rows.append(["—", label, t["f1_b"]["rapidocr"], "", 100 * t["share"], 100 * t["module_share"], ""])
    print(markdown_table(["idx", "layer", "OCR-F1 B", "OCR-F1 A", "text K/V share %", "whole-layer share %", "chosen"],
                         rows))
    print(f"\nEditing ({n_edit} pairs, layers {', '.join(layers)}, from step {ed['start_step']}):")
    print(markdown_table(["method", "new word read (rapidocr)", "OCR-F1 new (rapidocr)", "OCR-F1 new (tesseract)",
                          "old text read", "PSNR outside text (dB)", "SSIM outside text"],
                         [[k, f"{round(ed[k]['new_text_read_rate']['rapidocr'] * n_edit)}/{n_edit}",
                           ed[k]["ocr_f1_new"]["rapidocr"], ed[k]["ocr_f1_new"]["tesseract"],
                           ed[k]["old_text_read_rate"]["rapidocr"], ed[k]["psnr_outside_text"],
                           ed[k]["ssim_outside_text"]] for k in ("localized", "prompt swap", "all layers")]))
    print(f"\nToxic text ({tox['words']} blocked words, layers {', '.join(toxic_layers)}):")
    print(markdown_table(["method", "blocked word readable (rapidocr)", "(tesseract)", "PSNR vs unprotected (dB)"],
                         [[k, tox[k]["blocked_readable_rate"]["rapidocr"], tox[k]["blocked_readable_rate"]["tesseract"],
                           tox[k]["psnr_vs_unprotected"]]
                          for k in ("unprotected", "ours", "prompt swap", "negative prompt")]))
    print(f"clean prompts: largest pixel change by the protection = {tox['clean_prompt_max_change']} "
          f"(over {n_clean} prompts)")
    print(f"\nLoRA ({lora_steps} steps, {lora_words} held-out words, rapidocr):")
    print(markdown_table(["target", "OCR-F1 before", "OCR-F1 after", "exact words after", "trainable params",
                          "params vs all", "seconds"],
                         [[f"{k} ({lo[k]['modules']} modules)", lo[k]["ocr_f1_before"], lo[k]["ocr_f1_after"],
                           lo[k]["accuracy_after"], lo[k]["trainable_params"], lo[k]["params_vs_all"], lo[k]["seconds"]]
                          for k in ("localized", "edit layers", "all", "random")]))
    payload = {
        "localized_param_share": loc["chosen_share"],
        "localized_module_share": loc["chosen_module_share"],
        "edit_ocr_f1": ed["localized"]["ocr_f1_new"]["rapidocr"],
        "edit_new_word_rate": ed["localized"]["new_text_read_rate"]["rapidocr"],
        "baseline_edit_new_word_rate": ed["prompt swap"]["new_text_read_rate"]["rapidocr"],
        "edit_psnr_outside_text": ed["localized"]["psnr_outside_text"],
        "baseline_edit_psnr_outside_text": ed["prompt swap"]["psnr_outside_text"],
        "toxic_readable_rate": tox["ours"]["blocked_readable_rate"]["rapidocr"],
        "baseline_toxic_readable_rate": tox["negative prompt"]["blocked_readable_rate"]["rapidocr"],
        "clean_prompt_max_change": tox["clean_prompt_max_change"],
        "lora_localized_ocr_f1": lo["localized"]["ocr_f1_after"],
        "lora_all_ocr_f1": lo["all"]["ocr_f1_after"],
        "details": {
            "model": pipe.name, "quick": q, "steps": steps, "seed": args.seed,
            "top_level_engine": "rapidocr",
            "baselines": {"baseline_edit_psnr_outside_text": "prompt-swap regeneration (prompt B, same noise)",
                          "baseline_edit_new_word_rate": "prompt-swap regeneration (prompt B, same noise)",
                          "baseline_toxic_readable_rate": "negative prompt naming the blocked word"},
            "localization": loc, "editing": ed, "toxic": tox, "lora": lo,
            "bench_minutes": (time.perf_counter() - t0) / 60,
        },
    }
    path = write_results("textedit", payload)
    print(f"\ntextedit: localized layers' text K/V {100 * loc['chosen_share']:.2f}% of the denoiser (goal < 1%, counted "
          f"as the paper; whole layers {100 * loc['chosen_module_share']:.2f}%); edit OCR-F1 "
          f"{payload['edit_ocr_f1']:.2f}, outside-text PSNR {payload['edit_psnr_outside_text']:.1f} dB vs prompt swap "
          f"{payload['baseline_edit_psnr_outside_text']:.1f} dB; blocked words readable "
          f"{payload['toxic_readable_rate']:.0%} vs negative prompt {payload['baseline_toxic_readable_rate']:.0%}; "
          f"clean-prompt change {payload['clean_prompt_max_change']}; LoRA localized {payload['lora_localized_ocr_f1']:.2f} "
          f"vs all {payload['lora_all_ocr_f1']:.2f} at {lo['localized']['params_vs_all']:.0%} of its parameters → {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
