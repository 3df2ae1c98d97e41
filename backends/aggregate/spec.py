"""The Aggregation capability (MEVA): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="aggregate",
    title="Aggregation",
    group="Optimization & statistics",
    paper="MEVA",
    summary="pick a problem and its models, see the weight maps w(x) and where minimal-error aggregation overfits",
)
