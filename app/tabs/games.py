"""Strategy Games tab (STRATEGIST): play GOPS against a search agent by clicking cards, and Avalon with
agents in a chat.

Hidden means hidden: a game lives on the server (``backends.games.match_store``); the session holds only
its id, and what reaches the page, a download or an API result is the player's view until the game
is over — then the full log (all roles, the agents' reasoning, the whole deck, the seed).
"""

from __future__ import annotations

import functools
import json
import logging

import gradio as gr

from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.components.longwork import CANCELS, stream
from app.tabs import TabSpec
from backends.common.errors import Cancelled, InputError, ModelCorruptError, ModelMissingError
from backends.games.avalon import match as avalon
from backends.games.avalon.game import ROLES
from backends.games.gops import match as gops
from backends.games.gops.match import OPPONENTS, GopsMatch, GopsMatchRequest
from backends.games.strategist import loop as strategist

MAX_CARDS = 13
HISTORY_HEADERS = ["round", "prize", "you", "agent", "won by"]
LOG_LABEL = "Game log (JSON): your view while the game runs, the full log once it is over"
RELOAD_LABEL = "Reload a finished game (its full log) or resume yours (your view's log)"
log = logging.getLogger(__name__)


def _seed(value) -> int | None:
    """The seed field: empty or negative means a fresh random deal."""
    return None if value in (None, "") or int(value) < 0 else int(value)


def _quiet(fn):
    """A game handler whose unexpected errors say what failed, never what it was holding (a role, a deck)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (InputError, ModelMissingError, ModelCorruptError, Cancelled, gr.Error):
            raise
        except Exception as e:
            log.exception("a game handler failed")
            raise InputError(f"The game failed unexpectedly ({e.__class__.__name__}); the details are in the "
                             f"server's log. Start a new game.") from None
    return wrapper


def _write_log(kind: str, name_and_text: tuple[str, str]) -> str:
    name, text = name_and_text
    path = new_output_dir(kind) / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _board(match: GopsMatch) -> str:
    s = match.state
    you, agent = s.scores
    lines = [f"### Prize: **{s.prize}**" if s.prize is not None else "### Game over",
             f"**You** {you:g} : {agent:g} **agent** ({match.request.opponent}"
             + (f", strategy {match.request.strategy_name}" if match.request.strategy_name else "") + ")"
             + (f" · pot {s.pot:g} carried over" if s.pot else "")
             + f" · round {min(s.round + 1, s.config.num_cards)}/{s.config.num_cards}"]
    if match.result:
        lines.append(f"**{match.result}** Seed **{match.request.seed}**: enter it to deal this game again.")
    return "  \n".join(lines)


def _history(match: GopsMatch) -> list[list]:
    rows = []
    for i, (b0, b1) in enumerate(match.state.bids):
        winner = "you" if b0 > b1 else "agent" if b1 > b0 else "tie"
        rows.append([i + 1, match.state.prizes[i], b0, b1, winner])
    return rows


def _outputs(match_id: str, match: GopsMatch):
    hand = set(match.state.hand(0)) if not match.over else set()
    cards = [gr.update(visible=k <= match.state.config.num_cards, interactive=k in hand,
                       variant="primary" if k in hand else "secondary") for k in range(1, MAX_CARDS + 1)]
    last = match.search[-1] if match.search else {}
    return [match_id, _board(match), _history(match), last, _write_log("gops", gops.offered_log(match, match_id)),
            *cards]


TURN_TEXT = {"speak": "Your turn to speak: say something to the table.", "propose": "You lead: pick a team.",
             "vote": "Vote on the proposed team.", "quest": "You are on the quest: play a card.",
             "assassinate": "You are the Assassin: name Merlin."}


def _chat(match) -> list[gr.ChatMessage]:
    out = []
    for line in avalon.transcript(match):
        if line["kind"] == "speech":
            mine = line["speaker"].endswith("(you)")
            out.append(gr.ChatMessage(role="user" if mine else "assistant", content=f"**{line['speaker']}:** {line['text']}"))
        else:
            out.append(gr.ChatMessage(role="assistant", content=line["text"], metadata={"title": line["speaker"]}
                                      if line["kind"] in ("end", "reasoning") else None))
    return out


def _avalon_outputs(match_id: str, match):
    turn = avalon.human_turn(match)
    view = match.game.view(match.human)
    n = match.game.n
    if match.over:
        status = (f"**Game over.** {match.game.winner.upper()} wins — {match.game.end_reason}. Seed **{match.seed}**: "
                  f"enter it to deal this game again.")
        if match.replaced_speeches:
            status += (f" {match.replaced_speeches} agent speech(es) were replaced by a neutral line because they "
                       f"gave away what the agent was told in private.")
    elif turn:
        extra = f" Team size {view['team_size']}." if turn == "propose" else (
            f" Team: {view['team']}." if turn in ("vote", "quest") else "")
        status = f"**{TURN_TEXT[turn]}**{extra}"
    else:
        status = "Waiting for the other players…"
    quests = " ".join("✓" if ok else "✗" for ok in match.game.quest_results) or "none yet"
    info = (f"You are **Player {match.human}**, {avalon.ROLE_NAMES.get(view['role'], view['role'])} ({view['side']}) · "
            f"quests: {quests} · leader: Player {view['leader']} · rejections this round: {view['rejections']}")
    if match.strategy:
        info += f" · agents' strategy: {match.strategy.get('name', '?')}"
    good = view["side"] == "good"
    return [
        match_id, _chat(match), status, info, _write_log("avalon", avalon.offered_log(match, match_id)),
        gr.update(visible=turn == "speak"),
        gr.update(visible=turn == "propose"),
        gr.update(choices=[(f"Player {i}" + (" (you)" if i == match.human else ""), str(i)) for i in range(n)], value=[]),
        gr.update(visible=turn == "vote"),
        gr.update(visible=turn == "quest"),
        gr.update(interactive=not good),  # good players can only play Success
        gr.update(visible=turn == "assassinate"),
        gr.update(choices=[(f"Player {i}", str(i)) for i in range(n) if i != match.human], value=None),
    ]


def build(demo: gr.Blocks) -> None:
    gr.Markdown(
        "**STRATEGIST** (ICLR 2025) improves game strategies with an LLM and Monte-Carlo tree search through "
        "self-play. Here: play **GOPS** (Game of Pure Strategy) against a search agent — both of you bid a card "
        "for the prize at once; the higher card wins it. The agent never sees your card before it bids."
    )
    run_dir = gr.State(None)  # the Improve tab's run: its best strategy plays in GOPS and Avalon
    with gr.Tab("GOPS"):
        match_state = gr.State(None)  # the id of the session's game; the game itself stays on the server
        with gr.Row():
            cards_n = gr.Slider(3, MAX_CARDS, value=6, step=1, label="Cards per suit (13 = standard)",
                                elem_id="gops-cards")
            tie_rule = gr.Radio(["discard", "carry"], value="discard", label="Ties",
                                info="discard: nobody scores (OpenSpiel); carry: points go to the next round's winner")
            order = gr.Radio(["random", "descending", "ascending"], value="random", label="Prize order")
        with gr.Row():
            opponent = gr.Dropdown(list(OPPONENTS), value="mcts", label="Opponent", elem_id="gops-opponent",
                                   info="mcts = MCTS with the hand-written value heuristic at the leaves; strategist "
                                        "= MCTS with the best strategy of your Improve run (else the shipped run's)")
            sims = gr.Slider(100, 200_000, value=20_000, step=100, label="MCTS simulations per move",
                             info="≈1 M/s with the compiled heuristic; ≈50 k/s with an LLM-written one (sandboxed)")
            seed = gr.Number(-1, precision=0, minimum=-1, label="Seed (-1 = random)", elem_id="gops-seed")
            new_btn = gr.Button("New game", variant="primary", elem_id="gops-new")
            resign_btn = gr.Button("Resign", variant="stop", elem_id="gops-resign")
        board = gr.Markdown("Press **New game**.", elem_id="gops-board")
        gr.Markdown("Your hand — click a card to bid it:")
        with gr.Row(elem_id="gops-hand"):
            card_buttons = [gr.Button(str(k), visible=False, min_width=40, elem_id=f"gops-card-{k}")
                            for k in range(1, MAX_CARDS + 1)]
        with gr.Row():
            history = gr.Dataframe(headers=HISTORY_HEADERS, label="Rounds", interactive=False, elem_id="gops-history")
            stats = gr.JSON(label="Agent's search for its last bid", elem_id="gops-stats")
        with gr.Row():
            log_file = gr.File(label=LOG_LABEL, elem_id="gops-log")
            gops_upload = gr.File(label=RELOAD_LABEL, file_types=[".json"], type="filepath", elem_id="gops-upload")

    with gr.Tab("Avalon"):
        gr.Markdown("Play *The Resistance: Avalon* with agents in the other seats: search agents that weigh every "
                    "role assignment consistent with what they know and play each option out (optionally speaking "
                    "through an LLM), the same with a STRATEGIST strategy's value heuristic (and dialogue guides), "
                    "or AvalonBench-style rule agents. Speak, propose, vote, go on quests — the "
                    "table's discussion is the chat; the agents' private reasoning appears after the game.")
        av_state = gr.State(None)  # the id of the session's game; the game itself stays on the server
        with gr.Row():
            av_players = gr.Slider(5, 10, value=5, step=1, label="Players")
            av_role = gr.Dropdown(["random", *ROLES], value="Servant", label="Your role")
            av_discussion = gr.Checkbox(True, label="Discussion before each proposal")
            av_seed = gr.Number(-1, precision=0, minimum=-1, label="Seed (-1 = random)", elem_id="avalon-seed")
            av_new = gr.Button("New game", variant="primary", elem_id="avalon-new")
        with gr.Row():
            av_agents = gr.Radio([("search over beliefs", "search"), ("rule-based (AvalonBench)", "rule"),
                                  ("search + LLM speech (slow on CPU)", "search+llm"),
                                  ("STRATEGIST strategy", "strategist"),
                                  ("STRATEGIST strategy + LLM speech by its guides", "strategist+llm")],
                                 value="search", label="Agents", elem_id="avalon-agents",
                                 info="LLM speech uses the configured endpoint, else the embedded SmolLM2-135M "
                                      "(tiny: fluent but shallow; set ICLR25_LLM_BASE_URL for a stronger model). "
                                      "STRATEGIST strategy: the best Avalon strategy of your Improve run, else the "
                                      "shipped one.")
        av_info = gr.Markdown(elem_id="avalon-info")
        chat = gr.Chatbot(label="Table", height=420, elem_id="avalon-chat")
        av_status = gr.Markdown(elem_id="avalon-status")
        with gr.Group(visible=False) as speak_box:
            with gr.Row():
                say = gr.Textbox(label="Your statement", scale=4, elem_id="avalon-say-text")
                say_btn = gr.Button("Say", variant="primary", elem_id="avalon-say")
        with gr.Group(visible=False) as propose_box:
            team_pick = gr.CheckboxGroup([], label="Team", elem_id="avalon-team")
            propose_btn = gr.Button("Propose team", variant="primary", elem_id="avalon-propose")
        with gr.Row(visible=False) as vote_box:
            approve_btn = gr.Button("Approve", variant="primary", elem_id="avalon-approve")
            reject_btn = gr.Button("Reject", variant="stop", elem_id="avalon-reject")
        with gr.Row(visible=False) as quest_box:
            success_btn = gr.Button("Success", variant="primary", elem_id="avalon-success")
            fail_btn = gr.Button("Fail", variant="stop", elem_id="avalon-fail")
        with gr.Group(visible=False) as assassin_box:
            target = gr.Dropdown([], label="Who is Merlin?", elem_id="avalon-target")
            kill_btn = gr.Button("Assassinate", variant="stop", elem_id="avalon-kill")
        with gr.Row():
            av_log = gr.File(label=LOG_LABEL, elem_id="avalon-log")
            av_upload = gr.File(label=RELOAD_LABEL, file_types=[".json"], type="filepath", elem_id="avalon-upload")

    av_outputs = [av_state, chat, av_status, av_info, av_log, speak_box, propose_box, team_pick, vote_box, quest_box,
                  fail_btn, assassin_box, target]

    @user_errors
    @_quiet
    def av_on_new(players, role, discussion, seed_v, agents_v, improve_dir):
        strategy = None
        if agents_v.startswith("strategist"):
            best = strategist.best_strategy("avalon", improve_dir)
            strategy = {"name": strategist.describe_origin(best), "source": best.source, "guide": best.guide}
        req = avalon.AvalonMatchRequest(int(players), role, bool(discussion), _seed(seed_v), agents_v, strategy)
        return _avalon_outputs(*avalon.start(req))

    def av_action(kind):
        @user_errors
        @_quiet
        def handler(match_id, value=None):
            if kind == "propose":
                value = [int(v) for v in (value or [])]
            elif kind == "assassinate":
                if value in (None, ""):
                    raise InputError("Choose whom to name as Merlin.")
                value = int(value)
            elif kind == "speak" and not str(value or "").strip():
                raise InputError("Type something to say (or 'pass').")
            return _avalon_outputs(match_id, avalon.play(match_id, kind, value))
        return handler

    @user_errors
    @_quiet
    def av_on_upload(path):
        if not path:
            return [gr.update()] * len(av_outputs)
        with open(path, encoding="utf-8") as f:
            return _avalon_outputs(*avalon.reload(f.read()))

    av_new.click(av_on_new, inputs=[av_players, av_role, av_discussion, av_seed, av_agents, run_dir], outputs=av_outputs,
                 api_name="avalon_new")
    say_btn.click(av_action("speak"), inputs=[av_state, say], outputs=av_outputs, api_name="avalon_say").then(
        lambda: "", outputs=say, api_visibility="private")
    say.submit(av_action("speak"), inputs=[av_state, say], outputs=av_outputs, api_visibility="private").then(
        lambda: "", outputs=say, api_visibility="private")
    propose_btn.click(av_action("propose"), inputs=[av_state, team_pick], outputs=av_outputs, api_name="avalon_propose")
    approve_btn.click(lambda s: av_action("vote")(s, True), inputs=av_state, outputs=av_outputs, api_name="avalon_approve")
    reject_btn.click(lambda s: av_action("vote")(s, False), inputs=av_state, outputs=av_outputs, api_name="avalon_reject")
    success_btn.click(lambda s: av_action("quest")(s, True), inputs=av_state, outputs=av_outputs, api_name="avalon_success")
    fail_btn.click(lambda s: av_action("quest")(s, False), inputs=av_state, outputs=av_outputs, api_name="avalon_fail")
    kill_btn.click(av_action("assassinate"), inputs=[av_state, target], outputs=av_outputs, api_name="avalon_assassinate")
    av_upload.upload(av_on_upload, inputs=av_upload, outputs=av_outputs, api_name="avalon_reload")

    with gr.Tab("Improve (STRATEGIST)"):
        gr.Markdown("Run STRATEGIST's improvement loop: an LLM reflects on self-play, proposes ideas (a bandit "
                    "picks which to try) and rewrites the strategy; search with each strategy plays the evaluation "
                    "games. **GOPS**: value heuristics, scored by MCTS self-play. **Avalon**: a value heuristic for "
                    "the search agents, or the dialogue guide their LLM speaks by, scored by games against the "
                    "rule agents (guide games speak through the LLM: slow on CPU). LLM code runs only in the "
                    "sandbox. Uses the LLM endpoint (`ICLR25_LLM_BASE_URL`, `ICLR25_LLM_MODEL`), else the embedded "
                    "SmolLM2-135M, which writes weak code — point it at a strong model for real gains.")
        with gr.Row():
            imp_game = gr.Radio([("GOPS value heuristic", "gops"), ("Avalon value heuristic", "avalon-heuristic"),
                                 ("Avalon dialogue guide", "avalon-guide")], value="gops", label="Improve",
                                elem_id="strategist-game", info="a new run starts when you change this")
            guide_side = gr.Radio(["good", "evil"], value="good", label="Guide of the side", visible=False,
                                  info="Avalon dialogue guide runs")
            method = gr.Radio(["strategist", "beam"], value="strategist", label="Method",
                              info="beam = the paper's ablation without the idea library")
        with gr.Row():
            iterations = gr.Slider(1, 20, value=2, step=1, label="Iterations")
            imp_cards = gr.Slider(3, 13, value=6, step=1, label="GOPS cards")
            imp_games = gr.Slider(2, 40, value=4, step=2, label="Games (GOPS: per pair; Avalon: per strategy)")
            imp_sims = gr.Slider(2, 200, value=16, step=2, label="Search budget",
                                 info="GOPS: MCTS simulations per move; Avalon: sampled worlds per decision")
            imp_seed = gr.Number(0, precision=0, minimum=0, label="Seed")
        with gr.Row():
            imp_run = gr.Button("Run / continue", variant="primary", elem_id="strategist-run")
            imp_stop = gr.Button("Stop", variant="stop", elem_id="strategist-stop")
            imp_new = gr.Button("New run", elem_id="strategist-new")
        imp_status = gr.Markdown(elem_id="strategist-status")
        with gr.Row():
            curve = gr.LinePlot(x="iteration", y="best score", title="Best strategy's self-play score",
                                y_lim=[0, 1], elem_id="strategist-curve")
            table = gr.Dataframe(headers=["id", "origin", "idea", "parent", "score", "generation"],
                                 label="Strategy library", interactive=False, wrap=True, elem_id="strategist-table")
        with gr.Row():
            pick = gr.Dropdown([], label="Strategy", elem_id="strategist-pick")
            lib_file = gr.File(label="Run files (library, ideas, log)", file_count="multiple")
            lib_upload = gr.UploadButton("Load a saved run (library.json, ideas.json, log.jsonl)",
                                        file_count="multiple", file_types=[".json", ".jsonl"],
                                        elem_id="strategist-load")
        with gr.Row():
            code = gr.Code(language="python", label="Source", interactive=False)
            diff = gr.Code(language="python", label="Diff against its parent", interactive=False)

    def _run_views(run_path, library):
        import pandas as pd

        rows = strategist.library_rows(library)
        files = [str(run_path / n) for n in strategist.RUN_FILES if (run_path / n).exists()]
        return (pd.DataFrame(strategist.score_curve(run_path) or [], columns=["iteration", "best score"]), rows,
                gr.update(choices=[r[0] for r in rows], value=rows[0][0] if rows else None), files)

    def _controls_for(game):
        """GOPS cards only for GOPS, the guide's side only for guide runs; each game's default budget."""
        games, budget = (4, 16) if game == "gops" else (8, 8)
        return (gr.update(visible=game == "gops"), gr.update(visible=game == "avalon-guide"),
                gr.update(value=games), gr.update(value=budget))

    def _same_kind(path, game, side) -> bool:
        """Does the run in ``path`` improve what the controls ask for (game, part, guide side)?"""
        if not (path / "library.json").exists():
            return True  # nothing saved yet
        kind, saved = strategist.run_kind(path)
        return kind == game and (game != "avalon-guide" or saved.get("guide_side") == side)

    def _open_run(path, game, side, settings_tuple, method_v, seed_v):
        from backends.games.avalon.domain import AvalonEvalSettings
        from backends.games.gops.domain import EvalSettings
        from backends.games.strategist.llm import get_llm

        llm = get_llm(cache=(path / "llm_cache.jsonl"))
        n, games, sims = (int(v) for v in settings_tuple)
        if game == "gops":
            settings = EvalSettings(n, "discard", games, sims)
        else:
            settings = AvalonEvalSettings(game.removeprefix("avalon-"), games=games, worlds=sims, guide_side=side)
        return strategist.StrategistRun(path, llm, settings, method=method_v, seed=int(seed_v or 0))

    @user_errors
    def on_improve(path, game, side, method_v, iters, n, games, sims, seed_v, request: gr.Request,
                   progress=gr.Progress()):
        from pathlib import Path

        if path and not _same_kind(Path(path), game, side):
            path = None  # the run in the session improves something else: this one starts afresh
        path = Path(path) if path else new_output_dir("strategist")
        run = _open_run(path, game, side, (n, games, sims), method_v, seed_v)
        token = CANCELS.start(request, "strategist")
        try:
            yield (str(path), f"Running with **{run.llm.name}**…", *_run_views(run.dir, run.library))
            for kind, _ in stream(run.run(int(iters), token), progress):
                if kind == "result":
                    best = run.library.top(1)
                    status = (f"Iteration {run.iteration} · best **{best[0].id}** score {best[0].score:.3f} · "
                              f"LLM calls so far {run.llm_calls} ({run.llm.name})") if best else "Seeded."
                    yield (str(path), status, *_run_views(run.dir, run.library))
        except Cancelled:
            yield (str(path), f"Stopped after iteration {run.iteration}.", *_run_views(run.dir, run.library))
        finally:
            CANCELS.finish(request, "strategist", token)

    def on_stop_improve(request: gr.Request) -> str:
        return "Stopping after the current step…" if CANCELS.cancel(request, "strategist") else "Nothing is running."

    @user_errors
    def on_pick(path, sid):
        from pathlib import Path

        if not path or not sid:
            return "", ""
        data = {s["id"]: s for s in json.loads((Path(path) / "library.json").read_text())}
        if sid not in data:
            raise InputError(f"No strategy {sid!r} in this run.")
        lib = strategist.StrategyLibrary.from_json(list(data.values()))
        return lib.items[sid].as_text(), strategist.diff_against_parent(lib, sid)

    @user_errors
    def on_load_run(files):
        path = new_output_dir("strategist")
        library = strategist.import_run_files([f if isinstance(f, str) else f.name for f in files or []], path)
        best = library.top(1)
        status = (f"Loaded {len(library.items)} strategies; best **{strategist.describe_origin(best[0])}**. "
                  f"*Run / continue* goes on from here; the strategist agents in "
                  f"{best[0].game.upper() if best[0].game == 'gops' else 'Avalon'} now play its best."
                  if best else f"Loaded {len(library.items)} strategies (none scored yet).")
        choice, saved = strategist.run_kind(path)  # saved: the run's own evaluation settings, if recorded
        side = saved.get("guide_side", "good")
        cards, guide, games, budget = _controls_for(choice)
        games = gr.update(value=saved.get("games_per_pair", saved.get("games", games["value"])))
        budget = gr.update(value=saved.get("simulations", saved.get("worlds", budget["value"])))
        return (str(path), status, *_run_views(path, library), choice, side, cards, guide, games, budget)

    imp_outputs = [run_dir, imp_status, curve, table, pick, lib_file]
    game_controls = [imp_cards, guide_side, imp_games, imp_sims]
    lib_upload.upload(on_load_run, inputs=lib_upload, outputs=[*imp_outputs, imp_game, guide_side, *game_controls],
                      api_name="strategist_load")
    imp_run.click(on_improve, inputs=[run_dir, imp_game, guide_side, method, iterations, imp_cards, imp_games, imp_sims,
                                      imp_seed],
                  outputs=imp_outputs, api_name="strategist_run", concurrency_id="gpu")
    imp_stop.click(on_stop_improve, outputs=imp_status, api_name="strategist_stop", queue=False)
    new_run = lambda: (None, "A new run starts with the next *Run*.", None, [], gr.update(choices=[], value=None), None)  # noqa: E731
    imp_new.click(new_run, outputs=imp_outputs, api_name="strategist_new")
    imp_game.input(lambda g: (*new_run(), *_controls_for(g)), inputs=imp_game, outputs=[*imp_outputs, *game_controls],
                   api_visibility="private")
    guide_side.input(new_run, outputs=imp_outputs, api_visibility="private")
    pick.change(on_pick, inputs=[run_dir, pick], outputs=[code, diff], api_name="strategist_source")

    outputs = [match_state, board, history, stats, log_file, *card_buttons]

    @user_errors
    @_quiet
    def on_new(n, tie, prize_order, opp, simulations, seed_v, improve_dir):
        source, name = None, ""
        if opp == "strategist":
            best = strategist.best_strategy("gops", improve_dir)
            source, name = best.source, strategist.describe_origin(best)
        req = GopsMatchRequest(int(n), tie, prize_order, opp, int(simulations), _seed(seed_v), source, name)
        return _outputs(*gops.start(req))

    @user_errors
    @_quiet
    def on_card(match_id, label):
        return _outputs(match_id, gops.play(match_id, int(label)))

    @user_errors
    @_quiet
    def on_resign(match_id):
        return _outputs(match_id, gops.resign_match(match_id))

    @user_errors
    @_quiet
    def on_gops_upload(path):
        if not path:
            return [gr.update()] * len(outputs)
        with open(path, encoding="utf-8") as f:
            return _outputs(*gops.reload(f.read()))

    new_btn.click(on_new, inputs=[cards_n, tie_rule, order, opponent, sims, seed, run_dir], outputs=outputs,
                  api_name="gops_new")
    for k, btn in enumerate(card_buttons, start=1):
        btn.click(on_card, inputs=[match_state, btn], outputs=outputs,
                  api_name="gops_play" if k == 1 else None, api_visibility="public" if k == 1 else "private")
    resign_btn.click(on_resign, inputs=match_state, outputs=outputs, api_name="gops_resign")
    gops_upload.upload(on_gops_upload, inputs=gops_upload, outputs=outputs, api_name="gops_reload")


TAB = TabSpec(name="games", title="Strategy Games", build=build)
