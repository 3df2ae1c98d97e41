import json

import numpy as np
import pytest

from backends.common.errors import InputError
from backends.games.avalon.match import (
    AvalonMatch,
    AvalonMatchRequest,
    act,
    human_turn,
    new_match,
    offered_log,
    play,
    player_view,
    reload,
    start,
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
    from backends.games.avalon.heuristics import BASELINE_SOURCE

    variant = BASELINE_SOURCE.replace("q = 0.5", "q = 0.45")  # not the baseline: runs in the shared sandbox
    strategy = {"name": "s001: test", "source": variant, "guide": None}
    match = new_match(AvalonMatchRequest(5, "Servant", False, 4, "strategist", strategy))
    match = play_as_human(match, np.random.default_rng(0))
    assert match.over and any(r["stats"].get("leaf") == "heuristic" for r in match.reasoning)
    again = AvalonMatch.from_json(match.to_json())
    assert again.strategy == strategy and again.game.winner == match.game.winner


def test_strategist_agents_refuse_missing_or_hostile_strategies():
    with pytest.raises(InputError, match="need a strategy"):
        new_match(AvalonMatchRequest(5, "Servant", False, 0, "strategist", {"name": "no source"}))
    shipped = new_match(AvalonMatchRequest(5, "Servant", False, 0, "strategist"))  # none given: the shipped run's
    assert shipped.strategy["source"] and shipped.strategy["name"].startswith("s0")
    hostile = {"name": "x", "source": "import os\ndef evaluate_state(s):\n    return (0, 0), {}\n"}
    with pytest.raises(InputError, match="refused"):
        new_match(AvalonMatchRequest(5, "Servant", False, 0, "strategist", hostile))
    match = new_match(AvalonMatchRequest(5, "Servant", False, 0, "search"))
    data = json.loads(match.to_json()) | {"agents": "strategist", "strategy": hostile}
    with pytest.raises(InputError, match="refused"):
        AvalonMatch.from_json(json.dumps(data))


def _scripted_game(roles):
    """Seat 0 is a Servant in both deals; the public record is the same move for move."""
    from backends.games.avalon.game import AvalonConfig, AvalonGame

    g = AvalonGame.new(AvalonConfig(5, discussion=True), seed=9, roles=roles)
    for k in range(5):
        g.speak((g.leader + k) % 5, f"I am loyal ({k}).")
    team = sorted([g.leader, (g.leader + 1) % 5])
    g.propose(g.leader, team)
    for seat in range(5):
        g.vote(seat, True)
    for seat in team:
        g.play_quest(seat, True)
    return g


def test_the_players_view_does_not_depend_on_the_other_seats_roles():
    a = _scripted_game(("Servant", "Merlin", "Servant", "Assassin", "Minion"))
    b = _scripted_game(("Servant", "Minion", "Assassin", "Servant", "Merlin"))
    ma = AvalonMatch(a, 0, 9, "search", reasoning=[{"player": 1, "stats": {"p_merlin": {"0": 0.9}}}])
    mb = AvalonMatch(b, 0, 123, "search")
    assert player_view(ma) == player_view(mb)
    name, text = offered_log(ma, "id")
    assert name == "avalon_your_view.json" and text == offered_log(mb, "id")[1]
    events = json.loads(text)["events"]
    rest = json.dumps([{k: v for k, v in e.items() if k != "roles_in_game"} for e in events])  # public role list
    for hidden in ("Merlin", "Assassin", "Minion", "p_merlin", "reasoning", "seed", '"roles"'):
        assert hidden not in rest and hidden not in text.split('"events"')[0]
    assert [e["player"] for e in events if e["type"] == "role"] == [0]
    assert not any(e["type"] == "quest_card" and e["player"] != 0 for e in events)


def test_every_new_game_deals_afresh_unless_a_seed_is_given():
    matches = [new_match(AvalonMatchRequest(5, "Servant", False, agents="rule")) for _ in range(6)]
    assert len({m.seed for m in matches}) == 6 and len({m.game.roles for m in matches}) > 1
    fixed = [new_match(AvalonMatchRequest(5, "Servant", False, seed=3, agents="rule")) for _ in range(2)]
    assert fixed[0].game.roles == fixed[1].game.roles and fixed[0].seed == 3


def test_held_matches_offer_the_full_log_only_after_the_game_and_it_reloads_exactly():
    match_id, m = start(AvalonMatchRequest(5, "Servant", False, agents="rule"))
    rng = np.random.default_rng(0)
    while not m.over:
        name, text = offered_log(m, match_id)
        assert name == "avalon_your_view.json" and "reasoning" not in text
        action = human_turn(m)
        view = m.game.view(m.human)
        value = (sorted(rng.choice(5, view["team_size"], replace=False).tolist()) if action == "propose"
                 else {"vote": True, "quest": True}[action])
        m = play(match_id, action, value)
    assert reload(offered_log(m, match_id)[1])[0] != match_id  # once over, the file is the full log
    name, full = offered_log(m, match_id)
    assert name == "avalon_game.json" and json.loads(full)["seed"] == m.seed
    new_id, again = reload(full)
    assert again.game.events == m.game.events and transcript(again) == transcript(m) and again.over


def test_a_failing_strategy_does_not_echo_what_its_sandbox_saw():
    leaky = "def evaluate_state(state):\n    assert False, 'world: ' + str(state['roles'])\n"
    strategy = {"name": "leaky", "source": leaky, "guide": None}
    with pytest.raises(InputError) as err:
        match = new_match(AvalonMatchRequest(5, "Servant", False, 1, "strategist", strategy))
        play_as_human(match, np.random.default_rng(0))
    message = str(err.value)
    assert "sandbox" in message and not any(r in message for r in ("Merlin", "Assassin", "Minion", "world"))


def test_leaking_llm_speech_is_withheld_and_counted(monkeypatch):
    from backends.games.avalon import match as avalon_match
    from backends.games.avalon.dialogue import NEUTRAL_LINE, LLMSpeaker
    from backends.games.strategist.llm import LLMReply

    class Echo:
        name = "echo"

        def complete(self, messages, **kw):
            return LLMReply(messages[1]["content"], self.name)

    monkeypatch.setattr(avalon_match, "_speaker", lambda guides=None: LLMSpeaker(Echo(), guides))
    m = new_match(AvalonMatchRequest(5, "Servant", True, seed=2, agents="search+llm"))
    speeches = [e["text"] for e in m.game.events if e["type"] == "speech"]
    assert speeches and set(speeches) == {NEUTRAL_LINE}
    assert m.replaced_speeches == len(speeches)
    assert AvalonMatch.from_json(m.to_json()).replaced_speeches == m.replaced_speeches


def test_an_llm_endpoint_error_does_not_echo_the_agents_prompt(monkeypatch):
    from backends.games.avalon import match as avalon_match
    from backends.games.avalon.dialogue import LLMSpeaker
    from backends.games.strategist.llm import LLMError

    class Failing:
        name = "failing"

        def complete(self, messages, **kw):  # some servers quote the request they refuse
            raise LLMError(f"The LLM endpoint answered 400: bad request {messages[1]['content'][:200]}")

    monkeypatch.setattr(avalon_match, "_speaker", lambda guides=None: LLMSpeaker(Failing(), guides))
    with pytest.raises(InputError) as err:
        match = new_match(AvalonMatchRequest(5, "Merlin", True, seed=2, agents="search+llm"))
        act(match, "speak", "Hello.")  # if the person speaks first, the agents speak right after
    assert "language model failed" in str(err.value) and "role" not in str(err.value)


def test_a_log_of_the_wrong_shape_says_what_an_avalon_log_is():
    from backends.games.avalon.match import reload

    with pytest.raises(InputError, match="an Avalon log is a JSON object") as e:
        AvalonMatch.from_json("[1, 2]")
    assert "indices" not in str(e.value)
    with pytest.raises(InputError, match="it has no 'log' entry"):
        AvalonMatch.from_json('{"a": null}')
    with pytest.raises(InputError, match="That file is not an Avalon log"):
        reload("{")
