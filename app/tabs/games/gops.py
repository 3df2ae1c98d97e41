"""Strategy Games → GOPS: play against a search agent by clicking cards. The game lives on the server
(``backends.games.gops.match``); the session holds only its id, and the page gets the player's view
until the game is over."""

from __future__ import annotations

import gradio as gr

from app.components.errors import user_errors
from app.tabs.games.common import LOG_LABEL, RELOAD_LABEL, quiet, seed_value, write_log
from backends.games.gops import match as gops
from backends.games.gops.match import OPPONENTS, GopsMatch, GopsMatchRequest
from backends.games.logs import read_log

MAX_CARDS = 13
HISTORY_HEADERS = ["round", "prize", "you", "agent", "won by"]


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
    return [match_id, _board(match), _history(match), last, write_log("gops", gops.offered_log(match, match_id)),
            *cards]



def build(run_dir: gr.State) -> None:
    """The GOPS sub-tab; ``run_dir``: the session's Improve run, whose best strategy the strategist plays."""
    with gr.Tab("GOPS"):
        match_state = gr.State(None)  # the id of the session's game; the game itself stays on the server
        with gr.Row():
            cards_n = gr.Slider(3, MAX_CARDS, value=6, step=1, label="Cards per suit (13 = standard)",
                                elem_id="gops-cards",
                                info="Cards per suit: fewer makes a shorter game and a quicker search.")
            tie_rule = gr.Radio(["discard", "carry"], value="discard", label="Ties",
                                info="discard: nobody scores (OpenSpiel); carry: points go to the next round's winner")
            order = gr.Radio(["random", "descending", "ascending"], value="random", label="Prize order",
                             info="The order the prize cards are turned up: random (the game), or fixed for practice.")
        with gr.Row():
            opponent = gr.Dropdown(list(OPPONENTS), value="mcts", label="Opponent", elem_id="gops-opponent",
                                   info="mcts = MCTS with the hand-written value heuristic at the leaves; mcts-learning "
                                        "= the same, modelling how you bid from your revealed bids this game; "
                                        "strategist = MCTS with the best strategy of your Improve run (else the "
                                        "shipped run's)")
            sims = gr.Slider(100, 200_000, value=20_000, step=100, label="MCTS simulations per move",
                             info="≈1 M/s with the compiled heuristic; ≈50 k/s with an LLM-written one (sandboxed)")
            seed = gr.Number(-1, precision=0, minimum=-1, label="Seed (-1 = random)", elem_id="gops-seed",
                             info="Same seed → the same prize order and opponent; -1: a new one each game.")
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


    outputs = [match_state, board, history, stats, log_file, *card_buttons]

    @user_errors
    @quiet
    def on_new(n, tie, prize_order, opp, simulations, seed_v, improve_dir):
        req = GopsMatchRequest(int(n), tie, prize_order, opp, int(simulations), seed_value(seed_v),
                               strategy_run=improve_dir)
        return _outputs(*gops.start(req))

    @user_errors
    @quiet
    def on_card(match_id, label):
        return _outputs(match_id, gops.play(match_id, label))

    @user_errors
    @quiet
    def on_resign(match_id):
        return _outputs(match_id, gops.resign_match(match_id))

    @user_errors
    @quiet
    def on_gops_upload(path):
        if not path:
            return [gr.update()] * len(outputs)
        return _outputs(*gops.reload(read_log(path)))

    new_btn.click(on_new, inputs=[cards_n, tie_rule, order, opponent, sims, seed, run_dir], outputs=outputs,
                  api_name="gops_new")
    for k, btn in enumerate(card_buttons, start=1):
        btn.click(on_card, inputs=[match_state, btn], outputs=outputs,
                  api_name="gops_play" if k == 1 else None, api_visibility="public" if k == 1 else "private")
    resign_btn.click(on_resign, inputs=match_state, outputs=outputs, api_name="gops_resign")
    gops_upload.upload(on_gops_upload, inputs=gops_upload, outputs=outputs, api_name="gops_reload")
