"""Avalon's rules under random legal play (OpenSpiel's ``random_sim_test`` in spirit): many seeds, every
player count, with and without discussion, the invariants checked after every action."""

import json

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.games.avalon.game import MAX_REJECTIONS, TEAM_SIZES, AvalonConfig, AvalonGame, is_good
from backends.games.protocol import random_playthrough

HIDDEN = ("role", "quest_card")  # events only their own seat may see


class Invariants:
    """Checks the events added since the last call against the rules, and every seat's view."""

    def __init__(self):
        self.seen = 0
        self.rejections = 0

    def __call__(self, g: AvalonGame) -> None:
        n = g.n
        for e in g.events[self.seen:]:
            if e["type"] == "proposal":
                assert len(e["team"]) == TEAM_SIZES[n][e["quest"]] == len(set(e["team"]))
                assert all(0 <= t < n for t in e["team"])
            elif e["type"] == "vote_result":
                assert sorted(map(int, e["votes"])) == list(range(n))  # everyone voted, once
                assert e["approved"] == (sum(e["votes"].values()) * 2 > n)
                self.rejections = 0 if e["approved"] else self.rejections + 1
                assert self.rejections <= MAX_REJECTIONS
            elif e["type"] == "quest_card":
                assert e["player"] in g.team or g.phase != "quest"
                assert e["success"] or not is_good(g.roles[e["player"]])  # good never fails a quest
            elif e["type"] == "quest_result":
                cards = [c for c in g.events if c["type"] == "quest_card" and c["quest"] == e["quest"]]
                assert sorted(c["player"] for c in cards) == sorted(e["team"])
                fails = sum(not c["success"] for c in cards)
                assert e["fails"] == fails
                assert e["success"] == (fails < (2 if e["quest"] == 3 and n >= 7 else 1))
            elif e["type"] == "assassination":
                assert g.quest_results.count(True) == 3 and g.quest_results.count(False) < 3
                assert g.roles[e["assassin"]] == "Assassin"
            elif e["type"] == "game_end":
                assert g.phase == "end" and e["winner"] == g.winner
            elif e["type"] == "new_leader":
                assert e["rejections"] < MAX_REJECTIONS
        self.seen = len(g.events)
        assert len(g.quest_results) <= 5 and g.quest_results.count(True) <= 3 and g.quest_results.count(False) <= 3
        if g.is_terminal:
            self._ended(g)
        else:
            assert g.winner is None and g.current_players() and g.returns() == (0.0,) * n
        for seat in range(n):
            self._private(g, seat)

    def _ended(self, g: AvalonGame) -> None:
        fails, wins = g.quest_results.count(False), g.quest_results.count(True)
        killed = [e for e in g.events if e["type"] == "assassination"]
        if fails == 3:
            assert g.winner == "evil" and not killed
        elif wins == 3:
            assert len(killed) == 1 and g.winner == ("evil" if killed[0]["merlin_killed"] else "good")
        else:
            assert g.winner == "evil" and self.rejections == MAX_REJECTIONS
        assert g.current_players() == []
        assert g.returns() == tuple(1.0 if g.side(i) == g.winner else -1.0 for i in range(g.n))

    @staticmethod
    def _private(g: AvalonGame, seat: int) -> None:
        for e in g.events_for(seat):
            if e["type"] in HIDDEN:
                assert e["player"] == seat, f"seat {seat} sees {e['type']} of seat {e['player']}"
            if e["type"] == "game_end":
                assert g.is_terminal
        view = g.view(seat)
        assert view["role"] == g.roles[seat] and view["sees"] == g.info(seat)["sees"]
        if not g.is_terminal:
            others = {g.roles[i] for i in range(g.n) if i != seat} - {g.roles[seat]}
            text = json.dumps(view)
            # another seat's role only ever appears in the roles-in-game list, never tied to its seat
            assert '"roles"' not in text and all(f'"role": "{r}"' not in text for r in others)
            assert bool(g.legal_actions(seat)) == (seat in g.current_players())  # those who owe an action


CONFIGS = [AvalonConfig(n, discussion=d) for n in range(5, 11) for d in (False, True)] + [
    AvalonConfig(7, ("Merlin", "Percival", "Servant", "Servant", "Morgana", "Assassin", "Oberon")),
    AvalonConfig(8, ("Merlin", "Percival", "Servant", "Servant", "Servant", "Mordred", "Assassin", "Minion"),
                 discussion=False),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.num_players}p-{'talk' if c.discussion else 'quiet'}"
                         f"{'-special' if c.roles else ''}")
def test_random_legal_play_keeps_every_rule(config):
    rng = np.random.default_rng(config.num_players)
    endings = set()
    for seed in range(20):
        check = Invariants()
        game = random_playthrough(AvalonGame.new(config, seed=seed), rng, check)
        assert game.is_terminal and game.winner in ("good", "evil")
        endings.add(game.end_reason)
        assert AvalonGame.from_log(game.to_log()).events == game.events  # the log replays exactly
    assert len(endings) >= 2  # random play reaches different endings


def test_moves_the_rules_forbid_are_refused():
    g = AvalonGame.new(AvalonConfig(5, discussion=False), seed=3)
    leader = g.current_players()[0]
    with pytest.raises(InputError):
        g.apply({leader: [0]})  # wrong team size
    g.apply({leader: g.legal_actions(leader)[0]})
    voter = g.current_players()[0]
    with pytest.raises(InputError, match="True or False"):
        g.apply({voter: [0, 1]})  # a vote is due, not a team
    g.apply(dict.fromkeys(range(5), True))
    good = next(s for s in g.current_players() if is_good(g.roles[s]))
    assert g.legal_actions(good) == [True]
    with pytest.raises(InputError, match="Good players"):
        g.apply({good: False})
