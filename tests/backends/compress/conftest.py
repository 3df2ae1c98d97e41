import pytest

from .tiny_lm import make_tiny_lm, one_thread


@pytest.fixture(scope="session")
def tiny_lm_folder(tmp_path_factory):
    return make_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_thread():
        yield
