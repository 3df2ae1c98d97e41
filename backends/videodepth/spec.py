"""The Video Depth capability (Depth Any Video): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability, Domain

SPEC = Capability(
    name="videodepth",
    title="Video Depth",
    group="Video",
    paper="Depth Any Video",
    summary="upload a video, get temporally consistent depth as a video, 16-bit frames and point clouds",
    domain=Domain("64-pixel renders of primitives in procedural rooms", ("depth-any-video",), "Depth Any Video"),
)
