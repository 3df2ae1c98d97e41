"""The CI Test tab through gradio_client, as an API user would call it."""

import json
from pathlib import Path

import pytest
from gradio_client import handle_file


def test_test_one_statement_named_parameters(client):
    status, plot, summary, files = client.predict(graph="chain", nodes=3, n=1500, discretized="all", levels=2,
                                                  x="X1", y="X3", given="X2", seed=3, api_name="/citest_test")
    assert summary["truth"] == "independent" and summary["statement"] == "X1 ⊥ X3 | X2"
    assert summary["p_values"]["dct"] > 0.05 > summary["p_values"]["fisherz"]
    assert "truth: **independent**" in status and "CPU" in status
    names = {Path(f).name for f in files}
    assert {"pvalues.csv", "result.json", "data.csv", "true_graph.graphml", "run.json"} <= names
    card = json.loads(Path(next(f for f in files if f.endswith("run.json"))).read_text())
    assert card["action"] == "citest_test" and card["request"]["n"] == 1500 and card["request"]["alpha"] == 0.05


def test_discover_a_chain_and_upload_its_data_back(client, tmp_path):
    status, picture, scores, files = client.predict(graph="chain", nodes=4, n=800, seed=0,
                                                    api_name="/citest_discover")
    rows = {r[0]: r for r in scores["data"]}
    assert rows["DCT"][1] == 0 and rows["DCT"][2] == 1.0  # SHD 0, edge F1 1
    assert "SHD" in status
    data = next(f for f in files if f.endswith("data.csv"))
    *_, summary, _ = client.predict(graph="chain", csv=handle_file(data), discretized="all", x="X1", y="X3",
                                    given="X2", api_name="/citest_test")
    assert summary["truth"] is None and set(summary["p_values"]) == {"dct", "fisherz", "chisq"}


def test_bad_input_is_a_clear_error(client, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,x\n2,y\n")
    with pytest.raises(Exception, match="not numeric"):
        client.predict(csv=handle_file(str(bad)), x="a", y="b", given="", api_name="/citest_test")
    with pytest.raises(Exception, match="too small"):
        client.predict(n=20, nodes=4, given="X2, X4", api_name="/citest_test")
    # the session keeps working
    *_, summary, _ = client.predict(graph="fork", x="X2", y="X3", given="X1", n=500, api_name="/citest_test")
    assert summary["truth"] == "independent"
