import numpy as np
import pytest

from backends.common.errors import InputError
from backends.games.avalon.game import AvalonConfig, AvalonGame


def play_randomly(game: AvalonGame, rng, fail_prob=0.7) -> AvalonGame:
    while game.phase != "end":
        action, seats = game.pending()
        seat = seats[0]
        if action == "speak":
            game.speak(seat, f"I am player {seat}.")
        elif action == "propose":
            game.propose(seat, rng.choice(game.n, game.config.team_size(game.quest), replace=False))
        elif action == "vote":
            game.vote(seat, bool(rng.random() < 0.6))
        elif action == "quest":
            game.play_quest(seat, game.side(seat) == "good" or rng.random() > fail_prob)
        elif action == "assassinate":
            game.assassinate(seat, int(rng.integers(game.n)))
    return game


def test_default_five_player_game_has_the_avalonbench_roles():
    g = AvalonGame.new(seed=3)
    assert sorted(g.roles) == ["Assassin", "Merlin", "Minion", "Servant", "Servant"]
    assert [g.config.team_size(q) for q in range(5)] == [2, 3, 2, 3, 3]


def test_information_sets_follow_the_roles():
    roles = ("Merlin", "Percival", "Servant", "Servant", "Servant", "Servant", "Assassin", "Morgana", "Mordred", "Oberon")
    cfg = AvalonConfig(10, roles=roles)
    g = AvalonGame.new(cfg, roles=roles)
    assert g.info(0)["sees"] == {"6": "evil", "7": "evil", "9": "evil"}  # Merlin: not Mordred
    assert g.info(1)["sees"] == {"0": "Merlin or Morgana", "7": "Merlin or Morgana"}
    assert g.info(2)["sees"] == {}
    assert g.info(6)["sees"] == {"7": "evil", "8": "evil"}  # evil see each other, not Oberon
    assert g.info(9)["sees"] == {}  # Oberon sees nobody
    # a player's view holds its own role event and no one else's
    private = [e for e in g.events_for(2) if not e["public"]]
    assert [e["player"] for e in private] == [2]


def test_five_rejections_in_a_round_give_evil_the_game():
    g = AvalonGame.new(AvalonConfig(5, discussion=False), seed=0)
    for _ in range(5):
        g.propose(g.leader, [0, 1])
        for s in range(5):
            g.vote(s, False)
    assert g.winner == "evil" and "rejected" in g.end_reason


def test_quest_four_needs_two_fails_with_seven_players():
    cfg = AvalonConfig(7, discussion=False)
    assert cfg.fails_needed(3) == 2 and cfg.fails_needed(2) == 1
    assert AvalonConfig(6).fails_needed(3) == 1


def test_good_cannot_fail_and_turns_are_enforced():
    g = AvalonGame.new(AvalonConfig(5, discussion=False), seed=1)
    good = next(i for i in range(5) if g.side(i) == "good")
    with pytest.raises(InputError, match="time to propose"):
        g.vote(0, True)
    other = (g.leader + 1) % 5
    with pytest.raises(InputError, match="cannot propose"):
        g.propose(other, [0, 1])
    with pytest.raises(InputError, match="team of 2"):
        g.propose(g.leader, [0, 1, 2])
    g.propose(g.leader, [good, (good + 1) % 5])
    for s in range(5):
        g.vote(s, True)
    with pytest.raises(InputError, match="must play Success"):
        g.play_quest(good, False)


def test_three_successes_lead_to_the_assassination():
    g = AvalonGame.new(AvalonConfig(5, discussion=False), seed=2)
    good = [i for i in range(5) if g.side(i) == "good"]
    for q in range(3):
        g.propose(g.leader, good[: g.config.team_size(q)])
        for s in range(5):
            g.vote(s, True)
        for s in good[: g.config.team_size(q)]:
            g.play_quest(s, True)
    assert g.phase == "assassination" and g.pending() == ("assassinate", [g.roles.index("Assassin")])
    g.assassinate(g.roles.index("Assassin"), g.roles.index("Merlin"))
    assert g.winner == "evil" and g.events[-1]["roles"]


def test_random_games_end_and_replay_identically():
    rng = np.random.default_rng(0)
    winners = set()
    for seed in range(60):
        n = 5 + seed % 6
        g = play_randomly(AvalonGame.new(AvalonConfig(n), seed=seed), rng)
        winners.add(g.winner)
        again = AvalonGame.from_log(g.to_log())
        assert again.winner == g.winner and again.events == g.events
    assert winners == {"good", "evil"}


def test_bad_configs_and_logs_are_clear_errors():
    with pytest.raises(InputError, match="5 to 10"):
        AvalonConfig(4)
    with pytest.raises(InputError, match="evil roles"):
        AvalonConfig(5, roles=("Merlin", "Servant", "Servant", "Servant", "Assassin"))
    for log in ('{"type": "nonsense"}', "[1, 2]", "[" * 100_000 + "]" * 100_000):
        with pytest.raises(InputError, match="Not an Avalon game log"):
            AvalonGame.from_log(log)
    g = play_randomly(AvalonGame.new(seed=5), np.random.default_rng(1))
    tampered = g.to_log().replace('"success": true', '"success": false')
    evil_seats = {i for i in range(5) if g.side(i) == "evil"}
    if any(f'"player": {s}, "success": true' in g.to_log() for s in set(range(5)) - evil_seats):
        with pytest.raises(InputError):
            AvalonGame.from_log(tampered)


def test_actions_apply_by_name_and_unknown_names_are_refused():
    g = AvalonGame.new(AvalonConfig(5, discussion=False), seed=0)
    action, seats = g.pending()
    g.play(action, seats[0], [0, 1])
    assert g.phase == "vote"
    with pytest.raises(InputError, match="Unknown action"):
        g.play("dance", 0, None)
