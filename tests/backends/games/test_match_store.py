"""The server-side store of live matches: ids, copies, bounds, expiry and reloading logs."""

import json
from dataclasses import dataclass

import pytest

from backends.common.errors import InputError
from backends.games.match_store import RESUME_KEY, MatchStore


@dataclass
class Toy:
    moves: int = 0
    over: bool = False

    def to_json(self) -> str:
        return json.dumps({"moves": self.moves, "over": self.over})

    @classmethod
    def from_json(cls, text: str) -> "Toy":
        return cls(**json.loads(text))


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _move(toy: Toy) -> Toy:
    toy.moves += 1
    return toy


def test_matches_are_kept_by_unguessable_ids_and_a_refused_move_changes_nothing():
    store = MatchStore("Toy")
    a, b = store.add(Toy()), store.add(Toy())
    assert a != b and len(a) >= 20
    store.play(a, _move)
    assert store.get(a).moves == 1 and store.get(b).moves == 0

    def refused(toy):
        toy.moves = 99
        raise InputError("not now")

    with pytest.raises(InputError, match="not now"):
        store.play(a, refused)
    assert store.get(a).moves == 1  # the move worked on a copy
    with pytest.raises(InputError, match="Start a new game first"):
        store.get(None)


def test_the_store_is_bounded_and_matches_expire_with_a_clear_message():
    clock = Clock()
    store = MatchStore("Toy", capacity=3, ttl_s=60, clock=clock)
    ids = [store.add(Toy()) for _ in range(3)]
    store.get(ids[0])  # played recently: the least recently used is now ids[1]
    ids.append(store.add(Toy()))
    assert len(store) == 3
    with pytest.raises(InputError, match="no longer on the server.*Start a new game"):
        store.get(ids[1])
    store.get(ids[0])
    clock.t = 59
    store.play(ids[0], _move)  # a move keeps it alive
    clock.t = 100
    store.get(ids[0])
    with pytest.raises(InputError, match="no longer on the server"):
        store.get(ids[2])  # idle for 100 s > 60 s


def test_reload_resumes_from_a_players_view_and_rebuilds_only_finished_games():
    store = MatchStore("Toy")
    live = store.add(Toy(moves=2))
    view = json.dumps({"game": "toy", "moves": 2, RESUME_KEY: live})
    assert store.reload(view, Toy.from_json) == (live, store.get(live))
    with pytest.raises(InputError, match="not a Toy log"):
        store.reload(json.dumps({"game": "chess", RESUME_KEY: live}), Toy.from_json)
    with pytest.raises(InputError, match="no longer on the server"):
        store.reload(json.dumps({"game": "toy", RESUME_KEY: "forged"}), Toy.from_json)
    with pytest.raises(InputError, match="game in progress"):
        store.reload(Toy(moves=3).to_json(), Toy.from_json)  # a hand-written full log of a live game
    new_id, done = store.reload(Toy(moves=5, over=True).to_json(), Toy.from_json)
    assert new_id != live and store.get(new_id) == done == Toy(5, True)
    with pytest.raises(InputError, match="not JSON"):
        store.reload("{", Toy.from_json)


def test_json_nested_too_deep_is_not_a_log():
    with pytest.raises(InputError, match="not a Toy log: it is not JSON"):
        MatchStore("Toy").reload("[" * 100_000 + "]" * 100_000, Toy.from_json)
