"""A tiny, untrained teacher (seconds to train against) shared by the Unlearning training tests."""

import pytest


@pytest.fixture(scope="session")
def tiny_teacher(tmp_path_factory):
    """(network, folder, fingerprint) of a small LabelUNet saved like the shipped teacher."""
    import torch

    from backends.unlearn.loading import fingerprint
    from backends.unlearn.networks import LabelUNet

    torch.manual_seed(0)
    net = LabelUNet(channels=(8, 16, 16))
    for p in net.out.parameters():  # not zero: an untrained net whose ε depends on its input
        torch.nn.init.normal_(p, std=0.02)
    folder = tmp_path_factory.mktemp("tiny-teacher")
    net.save(folder)
    return net.requires_grad_(False), folder, fingerprint(folder)
