"""``serve --mcp``: every action is an MCP tool named as its API endpoint, with its request's schema and docs; an
MCP client lists them and calls a light and a heavy action over loopback (the test app serves MCP)."""

from __future__ import annotations

import asyncio
import json

import pytest

mcp = pytest.importorskip("mcp", reason="the [mcp] extra (make setup installs it)")


def _session_call(url: str, work):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def run():
        async with streamablehttp_client(url + "/gradio_api/mcp/") as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return asyncio.run(run())


@pytest.fixture(scope="module")
def tools(live_app):
    _, url = live_app

    async def listed(session):
        return {t.name: t for t in (await session.list_tools()).tools}

    return _session_call(url, listed)


def test_every_action_is_a_tool_named_as_its_endpoint_with_its_requests_schema(live_app, tools):
    from backends.common.params import fields_of

    demo, _ = live_app
    bound = [(fn.api_name, fn.fn.action_name) for fn in demo.fns.values()
             if getattr(fn.fn, "action_name", None) and fn.api_name and fn.api_visibility == "public"]
    assert len(bound) >= 13
    from backends import action_named
    from backends.common.system_actions import ACTIONS as SYSTEM_ACTIONS

    system = {a.name: a for a in SYSTEM_ACTIONS}
    for api_name, action_name in bound:
        assert api_name in tools, f"{api_name} is no MCP tool"
        action = system.get(action_name) or action_named(action_name)
        properties = tools[api_name].inputSchema.get("properties", {})
        for name, spec in fields_of(action.request_type).items():
            if name in properties:  # a field the endpoint takes: its help is the tool parameter's description
                assert spec.param.help.split(".")[0] in properties[name].get("description", "")


def test_a_light_tool_answers(live_app):
    _, url = live_app

    async def call(session):
        return await session.call_tool("counterfactual_models", {"bridge": "counterfactual-bridge",
                                                                 "classifier": "counterfactual-classifier",
                                                                 "target": "sphere"})

    result = _session_call(url, call)
    assert not result.isError
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert "counterfactual-bridge" in text and "sphere" in text


def test_a_heavy_action_runs_through_its_tool(live_app, tools):
    _, url = live_app
    assert "speed_test" in tools

    async def call(session):
        return await session.call_tool("speed_test", {"size": 64, "repeats": 2})

    result = _session_call(url, call)
    assert not result.isError
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert "GFLOP" in text or "gflop" in text.lower(), json.dumps([c.model_dump() for c in result.content])[:500]
