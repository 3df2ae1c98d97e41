"""GOPS value heuristics as plain data in, numbers out — the form an LLM writes them in.

A heuristic is Python source defining ``evaluate_state(state) -> ((p0_value, p1_value), intermediate)``
where ``state`` is the dict of :func:`state_dict` (STRATEGIST's nine GOPS fields, named). It runs in the
sandbox (``backends/games/strategist/sandbox.py``): MCTS scores its leaves in batches through the sandbox's
``evaluate``; :func:`sandboxed_heuristic` gives one position's values (STRATEGIST's feedback). The
search compiles the hand-written baseline (``gops.search.baseline_value``, tested equal to this source).
"""

from __future__ import annotations

from collections.abc import Callable

from backends.common.progress import CancelToken
from backends.games.gops.game import GopsState
from backends.games.strategist.sandbox import SandboxedFunction, load_trusted

# A value heuristic maps a state to the expected final scores of both players (plus named
# intermediate values, for STRATEGIST's feedback).
ValueHeuristic = Callable[[GopsState], tuple[tuple[float, float], dict]]

BASELINE_SOURCE = '''
def evaluate_state(state):
    """Scores so far plus the remaining prizes, matched rank by rank to both hands (ties split)."""
    prizes = sorted(state["prizes_left"] + ([state["prize"]] if state["prize"] is not None else []))
    mine = sorted(state["p0_hand"])
    theirs = sorted(state["p1_hand"])
    v0 = state["pot"] / 2
    v1 = state["pot"] / 2
    for i in range(len(prizes)):
        if mine[i] > theirs[i]:
            v0 += prizes[i]
        elif theirs[i] > mine[i]:
            v1 += prizes[i]
        else:
            v0 += prizes[i] / 2
            v1 += prizes[i] / 2
    return (state["p0_score"] + v0, state["p1_score"] + v1), {"expected_p0": v0, "expected_p1": v1}
'''

STATE_DOC = """state is a dict:
  num_cards      cards per suit N (each player holds 1..N at the start)
  prize          the prize card on the table now (None once the game is over)
  prizes_played  prize cards already played, in order
  p0_played      cards player 0 has bid, in order;  p1_played likewise
  p0_score       player 0's points;  p1_score likewise
  prizes_left    prize cards still in the deck (not yet turned up), sorted
  p0_hand        cards player 0 still holds;  p1_hand likewise
  pot            points carried over from tied rounds (tie rule "carry"; else 0)
  tie_rule       "discard" or "carry"
Return ((expected final score of player 0, expected final score of player 1), dict of named intermediate values)."""


def state_dict(state: GopsState) -> dict:
    r = state.round
    return {
        "num_cards": state.config.num_cards, "prize": state.prize, "prizes_played": list(state.prizes[:r]),
        "p0_played": [b[0] for b in state.bids], "p1_played": [b[1] for b in state.bids],
        "p0_score": state.scores[0], "p1_score": state.scores[1],
        "prizes_left": sorted(state.prizes[r + 1:]) if not state.is_terminal else [],
        "p0_hand": list(state.hand(0)), "p1_hand": list(state.hand(1)), "pot": state.pot,
        "tie_rule": state.config.tie_rule,
    }


def sandboxed_heuristic(fn: SandboxedFunction, cancel: CancelToken | None = None) -> ValueHeuristic:
    """The sandboxed strategy's values for one position at a time (memoised: positions repeat); ``cancel``
    stops a call under way."""
    memo: dict = {}

    def heuristic(state: GopsState):
        key = (state.prizes[: state.round + 1], state.bids, state.pot, tuple(sorted(state.prizes[state.round + 1:])))
        if key not in memo:
            (v0, v1), extra = fn.evaluate([state_dict(state)], cancel)[0]
            memo[key] = ((v0, v1), extra)
        return memo[key]

    return heuristic


_baseline = load_trusted(BASELINE_SOURCE)


def baseline_heuristic(state: GopsState) -> tuple[tuple[float, float], dict]:
    """The hand-written baseline STRATEGIST starts from (the same source an LLM is shown and edits)."""
    return _baseline(state_dict(state))
