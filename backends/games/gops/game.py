"""GOPS (Game of Pure Strategy, "Goofspiel"): the engine.

Each player holds cards 1..N; a shuffled (or ordered) prize deck of 1..N is turned up one card a
round; both players bid a card at once, sealed; the higher bid wins the prize. Ties follow one of
two rules: ``discard`` (OpenSpiel's goofspiel: nobody scores the prize) or ``carry`` (the STRATEGIST
paper's engine: the prize's points carry over to the next round's winner). Each player sees the
prizes and both players' past bids, never the opponent's sealed bid of the current round.

States are immutable, JSON-serialisable and replayable from their history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

import numpy as np

from backends.common.errors import InputError
from backends.games.protocol import GameType

TieRule = Literal["discard", "carry"]
PrizeOrder = Literal["random", "descending", "ascending"]


@dataclass(frozen=True)
class GopsConfig:
    num_cards: int = 13
    tie_rule: TieRule = "discard"
    prize_order: PrizeOrder = "random"

    def __post_init__(self):
        if not isinstance(self.num_cards, int) or not 3 <= self.num_cards <= 13:
            raise InputError(f"GOPS needs 3 to 13 cards per suit, got {self.num_cards!r}.")
        if self.tie_rule not in ("discard", "carry"):
            raise InputError(f"Tie rule must be 'discard' or 'carry', got {self.tie_rule!r}.")
        if self.prize_order not in ("random", "descending", "ascending"):
            raise InputError(f"Prize order must be random, descending or ascending, got {self.prize_order!r}.")

    def prize_deck(self, seed: int | None) -> tuple[int, ...]:
        cards = list(range(1, self.num_cards + 1))
        if self.prize_order == "descending":
            return tuple(reversed(cards))
        if self.prize_order == "ascending":
            return tuple(cards)
        return tuple(int(c) for c in np.random.default_rng(seed).permutation(cards))


@dataclass(frozen=True)
class GopsState:
    game_type: ClassVar[GameType] = GameType("gops", "Game of Pure Strategy (Goofspiel)", "zero_sum", -1.0, 1.0)
    config_type: ClassVar[type] = GopsConfig
    config: GopsConfig
    prizes: tuple[int, ...]  # the whole prize deck, in the order it is turned up
    bids: tuple[tuple[int, int], ...] = ()  # (bid of player 0, bid of player 1) per finished round
    scores: tuple[float, float] = (0.0, 0.0)
    pot: float = 0.0  # carried-over prize points (tie_rule="carry")
    seed: int | None = field(default=None, compare=False)

    @classmethod
    def new(cls, config: GopsConfig | None = None, seed: int | None = 0, prizes: tuple[int, ...] | None = None) -> GopsState:
        config = config or GopsConfig()
        deck = tuple(prizes) if prizes is not None else config.prize_deck(seed)
        if sorted(deck) != list(range(1, config.num_cards + 1)):
            raise InputError(f"The prize deck must hold each card 1..{config.num_cards} once, got {list(deck)}.")
        return cls(config, deck, seed=seed)

    @property
    def num_players(self) -> int:
        return 2

    @property
    def round(self) -> int:
        return len(self.bids)

    @property
    def is_terminal(self) -> bool:
        return self.round >= self.config.num_cards

    @property
    def prize(self) -> int | None:
        """The prize on the table this round (None when the game is over)."""
        return None if self.is_terminal else self.prizes[self.round]

    @property
    def prizes_seen(self) -> tuple[int, ...]:
        return self.prizes[: self.round + (0 if self.is_terminal else 1)]

    def hand(self, player: int) -> tuple[int, ...]:
        played = {b[player] for b in self.bids}
        return tuple(c for c in range(1, self.config.num_cards + 1) if c not in played)

    def legal_actions(self, player: int) -> tuple[int, ...]:
        return () if self.is_terminal else self.hand(player)

    def current_players(self) -> list[int]:
        """Both players bid at once (a simultaneous move), until the last round is played."""
        return [] if self.is_terminal else [0, 1]

    def apply(self, actions: Mapping[int, int]) -> GopsState:
        """The round's two bids, as the game protocol has every game take them: ``apply({0: bid0, 1: bid1})``."""
        if self.is_terminal:
            raise InputError("The game is over.")
        if not isinstance(actions, Mapping) or set(actions) != {0, 1}:
            raise InputError("Both players bid at once: give the bids of players 0 and 1.")
        bid0, bid1 = actions[0], actions[1]
        for player, bid in ((0, bid0), (1, bid1)):
            if bid not in self.hand(player):
                raise InputError(f"Player {player} cannot bid {bid!r}; their hand is {list(self.hand(player))}.")
        value = self.prize + self.pot
        s0, s1 = self.scores
        pot = 0.0
        if bid0 > bid1:
            s0 += value
        elif bid1 > bid0:
            s1 += value
        elif self.config.tie_rule == "carry":
            pot = value
        return replace(self, bids=self.bids + ((int(bid0), int(bid1)),), scores=(s0, s1), pot=pot)

    def returns(self, kind: Literal["win_loss", "point_difference", "total_points"] = "win_loss") -> tuple[float, float]:
        s0, s1 = self.scores
        if kind == "point_difference":
            return (s0 - s1, s1 - s0)
        if kind == "total_points":
            return (s0, s1)
        return (float(np.sign(s0 - s1)), float(np.sign(s1 - s0)))

    def observation(self, player: int) -> dict:
        """What ``player`` knows: everything but the opponent's hand is derivable, nothing sealed."""
        return {
            "player": player, "num_cards": self.config.num_cards, "tie_rule": self.config.tie_rule,
            "round": self.round, "prize": self.prize, "prizes_seen": list(self.prizes_seen),
            "my_bids": [b[player] for b in self.bids], "opponent_bids": [b[1 - player] for b in self.bids],
            "my_hand": list(self.hand(player)), "opponent_hand": list(self.hand(1 - player)),
            "my_score": self.scores[player], "opponent_score": self.scores[1 - player], "pot": self.pot,
            "prizes_left": sorted(self.prizes[self.round + 1:]) if not self.is_terminal else [],
        }

    def view(self, player: int) -> dict:
        """The game protocol's information set: :meth:`observation`."""
        return self.observation(player)

    @classmethod
    def from_view(cls, view: dict) -> GopsState:
        """A state consistent with ``player``'s view: the unrevealed prizes in ascending order (their order is
        hidden; search re-deals them anyway). Scores and the pot are recomputed from the bids."""
        config = GopsConfig(int(view["num_cards"]), view["tie_rule"])
        state = cls.new(config, prizes=tuple(view["prizes_seen"]) + tuple(view["prizes_left"]))
        me = int(view["player"])
        for mine, theirs in zip(view["my_bids"], view["opponent_bids"], strict=True):
            state = state.apply({me: mine, 1 - me: theirs})
        return state

    # --- serialisation ------------------------------------------------------------------------------

    def to_log(self) -> str:
        """The game's log (its deck and bids): :meth:`from_log` replays it."""
        return json.dumps({"num_cards": self.config.num_cards, "tie_rule": self.config.tie_rule,
                           "prize_order": self.config.prize_order, "prizes": list(self.prizes),
                           "bids": [list(b) for b in self.bids], "seed": self.seed})

    @classmethod
    def from_log(cls, text: str) -> GopsState:
        """Rebuild a game by replaying its bids (so a tampered log cannot make an illegal state)."""
        try:
            data = json.loads(text)
            config = GopsConfig(int(data["num_cards"]), data.get("tie_rule", "discard"), data.get("prize_order", "random"))
            state = cls.new(config, seed=data.get("seed"), prizes=tuple(int(p) for p in data["prizes"]))
            for b0, b1 in data.get("bids", []):
                state = state.apply({0: int(b0), 1: int(b1)})
        except InputError:
            raise
        except (ValueError, KeyError, TypeError) as e:
            raise InputError(f"Not a GOPS game log: {e.__class__.__name__}: {e}") from None
        return state
