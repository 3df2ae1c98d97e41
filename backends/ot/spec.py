"""The Optimal Transport capability (MDOT-TNT): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="ot",
    title="Optimal Transport",
    group="Optimization & statistics",
    paper="MDOT-TNT",
    summary="move one photo's colours onto another's, morph two densities by their transport plan, and race the "
            "truncated Newton solver against Sinkhorn and exact EMD",
)
