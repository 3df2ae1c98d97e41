"""The Text in Image capability (localized text-generation layers): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="textedit",
    title="Text in Image",
    group="Images & 3D",
    paper="localized text-generation layers",
    summary="generate words in images, find the few layers that write them, edit and block text through those layers",
)
