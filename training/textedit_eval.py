"""Evaluate a checkpoint of the embedded text model: generate the held-out words, read them with OCR.

    python -m training.textedit_model --phase eval --run-dir RUN [--eval-steps 20 --eval-guidance 4]

Writes ``RUN/eval/metrics.json`` (per OCR engine: exact-word accuracy, mean character F1 as the
paper computes it, mean Levenshtein distance) and a contact sheet ``RUN/eval/samples.png``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch

from backends.textedit import ocr
from backends.textedit.data import HELD_OUT_WORDS, held_out_prompts


def load_run_model(run_dir: Path):
    """(vae, unet, text_encoder, tokenizer, scheduler) of the run's latest EMA checkpoint, in fp32."""
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextModel, PreTrainedTokenizerFast

    from backends.textedit.networks import build_scheduler

    src = run_dir / "unet" / "model"
    return (AutoencoderKL.from_pretrained(run_dir / "vae" / "model").eval(),
            UNet2DConditionModel.from_pretrained(src / "unet").eval(),
            CLIPTextModel.from_pretrained(src / "text_encoder").eval(),
            PreTrainedTokenizerFast.from_pretrained(src / "tokenizer"), build_scheduler("ddim"))


def generate(components, prompts: list[str], seed: int, steps: int, guidance: float) -> np.ndarray:
    """Images (N×H×W×3 uint8) of ``prompts``: the text pipeline when it exists, else a plain DDIM loop."""
    vae, unet, text, tok, sched = components
    try:
        from backends.textedit.pipeline import TextEditPipeline
    except ImportError:
        TextEditPipeline = None
    if TextEditPipeline is not None:
        pipe = TextEditPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet, scheduler=sched)
        out = pipe(prompts, generator=torch.Generator().manual_seed(seed), num_inference_steps=steps,
                   guidance_scale=guidance, output_type="np")
        return (np.clip(out.images, 0, 1) * 255).round().astype(np.uint8)
    return _ddim(components, prompts, seed, steps, guidance)


@torch.no_grad()
def _ddim(components, prompts, seed, steps, guidance) -> np.ndarray:
    from backends.textedit.networks import MAX_TOKENS

    vae, unet, text, tok, sched = components
    ids = tok(list(prompts) + [""] * len(prompts), padding="max_length", max_length=MAX_TOKENS, truncation=True,
              return_tensors="pt").input_ids
    cond = text(ids)[0]
    h, w = unet.config.sample_size
    z = torch.randn((len(prompts), unet.config.in_channels, h, w), generator=torch.Generator().manual_seed(seed))
    sched.set_timesteps(steps)
    for t in sched.timesteps:
        eps_c, eps_u = unet(torch.cat([z, z]), t, encoder_hidden_states=cond).sample.chunk(2)
        z = sched.step(eps_u + guidance * (eps_c - eps_u), t, z).prev_sample
    x = vae.decode(z / vae.config.scaling_factor).sample
    return ((x.clamp(-1, 1) + 1) * 127.5).round().byte().permute(0, 2, 3, 1).numpy()


def char_prf(pred: str, truth: str) -> tuple[float, float, float]:
    """Character precision / recall / F1 with a multiset match, case-insensitive (as the paper's OCR eval)."""
    from collections import Counter

    p, t = Counter(pred.lower()), Counter(truth.lower())
    hit = sum((p & t).values())
    prec = hit / max(1, sum(p.values()))
    rec = hit / max(1, sum(t.values()))
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


def score(images: np.ndarray, words: list[str]) -> dict:
    import Levenshtein

    out = {}
    for engine in ocr.ENGINES:
        reads = [ocr.read(img, engine) for img in images]
        texts = ["".join(ch for ch in r.text.lower() if ch.isalnum()) for r in reads]
        out[engine] = {
            "word_accuracy": float(np.mean([t == w for t, w in zip(texts, words, strict=True)])),
            "char_f1": float(np.mean([char_prf(t, w)[2] for t, w in zip(texts, words, strict=True)])),
            "levenshtein": float(np.mean([Levenshtein.distance(t, w) for t, w in zip(texts, words, strict=True)])),
            "reads": texts,
        }
    return out


def evaluate(args) -> dict:
    t0 = time.time()
    components = load_run_model(args.run_dir)
    pairs = held_out_prompts()[:args.eval_words]
    words, prompts = [w for w, _ in pairs], [p for _, p in pairs]
    images = np.concatenate([generate(components, prompts[i:i + 16], args.seed + i, args.eval_steps,
                                      args.eval_guidance) for i in range(0, len(prompts), 16)])
    result = score(images, words)
    info = json.loads((args.run_dir / "unet" / "info.json").read_text())
    summary = {"unet_steps": info["steps"], "held_out_words": len(words), "of_held_out": len(HELD_OUT_WORDS), "ddim_steps": args.eval_steps,
               "guidance_scale": args.eval_guidance, "seconds": round(time.time() - t0, 1), "ocr": result}
    out = args.run_dir / "eval"
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(summary, indent=1))
    _contact_sheet(images, out / "samples.png")
    return {k: v for k, v in summary.items() if k != "ocr"} | {
        e: {m: round(r[m], 3) for m in ("word_accuracy", "char_f1", "levenshtein")} for e, r in result.items()}


def _contact_sheet(images: np.ndarray, path: Path, cols: int = 6) -> None:
    from PIL import Image

    n = len(images)
    rows = -(-n // cols)
    h, w = images.shape[1:3]
    sheet = np.full((rows * (h + 2), cols * (w + 2), 3), 255, np.uint8)
    for i, img in enumerate(images):
        r, c = divmod(i, cols)
        sheet[r * (h + 2):r * (h + 2) + h, c * (w + 2):c * (w + 2) + w] = img
    Image.fromarray(sheet).save(path)
