"""Graphs a person picks or types, the data they generate, and CSVs refused with a message that says why."""

import numpy as np
import pytest

from backends.citest.data import check_rows, load_data, read_csv
from backends.citest.graphs import make_graph, parse_edges
from backends.citest.requests import TestRequest
from backends.common.errors import InputError


def test_graph_kinds_and_their_truths():
    chain, fork, collider = (make_graph(k, 3) for k in ("chain", "fork", "collider"))
    assert chain.edges == [("X1", "X2"), ("X2", "X3")]
    assert chain.d_separated(0, 2, [1]) and not chain.d_separated(0, 2, [])
    assert fork.d_separated(1, 2, [0]) and not fork.d_separated(1, 2, [])
    assert collider.d_separated(0, 1, []) and not collider.d_separated(0, 1, [2])
    r = make_graph("random", 12, density=2, seed=4)
    assert r.adj.shape == (12, 12) and not np.any(np.diag(r.adj)) and r.adj.sum() > 0


def test_typed_edges_and_their_mistakes():
    g = parse_edges("income->health, age -> income; age->health")
    assert g.names == ("income", "health", "age") and len(g.edges) == 3
    with pytest.raises(InputError, match="cycle"):
        parse_edges("A->B, B->C, C->A")
    with pytest.raises(InputError, match="A->B"):
        parse_edges("A - B")
    with pytest.raises(InputError, match="at most 12"):
        parse_edges(", ".join(f"V{i}->V{i + 1}" for i in range(13)))
    with pytest.raises(InputError, match="2 to 12"):
        make_graph("chain", 13)


def test_simulated_data_is_discretized_as_asked():
    ds = load_data(TestRequest(graph="chain", nodes=4, n=500, discretized="X1, X3", levels=4, seed=1))
    assert ds.discrete.tolist() == [True, False, True, False]
    assert set(np.unique(ds.X[:, 0])) <= {0.0, 1.0, 2.0, 3.0} and np.unique(ds.X[:, 1]).size == 500
    again = load_data(TestRequest(graph="chain", nodes=4, n=500, discretized="X1, X3", levels=4, seed=1))
    assert np.array_equal(ds.X, again.X)


def test_csv_refusals(tmp_path):
    def csv(name, text):
        (tmp_path / name).write_text(text)
        return tmp_path / name

    with pytest.raises(InputError, match="not numeric"):
        read_csv(csv("a.csv", "a,b\n1,x\n2,y\n"), "")
    with pytest.raises(InputError, match="constant"):
        read_csv(csv("b.csv", "a,b\n1,3\n2,3\n"), "")
    with pytest.raises(InputError, match="missing"):
        read_csv(csv("c.csv", "a,b\n1,3\n2,\n"), "")
    wide = ",".join(f"c{i}" for i in range(13)) + "\n" + ",".join("1" for _ in range(13)) + "\n"
    with pytest.raises(InputError, match="at most 12"):
        read_csv(csv("d.csv", wide), "")
    with pytest.raises(InputError, match="No variable is called 'z'"):
        read_csv(csv("e.csv", "a,b\n1,3\n2,4\n"), "z")
    with pytest.raises(InputError, match=r"\(80 here\)"):
        check_rows(50, 2)
    ds = read_csv(csv("f.csv", "a,b,c\n1,0,2.5\n2,1,3.5\n3,0,1.5\n"), "b")
    assert ds.names == ("a", "b", "c") and ds.discrete.tolist() == [False, True, False] and ds.graph is None
