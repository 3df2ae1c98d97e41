"""The two actions as the CLI and the tab run them: files that load back, run cards that replay to the same
numbers, a CSV of one's own, Stop, and the CLI."""

import argparse
import csv
import json

import numpy as np
import pytest

from backends.citest.actions import DISCOVER, TEST
from backends.citest.outputs import read_graphml
from backends.citest.requests import DiscoverRequest, TestRequest
from backends.common.action_cli import replay_card, run_action
from backends.common.errors import Cancelled, InputError
from backends.common.progress import CancelToken, ProgressEvent


def test_test_action_files_and_replay(tmp_path):
    result, paths = run_action(TEST, TestRequest(n=1500, seed=3), tmp_path / "run")
    assert result.truth == "independent" and result.statement == "X1 ⊥ X3 | X2"
    rows = list(csv.DictReader(paths["pvalues"].open()))
    assert [r["test"] for r in rows] == ["dct", "fisherz", "chisq"]
    assert float(rows[0]["p_value"]) == pytest.approx(result.p_values["dct"])
    nodes, edges = read_graphml(paths["true_graph_graphml"])
    assert nodes == ["X1", "X2", "X3"] and {(e["from"], e["to"]) for e in edges} == {("X1", "X2"), ("X2", "X3")}
    again, _ = replay_card(paths["run"], tmp_path / "again")
    assert again.p_values == result.p_values

    # the downloaded data.csv, uploaded back with the same discretized columns, gives the same p-values
    back, _ = run_action(TEST, TestRequest(csv=paths["data"], discretized="all", x="X1", y="X3", given="X2"),
                         tmp_path / "csv")
    assert back.truth is None
    assert back.p_values == pytest.approx(result.p_values, rel=1e-9, abs=1e-12)


def test_discover_action_scores_and_graphs(tmp_path):
    request = DiscoverRequest(graph="chain", nodes=4, n=800, seed=0)
    result, paths = run_action(DISCOVER, request, tmp_path)
    scores = result.scores()
    assert set(scores) == {"dct", "fisherz", "chisq"}
    assert scores["dct"]["shd"] == 0 and scores["dct"]["f1"] == 1.0  # the chain's skeleton, unoriented
    assert scores["fisherz"]["shd"] > 0  # binned middle variables leave extra edges
    body = json.loads(paths["graphs"].read_text())
    assert body["truth"]["dag"] == [["X1", "X2"], ["X2", "X3"], ["X3", "X4"]]
    assert all(not e["directed"] for e in body["truth"]["cpdag"])  # a chain's CPDAG has no arrows
    _, edges = read_graphml(paths["graph_dct"])
    assert {frozenset((e["from"], e["to"])) for e in edges} == {frozenset(p) for p in (("X1", "X2"), ("X2", "X3"),
                                                                                       ("X3", "X4"))}
    log = list(csv.DictReader(paths["ci_tests"].open()))
    assert {r["test"] for r in log} == {"dct", "fisherz", "chisq"} and all(0 <= float(r["p_value"]) <= 1 for r in log)
    assert paths["picture"].read_bytes()[:4] == b"\x89PNG"


def test_stop_ends_pc_within_one_test():
    cancel = CancelToken()
    events = []
    with pytest.raises(Cancelled):
        for item in DISCOVER.run(DiscoverRequest(graph="random", nodes=10, n=400, seed=1), cancel):
            if isinstance(item, ProgressEvent):
                events.append(item.message)
                if "PC with DCT" in item.message:
                    cancel.cancel()
    assert not any("Fisher-z" in m for m in events)


@pytest.mark.parametrize(("fields", "message"), [
    ({"x": "X1", "y": "X1", "given": ""}, "two different"),
    ({"x": "X1", "y": "X3", "given": "X3"}, "must not contain"),
    ({"x": "X9"}, "No variable is called 'X9'"),
    ({"n": 40, "nodes": 4, "given": "X2, X4"}, "too small"),
    ({"graph": "custom", "edges": ""}, "custom graph's edges"),
])
def test_bad_requests_are_refused_clearly(fields, message):
    with pytest.raises(InputError, match=message):
        list(TEST.run(TestRequest(**fields)))


def test_cli_test_and_discover(tmp_path, capsys):
    from backends.citest import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args(["test", "--n", "600", "--out", str(tmp_path / "t")])) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["truth"] == "independent" and set(line["p_values"]) == {"dct", "fisherz", "chisq"}
    args = parser.parse_args(["discover", "--graph", "collider", "--nodes", "3", "--n", "600",
                              "--out", str(tmp_path / "d")])
    assert cli.run(args) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["scores"]["dct"]["shd"] >= 0
    assert cli.run(parser.parse_args(["--run", str(tmp_path / "t" / "run.json"), "--out", str(tmp_path / "r")])) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["p_values"] == line_p(tmp_path / "t")


def line_p(folder):
    return json.loads((folder / "run.json").read_text())["result"]["p_values"]


def test_observed_data_is_what_the_card_replays(tmp_path):
    _, paths = run_action(TEST, TestRequest(n=300, seed=9, discretized="X2", levels=3), tmp_path)
    data = np.loadtxt(paths["data"], delimiter=",", skiprows=1)
    assert data.shape == (300, 3) and set(np.unique(data[:, 1])) <= {0.0, 1.0, 2.0}
