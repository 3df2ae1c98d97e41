"""Avalon search agents: belief from the information set, determinization, legal full games."""

import numpy as np

from backends.games.avalon.agents import RuleAgent, play_avalon
from backends.games.avalon.game import AvalonConfig, AvalonGame, is_good
from backends.games.avalon.search import SearchAgent, assignments, belief, determinize, evil_marginals


def _game(seed=3):
    return AvalonGame.new(AvalonConfig(5, discussion=False), seed=seed)


def test_merlin_and_evil_know_the_evil_team_servants_do_not():
    g = _game()
    rng = np.random.default_rng(0)
    evil = {i for i in range(5) if g.side(i) == "evil"}
    merlin = g.roles.index("Merlin")
    for w in assignments(g.view(merlin), rng):
        assert {i for i, r in enumerate(w) if not is_good(r)} == evil
    servant = g.roles.index("Servant")
    sets = {frozenset(i for i, r in enumerate(w) if not is_good(r)) for w in assignments(g.view(servant), rng)}
    assert frozenset(evil) in sets and len(sets) == 6  # C(4, 2) pairs among the other four
    assert all(w[servant] == "Servant" for w in assignments(g.view(servant), rng))


def test_quest_fails_and_votes_update_the_belief():
    g = _game()
    agents = {i: RuleAgent(i) for i in range(5)}
    while g.phase != "end" and not any(not ok for ok in g.quest_results):
        seat = g.pending()[1][0]
        action = agents[seat].act(g.view(seat))
        g.play(g.pending()[0], seat, action)
    servant = g.roles.index("Servant")
    view = g.view(servant)
    failed = [e for e in view["events"] if e["type"] == "quest_result" and e["fails"]]
    if failed:  # every world puts at least `fails` evil players on the failed team
        team, fails = set(failed[0]["team"]), failed[0]["fails"]
        worlds, p = belief(view, np.random.default_rng(0))
        assert all(len({i for i, r in enumerate(w) if not is_good(r)} & team) >= fails for w in worlds)
        assert abs(p.sum() - 1) < 1e-9
    marg = evil_marginals(view)
    assert servant not in marg and abs(sum(marg.values()) - 2) < 1e-6  # two evil players in expectation


def test_determinization_replays_the_public_record():
    g = _game(5)
    play_avalon(g, {i: RuleAgent(i) for i in range(5)})
    seat = g.roles.index("Servant")
    view = g.view(seat)
    view["phase"] = "proposal"
    w = determinize(view, g.roles)
    assert w.quest_results == g.quest_results
    results = [(e["team"], e["fails"]) for e in w.events if e["type"] == "quest_result"]
    assert results == [(e["team"], e["fails"]) for e in g.events if e["type"] == "quest_result"]


def test_search_agents_play_legal_games_and_explain_their_last_decision():
    for seed in range(2):
        g = _game(seed)
        agents = {i: SearchAgent(i, worlds=4) if g.side(i) == "good" else RuleAgent(i) for i in range(5)}
        play_avalon(g, agents)
        assert g.winner in ("good", "evil")
        AvalonGame.from_log(g.to_log())  # every action was legal
        stats = [a.last_stats for a in agents.values() if isinstance(a, SearchAgent) and a.last_stats]
        assert stats and all("decision" in s for s in stats)
