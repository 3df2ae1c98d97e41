"""Live games kept on the server, so hidden state (the deal, the roles, the agents' reasoning) never
has to travel to a browser or an API client.

A match is stored under a random id (128 bits, unguessable); the client holds only that id. The
store is bounded — the least recently played match goes first once ``capacity`` are held — and a
match expires ``ttl_s`` seconds after its last move. A vanished match is a clear message, never a
guess. Each match has its own lock, so two clicks on one game are played one after the other while
other games go on.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from backends.common import jsontext
from backends.common.errors import Cancelled, DiskFullError, InputError, ModelCorruptError, ModelMissingError
from backends.common.session_store import SessionStore

M = TypeVar("M")  # a match: anything with an ``over`` property and a JSON form
RESUME_KEY = "resume"  # in a player's log of a game in progress: the match's id on the server
log = logging.getLogger(__name__)
DELIBERATE = (InputError, ModelMissingError, ModelCorruptError, Cancelled, DiskFullError)


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """A game's unexpected error says what failed, never what it was holding (a role, a deck): its message
    goes to the server's log, the person reads that the game failed. Deliberate errors pass as they are."""
    try:
        yield
    except DELIBERATE:
        raise
    except Exception as e:
        log.exception("a game's move failed")
        raise InputError(f"The game failed unexpectedly ({e.__class__.__name__}); the details are in the "
                         f"server's log. Start a new game.") from None


class MatchStore(Generic[M]):
    """Matches by id: bounded (least recently used out first) and expiring."""

    def __init__(self, game: str, capacity: int = 200, ttl_s: float = 6 * 3600,
                 clock: Callable[[], float] = time.monotonic):
        self.game, self.capacity, self.ttl_s, self.clock = game, capacity, ttl_s, clock
        self._store: SessionStore[M] = SessionStore(capacity=capacity, ttl_s=ttl_s, clock=clock)

    @property
    def gone_message(self) -> str:
        hours = self.ttl_s / 3600
        return (f"This {self.game} game is no longer on the server: games are kept for {hours:g} hours after "
                f"the last move ({self.capacity} at most, the least recently played go first) and not across "
                f"restarts. Start a new game.")

    @property
    def _a_log(self) -> str:
        return f"{'an' if self.game[:1].upper() in 'AEIOU' else 'a'} {self.game} log"

    def add(self, match: M) -> str:
        """Store a new match; returns its id."""
        match_id = secrets.token_urlsafe(16)
        self._store.put(match_id, match)
        return match_id

    def get(self, match_id: str | None) -> M:
        """The match (not a copy: read it, do not change it; use :meth:`play` to change it)."""
        return self._slot(match_id).value

    def play(self, match_id: str | None, move: Callable[[M], M]) -> M:
        """Apply ``move`` to a copy of the match under the match's lock and keep the result. If ``move``
        raises, the stored match is as it was."""
        slot = self._slot(match_id)
        with slot.lock:
            result = move(copy.deepcopy(slot.value))
            slot.value, slot.used = result, self.clock()
        return result

    def reload(self, text: str, full_from_json: Callable[[str], M]) -> tuple[str, M]:
        """A downloaded log, back in play: a player's view of a game in progress (it holds the match's
        id, nothing hidden) resumes that match while the server still holds it; a full log (only ever
        written once a game is over) rebuilds the finished game as a new match. A full log of a game in
        progress is refused: it would let anyone who writes one choose the hidden state."""
        try:
            data = jsontext.loads(text)
        except (ValueError, TypeError):
            raise InputError(f"That file is not {self._a_log}: it is not JSON.") from None
        if isinstance(data, dict) and RESUME_KEY in data:
            if data.get("game") != self.game.lower():
                raise InputError(f"This is not {self._a_log}.")
            match_id = str(data[RESUME_KEY])
            return match_id, self.get(match_id)
        match = full_from_json(text)
        if not match.over:
            raise InputError(f"This {self.game} log is of a game in progress. Full logs are offered only once a game "
                             f"is over; to go on with a game in progress, load the log of your view that the "
                             f"game offered, while the server still holds the game.")
        return self.add(match), match

    def __len__(self) -> int:
        return len(self._store)

    def _slot(self, match_id: str | None):
        if not match_id:
            raise InputError("Start a new game first.")
        slot = self._store.slot(str(match_id))
        if slot is None:
            raise InputError(self.gone_message)
        return slot
