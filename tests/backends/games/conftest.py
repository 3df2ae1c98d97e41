"""Fixtures the games tests share."""

from __future__ import annotations

import pytest


@pytest.fixture
def counted_batches(monkeypatch):
    """The search batches played in this process (``gops.search.search`` calls): ``cancel_at(k, token)`` cancels
    ``token`` during the k-th; ``calls["n"]`` counts them all."""
    from backends.games.gops import search as gs

    calls, real, plan = {"n": 0}, gs.search, {}

    def search(*args):
        calls["n"] += 1
        if calls["n"] == plan.get("at"):
            plan["token"].cancel()
        return real(*args)

    monkeypatch.setattr(gs, "search", search)
    calls["cancel_at"] = lambda k, token: plan.update(at=k, token=token)
    return calls
