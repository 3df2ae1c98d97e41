"""The Strategy Games capability's actions (``backends.common.action``): what the Improve tab's *Run /
continue*, the API, ``iclr25-studio games improve`` and a run card's replay run. Torch-free to import.

The games themselves (GOPS, Avalon) are turn by turn, each move a quick call on a game kept on the server
(``match_store``); only the improvement run is long work."""

from __future__ import annotations

from backends.common.action import Action

from .requests import ImproveRequest


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

ACTIONS = (IMPROVE,)
