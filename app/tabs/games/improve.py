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
from app.components.params import control, documented
from app.tabs.games.common import labelled
from backends.games import domains
from backends.games import improve as service
from backends.games.actions import IMPROVE
from backends.games.requests import ImproveRequest

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


def _request(run_dir, kind, guide_side, method, iterations, num_cards, games, budget, seed) -> ImproveRequest:
    """The action's request, in the session's run folder when it continues that run, else in a new one.

    Args:
        run_dir: The session's run (held by the session): continued when the request improves what it improves.
    """
    request = ImproveRequest(kind, iterations, method, games, budget, num_cards, guide_side=guide_side,
                             seed=0 if seed is None else seed)
    return service.place(request, run_dir, lambda: new_output_dir("strategist"))


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
    first = ImproveRequest().kind
    first_games, first_budget = service.defaults(first)
    with gr.Row():
        game = labelled(ImproveRequest, "kind", domains.run_kinds(), elem_id="strategist-game")
        side = control(ImproveRequest, "guide_side", widget="radio", visible=False)
        method = control(ImproveRequest, "method", widget="radio")
    with gr.Row():
        iterations = control(ImproveRequest, "iterations")
        cards = control(ImproveRequest, "num_cards")
        # the request's default is the game's own (None): shown as the first game's
        games = control(ImproveRequest, "games")
        games.value = first_games
        sims = control(ImproveRequest, "budget")
        sims.value = first_budget
        seed = control(ImproveRequest, "seed", widget="number")
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
    @documented()
    def on_pick(run_dir, strategy_id):
        """A strategy of the session's run: its source, and its diff against the strategy it came from.

        Args:
            run_dir: The session's run (held by the session).
            strategy_id: The strategy's id in the run's library (e.g. s003).
        """
        return service.strategy_source(run_dir, strategy_id)

    @user_errors
    @documented()
    def on_load_run(files):
        """Load a saved run (its library.json, and ideas.json, log.jsonl and strategist.json or run.json to go on
        with it): *Run / continue* goes on from it, and the strategist agents of its game play its best strategy.

        Args:
            files: The run's files, as the Improve tab offered them for download.
        """
        loaded = service.load_run([f if isinstance(f, str) else f.name for f in files or []],
                                  new_output_dir("strategist"))
        side = loaded.options.get("guide_side", "good")
        return (loaded.view.run_dir, loaded.status, *_views(loaded.view), loaded.kind, side,
                *_controls_for(loaded.kind, loaded.options, loaded.games, loaded.budget))

    def new_run():
        """Forget the session's run: the next *Run / continue* starts a new one."""
        return None, "A new run starts with the next *Run*.", None, [], gr.update(choices=[], value=None), None

    outputs = [run_dir, lib.status, lib.curve, lib.table, lib.pick, lib.files]
    game_controls = [s.cards, s.side, s.games, s.sims]
    lib.upload.upload(on_load_run, inputs=lib.upload, outputs=[*outputs, s.game, s.side, *game_controls],
                      api_name="strategist_load")
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
