"""The live state of the app's queue (waiting and running jobs per concurrency group).

Gradio exposes no public API for this, so it reads the queue's fields defensively; gradio is
pinned and a test checks the fields still exist.
"""

from __future__ import annotations

from typing import Any

import gradio as gr


def queue_state(demo: gr.Blocks) -> dict[str, Any]:
    queue = getattr(demo, "_queue", None)
    groups = {}
    for cid, q in (getattr(queue, "event_queue_per_concurrency_id", None) or {}).items():
        groups[str(cid)] = {
            "waiting": len(getattr(q, "queue", [])),
            "running": int(getattr(q, "current_concurrency", 0)),
            "limit": getattr(q, "concurrency_limit", None),
        }
    return {
        "max_size": getattr(queue, "max_size", None),
        "waiting_total": sum(g["waiting"] for g in groups.values()),
        "running_total": sum(g["running"] for g in groups.values()),
        "workers_busy": queue.get_active_worker_count() if hasattr(queue, "get_active_worker_count") and getattr(queue, "active_jobs", None) is not None else 0,
        # Gradio creates a group's queue on its first event; before that, report the configured limit.
        "gpu": groups.get("gpu", {"waiting": 0, "running": 0, "limit": _configured_limit(demo, "gpu")}),
    }


def _configured_limit(demo: gr.Blocks, concurrency_id: str) -> int | None:
    limits = [fn.concurrency_limit for fn in demo.fns.values()
              if fn.concurrency_id == concurrency_id and isinstance(fn.concurrency_limit, int)]
    return min(limits) if limits else None
