"""The Resistance: Avalon, 5–10 players: the engine.

Official team sizes per quest and player count; quest 4 needs two fails with 7+ players; five rejected
proposals in one round hand evil the game; three successful quests lead to the assassination of
Merlin. Phases per round: discussion (every player speaks once, from the leader on), proposal by the
leader, a public vote, secret quest cards (only the number of fails is revealed), and at the end the
assassination. Each player only ever receives its own information set (:meth:`AvalonGame.info`).

Every action is recorded; the event log is JSON lines and :meth:`AvalonGame.from_log` rebuilds a game
from its actions, re-checking every rule.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from backends.common import jsontext
from backends.common.errors import InputError
from backends.games.protocol import GameType

ROLES = ("Merlin", "Percival", "Servant", "Assassin", "Morgana", "Mordred", "Oberon", "Minion")
GOOD_ROLES = {"Merlin", "Percival", "Servant"}
TEAM_SIZES = {5: (2, 3, 2, 3, 3), 6: (2, 3, 4, 3, 4), 7: (2, 3, 3, 4, 4), 8: (3, 4, 4, 5, 5),
              9: (3, 4, 4, 5, 5), 10: (3, 4, 4, 5, 5)}
NUM_EVIL = {5: 2, 6: 2, 7: 3, 8: 3, 9: 3, 10: 4}
DEFAULT_ROLES = {5: ("Merlin", "Servant", "Servant", "Assassin", "Minion")}
MAX_REJECTIONS = 5
Phase = Literal["discussion", "proposal", "vote", "quest", "assassination", "end"]


def is_good(role: str) -> bool:
    return role in GOOD_ROLES


def default_roles(n: int) -> tuple[str, ...]:
    if n in DEFAULT_ROLES:
        return DEFAULT_ROLES[n]
    evil = NUM_EVIL[n]
    return ("Merlin",) + ("Servant",) * (n - evil - 1) + ("Assassin",) + ("Minion",) * (evil - 1)


@dataclass(frozen=True)
class AvalonConfig:
    num_players: int = 5
    roles: tuple[str, ...] | None = None  # one per seat before shuffling; default: Merlin, Servants, Assassin, Minions
    discussion: bool = True

    def __post_init__(self):
        if self.num_players not in TEAM_SIZES:
            raise InputError(f"Avalon is played by 5 to 10 players, got {self.num_players!r}.")
        roles = self.role_list
        if len(roles) != self.num_players:
            raise InputError(f"{len(roles)} roles for {self.num_players} players.")
        unknown = [r for r in roles if r not in ROLES]
        if unknown:
            raise InputError(f"Unknown roles {unknown}; known: {', '.join(ROLES)}.")
        evil = sum(not is_good(r) for r in roles)
        if evil != NUM_EVIL[self.num_players]:
            raise InputError(f"{self.num_players} players need {NUM_EVIL[self.num_players]} evil roles, got {evil}.")
        for unique in ("Merlin", "Percival", "Assassin", "Morgana", "Mordred", "Oberon"):
            if roles.count(unique) > 1:
                raise InputError(f"There can be only one {unique}.")
        if "Percival" in roles and "Merlin" not in roles:
            raise InputError("Percival needs Merlin in the game.")

    @property
    def role_list(self) -> tuple[str, ...]:
        return tuple(self.roles) if self.roles is not None else default_roles(self.num_players)

    def team_size(self, quest: int) -> int:
        return TEAM_SIZES[self.num_players][quest]

    def fails_needed(self, quest: int) -> int:
        return 2 if quest == 3 and self.num_players >= 7 else 1


@dataclass
class AvalonGame:
    # +1 to each seat of the winning side, -1 to the others: the sides differ in size, so the sum is not 0
    game_type: ClassVar[GameType] = GameType("avalon", "The Resistance: Avalon", "general_sum", -1.0, 1.0)
    config_type: ClassVar[type] = AvalonConfig
    config: AvalonConfig
    roles: tuple[str, ...]  # roles[seat]
    seed: int | None = None
    leader: int = 0
    quest: int = 0  # index of the quest being played (0..4)
    rejections: int = 0  # rejected proposals in this round
    phase: Phase = "discussion"
    quest_results: list[bool] = field(default_factory=list)  # True = success
    team: tuple[int, ...] = ()
    votes: dict[int, bool] = field(default_factory=dict)
    cards: dict[int, bool] = field(default_factory=dict)
    spoken: list[int] = field(default_factory=list)
    winner: Literal["good", "evil"] | None = None
    end_reason: str = ""
    events: list[dict] = field(default_factory=list)
    actions: list[dict] = field(default_factory=list)

    # --- setup -------------------------------------------------------------------------------------

    @classmethod
    def new(cls, config: AvalonConfig | None = None, seed: int | None = 0, roles: tuple[str, ...] | None = None) -> AvalonGame:
        config = config or AvalonConfig()
        rng = np.random.default_rng(seed)
        perm = rng.permutation(config.num_players)  # drawn even when roles are given, so replays match
        if roles is None:
            roles = tuple(config.role_list[i] for i in perm)
        elif sorted(roles) != sorted(config.role_list):
            raise InputError("The seat roles must be a permutation of the configured roles.")
        leader = int(rng.integers(config.num_players))
        game = cls(config, tuple(roles), seed, leader=leader)
        game.phase = "discussion" if config.discussion else "proposal"
        game._event("setup", public=True, num_players=config.num_players, leader=leader,
                    team_sizes=list(TEAM_SIZES[config.num_players]), roles_in_game=sorted(config.role_list))
        for seat in range(config.num_players):
            game._event("role", public=False, player=seat, **game.info(seat))
        return game

    @property
    def n(self) -> int:
        return self.config.num_players

    @property
    def num_players(self) -> int:
        return self.n

    def side(self, seat: int) -> str:
        return "good" if is_good(self.roles[seat]) else "evil"

    def info(self, seat: int) -> dict:
        """What ``seat`` knows privately at the start: its role and whom it sees."""
        role = self.roles[seat]
        seen: dict[int, str] = {}
        if role == "Merlin":
            seen = {i: "evil" for i, r in enumerate(self.roles) if not is_good(r) and r != "Mordred"}
        elif role == "Percival":
            seen = {i: "Merlin or Morgana" for i, r in enumerate(self.roles) if r in ("Merlin", "Morgana")}
        elif not is_good(role) and role != "Oberon":
            seen = {i: "evil" for i, r in enumerate(self.roles) if not is_good(r) and r != "Oberon" and i != seat}
        return {"role": role, "side": self.side(seat), "sees": {str(k): v for k, v in sorted(seen.items())}}

    # --- whose turn --------------------------------------------------------------------------------

    def pending(self) -> tuple[str, list[int]]:
        """The action expected now and the seats that owe it."""
        if self.phase == "discussion":
            return "speak", [(self.leader + len(self.spoken)) % self.n]
        if self.phase == "proposal":
            return "propose", [self.leader]
        if self.phase == "vote":
            return "vote", [i for i in range(self.n) if i not in self.votes]
        if self.phase == "quest":
            return "quest", [i for i in self.team if i not in self.cards]
        if self.phase == "assassination":
            return "assassinate", [self.roles.index("Assassin")]
        return "none", []

    def _expect(self, action: str, seat: int) -> None:
        if self.phase == "end":
            raise InputError("The game is over.")
        want, seats = self.pending()
        if want != action:
            raise InputError(f"It is time to {want}, not to {action}.")
        if seat not in seats:
            raise InputError(f"Player {seat} cannot {action} now (waiting for {seats}).")

    # --- actions -----------------------------------------------------------------------------------

    def speak(self, seat: int, text: str) -> None:
        self._expect("speak", seat)
        text = str(text).strip()[:2000]
        self._act("speak", seat, text=text)
        self.spoken.append(seat)
        self._event("speech", public=True, player=seat, text=text, quest=self.quest)
        if len(self.spoken) == self.n:
            self.phase = "proposal"

    def propose(self, seat: int, team) -> None:
        self._expect("propose", seat)
        team = tuple(sorted(int(t) for t in team))
        size = self.config.team_size(self.quest)
        if len(team) != size or len(set(team)) != size or not all(0 <= t < self.n for t in team):
            raise InputError(f"Quest {self.quest + 1} needs a team of {size} different players (0..{self.n - 1}).")
        self._act("propose", seat, team=list(team))
        self.team = team
        self.votes = {}
        self.phase = "vote"
        self._event("proposal", public=True, leader=seat, team=list(team), quest=self.quest, attempt=self.rejections + 1)

    def vote(self, seat: int, approve: bool) -> None:
        self._expect("vote", seat)
        self._act("vote", seat, approve=bool(approve))
        self.votes[seat] = bool(approve)
        if len(self.votes) < self.n:
            return
        approved = sum(self.votes.values()) * 2 > self.n
        self._event("vote_result", public=True, votes={str(k): v for k, v in sorted(self.votes.items())},
                    approved=approved, team=list(self.team), quest=self.quest)
        if approved:
            self.cards = {}
            self.phase = "quest"
            return
        self.rejections += 1
        if self.rejections >= MAX_REJECTIONS:
            self._finish("evil", f"{MAX_REJECTIONS} proposals were rejected in one round")
            return
        self._next_leader()

    def play_quest(self, seat: int, success: bool) -> None:
        self._expect("quest", seat)
        if not success and is_good(self.roles[seat]):
            raise InputError("Good players must play Success on a quest.")
        self._act("quest", seat, success=bool(success))
        self.cards[seat] = bool(success)
        self._event("quest_card", public=False, player=seat, success=bool(success), quest=self.quest)
        if len(self.cards) < len(self.team):
            return
        fails = sum(not c for c in self.cards.values())
        ok = fails < self.config.fails_needed(self.quest)
        self.quest_results.append(ok)
        self._event("quest_result", public=True, quest=self.quest, team=list(self.team), fails=fails, success=ok)
        if self.quest_results.count(True) == 3:
            if "Assassin" in self.roles:
                self.phase = "assassination"
                self._event("assassination_phase", public=True)
            else:
                self._finish("good", "three quests succeeded")
            return
        if self.quest_results.count(False) == 3:
            self._finish("evil", "three quests failed")
            return
        self.quest += 1
        self.rejections = 0
        self._next_leader()

    def assassinate(self, seat: int, target: int) -> None:
        self._expect("assassinate", seat)
        if not 0 <= int(target) < self.n:
            raise InputError(f"Target must be a player 0..{self.n - 1}.")
        self._act("assassinate", seat, target=int(target))
        hit = self.roles[int(target)] == "Merlin"
        self._event("assassination", public=True, assassin=seat, target=int(target), merlin_killed=hit)
        self._finish("evil" if hit else "good", "the Assassin found Merlin" if hit else "Merlin survived the assassination")

    def play(self, action: str, seat: int, value) -> None:
        """One action by name, as :meth:`pending` names them: speak, propose, vote, quest, assassinate."""
        methods = {"speak": self.speak, "propose": self.propose, "vote": self.vote, "quest": self.play_quest,
                   "assassinate": self.assassinate}
        if action not in methods:
            raise InputError(f"Unknown action {action!r}.")
        methods[action](seat, value)

    # --- the game protocol (backends.games.protocol) ---------------------------------------------------
    # An action is the value of the pending action: a statement (speak), a team (propose), approve or
    # not (vote), success or not (quest), a seat (assassinate). The game is mutable: apply returns itself.

    @property
    def is_terminal(self) -> bool:
        return self.phase == "end"

    def current_players(self) -> list[int]:
        return list(self.pending()[1])

    def legal_actions(self, seat: int) -> list:
        """What ``seat`` may do now (empty if it owes nothing). A statement may be any text: "pass" stands
        for all of them."""
        action, seats = self.pending()
        if seat not in seats:
            return []
        if action == "speak":
            return ["pass"]
        if action == "propose":
            return [list(t) for t in itertools.combinations(range(self.n), self.config.team_size(self.quest))]
        if action == "vote":
            return [True, False]
        if action == "quest":
            return [True] if is_good(self.roles[seat]) else [True, False]
        return [t for t in range(self.n) if t != seat]  # assassinate

    def apply(self, actions: Mapping[int, Any]) -> AvalonGame:
        """The pending action of some or all of the seats that owe it, in seat order."""
        if self.is_terminal:
            raise InputError("The game is over.")
        action = self.pending()[0]
        for seat in sorted(actions):
            value = actions[seat]
            if action in ("vote", "quest") and not isinstance(value, bool | np.bool_):
                raise InputError(f"A {action} is True or False, got {value!r}.")
            self.play(action, int(seat), value)
        return self

    def returns(self) -> tuple[float, ...]:
        """+1 for every seat of the winning side, -1 for the others; zeros while the game runs."""
        if self.winner is None:
            return (0.0,) * self.n
        return tuple(1.0 if self.side(i) == self.winner else -1.0 for i in range(self.n))

    # --- internals ---------------------------------------------------------------------------------

    def _next_leader(self) -> None:
        self.leader = (self.leader + 1) % self.n
        self.team, self.votes, self.spoken = (), {}, []
        self.phase = "discussion" if self.config.discussion else "proposal"
        self._event("new_leader", public=True, leader=self.leader, quest=self.quest, rejections=self.rejections)

    def _finish(self, winner: str, reason: str) -> None:
        self.winner, self.end_reason, self.phase = winner, reason, "end"
        self._event("game_end", public=True, winner=winner, reason=reason,
                    roles={str(i): r for i, r in enumerate(self.roles)})

    def _event(self, kind: str, public: bool, **data) -> None:
        self.events.append({"i": len(self.events), "type": kind, "public": public, **data})

    def _act(self, kind: str, seat: int, **data) -> None:
        self.actions.append({"action": kind, "player": seat, **data})

    # --- views and logs ----------------------------------------------------------------------------

    def view(self, seat: int) -> dict:
        """Everything ``seat`` may know now, as plain data: what agents (and people) decide from."""
        action, seats = self.pending()
        return {
            "seat": seat, "num_players": self.n, **self.info(seat), "phase": self.phase, "quest": self.quest,
            "leader": self.leader, "rejections": self.rejections, "team": list(self.team),
            "team_size": self.config.team_size(self.quest) if self.quest < 5 else 0,
            "fails_needed": self.config.fails_needed(self.quest) if self.quest < 5 else 0,
            "quest_results": list(self.quest_results), "num_evil": NUM_EVIL[self.n],
            "my_turn": seat in seats, "pending": action, "events": self.events_for(seat),
        }

    def events_for(self, seat: int) -> list[dict]:
        """The events ``seat`` may see: public ones, its own private ones (its role, its quest cards)."""
        return [e for e in self.events if e["public"] or e.get("player") == seat]

    def to_log(self) -> str:
        """The game's log as JSON lines (a header, then every action): :meth:`from_log` replays it."""
        header = {"type": "game", "num_players": self.n, "roles": list(self.roles), "seed": self.seed,
                  "discussion": self.config.discussion, "config_roles": list(self.config.role_list)}
        return "\n".join(json.dumps(x) for x in [header, *({"type": "action", **a} for a in self.actions)]) + "\n"

    @classmethod
    def from_log(cls, jsonl: str) -> AvalonGame:
        """Rebuild a game from its log, re-checking every action against the rules."""
        try:
            lines = [jsontext.loads(line) for line in jsonl.splitlines() if line.strip()]
            header = lines[0]
            if header.get("type") != "game":
                raise ValueError("the first line must describe the game")
            n, roles = int(header["num_players"]), tuple(header["config_roles"])
            # the default roles come back as the default (None), so a replayed game equals the one logged
            config = AvalonConfig(n, None if n in TEAM_SIZES and roles == default_roles(n) else roles,
                                  bool(header["discussion"]))
            game = cls.new(config, seed=header.get("seed"), roles=tuple(header["roles"]))
            for a in lines[1:]:
                kind, seat = a["action"], int(a["player"])
                if kind == "speak":
                    game.speak(seat, a["text"])
                elif kind == "propose":
                    game.propose(seat, a["team"])
                elif kind == "vote":
                    game.vote(seat, a["approve"])
                elif kind == "quest":
                    game.play_quest(seat, a["success"])
                elif kind == "assassinate":
                    game.assassinate(seat, a["target"])
                else:
                    raise ValueError(f"unknown action {kind!r}")
        except InputError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise InputError(f"Not an Avalon game log: {e}") from None
        return game
