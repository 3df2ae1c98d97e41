"""The Avatar capability (LIFe-GoM): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability, Domain

SPEC = Capability(
    name="avatar",
    title="Avatar",
    group="Images & 3D",
    paper="LIFe-GoM",
    summary="reconstruct an animatable avatar from a few views, re-pose it and render it live",
    domain=Domain("64×64 renders of the anny body model in flat-coloured clothes", ("lifegom",), "the published LIFe-GoM"),
)
