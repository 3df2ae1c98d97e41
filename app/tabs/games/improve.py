"""Strategy Games → Improve: run STRATEGIST's improvement loop and browse the strategy library. *Run /
continue* is the ``games_improve`` action (``backends.games.actions``, bound by ``bind_action``): which run a
request continues, the default budgets, the library and the strategies the agents play are decided in
``backends.games.improve``, for the tab and the CLI alike."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from app.components.action_button import bind_action, bind_stop
from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from backends.games import domains
from backends.games import improve as service
from backends.games.actions import IMPROVE
from backends.games.requests import METHODS, ImproveRequest

LIBRARY_HEADERS = ["id", "origin", "idea", "parent", "score", "generation"]
ABOUT = ("Run STRATEGIST's improvement loop: an LLM reflects on self-play, proposes ideas (a bandit picks which to "
         "try) and rewrites the strategy; search with each strategy plays the evaluation games. **GOPS**: value "
         "heuristics, scored by MCTS self-play. **Avalon**: a value heuristic for the search agents, or the "
         "dialogue guide their LLM speaks by, scored by games against the rule agents (guide games speak through "
         "the LLM: slow on CPU). LLM code runs only in the sandbox. Uses the LLM endpoint (`ICLR25_LLM_BASE_URL`, "
         "`ICLR25_LLM_MODEL`), else the embedded SmolLM2-135M, which writes weak code — point it at a strong "
         "model for real gains.")


def _views(view: service.RunView) -> tuple:
    """curve, table, strategy picker, files."""
    curve = pd.DataFrame(view.curve or [], columns=["iteration", "best score"])
    return (curve, view.rows, gr.update(choices=view.ids, value=view.ids[0] if view.ids else None), view.files)


def _request(path, kind, side, method_v, iters, cards, games, budget, seed_v) -> ImproveRequest:
    """The action's request, in the session's run folder when it continues that run, else in a new one."""
    request = ImproveRequest(kind, int(iters), method_v, int(games), int(budget),
                             {"num_cards": int(cards), "guide_side": side}, int(seed_v or 0))
    return service.place(request, path, lambda: new_output_dir("strategist"))


def _shown(request: ImproveRequest, update: service.ImproveUpdate, paths: dict | None = None) -> tuple:
    """status, run folder, curve, table, picker, files (read after the run card was written beside them)."""
    return (update.status, str(request.run_dir), *_views(service.run_view(request.run_dir)))


def _controls_for(kind: str, options: dict | None = None, games: int | None = None, budget: int | None = None):
    """GOPS cards only for GOPS, the guide's side only for guide runs; the kind's default budget."""
    default_games, default_budget = service.defaults(kind)
    options = options or {}
    cards = gr.update(visible=kind == "gops", **({"value": options["num_cards"]} if "num_cards" in options else {}))
    return (cards, gr.update(visible=kind.endswith("-guide")), gr.update(value=games or default_games),
            gr.update(value=budget or default_budget))


def _settings() -> SimpleNamespace:
    """What to improve and how: the game, the guide's side, the method, iterations and the evaluation."""
    kinds = domains.run_kinds()
    first = next(iter(kinds))
    first_games, first_budget = service.defaults(first)
    with gr.Row():
        game = gr.Radio([(label, kind) for kind, label in kinds.items()], value=first, label="Improve",
                        elem_id="strategist-game", info="a new run starts when you change this")
        side = gr.Radio(["good", "evil"], value="good", label="Guide of the side", visible=False,
                        info="Avalon dialogue guide runs")
        method = gr.Radio(list(METHODS), value="strategist", label="Method",
                          info="beam = the paper's ablation without the idea library")
    with gr.Row():
        iterations = gr.Slider(1, 20, value=2, step=1, label="Iterations",
                               info="Rounds of improvement: each proposes ideas, writes new strategies and scores them.")
        cards = gr.Slider(3, 13, value=6, step=1, label="GOPS cards",
                          info="Cards per suit of the GOPS games the strategies are scored on.")
        games = gr.Slider(2, 40, value=first_games, step=2, label="Games (GOPS: per pair; Avalon: per strategy)",
                          info="Self-play games that score each strategy: more is steadier and slower.")
        sims = gr.Slider(2, 200, value=first_budget, step=2, label="Search budget",
                         info="GOPS: MCTS simulations per move; Avalon: sampled worlds per decision")
        seed = gr.Number(0, precision=0, minimum=0, label="Seed", info="Same seed and settings → the same run.")
    return SimpleNamespace(game=game, side=side, method=method, iterations=iterations, cards=cards, games=games,
                           sims=sims, seed=seed)


def _library() -> SimpleNamespace:
    """The buttons, the status, the score curve, the strategy library and a strategy's source."""
    with gr.Row():
        run = gr.Button("Run / continue", variant="primary", elem_id="strategist-run")
        stop = gr.Button("Stop", variant="stop", elem_id="strategist-stop")
        new = gr.Button("New run", elem_id="strategist-new")
    status = gr.Markdown(elem_id="strategist-status")
    with gr.Row():
        curve = gr.LinePlot(x="iteration", y="best score", title="Best strategy's self-play score", y_lim=[0, 1],
                            elem_id="strategist-curve")
        table = gr.Dataframe(headers=LIBRARY_HEADERS, label="Strategy library", interactive=False, wrap=True,
                             elem_id="strategist-table")
    with gr.Row():
        pick = gr.Dropdown([], label="Strategy", elem_id="strategist-pick",
                           info="A strategy of the library: its code and what changed from the one it came from.")
        files = gr.File(label="Run files (library, ideas, log, run card)", file_count="multiple")
        upload = gr.UploadButton("Load a saved run (its library.json, ideas.json, log.jsonl, strategist.json)",
                                 file_count="multiple", file_types=[".json", ".jsonl"], elem_id="strategist-load")
    with gr.Row():
        code = gr.Code(language="python", label="Source", interactive=False)
        diff = gr.Code(language="python", label="Diff against its parent", interactive=False)
    return SimpleNamespace(run=run, stop=stop, new=new, status=status, curve=curve, table=table, pick=pick,
                           files=files, upload=upload, code=code, diff=diff)


def _wire_run(run_dir: gr.State, s: SimpleNamespace, lib: SimpleNamespace) -> None:
    """*Run / continue* and Stop: the action, on a queue of its own (one at a time): minutes of self-play
    never hold the shared "gpu" queue. Stop ends it within a game or an LLM answer (the LLM stops between
    tokens, the games between search batches, a sandboxed strategy is killed); what finished stays."""
    bind_action(IMPROVE, trigger=lib.run.click, status=lib.status,
                inputs=[run_dir, s.game, s.side, s.method, s.iterations, s.cards, s.games, s.sims, s.seed],
                outputs=[run_dir, lib.curve, lib.table, lib.pick, lib.files], to_request=_request, show=_shown,
                preview=[lib.curve, lib.table, lib.pick, lib.files], to_preview=lambda update: _views(update.view),
                stopped=lambda request: _shown(request, service.stopped(request.run_dir)),
                folder=lambda request: request.run_dir,  # the run card beside the run's files
                api_name="strategist_run", concurrency_id="improve", concurrency_limit=1)
    bind_stop(lib.stop, IMPROVE, lib.status, api_name="strategist_stop")


def _wire_library(run_dir: gr.State, s: SimpleNamespace, lib: SimpleNamespace) -> None:
    """Load a saved run, start a new one, browse a strategy's source."""

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

    outputs = [run_dir, lib.status, lib.curve, lib.table, lib.pick, lib.files]
    game_controls = [s.cards, s.side, s.games, s.sims]
    lib.upload.upload(on_load_run, inputs=lib.upload, outputs=[*outputs, s.game, s.side, *game_controls],
                      api_name="strategist_load")
    new_run = lambda: (None, "A new run starts with the next *Run*.", None, [], gr.update(choices=[], value=None), None)  # noqa: E731
    lib.new.click(new_run, outputs=outputs, api_name="strategist_new")
    s.game.input(lambda k: (*new_run(), *_controls_for(k)), inputs=s.game, outputs=[*outputs, *game_controls],
                 api_visibility="private")
    s.side.input(new_run, outputs=outputs, api_visibility="private")
    lib.pick.change(on_pick, inputs=[run_dir, lib.pick], outputs=[lib.code, lib.diff], api_name="strategist_source")


def build(run_dir: gr.State) -> None:
    """The Improve sub-tab; ``run_dir`` is the session's run, shared with the GOPS and Avalon sub-tabs."""
    with gr.Tab("Improve (STRATEGIST)"):
        gr.Markdown(ABOUT)
        settings = _settings()
        library = _library()
    _wire_run(run_dir, settings, library)
    _wire_library(run_dir, settings, library)
