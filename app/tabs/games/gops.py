"""Strategy Games → GOPS: play against a search agent by clicking cards. The game lives on the server
(``backends.games.gops.match``); the session holds only its id, and the page gets the player's view
(``GopsTurn``) until the game is over. A bid is the ``games_gops_play`` action: the agent's search shows its
progress, and Stop ends it (the game stays as it was)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from app.components.action_button import bind_action, bind_stop
from app.components.errors import user_errors
from app.components.params import control, documented
from app.tabs.games.common import LOG_LABEL, RELOAD_LABEL, quiet, write_log
from backends.games.actions import GOPS_PLAY
from backends.games.gops import match as gops
from backends.games.gops.match import GopsTurn
from backends.games.logs import read_log
from backends.games.requests import MAX_CARDS, GopsMatchRequest, GopsPlayRequest

HISTORY_HEADERS = ["round", "prize", "you", "agent", "won by"]
SEARCHING = "The agent chooses its bid…"
STOPPED = "Stopped: the agent's search was stopped and your card was not played; the game is as it was."


def _board(t: GopsTurn) -> str:
    you, agent = t.scores
    lines = [f"### Prize: **{t.prize}**" if t.prize is not None else "### Game over",
             f"**You** {you:g} : {agent:g} **agent** ({t.opponent}"
             + (f", strategy {t.strategy}" if t.strategy else "") + ")"
             + (f" · pot {t.pot:g} carried over" if t.pot else "")
             + f" · round {min(t.round + 1, t.num_cards)}/{t.num_cards}"]
    if t.outcome:
        lines.append(f"**{t.outcome}** Seed **{t.seed}**: enter it to deal this game again.")
    return "  \n".join(lines)


def _values(t: GopsTurn, log_path: str) -> list:
    """The game's outputs but the status: its id, board, rounds, the agent's last search, the log, the cards."""
    hand = set(t.hand)
    cards = [gr.update(visible=k <= t.num_cards, interactive=k in hand, variant="primary" if k in hand else "secondary")
             for k in range(1, MAX_CARDS + 1)]
    rounds = [[r["round"], r["prize"], r["you"], r["agent"], r["won_by"]] for r in t.rounds]
    return [t.match_id, _board(t), rounds, t.agent_search[-1] if t.agent_search else {}, log_path, *cards]


def _shown(t: GopsTurn) -> list:
    """Every output of a light handler (a new game, a resignation, a reloaded log): the status cleared."""
    return [*_values(t, write_log("gops", (t.log_name, t.log_text))), ""]


def _settings() -> SimpleNamespace:
    with gr.Row():
        cards_n = control(GopsMatchRequest, "num_cards", elem_id="gops-cards")
        tie_rule = control(GopsMatchRequest, "tie_rule", widget="radio")
        order = control(GopsMatchRequest, "prize_order", widget="radio")
    with gr.Row():
        opponent = control(GopsMatchRequest, "opponent", elem_id="gops-opponent")
        sims = control(GopsMatchRequest, "simulations")
        seed = control(GopsMatchRequest, "seed", widget="number", elem_id="gops-seed")
        new_btn = gr.Button("New game", variant="primary", elem_id="gops-new")
        resign_btn = gr.Button("Resign", variant="stop", elem_id="gops-resign")
        stop = gr.Button("Stop the agent's search", variant="stop", elem_id="gops-stop")
    return SimpleNamespace(cards_n=cards_n, tie_rule=tie_rule, order=order, opponent=opponent, sims=sims, seed=seed,
                           new=new_btn, resign=resign_btn, stop=stop)


def build(run_dir: gr.State) -> None:
    """The GOPS sub-tab; ``run_dir``: the session's Improve run, whose best strategy the strategist plays."""
    with gr.Tab("GOPS"):
        match_state = gr.State(None)  # the id of the session's game; the game itself stays on the server
        s = _settings()
        board = gr.Markdown("Press **New game**.", elem_id="gops-board")
        gr.Markdown("Your hand — click a card to bid it:")
        with gr.Row(elem_id="gops-hand"):
            card_buttons = [gr.Button(str(k), visible=False, min_width=40, elem_id=f"gops-card-{k}")
                            for k in range(1, MAX_CARDS + 1)]
        # the API's card (/gops_play): a person bids with the buttons above
        card = control(GopsPlayRequest, "card", visible=False)
        status = gr.Markdown(elem_id="gops-status")
        with gr.Row():
            history = gr.Dataframe(headers=HISTORY_HEADERS, label="Rounds", interactive=False, elem_id="gops-history")
            stats = gr.JSON(label="Agent's search for its last bid", elem_id="gops-stats")
        with gr.Row():
            log_file = gr.File(label=LOG_LABEL, elem_id="gops-log")
            gops_upload = gr.File(label=RELOAD_LABEL, file_types=[".json"], type="filepath", elem_id="gops-upload")

    outputs = [match_state, board, history, stats, log_file, *card_buttons, status]

    @user_errors
    @documented(GopsMatchRequest)
    @quiet
    def on_new(num_cards, tie_rule, prize_order, opponent, simulations, seed, strategy_run):
        """Deal a new GOPS game against the agent; returns your view of it (the prize up, your hand, the log).

        Args:
            strategy_run: The session's Improve run, whose best strategy the strategist opponent plays.
        """
        request = GopsMatchRequest(num_cards, tie_rule, prize_order, opponent, simulations,
                                   -1 if seed is None else seed, strategy_run=strategy_run)
        return _shown(gops.turn(*gops.start(request)))

    @user_errors
    @documented()
    @quiet
    def on_resign(match_id):
        """Resign the game: the agent wins, and the full log (with the seed) is offered.

        Args:
            match_id: The session's game.
        """
        return _shown(gops.turn(match_id, gops.resign_match(match_id)))

    @user_errors
    @documented()
    @quiet
    def on_reload(log):
        """A downloaded log back in play: your view's log resumes your game while the server holds it; a finished
        game's full log shows that game.

        Args:
            log: A GOPS log this tab offered (JSON).
        """
        if not log:
            return [gr.update()] * len(outputs)
        return _shown(gops.turn(*gops.reload(read_log(log))))

    s.new.click(on_new, inputs=[s.cards_n, s.tie_rule, s.order, s.opponent, s.sims, s.seed, run_dir],
                outputs=outputs, api_name="gops_new")
    _wire_play(match_state, card, card_buttons, s.stop, status, outputs)
    s.resign.click(on_resign, inputs=match_state, outputs=outputs, api_name="gops_resign")
    gops_upload.upload(on_reload, inputs=gops_upload, outputs=outputs, api_name="gops_reload")


def to_play(match_id, card) -> GopsPlayRequest:
    """Args:
        match_id: The session's game (held by the session).
    """
    return GopsPlayRequest(match_id, gops.parse_card(card))


def _show_play(request: GopsPlayRequest, t: GopsTurn, paths: dict) -> tuple:
    last = t.rounds[-1] if t.rounds else None
    said = (f"You bid {last['you']}, the agent {last['agent']}: "
            + {"you": "you win", "agent": "the agent wins", "tie": "a tie for"}[last["won_by"]]
            + f" the prize {last['prize']}.") if last else ""
    return (said, *_values(t, str(paths["log"])))


def _wire_play(match_state, card, card_buttons, stop, status, outputs) -> None:
    """A bid is the games_gops_play action: from a card button (each its own event; the first button's is the
    API's /gops_play with the card as a number), progress on the status line, Stop between search batches."""
    common = dict(outputs=outputs, status=status, to_request=to_play, show=_show_play, running=SEARCHING,
                  stopped=STOPPED, concurrency_id="games-gops", concurrency_limit=4)
    bind_action(GOPS_PLAY, trigger=card.release, inputs=[match_state, card], api_name="gops_play", **common)
    for k, btn in enumerate(card_buttons, start=1):
        bind_action(GOPS_PLAY, trigger=btn.click, inputs=[match_state, btn], api_name=f"gops_card_{k}",
                    api_visibility="private", **common)
    bind_stop(stop, GOPS_PLAY, status, api_name="gops_stop")
