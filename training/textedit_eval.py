"""Evaluate a checkpoint of the embedded text model: generate the held-out words, read them with OCR.

    python -m training.textedit_model --phase eval --run-dir RUN [--eval-steps 20 --eval-guidance 5]

Writes ``RUN/eval/metrics.json`` (per OCR engine: exact-word accuracy, the paper's character-level
precision / recall / accuracy / F1 and Levenshtein distance, the texts read) and a contact sheet
``RUN/eval/samples.png``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from backends.textedit import ocr
from backends.textedit.data import HELD_OUT_WORDS, held_out_prompts


def load_run_model(run_dir: Path, weights: str = "ema"):
    """(vae, unet, text_encoder, tokenizer, scheduler) of the run's latest checkpoint, in fp32: its EMA
    weights, or with ``weights="raw"`` the optimizer's own (better while the EMA still lags a fast change)."""
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextModel, PreTrainedTokenizerFast

    from backends.textedit.networks import build_scheduler

    src = run_dir / "unet" / "model"
    unet = UNet2DConditionModel.from_pretrained(src / "unet").eval()
    text = CLIPTextModel.from_pretrained(src / "text_encoder").eval()
    if weights == "raw":
        state = torch.load(run_dir / "unet" / "state.pt", weights_only=False)
        unet.load_state_dict(state["unet"])
        text.load_state_dict(state["text"])
    elif weights != "ema":
        raise ValueError(f"weights must be 'ema' or 'raw', not {weights!r}")
    return (AutoencoderKL.from_pretrained(run_dir / "vae" / "model").eval(), unet, text,
            PreTrainedTokenizerFast.from_pretrained(src / "tokenizer"), build_scheduler("ddim"))


def generate(components, prompts: list[str], seed: int, steps: int, guidance: float) -> np.ndarray:
    """Images (N×H×W×3 uint8) of ``prompts`` from the Text in Image pipeline (no patching)."""
    from backends.textedit.pipeline import TextEditPipeline, to_uint8

    vae, unet, text, tok, sched = components
    pipe = TextEditPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet, scheduler=sched)
    pipe.set_progress_bar_config(disable=True)
    out = pipe(prompts, generator=torch.Generator().manual_seed(seed), num_inference_steps=steps,
               guidance_scale=guidance, output_type="np")
    return to_uint8(out.images)


def score(images: np.ndarray, words: list[str]) -> dict:
    """Per OCR engine: exact-word accuracy, the paper's character-level P/R/accuracy/F1, Levenshtein, reads."""
    from backends.textedit.metrics import ocr_scores

    out = {}
    for engine in ocr.ENGINES:
        reads = ["".join(ch for ch in ocr.read(img, engine).text.lower() if ch.isalnum()) for img in images]
        out[engine] = {"word_accuracy": float(np.mean([t == w for t, w in zip(reads, words, strict=True)])),
                       **{f"char_{k}": v for k, v in asdict(ocr_scores(reads, words)).items() if k != "n"},
                       "reads": reads}
    return out


def evaluate(args) -> dict:
    t0 = time.time()
    components = load_run_model(args.run_dir, args.weights)
    pairs = held_out_prompts()[:args.eval_words]
    words, prompts = [w for w, _ in pairs], [p for _, p in pairs]
    images = np.concatenate([generate(components, prompts[i:i + 16], args.seed + i, args.eval_steps,
                                      args.eval_guidance) for i in range(0, len(prompts), 16)])
    result = score(images, words)
    ceilings = _ceilings(components[0], pairs, args.seed)
    info = json.loads((args.run_dir / "unet" / "info.json").read_text())
    summary = {"unet_steps": info["steps"], "weights": args.weights, "held_out_words": len(words), "of_held_out": len(HELD_OUT_WORDS), "words": words, "ddim_steps": args.eval_steps,
               "guidance_scale": args.eval_guidance, "seconds": round(time.time() - t0, 1), "ocr": result,
               "ceilings": ceilings}
    out = args.run_dir / ("eval" if args.weights == "ema" else f"eval-{args.weights}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(summary, indent=1))
    _contact_sheet(images, out / "samples.png")
    return {k: v for k, v in summary.items() if k not in ("ocr", "ceilings", "words")} | {
        e: {m: round(r[m], 3) for m in ("word_accuracy", "char_f1", "char_levenshtein")} for e, r in result.items()}


@torch.no_grad()
def _ceilings(vae, pairs, seed: int) -> dict:
    """Word accuracy per engine on clean renders of the same held-out prompts, and on their VAE reconstructions."""
    from backends.textedit.data import TEMPLATES, render

    rng = np.random.default_rng(seed + 10_000)
    clean = np.stack([render(w, next(t for t, pre in TEMPLATES.items() if p.startswith(pre)), rng).image
                      for w, p in pairs])
    x = torch.from_numpy(clean).permute(0, 3, 1, 2).float() / 127.5 - 1.0
    rec = vae.decode(vae.encode(x).latent_dist.mean).sample.clamp(-1, 1)
    rec = ((rec + 1) * 127.5).round().byte().permute(0, 2, 3, 1).numpy()
    words = [w for w, _ in pairs]
    return {name: {e: r["word_accuracy"] for e, r in score(imgs, words).items()}
            for name, imgs in (("clean_renders", clean), ("vae_reconstructions", rec))}


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
