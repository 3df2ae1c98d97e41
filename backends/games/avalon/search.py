"""Avalon agents that decide by search over their belief about the hidden roles.

For a decision (team, vote, quest card, assassination) the agent

1. forms its **belief**: every assignment of the hidden roles to the other seats that is consistent
   with its own information set (its role, whom it sees, the fail counts of past quests), weighted
   by how likely the public record is under that assignment (evil players back teams with evil on
   them, good players back teams they can trust, evil players accuse good ones in discussion) —
   the belief updates with every vote, proposal and accusation it sees;
2. samples worlds from it, rebuilds each as a full game by replaying the public record (the
   determinization), and
3. for every candidate action, plays each world forward with the rule agents as the default policy
   and takes the action with the best mean value for its side (determinized Monte-Carlo search,
   "perfect-information Monte Carlo"; the statistics of its last decision are kept). Without a
   ``heuristic`` the playout runs to the end (a win, plus a little for every quest that went the
   side's way); with one — STRATEGIST's value heuristic, ``avalon.heuristics`` — it stops when the
   current quest is decided and the heuristic scores the position (all leaves of a decision in one
   batch, so a sandboxed heuristic costs one call per decision).

Speech stays with the rule agents' fixed statements unless a ``speaker`` (``avalon.dialogue``: an
LLM following a dialogue guide) is given. Everything an agent uses comes from ``AvalonGame.view(seat)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import combinations, permutations

import numpy as np

from backends.common.progress import raise_if_cancelled
from backends.games.avalon.agents import RuleAgent, play_avalon
from backends.games.avalon.dialogue import accusations
from backends.games.avalon.game import AvalonConfig, AvalonGame, is_good

EVIL_BACKS_EVIL = (0.85, 0.35)  # P(approve) of an evil voter: team with evil / without
GOOD_BACKS_CLEAN = (0.45, 0.75)  # P(approve) of a good voter: team with evil / without
MAX_ENUMERATE = 5040  # enumerate assignments up to 7! permutations, sample beyond


def _records(view: dict, kind: str) -> list[dict]:
    return [e for e in view["events"] if e["type"] == kind]


def assignments(view: dict, rng: np.random.Generator, limit: int = 4000) -> list[tuple[str, ...]]:
    """Role assignments (roles[seat]) consistent with this seat's private information and the quests."""
    setup = _records(view, "setup")[0]
    roles_in_game = list(setup["roles_in_game"])
    me, n = view["seat"], view["num_players"]
    rest = list(roles_in_game)
    rest.remove(view["role"])
    others = [i for i in range(n) if i != me]
    if math.factorial(len(rest)) <= MAX_ENUMERATE:
        perms = set(permutations(rest))
    else:
        perms = {tuple(str(r) for r in rng.permutation(rest)) for _ in range(limit)}
    perms = sorted(perms)  # a set of role names iterates in string-hash order: sort, so seeds reproduce
    quests = [(set(e["team"]), e["fails"]) for e in _records(view, "quest_result")]
    want = view["sees"]
    out = []
    for perm in perms:
        roles = [None] * n
        roles[me] = view["role"]
        for seat, role in zip(others, perm, strict=True):
            roles[seat] = role
        roles = tuple(roles)
        if _sees(roles, me) != want:
            continue
        evil = {i for i, r in enumerate(roles) if not is_good(r)}
        if all(len(evil & team) >= fails for team, fails in quests):
            out.append(roles)
    return out


def _sees(roles: tuple[str, ...], seat: int) -> dict:
    probe = AvalonGame(AvalonConfig(len(roles), tuple(sorted(roles)), False), roles)
    return probe.info(seat)["sees"]


def log_likelihood(view: dict, roles: tuple[str, ...]) -> float:
    """log P(public votes and proposals | roles) under a simple model of how each side votes."""
    evil = {i for i, r in enumerate(roles) if not is_good(r)}
    ll = 0.0
    for e in _records(view, "vote_result"):
        dirty = bool(evil & set(e["team"]))
        for seat, approve in e["votes"].items():
            p = (EVIL_BACKS_EVIL if int(seat) in evil else GOOD_BACKS_CLEAN)[0 if dirty else 1]
            ll += math.log(p if approve else 1 - p)
    for e in _records(view, "proposal"):
        if e["leader"] in evil:
            ll += math.log(0.85 if evil & set(e["team"]) else 0.15)
    for e in _records(view, "speech"):  # accusations are weak evidence: evil players accuse the good
        for k in accusations(e["text"], len(roles)):
            if k != e["player"]:
                p = (0.1 if k in evil else 0.9) if e["player"] in evil else (0.6 if k in evil else 0.4)
                ll += math.log(p)
    return ll


def belief(view: dict, rng: np.random.Generator) -> tuple[list[tuple[str, ...]], np.ndarray]:
    worlds = assignments(view, rng)
    if not worlds:  # inconsistent record (cannot happen with a correct engine): fall back to the prior
        worlds = assignments({**view, "events": [e for e in view["events"] if e["type"] != "quest_result"]}, rng)
    ll = np.array([log_likelihood(view, w) for w in worlds])
    p = np.exp(ll - ll.max())
    return worlds, p / p.sum()


def evil_marginals(view: dict, rng: np.random.Generator | None = None) -> dict[int, float]:
    """P(seat is evil) under the belief (what the chat shows as the agent's suspicion)."""
    worlds, p = belief(view, rng or np.random.default_rng(0))
    return {i: float(sum(pi for w, pi in zip(worlds, p, strict=True) if not is_good(w[i])))
            for i in range(view["num_players"]) if i != view["seat"]}


def determinize(view: dict, roles: tuple[str, ...], discussion: bool = False) -> AvalonGame:
    """A full game with these roles whose public record is the view's (quest fails on evil members)."""
    setup = _records(view, "setup")[0]
    config = AvalonConfig(view["num_players"], tuple(setup["roles_in_game"]), discussion)
    game = AvalonGame(config, roles, None, leader=setup["leader"])
    game.phase = "proposal"
    my_cards = {e["quest"]: e["success"] for e in view["events"] if e["type"] == "quest_card"}
    for e in view["events"]:
        t = e["type"]
        if t == "proposal":
            game.propose(e["leader"], e["team"])
        elif t == "vote_result":
            for seat in range(game.n):
                game.vote(seat, e["votes"][str(seat)])
        elif t == "quest_result":
            mine = my_cards.get(e["quest"]) if view["seat"] in e["team"] else None
            left = e["fails"] - (1 if mine is False else 0)
            for seat in e["team"]:
                if seat == view["seat"] and mine is not None:
                    ok = mine
                elif not is_good(roles[seat]) and left > 0:
                    ok, left = False, left - 1
                else:
                    ok = True
                game.play_quest(seat, ok)
    return game


class SearchAgent(RuleAgent):
    """Rule agent for speech; every decision by determinized Monte-Carlo search over its belief."""

    name = "search"

    def __init__(self, seed: int = 0, worlds: int = 16, speaker=None, heuristic=None):
        super().__init__(seed)
        self.n_worlds = worlds
        self.speaker = speaker
        # (batch of state dicts, the job's Stop) -> [((good, evil), extra), ...], or None: full playouts
        self.heuristic = heuristic
        self.last_stats: dict = {}
        # called as ``on_world(worlds searched, worlds)`` after each sampled world of a decision: a turn played
        # for a person reports its search and may be stopped there (the callback raises)
        self.on_world: Callable[[int, int], None] | None = None
        # ``cancel`` (RuleAgent's, the job's Stop) is checked between two worlds and handed to the heuristic (a
        # sandboxed one is killed mid-call) and to the speaker (an LLM, between its tokens)

    def speak(self, view: dict) -> str:
        if self.speaker is not None:
            return self.speaker(view, evil_marginals(view, self.rng), self.cancel)
        return super().speak(view)

    def propose(self, view: dict) -> list[int]:
        n, size = view["num_players"], view["team_size"]
        return list(self._search(view, [list(t) for t in combinations(range(n), size)]))

    def vote(self, view: dict) -> bool:
        if view["rejections"] >= 4 and view["side"] == "good":
            return True
        return bool(self._search(view, [True, False]))

    def quest(self, view: dict) -> bool:
        if view["side"] == "good":
            return True
        return bool(self._search(view, [False, True]))

    def assassinate(self, view: dict) -> int:
        evil = {int(s) for s in view["sees"]} | {view["seat"]}
        candidates = [i for i in range(view["num_players"]) if i not in evil]
        worlds, p = belief(view, self.rng)
        merlin = {i: float(sum(pi for w, pi in zip(worlds, p, strict=True) if w[i] == "Merlin")) for i in candidates}
        # the vote record is the only evidence of Merlin: weigh the belief by it (as the rule agent does)
        rule = super().assassinate(view)
        merlin[rule] += 0.25
        best = max(merlin, key=merlin.get)
        self.last_stats = {"decision": "assassinate", "p_merlin": merlin, "choice": best}
        return int(best)

    # --- search ------------------------------------------------------------------------------
    def _search(self, view: dict, candidates: list):
        worlds, p = belief(view, self.rng)
        idx = self.rng.choice(len(worlds), size=self.n_worlds, p=p)
        me, side = view["seat"], view["side"]
        leaves: list[tuple[int, AvalonGame]] = []
        for i, k in enumerate(idx):
            raise_if_cancelled(self.cancel)  # a Stop of the job this search runs for ends it between two worlds
            if self.on_world is not None:
                self.on_world(i, len(idx))
            roles = worlds[k]
            base = determinize(view, roles)
            seed = int(self.rng.integers(1 << 30))  # common random numbers: every candidate meets the same rollouts
            for c, action in enumerate(candidates):
                game = copy_game(base)
                game.play(view["pending"], me, action)
                _play_out(game, seed, until_quest=len(base.quest_results) if self.heuristic else None)
                leaves.append((c, game))
        values = self._leaf_values([g for _, g in leaves], side)
        totals = np.zeros(len(candidates))
        for (c, _), v in zip(leaves, values, strict=True):
            totals[c] += v
        rates = totals / len(idx)
        best = int(np.flatnonzero(rates >= rates.max() - 1e-12)[self.rng.integers((rates >= rates.max() - 1e-12).sum())])
        self.last_stats = {"decision": view["pending"], "worlds": len(idx), "belief_support": len(worlds),
                           "leaf": "heuristic" if self.heuristic else "playout",
                           "values": {str(c): round(float(r), 3) for c, r in zip(candidates, rates, strict=True)},
                           "choice": str(candidates[best])}
        return candidates[best]

    def _leaf_values(self, games: list[AvalonGame], side: str) -> list[float]:
        if self.heuristic is None:
            return [rollout_value(g, side) for g in games]
        from backends.games.avalon.heuristics import state_dict

        open_ = [i for i, g in enumerate(games) if g.phase != "end"]
        values = [float(g.winner == side) for g in games]
        if open_:
            scored = self.heuristic([state_dict(games[i]) for i in open_], self.cancel)
            for i, ((good, evil), _) in zip(open_, scored, strict=True):
                values[i] = float(good if side == "good" else evil)
        return values


def _play_out(game: AvalonGame, seed: int, until_quest: int | None = None) -> AvalonGame:
    """Play on with rule agents: to the end, or (``until_quest``) until that many + 1 quests are decided."""
    agents = {i: RuleAgent(seed + i) for i in range(game.n)}
    return play_avalon(game, agents, None if until_quest is None else lambda g: len(g.quest_results) > until_quest)


def rollout_value(game: AvalonGame, side: str, shaping: float = 0.25) -> float:
    """1 for a win, plus a small reward per quest that went the side's way (a graded leaf value:
    with weak default policies most rollouts are lost, and the quest count still separates actions)."""
    mine = game.quest_results.count(side == "good")
    return float(game.winner == side) + shaping * mine / 3


def copy_game(game: AvalonGame) -> AvalonGame:
    g = AvalonGame(game.config, game.roles, None, leader=game.leader, quest=game.quest, rejections=game.rejections,
                   phase=game.phase, quest_results=list(game.quest_results), team=game.team, votes=dict(game.votes),
                   cards=dict(game.cards), spoken=list(game.spoken), events=list(game.events),
                   actions=list(game.actions))
    return g
