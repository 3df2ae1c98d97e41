"""Rule-based Avalon agents in the manner of AvalonBench's baselines. They decide only from their
own view (``AvalonGame.view(seat)``), never from the game object.

- Evil fail the quests they are on and approve teams that include an evil player they know.
- Merlin proposes and approves only teams without the evil players it sees.
- Servants keep every assignment of evil players consistent with the quest results (a quest with k
  fails had at least k evil members) and propose / approve the teams most likely to be all good.
- The Assassin names the good player whose votes best match someone who knew the evil team.
Their speeches are fixed statements true to their side that cite only the public record (nothing
about quests before one has been played, no private knowledge).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from backends.common.progress import CancelToken


def _quest_records(view: dict) -> list[tuple[list[int], int]]:
    return [(e["team"], e["fails"]) for e in view["events"] if e["type"] == "quest_result"]


def _vote_records(view: dict) -> list[tuple[list[int], dict[int, bool]]]:
    return [(e["team"], {int(k): v for k, v in e["votes"].items()}) for e in view["events"] if e["type"] == "vote_result"]


def consistent_evil_sets(view: dict) -> list[frozenset[int]]:
    """Every set of evil seats compatible with what this player knows."""
    n, k, me = view["num_players"], view["num_evil"], view["seat"]
    known_evil = {int(s) for s, what in view["sees"].items() if what == "evil"}
    others = [i for i in range(n) if i != me]
    out = []
    for combo in combinations(others if view["side"] == "good" else range(n), k):
        evil = frozenset(combo)
        if view["side"] == "evil" and me not in evil:
            continue
        if not known_evil <= evil:
            continue
        if all(len(evil & set(team)) >= fails for team, fails in _quest_records(view)):
            out.append(evil)
    return out or [frozenset(c) for c in combinations(others, k)]


def p_all_good(team, evil_sets: list[frozenset[int]]) -> float:
    team = set(team)
    return sum(not (team & e) for e in evil_sets) / len(evil_sets)


class RuleAgent:
    name = "rule"
    # the Stop of the job this agent plays for (set by whoever runs it); a rule agent decides at once and needs
    # none, a search agent (``avalon.search``) checks it between its sampled worlds
    cancel: CancelToken | None = None

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def act(self, view: dict):
        """The action for ``view['pending']``: text, team, bool or target seat."""
        return getattr(self, view["pending"])(view)

    # --- decisions ---------------------------------------------------------------------------------

    def speak(self, view: dict) -> str:
        """A statement that cites only the public record (so it is true of it) and is true to the side."""
        quests = [e for e in view["events"] if e["type"] == "quest_result"]
        if not quests:
            return "I am loyal to Arthur. No quest has been played yet; let us choose the first team with care."
        last, number = quests[-1], quests[-1]["quest"] + 1
        if view["side"] == "evil":
            if last["success"]:
                return f"I am loyal to Arthur. Quest {number} succeeded; that team earned our trust, let us keep it."
            partners = {int(s) for s in view["sees"]} | {view["seat"]}
            blamed = [i for i in last["team"] if i not in partners]
            if not blamed:
                return f"I am loyal to Arthur. Quest {number} failed; let us not send that team again."
            return f"I am loyal to Arthur. Quest {number} failed, so I do not trust player {blamed[0]}."
        if not any(e["fails"] for e in quests):
            return "I am loyal to Arthur. Every quest so far has succeeded; no one has given me a reason for doubt."
        public = {**view, "sees": {}}  # the quests say this much to anyone: cite nothing private
        evil_sets = consistent_evil_sets(public)
        suspicion = {i: sum(i in e for e in evil_sets) / len(evil_sets) for i in range(view["num_players"]) if i != view["seat"]}
        worst = max(suspicion, key=suspicion.get)
        return f"I am loyal to Arthur. From the failed quests so far I trust player {worst} the least."

    def propose(self, view: dict) -> list[int]:
        n, size, me = view["num_players"], view["team_size"], view["seat"]
        if view["side"] == "evil":
            others = [i for i in range(n) if i != me and str(i) not in view["sees"]]
            return sorted([me, *self.rng.choice(others, size - 1, replace=False).tolist()])
        evil_sets = consistent_evil_sets(view)
        teams = [t for t in combinations(range(n), size) if me in t]
        scores = np.array([p_all_good(t, evil_sets) for t in teams])
        best = np.flatnonzero(scores >= scores.max() - 1e-12)
        return list(teams[int(self.rng.choice(best))])

    def vote(self, view: dict) -> bool:
        team = set(view["team"])
        if view["rejections"] >= 4:
            return True  # a fifth rejection loses the game for good; evil approve anyway
        if view["side"] == "evil":
            known = {int(s) for s in view["sees"]} | {view["seat"]}
            return bool(team & known)
        if view["role"] == "Merlin":
            return not (team & {int(s) for s in view["sees"]})
        evil_sets = consistent_evil_sets(view)
        n, size = view["num_players"], view["team_size"]
        best = max(p_all_good(t, evil_sets) for t in combinations(range(n), size))
        return p_all_good(team, evil_sets) >= best - 1e-12

    def quest(self, view: dict) -> bool:
        return view["side"] == "good"

    def assassinate(self, view: dict) -> int:
        evil = {int(s) for s in view["sees"]} | {view["seat"]}
        candidates = [i for i in range(view["num_players"]) if i not in evil]
        score = dict.fromkeys(candidates, 0.0)
        for team, votes in _vote_records(view):
            dirty = bool(set(team) & evil)
            for i in candidates:
                score[i] += 1.0 if votes.get(i) == (not dirty) else 0.0
        best = max(score.values())
        return int(self.rng.choice([i for i in candidates if score[i] == best]))


def play_avalon(game, agents: dict[int, RuleAgent], stop=None):
    """Run a game to its end (or until ``stop(game)``) with one agent per seat; each agent sees only its
    own view."""
    while game.phase != "end" and not (stop and stop(game)):
        action, seats = game.pending()
        seat = seats[0]
        choice = agents[seat].act(game.view(seat))
        game.play(action, seat, choice)
    return game
