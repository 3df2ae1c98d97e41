"""Stop inside one network call: before any block of the network, on the calling thread only."""

import threading

import pytest
import torch

from backends.common.errors import Cancelled
from backends.common.interrupt import blocks_of, stop_between_steps, stop_inside
from backends.common.progress import CancelToken


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(5))
        self.ran: list[int] = []

    def forward(self, x):
        for i, b in enumerate(self.blocks):
            x = b(x)
            self.ran.append(i)
        return x


def test_a_stop_ends_the_call_before_the_next_block_and_the_hooks_go():
    net, token = Net(), CancelToken()
    assert blocks_of(net) == list(net.blocks)
    net.blocks[1].register_forward_hook(lambda *_: token.cancel())  # Stop pressed while block 1 runs
    with stop_inside(net, token), pytest.raises(Cancelled, match="stopped by the user"):
        net(torch.zeros(1, 4))
    assert net.ran == [0, 1]
    net.ran.clear()
    net(torch.zeros(1, 4))  # outside the block: no hooks left
    assert net.ran == [0, 1, 2, 3, 4]


def test_another_threads_call_of_the_same_network_is_not_stopped():
    """One loaded model serves several sessions at once: one session's Stop ends only its own call."""
    net, done, token = Net(), [], CancelToken()
    token.cancel()
    with stop_inside(net, token):
        worker = threading.Thread(target=lambda: done.append(net(torch.zeros(1, 4))))
        worker.start()
        worker.join()
        with pytest.raises(Cancelled):
            net(torch.zeros(1, 4))
    assert len(done) == 1


def test_no_token_means_no_hooks_and_no_step_callback():
    net = Net()
    with stop_inside(net, None):
        assert not any(b._forward_pre_hooks for b in net.blocks)
    assert stop_between_steps(None) is None


def test_the_step_callback_stops_between_steps_with_the_tokens_reason():
    token = CancelToken()
    check = stop_between_steps(token)
    assert check(None, 0, 999, {"x": 1}) == {"x": 1}
    token.cancel("the session ended")
    with pytest.raises(Cancelled, match="the session ended"):
        check(None, 1, 998, {"x": 1})
