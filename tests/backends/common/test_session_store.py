"""The one per-user store (scenes, matches, avatars): bounded by count, memory and time; dropped keys say so."""

import pytest

from backends.common.session_store import SessionStore


class Gone(Exception):
    pass


def test_least_recently_used_goes_first_by_count_and_by_memory():
    store = SessionStore(capacity=2)
    store.put("a", 1)
    store.put("b", 2)
    assert store.get("a") == 1  # a is now the most recent
    assert store.put("c", 3) == ["b"]
    assert store.get("b") is None and "a" in store and len(store) == 2

    sized = SessionStore(budget_bytes=10, size_of=len, expired=lambda key: Gone(key))
    sized.put("x", "12345")
    sized.put("y", "1234")
    assert sized.used_bytes == 9
    assert sized.put("z", "123") == ["x"]
    with pytest.raises(Gone, match="x"):
        sized.get("x")
    assert sized.get("never") is None
    sized.put("huge", "0123456789abc")  # over budget alone: kept (the newest is never dropped), others go
    assert list(sized._slots) == ["huge"]


def test_entries_expire_after_their_last_use():
    now = [0.0]
    store = SessionStore(ttl_s=60, clock=lambda: now[0], expired=lambda key: Gone(key))
    store.put("a", "A")
    now[0] = 50
    assert store.get("a") == "A"  # used: its time starts again
    now[0] = 100
    assert store.get("a") == "A"
    now[0] = 161
    with pytest.raises(Gone):
        store.get("a")
    assert store.was_dropped("a")
    store.put("a", "again")  # a new entry under a dropped key is an ordinary one
    assert store.get("a") == "again" and not store.was_dropped("a")


def test_replacing_an_entry_keeps_its_lock_and_drop_forgets_quietly():
    store = SessionStore(expired=lambda key: Gone(key))
    store.put("k", 1)
    lock = store.slot("k").lock
    store.put("k", 2)
    assert store.slot("k").lock is lock and store.get("k") == 2
    store.drop("k")
    assert store.get("k") is None  # the user left: not "expired"
