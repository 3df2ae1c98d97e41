"""The LLM Compression capability (Basis Sharing): its name, tab, group and paper (``backends.common.capability``)."""

from backends.common.capability import Capability

SPEC = Capability(
    name="compress",
    title="LLM Compression",
    group="Language models",
    paper="Basis Sharing",
    summary="compress a real pretrained LLM by sharing SVD bases across layers; compare perplexity, size and speed "
            "with per-layer SVD-LLM and plain SVD, and chat with both models side by side",
)
