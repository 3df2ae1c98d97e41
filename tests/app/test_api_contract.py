"""The API contract: every endpoint's parameters are named and documented, and every action's tab and CLI show its
request's fields exactly as the request declares them (``backends.common.params`` is the one source)."""

from __future__ import annotations

import pytest

from app.contract import check_actions, undocumented_parameters, unnamed_parameters


@pytest.fixture(scope="module")
def api_info(client):
    return client.view_api(print_info=False, return_format="dict")


def test_every_api_parameter_has_a_name(api_info):
    assert len(api_info["named_endpoints"]) > 20
    assert unnamed_parameters(api_info) == []


def test_every_api_parameter_has_a_description(api_info):
    assert undocumented_parameters(api_info) == []


def test_every_action_is_bound_and_its_tab_and_cli_agree_with_its_request(live_app):
    from app.cli import build_parser

    demo, _ = live_app
    checks = check_actions(demo, build_parser())
    assert checks, "no actions found"
    problems = {c.action: c.problems for c in checks if c.problems}
    assert problems == {}
    assert [c.action for c in checks if not c.single_source] == []
