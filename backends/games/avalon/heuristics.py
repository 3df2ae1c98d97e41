"""Avalon value heuristics as plain data in, numbers out — STRATEGIST's Avalon strategy, code part.

A heuristic is Python source defining ``evaluate_state(state) -> ((good_value, evil_value), intermediate)``:
each side's chance of winning from ``state``, the dict of :func:`state_dict` — one *determinized* world
(the search agent samples who holds which role from its belief, so the heuristic sees them all). The
search agent (``avalon.search.SearchAgent(heuristic=...)``) plays each candidate action forward with
the rule agents to the end of the current quest and scores that position with it; LLM-written
heuristics run only in the sandbox, the hand-written baseline in-process (:data:`baseline_heuristic`).
"""

from __future__ import annotations

from backends.games.avalon.game import TEAM_SIZES, AvalonGame, is_good
from backends.games.strategist.sandbox import load_trusted

BASELINE_SOURCE = '''
def evaluate_state(state):
    """P(good wins) = P(good completes three quests first) x P(the Assassin then misses Merlin)."""
    if state["winner"] == "good":
        return (1.0, 0.0), {"decided": 1.0}
    if state["winner"] == "evil":
        return (0.0, 1.0), {"decided": 1.0}
    need_success = 3 - state["successes"]
    need_fail = 3 - state["fails"]
    q = 0.5  # chance that a quest still to play succeeds
    p_quests = 1.0 if need_success <= 0 else 0.0
    if need_success > 0:
        for k in range(need_fail):  # good wins its last needed quest after k more failed ones
            p_quests += math.comb(need_success - 1 + k, k) * q ** need_success * (1 - q) ** k
    # Merlin is exposed when its votes follow the hidden truth more closely than other good players' do
    informed = {}
    for seat in state["good"]:
        informed[seat] = 0
        for v in state["votes"]:
            clean = len([s for s in v["team"] if s in state["evil"]]) == 0
            if v["approve"][seat] == clean:
                informed[seat] += 1
    p_found = 1.0 / len(state["good"])
    merlin = state["merlin"]
    if merlin is not None and len(state["good"]) > 1:
        lead = informed[merlin] - max(informed[s] for s in state["good"] if s != merlin)
        p_found = min(0.9, p_found + 0.1 * max(0, lead))
    else:
        p_found = 0.0
    good = p_quests * (1 - p_found)
    return (good, 1 - good), {"p_quests": p_quests, "p_merlin_found": p_found}
'''

STATE_DOC = """state is a dict (one sampled world: every seat's role is known here):
  num_players     5 to 10;  roles  the role of each seat (list);  good / evil  seats of each side (lists)
  merlin          Merlin's seat (None if not in play);  assassin  the Assassin's seat (or None)
  quest           index 0..4 of the quest being played;  team_sizes  players per quest (list of 5)
  fails_needed    fail cards that fail each quest (list of 5: 2 on quest 4 with 7+ players, else 1)
  quest_results   results so far, True = success;  successes / fails  their counts
  quests          past quests: [{"team": [seats], "fails": number of fail cards}, ...]
  votes           past team votes: [{"team": [seats], "approve": [bool per seat], "approved": bool}, ...]
  rejections      proposals rejected in this round (5 = evil wins);  leader  the seat proposing next
  phase           "proposal", "vote", "quest", "assassination" or "end";  winner  "good", "evil" or None
Return ((P(good wins), P(evil wins)), dict of named intermediate values)."""


def state_dict(game: AvalonGame) -> dict:
    """The position a heuristic scores: a full game (a determinized world) as plain data."""
    votes, quests = [], []
    for e in game.events:
        if e["type"] == "vote_result":
            votes.append({"team": list(e["team"]), "approve": [bool(e["votes"][str(i)]) for i in range(game.n)],
                          "approved": bool(e["approved"])})
        elif e["type"] == "quest_result":
            quests.append({"team": list(e["team"]), "fails": int(e["fails"])})
    roles = list(game.roles)
    return {
        "num_players": game.n, "roles": roles,
        "good": [i for i, r in enumerate(roles) if is_good(r)], "evil": [i for i, r in enumerate(roles) if not is_good(r)],
        "merlin": roles.index("Merlin") if "Merlin" in roles else None,
        "assassin": roles.index("Assassin") if "Assassin" in roles else None,
        "quest": game.quest, "team_sizes": list(TEAM_SIZES[game.n]),
        "fails_needed": [game.config.fails_needed(q) for q in range(5)],
        "quest_results": list(game.quest_results), "successes": game.quest_results.count(True),
        "fails": game.quest_results.count(False), "quests": quests, "votes": votes,
        "rejections": game.rejections, "leader": game.leader, "phase": game.phase, "winner": game.winner,
    }


_baseline = load_trusted(BASELINE_SOURCE)


def baseline_heuristic(states: list[dict], cancel=None) -> list:
    """The hand-written baseline over a batch of states, in-process (the same source an LLM edits; quick: it
    takes the batch heuristic's ``cancel`` and needs none)."""
    return [_baseline(s) for s in states]
