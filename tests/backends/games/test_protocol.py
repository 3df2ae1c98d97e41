"""Both games implement the small game protocol; the generic STRATEGIST loop names no game."""

import re
from pathlib import Path

import numpy as np
import pytest

from backends.games import domains
from backends.games.avalon.agents import RuleAgent
from backends.games.avalon.game import AvalonConfig, AvalonGame
from backends.games.gops.agents import GreedyAgent, MCTSAgent, RandomAgent
from backends.games.gops.game import GopsConfig, GopsState
from backends.games.protocol import play, random_playthrough

ROOT = Path(__file__).resolve().parents[3]


def test_gops_agents_bid_the_same_from_the_view_alone():
    """The view hides the unrevealed prizes' order; the agents bid the same from it as from the full state."""
    s = GopsState.new(GopsConfig(8), seed=5).apply({0: 3, 1: 4}).apply({0: 8, 1: 1})
    for agent in (GreedyAgent(), RandomAgent(), MCTSAgent(simulations=200)):
        from_state = agent.act(s, 1, np.random.default_rng(3))
        agent.rng = np.random.default_rng(3)
        assert agent.act(s.view(1)) == from_state
    rebuilt = GopsState.from_view(s.view(0))
    assert rebuilt.scores == s.scores and rebuilt.prize == s.prize and rebuilt.hand(1) == s.hand(1)


def test_both_games_play_through_the_protocol():
    gops = play(GopsState.new(GopsConfig(6), seed=1), {0: GreedyAgent(), 1: RandomAgent()})
    assert gops.is_terminal and gops.current_players() == [] and sum(gops.returns()) == 0
    avalon = play(AvalonGame.new(AvalonConfig(6, discussion=True), seed=2), {i: RuleAgent(i) for i in range(6)})
    assert avalon.is_terminal and avalon.winner in ("good", "evil")
    assert sorted(set(avalon.returns())) == [-1.0, 1.0]


def test_gops_random_legal_play_keeps_the_scores():
    rng = np.random.default_rng(0)
    for seed in range(50):
        def check(s):
            assert sum(s.scores) + s.pot == pytest.approx(sum(s.prizes[: s.round]) - _discarded(s))
        end = random_playthrough(GopsState.new(GopsConfig(5, "carry" if seed % 2 else "discard"), seed=seed), rng,
                                 check)
        assert end.round == 5


def _discarded(s: GopsState) -> float:
    """Prize points nobody scored: ties under the discard rule."""
    if s.config.tie_rule == "carry":
        return 0.0
    return float(sum(p for p, (a, b) in zip(s.prizes, s.bids, strict=False) if a == b))


def test_the_generic_loop_names_no_game():
    """Only the domain registry names the games: a new game is one line there and a folder of its own."""
    names = "|".join(domains.games())
    for path in (ROOT / "backends" / "games" / "strategist").glob("*.py"):
        text = path.read_text()
        assert not re.search(rf"\b({names})\b", text, re.IGNORECASE), f"{path.name} names a game"
        assert "backends.games.gops" not in text and "backends.games.avalon" not in text
    for game in domains.games():
        cls = domains.domain_class(game)
        assert cls.game == game and cls.parts and domains.shipped_library(game).exists()
