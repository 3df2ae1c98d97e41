"""One Avalon game as a plain-data task: a strategy's search agents hold one side, AvalonBench-style rule
agents the other. STRATEGIST scores Avalon strategies with these games (serially, in local processes
or as Ray tasks: ``backends.common.parallel.run_tasks``); the bench plays the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.common.progress import CancelToken
from backends.games.avalon.agents import RuleAgent, play_avalon
from backends.games.avalon.game import AvalonConfig, AvalonGame
from backends.games.avalon.heuristics import BASELINE_SOURCE, baseline_heuristic
from backends.games.avalon.search import SearchAgent


@dataclass(frozen=True)
class AvalonTask:
    side: str  # the side the strategy's search agents play: "good" or "evil"
    seed: int = 0
    num_players: int = 5
    worlds: int = 16  # sampled worlds per decision
    heuristic_source: str | None = None  # None: full playouts at the leaves (no heuristic)
    name: str = "strategy"


def heuristic_for(source: str | None, reuse: bool = False):
    """(batch heuristic, its sandbox to close or None): the baseline runs in-process, any other source
    sandboxed — in a long-lived shared sandbox with ``reuse`` (the app: one decision per call)."""
    if source is None:
        return None, None
    if source.strip() == BASELINE_SOURCE.strip():
        return baseline_heuristic, None
    from backends.games.strategist.sandbox import open_sandboxed

    return open_sandboxed(source, reuse)


def play_side(task: AvalonTask, speaker=None, cancel: CancelToken | None = None) -> dict:
    """Play one game; ``won`` is whether the strategy's side won. A strategy that fails in its sandbox
    ends the game with ``error`` instead. ``speaker`` (an ``LLMSpeaker``) gives the strategy's agents a
    voice in discussion — then the game has a discussion phase (the rule agents speak fixed lines). ``cancel``
    (the job's Stop, handed to the search agents) ends it between two sampled worlds (Cancelled)."""
    from backends.games.strategist.sandbox import SandboxError

    config = AvalonConfig(task.num_players, discussion=speaker is not None)
    game = AvalonGame.new(config, seed=task.seed)
    try:
        heuristic, sandbox = heuristic_for(task.heuristic_source)
    except SandboxError as e:
        return {"name": task.name, "side": task.side, "seed": task.seed, "error": str(e)}
    try:
        agents = {i: SearchAgent(task.seed * 31 + i, task.worlds, speaker, heuristic) if game.side(i) == task.side
                  else RuleAgent(task.seed * 31 + i) for i in range(game.n)}
        for agent in agents.values():
            agent.cancel = cancel
        play_avalon(game, agents)
    except SandboxError as e:
        return {"name": task.name, "side": task.side, "seed": task.seed, "error": str(e)}
    finally:
        if sandbox is not None:
            sandbox.close()
    return {"name": task.name, "side": task.side, "seed": task.seed, "winner": game.winner,
            "won": game.winner == task.side, "reason": game.end_reason, "quests": list(game.quest_results),
            "log": game.to_log()}
