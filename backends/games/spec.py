"""The Strategy Games capability (STRATEGIST): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="games",
    title="Strategy Games",
    group="Games & agents",
    paper="STRATEGIST",
    summary="play GOPS and Avalon against search agents and watch LLM-written strategies improve by self-play",
)
