"""The model menus of the tabs: each registered model of a capability, saying whether it is present here."""

from __future__ import annotations

from collections.abc import Iterable


def model_choices(capability: str, kinds: Iterable[str] | None = None, ids: Iterable[str] | None = None,
                  details: str | None = None, labels: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(label, id) for the capability's registered models (of ``kinds``, or exactly ``ids`` in that order).

    The label says "present" or "missing"; ``details`` names a field of the model's spec to show before
    that ("source", "license"); ``labels`` gives a model a description of its own (shown instead of its id)."""
    from backends.common.registry import default_registry, model_status

    specs = [s for s in default_registry().for_capability(capability) if kinds is None or s.kind in set(kinds)]
    if ids is not None:
        by_id = {s.id: s for s in specs}
        chosen = [(i, by_id.get(i)) for i in ids]
    else:
        chosen = [(s.id, s) for s in specs]
    out = []
    for model_id, spec in chosen:
        present = "present" if spec is not None and model_status(spec).present else "missing"
        where = f"{getattr(spec, details)}; " if details and spec is not None else ""
        name = (labels or {}).get(model_id, model_id)
        out.append((f"{name} ({where}{present})", model_id))
    return out
