"""The anny body model is built once per machine (minutes) into the user's models folder; tests load it
from there once per session, before each test's isolated settings take over."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def _anny_loaded_once():
    import torch

    from backends.avatar import body
    from backends.common.settings import Settings

    torch.set_num_threads(1)
    body.body_model(Settings())
    yield
