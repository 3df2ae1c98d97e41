"""The 3D Layout capability (Build-A-Scene): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="layout3d",
    title="3D Layout",
    group="Images & 3D",
    paper="Build-A-Scene",
    summary="place 3D boxes, generate, then add, move and re-prompt objects stage by stage while the rest stays",
)
