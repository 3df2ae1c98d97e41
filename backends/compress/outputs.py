"""What a Compress run writes: the compressed model (loads back with ``store.load_compressed``) and the table."""

from __future__ import annotations

import json
from pathlib import Path

from backends.common.files import write_text

RESULTS = "results.json"


def write_files(result, folder: Path) -> dict[str, Path]:
    """The Basis Sharing model's files (config, tokenizer, compress.json, model.safetensors) and results.json."""
    # torch comes with the store: imported on first use, never when the tab is built
    from .store import PLAN, WEIGHTS, save_compressed

    folder = Path(folder)
    before = set(folder.iterdir()) if folder.exists() else set()
    save_compressed(result.compressed, result.tokenizer, _plan(result), folder,
                    extra={"source_model": result.model_id, "results": result.to_json()})
    paths = {p.name: p for p in sorted(set(folder.iterdir()) - before) if p.is_file()}
    paths[WEIGHTS], paths[PLAN] = folder / WEIGHTS, folder / PLAN
    paths["results"] = write_text(folder / RESULTS, json.dumps(result.to_json(), indent=1))
    return paths


def _plan(result):
    from .plan import Plan

    return Plan.from_dict(result.plan)


def table_rows(result) -> list[list]:
    """The results table: model, perplexity, perplexity after the LoRA heal ("" when not healed), parameters
    (M), weights file (MB), tokens/s, compress seconds."""
    rows = []
    for r in result.rows:
        healed = round(r["ppl_healed"], 2) if "ppl_healed" in r else ""
        rows.append([r["label"], round(r["ppl"], 2), healed, round(r["params"] / 1e6, 2),
                     round(r["bytes"] / 2**20, 1), round(r["tokens_per_s"], 1), round(r["seconds"], 1)])
    return rows


TABLE_HEADERS = ["model", "perplexity", "perplexity after heal", "parameters (M)", "weights (MB, fp32)", "tokens/s",
                 "compress s"]


def status_line(result) -> str:
    bs, orig = result.row("basis_sharing"), result.row("original")
    line = (f"**{result.model_id}** on `{result.device}` · ratio {result.request['ratio']} % · Basis Sharing "
            f"perplexity {bs['ppl']:.2f} (original {orig['ppl']:.2f}) · {bs['params'] / 1e6:.3g} M of "
            f"{orig['params'] / 1e6:.3g} M parameters · calibration {result.calibration_tokens} tokens, "
            f"evaluation {result.eval_tokens} tokens")
    if "ppl_healed" in bs:
        line += (f" · after a LoRA heal of {result.heal['steps']} steps (rank {result.heal['rank']}): Basis Sharing "
                 f"{bs['ppl_healed']:.2f}")
    try:
        llm = result.row("svd_llm")
        line += f" · SVD-LLM {llm['ppl']:.2f}, SVD {result.row('svd')['ppl']:.3g}"
    except StopIteration:
        pass
    return line
