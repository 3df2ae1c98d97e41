import numpy as np
import pytest

from backends.games.gops.agents import (
    GreedyAgent,
    MCTSAgent,
    RandomAgent,
    play_game,
)
from backends.games.gops.game import GopsConfig, GopsState
from backends.games.gops.heuristics import baseline_heuristic


def win_rate(agent, opponent, games=40, cards=6, seed=0):
    rng = np.random.default_rng(seed)
    total = 0.0
    for g in range(games):
        seats = (agent, opponent) if g % 2 == 0 else (opponent, agent)
        end = play_game(seats, GopsState.new(GopsConfig(cards), seed=g), rng)
        total += (end.returns()[g % 2] + 1) / 2
    return total / games


def test_greedy_bids_the_prize_or_the_nearest_card():
    s = GopsState.new(GopsConfig(5, prize_order="descending")).apply({0: 5, 1: 1})  # prize now 4, player 0 lacks 5
    assert GreedyAgent().act(s, 0, np.random.default_rng(0)) == 4
    s = s.apply({0: 4, 1: 2})  # prize 3
    assert GreedyAgent().act(s, 1, np.random.default_rng(0)) == 3


def test_baseline_heuristic_counts_scores_and_card_ranks():
    s = GopsState.new(GopsConfig(3, prize_order="descending")).apply({0: 3, 1: 1})
    (v0, v1), info = baseline_heuristic(s)
    # p0 has 3 points and cards {1, 2} vs {2, 3}: rank by rank, p1's cards take both prizes 1 and 2
    assert (v0, v1) == (3.0, 3.0) and info["expected_p1"] == 3
    end = GopsState.new(GopsConfig(3, prize_order="descending")).apply({0: 3, 1: 1}).apply({0: 2, 1: 2}).apply({0: 1, 1: 3})
    assert baseline_heuristic(end)[0] == end.scores


def test_mcts_with_the_baseline_heuristic_beats_random():
    assert win_rate(MCTSAgent(simulations=150), RandomAgent()) >= 0.7


def test_mcts_does_not_use_the_order_of_unseen_prizes():
    """Hidden information: two deals that differ only in the unseen prizes give the same decision."""
    a = GopsState.new(GopsConfig(6), prizes=(4, 1, 2, 3, 5, 6)).apply({0: 2, 1: 5})
    b = GopsState.new(GopsConfig(6), prizes=(4, 1, 6, 5, 3, 2)).apply({0: 2, 1: 5})
    agent = MCTSAgent(simulations=200)
    assert agent.act(a, 0, np.random.default_rng(7)) == agent.act(b, 0, np.random.default_rng(7))
    assert agent.describe_last_move()["simulations"] == 200


def test_search_statistics_describe_the_last_move():
    agent = MCTSAgent(simulations=60)
    card = agent.act(GopsState.new(GopsConfig(5), seed=2), 1, np.random.default_rng(0))
    stats = agent.describe_last_move()
    assert stats["chosen"] == card and sum(stats["visits"]) == 60
    assert stats["cards"] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("budget", [{"simulations": 30}, {"seconds": 0.05}])
def test_budget_by_simulations_or_time(budget):
    agent = MCTSAgent(**{"simulations": 10**9, **budget}) if "seconds" in budget else MCTSAgent(**budget)
    agent.act(GopsState.new(GopsConfig(13), seed=0), 0, np.random.default_rng(0))
    assert agent.describe_last_move()["simulations"] >= 1
