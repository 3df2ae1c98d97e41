"""Strategy Games tab (STRATEGIST): play GOPS against a search agent by clicking cards, Avalon with agents
in a chat, and improve the strategies they play. One module per part (``gops``, ``avalon``, ``improve``),
each wiring its components to one backend call per action.

Hidden means hidden: a game lives on the server (``backends.games.match_store``); the session holds only
its id, and what reaches the page, a download or an API result is the player's view until the game
is over — then the full log (all roles, the agents' reasoning, the whole deck, the seed).
"""

from __future__ import annotations

import gradio as gr

from app.tabs import TabSpec


def build(demo: gr.Blocks) -> None:
    from app.tabs.games import avalon, gops, improve

    gr.Markdown(
        "**STRATEGIST** (ICLR 2025) improves game strategies with an LLM and Monte-Carlo tree search through "
        "self-play. Here: play **GOPS** (Game of Pure Strategy) against a search agent — both of you bid a card "
        "for the prize at once; the higher card wins it. The agent never sees your card before it bids."
    )
    run_dir = gr.State(None)  # the Improve tab's run: its best strategy plays in GOPS and Avalon
    gops.build(run_dir)
    avalon.build(run_dir)
    improve.build(run_dir)


TAB = TabSpec(name="games", title="Strategy Games", build=build)
