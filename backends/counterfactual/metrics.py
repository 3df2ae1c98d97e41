"""Quality numbers for counterfactuals: the shared Fréchet distance on classifier features (``backends/common/frechet.py``)."""

from backends.common.frechet import classifier_features, frechet_distance  # noqa: F401 (re-exported)
