"""The OT tests' problems are tiny: torch's intra-op pool only costs there (on a shared, loaded 2-core machine a
contended 2-thread pool made an n = 64 solve 30× slower), so each test runs single-threaded and restores the count."""

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
