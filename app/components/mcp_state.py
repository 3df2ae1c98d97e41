"""Gradio 6.31's MCP server drops an endpoint's ``gr.State`` outputs twice on its queued path.

Its ``pop_returned_state`` removes the State outputs' values by position from what a tool call returned. On the
non-queued path that is the event's raw output (State values included), but on the queued path (every action of
this suite) the call goes through ``gradio_client``, which has already left the State values out, so the pop
fails ("pop index out of range") or drops a real output, and a tool with a State output cannot be called. Popping
also shifts later positions when there are two States. :func:`install` replaces it with one that removes State
values only when the data still has one value per output, from the last to the first.

The same server calls the app's own endpoints through a ``gradio_client.Client`` made with httpx's default 5 s
timeout; on a busy machine its first request (the app's config) can take longer, and the tool call then fails
with "timed out". :func:`install` gives that client a patient timeout (:data:`CLIENT_TIMEOUT_S`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def pop_returned_state(components: Sequence[Any], data: Any) -> Any:
    from gradio.components import State

    if not isinstance(data, list) or len(data) != len(components):
        return data  # the client's result: State values are not in it
    for i in reversed(range(len(components))):
        if isinstance(components[i], State):
            data.pop(i)
    return data


CLIENT_TIMEOUT_S = 120.0  # per request to the app itself; a tool's own work is not limited by it (queued jobs stream)


def install() -> None:
    from gradio import mcp

    mcp.GradioMCPServer.pop_returned_state = staticmethod(pop_returned_state)
    client = getattr(mcp.Client, "unpatient", mcp.Client)  # gradio_client's Client, as gradio's MCP server has it

    def patient_client(*args, **kwargs):
        kwargs["httpx_kwargs"] = {"timeout": CLIENT_TIMEOUT_S, **(kwargs.get("httpx_kwargs") or {})}
        return client(*args, **kwargs)

    patient_client.unpatient = client
    mcp.Client = patient_client
