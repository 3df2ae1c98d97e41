"""Localization by activation patching: which attention layers (and heads) write the text.

For each prompt pair (A, B) — the same template, different text — prompt B is generated once from
the seed's noise while every text layer records its K/V; then prompt A is generated from the same
noise once per layer (and once per head of each layer) with only that layer taking B's K/V from
``start_step`` on (``py-xis/t2i: src/attention_localization_*.py``; the scan starts at step 0).
Each patched image is read by OCR and scored as the paper does: character-level P/R/F1 against B
and against A over all pairs (F1 of the mean P and R), Levenshtein to B, MSE/PSNR to the unpatched
image of A. A layer controls the text when patching it alone makes the image read B.

Choosing: the layers whose OCR-F1(B) is at least ``CHOOSE_FRACTION`` of the best layer's and above
their OCR-F1(A) (or the ``top_k`` best). Their parameter share is counted as the paper counts it: the
text key/value projections the patch replaces (``to_k``/``to_v``, or ``add_k_proj``/``add_v_proj``),
over the whole denoiser — that reproduces its SDXL 0.61% (layers 55–57) and SD3 0.23% (joint block 10)
exactly on the published architectures (``tests/backends/textedit/test_param_share.py``). The share of
the whole attention modules (q/k/v/out, what the LoRA trains) is given beside it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np

from backends.common.errors import InputError
from backends.common.imageio import to_uint8
from backends.common.progress import CancelToken, ProgressEvent

from . import service
from .attention import parameter_shares
from .metrics import mse, ocr_scores, psnr
from .ocr import read
from .requests import MAX_EXTRA_PAIRS, LocalizeRequest  # noqa: F401 (re-exported)
from .service import Reporter, call_kwargs, prompt_for

CHOOSE_FRACTION = 0.75


@dataclass
class LayerScore:
    index: int
    name: str
    kind: str
    heads: int
    params: int
    share: float  # its text K/V projections, of the denoiser's parameters (the paper's count)
    f1_b: float
    f1_a: float
    precision_b: float
    recall_b: float
    accuracy_b: float
    levenshtein_b: float
    mse: float
    psnr: float
    read: str  # what OCR read in the first pair's patched image
    module_share: float  # the whole attention module, of the denoiser's parameters


@dataclass
class LocalizeResult:
    layers: list[LayerScore]
    head_f1: list[list[float | None]]  # OCR-F1(B) per layer × head (None: the layer has fewer heads / not run)
    chosen: list[str]
    chosen_share: float  # their text K/V projections (the paper's count)
    chosen_module_share: float  # their whole attention modules
    denoiser_params: int
    original: np.ndarray  # the first pair's unpatched image of A
    target: np.ndarray  # ... and of B
    patched: dict[str, np.ndarray]  # the first pair's patched image per layer
    pairs: list[tuple[str, str]]
    engine: str
    model: str
    device: str
    seconds: float

    def table(self) -> list[dict]:
        """One row per layer (for CSV / JSON downloads)."""
        chosen = set(self.chosen)
        return [{**asdict(s), "chosen": s.name in chosen} for s in self.layers]


def denoiser_of(pipe):
    return getattr(pipe, "denoiser", None) or pipe.unet


@dataclass
class LayerSet:
    """A set of text layers that Edit, Protect and Fine-tune can patch, with its parameter share.

    The preset and a Localize result are offered side by side: a scan on one pair may pick fewer
    layers than the preset (on the embedded model its single best layer edits 1 of 10 held-out pairs,
    the preset's four 38 of 40 in the bench), so a scan never replaces the preset by itself.
    """

    source: str  # "preset" or "localized"
    layers: list[str]
    share: float  # their text K/V projections, of the denoiser's parameters (the paper's count)
    module_share: float  # their whole attention modules
    model: str

    def label(self) -> str:
        """How a person picks it: which set, how many layers, their share."""
        what = {"preset": "the model's preset", "localized": "the last Localize scan's"}.get(self.source, self.source)
        return (f"{what} layers ({len(self.layers)}: {', '.join(short_name(n) for n in self.layers)}; "
                f"{100 * self.share:.2f}% of the parameters)")


def short_name(name: str) -> str:
    """``down_blocks.1.attentions.0.transformer_blocks.0.attn2`` → ``down_blocks.1.attentions.0…attn2``: shorter,
    and still one name per layer (two layers of one block differ in their attention index)."""
    return name.replace(".transformer_blocks.0.", "…")


def layer_set(model: str, layers: list[str] | None = None, source: str = "preset") -> LayerSet:
    """The layers (the model's preset when ``layers`` is None) resolved on the loaded model, with their share.

    ``InputError`` when the model has no preset layers yet (run Localize) or a name is unknown.
    """
    from .models import PRESETS
    from .requests import rules_for

    rules_for(model)
    names = list(layers) if layers is not None else list(PRESETS[model].edit_layers)
    if not names:
        raise InputError("This model's text layers are not known yet: run Localize first, or name the layers.")
    pipe, _, _ = service.load_pipeline(model)
    found = pipe.resolve_layers(names)
    share, module_share = parameter_shares(found, sum(p.numel() for p in denoiser_of(pipe).parameters()))
    return LayerSet(source, [layer.name for layer in found], share, module_share, model)


def choose(scores: list[LayerScore], top_k: int | None) -> list[str]:
    ranked = sorted(scores, key=lambda s: (-s.f1_b, s.index))
    if top_k:
        return [s.name for s in ranked[:int(top_k)]]
    best = ranked[0].f1_b
    picked = [s.name for s in ranked if s.f1_b >= CHOOSE_FRACTION * best and s.f1_b > s.f1_a and s.f1_b > 0]
    return picked or [ranked[0].name]


def localize(request: LocalizeRequest, cancel: CancelToken | None = None, engine: str = "rapidocr",
             loaded=None) -> Iterator[ProgressEvent | LocalizeResult]:
    """The layer (and head) scan; yields progress with previews, then the ``LocalizeResult``."""
    request.validate()
    t0 = time.perf_counter()
    yield ProgressEvent(0.0, f"loading {request.model}")
    pipe, _, rules = loaded or service.load_pipeline(request.model)
    layers = list(pipe.layers)
    pairs = request.pairs()
    per_pair = 2 + len(layers) + (sum(layer.heads for layer in layers) if request.per_head else 0)
    total = per_pair * len(pairs)

    def ocr(image) -> str:
        return read(image, engine, detect=rules.ocr_detect).text

    def work(report):
        rep = Reporter(report, preview_every=10**6)
        k = 0

        def run(label, fn, **kw):
            nonlocal k
            out = fn(**kw, **request.pipe_kwargs(), **call_kwargs(pipe, rep, k / total, (k + 1) / total, label))
            k += 1
            return out

        reads = {layer.name: [] for layer in layers}
        images = {layer.name: [] for layer in layers}
        head_reads = {(layer.name, h): [] for layer in layers for h in range(layer.heads)}
        originals, targets, patched_first = [], [], {}
        for a_text, b_text in pairs:
            a, b = prompt_for(request.template, a_text), prompt_for(request.template, b_text)
            kv = run(f"recording “{b_text}”", pipe.record, prompt=b)
            targets.append(to_uint8(kv.images)[0])
            originals.append(to_uint8(run(f"generating “{a_text}”", pipe, prompt=a).images)[0])
            for layer in layers:
                img = to_uint8(run(f"layer {layer.index}", pipe, prompt=a, patch_source=kv, patch_layers=[layer.name],
                                   patch_start_step=request.start_step).images)[0]
                reads[layer.name].append(ocr(img))
                images[layer.name].append(img)
                patched_first.setdefault(layer.name, img)
                report(ProgressEvent(k / total, f"layer {layer.index} read “{reads[layer.name][-1]}”", img))
                if request.per_head:
                    for h in range(layer.heads):
                        img_h = to_uint8(run(f"layer {layer.index} head {h}", pipe, prompt=a, patch_source=kv,
                                             patch_layers=[layer.name], patch_heads={layer.name: [h]},
                                             patch_start_step=request.start_step).images)[0]
                        head_reads[(layer.name, h)].append(ocr(img_h))
        return reads, images, head_reads, originals, targets, patched_first

    result = yield from service.stream_action(work, cancel)
    reads, images, head_reads, originals, targets, patched_first = result
    a_texts, b_texts = [p[0] for p in pairs], [p[1] for p in pairs]
    total_params = sum(p.numel() for p in denoiser_of(pipe).parameters())
    scores = []
    for layer in layers:
        sb, sa = ocr_scores(reads[layer.name], b_texts), ocr_scores(reads[layer.name], a_texts)
        errs = [mse(img, orig) for img, orig in zip(images[layer.name], originals, strict=True)]
        psnrs = [psnr(img, orig) for img, orig in zip(images[layer.name], originals, strict=True)]
        kv_share, module_share = parameter_shares([layer], total_params)
        scores.append(LayerScore(layer.index, layer.name, layer.kind, layer.heads, layer.params, kv_share, sb.f1,
                                 sa.f1, sb.precision, sb.recall, sb.accuracy, sb.levenshtein, float(np.mean(errs)),
                                 float(np.mean(psnrs)), reads[layer.name][0], module_share))
    max_heads = max(layer.heads for layer in layers)
    head_f1 = [[ocr_scores(head_reads[(layer.name, h)], b_texts).f1 if request.per_head and h < layer.heads else None
                for h in range(max_heads)] for layer in layers]
    chosen = choose(scores, request.top_k)
    by_name = {layer.name: layer for layer in layers}
    share, module_share = parameter_shares((by_name[n] for n in chosen), total_params)
    yield LocalizeResult(scores, head_f1, chosen, share, module_share, total_params, originals[0], targets[0],
                         patched_first, pairs, engine, request.model, str(pipe.device), time.perf_counter() - t0)
