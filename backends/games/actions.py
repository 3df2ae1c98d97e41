"""The Strategy Games capability's actions (``backends.common.action``). Torch-free to import.

- ``games_improve``: the Improve tab's *Run / continue*, the API, ``iclr25-studio games improve`` and a run
  card's replay: more STRATEGIST iterations on a run.
- ``games_gops_play``: the person's bid in a GOPS game, then the agent's search (progress between its batches,
  Stop there).
- ``games_avalon_new`` / ``games_avalon_play``: a new Avalon table, or the person's action in one; then the
  agents act until it is the person's turn again (progress per agent and per world its search weighs, Stop
  there).

The games live on the server (``match_store``): a move's result is the person's view only (``GopsTurn``,
``AvalonTurn``), and the file it writes is the log the person may have now (their view while the game runs, the
full log once it is over). A stopped move leaves the game as it was.
"""

from __future__ import annotations

from pathlib import Path

from backends.common.action import Action

from .requests import AvalonMatchRequest, AvalonPlayRequest, GopsPlayRequest, ImproveRequest


def _load(request: ImproveRequest):
    from .improve import llm_for

    return llm_for(request)


def _improve(request: ImproveRequest, llm, cancel):
    from .improve import work

    return work(request, llm, cancel)


def _write(result, folder):
    from .improve import run_files

    return run_files(result, folder)


def _summary(result) -> dict:
    from .improve import summary

    return summary(result)


# Not heavy: an LLM endpoint and CPU self-play, minutes long; the tab gives it a queue of its own so it
# never holds the shared "gpu" queue. The run folder is the action's output: a replay runs into --out.
IMPROVE = Action(
    name="games_improve", capability="games", request_type=ImproveRequest, load=_load, work=_improve,
    write=_write, summary=_summary, output_fields=("run_dir",), heavy=False,
    description="STRATEGIST: more iterations of LLM-improved strategies scored by self-play (a new run when the "
                "folder is empty).")


def _gops_play(request: GopsPlayRequest, _model, cancel):
    from .gops.match import play_turn

    return play_turn(request, cancel)


def _avalon_new(request: AvalonMatchRequest, _model, cancel):
    from .avalon.match import new_turn

    return new_turn(request, cancel)


def _avalon_play(request: AvalonPlayRequest, _model, cancel):
    from .avalon.match import play_turn

    return play_turn(request, cancel)


def _write_log(turn, folder: Path) -> dict[str, Path]:
    """The log the person may have now (their view, or the full log once the game is over)."""
    from .logs import write_log

    return {"log": write_log(Path(folder), (turn.log_name, turn.log_text))}


def _turn_summary(turn) -> dict:
    """What a move's run card says of it: only what the person may know."""
    return {"over": turn.over, "outcome": turn.outcome, "log": turn.log_name}


GOPS_PLAY = Action(
    name="games_gops_play", capability="games", request_type=GopsPlayRequest, work=_gops_play, write=_write_log,
    summary=_turn_summary, heavy=False,
    description="GOPS: bid a card from your hand; the agent bids on the same state, unaware of your card (its search "
                "reports progress and a Stop ends it, leaving the game as it was). Returns your view of the game.")
AVALON_NEW = Action(
    name="games_avalon_new", capability="games", request_type=AvalonMatchRequest, work=_avalon_new,
    write=_write_log, summary=_turn_summary, heavy=False,
    description="Avalon: deal a new table (you in one seat, agents in the others); the agents act until it is your "
                "turn. Returns your information set only.")
AVALON_PLAY = Action(
    name="games_avalon_play", capability="games", request_type=AvalonPlayRequest, work=_avalon_play,
    write=_write_log, summary=_turn_summary, heavy=False,
    description="Avalon: your action (speak, propose, vote, quest, assassinate); then the agents act until it is "
                "your turn again (a Stop leaves the game as it was before your action). Returns your information "
                "set only.")

ACTIONS = (IMPROVE, GOPS_PLAY, AVALON_NEW, AVALON_PLAY)
