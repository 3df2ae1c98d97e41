"""The one piece of the build that pyproject.toml cannot say: where the embedded models install.

Everything else (metadata, dependencies, package data, the entry point) is in pyproject.toml. The
checkout keeps its embedded checkpoints and model cards in ``assets/`` at the top (training scripts
write there, the README links there); a wheel installs that folder as the package data
``backends/assets/``, beside the code that reads it. ``backends.common.settings.default_assets_dir``
finds the installed copy in a wheel install and the checkout's ``assets/`` otherwise (editable
install, or the code run from the checkout).
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["app*", "backends*"]), "backends.assets"],
    package_dir={"backends.assets": "assets"},
)
