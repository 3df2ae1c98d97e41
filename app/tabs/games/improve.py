"""Strategy Games → Improve: run STRATEGIST's improvement loop and browse the strategy library. One backend
call per action (``backends.games.improve``): which run a request continues, the default budgets, the
library and the strategies the agents play are decided there, for the tab and the CLI alike."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.longwork import CANCELS, stream
from backends.games import domains
from backends.games import improve as service

LIBRARY_HEADERS = ["id", "origin", "idea", "parent", "score", "generation"]


def _views(view: service.RunView) -> tuple:
    """curve, table, strategy picker, files."""
    curve = pd.DataFrame(view.curve or [], columns=["iteration", "best score"])
    return (curve, view.rows, gr.update(choices=view.ids, value=view.ids[0] if view.ids else None), view.files)


def _request(kind, side, method_v, iters, cards, games, budget, seed_v) -> service.ImproveRequest:
    return service.ImproveRequest(kind, int(iters), method_v, int(games), int(budget),
                                  {"num_cards": int(cards), "guide_side": side}, int(seed_v or 0))


def _controls_for(kind: str, options: dict | None = None, games: int | None = None, budget: int | None = None):
    """GOPS cards only for GOPS, the guide's side only for guide runs; the kind's default budget."""
    default_games, default_budget = service.defaults(kind)
    options = options or {}
    cards = gr.update(visible=kind == "gops", **({"value": options["num_cards"]} if "num_cards" in options else {}))
    return (cards, gr.update(visible=kind.endswith("-guide")), gr.update(value=games or default_games),
            gr.update(value=budget or default_budget))


def build(run_dir: gr.State) -> None:
    """The Improve sub-tab; ``run_dir`` is the session's run, shared with the GOPS and Avalon sub-tabs."""
    kinds = domains.run_kinds()
    first = next(iter(kinds))
    first_games, first_budget = service.defaults(first)
    with gr.Tab("Improve (STRATEGIST)"):
        gr.Markdown("Run STRATEGIST's improvement loop: an LLM reflects on self-play, proposes ideas (a bandit "
                    "picks which to try) and rewrites the strategy; search with each strategy plays the evaluation "
                    "games. **GOPS**: value heuristics, scored by MCTS self-play. **Avalon**: a value heuristic for "
                    "the search agents, or the dialogue guide their LLM speaks by, scored by games against the "
                    "rule agents (guide games speak through the LLM: slow on CPU). LLM code runs only in the "
                    "sandbox. Uses the LLM endpoint (`ICLR25_LLM_BASE_URL`, `ICLR25_LLM_MODEL`), else the embedded "
                    "SmolLM2-135M, which writes weak code — point it at a strong model for real gains.")
        with gr.Row():
            imp_game = gr.Radio([(label, kind) for kind, label in kinds.items()], value=first, label="Improve",
                                elem_id="strategist-game", info="a new run starts when you change this")
            guide_side = gr.Radio(["good", "evil"], value="good", label="Guide of the side", visible=False,
                                  info="Avalon dialogue guide runs")
            method = gr.Radio(list(service.METHODS), value="strategist", label="Method",
                              info="beam = the paper's ablation without the idea library")
        with gr.Row():
            iterations = gr.Slider(1, 20, value=2, step=1, label="Iterations",
                                   info="Rounds of improvement: each proposes ideas, writes new strategies and scores them.")
            imp_cards = gr.Slider(3, 13, value=6, step=1, label="GOPS cards",
                                  info="Cards per suit of the GOPS games the strategies are scored on.")
            imp_games = gr.Slider(2, 40, value=first_games, step=2,
                                  label="Games (GOPS: per pair; Avalon: per strategy)",
                                  info="Self-play games that score each strategy: more is steadier and slower.")
            imp_sims = gr.Slider(2, 200, value=first_budget, step=2, label="Search budget",
                                 info="GOPS: MCTS simulations per move; Avalon: sampled worlds per decision")
            imp_seed = gr.Number(0, precision=0, minimum=0, label="Seed",
info="Same seed and settings → the same run.")
        with gr.Row():
            imp_run = gr.Button("Run / continue", variant="primary", elem_id="strategist-run")
            imp_stop = gr.Button("Stop", variant="stop", elem_id="strategist-stop")
            imp_new = gr.Button("New run", elem_id="strategist-new")
        imp_status = gr.Markdown(elem_id="strategist-status")
        with gr.Row():
            curve = gr.LinePlot(x="iteration", y="best score", title="Best strategy's self-play score",
                                y_lim=[0, 1], elem_id="strategist-curve")
            table = gr.Dataframe(headers=LIBRARY_HEADERS, label="Strategy library", interactive=False, wrap=True,
                                 elem_id="strategist-table")
        with gr.Row():
            pick = gr.Dropdown([], label="Strategy", elem_id="strategist-pick",
                               info="A strategy of the library: its code and what changed from the one it came from.")
            lib_file = gr.File(label="Run files (library, ideas, log)", file_count="multiple")
            lib_upload = gr.UploadButton("Load a saved run (library.json, ideas.json, log.jsonl)",
                                        file_count="multiple", file_types=[".json", ".jsonl"],
                                        elem_id="strategist-load")
        with gr.Row():
            code = gr.Code(language="python", label="Source", interactive=False)
            diff = gr.Code(language="python", label="Diff against its parent", interactive=False)

    @user_errors
    def on_improve(path, kind, side, method_v, iters, cards, games, budget, seed_v, request: gr.Request,
                   progress=gr.Progress()):
        req = _request(kind, side, method_v, iters, cards, games, budget, seed_v)
        token = CANCELS.start(request, "strategist")
        try:
            work = service.improve(req, path, lambda: new_output_dir("strategist"), token)
            for what, update in stream(work, progress):
                if what == "result":
                    yield (update.view.run_dir, update.status, *_views(update.view))
        finally:
            CANCELS.finish(request, "strategist", token)

    def on_stop_improve(request: gr.Request) -> str:
        # the LLM stops between tokens, the games between search batches, a sandboxed strategy is killed
        return ("Stopping…" if CANCELS.cancel(request, "strategist")
                else "Nothing is running.")

    @user_errors
    def on_pick(path, sid):
        return service.strategy_source(path, sid)

    @user_errors
    def on_load_run(files):
        loaded = service.load_run([f if isinstance(f, str) else f.name for f in files or []],
                                  new_output_dir("strategist"))
        side = loaded.options.get("guide_side", "good")
        return (loaded.view.run_dir, loaded.status, *_views(loaded.view), loaded.kind, side,
                *_controls_for(loaded.kind, loaded.options, loaded.games, loaded.budget))

    imp_outputs = [run_dir, imp_status, curve, table, pick, lib_file]
    game_controls = [imp_cards, guide_side, imp_games, imp_sims]
    lib_upload.upload(on_load_run, inputs=lib_upload, outputs=[*imp_outputs, imp_game, guide_side, *game_controls],
                      api_name="strategist_load")
    imp_run.click(on_improve, inputs=[run_dir, imp_game, guide_side, method, iterations, imp_cards, imp_games, imp_sims,
                                      imp_seed],
                  outputs=imp_outputs, api_name="strategist_run",
                  # a job of its own, one at a time: minutes of self-play never hold the shared "gpu" queue
                  concurrency_id="improve", concurrency_limit=1)
    imp_stop.click(on_stop_improve, outputs=imp_status, api_name="strategist_stop", queue=False)
    new_run = lambda: (None, "A new run starts with the next *Run*.", None, [], gr.update(choices=[], value=None), None)  # noqa: E731
    imp_new.click(new_run, outputs=imp_outputs, api_name="strategist_new")
    imp_game.input(lambda k: (*new_run(), *_controls_for(k)), inputs=imp_game, outputs=[*imp_outputs, *game_controls],
                   api_visibility="private")
    guide_side.input(new_run, outputs=imp_outputs, api_visibility="private")
    pick.change(on_pick, inputs=[run_dir, pick], outputs=[code, diff], api_name="strategist_source")
