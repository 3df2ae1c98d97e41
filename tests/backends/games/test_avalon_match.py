import json

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.games.avalon_match import (
    AvalonMatch,
    AvalonMatchRequest,
    act,
    human_turn,
    new_match,
    transcript,
)


def play_as_human(match: AvalonMatch, rng) -> AvalonMatch:
    while not match.over:
        action = human_turn(match)
        view = match.game.view(match.human)
        if action == "propose":
            value = sorted(rng.choice(view["num_players"], view["team_size"], replace=False).tolist())
        else:
            value = {"speak": "I am loyal.", "vote": True, "quest": True, "assassinate": 0}[action]
        match = act(match, action, value)
    return match


def test_a_servant_plays_to_the_end_and_sees_only_their_information():
    m = new_match(AvalonMatchRequest(5, "Servant", True, seed=2))
    assert m.game.roles[m.human] == "Servant"
    assert not any(line["kind"] == "reasoning" for line in transcript(m))  # private until the game ends
    m = play_as_human(m, np.random.default_rng(0))
    lines = transcript(m)
    assert lines[1]["text"].startswith(f"You are Player {m.human}: Loyal Servant")
    reasons = [line for line in lines if line["kind"] == "reasoning"]
    assert reasons and "sampled worlds" in reasons[0]["text"] + "".join(r["text"] for r in reasons)
    lines = [line for line in lines if line["kind"] != "reasoning"]
    assert lines[-1]["kind"] == "end"
    assert sum(line["kind"] == "speech" for line in lines) >= 5
    assert not any("Merlin" in line["text"] and line["kind"] == "info" and "You are" not in line["text"]
                   and "roles in play" not in line["text"] for line in lines[:-1])


def test_actions_out_of_turn_are_refused_and_logs_round_trip():
    m = new_match(AvalonMatchRequest(5, "Merlin", False, seed=1))
    want = human_turn(m)
    wrong = "vote" if want != "vote" else "propose"
    with pytest.raises(InputError, match=f"Now you should {want}"):
        act(m, wrong, True)
    again = AvalonMatch.from_json(m.to_json())
    assert again.game.events == m.game.events and again.human == m.human and again.agents == m.agents
    assert again.reasoning == m.reasoning
    with pytest.raises(InputError, match="Not an Avalon match"):
        AvalonMatch.from_json('{"human": 0}')


def test_role_must_exist_in_the_game():
    with pytest.raises(InputError, match="Percival"):
        new_match(AvalonMatchRequest(5, "Percival"))


def test_strategist_agents_play_with_a_strategy_and_carry_it_in_the_log():
    from backends.games.avalon_heuristics import BASELINE_SOURCE

    variant = BASELINE_SOURCE.replace("q = 0.5", "q = 0.45")  # not the baseline: runs in the shared sandbox
    strategy = {"name": "s001: test", "source": variant, "guide": None}
    match = new_match(AvalonMatchRequest(5, "Servant", False, 4, "strategist", strategy))
    match = play_as_human(match, np.random.default_rng(0))
    assert match.over and any(r["stats"].get("leaf") == "heuristic" for r in match.reasoning)
    again = AvalonMatch.from_json(match.to_json())
    assert again.strategy == strategy and again.game.winner == match.game.winner


def test_strategist_agents_refuse_missing_or_hostile_strategies():
    with pytest.raises(InputError, match="need a strategy"):
        new_match(AvalonMatchRequest(5, "Servant", False, 0, "strategist"))
    hostile = {"name": "x", "source": "import os\ndef evaluate_state(s):\n    return (0, 0), {}\n"}
    with pytest.raises(InputError, match="refused"):
        new_match(AvalonMatchRequest(5, "Servant", False, 0, "strategist", hostile))
    match = new_match(AvalonMatchRequest(5, "Servant", False, 0, "search"))
    data = json.loads(match.to_json()) | {"agents": "strategist", "strategy": hostile}
    with pytest.raises(InputError, match="refused"):
        AvalonMatch.from_json(json.dumps(data))
