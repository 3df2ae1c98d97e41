import re

import numpy as np

from backends.games.avalon.agents import RuleAgent, consistent_evil_sets, p_all_good, play_avalon
from backends.games.avalon.game import AvalonConfig, AvalonGame


def test_servant_reasons_from_quest_fails():
    view = {"num_players": 5, "num_evil": 2, "seat": 0, "side": "good", "role": "Servant", "sees": {},
            "events": [{"type": "quest_result", "team": [1, 2], "fails": 2}]}
    sets = consistent_evil_sets(view)
    assert sets == [frozenset({1, 2})]
    assert p_all_good([0, 3, 4], sets) == 1.0 and p_all_good([0, 1], sets) == 0.0


def test_merlin_rejects_teams_with_evil_it_sees_and_evil_fail_quests():
    g = AvalonGame.new(AvalonConfig(5, discussion=False), seed=4)
    merlin, evil = g.roles.index("Merlin"), [i for i in range(5) if g.side(i) == "evil"]
    g.propose(g.leader, sorted([evil[0], merlin]))
    assert RuleAgent().vote(g.view(merlin)) is False
    assert RuleAgent().vote(g.view(evil[1])) is True  # a team with a fellow evil player
    assert RuleAgent().quest(g.view(evil[0])) is False


def test_rule_bots_play_full_games_and_both_sides_win():
    wins = {"good": 0, "evil": 0}
    for seed in range(40):
        g = AvalonGame.new(AvalonConfig(5), seed=seed)
        play_avalon(g, {i: RuleAgent(seed * 10 + i) for i in range(5)})
        wins[g.winner] += 1
        assert g.phase == "end" and len([e for e in g.events if e["type"] == "speech"]) >= 5
    assert wins["good"] > 0 and wins["evil"] > 0


def test_agents_receive_only_their_own_information():
    g = AvalonGame.new(AvalonConfig(5), seed=1)
    servant = g.roles.index("Servant")
    view = g.view(servant)
    assert view["sees"] == {} and not any("roles" in e for e in view["events"])  # the seat map comes only at the end
    assert [e["player"] for e in view["events"] if e["type"] == "role"] == [servant]
    assert all(e["public"] or e["player"] == servant for e in view["events"])
    assert np.isin([e["type"] for e in view["events"] if not e["public"]], ["role", "quest_card"]).all()


def _play_first_quest(seed: int, fail: bool) -> AvalonGame:
    """A 5-player game (no discussion) through its first quest, which fails only if ``fail``."""
    g = AvalonGame.new(AvalonConfig(5, discussion=False), seed=seed)
    evil = [i for i in range(5) if g.side(i) == "evil"]
    good = [i for i in range(5) if g.side(i) == "good"]
    team = [evil[0], good[0]] if fail else good[:2]
    g.propose(g.leader, team)
    for seat in range(5):
        g.vote(seat, True)
    for seat in sorted(team):
        g.play_quest(seat, g.side(seat) == "good" or not fail)
    return g


def test_rule_agents_say_nothing_about_quests_before_one_is_played():
    g = AvalonGame.new(AvalonConfig(5, discussion=True), seed=3)
    for seat in range(5):
        text = RuleAgent(seat).speak(g.view(seat))
        assert "No quest has been played yet" in text
        assert "quest results" not in text and "trust player" not in text  # no evidence to cite yet


def test_rule_agents_cite_the_last_quest_as_it_went():
    ok = _play_first_quest(seed=5, fail=False)
    assert ok.quest_results == [True]
    for seat in range(5):
        text = RuleAgent(seat).speak(ok.view(seat))
        assert "failed" not in text and ("Quest 1 succeeded" in text or "Every quest so far has succeeded" in text)

    bad = _play_first_quest(seed=5, fail=True)
    assert bad.quest_results == [False]
    team = next(e["team"] for e in bad.events if e["type"] == "quest_result")
    evil = {i for i in range(5) if bad.side(i) == "evil"}
    for seat in range(5):
        text = RuleAgent(seat).speak(bad.view(seat))
        assert "succeeded" not in text
        accused = [int(k) for k in re.findall(r"player (\d+)", text)]
        if bad.side(seat) == "good":
            assert accused and accused[0] in team and accused[0] != seat  # a member of the failed team
        else:
            assert not set(accused) & evil  # never a partner (nor itself)
