"""Strategy Games tab (STRATEGIST): play GOPS against a search agent by clicking cards."""

from __future__ import annotations

import json

import gradio as gr

from app.components.downloads import new_output_dir
from app.components.errors import user_errors
from app.tabs import TabSpec
from backends.common.errors import InputError
from backends.games.gops_match import OPPONENTS, GopsMatch, GopsMatchRequest, new_match, play_card, resign

MAX_CARDS = 13
HISTORY_HEADERS = ["round", "prize", "you", "agent", "won by"]


def _board(match: GopsMatch) -> str:
    s = match.state
    you, agent = s.scores
    lines = [f"### Prize: **{s.prize}**" if s.prize is not None else "### Game over",
             f"**You** {you:g} : {agent:g} **agent** ({match.request.opponent})"
             + (f" · pot {s.pot:g} carried over" if s.pot else "")
             + f" · round {min(s.round + 1, s.config.num_cards)}/{s.config.num_cards}"]
    if match.result:
        lines.append(f"**{match.result}**")
    return "  \n".join(lines)


def _history(match: GopsMatch) -> list[list]:
    rows = []
    for i, (b0, b1) in enumerate(match.state.bids):
        winner = "you" if b0 > b1 else "agent" if b1 > b0 else "tie"
        rows.append([i + 1, match.state.prizes[i], b0, b1, winner])
    return rows


def _outputs(match: GopsMatch):
    hand = set(match.state.hand(0)) if not match.over else set()
    cards = [gr.update(visible=k <= match.state.config.num_cards, interactive=k in hand,
                       variant="primary" if k in hand else "secondary") for k in range(1, MAX_CARDS + 1)]
    log_path = new_output_dir("gops") / "gops_game.json"
    log_path.write_text(json.dumps(json.loads(match.to_json()), indent=2))
    last = match.search[-1] if match.search else {}
    return [match.to_json(), _board(match), _history(match), last, str(log_path), *cards]


def _load(state_json: str | None) -> GopsMatch:
    if not state_json:
        raise InputError("Start a new game first.")
    return GopsMatch.from_json(state_json)


def build(demo: gr.Blocks) -> None:
    gr.Markdown(
        "**STRATEGIST** (ICLR 2025) improves game strategies with an LLM and Monte-Carlo tree search through "
        "self-play. Here: play **GOPS** (Game of Pure Strategy) against a search agent — both of you bid a card "
        "for the prize at once; the higher card wins it. The agent never sees your card before it bids."
    )
    with gr.Tab("GOPS"):
        match_state = gr.State(None)
        with gr.Row():
            cards_n = gr.Slider(3, MAX_CARDS, value=6, step=1, label="Cards per suit (13 = standard)",
                                elem_id="gops-cards")
            tie_rule = gr.Radio(["discard", "carry"], value="discard", label="Ties",
                                info="discard: nobody scores (OpenSpiel); carry: points go to the next round's winner")
            order = gr.Radio(["random", "descending", "ascending"], value="random", label="Prize order")
        with gr.Row():
            opponent = gr.Dropdown(list(OPPONENTS), value="mcts", label="Opponent",
                                   info="mcts = MCTS with the hand-written value heuristic at the leaves")
            sims = gr.Slider(10, 3000, value=300, step=10, label="MCTS simulations per move")
            seed = gr.Number(0, precision=0, minimum=0, label="Seed")
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
        log_file = gr.File(label="Game log (JSON)", elem_id="gops-log")

    outputs = [match_state, board, history, stats, log_file, *card_buttons]

    @user_errors
    def on_new(n, tie, prize_order, opp, simulations, seed_v):
        req = GopsMatchRequest(int(n), tie, prize_order, opp, int(simulations), int(seed_v or 0))
        return _outputs(new_match(req))

    @user_errors
    def on_card(state_json, label):
        return _outputs(play_card(_load(state_json), int(label)))

    @user_errors
    def on_resign(state_json):
        return _outputs(resign(_load(state_json)))

    new_btn.click(on_new, inputs=[cards_n, tie_rule, order, opponent, sims, seed], outputs=outputs, api_name="gops_new")
    for k, btn in enumerate(card_buttons, start=1):
        btn.click(on_card, inputs=[match_state, btn], outputs=outputs,
                  api_name="gops_play" if k == 1 else None, api_visibility="public" if k == 1 else "private")
    resign_btn.click(on_resign, inputs=match_state, outputs=outputs, api_name="gops_resign")


TAB = TabSpec(name="games", title="Strategy Games", build=build)
