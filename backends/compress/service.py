"""The Compress action's work: calibrate, compress with Basis Sharing (and the baselines), measure each model.

The original model is loaded once per process (``backends.common.causal_lm`` through
``cached_model``); its Gram matrices and its own perplexity/speed are kept per (model, text, sizes),
so a second run at another ratio only does the SVDs and the new measurements.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from backends.common.modelbuild import cached_model
from backends.common.progress import ProgressEvent, stream_reports

from .requests import CompressRequest

_KEEP = 2
_grams: OrderedDict = OrderedDict()
_originals: OrderedDict = OrderedDict()
_lock = threading.Lock()


@dataclass
class LoadedLM:
    model_id: str
    tokenizer: Any
    model: Any
    device: str = "cpu"
    lock: threading.Lock = field(default_factory=threading.Lock)


@cached_model(maxsize=2)
def load_lm(model_id: str) -> LoadedLM:
    """The original model (float32, CPU, eval mode), kept for the process."""
    from backends.common.causal_lm import load_causal_lm

    from .layout import decoder_layers

    tok, model = load_causal_lm(model_id)
    decoder_layers(model)  # a causal LM of another layout is refused here, before any work
    return LoadedLM(model_id, tok, model)


@dataclass
class CompressResult:
    model_id: str
    device: str
    request: dict
    rows: list[dict]  # one per model: method, label, ppl, params, linear_params, bytes, tokens_per_s, seconds
    plan: dict
    calibration_tokens: int
    eval_tokens: int
    calibration_seconds: float
    compressed: Any = None  # the Basis Sharing model (in memory; the writer saves it)
    tokenizer: Any = None
    original: Any = None
    heal: dict | None = None  # the heal's budget (the same for every method), or None

    def row(self, method: str) -> dict:
        return next(r for r in self.rows if r["method"] == method)

    def to_json(self) -> dict:
        return {"model": self.model_id, "device": self.device, "ratio": self.request["ratio"],
                "shared": self.plan["shared"], "group_size": self.plan["group_size"], "refit": self.plan["refit"],
                "calibration_tokens": self.calibration_tokens, "eval_tokens": self.eval_tokens,
                "calibration_seconds": round(self.calibration_seconds, 2), "heal": self.heal, "results": self.rows}


def _texts(request: CompressRequest, tok):
    """(calibration blocks, evaluation windows, heal blocks): the heal's blocks come from the calibration text."""
    from .calibrate import blocks
    from .heal import heal_blocks
    from .texts import load_text, need_tokens, token_prefix

    needed = request.calibration_blocks * request.block_tokens
    heal_needed = max(request.heal_steps, 0) * request.block_tokens
    cal_ids = token_prefix(tok, load_text(request.calibration_text), max(needed, heal_needed))
    need_tokens(cal_ids, needed, "calibration")
    needed = request.eval_windows * request.block_tokens
    eval_ids = token_prefix(tok, load_text(request.eval_text), needed)
    need_tokens(eval_ids, needed, "evaluation")
    heal = heal_blocks(cal_ids, request.block_tokens, request.heal_steps) if request.heal_steps > 0 else []
    return (blocks(cal_ids, request.block_tokens, request.calibration_blocks),
            blocks(eval_ids, request.block_tokens, request.eval_windows), heal)


def _cached(store: OrderedDict, key, make):
    with _lock:
        if key in store:
            store.move_to_end(key)
            return store[key]
    value = make()
    with _lock:
        store[key] = value
        while len(store) > _KEEP:
            store.popitem(last=False)
    return value


def measure(model, tok, windows, cancel=None, report=None) -> dict:
    from .evaluate import perplexity, tokens_per_second

    ppl = perplexity(model, windows, cancel, report)
    return {"ppl": ppl, "tokens_per_s": tokens_per_second(model, tok)}


def compress_work(request: CompressRequest, lm: LoadedLM, cancel=None):
    """Events, then a :class:`CompressResult`."""

    def work(report):
        return _run(request, lm, report.cancel, lambda f, m: report(ProgressEvent(f, m)))

    return stream_reports(work, cancel)


def _run(request: CompressRequest, lm: LoadedLM, cancel, say) -> CompressResult:
    from .evaluate import perplexity
    from .heal import heal
    from .pipeline import calibrate, compress, original_summary
    from .plan import METHOD_LABELS, make_plan

    tok, original = lm.tokenizer, lm.model
    shared = request.shared_types()
    ratio = request.ratio / 100
    methods = ["basis_sharing"] + (["svd_llm", "svd"] if request.baselines else [])
    for m in methods:  # refuse a ratio that leaves no rank before any work
        make_plan(original, m, ratio, shared, request.group_size)
    say(0.0, "reading the texts")
    pieces, windows, heal_pieces = _texts(request, tok)
    budget = request.heal_budget()
    cal_key = (lm.model_id, request.calibration_text, request.calibration_blocks, request.block_tokens)
    with lm.lock:
        t0 = time.perf_counter()
        grams, cal_s = _cached(_grams, cal_key, lambda: calibrate(
            original, pieces, cancel, lambda f, m: say(0.25 * f, m)))
        if time.perf_counter() - t0 < 0.5:
            say(0.25, "calibration: Gram matrices already computed for this model, text and size")
        eval_key = (lm.model_id, request.eval_text, request.eval_windows, request.block_tokens)
        base = _cached(_originals, eval_key, lambda: {**original_summary(original), **measure(
            original, tok, windows, cancel, lambda f, m: say(0.25 + 0.1 * f, "original: " + m))})
        rows = [{"method": "original", "label": METHOD_LABELS["original"], **base, "seconds": 0.0}]
        span = 0.65 / len(methods)
        share = 0.5 if budget else 0.0  # of each method's span: the heal and the perplexity after it
        kept = plan = None
        for n, method in enumerate(methods):
            start = 0.35 + n * span
            lab = METHOD_LABELS[method]

            def part(lo, hi, s=start, lab=lab):
                return lambda f, m: say(s + span * (lo + (hi - lo) * f), f"{lab}: {m}")

            work = 1 - share
            c = compress(original, method, ratio, grams, pieces, shared, request.group_size,
                         request.refit and method == "basis_sharing", cancel, part(0, 0.6 * work))
            stats = measure(c.model, tok, windows, cancel, part(0.6 * work, work))
            row = {"method": method, "label": lab, "ppl": stats["ppl"], "params": c.params,
                   "linear_params": c.linear_params, "bytes": c.bytes, "tokens_per_s": stats["tokens_per_s"],
                   "seconds": c.seconds}
            model = c.model
            if budget:
                healed = heal(model, heal_pieces, budget, cancel, part(work, work + 0.8 * share))
                model = healed.pop("model")
                row["ppl_healed"] = perplexity(model, windows, cancel, part(work + 0.8 * share, 1.0))
                row["heal"] = {**budget.to_dict(), "tokens": sum(p.numel() for p in heal_pieces),
                               "trainable": healed["trainable"], "seconds": round(healed["seconds"], 2),
                               "first_loss": healed["losses"][0], "last_loss": healed["losses"][-1]}
            rows.append(row)
            if method == "basis_sharing":
                kept, plan = model, c.plan
            else:
                del c, model
    say(1.0, "done")
    from dataclasses import asdict

    return CompressResult(lm.model_id, lm.device, asdict(request), rows, plan.to_dict(),
                          sum(p.numel() for p in pieces), sum(w.numel() - 1 for w in windows), cal_s,
                          kept, tok, original, budget.to_dict() if budget else None)

