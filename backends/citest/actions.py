"""The CI Test capability's actions (``backends.common.action``): what the tab's buttons, the API, the CLI and a
run card replay run. Light to import (the science loads on first use)."""

from __future__ import annotations

from backends.common.action import Action

from .requests import DiscoverRequest, TestRequest


def _test(request: TestRequest, model, cancel):
    from .service import run_test

    return run_test(request, cancel)


def _discover(request: DiscoverRequest, model, cancel):
    from .service import run_discover

    return run_discover(request, cancel)


def _write_test(result, folder):
    from .outputs import write_test_files

    return write_test_files(result, folder)


def _write_discover(result, folder):
    from .outputs import write_discover_files

    return write_discover_files(result, folder)


TEST = Action(
    name="citest_test", capability="citest", request_type=TestRequest, work=_test, write=_write_test,
    summary=lambda result: result.to_json(), heavy=False,
    description="One CI statement X ⊥ Y | S tested by DCT, Fisher-z and chi-square on the same data.")

DISCOVER = Action(
    name="citest_discover", capability="citest", request_type=DiscoverRequest, work=_discover,
    write=_write_discover, summary=lambda result: result.to_json(),
    description="PC (causal-learn) with DCT, Fisher-z and chi-square; recovered graphs, SHD and edge F1.")

ACTIONS = (TEST, DISCOVER)
