"""LLM Compression tab (Basis Sharing): compress a real LLM, compare it with SVD-LLM and SVD, chat side by side."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action, current_session
from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.failures import listen
from app.components.params import control, documented
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.compress.actions import COMPRESS
from backends.compress.outputs import TABLE_HEADERS
from backends.compress.requests import DEFAULT_MODEL, ChatRequest, CompressRequest, served_model_name

INTRO = ("**Basis Sharing** (ICLR 2025): weights of one type (q, up, gate …) in *n* adjacent layers are stacked and "
         "decomposed together — SVD after activation whitening, as SVD-LLM does — into **one shared basis and "
         "per-layer coefficients**. Compress a real pretrained LLM (the suite ships SmolLM2-135M-Instruct), compare "
         "it with per-layer whitened SVD (SVD-LLM) and plain SVD at the same ratio, and chat with the original and "
         "the compressed model side by side. Runs on the CPU: a run at the default sizes takes minutes.")
_history: dict[str, list[dict]] = {}  # session → every (ratio, method, perplexity) it measured, for the plot
_compressed: dict[str, tuple] = {}  # session → (label, original LoadedLM id, compressed model, tokenizer)
_MAX_SESSIONS = 8


def _model_choices() -> list[tuple[str, str]]:
    from backends.common.registry import default_registry, model_status

    out = []
    for spec in default_registry():
        if spec.kind == "gguf-llm":
            present = "present" if model_status(spec).present else "missing"
            out.append((f"{spec.id} (embedded GGUF, de-quantised; {present})", spec.id))
    return out or [(DEFAULT_MODEL, DEFAULT_MODEL)]


def build(demo: gr.Blocks) -> None:
    ui = SimpleNamespace()
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1):
            ui.model = gr.Dropdown(_model_choices(), value=DEFAULT_MODEL, allow_custom_value=True, label="Model",
                                   elem_id="cp-model",
                                   info="A registry id or a Hub id (org/name) that `models download` fetched or the "
                                        "Hugging Face cache holds (a Llama-family causal LM); folders: the CLI.")
            ui.ratio = control(CompressRequest, "ratio", elem_id="cp-ratio")
            ui.shared = control(CompressRequest, "shared", elem_id="cp-shared")
            ui.group = control(CompressRequest, "group_size", elem_id="cp-group")
            with gr.Row():
                ui.refit = control(CompressRequest, "refit", elem_id="cp-refit")
                ui.baselines = control(CompressRequest, "baselines", elem_id="cp-baselines")
            with gr.Accordion("Calibration and evaluation", open=False):
                ui.cal_text = control(CompressRequest, "calibration_text", elem_id="cp-cal-text")
                ui.eval_text = control(CompressRequest, "eval_text", elem_id="cp-eval-text")
                ui.cal_blocks = control(CompressRequest, "calibration_blocks", elem_id="cp-cal-blocks")
                ui.block = control(CompressRequest, "block_tokens", elem_id="cp-block")
                ui.windows = control(CompressRequest, "eval_windows", elem_id="cp-windows")
            with gr.Accordion("LoRA heal (the same budget for every method)", open=False):
                ui.heal_steps = control(CompressRequest, "heal_steps", elem_id="cp-heal-steps")
                ui.heal_rank = control(CompressRequest, "heal_rank", elem_id="cp-heal-rank")
                ui.heal_lr = control(CompressRequest, "heal_lr", elem_id="cp-heal-lr", widget="number")
            with gr.Row():
                ui.run = gr.Button("Compress", variant="primary", elem_id="cp-run")
                ui.stop = gr.Button("Stop", variant="stop", elem_id="cp-stop")
        with gr.Column(scale=2):
            ui.status = gr.Markdown(elem_id="cp-status")
            ui.table = gr.Dataframe(headers=TABLE_HEADERS, label="Original vs SVD vs SVD-LLM vs Basis Sharing (same ratio)",
                                    interactive=False, elem_id="cp-table")
            ui.plot = gr.ScatterPlot(x="ratio", y="log10 perplexity", color="method", title="Perplexity vs ratio "
                                  "(every run of this session)", x_lim=list(X_LIM), elem_id="cp-plot")
            ui.files = gr.File(label="Download the compressed model (all files in one folder load back) and run card",
                               file_count="multiple", elem_id="cp-files")
            ui.summary = gr.JSON(label="Run (JSON)", elem_id="cp-json")
    gr.Markdown("### The same prompt through both models")
    with gr.Row():
        ui.prompt = control(ChatRequest, "prompt", elem_id="cp-prompt", scale=3)
        ui.new_tokens = control(ChatRequest, "max_new_tokens", elem_id="cp-new-tokens", scale=1)
    ui.ask = gr.Button("Ask both", elem_id="cp-ask")
    ui.chat_status = gr.Markdown(elem_id="cp-chat-status")
    with gr.Row():
        ui.left = gr.Textbox(label="Original", lines=6, interactive=False, elem_id="cp-left")
        ui.right = gr.Textbox(label="Compressed", lines=6, interactive=False, elem_id="cp-right")
    with gr.Accordion("Load a compressed model back", open=False):
        ui.upload = gr.File(label="The files of a compressed model (config.json, tokenizer files, compress.json, "
                                  "model.safetensors)", file_count="multiple", elem_id="cp-upload")
        ui.load = gr.Button("Load it (it becomes the compressed model of the chat)", elem_id="cp-load")
    _wire(ui)


def to_request(model, ratio, shared, group_size, refit, baselines, calibration_text, eval_text, calibration_blocks,
               block_tokens, eval_windows, heal_steps=0, heal_rank=8, heal_lr=5e-4):
    """Args:
        model: A registry id (smollm2-135m-instruct) or a Hub id (org/name) in the models folder or the Hugging
            Face cache; never a folder of the server.
    """
    return CompressRequest(model=served_model_name(model), ratio=int(ratio), shared=shared,
                           group_size=int(group_size), refit=bool(refit), baselines=bool(baselines),
                           calibration_text=calibration_text, eval_text=eval_text,
                           calibration_blocks=int(calibration_blocks), block_tokens=int(block_tokens),
                           eval_windows=int(eval_windows), heal_steps=int(heal_steps or 0), heal_rank=int(heal_rank),
                           heal_lr=float(heal_lr))


X_LIM = (-5, 65)  # ratios 0 (the original) to 60 %, with a margin so no point sits on the frame


def _y_lim(values) -> list[float] | None:
    """The plotted range with a margin of a tenth of the span (at least 0.2 decade) on each side."""
    if not len(values):
        return None
    lo, hi = float(min(values)), float(max(values))
    pad = max(0.1 * (hi - lo), 0.2)
    return [lo - pad, hi + pad]


def _plot_frame(session: str):
    import math

    import pandas as pd

    rows = [{"ratio": h["ratio"], "log10 perplexity": math.log10(max(h["ppl"], 1e-9)), "method": h["method"]}
            for h in _history.get(session, [])]
    frame = pd.DataFrame(rows, columns=["ratio", "log10 perplexity", "method"]).sort_values(["method", "ratio"])
    return gr.ScatterPlot(value=frame, x_lim=list(X_LIM), y_lim=_y_lim(frame["log10 perplexity"]))


def _remember(session: str, entry: tuple, history: list[dict]) -> None:
    for store in (_compressed, _history):
        while session not in store and len(store) >= _MAX_SESSIONS:
            store.pop(next(iter(store)))
    _compressed[session] = entry
    _history.setdefault(session, []).extend(history)


def show_result(request, result, paths):
    from backends.compress.outputs import status_line, table_rows

    session = current_session()
    history = [{"ratio": request.ratio, "method": r["label"], "ppl": r["ppl"]} for r in result.rows
               if r["method"] != "original"]
    history += [{"ratio": request.ratio, "method": r["label"] + " + heal", "ppl": r["ppl_healed"]} for r in result.rows
                if "ppl_healed" in r]
    history.append({"ratio": 0, "method": "Original", "ppl": result.row("original")["ppl"]})
    healed = " + LoRA heal" if result.heal else ""
    _remember(session, (f"Basis Sharing {request.ratio} %{healed}", result.model_id, result.compressed, result.tokenizer),
              history)
    return (status_line(result), table_rows(result), _plot_frame(session), [str(p) for p in paths.values()],
            result.to_json())


@user_errors
@documented(ChatRequest)
def ask_both(prompt, max_new_tokens, request: gr.Request):
    """The prompt through the original model and this session's compressed model, streamed side by side (greedy).

    Args:
        prompt: What both models answer.
    """
    from backends.compress.chat import side_by_side
    from backends.compress.service import load_lm

    session = getattr(request, "session_hash", None) or "anonymous"
    if session not in _compressed:
        raise InputError("Compress a model (or load a compressed one back) first.")
    label, model_id, model, tok = _compressed[session]
    if not (prompt or "").strip():
        raise InputError("Type a prompt first.")
    chat = ChatRequest(prompt=prompt, max_new_tokens=int(max_new_tokens))
    original = load_lm(model_id)
    left = right = ""
    for left, right in side_by_side([original.model, model], tok, chat.prompt, chat.max_new_tokens):
        yield f"Original `{model_id}` vs {label}: writing…", left, right
    yield f"Original `{model_id}` vs {label}: done ({chat.max_new_tokens} tokens at most, greedy).", left, right


@user_errors
def load_back(files, request: gr.Request):
    """Load a downloaded compressed model back: it becomes the compressed model of the side-by-side chat.

    Args:
        files: Every file of the compressed model's folder (config.json, tokenizer files, compress.json,
            model.safetensors).
    """
    from backends.compress.store import load_compressed

    if not files:
        raise InputError("Upload the compressed model's files first.")
    folder = new_output_dir("compress-load")
    for f in files:
        path = Path(f if isinstance(f, str) else f.name)
        shutil.copy(path, folder / path.name)
    tok, model, plan, meta = load_compressed(folder)
    if tok is None:
        raise InputError("The upload has no tokenizer files (tokenizer.json, tokenizer_config.json).")
    source = meta.get("source_model", DEFAULT_MODEL)
    session = getattr(request, "session_hash", None) or "anonymous"
    label = f"loaded {plan.method} {round(plan.ratio * 100)} %"
    _remember(session, (label, source, model, tok), [])
    params = sum(p.numel() for p in model.parameters())
    return (f"Loaded a {plan.method} model at {round(plan.ratio * 100)} % (shared: {', '.join(plan.shared) or 'none'}, "
            f"groups of {plan.group_size}) of `{source}`: {params / 1e6:.2f} M parameters. Ask both models below.")


def _wire(ui: SimpleNamespace) -> None:
    bind_action(COMPRESS, trigger=ui.run.click, stop=ui.stop, status=ui.status,
                inputs=[ui.model, ui.ratio, ui.shared, ui.group, ui.refit, ui.baselines, ui.cal_text, ui.eval_text,
                        ui.cal_blocks, ui.block, ui.windows, ui.heal_steps, ui.heal_rank, ui.heal_lr],
                outputs=[ui.status, ui.table, ui.plot, ui.files, ui.summary], to_request=to_request,
                show=show_result, running="Compressing…",
                stopped="Stopped by the user: this run compressed nothing. The table and downloads below (if any) "
                        "are the previous run's.")
    light = {"concurrency_id": "compress-chat", "concurrency_limit": 2}
    listen(ui.ask.click, ask_both, status=ui.chat_status, inputs=[ui.prompt, ui.new_tokens],
           outputs=[ui.chat_status, ui.left, ui.right], api_name="compress_chat", **light)
    listen(ui.load.click, load_back, status=ui.chat_status, inputs=[ui.upload], outputs=[ui.chat_status],
           api_name="compress_load", **light)


TAB = TabSpec(name="compress", title="LLM Compression", build=build)
