import pytest

from .tiny_lm import make_tiny_lm


@pytest.fixture(scope="session")
def tiny_lm_folder(tmp_path_factory):
    return make_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))
