"""The Counterfactual tab's domain: the shared 32×32 shape images (``backends/synth/shape_images.py``)."""

from backends.synth.shape_images import (  # noqa: F401 (re-exported: this tab's name for the shared domain)
    CAMERA,
    CLASSES,
    IMAGE_SIZE,
    SPLITS,
    Example,
    cached_split,
    example_scene,
    make_arrays,
    make_example,
    ood_inputs,
)
