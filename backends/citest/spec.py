"""The CI Test capability (DCT): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="citest",
    title="CI Test",
    group="Optimization & statistics",
    paper="DCT",
    summary="pick or type a causal graph, discretize variables, see Fisher-z and chi-square fail where DCT holds, "
            "and discover the graph with PC",
)
