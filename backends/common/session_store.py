"""What the server keeps per user between actions (a staged scene, a live game, a fitted avatar), bounded.

Heavy or hidden state lives here, keyed by the browser session (or an unguessable id), not in
``gr.State``. The store is bounded three ways, each optional: a number of entries, a memory budget
(``size_of`` measures an entry), and a time to live after the last use. The least recently used entries
go first. A key whose entry was dropped is remembered for a while, so its owner is told "it expired"
(:meth:`SessionStore.get` raises the store's ``expired`` error) rather than "there is none". Each key has
its own lock, so two actions on one entry run one after the other while other users go on.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

V = TypeVar("V")
REMEMBER_DROPPED = 10_000  # keys whose entry was dropped, to say so (oldest forgotten first)


@dataclass
class _Slot(Generic[V]):
    value: V
    size: int
    used: float
    lock: threading.Lock = field(default_factory=threading.Lock)


class SessionStore(Generic[V]):
    """Entries by key: at most ``capacity``, at most ``budget_bytes`` together, each kept ``ttl_s`` after its
    last use; ``expired(key)`` makes the error raised for a dropped key (``None``: such a key reads as absent)."""

    def __init__(self, capacity: int | None = None, budget_bytes: float | None = None,
                 size_of: Callable[[V], int] | None = None, ttl_s: float | None = None,
                 expired: Callable[[str], Exception] | None = None, clock: Callable[[], float] = time.monotonic):
        self.capacity, self.budget_bytes, self.ttl_s = capacity, budget_bytes, ttl_s
        self.size_of, self.expired, self.clock = size_of, expired, clock
        self._slots: OrderedDict[str, _Slot[V]] = OrderedDict()
        self._dropped: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        """The key's entry (now the most recently used); ``None`` if it never had one or was dropped (then the
        ``expired`` error if the store has one)."""
        slot = self.slot(key)
        return None if slot is None else slot.value

    def slot(self, key: str) -> _Slot[V] | None:
        """The key's slot (value, size, last use, lock) as :meth:`get` finds it."""
        with self._lock:
            self._expire()
            slot = self._slots.get(key)
            if slot is not None:
                self._slots.move_to_end(key)
                slot.used = self.clock()
                return slot
            if key in self._dropped and self.expired is not None:
                raise self.expired(key)
            return None

    def put(self, key: str, value: V) -> list[str]:
        """Keep (or replace, re-measured) the key's entry; returns the keys dropped to stay within bounds."""
        size = int(self.size_of(value)) if self.size_of is not None else 0
        with self._lock:
            self._expire()
            old = self._slots.get(key)
            if old is not None:  # the same key keeps its lock: an action holding it goes on safely
                old.value, old.size, old.used = value, size, self.clock()
            else:
                self._slots[key] = _Slot(value, size, self.clock())
            self._slots.move_to_end(key)
            self._dropped.pop(key, None)
            dropped = []
            while len(self._slots) > 1 and self._over():
                gone, _ = self._slots.popitem(last=False)
                dropped.append(gone)
                self._remember(gone)
            return dropped

    def drop(self, key: str) -> None:
        """The user left: forget the entry without calling it expired."""
        with self._lock:
            self._slots.pop(key, None)
            self._dropped.pop(key, None)

    def was_dropped(self, key: str) -> bool:
        with self._lock:
            self._expire()
            return key in self._dropped

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return sum(s.size for s in self._slots.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._slots

    def _over(self) -> bool:
        if self.capacity is not None and len(self._slots) > self.capacity:
            return True
        return self.budget_bytes is not None and sum(s.size for s in self._slots.values()) > self.budget_bytes

    def _expire(self) -> None:
        if self.ttl_s is None:
            return
        now = self.clock()
        for key in [k for k, s in self._slots.items() if now - s.used > self.ttl_s]:
            del self._slots[key]
            self._remember(key)

    def _remember(self, key: str) -> None:
        self._dropped[key] = None
        while len(self._dropped) > REMEMBER_DROPPED:
            self._dropped.popitem(last=False)
